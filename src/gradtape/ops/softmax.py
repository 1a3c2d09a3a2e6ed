"""``log_softmax`` along an axis: fused, numerically stable forward and backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape._typing import S, T
from gradtape.errors import ShapeError
from gradtape.ops._util import normalize_axes
from gradtape.ops.unary import record_unary

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["log_softmax", "log_softmax_array"]

Array = np.ndarray[Any, Any]


def log_softmax_array(x: Array, axis: int) -> Array:
    """``x - logsumexp(x, axis)`` computed as ``(x - max) - log(sum(exp(x - max)))``, so no
    ``exp`` overflows. Returns a new array of ``x``'s shape and dtype."""
    y: Array = x - x.max(axis=axis, keepdims=True)
    y -= np.log(np.exp(y).sum(axis=axis, keepdims=True))
    return y


def log_softmax(a: Tensor[S, T], axis: int = -1) -> Tensor[S, T]:
    """Log of the softmax along ``axis``: ``y = a - log(sum(exp(a), axis))``.

    Gradient: ``grad_a += g - exp(y) * sum(g, axis)``.

    Raises:
        ShapeError: ``axis`` is out of range, or has size 0.
    """
    x = a.data
    (ax,) = normalize_axes("log_softmax", axis, x.ndim) if x.ndim else (None,)
    if ax is None or x.shape[ax] == 0:
        raise ShapeError(f"log_softmax: needs a non-empty axis {axis}, got shape {x.shape}")
    y = log_softmax_array(x, ax)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        t = np.exp(y)
        t *= g.sum(axis=ax, keepdims=True)
        np.subtract(g, t, out=t)
        grads._accum(i, t)

    return record_unary(a, y, rule)
