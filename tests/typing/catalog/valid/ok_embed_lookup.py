"""Embedding: ops.embedding on a typed (V, D) table with a list of ids, result annotated (int, D)."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Tensor
from gradtape.ops import embedding

dev = Cpu(seed=0)
table: Tensor[Rank2[L[50], L[8]], NoneTape] = dev.randn((50, 8))
vecs: Tensor[Rank2[int, L[8]], NoneTape] = embedding([3, 14, 15, 9], table)
sentence = vecs.mean(axis=0)
print(sentence.shape)
