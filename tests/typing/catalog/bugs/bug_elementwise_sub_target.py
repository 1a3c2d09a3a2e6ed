"""class: elementwise-shape

An error metric compares (10, 2) predictions with (10, 3) targets.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
pred: Tensor[Rank2[L[10], L[2]], NoneTape] = dev.randn((10, 2))
target: Tensor[Rank2[L[10], L[3]], NoneTape] = dev.randn((10, 3))
err = (pred - target).abs().mean()  # BUG
print(err.item())
