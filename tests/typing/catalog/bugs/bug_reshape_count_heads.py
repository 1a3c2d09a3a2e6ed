"""class: reshape-count

Splitting E=30 into 4 heads of size 8 (32 != 30).
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank3[L[2], L[6], L[30]], NoneTape] = dev.randn((2, 6, 30))
heads = x.reshape((2, 6, 4, 8))  # BUG
print(heads.shape)
