"""Gradients of gradients: d2/dx2 of sum(x**3) with two autograd.grad calls (create_graph=True)."""

import numpy as np

from gradtape import Cpu, autograd

dev = Cpu(seed=0)
x = dev.tensor(np.array([1.0, 2.0, 3.0], np.float32)).leaky_trace()
y = (x * x * x).sum()
(g,) = autograd.grad(y, [x], create_graph=True)
assert g is not None
(h,) = autograd.grad(g.sum(), [x])
assert h is not None
print(g.numpy(), h.numpy())
