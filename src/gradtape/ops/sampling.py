"""Sampling ops (PyTorch's ``torch.multinomial``): integer draws that carry no gradient,
from the tensor's device generator (``Cpu(seed=...)``) unless a numpy ``Generator`` is given."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape.errors import DTypeError, ShapeError

if TYPE_CHECKING:
    from gradtape.tensor import Tensor

__all__ = ["multinomial"]


def multinomial(
    input: Tensor[Any, Any],
    num_samples: int,
    replacement: bool = False,
    *,
    generator: np.random.Generator | None = None,
) -> Tensor[Any, Any]:
    """Draw ``num_samples`` category indices from each row of weights ``input`` (PyTorch's
    ``torch.multinomial``; nanoGPT's ``torch.multinomial(probs, num_samples=1)``).

    Args:
        input: non-negative weights, shape ``(K,)`` or ``(N, K)`` (need not sum to 1), float.
        num_samples: draws per row; without ``replacement`` at most the row's number of
            non-zero weights (each category drawn at most once, in draw order).
        replacement: draw with replacement.
        generator: a numpy ``Generator``; default the tensor's device generator.

    Returns:
        int64 indices, shape ``(num_samples,)`` or ``(N, num_samples)``, untraced (sampling has
        no gradient).

    Raises:
        ShapeError: ``input`` is not 1-D or 2-D. DTypeError: integer weights.
        ValueError: a negative, infinite or NaN weight, a row summing to 0, no categories,
            ``num_samples`` < 1, or more draws than non-zero weights without replacement (all
            name the op).
    """
    w = input.data
    if w.ndim not in (1, 2):
        raise ShapeError(f"multinomial: input must be 1-D or 2-D weights, got shape {w.shape}")
    if w.dtype.kind != "f":
        raise DTypeError(f"multinomial: input must be float weights, got dtype {w.dtype}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise ValueError(f"multinomial: num_samples must be a positive int, got {num_samples!r}")
    if w.shape[-1] == 0:
        raise ValueError(f"multinomial: input has no categories (shape {w.shape})")
    rows = w.reshape(-1, w.shape[-1]).astype(np.float64)
    if rows.shape[0] == 0:
        return input.device.tensor(np.zeros((0, num_samples), np.int64))
    if not np.all(np.isfinite(rows)) or (rows < 0).any():
        raise ValueError("multinomial: probability tensor contains either inf, nan or element < 0")
    sums = rows.sum(axis=1)
    if (sums <= 0).any():
        raise ValueError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and num_samples > int((rows > 0).sum(axis=1).min()):
        raise ValueError(
            f"multinomial: cannot draw {num_samples} samples without replacement from a row with "
            f"{int((rows > 0).sum(axis=1).min())} non-zero weights (shape {w.shape})"
        )
    rng = generator if generator is not None else getattr(input.device, "rng", None)
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng()
    k = rows.shape[1]
    out = np.stack(
        [rng.choice(k, size=num_samples, replace=replacement, p=r / s) for r, s in zip(rows, sums, strict=True)]
    )
    out = out.astype(np.int64).reshape((*w.shape[:-1], num_samples))
    res: Tensor[Any, Any] = input.device.tensor(out)
    return res
