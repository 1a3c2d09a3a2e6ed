"""Broadcasting: attention scores (B, H, L, L) plus an additive (L, L) causal mask."""

import numpy as np

from gradtape import Cpu

dev = Cpu(seed=0)
scores = dev.randn((2, 4, 6, 6))
mask = dev.tensor(np.triu(np.full((6, 6), -1e9, np.float32), k=1))
weights = (scores + mask).softmax(axis=-1)
print(weights.shape, float(weights.numpy()[0, 0, 0, 1]))
