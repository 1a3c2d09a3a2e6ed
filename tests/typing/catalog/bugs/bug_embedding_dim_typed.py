"""class: embedding-dim

Embedding rows of width 8 (typed table (50, 8)) fed to a projection typed for width 16.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import embedding

dev = Cpu(seed=0)
table: Tensor[Rank2[L[50], L[8]], NoneTape] = dev.randn((50, 8))
proj: Tensor[Rank2[L[16], L[4]], NoneTape] = dev.randn((16, 4))
vecs = embedding([1, 2, 3], table)
out = vecs @ proj  # BUG
print(out.shape)
