"""Recurrent and Transformer bugs (issue 28): an input of another width than the layer's I,
a bidirectional LSTM's 2H-wide output used as H wide, a cell fed the wrong width, and a
Transformer's tgt of another width than d_model."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor, nn

dev = Cpu()
x: Tensor[Rank3[L[5], L[2], L[10]], NoneTape] = dev.zeros((5, 2, 10))

lstm: nn.LSTM[L[8], L[16], L[16]] = nn.LSTM(8, 16, dev=dev)
lstm(x)  # E: arg-type
gru: nn.GRU[L[8], L[16], L[16]] = nn.GRU(8, 16, dev=dev)
gru(x)  # E: arg-type

bi: nn.LSTM[L[10], L[16], L[32]] = nn.LSTM(10, 16, bidirectional=True, dev=dev)
head: nn.Linear[L[16], L[4]] = nn.Linear(16, 4, dev=dev)
feats, _ = bi(x)
head(feats)  # E: arg-type
h16: Tensor[Rank3[L[5], L[2], L[16]], NoneTape] = bi(x)[0]  # E: assignment

cell: nn.GRUCell[L[8], L[16]] = nn.GRUCell(8, 16, dev=dev)
step: Tensor[Rank2[L[2], L[16]], NoneTape] = dev.zeros((2, 16))
cell(step)  # E: arg-type

tr: nn.Transformer[L[10]] = nn.Transformer(10, 2, 1, 1, 16, dev=dev)
tgt: Tensor[Rank3[L[3], L[2], L[12]], NoneTape] = dev.zeros((3, 2, 12))
tr(x, tgt)  # E: arg-type
