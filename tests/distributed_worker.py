"""Worker for tests/test_distributed.py, run under ``mpiexec -n 2`` (not collected by pytest).

    python tests/distributed_worker.py MODE OUT

Modes:
- ``equal``: trains a small MLP for several steps data-parallel (each rank its half of every
  batch) with two bucket sizes; rank 0 also trains the same model in one process on the whole
  doubled batch and saves both parameter sets to ``OUT`` (npz).
- ``kill``: rank 1 kills itself with SIGKILL after two steps.
- ``raise``: rank 1 raises an exception after two steps; rank 0 must raise DistributedError
  within its 3 s timeout.
- ``mismatch``: rank 1 builds a wider hidden layer.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import numpy as np

from gradtape import Cpu, Tensor, nn, optim
from gradtape import distributed as dist
from gradtape.losses import cross_entropy

Array = np.ndarray[Any, Any]
STEPS = 5
LOCAL = 8  # examples per rank per step


class Net(nn.Module):
    def __init__(self, dev: Cpu, hidden: int = 32) -> None:
        self.fc1: nn.Linear[int, int] = nn.Linear(12, hidden, dev=dev)
        self.fc2: nn.Linear[int, int] = nn.Linear(hidden, hidden, dev=dev)
        self.fc3: nn.Linear[int, int] = nn.Linear(hidden, 5, dev=dev)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return self.fc3(self.fc2(self.fc1(x).tanh()).relu())


def data(size: int) -> tuple[Array, Array]:
    r = np.random.default_rng(7)
    x = r.standard_normal((STEPS, size * LOCAL, 12)).astype(np.float32)
    y = r.integers(0, 5, (STEPS, size * LOCAL))
    return x, y


def train(world: dist.World | None, size: int, cap_mb: float, die: str = "") -> list[Array]:
    """Data-parallel (``world`` given) or one process on the whole batch (``world`` None)."""
    dev = Cpu(seed=3 if world is None or world.rank == 0 else 11)  # rank 1 starts elsewhere: broadcast fixes it
    model = Net(dev, 33 if die == "mismatch" and world is not None and world.rank == 1 else 32)
    ddp = dist.DistributedDataParallel(model, world, bucket_cap_mb=cap_mb) if world is not None else None
    opt = optim.Adam(model.parameters(), lr=0.01)
    grads = model.alloc_grads()
    x, y = data(size)
    for step in range(STEPS):
        if world is not None and world.rank == 1 and step == 2:
            if die == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if die == "raise":
                raise RuntimeError("rank 1 fails on purpose at step 2")
        if world is None:
            xb, yb = x[step], y[step]
        else:
            xb, yb = (
                x[step, world.rank * LOCAL : (world.rank + 1) * LOCAL],
                y[step, world.rank * LOCAL : (world.rank + 1) * LOCAL],
            )
        loss = cross_entropy(model(dev.tensor(xb).trace(grads)), yb)
        grads = loss.backward()
        if ddp is not None:
            ddp.synchronize(grads)
        opt.step(grads)
        model.zero_grads(grads)
    return [p.data.copy() for p in model.parameters()]


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    world = dist.init(timeout=3.0 if mode == "raise" else 60.0)
    if mode == "equal":
        many = train(world, world.size, 25.0)
        small = train(world, world.size, 0.001)  # about 260 floats per bucket: four buckets
        if world.rank == 0:
            one = train(None, world.size, 25.0)
            arrays: dict[str, Any] = {"size": np.array(world.size)}
            for kind, params in (("many", many), ("small", small), ("one", one)):
                arrays.update({f"{kind}{i}": a for i, a in enumerate(params)})
            np.savez(out, **arrays)
        return
    train(world, world.size, 25.0, die=mode)


if __name__ == "__main__":
    main()
