"""Shape ops: reshape, permute / transpose / ``.T``, broadcast_to, expand_dims (unsqueeze),
squeeze, concat, stack, roll, tril / triu.

These ops move elements without arithmetic, so each backward moves the output's gradient
back: reshape, permute, transpose, expand_dims and squeeze hand the input a *view* of the
output's gradient (stored copy-on-write with ``Gradients._accum_alias``: no copy unless
someone writes into it), concat and stack give each input its slice (also a view),
broadcast_to sums the gradient over the broadcast dims, roll rolls it back and tril/triu
mask it. Forward outputs are numpy views of the input's data wherever numpy gives one
(reshape of a contiguous array, permute, broadcast_to, expand_dims, squeeze), as in numpy
and PyTorch; float32 stays float32.

Typing: ``transpose`` / ``.T`` of ``Rank2[A, B]`` is ``Rank2[B, A]``; ``transpose`` and
``permute`` with ``Literal`` axes are exact for ranks 2 to 4 (tables in
``ops/_signatures/shape.py``, generated); ``expand_dims`` of ranks 0 to 2 and ``squeeze`` of a
``Literal[1]`` dim are exact; ``reshape`` and ``broadcast_to`` return the shape type of
their argument (``t.reshape((3, 4))`` may be annotated ``Rank2[L[3], L[4]]``). A tensor
whose shape type is ``Any`` gets an ``Any`` result (see :class:`AnyShape`); ``concat`` and
``stack`` return ``Tensor[Any, T]``. The output owns a tape if any input does.

Runtime errors name the op and the shapes: :class:`~gradtape.errors.ShapeError` for sizes
that differ, axes out of range and shapes that do not fit together,
:class:`~gradtape.errors.DTypeError` when float32 meets float64 in ``concat`` / ``stack``,
``TypeError`` for arguments of the wrong kind.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import SI, A, B, S, T, typed_as
from gradtape.devices import _arrays
from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.ops._signatures import shape as _sig
from gradtape.ops._util import one_dim, op_name_of, refill, replayable, sum_to
from gradtape.shapes import AnyShape, Rank0, Rank1, Rank2, Rank3, sum_to_shape
from gradtape.tape import NONE_TAPE, _tensor_class, op_tape, record, register_diff

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "AnyShape",
    "TProperty",
    "broadcast_to",
    "cat",
    "concat",
    "expand_dims",
    "flatten",
    "hstack",
    "movedim",
    "permute",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "swapaxes",
    "transpose",
    "tril",
    "triu",
    "unsqueeze",
    "vstack",
]

Array = np.ndarray[Any, Any]
D = TypeVar("D")
I = TypeVar("I", bound=int)


# ----- shared plumbing -------------------------------------------------------------------


def _axis(op: str, axis: object, shape: tuple[int, ...], ndim: int | None = None) -> int:
    """``axis`` as a non-negative int below ``ndim`` (default ``len(shape)``).

    Raises:
        TypeError: ``axis`` is not an int.
        ShapeError: ``axis`` is out of range; the message names ``op`` and ``shape``.
    """
    n = len(shape) if ndim is None else ndim
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    if not -n <= axis < n:
        raise ShapeError(f"{op}: axis {axis} is out of range for shape {shape} (valid axes: {-n} to {n - 1})")
    return int(axis) % n


def _axes(op: str, axes: object, shape: tuple[int, ...], ndim: int | None = None) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of distinct non-negative axes (in the given order).

    Raises:
        TypeError: not an int or a sequence of ints.
        ShapeError: an axis is out of range or repeated.
    """
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        return (_axis(op, axes, shape, ndim),)
    if not isinstance(axes, (tuple, list)):
        raise TypeError(f"{op}: axes must be an int or a tuple of ints, got {axes!r}")
    out = tuple(_axis(op, ax, shape, ndim) for ax in axes)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {tuple(axes)} for shape {shape}")
    return out


