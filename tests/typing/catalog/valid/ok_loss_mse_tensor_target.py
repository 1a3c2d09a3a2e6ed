"""Losses: mse_loss / l1_loss with a tensor target of the same annotated shape."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.losses import l1_loss, mse_loss

dev = Cpu(seed=0)
pred: Tensor[Rank2[L[10], L[2]], NoneTape] = dev.randn((10, 2))
target: Tensor[Rank2[L[10], L[2]], NoneTape] = dev.randn((10, 2))
p = pred.leaky_trace()
loss = mse_loss(p, target) + 0.1 * l1_loss(p, target)
grads = loss.backward()
print(loss.item(), grads.get(pred).shape)
