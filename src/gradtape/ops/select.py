"""Selection by value and by index, with PyTorch's names, arguments and results.

- ``argmax`` / ``argmin``: the position of the extremum (int64, no gradient).
- ``topk``, ``sort`` (``(values, indices)``, a :class:`ValuesIndices` named tuple as PyTorch's
  ``torch.return_types``) and ``argsort``.
- ``take_along_axis``: PyTorch's ``gather`` (``out[i][j] = input[index[i][j]][j]`` for
  ``dim=0``); ``gradtape.ops.gather`` is numpy's ``take`` (see its docstring).
- ``scatter_add``, ``index_add``, ``masked_fill``, ``one_hot``.
- ``split`` / ``chunk`` (a tuple of views, one recorded op), ``flip``, ``repeat`` (PyTorch's
  ``Tensor.repeat``, numpy's ``tile``) and ``tile``.

Every op takes PyTorch's ``dim=`` (a negative dim counts from the end) and gradtape's
``axis=`` (give one of the two); a 0-d tensor takes ``dim`` 0 or -1, as in PyTorch.

Gradients: the differentiable outputs (``topk``/``sort`` values, ``take_along_axis``,
``scatter_add``, ``index_add``, ``masked_fill``, ``split``, ``chunk``, ``flip``, ``repeat``,
``tile``) move elements without arithmetic, so their backward moves the output's gradient
back: a picked element gets the gradient of every output position that picked it (repeats
accumulate). The picking ops are built on two recorded primitives that are each other's
adjoint: :func:`_take_lin` (read the elements at flat positions) and :func:`_put_lin` (add
into zeros at flat positions); the first rule of each is the other in numpy, the second rule
(higher-order derivatives) the other as a recorded op. Index outputs (``argmax``, ``argmin``,
``argsort``, ``topk``/``sort`` indices, ``one_hot``) are int64 constants: no gradient.

Runtime errors name the op, the argument and the shapes: :class:`~gradtape.errors.ShapeError`
for a dim out of range and shapes that do not fit, ``IndexError`` for an index out of range
(negative indices are refused, as PyTorch's ``gather``/``scatter_add``/``index_add`` do),
:class:`~gradtape.errors.DTypeError` for a float or bool index and dtypes that differ,
``TypeError`` for an argument of the wrong kind, ``ValueError`` for sizes that cannot be
(``topk``'s ``k`` larger than the dim, ``split`` sections that do not add up).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import S, T
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels.scatter import add_at as _scatter_add_at
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._util import (
    SCALARS,
    dim_or_axis,
    index_tensor,
    int_indices,
    is_int,
    one_dim,
    record_unary,
    refill,
    replayable,
    untraced,
)
from gradtape.ops.compare import where
from gradtape.ops.shape import broadcast_to, concat
from gradtape.shapes import Rank0
from gradtape.tape import NONE_TAPE, NoneTape, _tensor_class, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "ValuesIndices",
    "unbind",
    "argmax",
    "argmin",
    "argsort",
    "chunk",
    "flip",
    "index_add",
    "masked_fill",
    "one_hot",
    "repeat",
    "scatter_add",
    "sort",
    "split",
    "take_along_axis",
    "tile",
    "topk",
]

Array = np.ndarray[Any, Any]


class ValuesIndices(NamedTuple, Generic[S, T]):
    """``(values, indices)``, what ``topk`` and ``sort`` return (PyTorch's
    ``torch.return_types.topk`` / ``sort``): unpack it or read ``.values`` and ``.indices``.
    ``values`` has the input's dtype and tape; ``indices`` is an int64 tensor of the same shape."""

    values: Tensor[S, T]
    indices: Tensor[S, NoneTape]


# ----- shared argument checks --------------------------------------------------------------


def _index(op: str, index: object, shape: tuple[int, ...], n: int, dim: int, arg: str = "index") -> Array:
    """``index`` (an integer tensor, array or list) as an ``intp`` array, every entry in
    ``[0, n)``, ``n`` the size of ``dim`` in the tensor of ``shape`` it indexes.

    Raises:
        DTypeError: the index is not integer (a float or bool tensor); names the op.
        IndexError: an entry is negative or ``>= n`` (PyTorch refuses negative entries too).
    """
    idx = int_indices(op, index, f"input of shape {shape}", arg)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexError(
                f"{op}: {arg} {bad} is out of range for dim {dim} of size {n} "
                f"({arg} of shape {idx.shape}, input of shape {shape})"
            )
    return idx


def _tensor(op: str, value: object, arg: str) -> Tensor[Any, Any]:
    """``value`` if it is a gradtape tensor (the Tensor methods are not wrapped by ``checked``)."""
    if not isinstance(value, _tensor_class()):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(value).__name__}")
    return value


def _same_dtype(op: str, a: Tensor[Any, Any], b: Tensor[Any, Any], arg: str) -> None:
    if a.data.dtype != b.data.dtype:
        raise DTypeError(
            f"{op}: {arg} has dtype {b.data.dtype} (shape {b.data.shape}), input has dtype {a.data.dtype} "
            f"(shape {a.data.shape}); they must be the same"
        )


def _ints(op: str, values: tuple[Any, ...], arg: str) -> tuple[int, ...]:
    """``values`` (ints, or one sequence of ints) as a tuple of ints."""
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = tuple(values[0])
    if not all(is_int(v) for v in values):
        raise TypeError(f"{op}: {arg} must be ints or one sequence of ints, got {values!r}")
    return tuple(int(v) for v in values)


# ----- flat positions: the two adjoint primitives ------------------------------------------


def _strides(shape: tuple[int, ...]) -> list[int]:
    """C-order strides in elements."""
    out = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        out[k] = out[k + 1] * shape[k + 1]
    return out


def _grid(sub: tuple[int, ...], shape: tuple[int, ...], dim: int | None = None, like: Any = None) -> Array:
    """Flat (C-order) positions in an array of ``shape`` of the block ``sub`` at its origin
    (``sub[k] <= shape[k]``), skipping the coordinate ``dim`` (added by the caller); in the
    memory ``like`` lives in (the index array's: host or GPU)."""
    st = _strides(shape)
    lin = _arrays.zeros(sub, np.intp, like)
    for k, n in enumerate(sub):
        if k != dim and n > 1:
            lin = lin + (_arrays.arange(n, like, np.intp) * st[k]).reshape((n,) + (1,) * (len(sub) - k - 1))
    return lin


