"""class: reshape-count

PyTorch-style flatten of conv features (4, 16, 2, 2) to (4, 16 * 3 * 3) by a wrong spatial size.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu

dev = Cpu(seed=0)
feat = dev.randn((4, 16, 2, 2))
flat = feat.reshape((4, 16 * 3 * 3))  # BUG
print(flat.shape)
