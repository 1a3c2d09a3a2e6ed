"""Attention: cross-attention of decoder queries over encoder keys/values (different lengths)."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
cross = nn.MultiHeadAttention(12, 3, dev=dev)
dec = dev.randn((2, 4, 12))
enc = dev.randn((2, 9, 12))
grads = cross.alloc_grads()
out = cross(dec.trace(grads), enc, enc)
grads = out.sum().backward()
print(out.shape, grads.get(cross.in_proj_weight).shape)
