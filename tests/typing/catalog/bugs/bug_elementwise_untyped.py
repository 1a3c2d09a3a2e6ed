"""class: elementwise-shape

PyTorch-style: multiply predictions (16, 10) by a (16, 5) mask built with the wrong width.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu

dev = Cpu(seed=0)
pred = dev.randn((16, 10))
mask = dev.ones((16, 5))
masked = pred * mask  # BUG
print(masked.shape)
