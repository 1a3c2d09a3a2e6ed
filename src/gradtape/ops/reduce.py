"""Reductions: sum, mean, max, min, var, std and logsumexp over all axes or a set of axes,
with ``keepdims``.

Typing: a full reduction gives ``Tensor[Rank0, T]``; ``axis=0`` / ``axis=1`` of a
``Rank2[A, B]`` gives ``Rank1[B]`` / ``Rank1[A]``; other axis sets type as ``Any``.
Backward broadcasts the output's gradient back over the reduced axes.
"""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape._typing import typed_as
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import ShapeError
from gradtape.ops._signatures import reduce as _sig
from gradtape.ops._util import SCALARS, float_data, normalize_axes
from gradtape.tape import NONE_TAPE, op_tape, record, register_diff

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["logsumexp", "max", "mean", "min", "std", "sum", "var"]

Array = np.ndarray[Any, Any]


def _reduce(op: str, a: Tensor[Any, Any], axis: int | tuple[int, ...] | None, keepdims: bool, scale: bool) -> Any:
    x = a.data
    if scale and x.dtype.kind != "f":  # mean is a float op (sum is exact on integers)
        float_data(op, a, "a")
    axes = normalize_axes(op, axis, x.ndim)
    n = math.prod(x.shape[ax] for ax in axes)
    y = np.asarray(np.sum(x, axis=axes, keepdims=keepdims))
    if scale:
        if n == 0:
            raise ShapeError(f"{op}: mean over {n} elements (shape {x.shape}, axes {axes}) is undefined")
        y = np.multiply(y, x.dtype.type(1.0 / n), out=y) if y.ndim else np.asarray(y * x.dtype.type(1.0 / n))
    tape = op_tape(a)
    out = a._from_op(y, tape)
    if tape is not NONE_TAPE:
        shape = x.shape
        kept = tuple(1 if i in axes else n_ for i, n_ in enumerate(shape))
        tape._record((out.id, _reduce_backward, a.id, kept, x.dtype.type(1.0 / n) if scale else None, shape))
    return out


def _reduce_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, tuple[int, ...], Any, Any]) -> None:
    """sum's and mean's backward: ``g`` (times ``1 / n`` for mean) broadcast back to the input."""
    _, _, aid, kept, factor, shape = entry
    g = g.reshape(kept)
    if factor is not None:
        g = g * factor
    grads._accum_bcast(aid, g, shape)


