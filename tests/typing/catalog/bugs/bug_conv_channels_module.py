"""class: conv-channels

A CNN module fed grayscale images (1 channel) while its first conv expects 3.
Run time: raises ShapeError at the BUG line.
"""

from typing import Any

from gradtape import Cpu, Tensor, nn


class CNN(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.conv = nn.Conv2d(3, 8, 3, padding=1, dev=dev)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return self.pool(self.conv(x).relu())


dev = Cpu(seed=0)
model = CNN(dev)
gray = dev.randn((4, 1, 8, 8))
out = model(gray)  # BUG
print(out.shape)
