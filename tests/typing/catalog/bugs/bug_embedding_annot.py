"""class: index-annotation

embedding() of a list of ids from a (50, 8) table annotated as (int, 16).
Run time: static-only (the value has shape (3, 8)).
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import embedding

dev = Cpu(seed=0)
table: Tensor[Rank2[L[50], L[8]], NoneTape] = dev.randn((50, 8))
vecs: Tensor[Rank2[int, L[16]], NoneTape] = embedding([1, 2, 3], table)  # BUG
print(vecs.shape)
