"""Inline shapes: dev.zeros((n, 4)).matmul(w) with a typed (4, 2) weight and a run-time n."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
w: Tensor[Rank2[L[4], L[2]], NoneTape] = dev.randn((4, 2))


def project(n: int) -> Tensor[Rank2[int, L[2]], NoneTape]:
    return dev.zeros((n, 4)).matmul(w)


print(project(3).shape)
