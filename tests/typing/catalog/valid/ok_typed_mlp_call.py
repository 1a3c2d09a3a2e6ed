"""Annotated module called PyTorch-style as model(x) (typed by the mypy plugin, Any otherwise)."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class Classifier(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.hidden: nn.Linear[L[20], L[64]] = nn.Linear(20, 64, dev=dev)
        self.out: nn.Linear[L[64], L[5]] = nn.Linear(64, 5, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[20]], T]) -> Tensor[Rank2[B, L[5]], T]:
        return self.out(self.hidden(x).gelu())


dev = Cpu(seed=0)
model = Classifier(dev)
x: Tensor[Rank2[L[7], L[20]], NoneTape] = dev.randn((7, 20))
logits: Tensor[Rank2[L[7], L[5]], NoneTape] = model(x)
print(logits.shape)
