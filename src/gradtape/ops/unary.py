"""Elementwise unary ops: neg, exp, log, relu, sin, and the activation family (abs, sqrt,
square, pow, cos, tanh, sigmoid, leaky_relu, gelu, silu, softplus, clamp, nans_to, recip).

Each op computes its forward with numpy's SIMD ufuncs (or, where numpy has no single
ufunc for it, a kernel of :mod:`gradtape.devices.kernels.activations`), saves what its
derivative needs, and states the derivative in its docstring; :func:`record_unary` does the
tape plumbing. Backward passes are fused numba kernels (``grad += f'(x) * g`` in one pass).
Shapes and dtypes are preserved: ``Tensor[S, T] -> Tensor[S, T]``; a float32 tensor stays
float32 (scalar arguments are converted to Python floats, which numpy does not promote).

Scalar arguments must be real numbers: others raise ``TypeError`` naming the op and the
argument; out-of-range values (``clamp`` with ``min > max``, ...) raise ``ValueError``.
Conventions at kinks and special values follow PyTorch (listed per op).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from gradtape._typing import S, T
from gradtape.devices.kernels import activations as _ka
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import DTypeError
from gradtape.ops._util import SCALARS, float_data, record_entry
from gradtape.ops.binary import record_scalar
from gradtape.tape import register_diff

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "abs",
    "clamp",
    "cos",
    "exp",
    "gelu",
    "leaky_relu",
    "log",
    "nans_to",
    "neg",
    "pow",
    "recip",
    "record_unary",
    "relu",
    "sigmoid",
    "silu",
    "sin",
    "softplus",
    "sqrt",
    "square",
    "tanh",
]

Array = np.ndarray[Any, Any]
_np_sin, _np_cos = np.sin, np.cos  # module globals: no attribute lookup on the hot path
Rule = Callable[["Gradients", int, Array], None]


def record_unary(
    a: Tensor[S, T], data: Array, rule: Callable[..., None], *saved: Any, diff: DiffOf | None = None
) -> Tensor[S, T]:
    """Wrap ``data`` as the output of an elementwise op on ``a`` and record its backward.

    ``rule(grads, a_id, g, *saved)`` accumulates ``a``'s gradient given the output's
    gradient ``g`` and the arrays ``saved`` from the forward; it runs only if the output
    received a gradient. A module-level ``rule`` with ``saved`` arrays costs no closure
    per call, a ``lambda`` capturing them one. ``diff(g, rebuild, out_id, a_id)``, if given, is
    the op's second rule: ``a``'s gradient as a tensor, computed from the gradient tensor ``g``
    with gradtape ops (``rebuild(id, array)`` gives the saved arrays back as tensors; see
    :func:`gradtape.tape.register_diff`).
    """
    if diff is not None:
        return record_entry(a, data, _unary_backward_d, rule, saved, diff)
    if len(saved) == 1:  # the common case: one saved array, passed without a tuple
        return record_entry(a, data, _unary_backward1, rule, saved[0])
    return record_entry(a, data, _unary_backward, rule, saved)


def _fused_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Any, Any, Array]) -> None:
    """The common elementwise backward: ``grad_a += ufunc(s, g)`` in one fused ``kernel`` pass,
    with ``s`` saved by the forward (entry ``(out.id, fn, a.id, kernel, ufunc, s)``)."""
    _, _, i, kernel, ufunc, s = entry
    grads._fused(i, kernel, ufunc, s, g)


def _fused_backward_gs(grads: Gradients, g: Array, entry: tuple[int, Any, int, Any, Any, Array]) -> None:
    """``grad_a += ufunc(g, s)`` in one fused ``kernel`` pass (operands the other way round)."""
    _, _, i, kernel, ufunc, s = entry
    grads._fused(i, kernel, ufunc, g, s)


DiffOf = Callable[[Any, Callable[[int, Array], Any], int, int], Any]
"""``diff(g, rebuild, out_id, a_id) -> a's gradient tensor``: a one-input op's second rule."""


def _unary_backward_d(grads: Gradients, g: Array, entry: tuple[Any, ...]) -> None:
    _, _, aid, rule, saved, _ = entry
    rule(grads, aid, g, *saved)


def _unary_backward1(grads: Gradients, g: Array, entry: tuple[int, Any, int, Callable[..., None], Any]) -> None:
    _, _, aid, rule, saved = entry
    rule(grads, aid, g, saved)


def _unary_backward(
    grads: Gradients, g: Array, entry: tuple[int, Any, int, Callable[..., None], tuple[Any, ...]]
) -> None:
    # recorded with its arguments, not as a closure (see tape._Entry)
    _, _, aid, rule, saved = entry
    rule(grads, aid, g, *saved)


def neg(a: Tensor[S, T]) -> Tensor[S, T]:
    """``-a`` elementwise. Gradient: ``-1``."""
    return record_scalar(a, np.negative(a.data), -1.0)  # type: ignore[no-any-return]


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
    return record_unary(a, x.astype(target), _cast_back, source, diff=lambda g, rebuild, o, i: to_dtype(g, source))


def _cast_back(grads: Gradients, i: int, g: Array, source: np.dtype[Any]) -> None:
    """to_dtype's first rule: the gradient in the input's dtype."""
    grads._accum(i, g.astype(source))


def exp(a: Tensor[S, T]) -> Tensor[S, T]:
    """``e**a`` elementwise. Gradient: ``e**a``, the saved output (fused ``grad += y * g``)."""
    y = np.exp(a.data)
    return record_entry(a, y, _exp_backward, _k.addmul, np.multiply, y)


def _exp_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Any, Any, Array]) -> None:
    """exp's first rule: ``_fused_backward`` under exp's own name, so its differentiable rule
    (``g * y``) is found without asking what the saved array means."""
    _, _, i, kernel, ufunc, s = entry
    grads._fused(i, kernel, ufunc, s, g)


def log(a: Tensor[S, T]) -> Tensor[S, T]:
    """Natural logarithm elementwise (``nan`` for negative inputs, ``-inf`` at 0, as numpy).

    Gradient: ``1 / a`` (fused ``grad += g / a``).
    """
    x = a.data
    return record_entry(a, np.log(x), _fused_backward_gs, _k.adddiv, np.divide, x)


def relu(a: Tensor[S, T]) -> Tensor[S, T]:
    """``max(a, 0)`` elementwise. Gradient: ``1`` where ``a > 0``, else ``0`` (also at 0, as
    PyTorch); fused ``grad += g * (a > 0)``."""
    x = a.data
    return record_entry(a, _ka.relu(x), _fused_backward, _k.relu_backward, _k.relu_grad, x)


def sin(a: Tensor[S, T]) -> Tensor[S, T]:
    """Sine elementwise (radians). Gradient: ``cos(a)``, computed in backward with numpy's
    SIMD ``cos`` and accumulated with the fused ``addmul``."""
    x = a.data
    return record_entry(a, _np_sin(x), _sin_backward, x)


def _sin_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Array]) -> None:
    grads._addmul_scratch(entry[2], _np_cos(entry[3]), g)


# ----- the activation family -------------------------------------------------------------
#
# Backward rules accumulate with ``grads._fused``: in place through a fused kernel of
# ``devices/kernels/activations.py`` when the input's gradient buffer exists and is owned,
# else as a fresh array (the same kernel run on zeros).


def _number(op: str, name: str, v: object) -> float:
    """``v`` as a Python float: numpy treats those as "weak" scalars (NEP 50), so a float32
    tensor stays float32 where a ``np.float64`` argument would promote it.

    Raises:
        TypeError: ``v`` is not a real number (a tensor, an array, a string, a complex, None).
    """
    if v.__class__ is float:
        return v
    if isinstance(v, SCALARS) and not isinstance(v, np.complexfloating):
        return float(v)
    raise TypeError(f"{op}: {name} must be a real number (int or float), got {type(v).__name__}")


def _fresh(kernel: Callable[[Array, Array, Array], None]) -> Callable[[Array, Array], Array]:
    """``f(saved, g)`` as a new array, from a kernel ``kernel(out, saved, g)`` doing ``out += f``."""

    def fresh(saved: Array, g: Array) -> Array:
        out = np.zeros(g.shape, g.dtype)
        kernel(out, saved, g)
        return out

    return fresh


def _rule(kernel: Callable[[Array, Array], None]) -> Rule:
    """The backward rule ``grad_a += f(g)`` for a kernel ``kernel(out, g)`` doing ``out += f(g)``
    in one pass (closing over the op's saved arrays and scalars)."""

    def acc(out: Array, g: Array, _: Array) -> None:
        kernel(out, g)

    def fresh(g: Array, _: Array) -> Array:
        out = np.zeros(g.shape, g.dtype)
        kernel(out, g)
        return out

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._fused(i, acc, fresh, g, g)

    return rule


_abs_grad = _fresh(_ka.abs_backward)
_sqrt_grad = _fresh(_ka.sqrt_backward)
_square_grad = _fresh(_ka.square_backward)
_cos_grad = _fresh(_ka.cos_backward)
_tanh_grad = _fresh(_ka.tanh_backward)
_sigmoid_grad = _fresh(_ka.sigmoid_backward)
_nans_to_grad = _fresh(_ka.nans_to_backward)
_recip_grad = _fresh(_ka.recip_backward)


def abs(a: Tensor[S, T]) -> Tensor[S, T]:
    """``|a|`` elementwise (also ``abs(t)``).

    Gradient: ``sign(a)``: ``1`` where ``a > 0``, ``-1`` where ``a < 0``, ``0`` at ``a == 0``
    (PyTorch's choice of subgradient), NaN at NaN; fused ``grad += sign(a) * g``.
    """
    x = a.data
    return record_entry(a, np.abs(x), _fused_backward, _ka.abs_backward, _abs_grad, x)


def sqrt(a: Tensor[S, T]) -> Tensor[S, T]:
    """Square root elementwise: ``y = sqrt(a)`` (NaN for negative inputs, as numpy).

    Gradient: ``1 / (2 sqrt(a)) = 1 / (2 y)`` (``inf`` at ``a == 0``, as PyTorch); fused
    ``grad += g / (2 y)`` from the saved output.
    """
    y = np.sqrt(a.data)
    return record_entry(a, y, _fused_backward, _ka.sqrt_backward, _sqrt_grad, y)


def square(a: Tensor[S, T]) -> Tensor[S, T]:
    """``a ** 2`` elementwise. Gradient: ``2 a``; fused ``grad += 2 * a * g``."""
    x = a.data
    return record_entry(a, np.square(x), _fused_backward, _ka.square_backward, _square_grad, x)


def pow(a: Tensor[S, T], p: float) -> Tensor[S, T]:
    """``a ** p`` elementwise for a real number ``p`` (also ``t ** p``), with numpy's ``power``
    semantics: NaN for a negative base and a non-integer ``p``, ``inf`` for ``0 ** -1``.

    Gradient: ``p * a ** (p - 1)``, fused as ``grad += p * a**(p-1) * g`` with ``a**(p-1)``
    from numpy in backward; ``p == 2`` is :func:`square`'s, ``p == 1`` passes ``g`` through,
    and ``p == 0`` gives exactly ``0`` (also where ``a`` is 0 or NaN), as PyTorch.

    Raises:
        TypeError: ``p`` is not a real number (tensor exponents are not supported).
    """
    p = _number("pow", "exponent p", p)
    x = a.data
    if p == 2.0:
        return square(a)
    if p == 1.0:
        return record_scalar(a, x.copy(), 1.0)  # type: ignore[no-any-return]
    y = np.power(x, p)
    if p == 0.0:
        return record_unary(
            a, y, lambda grads, i, g: grads._accum(i, np.zeros(g.shape, g.dtype)), diff=lambda g, r, o, i: g * 0.0
        )
    return record_entry(a, y, _pow_backward, x, p)


def _pow_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, Array, float]) -> None:
    _, _, i, x, p = entry

    def acc(out: Array, gg: Array, _: Array) -> None:
        _ka.pow_backward(out, x, gg, p)

    def fresh(gg: Array, _: Array) -> Array:
        out = np.zeros(gg.shape, gg.dtype)
        _ka.pow_backward(out, x, gg, p)
        return out

    grads._fused(i, acc, fresh, g, g)


