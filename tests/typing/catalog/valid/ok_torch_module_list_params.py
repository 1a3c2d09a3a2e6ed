"""PyTorch-style custom module (untyped-shape annotations, ``Tensor[Any, Any]``): layers in an
``nn.ModuleList`` and an ``nn.ModuleDict``, a learned scale made with ``nn.Parameter``, a leaf
input that requires grad, and ``model.zero_grad()`` between steps."""

from itertools import pairwise
from typing import Any

from gradtape import Cpu, Tensor, nn, optim
from gradtape.losses import mse_loss

dev = Cpu(seed=0)


class Stack(nn.Module):
    def __init__(self, widths: list[int]) -> None:
        self.layers = nn.ModuleList(nn.Linear(a, b, dev=dev) for a, b in pairwise(widths))
        self.heads = nn.ModuleDict({"out": nn.Linear(widths[-1], 1, dev=dev)})
        self.scale = nn.Parameter(dev.ones((1,)))

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        for layer in self.layers:
            x = layer(x).tanh()
        out: Tensor[Any, Any] = self.heads["out"](x)
        return out * self.scale


model = Stack([3, 8, 8])
opt = optim.Adam(model.parameters(), lr=0.01)
x = dev.randn((16, 3)).requires_grad_()
y = dev.zeros((16, 1))
losses: list[float] = []
for _step in range(3):
    model.zero_grad()
    loss = mse_loss(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert x.grad is not None
print(len(model.parameters()), x.grad.shape, losses)
