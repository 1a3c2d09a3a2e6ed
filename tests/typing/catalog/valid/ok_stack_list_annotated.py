"""stack of a list of 5 examples, the batch annotated with its literal size."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor
from gradtape.ops import stack

dev = Cpu(seed=0)
examples: list[Tensor[Rank1[L[3]], NoneTape]] = [dev.randn((3,)) for _ in range(5)]
batch: Tensor[Rank2[L[5], L[3]], NoneTape] = stack(examples)
print(batch.shape, batch.sum().item())
