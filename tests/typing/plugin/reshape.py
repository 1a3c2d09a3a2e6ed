"""``reshape`` and ``Flatten`` with ``gradtape.mypy_plugin``: the target's literal dims, ``-1``
solved from a literal input, and element counts that do not match (error code
``gradtape-shape``). tests/test_mypy_plugin.py: ``# P:`` errors only with the plugin, ``# R:``
reveals with the plugin."""

from typing import Final, reveal_type
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, nn, ops

dev = Cpu()
ROWS: Final = 4
x = dev.zeros((8, 5))

reveal_type(x.reshape((4, -1)))  # R: Tensor[tuple[Literal[4], Literal[10]], gradtape.tape.NoneTape]
reveal_type(x.reshape((-1, 2, 2)))  # R: Tensor[tuple[Literal[10], Literal[2], Literal[2]], gradtape.tape.NoneTape]
reveal_type(ops.reshape(x, (ROWS * 5, -1)))  # R: Tensor[tuple[Literal[20], Literal[2]], gradtape.tape.NoneTape]
reveal_type(x.reshape(-1))  # R: Tensor[tuple[Literal[40]], gradtape.tape.NoneTape]
reveal_type(x.reshape(40))  # R: Tensor[tuple[Literal[40]], gradtape.tape.NoneTape]
reveal_type(x.reshape((2, 4, 5)))  # R: Tensor[tuple[Literal[2], Literal[4], Literal[5]], gradtape.tape.NoneTape]
y = x.reshape((10, -1))
reveal_type(y)  # R: Tensor[tuple[Literal[10], Literal[4]], gradtape.tape.NoneTape]
reveal_type(y.reshape((5, 8)).matmul(dev.zeros((8, 3))))  # R: Tensor[tuple[Literal[5], Literal[3]]

# PyTorch's varargs (issue 27): untyped, and not mistaken for the one-int form
reveal_type(x.reshape(4, 10))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(ops.reshape(x, 10, -1))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(x.view(2, 20))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(x.size())  # R: tuple[int, ...]

x.reshape((6, 7))  # P: gradtape-shape
ops.reshape(x, (6, -1))  # P: gradtape-shape
x.reshape((-1, -1))  # P: gradtape-shape
x.reshape(41)  # P: gradtape-shape

flat = nn.Flatten()
img = dev.zeros((4, 8, 13, 13))
reveal_type(flat(img))  # R: Tensor[tuple[Literal[4], Literal[1352]], gradtape.tape.NoneTape]
reveal_type(nn.Flatten(0)(img))  # R: Tensor[tuple[Literal[5408]], gradtape.tape.NoneTape]
reveal_type(nn.Flatten(1, 2)(img))  # R: Tensor[tuple[Literal[4], Literal[104], Literal[13]]


def dynamic(n: int, t: Tensor[Rank2[int, L[6]], NoneTape]) -> None:
    """An input with a run-time dim: ``-1`` stays ``int``, the literal dims are kept, no error."""
    reveal_type(t.reshape((-1, 3)))  # R: Tensor[tuple[int, Literal[3]], gradtape.tape.NoneTape]
    reveal_type(t.reshape((n, 2, 3)))  # R: Tensor[tuple[int, Literal[2], Literal[3]], gradtape.tape.NoneTape]
    reveal_type(t.reshape((5, 7)))  # R: Tensor[tuple[Literal[5], Literal[7]], gradtape.tape.NoneTape]
    reveal_type(flat(dev.zeros((n, 8, 13, 13))))  # R: Tensor[tuple[int, Literal[1352]], gradtape.tape.NoneTape]
