"""class: loss-target

cross_entropy on (B, L, V) sequence logits without flattening to (B * L, V).
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Tensor
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
logits: Tensor[Rank3[L[2], L[4], L[10]], NoneTape] = dev.randn((2, 4, 10))
targets = [[1, 2, 3, 4], [5, 6, 7, 8]]
loss = cross_entropy(logits, targets)  # BUG
print(loss.item())
