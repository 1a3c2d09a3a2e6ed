"""class: backward

PyTorch-style: backward on the logits matrix instead of the loss.
Run time: raises TapeError at the BUG line.
"""

from gradtape import Cpu, nn
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
model = nn.Linear(4, 3, dev=dev)
x = dev.randn((6, 4))
grads = model.alloc_grads()
logits = model(x.trace(grads))
loss = cross_entropy(logits, [0, 1, 2, 0, 1, 2])
grads = logits.backward()  # BUG
print(loss.item(), grads)
