"""Valid programs: shapes agree, tapes are where backward needs them."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, Gradients, NoneTape, OwnedTape, Rank0, Rank1, Rank2, Tensor
from gradtape.losses import cross_entropy

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
w: Tensor[Rank2[L[4], L[2]], NoneTape] = dev.zeros((4, 2))
b: Tensor[Rank1[L[2]], NoneTape] = dev.zeros((2,))

y = a.matmul(w)
reveal_type(y)  # R: Tensor[tuple[Literal[3], Literal[2]], gradtape.tape.NoneTape]
z = a.leaky_trace().matmul(w) + b
reveal_type(z)  # R: Tensor[tuple[Literal[3], Literal[2]], gradtape.tape.GradientTape]
loss: Tensor[Rank0, OwnedTape] = z.relu().exp().log().sin().mean()
grads: Gradients = loss.backward()
a + a
a * 2.0
2.0 * a - a / 3.0
(a @ w).log_softmax()
s1: Tensor[Rank1[L[4]], NoneTape] = a.sum(axis=0)
s2: Tensor[Rank1[L[3]], NoneTape] = a.mean(axis=1)
ce = cross_entropy(a.leaky_trace(), [0, 1, 2])
reveal_type(ce)  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
ce.backward()
u = dev.zeros((5, 6))
reveal_type(u)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]
v = dev.zeros((6, 7))
reveal_type(u @ v)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]
x, tape = a.leaky_trace().split_tape()
reveal_type(x)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(x.put_tape(tape))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
untyped = dev.tensor([[1.0, 2.0], [3.0, 4.0]])
reveal_type(untyped.sum(axis=0))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(untyped.mean())  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(untyped.var(axis=1))  # R: Tensor[Any, gradtape.tape.NoneTape]
