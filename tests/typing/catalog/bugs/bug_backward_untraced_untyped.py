"""class: backward

PyTorch-style: a functional model whose parameters are plain tensors (not traced, no module),
so the loss has no tape.
Run time: raises TapeError at the BUG line.
"""

from gradtape import Cpu

dev = Cpu(seed=0)
w = dev.randn((3, 1))
x = dev.randn((10, 3))
loss = (x @ w).square().mean()
grads = loss.backward()  # BUG
print(grads)
