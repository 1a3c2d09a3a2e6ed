"""devices/kernels/blas.py: small products run on one BLAS thread and equal numpy's (large
float32 ones equal float64's within rounding where oneDNN takes them); the thread count comes
back after every product, failed ones included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape.devices.kernels import blas
from gradtape.devices.kernels import onednn_matmul as om

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> int:
    return int(threadpoolctl.threadpool_info()[0]["num_threads"]) if threadpoolctl.threadpool_info() else 1


@pytest.mark.parametrize(
    ("ashape", "bshape"),
    [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (4, 5)),
        ((2, 3, 4), (2, 4, 5)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((512, 512), (512, 64)),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_equal_numpy_and_restore_the_thread_count(ashape: Any, bshape: Any, dtype: Any) -> None:
    r = np.random.default_rng(0)
    a, b = r.standard_normal(ashape).astype(dtype), r.standard_normal(bshape).astype(dtype)
    before = _blas_threads()
    macs = a.shape[-2] * a.shape[-1] * b.shape[-1] if a.ndim > 1 and b.ndim > 1 else 0
    if dtype == np.float32 and macs >= om.SERIAL_MIN_MACS and blas.matmul_choice()[0]:
        # oneDNN's product on this machine (tests/test_onednn_matmul.py): another summation order
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(blas.matmul(a, b), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    else:
        np.testing.assert_array_equal(blas.matmul(a, b), np.matmul(a, b))
    assert _blas_threads() == before


def test_a_failing_product_restores_the_thread_count() -> None:
    before = _blas_threads()
    with pytest.raises(ValueError):
        blas.matmul(np.ones((2, 3)), np.ones((4, 2)))
    assert _blas_threads() == before


def test_small_products_run_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The setter is called with 1 around a small product and with the saved count after;
    a large product, and a tiny one OpenBLAS keeps on one thread itself, do not switch."""
    if blas._SET is None:
        pytest.skip("numpy's BLAS is not a multithreaded OpenBLAS with openblas_set_num_threads_local")
    calls: list[int] = []
    real = blas._SET

    def spy(n: int) -> int:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(blas, "_SET", spy)
    blas.matmul(np.ones((64, 128)), np.ones((128, 64)))  # 524K multiply-adds
    assert calls == [1, blas._THREADS]
    calls.clear()
    blas.matmul(np.ones((64, 64)), np.ones((64, 64)))  # 262K: OpenBLAS's own one-thread bound
    assert calls == []
    blas.matmul(np.ones((256, 256)), np.ones((256, 256)))  # 16.8M multiply-adds
    assert calls == []


def _timeout_in_child(code: str, **env: str) -> str:
    """What ``code`` prints in a fresh interpreter (``OPENBLAS_THREAD_TIMEOUT`` removed from
    the environment, then ``env`` added)."""
    import os
    import subprocess
    import sys

    child = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"} | env
    done = subprocess.run([sys.executable, "-c", code], env=child, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


_REPORT = (
    "from gradtape.devices.kernels import blas; import os; "
    "print(blas.thread_timeout(), os.environ['OPENBLAS_THREAD_TIMEOUT'])"
)


def test_importing_gradtape_first_shortens_openblass_spin() -> None:
    """gradtape's import sets OPENBLAS_THREAD_TIMEOUT=18 before numpy loads OpenBLAS, which
    then reports it; a value the user set wins; imported after numpy, the variable is set
    (for child processes) but this process's OpenBLAS keeps its default 2**28 cycles."""
    if blas.thread_timeout() is None:
        pytest.skip("numpy's BLAS is not its bundled OpenBLAS")
    assert _timeout_in_child("import gradtape; " + _REPORT) == "18 18"
    assert _timeout_in_child("import gradtape; " + _REPORT, OPENBLAS_THREAD_TIMEOUT="6") == "6 6"
    assert _timeout_in_child("import numpy; import gradtape; " + _REPORT) == "28 18"
