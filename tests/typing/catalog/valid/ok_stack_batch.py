"""stack: build a batch from single examples and run a model on it; also stack along a new last axis."""

from gradtape import Cpu, nn
from gradtape.ops import stack

dev = Cpu(seed=0)
examples = [dev.randn((6,)) for _ in range(5)]
batch = stack(examples)  # (5, 6)
model = nn.Linear(6, 2, dev=dev)
out = model(batch)
pairs = stack([batch, batch * 2.0], axis=-1)  # (5, 6, 2)
print(out.shape, pairs.shape)
