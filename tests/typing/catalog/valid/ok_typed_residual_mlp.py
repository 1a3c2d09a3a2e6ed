"""Annotated residual block: x + fc2(relu(fc1(x))) with equal typed widths."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class ResBlock(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.fc1: nn.Linear[L[32], L[64]] = nn.Linear(32, 64, dev=dev)
        self.fc2: nn.Linear[L[64], L[32]] = nn.Linear(64, 32, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[32]], T]) -> Tensor[Rank2[B, L[32]], T]:
        return x + self.fc2(self.fc1(x).relu())


dev = Cpu(seed=0)
block = ResBlock(dev)
x = dev.randn((4, 32)).realize(tuple[int, L[32]])
y = block.forward(block.forward(x))
print(y.shape)
