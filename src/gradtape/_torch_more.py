"""PyTorch's functions that ``gradtape.ops`` has no op of its own for, written from gradtape
ops under PyTorch's names and arguments (the package's top exports them, as ``torch.*``):
differentiable by construction, with both rules (first order and ``create_graph``), since
every step is a recorded op. Each is checked against PyTorch's values and gradients in
float64 by tests/test_torch_namespace.py.

- copies and views: :func:`clone`, :func:`detach`, :func:`numel`, :func:`t`, :func:`narrow`;
- joins and grids: :func:`concatenate`, :func:`broadcast_tensors`, :func:`meshgrid`;
- selection: :func:`take_along_dim`, :func:`masked_select`, :func:`repeat_interleave`,
  :func:`diag`;
- products: :func:`tensordot`, :func:`cross`, :func:`kron`, :func:`inner`, :func:`vdot`,
  :func:`trace`; with a scaled sum (BLAS's gemm family): :func:`addmm`, :func:`addmv`,
  :func:`addr`, :func:`baddbmm`, :func:`addbmm`;
- scattering: :func:`scatter` (PyTorch's ``src`` and ``value`` overloads); counting (no
  gradient, as PyTorch's): :func:`bincount`, :func:`histc`;
- arithmetic: :func:`addcmul`, :func:`addcdiv`, :func:`logaddexp`, :func:`logit`;
- moments: :func:`var_mean`, :func:`std_mean` (PyTorch's default ``correction=1``).
"""

from __future__ import annotations

import builtins
import functools
import itertools
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from gradtape import _torch_ops
from gradtape import ops as _ops
from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.ops import select as _select
from gradtape.ops._util import (
    index_tensor,
    int_indices,
    is_int,
    normalize_axes,
    one_dim,
    refill,
    replayable,
    untraced,
)
from gradtape.ops._util import tensor_arg as _tensor
from gradtape.tape import NONE_TAPE, NoneTape, Tape
from gradtape.tensor import Tensor

Array = np.ndarray[Any, Any]

__all__ = [
    "addbmm",
    "addcdiv",
    "addcmul",
    "addmm",
    "addmv",
    "addr",
    "argwhere",
    "baddbmm",
    "bincount",
    "block_diag",
    "broadcast_tensors",
    "bucketize",
    "cartesian_prod",
    "clone",
    "column_stack",
    "concatenate",
    "cross",
    "cummax",
    "cummin",
    "detach",
    "diag",
    "diff",
    "dstack",
    "fliplr",
    "flipud",
    "histc",
    "inner",
    "kron",
    "kthvalue",
    "logaddexp",
    "logcumsumexp",
    "logit",
    "masked_select",
    "median",
    "meshgrid",
    "nanmean",
    "nansum",
    "narrow",
    "nonzero",
    "numel",
    "repeat_interleave",
    "rot90",
    "scatter",
    "searchsorted",
    "std_mean",
    "t",
    "take",
    "take_along_dim",
    "tensor_split",
    "tensordot",
    "trace",
    "unique",
    "var_mean",
    "vdot",
]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)


# ----- copies and views ----------------------------------------------------------------------