def cos(a: Tensor[S, T]) -> Tensor[S, T]:
    """Cosine elementwise (radians). Gradient: ``-sin(a)``, computed in backward with numpy's
    SIMD ``sin`` and accumulated in one fused pass ``grad += -sin(a) * g``."""
    x = a.data
    return record_entry(a, np.cos(x), _fused_backward, _ka.cos_backward, _cos_grad, x)


def tanh(a: Tensor[S, T]) -> Tensor[S, T]:
    """Hyperbolic tangent elementwise: ``y = tanh(a)``. Gradient: ``1 - y**2`` from the saved
    output; fused ``grad += (1 - y**2) * g``."""
    y = np.tanh(a.data)
    return record_entry(a, y, _fused_backward, _ka.tanh_backward, _tanh_grad, y)


def sigmoid(a: Tensor[S, T]) -> Tensor[S, T]:
    """Logistic sigmoid elementwise: ``y = 1 / (1 + exp(-a))``, computed without overflow
    from ``exp(-|a|)`` (accurate in both tails, see :func:`~gradtape.devices.kernels.activations.sigmoid`).

    Gradient: ``y * (1 - y)`` from the saved output; fused ``grad += y * (1 - y) * g``.
    """
    y = _ka.sigmoid(a.data)
    return record_entry(a, y, _fused_backward, _ka.sigmoid_backward, _sigmoid_grad, y)


