"""Conv net: a generic typed conv block (channels as type variables) used twice."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank4, Tape, Tensor
from gradtape.ops import conv2d, max_pool2d

N = TypeVar("N", bound=int)
C = TypeVar("C", bound=int)
O = TypeVar("O", bound=int)
T = TypeVar("T", bound=Tape)


def block(
    x: Tensor[Rank4[N, C, int, int], T], k: Tensor[Rank4[O, C, L[3], L[3]], T]
) -> Tensor[Rank4[N, O, int, int], T]:
    return max_pool2d(conv2d(x, k, padding=1).relu(), 2)


dev = Cpu(seed=0)
x: Tensor[Rank4[L[2], L[1], int, int], NoneTape] = dev.randn((2, 1, 16, 16))
k1: Tensor[Rank4[L[4], L[1], L[3], L[3]], NoneTape] = dev.randn((4, 1, 3, 3))
k2: Tensor[Rank4[L[8], L[4], L[3], L[3]], NoneTape] = dev.randn((8, 4, 3, 3))
y = block(block(x, k1), k2)
print(y.shape)
