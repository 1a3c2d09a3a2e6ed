"""The ``Cpu`` device: numpy arrays, numba kernels, a seeded random generator."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import DTypeError
from gradtape.tape import NONE_TAPE, NoneTape
from gradtape.tensor import Tensor

__all__ = ["Cpu", "as_float_dtype"]

SI = TypeVar("SI", bound=tuple[int, ...])
Array = np.ndarray[Any, Any]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def as_float_dtype(dtype: npt.DTypeLike, op: str = "tensor") -> np.dtype[Any]:
    """Normalise ``dtype`` to ``np.dtype(float32)`` or ``np.dtype(float64)``.

    Raises:
        DTypeError: any other dtype (gradtape differentiates float32 and float64 tensors).
    """
    dt = np.dtype(dtype)
    if dt not in _FLOATS:
        raise DTypeError(f"{op}: dtype {dt} is not supported; use float32 or float64")
    return dt


def _shape(op: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(isinstance(n, (int, np.integer)) and n >= 0 for n in shape):
        raise TypeError(f"{op}: shape must be a tuple of non-negative ints, got {shape!r}")
    return tuple(int(n) for n in shape)


class Cpu:
    """The CPU device: tensors are numpy arrays, fused kernels are compiled with numba.

    Args:
        seed: seed of the device's random generator (numpy's PCG64), so ``randn`` and
            ``rand`` give the same samples on every run.

    All creation methods default to float32 and accept ``dtype=np.float64``.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def __repr__(self) -> str:
        return f"Cpu(seed={self.seed})"

    def _wrap(self, data: Array) -> Tensor[Any, NoneTape]:
        return Tensor(data, self, NONE_TAPE)

    def tensor(self, data: npt.ArrayLike, dtype: npt.DTypeLike | None = None) -> Tensor[Any, NoneTape]:
        """A new untraced tensor holding a copy of ``data``.

        Args:
            data: nested lists of numbers, a numpy array, or a tensor.
            dtype: float32 or float64; by default ``data``'s own dtype when it is a float32
                or float64 numpy array, else float32 (as ``torch.tensor``).

        Raises:
            DTypeError: ``dtype`` (or ``data``'s dtype) is neither float32 nor float64.
        """
        if dtype is None and type(data) is np.ndarray:  # the common case: a float batch
            dt = data.dtype
            if dt is _FLOATS[0] or dt is _FLOATS[1]:
                return self._wrap(data.copy())
        if isinstance(data, Tensor):
            data = data.data
        given = isinstance(data, (np.ndarray, np.generic))
        arr = np.asarray(data)
        if arr.dtype.kind not in "biuf":
            raise DTypeError(f"tensor: cannot make a float tensor from dtype {arr.dtype}")
        if dtype is None:
            dtype = arr.dtype if given and arr.dtype in _FLOATS else np.float32
        return self._wrap(np.array(arr, dtype=as_float_dtype(dtype), copy=True, order="C"))

    def zeros(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of zeros of ``shape`` (a tuple of ints) and ``dtype``."""
        return self._wrap(np.zeros(_shape("zeros", shape), as_float_dtype(dtype, "zeros")))

    def ones(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of ones of ``shape`` (a tuple of ints) and ``dtype``."""
        return self._wrap(np.ones(_shape("ones", shape), as_float_dtype(dtype, "ones")))

    def randn(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """Samples of the standard normal distribution N(0, 1), from the device's generator."""
        dt = as_float_dtype(dtype, "randn")
        return self._wrap(self.rng.standard_normal(_shape("randn", shape), dtype=dt))

    def rand(
        self, shape: SI, low: float = 0.0, high: float = 1.0, dtype: npt.DTypeLike = np.float32
    ) -> Tensor[SI, NoneTape]:
        """Samples of the uniform distribution on ``[low, high)``, from the device's generator."""
        dt = as_float_dtype(dtype, "rand")
        u = self.rng.random(_shape("rand", shape), dtype=dt)
        if low != 0.0 or high != 1.0:
            u = (u * dt.type(high - low) + dt.type(low)).astype(dt, copy=False)
        return self._wrap(u)

    addmul = staticmethod(_k.addmul)
    axpy = staticmethod(_k.axpy)
    fill = staticmethod(_k.fill)
    copy = staticmethod(_k.copy)
