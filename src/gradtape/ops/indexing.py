"""Indexing: ``t[key]`` with basic indices, ``gather`` / ``index_select`` by integer indices.

- ``getitem`` (``Tensor.__getitem__``) takes Python ints, slices, ``None`` and ``...``
  (numpy's basic indexing): the output's data is a view of the input's. Its backward adds
  the output's gradient into the input's gradient at the same index, in place in a buffer
  the store owns (a fresh zeros buffer the first time, a copy of a shared one); it never
  stores the output's gradient, or a view of it, as the input's.
- ``gather(a, indices, axis)`` is ``np.take`` (TensorFlow's ``gather``): the output's
  shape is ``a.shape[:axis] + indices.shape + a.shape[axis + 1:]``. ``index_select`` is
  the same with 1-D indices (PyTorch's ``index_select``; note the argument order). Their
  backward scatter-adds the output's gradient into the input's, repeated indices
  accumulating, with the compiled :func:`~gradtape.devices.kernels.scatter.scatter_add`.
  This is not PyTorch's elementwise ``torch.gather``: that one is
  :func:`gradtape.ops.take_along_axis` (``Tensor.take_along_axis``).

Typing: exact for the common cases (an int or a slice into ranks 1 to 3, ``[int, int]``,
``[:, int]`` of a matrix; ``gather`` of a list or an int, ``index_select`` of 1-D indices
into ranks 1 and 2); otherwise ``Tensor[Any, T]``. The output keeps the input's tape.

Runtime errors name the op and the shape: ``IndexError`` for an index out of bounds or
too many indices, ``TypeError`` for an index of the wrong kind (an integer array in
``t[...]``: use ``gather``), :class:`~gradtape.errors.ShapeError` for an axis out of
range or ``index_select`` indices that are not 1-D, :class:`~gradtape.errors.DTypeError`
for non-integer indices.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import A, B, C, D, T
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels.scatter import add_at, scatter_add
from gradtape.errors import ShapeError
from gradtape.ops._function import Function, FunctionCtx
from gradtape.ops._util import int_indices, refill, replayable
from gradtape.ops.select import take_along_axis
from gradtape.ops.shape import AnyShape, _axis
from gradtape.shapes import Rank0, Rank1, Rank2, Rank3, Rank4
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["Index", "Indices", "gather", "getitem", "index_select"]

Array = np.ndarray[Any, Any]

_Basic: TypeAlias = "int | np.integer[Any] | slice | EllipsisType | None"
_Advanced: TypeAlias = "Sequence[int] | Sequence[bool] | np.ndarray[Any, Any] | Tensor[Any, Any]"
Index: TypeAlias = "int | np.integer[Any] | slice | EllipsisType | _Advanced | tuple[_Basic | _Advanced, ...] | None"
"""What ``t[key]`` accepts: numpy's basic indices, and integer or bool arrays, lists and tensors
(numpy's advanced indexing, as PyTorch's)."""
Indices: TypeAlias = (
    "int | np.integer[Any] | Sequence[int] | Sequence[Sequence[int]] | np.ndarray[Any, Any] | Tensor[Any, Any]"
)
"""What ``gather`` accepts: an int, a (nested) list of ints, an integer array or an integer tensor."""


# ----- t[key] ----------------------------------------------------------------------------


def _basic_key(key: object, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Check ``key`` against ``shape`` and return it as a tuple of Python ints, slices,
    ``None`` and ``...``.

    Raises:
        TypeError: an element is not a basic index (a bool, a list, an array, a float).
        IndexError: too many indices, two ``...``, or an int out of bounds.
        ValueError: a slice step is 0.
    """
    items = key if isinstance(key, tuple) else (key,)
    out: list[Any] = []
    for k in items:
        if k is None or k is Ellipsis:
            out.append(k)
        elif isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if part is not None and (isinstance(part, bool) or not isinstance(part, (int, np.integer))):
                    raise TypeError(f"getitem: slice bounds must be ints or None, got {k!r} (tensor of shape {shape})")
            if k.step == 0:
                raise ValueError(f"getitem: slice step cannot be zero (tensor of shape {shape})")
            out.append(k)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            out.append(operator.index(k))
        elif isinstance(k, (list, np.ndarray)) or hasattr(k, "tape"):
            out.append(_advanced(k, shape))
        else:
            raise TypeError(
                f"getitem: index {k!r} of type {type(k).__name__} is not an int, a slice, None, ..., "
                f"or an integer or bool array, list or tensor; tensor of shape {shape}"
            )
    if sum(k is Ellipsis for k in out) > 1:
        raise IndexError(f"getitem: an index can only have a single ellipsis ('...'), got {key!r}")
    n_consumed = sum(_consumes(k) for k in out)
    if n_consumed > len(shape):
        raise IndexError(f"getitem: too many indices for a tensor of shape {shape}: {n_consumed} in {key!r}")
    # the dim each int indexes: count from the front before '...', from the back after it
    dim = 0
    for pos, k in enumerate(out):
        if k is Ellipsis:
            dim = len(shape) - sum(_consumes(j) for j in out[pos + 1 :])
        elif k is None:
            continue
        elif _is_array(k) and k.dtype == np.bool_:
            covered = shape[dim : dim + k.ndim]
            if k.shape != covered:
                raise IndexError(
                    f"getitem: a bool mask of shape {k.shape} does not match the dims {covered} it indexes "
                    f"from axis {dim} (tensor of shape {shape})"
                )
            dim += k.ndim
        else:
            n = shape[dim]
            if isinstance(k, slice):
                bad = None
            elif isinstance(k, int):
                bad = None if -n <= k < n else k
            else:
                bad = None if not k.size or (-n <= k.min() and k.max() < n) else (k.min() if k.min() < -n else k.max())
            if bad is not None:
                raise IndexError(
                    f"getitem: index {bad} is out of bounds for axis {dim} of size {n} (tensor of shape {shape})"
                )
            dim += 1
    return tuple(out)


