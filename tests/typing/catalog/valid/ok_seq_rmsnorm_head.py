"""Sequential with RMSNorm and BatchNorm1d; the first layer is indexed to read its weight."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
model = nn.Sequential(
    nn.Linear(6, 12, dev=dev), nn.BatchNorm1d(12, dev=dev), nn.ReLU(), nn.RMSNorm(12), nn.Linear(12, 2, dev=dev)
)
x = dev.randn((9, 6))
out = model(x)
first = model[0]
print(out.shape, [p.shape for p in first.parameters()])
