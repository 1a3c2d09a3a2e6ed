"""Loss functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from gradtape._typing import A, B, T
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops.softmax import log_softmax_array
from gradtape.ops.unary import record_unary
from gradtape.shapes import Rank0, Rank2

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["cross_entropy"]

Array = np.ndarray[Any, Any]


def cross_entropy(
    logits: Tensor[Rank2[A, B], T],
    targets: npt.ArrayLike,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[Rank0, T]:
    """Softmax cross-entropy of ``(N, C)`` logits against ``N`` integer class indices.

    ``loss = -sum_n log_softmax(logits)[n, targets[n]]``, divided by ``N`` when
    ``reduction="mean"`` (PyTorch's ``F.cross_entropy`` with class-index targets). Fused:
    the backward is ``grad_logits += (softmax(logits) - onehot(targets)) * g / N``.

    Args:
        logits: float32/float64 tensor of shape ``(N, C)``, unnormalised scores.
        targets: integers in ``[0, C)``, shape ``(N,)`` (a list or an integer array).
        reduction: ``"mean"`` (default) or ``"sum"`` over the batch.

    Returns:
        A scalar tensor (shape ``()``) with ``logits``'s dtype and tape.

    Raises:
        ShapeError: logits not 2-D, targets not of shape ``(N,)``, or ``N == 0``.
        DTypeError: targets are not integers.
        ValueError: a target is outside ``[0, C)``, or ``reduction`` is unknown.
    """
    x = logits.data
    t = np.asarray(targets)
    if x.ndim != 2:
        raise ShapeError(f"cross_entropy: logits must be 2-D (N, C), got shape {x.shape}")
    n, c = x.shape
    if t.dtype.kind not in "iu":
        raise DTypeError(f"cross_entropy: targets must be integer class indices, got dtype {t.dtype}")
    if t.shape != (n,):
        raise ShapeError(f"cross_entropy: targets of shape {t.shape} do not match logits of shape {x.shape}")
    if n == 0:
        raise ShapeError(f"cross_entropy: empty batch (logits of shape {x.shape})")
    if t.min() < 0 or t.max() >= c:
        raise ValueError(f"cross_entropy: class indices must lie in [0, {c}), got min {t.min()} and max {t.max()}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"cross_entropy: reduction must be 'mean' or 'sum', got {reduction!r}")
    logp = log_softmax_array(x, 1)
    rows = np.arange(n)
    scale = x.dtype.type(1.0 / n if reduction == "mean" else 1.0)
    loss = np.asarray(-logp[rows, t].sum() * scale, dtype=x.dtype)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        p = np.exp(logp)
        p[rows, t] -= 1
        p *= g * scale
        grads._accum(i, p)

    return record_unary(logits, loss, rule)  # type: ignore[arg-type]
