"""Batched matmul: (B, N, D) @ (D, K) shared weight and (B, N, D) @ (B, D, M), annotated."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tensor

dev = Cpu(seed=0)
x: Tensor[Rank3[L[3], L[5], L[4]], NoneTape] = dev.randn((3, 5, 4))
w: Tensor[Rank2[L[4], L[2]], NoneTape] = dev.randn((4, 2))
m: Tensor[Rank3[L[3], L[4], L[6]], NoneTape] = dev.randn((3, 4, 6))
a: Tensor[Rank3[L[3], L[5], L[2]], NoneTape] = x @ w
b: Tensor[Rank3[L[3], L[5], L[6]], NoneTape] = x @ m
print(a.shape, b.shape)
