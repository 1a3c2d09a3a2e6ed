"""Embedding via index_select on a typed table; gradient scatters back into the rows used."""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
table: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.randn((10, 4))
ids = np.array([1, 1, 7])
rows: Tensor[Rank2[int, L[4]], NoneTape] = table.index_select(ids)
t = table.leaky_trace()
grads = t.index_select(ids).sum().backward()
print(rows.shape, grads.get(table).numpy()[1])
