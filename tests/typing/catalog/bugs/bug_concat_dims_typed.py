"""class: concat-dims

Concatenating (4, 3) and (5, 3) along axis=1: the row counts differ.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import concat

dev = Cpu(seed=0)
a: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((4, 3))
b: Tensor[Rank2[L[5], L[3]], NoneTape] = dev.randn((5, 3))
joined = concat([a, b], axis=1)  # BUG
print(joined.shape)
