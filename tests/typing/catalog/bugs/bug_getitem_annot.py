"""class: index-annotation

a[:, 0] (a column, shape (5,)) annotated as a row of shape (3,).
Run time: static-only (the value has shape (5,)).
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)
a: Tensor[Rank2[L[5], L[3]], NoneTape] = dev.randn((5, 3))
first: Tensor[Rank1[L[3]], NoneTape] = a[:, 0]  # BUG
print(first.shape)
