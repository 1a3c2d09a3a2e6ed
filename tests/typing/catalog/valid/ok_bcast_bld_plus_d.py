"""Broadcasting: (B, L, D) + (D,) bias add with annotated Literal shapes."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank3, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank3[L[2], L[5], L[8]], NoneTape] = dev.randn((2, 5, 8))
bias: Tensor[Rank1[L[8]], NoneTape] = dev.randn((8,))
y = x + bias
out: Tensor[Rank3[L[2], L[5], L[8]], NoneTape] = y.relu()
print(out.shape)
