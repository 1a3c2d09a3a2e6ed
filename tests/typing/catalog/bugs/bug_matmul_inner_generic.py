"""class: matmul-inner

A generic batch function multiplies (B, 16) features by a (8, 1) weight.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
dev = Cpu(seed=0)
w: Tensor[Rank2[L[8], L[1]], NoneTape] = dev.randn((8, 1))


def score(x: Tensor[Rank2[B, L[16]], T]) -> Tensor[Rank2[B, L[1]], T]:
    return x.matmul(w)  # BUG


x: Tensor[Rank2[L[4], L[16]], NoneTape] = dev.randn((4, 16))
print(score(x).shape)
