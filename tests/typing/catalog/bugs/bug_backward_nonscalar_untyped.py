"""class: backward

PyTorch-style: a functional model whose weight requires grad, and backward() on the (10,)
per-example losses instead of their mean.
Run time: raises TapeError at the BUG line.
"""

from gradtape import Cpu

dev = Cpu(seed=0)
w = dev.randn((3, 1)).requires_grad_()
x = dev.randn((10, 3))
per_example = (x @ w).square().mean(axis=1)
per_example.backward()  # BUG
print(w.grad)
