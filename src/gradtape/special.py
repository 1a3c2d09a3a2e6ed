"""PyTorch's ``torch.special``: the special functions that gradtape's ops compose (so each has
both gradient rules: the first, and the second a Hessian needs).

Re-exported unchanged (the same objects as the package's top level): :func:`erf`,
:func:`erfc`, :func:`expm1`, :func:`exp2`, :func:`log1p`, :func:`round`, :func:`logit`,
:func:`logsumexp`, and :func:`expit` (``gradtape.sigmoid``). Written here: :func:`xlogy`,
:func:`xlog1py`, :func:`entr`, :func:`sinc`, :func:`ndtr`, :func:`log_ndtr`,
:func:`softmax`, :func:`log_softmax`.

Not provided (each needs a derivative kernel gradtape's ops do not have): ``gammaln``,
``digamma``/``psi``, ``polygamma``, ``multigammaln``, ``erfinv``, ``erfcx``, ``ndtri``,
``i0``, ``i0e``, ``i1``, ``i1e``, the Bessel, Airy, Chebyshev/Hermite/Laguerre/Legendre polynomial functions,
``gammainc``/``gammaincc``, ``zeta`` and ``spherical_bessel_j0``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradtape import ops as _ops
from gradtape._torch_more import broadcast_tensors as _broadcast_tensors
from gradtape._torch_more import logit
from gradtape._typing import S, T
from gradtape.creation import full_like as _full_like
from gradtape.errors import DTypeError
from gradtape.ops._function import Function, FunctionCtx
from gradtape.ops._util import tensor_arg as _tensor
from gradtape.tensor import Tensor

__all__ = [
    "entr",
    "erf",
    "erfc",
    "exp2",
    "expit",
    "expm1",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "ndtr",
    "round",
    "sinc",
    "softmax",
    "xlog1py",
    "xlogy",
]

erf = _ops.erf
erfc = _ops.erfc
expm1 = _ops.expm1
exp2 = _ops.exp2
log1p = _ops.log1p
round = _ops.round
expit = _ops.sigmoid
logsumexp = _ops.logsumexp
# ``logit`` (torch.logit and torch.special.logit, with ``eps``) is gradtape.logit, imported above.

_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


# ----- xlogy, xlog1py ----------------------------------------------------------------------


def _pair(op: str, input: Any, other: Any) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
    """The operands as float tensors of one broadcast shape (a Python number becomes a
    constant tensor like the other operand), as PyTorch's ``Tensor``/``Scalar`` overloads."""
    a_t = isinstance(input, Tensor)
    b_t = isinstance(other, Tensor)
    if not a_t and not b_t:
        raise TypeError(f"special.{op}: at least one of input and other must be a Tensor")
    if not a_t:
        if not isinstance(input, int | float) or isinstance(input, bool):
            raise TypeError(f"special.{op}: input must be a Tensor or a number, got {type(input).__name__}")
        b = _float(op, other, "other")
        return _full_like(b, float(input)), b
    if not b_t:
        if not isinstance(other, int | float) or isinstance(other, bool):
            raise TypeError(f"special.{op}: other must be a Tensor or a number, got {type(other).__name__}")
        a = _float(op, input, "input")
        return a, _full_like(a, float(other))
    a, b = _tensor(f"special.{op}", input), _tensor(f"special.{op}", other, "other")
    if a.dtype.kind != "f" and b.dtype.kind == "f":  # an integer tensor takes the float one's dtype
        a = a.to(b.dtype)
    elif b.dtype.kind != "f" and a.dtype.kind == "f":
        b = b.to(a.dtype)
    a, b = _float(op, a, "input"), _float(op, b, "other")
    if a.dtype != b.dtype:  # float32 with float64: gradtape does not mix float precisions silently
        raise DTypeError(f"special.{op}: dtypes differ: {a.dtype} and {b.dtype} (convert one with .to(dtype))")
    if a.shape != b.shape:
        a, b = _broadcast_tensors(a, b)
    return a, b


def _float(op: str, x: Any, name: str) -> Tensor[Any, Any]:
    """``x`` as a float tensor (an integer or bool tensor is cast to float32, as PyTorch)."""
    t = _tensor(f"special.{op}", x, name)
    if t.dtype.kind != "f":
        t = t.to(np.float32)
    return t


