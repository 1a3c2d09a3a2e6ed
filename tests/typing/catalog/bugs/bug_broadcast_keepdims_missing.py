"""class: broadcast

PyTorch-style: centering rows with x.mean(axis=1) (shape (8,)) instead of keepdims=True,
so (8, 5) - (8,) does not broadcast.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu

dev = Cpu(seed=0)
x = dev.randn((8, 5))
centered = x - x.mean(axis=1)  # BUG
print(centered.shape)
