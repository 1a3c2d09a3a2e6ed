"""Annotated functional model: weights as typed tensors, gradtape.ops.linear and matmul."""

from typing import Literal as L

from gradtape import Cpu, Gradients, NoneTape, Rank1, Rank2, Tensor
from gradtape.ops import linear

dev = Cpu(seed=0)
w1: Tensor[Rank2[L[16], L[8]], NoneTape] = dev.randn((16, 8))
b1: Tensor[Rank1[L[16]], NoneTape] = dev.zeros((16,))
w2: Tensor[Rank2[L[16], L[2]], NoneTape] = dev.randn((16, 2))
x: Tensor[Rank2[L[4], L[8]], NoneTape] = dev.randn((4, 8))

grads = Gradients.leaky()
h = linear(x, w1.trace(grads), b1).relu()  # (4, 16)
out = h.matmul(w2)  # (4, 2)
loss = out.square().mean()
grads = loss.backward()
print(grads.get(w1).shape)
