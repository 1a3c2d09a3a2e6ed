"""``squeeze(axis)`` with ``gradtape.mypy_plugin``: an axis whose literal size is not 1 is
rejected (``# P:``); a size-1 axis, an ``int`` dim (checked at run time) and ``squeeze()``
of every size-1 dim are accepted."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor, ops

dev = Cpu()
col: Tensor[Rank2[L[4], L[1]], NoneTape] = dev.zeros((4, 1))
reveal_type(col.squeeze(1))  # R: Tensor[tuple[Literal[4]], gradtape.tape.NoneTape]
reveal_type(ops.squeeze(col, -1))  # R: Tensor[tuple[Literal[4]], gradtape.tape.NoneTape]
col.squeeze(0)  # P: gradtape-shape
ops.squeeze(col, axis=(0, 1))  # P: gradtape-shape
col.squeeze(2)  # P: gradtape-shape

batch: Tensor[Rank3[int, L[1], L[5]], NoneTape] = dev.zeros((4, 1, 5))
batch.squeeze(0)  # an int dim: checked at run time
reveal_type(batch.squeeze(1))  # R: Tensor[tuple[int, Literal[5]], gradtape.tape.NoneTape]
batch.squeeze(-1)  # P: gradtape-shape
batch.squeeze()
