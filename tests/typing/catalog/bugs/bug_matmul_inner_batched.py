"""class: matmul-inner

Batched (2, 5, 8) queries times (2, 7, 8) keys without transposing the keys.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Tensor

dev = Cpu(seed=0)
q: Tensor[Rank3[L[2], L[5], L[8]], NoneTape] = dev.randn((2, 5, 8))
k: Tensor[Rank3[L[2], L[7], L[8]], NoneTape] = dev.randn((2, 7, 8))
scores = q @ k  # BUG
print(scores.shape)
