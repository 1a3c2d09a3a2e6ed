"""class: linear-width

PyTorch-style layers: fc2 = Linear(64, 10) after fc1 = Linear(32, 128).
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
fc1 = nn.Linear(32, 128, dev=dev)
fc2 = nn.Linear(64, 10, dev=dev)
x = dev.randn((8, 32))
h = fc1(x).relu()
out = fc2(h)  # BUG
print(out.shape)