def clone(input: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.clone``: :meth:`Tensor.clone` (a copy; the gradient flows back unchanged).

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    return _tensor("clone", input).clone()


def detach(input: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.detach``: :meth:`Tensor.detach` (the same data, no gradient flows through).

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    return _tensor("detach", input).detach()


def numel(input: Tensor[Any, Any]) -> int:
    """``torch.numel``: the number of elements (a Python int).

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    return _tensor("numel", input).numel()


def t(input: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.t``: a 2-D tensor transposed, a 0-D or 1-D one as it is (:meth:`Tensor.t`).

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: it has more than 2 dims.
    """
    return _tensor("t", input).t()


def narrow(input: Tensor[Any, T], dim: int, start: int, length: int) -> Tensor[Any, T]:
    """``torch.narrow`` (:func:`gradtape.ops.select.narrow`: the slice ``start : start + length``
    of ``dim``).

    Raises:
        TypeError: ``input`` is not a tensor, or an argument is not an int.
        ShapeError: ``dim`` is out of range, or the slice does not fit the dim.
    """
    out: Tensor[Any, T] = _select.narrow(_tensor("narrow", input), dim, start, length)
    return out


# ----- joins and grids -----------------------------------------------------------------------


def concatenate(tensors: Sequence[Tensor[Any, T]], axis: int = 0) -> Tensor[Any, T]:
    """``torch.concatenate``: :func:`gradtape.ops.concat` (``torch.cat``) with numpy's argument
    name ``axis``.

    Raises:
        ShapeError, DTypeError, TypeError: as :func:`gradtape.ops.concat`.
    """
    ts = [_tensor("concatenate", x, "tensors") for x in tensors]
    out: Tensor[Any, T] = _ops.concat(ts, axis)
    return out


def broadcast_tensors(*tensors: Tensor[Any, T]) -> tuple[Tensor[Any, T], ...]:
    """``torch.broadcast_tensors``: every tensor broadcast to the shape they broadcast to
    together (numpy's rule). Gradients: summed back over the broadcast dims.

    Raises:
        TypeError: an argument is not a tensor. ShapeError: the shapes do not broadcast.
    """
    ts = [_tensor("broadcast_tensors", x, "tensors") for x in tensors]
    try:
        shape = np.broadcast_shapes(*(x.shape for x in ts))
    except ValueError:
        raise ShapeError(f"broadcast_tensors: shapes {[x.shape for x in ts]} do not broadcast") from None
    return tuple(x if x.shape == shape else _ops.broadcast_to(x, shape) for x in ts)


def meshgrid(*tensors: Tensor[Any, T] | Sequence[Tensor[Any, T]], indexing: str = "ij") -> tuple[Tensor[Any, T], ...]:
    """``torch.meshgrid``: from ``n`` 1-D tensors of lengths ``l1 ... ln``, ``n`` tensors of
    shape ``(l1, ..., ln)`` (``indexing="ij"``, PyTorch's default) or with the first two dims
    swapped (``"xy"``, numpy's default), the ``k``-th varying along its own dim. Gradients:
    summed back over the broadcast dims. (PyTorch warns when ``indexing`` is not given; gradtape
    takes its default without a warning.)

    Raises:
        TypeError: an argument is not a tensor. ShapeError: a tensor is not 1-D (0-D counts as
            length 1). ValueError: ``indexing`` is neither ``"ij"`` nor ``"xy"``.
    """
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    items: Any = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    ts = [_tensor("meshgrid", x, "tensors") for x in items]
    for x in ts:
        if x.ndim > 1:
            raise ShapeError(f"meshgrid: expects 0-D or 1-D tensors, got shape {x.shape}")
    ts = [x.reshape((1,)) if x.ndim == 0 else x for x in ts]
    n = len(ts)
    swap = indexing == "xy" and n >= 2
    order = [1, 0, *range(2, n)] if swap else list(range(n))
    shape = tuple(ts[k].shape[0] for k in order)
    out = []
    for k, x in enumerate(ts):
        pos = order.index(k)
        view = [1] * n
        view[pos] = x.shape[0]
        out.append(_ops.broadcast_to(x.reshape(tuple(view)), shape))
    return tuple(out)


# ----- selection -----------------------------------------------------------------------------


def take_along_dim(input: Tensor[Any, T], indices: Tensor[Any, Any], dim: int | None = None) -> Tensor[Any, T]:
    """``torch.take_along_dim``: :func:`gradtape.ops.take_along_axis` (numpy's
    ``take_along_axis``, PyTorch's ``gather`` with broadcasting); ``dim=None`` takes from the
    flattened input. Gradient: scattered back (added where indices repeat).

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError, IndexError: as
            :func:`gradtape.ops.take_along_axis`.
    """
    x = _tensor("take_along_dim", input)
    if dim is None:
        out: Tensor[Any, T] = _ops.take_along_axis(x.reshape((-1,)), indices.reshape((-1,)), 0)
        return out
    out = _ops.take_along_axis(x, indices, dim)
    return out


def masked_select(input: Tensor[Any, T], mask: Tensor[Any, Any]) -> Tensor[Any, T]:
    """``torch.masked_select`` (:func:`gradtape.ops.select.masked_select`: the elements where
    the bool ``mask`` is True, 1-D).

    Raises:
        TypeError: ``input`` or ``mask`` is not a tensor, or ``mask`` is not bool.
        ShapeError: the shapes do not broadcast.
    """
    out: Tensor[Any, T] = _select.masked_select(_tensor("masked_select", input), _tensor("masked_select", mask, "mask"))
    return out


def repeat_interleave(input: Tensor[Any, T], repeats: int | Tensor[Any, Any], dim: int | None = None) -> Tensor[Any, T]:
    """``torch.repeat_interleave``: each element (along ``dim``; of the flattened input when
    ``dim`` is None) repeated ``repeats`` times in place (an int, or one count per element as
    a 1-D int tensor). Gradient: each element gets the sum of its copies' gradients.

    Raises:
        TypeError: ``input`` is not a tensor, or ``repeats`` is neither an int nor an int tensor.
        ShapeError: ``dim`` is out of range, or ``repeats`` has the wrong length.
        ValueError: a count is negative.
    """
    x = _tensor("repeat_interleave", input)
    if dim is None:
        x, d = x.reshape((-1,)), 0
    else:
        d = one_dim("repeat_interleave", dim, x.shape)
    n = x.shape[d] if x.ndim else 1
    if isinstance(repeats, Tensor):
        counts = np.asarray(repeats.cpu().numpy() if repeats.is_cuda else repeats.numpy())
        if counts.dtype.kind not in "iu":
            raise TypeError(f"repeat_interleave: repeats must be an int tensor, got {counts.dtype}")
        counts = counts.reshape(-1)
        if counts.size == 1:
            counts = np.full(n, counts[0])
        if counts.size != n:
            raise ShapeError(f"repeat_interleave: repeats has {counts.size} counts for {n} elements along dim {d}")
    elif isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = np.full(n, int(repeats))
    else:
        raise TypeError(f"repeat_interleave: repeats must be an int or an int tensor, got {type(repeats).__name__}")
    if (counts < 0).any():
        raise ValueError("repeat_interleave: repeats must be non-negative")
    index = np.repeat(np.arange(n), counts)
    out: Tensor[Any, T] = _ops.index_select(x, index_tensor(x, index), d)
    return out


def diag(input: Tensor[Any, T], diagonal: int = 0) -> Tensor[Any, T]:
    """``torch.diag``: from a 1-D tensor of length ``n``, the square matrix of side ``n + |k|``
    with it on diagonal ``k`` (``k > 0`` above the main one) and zeros elsewhere; from a 2-D
    tensor, its diagonal ``k`` as a 1-D tensor. Gradient: the diagonal's entries of the
    output's gradient (1-D input), or scattered back onto the diagonal (2-D input).

    Raises:
        TypeError: ``input`` is not a tensor, or ``diagonal`` is not an int.
        ShapeError: ``input`` is neither 1-D nor 2-D.
    """
    x = _tensor("diag", input)
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise TypeError(f"diag: diagonal must be an int, got {diagonal!r}")
    k = int(diagonal)
    if x.ndim == 1:
        n = x.shape[0]
        side = n + builtins.abs(k)
        rows = np.arange(n) + builtins.max(-k, 0)
        cols = np.arange(n) + builtins.max(k, 0)
        zeros = x._like(_arrays.zeros((side * side,), x.dtype, x.data))
        if _tp._recorder is not None:  # a constant of a capture's plan, once a second recording agrees
            _tp._recorder.host_tensor(zeros)
        out: Tensor[Any, T] = _ops.index_add(zeros, 0, index_tensor(x, rows * side + cols), x).reshape((side, side))
        return out
    if x.ndim != 2:
        raise ShapeError(f"diag: expects a 1-D or 2-D tensor, got shape {x.shape}")
    r, c = x.shape
    start_r, start_c = builtins.max(-k, 0), builtins.max(k, 0)
    length = builtins.max(builtins.min(r - start_r, c - start_c), 0)
    out = x[index_tensor(x, np.arange(length) + start_r), index_tensor(x, np.arange(length) + start_c)]
    return out


# ----- products ------------------------------------------------------------------------------


def tensordot(
    a: Tensor[Any, T], b: Tensor[Any, Any], dims: int | Sequence[int] | Sequence[Sequence[int]] = 2
) -> Tensor[Any, Any]:
    """``torch.tensordot``: the sum over pairs of dims of ``a`` and ``b``: ``dims = n`` pairs
    ``a``'s last ``n`` dims with ``b``'s first ``n``; ``dims = ([a dims], [b dims])`` names
    them. The result's dims are ``a``'s free dims then ``b``'s. Computed as one matrix product
    (:func:`gradtape.ops.matmul` of the permuted, reshaped operands); gradients as there.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: paired dims differ in size, a dim
            is out of range or repeated, or ``n`` exceeds a rank.
    """
    x, y = _tensor("tensordot", a, "a"), _tensor("tensordot", b, "b")
    if isinstance(dims, bool):
        raise TypeError(f"tensordot: dims must be an int or two lists of dims, got {dims!r}")
    if isinstance(dims, (int, np.integer)):
        n = int(dims)
        if n < 0 or n > x.ndim or n > y.ndim:
            raise ShapeError(f"tensordot: dims={n} does not fit shapes {x.shape} and {y.shape}")
        da, db = list(range(x.ndim - n, x.ndim)), list(range(n))
    else:
        pair: list[Any] = list(dims)
        if len(pair) != 2:
            raise TypeError(f"tensordot: dims must be an int or two lists of dims, got {dims!r}")
        first, second = pair
        da = [normalize_axes("tensordot", d, x.ndim)[0] for d in ([first] if isinstance(first, int) else list(first))]
        db = [
            normalize_axes("tensordot", d, y.ndim)[0] for d in ([second] if isinstance(second, int) else list(second))
        ]
        if len(da) != len(db) or len(set(da)) != len(da) or len(set(db)) != len(db):
            raise ShapeError(f"tensordot: dims {dims!r} must pair distinct dims one to one")
    for i, j in zip(da, db, strict=True):
        if x.shape[i] != y.shape[j]:
            raise ShapeError(
                f"tensordot: dim {i} of shape {x.shape} ({x.shape[i]}) and dim {j} of shape {y.shape} "
                f"({y.shape[j]}) differ"
            )
    free_a = [i for i in range(x.ndim) if i not in da]
    free_b = [j for j in range(y.ndim) if j not in db]
    k = int(np.prod([x.shape[i] for i in da], dtype=np.int64))
    xa = _ops.permute(x, (*free_a, *da)).reshape((-1, k))
    yb = _ops.permute(y, (*db, *free_b)).reshape((k, -1))
    shape = tuple(x.shape[i] for i in free_a) + tuple(y.shape[j] for j in free_b)
    out: Tensor[Any, Any] = _ops.matmul(xa, yb).reshape(shape)
    return out


def cross(input: Tensor[S, T], other: Tensor[S, Any], dim: int | None = None) -> Tensor[S, Any]:
    """``torch.cross``: the cross product of 3-vectors along ``dim`` (default: the first dim
    of size 3, PyTorch's legacy choice; ``torch.linalg.cross`` uses -1), the shapes broadcast.
    ``(a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)``; gradients by the product rule.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: ``dim`` does not have size 3, no dim
            has, or the shapes do not broadcast.
    """
    x, y = broadcast_tensors(_tensor("cross", input), _tensor("cross", other, "other"))
    if dim is None:
        found = [i for i, s in enumerate(x.shape) if s == 3]
        if not found:
            raise ShapeError(f"cross: no dim of size 3 in shape {x.shape}")
        d = found[0]
    else:
        d = one_dim("cross", dim, x.shape)
    if x.shape[d] != 3:
        raise ShapeError(f"cross: dim {d} of shape {x.shape} has size {x.shape[d]}, not 3")
    a0, a1, a2 = _ops.unbind(x, d)
    b0, b1, b2 = _ops.unbind(y, d)
    out: Tensor[S, Any] = _ops.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
    return out


# ----- arithmetic ----------------------------------------------------------------------------


def addcmul(
    input: Tensor[S, T], tensor1: Tensor[S, Any], tensor2: Tensor[S, Any], *, value: float = 1.0
) -> Tensor[S, Any]:
    """``torch.addcmul``: ``input + value * tensor1 * tensor2`` (broadcasting). Gradients by the
    product rule.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: the shapes do not broadcast.
    """
    x = _tensor("addcmul", input)
    out: Tensor[S, Any] = x + _tensor("addcmul", tensor1, "tensor1") * _tensor("addcmul", tensor2, "tensor2") * value
    return out


def addcdiv(
    input: Tensor[S, T], tensor1: Tensor[S, Any], tensor2: Tensor[S, Any], *, value: float = 1.0
) -> Tensor[S, Any]:
    """``torch.addcdiv``: ``input + value * tensor1 / tensor2`` (broadcasting; Adam's update
    form). Gradients by the quotient rule.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: the shapes do not broadcast.
    """
    x = _tensor("addcdiv", input)
    out: Tensor[S, Any] = x + _tensor("addcdiv", tensor1, "tensor1") / _tensor("addcdiv", tensor2, "tensor2") * value
    return out


def logaddexp(input: Tensor[S, T], other: Tensor[S, Any]) -> Tensor[S, Any]:
    """``torch.logaddexp``: ``log(exp(a) + exp(b))`` elementwise (broadcasting), computed as
    ``max(a, b) + log1p(exp(-|a - b|))`` so that nothing overflows. Gradients:
    ``sigmoid(a - b)`` and ``sigmoid(b - a)`` (``0.5`` each on a tie, as PyTorch).

    Raises:
        TypeError: an operand is not a tensor. ShapeError: the shapes do not broadcast.
    """
    a, b = _tensor("logaddexp", input), _tensor("logaddexp", other, "other")
    out: Tensor[S, Any] = _ops.maximum(a, b) + _ops.log1p(_ops.exp(-_ops.abs(a - b)))
    return out


def logit(input: Tensor[S, T], eps: float | None = None) -> Tensor[S, T]:
    """``torch.logit``: ``log(p / (1 - p))``, the inverse of the sigmoid, with ``p`` the input
    clamped into ``[eps, 1 - eps]`` when ``eps`` is given (``inf``/NaN outside ``[0, 1]``
    otherwise). Gradient: ``1 / (p (1 - p))`` inside the clamp, ``0`` outside it; without
    ``eps``, ``inf`` at 0 and 1 and NaN outside ``[0, 1]``, as PyTorch's (where the value is
    NaN, so is the gradient: ``log(p) - log1p(-p)`` alone would give a finite ``1/p + 1/(1-p)``).

    Raises:
        TypeError: ``input`` is not a tensor. DTypeError: it is not a float tensor.
    """
    p = _tensor("logit", input)
    if eps is not None:
        p = _ops.clamp(p, eps, 1.0 - eps)
    out: Tensor[S, T] = _ops.log(p) - _ops.log1p(-p)
    if eps is None and p.requires_grad:  # p * m: m NaN outside [0, 1] (value and gradient), 0 inside
        d = p.detach()
        zero = d * 0.0  # 0 where d is finite (d outside [0, 1] is finite or NaN; NaN either way there)
        out = out + p * _ops.where(d * (1.0 - d) < 0.0, zero + float("nan"), zero)
    return out


# ----- moments -------------------------------------------------------------------------------


def var_mean(
    input: Tensor[Any, T],
    dim: int | tuple[int, ...] | None = None,
    *,
    correction: float | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
) -> tuple[Tensor[Any, T], Tensor[Any, T]]:
    """``torch.var_mean``: ``(var, mean)`` over ``dim`` (all by default), the variance with
    PyTorch's default ``correction=1`` (:func:`gradtape.var`).

    Raises:
        TypeError, ShapeError, DTypeError: as :func:`gradtape.var`.
    """
    return _moment_mean("var_mean", _torch_ops.var, input, dim, correction, unbiased, keepdim)


def std_mean(
    input: Tensor[Any, T],
    dim: int | tuple[int, ...] | None = None,
    *,
    correction: float | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
) -> tuple[Tensor[Any, T], Tensor[Any, T]]:
    """``torch.std_mean``: ``(std, mean)`` over ``dim``, the standard deviation with PyTorch's
    default ``correction=1`` (:func:`gradtape.std`).

    Raises:
        TypeError, ShapeError, DTypeError: as :func:`gradtape.std`.
    """
    return _moment_mean("std_mean", _torch_ops.std, input, dim, correction, unbiased, keepdim)


def _moment_mean(
    op: str, moment: Any, input: Any, dim: Any, correction: Any, unbiased: Any, keepdim: bool
) -> tuple[Any, Any]:
    """``(moment(input), mean(input))`` over ``dim``: :func:`var_mean`, :func:`std_mean`."""
    x = _tensor(op, input)
    return moment(x, dim=dim, correction=correction, unbiased=unbiased, keepdim=keepdim), _ops.mean(
        x, dim=dim, keepdim=keepdim
    )


# ----- more selection, ordering and shaping (issue 27, batch 4) ------------------------------------


def nonzero(input: Tensor[Any, Any], *, as_tuple: bool = False) -> Any:
    """``torch.nonzero`` (:func:`gradtape.ops.select.nonzero`: the indices of the nonzero
    elements, int64, untraced).

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    return _select.nonzero(_tensor("nonzero", input), as_tuple=as_tuple)


def argwhere(input: Tensor[Any, Any]) -> Tensor[Any, NoneTape]:
    """``torch.argwhere``: :func:`nonzero` as an ``(n, ndim)`` int64 tensor.

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    _tensor("argwhere", input)
    out: Tensor[Any, NoneTape] = nonzero(input)
    return out


def unique(
    input: Tensor[Any, Any],
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """``torch.unique``: the distinct elements of ``input`` (flattened), sorted; with
    ``return_inverse`` also each element's index into them (``input``'s shape), with
    ``return_counts`` how often each occurs. Untraced (a set of values has no gradient in
    PyTorch either).

    Raises:
        TypeError: ``input`` is not a tensor. NotImplementedError: ``dim`` is given (unique rows
            are not supported yet).
    """
    x = _tensor("unique", input)
    if dim is not None:
        raise NotImplementedError("unique: dim= (unique slices) is not supported; pass dim=None")
    if _tp._recorder is not None:
        _tp._recorder.refuse(
            f"calls unique on a tensor of shape {tuple(x.shape)}: its output's shape comes from the values, which "
            "a replay would not read again; call it outside the captured function"
        )
    vals, inverse, counts = np.unique(_arrays.into_memory_of(x.data, None), return_inverse=True, return_counts=True)
    out = [x._like(_arrays.into_memory_of(vals.astype(x.dtype), x.data))]
    if return_inverse:
        out.append(index_tensor(x, inverse.reshape(x.shape), "unique"))
    if return_counts:
        out.append(index_tensor(x, counts, "unique"))
    return out[0] if len(out) == 1 else tuple(out)


def searchsorted(
    sorted_sequence: Tensor[Any, Any], input: Tensor[Any, Any] | float, *, right: bool = False, side: str | None = None
) -> Tensor[Any, NoneTape]:
    """``torch.searchsorted``: for each value of ``input``, the index where it would be inserted
    into the 1-D ``sorted_sequence`` to keep it sorted (the first such place, or the last with
    ``right=True`` / ``side="right"``), int64 of ``input``'s shape. Untraced.

    Raises:
        TypeError: ``sorted_sequence`` is not a tensor. ShapeError: it is not 1-D (batched
            sequences are not supported yet).
    """
    seq = _tensor("searchsorted", sorted_sequence, "sorted_sequence")
    if seq.ndim != 1:
        raise ShapeError(f"searchsorted: sorted_sequence must be 1-D here, got shape {seq.shape}")
    which = side if side is not None else ("right" if right else "left")
    if seq.data.__class__ is np.ndarray and isinstance(input, Tensor) and input.data.__class__ is np.ndarray:
        out: Tensor[Any, NoneTape] = untraced(
            "searchsorted", seq, (seq, input), _searchsorted, seq.data, input.data, which
        )
        return out  # a capture's replay searches again
    vals = _arrays.into_memory_of(input.data, None) if isinstance(input, Tensor) else np.asarray(input)
    return index_tensor(seq, _searchsorted(_arrays.into_memory_of(seq.data, None), vals, which), "searchsorted")


def _searchsorted(seq: Array, vals: Any, side: str) -> Array:
    """``np.searchsorted(seq, vals, side=side)`` as int64."""
    out: Array = np.asarray(np.searchsorted(seq, vals, side=side), np.int64)  # type: ignore[call-overload]
    return out


def bucketize(input: Tensor[Any, Any], boundaries: Tensor[Any, Any], *, right: bool = False) -> Tensor[Any, NoneTape]:
    """``torch.bucketize``: each value's bucket among the sorted 1-D ``boundaries``: ``i`` with
    ``boundaries[i-1] < v <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= v <
    boundaries[i]``), int64 of ``input``'s shape. Untraced.

    Raises:
        TypeError: an argument is not a tensor. ShapeError: ``boundaries`` is not 1-D.
    """
    x = _tensor("bucketize", input)
    b = _tensor("bucketize", boundaries, "boundaries")
    if b.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-D, got shape {b.shape}")
    side = "right" if right else "left"
    if x.data.__class__ is np.ndarray and b.data.__class__ is np.ndarray:
        out: Tensor[Any, NoneTape] = untraced("bucketize", x, (x, b), _searchsorted, b.data, x.data, side)
        return out  # a capture's replay searches again
    bd, xd = _arrays.into_memory_of(b.data, None), _arrays.into_memory_of(x.data, None)
    return index_tensor(x, _searchsorted(bd, xd, side), "bucketize")


def diff(input: Tensor[Any, T], n: int = 1, dim: int = -1) -> Tensor[Any, T]:
    """``torch.diff``: the ``n``-th forward difference along ``dim`` (``x[1:] - x[:-1]``, ``n``
    times), one shorter per order. Gradient: the adjoint differences.

    Raises:
        TypeError: ``input`` is not a tensor, or ``n`` is not an int >= 0. ShapeError: ``dim``
            is out of range.
    """
    x = _tensor("diff", input)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise TypeError(f"diff: n must be an int >= 0, got {n!r}")
    d = one_dim("diff", dim, x.shape)
    out: Tensor[Any, T] = x
    for _ in range(int(n)):
        size = out.shape[d]
        out = narrow(out, d, 1, builtins.max(size - 1, 0)) - narrow(out, d, 0, builtins.max(size - 1, 0))
    return out


def _cumextreme(op: str, x: Tensor[Any, T], dim: int, pick_max: bool) -> Any:
    d = one_dim(op, dim, x.shape)
    if x.data.__class__ is np.ndarray:  # an untraced int64 tensor a capture's replay computes again
        indices = untraced(op, x, (x,), _cumextreme_indices, x.data, d, pick_max)
    else:
        indices = index_tensor(x, _cumextreme_indices(_arrays.into_memory_of(x.data, None), d, pick_max))
    values = _ops.take_along_axis(x, indices, d) if x.ndim else x.clone()
    from gradtape.ops.select import ValuesIndices

    return ValuesIndices(values, indices)


def _cumextreme_indices(data: Array, d: int, pick_max: bool) -> Array:
    """Where the running maximum (``pick_max``) or minimum of ``data`` along ``d`` was taken:
    the latest position equal to the running extreme (PyTorch's), int64."""
    acc = (np.maximum if pick_max else np.minimum).accumulate(data, axis=d) if data.size else data
    n = data.shape[d] if data.ndim else 1
    pos = np.arange(n).reshape((-1,) + (1,) * (data.ndim - d - 1)) if data.ndim else np.zeros(())
    hit = np.where(data == acc, pos, -1)
    idx: Array = np.maximum.accumulate(hit, axis=d) if data.size else hit
    return idx.astype(np.int64, copy=False)


def cummax(input: Tensor[Any, T], dim: int) -> Any:
    """``torch.cummax``: ``(values, indices)``, the running maximum along ``dim`` and where it
    was taken (the latest position on ties, as PyTorch). Gradient: each output's to its index.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: ``dim`` is out of range.
    """
    return _cumextreme("cummax", _tensor("cummax", input), dim, True)


def cummin(input: Tensor[Any, T], dim: int) -> Any:
    """``torch.cummin``: the running minimum along ``dim`` and its indices (see :func:`cummax`).

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: ``dim`` is out of range.
    """
    return _cumextreme("cummin", _tensor("cummin", input), dim, False)


def logcumsumexp(input: Tensor[Any, T], dim: int) -> Tensor[Any, T]:
    """``torch.logcumsumexp``: ``log(cumsum(exp(x)))`` along ``dim``, computed stably (the
    slice's maximum taken out first). Gradient: ``softmax`` weights over each prefix.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: ``dim`` is out of range.
    """
    x = _tensor("logcumsumexp", input)
    d = one_dim("logcumsumexp", dim, x.shape)
    m = _ops.max(x, axis=d, keepdims=True).detach()
    out: Tensor[Any, T] = _ops.log(_ops.cumsum(_ops.exp(x - m), d)) + m
    return out


def kthvalue(input: Tensor[Any, T], k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """``torch.kthvalue``: ``(values, indices)``, the ``k``-th smallest element along ``dim``
    (1-based) and its position. Gradient: to that element.

    Raises:
        TypeError: ``input`` is not a tensor, or ``k`` is not an int. ShapeError: ``dim`` is out
            of range, or ``k`` is not in ``1 .. size``.
    """
    x = _tensor("kthvalue", input)
    d = one_dim("kthvalue", dim, x.shape)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"kthvalue: k must be an int, got {k!r}")
    size = x.shape[d] if x.ndim else 1
    if not 1 <= k <= size:
        raise ShapeError(f"kthvalue: k={k} is out of range for dim {dim} of size {size}")
    order = _ops.argsort(x, dim=d)
    idx = narrow(order, d, int(k) - 1, 1)
    values = _ops.take_along_axis(x, idx, d)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    from gradtape.ops.select import ValuesIndices

    return ValuesIndices(values, idx)


def median(input: Tensor[Any, T], dim: int | None = None, keepdim: bool = False) -> Any:
    """``torch.median``: the lower median (the ``(n + 1) // 2``-th smallest, PyTorch's choice
    for an even count), of all elements (a rank-0 tensor), or ``(values, indices)`` along
    ``dim``. Gradient: to the median element.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: ``dim`` is out of range or empty.
    """
    x = _tensor("median", input)
    if dim is None:
        flat = x.reshape((-1,))
        if not flat.shape[0]:
            raise ShapeError("median: the input is empty")
        out: Any = kthvalue(flat, (flat.shape[0] + 1) // 2, 0).values
        return out
    d = one_dim("median", dim, x.shape)
    return kthvalue(x, ((x.shape[d] if x.ndim else 1) + 1) // 2, d, keepdim)


def nansum(input: Tensor[Any, T], dim: int | tuple[int, ...] | None = None, keepdim: bool = False) -> Tensor[Any, T]:
    """``torch.nansum``: the sum over ``dim`` (all by default) with NaNs counted as zero.
    Gradient: ``g`` where the element was not NaN, ``0`` where it was.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: a dim is out of range.
    """
    x = _tensor("nansum", input)
    out: Tensor[Any, T] = _ops.sum(_ops.where(_ops.isnan(x), 0.0, x), dim=dim, keepdim=keepdim)
    return out


def nanmean(input: Tensor[Any, T], dim: int | tuple[int, ...] | None = None, keepdim: bool = False) -> Tensor[Any, T]:
    """``torch.nanmean``: the mean over ``dim`` of the elements that are not NaN (NaN where all
    are). Gradient: ``g / count`` to each non-NaN element.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: a dim is out of range.
    """
    x = _tensor("nanmean", input)
    keep = _ops.logical_not(_ops.isnan(x))
    total = _ops.sum(_ops.where(keep, x, 0.0), dim=dim, keepdim=keepdim)
    count = _ops.sum(keep.to(x.dtype), dim=dim, keepdim=keepdim)
    out: Tensor[Any, T] = total / count
    return out


def rot90(input: Tensor[Any, T], k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor[Any, T]:
    """``torch.rot90``: rotate by 90 degrees ``k`` times in the plane of ``dims``, from the
    first towards the second. Gradient: the rotation back.

    Raises:
        TypeError: ``input`` is not a tensor or ``k`` not an int. ShapeError: ``dims`` are not
            two distinct dims in range.
    """
    x = _tensor("rot90", input)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"rot90: k must be an int, got {k!r}")
    if len(dims) != 2:
        raise ShapeError(f"rot90: dims must be two dims, got {dims!r}")
    a, b = (normalize_axes("rot90", d, x.ndim)[0] for d in dims)
    if a == b:
        raise ShapeError(f"rot90: dims must differ, got {dims!r}")
    turns = int(k) % 4
    out: Tensor[Any, T] = x
    if turns == 1:
        out = _ops.transpose(_ops.flip(x, b), a, b)
    elif turns == 2:
        out = _ops.flip(x, (a, b))
    elif turns == 3:
        out = _ops.flip(_ops.transpose(x, a, b), b)
    return out


def fliplr(input: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.fliplr``: the order of dim 1 (columns) reversed.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: it has fewer than 2 dims.
    """
    x = _tensor("fliplr", input)
    if x.ndim < 2:
        raise ShapeError(f"fliplr: needs at least 2 dims, got shape {x.shape}")
    out: Tensor[Any, T] = _ops.flip(x, 1)
    return out


def flipud(input: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.flipud``: the order of dim 0 (rows) reversed.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: it is 0-d.
    """
    x = _tensor("flipud", input)
    if x.ndim < 1:
        raise ShapeError("flipud: needs at least 1 dim, got a 0-d tensor")
    out: Tensor[Any, T] = _ops.flip(x, 0)
    return out


def block_diag(*tensors: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.block_diag``: the 2-D tensors (0-d and 1-D ones taken as one row) on the
    diagonal of one matrix, zeros elsewhere. Gradient: each block's part.

    Raises:
        TypeError: an argument is not a tensor. ShapeError: one has more than 2 dims.
    """
    ts = [_tensor("block_diag", t, "tensors") for t in tensors]
    mats = []
    for t in ts:
        if t.ndim > 2:
            raise ShapeError(f"block_diag: expects tensors of at most 2 dims, got shape {t.shape}")
        mats.append(t.reshape((1, -1)) if t.ndim < 2 else t)
    width = builtins.sum(m.shape[1] for m in mats)
    rows = []
    left = 0
    for m in mats:
        rows.append(_ops.pad(m, (left, width - left - m.shape[1])))
        left += m.shape[1]
    out: Tensor[Any, T] = _ops.concat(rows, 0)
    return out


def cartesian_prod(*tensors: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.cartesian_prod``: every combination of one element from each 1-D tensor, as
    rows of an ``(n1 * ... * nk, k)`` tensor (a 1-D tensor for one input). Gradient: summed
    back over the repetitions.

    Raises:
        TypeError: an argument is not a tensor. ShapeError: one is not 1-D.
    """
    ts = [_tensor("cartesian_prod", t, "tensors") for t in tensors]
    for t in ts:
        if t.ndim != 1:
            raise ShapeError(f"cartesian_prod: expects 1-D tensors, got shape {t.shape}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    out: Tensor[Any, T] = _ops.stack([g.reshape((-1,)) for g in grids], 1)
    return out


def tensor_split(
    input: Tensor[Any, T], indices_or_sections: int | Sequence[int], dim: int = 0
) -> tuple[Tensor[Any, T], ...]:
    """``torch.tensor_split``: an int ``n`` splits ``dim`` into ``n`` nearly equal parts (the
    first ``size % n`` one longer), a list of indices splits before each. Gradient: each part's
    into its place.

    Raises:
        TypeError: ``input`` is not a tensor, or the splits are neither an int nor ints.
        ShapeError: ``dim`` is out of range. ValueError: ``n`` is below 1.
    """
    x = _tensor("tensor_split", input)
    d = one_dim("tensor_split", dim, x.shape)
    size = x.shape[d]
    if isinstance(indices_or_sections, bool):
        raise TypeError(f"tensor_split: indices_or_sections must be an int or ints, got {indices_or_sections!r}")
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n < 1:
            raise ValueError(f"tensor_split: the number of sections must be at least 1, got {n}")
        q, r = divmod(size, n)
        bounds = list(np.cumsum([0] + [q + 1] * r + [q] * (n - r)))
    else:
        cuts = [int(i) for i in indices_or_sections]
        bounds = [0, *(builtins.min(builtins.max(c if c >= 0 else c + size, 0), size) for c in cuts), size]
    parts = []
    for lo, hi in itertools.pairwise(bounds):
        lo_, hi_ = int(lo), builtins.max(int(hi), int(lo))
        parts.append(narrow(x, d, lo_, hi_ - lo_))
    return tuple(parts)


def column_stack(tensors: Sequence[Tensor[Any, T]]) -> Tensor[Any, T]:
    """``torch.column_stack``: 0-d and 1-D tensors as columns ``(n, 1)``, joined with the 2-D
    ones along dim 1. Gradient: as :func:`gradtape.ops.concat`.

    Raises:
        TypeError: an item is not a tensor. ShapeError: the row counts differ.
    """
    ts = [_tensor("column_stack", t, "tensors") for t in tensors]
    cols = [t.reshape((-1, 1)) if t.ndim < 2 else t for t in ts]
    out: Tensor[Any, T] = _ops.concat(cols, 1)
    return out


def dstack(tensors: Sequence[Tensor[Any, T]]) -> Tensor[Any, T]:
    """``torch.dstack``: tensors joined along dim 2 (depth), 1-D ``(n,)`` taken as ``(1, n, 1)``
    and 2-D ``(m, n)`` as ``(m, n, 1)``. Gradient: as :func:`gradtape.ops.concat`.

    Raises:
        TypeError: an item is not a tensor. ShapeError: the other dims differ.
    """
    ts = [_tensor("dstack", t, "tensors") for t in tensors]
    deep = []
    for t in ts:
        if t.ndim == 0:
            deep.append(t.reshape((1, 1, 1)))
        elif t.ndim == 1:
            deep.append(t.reshape((1, -1, 1)))
        elif t.ndim == 2:
            deep.append(t.reshape((t.shape[0], t.shape[1], 1)))
        else:
            deep.append(t)
    out: Tensor[Any, T] = _ops.concat(deep, 2)
    return out


def take(input: Tensor[Any, T], index: Tensor[Any, Any]) -> Tensor[Any, T]:
    """``torch.take``: the elements of the flattened ``input`` at ``index`` (of ``index``'s
    shape; negative indices count from the end). Gradient: added back at the indices.

    Raises:
        TypeError: an argument is not a tensor. IndexError: an index is out of range.
    """
    x = _tensor("take", input)
    idx = _tensor("take", index, "index")
    flat = x.reshape((-1,))
    out: Tensor[Any, T] = flat[idx.reshape((-1,))].reshape(idx.shape)
    return out


# ----- products with a scaled sum (BLAS's gemm family) ----------------------------------------

_FALSE = np.zeros((), np.bool_)
"""A 0-d False mask: ``where(_FALSE, t, 0.0)`` is zeros of ``t``'s shape whose gradient to ``t``
is exactly 0 (PyTorch's ``beta=0``/``alpha=0``: the term is ignored, its NaN/inf not
propagated, and its tensors still get a gradient, of zeros)."""


def _number(op: str, name: str, v: object) -> float:
    """``beta``/``alpha`` as a Python number: an int, a float, a bool (PyTorch's ``Number``
    takes them) or a 0-d tensor's value.

    Raises:
        TypeError: anything else; the message names the op and the argument.
    """
    if isinstance(v, Tensor):
        if v.ndim != 0:
            raise TypeError(f"{op}: {name} must be a number, got a tensor of shape {v.shape}")
        v = v.item()
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return v.item() if isinstance(v, np.generic) else v
    raise TypeError(f"{op}: {name} must be a number, got {type(v).__name__}")


def _floats(op: str, named: Sequence[tuple[str, Tensor[Any, Any]]]) -> None:
    """Every tensor of ``named`` (``(argument name, tensor)``) is float32 or float64, all of one dtype.

    Raises:
        DTypeError: one is not a float tensor (gradtape's products take float32 or float64),
            or two dtypes differ; the message names the op, the arguments and their shapes.
    """
    first, t0 = named[0]
    for name, t in named:
        if t.dtype.kind != "f":
            raise DTypeError(
                f"{op}: {name} has dtype {t.dtype} (shape {t.shape}); {op} takes float32 or float64 tensors"
            )
        if t.dtype != t0.dtype:
            raise DTypeError(
                f"{op}: {name} has dtype {t.dtype} (shape {t.shape}), {first} has dtype {t0.dtype} "
                f"(shape {t0.shape}); they must be the same"
            )


def _scaled_sum(
    op: str, x: Tensor[Any, Any], product: Tensor[Any, Any], beta: object, alpha: object
) -> Tensor[Any, Any]:
    """``beta * x + alpha * product`` with PyTorch's rules: ``x`` broadcasts to the product's
    shape (never the other way), and a zero ``beta`` (``alpha``) ignores ``x`` (the product),
    NaN and inf included, its tensors getting a zero gradient.

    Raises:
        ShapeError: ``x`` does not broadcast to the product's shape (names both).
        TypeError: ``beta`` or ``alpha`` is not a number.
    """
    b, a = _number(op, "beta", beta), _number(op, "alpha", alpha)
    shape = product.shape
    try:
        fits = np.broadcast_shapes(x.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"{op}: input of shape {x.shape} does not broadcast to the product's shape {shape}")
    if _tp._recorder is not None:
        _tp._recorder.constant(_FALSE)
    if a == 0:
        product = _ops.where(_FALSE, product, 0.0)
    elif a != 1:
        product = product * a
    if b == 0:
        term = _ops.where(_FALSE, x, 0.0)
    elif b != 1:
        term = x * b
    else:
        term = x
    out: Tensor[Any, Any] = term + product
    return out


def addmm(
    input: Tensor[Any, Any],
    mat1: Tensor[Any, Any],
    mat2: Tensor[Any, Any],
    *,
    beta: float | Tensor[Any, Any] = 1,
    alpha: float | Tensor[Any, Any] = 1,
) -> Tensor[Any, Any]:
    """``torch.addmm``: ``beta * input + alpha * (mat1 @ mat2)``, ``mat1`` of shape ``(n, m)``,
    ``mat2`` ``(m, p)``, ``input`` broadcasting to ``(n, p)`` (the output's shape); one float
    dtype (float32 or float64) for all three. With ``beta=0`` ``input`` is ignored (its NaN and
    inf are not propagated), with ``alpha=0`` the product, as PyTorch's.

    Gradients: ``input`` gets ``beta * g`` summed back over the broadcast dims, ``mat1``
    ``alpha * g @ mat2.T``, ``mat2`` ``alpha * mat1.T @ g`` (zeros where the scale is 0).

    Raises:
        TypeError: an operand is not a tensor, or ``beta``/``alpha`` is not a number.
        ShapeError: ``mat1`` or ``mat2`` is not 2-D, their inner dims differ, or ``input`` does
            not broadcast to ``(n, p)`` (names the shapes).
        DTypeError: an operand is not float, or the dtypes differ (PyTorch also runs integer
            tensors; gradtape's products take floats).
    """
    x = _tensor("addmm", input)
    a, b = _tensor("addmm", mat1, "mat1"), _tensor("addmm", mat2, "mat2")
    for name, m in (("mat1", a), ("mat2", b)):
        if m.ndim != 2:
            raise ShapeError(f"addmm: {name} must be a matrix (2-D), got shape {m.shape}")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"addmm: mat1 of shape {a.shape} and mat2 of shape {b.shape} cannot be multiplied")
    _floats("addmm", (("input", x), ("mat1", a), ("mat2", b)))
    return _scaled_sum("addmm", x, _ops.matmul(a, b), beta, alpha)


def addmv(
    input: Tensor[Any, Any],
    mat: Tensor[Any, Any],
    vec: Tensor[Any, Any],
    *,
    beta: float | Tensor[Any, Any] = 1,
    alpha: float | Tensor[Any, Any] = 1,
) -> Tensor[Any, Any]:
    """``torch.addmv``: ``beta * input + alpha * (mat @ vec)``, ``mat`` of shape ``(n, m)``,
    ``vec`` ``(m,)``, ``input`` broadcasting to ``(n,)``; one float dtype. ``beta=0`` /
    ``alpha=0`` ignore their term as in :func:`addmm`.

    Gradients: ``input`` gets ``beta * g`` (summed back), ``mat`` ``alpha * outer(g, vec)``,
    ``vec`` ``alpha * mat.T @ g``.

    Raises:
        TypeError: an operand is not a tensor, or ``beta``/``alpha`` is not a number.
        ShapeError: ``mat`` is not 2-D, ``vec`` not 1-D, their sizes differ, or ``input`` does
            not broadcast to ``(n,)``.
        DTypeError: an operand is not float, or the dtypes differ.
    """
    x = _tensor("addmv", input)
    m, v = _tensor("addmv", mat, "mat"), _tensor("addmv", vec, "vec")
    if m.ndim != 2 or v.ndim != 1:
        raise ShapeError(f"addmv: expects a matrix (2-D) and a vector (1-D), got shapes {m.shape} and {v.shape}")
    if m.shape[1] != v.shape[0]:
        raise ShapeError(f"addmv: mat of shape {m.shape} and vec of shape {v.shape} cannot be multiplied")
    _floats("addmv", (("input", x), ("mat", m), ("vec", v)))
    return _scaled_sum("addmv", x, _ops.matmul(m, v), beta, alpha)


def addr(
    input: Tensor[Any, Any],
    vec1: Tensor[Any, Any],
    vec2: Tensor[Any, Any],
    *,
    beta: float | Tensor[Any, Any] = 1,
    alpha: float | Tensor[Any, Any] = 1,
) -> Tensor[Any, Any]:
    """``torch.addr``: ``beta * input + alpha * outer(vec1, vec2)``, ``vec1`` of shape ``(n,)``,
    ``vec2`` ``(m,)``, ``input`` broadcasting to ``(n, m)``; one float dtype. ``beta=0`` /
    ``alpha=0`` ignore their term as in :func:`addmm`.

    Gradients: ``input`` gets ``beta * g`` (summed back), ``vec1`` ``alpha * g @ vec2``,
    ``vec2`` ``alpha * g.T @ vec1``.

    Raises:
        TypeError: an operand is not a tensor, or ``beta``/``alpha`` is not a number.
        ShapeError: ``vec1`` or ``vec2`` is not 1-D, or ``input`` does not broadcast to ``(n, m)``.
        DTypeError: an operand is not float, or the dtypes differ.
    """
    x = _tensor("addr", input)
    u, v = _tensor("addr", vec1, "vec1"), _tensor("addr", vec2, "vec2")
    if u.ndim != 1 or v.ndim != 1:
        raise ShapeError(f"addr: expects two vectors (1-D), got shapes {u.shape} and {v.shape}")
    _floats("addr", (("input", x), ("vec1", u), ("vec2", v)))
    return _scaled_sum("addr", x, _ops.outer(u, v), beta, alpha)


def _batches(op: str, b1: Tensor[Any, Any], b2: Tensor[Any, Any]) -> None:
    """``batch1`` ``(b, n, m)`` and ``batch2`` ``(b, m, p)`` fit.

    Raises:
        ShapeError: either is not 3-D, the batch counts or the inner dims differ.
    """
    if b1.ndim != 3 or b2.ndim != 3:
        raise ShapeError(
            f"{op}: batch1 and batch2 must be 3-D (batches of matrices), got shapes {b1.shape} and {b2.shape}"
        )
    if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
        raise ShapeError(
            f"{op}: batch1 of shape {b1.shape} and batch2 of shape {b2.shape} cannot be multiplied "
            "(want (b, n, m) and (b, m, p))"
        )


def baddbmm(
    input: Tensor[Any, Any],
    batch1: Tensor[Any, Any],
    batch2: Tensor[Any, Any],
    *,
    beta: float | Tensor[Any, Any] = 1,
    alpha: float | Tensor[Any, Any] = 1,
) -> Tensor[Any, Any]:
    """``torch.baddbmm``: ``beta * input + alpha * bmm(batch1, batch2)``, ``batch1`` of shape
    ``(b, n, m)``, ``batch2`` ``(b, m, p)``, ``input`` broadcasting to ``(b, n, p)``; one float
    dtype. ``beta=0`` / ``alpha=0`` ignore their term as in :func:`addmm`.

    Gradients: ``input`` gets ``beta * g`` (summed back), ``batch1`` ``alpha * g @ batch2ᵀ``,
    ``batch2`` ``alpha * batch1ᵀ @ g``, batch by batch.

    Raises:
        TypeError: an operand is not a tensor, or ``beta``/``alpha`` is not a number.
        ShapeError: a batch is not 3-D, the batch counts or inner dims differ, or ``input``
            does not broadcast to ``(b, n, p)``.
        DTypeError: an operand is not float, or the dtypes differ.
    """
    x = _tensor("baddbmm", input)
    b1, b2 = _tensor("baddbmm", batch1, "batch1"), _tensor("baddbmm", batch2, "batch2")
    _batches("baddbmm", b1, b2)
    _floats("baddbmm", (("input", x), ("batch1", b1), ("batch2", b2)))
    return _scaled_sum("baddbmm", x, _ops.matmul(b1, b2), beta, alpha)


def addbmm(
    input: Tensor[Any, Any],
    batch1: Tensor[Any, Any],
    batch2: Tensor[Any, Any],
    *,
    beta: float | Tensor[Any, Any] = 1,
    alpha: float | Tensor[Any, Any] = 1,
) -> Tensor[Any, Any]:
    """``torch.addbmm``: ``beta * input + alpha * sum_i batch1[i] @ batch2[i]``, ``batch1`` of
    shape ``(b, n, m)``, ``batch2`` ``(b, m, p)``, ``input`` broadcasting to ``(n, p)``; one
    float dtype. The sum over the batch is one matrix product of ``(n, b*m)`` by ``(b*m, p)``.
    ``beta=0`` / ``alpha=0`` ignore their term as in :func:`addmm`.

    Gradients: ``input`` gets ``beta * g`` (summed back), ``batch1[i]`` ``alpha * g @
    batch2[i]ᵀ``, ``batch2[i]`` ``alpha * batch1[i]ᵀ @ g``.

    Raises:
        TypeError: an operand is not a tensor, or ``beta``/``alpha`` is not a number.
        ShapeError: a batch is not 3-D, the batch counts or inner dims differ, or ``input``
            does not broadcast to ``(n, p)``.
        DTypeError: an operand is not float, or the dtypes differ.
    """
    x = _tensor("addbmm", input)
    b1, b2 = _tensor("addbmm", batch1, "batch1"), _tensor("addbmm", batch2, "batch2")
    _batches("addbmm", b1, b2)
    _floats("addbmm", (("input", x), ("batch1", b1), ("batch2", b2)))
    nb, n, m = b1.shape
    p = b2.shape[2]
    rows = _ops.permute(b1, (1, 0, 2)).reshape((n, nb * m))
    return _scaled_sum("addbmm", x, _ops.matmul(rows, b2.reshape((nb * m, p))), beta, alpha)


# ----- other products ---------------------------------------------------------------------------


def _one_dtype(op: str, a: Tensor[Any, Any], b: Tensor[Any, Any]) -> None:
    """Raises DTypeError naming the op and both shapes when the dtypes differ (PyTorch's rule
    for these products)."""
    if a.dtype != b.dtype:
        raise DTypeError(
            f"{op}: both inputs must have the same dtype, got {a.dtype} (shape {a.shape}) and "
            f"{b.dtype} (shape {b.shape})"
        )


def kron(input: Tensor[Any, Any], other: Tensor[Any, Any]) -> Tensor[Any, Any]:
    """``torch.kron``: the Kronecker product. The operands' shapes are padded with leading 1s to
    one rank ``k``; the result has shape ``(a0*b0, ..., a(k-1)*b(k-1))`` and
    ``out[i0*b0 + j0, ...] = input[i0, ...] * other[j0, ...]``. Computed as the broadcast
    product of ``input`` reshaped to ``(a0, 1, a1, 1, ...)`` and ``other`` to ``(1, b0, 1, b1,
    ...)``, reshaped back. Integer tensors too (no gradient).

    Gradients: ``input`` gets ``g`` times ``other``'s matching entries summed over each block,
    ``other`` the same with ``input``'s.

    Raises:
        TypeError: an operand is not a tensor.
        DTypeError: the operands are floats of different dtypes (float32 and float64:
            gradtape does not promote them; PyTorch does).
    """
    a, b = _tensor("kron", input), _tensor("kron", other, "other")
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        _one_dtype("kron", a, b)
    k = builtins.max(a.ndim, b.ndim)
    sa = (1,) * (k - a.ndim) + tuple(a.shape)
    sb = (1,) * (k - b.ndim) + tuple(b.shape)
    ar = a.reshape(tuple(v for n in sa for v in (n, 1)))
    br = b.reshape(tuple(v for n in sb for v in (1, n)))
    out: Tensor[Any, Any] = (ar * br).reshape(tuple(p * q for p, q in zip(sa, sb, strict=True)))
    return out


def trace(input: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.trace``: the sum of the main diagonal of a 2-D tensor (a rectangular one too), a
    0-d tensor of its dtype (int64 for an integer input, as PyTorch's).

    Gradient: ``g`` on the main diagonal, zeros elsewhere.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: it is not 2-D.
        DTypeError: it is bool (PyTorch refuses it too).
    """
    x = _tensor("trace", input)
    if x.ndim != 2:
        raise ShapeError(f"trace: expects a matrix (2-D), got shape {x.shape}")
    if x.dtype == np.bool_:
        raise DTypeError(f"trace: takes numeric tensors, got dtype bool (shape {x.shape})")
    out: Tensor[Any, T] = _ops.sum(diag(x))
    if out.dtype.kind in "iu" and out.dtype != np.int64:
        widened: Tensor[Any, Any] = out.long()  # an integer sum: no tape
        return widened
    return out


def inner(input: Tensor[Any, Any], other: Tensor[Any, Any]) -> Tensor[Any, Any]:
    """``torch.inner``: the sum of products over the last dims, of shape ``input.shape[:-1] +
    other.shape[:-1]`` (a 0-d tensor for two vectors); ``input * other`` when either is 0-d.
    Computed as :func:`tensordot` over the last dims (a broadcast product summed for integer
    tensors, which have no gradient).

    Gradients: ``input`` gets ``g`` contracted with ``other`` over ``other``'s leading dims,
    and the other way round.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: the last dims differ.
        DTypeError: the dtypes differ, or an operand is bool.
    """
    a, b = _tensor("inner", input), _tensor("inner", other, "other")
    _one_dtype("inner", a, b)
    if a.dtype == np.bool_:
        raise DTypeError(f"inner: takes numeric tensors, got dtype bool (shapes {a.shape} and {b.shape})")
    if a.ndim == 0 or b.ndim == 0:
        out: Tensor[Any, Any] = a * b
        return out
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: the last dims must match, got shapes {a.shape} and {b.shape}")
    if a.dtype.kind == "f":
        return tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))
    k = a.shape[-1]
    wide = a.reshape((*a.shape[:-1], *(1,) * (b.ndim - 1), k))
    out = _ops.sum(wide * b, -1)
    return out


def vdot(input: Tensor[Any, T], other: Tensor[Any, Any]) -> Tensor[Any, Any]:
    """``torch.vdot`` of real vectors: ``sum(input * other)`` of two 1-D tensors of one length and
    dtype, a 0-d tensor (:func:`gradtape.dot`; PyTorch conjugates a complex ``input``, and
    gradtape has no complex tensors).

    Gradients: ``input`` gets ``g * other``, ``other`` ``g * input``.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: an operand is not 1-D, or the
            lengths differ. DTypeError: the dtypes differ, or an operand is bool.
    """
    a, b = _tensor("vdot", input), _tensor("vdot", other, "other")
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"vdot: expects two 1-D tensors, got shapes {a.shape} and {b.shape}")
    if a.shape != b.shape:
        raise ShapeError(f"vdot: the lengths differ: shapes {a.shape} and {b.shape}")
    _one_dtype("vdot", a, b)
    if a.dtype == np.bool_:
        raise DTypeError(f"vdot: takes numeric tensors, got dtype bool (shapes {a.shape} and {b.shape})")
    if a.dtype.kind == "f":
        out: Tensor[Any, Any] = _ops.dot(a, b)
        return out
    out = _ops.sum(a * b)
    return out


# ----- scatter -----------------------------------------------------------------------------------


def _is_number(v: object) -> bool:
    """``v`` is a Python or numpy number or bool (PyTorch's ``Number``)."""
    return isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating))


def _scatter_targets(idx: Array, d: int, shape: tuple[int, ...]) -> Array:
    """The flat (C-order) positions in an array of ``shape`` that :func:`scatter` writes
    ``index``'s elements to: each element's own coordinates, the one along ``d`` replaced by its
    value (int64, of ``idx``'s shape; the index is checked)."""
    lin = np.zeros(idx.shape, np.int64)
    stride = 1
    for k in range(len(shape) - 1, -1, -1):
        if k == d:
            coord = idx.astype(np.int64, copy=False)
        else:
            coord = np.arange(idx.shape[k], dtype=np.int64).reshape((-1,) + (1,) * (idx.ndim - k - 1))
        lin = lin + coord * stride
        stride *= shape[k]
    return lin


def _scatter_covered(idx: Array, d: int, shape: tuple[int, ...]) -> Array:
    """The bool mask of ``shape``: True where :func:`scatter` writes."""
    mask = np.zeros(int(np.prod(shape, dtype=np.int64)), np.bool_)
    mask[_scatter_targets(idx, d, shape).reshape(-1)] = True
    return mask.reshape(shape)


def _scatter_last(idx: Array, d: int, shape: tuple[int, ...]) -> Array:
    """The bool mask of ``idx``'s shape: True at each element that is the last (in C order,
    along ``d``) to write its position: the one whose value stays, as PyTorch's CPU loop."""
    lin = _scatter_targets(idx, d, shape).reshape(-1)
    _, first = np.unique(lin[::-1], return_index=True)
    keep = np.zeros(lin.size, np.bool_)
    keep[lin.size - 1 - first] = True
    return keep.reshape(idx.shape)


def _scattered(x: Array, idx: Array, d: int, src: Array | None, value: Any, reduce: str | None) -> Array:
    """:func:`scatter` on arrays (integer and bool inputs, and ``reduce=``): ``x`` with ``src``'s
    elements (or ``value``) written (``reduce=None``, the last write staying), added
    (``"add"``) or multiplied (``"multiply"``) in at ``index``'s positions, in C order as
    PyTorch's CPU loop."""
    out = np.array(x, copy=True, order="C").reshape(-1)
    lin = _scatter_targets(idx, d, x.shape).reshape(-1)
    if src is None:
        vals = np.full(lin.size, value).astype(x.dtype)
    else:
        vals = np.asarray(src[tuple(slice(0, n) for n in idx.shape)], x.dtype).reshape(-1)
    if reduce is None:
        keep = _scatter_last(idx, d, x.shape).reshape(-1)
        out[lin[keep]] = vals[keep]
    elif reduce == "add":
        np.add.at(out, lin, vals)
    else:
        np.multiply.at(out, lin, vals)
    return out.reshape(x.shape)


def _from_index(op: str, like: Tensor[Any, Any], index: Tensor[Any, Any], fn: Any, *args: Any) -> Tensor[Any, NoneTape]:
    """``fn(index's values, *args)``, computed on the host, as an untraced tensor on ``like``'s
    device; a capture's replay computes it again from the index's values."""
    if index.data.__class__ is np.ndarray and like.data.__class__ is np.ndarray:
        out: Tensor[Any, NoneTape] = untraced(op, like, (index,), fn, index.data, *args)
        return out
    host = np.asarray(fn(_arrays.into_memory_of(index.data, None), *args))
    return like._like(_arrays.into_memory_of(host, like.data))  # type: ignore[no-any-return]


def _not_differentiable(op: str, out: Tensor[Any, Any], why: str) -> Tensor[Any, Any]:
    """Record ``out`` (made on its inputs' tape) with rules that raise: PyTorch has no
    derivative for it (a ``NotImplemented`` grad_fn), so a gradient through it is an error,
    never a silent zero."""
    tape = out.tape
    if tape is not NONE_TAPE:

        def not_differentiable(*_: Any) -> Any:
            raise TapeError(f"{op}: not differentiable ({why})")

        _tp.record(tape, out, not_differentiable, not_differentiable)
    return out


def _on_host(
    op: str, like: Tensor[Any, Any], sources: tuple[Tensor[Any, Any], ...], tape: Tape, fn: Any, *args: Any
) -> Tensor[Any, Any]:
    """``fn(*args)`` (``args``: the ``sources``' arrays and constants) computed on the host, as a
    tensor on ``like``'s device made on ``tape`` (the caller records its rules); a capture's
    replay computes it again from the sources' values."""
    make = like._like if tape is NONE_TAPE else functools.partial(like._from_op, tape=tape)
    if all(t.data.__class__ is np.ndarray for t in (like, *sources)):
        out: Tensor[Any, Any] = make(np.asarray(fn(*args)))
        if _tp._recorder is not None:
            replayable(op, out.data, refill, (fn, *args), sources, tape, True)
        return out
    host = tuple(_arrays.into_memory_of(a, None) if hasattr(a, "__cuda_array_interface__") else a for a in args)
    out = make(_arrays.into_memory_of(np.asarray(fn(*host)), like.data))
    return out


def scatter(
    input: Tensor[S, T],
    dim: int,
    index: Tensor[Any, Any],
    src: Tensor[Any, Any] | float | None = None,
    *,
    value: float | None = None,
    reduce: str | None = None,
) -> Tensor[S, Any]:
    """``torch.scatter``: a copy of ``input`` with ``src``'s elements written at ``index`` along
    ``dim``: ``out[index[i][j]][j] = src[i][j]`` for ``dim=0`` (``out[i][index[i][j]] =
    src[i][j]`` for ``dim=1``, ...); with ``value`` (a number, PyTorch's second overload,
    also passed in ``src``'s place) the number is written instead. ``index`` is an integer
    tensor with ``input``'s number of dims, no larger than ``src`` in any dim and no larger
    than ``input`` outside ``dim``, its entries in ``[0, input.shape[dim])``; only the part of
    ``src`` it covers is read. Where ``index`` repeats a position, the last write (in order
    along ``dim``) stays, as PyTorch's CPU loop (PyTorch calls the choice arbitrary).

    Gradients (float tensors, PyTorch's definitions): ``input`` gets ``g`` with zeros at the
    written positions; ``src`` gets ``g`` gathered at ``index`` (``take_along_dim``), zero
    where ``index`` does not reach. At a repeated position every writer gets ``g`` there, as
    in PyTorch (whose documentation calls it incorrect), except a non-finite ``src`` element
    whose write was overwritten, which gets 0. Integer and bool tensors: no gradient.

    ``reduce="add"`` / ``"multiply"`` (deprecated in PyTorch for ``src``, in favour of
    ``scatter_reduce``) adds or multiplies each element (``value``) into its position instead of
    writing it, in order; not differentiable, as PyTorch's: a gradient through it raises
    :class:`~gradtape.errors.TapeError` (:func:`gradtape.scatter_add` is the differentiable sum).

    Raises:
        TypeError: ``input`` or ``index`` is not a tensor, ``src`` is neither a tensor nor a
            number, both or neither of ``src`` and ``value`` are given, or ``dim`` is not an int.
        ShapeError: ``dim`` is out of range, or ``index``'s shape does not fit ``input``'s or
            ``src``'s (names the shapes).
        IndexError: an index is negative or ``>= input.shape[dim]``.
        DTypeError: ``index`` is not integer, or ``src``'s dtype is not ``input``'s.
        ValueError: ``reduce`` is neither ``"add"`` nor ``"multiply"``; a non-finite ``value``
            for an integer ``input``.
    """
    x = _tensor("scatter", input)
    idx_t = _tensor("scatter", index, "index")
    d = one_dim("scatter", dim, x.shape)
    if src is not None and value is not None:
        raise TypeError("scatter: got both src and value; pass a tensor src or a number value")
    if src is not None and not isinstance(src, Tensor):
        if not _is_number(src):
            raise TypeError(f"scatter: src must be a Tensor or a number, got {type(src).__name__}")
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter: missing src (a tensor) or value (a number)")
    if value is not None and not _is_number(value):
        raise TypeError(f"scatter: value must be a number, got {type(value).__name__}")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise ValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
    num = value.item() if isinstance(value, np.generic) else value
    num = int(num) if isinstance(num, bool) else num  # the number written (exact for integer inputs)
    fill = 0.0 if num is None else float(num)
    idx = _arrays.into_memory_of(int_indices("scatter", idx_t, f"input of shape {x.shape}", "index"), None)
    if idx.ndim != x.ndim:
        raise ShapeError(
            f"scatter: index has {idx.ndim} dims (shape {idx.shape}), input has {x.ndim} (shape {x.shape}); "
            "they must have the same number of dims"
        )
    if builtins.any(k != d and i > n for k, (i, n) in enumerate(zip(idx.shape, x.shape, strict=True))):
        raise ShapeError(f"scatter: index of shape {idx.shape} is larger than input of shape {x.shape} outside dim {d}")
    s: Tensor[Any, Any] | None = src
    if s is not None:
        if s.ndim != idx.ndim:
            raise ShapeError(
                f"scatter: index has {idx.ndim} dims (shape {idx.shape}), src has {s.ndim} (shape {s.shape}); "
                "they must have the same number of dims"
            )
        if builtins.any(i > n for i, n in zip(idx.shape, s.shape, strict=True)):
            raise ShapeError(f"scatter: index of shape {idx.shape} is larger than src of shape {s.shape}")
        if s.dtype != x.dtype:
            raise DTypeError(
                f"scatter: src has dtype {s.dtype} (shape {s.shape}), input has dtype {x.dtype} "
                f"(shape {x.shape}); they must be the same"
            )
    n = x.shape[d] if x.ndim else 1
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise IndexError(
            f"scatter: index {bad} is out of range for dim {d} of size {n} "
            f"(index of shape {idx.shape}, input of shape {x.shape})"
        )
    if s is None and x.dtype.kind != "f" and not np.isfinite(fill):
        raise ValueError(f"scatter: value {num!r} does not fit input of dtype {x.dtype} (shape {x.shape})")
    if x.ndim == 0:  # one element, as a 1-D scatter (scatter_add's gradient to a 0-d src comes back 1-D)
        flat: Tensor[Any, Any] = x.reshape((1,))
        src1 = None if s is None else s.reshape((1,))
        one: Tensor[Any, Any] = scatter(flat, 0, idx_t.reshape((1,)), src1, value=num, reduce=reduce)
        scalar: Tensor[Any, Any] = one.reshape(())
        return scalar
    if x.dtype.kind != "f" or reduce is not None:
        sources = (x, idx_t) if s is None else (x, idx_t, s)
        floats = [t for t in sources if t.dtype.kind == "f"]
        tape = _tp.op_tape(*floats) if floats else NONE_TAPE
        args = (x.data, idx_t.data, d, None if s is None else s.data, num, reduce)
        out = _on_host("scatter", x, sources, tape, _scattered, *args)
        why = "PyTorch: derivative for aten::scatter with reduce= is not implemented"
        why += "; scatter_add is differentiable, or detach the inputs"
        return _not_differentiable("scatter", out, why)
    covered = _from_index("scatter", x, idx_t, _scatter_covered, d, x.shape)
    if s is None:
        written: Tensor[S, Any] = _ops.where(covered, fill, x)
        return written
    part = s if s.shape == idx.shape else s[tuple(slice(0, k) for k in idx.shape)]
    lin = _scatter_targets(idx, d, x.shape)
    if _tp._recorder is not None or np.unique(lin).size != lin.size:  # repeated positions: the last write stays
        keep = _from_index("scatter", x, idx_t, _scatter_last, d, x.shape)
        held = part.detach()
        overwritten = _ops.where(_ops.isfinite(held), part - held, 0.0)  # 0, with the gradient g
        part = _ops.where(keep, part, overwritten)
    zeros = x._like(_arrays.zeros(x.shape, x.dtype, x.data))
    if _tp._recorder is not None:
        _tp._recorder.host_tensor(zeros)
    out_: Tensor[S, Any] = _ops.where(covered, _ops.scatter_add(zeros, d, idx_t, part), x)
    return out_


# ----- counting (no gradient) ----------------------------------------------------------------------


def _bincount(x: Array, weights: Array | None, minlength: int, dtype: Any) -> Array:
    """``np.bincount`` with PyTorch's dtypes: int64 counts, or the weights summed in ``dtype``
    in order (PyTorch's CPU loop)."""
    n = builtins.max(int(x.max()) + 1 if x.size else 0, minlength)
    if weights is None:
        return np.bincount(x.astype(np.intp, copy=False), minlength=n).astype(np.int64, copy=False)
    out = np.zeros(n, dtype)
    np.add.at(out, x.astype(np.intp, copy=False), weights.astype(dtype, copy=False))
    return out


def bincount(input: Tensor[Any, Any], weights: Tensor[Any, Any] | None = None, minlength: int = 0) -> Tensor[Any, Any]:
    """``torch.bincount``: how often each value ``0 .. max(input)`` occurs in the 1-D tensor of
    non-negative integers ``input`` (int64, length ``max(max(input) + 1, minlength)``, ``minlength``
    for an empty input); with ``weights`` (1-D, ``input``'s length) the sum of the weights of each
    value's occurrences instead, in the weights' float dtype (float64 for integer or bool
    weights).

    No gradient, as PyTorch's: the counts are untraced; weights that require grad make a
    result whose gradient raises :class:`~gradtape.errors.TapeError` (PyTorch: derivative not
    implemented), never a silent zero. The length depends on the values: a
    :func:`gradtape.capture` of a call that counts runs eagerly.

    Raises:
        TypeError: ``input`` or ``weights`` is not a tensor, ``minlength`` not an int.
        DTypeError: ``input`` is not an integer tensor (a float or bool one: PyTorch raises
            NotImplementedError there).
        ShapeError: ``input`` is not 1-D, or ``weights`` is not 1-D of ``input``'s length.
        ValueError: a value is negative, or ``minlength`` is.
    """
    x = _tensor("bincount", input)
    if x.dtype.kind not in "iu":
        raise DTypeError(
            f"bincount: input must be a 1-D tensor of non-negative integers, got dtype {x.dtype} (shape {x.shape})"
        )
    if x.ndim != 1:
        raise ShapeError(f"bincount: input must be a 1-D tensor of non-negative integers, got shape {x.shape}")
    if not is_int(minlength):
        raise TypeError(f"bincount: minlength must be an int, got {minlength!r}")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be >= 0, got {minlength}")
    w = None if weights is None else _tensor("bincount", weights, "weights")
    if w is not None and (w.ndim != 1 or w.shape != x.shape):
        raise ShapeError(
            f"bincount: weights must be 1-D of input's length, got shape {w.shape} (input of shape {x.shape})"
        )
    host = _arrays.into_memory_of(x.data, None)
    if host.size and int(host.min()) < 0:
        raise ValueError(f"bincount: input must be non-negative, got {int(host.min())} (input of shape {x.shape})")
    if _tp._recorder is not None:
        _tp._recorder.refuse(
            f"calls bincount, whose result's length is computed on the host from the values of a tensor of shape "
            f"{x.shape}; call it outside the captured function"
        )
    if w is None:
        return index_tensor(x, _bincount(host, None, int(minlength), None))
    dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    counts = _bincount(host, _arrays.into_memory_of(w.data, None), int(minlength), dtype)
    data = _arrays.into_memory_of(counts, w.data)
    tape = _tp.op_tape(w) if w.dtype.kind == "f" else NONE_TAPE
    out = w._like(data) if tape is NONE_TAPE else w._from_op(data, tape)
    why = "PyTorch: derivative for aten::bincount is not implemented; pass weights.detach()"
    return _not_differentiable("bincount", out, why)


def _histc(x: Array, bins: int, lo: float, hi: float) -> Array:
    """:func:`histc` on an array: PyTorch's range rules, then each element in ``[lo, hi]`` counted
    in bin ``int((v - lo) * bins / (hi - lo))`` computed in ``x``'s dtype (the top edge in the last
    bin), as PyTorch's CPU kernel."""
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"histc: range of [{lo}, {hi}] is not finite")
    if not lo < hi:
        raise ValueError(f"histc: max must be larger than min, got min={lo}, max={hi}")
    kind = x.dtype.type
    left, right = kind(lo), kind(hi)
    flat = x.reshape(-1)
    v = flat[(flat >= left) & (flat <= right)]
    pos = ((v - left) * bins / (right - left)).astype(np.int64)
    np.minimum(pos, bins - 1, out=pos)
    return np.bincount(pos, minlength=bins).astype(x.dtype)


def histc(input: Tensor[Any, Any], bins: int = 100, min: float = 0, max: float = 0) -> Tensor[Any, NoneTape]:
    """``torch.histc``: the histogram of ``input``'s elements (any shape, flattened) in ``bins``
    equal bins between ``min`` and ``max``, a 1-D tensor of counts in ``input``'s float dtype.
    ``min == max`` (the default ``0, 0``) takes the data's minimum and maximum; an empty range
    is widened by 1 each side. Elements outside ``[min, max]`` (and NaN) are not counted; one
    equal to ``max`` falls in the last bin.

    No gradient, as PyTorch's (its result does not require grad): untraced.

    Raises:
        TypeError: ``input`` is not a tensor, ``bins`` not an int, ``min``/``max`` not numbers.
        DTypeError: ``input`` is not a float tensor (PyTorch refuses integer tensors too).
        ValueError: ``bins <= 0``, ``max < min``, or the range is not finite (an inf bound, or
            NaN or inf in the data when the range is the data's).
    """
    x = _tensor("histc", input)
    if x.dtype.kind != "f":
        raise DTypeError(f"histc: input must be a float tensor, got dtype {x.dtype} (shape {x.shape})")
    if not is_int(bins):
        raise TypeError(f"histc: bins must be an int, got {bins!r}")
    if bins <= 0:
        raise ValueError(f"histc: bins must be > 0, got {bins}")
    for name, v in (("min", min), ("max", max)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"histc: {name} must be a number, got {v!r}")
    args = (int(bins), float(min), float(max))
    if x.data.__class__ is np.ndarray:
        out: Tensor[Any, NoneTape] = untraced("histc", x, (x,), _histc, x.data, *args)
        return out  # a capture's replay counts again
    return x._like(_arrays.into_memory_of(_histc(_arrays.into_memory_of(x.data, None), *args), x.data))  # type: ignore[no-any-return]


# the Tensor methods that call these (x.addmm, x.scatter, x.trace(), ...) find them here (gradtape.tensor
# is a lower layer; the package's name gradtape.tensor is the creation function, hence sys.modules)
sys.modules[Tensor.__module__]._composed = sys.modules[__name__]  # type: ignore[attr-defined]
