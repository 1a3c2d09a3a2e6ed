"""Valid programs with realize(): dynamic (int) and static (Literal) dims meet, checked at run time."""

from typing import Literal as L
from typing import NewType, reveal_type

from gradtape import Cpu, Gradients, NoneTape, OwnedTape, Rank2, Tensor
from gradtape.shapes import realize

Batch = NewType("Batch", int)
dev = Cpu()


def load() -> Tensor[Rank2[int, int], NoneTape]:
    return dev.zeros((64, 10))


w = load().realize(tuple[L[64], L[10]])
reveal_type(w)  # R: Tensor[tuple[Literal[64], Literal[10]], gradtape.tape.NoneTape]
x = dev.zeros((8, 64)).realize(tuple[Batch, L[64]])
reveal_type(x)  # R: Tensor[tuple[ok_realize.Batch, Literal[64]], gradtape.tape.NoneTape]
reveal_type(x.matmul(w))  # R: Tensor[tuple[ok_realize.Batch, Literal[10]], gradtape.tape.NoneTape]
anyrank = dev.tensor([[1.0]]).realize(tuple[int, ...])  # an untyped tensor: any rank
reveal_type(anyrank)  # R: Tensor[tuple[int, ...], gradtape.tape.NoneTape]
# the tape kind is kept
xt = x.trace(Gradients.leaky()).realize(tuple[int, L[64]])
reveal_type(xt)  # R: Tensor[tuple[int, Literal[64]], gradtape.tape.GradientTape]
loss: Tensor[tuple[()], OwnedTape] = xt.matmul(w).sum().realize(tuple[()])
# the function form, and realize back to int dims (dynamic code takes any size)
y = realize(load(), tuple[L[64], int])
reveal_type(y)  # R: Tensor[tuple[Literal[64], int], gradtape.tape.NoneTape]
dyn: Tensor[Rank2[int, int], NoneTape] = w.realize(tuple[int, int])
scalar = dev.tensor(3.0).realize(tuple[()])
reveal_type(scalar)  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
# a matmul's dynamic (int) inner dim meets a static one: checked at run time
d = load()
reveal_type(x.matmul(d))  # R: Tensor[tuple[ok_realize.Batch, int], gradtape.tape.NoneTape]
reveal_type(d.matmul(w))  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.NoneTape]
