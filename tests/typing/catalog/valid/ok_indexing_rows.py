"""Indexing: first row, a column, a slice of rows, and gather of per-row picks."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)
a: Tensor[Rank2[L[5], L[3]], NoneTape] = dev.randn((5, 3))
row: Tensor[Rank1[L[3]], NoneTape] = a[0]
col: Tensor[Rank1[L[5]], NoneTape] = a[:, 1]
head: Tensor[Rank2[int, L[3]], NoneTape] = a[1:3]
picked = a.gather([0, 2, 2, 1, 0], axis=1)
print(row.shape, col.shape, head.shape, picked.shape)
