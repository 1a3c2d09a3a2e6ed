"""Gradients via backward: leaky_trace a typed weight, backward on a scalar, read grads.get(w)."""

from typing import Literal as L

from gradtape import Cpu, Gradients, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[5], L[3]], NoneTape] = dev.randn((5, 3))
w: Tensor[Rank2[L[3], L[1]], NoneTape] = dev.randn((3, 1))
loss = (x @ w.leaky_trace()).square().mean()
grads: Gradients = loss.backward()
gw: Tensor[Rank2[L[3], L[1]], NoneTape] = grads.get(w)
print(gw.shape)
