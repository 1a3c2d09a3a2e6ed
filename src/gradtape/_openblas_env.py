"""``OPENBLAS_THREAD_TIMEOUT``: how long numpy's OpenBLAS workers spin after a product, set
before numpy loads OpenBLAS.

After every multithreaded product, each OpenBLAS worker busy-waits (a loop of ``nop``) for
``2**OPENBLAS_THREAD_TIMEOUT`` CPU cycles before it sleeps: 2**28 by default, about 0.1 s
(``driver/others/blas_server.c``). gradtape alternates products with numba kernels, which
then share the cores with a thread doing nothing: on the 2-vCPU VM a numba kernel right after
a product ran at half speed (2.2 ms alone, 4.9 ms after one). In the model benchmark (issue
17, workload 9, PyTorch and JAX in the same process; medians of single runs, session 8) the
conv block's training step took 34.0-41.3 ms in four runs with 18 or 4 (three of them
34-35 ms) against 36.6-52.5 ms in four with the default, the d64 transformer 5.0-7.4 against
6.8-7.5 ms, and the d256 transformer 243-253 CPU-ms per step against 280-301 (wall time
137-142 against 139-152 ms); the other rows did not move. 4 and 18 measured the same; 2**18
cycles (about 0.1 ms at 2.5 GHz) still covers back-to-back products in one pass, where a
worker woken from sleep for each would add its wake-up to each.

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
