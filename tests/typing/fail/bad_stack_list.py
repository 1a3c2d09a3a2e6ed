"""stack: a tuple's length is in its type and gives the new dim (a list's is not: the new dim
then follows the annotation, tests/typing/pass/ok_stack_list.py)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor, ops

dev = Cpu()
xs: list[Tensor[Rank1[L[3]], NoneTape]] = [dev.zeros((3,)) for _ in range(5)]
z: Tensor[Rank2[L[2], L[3]], NoneTape] = ops.stack((xs[0], xs[1], xs[2]))  # E: assignment
y = ops.stack(xs)
w: Tensor[Rank2[L[5], L[4]], NoneTape] = y  # E: assignment
