"""Valid programs with scaled_dot_product_attention: rank 4 and rank 3, the tape kinds."""

from typing import Literal as L
from typing import reveal_type

import numpy as np

from gradtape import Cpu, NoneTape, Rank3, Rank4, Tensor
from gradtape.ops import scaled_dot_product_attention as sdpa

dev = Cpu()
q: Tensor[Rank4[L[2], L[4], L[16], L[8]], NoneTape] = dev.zeros((2, 4, 16, 8))
k: Tensor[Rank4[L[2], L[4], L[10], L[8]], NoneTape] = dev.zeros((2, 4, 10, 8))
v: Tensor[Rank4[L[2], L[4], L[10], L[6]], NoneTape] = dev.zeros((2, 4, 10, 6))
q3: Tensor[Rank3[L[2], L[16], L[8]], NoneTape] = dev.zeros((2, 16, 8))
k3: Tensor[Rank3[L[2], L[10], L[8]], NoneTape] = dev.zeros((2, 10, 8))
v3: Tensor[Rank3[L[2], L[10], L[6]], NoneTape] = dev.zeros((2, 10, 6))

reveal_type(sdpa(q, k, v))  # R: Tensor[tuple[Literal[2], Literal[4], Literal[16], Literal[6]], gradtape.tape.NoneTape]
reveal_type(sdpa(q3, k3, v3))  # R: Tensor[tuple[Literal[2], Literal[16], Literal[6]], gradtape.tape.NoneTape]
reveal_type(sdpa(q.leaky_trace(), k, v))  # R: Literal[16], Literal[6]], gradtape.tape.GradientTape]
reveal_type(sdpa(q, k.leaky_trace(), v))  # R: Literal[16], Literal[6]], gradtape.tape.GradientTape]
reveal_type(sdpa(q, k, v.leaky_trace()))  # R: Literal[16], Literal[6]], gradtape.tape.GradientTape]
reveal_type(sdpa(q3, k3, v3, is_causal=True, scale=0.5))  # R: Literal[16], Literal[6]], gradtape.tape.NoneTape]
mask = np.ones((16, 10), bool)
y: Tensor[Rank4[L[2], L[4], L[16], L[6]], NoneTape] = sdpa(q, k, v, attn_mask=mask, dropout_p=0.1, rng=0)
t = q.leaky_trace()
loss = sdpa(t, t, t, attn_mask=dev.zeros((16, 16))).sum()
loss.backward()
