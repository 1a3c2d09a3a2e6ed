"""class: realize-dim

Realizing a (32, 60) batch as (Batch, 64): a Literal dim that does not match.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L
from typing import NewType

from gradtape import Cpu

Batch = NewType("Batch", int)
dev = Cpu(seed=0)
raw = dev.randn((32, 60))
x = raw.realize(tuple[Batch, L[64]])  # BUG
print(x.shape)
