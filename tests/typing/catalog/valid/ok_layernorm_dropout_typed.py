"""Typed functional pre-norm block: layer_norm with (D,) weight, dropout, residual, keeps (B, D)."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tape, Tensor
from gradtape.ops import dropout, layer_norm, linear

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
dev = Cpu(seed=0)
g: Tensor[Rank1[L[8]], NoneTape] = dev.ones((8,))
w: Tensor[Rank2[L[8], L[8]], NoneTape] = dev.randn((8, 8))


def block(x: Tensor[Rank2[B, L[8]], T]) -> Tensor[Rank2[B, L[8]], T]:
    h = linear(layer_norm(x, weight=g), w).relu()
    return x + dropout(h, 0.1, rng=0)


x: Tensor[Rank2[L[4], L[8]], NoneTape] = dev.randn((4, 8))
print(block(block(x)).shape)
