"""The typed MLP of ok_mlp.py with shape and tape bugs mypy must reject."""

from typing import Generic, TypeVar
from typing import Literal as L

from gradtape import Cpu, NoneTape, OwnedTape, Rank2, Tape, Tensor, nn
from gradtape.losses import mse_loss

B = TypeVar("B")
T = TypeVar("T", bound=Tape)
I = TypeVar("I")
H = TypeVar("H")
O = TypeVar("O")


class MLP(nn.Module):
    """fc2's inner dim (100) does not match fc1's output (128)."""

    def __init__(self, dev: Cpu) -> None:
        self.fc1: nn.Linear[L[784], L[128]] = nn.Linear(784, 128, dev=dev)
        self.fc2: nn.Linear[L[100], L[64]] = nn.Linear(100, 64, dev=dev)
        self.fc3: nn.Linear[L[64], L[10]] = nn.Linear(64, 10, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[784]], T]) -> Tensor[Rank2[B, L[10]], T]:
        h = self.fc1(x).relu()
        return self.fc3(self.fc2(h))  # E: arg-type

    __call__ = forward


class Head(nn.Module):
    """The last layer gives 12 classes where forward promises 10."""

    def __init__(self, dev: Cpu) -> None:
        self.fc: nn.Linear[L[64], L[12]] = nn.Linear(64, 12, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[10]], T]:
        return self.fc(x)  # E: return-value

    __call__ = forward


class GenericMLP(nn.Module, Generic[I, H, O]):
    def __init__(self, i: I, h: H, o: O, *, dev: Cpu) -> None:
        self.fc1: nn.Linear[I, H] = nn.Linear(i, h, dev=dev)
        self.fc2: nn.Linear[H, O] = nn.Linear(h, o, dev=dev)

    def forward(self, x: Tensor[Rank2[B, I], T]) -> Tensor[Rank2[B, O], T]:
        return self.fc2(self.fc1(x))

    def wrong(self, x: Tensor[Rank2[B, I], T]) -> Tensor[Rank2[B, O], T]:
        return self.fc2(x)  # E: arg-type

    __call__ = forward


dev = Cpu(seed=0)
model = MLP(dev)
x: Tensor[Rank2[L[32], L[784]], NoneTape] = dev.randn((32, 784))
x_bad: Tensor[Rank2[L[32], L[28]], NoneTape] = dev.randn((32, 28))

model(x_bad)  # E: arg-type
y: Tensor[Rank2[L[32], L[12]], NoneTape] = model(x)  # E: assignment
w = model(x)
z: Tensor[Rank2[L[10], L[32]], NoneTape] = w  # E: assignment
model(x).backward()  # E: call-overload
t: Tensor[Rank2[L[32], L[10]], OwnedTape] = model(x)  # E: arg-type
mse_loss(model(x.leaky_trace()), dev.zeros((32, 12)).realize(tuple[L[32], L[12]]))  # E: misc
small: GenericMLP[L[4], L[16], L[3]] = GenericMLP(4, 16, 2, dev=dev)  # E: arg-type
v: Tensor[Rank2[int, L[5]], NoneTape] = dev.zeros((2, 5))
GenericMLP[L[4], L[16], L[3]](4, 16, 3, dev=dev)(v)  # E: arg-type
