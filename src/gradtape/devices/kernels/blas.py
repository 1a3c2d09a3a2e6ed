"""Matrix products through numpy's BLAS, small ones on one thread.

numpy's OpenBLAS splits even small products over its threads. The split costs more than it
saves below about :data:`SMALL_MACS` multiply-adds, and every multithreaded call leaves
OpenBLAS's workers spinning for a while afterwards (busy-waiting for the next call), so a
training step made of small products kept both cores of the 2-core VM busy (2.0 CPU-seconds
per second against PyTorch's 0.9, issue 17) and, on a loaded machine, ran several times
slower than on one thread. :func:`matmul` runs products below :data:`SMALL_MACS` with
OpenBLAS set to one thread (``openblas_set_num_threads_local``, about 0.4 us per switch and
back) and restores the thread count for the rest; products OpenBLAS runs on one thread
anyway (:data:`OPENBLAS_SERIAL_MACS`) skip the switch.

"Spinning for a while" is 2**28 cycles (about 0.1 s) per multithreaded product by default;
importing gradtape before numpy shortens it to 2**18 (:mod:`gradtape._openblas_env`, which
has the measurements), and :func:`thread_timeout` reports the value in effect.

The count restored is the one numpy's OpenBLAS had when this module was imported (set it
before, e.g. with ``OPENBLAS_NUM_THREADS`` or threadpoolctl, to choose another). With
another BLAS (MKL, Accelerate) or an OpenBLAS without the call, :func:`matmul` is
``np.matmul``.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import onednn as _onednn
from gradtape.devices.kernels import onednn_matmul as _onednn_mm

__all__ = ["OPENBLAS_SERIAL_MACS", "SMALL_MACS", "matmul", "thread_timeout"]

Array = np.ndarray[Any, Any]

SMALL_MACS = 1 << 23
"""Matrix products with fewer multiply-adds (``m * k * n`` of one matrix) than this run on one
BLAS thread. Measured on the idle 2-core VM (float32, numpy's OpenBLAS 0.3.31 on the Haswell
kernels the VM's environment forces, medians),
two threads against one: 0.59x as fast at 0.5M multiply-adds (64x64x128), 0.8-1.1x at 1M,
1.11x at 2M, 1.15-1.22x at 4.2M, 1.4-1.9x at 8.4M, 1.6-2.0x from 67M on. Those one-thread
figures are pessimistic: the VM's two vCPUs share a core, and OpenBLAS's workers still spun
from the two-thread runs, halving the one thread's speed. In a training step (the digits
CNN's 4.7M-multiply-add products) one thread below 8.4M gave the lower wall time with half
the CPU. With numpy's own AVX-512 kernels (session 7) two threads ran the digits CNN's
4.7M products in 0.68x the time, but its step gained 5% for twice the CPU, so the bound
stayed."""


OPENBLAS_SERIAL_MACS = 65536 * 4
"""Products with at most this many multiply-adds OpenBLAS already runs on the calling thread
(``interface/gemm.c``: ``SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD``, 65536 * 4 in its
default build; its matrix-vector bound is higher), so :func:`matmul` calls numpy directly,
without the thread switch (0.8 us of the 2.9 us a 64x128x10 product took)."""


def _openblas() -> ctypes.CDLL | None:
    """numpy's bundled OpenBLAS (the ``numpy.libs`` of a PyPI wheel), or ``None``."""
    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


_LIB = _openblas()
_TIMEOUT = getattr(_LIB, "openblas_thread_timeout", None)  # None without numpy's OpenBLAS
if _TIMEOUT is not None:
    _TIMEOUT.restype = ctypes.c_int


def thread_timeout() -> int | None:
    """The exponent numpy's OpenBLAS loaded with: its workers spin ``2**thread_timeout()``
    cycles after each multithreaded product before they sleep (``OPENBLAS_THREAD_TIMEOUT`` as
    OpenBLAS clamps it to 4-30; 28 when unset). ``None`` where numpy's BLAS is not a bundled
    OpenBLAS. See :mod:`gradtape._openblas_env` for why gradtape sets it."""
    if _TIMEOUT is None:
        return None
    value = int(_TIMEOUT())
    return 28 if value <= 0 else min(30, max(4, value))


def _openblas_setter() -> tuple[Callable[[int], int], int] | None:
    """numpy's OpenBLAS ``openblas_set_num_threads_local`` and its current thread count."""
    setter = getattr(_LIB, "openblas_set_num_threads_local", None)
    if setter is None:
        return None
    setter.restype = ctypes.c_int
    setter.argtypes = [ctypes.c_int]
    current = int(setter(1))  # returns the previous count
    setter(current)
    if current < 1:
        return None
    return setter, current


_SETTER = _openblas_setter()
_SET: Callable[[int], int] | None = None if _SETTER is None or _SETTER[1] == 1 else _SETTER[0]
_THREADS = 1 if _SETTER is None else _SETTER[1]


_F32 = np.dtype(np.float32)


def openblas_core() -> str | None:
    """The core name numpy's OpenBLAS loaded its kernels for (``Haswell``, ``SkylakeX``, ...;
    ``openblas_get_corename``), or ``None`` with another BLAS."""
    for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
        fn = getattr(_LIB, name, None) if _LIB is not None else None
        if fn is not None:
            fn.restype = ctypes.c_char_p
            core = fn()
            return core.decode() if core else None
    return None


AVX512_CORES = frozenset({"SkylakeX", "Cooperlake", "SapphireRapids", "Zen4", "Zen5"})
"""OpenBLAS core names whose kernels use AVX-512 (:func:`openblas_core`): with these,
OpenBLAS keeps the large float32 products."""

_MATMUL_CHOICE: tuple[bool, str] | None = None  # (large float32 products on oneDNN, why)


def matmul_choice() -> tuple[bool, str]:
    """``(use oneDNN, why)`` for large float32 products, decided at the first call and kept
    for the process: ``GRADTAPE_MATMUL`` if set (``onednn``/``openblas``), else oneDNN where it
    runs AVX-512 kernels and OpenBLAS's core (:func:`openblas_core`) is not one of
    :data:`AVX512_CORES` (:mod:`gradtape.devices.kernels.onednn_matmul` has the measurements).

    Raises:
        ValueError: ``GRADTAPE_MATMUL`` is set to something else (the message names it).
    """
    global _MATMUL_CHOICE
    if _MATMUL_CHOICE is None:
        forced = os.environ.get("GRADTAPE_MATMUL", "")
        if forced not in ("", "onednn", "openblas"):
            raise ValueError(f"GRADTAPE_MATMUL={forced!r}: expected 'onednn' or 'openblas'")
        lib, core = _onednn._load(), openblas_core()
        if lib is None:
            _MATMUL_CHOICE = (False, f"OpenBLAS ({core} kernels); {_onednn.info()}")
        elif forced:
            _MATMUL_CHOICE = (forced == "onednn", f"{forced} (GRADTAPE_MATMUL); OpenBLAS core {core}, oneDNN {lib.isa}")
        elif "avx512" in lib.isa and core not in AVX512_CORES:
            _MATMUL_CHOICE = (
                True,
                f"oneDNN {lib.isa} from {_onednn_mm.MIN_MACS} multiply-adds (OpenBLAS runs {core} kernels)",
            )
        else:
            _MATMUL_CHOICE = (False, f"OpenBLAS ({core} kernels; oneDNN would run {lib.isa})")
    return _MATMUL_CHOICE


def matmul_info() -> str:
    """Which library runs large float32 products on this machine, and why (one line, for the
    benchmarks' header): :func:`matmul_choice`'s reason."""
    return matmul_choice()[1]


def matmul(a: Array, b: Array, out: Array | None = None) -> Array:
    """``np.matmul(a, b, out=out)``, on one BLAS thread when each 2-D product has fewer than
    :data:`SMALL_MACS` multiply-adds (see the module docstring). A float32 product of
    ``onednn_matmul.SERIAL_MIN_MACS`` multiply-adds (times the batch) or more runs on oneDNN
    instead where :func:`matmul_choice` picks it (a machine whose OpenBLAS kernels are older
    than its CPU), into ``out`` where given: below ``onednn_matmul.MIN_MACS`` on the calling
    thread alone, from it on oneDNN's threads. numpy runs a batched product
    as one BLAS call per matrix, so the size that matters is one matrix's ``m * k * n``, not
    the batch's. Same shapes, dtypes and errors as numpy's. GPU (CuPy) arrays go to
    ``np.matmul``, which CuPy runs as cuBLAS's ``gemm``."""
    if a.ndim == 0 or b.ndim == 0 or (a.__class__ is not np.ndarray and hasattr(a, "__cuda_array_interface__")):
        if _trace.active is not None:
            _trace.refuse(f"a product {a.shape} @ {b.shape} runs on numpy")
        res: Array = np.matmul(a, b, out=out)
        return res
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    macs = m * a.shape[-1] * n
    if a.dtype is _F32 and b.dtype is _F32 and a.ndim > 1 and b.ndim > 1 and macs:
        total = macs * max(a.size // (m * a.shape[-1]), b.size // (b.shape[-2] * n))
        if total >= _onednn_mm.SERIAL_MIN_MACS and (_MATMUL_CHOICE or matmul_choice())[0]:  # oneDNN where it wins
            res_d = _onednn_mm.matmul(a, b, out, total < _onednn_mm.MIN_MACS)
            if res_d is not None:
                return res_d
    if _trace.active is not None:
        _trace.refuse(f"a product {a.shape} @ {b.shape} runs on numpy's BLAS, which numba cannot call")
    if _SET is None:
        res = np.matmul(a, b, out=out)
        return res
    if macs >= SMALL_MACS or macs <= OPENBLAS_SERIAL_MACS:
        res = np.matmul(a, b, out=out)
        return res
    _SET(1)
    try:
        res = np.matmul(a, b, out=out)
        return res
    finally:
        _SET(_THREADS)