def _dims(op: str, shape: object) -> tuple[int, ...]:
    """A shape argument (a tuple of ints, or one int) as a tuple of Python ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in shape
    ):
        raise TypeError(f"{op}: shape must be a tuple of ints, got {shape!r}")
    return tuple(int(n) for n in shape)


def _give(grads: Gradients, i: int, r: Array, g: Array, oid: int) -> None:
    """Accumulate ``r`` into gradient ``i``: as an alias (copy-on-write) when ``r`` is a view
    of ``g``, the gradient buffer of output ``oid``, else as a fresh array the store keeps."""
    if r is g or np.may_share_memory(r, g):
        grads._accum_alias(i, r, oid)
    else:
        grads._accum(i, r)


def _record(
    a: Tensor[Any, Any],
    data: Array,
    rule: Callable[[Gradients, int, int, Array], None],
    diff: Callable[[Any], Any] | None = None,
    again: tuple[Any, ...] | None = None,
) -> Any:
    """Wrap ``data`` as the output of a one-input op on ``a`` and record ``rule(grads, aid,
    oid, g)``, run only if the output received a gradient ``g``; ``diff(g)``, if given, is the
    second rule: the input's gradient computed from the gradient tensor ``g`` with gradtape ops
    (higher-order derivatives). ``again = (forward, *args)``: ``data`` is a new array that
    ``forward(*args)`` computes anew from ``a``'s array (``roll``, ``tril``), which a replay of
    :func:`gradtape.capture` reruns (the rules read only gradients)."""
    tape = op_tape(a)
    out = a._from_op(data, tape)
    if tape is not NONE_TAPE:
        tape._record((out.id, _shape_backward, a.id, rule, diff))
    if _tp._recorder is not None:  # a view of a parameter (W.T): the parameter is read, and guarded
        _tp._recorder.read(a)
        if again is not None:
            replayable(op_name_of(again[0]), data, refill, again, (a,), tape, train=True)
    return out


def _shape_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Any, Any]) -> None:
    oid, _, aid, rule, _ = entry
    rule(grads, aid, oid, g)


def _d_shape(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    diff = entry[4]
    if diff is None:
        raise TapeError(
            f"the backward of the shape op {getattr(entry[3], '__qualname__', '?')!r} has no differentiable form "
            "yet, so gradients of gradients cannot flow through it"
        )
    return [(entry[2], diff(g))]


register_diff(_shape_backward, _d_shape)


def _view_back(
    a: Tensor[Any, Any], data: Array, back: Callable[[Array], Array], diff: Callable[[Any], Any] | None = None
) -> Any:
    """Record an op whose input gradient is ``back(g)``, usually a view of ``g`` (``diff``: the
    same in gradtape ops, see :func:`_record`)."""
    return _record(a, data, lambda grads, i, oid, g: _give(grads, i, back(g), g, oid), diff)


# ----- reshape ---------------------------------------------------------------------------


@overload
def reshape(a: Tensor[Any, T], shape: SI) -> Tensor[SI, T]: ...
@overload
def reshape(a: Tensor[Any, T], shape: I) -> Tensor[Rank1[I], T]: ...
@overload
def reshape(a: Tensor[Any, T], d0: int, d1: int, /, *dims: int) -> Tensor[Any, T]: ...
def reshape(a: Any, shape: Any, *rest: Any) -> Any:
    """The elements of ``a`` (in C order) in a tensor of ``shape``: a tuple of ints, one of
    which may be ``-1`` (inferred from the size), or a single int (a 1-D result); or, as
    PyTorch's ``x.reshape(2, -1)``, the dims as separate arguments (typed ``Tensor[Any, T]``).

    The output's data is a view of ``a``'s where numpy can give one. Gradient: the output's
    gradient reshaped back to ``a``'s shape (a view, no copy).

    Typing: the output's shape type is the argument's, so
    ``t.reshape((3, 4))`` may be annotated ``Tensor[Rank2[L[3], L[4]], ...]``.

    Raises:
        ShapeError: the sizes differ (names both shapes), more than one dim is ``-1``, or a
            dim is negative.
        TypeError: ``shape`` is not an int or a tuple of ints.
    """
    x = a.data
    if rest:  # PyTorch's varargs: reshape(2, -1)
        shape = (shape, *rest)
    dims = list(_dims("reshape", shape))
    unknown = [k for k, n in enumerate(dims) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in dims):
        raise ShapeError(
            f"reshape: invalid target shape {tuple(dims)} for a tensor of shape {x.shape} "
            "(dims must be >= 0, at most one may be -1)"
        )
    known = math.prod(n for n in dims if n != -1)
    if unknown:
        if known == 0 or x.size % known:
            raise ShapeError(
                f"reshape: cannot reshape a tensor of shape {x.shape} ({x.size} elements) into shape {tuple(dims)}"
            )
        dims[unknown[0]] = x.size // known
    elif known != x.size:
        raise ShapeError(
            f"reshape: cannot reshape a tensor of shape {x.shape} ({x.size} elements) "
            f"into shape {tuple(dims)} ({known} elements)"
        )
    in_shape = x.shape
    y = x.reshape(dims)
    out = _view_back(a, y, lambda g: g.reshape(in_shape), lambda g: g.reshape(in_shape))
    if _tp._recorder is not None and y.base is not x and not np.shares_memory(y, x):  # a strided input: a copy
        replayable("reshape", y, _reshape_into, (x,), (a,), out.tape, True)
    return out


def _reshape_into(y: Array, x: Array) -> None:
    """A copying :func:`reshape` again (for :func:`gradtape.capture`'s replays): ``x``'s
    elements in C order into the C-contiguous ``y``."""
    np.copyto(y.reshape(x.shape), x)


# ----- permute / transpose / .T ----------------------------------------------------------


def _permute(op: str, a: Tensor[Any, Any], perm: tuple[int, ...]) -> Any:
    inv = tuple(int(k) for k in np.argsort(perm))
    return _view_back(a, a.data.transpose(perm), lambda g: g.transpose(inv), lambda g: g.permute(inv))


@typed_as(_sig.permute)
def permute(a: Any, axes: Any, *more: Any) -> Any:
    """Reorder the dims of ``a``: output dim ``k`` is input dim ``axes[k]`` (numpy's
    ``transpose(axes)``, PyTorch's ``permute``); negative axes count from the end. The axes
    are a tuple, or (PyTorch's ``x.permute(0, 2, 1)``) separate arguments.

    The output's data is a view of ``a``'s. Gradient: the output's gradient permuted by the
    inverse permutation (a view).

    Typing: exact for ranks 2 to 4 when ``axes`` is a tuple of literals,
    ``Tensor[Rank3[A, B, C], T].permute((2, 0, 1))`` is ``Tensor[Rank3[C, A, B], T]``.

    Raises:
        ShapeError: ``axes`` is not a permutation of ``a``'s dims (names the shape).
        TypeError: ``axes`` is not a tuple of ints.
    """
    x = a.data
    if more:  # PyTorch's varargs: permute(0, 2, 1)
        axes = (axes, *more)
    if isinstance(axes, (int, np.integer)):
        raise TypeError(f"permute: axes must be a tuple of ints, got {axes!r} (call permute((1, 0)))")
    perm = _axes("permute", axes, x.shape)
    if len(perm) != x.ndim:
        raise ShapeError(f"permute: axes {tuple(axes)} do not permute the {x.ndim} dims of shape {x.shape}")
    return _permute("permute", a, perm)


@typed_as(_sig.transpose)
def transpose(a: Any, ax0: int, ax1: int) -> Any:
    """Swap dims ``ax0`` and ``ax1`` of ``a`` (PyTorch's ``transpose``); negative axes count
    from the end.

    The output's data is a view of ``a``'s. Gradient: the output's gradient with the same
    two dims swapped back (a view).

    Typing: ``transpose(Rank2[A, B], 0, 1)`` is ``Rank2[B, A]``; exact for ranks 2 to 4.

    Raises:
        ShapeError: an axis is out of range (names the shape).
    """
    x = a.data
    i, j = _axis("transpose", ax0, x.shape), _axis("transpose", ax1, x.shape)
    perm = list(range(x.ndim))
    perm[i], perm[j] = j, i
    return _permute("transpose", a, tuple(perm))


class TProperty:
    """The ``Tensor.T`` property: the transpose of a 2-D tensor, ``Rank2[A, B] -> Rank2[B, A]``.

    A descriptor (rather than ``property``) so that mypy computes the result's shape type
    from the tensor's; mypy rejects ``.T`` on a tensor typed with another rank.

    Raises:
        ShapeError: the tensor is not 2-D (as PyTorch, ``.T`` does not reverse other ranks'
            dims; use :func:`permute`).
    """

    @overload
    def __get__(self, obj: None, owner: object) -> TProperty: ...
    @overload
    def __get__(self, obj: Tensor[AnyShape, T], owner: object) -> Tensor[Rank2[Any, Any], T]: ...
    @overload
    def __get__(self, obj: Tensor[Rank2[A, B], T], owner: object) -> Tensor[Rank2[B, A], T]: ...
    @overload
    def __get__(self, obj: Tensor[tuple[int, ...], T], owner: object) -> Tensor[Rank2[Any, Any], T]: ...
    def __get__(self, obj: Any, owner: object) -> Any:
        if obj is None:
            return self
        if obj.data.ndim != 2:
            raise ShapeError(f"T: expects a 2-D tensor, got shape {obj.data.shape} (use permute for other ranks)")
        return _permute("T", obj, (1, 0))


# ----- broadcast_to ----------------------------------------------------------------------


def broadcast_to(a: Tensor[Any, T], shape: SI) -> Tensor[SI, T]:
    """``a`` broadcast to ``shape`` by numpy's rules (dims of size 1 stretch, leading dims are
    added); a read-only view of ``a``'s data, no copy.

    Gradient: the output's gradient summed over the broadcast dims (back to ``a``'s shape).

    Typing: the output's shape type is the argument's, so ``t.broadcast_to((3, 4))`` may be
    annotated ``Tensor[Rank2[L[3], L[4]], ...]``.

    Raises:
        ShapeError: ``a``'s shape does not broadcast to ``shape`` (names both shapes).
        TypeError: ``shape`` is not a tuple of ints.
    """
    x = a.data
    dims = _dims("broadcast_to", shape)
    if any(n < 0 for n in dims):
        raise ShapeError(f"broadcast_to: negative dim in target shape {dims} (tensor of shape {x.shape})")
    try:
        y = np.broadcast_to(x, dims)
    except ValueError:
        raise ShapeError(f"broadcast_to: cannot broadcast a tensor of shape {x.shape} to shape {dims}") from None
    in_shape = x.shape
    return _view_back(a, y, lambda g: sum_to_shape(g, in_shape), lambda g: sum_to(g, in_shape))  # type: ignore[no-any-return]


# ----- flatten (PyTorch's) ---------------------------------------------------------------


def flatten(input: Tensor[Any, T], start_dim: int = 0, end_dim: int = -1) -> Tensor[Any, T]:
    """``torch.flatten``: dims ``start_dim`` to ``end_dim`` (inclusive; negatives count from the
    end) merged into one, of their product's size; the others kept. A 0-d input gives shape
    ``(1,)``. A :func:`reshape`, so a view of the data where numpy gives one; gradient: the
    output's gradient reshaped back.

    Raises:
        TypeError: a dim is not an int.
        ShapeError: a dim is out of range, or ``start_dim`` comes after ``end_dim`` (names
            the shape).
    """
    shape = input.data.shape
    if not shape:
        one_dim("flatten", start_dim, shape, "start_dim")
        one_dim("flatten", end_dim, shape, "end_dim")
        return reshape(input, (1,))
    s = one_dim("flatten", start_dim, shape, "start_dim")
    e = one_dim("flatten", end_dim, shape, "end_dim")
    if s > e:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for a tensor of shape {shape}")
    return reshape(input, (*shape[:s], math.prod(shape[s : e + 1]), *shape[e + 1 :]))


# ----- expand_dims / unsqueeze / squeeze -------------------------------------------------


@overload
def expand_dims(a: Tensor[AnyShape, T], axis: int | tuple[int, ...]) -> Tensor[Any, T]: ...
@overload
def expand_dims(a: Tensor[Rank0, T], axis: Literal[0, -1]) -> Tensor[Rank1[Literal[1]], T]: ...
@overload
def expand_dims(a: Tensor[Rank1[A], T], axis: Literal[0, -2]) -> Tensor[Rank2[Literal[1], A], T]: ...
@overload
def expand_dims(a: Tensor[Rank1[A], T], axis: Literal[1, -1]) -> Tensor[Rank2[A, Literal[1]], T]: ...
@overload
def expand_dims(a: Tensor[Rank2[A, B], T], axis: Literal[0, -3]) -> Tensor[Rank3[Literal[1], A, B], T]: ...
@overload
def expand_dims(a: Tensor[Rank2[A, B], T], axis: Literal[1, -2]) -> Tensor[Rank3[A, Literal[1], B], T]: ...
@overload
def expand_dims(a: Tensor[Rank2[A, B], T], axis: Literal[2, -1]) -> Tensor[Rank3[A, B, Literal[1]], T]: ...
@overload
def expand_dims(a: Tensor[Any, T], axis: int | tuple[int, ...]) -> Tensor[Any, T]: ...
def expand_dims(a: Any, axis: Any) -> Any:
    """Insert a dim of size 1 at ``axis`` of the output (an int or a tuple of ints; negative
    axes count from the end of the output, as numpy's ``expand_dims``). Alias: ``unsqueeze``.

    The output's data is a view of ``a``'s. Gradient: the output's gradient reshaped back
    (a view).

    Typing: exact for ranks 0 to 2 with a literal axis,
    ``Tensor[Rank1[A], T].expand_dims(0)`` is ``Tensor[Rank2[L[1], A], T]``.

    Raises:
        ShapeError: an axis is out of range for the output's rank, or repeated.
    """
    x = a.data
    n_new = 1 if isinstance(axis, (int, np.integer)) else len(axis) if isinstance(axis, (tuple, list)) else 0
    axes = _axes("expand_dims", axis, x.shape, x.ndim + n_new)
    in_shape = x.shape
    return _view_back(a, np.expand_dims(x, axes), lambda g: g.reshape(in_shape), lambda g: g.reshape(in_shape))


unsqueeze = expand_dims
"""PyTorch's name for :func:`expand_dims`."""


@overload
def squeeze(a: Tensor[AnyShape, T], axis: int | tuple[int, ...] | None = None) -> Tensor[Any, T]: ...
@overload
def squeeze(a: Tensor[Rank1[Literal[1]], T], axis: Literal[0, -1] | None = None) -> Tensor[Rank0, T]: ...
@overload
def squeeze(a: Tensor[Rank2[Literal[1], Literal[1]], T], axis: None = None) -> Tensor[Rank0, T]: ...
@overload
def squeeze(a: Tensor[Rank2[Literal[1], A], T], axis: Literal[0, -2]) -> Tensor[Rank1[A], T]: ...
@overload
def squeeze(a: Tensor[Rank2[A, Literal[1]], T], axis: Literal[1, -1]) -> Tensor[Rank1[A], T]: ...
@overload
def squeeze(a: Tensor[Rank3[Literal[1], A, B], T], axis: Literal[0, -3]) -> Tensor[Rank2[A, B], T]: ...
@overload
def squeeze(a: Tensor[Rank3[A, Literal[1], B], T], axis: Literal[1, -2]) -> Tensor[Rank2[A, B], T]: ...
@overload
def squeeze(a: Tensor[Rank3[A, B, Literal[1]], T], axis: Literal[2, -1]) -> Tensor[Rank2[A, B], T]: ...
@overload
def squeeze(a: Tensor[Any, T], axis: int | tuple[int, ...] | None = None) -> Tensor[Any, T]: ...
def squeeze(a: Any, axis: Any = None) -> Any:
    """Remove dims of size 1: those at ``axis`` (an int or a tuple of ints), or all of them
    (``axis=None``).

    The output's data is a view of ``a``'s. Gradient: the output's gradient reshaped back
    (a view).

    Typing: exact for a ``Literal[1]`` dim at a literal axis of ranks 1 to 3,
    ``Tensor[Rank2[L[1], A], T].squeeze(0)`` is ``Tensor[Rank1[A], T]``.

    Raises:
        ShapeError: an axis is out of range, repeated, or has a size other than 1 (names the shape).
    """
    x = a.data
    if axis is None:
        axes = tuple(k for k, n in enumerate(x.shape) if n == 1)
    else:
        axes = _axes("squeeze", axis, x.shape)
        for k in axes:
            if x.shape[k] != 1:
                raise ShapeError(f"squeeze: axis {k} of shape {x.shape} has size {x.shape[k]}, not 1")
    in_shape = x.shape
    return _view_back(a, np.squeeze(x, axes), lambda g: g.reshape(in_shape), lambda g: g.reshape(in_shape))


# ----- concat / stack --------------------------------------------------------------------


def _tensor_list(op: str, tensors: object) -> list[Tensor[Any, Any]]:
    tensor_cls = _tensor_class()
    if isinstance(tensors, (tensor_cls, np.ndarray)) or not isinstance(tensors, Sequence):
        raise TypeError(f"{op}: expected a sequence of tensors, got {type(tensors).__name__} (call {op}([a, b]))")
    ts = list(tensors)
    if not ts:
        raise ValueError(f"{op}: needs at least one tensor, got an empty sequence")
    for k, t in enumerate(ts):
        if not isinstance(t, tensor_cls):
            raise TypeError(f"{op}: element {k} is a {type(t).__name__}, not a Tensor")
    dtypes = {t.data.dtype for t in ts}
    if len(dtypes) > 1:
        raise DTypeError(f"{op}: dtypes differ: " + ", ".join(f"{t.data.dtype} {t.data.shape}" for t in ts))
    return ts


def _record_many(ts: list[Tensor[Any, Any]], data: Array, pieces: Callable[[Any], list[Any]]) -> Any:
    """Wrap ``data`` as the output of an op on ``ts`` (tapes merged) whose input ``k``'s
    gradient is ``pieces(g)[k]``, a view of the output's gradient ``g``."""
    tape = op_tape(*ts)
    out = ts[0]._from_op(data, tape)
    if tape is not NONE_TAPE:
        ids, oid = [t.id for t in ts], out.id

        def many_backward(grads: Gradients, g: Array) -> None:
            for i, r in zip(ids, pieces(g), strict=True):
                _give(grads, i, r, g, oid)

        def many_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            # the second rule: the same pieces cut from the gradient tensor (basic indexing, recorded)
            return list(zip(ids, pieces(g), strict=True))

        record(tape, out, many_backward, many_diff)
    return out


@typed_as(_sig.concat)
def concat(tensors: Any, axis: int = 0, *, dim: int | None = None) -> Any:
    """Join tensors along an existing ``axis`` (numpy's ``concatenate``, PyTorch's ``cat``).

    Args:
        tensors: a list or tuple of one or more tensors of one dtype, with equal shapes except
            along ``axis``, at least 1-D.
        axis: the axis to join along; negative counts from the end.
        dim: PyTorch's name for ``axis`` (keyword); give one of the two.

    Gradient: each input gets its slice of the output's gradient along ``axis`` (a view).
    Typing: ``Tensor[Any, T]``; the tape is owned if any input's is (for a list, the tape
    kind of its element type; a tuple of 2 to 4 tensors is checked element by element).

    Raises:
        ShapeError: ranks differ, shapes differ outside ``axis``, the tensors are 0-D, or
            ``axis`` is out of range (all name the shapes).
        DTypeError: dtypes differ.
        TypeError: ``tensors`` is not a sequence of tensors, or both ``axis`` and ``dim``
            are given.
        ValueError: ``tensors`` is empty.
    """
    return _concat("concat", tensors, _axis_or_dim("concat", axis, dim))


@typed_as(_sig.cat)
def cat(tensors: Any, dim: int = 0, *, axis: int | None = None) -> Any:
    """PyTorch's ``torch.cat(tensors, dim=0)``: :func:`concat` under PyTorch's name and
    argument name (``axis=`` is accepted too, keyword). Shapes, dtypes, gradient and errors
    as :func:`concat` (messages name ``cat``).

    Raises:
        TypeError: both ``dim`` and ``axis`` are given, or ``tensors`` is not a sequence of
            tensors.
    """
    if axis is not None:
        if dim != 0:
            raise TypeError(f"cat: got dim={dim!r} and axis={axis!r}; pass one of them")
        dim = axis
    return _concat("cat", tensors, dim)


def _axis_or_dim(op: str, axis: int, dim: int | None) -> int:
    """gradtape's ``axis`` or PyTorch's ``dim`` (keyword) of ``concat`` / ``stack``."""
    if dim is None:
        return axis
    if axis != 0:
        raise TypeError(f"{op}: got axis={axis!r} and dim={dim!r}; pass one of them (dim is PyTorch's name)")
    return dim


def _concat(op: str, tensors: Any, axis: int) -> Any:
    ts = _tensor_list(op, tensors)
    shapes = [t.data.shape for t in ts]
    first = shapes[0]
    if not first or any(len(s) != len(first) for s in shapes):
        raise ShapeError(f"{op}: needs tensors of one rank >= 1, got shapes {', '.join(map(str, shapes))}")
    ax = _axis(op, axis, first)
    if any(s[:ax] + s[ax + 1 :] != first[:ax] + first[ax + 1 :] for s in shapes):
        raise ShapeError(f"{op}: shapes {', '.join(map(str, shapes))} differ outside axis {axis}")
    data = np.concatenate([t.data for t in ts], axis=ax)
    bounds = np.cumsum([0] + [s[ax] for s in shapes]).tolist()
    lead: tuple[Any, ...] = (slice(None),) * ax

    def pieces(g: Array) -> list[Array]:
        return [g[(*lead, slice(lo, hi))] for lo, hi in itertools.pairwise(bounds)]

    out = _record_many(ts, data, pieces)
    if _tp._recorder is not None:
        replayable(op, data, _join_into, (np.concatenate, tuple(t.data for t in ts), ax), tuple(ts), out.tape, True)
    return out


def _join_into(y: Array, join: Callable[..., Array], arrays: tuple[Array, ...], ax: int) -> None:
    """:func:`concat`'s or :func:`stack`'s join again into ``y`` (for :func:`gradtape.capture`'s
    replays)."""
    join(arrays, axis=ax, out=y)


@typed_as(_sig.stack)
def stack(tensors: Any, axis: int = 0, *, dim: int | None = None) -> Any:
    """Join tensors of one shape along a new ``axis`` of the output (numpy's and PyTorch's
    ``stack``); ``n`` tensors of shape ``s`` give shape ``s[:axis] + (n,) + s[axis:]``.

    Args:
        tensors: a list or tuple of one or more tensors of one shape and dtype.
        axis: where the new axis goes in the output; negative counts from its end.
        dim: PyTorch's name for ``axis`` (keyword); give one of the two.

    Gradient: input ``k`` gets index ``k`` of the output's gradient along ``axis`` (a view).
    Typing: as :func:`concat`.

    Raises:
        ShapeError: the shapes differ (names them), or ``axis`` is out of range.
        DTypeError: dtypes differ.
        TypeError: ``tensors`` is not a sequence of tensors, or both ``axis`` and ``dim``
            are given.
        ValueError: ``tensors`` is empty.
    """
    axis = _axis_or_dim("stack", axis, dim)
    ts = _tensor_list("stack", tensors)
    shapes = [t.data.shape for t in ts]
    if any(s != shapes[0] for s in shapes):
        raise ShapeError(f"stack: needs tensors of one shape, got shapes {', '.join(map(str, shapes))}")
    ax = _axis("stack", axis, shapes[0], len(shapes[0]) + 1)
    data = np.stack([t.data for t in ts], axis=ax)
    lead: tuple[Any, ...] = (slice(None),) * ax

    def pieces(g: Array) -> list[Array]:
        return [g[(*lead, k)] for k in range(len(ts))]

    out = _record_many(ts, data, pieces)
    if _tp._recorder is not None:
        replayable("stack", data, _join_into, (np.stack, tuple(t.data for t in ts), ax), tuple(ts), out.tape, True)
    return out


# ----- roll ------------------------------------------------------------------------------


def roll(a: Tensor[S, T], shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Tensor[S, T]:
    """Shift elements ``shift`` places along ``axis``, wrapping around (numpy's ``roll``):
    ``axis=None`` rolls the flattened tensor; a tuple of shifts goes with a tuple of axes.

    Gradient: the output's gradient rolled back by ``-shift``.

    Raises:
        ShapeError: an axis is out of range (names the shape).
        ValueError: ``shift`` and ``axis`` are sequences of different lengths.
        TypeError: ``shift`` is not an int or a sequence of ints.
    """
    x = a.data
    shifts = _dims("roll", shift)
    if axis is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: a tuple of shifts {shifts} needs a tuple of axes (tensor of shape {x.shape})")
        ax: int | tuple[int, ...] | None = None
        back: int | tuple[int, ...] = -shifts[0]
    else:
        if isinstance(axis, (int, np.integer)) or not isinstance(axis, (tuple, list)):
            ax = _axis("roll", axis, x.shape)  # an int, or a TypeError naming roll
        else:
            ax = tuple(_axis("roll", k, x.shape) for k in axis)
        n_ax = 1 if isinstance(ax, int) else len(ax)
        if len(shifts) != n_ax and len(shifts) != 1 and n_ax != 1:
            raise ValueError(f"roll: {len(shifts)} shifts for {n_ax} axes (tensor of shape {x.shape})")
        back = tuple(-s for s in shifts) if not isinstance(shift, (int, np.integer)) else -shifts[0]
    fwd = shift if isinstance(shift, (int, np.integer)) else shifts
    return _record(  # type: ignore[no-any-return]
        a,
        _rolled(x, fwd, ax),
        lambda grads, i, oid, g: grads._accum(i, np.roll(g, back, axis=ax)),
        lambda g: roll(g, back, ax),
        (_rolled, x, fwd, ax),
    )


def _rolled(x: Array, shift: Any, axis: Any) -> Array:
    """``np.roll(x, shift, axis=axis)``, positionally (a replay's forward)."""
    y: Array = np.roll(x, shift, axis=axis)
    return y


# ----- tril / triu -----------------------------------------------------------------------


def _tri(op: str, a: Tensor[Any, Any], k: int, f: Callable[..., Array]) -> Any:
    x = a.data
    if x.ndim < 2:
        raise ShapeError(f"{op}: needs a tensor of at least 2 dims (the last two are the matrix), got shape {x.shape}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{op}: k must be an int, got {k!r}")
    square = x.shape[-2:]

    def diff(g: Any) -> Any:  # the kept triangle as a constant mask, made when the rule runs
        return g * g._like(f(_arrays.ones(square, g.data.dtype, g.data), k))

    return _record(a, f(x, k), lambda grads, i, oid, g: grads._accum(i, f(g, k)), diff, (f, x, k))


def tril(a: Tensor[S, T], k: int = 0) -> Tensor[S, T]:
    """The lower triangle of the last two dims: elements above diagonal ``k`` set to 0
    (``k > 0`` keeps diagonals above the main one, ``k < 0`` removes some below; numpy's ``tril``).

    Gradient: the output's gradient with the same elements set to 0.

    Raises:
        ShapeError: ``a`` has fewer than 2 dims (names the shape).
    """
    return _tri("tril", a, k, np.tril)  # type: ignore[no-any-return]


def triu(a: Tensor[S, T], k: int = 0) -> Tensor[S, T]:
    """The upper triangle of the last two dims: elements below diagonal ``k`` set to 0
    (numpy's ``triu``).

    Gradient: the output's gradient with the same elements set to 0.

    Raises:
        ShapeError: ``a`` has fewer than 2 dims (names the shape).
    """
    return _tri("triu", a, k, np.triu)  # type: ignore[no-any-return]


# ----- PyTorch's hstack, vstack, movedim, swapaxes ---------------------------------------------


def hstack(tensors: Sequence[Tensor[Any, T]]) -> Tensor[Any, T]:
    """``torch.hstack``: 1-D tensors joined end to end (dim 0), others along dim 1 (columns).
    Gradient: as :func:`concat`.

    Raises:
        ShapeError: the tensors' other dims differ, or the sequence is empty.
    """
    ts = list(tensors)
    if not ts:
        raise ShapeError("hstack: expected a non-empty sequence of tensors")
    return _joined("hstack", ts, 0 if ts[0].data.ndim == 1 else 1)  # type: ignore[no-any-return]


def _joined(op: str, ts: list[Any], axis: int) -> Any:
    """:func:`concat` for ``op`` (``hstack``, ``vstack``): its errors say ``op``."""
    try:
        return concat(ts, axis)
    except (ShapeError, DTypeError, TypeError) as e:
        raise type(e)(f"{op}: {str(e).removeprefix('concat: ')}") from None


def vstack(tensors: Sequence[Tensor[Any, T]]) -> Tensor[Any, T]:
    """``torch.vstack``: tensors joined along dim 0 (rows), a 1-D tensor of length ``n`` taken
    as one row ``(1, n)`` (and a 0-d one as ``(1, 1)``). Gradient: as :func:`concat`.

    Raises:
        ShapeError: the tensors' other dims differ, or the sequence is empty.
    """
    ts = list(tensors)
    if not ts:
        raise ShapeError("vstack: expected a non-empty sequence of tensors")
    rows = [t.reshape((1, -1)) if hasattr(t, "data") and t.data.ndim < 2 else t for t in ts]
    return _joined("vstack", rows, 0)  # type: ignore[no-any-return]


def movedim(input: Tensor[Any, T], source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor[Any, T]:
    """``torch.movedim`` (numpy's ``moveaxis``): the dims ``source`` moved to the positions
    ``destination`` (ints or sequences of ints of one length; negative ones count from the
    end), the other dims keeping their order. Gradient: the inverse permutation (as
    :func:`permute`).

    Raises:
        ShapeError: a dim is out of range or repeated, or the two sequences differ in length.
        TypeError: a dim is not an int.
    """
    nd = input.data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {source!r} and destination {destination!r} differ in length")
    s = [_axis("movedim", d, input.data.shape, nd) for d in src]
    t = [_axis("movedim", d, input.data.shape, nd) for d in dst]
    if len(set(s)) != len(s) or len(set(t)) != len(t):
        raise ShapeError(f"movedim: repeated dim in source {source!r} or destination {destination!r}")
    rest = iter(d for d in range(nd) if d not in s)
    placed = dict(zip(t, s, strict=True))
    order = tuple(placed[k] if k in placed else next(rest) for k in range(nd))
    return permute(input, order)


def swapaxes(input: Tensor[Any, T], axis0: int, axis1: int) -> Tensor[Any, T]:
    """``torch.swapaxes`` (``swapdims``, numpy's ``swapaxes``): :func:`transpose` of the two
    dims.

    Raises:
        ShapeError: a dim is out of range. TypeError: a dim is not an int.
    """
    shape = input.data.shape
    return transpose(input, _axis("swapaxes", axis0, shape), _axis("swapaxes", axis1, shape))
