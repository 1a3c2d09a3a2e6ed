"""class: matmul-inner

PyTorch-style unannotated code: (32, 64) @ (32, 10), the weight's inner dim is the batch size.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu

dev = Cpu(seed=0)
x = dev.randn((32, 64))
w = dev.randn((32, 10))
logits = x.matmul(w)  # BUG
print(logits.shape)
