"""class: conv-channels

conv2d with a typed weight expecting 4 input channels on an RGB (3-channel) batch.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank4, Tensor
from gradtape.ops import conv2d

dev = Cpu(seed=0)
x: Tensor[Rank4[L[2], L[3], L[8], L[8]], NoneTape] = dev.randn((2, 3, 8, 8))
w: Tensor[Rank4[L[6], L[4], L[3], L[3]], NoneTape] = dev.randn((6, 4, 3, 3))
y = conv2d(x, w, padding=1)  # BUG
print(y.shape)
