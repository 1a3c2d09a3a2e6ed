"""class: linear-width

A typed module called PyTorch-style as model(x) with 32 features where forward wants 64.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class Net(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.fc: nn.Linear[L[64], L[10]] = nn.Linear(64, 10, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[10]], T]:
        return self.fc(x)


dev = Cpu(seed=0)
model = Net(dev)
x: Tensor[Rank2[L[8], L[32]], NoneTape] = dev.randn((8, 32))
y = model(x)  # BUG
print(y.shape)
