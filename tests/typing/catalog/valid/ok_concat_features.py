"""concat: join two feature blocks along the last axis and feed a Linear layer over the sum of widths."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, nn
from gradtape.ops import concat

dev = Cpu(seed=0)
a: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((4, 3))
b: Tensor[Rank2[L[4], L[5]], NoneTape] = dev.randn((4, 5))
joined = concat([a, b], axis=1)  # (4, 8)
head = nn.Linear(8, 2, dev=dev)
print(head(joined).shape)
