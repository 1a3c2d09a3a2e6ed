"""PyTorch-style keepdims reduction: center and scale each row, then a Linear layer."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
x = dev.randn((8, 5))
centered = x - x.mean(axis=1, keepdims=True)
scaled = centered / (centered.std(axis=1, keepdims=True) + 1e-5)
layer = nn.Linear(5, 3, dev=dev)
out = layer(scaled)
print(out.shape, float(scaled.mean().item()))
