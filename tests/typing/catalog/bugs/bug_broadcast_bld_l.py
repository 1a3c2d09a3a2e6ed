"""class: broadcast

(B, L, D) + (L,) positional scalars without unsqueeze: L=10 against D=16.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank3, Tensor

dev = Cpu(seed=0)
h: Tensor[Rank3[L[4], L[10], L[16]], NoneTape] = dev.randn((4, 10, 16))
pos: Tensor[Rank1[L[10]], NoneTape] = dev.randn((10,))
out = h + pos  # BUG
print(out.shape)