def _d_reduce(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    """The differentiable rule of :func:`_reduce_backward` (higher-order derivatives)."""
    _, _, aid, kept, factor, shape = entry
    gk = g.reshape(kept)
    if factor is not None:
        gk = gk * float(factor)
    return [(aid, gk.broadcast_to(shape))]


register_diff(_reduce_backward, _d_reduce)


@typed_as(_sig.sum)
def sum(a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Sum of the elements over ``axis`` (None: all; an int or a tuple of ints).

    Args:
        axis: axes to reduce; negative axes count from the end.
        keepdims: keep reduced axes as size-1 dims.

    Gradient: ``1`` for every element (the output's gradient broadcast back).

    Raises:
        ShapeError: an axis is out of range or repeated.
    """
    return _reduce("sum", a, axis, keepdims, scale=False)


@typed_as(_sig.mean)
def mean(a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis`` (None: all; an int or a tuple of ints).

    Gradient: ``1 / n`` for every element, ``n`` the number of elements averaged.

    Raises:
        ShapeError: an axis is out of range or repeated, or the mean is over zero elements.
        DTypeError: ``a`` is an integer or bool tensor (PyTorch refuses them too; convert
            with ``dev.tensor(x, dtype=np.float32)``).
    """
    return _reduce("mean", a, axis, keepdims, scale=True)


# ----- shared plumbing of the reductions below --------------------------------------------


def _plan(op: str, x: Array, axis: int | tuple[int, ...] | None) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
    """``(axes, n, kept)``: the sorted reduced axes, the number of elements each output element
    reduces, and the output's shape with the reduced axes kept as size 1."""
    axes = normalize_axes(op, axis, x.ndim)
    n = math.prod(x.shape[ax] for ax in axes)
    kept = tuple(1 if i in axes else n_ for i, n_ in enumerate(x.shape))
    return axes, n, kept


def _out(yk: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
    """The reduction's result from its keepdims form ``yk``."""
    if keepdims:
        return yk
    return yk.reshape(tuple(n for i, n in enumerate(yk.shape) if i not in axes))


def _record_reduction(a: Tensor[Any, Any], y: Array, kept: tuple[int, ...], grad: Any, diff: Any = None) -> Any:
    """Wrap ``y`` as the reduction's output; backward calls ``grad(grads, aid, gk)`` with the
    output's gradient ``gk`` reshaped to ``kept`` (the keepdims shape). ``diff(gk, x)``, if
    given, is the second rule: ``a``'s gradient from the gradient tensor ``gk`` (keepdims
    shape) and ``a`` rebuilt as a tensor ``x``, in gradtape ops."""
    tape = op_tape(a)
    out = a._from_op(y, tape)
    if tape is not NONE_TAPE:
        aid, xd = a.id, a.data

        def reduction_backward(grads: Gradients, g: Array) -> None:
            grad(grads, aid, g.reshape(kept))

        def reduction_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            return [(aid, diff(g.reshape(kept), rebuild(aid, xd)))]

        record(tape, out, reduction_backward, reduction_diff if diff is not None else None)
    return out


# ----- max / min ---------------------------------------------------------------------------


def _extremum(op: str, a: Tensor[Any, Any], axis: int | tuple[int, ...] | None, keepdims: bool) -> Any:
    x = a.data
    axes, n, kept = _plan(op, x, axis)
    if n == 0:
        raise ShapeError(f"{op}: reduction over 0 elements (shape {x.shape}, axes {axes}) has no {op}imum")
    yk = np.asarray((np.max if op == "max" else np.min)(x, axis=axes, keepdims=True))
    y = _out(yk, axes, keepdims)

    def grad(grads: Gradients, aid: int, gk: Array) -> None:
        mask = x == yk
        count = np.sum(mask, axis=axes, keepdims=True, dtype=x.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):  # a NaN slice: count 0, NaN gradient
            share = gk / count  # one value per output element
            grads._accum(aid, np.multiply(mask, share))

    def diff(gk: Any, xt: Any) -> Any:  # the mask is piecewise constant
        mask = x == yk
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = mask / np.sum(mask, axis=axes, keepdims=True, dtype=x.dtype)
        return gk * gk._like(weight.astype(x.dtype))

    return _record_reduction(a, y, kept, grad, diff)


@typed_as(_sig.max)
def max(a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Largest element over ``axis`` (None: all; an int or a tuple of ints), as ``np.max`` /
    ``torch.amax``: a NaN in a slice makes that slice's maximum NaN.

    Gradient (dfdx's ``max_to``, PyTorch's ``amax``): the output's gradient is split evenly
    among the elements equal to the maximum, ``g / k`` to each of ``k`` tied maxima, ``0``
    elsewhere; a slice whose maximum is NaN gets NaN gradients.

    Raises:
        ShapeError: an axis is out of range or repeated, or a reduced axis has size 0.
    """
    return _extremum("max", a, axis, keepdims)


@typed_as(_sig.min)
def min(a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Smallest element over ``axis``, as ``np.min`` / ``torch.amin``. Gradient split evenly
    over tied minima (see :func:`max`).

    Raises:
        ShapeError: an axis is out of range or repeated, or a reduced axis has size 0.
    """
    return _extremum("min", a, axis, keepdims)


# ----- var / std ---------------------------------------------------------------------------


def _correction(op: str, correction: float, ddof: float | None) -> float:
    for name, v in (("correction", correction), ("ddof", ddof)):
        if v is not None and not isinstance(v, SCALARS):  # a complex, a string
            raise TypeError(f"{op}: {name} must be a real number, got {type(v).__name__} {v!r}")
    if ddof is not None:
        if correction != 0 and correction != ddof:
            raise ValueError(f"{op}: got correction={correction} and ddof={ddof}; pass one of them")
        correction = ddof
    if not math.isfinite(correction):
        raise ValueError(f"{op}: correction must be a finite number, got {correction}")
    return float(correction)


def _moment(
    op: str,
    a: Tensor[Any, Any],
    axis: int | tuple[int, ...] | None,
    keepdims: bool,
    correction: float,
    ddof: float | None,
) -> Any:
    x = float_data(op, a, "a")
    c = _correction(op, correction, ddof)
    axes, n, kept = _plan(op, x, axis)
    if n == 0:
        raise ShapeError(f"{op}: reduction over 0 elements (shape {x.shape}, axes {axes}) is undefined")
    dt = x.dtype.type
    # Two passes, accumulated in float64 (as accurate as PyTorch's CPU var and std):
    # the mean, then the squares of the deviations d = x - mean. A float32 sum along a strided
    # axis adds one row at a time (numpy pairs only contiguous runs), and its error in the
    # mean (about n * eps * |mean|) enters the squares: var(1e4 + randn) was off by 1e-4.
    # sum(d)**2 / n removes what is left of the rounded mean's error (Chan, Golub & LeVeque's
    # corrected two-pass formula).
    mu = (np.sum(x, axis=axes, keepdims=True, dtype=np.float64) / n).astype(x.dtype)
    d = x - mu
    s1 = np.sum(d, axis=axes, keepdims=True, dtype=np.float64)
    ss = np.sum(np.square(d), axis=axes, keepdims=True, dtype=np.float64)
    m2 = np.maximum(ss - s1 * s1 / n, 0.0)
    dof = dt(builtins.max(n - c, 0.0))  # numpy's max(n - ddof, 0): 0 gives inf / nan
    with np.errstate(divide="ignore", invalid="ignore"):
        v64 = np.asarray(m2 / float(dof))
        if op == "var":
            yk = v64.astype(x.dtype)

            def grad(grads: Gradients, aid: int, gk: Array) -> None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    grads._fused(aid, _k.addmul, np.multiply, d, gk * (dt(2) / dof))

        else:
            yk = np.sqrt(v64).astype(x.dtype)  # one rounding to x's dtype

            def grad(grads: Gradients, aid: int, gk: Array) -> None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    scale = np.where(yk == 0, dt(0), gk / (dof * yk))  # PyTorch: 0 where std == 0
                grads._fused(aid, _k.addmul, np.multiply, d, scale)

    def diff(gk: Any, xt: Any) -> Any:  # var: 2 (x - mean) / dof; std: (x - mean) / (dof std)
        xc = xt - xt.mean(axis=axes, keepdims=True)
        if op == "var":
            return xc * (2.0 / float(dof)) * gk
        return xc * gk / ((xc * xc).sum(axis=axes, keepdims=True) * (1.0 / float(dof))).sqrt() * (1.0 / float(dof))

    return _record_reduction(a, _out(yk, axes, keepdims), kept, grad, diff)


@typed_as(_sig.var)
def var(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    *,
    correction: float = 0,
    ddof: float | None = None,
) -> Any:
    """Variance over ``axis``: ``sum((a - mean(a))**2) / (n - correction)``, ``n`` the number of
    elements reduced.

    Args:
        axis: axes to reduce (None: all); negative axes count from the end.
        keepdims: keep reduced axes as size-1 dims.
        correction: PyTorch's name for numpy's ``ddof``. The default ``0`` is numpy's
            (population variance, ``np.var``); PyTorch's ``torch.var`` defaults to ``1``
            (Bessel's correction): pass ``correction=1`` for the unbiased sample variance.
        ddof: numpy's name for ``correction``; give one of the two.

    Where ``n - correction <= 0`` the divisor is 0, as in numpy: the result is ``inf`` (or
    ``nan`` for a constant slice) and so is the gradient.

    Forward in two passes accumulated in float64 (the mean, then the squared deviations,
    with the corrected two-pass formula ``(sum(d**2) - sum(d)**2 / n)``, ``d = a - mean``):
    a float32 result is within a few float32 roundings of the exact variance even for data
    far from 0 (``1e4 + randn``), as PyTorch's.

    Gradient: ``2 * (a - mean(a)) / (n - correction)`` (fused ``grad += d * scale``).

    Raises:
        ShapeError: an axis is out of range or repeated, or the reduction is over 0 elements.
        ValueError: ``correction`` and ``ddof`` disagree, or ``correction`` is not finite.
        TypeError: ``correction`` or ``ddof`` is not a real number (a complex, a string).
        DTypeError: ``a`` is an integer or bool tensor (PyTorch refuses them too).
    """
    return _moment("var", a, axis, keepdims, correction, ddof)


@typed_as(_sig.std)
def std(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    *,
    correction: float = 0,
    ddof: float | None = None,
) -> Any:
    """Standard deviation over ``axis``: ``sqrt(var(a, axis, correction=correction))``; the
    default ``correction=0`` is numpy's (``np.std``), PyTorch's ``torch.std`` uses ``1`` (see
    :func:`var`). Computed from :func:`var`'s float64-accumulated two-pass forward.

    Gradient: ``(a - mean(a)) / ((n - correction) * std)``, and ``0`` where ``std == 0`` (a
    constant slice, where the derivative does not exist; PyTorch's convention).

    Raises:
        ShapeError, ValueError, TypeError, DTypeError: as :func:`var`.
    """
    return _moment("std", a, axis, keepdims, correction, ddof)


# ----- logsumexp ---------------------------------------------------------------------------


@typed_as(_sig.logsumexp)
def logsumexp(a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(a), axis))``, computed stably as ``m + log(sum(exp(a - m)))`` with ``m``
    the maximum over ``axis`` (scipy's ``logsumexp``, ``torch.logsumexp``): no ``exp``
    overflows and no ``log(0)`` is taken unless every element of a slice is ``-inf``.

    Edge cases: a slice of all ``-inf`` gives ``-inf`` with gradient ``0`` (PyTorch gives
    NaN); a slice holding ``+inf`` gives ``+inf``; a reduction over 0 elements gives ``-inf``
    (the log of an empty sum), as PyTorch.

    Gradient: ``softmax(a, axis) = exp(a - m) / sum(exp(a - m))``, saved from the forward
    (fused ``grad += exp(a - m) * (g / sum)``, no ``exp`` in the backward).

    Raises:
        ShapeError: an axis is out of range or repeated.
        DTypeError: ``a`` is an integer or bool tensor.
    """
    x = float_data("logsumexp", a, "a")
    axes, n, kept = _plan("logsumexp", x, axis)
    if n == 0:
        yk = np.full(kept, -np.inf, dtype=x.dtype)
        return _record_reduction(a, _out(yk, axes, keepdims), kept, lambda grads, aid, gk: None)
    m = np.max(x, axis=axes, keepdims=True)
    if not np.isfinite(m).all():
        m = np.where(np.isfinite(m), m, x.dtype.type(0))
    e = np.exp(x - m)
    s = np.asarray(np.sum(e, axis=axes, keepdims=True))
    with np.errstate(divide="ignore"):
        yk = np.asarray(np.log(s) + m)

    def grad(grads: Gradients, aid: int, gk: Array) -> None:
        scale = np.zeros(kept, x.dtype)
        np.divide(gk, s, out=scale, where=s != 0)  # an all -inf slice (s == 0) gets 0
        with np.errstate(invalid="ignore"):  # inf * 0 in a slice holding +inf: NaN, as PyTorch
            grads._fused(aid, _k.addmul, np.multiply, e, scale)

    def diff(gk: Any, xt: Any) -> Any:  # softmax over the axes
        return (xt - xt.logsumexp(axis=axes, keepdims=True)).exp() * gk

    return _record_reduction(a, _out(yk, axes, keepdims), kept, grad, diff)
