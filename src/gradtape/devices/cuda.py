"""The ``Cuda`` device: tensors in an NVIDIA GPU's memory as CuPy arrays, fused kernels
written with numba-cuda, products through cuBLAS (dfdx's ``Cuda`` beside its ``Cpu``).

How an op runs on it: gradtape's ops are written with numpy's functions, and CuPy implements
numpy's dispatch protocols (NEP 13 and NEP 18), so ``np.exp``, ``np.matmul``, ``np.sum`` and
the rest run CuPy's GPU kernels on CuPy arrays (``np.matmul`` is cuBLAS's ``gemm``) and return
CuPy arrays. The fused kernels the backward closures and the optimizers call (``addmul``,
``axpy``, ReLU's backward, the SGD and Adam updates) dispatch to numba-cuda kernels
(:mod:`gradtape.devices.kernels.cuda`) that compute the CPU kernels' formulas. Nothing moves
between the host and the GPU unless asked (``Tensor.cpu()``, ``.item()``, ``.numpy()`` refuses
a GPU tensor): CuPy refuses an implicit host copy, so an op that still calls a CPU-only path
fails loudly instead of copying silently.

Install with ``pip install gradtape[cuda]`` (CuPy for CUDA 13 and numba-cuda). Without them, or
without a GPU, ``Cuda()`` raises ``RuntimeError`` naming what is missing; nothing else in
gradtape imports CuPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from gradtape.tape import NONE_TAPE, NoneTape
from gradtape.tensor import Tensor

if TYPE_CHECKING:
    from gradtape.devices.cpu import Cpu

__all__ = ["Cuda", "cuda_available"]

SI = TypeVar("SI", bound=tuple[int, ...])
S = TypeVar("S")
Array = Any


def _import_cupy(op: str) -> Any:
    try:
        import cupy
    except ImportError as e:
        raise RuntimeError(
            f"{op}: the CUDA device needs CuPy and numba-cuda, which are not installed: "
            f"pip install 'gradtape[cuda]' ({e})"
        ) from e
    return cupy


def cuda_available() -> bool:
    """Whether ``Cuda()`` can be made here: CuPy and numba-cuda import and CUDA sees a GPU
    (PyTorch's ``torch.cuda.is_available``). Never raises."""
    try:
        import cupy
        import numba.cuda  # noqa: F401

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


class Cuda:
    """An NVIDIA GPU as a gradtape device: tensors hold CuPy arrays in its memory.

    Args:
        device_id: the CUDA device ordinal (``Cuda(1)`` is PyTorch's ``"cuda:1"``).
        seed: seed of the device's random generator (CuPy's ``default_rng``, XORWOW): the
            GPU's random numbers differ from the ``Cpu`` device's for the same seed.

    Devices compare equal when they are the same GPU (``Cuda(0) == Cuda(0)``), so tensors
    made through two ``Cuda(0)`` objects combine. Creation methods mirror
    :class:`~gradtape.devices.cpu.Cpu`'s (float32 by default, ``dtype=np.float64``); a model
    built on the CPU moves with ``model.to("cuda")`` and a tensor with ``t.to("cuda")`` /
    ``t.cuda()``.

    Raises:
        RuntimeError: CuPy or numba-cuda is not installed (``pip install gradtape[cuda]``),
            CUDA sees no GPU, or ``device_id`` is not one of its GPUs (the message says which).
        TypeError: ``device_id`` or ``seed`` is not an int.
    """

    type = "cuda"
    """PyTorch's ``device.type``."""

    def __init__(self, device_id: int = 0, seed: int = 0) -> None:
        for name, v in (("device_id", device_id), ("seed", seed)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"Cuda: {name} must be an int, got {type(v).__name__} {v!r}")
        cp = _import_cupy("Cuda")
        try:
            import numba.cuda  # noqa: F401
        except ImportError as e:
            raise RuntimeError(f"Cuda: numba-cuda is not installed: pip install 'gradtape[cuda]' ({e})") from e
        try:
            n = int(cp.cuda.runtime.getDeviceCount())
        except Exception as e:  # no driver, no device: CUDARuntimeError
            raise RuntimeError(f"Cuda: CUDA finds no GPU here ({type(e).__name__}: {e})") from e
        if not 0 <= int(device_id) < n:
            raise RuntimeError(f"Cuda: no GPU {device_id}; CUDA sees {n} GPU(s), numbered 0 to {n - 1}")
        self.index = int(device_id)
        self.seed = int(seed)
        self._cp = cp
        self._device = cp.cuda.Device(self.index)
        with self._device:
            self.rng = cp.random.default_rng(self.seed)

    def reseed(self, seed: int) -> None:
        """Reseed this device's generator with ``seed`` (CuPy's ``default_rng``), as
        :func:`gradtape.manual_seed` and :func:`gradtape.cuda.manual_seed` do.

        Raises:
            TypeError: ``seed`` is not an int.
        """
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"Cuda.reseed: seed must be an int, got {type(seed).__name__} {seed!r}")
        with self._device:
            self.rng = self._cp.random.default_rng(int(seed))
        self.seed = int(seed)

    # ----- identity ----------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"Cuda({self.index})"

    def __str__(self) -> str:
        return f"cuda:{self.index}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cuda) and other.index == self.index

    def __hash__(self) -> int:
        return hash(("cuda", self.index))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Cuda, (self.index, self.seed))

    # ----- moving arrays -----------------------------------------------------------------

    def _put(self, arr: Any) -> Array:
        """``arr`` (a numpy array, or a CuPy array on any GPU) as a CuPy array on this GPU: a
        copy unless it is already here."""
        cp = self._cp
        if isinstance(arr, cp.ndarray) and arr.device.id == self.index:
            return arr
        with self._device:
            if isinstance(arr, cp.ndarray):
                return arr.copy()
            return cp.asarray(arr)

    def _wrap(self, data: Array) -> Tensor[Any, NoneTape]:
        return Tensor(data, self, NONE_TAPE)

    def _host(self) -> Cpu:
        from gradtape.devices.cpu import Cpu

        return Cpu(self.seed)

    # ----- creation ----------------------------------------------------------------------

    def tensor(
        self, data: npt.ArrayLike, dtype: npt.DTypeLike | None = None, requires_grad: bool = False
    ) -> Tensor[Any, NoneTape]:
        """A new leaf tensor on this GPU holding a copy of ``data`` (``torch.tensor(data,
        device="cuda")``): nested lists, a numpy array, a CuPy array, a tensor of either
        device. Dtypes are inferred and checked as :meth:`Cpu.tensor` does.

        Raises:
            DTypeError, ValueError, TypeError: as :meth:`gradtape.devices.cpu.Cpu.tensor`.
        """
        cp = self._cp
        if isinstance(data, Tensor):
            data = data.data
        if isinstance(data, cp.ndarray):
            host_like = np.empty((0,), data.dtype)  # dtype rules without copying the values off the GPU
            dt = self._host().tensor(host_like, dtype).dtype
            with self._device:
                t = self._wrap(cp.array(data, dtype=dt, copy=True, order="C"))
        else:
            t = self._wrap(self._put(self._host().tensor(data, dtype).data))
        return t.requires_grad_() if requires_grad else t

    def zeros(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of zeros of ``shape`` (a tuple of ints) and ``dtype`` on this GPU."""
        from gradtape.devices.cpu import _shape, as_float_dtype

        with self._device:
            return self._wrap(self._cp.zeros(_shape("zeros", shape), as_float_dtype(dtype, "zeros")))

    def ones(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of ones of ``shape`` (a tuple of ints) and ``dtype`` on this GPU."""
        from gradtape.devices.cpu import _shape, as_float_dtype

        with self._device:
            return self._wrap(self._cp.ones(_shape("ones", shape), as_float_dtype(dtype, "ones")))

    def randn(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """Samples of N(0, 1) from this device's generator, on this GPU."""
        from gradtape.devices.cpu import _shape, as_float_dtype

        dt = as_float_dtype(dtype, "randn")
        with self._device:
            return self._wrap(self.rng.standard_normal(_shape("randn", shape), dtype=dt))

    def rand(
        self, shape: SI, low: float = 0.0, high: float = 1.0, dtype: npt.DTypeLike = np.float32
    ) -> Tensor[SI, NoneTape]:
        """Samples of the uniform distribution on ``[low, high)`` from this device's generator.

        Raises:
            TypeError: ``low`` or ``high`` is not a real number. DTypeError: not a float dtype.
        """
        from gradtape.devices.cpu import _rand_args, _shape

        dt = _rand_args(low, high, dtype)
        with self._device:
            u = self.rng.random(_shape("rand", shape), dtype=dt)
            if low != 0.0 or high != 1.0:
                u = (u * dt.type(high - low) + dt.type(low)).astype(dt, copy=False)
        return self._wrap(u)

    def randint(self, low: int, high: int, size: SI, dtype: npt.DTypeLike = np.int64) -> Tensor[SI, NoneTape]:
        """Integers drawn uniformly from ``[low, high)`` (``torch.randint``), on this GPU.

        Raises:
            TypeError, ValueError, DTypeError: as :meth:`gradtape.devices.cpu.Cpu.randint`.
        """
        from gradtape.devices.cpu import _randint_args, _shape

        dt = _randint_args(low, high, dtype)
        with self._device:
            return self._wrap(self.rng.integers(low, high, _shape("randint", size), dtype=dt))

    def arange(
        self, start: float, end: float | None = None, step: float = 1, dtype: npt.DTypeLike | None = None
    ) -> Tensor[tuple[int], NoneTape]:
        """``torch.arange`` on this GPU (rules and errors as :meth:`Cpu.arange`)."""
        return self._wrap(self._put(self._host().arange(start, end, step, dtype).data))

    def full(self, shape: SI, fill_value: float, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """``torch.full`` on this GPU (rules and errors as :meth:`Cpu.full`)."""
        from gradtape.devices.cpu import _shape

        host = self._host().full((), fill_value, dtype).data  # validates the value and dtype
        with self._device:
            return self._wrap(self._cp.full(_shape("full", shape), host[()], host.dtype))

    def zeros_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Zeros with ``t``'s shape and dtype on this GPU."""
        with self._device:
            return self._wrap(self._cp.zeros(t.shape, t.dtype))

    def ones_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Ones with ``t``'s shape and dtype on this GPU."""
        with self._device:
            return self._wrap(self._cp.ones(t.shape, t.dtype))

    def randn_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """N(0, 1) samples with ``t``'s shape and float dtype on this GPU.

        Raises:
            DTypeError: ``t`` is not float32 or float64.
        """
        out: Tensor[S, NoneTape] = self.randn(t.shape, t.dtype)  # type: ignore[assignment]  # t's shape type
        return out

    def rand_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Uniform ``[0, 1)`` samples with ``t``'s shape and float dtype on this GPU.

        Raises:
            DTypeError: ``t`` is not float32 or float64.
        """
        out: Tensor[S, NoneTape] = self.rand(t.shape, dtype=t.dtype)  # type: ignore[assignment]  # t's shape type
        return out

    # ----- the Device protocol's fused kernels --------------------------------------------

    @staticmethod
    def addmul(out: Array, a: Array, b: Array) -> None:
        """``out += a * b`` in one numba-cuda pass (:func:`gradtape.devices.kernels.cuda.addmul`)."""
        from gradtape.devices.kernels import cuda as _k

        _k.addmul(out, a, b)

    @staticmethod
    def axpy(out: Array, alpha: float, x: Array) -> None:
        """``out += alpha * x`` in one numba-cuda pass (:func:`gradtape.devices.kernels.cuda.axpy`)."""
        from gradtape.devices.kernels import cuda as _k

        _k.axpy(out, alpha, x)

    @staticmethod
    def fill(out: Array, value: float) -> None:
        """Set every element of ``out`` to ``value``, on the GPU."""
        out.fill(value)

    @staticmethod
    def copy(out: Array, src: Array) -> None:
        """Copy ``src`` (broadcasting to ``out.shape``) into ``out``, on the GPU."""
        out[...] = src
