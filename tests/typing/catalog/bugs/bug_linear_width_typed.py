"""class: linear-width

Typed MLP whose second layer expects 100 inputs while the first gives 128.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class MLP(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.fc1: nn.Linear[L[784], L[128]] = nn.Linear(784, 128, dev=dev)
        self.fc2: nn.Linear[L[100], L[10]] = nn.Linear(100, 10, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[784]], T]) -> Tensor[Rank2[B, L[10]], T]:
        return self.fc2(self.fc1(x).relu())  # BUG


dev = Cpu(seed=0)
x: Tensor[Rank2[L[2], L[784]], NoneTape] = dev.randn((2, 784))
print(MLP(dev).forward(x).shape)