def leaky_relu(a: Tensor[S, T], negative_slope: float = 0.01) -> Tensor[S, T]:
    """``a`` where ``a > 0``, else ``negative_slope * a``, elementwise (PyTorch's ``leaky_relu``).

    Gradient: ``1`` where ``a > 0``, else ``negative_slope`` (also at ``a == 0``, as PyTorch);
    fused ``grad += g`` or ``grad += negative_slope * g``.

    Raises:
        TypeError: ``negative_slope`` is not a real number.
    """
    s = _number("leaky_relu", "negative_slope", negative_slope)
    x = a.data
    y = np.where(x > 0, x, x * s)
    slope = np.where(x > 0, x.dtype.type(1), x.dtype.type(s))  # piecewise constant: leaky_relu'' = 0
    return record_unary(
        a,
        y,
        _rule(lambda out, g: _ka.leaky_relu_backward(out, x, g, s)),
        diff=lambda g, rebuild, oid, aid: g * g._like(slope),
    )


def gelu(a: Tensor[S, T], approximate: Literal["none", "tanh"] = "none") -> Tensor[S, T]:
    """Gaussian error linear unit (Hendrycks & Gimpel, 2016), as PyTorch's ``gelu``.

    ``approximate="none"``: ``y = a * Phi(a)`` with the standard normal CDF
    ``Phi(a) = erfc(-a / sqrt(2)) / 2`` (numba's ``math.erfc``; float64 results agree with
    ``math.erf`` to about 1e-15 relative). Gradient: ``Phi(a) + a * phi(a)`` with the density
    ``phi(a) = exp(-a**2 / 2) / sqrt(2 pi)``; ``Phi(a)`` is saved from the forward, ``exp`` runs
    in numpy in backward, then one fused pass.

    ``approximate="tanh"``: ``y = 0.5 a (1 + t)`` with ``t = tanh(sqrt(2/pi) (a + 0.044715 a**3))``,
    computed as ``a * s`` with ``s = (1 + t) / 2`` a stable sigmoid (no cancellation in the
    negative tail). Gradient: ``0.5 (1 + t) + 0.5 a (1 - t**2) sqrt(2/pi) (1 + 3 * 0.044715 a**2)``
    (PyTorch's), from the saved ``s``, one fused pass.

    Raises:
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.
    """
    x = a.data
    if approximate == "none":
        y, cdf = _ka.gelu(x)

        def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # Phi(x) + x phi(x)
            xt = rebuild(aid, x)
            return g * (_normal_cdf(xt) + xt * (xt * xt * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi)))

        return record_unary(a, y, _rule(lambda out, g: _ka.gelu_backward(out, x, cdf, g)), diff=diff)
    if approximate == "tanh":
        y, s = _ka.gelu_tanh(x)

        def diff_tanh(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # s + x s'
            xt = rebuild(aid, x)
            c = math.sqrt(2.0 / math.pi)
            t = ((xt + xt * xt * xt * 0.044715) * c).tanh()
            return g * ((t + 1.0) * 0.5 + xt * ((1.0 - t * t) * 0.5) * ((xt * xt * (3 * 0.044715) + 1.0) * c))

        return record_unary(a, y, _rule(lambda out, g: _ka.gelu_tanh_backward(out, x, s, g)), diff=diff_tanh)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(a: Tensor[S, T]) -> Tensor[S, T]:
    """Sigmoid linear unit (swish) elementwise: ``y = a * s`` with ``s = sigmoid(a)``.

    Gradient: ``s * (1 + a * (1 - s))`` from the saved ``s``; one fused pass.
    """
    x = a.data
    s = _ka.sigmoid(x)

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # d/dx x s(x) = s (1 + x (1 - s))
        xt = rebuild(aid, x)
        st = xt.sigmoid()
        return g * (st * (1.0 + xt * (1.0 - st)))

    return record_unary(a, np.multiply(x, s), _rule(lambda out, g: _ka.silu_backward(out, x, s, g)), diff=diff)


def softplus(a: Tensor[S, T], beta: float = 1.0, threshold: float = 20.0) -> Tensor[S, T]:
    """Smooth ReLU elementwise, with PyTorch's semantics: ``y = log(1 + exp(beta * a)) / beta``,
    and ``y = a`` where ``beta * a > threshold`` (for numerical stability). The log is
    computed as ``log1p(exp(-|z|)) + max(z, 0)`` with ``z = beta * a``, which cannot overflow.

    Gradient: ``sigmoid(beta * a)``, and exactly ``1`` where ``beta * a > threshold``; saved
    from the forward and accumulated with the fused ``addmul``.

    Raises:
        TypeError: ``beta`` or ``threshold`` is not a real number.
        ValueError: ``beta`` is 0 or not finite, or ``threshold`` is NaN.
    """
    b = _number("softplus", "beta", beta)
    thr = _number("softplus", "threshold", threshold)
    if b == 0.0 or not math.isfinite(b):
        raise ValueError(f"softplus: beta must be a finite nonzero number, got {beta!r}")
    if math.isnan(thr):
        raise ValueError("softplus: threshold is NaN")
    x = a.data
    y, s = _ka.softplus(x, b, thr)

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # sigmoid(beta x), 1 past the threshold
        from gradtape.ops.compare import where

        return where(x * b > thr, g, g * (rebuild(aid, x) * b).sigmoid())

    return record_unary(a, y, _softplus_rule, s, diff=diff)


def clamp(a: Tensor[S, T], min: float | None = None, max: float | None = None) -> Tensor[S, T]:
    """Clamp elementwise into ``[min, max]`` (either bound may be omitted); NaN stays NaN.

    Gradient: ``1`` where ``min <= a <= max`` (bounds included, as PyTorch), else ``0`` (also at
    NaN); fused ``grad += g`` on that mask.

    Raises:
        ValueError: neither bound is given, a bound is NaN, or ``min > max``.
        TypeError: a bound is not a real number (or None).
    """
    if min is None and max is None:
        raise ValueError("clamp: give at least one of min and max")
    lo = -math.inf if min is None else _number("clamp", "min", min)
    hi = math.inf if max is None else _number("clamp", "max", max)
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"clamp: bounds must not be NaN, got min={min!r}, max={max!r}")
    if lo > hi:
        raise ValueError(f"clamp: min ({min!r}) is greater than max ({max!r})")
    x = a.data

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # the mask is piecewise constant
        return g * g._like(((x >= lo) & (x <= hi)).astype(x.dtype))

    return record_unary(a, np.clip(x, lo, hi), _rule(lambda out, g: _ka.clamp_backward(out, x, g, lo, hi)), diff=diff)


