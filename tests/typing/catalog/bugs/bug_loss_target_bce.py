"""class: loss-target

binary_cross_entropy_with_logits of (8, 1) logits against an (8, 2) one-hot tensor target.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.losses import binary_cross_entropy_with_logits

dev = Cpu(seed=0)
logits: Tensor[Rank2[L[8], L[1]], NoneTape] = dev.randn((8, 1))
onehot: Tensor[Rank2[L[8], L[2]], NoneTape] = dev.zeros((8, 2))
loss = binary_cross_entropy_with_logits(logits, onehot)  # BUG
print(loss.item())
