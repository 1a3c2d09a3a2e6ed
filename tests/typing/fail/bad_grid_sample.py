"""Batch, rank and argument bugs in sampling-grid code that mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank3, Rank4, Tensor
from gradtape.ops import affine_grid, grid_sample

dev = Cpu()
x: Tensor[Rank4[L[2], L[3], L[8], L[8]], NoneTape] = dev.zeros((2, 3, 8, 8))
x3: Tensor[Rank3[L[2], L[3], L[8]], NoneTape] = dev.zeros((2, 3, 8))
grid: Tensor[Rank4[L[2], L[4], L[5], L[2]], NoneTape] = dev.zeros((2, 4, 5, 2))
other: Tensor[Rank4[L[5], L[4], L[5], L[2]], NoneTape] = dev.zeros((5, 4, 5, 2))
theta: Tensor[Rank3[L[2], L[2], L[3]], NoneTape] = dev.zeros((2, 2, 3))

grid_sample(x, other, align_corners=False)  # E: misc
grid_sample(x3, grid, align_corners=False)  # E: arg-type
grid_sample(x, grid, align_corners="yes")  # E: call-overload
wrong: Tensor[Rank4[L[2], L[3], L[8], L[8]], NoneTape] = grid_sample(x, grid, align_corners=False)  # E: arg-type
affine_grid(theta, 4, align_corners=False)  # E: call-overload
