"""class: elementwise-shape

A residual connection adds a (B, 64) input to a (B, 32) block output.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class Block(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.fc: nn.Linear[L[64], L[32]] = nn.Linear(64, 32, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[32]], T]:
        return x + self.fc(x)  # BUG


dev = Cpu(seed=0)
x: Tensor[Rank2[L[4], L[64]], NoneTape] = dev.randn((4, 64))
print(Block(dev).forward(x).shape)
