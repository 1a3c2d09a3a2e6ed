"""Inline shapes from data: reshape using x.shape values, then matmul with a weight of run-time size."""

from gradtape import Cpu

dev = Cpu(seed=0)
x = dev.randn((6, 2, 5))
n, a, b = x.shape
flat = x.reshape((n, a * b))
w = dev.randn((a * b, 3))
print((flat @ w).shape)
