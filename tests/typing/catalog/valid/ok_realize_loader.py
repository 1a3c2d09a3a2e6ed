"""realize: numpy batches from a loader typed as (int, int) get realized to (Batch, 64) for a typed model."""

from typing import Literal as L
from typing import NewType, TypeVar

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor, nn

Batch = NewType("Batch", int)
T = TypeVar("T", bound=Tape)
dev = Cpu(seed=0)


def batches(n: int, size: int) -> list[Tensor[Rank2[int, int], NoneTape]]:
    data = np.random.default_rng(0).normal(size=(n, 64)).astype(np.float32)
    return [dev.tensor(data[i : i + size]) for i in range(0, n, size)]


fc: nn.Linear[L[64], L[10]] = nn.Linear(64, 10, dev=dev)
for raw in batches(40, 16):
    xb = raw.realize(tuple[Batch, L[64]])
    out: Tensor[Rank2[Batch, L[10]], NoneTape] = fc(xb)
    print(out.shape)
