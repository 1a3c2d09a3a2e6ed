"""Issue 27's spatial ops and layers, typed: resampling to a literal size and adaptive pooling to
a literal pair keep those sizes in the shape type; the tape kind is kept; a computed size is an int."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank3, Rank4, Tensor, nn, ops

dev = Cpu()
x: Tensor[Rank4[L[2], L[3], L[5], L[7]], NoneTape] = dev.zeros((2, 3, 5, 7))
s: Tensor[Rank3[L[2], L[3], L[7]], NoneTape] = dev.zeros((2, 3, 7))
t = x.leaky_trace()

size: tuple[L[9], L[11]] = (9, 11)
up = ops.interpolate(t, size, mode="bilinear", align_corners=True)
reveal_type(up)  # R: Tensor[tuple[Literal[2], Literal[3], Literal[9], Literal[11]], gradtape.tape.GradientTape]
up2 = ops.interpolate(x, scale_factor=1.5)
reveal_type(up2)  # R: Tensor[tuple[Literal[2], Literal[3], int, int], gradtape.tape.NoneTape]
up1 = ops.interpolate(s, scale_factor=2.0, mode="linear")
reveal_type(up1)  # R: Tensor[tuple[Literal[2], Literal[3], int], gradtape.tape.NoneTape]

out: tuple[L[3], L[4]] = (3, 4)
pooled = ops.adaptive_avg_pool2d(t, out)
reveal_type(pooled)  # R: Tensor[tuple[Literal[2], Literal[3], Literal[3], Literal[4]], gradtape.tape.GradientTape]
pooled2 = ops.adaptive_max_pool2d(x, 1)
reveal_type(pooled2)  # R: Tensor[tuple[Literal[2], Literal[3], int, int], gradtape.tape.NoneTape]
values, indices = ops.adaptive_max_pool2d(x, (None, 2), return_indices=True)

padded: Tensor[Rank4[int, int, int, int], NoneTape] = ops.pad(x, (1, 1, 2, 0), mode="reflect")
shuffled = ops.pixel_shuffle(ops.pixel_unshuffle(t, 1), 1)
reveal_type(shuffled)  # R: Tensor[Any, gradtape.tape.GradientTape]

model = nn.Sequential(nn.ReflectionPad2d(1), nn.Upsample(scale_factor=2), nn.AdaptiveAvgPool2d((2, 2)))
zp = nn.ZeroPad2d(2)(t)
reveal_type(zp)  # R: Tensor[tuple[Literal[2], Literal[3], int, int], gradtape.tape.GradientTape]
reveal_type(nn.PixelShuffle(2)(x))  # R: Tensor[Any, gradtape.tape.NoneTape]

# sampling grids: the output's spatial dims are the grid's; a traced grid traces an untraced image
grid: Tensor[Rank4[L[2], L[4], L[6], L[2]], NoneTape] = dev.zeros((2, 4, 6, 2))
sampled = ops.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=False)
reveal_type(sampled)  # R: Tensor[tuple[Literal[2], Literal[3], Literal[4], Literal[6]], gradtape.tape.NoneTape]
moved = ops.grid_sample(x, grid.leaky_trace(), align_corners=True)
reveal_type(moved)  # R: Tensor[tuple[Literal[2], Literal[3], Literal[4], Literal[6]], gradtape.tape.GradientTape]
affine_size: tuple[L[2], L[3], L[4], L[6]] = (2, 3, 4, 6)
theta: Tensor[Rank3[L[2], L[2], L[3]], NoneTape] = dev.zeros((2, 2, 3))
flow = ops.affine_grid(theta.leaky_trace(), affine_size, align_corners=False)
reveal_type(flow)  # R: Tensor[tuple[Literal[2], Literal[4], Literal[6], Literal[2]], gradtape.tape.GradientTape]
warped = ops.grid_sample(x, flow, align_corners=False)
reveal_type(warped)  # R: Tensor[tuple[Literal[2], Literal[3], Literal[4], Literal[6]], gradtape.tape.GradientTape]
