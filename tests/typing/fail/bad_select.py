"""Misuses of issue 27's ops by index and order that mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank0, Rank2, Tensor, ops

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
x = a.leaky_trace()

a.argmax(dim=1.0)  # E: call-overload
i: Tensor[Rank2[L[3], L[4]], NoneTape] = a.argmax(dim=None)  # E: assignment
a.topk(2.0)  # E: arg-type
v: Tensor[Rank0, NoneTape] = a.sort().values  # E: assignment
a.split(1.5)  # E: arg-type
a.chunk("2")  # E: arg-type
a.flip(0.0)  # E: arg-type
a.repeat(2.0, 1)  # E: arg-type
a.cumsum(dim="1")  # E: arg-type
a.scatter_add(0, [[0]], [[1.0]])  # E: arg-type
a.index_add(0, [0], a, alpha="2")  # E: arg-type
ops.one_hot([0, 1])  # E: arg-type
u: Tensor[Rank2[L[3], L[4]], NoneTape] = x.flip(0)  # E: assignment
a.var(unbiased=1.5)  # E: call-overload
