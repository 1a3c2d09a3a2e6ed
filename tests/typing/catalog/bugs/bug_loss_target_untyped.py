"""class: loss-target

PyTorch-style: l1_loss between (16, 3) outputs and (16, 4) targets.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu
from gradtape.losses import l1_loss

dev = Cpu(seed=0)
out = dev.randn((16, 3))
target = dev.randn((16, 4))
loss = l1_loss(out, target)  # BUG
print(loss.item())
