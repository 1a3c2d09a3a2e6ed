"""class: conv-channels

PyTorch-style CNN: conv2 = Conv2d(16, 32) after conv1 = Conv2d(1, 8).
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
conv1 = nn.Conv2d(1, 8, 3, padding=1, dev=dev)
conv2 = nn.Conv2d(16, 32, 3, padding=1, dev=dev)
x = dev.randn((2, 1, 8, 8))
h = conv1(x).relu()
y = conv2(h)  # BUG
print(y.shape)
