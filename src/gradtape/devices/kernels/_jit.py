"""The one place gradtape calls ``numba.njit``.

Kernels compile lazily on first call and are cached on disk (``cache=True``) so a
second process loads them in milliseconds. If no cache location is writable, numba
raises when the decorator runs; :func:`jit` then compiles without a cache, so that
importing gradtape never fails for that reason (see shared/KERNELS.md).

Threads: importing this module sets ``OMP_WAIT_POLICY=PASSIVE`` unless the environment
already sets it. numba's parallel kernels run on its OpenMP layer, whose workers otherwise
spin-wait after every kernel and take the cores OpenBLAS needs for the next matmul: on a
2-core VM, a BLAS product alternating with a parallel kernel (a transformer's training
step does this all the time) measured 8-40 ms per pair with spinning workers and 0.7 ms
with passive ones. The setting only reaches OpenMP runtimes loaded after it (numba starts
its threads at the first parallel kernel); to be sure, set it in the environment.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numba

F = TypeVar("F", bound=Callable[..., Any])

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["jit"]


def jit(*, parallel: bool = False) -> Callable[[F], F]:
    """Decorate a kernel with ``numba.njit(cache=True, nogil=True, error_model='numpy')``.

    Args:
        parallel: compile with ``parallel=True`` (for ``numba.prange`` loops over large arrays).

    Falls back to ``cache=False`` (with a :class:`RuntimeWarning`) where numba finds no
    writable cache location.
    """

    def decorate(fn: F) -> F:
        opts: dict[str, Any] = {"nogil": True, "error_model": "numpy", "parallel": parallel}
        try:
            return numba.njit(cache=True, **opts)(fn)
        except Exception as err:  # numba raises RuntimeError when no cache locator fits
            warnings.warn(
                f"gradtape: numba cannot cache {fn.__name__} ({err}); compiling without a cache",
                RuntimeWarning,
                stacklevel=2,
            )
            return numba.njit(cache=False, **opts)(fn)

    return decorate
