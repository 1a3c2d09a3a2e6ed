"""PyTorch's functions that ``gradtape.ops`` has no op of its own for, written from gradtape
ops under PyTorch's names and arguments (the package's top exports them, as ``torch.*``):
differentiable by construction, with both rules (first order and ``create_graph``), since
every step is a recorded op. Each is checked against PyTorch's values and gradients in
float64 by tests/test_torch_namespace.py.

- copies and views: :func:`clone`, :func:`detach`, :func:`numel`, :func:`t`, :func:`narrow`;
- joins and grids: :func:`concatenate`, :func:`broadcast_tensors`, :func:`meshgrid`;
- selection: :func:`take_along_dim`, :func:`masked_select`, :func:`repeat_interleave`,
  :func:`diag`;
- products: :func:`tensordot`, :func:`cross`;
- arithmetic: :func:`addcmul`, :func:`addcdiv`, :func:`logaddexp`, :func:`logit`;
- moments: :func:`var_mean`, :func:`std_mean` (PyTorch's default ``correction=1``).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from gradtape import _torch_ops
from gradtape import ops as _ops
from gradtape.devices import _arrays
from gradtape.errors import ShapeError
from gradtape.tape import NoneTape, Tape
from gradtape.tensor import Tensor

__all__ = [
    "addcdiv",
    "addcmul",
    "broadcast_tensors",
    "clone",
    "concatenate",
    "cross",
    "detach",
    "diag",
    "logaddexp",
    "logit",
    "masked_select",
    "meshgrid",
    "narrow",
    "numel",
    "repeat_interleave",
    "std_mean",
    "t",
    "take_along_dim",
    "tensordot",
    "var_mean",
]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)


def _tensor(op: str, x: object, name: str = "input") -> Tensor[Any, Any]:
    """``x`` if it is a tensor.

    Raises:
        TypeError: it is not; the message names the op and the argument.
    """
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{op}: {name} must be a Tensor, got {type(x).__name__} (wrap arrays with gradtape.tensor(...))"
        )
    return x


def _index(x: Tensor[Any, Any], index: Any) -> Tensor[Any, Any]:
    """A host integer array as an untraced index tensor on ``x``'s device (the GPU's index
    ops take device indices)."""
    out: Tensor[Any, Any] = x._like(_arrays.into_memory_of(np.asarray(index, np.int64), x.data))
    return out


def _dim(op: str, dim: object, ndim: int) -> int:
    """``dim`` as a non-negative int below ``ndim``.

    Raises:
        TypeError: not an int. ShapeError: out of range.
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}: dim must be an int, got {dim!r}")
    if not -ndim <= dim < ndim:
        raise ShapeError(f"{op}: dim {dim} is out of range for a tensor of {ndim} dims")
    return int(dim) % ndim


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
    """``torch.narrow``: the slice ``start : start + length`` of ``dim`` (``start`` may be
    negative, counting from the end). Gradient: scattered back into the slice, zeros elsewhere.

    Raises:
        TypeError: ``input`` is not a tensor, or an argument is not an int.
        ShapeError: ``dim`` is out of range, or the slice does not fit the dim.
    """
    x = _tensor("narrow", input)
    d = _dim("narrow", dim, max(x.ndim, 1))
    for name, v in (("start", start), ("length", length)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"narrow: {name} must be an int, got {v!r}")
    size = x.shape[d]
    s = start + size if start < 0 else start
    if not (0 <= s <= size and 0 <= length and s + length <= size):
        raise ShapeError(f"narrow: start {start} and length {length} do not fit dim {dim} of shape {x.shape}")
    index = (slice(None),) * d + (slice(s, s + length),)
    out: Tensor[Any, T] = x[index]
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
    """``torch.masked_select``: the elements of ``input`` where the bool ``mask`` (broadcast
    with ``input``) is True, as a 1-D tensor in row-major order. Gradient: scattered back to
    the selected places, zeros elsewhere.

    Raises:
        TypeError: ``input`` or ``mask`` is not a tensor, or ``mask`` is not bool.
        ShapeError: the shapes do not broadcast.
    """
    x = _tensor("masked_select", input)
    m = _tensor("masked_select", mask, "mask")
    if m.dtype != np.bool_:
        raise TypeError(f"masked_select: mask must be a bool tensor, got {m.dtype}")
    xb, mb = broadcast_tensors(x, m) if x.shape != m.shape else (x, m)
    out: Tensor[Any, T] = xb[mb]
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
        d = _dim("repeat_interleave", dim, max(x.ndim, 1))
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
    out: Tensor[Any, T] = _ops.index_select(x, _index(x, index), d)
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
        out: Tensor[Any, T] = _ops.index_add(zeros, 0, _index(x, rows * side + cols), x).reshape((side, side))
        return out
    if x.ndim != 2:
        raise ShapeError(f"diag: expects a 1-D or 2-D tensor, got shape {x.shape}")
    r, c = x.shape
    start_r, start_c = builtins.max(-k, 0), builtins.max(k, 0)
    length = builtins.max(builtins.min(r - start_r, c - start_c), 0)
    out = x[_index(x, np.arange(length) + start_r), _index(x, np.arange(length) + start_c)]
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
        da = [_dim("tensordot", d, x.ndim) for d in ([first] if isinstance(first, int) else list(first))]
        db = [_dim("tensordot", d, y.ndim) for d in ([second] if isinstance(second, int) else list(second))]
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
        d = _dim("cross", dim, max(x.ndim, 1))
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
    otherwise). Gradient: ``1 / (p (1 - p))`` inside the clamp, ``0`` outside it.

    Raises:
        TypeError: ``input`` is not a tensor. DTypeError: it is not a float tensor.
    """
    p = _tensor("logit", input)
    if eps is not None:
        p = _ops.clamp(p, eps, 1.0 - eps)
    out: Tensor[S, T] = _ops.log(p) - _ops.log1p(-p)
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
    x = _tensor("var_mean", input)
    v = _torch_ops.var(x, dim=dim, correction=correction, unbiased=unbiased, keepdim=keepdim)
    m = _ops.mean(x, dim=dim, keepdim=keepdim)
    return v, m


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
    x = _tensor("std_mean", input)
    s = _torch_ops.std(x, dim=dim, correction=correction, unbiased=unbiased, keepdim=keepdim)
    m = _ops.mean(x, dim=dim, keepdim=keepdim)
    return s, m
