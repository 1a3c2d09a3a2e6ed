"""Elementwise unary ops: neg, exp, log, relu, sin.

Each op computes its forward with numpy's SIMD ufuncs, saves what its derivative
needs, and states the derivative in one line; :func:`record_unary` does the tape
plumbing. Backward passes are fused numba kernels (``grad += f'(x) * g`` in one pass).
Shapes and dtypes are preserved: ``Tensor[S, T] -> Tensor[S, T]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape._typing import S, T
from gradtape.devices.kernels import elementwise as _k
from gradtape.ops.binary import record_scalar
from gradtape.tape import NONE_TAPE, next_id

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["exp", "log", "neg", "record_unary", "relu", "sin"]

Array = np.ndarray[Any, Any]


def record_unary(a: Tensor[S, T], data: Array, rule: Callable[[Gradients, int, Array], None]) -> Tensor[S, T]:
    """Wrap ``data`` as the output of an elementwise op on ``a`` and record its backward.

    ``rule(grads, a_id, g)`` accumulates ``a``'s gradient given the output's gradient ``g``;
    it runs only if the output received a gradient.
    """
    tape = a.tape
    out: Tensor[S, T] = a._from_op(data, tape)
    if tape is not NONE_TAPE:
        aid, oid = a.id, out.id

        def unary_backward(grads: Gradients) -> None:
            g = grads._data.get(oid)
            if g is not None:
                rule(grads, aid, g)

        tape._record((next_id(), unary_backward))
    return out


def neg(a: Tensor[S, T]) -> Tensor[S, T]:
    """``-a`` elementwise. Gradient: ``-1``."""
    return record_scalar(a, np.negative(a.data), -1.0)  # type: ignore[no-any-return]


def exp(a: Tensor[S, T]) -> Tensor[S, T]:
    """``e**a`` elementwise. Gradient: ``e**a``, the saved output (fused ``grad += y * g``)."""
    y = np.exp(a.data)
    return record_unary(a, y, lambda grads, i, g: grads._fused(i, _k.addmul, np.multiply, y, g))


def log(a: Tensor[S, T]) -> Tensor[S, T]:
    """Natural logarithm elementwise (``nan`` for negative inputs, ``-inf`` at 0, as numpy).

    Gradient: ``1 / a`` (fused ``grad += g / a``).
    """
    x = a.data
    return record_unary(a, np.log(x), lambda grads, i, g: grads._fused(i, _k.adddiv, np.divide, g, x))


def _relu_grad(x: Array, g: Array) -> Array:
    out = np.zeros(g.shape, g.dtype)
    _k.relu_backward(out, x, g)
    return out


def relu(a: Tensor[S, T]) -> Tensor[S, T]:
    """``max(a, 0)`` elementwise. Gradient: ``1`` where ``a > 0``, else ``0`` (also at 0, as
    PyTorch); fused ``grad += g * (a > 0)``."""
    x = a.data
    return record_unary(
        a, np.maximum(x, x.dtype.type(0)), lambda grads, i, g: grads._fused(i, _k.relu_backward, _relu_grad, x, g)
    )


def sin(a: Tensor[S, T]) -> Tensor[S, T]:
    """Sine elementwise (radians). Gradient: ``cos(a)``, computed in backward with numpy's
    SIMD ``cos`` and accumulated with the fused ``addmul``."""
    x = a.data
    return record_unary(a, np.sin(x), lambda grads, i, g: grads._addmul_scratch(i, np.cos(x), g))
