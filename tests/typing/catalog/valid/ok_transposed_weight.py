"""PyTorch weight layout: x @ w.T with w stored (out, in), annotated, plus linear(x, w) for comparison."""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import linear

dev = Cpu(seed=0)
x: Tensor[Rank2[L[4], L[6]], NoneTape] = dev.randn((4, 6))
w: Tensor[Rank2[L[3], L[6]], NoneTape] = dev.randn((3, 6))
y1: Tensor[Rank2[L[4], L[3]], NoneTape] = x @ w.T
y2: Tensor[Rank2[L[4], L[3]], NoneTape] = linear(x, w)
assert np.allclose(y1.numpy(), y2.numpy(), atol=1e-5)
print(y1.shape)