def _consumes(k: Any) -> int:
    """How many of the tensor's dims index ``k`` consumes: 0 for None and ..., a bool mask's
    ndim, else 1."""
    if k is None or k is Ellipsis:
        return 0
    if _is_array(k) and k.dtype == np.bool_:
        return int(k.ndim)
    return 1


def _advanced(k: Any, shape: tuple[int, ...]) -> Array:
    """An advanced index (a list, an array or a tensor) as an ``intp`` or bool array.

    Raises:
        DTypeError: its elements are neither integers nor bools (floats, which would be
            truncated).
    """
    data = k.data if hasattr(k, "tape") else k
    arr = _as_array(data)
    if arr.dtype == np.bool_:
        return arr
    return int_indices("getitem", arr, f"tensor of shape {shape}", what="index")


def _is_array(k: Any) -> bool:
    """Whether ``k`` (an item of a checked key) is an index array: numpy's, or a GPU array
    (an index tensor on the ``Cuda`` device). Missing the GPU's made ``x[mask]`` on the GPU
    take the basic-index path, whose backward added into a copy: a silently zero gradient."""
    return isinstance(k, np.ndarray) or _arrays.on_gpu(k)


def _is_advanced(k: tuple[Any, ...]) -> bool:
    return any(_is_array(j) for j in k)


