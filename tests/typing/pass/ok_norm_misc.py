"""Issue 27's normalisations, norms, distances and small elementwise ops, typed: the norms
and atan2 keep the shape type and the tape, outer gives ``Rank2[A, B]``, the others an untyped shape."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank1, Rank3, Tensor, nn, ops

dev = Cpu()
a: Tensor[Rank3[L[2], L[4], L[5]], NoneTape] = dev.zeros((2, 4, 5))
x = a.leaky_trace()
w: Tensor[Rank1[L[4]], NoneTape] = dev.ones((4,))
u: Tensor[Rank1[L[3]], NoneTape] = dev.ones((3,))

gn = ops.group_norm(x, 2, w, w)
reveal_type(gn)  # R: Tensor[tuple[Literal[2], Literal[4], Literal[5]], gradtape.tape.GradientTape]
inn = ops.instance_norm(a, weight=w)
reveal_type(inn)  # R: Tensor[tuple[Literal[2], Literal[4], Literal[5]], gradtape.tape.NoneTape]
reveal_type(nn.GroupNorm(2, 4)(x))  # R: Tensor[tuple[Literal[2], Literal[4], Literal[5]], gradtape.tape.GradientTape]
reveal_type(x.norm(dim=1))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(ops.normalize(x, dim=2))  # R: Tensor[tuple[Literal[2], Literal[4], Literal[5]], gradtape.tape.GradientTape]
reveal_type(ops.cdist(x, x))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(a.atan2(a))  # R: Tensor[tuple[Literal[2], Literal[4], Literal[5]], gradtape.tape.NoneTape]
reveal_type(u.outer(w))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
