"""``realize`` to a shape type whose ``Literal`` dim contradicts the tensor's literal dim, with
``gradtape.mypy_plugin``: the call always raises ``ShapeError`` at run time, so the plugin
rejects it (``# P:``); ``int`` or named dims on either side are left to the run-time check.
mypy alone and pyright accept every line (the rank is checked by the overloads, not here)."""

from typing import Literal as L
from typing import NewType, reveal_type

from gradtape import Cpu
from gradtape.shapes import realize

Batch = NewType("Batch", int)
dev = Cpu()
raw = dev.randn((32, 60))

raw.realize(tuple[Batch, L[64]])  # P: gradtape-shape
realize(raw, tuple[L[31], int])  # P: gradtape-shape
dev.randn((5,)).realize(tuple[L[4]])  # P: gradtape-shape
reveal_type(raw.realize(tuple[Batch, L[60]]))  # R: Tensor[tuple[realize.Batch, Literal[60]]
reveal_type(raw.realize(tuple[int, int]))  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]


def loaded(n: int) -> None:
    """A run-time batch size: only the literal feature dim is compared."""
    rows = dev.randn((n, 60))
    rows.realize(tuple[Batch, L[60]])
    rows.realize(tuple[L[3], L[64]])  # P: gradtape-shape
