"""3-D pooling and normalisation, typed: batch and channel dims (or the unbatched channel dim) and
the tape kind are kept, the pooled spatial sizes are computed at run time (ints); the norms keep
the whole shape type."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank4, Rank5, Tensor, nn, ops

dev = Cpu()
x: Tensor[Rank5[L[2], L[3], L[8], L[8], L[8]], NoneTape] = dev.zeros((2, 3, 8, 8, 8))
u: Tensor[Rank4[L[3], L[8], L[8], L[8]], NoneTape] = dev.zeros((3, 8, 8, 8))
t = x.leaky_trace()

reveal_type(ops.max_pool3d(x, 2))  # R: Tensor[tuple[Literal[2], Literal[3], int, int, int], gradtape.tape.NoneTape]
reveal_type(ops.avg_pool3d(t, (2, 3, 2), 1, (1, 1, 0)))  # R: Literal[3], int, int, int], gradtape.tape.GradientTape]
reveal_type(ops.max_pool3d(u, 3, 2, 1))  # R: Tensor[tuple[Literal[3], int, int, int], gradtape.tape.NoneTape]
reveal_type(ops.adaptive_avg_pool3d(t, (2, None, 3)))  # R: Literal[3], int, int, int], gradtape.tape.GradientTape]
reveal_type(ops.adaptive_max_pool3d(x, 1))  # R: Literal[2], Literal[3], int, int, int], gradtape.tape.NoneTape]
values, indices = ops.adaptive_max_pool3d(x, 2, return_indices=True)

reveal_type(nn.MaxPool3d(2)(t))  # R: Tensor[tuple[Literal[2], Literal[3], int, int, int], gradtape.tape.GradientTape]
reveal_type(nn.AvgPool3d(2, 1, 1)(u))  # R: Tensor[tuple[Literal[3], int, int, int], gradtape.tape.NoneTape]
reveal_type(nn.AdaptiveAvgPool3d(1)(x))  # R: Literal[2], Literal[3], int, int, int], gradtape.tape.NoneTape]
bn: nn.BatchNorm3d[L[3]] = nn.BatchNorm3d(3)
reveal_type(bn(t))  # R: Literal[3], Literal[8], Literal[8], Literal[8]], gradtape.tape.GradientTape]
reveal_type(nn.InstanceNorm3d(3, affine=True)(x))  # R: Literal[8], Literal[8], Literal[8]], gradtape.tape.NoneTape]
