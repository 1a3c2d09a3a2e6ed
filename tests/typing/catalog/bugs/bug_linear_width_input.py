"""class: linear-width

A typed Linear[L[20], L[5]] applied to a batch with 21 features (an extra bias column).
Run time: raises ShapeError at the BUG line.
"""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, nn

dev = Cpu(seed=0)
layer: nn.Linear[L[20], L[5]] = nn.Linear(20, 5, dev=dev)
x: Tensor[Rank2[L[6], L[21]], NoneTape] = dev.randn((6, 21))
y = layer(x)  # BUG
print(y.shape)
