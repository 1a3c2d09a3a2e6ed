"""Inline shapes: weights created with literal tuples and used right away (dev.randn((3, 4)) @ dev.randn((4, 5)))."""

from gradtape import Cpu

dev = Cpu(seed=0)
a = dev.randn((3, 4))
b = dev.randn((4, 5))
c = a @ b
d = c.T @ dev.ones((3, 2))
print(c.shape, d.shape)
