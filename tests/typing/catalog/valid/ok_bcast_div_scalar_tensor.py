"""Broadcasting: tensor / rank-0 tensor (normalise by the total), annotated."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank0, Rank2, Tensor

dev = Cpu(seed=0)
counts: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.rand((3, 4))
total: Tensor[Rank0, NoneTape] = counts.sum()
freq = counts / total
print(freq.shape, round(float(freq.sum().item()), 4))
