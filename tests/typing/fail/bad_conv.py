"""Channel, rank and tape bugs in conv / pool / upscale code that mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank3, Rank4, Tensor
from gradtape.ops import avg_pool2d, conv1d, conv2d, conv_transpose2d, max_pool2d, upscale2d

dev = Cpu()
x: Tensor[Rank4[L[8], L[3], L[16], L[16]], NoneTape] = dev.zeros((8, 3, 16, 16))
w4: Tensor[Rank4[L[6], L[4], L[3], L[3]], NoneTape] = dev.zeros((6, 4, 3, 3))
w: Tensor[Rank4[L[6], L[3], L[3], L[3]], NoneTape] = dev.zeros((6, 3, 3, 3))
b4: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
x1: Tensor[Rank3[L[4], L[2], L[50]], NoneTape] = dev.zeros((4, 2, 50))
w1: Tensor[Rank3[L[5], L[3], L[7]], NoneTape] = dev.zeros((5, 3, 7))
wt: Tensor[Rank4[L[4], L[2], L[2], L[2]], NoneTape] = dev.zeros((4, 2, 2, 2))

conv2d(x, w4)  # E: misc
conv2d(x.leaky_trace(), w4, padding=1)  # E: misc
conv2d(x, w, b4)  # E: misc
conv2d(x, w, b4, groups=3)  # E: misc
conv2d(x1, w)  # E: arg-type
conv2d(x, w, stride="2")  # E: call-overload
conv1d(x1, w1)  # E: misc
conv1d(x, w)  # E: arg-type
conv_transpose2d(x, wt)  # E: misc
conv_transpose2d(x, wt, groups=2)  # E: misc
max_pool2d(x1, 2)  # E: arg-type
avg_pool2d(x, 2.0)  # E: arg-type
upscale2d(x, scale_factor=2, mode="bicubic")  # E: call-overload
wrong: Tensor[Rank4[L[8], L[3], int, int], NoneTape] = conv2d(x, w)  # E: arg-type
conv2d(x, w).backward()  # E: call-overload
