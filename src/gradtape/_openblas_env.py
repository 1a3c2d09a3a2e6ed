"""``OPENBLAS_THREAD_TIMEOUT``: how long numpy's OpenBLAS workers spin after a product, set
before numpy loads OpenBLAS.

After every multithreaded product, each OpenBLAS worker busy-waits (a loop of ``nop``) for
``2**OPENBLAS_THREAD_TIMEOUT`` CPU cycles before it sleeps: 2**28 by default, about 0.1 s
(``driver/others/blas_server.c``). gradtape alternates products with numba kernels, which
then share the cores with a thread doing nothing: on the 2-vCPU VM a numba kernel right after
a product ran at half speed (2.2 ms alone, 4.9 ms after one). In the model benchmark (issue
17, workload 9, one run each, PyTorch and JAX in the same process) the conv block's training
step took 50.6 ms (99 CPU-ms) with the default and 34.0 ms (67 CPU-ms) with 18, the d64
transformer 7.1 against 5.0 ms, the d256 transformer 139 against 137 ms (280 against 245
CPU-ms); 4 measured the same as 18 (34.8 and 5.6 ms). 2**18 cycles (about 0.1 ms at 2.5 GHz)
still covers back-to-back products in one pass.

OpenBLAS reads the variable once, when the library loads (``import numpy``). Importing
gradtape sets it to :data:`DEFAULT` unless the environment already sets it (your value wins,
e.g. 28 for OpenBLAS's own default); it takes effect in this process only when gradtape is
imported before numpy, and in every child process started after. Otherwise set it in the
environment before starting Python. :func:`gradtape.devices.kernels.blas.thread_timeout`
tells which value numpy's OpenBLAS loaded with. This module imports nothing but ``os``, so
that ``gradtape/__init__.py`` can run it before anything imports numpy.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT", "VARIABLE"]

VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
DEFAULT = "18"
"""The exponent set: workers spin for 2**18 cycles after a product, then sleep."""

os.environ.setdefault(VARIABLE, DEFAULT)
