"""class: realize-rank

A loader's (int, int) batch realized as rank 3 (B, L, D) when it is (B, D).
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)


def load() -> Tensor[Rank2[int, int], NoneTape]:
    return dev.tensor(np.zeros((16, 64), np.float32))


x = load().realize(tuple[int, int, L[64]])  # BUG
print(x.shape)
