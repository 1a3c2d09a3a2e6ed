"""Shape and indexing ops: output shape types mypy computes, and the tape kind they keep."""

from typing import Any, reveal_type
from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, OwnedTape, Rank0, Rank1, Rank2, Rank3, Rank4, Tensor
from gradtape.ops import concat, gather, index_select, permute, stack, transpose

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
v: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
c: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = dev.zeros((2, 3, 4))
n: Tensor[Rank4[L[2], L[3], L[5], L[7]], NoneTape] = dev.zeros((2, 3, 5, 7))
u = dev.tensor(np.zeros((3, 4)))  # shape type Any
o = a.leaky_trace()

# transpose / .T / permute: exact for ranks 2 to 4
reveal_type(a.T)  # R: Tensor[tuple[Literal[4], Literal[3]], gradtape.tape.NoneTape]
reveal_type(o.T)  # R: Tensor[tuple[Literal[4], Literal[3]], gradtape.tape.GradientTape]
reveal_type(a.transpose(0, 1))  # R: Tensor[tuple[Literal[4], Literal[3]], gradtape.tape.NoneTape]
reveal_type(a.transpose(-1, -2))  # R: Tensor[tuple[Literal[4], Literal[3]], gradtape.tape.NoneTape]
reveal_type(a.transpose(1, 1))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(transpose(c, 0, 2))  # R: Tensor[tuple[Literal[4], Literal[3], Literal[2]], gradtape.tape.NoneTape]
reveal_type(a.permute((1, 0)))  # R: Tensor[tuple[Literal[4], Literal[3]], gradtape.tape.NoneTape]
reveal_type(c.permute((2, 0, 1)))  # R: Tensor[tuple[Literal[4], Literal[2], Literal[3]], gradtape.tape.NoneTape]
reveal_type(c.permute((-1, 0, -2)))  # R: Tensor[tuple[Literal[4], Literal[2], Literal[3]], gradtape.tape.NoneTape]
reveal_type(permute(n, (0, 2, 3, 1)))  # R: Tensor[tuple[Literal[2], Literal[5], Literal[7], Literal[3]], gradtape
reveal_type(o.permute((1, 0)))  # R: Tensor[tuple[Literal[4], Literal[3]], gradtape.tape.GradientTape]
w: Tensor[Rank2[L[3], L[2]], NoneTape] = dev.zeros((3, 2))
reveal_type(a.T @ w)  # R: Tensor[tuple[Literal[4], Literal[2]], gradtape.tape.NoneTape]
reveal_type(u.T)  # R: Tensor[tuple[Any, Any], gradtape.tape.NoneTape]
reveal_type(u.transpose(0, 1))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(u.permute((1, 0)))  # R: Tensor[Any, gradtape.tape.NoneTape]
axes = (1, 0)
reveal_type(a.permute(axes))  # R: Tensor[Any, gradtape.tape.NoneTape]

# reshape / broadcast_to take the shape type of their argument
r1: Tensor[Rank2[L[4], L[3]], NoneTape] = a.reshape((4, 3))
r2: Tensor[Rank1[L[12]], OwnedTape] = o.reshape(12)
r3 = a.reshape((2, 6))
reveal_type(r3)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]
r4 = o.reshape((-1,))
reveal_type(r4)  # R: Tensor[tuple[int], gradtape.tape.GradientTape]
b1: Tensor[Rank2[L[3], L[4]], NoneTape] = v.broadcast_to((3, 4))
b2: Tensor[Rank3[L[5], L[3], L[4]], OwnedTape] = o.broadcast_to((5, 3, 4))
b3 = v.broadcast_to((2, 4))
reveal_type(b3)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]

# expand_dims / unsqueeze / squeeze
reveal_type(v.expand_dims(0))  # R: Tensor[tuple[Literal[1], Literal[4]], gradtape.tape.NoneTape]
reveal_type(v.unsqueeze(-1))  # R: Tensor[tuple[Literal[4], Literal[1]], gradtape.tape.NoneTape]
reveal_type(a.expand_dims(1))  # R: Tensor[tuple[Literal[3], Literal[1], Literal[4]], gradtape.tape.NoneTape]
reveal_type(o.sum().expand_dims(0))  # R: Tensor[tuple[Literal[1]], gradtape.tape.GradientTape]
reveal_type(v.expand_dims(0).squeeze(0))  # R: Tensor[tuple[Literal[4]], gradtape.tape.NoneTape]
reveal_type(a.expand_dims(2).squeeze(-1))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
one: Tensor[Rank1[L[1]], NoneTape] = dev.zeros((1,))
s0: Tensor[Rank0, NoneTape] = one.squeeze()
reveal_type(u.expand_dims(0))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(u.squeeze())  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(a.squeeze())  # R: Tensor[Any, gradtape.tape.NoneTape]

# indexing
reveal_type(a[0])  # R: Tensor[tuple[Literal[4]], gradtape.tape.NoneTape]
reveal_type(a[:, 1])  # R: Tensor[tuple[Literal[3]], gradtape.tape.NoneTape]
reveal_type(a[1, 2])  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(a[1:])  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
reveal_type(v[0])  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(c[0])  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(o[0])  # R: Tensor[tuple[Literal[4]], gradtape.tape.GradientTape]
reveal_type(a[None])  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(a[..., 0])  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(u[0])  # R: Tensor[Any, gradtape.tape.NoneTape]
o[0].sum().backward()
o[1, 2].backward()
reveal_type(a.gather([0, 0, 2]))  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
reveal_type(a.gather([0, 0], axis=1))  # R: Tensor[tuple[Literal[3], int], gradtape.tape.NoneTape]
reveal_type(a.gather(1, axis=-1))  # R: Tensor[tuple[Literal[3]], gradtape.tape.NoneTape]
reveal_type(gather(o, np.array([[0, 1]])))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(gather(o, [[0, 1], [1, 1]], axis=1))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(u.gather([0]))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(index_select(a, np.array([2, 1])))  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
reveal_type(o.index_select([1], axis=1))  # R: Tensor[tuple[Literal[3], int], gradtape.tape.GradientTape]

# roll / tril / triu keep the shape
reveal_type(a.roll(1, axis=0))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(o.tril())  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(a.triu(k=1))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]

# concat / stack: the tape is owned if any input's is
reveal_type(concat([a, a]))  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
reveal_type(concat([o, o], axis=1))  # R: Tensor[tuple[Literal[3], int], gradtape.tape.GradientTape]
reveal_type(concat((a, o)))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(concat((o, a, a)))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(stack((a, a, a, o)))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(stack((a, a)))  # R: Tensor[tuple[Literal[2], Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(stack([o, o], axis=-1))  # R: Tensor[tuple[Literal[3], Literal[4], Any], gradtape.tape.GradientTape]
reveal_type(concat([a, o]))  # R: Tensor[Any, gradtape.tape.GradientTape]
many: list[Tensor[Any, OwnedTape]] = [o, o, o, o, o]
reveal_type(concat(many))  # R: Tensor[Any, Any]
concat((a, o)).sum().backward()
stack([o[0], o[1]]).mean().backward()