def _xlog_value(x: Tensor[Any, Any], logy: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
    """``x * logy``, ``0`` where ``x == 0`` and ``y`` is not NaN."""
    zero = _ops.logical_and(x == 0, _ops.logical_not(_ops.isnan(y)))
    return _ops.where(zero, 0.0, x * logy)


class _XLogY(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
        ctx.save_for_backward(x, y)
        return _xlog_value(x, _ops.log(y), y)

    @staticmethod
    def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
        x, y = ctx.saved_tensors
        assert x is not None and y is not None
        gx = _ops.where(_ops.logical_and(x == 0, y <= 0), 0.0, _XLogY.apply(g, y))
        gy = g * x / y
        return gx, gy


class _XLog1pY(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
        ctx.save_for_backward(x, y)
        return _xlog_value(x, _ops.log1p(y), y)

    @staticmethod
    def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
        x, y = ctx.saved_tensors
        assert x is not None and y is not None
        gx = _ops.where(_ops.logical_and(x == 0, y <= -1), 0.0, _XLog1pY.apply(g, y))
        gy = g * x / (y + 1)
        return gx, gy


def xlogy(input: Tensor[Any, Any] | float, other: Tensor[Any, Any] | float) -> Tensor[Any, Any]:
    """``torch.special.xlogy``: ``input * log(other)`` elementwise (broadcasting; either
    operand may be a Python number), with ``xlogy(0, y) = 0`` for every ``y`` but NaN
    (``xlogy(0, nan)`` is NaN), as PyTorch.

    Gradients (PyTorch's): ``d/d input = xlogy(grad, other)``, set to ``0`` where
    ``input == 0`` and ``other <= 0`` (so ``0`` at ``(0, 0)``, ``log(other)`` at ``input == 0,
    other > 0``); ``d/d other = grad * input / other`` (NaN at ``(0, 0)``). Both are built from
    ops, so they can be differentiated again.

    Raises:
        TypeError: neither operand is a tensor, or one is neither a tensor nor a number.
        ShapeError: the shapes do not broadcast. DTypeError: float32 with float64 (gradtape
        does not promote one float precision to the other).
    """
    x, y = _pair("xlogy", input, other)
    out: Tensor[Any, Any] = _XLogY.apply(x, y)
    return out


def xlog1py(input: Tensor[Any, Any] | float, other: Tensor[Any, Any] | float) -> Tensor[Any, Any]:
    """``torch.special.xlog1py``: ``input * log1p(other)`` elementwise (broadcasting; either
    operand may be a Python number), ``0`` where ``input == 0`` and ``other`` is not NaN.

    Gradients (PyTorch's): ``d/d input = xlog1py(grad, other)``, ``0`` where ``input == 0``
    and ``other <= -1``; ``d/d other = grad * input / (1 + other)``. Differentiable again.

    Raises:
        TypeError: neither operand is a tensor, or one is neither a tensor nor a number.
        ShapeError: the shapes do not broadcast. DTypeError: float32 with float64 (gradtape
        does not promote one float precision to the other).
    """
    x, y = _pair("xlog1py", input, other)
    out: Tensor[Any, Any] = _XLog1pY.apply(x, y)
    return out


# ----- entr, sinc --------------------------------------------------------------------------


class _Entr(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        ctx.save_for_backward(x)
        pos = _ops.where(x > 0, x, 1.0)
        inner = _ops.where(x == 0, 0.0, _full_like(x, -math.inf))
        return _ops.where(x > 0, -pos * _ops.log(pos), _ops.where(_ops.isnan(x), x, inner))

    @staticmethod
    def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> Tensor[Any, Any]:
        (x,) = ctx.saved_tensors
        assert x is not None
        return g * -(_ops.log(x) + 1.0)


def entr(input: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.special.entr``: ``-x log(x)`` for ``x > 0``, ``0`` at ``x == 0``, ``-inf`` for
    ``x < 0`` (NaN stays NaN).

    Gradient (PyTorch's): ``-(1 + log(x))`` everywhere: ``+inf`` at ``0``, NaN for ``x < 0``;
    the second derivative is ``-1/x``.

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    x = _float("entr", input, "input")
    out: Tensor[S, T] = _Entr.apply(x)
    return out


def sinc(input: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.special.sinc``: the normalized sinc ``sin(pi x) / (pi x)``, ``1`` at ``x == 0``.

    Gradient: ``(cos(pi x) - sinc(x)) / x``, ``0`` at ``x == 0`` (PyTorch's); built from ops,
    so it can be differentiated again (except at ``x == 0``, where the second derivative is
    ``0`` here and PyTorch's is too, though the function's is ``-pi^2/3``).

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    x = _float("sinc", input, "input")
    zero = x == 0
    safe = _ops.where(zero, 1.0, x)
    px = safe * math.pi
    out: Tensor[S, T] = _ops.where(zero, 1.0, _ops.sin(px) / px)
    return out


# ----- the normal distribution's CDF -------------------------------------------------------


def ndtr(input: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.special.ndtr``: the standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``, computed
    as ``erfc(-x / sqrt 2) / 2`` (no cancellation for negative ``x``).

    Gradient: the normal density ``exp(-x^2 / 2) / sqrt(2 pi)``.

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    x = _float("ndtr", input, "input")
    out: Tensor[S, T] = _ops.erfc(x * -_SQRT1_2) * 0.5
    return out


_LOG_NDTR_TAIL = -20.0
_ASYMPTOTIC_TERMS = 12


def log_ndtr(input: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.special.log_ndtr``: ``log(ndtr(x))``, accurate over the whole line: for
    ``x > -1`` as ``log1p(-erfc(x / sqrt 2) / 2)``; for ``-20 <= x <= -1`` as
    ``log(erfc(-x / sqrt 2) / 2)``; below ``-20`` (where ``erfc`` underflows further out) by
    the asymptotic series ``-x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - ...)``
    (twelve terms: float64 precision there).

    Gradient: ``exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi)`` (the density over the CDF), built
    from ops so that it can be differentiated again.

    Raises:
        TypeError: ``input`` is not a tensor.
    """
    x = _float("log_ndtr", input, "input")
    upper = x > -1.0
    tail = x < _LOG_NDTR_TAIL
    # each branch sees inputs in its own range, so no branch makes an inf/NaN gradient
    xu = _ops.where(upper, x, 0.0)
    xm = _ops.where(_ops.logical_or(upper, tail), -2.0, x)
    xt = _ops.where(tail, x, 2.0 * _LOG_NDTR_TAIL)
    up = _ops.log1p(_ops.erfc(xu * _SQRT1_2) * -0.5)
    mid = _ops.log(_ops.erfc(xm * -_SQRT1_2) * 0.5)
    inv2 = 1.0 / (xt * xt)
    term = xt * 0.0 + 1.0
    series = term
    for k in range(1, _ASYMPTOTIC_TERMS + 1):
        term = term * inv2 * -(2.0 * k - 1.0)
        series = series + term
    low = xt * xt * -0.5 - _ops.log(-xt) - _LOG_SQRT_2PI + _ops.log(series)
    out: Tensor[S, T] = _ops.where(upper, up, _ops.where(tail, low, mid))
    return out


# ----- softmax, log_softmax ----------------------------------------------------------------


def _cast(op: str, input: Any, dtype: Any) -> Tensor[Any, Any]:
    x = _tensor(f"special.{op}", input)
    if dtype is not None:
        x = x.to(dtype)
    return x


def softmax(input: Tensor[S, T], dim: int, *, dtype: Any = None) -> Tensor[S, T]:
    """``torch.special.softmax``: ``exp(x) / sum(exp(x))`` along ``dim`` (``input`` cast to
    ``dtype`` first when given). Gradient: ``s * (g - sum(g * s, dim))``.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: ``dim`` is out of range.
    """
    out: Tensor[S, T] = _ops.softmax(_cast("softmax", input, dtype), dim=dim)
    return out


def log_softmax(input: Tensor[S, T], dim: int, *, dtype: Any = None) -> Tensor[S, T]:
    """``torch.special.log_softmax``: ``x - logsumexp(x, dim)`` (``input`` cast to ``dtype``
    first when given). Gradient: ``g - exp(out) * sum(g, dim)``.

    Raises:
        TypeError: ``input`` is not a tensor. ShapeError: ``dim`` is out of range.
    """
    out: Tensor[S, T] = _ops.log_softmax(_cast("log_softmax", input, dtype), dim=dim)
    return out
