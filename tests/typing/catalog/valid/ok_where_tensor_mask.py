"""where: a mask tensor from a comparison selects between two tensors of the same shape (traced)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, ops

dev = Cpu(seed=0)
x: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.randn((3, 4))
xt = x.leaky_trace()
mask = x > 0.0
y = ops.where(mask, xt, xt * 0.1)  # leaky relu by hand
grads = y.sum().backward()
print(grads.get(x).numpy())
