"""Misuses of gradtape.optim that mypy rejects."""

from gradtape import Cpu, Gradients, nn, optim

dev = Cpu()
model = nn.Linear(4, 3, dev=dev)
opt = optim.SGD(model.parameters(), lr=0.1)
grads = model.alloc_grads()

optim.SGD(model, lr=0.1)  # E: arg-type
optim.Adam(model.parameters(), lr="0.001")  # E: arg-type
optim.Adam(model.parameters(), lr=1e-3, betas=0.9)  # E: arg-type
opt.step(model.parameters())  # E: arg-type
opt.step(dev.zeros((3,)).leaky_trace())  # E: arg-type
optim.StepLR(model, step_size=2)  # E: arg-type
optim.clip_grad_norm_(model.parameters(), grads)  # E: call-arg
n: Gradients = optim.clip_grad_norm_(model.parameters(), grads, 1.0)  # E: assignment
