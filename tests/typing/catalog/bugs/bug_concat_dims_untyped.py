"""class: concat-dims

PyTorch-style feature fusion: image features (8, 32) and text features (6, 16) of different batch sizes.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu
from gradtape.ops import concat

dev = Cpu(seed=0)
img = dev.randn((8, 32))
txt = dev.randn((6, 16))
fused = concat([img, txt], axis=-1)  # BUG
print(fused.shape)
