"""Conv net as an annotated Module: Conv2d -> ReLU -> MaxPool2d twice, Flatten, Linear; one SGD step."""

from typing import Any

from gradtape import Cpu, Tensor, nn, optim
from gradtape.losses import cross_entropy


class CNN(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1, dev=dev)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, dev=dev)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16 * 2 * 2, 10, dev=dev)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc(self.flatten(x))


dev = Cpu(seed=0)
model = CNN(dev)
opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
images = dev.randn((4, 1, 8, 8))
grads = model.alloc_grads()
loss = cross_entropy(model(images.trace(grads)), [0, 1, 2, 3])
grads = loss.backward()
opt.step(grads)
print(loss.item())
