"""Channel, rank and tape bugs in conv3d / conv_transpose3d code that mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank4, Rank5, Tensor
from gradtape.ops import conv3d, conv_transpose3d

dev = Cpu()
x: Tensor[Rank5[L[2], L[3], L[8], L[8], L[8]], NoneTape] = dev.zeros((2, 3, 8, 8, 8))
w4: Tensor[Rank5[L[6], L[4], L[3], L[3], L[3]], NoneTape] = dev.zeros((6, 4, 3, 3, 3))
w: Tensor[Rank5[L[6], L[3], L[3], L[3], L[3]], NoneTape] = dev.zeros((6, 3, 3, 3, 3))
b4: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
x4: Tensor[Rank4[L[8], L[3], L[16], L[16]], NoneTape] = dev.zeros((8, 3, 16, 16))
wt: Tensor[Rank5[L[4], L[2], L[2], L[2], L[2]], NoneTape] = dev.zeros((4, 2, 2, 2, 2))

conv3d(x, w4)  # E: misc
conv3d(x, w, b4)  # E: misc
conv3d(x4, w)  # E: arg-type
conv3d(x, w, stride=(1, 2))  # E: arg-type
conv_transpose3d(x, wt)  # E: misc
wrong: Tensor[Rank5[L[2], L[3], int, int, int], NoneTape] = conv3d(x, w)  # E: arg-type
