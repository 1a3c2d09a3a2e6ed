"""Elementwise binary ops: add, sub, mul, div, maximum, minimum, pow, with numpy broadcasting
and scalars.

Each op's tensor-tensor path is declared once with :func:`gradtape.ops.declare.binary`: its
numpy forward and its two partial derivatives, written against an array namespace so the one
formula is the first rule on arrays and the second rule on tensors; each input's gradient is
summed back over the dims broadcasting added (:func:`~gradtape.shapes.sum_to_shape`). The hot
paths stay hand-written beside it: same-shape ``add``/``mul`` (one entry, fused kernels) and a
number operand (:func:`record_scalar`, ``grad += alpha * g``).

Typing: both operands have the same shape type ``S``, or a ``Rank2[A, B]`` matrix meets a
``Rank1[B]`` row (a bias); any other numpy broadcast works at run time with an
untyped (``Any``) shape. The output owns a tape if either input does.

Runtime errors: :class:`~gradtape.errors.ShapeError` when the shapes do not broadcast,
:class:`~gradtape.errors.DTypeError` when float32 meets float64, ``TypeError`` for an
operand that is neither a tensor nor a number.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import A, B, S, T, typed_as
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import DivisionByZeroError, DTypeError, TapeError
from gradtape.ops._signatures import binary as _sig
from gradtape.ops._util import (
    SCALARS,
    cast_untraced,
    float_data,
    promote,
    record_entry,
    record_zero_gradient,
    refill,
    refuse_non_float,
    replayable,
    tensor_operand,
    vector_pair,
)
from gradtape.ops.declare import NUMPY, binary
from gradtape.shapes import broadcast_shapes
from gradtape.tape import (
    NONE_TAPE,
    GradientTape,
    next_id,
    op_tape,
    record,
    register_diff,
)

_new = object.__new__
# ufuncs called through module globals on the hot paths: ``np.add`` is a global and an
# attribute lookup per call, and ``a + b`` goes through ndarray's operator dispatch first
_np_add = np.add
_np_mul = np.multiply

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.shapes import Rank1, Rank2
    from gradtape.tape import NoneTape, OwnedTape, Tape
    from gradtape.tensor import Tensor

__all__ = [
    "add",
    "atan2",
    "div",
    "floor_divide",
    "fmod",
    "lerp",
    "maximum",
    "minimum",
    "mul",
    "outer",
    "pow",
    "radd",
    "rdiv",
    "record_scalar",
    "remainder",
    "rfloor_divide",
    "rmul",
    "rpow",
    "rremainder",
    "rsub",
    "sub",
]

Array = np.ndarray[Any, Any]


def record_scalar(
    a: Tensor[Any, Any], data: Array, alpha: float, alpha_c: Any = None, replay: tuple[Any, ...] | None = None
) -> Any:
    """Wrap ``data`` as the output of a linear op ``f(a)`` with ``df/da = alpha``.

    The backward closure does ``grad_a += alpha * grad_out`` (storing ``grad_out`` itself,
    copy-on-write, when ``alpha == 1``). ``alpha_c`` is ``alpha`` as a 0-d array of ``a``'s
    dtype when the caller has one (see :func:`weak_const`); backward multiplies by it.
    ``replay``: ``(op, ufunc, left, right)`` with ``data = ufunc(left, right)`` (one of them
    ``a``'s data, the other a :func:`weak_const`), for :func:`gradtape.capture`'s replays; an op
    that gives none is not replayable.
    """
    # record_entry, inlined: ``x * 0.5`` and friends are the commonest ops on small arrays
    # (the call and its argument tuple measured +1.4% on the scalar chain)
    tape = a.tape
    if tape is not NONE_TAPE and (tape.__class__ is not GradientTape or not _tp.direct):
        tape = op_tape(a)
    out = _new(a.__class__)
    out.data = data if data.__class__ is np.ndarray else _as_array(data)
    out.device = a.device
    out.tape = tape
    out.id = oid = next_id()
    out._leaf = False
    if tape is not NONE_TAPE:
        if alpha == 1.0:
            tape._record((oid, _identity_backward, a.id))
        else:
            if alpha_c is None:
                alpha_c = weak_const(alpha, data)
            tape._record((oid, _scale_backward, a.id, alpha, alpha_c))
    if _tp._recorder is not None and replay is not None:
        op, ufunc, left, right = replay
        for c in (left, right, alpha_c):  # the Python number's 0-d arrays: constants of the plan
            if c.__class__ is np.ndarray and c is not a.data:
                _tp._recorder.constant(c)
        replayable(op, out.data, _ufunc_into, (ufunc, left, right), (a,), tape, True)
    return out


def _ufunc_into(out: Array, ufunc: Any, left: Any, right: Any) -> None:
    """``ufunc(left, right)`` (``ufunc(left)`` where ``right`` is ``None``) into ``out`` (a
    replay of :func:`gradtape.capture`)."""
    if right is None:
        ufunc(left, out=out)
    else:
        ufunc(left, right, out=out)


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


def weak_const(b: float, x: Array) -> Any:
    """``b`` as a read-only 0-d array of ``x``'s dtype (float32/float64; ``b`` itself
    otherwise), cached per value, to pass to a ufunc with ``x`` in place of the Python float.
    For a GPU array ``x`` (CuPy's, which takes numpy scalars but no numpy arrays) it is the
    numpy scalar of that dtype.

    Same result: numpy casts a Python float operand to the array's dtype ("weak" scalar,
    NEP 50), and a 0-d array of that dtype is that cast value. Faster: numpy resolves a
    Python float operand through its weak-scalar promotion on every call, about 270 ns of
    a 500 ns multiply on 64 float32 measured here; a 0-d array costs what an array does.
    Zeros (``0.0 == -0.0`` as keys) and NaNs are never cached; the cache holds at most
    256 values per dtype and is emptied when full, so a changing scalar (a schedule's
    learning rate) costs one small array per call.
    """
    dtype = x.dtype
    if x.__class__ is not np.ndarray and hasattr(x, "__cuda_array_interface__"):
        return dtype.type(b) if dtype is _F32 or dtype is _F64 else b
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


_I64 = np.dtype(np.int64)


def _number(b: object, op: str) -> bool | int | float:
    """``b`` as a Python bool, int or float (numpy scalars too), keeping its kind: PyTorch's
    promotion for an integer tensor depends on it.

    Raises:
        TypeError: ``b`` is not a real number (:func:`_scalar`).
    """
    if isinstance(b, (bool, np.bool_)):
        return bool(b)
    if isinstance(b, (int, np.integer)):
        return int(b)
    return _scalar(b, op)


def _int_scalar(a: Tensor[Any, Any], b: object, ufunc: Any, op: str, reverse: bool = False) -> Any:
    """``ufunc(a, b)`` (``ufunc(b, a)`` if ``reverse``) for an integer or bool tensor ``a`` and a
    number ``b``, with PyTorch's type promotion: an integer tensor with an int keeps its dtype
    (``idx + 1`` is int64, a uint8 wraps around as PyTorch's does), a bool tensor with an int
    becomes int64, any of them with a float becomes float32 (PyTorch's default float dtype).
    Untraced, as :func:`_int_true_div`: integers carry no gradient.

    Raises:
        DTypeError: ``a`` is a bool tensor and ``op`` subtracts (PyTorch refuses it), or ``a``
            is neither integer, bool nor float (complex).
        DivisionByZeroError: an integer ``remainder``/``fmod``/``floor_divide`` by zero.
        TypeError: ``b`` is not a real number.
    """
    x = a.data
    dt = x.dtype
    if dt.kind not in "iub":
        raise DTypeError(f"{op}: a has dtype {dt} (shape {x.shape}); {op} takes float, integer or bool tensors")
    if dt.kind == "b" and op in ("sub", "rsub"):
        raise DTypeError(
            f"{op}: subtraction with a bool tensor (shape {x.shape}) is not supported, as in PyTorch "
            "(use ~a or a.logical_xor(b), or convert with a.long())"
        )
    s = _number(b, op)
    out_dt = _F32 if s.__class__ is float else (_I64 if dt.kind == "b" and s.__class__ is not bool else dt)
    c = np.float32(s) if out_dt is _F32 else np.asarray(s).astype(out_dt)[()]  # astype wraps, as PyTorch; a scalar
    out = a._from_op(_as_array(_int_scalar_array(x, out_dt, c, ufunc, op, reverse)), NONE_TAPE)
    if _tp._recorder is not None:
        replayable(op, out.data, refill, (_int_scalar_array, x, out_dt, c, ufunc, op, reverse), (a,), NONE_TAPE)
    return out


def _int_scalar_array(x: Array, out_dt: np.dtype[Any], c: Any, ufunc: Any, op: str, reverse: bool) -> Any:
    """:func:`_int_scalar`'s arithmetic on checked arguments: ``x`` cast to ``out_dt``, then
    ``ufunc(x, c)`` (``ufunc(c, x)`` if ``reverse``).

    Raises:
        DivisionByZeroError: an integer ``remainder``/``fmod``/``floor_divide`` by zero.
    """
    x = x if out_dt is x.dtype else x.astype(out_dt)
    if out_dt.kind != "f" and op in _INT_DIVIDING and not (np.all(x) if reverse else c):
        raise DivisionByZeroError(f"{op}: integer division by zero ({out_dt} {x.shape} and a number)")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return ufunc(c, x) if reverse else ufunc(x, c)


_INT_DIVIDING = frozenset({"remainder", "fmod", "floor_divide", "div"})


# ----- add -------------------------------------------------------------------------------


@typed_as(_sig.add)
def add(a: Any, b: Any) -> Any:
    """``a + b`` elementwise, with numpy broadcasting; ``b`` may be a Python number.

    Gradients: ``d/da = 1``, ``d/db = 1`` (summed back over broadcast dims). With equal
    shapes both inputs' gradients are the output's gradient buffer itself (copy-on-write).
    """
    if b.__class__ is a.__class__:
        ad, bd = a.data, b.data
        if ad.shape == bd.shape and ad.dtype is bd.dtype and a.device is b.device:  # the common case, lean
            ta, tb = a.tape, b.tape
            tape = ta if tb is ta or tb is NONE_TAPE else (tb if ta is NONE_TAPE else None)
            if tape is not NONE_TAPE and (tape is None or tape.__class__ is not GradientTape or not _tp.direct):
                tape = op_tape(a, b)
            y = _np_add(ad, bd)
            out = _new(a.__class__)  # Tensor._from_op, inlined on this hot path
            out.data = y if y.__class__ is np.ndarray else _as_array(y)  # 0-d: numpy gives a scalar
            out.device = a.device
            out.tape = tape
            out.id = oid = next_id()
            out._leaf = False
            if tape is not NONE_TAPE:
                tape._record((oid, _add_backward, a.id, b.id))
            if _tp._recorder is not None:
                replayable("add", out.data, _ufunc_into, (np.add, ad, bd), (a, b), tape, True)
            return out
    elif isinstance(b, SCALARS):
        dt = a.data.dtype
        if dt is not _F32 and dt is not _F64 and dt.kind != "f":  # (an unpickled float dtype goes on)
            return _int_scalar(a, b, np.add, "add")
        c = weak_const(_scalar(b), a.data)
        return record_scalar(a, a.data + c, 1.0, replay=("add", np.add, a.data, c))
    return _add(a, b)


def _add_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, int]) -> None:
    oid, _, aid, bid = entry
    grads._accum_alias(aid, g, oid)
    grads._accum_alias(bid, g, oid)


@binary(vjp=lambda xp, g, a, b, y: (g, g), name="add")
def _add(a: Array, b: Array) -> Array:
    """``a + b`` with broadcasting (:func:`add`'s path for shapes that differ)."""
    return np.add(a, b)


def radd(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b + a`` for a Python number ``b`` (see :func:`add`)."""
    return add(a, b)


# ----- sub -------------------------------------------------------------------------------


@typed_as(_sig.sub)
def sub(a: Any, b: Any) -> Any:
    """``a - b`` elementwise, with numpy broadcasting; ``b`` may be a Python number.

    Gradients: ``d/da = 1``, ``d/db = -1`` (summed back over broadcast dims).
    """
    if isinstance(b, SCALARS):
        dt = a.data.dtype
        if dt is not _F32 and dt is not _F64 and dt.kind != "f":
            return _int_scalar(a, b, np.subtract, "sub")
        c = weak_const(_scalar(b), a.data)
        return record_scalar(a, a.data - c, 1.0, replay=("sub", np.subtract, a.data, c))
    return _sub(a, b)


@binary(vjp=lambda xp, g, a, b, y: (g, -g), name="sub")
def _sub(a: Array, b: Array) -> Array:
    """``a - b`` with broadcasting (:func:`sub`'s tensor path)."""
    return np.subtract(a, b)


def rsub(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b - a`` for a Python number ``b``. Gradient: ``d/da = -1``."""
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64 and dt.kind != "f":
        return _int_scalar(a, b, np.subtract, "rsub", reverse=True)  # type: ignore[no-any-return]
    c = weak_const(_scalar(b, "rsub"), a.data)
    return record_scalar(a, c - a.data, -1.0, replay=("rsub", np.subtract, c, a.data))  # type: ignore[no-any-return]


# ----- mul -------------------------------------------------------------------------------


@typed_as(_sig.mul)
def mul(a: Any, b: Any) -> Any:
    """``a * b`` elementwise, with numpy broadcasting; ``b`` may be a Python number.

    Gradients: ``d/da = b``, ``d/db = a``; where an input has the output's shape its
    gradient is accumulated with the fused ``addmul`` kernel (``grad += other * g``).
    """
    if b.__class__ is float:
        ad = a.data
        c = _CONST32.get(b) if ad.dtype is _F32 else None  # weak_const's lookup, inlined
        if c is None:
            dt = ad.dtype
            if dt is not _F32 and dt is not _F64 and dt.kind != "f":
                return _int_scalar(a, b, np.multiply, "mul")
            c = weak_const(b, a.data)
        return record_scalar(a, _np_mul(ad, c), b, c, ("mul", _np_mul, ad, c))
    if isinstance(b, SCALARS):
        dt = a.data.dtype
        if dt is not _F32 and dt is not _F64 and dt.kind != "f":
            return _int_scalar(a, b, np.multiply, "mul")
        s = _scalar(b)
        c = weak_const(s, a.data)
        return record_scalar(a, a.data * c, s, c, ("mul", np.multiply, a.data, c))
    if b.__class__ is a.__class__:
        ad, bd = a.data, b.data
        if ad.shape == bd.shape and ad.dtype is bd.dtype and a.device is b.device:  # no broadcast: lean
            ta, tb = a.tape, b.tape
            tape = ta if tb is ta or tb is NONE_TAPE else (tb if ta is NONE_TAPE else None)
            if tape is not NONE_TAPE and (tape is None or tape.__class__ is not GradientTape or not _tp.direct):
                tape = op_tape(a, b)
            out = a._from_op(_np_mul(ad, bd), tape)
            if tape is not NONE_TAPE:
                tape._record((out.id, _mul_backward, a.id, b.id, ad, bd))
            if _tp._recorder is not None:
                replayable("mul", out.data, _ufunc_into, (_np_mul, ad, bd), (a, b), tape, True)
            return out
    return _mul(a, b)


def _mul_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, int, Array, Array]) -> None:
    # same-shape mul: grad_a += b * g, grad_b += a * g, each one fused addmul pass
    _, _, aid, bid, ad, bd = entry
    grads._fused(aid, _k.addmul, _np_mul, bd, g)
    grads._fused(bid, _k.addmul, _np_mul, ad, g)


@binary(vjp=lambda xp, g, a, b, y: (g * b, g * a), name="mul")
def _mul(a: Array, b: Array) -> Array:
    """``a * b`` with broadcasting (:func:`mul`'s path for shapes that differ)."""
    return np.multiply(a, b)


def rmul(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b * a`` for a Python number ``b`` (see :func:`mul`)."""
    return mul(a, b)


# ----- div -------------------------------------------------------------------------------


@typed_as(_sig.div)
def div(a: Any, b: Any, *, rounding_mode: str | None = None) -> Any:
    """``a / b`` elementwise (true division), with numpy broadcasting; ``b`` may be a number.

    Gradients: ``d/da = 1 / b``, ``d/db = -a / b**2 = -y / b``. Division by zero gives
    ``inf``/``nan`` as in numpy.

    Dtypes (PyTorch's ``torch.div``): integer and bool operands, tensors or numbers, divide in
    float32 (PyTorch's default float dtype); an integer tensor meeting a float tensor takes the
    float's dtype; float32 meeting float64 raises ``DTypeError``.

    ``rounding_mode`` (PyTorch's): ``"trunc"`` rounds the quotient toward zero (C's integer
    division), ``"floor"`` toward minus infinity (Python's ``//``, :func:`floor_divide`).
    Integer operands then stay integers (exact, also beyond 2**53) and a zero divisor raises
    ``DivisionByZeroError``; on floats the quotient is ``trunc(a / b)`` or numpy's
    ``floor_divide(a, b)`` (``inf`` divided is ``nan`` in floor mode, as PyTorch). Its
    gradient is exactly ``0`` for both operands (PyTorch's), not missing.

    Raises:
        ValueError: ``rounding_mode`` is neither ``None``, ``"trunc"`` nor ``"floor"``.
    """
    if rounding_mode is not None:
        return _rounded_div(a, b, rounding_mode)
    if isinstance(b, SCALARS):
        dt = a.data.dtype
        if dt is not _F32 and dt is not _F64 and dt.kind != "f":  # (an unpickled float dtype goes on)
            return _int_true_div(a, b, reverse=False)
        s = _scalar(b)
        inv = 1.0 / s if s else math.copysign(math.inf, s)  # d/da of a / 0 is inf, as numpy
        c = weak_const(s, a.data)
        return record_scalar(a, a.data / c, inv, replay=("div", np.divide, a.data, c))
    if b.__class__ is a.__class__ and a.data.dtype.kind in "iub" and b.data.dtype.kind in "iub":
        # two integer or bool tensors: PyTorch's true division, in float32 (its default dtype)
        return _div(cast_untraced(a, _F32), cast_untraced(b, _F32))
    return _div(a, b)


def _int_true_div(a: Tensor[Any, Any], b: object, reverse: bool) -> Any:
    """``a / b`` (``b / a`` if ``reverse``) for an integer or bool tensor ``a`` and a number
    ``b``: PyTorch's true division, which promotes integers to its default float dtype, float32
    (``(pred == y).sum() / len(y)``, the accuracy idiom), untraced (integers carry no gradient).

    Raises:
        DTypeError: ``a`` is not an integer or bool tensor (complex: :func:`refuse_non_float`).
        TypeError: ``b`` is not a number (:func:`_scalar`).
    """
    if a.data.dtype.kind not in "iub":
        refuse_non_float(a, "div")
    s = np.float32(_scalar(b, "div"))
    out = a._from_op(_int_true_div_array(a.data, s, reverse), NONE_TAPE)
    if _tp._recorder is not None:
        replayable("div", out.data, refill, (_int_true_div_array, a.data, s, reverse), (a,), NONE_TAPE)
    return out


def _int_true_div_array(x: Array, s: Any, reverse: bool) -> Array:
    """:func:`_int_true_div`'s arithmetic: ``x`` in float32 divided by ``s`` (``s / x`` if
    ``reverse``)."""
    xf = _as_array(x, dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = s / xf if reverse else xf / s
    return _as_array(y, dtype=np.float32)


@binary(vjp=lambda xp, g, a, b, y: (g / b, -(g * y) / b), name="div")
def _div(a: Array, b: Array) -> Array:
    """``a / b`` with broadcasting (:func:`div`'s tensor path)."""
    return np.divide(a, b)


def rdiv(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b / a`` for a Python number ``b``. Gradient: ``d/da = -b / a**2 = -y / a``."""
    ad = a.data
    if ad.dtype.kind != "f":
        return _int_true_div(a, b, reverse=True)  # type: ignore[no-any-return]
    s = _scalar(b, "rdiv")
    y = _rdiv_values(s, ad)
    tape = op_tape(a)
    out: Tensor[S, T] = a._from_op(y, tape)
    if _tp._recorder is not None:  # the backward reads a's array and the output: a replay rewrites both
        replayable("rdiv", out.data, refill, (_rdiv_values, s, ad), (a,), tape, train=True)
    if tape is not NONE_TAPE:
        tape._record((out.id, _rdiv_backward, a.id, ad, y))
    return out


def _rdiv_values(s: Any, ad: Array) -> Array:
    """``s / ad`` for a number ``s`` (:func:`rdiv`'s forward)."""
    y: Array = s / ad
    return y


def _rdiv_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Array, Array]) -> None:
    _, _, aid, ad, y = entry
    grads._accum(aid, -(g * y) / ad)


# ----- maximum / minimum / pow -----------------------------------------------------------


def _record_with_constant(a: Tensor[Any, Any], data: Array, slope: Array) -> Any:
    """Wrap ``data`` as the output of ``f(a, c)`` for a constant ``c`` (a Python number): only
    ``a`` gets a gradient, ``g * slope`` with ``slope`` the piecewise-constant derivative (an
    array of ``a``'s shape), in both rules."""
    tape = op_tape(a)
    out = a._from_op(data, tape)
    if tape is not NONE_TAPE:
        aid = a.id

        def constant_operand_backward(grads: Gradients, g: Array) -> None:
            grads._accum(aid, g * slope)

        def constant_operand_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            return [(aid, g * g._like(slope))]

        record(tape, out, constant_operand_backward, constant_operand_diff)
    return out


@typed_as(_sig.maximum)
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
        split = _as_array(_tie_mask(NUMPY, x, s, operator.gt), x.dtype)
        return _record_with_constant(a, np.maximum(x, s), split)
    return _maximum(a, b)


def _tie_mask(xp: Any, a: Any, b: Any, wins: Callable[[Any, Any], Any]) -> Any:
    """``maximum``'s / ``minimum``'s share of the gradient for ``a``: ``1`` where ``wins(a, b)``,
    ``0.5`` on a tie, ``0`` otherwise (also where either is NaN); piecewise constant."""
    return xp.where(wins(a, b), 1.0, xp.where(a == b, 0.5, 0.0))


def _tie_vjp(xp: Any, g: Any, a: Any, b: Any, wins: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    return g * _tie_mask(xp, a, b, wins), g * _tie_mask(xp, b, a, wins)


@binary(vjp=lambda xp, g, a, b, y: _tie_vjp(xp, g, a, b, operator.gt), name="maximum")
def _maximum(a: Array, b: Array) -> Array:
    """Elementwise maximum of two tensors (:func:`maximum`'s tensor path)."""
    return np.maximum(a, b)


@typed_as(_sig.minimum)
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
        split = _as_array(_tie_mask(NUMPY, x, s, operator.lt), x.dtype)
        return _record_with_constant(a, np.minimum(x, s), split)
    return _minimum(a, b)


@binary(vjp=lambda xp, g, a, b, y: _tie_vjp(xp, g, a, b, operator.lt), name="minimum")
def _minimum(a: Array, b: Array) -> Array:
    """Elementwise minimum of two tensors (:func:`minimum`'s tensor path)."""
    return np.minimum(a, b)


@typed_as(_sig.pow)
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
    - ``a < 0``: the forward is ``nan`` for a non-integer ``b`` (without a warning), and ``d/db``
      is ``nan`` (``log`` of a negative number) even for an integer ``b``, where ``d/da`` is
      still the finite ``b * a**(b-1)``.

    Integer and bool tensors follow PyTorch's type promotion, untraced: an integer base to an
    integer exponent (number or tensor) stays an integer (a bool base becomes int64; a negative
    exponent tensor as :func:`int_power`, a negative exponent number raises ``ValueError`` as
    in PyTorch), a float exponent number makes it float32, a float exponent tensor its dtype.

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: a float tensor ``b`` of another float dtype than ``a``.
        TypeError: ``b`` is neither a tensor nor a real number (a complex, a list, an array).
    """
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64 and dt.kind != "f":
        return _int_pow(a, b)
    cls = b.__class__
    if cls is float or cls is int or (cls is not a.__class__ and not (hasattr(b, "tape") and hasattr(b, "data"))):
        # a number (t ** 2, np.float32, a bool) or junk: the scalar op, which validates it
        return _scalar_pow(a, b)
    return _pow(a, b)


def _int_pow(a: Any, b: Any) -> Any:
    """:func:`pow` of an integer or bool tensor ``a`` (see there)."""
    if not (hasattr(b, "tape") and hasattr(b, "data")):
        return _scalar_pow(a, b)  # a number exponent: gradtape.ops.unary.pow's integer path
    if a.data.dtype.kind not in "iub":
        refuse_non_float(a, "pow")
    if b.data.dtype.kind == "f":  # an integer base to a float exponent: the exponent's dtype
        return _pow(a._from_op(a.data.astype(b.data.dtype), NONE_TAPE), b)
    if a.data.dtype.kind == "b" and b.data.dtype.kind == "b":
        raise DTypeError(
            f"pow: two bool tensors {a.data.shape} and {b.data.shape} (PyTorch has no such kernel); "
            "convert one with .long()"
        )
    if b.__class__ is a.__class__ and b.data.dtype is not a.data.dtype:
        a, b = promote("pow", a, b)
    bt = tensor_operand("pow", a, b)
    x, e = (t.data.astype(np.int64) if t.data.dtype.kind == "b" else t.data for t in (a, bt))
    if x.shape != e.shape:
        broadcast_shapes("pow", x.shape, e.shape)
    return a._from_op(_as_array(int_power(x, e)), NONE_TAPE)


def int_power(x: Array, e: Array) -> Array:
    """``x ** e`` on integer arrays as PyTorch's integer ``pow`` computes it: numpy's power
    (wrapping around on overflow) for ``e >= 0``; for ``e < 0`` the integer part of ``1 /
    x**-e``: ``1`` for ``x == 1``, ``+-1`` for ``x == -1`` (by ``e``'s parity), else ``0``."""
    e = np.asarray(e)
    with np.errstate(over="ignore"):
        y = np.power(x, np.maximum(e, 0))
    if e.dtype.kind == "i" and (e < 0).any():
        neg = np.where(x == 1, 1, np.where(x == -1, np.where(e % 2 == 0, 1, -1), 0)).astype(y.dtype)
        y = np.where(e < 0, neg, y)
    return y  # type: ignore[no-any-return]


def _unary_not_loaded(a: Any, p: Any) -> Any:
    raise RuntimeError("pow: gradtape.ops.unary is not loaded yet; import gradtape")


# gradtape.ops.unary.pow, which imports this module: the gradtape.ops package hands it in
_scalar_pow: Callable[[Any, Any], Any] = _unary_not_loaded


def _pow_vjp(xp: Any, g: Any, a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    """``g * d/da`` with ``d/da = b * a**(b-1)`` (0 where ``b == 0``), ``g * d/db`` with
    ``d/db = y * log(a)`` (0 where ``a == 0`` and ``b >= 0``): PyTorch's conventions at the edges
    (see :func:`pow`)."""
    da = xp.where(b == 0.0, 0.0, b * xp.pow(a, b - 1.0))
    db = xp.where(xp.logical_and(a == 0.0, b >= 0.0), 0.0, y * xp.log(a))
    return g * da, g * db


@binary(vjp=_pow_vjp, name="pow")
def _pow(a: Array, b: Array) -> Array:
    """``a ** b`` for two tensors, with broadcasting (:func:`pow`'s tensor path); ``nan`` and
    ``inf`` results without numpy's warnings, as PyTorch."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.power(a, b)


def rpow(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b ** a`` for a real number ``b`` and a tensor exponent ``a`` (``2.0 ** t``,
    ``Tensor.__rpow__``; PyTorch's ``torch.pow(self: Number, exponent: Tensor)``), elementwise
    with numpy's ``power``: ``y = b ** a`` in ``a``'s dtype.

    Gradient: ``d/da = b**a * log(b) = y * log(b)`` (``log(2) * 2**a`` for ``b = 2``), from the
    saved output; its second rule is the same product with the recorded output, so
    ``2.0 ** t`` differentiates to any order. PyTorch's edges: for ``b == 0`` the gradient is
    ``0`` where ``a >= 0``; for ``b < 0`` the forward is ``nan`` for a non-integer ``a`` and
    the gradient ``nan`` (``log`` of a negative number).

    An integer or bool exponent tensor (PyTorch's promotion, untraced): an int base gives the
    exponent's integer dtype (``2 ** torch.arange(4)``; negative exponents as
    :func:`int_power`), a float base float32.

    Raises:
        TypeError: ``b`` is not a real number (a complex, an array).
    """
    if a.data.dtype.kind != "f":
        return _int_rpow(a, b)
    base = _scalar(b, "rpow")
    x = a.data
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        y = _as_array(np.power(weak_const(base, x), x))
    logb = math.log(base) if base > 0 else (-math.inf if base == 0 else math.nan)
    return record_entry(a, y, _rpow_backward, y, logb)


def _int_rpow(a: Tensor[S, T], b: object) -> Tensor[S, T]:
    """:func:`rpow` with an integer or bool exponent tensor ``a`` (see there)."""
    x = a.data
    if x.dtype.kind not in "iub":
        refuse_non_float(a, "rpow")
    base = _number(b, "rpow")
    if base.__class__ is float:
        return rpow(a._from_op(x.astype(_F32), NONE_TAPE), base)
    dt = _I64 if x.dtype.kind == "b" or base.__class__ is bool else x.dtype
    y = int_power(np.asarray(int(base)).astype(dt), x.astype(dt))
    return a._from_op(_as_array(y), NONE_TAPE)  # type: ignore[no-any-return]


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


def _d_rdiv(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    oid, _, aid, ad, y = entry
    return [(aid, -(g * rebuild(oid, y)) / rebuild(aid, ad))]


register_diff(_rdiv_backward, _d_rdiv)
register_diff(_rpow_backward, _d_rpow)


# ----- atan2, lerp, outer (issue 27) ---------------------------------------------------------


def _atan2_vjp(xp: Any, g: Any, a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    r = 1.0 / (a * a + b * b)  # PyTorch's: NaN at (0, 0), where the angle has no derivative
    return g * b * r, g * -a * r


@binary(vjp=_atan2_vjp, name="atan2")
def _atan2(a: Array, b: Array) -> Array:
    """The angle of the point ``(b, a)``: ``np.arctan2(a, b)`` (:func:`atan2`'s tensor path)."""
    return np.arctan2(a, b)


@overload
def atan2(input: Tensor[S, T], other: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def atan2(input: Tensor[S, Tape], other: Tensor[S, OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def atan2(input: Tensor[Any, T], other: Tensor[Any, T]) -> Tensor[Any, T]: ...
def atan2(input: Any, other: Any) -> Any:
    """The elementwise angle ``atan2(input, other)`` of the point ``(other, input)`` in
    ``(-pi, pi]`` (PyTorch's ``torch.atan2`` / ``Tensor.atan2``; numpy's ``arctan2``), with
    numpy broadcasting.

    Gradients: ``d/dinput = other / (input**2 + other**2)``,
    ``d/dother = -input / (input**2 + other**2)`` (NaN at ``(0, 0)``, as PyTorch), summed back
    over broadcast dims; differentiable again (one :func:`~gradtape.ops.declare.binary`
    declaration).

    Raises:
        ShapeError: the shapes do not broadcast. DTypeError: the dtypes differ or are not
        float. TypeError: ``other`` is not a tensor.
    """
    return _atan2(input, other)


def lerp(input: Tensor[Any, T], end: Tensor[Any, T], weight: float | Tensor[Any, Any]) -> Tensor[Any, T]:
    """Linear interpolation ``input + weight * (end - input)`` (PyTorch's ``torch.lerp`` /
    ``Tensor.lerp``), with numpy broadcasting of the three; ``weight`` a number or a tensor.
    Built from recorded ops: gradients ``1 - weight``, ``weight`` and ``end - input``,
    differentiable again.

    Raises:
        ShapeError: the shapes do not broadcast. DTypeError: the dtypes differ or are not
        float. TypeError: ``end`` is not a tensor, or ``weight`` neither a number nor a tensor.
    """
    float_data("lerp", input)
    e = tensor_operand("lerp", input, end)
    shape = broadcast_shapes("lerp", input.shape, e.shape)
    if not isinstance(weight, SCALARS):
        broadcast_shapes("lerp", shape, tensor_operand("lerp", input, weight).shape)
    out: Tensor[Any, T] = input + weight * (e - input)
    return out


def outer(input: Tensor[Rank1[A], T], vec2: Tensor[Rank1[B], T]) -> Tensor[Rank2[A, B], T]:
    """The outer product ``out[i, j] = input[i] * vec2[j]`` of two 1-D tensors (PyTorch's
    ``torch.outer`` / ``Tensor.outer``). Built from recorded ops: gradients ``g @ vec2`` and
    ``g^T @ input``, differentiable again.

    Raises:
        ShapeError: an input is not 1-D (names both shapes). DTypeError: the dtypes differ or
        are not float. TypeError: ``vec2`` is not a tensor.
    """
    v = vector_pair("outer", input, vec2, "input", "vec2")
    out: Tensor[Rank2[A, B], T] = input.reshape((-1, 1)) * v.reshape((1, -1))
    return out


# ----- remainder, fmod, floor_divide (PyTorch's %, torch.fmod, //) ---------------------------


def _dividing(op: str, ufunc: Any, a: Array, b: Array) -> Array:
    """``ufunc(a, b)`` for two arrays of one dtype: on integers a zero divisor raises (numpy
    would warn and give 0) and bool meets bool is refused (PyTorch has no such kernel); on
    floats a zero divisor gives ``nan``/``inf`` without numpy's warning, as PyTorch."""
    if b.dtype.kind in "iub":
        if b.dtype.kind == "b":
            raise DTypeError(f"{op}: two bool tensors {a.shape} and {b.shape}; convert one with .long()")
        if not np.all(b):
            raise DivisionByZeroError(f"{op}: integer division by zero ({a.dtype} {a.shape} and {b.dtype} {b.shape})")
        return ufunc(a, b)  # type: ignore[no-any-return]
    with np.errstate(divide="ignore", invalid="ignore"):
        return ufunc(a, b)  # type: ignore[no-any-return]


@binary(vjp=lambda xp, g, a, b, y: (g, -g * xp.floor(a / b)), name="remainder")
def _remainder(a: Array, b: Array) -> Array:
    """``a % b`` with broadcasting (:func:`remainder`'s tensor path)."""
    return _dividing("remainder", np.remainder, a, b)


@binary(vjp=lambda xp, g, a, b, y: (g, -g * xp.trunc(a / b)), name="fmod")
def _fmod(a: Array, b: Array) -> Array:
    """C's ``fmod(a, b)`` with broadcasting (:func:`fmod`'s tensor path)."""
    return _dividing("fmod", np.fmod, a, b)


def _divmod_scalar(a: Tensor[Any, Any], b: object, ufunc: Any, op: str) -> Any:
    """``ufunc(a, b)`` for a tensor ``a`` and a number ``b`` (gradient ``d/da = 1`` on floats)."""
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64 and dt.kind != "f":
        return _int_scalar(a, b, ufunc, op)
    x, c = a.data, weak_const(_scalar(b, op), a.data)
    out = record_scalar(a, _as_array(_float_quotient(ufunc, x, c)), 1.0)
    _replay_quotient(op, out, ufunc, x, c, (a,))
    return out


def _float_quotient(ufunc: Any, x: Array, c: Any) -> Any:
    """``ufunc(x, c)`` on floats, a zero divisor giving ``nan``/``inf`` without numpy's warning."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return ufunc(x, c)


def _replay_quotient(op: str, out: Any, ufunc: Any, x: Array, c: Any, sources: tuple[Any, ...]) -> None:
    """Tell :func:`gradtape.capture`'s recorder how ``out = _float_quotient(ufunc, x, c)`` is
    made again (its rules read no array: slope 1, or 0)."""
    if _tp._recorder is not None:
        if isinstance(c, np.ndarray) and c.ndim == 0:
            _tp._recorder.constant(c)
        replayable(op, out.data, refill, (_float_quotient, ufunc, x, c), sources, out.tape, train=True)


def _divmod_rscalar(a: Tensor[Any, Any], b: object, ufunc: Any, op: str, quotient: Any) -> Any:
    """``ufunc(b, a)`` for a number ``b`` and a tensor divisor ``a``: ``d/da = -quotient(b / a)``
    on floats (piecewise constant)."""
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64 and dt.kind != "f":
        return _int_scalar(a, b, ufunc, op, reverse=True)
    x, c = a.data, weak_const(_scalar(b, op), a.data)
    with np.errstate(divide="ignore", invalid="ignore"):
        y, slope = _as_array(ufunc(c, x)), _as_array(-quotient(c / x), dt)
    return _record_with_constant(a, y, slope)


@typed_as(_sig.remainder)
def remainder(a: Any, b: Any) -> Any:
    """``a % b`` elementwise with Python's sign convention: the result has the sign of ``b``
    (PyTorch's ``torch.remainder`` / ``Tensor.__mod__``, numpy's ``np.remainder``):
    ``a - floor(a / b) * b``; numpy broadcasting; ``b`` may be a Python number.
    ``-7 % 3 == 2``, ``7 % -3 == -2``.

    Dtypes (PyTorch's promotion): an integer tensor with an int or an integer tensor stays an
    integer tensor; with a float (number or tensor) the result is float (float32 for a Python
    float). Gradients (floats): ``d/da = 1``, ``d/db = -floor(a / b)``, summed back over
    broadcast dims, differentiable again. A zero divisor gives ``nan`` on floats.

    Raises:
        DivisionByZeroError: an integer tensor divided by zero (PyTorch raises too).
        ShapeError: the shapes do not broadcast. DTypeError: float32 meets float64, or two
        bool tensors. TypeError: ``b`` is neither a tensor nor a number.
    """
    if isinstance(b, SCALARS):
        return _divmod_scalar(a, b, np.remainder, "remainder")
    return _remainder(a, b)


def rremainder(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b % a`` for a Python number ``b`` (``Tensor.__rmod__``; see :func:`remainder`).
    Gradient (floats): ``d/da = -floor(b / a)``."""
    return _divmod_rscalar(a, b, np.remainder, "remainder", np.floor)  # type: ignore[no-any-return]


@typed_as(_sig.fmod)
def fmod(a: Any, b: Any) -> Any:
    """C's ``fmod`` elementwise: the remainder of ``a / b`` truncated toward zero, with the sign
    of ``a`` (PyTorch's ``torch.fmod``, numpy's ``np.fmod``): ``a - trunc(a / b) * b``; numpy
    broadcasting; ``b`` may be a Python number. ``fmod(-7, 3) == -1``.

    Dtypes, zero divisors, errors: as :func:`remainder`. Gradients (floats): ``d/da = 1``,
    ``d/db = -trunc(a / b)``, summed back over broadcast dims, differentiable again.
    """
    if isinstance(b, SCALARS):
        return _divmod_scalar(a, b, np.fmod, "fmod")
    return _fmod(a, b)


@typed_as(_sig.floor_divide)
def floor_divide(a: Any, b: Any) -> Any:
    """``a // b`` elementwise: ``floor(a / b)`` (PyTorch's ``torch.floor_divide`` /
    ``Tensor.__floordiv__``, numpy's ``np.floor_divide``), numpy broadcasting; ``b`` may be a
    Python number. ``-7 // 2 == -4``.

    Dtypes: as :func:`remainder` (integers stay integers). Not differentiable, as in PyTorch:
    the forward records when an input takes part, and ``backward()`` through it raises
    ``TapeError`` (PyTorch: "derivative for aten::floor_divide is not implemented"); detach
    the inputs first. A zero divisor gives ``inf``/``nan`` on floats.

    Raises:
        DivisionByZeroError: an integer tensor divided by zero. ShapeError, DTypeError,
        TypeError: as :func:`remainder`. TapeError: at backward, through a recorded result.
    """
    return _quotient("floor_divide", np.floor_divide, a, b, differentiable=False)


def rfloor_divide(a: Tensor[S, T], b: float) -> Tensor[S, T]:
    """``b // a`` for a Python number ``b`` (``Tensor.__rfloordiv__``; see :func:`floor_divide`)."""
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64 and dt.kind != "f":
        return _int_scalar(a, b, np.floor_divide, "floor_divide", reverse=True)  # type: ignore[no-any-return]
    with np.errstate(divide="ignore", invalid="ignore"):
        y = _as_array(np.floor_divide(weak_const(_scalar(b, "floor_divide"), a.data), a.data))
    return _record_not_differentiable(a._from_op(y, op_tape(a)), "floor_divide")  # type: ignore[no-any-return]


def _trunc_divide(a: Array, b: Array) -> Array:
    """``a / b`` rounded toward zero: exact on integers (``a - fmod(a, b)`` is a multiple of
    ``b``), ``trunc(a / b)`` on floats."""
    if a.dtype.kind in "iu" and np.result_type(a, b).kind in "iu":
        out: Array = np.floor_divide(a - np.fmod(a, b), b)
    else:
        out = np.trunc(np.true_divide(a, b))
    return out


_ROUNDED: dict[str, Callable[..., Any]] = {"trunc": _trunc_divide, "floor": np.floor_divide}
"""``div``'s rounding modes and their quotient."""


def _rounded_div(a: Any, b: Any, mode: object) -> Any:
    """``div(a, b, rounding_mode=mode)`` (see :func:`div`): the dtypes and zero-divisor rules
    of :func:`floor_divide`, the gradient exactly 0."""
    ufunc = _ROUNDED.get(mode) if isinstance(mode, str) else None
    if ufunc is None:
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {mode!r}")
    return _quotient("div", ufunc, a, b, differentiable=True)


def _quotient(op: str, ufunc: Callable[..., Any], a: Any, b: Any, differentiable: bool) -> Any:
    """``ufunc(a, b)``, a rounded quotient (``floor_divide``, ``div`` with a rounding mode):
    integers exact (a zero divisor raises), floats' zero divisors give ``inf``/``nan`` without
    numpy's warning, a number ``b`` or a tensor with numpy broadcasting. Recorded with a
    gradient of exactly 0 (``differentiable``, PyTorch's rule for ``div(rounding_mode=)``) or
    with rules that raise (PyTorch's ``floor_divide`` has no derivative)."""
    if isinstance(b, SCALARS):
        dt = a.data.dtype
        if dt is not _F32 and dt is not _F64 and dt.kind != "f":
            return _int_scalar(a, b, ufunc, op)
        x, c = a.data, weak_const(_scalar(b, op), a.data)
        out, inputs = a._from_op(_as_array(_float_quotient(ufunc, x, c)), op_tape(a)), [a]
        _replay_quotient(op, out, ufunc, x, c, (a,))
    else:
        if b.__class__ is a.__class__ and b.data.dtype is not a.data.dtype:
            a, b = promote(op, a, b)
        bt = tensor_operand(op, a, b)
        ad, bd = a.data, bt.data
        if ad.shape != bd.shape:
            broadcast_shapes(op, ad.shape, bd.shape)
        y = _as_array(_dividing(op, ufunc, ad, bd))
        out, inputs = a._from_op(y, op_tape(a, bt)), [a, bt]
        if _tp._recorder is not None:
            replayable(op, out.data, refill, (_dividing, op, ufunc, ad, bd), (a, bt), out.tape, train=True)
    return record_zero_gradient(out, *inputs) if differentiable else _record_not_differentiable(out, op)


def _record_not_differentiable(out: Any, op: str) -> Any:
    """Record ``out`` (made on its inputs' tape) with rules that raise: the op has no
    derivative (PyTorch's ``NotImplemented`` grad_fn), so a gradient through it is an error,
    never a silent zero."""
    tape = out.tape
    if tape is not NONE_TAPE:

        def not_differentiable(*_: Any) -> Any:
            raise TapeError(
                f"{op}: not differentiable (PyTorch: derivative for aten::{op} is not implemented); "
                "detach its inputs first (a.detach() // b.detach())"
            )

        record(tape, out, not_differentiable, not_differentiable)
    return out
