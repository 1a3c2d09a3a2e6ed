"""Annotated generic module: widths as type parameters (GenericMLP[L[4], L[16], L[3]])."""

from typing import Generic, TypeVar
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
I = TypeVar("I", bound=int)
H = TypeVar("H", bound=int)
O = TypeVar("O", bound=int)


class GenericMLP(nn.Module, Generic[I, H, O]):
    def __init__(self, i: I, h: H, o: O, *, dev: Cpu) -> None:
        self.fc1: nn.Linear[I, H] = nn.Linear(i, h, dev=dev)
        self.fc2: nn.Linear[H, O] = nn.Linear(h, o, dev=dev)

    def forward(self, x: Tensor[Rank2[B, I], T]) -> Tensor[Rank2[B, O], T]:
        return self.fc2(self.fc1(x).relu())


dev = Cpu(seed=0)
model: GenericMLP[L[4], L[16], L[3]] = GenericMLP(4, 16, 3, dev=dev)
x: Tensor[Rank2[L[5], L[4]], NoneTape] = dev.randn((5, 4))
y: Tensor[Rank2[L[5], L[3]], NoneTape] = model.forward(x)
print(y.shape)
