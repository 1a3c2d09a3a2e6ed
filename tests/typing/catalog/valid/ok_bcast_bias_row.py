"""Broadcasting: (N, D) + (D,) bias row with annotated shapes, then a traced loss."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[10], L[3]], NoneTape] = dev.randn((10, 3))
w: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.randn((3, 4))
b: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
y = x.leaky_trace() @ w + b
grads = y.sigmoid().mean().backward()
print(grads.get(x).shape)
