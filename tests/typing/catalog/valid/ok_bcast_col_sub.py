"""Broadcasting: (8, 5) - (8, 1) with annotated Literal shapes (subtract a per-row value)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
scores: Tensor[Rank2[L[8], L[5]], NoneTape] = dev.randn((8, 5))
baseline: Tensor[Rank2[L[8], L[1]], NoneTape] = dev.randn((8, 1))
adv = scores - baseline
print(adv.shape)
