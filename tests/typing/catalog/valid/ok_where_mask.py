"""where: replace padded positions of a (B, L) score matrix by a large negative value before softmax."""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tensor, ops

dev = Cpu(seed=0)
scores: Tensor[Rank2[L[2], L[5]], NoneTape] = dev.randn((2, 5))
lengths = np.array([3, 5])
pad = np.arange(5)[None, :] >= lengths[:, None]
masked = ops.where(pad, -1e9, scores)
probs = masked.softmax(axis=-1)
print(probs.numpy().round(3))
