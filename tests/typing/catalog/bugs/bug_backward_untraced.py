"""class: backward

The user forgot to trace the input: the loss has no tape.
Run time: raises TapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.losses import mse_loss

dev = Cpu(seed=0)
x: Tensor[Rank2[L[5], L[2]], NoneTape] = dev.randn((5, 2))
w: Tensor[Rank2[L[2], L[1]], NoneTape] = dev.randn((2, 1))
y: Tensor[Rank2[L[5], L[1]], NoneTape] = dev.randn((5, 1))
loss = mse_loss(x @ w, y)
grads = loss.backward()  # BUG
print(grads)
