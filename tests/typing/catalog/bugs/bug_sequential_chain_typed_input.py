"""class: sequential-chain

A Sequential of typed-width layers fed a typed (3, 10) batch while its first layer takes 8.
Run time: raises ShapeError at the BUG line (inside model(x)).
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, nn

dev = Cpu(seed=0)
l1: nn.Linear[L[8], L[16]] = nn.Linear(8, 16, dev=dev)
l2: nn.Linear[L[16], L[4]] = nn.Linear(16, 4, dev=dev)
model = nn.Sequential(l1, nn.ReLU(), l2)
x: Tensor[Rank2[L[3], L[10]], NoneTape] = dev.randn((3, 10))
y = model(x)  # BUG
print(y.shape)
