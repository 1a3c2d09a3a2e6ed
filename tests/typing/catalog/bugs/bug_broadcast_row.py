"""class: broadcast

A (3,) per-row vector added to a (3, 4) matrix: numpy broadcasts trailing dims, so 3 vs 4 fails.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.randn((3, 4))
row_bias: Tensor[Rank1[L[3]], NoneTape] = dev.randn((3,))
y = x + row_bias  # BUG
print(y.shape)
