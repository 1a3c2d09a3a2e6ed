"""The ``Device`` protocol: what a backend provides to tensors and backward closures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from gradtape.tape import NoneTape
    from gradtape.tensor import Tensor

__all__ = ["Device"]

SI = TypeVar("SI", bound=tuple[int, ...])
S = TypeVar("S")
Array = np.ndarray[Any, Any]


class Device(Protocol):
    """A backend: allocates and samples tensors and runs the fused kernels.

    Shapes are tuples of ints; dtypes are float32 (the default) or float64. Creation
    methods return untraced tensors (``Tensor[S, NoneTape]``) whose shape type is the
    ``shape`` argument's type, so ``dev.zeros((3, 4))`` assigned to
    ``Tensor[Rank2[L[3], L[4]], NoneTape]`` type-checks and ``dev.zeros((3, 5))`` does not.
    """

    def tensor(
        self, data: npt.ArrayLike, dtype: npt.DTypeLike | None = None, requires_grad: bool = False
    ) -> Tensor[Any, NoneTape]:
        """A tensor holding a copy of ``data`` (nested lists or an array), a leaf that
        requires grad with ``requires_grad=True`` (``torch.tensor``'s dtype inference)."""
        ...

    def zeros(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of zeros."""
        ...

    def ones(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of ones."""
        ...

    def randn(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """Samples of the standard normal distribution."""
        ...

    def rand(
        self, shape: SI, low: float = 0.0, high: float = 1.0, dtype: npt.DTypeLike = np.float32
    ) -> Tensor[SI, NoneTape]:
        """Samples of the uniform distribution on ``[low, high)``."""
        ...

    def full(self, shape: SI, fill_value: float, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor filled with ``fill_value`` (``torch.full``)."""
        ...

    def randint(self, low: int, high: int, size: SI, dtype: npt.DTypeLike = np.int64) -> Tensor[SI, NoneTape]:
        """Integers drawn uniformly from ``[low, high)`` (``torch.randint``)."""
        ...

    def arange(
        self, start: float, end: float | None = None, step: float = 1, dtype: npt.DTypeLike | None = None
    ) -> Tensor[tuple[int], NoneTape]:
        """``[start, end)`` by ``step`` (``torch.arange``)."""
        ...

    def zeros_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Zeros with ``t``'s shape and dtype."""
        ...

    def ones_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Ones with ``t``'s shape and dtype."""
        ...

    def randn_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """N(0, 1) samples with ``t``'s shape and dtype."""
        ...

    def rand_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Uniform ``[0, 1)`` samples with ``t``'s shape and dtype."""
        ...

    def addmul(self, out: Array, a: Array, b: Array) -> None:
        """``out += a * b`` in one pass, in place."""
        ...

    def axpy(self, out: Array, alpha: float, x: Array) -> None:
        """``out += alpha * x`` in one pass, in place."""
        ...

    def fill(self, out: Array, value: float) -> None:
        """Set every element of ``out`` to ``value``."""
        ...

    def copy(self, out: Array, src: Array) -> None:
        """Copy ``src`` into ``out``."""
        ...
