"""What one fused-kernel launch costs the host on the Cuda device, three ways, for the Adam
update of a 1024x1024 float32 parameter (``python benchmarks/gpu_launch.py``; needs a GPU):

- ``numba-cuda, CuPy arrays``: gradtape's kernel as it runs today (numba-cuda types every
  CuPy argument through DLPack at each launch);
- ``numba-cuda, cached views``: the same kernel given numba device arrays made once per buffer
  (``cuda.as_cuda_array``), the gradient's view made per launch;
- ``CuPy ElementwiseKernel``: the same formula compiled by CuPy (NVRTC), launched from CuPy's
  Cython dispatcher.

Each figure is the median host time per launch over 200 launches without synchronising
(the launch cost the host pays), then the time per launch with the GPU's work included.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    _root = Path(__file__).resolve().parents[1]
    sys.path[0] = str(_root)
    sys.path.insert(1, str(_root / "src"))


def _per_launch(fn: Callable[[], object], sync: Callable[[], object], n: int = 200) -> tuple[float, float]:
    fn()
    sync()
    host = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        host.append((time.perf_counter() - t0) / n)
        sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return statistics.median(host) * 1e6, (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    import cupy as cp
    import numpy as np
    from numba import cuda as ncuda

    from gradtape.devices.kernels import cuda as kc

    rng = cp.random.default_rng(0)
    p, g, m, v = (rng.standard_normal(1 << 20, dtype=cp.float32) for _ in range(4))
    v = cp.abs(v)
    sync = cp.cuda.Device().synchronize
    t = np.float32

    def numba_cupy() -> None:
        kc.adam_step(p, g, m, v, None, 1e-3 / (1 - 0.9**3), 0.9, 0.999, 1e-8, 0.0, 1.0, (1 - 0.999**3) ** 0.5)

    views = [ncuda.as_cuda_array(a) for a in (p, m, v)]
    kernel = kc.adam_step_kernel
    blocks, threads = kc._launch(p.size)
    args = (t(0.1), t(0.999), t(0.001), t(1e-8), t(0.0), t(1.0), t(1e-3), t(0.05))

    def numba_views() -> None:
        kernel[blocks, threads](views[0], ncuda.as_cuda_array(g), views[1], views[2], views[2], *args, 0)

    ek = cp.ElementwiseKernel(
        "T g, T a1, T b2, T a2, T eps, T wd, T decay, T ss, T bc",
        "T p, T m, T v",
        """
        T x = p * decay;
        T gi = wd != 0 ? g + wd * x : g;
        T mi = m + a1 * (gi - m);
        T vi = b2 * v + a2 * gi * gi;
        m = mi; v = vi;
        p = x - ss * (mi / (sqrt(vi) / bc + eps));
        """,
        "gradtape_adam",
    )

    def cupy_kernel() -> None:
        ek(g, *args, p, m, v)

    for name, fn in (
        ("numba-cuda, CuPy arrays", numba_cupy),
        ("numba-cuda, cached views", numba_views),
        ("CuPy ElementwiseKernel", cupy_kernel),
    ):
        host, total = _per_launch(fn, sync)
        print(f"{name:28s} host {host:7.1f} us/launch   with the GPU's work {total:7.1f} us/launch")


if __name__ == "__main__":
    main()
