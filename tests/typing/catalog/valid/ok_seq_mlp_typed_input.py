"""Sequential MLP called on an annotated input; the output is Any (Sequential is untyped) and annotated by the user."""

from typing import Any
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor, nn

dev = Cpu(seed=0)
model = nn.Sequential(nn.Linear(8, 16, dev=dev), nn.SiLU(), nn.Linear(16, 4, dev=dev))
x: Tensor[Rank2[L[3], L[8]], NoneTape] = dev.randn((3, 8))
y: Tensor[Any, NoneTape] = model(x)
print(y.shape, len(model), [n for n, _ in model.named_parameters()][:2])
