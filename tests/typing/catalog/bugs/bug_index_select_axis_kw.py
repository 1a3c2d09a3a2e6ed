"""class: index-annotation

index_select(x, idx, axis=0) of a (10, 4) table picks rows, (int, 4); the user annotates the
result as if it picked columns, (10, int).
Run time: static-only (the value has shape (3, 4)).
"""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import index_select

dev = Cpu(seed=0)
table: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.randn((10, 4))
picked: Tensor[Rank2[L[10], int], NoneTape] = index_select(table, np.array([0, 5, 9]), axis=0)  # BUG
print(picked.shape)
