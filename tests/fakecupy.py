"""A CPU stand-in for CuPy, as strict as CuPy about host and device memory, for testing the
``Cuda`` device without a GPU (tests/test_cuda.py runs on it in CI, under numba-cuda's
simulator).

Its arrays wrap numpy arrays and behave as CuPy's do where gradtape could go wrong:

- ``np.asarray(x)`` / ``np.array(x)`` raise CuPy's ``TypeError`` ("Implicit conversion to a
  NumPy array is not allowed"): no silent copy to the host;
- a numpy ufunc or function given a device array and a host array (not a scalar) raises
  CuPy's ``TypeError`` ("Unsupported type <class 'numpy.ndarray'>");
- a numba CPU kernel given one fails to type it (numba-cuda kernels take it: it exposes
  ``__cuda_array_interface__``, and the simulator indexes it);
- a 0-d numpy array is refused as a ufunc operand (numpy scalars are taken), and numpy's
  ``like=`` (NEP 35) fails for the creation functions, as CuPy 14 under numpy 2.5 does;
- reductions and indexing return 0-d arrays, not numpy scalars; ``flags`` has no
  ``writeable``; ``.get()`` copies to the host; ``.device`` is a context manager.

What it cannot check: which numpy functions CuPy lacks (the stand-in computes every one with
numpy), CuPy's own rounding, and speed. The GPU run (tests/test_cuda.py on a real GPU) does.

``install()`` puts it in ``sys.modules["cupy"]``; call it before anything imports CuPy.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

_MSG_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."
)


def _unwrap(x: Any) -> Any:
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):  # 0-d arrays too (CuPy takes numpy scalars, not arrays)
        raise TypeError(f"Unsupported type {type(x)}")
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):  # CuPy returns 0-d arrays where numpy returns scalars
        return ndarray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class _Flags:
    """CuPy's ``ndarray.flags``: three read-only booleans, no ``writeable`` (CuPy has no
    read-only arrays), and no other attribute can be set (CuPy's is a Cython class)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a: np.ndarray[Any, Any]) -> None:
        self.c_contiguous = bool(a.flags.c_contiguous)
        self.f_contiguous = bool(a.flags.f_contiguous)
        self.owndata = bool(a.flags.owndata)


class _Device:
    def __init__(self, i: int = 0) -> None:
        self.id = i

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def synchronize(self) -> None:
        return None


class ndarray(NDArrayOperatorsMixin):  # CuPy's name
    """A device array: a numpy array that refuses to mix with host arrays."""

    __slots__ = ("__weakref__", "_a")

    def __init__(self, a: np.ndarray[Any, Any]) -> None:
        self._a = a

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return dict(self._a.__array_interface__, version=3)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError(_MSG_IMPLICIT)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "at":  # not relied on: gradtape calls cupy.add.at itself (kernels/cuda.add_at)
            return NotImplemented
        args = _unwrap(inputs)
        kw = _unwrap(kwargs)
        out = kwargs.get("out")
        r = getattr(ufunc, method)(*args, **kw)
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _wrap(r)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if "device" in kwargs:  # numpy 2.5 passes like='s device=None on: CuPy 14's creation functions refuse it
            raise TypeError(f"{func.__name__}() got an unexpected keyword argument 'device'")
        r = func(*_unwrap(args), **_unwrap(kwargs))
        out = kwargs.get("out")
        if out is not None:
            return out
        return _wrap(r)

    # ----- the attributes gradtape reads ---------------------------------------------------

    @property
    def flags(self) -> _Flags:
        return _Flags(self._a)

    @property
    def device(self) -> _Device:
        return _Device(0)

    @property
    def base(self) -> Any:
        return None if self._a.base is None else _wrap(self._a.base)

    @property
    def T(self) -> ndarray:
        return ndarray(self._a.T)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._a.shape)

    @shape.setter
    def shape(self, value: tuple[int, ...]) -> None:
        self._a.shape = value

    @property
    def dtype(self) -> np.dtype[Any]:
        dt: np.dtype[Any] = self._a.dtype
        return dt

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def strides(self) -> tuple[int, ...]:
        return self._a.strides

    @property
    def itemsize(self) -> int:
        return self._a.itemsize

    @property
    def nbytes(self) -> int:
        return self._a.nbytes

    def get(self) -> np.ndarray[Any, Any]:
        return self._a.copy()

    def item(self) -> Any:
        return self._a.item()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # no __array_interface__ / __array_struct__: numpy must not read it
            raise AttributeError(name)
        v = getattr(self._a, name)
        if callable(v):

            def method(*args: Any, **kwargs: Any) -> Any:
                return _wrap(v(*_unwrap(args), **_unwrap(kwargs)))

            return method
        return _wrap(v)

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._a[_unwrap(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._a[_unwrap(key)] = _unwrap(value)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return (_wrap(v) for v in self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __index__(self) -> int:
        return int(self._a)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __repr__(self) -> str:
        return f"fakecupy.array({self._a!r})"

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise BufferError("fakecupy: no DLPack export")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __reduce__(self) -> Any:
        return (ndarray, (self._a,))

    def __deepcopy__(self, memo: Any) -> ndarray:
        return ndarray(self._a.copy())


def _host(x: Any) -> Any:
    return x._a if isinstance(x, ndarray) else x


def install() -> types.ModuleType:
    """Make ``import cupy`` give the stand-in (with ``cupy.cuda``, ``cupy.random``)."""
    cp = types.ModuleType("cupy")
    cp.__version__ = "fake"  # type: ignore[attr-defined]
    cp.ndarray = ndarray  # type: ignore[attr-defined]

    def array(x: Any, dtype: Any = None, copy: bool = True, order: str = "K") -> ndarray:
        return ndarray(np.array(_host(x), dtype=dtype, copy=True, order=order))  # type: ignore[call-overload]

    def asarray(x: Any, dtype: Any = None) -> ndarray:
        if isinstance(x, ndarray) and (dtype is None or x.dtype == dtype):
            return x
        return ndarray(np.array(_host(x), dtype=dtype, copy=True))

    def creator(fn: Any) -> Any:
        return lambda *a, **k: ndarray(fn(*[_host(v) for v in a], **k))

    for name in ("zeros", "ones", "empty", "full", "arange", "eye"):
        setattr(cp, name, creator(getattr(np, name)))
    for name in ("zeros_like", "ones_like", "empty_like", "full_like"):
        setattr(cp, name, creator(getattr(np, name)))
    cp.array = array  # type: ignore[attr-defined]
    cp.asarray = asarray  # type: ignore[attr-defined]
    cp.asnumpy = lambda x: _host(x).copy()  # type: ignore[attr-defined]
    cp.get_array_module = lambda *a: cp  # type: ignore[attr-defined]

    shuffle = np.random.default_rng(0)

    def add_at(a: ndarray, key: Any, values: Any) -> None:  # cupy.add.at
        # atomic adds on a GPU land in whatever order the threads get there: the picks are
        # added here in a new random order at every call, so float sums of repeated indices
        # differ in the last bits between calls, as they can on a GPU
        host = a._a
        picked = np.arange(host.size).reshape(host.shape)[_unwrap(key)]
        vals = np.broadcast_to(_unwrap(values), picked.shape).reshape(-1)
        perm = shuffle.permutation(picked.size)
        flat = host.reshape(-1).copy()
        np.add.at(flat, picked.reshape(-1)[perm], vals[perm])
        host[...] = flat.reshape(host.shape)

    cp.add = types.SimpleNamespace(at=add_at)  # type: ignore[attr-defined]
    for name in ("float32", "float64", "int64", "int32", "bool_"):
        setattr(cp, name, getattr(np, name))

    class _Rng:
        def __init__(self, seed: int) -> None:
            self.g = np.random.default_rng(seed)

        def standard_normal(self, size: Any, dtype: Any = np.float64) -> ndarray:
            return ndarray(self.g.standard_normal(size, dtype=dtype))

        def random(self, size: Any, dtype: Any = np.float64) -> ndarray:
            return ndarray(self.g.random(size, dtype=dtype))

        def integers(self, low: int, high: int, size: Any, dtype: Any = np.int64) -> ndarray:
            return ndarray(self.g.integers(low, high, size, dtype=dtype))

    random = types.ModuleType("cupy.random")
    random.default_rng = _Rng  # type: ignore[attr-defined]
    cp.random = random  # type: ignore[attr-defined]
    cuda = types.ModuleType("cupy.cuda")
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.getDeviceCount = lambda: 1  # type: ignore[attr-defined]
    runtime.getDeviceProperties = lambda i: {"name": b"fakecupy (CPU)"}  # type: ignore[attr-defined]
    cuda.runtime = runtime  # type: ignore[attr-defined]
    cuda.Device = _Device  # type: ignore[attr-defined]
    cp.cuda = cuda  # type: ignore[attr-defined]
    import math

    special = types.ModuleType("cupyx.scipy.special")
    special.erf = lambda x: ndarray(np.vectorize(math.erf, otypes=[x.dtype])(x._a))  # type: ignore[attr-defined]
    special.erfc = lambda x: ndarray(np.vectorize(math.erfc, otypes=[x.dtype])(x._a))  # type: ignore[attr-defined]
    cupyx = types.ModuleType("cupyx")

    def scatter_add(a: ndarray, slices: Any, value: Any) -> None:
        np.add.at(a._a, _unwrap(slices), _unwrap(value))

    cupyx.scatter_add = scatter_add  # type: ignore[attr-defined]
    scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy = scipy  # type: ignore[attr-defined]
    scipy.special = special  # type: ignore[attr-defined]
    sys.modules.update({"cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special})
    sys.modules["cupy"] = cp
    sys.modules["cupy.random"] = random
    sys.modules["cupy.cuda"] = cuda
    return cp
