"""PyTorch-style custom Module with untyped-shape annotations (Tensor[Any, Any]) and model(x) calls."""

from typing import Any

from gradtape import Cpu, Tensor, nn
from gradtape.losses import mse_loss

dev = Cpu(seed=0)


class TwoLayer(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: int) -> None:
        self.fc1 = nn.Linear(d_in, d_hidden, dev=dev)
        self.fc2 = nn.Linear(d_hidden, d_out, dev=dev)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return self.fc2(self.fc1(x).relu())


model = TwoLayer(8, 16, 1)
x = dev.randn((20, 8))
y = dev.randn((20, 1))
grads = model.alloc_grads()
pred = model(x.trace(grads))
loss = mse_loss(pred, y)
grads = loss.backward()
print(loss.item(), grads.get(model.fc1.weight).shape)
