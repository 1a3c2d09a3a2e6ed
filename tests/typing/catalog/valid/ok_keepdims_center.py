"""keepdims reduction: x - x.mean(axis=1, keepdims=True) on an annotated batch, result annotated."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[8], L[5]], NoneTape] = dev.randn((8, 5))
centered: Tensor[Rank2[L[8], L[5]], NoneTape] = x - x.mean(axis=1, keepdims=True)
print(centered.shape)
