"""Valid programs with matmul of 1-D to 4-D operands, linear, dropout, the norms and embedding."""

from typing import Literal as L
from typing import reveal_type

import numpy as np

from gradtape import Cpu, NoneTape, OwnedTape, Rank0, Rank1, Rank2, Rank3, Rank4, Tensor
from gradtape.ops import dropout, embedding, layer_norm, linear, matmul, rms_norm

dev = Cpu()
v: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
m: Tensor[Rank2[L[4], L[2]], NoneTape] = dev.zeros((4, 2))
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
bt: Tensor[Rank3[L[5], L[3], L[4]], NoneTape] = dev.zeros((5, 3, 4))
bm: Tensor[Rank3[L[5], L[4], L[2]], NoneTape] = dev.zeros((5, 4, 2))
q: Tensor[Rank4[L[6], L[5], L[3], L[4]], NoneTape] = dev.zeros((6, 5, 3, 4))
k: Tensor[Rank4[L[6], L[5], L[4], L[2]], NoneTape] = dev.zeros((6, 5, 4, 2))

# matmul: 2-D first, then vectors and batches
reveal_type(a @ m)  # R: Tensor[tuple[Literal[3], Literal[2]], gradtape.tape.NoneTape]
reveal_type(v @ m)  # R: Tensor[tuple[Literal[2]], gradtape.tape.NoneTape]
reveal_type(a @ v)  # R: Tensor[tuple[Literal[3]], gradtape.tape.NoneTape]
reveal_type(v @ v)  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(bt @ bm)  # R: Tensor[tuple[Literal[5], Literal[3], Literal[2]], gradtape.tape.NoneTape]
reveal_type(bt @ m)  # R: Tensor[tuple[Literal[5], Literal[3], Literal[2]], gradtape.tape.NoneTape]
reveal_type(q @ k)  # R: Tensor[tuple[Literal[6], Literal[5], Literal[3], Literal[2]], gradtape.tape.NoneTape]
reveal_type(q @ m)  # R: Tensor[tuple[Literal[6], Literal[5], Literal[3], Literal[2]], gradtape.tape.NoneTape]
reveal_type(matmul(bt, bm.leaky_trace()))  # R: tuple[Literal[5], Literal[3], Literal[2]], gradtape.tape.GradientTape]
reveal_type(v.leaky_trace() @ m)  # R: Tensor[tuple[Literal[2]], gradtape.tape.GradientTape]
s: Tensor[Rank0, OwnedTape] = (v.leaky_trace() @ v).sum()
s.backward()

# linear: w is (out, in) as PyTorch stores it
w: Tensor[Rank2[L[7], L[4]], NoneTape] = dev.zeros((7, 4))
b: Tensor[Rank1[L[7]], NoneTape] = dev.zeros((7,))
reveal_type(linear(a, w))  # R: Tensor[tuple[Literal[3], Literal[7]], gradtape.tape.NoneTape]
reveal_type(linear(a, w, b))  # R: Tensor[tuple[Literal[3], Literal[7]], gradtape.tape.NoneTape]
reveal_type(linear(a, w.leaky_trace(), b))  # R: Tensor[tuple[Literal[3], Literal[7]], gradtape.tape.GradientTape]
reveal_type(linear(a, w, b.leaky_trace()))  # R: Tensor[tuple[Literal[3], Literal[7]], gradtape.tape.GradientTape]
reveal_type(linear(a.leaky_trace(), w, b))  # R: Tensor[tuple[Literal[3], Literal[7]], gradtape.tape.GradientTape]
reveal_type(linear(bt, w, b))  # R: Tensor[tuple[Literal[5], Literal[3], Literal[7]], gradtape.tape.NoneTape]
loss: Tensor[Rank0, OwnedTape] = linear(a, w.leaky_trace(), b).relu().mean()

# dropout keeps shape and tape
reveal_type(dropout(a, 0.1, rng=0))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(a.leaky_trace().dropout(0.5))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]

# norms: a Rank1 weight must match the last dim
g4: Tensor[Rank1[L[4]], NoneTape] = dev.ones((4,))
reveal_type(layer_norm(a))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(layer_norm(bt, weight=g4, bias=g4))  # R: tuple[Literal[5], Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(layer_norm(a, weight=g4.leaky_trace()))  # R: tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(layer_norm(a, bias=g4.leaky_trace()))  # R: tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(layer_norm(bt, (3, 4)))  # R: Tensor[tuple[Literal[5], Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(a.layer_norm(eps=1e-6))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(rms_norm(a, g4))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(rms_norm(a, g4.leaky_trace()))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(a.leaky_trace().rms_norm())  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
n2: Tensor[Rank0, OwnedTape] = (layer_norm(a.leaky_trace()) @ m).sum()

# embedding: an int gives (dim,), a list (int, dim), a list of lists (int, int, dim), an
# index array an untyped shape
table: Tensor[Rank2[L[10], L[4]], NoneTape] = dev.zeros((10, 4))
reveal_type(embedding([1, 2, 2], table))  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
nested = embedding([[1, 2], [0, 3]], table.leaky_trace())
reveal_type(nested)  # R: Tensor[tuple[int, int, Literal[4]], gradtape.tape.GradientTape]
reveal_type(embedding(np.array([1, 2]), table))  # R: Tensor[Any, gradtape.tape.NoneTape]
e: Tensor[Rank0, OwnedTape] = embedding([1, 2], table.leaky_trace()).sum()
