"""Valid programs with gradtape.optim: optimizers, schedules and clipping on a module's parameters."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, Gradients, NoneTape, Rank2, Tensor, nn, optim
from gradtape.losses import cross_entropy

dev = Cpu()
model = nn.Sequential(nn.Linear(4, 8, dev=dev), nn.ReLU(), nn.Linear(8, 3, dev=dev))
opt: optim.Optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
adam = optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.01)
sched = optim.CosineAnnealingLR(adam, T_max=10)
step = optim.StepLR(opt, step_size=5, gamma=0.5)

grads: Gradients = model.alloc_grads()
x: Tensor[Rank2[int, L[4]], NoneTape] = dev.zeros((2, 4))
loss = cross_entropy(model(x.trace(grads)), [0, 2])
grads = loss.backward()
norm = optim.clip_grad_norm_(model.parameters(), grads, max_norm=1.0)
reveal_type(norm)  # R: float
opt.step(grads)
adam.step(grads)
model.zero_grads(grads)
sched.step()
step.step()
reveal_type(opt.lr)  # R: float
reveal_type(sched.get_last_lr())  # R: list[float]
state = opt.state_dict()
opt.load_state_dict(state)
