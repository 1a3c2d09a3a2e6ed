"""Broadcasts and reshapes mypy must reject (shapes that numpy cannot broadcast either, and
results assigned to a shape they do not have)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Rank3, Tensor

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
v3: Tensor[Rank1[L[3]], NoneTape] = dev.zeros((3,))
v4: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
c: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = dev.zeros((2, 3, 4))

# a (3,) row does not broadcast against 4 columns
a * v3  # E: arg-type
a.sub(v3)  # E: arg-type
c + v3  # E: arg-type
b1: Tensor[Rank2[L[3], L[4]], NoneTape] = v4.broadcast_to((4, 3))  # E: arg-type
b2: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = a.broadcast_to((2, 4, 3))  # E: arg-type
# reshape's result has the shape it was given
r1: Tensor[Rank1[L[12]], NoneTape] = a.reshape((3, 4))  # E: arg-type
r2: Tensor[Rank2[L[6], L[2]], NoneTape] = a.reshape((2, 6))  # E: arg-type
r3: Tensor[Rank3[L[2], L[2], L[3]], NoneTape] = a.reshape((2, 6))  # E: arg-type