def nans_to(a: Tensor[S, T], value: float) -> Tensor[S, T]:
    """Replace NaN elements by ``value`` (dfdx's ``nans_to``); other elements, infinities
    included, pass through.

    Gradient: ``0`` where ``a`` was NaN, else ``1``; fused ``grad += g`` on that mask.

    Raises:
        TypeError: ``value`` is not a real number.
    """
    v = _number("nans_to", "value", value)
    x = a.data
    y = np.where(np.isnan(x), v, x)
    return record_entry(a, y, _fused_backward, _ka.nans_to_backward, _nans_to_grad, x)


def recip(a: Tensor[S, T]) -> Tensor[S, T]:
    """Reciprocal ``y = 1 / a`` elementwise (``inf`` at 0, as numpy).

    Gradient: ``-1 / a**2 = -y**2`` from the saved output; fused ``grad -= y**2 * g``.
    """
    y = np.reciprocal(a.data)
    return record_entry(a, y, _fused_backward, _ka.recip_backward, _recip_grad, y)


# ----- differentiable rules (higher-order derivatives; see gradtape.tape.register_diff) ------
#
# Each op's second rule, beside its first: the same derivative written in gradtape ops on the
# tensors the forward saved (``rebuild(id, array)``), used only when gradients are recorded.


def _softplus_rule(grads: Gradients, i: int, g: Array, s: Array) -> None:
    """softplus's first rule: ``grad += s * g`` (``s`` the saved slope) in one fused pass."""
    grads._fused(i, _k.addmul, np.multiply, s, g)


