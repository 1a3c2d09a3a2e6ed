"""Sequential with Residual blocks and LayerNorm, unannotated."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
d = 16
model = nn.Sequential(
    nn.Linear(4, d, dev=dev),
    nn.Residual(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d, dev=dev), nn.GELU())),
    nn.Residual(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d, dev=dev), nn.GELU())),
    nn.Linear(d, 1, dev=dev),
)
x = dev.randn((10, 4))
grads = model.alloc_grads()
y = model(x.trace(grads))
grads = y.mean().backward()
print(y.shape)
