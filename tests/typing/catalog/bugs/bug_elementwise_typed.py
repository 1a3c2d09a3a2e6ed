"""class: elementwise-shape

Adding a (4, 3) tensor to a (3, 4) tensor of the same size but transposed layout.
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor

dev = Cpu(seed=0)
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.randn((3, 4))
b: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.randn((4, 3))
c = a + b  # BUG
print(c.shape)
