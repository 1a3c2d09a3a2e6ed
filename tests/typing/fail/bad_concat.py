"""concat / stack misuses mypy must reject (their output's shape type is not computed, ``Any``;
the argument types and the tape kind are checked)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, OwnedTape, Rank2, Tensor
from gradtape.ops import concat, stack

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
b: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.ones((3, 4))

stack(a)  # E: call-overload
concat((a, b), axis=1.0)  # E: call-overload
stack([a, b], axis="0")  # E: call-overload
concat([a, 1.0])  # E: arg-type
stack([a, b.data])  # E: arg-type
c: Tensor[Rank2[int, L[4]], OwnedTape] = concat([a, b])  # E: assignment
