"""Gradients via TensorFlow-style GradientTape context: watch an input, tape.gradient of a scalar."""

from gradtape import Cpu, GradientTape, nn

dev = Cpu(seed=0)
layer = nn.Linear(4, 2, dev=dev)
x = dev.randn((3, 4))
with GradientTape() as tape:
    tape.watch(x)
    y = layer(x).tanh().sum()
gx, gw = tape.gradient(y, [x, layer.weight])
print(gx.shape, gw.shape)
