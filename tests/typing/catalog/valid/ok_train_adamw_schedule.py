"""Training loop with AdamW, cosine schedule and gradient clipping, PyTorch style."""

from gradtape import Cpu, nn, optim
from gradtape.losses import mse_loss

dev = Cpu(seed=0)
model = nn.Sequential(nn.Linear(2, 8, dev=dev), nn.Tanh(), nn.Linear(8, 2, dev=dev))
opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
sched = optim.CosineAnnealingLR(opt, T_max=10)
x = dev.randn((16, 2))
target = x * 2.0
history: list[float] = []
for _ in range(10):
    grads = model.alloc_grads()
    loss = mse_loss(model(x.trace(grads)), target)
    grads = loss.backward()
    optim.clip_grad_norm_(model.parameters(), grads, max_norm=1.0)
    opt.step(grads)
    sched.step()
    history.append(loss.item())
print(history[-1], sched.get_last_lr())
