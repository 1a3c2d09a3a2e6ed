"""class: backward

PyTorch-style: backward from the (5, 1) predictions with a gradient seed shaped like the (5,)
targets instead of like the predictions.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank2[L[5], L[2]], NoneTape] = dev.randn((5, 2))
w: Tensor[Rank2[L[2], L[1]], NoneTape] = dev.tensor([[0.5], [-1.0]], requires_grad=True)
y: Tensor[Rank1[L[5]], NoneTape] = dev.randn((5,))
pred = x @ w
pred.backward(2.0 * (pred.detach().squeeze(1) - y))  # BUG
print(w.grad)
