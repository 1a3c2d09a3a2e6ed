"""einops' backend for gradtape tensors: ``einops.rearrange``, ``reduce``, ``repeat``, ``pack``
and ``unpack`` take gradtape tensors and record on the tape like any other op.

einops finds a backend by subclassing its ``AbstractBackend`` (its documented extension point,
the one its numpy, torch and jax backends use): the class is created when gradtape is
imported, and einops picks it for any ``gradtape.Tensor`` (``framework_name`` is the package
name einops looks up in ``sys.modules``). Every method maps to a recorded gradtape op
(reshape, permute, the reductions, stack, concat, expand_dims and broadcast_to), so the
results are differentiable, to any order, with the ops' own gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from einops._backends import AbstractBackend

from gradtape.devices import Cpu
from gradtape.ops.einsum import einsum
from gradtape.ops.shape import broadcast_to, concat, expand_dims, stack
from gradtape.tensor import Tensor

__all__ = ["GradtapeBackend"]


class GradtapeBackend(AbstractBackend):
    """einops' operations on gradtape tensors (see the module docstring).

    Raises:
        NotImplementedError: the reductions ``any``/``all`` (gradtape has no boolean
            reductions) and ``prod`` where gradtape has none.
    """

    framework_name = "gradtape"

    def is_appropriate_type(self, tensor: Any) -> bool:
        return isinstance(tensor, Tensor)

    def from_numpy(self, x: np.ndarray[Any, Any]) -> Tensor[Any, Any]:
        t = Cpu().tensor(x)
        return t.requires_grad_() if t.dtype.kind == "f" else t

    def to_numpy(self, x: Tensor[Any, Any]) -> np.ndarray[Any, Any]:
        return x.numpy()

    def arange(self, start: int, stop: int) -> Tensor[Any, Any]:
        return Cpu().tensor(np.arange(start, stop, dtype=np.int64))

    def shape(self, x: Tensor[Any, Any]) -> tuple[int, ...]:
        return tuple(x.shape)

    def reshape(self, x: Tensor[Any, Any], shape: tuple[int, ...]) -> Tensor[Any, Any]:
        return x.reshape(tuple(shape))

    def transpose(self, x: Tensor[Any, Any], axes: tuple[int, ...]) -> Tensor[Any, Any]:
        return x.permute(tuple(axes))

    def reduce(self, x: Tensor[Any, Any], operation: str, axes: tuple[int, ...]) -> Tensor[Any, Any]:
        fn = getattr(x, operation, None) if operation in ("sum", "mean", "max", "min", "prod") else None
        if fn is None:
            raise NotImplementedError(f"einops reduce: gradtape tensors have no '{operation}' reduction")
        out: Tensor[Any, Any] = fn(axis=tuple(axes))
        return out

    def stack_on_zeroth_dimension(self, tensors: list[Tensor[Any, Any]]) -> Tensor[Any, Any]:
        return stack(tensors, axis=0)

    def add_axis(self, x: Tensor[Any, Any], new_position: int) -> Tensor[Any, Any]:
        return expand_dims(x, new_position)

    def add_axes(self, x: Tensor[Any, Any], n_axes: int, pos2len: dict[int, int]) -> Tensor[Any, Any]:
        """New axes of the given lengths, as a broadcast (no copy; the gradient sums them)."""
        for pos in sorted(pos2len):
            x = expand_dims(x, pos)
        shape = list(x.shape)
        for pos, n in pos2len.items():
            shape[pos] = n
        return broadcast_to(x, tuple(shape))

    def tile(self, x: Tensor[Any, Any], repeats: tuple[int, ...]) -> Tensor[Any, Any]:
        """``np.tile``: each axis ``i`` of size ``d`` becomes ``r * d`` (the whole axis repeated),
        as a broadcast of ``(1, d)`` to ``(r, d)`` reshaped to ``r * d``."""
        inter: list[int] = []
        for d in x.shape:
            inter += [1, d]
        y = x.reshape(tuple(inter))
        target: list[int] = []
        for r, d in zip(repeats, x.shape, strict=True):
            target += [r, d]
        return broadcast_to(y, tuple(target)).reshape(tuple(r * d for r, d in zip(repeats, x.shape, strict=True)))

    def concat(self, tensors: list[Tensor[Any, Any]], axis: int) -> Tensor[Any, Any]:
        return concat(tensors, axis=axis)

    def is_float_type(self, x: Tensor[Any, Any]) -> bool:
        return bool(x.dtype.kind == "f")

    def layers(self) -> Any:
        from gradtape.nn import rearrange

        return rearrange

    def einsum(self, pattern: str, *x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return einsum(pattern, *x)
