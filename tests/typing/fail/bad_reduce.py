"""Shape and tape bugs in the reductions, comparisons, where, maximum/pow and losses that mypy rejects."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor, ops
from gradtape.losses import kl_div, mse_loss
from gradtape.ops.binary import pow

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
w: Tensor[Rank2[L[5], L[2]], NoneTape] = dev.zeros((5, 2))
s: Tensor[Rank1[L[3]], NoneTape] = a.max(axis=0)  # E: assignment
v: Tensor[Rank1[L[4]], NoneTape] = a.var(axis=1)  # E: assignment
a.max(axis=0).backward()  # E: call-overload
a.leaky_trace().softmax().logsumexp(axis=1).backward()  # E: call-overload
a.maximum(w)  # E: arg-type
ops.maximum(a, w)  # E: misc
pow(a, w)  # E: misc
a < w  # E: arg-type
a.lt(w)  # E: arg-type
(a.leaky_trace() > 0.0).backward()  # E: call-overload
ops.where(a > 0.0, a, w)  # E: misc
mse_loss(a, w)  # E: misc
mse_loss(a, a, reduction="batchmean")  # E: call-overload
# reduction="none" is valid since issue 27 (PyTorch's); an unknown one is not
kl_div(a, a, reduction="max")  # E: call-overload
a.var(correction="1")  # E: call-overload
c3: Tensor[tuple[L[2], L[3], L[4]], NoneTape] = dev.zeros((2, 3, 4))
m3: Tensor[Rank2[L[2], L[3]], NoneTape] = c3.max(axis=1)  # E: assignment
c3.sum(axis=-1).matmul(c3.sum(axis=1))  # E: arg-type
