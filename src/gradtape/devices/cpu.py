"""The ``Cpu`` device: numpy arrays, numba kernels, a seeded random generator."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import DTypeError
from gradtape.tape import NONE_TAPE, NoneTape
from gradtape.tensor import Tensor

if TYPE_CHECKING:
    from gradtape.devices.base import Device

__all__ = ["Cpu", "SupportsDLPack", "as_float_dtype", "from_dlpack"]

SI = TypeVar("SI", bound=tuple[int, ...])
S = TypeVar("S")
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


def _check_interop_dtype(op: str, dt: np.dtype[Any], shape: tuple[int, ...]) -> None:
    """Accept the dtypes a gradtape tensor may hold: float32/float64 (differentiable), bool
    and signed or unsigned integers (masks and indices, never differentiated), in native
    byte order; raise ``DTypeError`` naming ``op`` and the dtype otherwise."""
    if dt.isnative and (dt in _FLOATS or dt.kind in "biu"):
        return
    why = "non-native byte order" if dt.kind in "biuf" and not dt.isnative else "not supported"
    raise DTypeError(
        f"{op}: dtype {dt} (shape {shape}) is {why}; gradtape tensors hold float32 or float64 "
        "(differentiable), bool or integer arrays: convert first (numpy: x.astype(np.float32), "
        "torch: x.float(), JAX: x.astype(jnp.float32))"
    )


# DLPack's device types (dlpack.h, DLDeviceType); numpy reads the host-accessible ones.
_DL_DEVICES = {
    1: "CPU",
    2: "CUDA",
    3: "CUDAHost",
    4: "OpenCL",
    7: "Vulkan",
    8: "Metal",
    9: "VPI",
    10: "ROCM",
    11: "ROCMHost",
    12: "ExtDev",
    13: "CUDAManaged",
    14: "OneAPI",
    15: "WebGPU",
    16: "Hexagon",
    17: "MAIA",
}
_DL_HOST = frozenset({1, 3, 11, 13})


class SupportsDLPack(Protocol):
    """An array exporting DLPack capsules (the Python array API's ``__dlpack__``): torch
    tensors, numpy arrays, JAX arrays, gradtape tensors, CuPy arrays, ..."""

    def __dlpack__(self, /, *, stream: Any = None) -> Any: ...


@overload
def from_dlpack(x: Tensor[S, Any], device: Device | None = None) -> Tensor[S, NoneTape]: ...
@overload
def from_dlpack(x: SupportsDLPack, device: Device | None = None) -> Tensor[Any, NoneTape]: ...
def from_dlpack(x: SupportsDLPack, device: Device | None = None) -> Tensor[Any, NoneTape]:
    """A new untraced leaf tensor sharing the memory of ``x``, any array that implements the
    DLPack protocol (``__dlpack__`` / ``__dlpack_device__``): a torch tensor, a numpy array, a
    JAX array, a gradtape tensor.

    The import is ``np.from_dlpack(x)``: no data is copied, whatever the layout. The tensor
    has ``x``'s shape, dtype and strides (a transposed or sliced torch tensor stays a strided
    view, as gradtape's own ``permute`` and ``transpose`` outputs are: ops take strided
    arrays, and the numba kernels fall back to numpy for them), a new id, ``NONE_TAPE`` and no history: no
    gradient flows from it back to ``x`` (trace it, ``from_dlpack(x).trace(grads)``, to
    differentiate with respect to it; backward writes gradients into buffers of its own,
    never into ``x``). Writes through ``x`` (``x.add_(1)`` in PyTorch) are visible in the
    tensor and the other way round, so do not change ``x`` while a traced pass that read the
    tensor is still to be differentiated. A buffer the producer marks read-only (every JAX
    array; numpy's read-only arrays) gives a read-only array: ops read it, but an optimizer
    cannot update it in place (make it a parameter with ``Cpu.tensor``, which copies).

    Args:
        x: the array, on the CPU (DLPack device ``kDLCPU``, or host-accessible memory:
            ``kDLCUDAHost``, ``kDLCUDAManaged``, ``kDLROCMHost``), of any shape, with dtype
            float32 or float64 (differentiable tensors), bool or a signed or unsigned
            integer dtype (masks and indices; never differentiated, as in
            :mod:`gradtape.autodiff`).
        device: the device of the new tensor; by default ``x``'s own device when ``x`` is a
            gradtape tensor, else a new ``Cpu()``.

    Returns:
        ``Tensor[Any, NoneTape]`` (for a gradtape tensor ``Tensor[S, NoneTape]`` with its shape
        type), ``is_leaf`` and ``requires_grad == False``.

    Raises:
        TypeError: ``x`` does not implement ``__dlpack__`` (copy nested lists with
            ``Cpu.tensor``).
        BufferError: ``x`` lives in memory the CPU cannot read (a CUDA, ROCm, Metal, ...
            device): move it to the CPU first (``x.cpu()`` in PyTorch,
            ``jax.device_put(x, jax.devices("cpu")[0])`` in JAX), or the producer refuses
            to export it (PyTorch refuses a tensor that requires grad: pass ``x.detach()``).
        DTypeError: ``x``'s dtype is none of the above (float16, bfloat16, complex, ...);
            the message names ``from_dlpack`` and the dtype.
    """
    if not hasattr(type(x), "__dlpack__"):
        raise TypeError(
            f"from_dlpack: expected an array implementing __dlpack__ (a torch tensor, a numpy array, "
            f"a JAX array), got {type(x).__name__}; use Cpu.tensor(data) to copy other data"
        )
    dl_device = getattr(x, "__dlpack_device__", None)
    if dl_device is not None:
        kind, index = dl_device()
        if int(kind) not in _DL_HOST:
            name = _DL_DEVICES.get(int(kind), "unknown")
            raise BufferError(
                f"from_dlpack: the array lives on device {name}:{int(index)} (DLPack device type {int(kind)}); "
                "gradtape tensors live in CPU memory: move it to the CPU first "
                '(torch: x.cpu(), JAX: jax.device_put(x, jax.devices("cpu")[0]))'
            )
    try:
        data = np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError) as e:
        if "dtype" not in str(e).lower():
            raise
        # numpy cannot represent the dtype at all (bfloat16, float8 ...)
        raise DTypeError(
            f"from_dlpack: dtype {getattr(x, 'dtype', '?')} is not supported; gradtape tensors hold float32 "
            "or float64 (differentiable), bool or integer arrays: convert first (torch: x.float())"
        ) from e
    _check_interop_dtype("from_dlpack", data.dtype, data.shape)
    if device is None:
        device = x.device if isinstance(x, Tensor) else Cpu()
    return Tensor(data, device, NONE_TAPE)


def _randint_args(low: object, high: object, dtype: npt.DTypeLike) -> np.dtype[Any]:
    """Check ``randint``'s bounds and dtype (every device's) and return the dtype.

    Raises:
        TypeError: ``low``/``high`` not ints. ValueError: ``high <= low``.
        DTypeError: ``dtype`` is not an integer dtype.
    """
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"randint: {name} must be an int, got {type(v).__name__} {v!r}")
    if high <= low:  # type: ignore[operator]
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise DTypeError(f"randint: dtype {dt} is not an integer dtype")
    return dt


def _rand_args(low: object, high: object, dtype: npt.DTypeLike) -> np.dtype[Any]:
    """Check ``rand``'s bounds and dtype (every device's) and return the float dtype.

    Raises:
        TypeError: ``low`` or ``high`` is not a real number. DTypeError: not float32/float64.
    """
    for name, v in (("low", low), ("high", high)):
        if not isinstance(v, (int, float, np.integer, np.floating, np.bool_)):
            raise TypeError(f"rand: {name} must be a real number, got {type(v).__name__} {v!r}")
    return as_float_dtype(dtype, "rand")


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

    Raises:
        TypeError: ``seed`` is not an int.
    """

    def __init__(self, seed: int = 0) -> None:
        if not isinstance(seed, (int, np.integer)):
            raise TypeError(f"Cpu: seed must be an int, got {type(seed).__name__} {seed!r}")
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    type = "cpu"
    """PyTorch's ``device.type``."""

    def reseed(self, seed: int) -> None:
        """Reseed this device's generator with ``seed`` (numpy's PCG64), as
        :func:`gradtape.manual_seed` does: the same draws as a ``Cpu(seed)`` made now.

        Raises:
            TypeError: ``seed`` is not an int (a bool included).
        """
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"Cpu.reseed: seed must be an int, got {type(seed).__name__} {seed!r}")
        self.seed = int(seed)
        self.rng = np.random.default_rng(int(seed))

    def __repr__(self) -> str:
        return f"Cpu(seed={self.seed})"

    def __str__(self) -> str:
        return "cpu"

    @staticmethod
    def _put(arr: Any) -> Array:
        """``arr`` in host memory: a GPU (CuPy) array is copied to a numpy array; a numpy
        array is returned as it is."""
        return _arrays.into_memory_of(arr, None)

    def _wrap(self, data: Array) -> Tensor[Any, NoneTape]:
        return Tensor(data, self, NONE_TAPE)

    def _drawn(self, draw: Callable[[], Array]) -> Tensor[Any, NoneTape]:
        """A tensor of random numbers ``draw()`` gives; inside a call :func:`gradtape.capture`
        records, a draw each replay repeats (fresh numbers from the device's generator)."""
        t = self._wrap(draw())
        if _tp._recorder is not None:
            _tp._recorder.drawn(t, draw)
        return t

    def tensor(
        self, data: npt.ArrayLike, dtype: npt.DTypeLike | None = None, requires_grad: bool = False
    ) -> Tensor[Any, NoneTape]:
        """A new leaf tensor holding a copy of ``data`` (PyTorch's ``torch.tensor``).

        Args:
            data: nested lists of numbers, a numpy array or scalar, a tensor, or another array
                numpy reads (a torch or JAX array).
            dtype: float32, float64, bool or an integer dtype: ``data`` is converted to it
                (floats to integers truncate, as ``torch.tensor(x, dtype=torch.int64)``). By
                default as ``torch.tensor`` infers it: an array (or tensor) keeps its dtype, in
                native byte order; Python floats give float32, Python ints int64, Python bools
                bool. Nothing is converted silently: an array of a float dtype gradtape does not
                compute in (float16, long double) raises instead of becoming float32.
            requires_grad: make it a leaf that requires grad (PyTorch's ``requires_grad=True``,
                :meth:`Tensor.requires_grad_`): every op on it records while grad mode is on and
                ``backward()`` fills its ``.grad``. Float dtypes only.

        Raises:
            DTypeError: ``data`` holds complex numbers, strings or objects; ``data`` is a
                float16 or long double array and no ``dtype`` is given (pass
                ``dtype=np.float32`` to convert); ``dtype`` is none of the above; or
                ``requires_grad`` for a bool or integer tensor. The message names ``tensor``
                and the dtype.
            ValueError, TypeError: numpy cannot read ``data`` as an array (ragged lists, a
                torch bfloat16 tensor); the message names ``tensor``.
        """
        if dtype is None and type(data) is np.ndarray:  # the common case: a float batch
            dt = data.dtype
            if dt is _FLOATS[0] or dt is _FLOATS[1]:
                t = self._wrap(data.copy())
                return t.requires_grad_() if requires_grad else t
        if isinstance(data, Tensor):
            data = data.data
        if _arrays.on_gpu(data):  # a GPU array (CuPy's): copied to the host
            data = self._put(data)
        # an array or a numpy scalar carries its own dtype; Python numbers and lists do not
        typed = isinstance(data, np.generic) or not isinstance(data, (list, tuple, int, float, bool))
        try:
            arr = np.asarray(data)
        except (TypeError, ValueError) as e:
            raise type(e)(f"tensor: cannot read {type(data).__name__} as an array: {e}") from e
        adt = arr.dtype
        kind = adt.kind
        if kind not in "biuf":
            why = (
                "complex numbers are not supported (take x.real or abs(x) first)"
                if kind == "c"
                else "gradtape tensors hold float32/float64, bool or integer values"
            )
            raise DTypeError(f"tensor: cannot make a tensor from dtype {adt} (shape {arr.shape}); {why}")
        if dtype is None:
            if kind == "f":
                if adt.itemsize not in (4, 8):  # float16, long double: gradtape computes in float32/float64
                    raise DTypeError(
                        f"tensor: data has dtype {adt} (shape {arr.shape}); gradtape computes in float32 or float64 "
                        "and does not convert silently: pass dtype=np.float32 (or np.float64) to convert"
                    )
                dt = adt.newbyteorder("=") if typed else np.dtype(np.float32)
            elif kind == "b" or typed:
                dt = adt.newbyteorder("=")  # bool, or an array's own integer dtype
            else:
                dt = np.dtype(np.int64)  # Python ints, as torch.tensor([1, 2]) is int64
        else:
            dt = np.dtype(dtype)
            if dt.kind not in "biu":
                dt = as_float_dtype(dt)
        t = self._wrap(np.array(arr, dtype=dt, copy=True, order="C"))
        return t.requires_grad_() if requires_grad else t

    def from_numpy(self, array: Array) -> Tensor[Any, NoneTape]:
        """A new untraced leaf tensor on this device holding ``array`` itself: no copy (as
        ``torch.from_numpy``; :meth:`tensor` copies).

        The tensor shares the array's memory, shape, dtype and strides (a non-C-contiguous
        array stays a strided view, as gradtape's own ``permute`` and ``transpose`` outputs
        are: ops take strided arrays). Writes to the array are visible in the
        tensor and the other way round: changing the array while a traced pass that read the
        tensor is still to be differentiated changes what backward computes, and an
        optimizer updating the tensor as a parameter updates the array in place. A read-only
        array gives a tensor the optimizers refuse to update. ``t.data`` is ``array`` (for an
        ndarray subclass such as ``np.matrix``, a plain ``np.ndarray`` view of it).

        Args:
            array: a numpy array of any shape, dtype float32 or float64 (differentiable
                tensors), bool or a signed or unsigned integer dtype (masks and indices, never
                differentiated, as in :mod:`gradtape.autodiff`), in native byte order.

        Returns:
            ``Tensor[Any, NoneTape]`` with a new id, ``is_leaf``; trace it to differentiate.

        Raises:
            TypeError: ``array`` is not a numpy array (use :meth:`tensor` to copy lists, or
                :func:`from_dlpack` for torch and JAX arrays).
            DTypeError: any other dtype (float16, complex, object, a non-native byte order);
                the message names ``from_numpy`` and the dtype.
        """
        if not isinstance(array, np.ndarray):
            raise TypeError(
                f"from_numpy: expected a numpy array, got {type(array).__name__}; use Cpu.tensor(data) to copy it, "
                "or gradtape.from_dlpack for torch and JAX arrays"
            )
        _check_interop_dtype("from_numpy", array.dtype, array.shape)
        data = array if type(array) is np.ndarray else array.view(np.ndarray)
        return self._wrap(data)

    def zeros(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of zeros of ``shape`` (a tuple of ints) and ``dtype``."""
        return self._wrap(np.zeros(_shape("zeros", shape), as_float_dtype(dtype, "zeros")))

    def ones(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of ones of ``shape`` (a tuple of ints) and ``dtype``."""
        return self._wrap(np.ones(_shape("ones", shape), as_float_dtype(dtype, "ones")))

    def randn(self, shape: SI, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """Samples of the standard normal distribution N(0, 1), from the device's generator."""
        dt = as_float_dtype(dtype, "randn")
        return self._drawn(functools.partial(_normal, self, _shape("randn", shape), dt))

    def rand(
        self, shape: SI, low: float = 0.0, high: float = 1.0, dtype: npt.DTypeLike = np.float32
    ) -> Tensor[SI, NoneTape]:
        """Samples of the uniform distribution on ``[low, high)``, from the device's generator.

        Raises:
            TypeError: ``low`` or ``high`` is not a real number (a complex, a string).
            DTypeError: ``dtype`` is not float32 or float64.
        """
        dt = _rand_args(low, high, dtype)
        return self._drawn(functools.partial(_uniform, self, _shape("rand", shape), dt, low, high))

    def randint(self, low: int, high: int, size: SI, dtype: npt.DTypeLike = np.int64) -> Tensor[SI, NoneTape]:
        """Integers drawn uniformly from ``[low, high)`` (PyTorch's ``torch.randint(low, high,
        size)``), from the device's generator; int64 by default, so the result indexes, serves
        as class targets and embedding ids.

        Raises:
            TypeError: ``low``/``high`` not integers, or ``size`` not a tuple of ints.
            ValueError: ``high <= low``.
            DTypeError: ``dtype`` is not an integer dtype.
        """
        dt = _randint_args(low, high, dtype)
        return self._drawn(functools.partial(_integers, self, low, high, _shape("randint", size), dt))

    def arange(
        self,
        start: float,
        end: float | None = None,
        step: float = 1,
        dtype: npt.DTypeLike | None = None,
    ) -> Tensor[tuple[int], NoneTape]:
        """``[start, start + step, ...)`` up to ``end`` (exclusive), PyTorch's ``torch.arange``:
        ``arange(n)`` is ``0 .. n-1``. The dtype is int64 when every argument is an int and
        float32 otherwise, unless ``dtype`` is given (float32, float64 or an integer dtype).

        Raises:
            TypeError: an argument is not a real number.
            ValueError: ``step`` is 0.
            DTypeError: ``dtype`` is not float32, float64 or an integer dtype.
        """
        if end is None:
            start, end = 0, start
        for name, v in (("start", start), ("end", end), ("step", step)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"arange: {name} must be a real number, got {type(v).__name__} {v!r}")
        if step == 0:
            raise ValueError("arange: step must be nonzero")
        dt: np.dtype[Any]
        if dtype is None:
            ints = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
            dt = np.dtype(np.int64) if ints else np.dtype(np.float32)
        else:
            dt = np.dtype(dtype)
            if dt.kind not in "iu":
                dt = as_float_dtype(dt, "arange")
        return self._wrap(np.arange(start, end, step).astype(dt))

    def full(self, shape: SI, fill_value: float, dtype: npt.DTypeLike = np.float32) -> Tensor[SI, NoneTape]:
        """A tensor of ``shape`` filled with ``fill_value`` (PyTorch's ``torch.full``), float32
        by default; ``dtype`` may be float32, float64, bool or an integer dtype.

        Raises:
            TypeError: ``shape`` is not a tuple of ints, or ``fill_value`` is not a real number.
            DTypeError: any other dtype.
        """
        if isinstance(fill_value, complex) or not isinstance(fill_value, (int, float, np.integer, np.floating)):
            raise TypeError(f"full: fill_value must be a real number, got {type(fill_value).__name__} {fill_value!r}")
        dt = np.dtype(dtype)
        if dt.kind not in "biu":
            dt = as_float_dtype(dt, "full")
        return self._wrap(np.full(_shape("full", shape), fill_value, dt))

    def zeros_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """A tensor of zeros with ``t``'s shape and dtype (PyTorch's ``torch.zeros_like``)."""
        return self._wrap(np.zeros_like(np.asarray(t.data)))

    def ones_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """A tensor of ones with ``t``'s shape and dtype (PyTorch's ``torch.ones_like``)."""
        return self._wrap(np.ones_like(np.asarray(t.data)))

    def randn_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """N(0, 1) samples with ``t``'s shape and float dtype (PyTorch's ``torch.randn_like``).

        Raises:
            DTypeError: ``t`` is not float32 or float64.
        """
        a = np.asarray(t.data)
        return self._drawn(functools.partial(_normal, self, a.shape, as_float_dtype(a.dtype, "randn_like")))

    def rand_like(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Uniform ``[0, 1)`` samples with ``t``'s shape and float dtype (``torch.rand_like``).

        Raises:
            DTypeError: ``t`` is not float32 or float64.
        """
        a = np.asarray(t.data)
        return self._drawn(functools.partial(_uniform, self, a.shape, as_float_dtype(a.dtype, "rand_like"), 0.0, 1.0))

    addmul = staticmethod(_k.addmul)
    axpy = staticmethod(_k.axpy)
    fill = staticmethod(_k.fill)
    copy = staticmethod(_k.copy)


def _normal(dev: Cpu, shape: tuple[int, ...], dt: np.dtype[Any]) -> Array:
    """N(0, 1) samples from ``dev``'s generator (looked up at each draw: a reseeded device's)."""
    out: Array = dev.rng.standard_normal(shape, dtype=dt)
    return out


def _uniform(dev: Cpu, shape: tuple[int, ...], dt: np.dtype[Any], low: float, high: float) -> Array:
    """``U[low, high)`` samples from ``dev``'s generator in ``dt``."""
    u: Array = dev.rng.random(shape, dtype=dt)
    if low != 0.0 or high != 1.0:
        u = (u * dt.type(high - low) + dt.type(low)).astype(dt, copy=False)
    return u


def _integers(dev: Cpu, low: int, high: int, shape: tuple[int, ...], dt: np.dtype[Any]) -> Array:
    """Integers uniform on ``[low, high)`` from ``dev``'s generator."""
    out: Array = dev.rng.integers(low, high, shape, dtype=dt)
    return out
