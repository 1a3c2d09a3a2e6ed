"""squeeze/unsqueeze: a (B, 1) regression output squeezed to (B,) to compare with (B,) targets."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor, nn
from gradtape.losses import mse_loss

dev = Cpu(seed=0)
head: nn.Linear[L[5], L[1]] = nn.Linear(5, 1, dev=dev)
x: Tensor[Rank2[L[8], L[5]], NoneTape] = dev.randn((8, 5))
y: Tensor[Rank1[L[8]], NoneTape] = dev.randn((8,))
pred: Tensor[Rank1[L[8]], NoneTape] = head(x).squeeze(1)
print(mse_loss(pred, y).item())
