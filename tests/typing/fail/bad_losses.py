"""Shape and tape bugs in the losses and in creation with annotated shapes that mypy rejects."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, OwnedTape, Rank1, Rank2, Rank3, Tensor
from gradtape.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    triplet_margin_loss,
)

dev = Cpu()
logits: Tensor[Rank2[int, L[10]], NoneTape] = dev.zeros((8, 10))
seq: Tensor[Rank3[int, int, L[10]], NoneTape] = dev.zeros((2, 8, 10))
p: Tensor[Rank2[L[8], L[3]], NoneTape] = dev.zeros((8, 3))
q: Tensor[Rank2[L[3], L[8]], NoneTape] = dev.zeros((3, 8))

cross_entropy(seq, [0, 1])  # E: arg-type
l1_loss(p, q)  # E: misc
huber_loss(p, q)  # E: misc
binary_cross_entropy_with_logits(p, q)  # E: misc
multilabel_soft_margin_loss(p, q)  # E: misc
r: Tensor[Rank1[L[8]], NoneTape] = mse_loss(p, p)  # E: assignment
s: Tensor[tuple[()], OwnedTape] = mse_loss(p, p)  # E: arg-type

# creation with annotated shapes: the tuple given must be the annotated one
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.randn((4, 3))  # E: arg-type
b: Tensor[Rank1[L[5]], NoneTape] = dev.ones((5, 1))  # E: arg-type
c: Tensor[Rank2[L[2], L[2]], NoneTape] = dev.zeros((2,))  # E: arg-type
d: Tensor[Rank2[L[2], L[2]], OwnedTape] = dev.zeros((2, 2))  # E: assignment

# more loss misuses: mismatched shapes, wrong rank, wrong options, a tensor taken for a float
v: Tensor[Rank1[L[3]], NoneTape] = dev.zeros((3,))
smooth_l1_loss(p, q)  # E: misc
kl_div(p, q)  # E: misc
mse_loss(p, v)  # E: misc
# issue 27: (C,) logits (one sample) and reduction="none" are valid now, as in PyTorch; the
# misuses that stay rejected:
cross_entropy(logits, [0], reduction="avg")  # E: call-overload
cross_entropy(seq, [[0, 1]], label_smoothing=0.1)  # E: arg-type
nll_loss(seq, [[0, 1]])  # E: arg-type
m: Tensor[tuple[()], NoneTape] = mse_loss(p, p, reduction="none")  # E: call-overload
n: Tensor[Rank1[L[3]], NoneTape] = cross_entropy(p, [0] * 8, reduction="none")  # E: call-overload
binary_cross_entropy(p, q)  # E: misc
margin_ranking_loss(p, p, q)  # E: misc
cosine_embedding_loss(seq, seq, [1])  # E: arg-type
triplet_margin_loss(p, p, q)  # E: misc
poisson_nll_loss(p, q)  # E: misc
huber_loss(p, p, delta="1")  # E: call-overload
f: float = mse_loss(p, p)  # E: assignment
