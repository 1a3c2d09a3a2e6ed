"""Shapes written inline keep their literal dims with ``gradtape.mypy_plugin`` (mypy alone widens
``dev.zeros((8, 4))`` to ``Tensor[tuple[int, int], ...]`` once stored in a variable; pyright
keeps the literals). tests/test_mypy_plugin.py: ``# P:`` errors only with the plugin, ``# M:``
false alarms of mypy alone, ``# R:`` reveals with the plugin."""

from typing import Final, NewType, reveal_type
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor, nn

Batch = NewType("Batch", int)
WIDTH: Final = 4
dev = Cpu()
w: Tensor[Rank2[L[4], L[2]], NoneTape] = dev.zeros((4, 2))
lin: nn.Linear[L[4], L[3]] = nn.Linear(4, 3, dev=dev)

x = dev.zeros((8, 4))
reveal_type(x)  # R: Tensor[tuple[Literal[8], Literal[4]], gradtape.tape.NoneTape]
reveal_type(x.matmul(w))  # R: Tensor[tuple[Literal[8], Literal[2]], gradtape.tape.NoneTape]
reveal_type(x @ w)  # R: Tensor[tuple[Literal[8], Literal[2]], gradtape.tape.NoneTape]
y = lin(x)
reveal_type(y)  # R: Tensor[tuple[Literal[8], Literal[3]], gradtape.tape.NoneTape]
reveal_type(dev.ones((2 * 3, WIDTH)))  # R: Tensor[tuple[Literal[6], Literal[4]], gradtape.tape.NoneTape]
reveal_type(dev.randn((5,)))  # R: Tensor[tuple[Literal[5]], gradtape.tape.NoneTape]
reveal_type(dev.rand((2, 2), low=-1.0))  # R: Tensor[tuple[Literal[2], Literal[2]], gradtape.tape.NoneTape]
v = dev.zeros((4,))
reveal_type(v.broadcast_to((3, 4)))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]


def dynamic(n: int, b: Batch) -> None:
    """A run-time dim stays ``int`` (or the named axis); the literal ones are kept."""
    reveal_type(dev.zeros((n, 4)))  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
    reveal_type(dev.zeros((n, 4)).matmul(w))  # R: Tensor[tuple[int, Literal[2]], gradtape.tape.NoneTape]
    h = dev.zeros((b, 4))
    reveal_type(h)  # R: Tensor[tuple[literal_shapes.Batch, Literal[4]]
    out: Tensor[Rank2[Batch, L[3]], NoneTape] = lin(h)
    reveal_type(out)  # R: Tensor[tuple[literal_shapes.Batch, Literal[3]], gradtape.tape.NoneTape]


def expected_types() -> Tensor[Rank2[int, int], NoneTape]:
    """Where the call has an expected type, mypy's inference from it is kept: no false alarm."""
    a: Tensor[Rank2[int, int], NoneTape] = dev.zeros((3, 4))
    b: Tensor[Rank2[int, L[4]], NoneTape] = dev.zeros((3, 4))
    c: Tensor[Rank1[L[5]], NoneTape] = dev.zeros((5,))
    reveal_type(a)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]
    reveal_type(b)  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
    reveal_type(c)  # R: Tensor[tuple[Literal[5]], gradtape.tape.NoneTape]
    return dev.zeros((3, 4))
