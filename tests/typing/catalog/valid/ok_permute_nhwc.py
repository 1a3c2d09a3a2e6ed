"""permute: NHWC images from a data pipeline to NCHW for a conv layer, annotated shapes."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank4, Tensor, nn

dev = Cpu(seed=0)
nhwc: Tensor[Rank4[L[2], L[8], L[8], L[3]], NoneTape] = dev.randn((2, 8, 8, 3))
nchw: Tensor[Rank4[L[2], L[3], L[8], L[8]], NoneTape] = nhwc.permute((0, 3, 1, 2))
conv = nn.Conv2d(3, 4, 3, padding=1, dev=dev)
print(conv(nchw).shape)
