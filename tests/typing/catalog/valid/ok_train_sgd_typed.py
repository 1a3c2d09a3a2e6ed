"""Training loop with SGD on an annotated model, typed batches via realize, loss annotated Rank0."""

from typing import Literal as L
from typing import TypeVar

import numpy as np

from gradtape import Cpu, OwnedTape, Rank0, Rank2, Tape, Tensor, nn, optim
from gradtape.losses import cross_entropy

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class Model(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.fc1: nn.Linear[L[4], L[16]] = nn.Linear(4, 16, dev=dev)
        self.fc2: nn.Linear[L[16], L[3]] = nn.Linear(16, 3, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[4]], T]) -> Tensor[Rank2[B, L[3]], T]:
        return self.fc2(self.fc1(x).relu())


dev = Cpu(seed=0)
model = Model(dev)
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
rng = np.random.default_rng(0)
data = rng.normal(size=(30, 4)).astype(np.float32)
labels = (data[:, 0] > 0).astype(np.int64) + (data[:, 1] > 0).astype(np.int64)
history: list[float] = []
for _epoch in range(3):
    for i in range(0, 30, 10):
        xb = dev.tensor(data[i : i + 10]).realize(tuple[int, L[4]])
        grads = model.alloc_grads()
        loss: Tensor[Rank0, OwnedTape] = cross_entropy(model.forward(xb.trace(grads)), labels[i : i + 10])
        grads = loss.backward()
        opt.step(grads)
        history.append(loss.item())
print(history[-1])
