"""Annotated module with two heads (classification + regression) sharing a trunk; combined loss."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, Rank2, Tape, Tensor, nn
from gradtape.losses import cross_entropy, mse_loss

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class TwoHeads(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.trunk: nn.Linear[L[12], L[24]] = nn.Linear(12, 24, dev=dev)
        self.cls: nn.Linear[L[24], L[3]] = nn.Linear(24, 3, dev=dev)
        self.reg: nn.Linear[L[24], L[1]] = nn.Linear(24, 1, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[12]], T]) -> tuple[Tensor[Rank2[B, L[3]], T], Tensor[Rank2[B, L[1]], T]]:
        h = self.trunk(x).relu()
        return self.cls(h), self.reg(h)


dev = Cpu(seed=0)
model = TwoHeads(dev)
x = dev.randn((6, 12)).realize(tuple[int, L[12]])
target = dev.randn((6, 1)).realize(tuple[int, L[1]])
grads = model.alloc_grads()
logits, value = model.forward(x.trace(grads))
loss = cross_entropy(logits, [0, 1, 2, 0, 1, 2]) + mse_loss(value, target)
grads = loss.backward()
print(loss.item())
