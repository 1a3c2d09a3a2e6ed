"""PyTorch-style (8, 5) - (8, 1) broadcast from unannotated creation."""

from gradtape import Cpu

dev = Cpu(seed=0)
scores = dev.randn((8, 5))
row_max = dev.randn((8, 1))
shifted = scores - row_max
print(shifted.shape)
