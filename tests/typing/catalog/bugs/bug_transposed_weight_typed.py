"""class: transposed-weight

A weight stored PyTorch-style (out, in) = (3, 6) used as x @ w instead of x @ w.T.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[4], L[6]], NoneTape] = dev.randn((4, 6))
w: Tensor[Rank2[L[3], L[6]], NoneTape] = dev.randn((3, 6))
y = x @ w  # BUG
print(y.shape)
