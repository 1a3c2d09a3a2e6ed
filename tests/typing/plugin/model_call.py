"""A user's Module called as ``model(x)``, the way PyTorch users write it (no ``__call__ =
forward``). tests/test_mypy_plugin.py checks it with and without ``gradtape.mypy_plugin``:
lines marked ``# P: <code>`` are errors only with the plugin; ``# R: <text>`` reveals."""

from typing import Any, Generic, TypeVar, reveal_type
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
dev = Cpu()


class MLP(nn.Module):
    def __init__(self) -> None:
        self.l1: nn.Linear[L[64], L[32]] = nn.Linear(64, 32, dev=dev)
        self.l2: nn.Linear[L[32], L[10]] = nn.Linear(32, 10, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[10]], T]:
        return self.l2(self.l1(x).relu())


class Scaled(nn.Module):
    def forward(self, x: Tensor[Any, T], factor: float) -> Tensor[Any, T]:  # type: ignore[override]
        return x * factor


W = TypeVar("W")


class Holder(nn.Module, Generic[W]):
    def __init__(self, inner: W) -> None:
        self.inner = inner

    def forward(self, x: W) -> W:
        return x


class OwnCall(nn.Module):
    """Defines ``__call__`` itself: the plugin leaves it alone."""

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        return x

    def __call__(self, x: Tensor[Any, T], scale: float = 1.0) -> Tensor[Any, T]:
        return self.forward(x) * scale


class Deeper(MLP):
    pass


model = MLP()
x: Tensor[Rank2[int, L[64]], NoneTape] = dev.zeros((8, 64))
y = model(x)
reveal_type(y)  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.NoneTape]
reveal_type(Deeper()(x))  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.NoneTape]
wrong: Tensor[Rank2[int, L[32]], NoneTape] = dev.zeros((8, 32))
model(wrong)  # P: arg-type
model(x, x)  # P: call-arg
bad_out: Tensor[Rank2[int, L[5]], NoneTape] = model(x)  # P: assignment
reveal_type(Scaled()(x, 2.0))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(Holder(3)(4))  # R: int
Holder(3)("s")  # P: arg-type
reveal_type(OwnCall()(x, scale=2.0))  # R: Tensor[Any, gradtape.tape.NoneTape]


def generic_batch(m: MLP, xs: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[10]], T]:
    out: Tensor[Rank2[B, L[10]], T] = m(xs)  # checked with the plugin; Any without it
    return out


def untyped(m: nn.Module, xs: Any) -> Any:
    return m(xs)
