"""class: embedding-dim

Token embeddings of width 16 plus positional embeddings of width 12.
Run time: raises ShapeError at the BUG line.
"""

import numpy as np

from gradtape import Cpu, nn

dev = Cpu(seed=0)
tok = nn.Embedding(20, 16, dev=dev)
pos = nn.Embedding(8, 12, dev=dev)
ids = np.array([[3, 1, 4, 1, 5, 9, 2, 6]])
h = tok(ids) + pos(np.arange(8))  # BUG
print(h.shape)