@overload
def getitem(a: Tensor[AnyShape, T], key: Index) -> Tensor[Any, T]: ...
@overload
def getitem(a: Tensor[Rank1[A], T], key: int) -> Tensor[Rank0, T]: ...
@overload
def getitem(a: Tensor[Rank1[A], T], key: slice) -> Tensor[Rank1[int], T]: ...
@overload
def getitem(a: Tensor[Rank2[A, B], T], key: int) -> Tensor[Rank1[B], T]: ...
@overload
def getitem(a: Tensor[Rank2[A, B], T], key: slice) -> Tensor[Rank2[int, B], T]: ...
@overload
def getitem(a: Tensor[Rank2[A, B], T], key: tuple[int, int]) -> Tensor[Rank0, T]: ...
@overload
def getitem(a: Tensor[Rank2[A, B], T], key: tuple[slice, int]) -> Tensor[Rank1[A], T]: ...
@overload
def getitem(a: Tensor[Rank2[A, B], T], key: tuple[int, slice]) -> Tensor[Rank1[int], T]: ...
@overload
def getitem(a: Tensor[Rank2[A, B], T], key: tuple[slice, slice]) -> Tensor[Rank2[int, int], T]: ...
@overload
def getitem(a: Tensor[Rank3[A, B, C], T], key: int) -> Tensor[Rank2[B, C], T]: ...
@overload
def getitem(a: Tensor[Rank3[A, B, C], T], key: slice) -> Tensor[Rank3[int, B, C], T]: ...
@overload
def getitem(a: Tensor[Any, T], key: Index) -> Tensor[Any, T]: ...
def getitem(a: Any, key: Any) -> Any:
    """``a[key]``, numpy's (and PyTorch's) indexing.

    Basic indices, which give a view of ``a``'s data: ints (negative count from the end),
    slices, ``None`` (a new dim of size 1) and one ``...``. Advanced indices, which give a copy:
    integer lists, arrays or tensors (``logits[torch.arange(B), targets]``: the index arrays
    broadcast together and pick one element each; negative entries count from the end) and
    bool masks (``x[x > 0]``: the elements where the mask is true, the mask's shape equal to
    the dims it covers), mixed with basic indices as numpy places the result's dims.

    Gradient: the output's gradient added into ``a``'s at ``key`` (the rest is 0); an element
    picked several times gets the sum (``np.add.at``). Indexing one tensor several times
    accumulates every part.

    Raises:
        IndexError: an index is out of bounds (names the axis, its size and the shape), a bool
            mask does not match the dims it covers, or there are more indices than dims.
        DTypeError: an index array of floats (which would be truncated).
        TypeError: an index of another kind (a float, a string).
    """
    x = a.data
    k = _basic_key(key, x.shape)
    if x.__class__ is not np.ndarray and _arrays.on_gpu(x):  # a list or numpy index of a GPU tensor: onto its GPU
        k = tuple(_arrays.into_memory_of(j, x) if isinstance(j, np.ndarray) else j for j in k)
    advanced = _is_advanced(k)
    if advanced:
        try:
            y = x[k]
        except IndexError as e:  # index arrays that do not broadcast together
            raise IndexError(f"getitem: {e} (tensor of shape {x.shape})") from None
        tensors = [a, *(j for j in (key if isinstance(key, tuple) else (key,)) if hasattr(j, "tape"))]
        tape = op_tape(*tensors)  # an index tensor's tape carries the store too
    else:
        y = x[k]
        tape = op_tape(a)
    out = a._from_op(y, tape)
    if not advanced and _tp._recorder is not None:  # a view (of a parameter: read where it lives)
        _tp._recorder.read(a)
    if advanced and _tp._recorder is not None:
        if any(_is_array(j) and j.dtype == np.bool_ for j in k):  # the result's shape comes from the mask's values
            _tp._recorder.refuse(
                f"indexes a tensor of shape {x.shape} with a boolean mask (x[mask], masked_select): the result's "
                "shape comes from the mask's values, which a replay would not read again; use where(mask, x, 0) "
                "or masked_fill, whose shape is fixed"
            )
        else:  # integer index arrays; those made from Python lists are constants of the plan
            for given, j in zip(key if isinstance(key, tuple) else (key,), k, strict=False):
                if isinstance(given, list) and isinstance(j, np.ndarray):
                    _tp._recorder.constant(j)
            replayable("getitem", y, refill, (operator.getitem, x, k), tuple(tensors), tape, True)
    if tape is not NONE_TAPE:
        aid, shape, dtype = a.id, x.shape, x.dtype

        def getitem_backward(grads: Gradients, g: Array) -> None:
            buf = grads._mut(aid, shape, dtype, x)  # owned by aid: never the output's buffer; x's memory
            if advanced:
                add_at(buf, k, g)  # repeated picks accumulate
                return
            part = buf[k]
            if part.__class__ is np.ndarray or part.ndim:  # (CuPy gives 0-d arrays where numpy gives scalars)
                np.add(part, g, out=part)
            else:  # every dim indexed by an int: numpy gives a scalar
                buf[k] = part + g

        record(tape, out, getitem_backward, lambda g, rebuild: [(aid, _put_at(g, shape, k))])
    return out


