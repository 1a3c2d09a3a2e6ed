"""Programs mypy must reject: typed Linear layers that do not fit their inputs."""

from typing import TypeAlias
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, nn

Batch: TypeAlias = int
dev = Cpu()

l1: nn.Linear[L[64], L[32]] = nn.Linear(64, 32, dev=dev)
l2: nn.Linear[L[16], L[10]] = nn.Linear(16, 10, dev=dev)
x: Tensor[Rank2[Batch, L[64]], NoneTape] = dev.zeros((8, 64))
x2: Tensor[Rank2[Batch, L[16]], NoneTape] = dev.zeros((8, 16))

l1(x2)  # E: arg-type
l2(l1(x))  # E: arg-type
y: Tensor[Rank2[Batch, L[32]], NoneTape] = l2(x2)  # E: assignment
l3: nn.Linear[L[64], L[32]] = nn.Linear(64, 31, dev=dev)  # E: arg-type
