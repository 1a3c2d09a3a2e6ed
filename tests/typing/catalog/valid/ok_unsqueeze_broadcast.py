"""squeeze/unsqueeze: per-example scale vector (B,) unsqueezed to (B, 1) to scale rows of (B, D)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((4, 3))
scale: Tensor[Rank1[L[4]], NoneTape] = dev.rand((4,))
col: Tensor[Rank2[L[4], L[1]], NoneTape] = scale.unsqueeze(1)
y = x * col
print(y.shape)