def _put_at(g: Any, shape: tuple[int, ...], k: Any) -> Any:
    """getitem's second rule: zeros of ``shape`` with the gradient tensor ``g`` added at ``k``,
    as a recorded op whose own backward is ``[k]`` (so it differentiates to any order)."""

    class PutAt(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, t: Any) -> Any:
            out = _arrays.zeros(shape, t.dtype, t.data)
            add_at(out, k, t.data)
            return t._like(out)

        @staticmethod
        def backward(ctx: FunctionCtx, go: Any) -> Any:
            return go[k]

    return PutAt.apply(g)


# ----- gather / index_select -------------------------------------------------------------


def _torch_order(first: object, second: object) -> bool:
    """Whether ``(first, second)`` is PyTorch's ``(dim, index)``: an int, then indices that are
    not an int (an array, a list or a tensor); gradtape's ``(indices, axis)`` has an int axis."""
    is_int = isinstance(first, (int, np.integer)) and not isinstance(first, (bool, np.bool_))
    return is_int and not isinstance(second, (int, np.integer))


def _indices(op: str, indices: object, n: int, axis: int, shape: tuple[int, ...]) -> Array:
    """``indices`` as an ``intp`` array with negative entries wrapped (``-1`` is the last).

    Raises:
        DTypeError: the indices are not integers (bools and floats included).
        IndexError: an index is outside ``[-n, n)``.
    """
    idx = int_indices(op, indices, f"tensor of shape {shape}")
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(
                f"{op}: index {bad} is out of bounds for axis {axis} of size {n} (tensor of shape {shape})"
            )
        if lo < 0:
            idx = np.where(idx < 0, idx + n, idx)
    return idx


def _take(op: str, a: Tensor[Any, Any], idx: Array, ax: int, indices: object = None) -> Any:
    """``np.take(a, idx, axis=ax)`` recorded (gather's and index_select's forward);
    ``indices``: what ``idx`` was made from (:func:`_indices`), for :func:`gradtape.capture`'s
    replays, which make it again from the indices' new values."""
    x = a.data
    replay = _tp._recorder is not None and indices is not None
    if replay:
        idx = idx.copy()  # private: each replay rewrites it, and the backward reads it
    y = np.take(x, idx, axis=ax)
    tape = op_tape(a)
    out = a._from_op(y, tape)
    if replay:
        src_t: Any = indices if hasattr(indices, "tape") else None
        src = src_t.data if src_t is not None else indices if isinstance(indices, np.ndarray) else None
        if src is None:  # Python ints: a constant of the plan
            _tp._recorder.constant(idx)
        args = (x, idx, ax, op, src, idx.shape)
        replayable(op, y, _take_into, args, (a, src_t), tape, True, () if src is None else (idx,))
    if tape is not NONE_TAPE:
        aid, shape, dtype = a.id, x.shape, x.dtype

        def gather_backward(grads: Gradients, g: Array) -> None:
            scatter_add(grads._mut(aid, shape, dtype, x), ax, idx, g)

        record(tape, out, gather_backward, lambda g, rebuild: [(aid, scatter_into(g, shape, ax, idx))])
    return out


