"""Broadcasting: (B, L, D) + (L, D) positional embedding added to every batch element."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor

dev = Cpu(seed=0)
tokens: Tensor[Rank3[L[4], L[10], L[16]], NoneTape] = dev.randn((4, 10, 16))
pos: Tensor[Rank2[L[10], L[16]], NoneTape] = dev.randn((10, 16))
h = tokens + pos
print(h.shape)
