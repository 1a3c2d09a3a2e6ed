"""class: realize-rank

Realizing a (4,) vector of per-example losses as a scalar Rank0 before backward.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu

dev = Cpu(seed=0)
x = dev.randn((4, 3)).leaky_trace()
per_example = x.square().mean(axis=1)
loss = per_example.realize(tuple[()])  # BUG
print(loss.backward())
