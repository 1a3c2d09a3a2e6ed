"""PyTorch-style evaluation under no_grad, model.eval() and argmax accuracy."""

import numpy as np

from gradtape import Cpu, nn, no_grad

dev = Cpu(seed=0)
model = nn.Sequential(nn.Linear(10, 20, dev=dev), nn.ReLU(), nn.Dropout(0.2), nn.Linear(20, 3, dev=dev))
model.eval()
x = dev.randn((50, 10))
labels = np.arange(50) % 3
with no_grad():
    logits = model(x)
acc = float((logits.numpy().argmax(axis=1) == labels).mean())
print(acc, logits.requires_grad)
