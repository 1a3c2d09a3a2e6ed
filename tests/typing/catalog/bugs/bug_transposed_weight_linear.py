"""class: transposed-weight

ops.linear expects w as (out, in); the user passes the (in, out) = (6, 3) matrix.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import linear

dev = Cpu(seed=0)
x: Tensor[Rank2[L[4], L[6]], NoneTape] = dev.randn((4, 6))
w: Tensor[Rank2[L[6], L[3]], NoneTape] = dev.randn((6, 3))
y = linear(x, w)  # BUG
print(y.shape)
