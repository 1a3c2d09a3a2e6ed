"""concat: rows of a traced tensor and an untraced one along axis 0, then backward."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import concat

dev = Cpu(seed=0)
a: Tensor[Rank2[L[2], L[4]], NoneTape] = dev.randn((2, 4))
b: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.randn((3, 4))
ta = a.leaky_trace()
both = concat([ta, b], axis=0)
grads = both.square().sum().backward()
print(both.shape, grads.get(a).shape)
