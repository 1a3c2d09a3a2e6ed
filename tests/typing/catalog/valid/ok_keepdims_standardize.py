"""keepdims reduction: per-sample standardisation of a (B, C, H, W) batch over (H, W)."""

from gradtape import Cpu

dev = Cpu(seed=0)
imgs = dev.randn((2, 3, 8, 8))
mu = imgs.mean(axis=(2, 3), keepdims=True)
var = imgs.var(axis=(2, 3), keepdims=True)
normed = (imgs - mu) / (var + 1e-5).sqrt()
print(normed.shape)
