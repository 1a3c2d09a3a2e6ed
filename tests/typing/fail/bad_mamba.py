"""Shape and tape bugs with nn.Mamba and ops.selective_scan that mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Rank3, Tensor, nn, ops

dev = Cpu()
mixer: nn.Mamba[L[16]] = nn.Mamba(16, dev=dev)
block: nn.MambaBlock[L[16]] = nn.MambaBlock(16, dev=dev)
x8: Tensor[Rank3[L[2], L[5], L[8]], NoneTape] = dev.randn((2, 5, 8))
mixer(x8)  # E: arg-type
block(x8)  # E: arg-type
x: Tensor[Rank3[L[2], L[5], L[4]], NoneTape] = dev.randn((2, 5, 4))
a: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((4, 3))
b3: Tensor[Rank3[L[2], L[5], L[3]], NoneTape] = dev.randn((2, 5, 3))
d: Tensor[Rank1[L[4]], NoneTape] = dev.ones((4,))
ops.selective_scan(x, x, a, b3, b3, d).backward()  # E: call-overload
