"""class: reduction-axis

Mean-pooling token states (B, L, D) over axis=2 (features) instead of axis=1 (tokens),
assigned to a (B, D) annotated variable.
Run time: static-only (the value has shape (2, 7)).
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor

dev = Cpu(seed=0)
states: Tensor[Rank3[L[2], L[7], L[16]], NoneTape] = dev.randn((2, 7, 16))
pooled: Tensor[Rank2[L[2], L[16]], NoneTape] = states.mean(axis=2)  # BUG
print(pooled.shape)
