"""Shape and tape bugs mypy must reject (DESIGN.md's list)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
w: Tensor[Rank2[L[5], L[2]], NoneTape] = dev.zeros((5, 2))
b: Tensor[Rank1[L[3]], NoneTape] = dev.zeros((3,))
a.matmul(w)  # E: arg-type
a @ w  # E: arg-type
a + w  # E: arg-type
a.add(w)  # E: arg-type
a * w  # E: arg-type
a - w  # E: arg-type
a / w  # E: arg-type
a + b  # E: arg-type
a.sum(axis=0).backward()  # E: call-overload
a.leaky_trace().backward()  # E: call-overload
bad: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 5))  # E: arg-type
s: Tensor[Rank1[L[3]], NoneTape] = a.sum(axis=0)  # E: assignment
