"""Generic batch functions: B = TypeVar bound=int keeps the batch dim through typed helper functions."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tape, Tensor

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


def normalize(x: Tensor[Rank2[B, L[16]], T]) -> Tensor[Rank2[B, L[16]], T]:
    return x.layer_norm()


def score(x: Tensor[Rank2[B, L[16]], T], w: Tensor[Rank2[L[16], L[1]], NoneTape]) -> Tensor[Rank2[B, L[1]], T]:
    return normalize(x).matmul(w)


def row_means(x: Tensor[Rank2[B, L[16]], T]) -> Tensor[Rank1[B], T]:
    return x.mean(axis=1)


dev = Cpu(seed=0)
w: Tensor[Rank2[L[16], L[1]], NoneTape] = dev.randn((16, 1))
x: Tensor[Rank2[L[9], L[16]], NoneTape] = dev.randn((9, 16))
s: Tensor[Rank2[L[9], L[1]], NoneTape] = score(x, w)
m: Tensor[Rank1[L[9]], NoneTape] = row_means(x)
print(s.shape, m.shape)
