"""Losses: cross_entropy with an int numpy array of labels and with soft (N, C) array targets."""

import numpy as np

from gradtape import Cpu
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
logits = dev.randn((6, 4)).leaky_trace()
labels = np.array([0, 1, 2, 3, 0, 1])
hard = cross_entropy(logits, labels)
soft_targets = np.full((6, 4), 0.25, np.float32)
soft = cross_entropy(logits, soft_targets)
print(hard.item(), soft.item())
