"""PyTorch's ``torch.nn.utils.rnn`` helpers on gradtape: :func:`pad_sequence`.

Recurrent layers take padded ``(L, B, I)`` / ``(B, L, I)`` batches; PyTorch's packed sequences
(``pack_padded_sequence``) are not supported (gradtape's ``nn.LSTM``/``GRU`` run every step of
the padded batch; mask the loss of the padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from gradtape.errors import ShapeError
from gradtape.ops.shape import stack
from gradtape.ops.spatial import pad
from gradtape.tape import Tape
from gradtape.tensor import Tensor

__all__ = ["pad_sequence"]

T = TypeVar("T", bound=Tape)


def pad_sequence(
    sequences: Sequence[Tensor[Any, T]],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor[Any, T]:
    """PyTorch's ``pad_sequence``: tensors of shapes ``(L_i, *)`` padded with ``padding_value``
    to the longest ``L`` and stacked, ``(L, B, *)`` (``batch_first=True``: ``(B, L, *)``);
    ``padding_side="left"`` pads in front. Gradient: each sequence gets its own rows back.

    Raises:
        TypeError: an item is not a tensor. ShapeError: the list is empty, or the items'
            trailing dims differ. ValueError: ``padding_side`` is neither ``"right"`` nor ``"left"``.
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    items = list(sequences)
    if not items:
        raise ShapeError("pad_sequence: expected a non-empty sequence of tensors")
    for t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"pad_sequence: sequences must hold Tensors, got {type(t).__name__}")
        if t.ndim < 1 or t.shape[1:] != items[0].shape[1:]:
            raise ShapeError(
                f"pad_sequence: every sequence needs shape (L, *trailing) with one trailing shape, got "
                f"{[tuple(x.shape) for x in items]}"
            )
    longest = max(t.shape[0] for t in items)
    rest = items[0].ndim - 1
    padded = []
    for t in items:
        extra = longest - t.shape[0]
        before, after = (extra, 0) if padding_side == "left" else (0, extra)
        padded.append(pad(t, (0, 0) * rest + (before, after), value=padding_value) if extra else t)
    out: Tensor[Any, T] = stack(padded, 0 if batch_first else 1)
    return out
