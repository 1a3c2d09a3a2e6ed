"""Elementwise binary ops: add, sub, mul, div, maximum, minimum, pow, with numpy broadcasting
and scalars.

Each op states its forward and, beside it, the derivative its backward closure
accumulates; :func:`record_binary` / :func:`record_scalar` do the tape plumbing
(merging the inputs' tapes, skipping the closure when the output got no gradient) and
:func:`~gradtape.shapes.sum_to_shape` sums a broadcast gradient back to each input.

Typing: both operands have the same shape type ``S``, or a ``Rank2[A, B]`` matrix meets a
``Rank1[B]`` row (a bias); any other numpy broadcast works at run time with an
untyped (``Any``) shape. The output owns a tape if either input does.

Runtime errors: :class:`~gradtape.errors.ShapeError` when the shapes do not broadcast,
:class:`~gradtape.errors.DTypeError` when float32 meets float64, ``TypeError`` for an
operand that is neither a tensor nor a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import A, B, C, D, S, T
from gradtape.devices.kernels import elementwise as _k
from gradtape.ops._util import SCALARS, float_data, record_entry, sum_to, tensor_operand
from gradtape.shapes import Rank0, Rank1, Rank2, Rank3, Rank4, broadcast_shapes, sum_to_shape
from gradtape.tape import (
    NONE_TAPE,
    GradientTape,
    NoneTape,
    OwnedTape,
    Tape,
    attach_diff,
    next_id,
    op_tape,
    register_diff,
)

_new = object.__new__
# ufuncs called through module globals on the hot paths: ``np.add`` is a global and an
# attribute lookup per call, and ``a + b`` goes through ndarray's operator dispatch first
_np_add = np.add
_np_mul = np.multiply

BinaryRule = Callable[
    ["Gradients", "Array", "Array", "Array", "Array", int, int], tuple["Array | None", "Array | None"]
]
"""``rule(grads, g, a, b, y, aid, bid) -> (ga, gb)`` of :func:`record_binary`."""

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "add",
    "div",
    "maximum",
    "minimum",
    "mul",
    "pow",
    "radd",
    "rdiv",
    "record_binary",
    "record_scalar",
    "rmul",
    "rpow",
    "rsub",
    "sub",
]

Array = np.ndarray[Any, Any]


def record_scalar(a: Tensor[Any, Any], data: Array, alpha: float, alpha_c: Any = None) -> Any:
    """Wrap ``data`` as the output of a linear op ``f(a)`` with ``df/da = alpha``.

    The backward closure does ``grad_a += alpha * grad_out`` (storing ``grad_out`` itself,
    copy-on-write, when ``alpha == 1``). ``alpha_c`` is ``alpha`` as a 0-d array of ``a``'s
    dtype when the caller has one (see :func:`weak_const`); backward multiplies by it.
    """
    # record_entry, inlined: ``x * 0.5`` and friends are the commonest ops on small arrays
    # (the call and its argument tuple measured +1.4% on the scalar chain)
    tape = a.tape
    if tape is not NONE_TAPE and (tape.__class__ is not GradientTape or not _tp.direct):
        tape = op_tape(a)
    out = _new(a.__class__)
    out.data = data if data.__class__ is np.ndarray else np.asarray(data)
    out.device = a.device
    out.tape = tape
    out.id = oid = next_id()
    out._leaf = False
    if tape is not NONE_TAPE:
        if alpha == 1.0:
            tape._record((oid, _identity_backward, a.id))
        else:
            if alpha_c is None:
                alpha_c = weak_const(alpha, data.dtype)
            tape._record((oid, _scale_backward, a.id, alpha, alpha_c))
    return out


# Backward functions of the hot elementwise ops are module-level and recorded with their
# arguments (``(time, fn, *args)``) instead of as closures; their time is their output's id
# and they run as ``fn(grads, g, entry)`` with the output's gradient ``g`` (see tape._Entry).


def _identity_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int]) -> None:
    oid, _, aid = entry
    grads._accum_alias(aid, g, oid)


def _scale_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, float, Any]) -> None:
    _, _, aid, alpha, alpha_c = entry
    grads._axpy(aid, alpha, g, alpha_c)


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_CONST32: dict[float, Array] = {}
_CONST64: dict[float, Array] = {}
_CONST_LIMIT = 256


def weak_const(b: float, dtype: np.dtype[Any]) -> Any:
    """``b`` as a read-only 0-d array of ``dtype`` (float32/float64; ``b`` itself otherwise),
    cached per value, to pass to a ufunc in place of the Python float.

    Same result: numpy casts a Python float operand to the array's dtype ("weak" scalar,
    NEP 50), and a 0-d array of that dtype is that cast value. Faster: numpy resolves a
    Python float operand through its weak-scalar promotion on every call, about 270 ns of
    a 500 ns multiply on 64 float32 measured here; a 0-d array costs what an array does.
    Zeros (``0.0 == -0.0`` as keys) and NaNs are never cached; the cache holds at most
    256 values per dtype and is emptied when full, so a changing scalar (a schedule's
    learning rate) costs one small array per call.
    """
    if dtype is _F32:
        table = _CONST32
    elif dtype is _F64:
        table = _CONST64
    else:
        return b
    c = table.get(b)
    if c is None:
        c = np.array(b, dtype)
        c.flags.writeable = False
        if b and b == b:
            if len(table) >= _CONST_LIMIT:
                table.clear()
            table[b] = c
    return c


def _scalar(b: object, op: str = "op") -> float:
    """``b`` as a Python number: numpy treats those as "weak" (NEP 50), so a float32 tensor
    stays float32, where a ``np.float64`` scalar would promote it to float64.

    Raises:
        TypeError: ``b`` is not a number (for the reflected operators ``rsub``/``rdiv``,
            which Python calls with whatever stood left of ``-`` or ``/``).
    """
    if b.__class__ is float:
        return b
    if not isinstance(b, SCALARS):
        raise TypeError(
            f"{op}: expected a Tensor or a Python number, got {type(b).__name__} (wrap arrays with dev.tensor(...))"
        )
    return float(b)


def record_binary(
    op: str,
    a: Tensor[Any, Any],
    b: object,
    forward: Callable[[Array, Array], Array],
    rule: BinaryRule,
) -> Any:
    """Run a broadcasting binary op and record its backward.

    ``rule(grads, g, a, b, y, aid, bid)`` gets the output's gradient ``g``, the inputs' data,
    the output ``y`` and the inputs' ids, and returns ``(ga, gb)``: the two inputs' gradient
    contributions in the output's shape, or ``None`` for a contribution it accumulated into
    ``grads[aid]`` / ``grads[bid]`` itself (a fused kernel). Contributions are summed back to
    each input's shape.
    """
    bt = tensor_operand(op, a, b)
    ad, bd = a.data, bt.data
    if ad.shape != bd.shape:
        broadcast_shapes(op, ad.shape, bd.shape)
    tape = op_tape(a, bt)
    y = forward(ad, bd)
    out = a._from_op(y, tape)
    if tape is not NONE_TAPE:
        tape._record((out.id, _binary_backward, rule, ad, bd, y, a.id, bt.id))
    return out


def _binary_backward(
    grads: Gradients, g: Array, entry: tuple[int, Any, BinaryRule, Array, Array, Array, int, int]
) -> None:
    oid, _, rule, ad, bd, y, aid, bid = entry
    ga, gb = rule(grads, g, ad, bd, y, aid, bid)
    for i, gi, shape in ((aid, ga, ad.shape), (bid, gb, bd.shape)):
        if gi is None:
            continue
        if gi is g and g.shape == shape:
            grads._accum_alias(i, g, oid)
        else:
            grads._accum(i, sum_to_shape(gi, shape))


# ----- add -------------------------------------------------------------------------------


# ----- BEGIN GENERATED add: python scripts/gen_shape_overloads.py (do not edit) -----
@overload
def add(a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def add(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[S, T], b: Tensor[Rank0, NoneTape]) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[S, Tape], b: Tensor[Rank0, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def add(a: Tensor[S, T], b: Tensor[Rank0, T]) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[Rank0, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[Rank0, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def add(a: Tensor[Rank0, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank1[B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def add(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank1[C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank2[B, C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank1[D], OwnedTape]) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank2[C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank3[B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def add(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[Literal[1], B], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def add(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[A, Literal[1]], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def add(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def add(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[Literal[1], B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank3[Literal[1], B, C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank3[A, Literal[1], C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, B, Literal[1]], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[Literal[1], B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[Literal[1], B, C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, Literal[1], C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, Literal[1], C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, Literal[1], D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, Literal[1], D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, C, Literal[1]], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(
    a: Tensor[Rank4[A, B, C, Literal[1]], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def add(a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def add(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def add(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def add(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def add(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def add(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def add(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def add(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
# ----- END GENERATED add -----
def add(a: Any, b: Any) -> Any:
    """``a + b`` elementwise, with numpy broadcasting; ``b`` may be a Python number.

    Gradients: ``d/da = 1``, ``d/db = 1`` (summed back over broadcast dims). With equal
    shapes both inputs' gradients are the output's gradient buffer itself (copy-on-write).
    """
    if b.__class__ is a.__class__:
        ad, bd = a.data, b.data
        if ad.shape == bd.shape and ad.dtype is bd.dtype:  # the common case, kept lean
            ta, tb = a.tape, b.tape
            tape = ta if tb is ta or tb is NONE_TAPE else (tb if ta is NONE_TAPE else None)
            if tape is not NONE_TAPE and (tape is None or tape.__class__ is not GradientTape or not _tp.direct):
                tape = op_tape(a, b)
            y = _np_add(ad, bd)
            out = _new(a.__class__)  # Tensor._from_op, inlined on this hot path
            out.data = y if y.__class__ is np.ndarray else np.asarray(y)  # 0-d: numpy gives a scalar
            out.device = a.device
            out.tape = tape
            out.id = oid = next_id()
            out._leaf = False
            if tape is not NONE_TAPE:
                tape._record((oid, _add_backward, a.id, b.id))
            return out
    elif isinstance(b, SCALARS):
        return record_scalar(a, a.data + weak_const(_scalar(b), a.data.dtype), 1.0)
    return record_binary("add", a, b, np.add, _add_rule)


def _add_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, int]) -> None:
    oid, _, aid, bid = entry
    grads._accum_alias(aid, g, oid)
    grads._accum_alias(bid, g, oid)


def _add_rule(grads: Gradients, g: Array, a: Array, b: Array, y: Array, aid: int, bid: int) -> tuple[Array, Array]:
    return g, g


def radd(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b + a`` for a Python number ``b`` (see :func:`add`)."""
    return add(a, b)


