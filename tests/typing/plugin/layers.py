"""Constructors of generic layers with constant int arguments, with ``gradtape.mypy_plugin``:
``nn.Linear(16 * 2 * 2, 10, dev=dev)`` fits ``nn.Linear[L[64], L[10]]`` (mypy alone types
``16 * 2 * 2`` as ``int`` and rejects it: ``# M:``). tests/test_mypy_plugin.py: ``# P:``
errors only with the plugin, ``# M:`` false alarms of mypy alone, ``# R:`` reveals with the
plugin."""

from typing import Final, Generic, NewType, TypeVar, reveal_type
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
Hidden = NewType("Hidden", int)
HIDDEN: Final = 32
dev = Cpu()


class Net(nn.Module):
    def __init__(self, hidden: Hidden) -> None:
        self.fc1: nn.Linear[L[64], L[32]] = nn.Linear(16 * 2 * 2, HIDDEN, dev=dev)  # M: arg-type
        self.fc2: nn.Linear[L[32], L[10]] = nn.Linear(HIDDEN, 5 * 2, dev=dev)  # M: arg-type
        self.fc3: nn.Linear[L[10], Hidden] = nn.Linear(2 * 5, hidden, dev=dev)  # M: arg-type
        self.fc4: nn.Linear[int, int] = nn.Linear(4 * 4, 2, dev=dev)  # an expected int: kept

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, Hidden], T]:
        return self.fc3(self.fc2(self.fc1(x).relu()))


W = TypeVar("W", bound=int)


class Block(nn.Module, Generic[W]):
    """A user's module generic over a width: its constructor gets the same treatment."""

    def __init__(self, width: W) -> None:
        self.width = width


block: Block[L[64]] = Block(16 * 4)  # M: arg-type
reveal_type(Block(64 // 2))  # R: layers.Block[int]


def build() -> nn.Linear[L[12], L[3]]:
    return nn.Linear(3 * 4, 3, dev=dev)  # M: arg-type


reveal_type(build())  # R: gradtape.nn.linear.Linear[Literal[12], Literal[3]]
reveal_type(nn.Linear(16 * 2 * 2, 10, dev=dev))  # R: gradtape.nn.linear.Linear[int, int]
x: Tensor[Rank2[int, L[64]], NoneTape] = dev.zeros((8, 64))
reveal_type(Net(Hidden(7)).forward(x))  # R: Tensor[tuple[int, layers.Hidden], gradtape.tape.NoneTape]
