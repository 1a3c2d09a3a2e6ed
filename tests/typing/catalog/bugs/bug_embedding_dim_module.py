"""class: embedding-dim

PyTorch-style: nn.Embedding(100, 32) followed by a head nn.Linear(64, 4).
Run time: raises ShapeError at the BUG line.
"""

import numpy as np

from gradtape import Cpu, nn

dev = Cpu(seed=0)
emb = nn.Embedding(100, 32, dev=dev)
head = nn.Linear(64, 4, dev=dev)
tokens = np.array([[1, 2, 3], [4, 5, 6]])
pooled = emb(tokens).mean(axis=1)
logits = head(pooled)  # BUG
print(logits.shape)
