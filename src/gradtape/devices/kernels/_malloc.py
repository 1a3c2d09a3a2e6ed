"""glibc's malloc thresholds, set once at import so large temporaries stop page-faulting.

Every op returns a new array, and a training step allocates and frees the same large
arrays (activations, gradients, im2col chunks, attention scores: 1-30 MB) step after step.
glibc serves an allocation above ``M_MMAP_THRESHOLD`` with a fresh ``mmap`` and returns it to
the kernel on ``free``; below it, from the heap, which it trims back to the kernel once more
than ``M_TRIM_THRESHOLD`` lies free at its top. Both start low (128 KB) and adapt only up to
32 MB, so on each step many large arrays arrive as untouched pages, and the first write to
each 4 KB page is a page fault, slow in a VM. PyTorch's documentation recommends jemalloc
or tcmalloc (``LD_PRELOAD``) for the same reason, and XLA and TensorFlow pool their buffers.

At import, :func:`tune` sets ``M_MMAP_THRESHOLD`` to :data:`MMAP_THRESHOLD` and
``M_TRIM_THRESHOLD`` to :data:`TRIM_THRESHOLD` with ``mallopt``, so freed memory below 64 MB
is reused without faults and up to 256 MB of free heap stays mapped. Measured on the 2-vCPU
VM, standalone processes (no PyTorch or JAX loaded), two alternating rounds: the d256
transformer training step (benchmarks, workload 9 row 6) 172 -> 135-140 ms and 360-370 ->
270-280 CPU ms; the conv block (row 4) 38-41 -> 36.5-40 ms; peak RSS unchanged (448 MB).

It is left alone (and :data:`TUNED` is False) outside Linux with glibc, when the environment
sets any of glibc's ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or
``MALLOC_TOP_PAD_`` (your choice wins), or with ``GRADTAPE_MALLOC=default``. The settings are
process-wide: other libraries' allocations in the process get them too.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "TUNED", "tune"]

MMAP_THRESHOLD = 64 << 20
"""Bytes from which glibc serves an allocation with its own ``mmap`` (``M_MMAP_THRESHOLD``)."""

TRIM_THRESHOLD = 256 << 20
"""Free bytes at the top of the heap from which glibc returns memory to the kernel
(``M_TRIM_THRESHOLD``)."""

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h> parameter numbers
_M_MMAP_THRESHOLD = -3
_USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def tune() -> bool:
    """Set the two thresholds (see the module docstring); returns whether both were set.
    Never raises: where it cannot or should not, malloc keeps its defaults."""
    if os.environ.get("GRADTAPE_MALLOC", "").strip().lower() == "default":
        return False
    if not sys.platform.startswith("linux") or any(v in os.environ for v in _USER_VARIABLES):
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # musl and others: no glibc mallopt
            return False
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


TUNED: bool = tune()
"""Whether this process runs with gradtape's malloc thresholds."""
