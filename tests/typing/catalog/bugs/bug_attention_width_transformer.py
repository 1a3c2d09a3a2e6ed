"""class: attention-width

A TransformerEncoderLayer with d_model=24 applied to embeddings of width 16.
Run time: raises ShapeError at the BUG line.
"""

import numpy as np

from gradtape import Cpu, nn

dev = Cpu(seed=0)
emb = nn.Embedding(30, 16, dev=dev)
layer = nn.TransformerEncoderLayer(24, 4, dim_feedforward=32, dev=dev)
h = emb(np.array([[1, 2, 3, 4]]))
out = layer(h)  # BUG
print(out.shape)
