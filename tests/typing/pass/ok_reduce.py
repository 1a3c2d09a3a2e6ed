"""Valid programs with the reductions, comparisons, where, maximum/minimum/pow, softmax and losses."""

from typing import Literal as L
from typing import reveal_type

import numpy as np

from gradtape import Cpu, Gradients, NoneTape, OwnedTape, Rank0, Rank1, Rank2, Tensor, ops
from gradtape.losses import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    smooth_l1_loss,
)
from gradtape.ops.binary import pow

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
b: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
x = a.leaky_trace()

# reductions: the output shape type follows the axis, as for sum/mean
reveal_type(a.max())  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
m0: Tensor[Rank1[L[4]], NoneTape] = a.max(axis=0)
m1: Tensor[Rank1[L[3]], NoneTape] = a.min(axis=-1)
v1: Tensor[Rank1[L[3]], NoneTape] = a.var(axis=1, correction=1)
s0: Tensor[Rank1[L[4]], NoneTape] = a.std(0, ddof=1)
reveal_type(x.logsumexp(axis=1))  # R: Tensor[tuple[Literal[3]], gradtape.tape.GradientTape]
reveal_type(a.logsumexp(axis=(0, 1), keepdims=True))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(ops.var(x))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
g1: Gradients = x.max(axis=0).sum().backward()

# softmax keeps shape and tape
reveal_type(x.softmax(axis=0))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]

# comparisons: untraced masks of the (left) shape, also from traced inputs
reveal_type(x > 0.0)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(a <= b)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(x.ne(a))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
mask: Tensor[Rank2[L[3], L[4]], NoneTape] = ops.ge(a, 1.0)
_ = {a: 1, b: 2}  # tensors stay hashable

# where: the tape of the traced operand
reveal_type(ops.where(a > 0.0, x, a))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(ops.where(mask, a, x))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
ones = np.ones((3, 4), bool)
reveal_type(ops.where(ones, 0.0, a))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(a.where(mask, x))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]

# maximum / minimum / pow: typed like add (bias rows broadcast)
reveal_type(ops.maximum(a, b.leaky_trace()))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(x.minimum(0.0))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(pow(a, x))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(pow(x, 2.0))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]

# losses: scalar tensors owning a tape if the input or a target tensor does
loss: Tensor[Rank0, OwnedTape] = mse_loss(x, a)
reveal_type(mse_loss(a, x))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
reveal_type(l1_loss(a, np.zeros((3, 4))))  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(huber_loss(x, a, "sum", delta=0.5))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
reveal_type(smooth_l1_loss(x, a, beta=0.0))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
bce = binary_cross_entropy_with_logits(x, a, pos_weight=[1.0, 2.0, 3.0, 4.0])
reveal_type(bce)  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
kl = kl_div(x.log_softmax(), a.softmax(), reduction="batchmean")
reveal_type(kl)  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
reveal_type(cross_entropy(x, a.softmax()))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
reveal_type(cross_entropy(x, np.full((3, 4), 0.25)))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
g2: Gradients = kl_div(x, a, log_target=True).backward()

# rank-3 reductions over one Literal axis (generated overloads)
c3: Tensor[tuple[L[2], L[3], L[4]], NoneTape] = dev.zeros((2, 3, 4))
reveal_type(c3.sum(axis=0))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(c3.mean(axis=-2))  # R: Tensor[tuple[Literal[2], Literal[4]], gradtape.tape.NoneTape]
reveal_type(c3.std(axis=2, correction=1))  # R: Tensor[tuple[Literal[2], Literal[3]], gradtape.tape.NoneTape]
reveal_type(c3.leaky_trace().logsumexp(axis=-1))  # R: Tensor[tuple[Literal[2], Literal[3]], gradtape.tape.GradientTape]
