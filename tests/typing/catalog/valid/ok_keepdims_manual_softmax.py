"""keepdims reduction: a hand-written stable softmax, exp(x - max) / sum, in a typed function."""

from typing import Literal as L
from typing import TypeVar

import numpy as np

from gradtape import Cpu, Rank2, Tape, Tensor

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


def my_softmax(x: Tensor[Rank2[B, L[10]], T]) -> Tensor[Rank2[B, L[10]], T]:
    e = (x - x.max(axis=1, keepdims=True)).exp()
    return e / e.sum(axis=1, keepdims=True)


dev = Cpu(seed=0)
x = dev.randn((4, 10)).realize(tuple[int, L[10]])
p = my_softmax(x)
assert np.allclose(p.numpy(), x.softmax(axis=1).numpy(), atol=1e-6)
print(p.shape)