def _along(idx: Array, dim: int, shape: tuple[int, ...]) -> Array:
    """Flat positions in an array of ``shape`` of ``x[..., idx[p], ...]`` (PyTorch's gather):
    position ``p`` of ``idx`` with its coordinate ``dim`` replaced by ``idx[p]``."""
    if not shape:  # a 0-d input: the positions keep idx's shape (ascontiguousarray makes 0-d (1,))
        return _arrays.contiguous(idx, np.intp).reshape(idx.shape)
    lin = _grid(idx.shape, shape, dim, idx) + idx * _strides(shape)[dim]
    return _arrays.contiguous(lin, np.intp)


def _bincount(lin: Array, g: Array, shape: tuple[int, ...], dtype: Any) -> Array:
    """Zeros of ``shape`` with ``g`` added at the flat positions ``lin`` (repeats accumulate,
    in float64)."""
    n = math.prod(shape)
    out = np.bincount(lin.reshape(-1), weights=_as_array(g, np.float64).reshape(-1), minlength=n)
    return out.astype(dtype, copy=False).reshape(shape)


def _take_lin(a: Tensor[Any, Any], lin: Array, again: tuple[str, Any, tuple[Any, ...]] | None = None) -> Any:
    """The elements of ``a`` at the flat positions ``lin`` (an array of ``lin``'s shape).

    First rule: the output's gradient added at ``lin`` into zeros of ``a``'s shape; second
    rule: :func:`_put_lin` of the gradient tensor. ``again``: ``(op, make, args)`` with
    ``make(*args)`` the positions from the indices' current values, for
    :func:`gradtape.capture`'s replays (the index tensor among ``args`` as its data)."""
    x = a.data
    tape = op_tape(a)
    out = a._from_op(x.reshape(-1)[lin], tape)
    if again is not None and _tp._recorder is not None:
        op, make, arrays, srcs = _positions_again(again)
        replayable(op, out.data, _take_lin_into, (x, lin, make, arrays), (a, *srcs), tape, True, (lin,))
    if tape is not NONE_TAPE:
        aid, shape, dtype = a.id, x.shape, x.dtype

        def take_backward(grads: Gradients, g: Array) -> None:
            grads._accum(aid, _bincount(lin, g, shape, dtype))

        record(tape, out, take_backward, lambda g, rebuild: [(aid, _put_lin(g, lin, shape))])
    return out


def _put_lin_into(y: Array, x: Array, lin: Array, shape: tuple[int, ...], make: Any, args: tuple[Any, ...]) -> None:
    """:func:`_put_lin` again: the positions made again from the indices, then ``x`` added
    there into zeros."""
    np.copyto(lin, make(*args))
    np.copyto(y, _bincount(lin, x, shape, x.dtype))


def _positions_again(again: tuple[str, Any, tuple[Any, ...]]) -> tuple[str, Any, tuple[Any, ...], tuple[Any, ...]]:
    """``(op, make, arrays, sources)`` of an ``again = (op, make, args)`` of :func:`_take_lin`
    or :func:`_put_lin`: the index tensors among ``args`` as their arrays (what a replay's
    ``make`` reads) and as the recorder's sources."""
    op, make, args = again
    srcs = tuple(v for v in args if hasattr(v, "tape"))
    return op, make, tuple(v.data if hasattr(v, "tape") else v for v in args), srcs


def _take_lin_into(y: Array, x: Array, lin: Array, make: Any, args: tuple[Any, ...]) -> None:
    """:func:`_take_lin` again: the positions made again from the indices, then ``x`` read
    there into ``y``."""
    np.copyto(lin, make(*args))
    np.copyto(y, x.reshape(-1)[lin])


def _put_lin(
    t: Tensor[Any, Any], lin: Array, shape: tuple[int, ...], again: tuple[str, Any, tuple[Any, ...]] | None = None
) -> Any:
    """Zeros of ``shape`` with ``t`` (of ``lin``'s shape) added at the flat positions ``lin``.

    First rule: the output's gradient read at ``lin``; second rule: :func:`_take_lin`.
    ``again``: as :func:`_take_lin`'s, the positions made again from the indices at each
    replay of :func:`gradtape.capture`."""
    x = t.data
    tape = op_tape(t)
    out = t._from_op(_bincount(lin, x, shape, x.dtype), tape)
    if again is not None and _tp._recorder is not None:
        op, make, arrays, srcs = _positions_again(again)
        replayable(op, out.data, _put_lin_into, (x, lin, shape, make, arrays), (t, *srcs), tape, True, (lin,))
    if tape is not NONE_TAPE:
        tid = t.id

        def put_backward(grads: Gradients, g: Array) -> None:
            grads._accum(tid, g.reshape(-1)[lin])

        record(tape, out, put_backward, lambda g, rebuild: [(tid, _take_lin(g, lin))])
    return out


# ----- argmax / argmin ---------------------------------------------------------------------


def _arg_extremum(op: str, a: Tensor[Any, Any], dim: Any, keepdim: bool) -> Any:
    x = a.data
    if x.dtype.kind == "b":
        raise DTypeError(f"{op}: input has dtype bool (shape {x.shape}); {op} takes float or integer tensors")
    find = np.argmax if op == "argmax" else np.argmin
    if dim is None:
        if x.size == 0:
            raise ShapeError(f"{op}: input of shape {x.shape} has no elements; give a dim whose size is not 0")
        r = _as_array(find(x))
        if keepdim:
            r = r.reshape((1,) * x.ndim)
    else:
        d = one_dim(op, dim, x.shape)
        if x.ndim == 0:
            r = _as_array(0)
        else:
            if x.shape[d] == 0:
                raise ShapeError(f"{op}: dim {d} of the input of shape {x.shape} has size 0")
            r = _as_array(find(x, axis=d, keepdims=bool(keepdim)))
            out = a._like(r.astype(np.int64))
            if _tp._recorder is not None:
                replayable(op, out.data, refill, (_arg_along, find, x, d, bool(keepdim)), (a,), NONE_TAPE)
            return out
    return a._like(r.astype(np.int64))


