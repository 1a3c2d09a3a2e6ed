"""PyTorch-style stack of layers kept in a list (a ModuleList without the class), applied in a
loop: unannotated layers of different widths must stay one type (int widths)."""

from gradtape import Cpu, nn
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
layers = [nn.Linear(4, 8, dev=dev), nn.Linear(8, 8, dev=dev), nn.Linear(8, 3, dev=dev)]
x = dev.randn((5, 4))
for layer in layers[:-1]:
    x = layer(x).relu()
logits = layers[-1](x)
loss = cross_entropy(logits, [0, 1, 2, 0, 1])
print(logits.shape, loss.item())
