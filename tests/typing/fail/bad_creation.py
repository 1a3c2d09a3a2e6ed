"""Creation with annotated shapes that mypy must reject: the shape given must be the annotated one."""

from typing import Literal as L
from typing import NewType

import numpy as np

from gradtape import Cpu, NoneTape, Rank0, Rank1, Rank2, Rank3, Tensor

Batch = NewType("Batch", int)
dev = Cpu()

z1: Tensor[Rank1[L[5]], NoneTape] = dev.rand((6,))  # E: arg-type
z2: Tensor[Rank0, NoneTape] = dev.ones((1,))  # E: arg-type
z3: Tensor[Rank2[int, L[5]], NoneTape] = dev.zeros((7, 4))  # E: arg-type
z4: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((3, 4), np.float64)  # E: arg-type
z5: Tensor[Rank3[L[2], L[3], L[4]], NoneTape] = dev.ones((2, 3))  # E: arg-type
z6: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4)).leaky_trace()  # E: assignment
# a named axis is not a plain int: go through realize(tuple[Batch, L[4]])
z7: Tensor[Rank2[Batch, L[4]], NoneTape] = dev.zeros((8, 4))  # E: arg-type
