"""Attention by hand with typed tensors: softmax(q @ k^T / sqrt(d)) @ v, batched rank-3 matmuls."""

import math
from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Tensor

dev = Cpu(seed=0)
q: Tensor[Rank3[L[2], L[5], L[8]], NoneTape] = dev.randn((2, 5, 8))
k: Tensor[Rank3[L[2], L[7], L[8]], NoneTape] = dev.randn((2, 7, 8))
v: Tensor[Rank3[L[2], L[7], L[4]], NoneTape] = dev.randn((2, 7, 4))

scores = q @ k.transpose(1, 2) * (1.0 / math.sqrt(8))
attn = scores.softmax(axis=-1)
out: Tensor[Rank3[L[2], L[5], L[4]], NoneTape] = attn @ v
print(out.shape)
