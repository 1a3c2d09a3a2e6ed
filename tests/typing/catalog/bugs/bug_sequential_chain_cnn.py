"""class: sequential-chain

CNN Sequential: after two 2x2 pools an 8x8 image is 2x2, but the Linear expects 16 * 4 * 4.
Run time: raises ShapeError at the BUG line (inside model(x)).
"""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1, dev=dev),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1, dev=dev),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(16 * 4 * 4, 10, dev=dev),
)
x = dev.randn((2, 1, 8, 8))
logits = model(x)  # BUG
print(logits.shape)
