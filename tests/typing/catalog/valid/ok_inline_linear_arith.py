"""Inline shapes: nn.Linear(16 * 2 * 2, 10) after conv + pool + flatten (PyTorch habit)."""

from typing import Any

from gradtape import Cpu, Tensor, nn

dev = Cpu(seed=0)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        self.conv = nn.Conv2d(3, 16, 3, padding=1, dev=dev)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16 * 2 * 2, 10, dev=dev)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return self.fc(self.flatten(self.pool(self.conv(x).relu())))


model = SmallCNN()
print(model(dev.randn((2, 3, 4, 4))).shape)
