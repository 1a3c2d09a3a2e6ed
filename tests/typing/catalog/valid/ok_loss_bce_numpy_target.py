"""Losses: binary_cross_entropy_with_logits against a numpy 0/1 target array, annotated logits."""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.losses import binary_cross_entropy_with_logits

dev = Cpu(seed=0)
logits: Tensor[Rank2[L[8], L[3]], NoneTape] = dev.randn((8, 3))
targets = (np.arange(24).reshape(8, 3) % 2).astype(np.float32)
loss = binary_cross_entropy_with_logits(logits.leaky_trace(), targets)
print(loss.item())
