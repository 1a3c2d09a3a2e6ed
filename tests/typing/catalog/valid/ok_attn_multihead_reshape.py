"""Attention: split (B, L, E) into heads with reshape/permute, attend, merge heads back."""

from gradtape import Cpu

dev = Cpu(seed=0)
b, n, h, d = 2, 6, 4, 8
x = dev.randn((b, n, h * d))
heads = x.reshape((b, n, h, d)).permute((0, 2, 1, 3))  # (B, H, L, D)
scores = (heads @ heads.permute((0, 1, 3, 2))) * (d**-0.5)
ctx = scores.softmax(axis=-1) @ heads
merged = ctx.permute((0, 2, 1, 3)).reshape((b, n, h * d))
print(merged.shape)
