"""Valid programs with gradtape.nn: a typed two-layer MLP (Linear[I, O]) and untyped layers."""

from typing import Any, TypeAlias, reveal_type
from typing import Literal as L

import numpy as np

from gradtape import Cpu, Gradients, NoneTape, OwnedTape, Rank2, Tensor, nn

Batch: TypeAlias = int
dev = Cpu()

l1: nn.Linear[L[64], L[32]] = nn.Linear(64, 32, dev=dev)
l2: nn.Linear[L[32], L[10]] = nn.Linear(32, 10, dev=dev)
relu = nn.ReLU()
x: Tensor[Rank2[Batch, L[64]], NoneTape] = dev.zeros((8, 64))

reveal_type(l1.weight)  # R: Tensor[tuple[Literal[32], Literal[64]], gradtape.tape.NoneTape]
reveal_type(l1(x))  # R: Tensor[tuple[int, Literal[32]], gradtape.tape.NoneTape]
h = relu(l1(x))
reveal_type(h)  # R: Tensor[tuple[int, Literal[32]], gradtape.tape.NoneTape]
y = l2(h)
reveal_type(y)  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.NoneTape]

# traced input: the output owns the tape
grads: Gradients = l1.alloc_grads()
yt = l2(nn.Tanh()(l1(x.trace(grads))))
reveal_type(yt)  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.GradientTape]
loss: Tensor[tuple[()], OwnedTape] = yt.sum()
g: Gradients = loss.backward()

# an untyped tensor gives an untyped result
u = dev.tensor(np.zeros((8, 64)))
reveal_type(l1(u))  # R: Tensor[Any,

# untyped containers and layers
seq = nn.Sequential(nn.Linear(4, 8, dev=dev), nn.GELU(), nn.Dropout(0.1), nn.Linear(8, 2, dev=dev))
out: Any = seq(dev.randn((3, 4)))
conv = nn.Conv2d(1, 4, 3, padding=1, dev=dev)
img = nn.Flatten()(nn.MaxPool2d(2)(conv(dev.randn((2, 1, 8, 8)))))
names: list[str] = [n for n, _ in seq.named_parameters()]
seq.eval()
