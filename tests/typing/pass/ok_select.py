"""Issue 27's ops by index and order, typed: index results are untraced int64 tensors, values
keep the input's tape, shape-keeping ops keep the shape type."""

from typing import Literal as L
from typing import reveal_type

import numpy as np

from gradtape import Cpu, NoneTape, Rank0, Rank2, Tensor, ops

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
x = a.leaky_trace()
labels = dev.tensor(np.array([0, 2, 1]))

# argmax / argmin: a 0-d index over everything, an untraced index tensor along a dim
reveal_type(x.argmax())  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(x.argmax(dim=1))  # R: Tensor[Any, gradtape.tape.NoneTape]
i0: Tensor[Rank0, NoneTape] = ops.argmin(a)
reveal_type(a.argsort(dim=0, descending=True))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]

# topk / sort: (values, indices), unpacked or by name; values keep the tape
values, indices = x.topk(2, dim=1)
reveal_type(values)  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(indices)  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(x.sort(dim=0).values)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(a.sort().indices)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]

# PyTorch's gather is take_along_axis; scatter_add / index_add / masked_fill keep the shape
reveal_type(x.take_along_axis(labels.reshape((3, 1)), 1))  # R: Tensor[Any, gradtape.tape.GradientTape]
row, src, rows, mask = labels.reshape((1, 3)), dev.ones((1, 3)), dev.ones((1, 4)), a > 0.0
reveal_type(x.scatter_add(0, row, src))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(x.index_add(0, [2], rows))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(x.masked_fill(mask, -1e9))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(ops.one_hot(labels, 3))  # R: Tensor[Any, gradtape.tape.NoneTape]

# split / chunk: tuples of tensors on the input's tape
first, *rest = x.split([1, 3], dim=1)
reveal_type(first)  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(x.chunk(2))  # R: tuple[gradtape.tensor.Tensor[Any, gradtape.tape.GradientTape], ...]

# flip / cumsum / cumprod keep the shape type; prod reduces like sum; repeat / tile resize
reveal_type(x.flip(0, 1))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(x.cumsum(1))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(ops.cumprod(a, dim=0))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(x.prod())  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
reveal_type(x.prod(dim=1, keepdim=True))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(x.repeat(2, 1))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(ops.tile(a, (2,)))  # R: Tensor[Any, gradtape.tape.NoneTape]

# var / std take PyTorch's unbiased= (the default stays numpy's correction=0)
reveal_type(a.var(axis=1, unbiased=True))  # R: Tensor[tuple[Literal[3]], gradtape.tape.NoneTape]
