"""index_select keeps the other dims and puts the index count (int) at ``axis`` (both orders)."""

from typing import Literal as L
from typing import reveal_type

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor, ops

dev = Cpu()
table: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.zeros((10, 4))
idx = np.array([0, 5, 9])
rows: Tensor[Rank2[int, L[4]], NoneTape] = table.index_select(idx)
cols: Tensor[Rank2[L[10], int], NoneTape] = ops.index_select(table, idx, axis=1)
torch_cols: Tensor[Rank2[L[10], int], NoneTape] = table.index_select(1, idx)
seq: Tensor[Rank3[L[2], L[7], L[4]], NoneTape] = dev.zeros((2, 7, 4))
reveal_type(ops.index_select(seq, idx, axis=1))  # R: Tensor[tuple[Literal[2], int, Literal[4]], gradtape.tape.NoneTape]
reveal_type(seq.index_select(-1, [0, 1]))  # R: Tensor[tuple[Literal[2], Literal[7], int], gradtape.tape.NoneTape]
print(rows.shape, cols.shape, torch_cols.shape)
