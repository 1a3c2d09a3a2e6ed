"""``ops.concat`` / ``ops.stack`` with ``gradtape.mypy_plugin``: the joined dim, the new dim,
and tensors whose other dims differ (error code ``gradtape-shape``). tests/test_mypy_plugin.py:
``# P:`` errors only with the plugin, ``# R:`` reveals with the plugin."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank2, Tensor, ops

dev = Cpu()
a = dev.zeros((2, 3))
b = dev.zeros((4, 3))
c = dev.zeros((2, 5))

reveal_type(ops.concat((a, b)))  # R: Tensor[tuple[Literal[6], Literal[3]], gradtape.tape.NoneTape]
reveal_type(ops.concat([a, b, a], axis=0))  # R: Tensor[tuple[Literal[8], Literal[3]], gradtape.tape.NoneTape]
reveal_type(ops.concat((a, c), axis=1))  # R: Tensor[tuple[Literal[2], Literal[8]], gradtape.tape.NoneTape]
reveal_type(ops.concat((a, c), axis=-1))  # R: Tensor[tuple[Literal[2], Literal[8]], gradtape.tape.NoneTape]
reveal_type(ops.stack((a, a, a)))  # R: Tensor[tuple[Literal[3], Literal[2], Literal[3]], gradtape.tape.NoneTape]
reveal_type(ops.stack([a, a], axis=1))  # R: Tensor[tuple[Literal[2], Literal[2], Literal[3]], gradtape.tape.NoneTape]
reveal_type(ops.stack((a, a), axis=-1))  # R: Tensor[tuple[Literal[2], Literal[3], Literal[2]], gradtape.tape.NoneTape]

# PyTorch's spellings (issue 27): cat, and dim= for axis=
reveal_type(ops.concat((a, c), dim=1))  # R: Tensor[tuple[Literal[2], Literal[8]], gradtape.tape.NoneTape]
reveal_type(ops.cat((a, c), 1))  # R: Tensor[tuple[Literal[2], Literal[8]], gradtape.tape.NoneTape]
reveal_type(ops.cat((a, b)))  # R: Tensor[tuple[Literal[6], Literal[3]], gradtape.tape.NoneTape]
reveal_type(ops.stack([a, a], dim=1))  # R: Tensor[tuple[Literal[2], Literal[2], Literal[3]], gradtape.tape.NoneTape]
ops.cat((a, b), dim=1)  # P: gradtape-shape
ops.concat((a, b), dim=1)  # P: gradtape-shape

ops.concat((a, b), axis=1)  # P: gradtape-shape
ops.concat((a, dev.zeros((2, 3, 1))))  # P: gradtape-shape
ops.stack((a, c))  # P: gradtape-shape
ops.concat((a, a), axis=2)  # P: gradtape-shape


def dynamic(n: int, t: Tensor[Rank2[int, L[3]], NoneTape]) -> None:
    """A run-time dim along the axis gives ``int``; the literal other dims are kept."""
    reveal_type(ops.concat((t, a)))  # R: Tensor[tuple[int, Literal[3]], gradtape.tape.NoneTape]
    reveal_type(ops.concat((t, t), axis=1))  # R: Tensor[tuple[int, Literal[6]], gradtape.tape.NoneTape]
    reveal_type(ops.stack((t, dev.zeros((n, 3)))))  # R: Literal[2], int, Literal[3]]


# stack of a list display: its length, which the list's type does not carry, against the
# expected type's new dim (without the plugin the annotation is taken as the dim)
five: Tensor[tuple[L[5], L[2], L[3]], NoneTape] = ops.stack([a, a])  # P: gradtape-shape
two: Tensor[tuple[L[2], L[2], L[3]], NoneTape] = ops.stack([a, a])
