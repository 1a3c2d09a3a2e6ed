"""class: loss-target

mse_loss of (10, 1) predictions against a (10,) target tensor (PyTorch would broadcast to (10, 10)).
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor
from gradtape.losses import mse_loss

dev = Cpu(seed=0)
pred: Tensor[Rank2[L[10], L[1]], NoneTape] = dev.randn((10, 1))
target: Tensor[Rank1[L[10]], NoneTape] = dev.randn((10,))
loss = mse_loss(pred.leaky_trace(), target)  # BUG
print(loss.item())
