"""PyTorch-style small CNN at module level: Conv2d, MaxPool2d, Flatten, Linear(16 * 2 * 2, 10)."""

from gradtape import Cpu, nn
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
conv1 = nn.Conv2d(1, 8, 3, padding=1, dev=dev)
conv2 = nn.Conv2d(8, 16, 3, padding=1, dev=dev)
pool = nn.MaxPool2d(2)
flatten = nn.Flatten()
fc = nn.Linear(16 * 2 * 2, 10, dev=dev)

images = dev.randn((4, 1, 8, 8))
h = pool(conv1(images).relu())  # (4, 8, 4, 4)
h = pool(conv2(h).relu())  # (4, 16, 2, 2)
logits = fc(flatten(h))
loss = cross_entropy(logits, [1, 2, 3, 4])
print(logits.shape, loss.item())
