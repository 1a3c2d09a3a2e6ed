"""class: transposed-weight

Using a Linear layer's weight (out, in) = (10, 64) directly in a matmul without .T.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, nn

dev = Cpu(seed=0)
fc: nn.Linear[L[64], L[10]] = nn.Linear(64, 10, dev=dev)
x: Tensor[Rank2[L[8], L[64]], NoneTape] = dev.randn((8, 64))
logits = x @ fc.weight  # BUG
print(logits.shape)
