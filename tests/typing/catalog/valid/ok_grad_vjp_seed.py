"""Gradients via backward(gradient=...) on a non-scalar output with a seed of the same typed shape."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[2], L[3]], NoneTape] = dev.randn((2, 3))
y = x.leaky_trace().sin()
seed: Tensor[Rank2[L[2], L[3]], NoneTape] = dev.ones((2, 3))
grads = y.backward(seed)
print(grads.get(x).shape)
