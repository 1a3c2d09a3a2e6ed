"""Elementwise unary ops, each declared once: its forward on numpy arrays, its derivative
written against an array namespace (the first rule on arrays, the differentiable second rule on
tensors), and what backward keeps (see :mod:`gradtape.ops.declare`). A fused kernel of
:mod:`gradtape.devices.kernels.activations` is optional, for speed; the registry test checks it
against the derivative.

Shapes and dtypes are preserved: ``Tensor[S, T] -> Tensor[S, T]``; a float32 tensor stays
float32 (scalar arguments are converted to Python floats, which numpy does not promote). Inputs
must be float32 or float64 tensors (``DTypeError`` naming the op otherwise); scalar arguments
must be real numbers (``TypeError`` naming the op and the argument); out-of-range values
(``clamp`` with ``min > max``, ...) raise ``ValueError``. Conventions at kinks and special values
follow PyTorch (listed per op).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape._typing import S, T
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import activations as _ka
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import DTypeError
from gradtape.ops._util import (
    cast_untraced,
    float_data,
    record_unary,
    record_zero_gradient,
    refill,
    replayable,
    untraced,
)
from gradtape.ops.binary import record_scalar
from gradtape.ops.declare import elementwise, number
from gradtape.tape import NONE_TAPE, op_tape

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "abs",
    "acos",
    "asin",
    "atan",
    "ceil",
    "celu",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "cos",
    "cosh",
    "elu",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "fix",
    "floor",
    "gelu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "leaky_relu",
    "log",
    "log10",
    "log1p",
    "log2",
    "logsigmoid",
    "mish",
    "nan_to_num",
    "nans_to",
    "neg",
    "pow",
    "recip",
    "reciprocal",
    "relu",
    "relu6",
    "round",
    "rsqrt",
    "selu",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "sinh",
    "softplus",
    "softshrink",
    "softsign",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "tanhshrink",
    "threshold",
    "to_dtype",
    "trunc",
]

Array = np.ndarray[Any, Any]

_2_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
SELU_ALPHA = 1.6732632423543772848170429916717
"""SELU's ``alpha`` (Klambauer et al., 2017), as PyTorch's."""
SELU_SCALE = 1.0507009873554804934193349852946
"""SELU's ``scale`` (Klambauer et al., 2017), as PyTorch's."""


def neg(a: Tensor[S, T]) -> Tensor[S, T]:
    """``-a`` elementwise; exact on integer tensors (PyTorch's ``torch.neg``). Gradient: ``-1``.

    Raises:
        DTypeError: ``a`` is a bool tensor (negation is not defined on bools, as in PyTorch).
    """
    if a.data.dtype.kind == "b":
        raise DTypeError(
            f"neg: a has dtype bool (shape {a.data.shape}); negation is not defined on bool tensors "
            "(use a == 0 for the complement, or convert with dev.tensor(x, dtype=np.float32))"
        )
    return record_scalar(a, np.negative(a.data), -1.0, replay=("neg", np.negative, a.data, None))  # type: ignore[no-any-return]


def to_dtype(a: Tensor[S, T], dtype: npt.DTypeLike) -> Tensor[S, T]:
    """``a`` cast to ``dtype``, float32 or float64 (dfdx's ``to_dtype``), differentiable: the
    output's gradient flows back cast to ``a``'s dtype (float64 -> float32 rounds it). The
    same dtype gives a recorded copy (a new tensor, so a pass can still tell the two apart).

    Raises:
        DTypeError: ``dtype`` is not float32 or float64, or ``a`` is not a float tensor
            (use ``dev.tensor(x, dtype=...)`` for integer or bool data).
    """
    x = float_data("to_dtype", a)
    target = np.dtype(dtype)
    if target not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise DTypeError(
            f"to_dtype: casts between float32 and float64, got dtype {target} (tensor {x.dtype} {x.shape})"
        )
    source = x.dtype
    y = x.astype(target)
    out = record_unary(a, y, _cast_back, source, diff=lambda g, rebuild, o, i: to_dtype(g, source))
    if _tp._recorder is not None:
        replayable("to_dtype", y, _cast_into, (x,), (a,), out.tape, True)
    return out


def _cast_into(y: Array, x: Array) -> None:
    """:func:`to_dtype` again into ``y`` (for :func:`gradtape.capture`'s replays): ``x`` cast
    to ``y``'s dtype (numpy's rounding, as ``astype``)."""
    np.copyto(y, x, casting="unsafe")


def _cast_back(grads: Gradients, i: int, g: Array, source: np.dtype[Any]) -> None:
    """to_dtype's first rule: the gradient in the input's dtype."""
    grads._accum(i, g.astype(source))


# ----- exponentials and logarithms ----------------------------------------------------------


@elementwise(uses="y", derivative=lambda xp, y: y)
def exp(x: Array) -> Array:
    """``e**a`` elementwise. Gradient: ``e**a``, the saved output (fused ``grad += y * g``)."""
    return np.exp(x)


def _log_kernel(out: Array, x: Array, g: Array) -> None:
    _k.adddiv(out, g, x)  # out += g / x


@elementwise(uses="x", derivative=lambda xp, x: 1.0 / x, kernel=_log_kernel)
def log(x: Array) -> Array:
    """Natural logarithm elementwise (``nan`` for negative inputs, ``-inf`` at 0, as numpy).

    Gradient: ``1 / a`` (fused ``grad += g / a``).
    """
    return np.log(x)


@elementwise(uses="y", derivative=lambda xp, y: y + 1.0)
def expm1(x: Array) -> Array:
    """``e**a - 1`` elementwise, accurate near 0 (numpy's ``expm1``). Gradient: ``e**a = y + 1``
    from the saved output (PyTorch's)."""
    return np.expm1(x)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


@elementwise(uses="y", derivative=lambda xp, y: y * _LN2)
def exp2(x: Array) -> Array:
    """``2 ** a`` elementwise (``torch.exp2``). Gradient: ``ln(2) * 2**a = ln(2) * y`` from the
    saved output."""
    return np.exp2(x)


@elementwise(uses="x", derivative=lambda xp, x: 1.0 / (x * _LN2))
def log2(x: Array) -> Array:
    """Base-2 logarithm elementwise (``torch.log2``; ``-inf`` at 0, NaN below, without
    numpy's warning). Gradient: ``1 / (a ln 2)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log2(x)


@elementwise(uses="x", derivative=lambda xp, x: 1.0 / (x * _LN10))
def log10(x: Array) -> Array:
    """Base-10 logarithm elementwise (``torch.log10``; ``-inf`` at 0, NaN below, without
    numpy's warning). Gradient: ``1 / (a ln 10)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log10(x)


@elementwise(uses="x", derivative=lambda xp, x: 1.0 / (x + 1.0))
def log1p(x: Array) -> Array:
    """``log(1 + a)`` elementwise, accurate near 0 (numpy's ``log1p``; NaN below -1, ``-inf`` at
    -1). Gradient: ``1 / (1 + a)``."""
    return np.log1p(x)


@elementwise(uses="x", derivative=lambda xp, x: xp.exp(x * x * -1.0) * _2_OVER_SQRT_PI)
def erf(x: Array) -> Array:
    """The error function ``erf(a) = 2/sqrt(pi) * integral_0^a exp(-t**2) dt`` elementwise
    (numpy has none: float64 calls libm's ``erf`` through numba, float32 Cephes' ``erff``
    polynomial in a vectorized kernel, within about 1 float32 ulp). Gradient:
    ``2/sqrt(pi) * exp(-a**2)``."""
    return _ka.erf(x)


@elementwise(uses="x", derivative=lambda xp, x: xp.exp(x * x * -1.0) * -_2_OVER_SQRT_PI)
def erfc(x: Array) -> Array:
    """The complementary error function ``erfc(a) = 1 - erf(a)`` elementwise, accurate where
    ``erf`` is near 1 (float64: libm's ``erfc``; float32: Cephes' ``erfcf`` polynomials in a
    vectorized kernel, within about 1 float32 ulp). Gradient: ``-2/sqrt(pi) * exp(-a**2)``."""
    return _ka.erf(x, complement=True)


# ----- powers ---------------------------------------------------------------------------------


@elementwise(uses="y", derivative=lambda xp, y: 0.5 / y, kernel=_ka.sqrt_backward)
def sqrt(x: Array) -> Array:
    """Square root elementwise: ``y = sqrt(a)`` (NaN for negative inputs, as numpy).

    Gradient: ``1 / (2 sqrt(a)) = 1 / (2 y)`` (``inf`` at ``a == 0``, as PyTorch); fused
    ``grad += g / (2 y)`` from the saved output.
    """
    return np.sqrt(x)


def _int_square(x: Array) -> Array:
    """``square`` on integers: the dtype kept (wrapping around as PyTorch's), bools as int64."""
    return np.square(x.astype(np.int64) if x.dtype.kind == "b" else x)


@elementwise(uses="x", derivative=lambda xp, x: 2.0 * x, kernel=_ka.square_backward, integer=_int_square)
def square(x: Array) -> Array:
    """``a ** 2`` elementwise. Gradient: ``2 a``; fused ``grad += 2 * a * g``. Integer tensors
    stay integers (a bool tensor gives int64), untraced, as PyTorch's."""
    return np.square(x)


@elementwise(uses="y", derivative=lambda xp, y: y * y * y * -0.5)
def rsqrt(x: Array) -> Array:
    """Reciprocal square root ``y = 1 / sqrt(a)`` elementwise (``torch.rsqrt``; ``inf`` at 0,
    NaN below, without numpy's warning). Gradient: ``-1 / (2 a**1.5) = -y**3 / 2`` from the
    saved output."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.reciprocal(np.sqrt(x))


def reciprocal(a: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.reciprocal``: ``1 / a`` elementwise, :func:`recip` (dfdx's name) under
    PyTorch's; same gradient ``-1 / a**2``.

    Raises:
        DTypeError: ``a`` is an integer or bool tensor (naming ``reciprocal``).
    """
    if a.data.dtype.kind != "f":
        float_data("reciprocal", a)
    return recip(a)


@elementwise(uses="y", derivative=lambda xp, y: -(y * y), kernel=_ka.recip_backward)
def recip(x: Array) -> Array:
    """Reciprocal ``y = 1 / a`` elementwise (``inf`` at 0, as numpy).

    Gradient: ``-1 / a**2 = -y**2`` from the saved output; fused ``grad -= y**2 * g``.
    """
    return np.reciprocal(x)


@elementwise(
    uses="x", derivative=lambda xp, x, p: x ** (p - 1.0) * p, kernel=_ka.pow_backward, name="_pow", public="pow"
)
def _pow(x: Array, p: float) -> Array:
    """``a ** p`` for a real ``p`` other than 0, 1 and 2 (:func:`pow` sends those elsewhere);
    ``nan`` and ``inf`` results without numpy's warnings, as PyTorch."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.power(x, p)


def pow(a: Tensor[S, T], p: float) -> Tensor[S, T]:
    """``a ** p`` elementwise for a real number ``p`` (also ``t ** p``), with numpy's ``power``
    semantics: NaN for a negative base and a non-integer ``p``, ``inf`` for ``0 ** -1``.

    Gradient: ``p * a ** (p - 1)``, fused as ``grad += p * a**(p-1) * g`` with ``a**(p-1)``
    from numpy in backward; ``p == 2`` is :func:`square`'s, ``p == 1`` passes ``g`` through,
    and ``p == 0`` gives exactly ``0`` (also where ``a`` is 0 or NaN), as PyTorch.

    Integer and bool tensors (PyTorch's type promotion): an integer exponent keeps an integer
    tensor's dtype (wrapping around on overflow, as PyTorch's) and makes a bool tensor int64; a
    float exponent gives float32 (PyTorch's default float dtype). Untraced: integers carry no
    gradient.

    Raises:
        TypeError: ``p`` is not a real number (tensor exponents are not supported).
        ValueError: an integer tensor to a negative integer power (PyTorch's "Integers to
            negative integer powers are not allowed").
    """
    if a.data.dtype.kind in "iub":
        return _int_pow(a, p)
    p = number("pow", "exponent p", p)
    x = float_data("pow", a)
    if p == 2.0:
        return square(a)
    if p == 1.0:
        return record_scalar(a, x.copy(), 1.0, replay=("pow", np.positive, x, None))  # type: ignore[no-any-return]
    if p == 0.0:
        return record_unary(
            a,
            np.power(x, p),
            lambda grads, i, g: grads._accum(i, np.zeros(g.shape, g.dtype)),
            diff=lambda g, r, o, i: g * 0.0,
        )
    return _pow(a, p)


def _int_pow(a: Tensor[S, T], p: object) -> Tensor[S, T]:
    """:func:`pow` of an integer or bool tensor (see there)."""
    x = a.data
    if isinstance(p, (bool, int, np.integer)):
        if p < 0:
            raise ValueError(
                f"pow: integers to negative integer powers are not allowed ({x.dtype} tensor {x.shape} ** {p}); "
                "convert with .float() first"
            )
        out = a._from_op(_as_array(_int_power(x, int(p))), NONE_TAPE)
        if _tp._recorder is not None:
            replayable("pow", out.data, refill, (_int_power, x, int(p)), (a,), NONE_TAPE)
        return out  # type: ignore[no-any-return]
    q = number("pow", "exponent p", p)
    return pow(cast_untraced(a, np.dtype(np.float32)), q)  # a capture's replay casts again


def _int_power(x: Array, p: int) -> Array:
    """``x ** p`` of an integer or bool array (bool as int64), wrapping on overflow as
    PyTorch's integer ``pow``."""
    base = x.astype(np.int64) if x.dtype.kind == "b" else x
    with np.errstate(over="ignore"):
        y: Array = np.power(base, np.asarray(p).astype(base.dtype)[()])
    return y


# ----- rounding: piecewise constant, gradient exactly 0 ----------------------------------------


def _rounding(op: str, a: Tensor[S, T], fn: Callable[..., Any], *args: Any) -> Tensor[S, T]:
    """The output ``fn(*args)`` of the rounding op ``op`` of a float tensor ``a`` (``args``
    read ``a``'s array), recorded with gradient exactly 0
    (:func:`gradtape.ops._util.record_zero_gradient`); a replay of :func:`gradtape.capture`
    computes ``fn(*args)`` again (the backward reads nothing)."""
    tape = op_tape(a)
    out = a._from_op(_as_array(fn(*args)), tape)
    if _tp._recorder is not None:
        replayable(op, out.data, refill, (fn, *args), (a,), tape, train=True)
    return record_zero_gradient(out, a)


def _rounded(op: str, fn: Callable[[Array], Array], a: Tensor[S, T]) -> Tensor[S, T]:
    """``fn`` (``np.floor``, ...) of a float tensor recorded with gradient 0, or an integer
    tensor's copy (:func:`_integer_rounding`)."""
    if a.data.dtype.kind != "f":
        return _integer_rounding(op, a)
    return _rounding(op, a, fn, a.data)


def _copied(op: str, a: Tensor[S, T], fn: Callable[..., Any] = np.copy) -> Tensor[S, T]:
    """``fn(a.data)`` (a copy by default) as an untraced tensor, replayed by
    :func:`gradtape.capture` (the integer cases of the rounding ops and ``sign``)."""
    x = a.data
    out: Tensor[S, T] = a._from_op(_as_array(fn(x)), NONE_TAPE)
    if _tp._recorder is not None:
        replayable(op, out.data, refill, (fn, x), (a,), NONE_TAPE)
    return out


def _integer_rounding(op: str, a: Tensor[S, T]) -> Tensor[S, T]:
    """``floor``/``ceil``/``round``/``trunc`` of an integer tensor: a copy, untraced (PyTorch's).

    Raises:
        DTypeError: ``a`` is a bool tensor (PyTorch has no such kernel).
    """
    x = a.data
    if x.dtype.kind == "b":
        raise DTypeError(f"{op}: not defined on bool tensors (shape {x.shape}), as in PyTorch; convert with .long()")
    if x.dtype.kind not in "iu":
        float_data(op, a)
    return _copied(op, a)


def floor(a: Tensor[S, T]) -> Tensor[S, T]:
    """The largest integer not above each element, as a float of ``a``'s dtype (``torch.floor``;
    ``inf`` and NaN pass through). Gradient: exactly ``0`` (PyTorch's), also where the output's
    gradient is ``inf`` or NaN. An integer tensor gives a copy, untraced.

    Raises:
        DTypeError: ``a`` is a bool tensor (as PyTorch).
    """
    return _rounded("floor", np.floor, a)


def ceil(a: Tensor[S, T]) -> Tensor[S, T]:
    """The smallest integer not below each element (``torch.ceil``); gradient and dtypes as
    :func:`floor`.

    Raises:
        DTypeError: ``a`` is a bool tensor (as PyTorch).
    """
    return _rounded("ceil", np.ceil, a)


def trunc(a: Tensor[S, T]) -> Tensor[S, T]:
    """Each element rounded toward zero (``torch.trunc``, ``torch.fix``); gradient and dtypes
    as :func:`floor`.

    Raises:
        DTypeError: ``a`` is a bool tensor (as PyTorch).
    """
    return _rounded("trunc", np.trunc, a)


def fix(a: Tensor[S, T]) -> Tensor[S, T]:
    """PyTorch's ``torch.fix``, an alias of :func:`trunc` (same rules and gradient; errors
    name ``fix``).

    Raises:
        DTypeError: ``a`` is a bool tensor (as PyTorch).
    """
    return _rounded("fix", np.trunc, a)


def round(a: Tensor[S, T], decimals: int = 0) -> Tensor[S, T]:
    """Each element rounded to the nearest integer, halves to even (``torch.round``: ``2.5 ->
    2``, ``-0.5 -> -0``), or to ``decimals`` decimal digits: ``round(a * 10**d) / 10**d`` in
    ``a``'s dtype (negative ``decimals`` round to tens, hundreds, ...), as PyTorch and numpy
    compute it. Gradient and dtypes as :func:`floor`.

    Raises:
        DTypeError: ``a`` is a bool tensor, or an integer tensor with ``decimals`` (as PyTorch).
        TypeError: ``decimals`` is not an int.
    """
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if a.data.dtype.kind != "f":
        if decimals:
            raise DTypeError(f"round: decimals={decimals} on an integer tensor ({a.data.dtype}), as in PyTorch")
        return _integer_rounding("round", a)
    return _rounding("round", a, np.round, a.data, int(decimals))


def sign(a: Tensor[S, T]) -> Tensor[S, T]:
    """The sign of each element: ``-1``, ``0`` or ``1`` (``torch.sign``; ``0`` for NaN and
    ``-0.0``, as PyTorch). Gradient: exactly ``0``. An integer tensor keeps its dtype and a
    bool tensor stays bool, untraced."""
    x = a.data
    if x.dtype.kind != "f":
        if x.dtype.kind not in "iub":
            float_data("sign", a)
        return _copied("sign", a, np.copy if x.dtype.kind == "b" else np.sign)
    return _rounding("sign", a, _float_sign, x)


def _float_sign(x: Array) -> Array:
    """``sign`` of a float array, 0 at NaN (PyTorch's)."""
    y: Array = np.where(np.isnan(x), x.dtype.type(0), np.sign(x))
    return y


# ----- trigonometric and hyperbolic -----------------------------------------------------------


@elementwise(uses="x", derivative=lambda xp, x: xp.cos(x))
def sin(x: Array) -> Array:
    """Sine elementwise (radians). Gradient: ``cos(a)``, computed in backward with numpy's
    SIMD ``cos`` and accumulated with the fused ``addmul``."""
    return np.sin(x)


@elementwise(uses="x", derivative=lambda xp, x: -xp.sin(x), kernel=_ka.cos_backward)
def cos(x: Array) -> Array:
    """Cosine elementwise (radians). Gradient: ``-sin(a)``, computed in backward with numpy's
    SIMD ``sin`` and accumulated in one fused pass ``grad += -sin(a) * g``."""
    return np.cos(x)


@elementwise(uses="y", derivative=lambda xp, y: y * y + 1.0)
def tan(x: Array) -> Array:
    """Tangent elementwise (radians). Gradient: ``1 + tan(a)**2 = 1 + y**2`` from the saved
    output (PyTorch's)."""
    return np.tan(x)


@elementwise(uses="x", derivative=lambda xp, x: 1.0 / xp.sqrt(1.0 - x * x))
def asin(x: Array) -> Array:
    """Inverse sine elementwise, in ``[-pi/2, pi/2]`` (NaN outside ``[-1, 1]``). Gradient:
    ``1 / sqrt(1 - a**2)`` (``inf`` at ``|a| == 1``)."""
    return np.arcsin(x)


@elementwise(uses="x", derivative=lambda xp, x: -1.0 / xp.sqrt(1.0 - x * x))
def acos(x: Array) -> Array:
    """Inverse cosine elementwise, in ``[0, pi]`` (NaN outside ``[-1, 1]``). Gradient:
    ``-1 / sqrt(1 - a**2)`` (``-inf`` at ``|a| == 1``)."""
    return np.arccos(x)


@elementwise(uses="x", derivative=lambda xp, x: 1.0 / (x * x + 1.0))
def atan(x: Array) -> Array:
    """Inverse tangent elementwise, in ``(-pi/2, pi/2)``. Gradient: ``1 / (1 + a**2)``."""
    return np.arctan(x)


@elementwise(uses="x", derivative=lambda xp, x: xp.cosh(x))
def sinh(x: Array) -> Array:
    """Hyperbolic sine elementwise. Gradient: ``cosh(a)``."""
    return np.sinh(x)


@elementwise(uses="x", derivative=lambda xp, x: xp.sinh(x))
def cosh(x: Array) -> Array:
    """Hyperbolic cosine elementwise. Gradient: ``sinh(a)``."""
    return np.cosh(x)


@elementwise(uses="y", derivative=lambda xp, y: 1.0 - y * y, kernel=_ka.tanh_backward)
def tanh(x: Array) -> Array:
    """Hyperbolic tangent elementwise: ``y = tanh(a)``. Gradient: ``1 - y**2`` from the saved
    output; fused ``grad += (1 - y**2) * g``."""
    return np.tanh(x)


# ----- the activation family ------------------------------------------------------------------


def _relu_into(out: Array, x: Array) -> None:
    """ReLU's forward into ``out`` (a capture's replay): the kernel :func:`relu` runs."""
    _ka.relu(x, out)


_trace.traceable(_relu_into)


@elementwise(
    uses="x",
    derivative=lambda xp, x: xp.where(x > 0.0, 1.0, 0.0),
    kernel=_k.relu_backward,
    fresh=_k.relu_grad,
    into=_relu_into,
)
def relu(x: Array) -> Array:
    """``max(a, 0)`` elementwise. Gradient: ``1`` where ``a > 0``, else ``0`` (also at 0, as
    PyTorch); fused ``grad += g * (a > 0)``."""
    return _ka.relu(x)


@elementwise(
    uses="x",
    derivative=lambda xp, x, negative_slope: xp.where(x > 0.0, 1.0, negative_slope),
    kernel=_ka.leaky_relu_backward,
)
def leaky_relu(x: Array, negative_slope: float = 0.01) -> Array:
    """``a`` where ``a > 0``, else ``negative_slope * a``, elementwise (PyTorch's ``leaky_relu``).

    Gradient: ``1`` where ``a > 0``, else ``negative_slope`` (also at ``a == 0``, as PyTorch);
    fused ``grad += g`` or ``grad += negative_slope * g``.

    Raises:
        TypeError: ``negative_slope`` is not a real number.
    """
    return np.where(x > 0, x, x * negative_slope)


@elementwise(uses="y", derivative=lambda xp, y: y * (1.0 - y), kernel=_ka.sigmoid_backward)
def sigmoid(x: Array) -> Array:
    """Logistic sigmoid elementwise: ``y = 1 / (1 + exp(-a))``, computed without overflow
    from ``exp(-|a|)`` (accurate in both tails, see :func:`~gradtape.devices.kernels.activations.sigmoid`).

    Gradient: ``y * (1 - y)`` from the saved output; fused ``grad += y * (1 - y) * g``.
    """
    return _ka.sigmoid(x)


@elementwise(uses="x", derivative=lambda xp, x: xp.sigmoid(-x))
def logsigmoid(x: Array) -> Array:
    """``log(sigmoid(a)) = -softplus(-a)`` elementwise (PyTorch's ``logsigmoid``), computed as
    ``-logaddexp(0, -a)``, which neither overflows nor loses the left tail. Gradient:
    ``sigmoid(-a)``."""
    return np.negative(np.logaddexp(0.0, -x))


def _silu_kernel(out: Array, x: Array, g: Array, s: Array) -> None:
    _ka.silu_backward(out, x, s, g)


def _silu_derivative(xp: Any, x: Any) -> Any:
    s = xp.sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


@elementwise(uses="x", derivative=_silu_derivative, kernel=_silu_kernel, aux=True)
def silu(x: Array) -> tuple[Array, Array]:
    """Sigmoid linear unit (swish) elementwise: ``y = a * s`` with ``s = sigmoid(a)``.

    Gradient: ``s * (1 + a * (1 - s))``; one fused pass from the ``s`` the forward kept.
    """
    s = _ka.sigmoid(x)
    return np.multiply(x, s), s


def _mish_derivative(xp: Any, x: Any) -> Any:
    t = xp.tanh(xp.softplus(x))
    return t + x * xp.sigmoid(x) * (1.0 - t * t)


@elementwise(uses="x", derivative=_mish_derivative)
def mish(x: Array) -> Array:
    """Mish (Misra, 2019) elementwise: ``a * tanh(softplus(a))``, as PyTorch's ``mish``.

    Gradient: ``t + a * sigmoid(a) * (1 - t**2)`` with ``t = tanh(softplus(a))`` (PyTorch's).
    """
    return np.multiply(x, np.tanh(np.logaddexp(0.0, x)))


def _elu_derivative(xp: Any, x: Any, alpha: float) -> Any:
    return xp.where(x > 0.0, 1.0, xp.exp(xp.minimum(x, 0.0)) * alpha)


@elementwise(uses="x", derivative=_elu_derivative)
def elu(x: Array, alpha: float = 1.0) -> Array:
    """Exponential linear unit (Clevert et al., 2015), as PyTorch's ``elu``: ``a`` where
    ``a > 0``, else ``alpha * (exp(a) - 1)`` (``expm1``, accurate near 0).

    Gradient: ``1`` where ``a > 0``, else ``alpha * exp(a)`` (also at 0, as PyTorch).

    Raises:
        TypeError: ``alpha`` is not a real number.
    """
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)) * alpha)


def _selu_derivative(xp: Any, x: Any) -> Any:
    return xp.where(x > 0.0, SELU_SCALE, xp.exp(xp.minimum(x, 0.0)) * (SELU_SCALE * SELU_ALPHA))


@elementwise(uses="x", derivative=_selu_derivative)
def selu(x: Array) -> Array:
    """Scaled exponential linear unit (Klambauer et al., 2017), as PyTorch's ``selu``:
    ``scale * a`` where ``a > 0``, else ``scale * alpha * (exp(a) - 1)``, with
    :data:`SELU_SCALE` and :data:`SELU_ALPHA`.

    Gradient: ``scale`` where ``a > 0``, else ``scale * alpha * exp(a)`` (also at 0, as PyTorch).
    """
    return np.where(x > 0, x * SELU_SCALE, np.expm1(np.minimum(x, 0.0)) * (SELU_SCALE * SELU_ALPHA))


def _hardswish_derivative(xp: Any, x: Any) -> Any:
    return xp.where(x <= -3.0, 0.0, xp.where(x < 3.0, x / 3.0 + 0.5, 1.0))


@elementwise(uses="x", derivative=_hardswish_derivative)
def hardswish(x: Array) -> Array:
    """Hard swish (Howard et al., 2019, MobileNetV3), as PyTorch's ``hardswish``:
    ``a * relu6(a + 3) / 6``.

    Gradient (PyTorch's, kinks included): ``0`` for ``a <= -3``, ``a / 3 + 1/2`` for
    ``-3 < a < 3``, ``1`` from 3 on.
    """
    return np.multiply(x, np.clip(x + 3.0, 0.0, 6.0)) / 6.0


@elementwise(uses="x", derivative=lambda xp, x: xp.where(xp.logical_and(x > -3.0, x < 3.0), 1.0 / 6.0, 0.0))
def hardsigmoid(x: Array) -> Array:
    """Hard sigmoid, as PyTorch's ``hardsigmoid``: ``relu6(a + 3) / 6``.

    Gradient: ``1/6`` for ``-3 < a < 3``, else ``0`` (also at the kinks, as PyTorch).
    """
    return np.clip(x + 3.0, 0.0, 6.0) / 6.0


# ----- more of PyTorch's activations (torch.nn.functional's names) ----------------------------


@elementwise(uses="x", derivative=lambda xp, x, lo, hi: xp.where(xp.logical_and(x > lo, x < hi), 1.0, 0.0))
def hardtanh(x: Array, min_val: float = -1.0, max_val: float = 1.0) -> Array:
    """``F.hardtanh``: ``a`` clamped into ``[min_val, max_val]``.

    Gradient (PyTorch's): ``1`` for ``min_val < a < max_val``, else ``0`` (also at the bounds,
    where :func:`clamp`'s is 1).

    Raises:
        ValueError: ``min_val > max_val``.
    """
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return np.clip(x, min_val, max_val)


@elementwise(uses="x", derivative=lambda xp, x: xp.where(xp.logical_and(x > 0.0, x < 6.0), 1.0, 0.0))
def relu6(x: Array) -> Array:
    """``F.relu6``: ``min(max(a, 0), 6)``, :func:`hardtanh` into ``[0, 6]`` (MobileNet's
    activation). Gradient: ``1`` for ``0 < a < 6``, else ``0`` (PyTorch's, at the kinks too)."""
    return np.clip(x, 0.0, 6.0)


@elementwise(uses="x", derivative=lambda xp, x: 1.0 / ((xp.abs(x) + 1.0) * (xp.abs(x) + 1.0)))
def softsign(x: Array) -> Array:
    """``F.softsign``: ``a / (1 + |a|)``. Gradient: ``1 / (1 + |a|)**2``."""
    return x / (np.abs(x) + 1.0)


@elementwise(uses="x", derivative=lambda xp, x: xp.tanh(x) * xp.tanh(x))
def tanhshrink(x: Array) -> Array:
    """``F.tanhshrink``: ``a - tanh(a)``. Gradient: ``tanh(a)**2``."""
    return x - np.tanh(x)


def _shrink_lambda(op: str, lambd: float) -> None:
    if not lambd >= 0.0:
        raise ValueError(f"{op}: lambda must be greater or equal to 0, but found to be {lambd}")


@elementwise(uses="x", derivative=lambda xp, x, lambd: xp.where(xp.abs(x) > lambd, 1.0, 0.0))
def softshrink(x: Array, lambd: float = 0.5) -> Array:
    """``F.softshrink`` (soft thresholding): ``a - lambd`` above ``lambd``, ``a + lambd`` below
    ``-lambd``, else ``0``. Gradient: ``1`` where ``|a| > lambd``, else ``0``.

    Raises:
        ValueError: ``lambd`` is negative or NaN (PyTorch's).
    """
    _shrink_lambda("softshrink", lambd)
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x.dtype.type(0)))


@elementwise(uses="x", derivative=lambda xp, x, lambd: xp.where(xp.abs(x) > lambd, 1.0, 0.0))
def hardshrink(x: Array, lambd: float = 0.5) -> Array:
    """``F.hardshrink``: ``a`` where ``|a| > lambd``, else ``0``. Gradient: ``1`` where
    ``|a| > lambd``, else ``0``.

    Raises:
        ValueError: ``lambd`` is negative or NaN.
    """
    _shrink_lambda("hardshrink", lambd)
    return np.where(np.abs(x) > lambd, x, x.dtype.type(0))


@elementwise(uses="x", derivative=lambda xp, x, threshold, value: xp.where(x > threshold, 1.0, 0.0))
def threshold(x: Array, threshold: float, value: float) -> Array:
    """``F.threshold``: ``a`` where ``a > threshold``, else ``value``. Gradient: ``1`` where
    ``a > threshold``, else ``0``."""
    return np.where(x > threshold, x, x.dtype.type(value))


@elementwise(uses="x", derivative=lambda xp, x, alpha: xp.where(x > 0.0, 1.0, xp.exp(x / alpha)))
def celu(x: Array, alpha: float = 1.0) -> Array:
    """``F.celu`` (continuously differentiable ELU, Barron 2017): ``a`` where ``a > 0``, else
    ``alpha * (exp(a / alpha) - 1)``. Gradient: ``1`` where ``a > 0``, else ``exp(a / alpha)``.

    Raises:
        ValueError: ``alpha`` is 0 (PyTorch's "ZeroDivisionError").
    """
    if alpha == 0.0:
        raise ValueError("celu: alpha must not be 0")
    with np.errstate(over="ignore"):
        return np.where(x > 0.0, x, np.expm1(x / alpha) * alpha)


def _gelu_kernel(out: Array, x: Array, g: Array, cdf: Array) -> None:
    _ka.gelu_backward(out, x, cdf, g)


def _gelu_derivative(xp: Any, x: Any) -> Any:  # Phi(x) + x phi(x)
    return xp.erfc(x * -_ka.INV_SQRT_2) * 0.5 + x * xp.exp(x * x * -0.5) * _ka.INV_SQRT_2PI


@elementwise(uses="x", derivative=_gelu_derivative, kernel=_gelu_kernel, aux=True, name="_gelu", public="gelu")
def _gelu(x: Array) -> tuple[Array, Array]:
    """Exact GELU ``a * Phi(a)`` and the saved ``Phi(a)`` (see :func:`gelu`)."""
    return _ka.gelu(x)


def _gelu_tanh_kernel(out: Array, x: Array, g: Array, s: Array) -> None:
    _ka.gelu_tanh_backward(out, x, s, g)


def _gelu_tanh_derivative(xp: Any, x: Any) -> Any:  # s + x s'
    c, kappa = _ka.SQRT_2_OVER_PI, _ka.GELU_TANH_KAPPA
    t = xp.tanh((x + x * x * x * kappa) * c)
    return (t + 1.0) * 0.5 + x * ((1.0 - t * t) * 0.5) * ((x * x * (3 * kappa) + 1.0) * c)


@elementwise(
    uses="x", derivative=_gelu_tanh_derivative, kernel=_gelu_tanh_kernel, aux=True, name="_gelu_tanh", public="gelu"
)
def _gelu_tanh(x: Array) -> tuple[Array, Array]:
    """GELU's tanh approximation and the saved ``s = (1 + t) / 2`` (see :func:`gelu`)."""
    return _ka.gelu_tanh(x)


def gelu(a: Tensor[S, T], approximate: Literal["none", "tanh"] = "none") -> Tensor[S, T]:
    """Gaussian error linear unit (Hendrycks & Gimpel, 2016), as PyTorch's ``gelu``.

    ``approximate="none"``: ``y = a * Phi(a)`` with the standard normal CDF
    ``Phi(a) = erfc(-a / sqrt(2)) / 2`` (float64: numba's ``math.erfc``, agreeing with
    ``math.erf`` to about 1e-15 relative; float32: the vectorized Cephes ``erfcf`` of
    :mod:`gradtape.devices.kernels.activations`, within about 1 float32 ulp). Gradient:
    ``Phi(a) + a * phi(a)`` with the density ``phi(a) = exp(-a**2 / 2) / sqrt(2 pi)``;
    ``Phi(a)`` is saved from the forward; the backward is one fused pass (float32) or numpy's
    ``exp`` and one fused pass (float64).

    ``approximate="tanh"``: ``y = 0.5 a (1 + t)`` with ``t = tanh(sqrt(2/pi) (a + 0.044715 a**3))``,
    computed as ``a * s`` with ``s = (1 + t) / 2`` a stable sigmoid (no cancellation in the
    negative tail). Gradient: ``0.5 (1 + t) + 0.5 a (1 - t**2) sqrt(2/pi) (1 + 3 * 0.044715 a**2)``
    (PyTorch's), from the saved ``s``, one fused pass.

    Raises:
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.
    """
    if approximate == "none":
        return _gelu(a)
    if approximate == "tanh":
        return _gelu_tanh(a)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def _softplus_kernel(out: Array, x: Array, g: Array, beta: float, threshold: float, s: Array) -> None:
    _k.addmul(out, s, g)


def _softplus_fresh(x: Array, g: Array, beta: float, threshold: float, s: Array) -> Array:
    return np.multiply(s, g)


def _softplus_derivative(xp: Any, x: Any, beta: float, threshold: float) -> Any:
    return xp.where(x * beta > threshold, 1.0, xp.sigmoid(x * beta))


@elementwise(uses="x", derivative=_softplus_derivative, kernel=_softplus_kernel, fresh=_softplus_fresh, aux=True)
def softplus(x: Array, beta: float = 1.0, threshold: float = 20.0) -> tuple[Array, Array]:
    """Smooth ReLU elementwise, with PyTorch's semantics: ``y = log(1 + exp(beta * a)) / beta``,
    and ``y = a`` where ``beta * a > threshold`` (for numerical stability). The log is
    computed as ``log1p(exp(-|z|)) + max(z, 0)`` with ``z = beta * a``, which cannot overflow.

    Gradient: ``sigmoid(beta * a)``, and exactly ``1`` where ``beta * a > threshold``; saved
    from the forward and accumulated with the fused ``addmul``.

    Raises:
        TypeError: ``beta`` or ``threshold`` is not a real number.
        ValueError: ``beta`` is 0 or not finite, or ``threshold`` is NaN.
    """
    if beta == 0.0 or not math.isfinite(beta):
        raise ValueError(f"softplus: beta must be a finite nonzero number, got {beta!r}")
    if math.isnan(threshold):
        raise ValueError("softplus: threshold is NaN")
    return _ka.softplus(x, beta, threshold)


def _int_abs(x: Array) -> Array:
    """``abs`` on integers (dtype kept; PyTorch refuses bools)."""
    if x.dtype.kind == "b":
        raise DTypeError(f"abs: not defined on bool tensors (shape {x.shape}), as in PyTorch; convert with .long()")
    return np.abs(x)


@elementwise(uses="x", derivative=lambda xp, x: xp.sign(x), kernel=_ka.abs_backward, integer=_int_abs)
def abs(x: Array) -> Array:
    """``|a|`` elementwise (also ``abs(t)``). Integer tensors keep their dtype, untraced (bool
    tensors raise ``DTypeError``, as PyTorch).

    Gradient: ``sign(a)``: ``1`` where ``a > 0``, ``-1`` where ``a < 0``, ``0`` at ``a == 0``
    (PyTorch's choice of subgradient), NaN at NaN; fused ``grad += sign(a) * g``.
    """
    return np.abs(x)


def _clamp_derivative(xp: Any, x: Any, lo: float, hi: float) -> Any:
    return xp.where(xp.logical_and(x >= lo, x <= hi), 1.0, 0.0)


@elementwise(uses="x", derivative=_clamp_derivative, kernel=_ka.clamp_backward, name="_clamp", public="clamp")
def _clamp(x: Array, lo: float, hi: float) -> Array:
    """``x`` clamped into ``[lo, hi]`` (see :func:`clamp`)."""
    return np.clip(x, lo, hi)


def clamp(a: Tensor[S, T], min: float | None = None, max: float | None = None) -> Tensor[S, T]:
    """Clamp elementwise into ``[min, max]`` (either bound may be omitted); NaN stays NaN.

    Gradient: ``1`` where ``min <= a <= max`` (bounds included, as PyTorch), else ``0`` (also at
    NaN); fused ``grad += g`` on that mask.

    Integer and bool tensors (PyTorch's): integer bounds keep an integer tensor's dtype and make
    a bool tensor int64; a float bound gives float32. Untraced: integers carry no gradient.
    :func:`clip` is its alias (``torch.clip``).

    Raises:
        ValueError: neither bound is given, a bound is NaN, ``min > max``, or an integer bound
            does not fit an integer tensor's dtype (``uint8`` clamped to 300).
        TypeError: a bound is not a real number (or None).
    """
    return _clamp_op("clamp", a, min, max)


def clip(a: Tensor[S, T], min: float | None = None, max: float | None = None) -> Tensor[S, T]:
    """PyTorch's ``torch.clip``, an alias of :func:`clamp` (same rules, gradient and errors,
    which name ``clip``)."""
    return _clamp_op("clip", a, min, max)


def _clamp_op(op: str, a: Tensor[S, T], lo: Any, hi: Any) -> Tensor[S, T]:
    """:func:`clamp` (``op`` names it in the errors: ``"clamp"`` or ``"clip"``)."""
    if lo is None and hi is None:
        raise ValueError(f"{op}: give at least one of min and max")
    if a.data.dtype.kind in "iub":
        return _int_clamp(op, a, lo, hi)
    low = -math.inf if lo is None else number(op, "min", lo)
    high = math.inf if hi is None else number(op, "max", hi)
    if math.isnan(low) or math.isnan(high):
        raise ValueError(f"{op}: bounds must not be NaN, got min={lo!r}, max={hi!r}")
    if low > high:
        raise ValueError(f"{op}: min ({lo!r}) is greater than max ({hi!r})")
    return _clamp(a, low, high)


def _int_clamp(op: str, a: Tensor[S, T], lo: Any, hi: Any) -> Tensor[S, T]:
    """:func:`clamp` of an integer or bool tensor (see there)."""
    bounds = [b for b in (lo, hi) if b is not None]
    for b in bounds:
        number(op, "min" if b is lo else "max", b)
    x = a.data
    if any(not isinstance(b, (int, np.integer)) for b in bounds):  # a float bound: float32, as PyTorch
        return _clamp_op(op, a._from_op(x.astype(np.float32), NONE_TAPE), lo, hi)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"{op}: min ({lo!r}) is greater than max ({hi!r})")
    base = x.astype(np.int64) if x.dtype.kind == "b" else x
    info = np.iinfo(base.dtype)
    for b in bounds:
        if not info.min <= int(b) <= info.max:
            raise ValueError(f"{op}: bound {b!r} does not fit the tensor's dtype {base.dtype} (as PyTorch refuses it)")
    low = info.min if lo is None else int(lo)
    high = info.max if hi is None else int(hi)
    return untraced(op, a, (a,), _int_clip, x, base.dtype.type(low), base.dtype.type(high))  # type: ignore[no-any-return]


def _int_clip(x: Array, low: Any, high: Any) -> Array:
    """:func:`clamp` of an integer or bool array (bool as int64) between integer bounds."""
    base = x.astype(np.int64) if x.dtype.kind == "b" else x
    y: Array = np.clip(base, low, high)
    return y


def clamp_min(a: Tensor[S, T], min: float) -> Tensor[S, T]:
    """``torch.clamp_min``: :func:`clamp` with only a lower bound (errors name ``clamp_min``).

    Raises:
        ValueError, TypeError: as :func:`clamp`.
    """
    return _clamp_op("clamp_min", a, min, None)


def clamp_max(a: Tensor[S, T], max: float) -> Tensor[S, T]:
    """``torch.clamp_max``: :func:`clamp` with only an upper bound (errors name ``clamp_max``).

    Raises:
        ValueError, TypeError: as :func:`clamp`.
    """
    return _clamp_op("clamp_max", a, None, max)


@elementwise(
    uses="x",
    derivative=lambda xp, x, nan, posinf, neginf: xp.where(xp.isfinite(x), 1.0, 0.0),
    name="_nan_to_num",
    public="nan_to_num",
)
def _nan_to_num(x: Array, nan: float, posinf: float, neginf: float) -> Array:
    """``nan_to_num`` with every replacement given (see :func:`nan_to_num`)."""
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def nan_to_num(
    a: Tensor[S, T], nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor[S, T]:
    """``torch.nan_to_num``: NaN replaced by ``nan``, ``inf`` by ``posinf`` and ``-inf`` by
    ``neginf`` (by default the largest and the most negative finite value of ``a``'s dtype);
    finite elements pass through. Gradient (PyTorch's): ``1`` where ``a`` is finite, ``0``
    where it was replaced.

    Raises:
        DTypeError: ``a`` is an integer or bool tensor. TypeError: a replacement is not a real number.
    """
    if a.data.dtype.kind != "f":
        float_data("nan_to_num", a)
    info = np.finfo(a.data.dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    return _nan_to_num(a, nan, hi, lo)


def _nans_to_kernel(out: Array, x: Array, g: Array, value: float) -> None:
    _ka.nans_to_backward(out, x, g)


@elementwise(uses="x", derivative=lambda xp, x, value: xp.where(xp.isnan(x), 0.0, 1.0), kernel=_nans_to_kernel)
def nans_to(x: Array, value: float) -> Array:
    """Replace NaN elements by ``value`` (dfdx's ``nans_to``); other elements, infinities
    included, pass through.

    Gradient: ``0`` where ``a`` was NaN, else ``1``; fused ``grad += g`` on that mask.

    Raises:
        TypeError: ``value`` is not a real number.
    """
    return np.where(np.isnan(x), value, x)
