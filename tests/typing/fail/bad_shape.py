"""Shape-op mistakes mypy must reject."""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank1, Rank2, Rank3, Tensor
from gradtape.ops import concat

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
v: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
c: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = dev.zeros((2, 3, 4))
w: Tensor[Rank2[L[3], L[2]], NoneTape] = dev.zeros((3, 2))
t1: Tensor[Rank2[L[3], L[4]], NoneTape] = a.T  # E: arg-type
t2: Tensor[Rank2[L[3], L[4]], NoneTape] = a.transpose(0, 1)  # E: assignment
t3: Tensor[Rank2[L[3], L[4]], NoneTape] = a.permute((1, 0))  # E: assignment
t4: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = c.permute((0, 2, 1))  # E: assignment
v.T  # E: arg-type
c.T  # E: arg-type
a @ w  # E: arg-type
a.T.T @ w  # E: arg-type
r1: Tensor[Rank2[L[4], L[3]], NoneTape] = a.reshape((3, 4))  # E: arg-type
b1: Tensor[Rank2[L[3], L[4]], NoneTape] = v.broadcast_to((4, 4))  # E: arg-type
e1: Tensor[Rank2[L[4], L[1]], NoneTape] = v.expand_dims(0)  # E: assignment
q1: Tensor[Rank1[L[3]], NoneTape] = a.expand_dims(0).squeeze(0)  # E: assignment
g1: Tensor[Rank1[L[3]], NoneTape] = a[0]  # E: assignment
g2: Tensor[Rank1[L[4]], NoneTape] = a[:, 0]  # E: assignment
a[[0.5, 1.5]]  # E: list-item
a[0.5]  # E: call-overload
a.reshape((2.0, 6))  # E: type-var
a.permute(1.0, 0)  # E: call-overload
concat(a)  # E: call-overload
concat([a, v.numpy()])  # E: arg-type
a.leaky_trace().T.backward()  # E: call-overload
a.gather([0.5])  # E: list-item
a.gather(np.float64(1.0))  # E: call-overload
a.tril(1.5)  # E: arg-type
