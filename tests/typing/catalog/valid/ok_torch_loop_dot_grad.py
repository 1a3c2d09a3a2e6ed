"""PyTorch's training loop verbatim (no annotations, no store): untraced inputs, module
parameters that record, ``opt.zero_grad(); loss.backward(); clip_grad_norm_; opt.step()``,
and each parameter's ``.grad`` read after backward."""

import numpy as np

import gradtape
from gradtape import Cpu, nn, optim
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
rng = np.random.default_rng(0)
model = nn.Sequential(nn.Linear(4, 16, dev=dev), nn.ReLU(), nn.Linear(16, 3, dev=dev))
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

x = dev.tensor(rng.normal(size=(32, 4)).astype(np.float32))
y = dev.tensor(rng.integers(0, 3, size=32))

losses: list[float] = []
for _step in range(10):
    opt.zero_grad()
    loss = cross_entropy(model(x), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    losses.append(loss.item())

for name, p in model.named_parameters():
    if p.grad is not None:
        print(name, p.grad.shape, float(np.abs(p.grad.numpy()).max()))
with gradtape.inference_mode():
    pred = model(x)
print(losses[0], losses[-1], pred.shape)
assert losses[-1] < losses[0]
