"""Losses: cross_entropy with a Python list of class indices, annotated logits, backward."""

from typing import Literal as L

from gradtape import Cpu, Gradients, NoneTape, Rank2, Tensor
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
logits: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((4, 3))
loss = cross_entropy(logits.leaky_trace(), [0, 2, 1, 1])
grads: Gradients = loss.backward()
print(loss.item(), grads.get(logits).shape)