def _take_into(y: Array, x: Array, idx: Array, ax: int, op: str, src: Array | None, shape: tuple[int, ...]) -> None:
    """:func:`_take` again (for :func:`gradtape.capture`'s replays): the indices made again
    from ``src`` (checked and wrapped as :func:`_indices` does), then ``np.take`` into ``y``."""
    if src is not None:
        np.copyto(idx, _indices(op, src, x.shape[ax], ax, x.shape).reshape(shape))
    np.take(x, idx, axis=ax, out=y)


def scatter_into(g: Any, shape: tuple[int, ...], axis: int, idx: Array) -> Any:
    """The second rule of gather/index_select/embedding: zeros of ``shape`` with the gradient
    tensor ``g`` added at ``idx`` along ``axis`` (repeats accumulate), as a recorded op whose
    own backward gathers again (so it differentiates to any order)."""

    class ScatterAdd(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, t: Any) -> Any:
            out = _arrays.zeros(shape, t.dtype, t.data)
            scatter_add(out, axis, idx, _arrays.contiguous(t.data))
            return t._like(out)

        @staticmethod
        def backward(ctx: FunctionCtx, go: Any) -> Any:
            return _take("gather", go, idx, axis)

    return ScatterAdd.apply(g)


@overload
def gather(a: Tensor[AnyShape, T], indices: Indices, axis: int = 0) -> Tensor[Any, T]: ...
@overload
def gather(a: Tensor[Rank1[A], T], indices: int, axis: Literal[0, -1] = 0) -> Tensor[Rank0, T]: ...
@overload
def gather(a: Tensor[Rank1[A], T], indices: Sequence[int], axis: Literal[0, -1] = 0) -> Tensor[Rank1[int], T]: ...
@overload
def gather(a: Tensor[Rank2[A, B], T], indices: int, axis: Literal[0, -2] = 0) -> Tensor[Rank1[B], T]: ...
@overload
def gather(a: Tensor[Rank2[A, B], T], indices: int, axis: Literal[1, -1]) -> Tensor[Rank1[A], T]: ...
@overload
def gather(a: Tensor[Rank2[A, B], T], indices: Sequence[int], axis: Literal[0, -2] = 0) -> Tensor[Rank2[int, B], T]: ...
@overload
def gather(a: Tensor[Rank2[A, B], T], indices: Sequence[int], axis: Literal[1, -1]) -> Tensor[Rank2[A, int], T]: ...
@overload
def gather(a: Tensor[Any, T], indices: int, axis: Indices) -> Tensor[Any, T]: ...  # PyTorch's (dim, index)
@overload
def gather(a: Tensor[Any, T], indices: Indices, axis: int = 0) -> Tensor[Any, T]: ...
def gather(a: Any, indices: Any, axis: Any = 0) -> Any:
    """Select along ``axis`` by integer ``indices`` of any shape (numpy's ``take``,
    TensorFlow's ``gather``): ``out[..., j, ...] = a[..., indices[j], ...]``, of shape
    ``a.shape[:axis] + indices.shape + a.shape[axis + 1:]``: a scalar index (an int, a 0-d
    array or tensor) removes ``axis``, as ``np.take(a, 3, axis)`` does. Negative indices count
    from the end.

    Semantics: numpy's ``take`` for ``gather(a, indices, axis)`` (also the method
    ``Tensor.gather(indices, axis)``). PyTorch's spelling, ``gather(a, dim, index)`` /
    ``x.gather(1, idx)`` (an int then an index array, list or tensor: the order numpy's reading
    cannot take, since its ``axis`` is an int), means PyTorch's gather, which picks one element
    per index position (the output has ``index``'s shape): it runs
    :func:`gradtape.ops.take_along_axis` ``(a, index, dim)``. So a PyTorch program's
    ``x.gather(1, idx)`` ports unchanged, and neither reading is taken silently for the other.

    Gradient: the output's gradient scatter-added into ``a``'s (``np.add.at`` semantics:
    an index that appears ``m`` times gets ``m`` contributions), by a compiled kernel.

    Raises:
        IndexError: an index is out of bounds (names the axis, its size and the shape).
        ShapeError: ``axis`` is out of range, or ``a`` is 0-D.
        DTypeError: ``indices`` are not integers.
    """
    if _torch_order(indices, axis):
        return take_along_axis(a, axis, indices)
    x = a.data
    if x.ndim == 0:
        raise ShapeError("gather: cannot index a 0-D tensor (shape ())")
    ax = _axis("gather", axis, x.shape)
    return _take("gather", a, _indices("gather", indices, x.shape[ax], ax, x.shape), ax, indices)


