"""PyTorch-style training loop (no annotations): Adam, several steps, loss decreasing."""

import numpy as np

from gradtape import Cpu, nn, optim
from gradtape.losses import mse_loss

dev = Cpu(seed=0)
rng = np.random.default_rng(0)
model = nn.Sequential(nn.Linear(3, 16, dev=dev), nn.Tanh(), nn.Linear(16, 1, dev=dev))
opt = optim.Adam(model.parameters(), lr=0.01)

xs = rng.normal(size=(64, 3)).astype(np.float32)
ys = (xs.sum(axis=1, keepdims=True) * 0.5).astype(np.float32)
x = dev.tensor(xs)
y = dev.tensor(ys)

losses: list[float] = []
for _step in range(8):
    grads = model.alloc_grads()
    loss = mse_loss(model(x.trace(grads)), y)
    grads = loss.backward()
    opt.step(grads)
    losses.append(loss.item())
print(losses[0], losses[-1])
assert losses[-1] < losses[0]
