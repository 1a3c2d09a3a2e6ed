"""Programs mypy must reject around realize(): the realized type is what the code then checks."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, OwnedTape, Rank2, Tensor

dev = Cpu()
d: Tensor[Rank2[int, int], NoneTape] = dev.zeros((64, 10))

w = d.realize(tuple[L[64], L[10]])
v: Tensor[Rank2[L[10], L[64]], NoneTape] = w  # E: assignment
x = dev.zeros((8, 32)).realize(tuple[int, L[32]])
x.matmul(w)  # E: arg-type
t: Tensor[Rank2[L[64], L[10]], OwnedTape] = d.realize(tuple[L[64], L[10]])  # E: assignment
d.realize((64, 10))  # E: arg-type
w.realize(tuple[L[64], L[10]]).backward()  # E: call-overload
# without realize, run-time (int) dims do not flow into static (Literal) code (a matmul's
# int inner dim does: it meets any dim, checked at run time; see ok_realize.py)
s: Tensor[Rank2[L[64], L[10]], NoneTape] = d  # E: assignment
w.realize(tuple[L[64], L[10], int])  # E: type-var
w.realize(tuple[L[64]])  # E: type-var
# the shape must be a tuple type
d.realize(int)  # E: type-var
d.realize(list[int])  # E: type-var
d.realize("tuple[L[64], L[10]]")  # E: arg-type
