"""class: matmul-inner

Features (3, 4) multiplied by a weight whose inner dim is 5 instead of 4.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.randn((3, 4))
w: Tensor[Rank2[L[5], L[2]], NoneTape] = dev.randn((5, 2))
y = x @ w  # BUG
print(y.shape)