_Index1D: TypeAlias = "Sequence[int] | np.ndarray[Any, Any] | Tensor[Any, Any]"
"""What ``index_select`` accepts: a list of ints, a 1-D integer array or an integer tensor."""


@overload
def index_select(a: Tensor[AnyShape, T], indices: _Index1D, axis: int = 0) -> Tensor[Any, T]: ...
@overload
def index_select(a: Tensor[Rank1[A], T], indices: _Index1D, axis: Literal[0, -1] = 0) -> Tensor[Rank1[int], T]: ...
@overload
def index_select(
    a: Tensor[Rank2[A, B], T], indices: _Index1D, axis: Literal[0, -2] = 0
) -> Tensor[Rank2[int, B], T]: ...
@overload
def index_select(a: Tensor[Rank2[A, B], T], indices: _Index1D, axis: Literal[1, -1]) -> Tensor[Rank2[A, int], T]: ...
@overload
def index_select(
    a: Tensor[Rank3[A, B, C], T], indices: _Index1D, axis: Literal[0, -3] = 0
) -> Tensor[Rank3[int, B, C], T]: ...
@overload
def index_select(
    a: Tensor[Rank3[A, B, C], T], indices: _Index1D, axis: Literal[1, -2]
) -> Tensor[Rank3[A, int, C], T]: ...
@overload
def index_select(
    a: Tensor[Rank3[A, B, C], T], indices: _Index1D, axis: Literal[2, -1]
) -> Tensor[Rank3[A, B, int], T]: ...
@overload
def index_select(
    a: Tensor[Rank4[A, B, C, D], T], indices: _Index1D, axis: Literal[0, -4] = 0
) -> Tensor[Rank4[int, B, C, D], T]: ...
@overload
def index_select(
    a: Tensor[Rank4[A, B, C, D], T], indices: _Index1D, axis: Literal[1, -3]
) -> Tensor[Rank4[A, int, C, D], T]: ...
@overload
def index_select(
    a: Tensor[Rank4[A, B, C, D], T], indices: _Index1D, axis: Literal[2, -2]
) -> Tensor[Rank4[A, B, int, D], T]: ...
@overload
def index_select(
    a: Tensor[Rank4[A, B, C, D], T], indices: _Index1D, axis: Literal[3, -1]
) -> Tensor[Rank4[A, B, C, int], T]: ...
# an int axis: which dim is selected is known at run time only (every dim int)
@overload
def index_select(a: Tensor[Rank1[A], T], indices: _Index1D, axis: int = 0) -> Tensor[Rank1[int], T]: ...
@overload
def index_select(a: Tensor[Rank2[A, B], T], indices: _Index1D, axis: int = 0) -> Tensor[Rank2[int, int], T]: ...
@overload
def index_select(a: Tensor[Rank3[A, B, C], T], indices: _Index1D, axis: int = 0) -> Tensor[Rank3[int, int, int], T]: ...
@overload
def index_select(
    a: Tensor[Rank4[A, B, C, D], T], indices: _Index1D, axis: int = 0
) -> Tensor[Rank4[int, int, int, int], T]: ...
# PyTorch's order, (dim, index), with a Literal dim
@overload
def index_select(a: Tensor[Rank1[A], T], indices: Literal[0, -1], axis: _Index1D) -> Tensor[Rank1[int], T]: ...
@overload
def index_select(a: Tensor[Rank2[A, B], T], indices: Literal[0, -2], axis: _Index1D) -> Tensor[Rank2[int, B], T]: ...
@overload
def index_select(a: Tensor[Rank2[A, B], T], indices: Literal[1, -1], axis: _Index1D) -> Tensor[Rank2[A, int], T]: ...
@overload
def index_select(
    a: Tensor[Rank3[A, B, C], T], indices: Literal[0, -3], axis: _Index1D
) -> Tensor[Rank3[int, B, C], T]: ...
@overload
def index_select(
    a: Tensor[Rank3[A, B, C], T], indices: Literal[1, -2], axis: _Index1D
) -> Tensor[Rank3[A, int, C], T]: ...
@overload
def index_select(
    a: Tensor[Rank3[A, B, C], T], indices: Literal[2, -1], axis: _Index1D
) -> Tensor[Rank3[A, B, int], T]: ...
@overload
def index_select(a: Tensor[Rank1[A], T], indices: int, axis: _Index1D) -> Tensor[Rank1[int], T]: ...
@overload
def index_select(a: Tensor[Rank2[A, B], T], indices: int, axis: _Index1D) -> Tensor[Rank2[int, int], T]: ...
@overload
def index_select(a: Tensor[Rank3[A, B, C], T], indices: int, axis: _Index1D) -> Tensor[Rank3[int, int, int], T]: ...
@overload
def index_select(a: Tensor[Any, T], indices: int, axis: _Index1D) -> Tensor[Any, T]: ...  # PyTorch's (dim, index)
@overload
def index_select(a: Tensor[Any, T], indices: _Index1D, axis: int = 0) -> Tensor[Any, T]: ...
def index_select(a: Any, indices: Any, axis: Any = 0) -> Any:
    """Select entries along ``axis`` by 1-D integer ``indices``; the output keeps ``a``'s rank
    with ``len(indices)`` entries along ``axis`` (PyTorch's ``index_select(input, dim, index)``);
    a scalar index counts as one entry. Both argument orders are taken: gradtape's
    ``(a, indices, axis)`` and PyTorch's ``(a, dim, index)`` (an int then an index array, list
    or tensor), which cannot be confused (an axis is an int, indices of one entry given as an
    int are read in gradtape's order).

    Typed for ranks 1 to 4 (ranks 1 to 3 in PyTorch's order) when ``axis`` is a ``Literal``:
    the result keeps ``a``'s other dims and has ``int`` (the index count, known at run time)
    at ``axis``; so ``rows: Tensor[Rank2[L[4], int], T] = index_select(x, idx)`` of an
    ``(L[10], L[4])`` table, which mixes up the axes, is a type error. An ``int`` axis gives
    ``int`` dims (which one is selected is known at run time only); other ranks give
    ``Tensor[Any, T]``.

    Gradient: as :func:`gather` (repeated indices accumulate).

    Raises:
        ShapeError: ``indices`` are not 1-D, ``axis`` is out of range, or ``a`` is 0-D.
        IndexError: an index is out of bounds.
        DTypeError: ``indices`` are not integers.
    """
    if _torch_order(indices, axis):
        indices, axis = axis, indices
    x = a.data
    if x.ndim == 0:
        raise ShapeError("index_select: cannot index a 0-D tensor (shape ())")
    ax = _axis("index_select", axis, x.shape)
    idx = _indices("index_select", indices, x.shape[ax], ax, x.shape)
    if idx.ndim == 0:  # a scalar index selects one entry and keeps the axis, as PyTorch's
        idx = idx.reshape(1)
    if idx.ndim != 1:
        raise ShapeError(f"index_select: indices must be 1-D, got shape {idx.shape} (tensor of shape {x.shape})")
    return _take("index_select", a, idx, ax, indices)
