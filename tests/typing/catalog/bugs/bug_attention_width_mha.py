"""class: attention-width

MultiHeadAttention built for embed_dim=32 applied to (B, L, 16) inputs.
Run time: raises ShapeError at the BUG line.
"""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
attn = nn.MultiHeadAttention(32, 4, dev=dev)
x = dev.randn((2, 5, 16))
y = attn(x)  # BUG
print(y.shape)
