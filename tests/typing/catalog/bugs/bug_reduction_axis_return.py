"""class: reduction-axis

A typed helper promises per-row maxima (B,) but reduces over axis=0, returning (16,).
Run time: static-only here (the result shape is (16,) instead of (4,)).
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)


def row_max(x: Tensor[Rank2[L[4], L[16]], NoneTape]) -> Tensor[Rank1[L[4]], NoneTape]:
    return x.max(axis=0)  # BUG


print(row_max(dev.randn((4, 16))).shape)
