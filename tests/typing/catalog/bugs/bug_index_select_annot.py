"""class: index-annotation

index_select of rows gives (int, 4); the user annotates the result as (4, int) (axis mix-up).
Run time: static-only (the value has shape (3, 4)).
"""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
table: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.randn((10, 4))
rows: Tensor[Rank2[L[4], int], NoneTape] = table.index_select(np.array([0, 5, 9]))  # BUG
print(rows.shape)
