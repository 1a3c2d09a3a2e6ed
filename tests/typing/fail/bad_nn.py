"""Shape and tape bugs in matmul, linear and the nn ops that mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Rank3, Rank4, Tensor
from gradtape.ops import embedding, layer_norm, linear, rms_norm

dev = Cpu()
v: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
v5: Tensor[Rank1[L[5]], NoneTape] = dev.zeros((5,))
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
m5: Tensor[Rank2[L[5], L[2]], NoneTape] = dev.zeros((5, 2))
bt: Tensor[Rank3[L[5], L[3], L[4]], NoneTape] = dev.zeros((5, 3, 4))
bm: Tensor[Rank3[L[6], L[4], L[2]], NoneTape] = dev.zeros((6, 4, 2))
q: Tensor[Rank4[L[6], L[5], L[3], L[4]], NoneTape] = dev.zeros((6, 5, 3, 4))
v @ m5  # E: arg-type
a @ v5  # E: arg-type
v @ v5  # E: arg-type
bt @ m5  # E: arg-type
bt @ bm  # E: arg-type
q @ m5  # E: arg-type

w_bad: Tensor[Rank2[L[7], L[5]], NoneTape] = dev.zeros((7, 5))
w: Tensor[Rank2[L[7], L[4]], NoneTape] = dev.zeros((7, 4))
b_bad: Tensor[Rank1[L[6]], NoneTape] = dev.zeros((6,))
linear(a, w_bad)  # E: misc
linear(bt, w_bad)  # E: arg-type
linear(a, w, b_bad)  # E: misc
out: Tensor[Rank2[L[3], L[4]], NoneTape] = linear(a, w)  # E: arg-type

layer_norm(a, weight=v5)  # E: misc
rms_norm(a, v5)  # E: misc
linear(a, w).backward()  # E: call-overload
layer_norm(a).backward()  # E: call-overload

table: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.zeros((10, 4))
embedding([1, 2], v)  # E: arg-type
# an embedding's width reaches an annotated result (no untyped fallback swallows it)
table4: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.zeros((10, 4))
e16: Tensor[Rank2[int, L[16]], NoneTape] = embedding([1, 2], table4)  # E: arg-type
r5: Tensor[Rank2[int, L[5]], NoneTape] = table4.index_select([1, 2], axis=0)  # E: assignment
