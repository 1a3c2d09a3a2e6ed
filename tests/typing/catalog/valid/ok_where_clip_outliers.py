"""where: clip outliers beyond 2 std (method form a.where(mask, other)), unannotated."""

from gradtape import Cpu

dev = Cpu(seed=0)
x = dev.randn((100,))
limit = 2.0 * float(x.std().item())
inside = x.abs() < limit
clipped = x.where(inside, x.clamp(-limit, limit))
print(float(clipped.abs().max().item()) <= limit + 1e-6)
