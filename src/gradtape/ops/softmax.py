"""``softmax`` and ``log_softmax`` along an axis: fused, numerically stable forward and backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import S, T
from gradtape.devices.kernels import softmax as _ks
from gradtape.errors import ShapeError
from gradtape.ops._util import float_data, normalize_axes, record_unary, refill, replayable

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["log_softmax", "log_softmax_array", "softmax", "softmax_array", "softmin"]

Array = np.ndarray[Any, Any]


def _checked_axis(op: str, a: Tensor[Any, Any], axis: int) -> tuple[Array, int]:
    """``a``'s float data and ``axis`` made non-negative.

    Raises:
        DTypeError: ``a`` is not a float tensor. ShapeError: ``axis`` is out of range, or has
            size 0 (a 0-d tensor has no axis).
    """
    x = float_data(op, a)
    (ax,) = normalize_axes(op, axis, x.ndim) if x.ndim else (None,)
    if ax is None or x.shape[ax] == 0:
        raise ShapeError(f"{op}: needs a non-empty axis {axis}, got shape {x.shape}")
    return x, ax


def _axis_or_dim(op: str, axis: int | None, dim: int | None) -> int:
    """The axis to normalise along: gradtape's ``axis`` (also the second positional argument,
    PyTorch's ``dim`` position) or PyTorch's ``dim=`` keyword; the last axis when neither is given.

    Raises:
        TypeError: both are given.
    """
    if dim is None:
        return -1 if axis is None else axis
    if axis is not None:
        raise TypeError(f"{op}: got axis={axis!r} and dim={dim!r}; pass one of them")
    return dim


def log_softmax_array(x: Array, axis: int) -> Array:
    """``x - logsumexp(x, axis)`` computed as ``(x - max) - log(sum(exp(x - max)))``, so no
    ``exp`` overflows. Returns a new array of ``x``'s shape and dtype."""
    y: Array = x - x.max(axis=axis, keepdims=True)
    y -= np.log(np.exp(y).sum(axis=axis, keepdims=True))
    return y


def log_softmax(a: Tensor[S, T], axis: int | None = None, *, dim: int | None = None) -> Tensor[S, T]:
    """Log of the softmax along ``axis``: ``y = a - log(sum(exp(a), axis))`` (PyTorch's
    ``F.log_softmax(input, dim)``: ``dim=`` is accepted as ``axis``; default the last axis,
    where PyTorch's implicit ``dim=None`` picks one by rank and warns).

    Gradient: ``grad_a += g - exp(y) * sum(g, axis)``.

    Raises:
        ShapeError: ``axis`` is out of range, or has size 0.
        DTypeError: ``a`` is an integer or bool tensor.
        TypeError: both ``axis`` and ``dim`` are given.
    """
    x, ax = _checked_axis("log_softmax", a, _axis_or_dim("log_softmax", axis, dim))
    y = log_softmax_array(x, ax)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        t = np.exp(y)
        t *= g.sum(axis=ax, keepdims=True)
        np.subtract(g, t, out=t)
        grads._accum(i, t)

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # g - exp(y) sum(g)
        return g - rebuild(oid, y).exp() * g.sum(axis=ax, keepdims=True)

    out = record_unary(a, y, rule, diff=diff)
    if _tp._recorder is not None:
        replayable("log_softmax", y, refill, (log_softmax_array, x, ax), (a,), out.tape, True)
    return out


def softmax_array(x: Array, axis: int) -> Array:
    """``exp(x) / sum(exp(x), axis)`` computed as ``exp(x - max) / sum(exp(x - max))``, so no
    ``exp`` overflows. Returns a new array of ``x``'s shape and dtype."""
    y: Array = x - x.max(axis=axis, keepdims=True)
    np.exp(y, out=y)
    y /= y.sum(axis=axis, keepdims=True)
    return y


def softmax(a: Tensor[S, T], axis: int | None = None, *, dim: int | None = None) -> Tensor[S, T]:
    """Softmax along ``axis``: ``y = exp(a - max(a)) / sum(exp(a - max(a)), axis)`` (stable:
    no ``exp`` overflows; a slice holding ``+inf`` or only ``-inf`` gives NaN, as PyTorch).
    PyTorch's ``F.softmax(input, dim)``: ``dim=`` is accepted as ``axis``; default the last
    axis, where PyTorch's implicit ``dim=None`` picks one by rank and warns.

    Gradient: ``grad_a += y * (g - sum(g * y, axis))``, one fused pass per row
    (:func:`gradtape.devices.kernels.softmax.softmax_backward`; a compiled kernel along the
    last axis of C-contiguous gradients, numpy otherwise).

    Raises:
        ShapeError: ``axis`` is out of range, or has size 0 (a 0-d tensor has no axis).
        TypeError: both ``axis`` and ``dim`` are given.
    """
    x, ax = _checked_axis("softmax", a, _axis_or_dim("softmax", axis, dim))
    y = softmax_array(x, ax)

    def kernel(out: Array, y_: Array, g: Array) -> None:
        _ks.softmax_backward(out, y_, g, ax)

    def fresh(y_: Array, g: Array) -> Array:
        out = np.zeros_like(y_)
        _ks.softmax_backward(out, y_, g, ax)
        return out

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # y (g - sum(g y))
        yt = rebuild(oid, y)
        return yt * (g - (g * yt).sum(axis=ax, keepdims=True))

    out = record_unary(a, y, lambda grads, i, g: grads._fused(i, kernel, fresh, y, g), diff=diff)
    if _tp._recorder is not None:
        replayable("softmax", y, refill, (softmax_array, x, ax), (a,), out.tape, True)
    return out


def softmin(a: Tensor[S, T], dim: int | None = None, *, axis: int | None = None) -> Tensor[S, T]:
    """``F.softmin``: :func:`softmax` of ``-a`` along ``dim`` (default the last axis), weights
    that favour the smallest elements. Gradient: softmax's, negated.

    Raises:
        ShapeError: ``dim`` is out of range, or has size 0.
        TypeError: both ``axis`` and ``dim`` are given.
    """
    _, ax = _checked_axis("softmin", a, _axis_or_dim("softmin", axis, dim))
    return softmax(-a, ax)
