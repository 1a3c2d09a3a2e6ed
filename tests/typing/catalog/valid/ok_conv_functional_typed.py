"""Conv net with typed functional ops: conv2d weights with Literal channel dims, max_pool2d, mean."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank4, Tensor
from gradtape.ops import conv2d, max_pool2d

dev = Cpu(seed=0)
x: Tensor[Rank4[L[2], L[3], L[8], L[8]], NoneTape] = dev.randn((2, 3, 8, 8))
w1: Tensor[Rank4[L[8], L[3], L[3], L[3]], NoneTape] = dev.randn((8, 3, 3, 3))
b1: Tensor[Rank1[L[8]], NoneTape] = dev.zeros((8,))
w2: Tensor[Rank4[L[4], L[8], L[3], L[3]], NoneTape] = dev.randn((4, 8, 3, 3))

h = max_pool2d(conv2d(x.leaky_trace(), w1, b1, padding=1).relu(), 2)
y = conv2d(h, w2, padding=1)
grads = y.mean().backward()
print(y.shape, grads.get(x).shape)
