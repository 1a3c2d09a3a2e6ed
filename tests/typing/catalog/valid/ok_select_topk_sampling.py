"""PyTorch-style logits handling: causal masked_fill, q/k/v split, top-k filtering, argmax accuracy."""

from typing import Literal as L

import numpy as np

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor, ops

dev = Cpu(seed=0)
qkv: Tensor[Rank3[L[2], L[5], L[24]], NoneTape] = dev.randn((2, 5, 24))
q, k, v = qkv.split(8, dim=2)
scores = (q @ k.transpose(1, 2)) * (1.0 / 8**0.5)
causal = dev.tensor(np.triu(np.ones((5, 5), dtype=bool), k=1))
att = scores.masked_fill(causal, float("-inf")).softmax(axis=-1)
out = att @ v

logits: Tensor[Rank2[L[4], L[10]], NoneTape] = dev.randn((4, 10))
top, _ = logits.topk(3, dim=-1)
kth = top[:, -1:]
filtered = logits.masked_fill(logits < kth, float("-inf"))
probs = filtered.softmax(axis=-1)
targets = dev.tensor(np.array([1, 0, 3, 9]))
predicted = logits.argmax(dim=1)
accuracy = predicted.eq(targets).sum().item() / 4
onehot = ops.one_hot(targets, 10)
print(out.shape, probs.shape, accuracy, onehot.shape)
