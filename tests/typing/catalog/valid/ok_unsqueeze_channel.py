"""squeeze/unsqueeze: add a channel dim to (N, H, W) images before a Conv2d, unannotated."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
gray = dev.randn((3, 8, 8))
conv = nn.Conv2d(1, 4, 3, padding=1, dev=dev)
feat = conv(gray.unsqueeze(1))
pooled = feat.mean(axis=(2, 3))
print(feat.shape, pooled.shape)
