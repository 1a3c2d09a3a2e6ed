"""class: attention-width

Hand-written attention: queries of head width 8 against keys of head width 4.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Tensor

dev = Cpu(seed=0)
q: Tensor[Rank3[L[2], L[5], L[8]], NoneTape] = dev.randn((2, 5, 8))
k: Tensor[Rank3[L[2], L[5], L[4]], NoneTape] = dev.randn((2, 5, 4))
scores = q @ k.transpose(1, 2)  # BUG
print(scores.shape)
