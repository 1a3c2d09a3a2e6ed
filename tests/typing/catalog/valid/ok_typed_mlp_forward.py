"""Annotated module: Linear layers typed with Literal widths, generic batch/tape forward, called via .forward."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, Rank2, Tape, Tensor, nn
from gradtape.losses import cross_entropy

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class MLP(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.fc1: nn.Linear[L[64], L[32]] = nn.Linear(64, 32, dev=dev)
        self.fc2: nn.Linear[L[32], L[10]] = nn.Linear(32, 10, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[10]], T]:
        return self.fc2(self.fc1(x).relu())


dev = Cpu(seed=0)
model = MLP(dev)
x = dev.randn((32, 64)).realize(tuple[int, L[64]])
grads = model.alloc_grads()
logits = model.forward(x.trace(grads))
loss = cross_entropy(logits, [0] * 32)
grads = loss.backward()
print(loss.item())
