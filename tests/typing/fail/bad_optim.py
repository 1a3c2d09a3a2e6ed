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
# a training step written with PyTorch habits, or with the store, the tape and the loss mixed up
x = dev.zeros((2, 4))
loss = model(x.trace(grads)).sum()
opt.step()  # E: call-arg
opt.step(loss)  # E: arg-type
opt.step(loss.backward)  # E: arg-type
opt.step(loss.tape)  # E: arg-type
opt.step(grads.get(model.weight))  # E: arg-type
opt.zero_grad()  # E: attr-defined
model.zero_grads(opt)  # E: arg-type
model.zero_grads()  # E: call-arg
x.trace(Gradients)  # E: arg-type
x.trace(model)  # E: arg-type
x.trace(model.alloc_grads)  # E: arg-type
grads.get(model)  # E: arg-type
# constructing optimizers and schedules
optim.SGD(model.weight, lr=0.1)  # E: arg-type
optim.SGD(model.parameters, lr=0.1)  # E: arg-type
optim.SGD(model.parameters())  # E: call-arg
optim.SGD(model.parameters(), lr=0.1, momentum="0.9")  # E: arg-type
optim.AdamW(model.parameters(), lr=1e-3, betas=[0.9, 0.999])  # E: arg-type
optim.CosineAnnealingLR(opt, T_max=10.0)  # E: arg-type
optim.StepLR(grads, step_size=5)  # E: arg-type
optim.StepLR(opt, step_size=5).step(grads)  # E: call-arg
optim.clip_grad_norm_(grads, model.parameters(), 1.0)  # E: arg-type
opt.load_state_dict(opt)  # E: arg-type
opt.lr = "0.1"  # E: assignment
