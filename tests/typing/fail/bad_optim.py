"""Misuses of gradtape.optim (and of PyTorch's ``.grad`` spelling) that mypy rejects."""

from typing import Literal as L

from gradtape import Cpu, Gradients, NoneTape, Rank2, Tensor, nn, optim

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
# a training step with the store, the tape and the loss mixed up (opt.step() and
# opt.zero_grad() without arguments are PyTorch's spelling, valid: see ok_torch_loop.py)
x = dev.zeros((2, 4))
loss = model(x.trace(grads)).sum()
opt.step(loss)  # E: arg-type
opt.step(loss.backward)  # E: arg-type
opt.step(loss.tape)  # E: arg-type
opt.step(grads.get(model.weight))  # E: arg-type
opt.step(loss=grads)  # E: call-arg
opt.zero_grad(grads)  # E: arg-type
model.zero_grad(grads)  # E: arg-type
model.zero_grads(opt)  # E: arg-type
model.zero_grads()  # E: call-arg
x.trace(Gradients)  # E: arg-type
x.trace(model)  # E: arg-type
x.trace(model.alloc_grads)  # E: arg-type
grads.get(model)  # E: arg-type
# constructing optimizers and schedules
optim.SGD(model.weight, lr=0.1)  # E: arg-type
optim.SGD(model.parameters, lr=0.1)  # E: arg-type
optim.SGD(model.parameters(), nesterov="yes")  # E: arg-type
optim.SGD(model.parameters(), lr=0.1, momentum="0.9")  # E: arg-type
optim.AdamW(model.parameters(), lr=1e-3, betas=[0.9, 0.999])  # E: arg-type
optim.CosineAnnealingLR(opt, T_max=10.0)  # E: arg-type
optim.StepLR(grads, step_size=5)  # E: arg-type
optim.StepLR(opt, step_size=5).step(grads)  # E: arg-type
optim.clip_grad_norm_(grads, model.parameters(), 1.0)  # E: arg-type
opt.load_state_dict(opt)  # E: arg-type
opt.lr = "0.1"  # E: assignment
# PyTorch's .grad spelling: .grad is None until a backward() reaches the parameter
model.weight.grad.numpy()  # E: union-attr
model.weight.grad = 1.0  # E: assignment
lin: nn.Linear[L[4], L[3]] = nn.Linear(4, 3, dev=dev)
g: Tensor[Rank2[L[3], L[4]], NoneTape] = lin.weight.grad  # E: assignment
nn.utils.clip_grad_norm_(model.parameters(), grads)  # E: arg-type
nn.utils.clip_grad_norm_(model, 1.0)  # E: arg-type
dev.tensor([1.0, 2.0], requires_grad="yes")  # E: arg-type
x.requires_grad_("yes")  # E: arg-type
nn.ModuleList([lin, x])  # E: list-item
