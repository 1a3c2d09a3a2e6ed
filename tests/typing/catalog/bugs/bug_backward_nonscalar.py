"""class: backward

backward() on the per-example (B,) losses instead of their mean.
Run time: raises TapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
pred: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((4, 3))
per_example = pred.leaky_trace().square().sum(axis=1)
grads = per_example.backward()  # BUG
print(grads)
