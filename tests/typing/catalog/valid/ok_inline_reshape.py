"""Inline shapes: flatten a (8, 4, 16) batch with x.reshape((8, 64)) and feed a typed Linear[64, 10]."""

from typing import Literal as L

from gradtape import Cpu, nn

dev = Cpu(seed=0)
fc: nn.Linear[L[64], L[10]] = nn.Linear(64, 10, dev=dev)
x = dev.randn((8, 4, 16))
flat = x.reshape((8, 64))
out = fc(flat)
print(out.shape)
