"""Conv net written as a Sequential: Conv2d, BatchNorm2d, ReLU, AvgPool2d, Flatten, Linear."""

from gradtape import Cpu, nn
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
model = nn.Sequential(
    nn.Conv2d(3, 6, 3, padding=1, dev=dev),
    nn.BatchNorm2d(6, dev=dev),
    nn.ReLU(),
    nn.AvgPool2d(2),
    nn.Flatten(),
    nn.Linear(6 * 4 * 4, 5, dev=dev),
)
x = dev.randn((4, 3, 8, 8))
grads = model.alloc_grads()
loss = cross_entropy(model(x.trace(grads)), [0, 1, 2, 4])
grads = loss.backward()
print(loss.item())
