"""PyTorch's training loop, spelled as PyTorch spells it: untraced inputs, parameters that record
while grad mode is on, ``loss.backward()`` filling each parameter's ``.grad``, and
``opt.zero_grad()`` / ``opt.step()`` without a store.

The loss is statically ``Tensor[(), NoneTape]`` (no input was traced) and records at run time,
so ``backward()`` accepts a scalar of any tape kind; ``.grad`` is ``Tensor[S, NoneTape] | None``
with the parameter's shape."""

from typing import Literal as L
from typing import reveal_type

import numpy as np

import gradtape
from gradtape import Cpu, Gradients, NoneTape, Rank1, Rank2, Tensor, nn, optim
from gradtape.losses import cross_entropy, mse_loss

dev = Cpu(seed=0)


class MLP(nn.Module):
    def __init__(self) -> None:
        self.fc1: nn.Linear[L[4], L[8]] = nn.Linear(4, 8, dev=dev)
        self.fc2: nn.Linear[L[8], L[3]] = nn.Linear(8, 3, dev=dev)
        self.heads = nn.ModuleList([nn.Linear(8, 3, dev=dev), nn.Linear(8, 3, dev=dev)])
        self.extra = nn.ModuleDict({"proj": nn.Linear(3, 3, dev=dev)})
        self.scale: Tensor[Rank1[L[3]], NoneTape] = nn.Parameter(dev.ones((3,)))

    def forward(self, x: Tensor[Rank2[int, L[4]], NoneTape]) -> Tensor[Rank2[int, L[3]], NoneTape]:
        return self.fc2(self.fc1(x).relu()) * self.scale

    __call__ = forward


model = MLP()
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x: Tensor[Rank2[int, L[4]], NoneTape] = dev.randn((16, 4))
y = np.zeros(16, dtype=np.int64)

for _ in range(3):
    opt.zero_grad()
    loss = cross_entropy(model(x), y)
    reveal_type(loss)  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
    store = loss.backward()
    reveal_type(store)  # R: Gradients
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    reveal_type(norm)  # R: Tensor[Any, Any]
    opt.step()

# each parameter's .grad has its shape, or is None before the first backward()
w = model.fc1.weight
reveal_type(w.grad)  # R: Tensor[tuple[Literal[8], Literal[4]], gradtape.tape.NoneTape] | None
if w.grad is not None:
    reveal_type(w.grad)  # R: Tensor[tuple[Literal[8], Literal[4]], gradtape.tape.NoneTape]
    g: Tensor[Rank2[L[8], L[4]], NoneTape] = w.grad
    w.grad = None
model.zero_grad()
opt.zero_grad(set_to_none=False)

# a leaf that requires grad, made directly or in place
v: Tensor[Rank1[L[3]], NoneTape] = dev.ones((3,))
u = v.requires_grad_()
reveal_type(u)  # R: Tensor[tuple[Literal[3]], gradtape.tape.NoneTape]
p = dev.tensor([1.0, 2.0, 3.0], requires_grad=True)
(p * p).sum().backward()
mse_loss(u, v).backward()
reveal_type(u.grad)  # R: Tensor[tuple[Literal[3]], gradtape.tape.NoneTape] | None
u.grad = dev.zeros((3,))

# a non-scalar result takes a gradient seed of its shape
h = model(x)
h.backward(dev.ones((16, 3)).realize(tuple[int, L[3]]), retain_graph=True)
grads: Gradients = h.sum().backward()

# inference: no recording
with gradtape.inference_mode():
    pred = model(x)
    reveal_type(pred)  # R: Tensor[tuple[int, Literal[3]], gradtape.tape.NoneTape]
with gradtape.no_grad():
    model(x)
