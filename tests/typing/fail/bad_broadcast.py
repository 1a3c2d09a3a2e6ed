"""Broadcasts and reshapes mypy must reject (shapes that numpy cannot broadcast either, and
results assigned to a shape they do not have)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Rank3, Tensor, ops

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
v3: Tensor[Rank1[L[3]], NoneTape] = dev.zeros((3,))
v4: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
c: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = dev.zeros((2, 3, 4))

# a (3,) row does not broadcast against 4 columns
a * v3  # E: arg-type
a.sub(v3)  # E: arg-type
a.remainder(v3)  # E: arg-type
ops.fmod(a, v3)  # E: misc
c + v3  # E: arg-type
b1: Tensor[Rank2[L[3], L[4]], NoneTape] = v4.broadcast_to((4, 3))  # E: arg-type
b2: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = a.broadcast_to((2, 4, 3))  # E: arg-type
# reshape's result has the shape it was given
r1: Tensor[Rank1[L[12]], NoneTape] = a.reshape((3, 4))  # E: arg-type
r2: Tensor[Rank2[L[6], L[2]], NoneTape] = a.reshape((2, 6))  # E: arg-type
r3: Tensor[Rank3[L[2], L[2], L[3]], NoneTape] = a.reshape((2, 6))  # E: arg-type
# broadcasts that numpy rejects stay rejected: (8, 5) - (8, 2), (3, 4) + (3, 1, 4)
e: Tensor[Rank2[L[8], L[5]], NoneTape] = dev.zeros((8, 5))
f: Tensor[Rank2[L[8], L[2]], NoneTape] = dev.zeros((8, 2))
e - f  # E: arg-type
e * v3  # E: arg-type
k1: Tensor[Rank2[L[1], L[5]], NoneTape] = e.mean(axis=1, keepdims=True)  # E: assignment
k2: Tensor[Rank1[L[8]], NoneTape] = e.sum(axis=1, keepdims=True)  # E: assignment
c + a.T  # E: arg-type
# stack's new dim is the number of tensors in a tuple (concat's dims: the mypy plugin)
s3: Tensor[Rank3[L[3], L[8], L[5]], NoneTape] = ops.stack((e, e))  # E: assignment
