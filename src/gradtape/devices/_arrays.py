"""Which memory an array lives in: numpy (the CPU) or CuPy (a CUDA GPU), for the few places
in the tape machinery that allocate or convert arrays themselves.

Ops written with numpy's functions run on CuPy arrays unchanged: CuPy implements numpy's
dispatch protocols (NEP 13 ``__array_ufunc__``, NEP 18 ``__array_function__``), so
``np.exp(x)``, ``np.matmul(a, b)`` and ``np.sum(x, axis=1)`` on CuPy arrays run CuPy's GPU
kernels and return CuPy arrays. What numpy cannot dispatch is *allocation from a shape*
(``np.zeros(shape)``) and *conversion* (``np.asarray(x)``, which CuPy refuses rather than copy
to the host silently): those go through the helpers here. This module imports nothing of
gradtape and CuPy only when a CuPy array is met.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "as_array",
    "copy",
    "is_device_spec",
    "on_gpu",
    "ones",
    "resolve_device",
    "same_device",
    "writeable",
    "zeros",
]

Array = np.ndarray[Any, Any]
_nd = np.ndarray


def as_array(v: Any, dtype: Any = None) -> Array:
    """``np.asarray(v, dtype)`` that keeps a GPU array on its GPU: a numpy scalar (a ufunc's
    result on 0-d arrays), a list or a number becomes a numpy array; a CuPy array stays a CuPy
    array (converted to ``dtype`` there, if given)."""
    if dtype is None:
        if v.__class__ is _nd or hasattr(v, "__cuda_array_interface__"):
            return v  # type: ignore[no-any-return]
        return np.asarray(v)
    if v.__class__ is not _nd and hasattr(v, "__cuda_array_interface__"):
        return v.astype(dtype, copy=False)  # type: ignore[no-any-return]
    return np.asarray(v, dtype)


def copy(a: Any, dtype: Any = None) -> Array:
    """A copy of ``a`` (numpy's ``np.array(a, dtype, copy=True)``) in ``a``'s own memory."""
    if a.__class__ is _nd or not hasattr(a, "__cuda_array_interface__"):
        return np.array(a, dtype=dtype, copy=True)
    return a.astype(a.dtype if dtype is None else dtype, copy=True)  # type: ignore[no-any-return]


def writeable(a: Any) -> bool:
    """Whether ``a``'s memory may be written through it: numpy's ``flags.writeable``; always
    True for a GPU array (CuPy has no read-only arrays)."""
    if a.__class__ is not _nd and hasattr(a, "__cuda_array_interface__"):
        return True
    return bool(a.flags.writeable)


def on_gpu(a: Any) -> bool:
    """Whether ``a`` is a GPU array (CuPy's: it exposes ``__cuda_array_interface__``), the
    test every CPU kernel wrapper makes before handing the array to the ``Cuda`` device's
    kernels (:mod:`gradtape.devices.kernels.cuda`)."""
    return a is not None and a.__class__ is not _nd and hasattr(a, "__cuda_array_interface__")


def _gpu_call(like: Any, name: str, *args: Any, **kwargs: Any) -> Array:
    """CuPy's ``name(*args, **kwargs)`` on ``like``'s GPU."""
    import cupy

    with like.device:
        return getattr(cupy, name)(*args, **kwargs)  # type: ignore[no-any-return]


def zeros(shape: tuple[int, ...], dtype: Any, like: Any) -> Array:
    """Zeros of ``shape`` and ``dtype`` in the memory ``like`` lives in (``None``: the CPU)."""
    return _gpu_call(like, "zeros", shape, dtype) if on_gpu(like) else np.zeros(shape, dtype)


def ones(shape: tuple[int, ...], dtype: Any, like: Any) -> Array:
    """Ones of ``shape`` and ``dtype`` in the memory ``like`` lives in (``None``: the CPU)."""
    return _gpu_call(like, "ones", shape, dtype) if on_gpu(like) else np.ones(shape, dtype)


def same_device(a: Any, b: Any) -> bool:
    """Whether two devices hold memory in one place: the same object, two ``Cuda`` objects of
    one GPU, or two ``Cpu`` objects (host memory is one; their generators differ)."""
    if a is b:
        return True
    ta, tb = getattr(a, "type", "cpu"), getattr(b, "type", "cpu")
    if ta != tb:
        return False
    return bool(ta == "cpu" or a == b)


def is_device_spec(spec: object) -> bool:
    """Whether ``spec`` names a device: a ``Cpu`` or ``Cuda`` object, PyTorch's device
    strings (``"cpu"``, ``"cuda"``, ``"cuda:1"``) or an object with such a ``type`` and an
    ``index`` (a ``torch.device``)."""
    if isinstance(spec, str):
        return spec.split(":")[0] in ("cpu", "cuda")
    kind = getattr(spec, "type", None)
    return isinstance(kind, str) and kind in ("cpu", "cuda")


_RESOLVER: list[Any] = []
"""``gradtape.devices.default.as_device``, registered when that module loads (the tensor class
sits below the devices and cannot import it)."""


def resolve_device(op: str, spec: object) -> Any:
    """The device object ``spec`` names (``"cpu"``, ``"cuda:1"``, a device): see
    :func:`gradtape.devices.default.as_device`, which this calls.

    Raises:
        ValueError, TypeError, RuntimeError: as ``as_device``.
    """
    return _RESOLVER[0](op, spec)  # registered by ``import gradtape`` (which loads devices.default)


def contiguous(a: Any, dtype: Any = None) -> Array:
    """``np.ascontiguousarray(a, dtype)`` that keeps a GPU array on its GPU."""
    if a.__class__ is not _nd and hasattr(a, "__cuda_array_interface__"):
        return a.astype(a.dtype if dtype is None else dtype, order="C", copy=False)  # type: ignore[no-any-return]
    return np.ascontiguousarray(a, dtype=dtype)


def arange(n: int, like: Any, dtype: Any = None) -> Array:
    """``np.arange(n, dtype)`` in the memory ``like`` lives in (numpy's ``like=`` does not
    reach CuPy 14 under numpy 2.5: it passes a ``device`` argument CuPy refuses)."""
    return _gpu_call(like, "arange", n, dtype=dtype) if on_gpu(like) else np.arange(n, dtype=dtype)


def full(shape: tuple[int, ...], value: Any, dtype: Any, like: Any) -> Array:
    """``np.full(shape, value, dtype)`` in the memory ``like`` lives in."""
    return _gpu_call(like, "full", shape, value, dtype) if on_gpu(like) else np.full(shape, value, dtype)


def empty(shape: tuple[int, ...], dtype: Any, like: Any) -> Array:
    """``np.empty(shape, dtype)`` in the memory ``like`` lives in (``None``: the CPU)."""
    return _gpu_call(like, "empty", shape, dtype) if on_gpu(like) else np.empty(shape, dtype)


def into_memory_of(a: Any, like: Any) -> Array:
    """``a`` in the memory ``like`` lives in: a host array copied to ``like``'s GPU, a GPU
    array copied to the host, or ``a`` itself when it is there already."""
    host_like = like.__class__ is _nd or not hasattr(like, "__cuda_array_interface__")
    host_a = a.__class__ is _nd or not hasattr(a, "__cuda_array_interface__")
    if host_like == host_a:
        return a  # type: ignore[no-any-return]
    if host_like:
        return a.get()  # type: ignore[no-any-return]
    import cupy

    with like.device:
        return cupy.asarray(a)  # type: ignore[no-any-return]
