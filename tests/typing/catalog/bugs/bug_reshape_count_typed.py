"""class: reshape-count

Reshaping a (8, 4, 16) batch (512 elements) to (8, 60) (480 elements).
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank3[L[8], L[4], L[16]], NoneTape] = dev.randn((8, 4, 16))
flat = x.reshape((8, 60))  # BUG
print(flat.shape)
