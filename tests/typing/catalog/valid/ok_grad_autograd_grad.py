"""Gradients via PyTorch-style autograd.grad on a traced input, with an annotated helper."""

from typing import Any

from gradtape import Cpu, Tensor, autograd

dev = Cpu(seed=0)


def energy(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
    return (x.square().sum(axis=1) * 0.5).sum()


x = dev.randn((4, 3)).leaky_trace()
(gx,) = autograd.grad(energy(x), [x])
assert gx is not None
print(gx.shape)
