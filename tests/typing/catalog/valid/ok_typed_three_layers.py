"""Annotated module with three typed Linear layers and a typed activation module attribute."""

from typing import Literal as L
from typing import NewType, TypeVar

from gradtape import Cpu, OwnedTape, Rank0, Rank2, Tape, Tensor, nn
from gradtape.losses import cross_entropy

Batch = NewType("Batch", int)
T = TypeVar("T", bound=Tape)


class Net(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.fc1: nn.Linear[L[784], L[256]] = nn.Linear(784, 256, dev=dev)
        self.fc2: nn.Linear[L[256], L[64]] = nn.Linear(256, 64, dev=dev)
        self.fc3: nn.Linear[L[64], L[10]] = nn.Linear(64, 10, dev=dev)
        self.act = nn.ReLU()

    def forward(self, x: Tensor[Rank2[Batch, L[784]], T]) -> Tensor[Rank2[Batch, L[10]], T]:
        h = self.act(self.fc1(x))
        h = self.act(self.fc2(h))
        return self.fc3(h)


dev = Cpu(seed=0)
net = Net(dev)
x = dev.randn((8, 784)).realize(tuple[Batch, L[784]])
grads = net.alloc_grads()
loss: Tensor[Rank0, OwnedTape] = cross_entropy(net.forward(x.trace(grads)), [3] * 8)
grads = loss.backward()
print(loss.item(), grads.get(net.fc3.weight).shape)
