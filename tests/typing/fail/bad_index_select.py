"""index_select annotated as if it selected along another axis: the result keeps the other
dims and has the index count (int) at ``axis``."""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor, ops

dev = Cpu()
table: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.zeros((10, 4))
idx = np.array([0, 5, 9])
rows: Tensor[Rank2[L[4], int], NoneTape] = table.index_select(idx)  # E: assignment
cols: Tensor[Rank2[L[10], int], NoneTape] = ops.index_select(table, idx, axis=0)  # E: assignment
torch_rows: Tensor[Rank2[L[10], int], NoneTape] = table.index_select(0, idx)  # E: assignment
seq: Tensor[Rank3[L[2], L[7], L[4]], NoneTape] = dev.zeros((2, 7, 4))
steps: Tensor[Rank3[L[2], L[7], int], NoneTape] = ops.index_select(seq, idx, axis=1)  # E: assignment
