"""Broadcasting: divide a (B, D) batch by its (D,) per-feature std computed with axis=0."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[32], L[6]], NoneTape] = dev.randn((32, 6))
mu = x.mean(axis=0)
sd = x.std(axis=0)
z = (x - mu) / sd
print(z.shape)
