"""class: reduction-axis

Per-example mean over features should be axis=1 -> (32,); axis=0 gives (64,) and is
assigned to a variable annotated (32,).
Run time: static-only (annotations are not checked at run time; the value has shape (64,)).
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[32], L[64]], NoneTape] = dev.randn((32, 64))
per_example: Tensor[Rank1[L[32]], NoneTape] = x.mean(axis=0)  # BUG
print(per_example.shape)
