"""Broadcasting: (B, 1, D) * (B, L, D) gating of every position by a per-example vector."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Tensor

dev = Cpu(seed=0)
gate: Tensor[Rank3[L[2], L[1], L[8]], NoneTape] = dev.rand((2, 1, 8))
seq: Tensor[Rank3[L[2], L[6], L[8]], NoneTape] = dev.randn((2, 6, 8))
gated = gate * seq
print(gated.shape)
