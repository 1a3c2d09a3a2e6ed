"""Broadcasting: outer product (N, 1) * (1, M), unannotated."""

from gradtape import Cpu

dev = Cpu(seed=0)
u = dev.randn((5,)).unsqueeze(1)
v = dev.randn((7,)).unsqueeze(0)
outer = u * v
print(outer.shape)
