"""Generic batch functions: a typed loss helper generic in batch size, used in training with a traced input."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, Gradients, NoneTape, OwnedTape, Rank0, Rank2, Tensor
from gradtape.losses import mse_loss

B = TypeVar("B", bound=int)


def regression_loss(
    pred: Tensor[Rank2[B, L[2]], OwnedTape], target: Tensor[Rank2[B, L[2]], NoneTape]
) -> Tensor[Rank0, OwnedTape]:
    return mse_loss(pred, target)


dev = Cpu(seed=0)
w: Tensor[Rank2[L[3], L[2]], NoneTape] = dev.randn((3, 2))
x: Tensor[Rank2[L[6], L[3]], NoneTape] = dev.randn((6, 3))
y: Tensor[Rank2[L[6], L[2]], NoneTape] = dev.randn((6, 2))
grads = Gradients.leaky()
loss = regression_loss(x.matmul(w.trace(grads)), y)
grads = loss.backward()
print(loss.item(), grads.get(w).shape)
