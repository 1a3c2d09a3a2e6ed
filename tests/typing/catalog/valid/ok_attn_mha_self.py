"""Attention: nn.MultiHeadAttention self-attention in an annotated module with a feed-forward."""

from typing import Any

from gradtape import Cpu, Tensor, nn


class Block(nn.Module):
    def __init__(self, d: int, heads: int, dev: Cpu) -> None:
        self.attn = nn.MultiHeadAttention(d, heads, dev=dev)
        self.ln1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, 4 * d, dev=dev)
        self.ff2 = nn.Linear(4 * d, d, dev=dev)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ff2(self.ff1(x).gelu()))


dev = Cpu(seed=0)
block = Block(16, 2, dev)
x = dev.randn((2, 5, 16))
grads = block.alloc_grads()
y = block(x.trace(grads))
grads = y.square().mean().backward()
print(y.shape)