def _normal_cdf(x: Any) -> Any:
    """The standard normal CDF of a tensor as a recorded op (gelu's second rule): forward
    ``erfc(-x / sqrt(2)) / 2``, backward the density ``exp(-x**2 / 2) / sqrt(2 pi)`` in
    gradtape ops, so it differentiates to any order."""
    from gradtape.autograd import Function, FunctionCtx

    class NormalCDF(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, t: Any) -> Any:
            ctx.save_for_backward(t)
            return t._like(np.asarray(0.5 * _erfc(-t.data / math.sqrt(2.0)), dtype=t.dtype))

        @staticmethod
        def backward(ctx: FunctionCtx, go: Any) -> Any:
            t: Any = ctx.saved_tensors[0]
            return go * (t * t * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))

    return NormalCDF.apply(x)


_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _d_fused(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    oid, _, i, kernel, _, s = entry
    if kernel is _ka.square_backward:  # s = x
        return [(i, g * rebuild(i, s) * 2.0)]
    if kernel is _ka.tanh_backward:  # s = y
        y = rebuild(oid, s)
        return [(i, g * (1.0 - y * y))]
    if kernel is _ka.sigmoid_backward:  # s = y
        y = rebuild(oid, s)
        return [(i, g * y * (1.0 - y))]
    if kernel is _ka.sqrt_backward:  # s = y
        return [(i, g * 0.5 / rebuild(oid, s))]
    if kernel is _ka.recip_backward:  # s = y
        y = rebuild(oid, s)
        return [(i, -(g * y * y))]
    if kernel is _ka.cos_backward:  # s = x
        return [(i, -(g * rebuild(i, s).sin()))]
    if kernel is _ka.nans_to_backward:  # s = x; the gradient passes where x is not NaN
        return [(i, g * g._like((~np.isnan(s)).astype(g.dtype)))]
    if kernel is _ka.abs_backward:  # s = x; sign(x) is a constant (abs'' = 0 away from 0)
        return [(i, g * g._like(np.sign(s).astype(g.dtype)))]
    if kernel is _k.relu_backward:  # s = x; the mask is a constant (relu'' = 0)
        return [(i, g * g._like((s > 0).astype(g.dtype)))]
    from gradtape.errors import TapeError

    raise TapeError(
        f"the backward of the elementwise op with kernel {getattr(kernel, '__name__', kernel)!r} has no "
        "differentiable form yet, so gradients of gradients cannot flow through it"
    )


def _d_fused_gs(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    _, _, i, kernel, _, s = entry
    if kernel is _k.adddiv:  # log: s = x
        return [(i, g / rebuild(i, s))]
    return _d_fused(g, entry, rebuild)


register_diff(_fused_backward, _d_fused)
register_diff(_fused_backward_gs, _d_fused_gs)


def _d_exp(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    return [(entry[2], g * rebuild(entry[0], entry[5]))]  # g * y


def _d_sin(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    x: Any = rebuild(entry[2], entry[3])
    return [(entry[2], g * x.cos())]


def _d_pow(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    _, _, i, xd, p = entry
    x: Any = rebuild(i, xd)
    return [(i, g * x ** (p - 1.0) * p)]


register_diff(_exp_backward, _d_exp)
register_diff(_unary_backward_d, lambda g, entry, rebuild: [(entry[2], entry[5](g, rebuild, entry[0], entry[2]))])
register_diff(_sin_backward, _d_sin)
register_diff(_pow_backward, _d_pow)