def _arg_along(find: Any, x: Array, d: int, keepdim: bool) -> Array:
    """``argmax``/``argmin`` (``find``) of ``x`` along ``d`` as int64 (a replay's kernel)."""
    r: Array = _as_array(find(x, axis=d, keepdims=keepdim)).astype(np.int64)
    return r


@overload
def argmax(
    input: Tensor[Any, Any],
    dim: None = None,
    keepdim: Literal[False] = False,
    *,
    axis: None = None,
    keepdims: Literal[False] | None = None,
) -> Tensor[Rank0, NoneTape]: ...
@overload
def argmax(
    input: Tensor[Any, Any],
    dim: int | None = None,
    keepdim: bool = False,
    *,
    axis: int | None = None,
    keepdims: bool | None = None,
) -> Tensor[Any, NoneTape]: ...
def argmax(
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Any:
    """Index of the largest element (``torch.argmax``): over the flattened tensor when ``dim``
    is None (a 0-d result, or every dim kept as size 1 with ``keepdim=True``), else along
    ``dim`` (that dim removed, or kept as size 1 with ``keepdim=True``).

    Ties give the first position; a NaN counts as the largest value (the first NaN's
    position), as in PyTorch and numpy. Returns an int64 tensor without a tape (an index has
    no gradient).

    Args:
        input: a float or integer tensor.
        dim: the dim to reduce (PyTorch's name), or None; ``axis`` is gradtape's name for it.
        keepdim: keep the reduced dim(s) as size 1; ``keepdims`` is numpy's name for it.

    Raises:
        ShapeError: ``dim`` is out of range, or the reduction is over no elements.
        TypeError: ``dim`` is not an int, or both ``dim`` and ``axis`` are given.
        DTypeError: ``input`` is a bool tensor (PyTorch refuses them too).
    """
    keep = keepdim if keepdims is None else keepdims
    return _arg_extremum("argmax", input, dim_or_axis("argmax", dim, axis, None), keep)


@overload
def argmin(
    input: Tensor[Any, Any],
    dim: None = None,
    keepdim: Literal[False] = False,
    *,
    axis: None = None,
    keepdims: Literal[False] | None = None,
) -> Tensor[Rank0, NoneTape]: ...
@overload
def argmin(
    input: Tensor[Any, Any],
    dim: int | None = None,
    keepdim: bool = False,
    *,
    axis: int | None = None,
    keepdims: bool | None = None,
) -> Tensor[Any, NoneTape]: ...
def argmin(
    input: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Any:
    """Index of the smallest element (``torch.argmin``); as :func:`argmax` otherwise (ties give
    the first position, a NaN counts as the smallest: the first NaN's position, as PyTorch).

    Raises:
        ShapeError, TypeError, DTypeError: as :func:`argmax`.
    """
    keep = keepdim if keepdims is None else keepdims
    return _arg_extremum("argmin", input, dim_or_axis("argmin", dim, axis, None), keep)


# ----- sort / argsort / topk ---------------------------------------------------------------


def _order(x: Array, d: int, descending: bool) -> Array:
    """Stable argsort of ``x`` along ``d`` (ties keep their order; NaN sorts as the largest:
    last ascending, first descending, as PyTorch)."""
    if not descending:
        up: Array = np.argsort(x, axis=d, kind="stable")
        return up
    rev: Array = np.argsort(np.flip(x, d), axis=d, kind="stable")  # ties in reverse order of position
    down: Array = (x.shape[d] - 1) - np.flip(rev, d)
    return down


def _sort_order(x: Array, d: int, descending: bool, k: int | None) -> Array:
    """The first ``k`` (``None``: all) int64 indices of the order of ``x`` (a 0-d ``x`` as 1-D)
    along ``d``: the indices :func:`sort`, :func:`argsort` and :func:`topk` return, computed
    again by a replay of :func:`gradtape.capture`."""
    x1 = x.reshape(1) if x.ndim == 0 else x
    order = _order(x1, d, descending)
    if k is not None:
        order = order[(slice(None),) * d + (slice(0, k),)]
    out: Array = order.astype(np.int64)
    return out


def _sort_positions(x: Array, d: int, descending: bool, k: int | None) -> Array:
    """The flat positions in ``x`` (a 0-d ``x`` as 1-D) of the sorted values (see
    :func:`_sort_order`), which :func:`_take_lin` reads."""
    return _along(_sort_order(x, d, descending, k), d, (1,) if x.ndim == 0 else x.shape)


def _sorted(op: str, a: Tensor[Any, Any], dim: Any, descending: bool, k: int | None) -> ValuesIndices[Any, Any]:
    """``(values, indices)`` of the first ``k`` (``None``: all) elements of ``a`` in order
    along ``dim`` (:func:`sort`, :func:`topk`); a 0-d ``a`` gives 0-d results. Both replay
    under :func:`gradtape.capture` (the order is computed again from ``a``'s values)."""
    x = a.data
    d = one_dim(op, dim, x.shape)
    if not isinstance(descending, (bool, np.bool_)):
        raise TypeError(f"{op}: the order flag must be a bool, got {descending!r}")
    desc = bool(descending)
    values = _take_lin(a, _sort_positions(x, d, desc, k), (op, _sort_positions, (a, d, desc, k)))
    indices = untraced(op, a, (a,), _sort_order, x, d, desc, k)
    if x.ndim == 0:  # a 0-d input gives 0-d results
        values, indices = values.reshape(()), indices.reshape(())
    return ValuesIndices(values, indices)


@overload
def sort(
    input: Tensor[S, T], dim: int = -1, descending: bool = False, stable: bool = False, *, axis: int | None = None
) -> ValuesIndices[S, T]: ...
@overload
def sort(
    input: Tensor[Any, T], dim: int = -1, descending: bool = False, stable: bool = False, *, axis: int | None = None
) -> ValuesIndices[Any, T]: ...
def sort(input: Any, dim: Any = -1, descending: bool = False, stable: bool = False, *, axis: Any = None) -> Any:
    """Sort along ``dim`` (``torch.sort``): ``(values, indices)`` with
    ``values = take_along_axis(input, indices, dim)``, ascending unless ``descending``.

    The sort is always stable (equal elements keep their order), so ``stable=`` (PyTorch's
    flag) is accepted and changes nothing. A NaN sorts as the largest value, as in PyTorch.

    Gradient: ``values``' gradient goes back to the positions they came from (``indices`` is
    an int64 constant).

    Raises:
        ShapeError: ``dim`` is out of range.
        TypeError: ``dim`` is not an int, ``descending`` / ``stable`` is not a bool, or both
            ``dim`` and ``axis`` are given.
    """
    if not isinstance(stable, (bool, np.bool_)):
        raise TypeError(f"sort: stable must be a bool, got {stable!r}")
    return _sorted("sort", input, dim_or_axis("sort", dim, axis, -1), descending, None)


@overload
def argsort(
    input: Tensor[S, Any], dim: int = -1, descending: bool = False, stable: bool = False, *, axis: int | None = None
) -> Tensor[S, NoneTape]: ...
@overload
def argsort(
    input: Tensor[Any, Any], dim: int = -1, descending: bool = False, stable: bool = False, *, axis: int | None = None
) -> Tensor[Any, NoneTape]: ...
def argsort(input: Any, dim: Any = -1, descending: bool = False, stable: bool = False, *, axis: Any = None) -> Any:
    """The indices that sort ``input`` along ``dim`` (``torch.argsort``): ``sort(...).indices``,
    an int64 tensor of ``input``'s shape without a tape. Stable; NaN sorts as the largest.

    Raises:
        ShapeError, TypeError: as :func:`sort`.
    """
    if not isinstance(stable, (bool, np.bool_)):
        raise TypeError(f"argsort: stable must be a bool, got {stable!r}")
    x = input.data
    d = one_dim("argsort", dim_or_axis("argsort", dim, axis, -1), x.shape)
    if not isinstance(descending, (bool, np.bool_)):
        raise TypeError(f"argsort: the order flag must be a bool, got {descending!r}")
    return untraced("argsort", input, (input,), _argsort, x, d, bool(descending))


def _argsort(x: Array, d: int, descending: bool) -> Array:
    """:func:`argsort`'s indices (int64, ``x``'s shape)."""
    return _sort_order(x, d, descending, None).reshape(x.shape)


def topk(
    input: Tensor[Any, T],
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,
    *,
    axis: int | None = None,
) -> ValuesIndices[Any, T]:
    """The ``k`` largest (or, with ``largest=False``, smallest) elements along ``dim``
    (``torch.topk``): ``(values, indices)``, both of ``input``'s shape with ``k`` along ``dim``.

    Always sorted (largest first, or smallest first with ``largest=False``; ``sorted=False``
    leaves the order unspecified in PyTorch, here it is sorted too). Of equal elements the
    earlier ones come first; a NaN counts as the largest value, as in PyTorch.

    Gradient: ``values``' gradient goes back to the picked positions (zero elsewhere);
    ``indices`` is an int64 constant.

    Raises:
        ValueError: ``k`` is negative or larger than the size of ``dim``.
        TypeError: ``k`` or ``dim`` is not an int, ``largest``/``sorted`` is not a bool, or
            both ``dim`` and ``axis`` are given.
        ShapeError: ``dim`` is out of range.
    """
    x = input.data
    d = one_dim("topk", dim_or_axis("topk", dim, axis, -1), x.shape)
    if not is_int(k):
        raise TypeError(f"topk: k must be an int, got {k!r}")
    if not isinstance(sorted, (bool, np.bool_)):
        raise TypeError(f"topk: sorted must be a bool, got {sorted!r}")
    n = x.shape[d] if x.ndim else 1
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} is out of range for dim {d} of size {n} (input of shape {x.shape})")
    return _sorted("topk", input, d, largest, int(k))


# ----- take_along_axis (PyTorch's gather), scatter_add, index_add --------------------------


def take_along_axis(
    input: Tensor[Any, T], index: Any, dim: int | None = None, *, axis: int | None = None
) -> Tensor[Any, T]:
    """PyTorch's ``gather`` (``torch.gather(input, dim, index)``, with numpy's argument order
    ``(input, index, dim)``): ``out[i][j][k] = input[index[i][j][k]][j][k]`` for ``dim=0``
    (``input[i][index[i][j][k]][k]`` for ``dim=1``, ...); the output has ``index``'s shape.

    ``index`` has as many dims as ``input``, and ``index.shape[d] <= input.shape[d]`` for every
    ``d != dim`` (no broadcasting: unlike numpy's ``take_along_axis`` a size-1 dim of
    ``index`` picks from the first slice only, as ``torch.gather``). This is not
    :func:`gradtape.ops.gather` (``Tensor.gather``), which is numpy's ``take``: that one
    selects whole slices, ``out.shape = input.shape[:axis] + indices.shape + ...``.

    Gradient: the output's gradient added into zeros of ``input``'s shape at the gathered
    positions (an index that appears ``m`` times gets ``m`` contributions).

    Args:
        input: a tensor of any dtype.
        index: an integer tensor (or array, or nested list) of entries in
            ``[0, input.shape[dim])``.
        dim: the dim to pick along (PyTorch's name; ``axis`` is numpy's).

    Raises:
        ShapeError: ``dim`` is out of range, ``index`` has another number of dims, or is
            larger than ``input`` outside ``dim`` (names both shapes).
        IndexError: an index is negative or ``>= input.shape[dim]``.
        DTypeError: ``index`` is not integer.
        TypeError: ``dim`` is missing or not an int, or both ``dim`` and ``axis`` are given.
    """
    x = input.data
    d = dim_or_axis("take_along_axis", dim, axis, None)
    if d is None:
        raise TypeError(f"take_along_axis: dim is required (input of shape {x.shape})")
    d = one_dim("take_along_axis", d, x.shape)
    n = x.shape[d] if x.ndim else 1
    idx = _index("take_along_axis", index, x.shape, n, d)
    _fits("take_along_axis", idx.shape, x.shape, d, "input")
    src = index if hasattr(index, "tape") else idx  # a list's indices: a constant of a plan
    if _tp._recorder is not None and src is idx:
        _tp._recorder.constant(idx)
    again = ("take_along_axis", _along_positions, (src, x.shape, n, d))
    return _take_lin(input, _along(idx, d, x.shape), again)  # type: ignore[no-any-return]


def _along_positions(index: Array, shape: tuple[int, ...], n: int, d: int) -> Array:
    """:func:`take_along_axis`'s flat positions from the index array's values (checked)."""
    return _along(_index("take_along_axis", index, shape, n, d), d, shape)


def _fits(op: str, ishape: tuple[int, ...], shape: tuple[int, ...], d: int | None, what: str) -> None:
    """``index`` of shape ``ishape`` has ``shape``'s number of dims and is no larger outside ``d``."""
    if len(ishape) != len(shape):
        raise ShapeError(
            f"{op}: index has {len(ishape)} dims (shape {ishape}), {what} has {len(shape)} (shape {shape}); "
            "they must have the same number of dims"
        )
    if any(k != d and i > n for k, (i, n) in enumerate(zip(ishape, shape, strict=True))):
        where_ = "" if d is None else f" outside dim {d}"
        raise ShapeError(f"{op}: index of shape {ishape} is larger than {what} of shape {shape}{where_}")


def scatter_add(input: Tensor[S, T], dim: int, index: Any, src: Tensor[Any, Any]) -> Tensor[S, T]:
    """``input`` with ``src`` added at ``index`` along ``dim`` (``torch.scatter_add``):
    ``out = input.clone(); out[index[i][j]][j] += src[i][j]`` for ``dim=0``, repeated indices
    accumulating. ``index`` has as many dims as ``input`` and ``src``, is no larger than
    ``src`` in any dim and no larger than ``input`` outside ``dim``; only the part of ``src``
    that ``index`` covers is added.

    Gradients: ``input`` gets the output's gradient; ``src`` gets it gathered at ``index``
    (:func:`take_along_axis`), zero where ``index`` does not reach.

    Raises:
        ShapeError: ``dim`` is out of range, or the shapes do not fit (names them).
        IndexError: an index is negative or ``>= input.shape[dim]``.
        DTypeError: ``index`` is not integer, or ``src``'s dtype is not ``input``'s.
        TypeError: ``src`` is not a tensor, or ``dim`` not an int.
    """
    x = input.data
    s = _tensor("scatter_add", src, "src").data
    _same_dtype("scatter_add", input, src, "src")
    d = one_dim("scatter_add", dim, x.shape)
    idx = _index("scatter_add", index, x.shape, x.shape[d] if x.ndim else 1, d)
    _fits("scatter_add", idx.shape, s.shape, None, "src")
    _fits("scatter_add", idx.shape, x.shape, d, "input")
    lin = _along(idx, d, x.shape)
    part = src if s.shape == idx.shape else _take_lin(src, _grid(idx.shape, s.shape, like=idx))
    make = functools.partial(_scatter_positions, "scatter_add", x.shape, d)
    return _add_at(input, part, lin, ("scatter_add", make, (index,)))  # type: ignore[no-any-return]


def _scatter_positions(op: str, shape: tuple[int, ...], d: int, index: Any) -> Array:
    """The flat positions :func:`scatter_add` adds at, from the index (checked again)."""
    return _along(_index(op, index, shape, shape[d] if len(shape) else 1, d), d, shape)


def _add_at(
    input: Tensor[Any, Any], part: Tensor[Any, Any], lin: Array, again: tuple[str, Any, tuple[Any, ...]] | None = None
) -> Any:
    """``input`` plus ``part`` added at the flat positions ``lin`` (recorded for floats;
    ``again``: see :func:`_put_lin`)."""
    x = input.data
    if x.dtype.kind != "f":  # integers: exact, and never differentiated
        out = x.copy()
        _scatter_add_at(out.reshape(-1), lin.reshape(-1), part.data.reshape(-1))
        return input._like(out)
    return input + _put_lin(part, lin, x.shape, again)


def index_add(input: Tensor[S, T], dim: int, index: Any, source: Tensor[Any, Any], alpha: float = 1) -> Tensor[S, T]:
    """``input`` with ``alpha * source`` added at the 1-D ``index`` along ``dim``
    (``torch.index_add``): for ``dim=0``, ``out[index[i]] += alpha * source[i]``, repeated
    indices accumulating. ``source`` has ``input``'s shape except ``len(index)`` along ``dim``.

    Gradients: ``input`` gets the output's gradient, ``source`` ``alpha`` times its rows at
    ``index`` (``index_select``).

    Raises:
        ShapeError: ``input`` is 0-d, ``dim`` is out of range, ``index`` is not 1-D, or
            ``source``'s shape does not fit (names the shapes).
        IndexError: an index is negative or ``>= input.shape[dim]``.
        DTypeError: ``index`` is not integer, or ``source``'s dtype is not ``input``'s.
        TypeError: ``source`` is not a tensor, ``dim`` not an int, ``alpha`` not a number
            (an int for an integer ``input``).
    """
    x = input.data
    s = _tensor("index_add", source, "source").data
    _same_dtype("index_add", input, source, "source")
    if x.ndim == 0:
        raise ShapeError(f"index_add: expects an input of at least 1 dim, got shape {x.shape}")
    d = one_dim("index_add", dim, x.shape)
    idx = _index("index_add", index, x.shape, x.shape[d], d)
    if idx.ndim > 1:
        raise ShapeError(f"index_add: index must be 1-D, got shape {idx.shape} (input of shape {x.shape})")
    idx = idx.reshape(-1)
    want = (*x.shape[:d], idx.size, *x.shape[d + 1 :])
    if s.shape != want:
        raise ShapeError(
            f"index_add: source of shape {s.shape} does not fit input of shape {x.shape} with {idx.size} "
            f"indices along dim {d} (want source of shape {want})"
        )
    if not isinstance(alpha, SCALARS) or isinstance(alpha, (bool, np.bool_)):
        raise TypeError(f"index_add: alpha must be a number, got {alpha!r}")
    if x.dtype.kind != "f" and not is_int(alpha):
        raise TypeError(f"index_add: alpha must be an int for an input of dtype {x.dtype}, got {alpha!r}")
    make = functools.partial(_index_add_positions, x.shape, s.shape, d)
    lin = make(index)
    part = source if alpha == 1 else source * alpha
    return _add_at(input, part, lin, ("index_add", make, (index,)))  # type: ignore[no-any-return]


def _index_add_positions(shape: tuple[int, ...], src_shape: tuple[int, ...], d: int, index: Any) -> Array:
    """The flat positions :func:`index_add` adds at, from the 1-D index (checked again)."""
    idx = _index("index_add", index, shape, shape[d], d).reshape(-1)
    shape_b = (1,) * d + (idx.size,) + (1,) * (len(shape) - d - 1)
    return _along(np.broadcast_to(idx.reshape(shape_b), src_shape), d, shape)


# ----- masked_fill / one_hot ---------------------------------------------------------------


def masked_fill(input: Tensor[S, T], mask: Any, value: Any) -> Tensor[S, T]:
    """``input`` with ``value`` where ``mask`` is true (``torch.Tensor.masked_fill``); ``mask``
    is a bool tensor (or array) that broadcasts to ``input``'s shape, ``value`` a number (or a
    0-d tensor of ``input``'s dtype, which then gets a gradient: the sum of the output's
    gradient where ``mask`` holds). ``-inf`` (attention masks) and NaN are kept as given.

    Gradient: the output's gradient where ``mask`` is false, zero where it is true
    (:func:`gradtape.ops.where`).

    Raises:
        DTypeError: ``mask`` is not bool, or a tensor ``value`` has another dtype.
        ShapeError: ``mask`` does not broadcast to ``input``'s shape, or a tensor ``value`` is
            not 0-d.
        TypeError: ``value`` is neither a number nor a tensor.
        ValueError: ``value`` does not fit an integer ``input`` (inf, NaN).
    """
    x = input.data
    is_t = hasattr(mask, "tape") and hasattr(mask, "data")
    m = _as_array(mask.data if is_t else mask)
    if m.dtype != np.bool_:
        raise DTypeError(
            f"masked_fill: mask must be bool, got dtype {m.dtype} of shape {m.shape} (input of shape {x.shape})"
        )
    try:
        fits = np.broadcast_shapes(m.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"masked_fill: mask of shape {m.shape} does not broadcast to input of shape {x.shape}")
    value_is_t = isinstance(value, _tensor_class())
    if value_is_t:
        if value.data.shape != ():
            raise ShapeError(f"masked_fill: a tensor value must be 0-d, got shape {value.data.shape}")
        _same_dtype("masked_fill", input, value, "value")
    elif not isinstance(value, SCALARS):
        raise TypeError(f"masked_fill: value must be a number or a 0-d tensor, got {type(value).__name__}")
    if x.dtype.kind != "f":  # integers and bools: exact, never differentiated
        v = value.data if value_is_t else value
        try:
            fill = _as_array(v).astype(x.dtype) if np.isfinite(v) else None
        except (TypeError, ValueError):
            fill = None
        if fill is None:
            raise ValueError(f"masked_fill: value {v!r} does not fit input of dtype {x.dtype} (shape {x.shape})")
        if _tp._recorder is not None and fill.__class__ is np.ndarray:
            _tp._recorder.constant(fill)
        return untraced("masked_fill", input, (input, mask if is_t else None), np.where, m, fill, x)  # type: ignore[no-any-return]
    value = value.item() if isinstance(value, np.generic) else value  # a Python number keeps float32
    return where(mask if is_t and mask.data is m else m, value, input)  # a mask tensor: a replay reads its array


def one_hot(tensor: Tensor[Any, Any], num_classes: int = -1) -> Tensor[Any, NoneTape]:
    """One-hot encoding of class indices (``torch.nn.functional.one_hot``): an int64 tensor of
    shape ``tensor.shape + (num_classes,)``, 1 at each index and 0 elsewhere, without a tape.

    Args:
        tensor: an integer tensor of class indices in ``[0, num_classes)``.
        num_classes: the number of classes; ``-1`` (default) takes ``tensor.max() + 1``.

    Raises:
        DTypeError: ``tensor`` is not an integer tensor.
        IndexError: an index is negative or ``>= num_classes``.
        ValueError: ``num_classes=-1`` with an empty ``tensor`` (nothing to infer from), or
            ``num_classes`` below -1.
        TypeError: ``num_classes`` is not an int.
    """
    x = tensor.data
    if x.dtype.kind not in "iu":
        raise DTypeError(f"one_hot: tensor must hold integer class indices, got dtype {x.dtype} (shape {x.shape})")
    if not is_int(num_classes):
        raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
    c = int(num_classes)
    if c < -1:
        raise ValueError(f"one_hot: num_classes must be -1 or at least 0, got {c}")
    if c == -1:
        if x.size == 0:
            raise ValueError(f"one_hot: cannot infer num_classes from an empty tensor (shape {x.shape}); pass it")
        c = int(x.max()) + 1
        if _tp._recorder is not None:
            _tp._recorder.refuse(
                f"calls one_hot without num_classes on a tensor of shape {x.shape}: the class count (the output's "
                "shape) comes from the values, which a replay would not read again; pass num_classes"
            )
    return untraced("one_hot", tensor, (tensor,), _one_hot, x, c)  # type: ignore[no-any-return]


def _one_hot(x: Array, c: int) -> Array:
    """:func:`one_hot`'s int64 encoding of ``x`` in ``c`` classes (a replay checks the range too).

    Raises:
        IndexError: an index is negative or ``>= c``.
    """
    if x.size:
        lo, hi = int(x.min()), int(x.max())
        if lo < 0 or hi >= c:
            bad = lo if lo < 0 else hi
            raise IndexError(f"one_hot: class index {bad} is out of range for {c} classes (tensor of shape {x.shape})")
    out: Array = (x[..., None] == _arrays.arange(c, x)).astype(np.int64)
    return out


# ----- split / chunk -----------------------------------------------------------------------


def _split(op: str, a: Tensor[Any, Any], sizes: list[int], d: int) -> tuple[Any, ...]:
    """The pieces of ``a`` along ``d`` (views), one recorded op with several outputs: its
    backward writes every piece's gradient into one buffer of ``a``'s shape (zeros where a
    piece got none), its second rule concatenates the gradient tensors."""
    x = a.data
    bounds = np.cumsum([0, *sizes]).tolist()
    lead: tuple[Any, ...] = (slice(None),) * d
    keys = [(*lead, slice(lo, hi)) for lo, hi in itertools.pairwise(bounds)]
    tape = op_tape(a)
    outs = tuple(a._from_op(x[k], tape) for k in keys)
    if _tp._recorder is not None:  # views of a parameter: it is read, and guarded
        _tp._recorder.read(a)
    if tape is not NONE_TAPE:
        aid, shape, dtype = a.id, x.shape, x.dtype

        def split_backward(grads: Gradients, gs: list[Array | None]) -> None:
            full = all(g is not None for g in gs)
            buf = (_arrays.empty if full else _arrays.zeros)(shape, dtype, x)
            for k, g in zip(keys, gs, strict=True):
                if g is not None:
                    buf[k] = g
            grads._accum(aid, buf)

        def split_diff(gs: list[Any], rebuild: Any) -> list[tuple[int, Any]]:
            return [(aid, concat(list(gs), axis=d))]

        record(tape, list(outs), split_backward, split_diff)
    return outs


def _splitone_dim(op: str, a: Tensor[Any, Any], dim: Any, axis: Any) -> int:
    x = a.data
    if x.ndim == 0:
        raise ShapeError(f"{op}: expects a tensor of at least 1 dim, got shape {x.shape}")
    return one_dim(op, dim_or_axis(op, dim, axis, 0), x.shape)


def split(
    tensor: Tensor[Any, T], split_size_or_sections: int | Sequence[int], dim: int = 0, *, axis: int | None = None
) -> tuple[Tensor[Any, T], ...]:
    """Split along ``dim`` (``torch.split``): an int ``n`` gives pieces of ``n`` (the last one
    smaller if the size does not divide), a list of sizes gives pieces of those sizes (they
    must add up to the size of ``dim``). Returns a tuple of views of ``tensor``.

    Gradient: one recorded op for all pieces; ``tensor`` gets each piece's gradient at its
    place and zero for the pieces that were not used.

    Raises:
        ValueError: ``split_size_or_sections`` is a negative size, a size 0 of a non-empty
            dim, or sections that do not add up (names the shape).
        ShapeError: ``tensor`` is 0-d, or ``dim`` is out of range.
        TypeError: ``split_size_or_sections`` is neither an int nor a sequence of ints, or
            ``dim`` is not an int.
    """
    x = tensor.data
    d = _splitone_dim("split", tensor, dim, axis)
    n = x.shape[d]
    if is_int(split_size_or_sections):
        size = int(split_size_or_sections)  # type: ignore[arg-type]
        if size < 0 or (size == 0 and n != 0):
            raise ValueError(f"split: split size {size} is invalid for dim {d} of size {n} (shape {x.shape})")
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size else []
        sizes = sizes or [0]
    elif isinstance(split_size_or_sections, (list, tuple)):
        sizes = list(_ints("split", tuple(split_size_or_sections), "sections"))
        if any(s < 0 for s in sizes) or sum(sizes) != n:
            raise ValueError(
                f"split: sections {sizes} must be non-negative and add up to the size {n} of dim {d} (shape {x.shape})"
            )
    else:
        raise TypeError(
            f"split: split_size_or_sections must be an int or a list of ints, got {split_size_or_sections!r}"
        )
    return _split("split", tensor, sizes, d)


def chunk(input: Tensor[Any, T], chunks: int, dim: int = 0, *, axis: int | None = None) -> tuple[Tensor[Any, T], ...]:
    """Split into ``chunks`` pieces along ``dim`` (``torch.chunk``): pieces of
    ``ceil(size / chunks)``, the last one smaller, so there may be fewer than ``chunks``
    (size 5 in 4 chunks gives sizes 2, 2, 1); an empty dim gives ``chunks`` empty pieces.

    Gradient: as :func:`split`.

    Raises:
        ValueError: ``chunks`` is not positive.
        ShapeError: ``input`` is 0-d, or ``dim`` is out of range.
        TypeError: ``chunks`` or ``dim`` is not an int.
    """
    x = input.data
    d = _splitone_dim("chunk", input, dim, axis)
    if not is_int(chunks):
        raise TypeError(f"chunk: chunks must be an int, got {chunks!r}")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks} (shape {x.shape})")
    n = x.shape[d]
    if n == 0:
        return _split("chunk", input, [0] * int(chunks), d)
    size = -(-n // int(chunks))
    return _split("chunk", input, [size] * (n // size) + ([n % size] if n % size else []), d)


# ----- flip / repeat / tile ----------------------------------------------------------------


def flip(input: Tensor[S, T], dims: int | Sequence[int] | None = None, *more: int, axis: Any = None) -> Tensor[S, T]:
    """Reverse the order of elements along ``dims`` (``torch.flip``; ``t.flip(0, 1)``,
    ``t.flip((0, 1))`` and ``flip(t, [0, 1])`` are the same); ``axis=`` is numpy's name. The
    output is a view of ``input``'s data.

    Gradient: the output's gradient flipped back along ``dims``.

    Raises:
        ShapeError: a dim is out of range or repeated.
        TypeError: no dims are given, or one is not an int.
    """
    x = input.data
    given = dim_or_axis("flip", dims, axis, None, "dims")
    if given is None:
        raise TypeError(f"flip: dims is required (input of shape {x.shape})")
    raw = _ints("flip", (given, *more) if more else (given,), "dims")
    axes = tuple(one_dim("flip", k, x.shape, "dims") for k in raw)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"flip: dims {raw} repeat a dim (input of shape {x.shape})")
    if x.ndim == 0:
        axes = ()

    def rule(grads: Gradients, aid: int, g: Array) -> None:
        grads._accum(aid, np.flip(g, axes).copy())

    return record_unary(input, np.flip(x, axes), rule, diff=lambda g, rebuild, oid, aid: flip(g, axes))


def _tiled(op: str, a: Tensor[Any, Any], reps: tuple[int, ...]) -> Any:
    """``a`` repeated ``reps[k]`` times along dim ``k`` (``len(reps) >= a.ndim``; leading dims
    are added); backward sums the output's gradient over the copies."""
    x = a.data
    if any(r < 0 for r in reps):
        raise ValueError(f"{op}: repeats must be non-negative, got {reps} (input of shape {x.shape})")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    inter = tuple(v for pair in zip(reps, shape, strict=True) for v in pair)  # (r0, s0, r1, s1, ...)
    copies = tuple(range(0, 2 * len(reps), 2))
    in_shape = x.shape

    def rule(grads: Gradients, aid: int, g: Array) -> None:
        grads._accum(aid, _as_array(g.reshape(inter).sum(axis=copies)).reshape(in_shape))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        gi = g.reshape(inter)
        return (gi.sum(axis=copies) if copies else gi).reshape(in_shape)

    return record_unary(a, _tile(x, shape, reps), rule, diff=diff, again=(_tile, x, shape, reps))


def _tile(x: Array, shape: tuple[int, ...], reps: tuple[int, ...]) -> Array:
    """``x`` viewed at ``shape`` (leading 1s added) and tiled ``reps`` times (numpy's ``tile``)."""
    y: Array = np.tile(x.reshape(shape), reps)
    return y


def repeat(input: Tensor[Any, T], sizes: int | Sequence[int], *more: int) -> Tensor[Any, T]:
    """PyTorch's ``Tensor.repeat`` (numpy's ``tile``): ``input`` repeated ``sizes[k]`` times
    along dim ``k``; ``t.repeat(2, 3)`` and ``t.repeat((2, 3))`` are the same. ``sizes`` may be
    longer than ``input.ndim`` (new leading dims), not shorter. This is not numpy's
    ``repeat``, which repeats each element (PyTorch's ``repeat_interleave``).

    Gradient: the sum of the output's gradient over the copies.

    Raises:
        ShapeError: fewer sizes than ``input`` has dims.
        ValueError: a size is negative.
        TypeError: a size is not an int.
    """
    x = input.data
    reps = _ints("repeat", (sizes, *more), "sizes")
    if len(reps) < x.ndim:
        raise ShapeError(
            f"repeat: {len(reps)} sizes {reps} for a tensor of {x.ndim} dims (shape {x.shape}); "
            "give at least one per dim"
        )
    return _tiled("repeat", input, reps)  # type: ignore[no-any-return]


def tile(input: Tensor[Any, T], dims: int | Sequence[int], *more: int) -> Tensor[Any, T]:
    """``torch.tile`` / ``np.tile``: as :func:`repeat`, but fewer ``dims`` than ``input`` has
    dims are padded with 1s in front (``tile(t, (2,))`` of a matrix repeats its columns).

    Gradient: the sum of the output's gradient over the copies.

    Raises:
        ValueError: a repeat count is negative.
        TypeError: a repeat count is not an int.
    """
    x = input.data
    reps = _ints("tile", (dims, *more), "dims")
    reps = (1,) * (x.ndim - len(reps)) + reps
    return _tiled("tile", input, reps)  # type: ignore[no-any-return]


def unbind(input: Tensor[Any, T], dim: int = 0) -> tuple[Tensor[Any, T], ...]:
    """``torch.unbind``: the slices of ``input`` along ``dim``, each without that dim (``n``
    tensors of rank ``r - 1`` for a dim of size ``n``). Gradient: one recorded op (as
    :func:`split`); each slice's gradient goes back to its place, zeros for slices that got none.

    Raises:
        ShapeError: ``dim`` is out of range, or ``input`` is 0-d.
        TypeError: ``dim`` is not an int.
    """
    x = input.data
    if x.ndim == 0:
        raise ShapeError("unbind: a 0-d tensor has no dim to unbind")
    d = one_dim("unbind", dim, x.shape)
    if x.shape[d] == 0:
        return ()
    return tuple(p.squeeze(d) for p in split(input, 1, d))


# ----- PyTorch's narrow, masked_select, nonzero (the Tensor methods and gradtape's top) -----------


def narrow(input: Tensor[Any, T], dim: int, start: int, length: int) -> Tensor[Any, T]:
    """``torch.narrow``: the slice ``start : start + length`` of ``dim`` (``start`` may be
    negative, counting from the end), a view. Gradient: scattered back into the slice, zeros
    elsewhere.

    Raises:
        TypeError: an argument is not an int.
        ShapeError: ``dim`` is out of range, or the slice does not fit the dim.
    """
    d = one_dim("narrow", dim, input.data.shape)
    for name, v in (("start", start), ("length", length)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"narrow: {name} must be an int, got {v!r}")
    size = input.data.shape[d] if input.data.ndim else 1
    s = start + size if start < 0 else start
    if not (0 <= s <= size and 0 <= length and s + length <= size):
        raise ShapeError(f"narrow: start {start} and length {length} do not fit dim {dim} of shape {input.data.shape}")
    out: Tensor[Any, T] = input[(slice(None),) * d + (slice(s, s + length),)]
    return out


def masked_select(input: Tensor[Any, T], mask: Tensor[Any, Any]) -> Tensor[Any, T]:
    """``torch.masked_select``: the elements of ``input`` where the bool ``mask`` (broadcast
    with ``input``) is True, 1-D in row-major order. Gradient: scattered back to the selected
    places, zeros elsewhere.

    Raises:
        TypeError: ``mask`` is not a bool tensor. ShapeError: the shapes do not broadcast.
    """
    if not hasattr(mask, "tape") or mask.data.dtype != np.bool_:
        raise TypeError(f"masked_select: mask must be a bool tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    x, m = input, mask
    if x.data.shape != m.data.shape:
        try:
            shape = np.broadcast_shapes(x.data.shape, m.data.shape)
        except ValueError:
            raise ShapeError(f"masked_select: shapes {x.data.shape} and {m.data.shape} do not broadcast") from None
        x = x if x.data.shape == shape else broadcast_to(x, shape)
        m = m if m.data.shape == shape else broadcast_to(m, shape)
    out: Tensor[Any, T] = x[m]
    return out


def nonzero(input: Tensor[Any, Any], *, as_tuple: bool = False) -> Any:
    """``torch.nonzero``: the indices of the nonzero elements, an int64 ``(n, ndim)`` tensor in
    row-major order (``as_tuple=True``: one 1-D index tensor per dim, numpy's ``nonzero``), on
    ``input``'s device. Untraced (indices carry no gradient)."""
    host = _arrays.into_memory_of(input.data, None)
    idx = np.nonzero(host)
    if as_tuple:
        return tuple(index_tensor(input, i, "nonzero") for i in idx)
    return index_tensor(
        input, np.stack(idx, axis=1) if idx else np.zeros((1 if host.size else 0, 0), np.int64), "nonzero"
    )