# ----- sub -------------------------------------------------------------------------------


# ----- BEGIN GENERATED sub: python scripts/gen_shape_overloads.py (do not edit) -----
@overload
def sub(a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def sub(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[S, T], b: Tensor[Rank0, NoneTape]) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[S, Tape], b: Tensor[Rank0, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def sub(a: Tensor[S, T], b: Tensor[Rank0, T]) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[Rank0, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[Rank0, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def sub(a: Tensor[Rank0, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank1[B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank1[C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank2[B, C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank1[D], OwnedTape]) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank2[C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank3[B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[Literal[1], B], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[A, Literal[1]], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[Literal[1], B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank3[Literal[1], B, C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank3[A, Literal[1], C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, B, Literal[1]], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[Literal[1], B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[Literal[1], B, C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, Literal[1], C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, Literal[1], C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, Literal[1], D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, Literal[1], D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, C, Literal[1]], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(
    a: Tensor[Rank4[A, B, C, Literal[1]], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def sub(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def sub(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def sub(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def sub(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def sub(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def sub(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
# ----- END GENERATED sub -----
def sub(a: Any, b: Any) -> Any:
    """``a - b`` elementwise, with numpy broadcasting; ``b`` may be a Python number.

    Gradients: ``d/da = 1``, ``d/db = -1`` (summed back over broadcast dims).
    """
    if isinstance(b, SCALARS):
        return record_scalar(a, a.data - weak_const(_scalar(b), a.data.dtype), 1.0)
    return record_binary("sub", a, b, np.subtract, _sub_rule)


def _sub_rule(grads: Gradients, g: Array, a: Array, b: Array, y: Array, aid: int, bid: int) -> tuple[Array, Array]:
    return g, np.negative(g)


def rsub(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b - a`` for a Python number ``b``. Gradient: ``d/da = -1``."""
    return record_scalar(a, weak_const(_scalar(b, "rsub"), a.data.dtype) - a.data, -1.0)  # type: ignore[no-any-return]


# ----- mul -------------------------------------------------------------------------------


# ----- BEGIN GENERATED mul: python scripts/gen_shape_overloads.py (do not edit) -----
@overload
def mul(a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def mul(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[S, T], b: Tensor[Rank0, NoneTape]) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[S, Tape], b: Tensor[Rank0, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def mul(a: Tensor[S, T], b: Tensor[Rank0, T]) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[Rank0, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[Rank0, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def mul(a: Tensor[Rank0, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank1[B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank1[C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank2[B, C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank1[D], OwnedTape]) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank2[C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank3[B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[Literal[1], B], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[A, Literal[1]], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[Literal[1], B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank3[Literal[1], B, C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank3[A, Literal[1], C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, B, Literal[1]], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[Literal[1], B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[Literal[1], B, C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, Literal[1], C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, Literal[1], C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, Literal[1], D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, Literal[1], D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, C, Literal[1]], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(
    a: Tensor[Rank4[A, B, C, Literal[1]], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def mul(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def mul(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def mul(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def mul(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def mul(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def mul(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
# ----- END GENERATED mul -----
def mul(a: Any, b: Any) -> Any:
    """``a * b`` elementwise, with numpy broadcasting; ``b`` may be a Python number.

    Gradients: ``d/da = b``, ``d/db = a``; where an input has the output's shape its
    gradient is accumulated with the fused ``addmul`` kernel (``grad += other * g``).
    """
    if b.__class__ is float:
        ad = a.data
        c = _CONST32.get(b) if ad.dtype is _F32 else None  # weak_const's lookup, inlined
        if c is None:
            c = weak_const(b, ad.dtype)
        return record_scalar(a, _np_mul(ad, c), b, c)
    if isinstance(b, SCALARS):
        s = _scalar(b)
        c = weak_const(s, a.data.dtype)
        return record_scalar(a, a.data * c, s, c)
    if b.__class__ is a.__class__:
        ad, bd = a.data, b.data
        if ad.shape == bd.shape and ad.dtype is bd.dtype:  # no broadcast: the lean path
            ta, tb = a.tape, b.tape
            tape = ta if tb is ta or tb is NONE_TAPE else (tb if ta is NONE_TAPE else None)
            if tape is not NONE_TAPE and (tape is None or tape.__class__ is not GradientTape or not _tp.direct):
                tape = op_tape(a, b)
            out = a._from_op(_np_mul(ad, bd), tape)
            if tape is not NONE_TAPE:
                tape._record((out.id, _mul_backward, a.id, b.id, ad, bd))
            return out
    return record_binary("mul", a, b, np.multiply, _mul_rule)


def _mul_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, int, Array, Array]) -> None:
    # same-shape mul: grad_a += b * g, grad_b += a * g, each one fused addmul pass
    _, _, aid, bid, ad, bd = entry
    grads._fused(aid, _k.addmul, _np_mul, bd, g)
    grads._fused(bid, _k.addmul, _np_mul, ad, g)


def _mul_rule(
    grads: Gradients, g: Array, a: Array, b: Array, y: Array, aid: int, bid: int
) -> tuple[Array | None, Array | None]:
    if a.shape == b.shape:  # no broadcast: fused grad += other * g
        grads._fused(aid, _k.addmul, np.multiply, b, g)
        grads._fused(bid, _k.addmul, np.multiply, a, g)
        return None, None
    return np.multiply(g, b), np.multiply(g, a)


def rmul(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b * a`` for a Python number ``b`` (see :func:`mul`)."""
    return mul(a, b)


# ----- div -------------------------------------------------------------------------------


# ----- BEGIN GENERATED div: python scripts/gen_shape_overloads.py (do not edit) -----
@overload
def div(a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def div(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[S, T], b: Tensor[Rank0, NoneTape]) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[S, Tape], b: Tensor[Rank0, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def div(a: Tensor[S, T], b: Tensor[Rank0, T]) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[Rank0, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[Rank0, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def div(a: Tensor[Rank0, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank1[B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def div(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank1[C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank2[B, C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank1[D], OwnedTape]) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank2[C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank3[B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def div(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[Literal[1], B], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def div(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[A, Literal[1]], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def div(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def div(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[Literal[1], B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank3[Literal[1], B, C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank3[A, Literal[1], C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, B, Literal[1]], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[Literal[1], B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[Literal[1], B, C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, Literal[1], C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, Literal[1], C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, Literal[1], D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, Literal[1], D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, C, Literal[1]], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(
    a: Tensor[Rank4[A, B, C, Literal[1]], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def div(a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def div(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def div(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def div(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def div(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def div(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def div(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def div(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
# ----- END GENERATED div -----
def div(a: Any, b: Any) -> Any:
    """``a / b`` elementwise (true division), with numpy broadcasting; ``b`` may be a number.

    Gradients: ``d/da = 1 / b``, ``d/db = -a / b**2 = -y / b``. Division by zero gives
    ``inf``/``nan`` as in numpy.
    """
    if isinstance(b, SCALARS):
        s = _scalar(b)
        inv = 1.0 / s if s else math.copysign(math.inf, s)  # d/da of a / 0 is inf, as numpy
        return record_scalar(a, a.data / weak_const(s, a.data.dtype), inv)
    return record_binary("div", a, b, np.divide, _div_rule)


def _div_rule(
    grads: Gradients, g: Array, a: Array, b: Array, y: Array, aid: int, bid: int
) -> tuple[Array | None, Array]:
    gb: Array = -(g * y) / b
    if a.shape == y.shape and b.shape == y.shape:  # fused grad_a += g / b
        grads._fused(aid, _k.adddiv, np.divide, g, b)
        return None, gb
    return np.divide(g, b), gb


def rdiv(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b / a`` for a Python number ``b``. Gradient: ``d/da = -b / a**2 = -y / a``."""
    ad = a.data
    y = _scalar(b, "rdiv") / ad
    tape = op_tape(a)
    out: Tensor[S, T] = a._from_op(y, tape)
    if tape is not NONE_TAPE:
        tape._record((out.id, _rdiv_backward, a.id, ad, y))
    return out


def _rdiv_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Array, Array]) -> None:
    _, _, aid, ad, y = entry
    grads._accum(aid, -(g * y) / ad)


# ----- maximum / minimum / pow -----------------------------------------------------------


def _record_with_constant(
    a: Tensor[Any, Any], data: Array, grad: Callable[[Array], Array], slope: Array | None = None
) -> Any:
    """Wrap ``data`` as the output of ``f(a, c)`` for a constant ``c`` (a Python number):
    only ``a`` gets a gradient, ``grad(g)`` (a new array of ``a``'s shape). ``slope``, the
    piecewise-constant derivative ``grad`` multiplies by, gives the second rule ``g * slope``."""
    tape = op_tape(a)
    out = a._from_op(data, tape)
    if tape is not NONE_TAPE:
        aid, oid = a.id, out.id

        def constant_operand_backward(grads: Gradients) -> None:
            g = grads._release(oid)
            if g is not None:
                grads._accum(aid, grad(g))

        if slope is not None:
            sl = slope

            def constant_operand_diff(gs: list[Any], rebuild: Any) -> list[tuple[int, Any]]:
                return [(aid, gs[0] * gs[0]._like(sl))]

            attach_diff(constant_operand_backward, [(oid, out.shape, out.dtype)], constant_operand_diff)
        tape.add_backward_op(constant_operand_backward)
    return out


def _tie_split(a: Array | float, b: Array | float, wins: Callable[[Any, Any], Any], dtype: np.dtype[Any]) -> Array:
    """``1`` where ``wins(a, b)``, ``0.5`` where ``a == b``, else ``0`` (also where either is NaN),
    in ``dtype`` and the broadcast shape: the share of the gradient ``maximum``/``minimum`` send to ``a``."""
    w: Array = np.asarray(wins(a, b)).astype(dtype)
    w[np.asarray(a == b)] = 0.5
    return w


# ----- BEGIN GENERATED maximum: python scripts/gen_shape_overloads.py (do not edit) -----
@overload
def maximum(a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def maximum(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[S, T], b: Tensor[Rank0, NoneTape]) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[S, Tape], b: Tensor[Rank0, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def maximum(a: Tensor[S, T], b: Tensor[Rank0, T]) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[Rank0, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[Rank0, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank0, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank1[B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank1[C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank2[B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank1[D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank2[C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank3[B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(
    a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(
    a: Tensor[Rank2[Literal[1], B], Tape], b: Tensor[Rank2[A, B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(
    a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[A, Literal[1]], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[A, B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[Literal[1], B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[Literal[1], B, C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, Literal[1], C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, B, Literal[1]], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[Literal[1], B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[Literal[1], B, C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, Literal[1], C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, Literal[1], C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, Literal[1], D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, Literal[1], D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, C, Literal[1]], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, Literal[1]], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def maximum(
    a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], NoneTape]
) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def maximum(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def maximum(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], T]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def maximum(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def maximum(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def maximum(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
# ----- END GENERATED maximum -----
def maximum(a: Any, b: Any) -> Any:
    """Elementwise maximum of ``a`` and ``b`` (numpy's ``np.maximum``: NaN propagates), with
    numpy broadcasting; ``b`` may be a Python number.

    Gradients (dfdx's ``maximum``, PyTorch's ``torch.maximum``): the output's gradient goes to
    the larger operand; on a tie (``a == b``) it is split evenly, ``0.5`` to each. Where either
    operand is NaN neither gets a gradient. Summed back over broadcast dims.

    Raises:
        ShapeError: the shapes do not broadcast (names both shapes).
        DTypeError: float32 meets float64.
        TypeError: ``b`` is neither a tensor nor a number.
    """
    if isinstance(b, SCALARS):
        s, x = _scalar(b, "maximum"), a.data
        split = _tie_split(x, s, np.greater, x.dtype)
        return _record_with_constant(a, np.maximum(x, s), lambda g: g * split, split)
    return record_binary("maximum", a, b, np.maximum, _maximum_rule)


def _maximum_rule(grads: Gradients, g: Array, a: Array, b: Array, y: Array, aid: int, bid: int) -> tuple[Array, Array]:
    return g * _tie_split(a, b, np.greater, g.dtype), g * _tie_split(b, a, np.greater, g.dtype)


# ----- BEGIN GENERATED minimum: python scripts/gen_shape_overloads.py (do not edit) -----
@overload
def minimum(a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def minimum(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[S, T], b: Tensor[Rank0, NoneTape]) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[S, Tape], b: Tensor[Rank0, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def minimum(a: Tensor[S, T], b: Tensor[Rank0, T]) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[Rank0, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[Rank0, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank0, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank1[B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank1[C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank2[B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank1[D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank2[C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank3[B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(
    a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(
    a: Tensor[Rank2[Literal[1], B], Tape], b: Tensor[Rank2[A, B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(
    a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[A, Literal[1]], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[A, B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[Literal[1], B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[Literal[1], B, C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, Literal[1], C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, B, Literal[1]], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[Literal[1], B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[Literal[1], B, C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, Literal[1], C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, Literal[1], C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, Literal[1], D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, Literal[1], D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, C, Literal[1]], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, Literal[1]], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], T]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def minimum(
    a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], NoneTape]
) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def minimum(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def minimum(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], T]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def minimum(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def minimum(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def minimum(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
# ----- END GENERATED minimum -----
def minimum(a: Any, b: Any) -> Any:
    """Elementwise minimum of ``a`` and ``b`` (numpy's ``np.minimum``: NaN propagates), with
    numpy broadcasting; ``b`` may be a Python number.

    Gradients: the output's gradient goes to the smaller operand, split evenly (``0.5`` each)
    on a tie, none where either is NaN (as :func:`maximum`). Summed back over broadcast dims.

    Raises:
        ShapeError, DTypeError, TypeError: as :func:`maximum`.
    """
    if isinstance(b, SCALARS):
        s, x = _scalar(b, "minimum"), a.data
        split = _tie_split(x, s, np.less, x.dtype)
        return _record_with_constant(a, np.minimum(x, s), lambda g: g * split, split)
    return record_binary("minimum", a, b, np.minimum, _minimum_rule)


def _minimum_rule(grads: Gradients, g: Array, a: Array, b: Array, y: Array, aid: int, bid: int) -> tuple[Array, Array]:
    return g * _tie_split(a, b, np.less, g.dtype), g * _tie_split(b, a, np.less, g.dtype)


# ----- BEGIN GENERATED pow: python scripts/gen_shape_overloads.py (do not edit) -----
@overload
def pow(a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def pow(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[S, T], b: Tensor[Rank0, NoneTape]) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[S, Tape], b: Tensor[Rank0, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def pow(a: Tensor[S, T], b: Tensor[Rank0, T]) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[Rank0, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[Rank0, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def pow(a: Tensor[Rank0, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank1[B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank2[A, B], T], b: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank1[C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank1[C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank2[B, C], OwnedTape]) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank1[D], OwnedTape]) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank1[D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank2[C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank2[C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], NoneTape]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank3[B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank3[B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[Literal[1], B], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank2[Literal[1], B], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[A, Literal[1]], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[A, Literal[1]], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[A, B], OwnedTape]) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[Literal[1], B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[Literal[1], B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank3[Literal[1], B, C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[Literal[1], B, C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank3[A, Literal[1], C], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, Literal[1], C], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank3[A, B, C], Tape], b: Tensor[Rank3[A, B, Literal[1]], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, B, C], T], b: Tensor[Rank3[A, B, Literal[1]], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], NoneTape]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, B, C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, B, C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[Literal[1], B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[Literal[1], B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[Literal[1], B, C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[Literal[1], B, C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, Literal[1], C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, Literal[1], C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, Literal[1], C, D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, Literal[1], C, D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, Literal[1], D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, Literal[1], D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, Literal[1], D], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, Literal[1], D], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, D], Tape], b: Tensor[Rank4[A, B, C, Literal[1]], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, D], T], b: Tensor[Rank4[A, B, C, Literal[1]], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], NoneTape]
) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(
    a: Tensor[Rank4[A, B, C, Literal[1]], Tape], b: Tensor[Rank4[A, B, C, D], OwnedTape]
) -> Tensor[Rank4[A, B, C, D], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank4[A, B, C, Literal[1]], T], b: Tensor[Rank4[A, B, C, D], T]) -> Tensor[Rank4[A, B, C, D], T]: ...
@overload
def pow(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], NoneTape]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(
    a: Tensor[Rank2[A, Literal[1]], Tape], b: Tensor[Rank2[Literal[1], B], OwnedTape]
) -> Tensor[Rank2[A, B], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank2[A, Literal[1]], T], b: Tensor[Rank2[Literal[1], B], T]) -> Tensor[Rank2[A, B], T]: ...
@overload
def pow(
    a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], NoneTape]
) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(
    a: Tensor[Rank3[A, B, Literal[1]], Tape], b: Tensor[Rank3[A, Literal[1], C], OwnedTape]
) -> Tensor[Rank3[A, B, C], OwnedTape]: ...
@overload
def pow(a: Tensor[Rank3[A, B, Literal[1]], T], b: Tensor[Rank3[A, Literal[1], C], T]) -> Tensor[Rank3[A, B, C], T]: ...
@overload
def pow(a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def pow(a: Tensor[S, Tape], b: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def pow(a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
# ----- END GENERATED pow -----
def pow(a: Any, b: Any) -> Any:
    """``a ** b`` elementwise (numpy's ``np.power``), with numpy broadcasting; the exponent ``b``
    is a tensor or a real number (``torch.pow(input, exponent)``). ``gradtape.ops.pow``,
    ``Tensor.pow`` and ``t ** b`` are this function.

    A number goes to :func:`gradtape.ops.unary.pow`, the fused scalar-exponent op (its
    conventions: ``b == 2`` is ``square``, ``b == 0`` has gradient exactly 0); a tensor to the
    broadcasting op below, differentiable in both operands. ``2.0 ** t`` is :func:`rpow`.

    Gradients: ``d/da = b * a**(b - 1)``, ``d/db = a**b * log(a)`` (summed back over broadcast
    dims), with PyTorch's conventions at the edges:

    - ``b == 0``: ``d/da = 0`` (``a**0`` is constant, even at ``a == 0``);
    - ``a == 0``: ``d/db = 0`` where ``b >= 0``; ``d/da`` is ``b * 0**(b-1)``: ``0`` for
      ``b > 1``, ``1`` for ``b == 1``, ``inf`` for ``0 < b < 1``;
    - ``a < 0``: the forward is ``nan`` for a non-integer ``b`` (numpy warns), and ``d/db``
      is ``nan`` (``log`` of a negative number) even for an integer ``b``, where ``d/da`` is
      still the finite ``b * a**(b-1)``.

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: ``a`` is an integer or bool tensor (``pow`` is a float op), or a tensor
            ``b`` has another dtype than ``a``.
        TypeError: ``b`` is neither a tensor nor a real number (a complex, a list, an array).
    """
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64:
        float_data("pow", a, "a")  # pow is a float op: an integer or bool tensor raises
    cls = b.__class__
    if cls is float or cls is int or (cls is not a.__class__ and not (hasattr(b, "tape") and hasattr(b, "data"))):
        # a number (t ** 2, np.float32, a bool) or junk: the scalar op, which validates it
        return (_unary_pow or _load_unary_pow())(a, b)
    return record_binary("pow", a, b, np.power, _pow_rule)


def _pow_rule(grads: Gradients, g: Array, a: Array, b: Array, y: Array, aid: int, bid: int) -> tuple[Array, Array]:
    with np.errstate(divide="ignore", invalid="ignore"):
        ga = g * np.where(b == 0, 0, b * np.power(a, b - 1))
        gb = g * np.where((a == 0) & (b >= 0), 0, y * np.log(a))
    return ga, gb


_unary_pow: Callable[..., Any] | None = None
""":func:`gradtape.ops.unary.pow`, set at the first scalar ``pow`` (that module imports this one)."""


def _load_unary_pow() -> Callable[..., Any]:
    global _unary_pow
    from gradtape.ops.unary import pow as unary_pow

    _unary_pow = unary_pow
    return unary_pow


def rpow(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b ** a`` for a real number ``b`` and a tensor exponent ``a`` (``2.0 ** t``,
    ``Tensor.__rpow__``; PyTorch's ``torch.pow(self: Number, exponent: Tensor)``), elementwise
    with numpy's ``power``: ``y = b ** a`` in ``a``'s dtype.

    Gradient: ``d/da = b**a * log(b) = y * log(b)`` (``log(2) * 2**a`` for ``b = 2``), from the
    saved output; its second rule is the same product with the recorded output, so
    ``2.0 ** t`` differentiates to any order. PyTorch's edges: for ``b == 0`` the gradient is
    ``0`` where ``a >= 0``; for ``b < 0`` the forward is ``nan`` for a non-integer ``a`` and
    the gradient ``nan`` (``log`` of a negative number).

    Raises:
        TypeError: ``b`` is not a real number (a complex, an array).
        DTypeError: ``a`` is an integer or bool tensor.
    """
    if a.data.dtype.kind != "f":
        float_data("rpow", a, "exponent")
    base = _scalar(b, "rpow")
    x = a.data
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        y = np.asarray(np.power(weak_const(base, x.dtype), x))
    logb = math.log(base) if base > 0 else (-math.inf if base == 0 else math.nan)
    return record_entry(a, y, _rpow_backward, y, logb)


def _rpow_slope(y: Array, logb: float) -> Array:
    """``d(b**a)/da = y * log(b)`` from the saved output ``y``; for ``b == 0``, ``0`` where
    ``a >= 0`` (PyTorch's), which is where ``y = 0**a`` is 0 or 1."""
    with np.errstate(invalid="ignore"):
        slope: Array = y * y.dtype.type(logb)
        if logb == -math.inf:
            slope = np.where(y <= 1, y.dtype.type(0), slope)
    return slope


def _rpow_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Array, float]) -> None:
    """rpow's first rule: ``grad_a += g * y * log(b)`` in one fused pass."""
    _, _, i, y, logb = entry
    grads._fused(i, _k.addmul, np.multiply, _rpow_slope(y, logb), g)


def _d_rpow(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    """rpow's second rule: ``g * y * log(b)`` with ``y`` the recorded output (whose own
    gradient is rpow's rule again), so ``b ** a`` differentiates to any order."""
    oid, _, i, y, logb = entry
    if logb == -math.inf:  # b == 0: the slope is piecewise constant
        return [(i, g * g._like(_rpow_slope(y, logb)))]
    return [(i, g * rebuild(oid, y) * logb)]


# ----- differentiable rules (higher-order derivatives; see gradtape.tape.register_diff) ------


_BINARY_DIFF: dict[Any, Callable[[Any, Any, Any, Any], tuple[Any, Any]]] = {
    _add_rule: lambda g, a, b, y: (g, g),
    _sub_rule: lambda g, a, b, y: (g, -g),
    _mul_rule: lambda g, a, b, y: (g * b(), g * a()),
    _div_rule: lambda g, a, b, y: (g / b(), -(g * y()) / b()),
    # the tie-split masks of maximum / minimum are piecewise constant
    _maximum_rule: lambda g, a, b, y: (
        g * g._like(_tie_split(a().data, b().data, np.greater, g.dtype)),
        g * g._like(_tie_split(b().data, a().data, np.greater, g.dtype)),
    ),
    _minimum_rule: lambda g, a, b, y: (
        g * g._like(_tie_split(a().data, b().data, np.less, g.dtype)),
        g * g._like(_tie_split(b().data, a().data, np.less, g.dtype)),
    ),
    _pow_rule: lambda g, a, b, y: (g * b() * pow(a(), b() - 1.0), g * y() * a().log()),
}


def _d_binary(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    oid, _, rule, ad, bd, y, aid, bid = entry
    d = _BINARY_DIFF.get(rule)
    if d is None:
        from gradtape.errors import TapeError

        raise TapeError(
            f"the backward of {rule.__name__.strip('_').removesuffix('_rule')!r} has no differentiable form yet, "
            "so gradients of gradients cannot flow through it"
        )
    ga, gb = d(g, lambda: rebuild(aid, ad), lambda: rebuild(bid, bd), lambda: rebuild(oid, y))
    return [(aid, sum_to(ga, ad.shape)), (bid, sum_to(gb, bd.shape))]


def _d_identity(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    return [(entry[2], g)]


def _d_scale(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    return [(entry[2], g * entry[3])]


def _d_add(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    return [(entry[2], g), (entry[3], g)]


def _d_mul(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    _, _, aid, bid, ad, bd = entry
    return [(aid, g * rebuild(bid, bd)), (bid, g * rebuild(aid, ad))]


register_diff(_identity_backward, _d_identity)
register_diff(_scale_backward, _d_scale)
register_diff(_add_backward, _d_add)
register_diff(_mul_backward, _d_mul)
register_diff(_binary_backward, _d_binary)


def _d_rdiv(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    oid, _, aid, ad, y = entry
    return [(aid, -(g * rebuild(oid, y)) / rebuild(aid, ad))]


register_diff(_rdiv_backward, _d_rdiv)
register_diff(_rpow_backward, _d_rpow)
