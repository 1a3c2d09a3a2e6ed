"""class: concat-dims

Stacking examples of different lengths into a batch.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Tensor
from gradtape.ops import stack

dev = Cpu(seed=0)
a: Tensor[Rank1[L[6]], NoneTape] = dev.randn((6,))
b: Tensor[Rank1[L[5]], NoneTape] = dev.randn((5,))
batch = stack([a, b])  # BUG
print(batch.shape)
