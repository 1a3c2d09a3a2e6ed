"""Mean-pool token states (B, L, D) over L with typed axis reduction, then a typed Linear head."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor, nn

dev = Cpu(seed=0)
states: Tensor[Rank3[L[2], L[7], L[16]], NoneTape] = dev.randn((2, 7, 16))
pooled: Tensor[Rank2[L[2], L[16]], NoneTape] = states.mean(axis=1)
head: nn.Linear[L[16], L[3]] = nn.Linear(16, 3, dev=dev)
out: Tensor[Rank2[L[2], L[3]], NoneTape] = head(pooled)
print(out.shape)
