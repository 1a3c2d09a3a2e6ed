"""Checking gradients: :func:`gradcheck` compares a tape's gradients with finite differences.

Public so that users who hand-write backward closures (``split_tape`` /
``add_backward_op`` / ``mut_and_ref``) can verify them the way gradtape verifies its own ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from gradtape.errors import GradtapeError, TapeError
from gradtape.gradients import Gradients
from gradtape.tape import GradientTape
from gradtape.tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "numerical_gradients"]

Array = np.ndarray[Any, Any]


class GradcheckError(GradtapeError, AssertionError):
    """The tape's gradient disagrees with the finite-difference estimate (the message names
    the input, the worst element, both values and the tolerances)."""


def _as_float64(x: Tensor[Any, Any] | npt.ArrayLike, like: Tensor[Any, Any] | None) -> Tensor[Any, Any]:
    if isinstance(x, Tensor):
        return Tensor(np.array(x.data, dtype=np.float64), x.device)
    if like is None:
        from gradtape.devices.cpu import Cpu

        return Tensor(np.array(x, dtype=np.float64), Cpu())
    return Tensor(np.array(x, dtype=np.float64), like.device)


def _projected(fn: Callable[..., Tensor[Any, Any]], xs: Sequence[Tensor[Any, Any]], w: Array | None) -> float:
    y = np.asarray(fn(*xs).data, dtype=np.float64)
    return float(y.sum() if w is None else (y * w).sum())


def numerical_gradients(
    fn: Callable[..., Tensor[Any, Any]],
    inputs: Sequence[Tensor[Any, Any]],
    weights: Array | None = None,
    eps: float = 1e-6,
) -> list[Array]:
    """Central finite differences of ``sum(fn(*inputs) * weights)`` w.r.t. each input.

    ``d/dx_j ~ (f(x + eps e_j) - f(x - eps e_j)) / (2 eps)``, one pair of untraced forward
    passes per element, so keep inputs small. Inputs should be float64 tensors.
    Returns one float64 array per input, of that input's shape.
    """
    out = []
    for k, x in enumerate(inputs):
        base = x.data
        grad = np.zeros(base.shape, dtype=np.float64)
        for j in np.ndindex(base.shape):
            vals = []
            for step in (eps, -eps):
                pert = base.copy()
                pert[j] += step
                xs = list(inputs)
                xs[k] = Tensor(pert, x.device)
                vals.append(_projected(fn, xs, weights))
            grad[j] = (vals[0] - vals[1]) / (2 * eps)
        out.append(grad)
    return out


def gradcheck(
    fn: Callable[..., Tensor[Any, Any]],
    inputs: Sequence[Tensor[Any, Any] | npt.ArrayLike],
    *,
    eps: float = 1e-6,
    atol: float = 1e-6,
    rtol: float = 1e-4,
    seed: int = 0,
) -> bool:
    """Check the gradients that ``fn``'s backward closures compute against finite differences.

    ``fn(*tensors)`` must build its output from its input tensors with gradtape ops (or
    hand-written closures) and work for float64. Each input is copied to float64 and
    traced into one store; the output is projected onto fixed random weights ``w``
    (``L = sum(fn(x) * w)``, so a non-scalar output checks a vector-Jacobian product, as
    PyTorch's gradcheck does column by column), backpropagated, and compared with the
    central differences of :func:`numerical_gradients`:
    ``|analytic - numeric| <= atol + rtol * |numeric|`` elementwise.

    Args:
        fn: the function under test, taking one tensor per input.
        inputs: tensors (or array-likes), kept small: each element costs two forward passes.
        eps: finite-difference step (float64 units).
        atol, rtol: absolute and relative tolerance.
        seed: seed of the projection weights.

    Returns:
        ``True`` when every gradient matches.

    Raises:
        GradcheckError: a gradient differs; the message names the input index, the worst
            element, both values and the tolerances.
        TapeError: ``fn``'s output carries no tape (it does not depend on its inputs
            through gradtape ops).
    """
    like = next((x for x in inputs if isinstance(x, Tensor)), None)
    xs = [_as_float64(x, like) for x in inputs]
    grads = Gradients.leaky()
    out = fn(*(x.trace(grads) for x in xs))
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(out.shape)
    if out.dtype != np.float64:
        raise GradcheckError(f"gradcheck: fn returned dtype {out.dtype} for float64 inputs")
    plain, tape = out.split_tape()
    if not isinstance(tape, GradientTape):
        raise TapeError(f"gradcheck: fn's output (shape {out.shape}) has no tape; it must be computed from its inputs")
    oid, seed_grad = plain.id, np.array(w, dtype=np.float64)

    def seed_op(g: Gradients) -> None:
        g._accum(oid, seed_grad)

    tape.add_backward_op(seed_op)
    grads = tape.execute()
    analytic = [grads.get(x).data for x in xs]
    numeric = numerical_gradients(fn, xs, w, eps)
    for k, (a, n) in enumerate(zip(analytic, numeric, strict=True)):
        bad = np.abs(a - n) > atol + rtol * np.abs(n)
        if bad.any():
            j = np.unravel_index(np.argmax(np.abs(a - n) - rtol * np.abs(n)), a.shape)
            raise GradcheckError(
                f"gradcheck: input {k} (shape {a.shape}): {int(bad.sum())} of {a.size} elements differ; "
                f"worst at {tuple(int(i) for i in j)}: tape {a[j]!r} vs finite differences {n[j]!r} "
                f"(atol={atol}, rtol={rtol}, eps={eps})"
            )
    return True
