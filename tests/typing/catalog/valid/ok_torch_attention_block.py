"""PyTorch-style self-attention with nn.MultiHeadAttention and a residual + LayerNorm."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
attn = nn.MultiHeadAttention(32, 4, dev=dev)
norm = nn.LayerNorm(32)
x = dev.randn((2, 6, 32))
y = norm(x + attn(x))
print(y.shape)
