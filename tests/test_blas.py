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


def _one_thread_matmul(a: Any, b: Any) -> Any:
    """numpy's own product with its OpenBLAS on one thread: the calls each matrix of a batch gets."""
    assert blas._SETTER is not None
    blas._SETTER[0](1)
    try:
        return np.matmul(a, b)
    finally:
        blas._SETTER[0](blas._THREADS)


def _batch_layouts(dtype: Any) -> list[tuple[str, Any, Any]]:
    r = np.random.default_rng(3)
    q, k = r.standard_normal((6, 4, 128, 64)).astype(dtype), r.standard_normal((6, 4, 96, 64)).astype(dtype)
    v = r.standard_normal((6, 4, 96, 48)).astype(dtype)
    return [
        ("q @ k^T (attention scores)", q, np.swapaxes(k, -1, -2)),
        ("scores @ v", _one_thread_matmul(q, np.swapaxes(k, -1, -2)), v),
        ("q^T @ q (a transposed left operand)", np.swapaxes(q, -1, -2), q[..., :, :40]),
        ("row block of a causal attention", q[..., 32:96, :], np.swapaxes(k[..., :80, :], -1, -2)),
        ("a weight broadcast over the batch", q, v[0, 0, :64, :]),
        ("a batch dim of 1 broadcast", q[:, :1], np.swapaxes(k, -1, -2)),
        ("every other batch entry", q[::2], np.swapaxes(k[::2], -1, -2)),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batches_of_small_products_run_one_matrix_per_thread(monkeypatch: pytest.MonkeyPatch, dtype: Any) -> None:
    """A batch of products each below ``SMALL_MACS`` (attention's per-head products) runs one
    matrix per numba thread, each the same one-thread ``cblas_?gemm`` numpy makes: bit for bit
    numpy's one-thread result, for transposed, broadcast, strided operands and a strided
    ``out=``; OpenBLAS's thread count is back after each."""
    if blas._SET is None or not blas._GEMM[np.dtype(dtype)]:
        pytest.skip("numpy's BLAS is not a multithreaded scipy-openblas64")
    monkeypatch.setattr(blas, "_MATMUL_CHOICE", (False, "OpenBLAS (test)"))
    monkeypatch.setattr(blas, "_PARALLEL_THREADS", lambda: 2)
    ran: list[int] = []
    real = blas._gemm_parallel

    def spy(call: Any, *arrays: Any) -> int:
        ran.append(int(call[11]))
        return int(real(call, *arrays))

    monkeypatch.setattr(blas, "_gemm_parallel", spy)
    before = _blas_threads()
    for name, a, b in _batch_layouts(dtype):
        ran.clear()
        got = blas.matmul(a, b)
        want = _one_thread_matmul(a, b)
        assert ran == [int(np.prod(want.shape[:-2]))], name
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert _blas_threads() == before, name
    a, b = _batch_layouts(dtype)[0][1:]
    out = np.full((6, 4, 128, 200), np.nan, dtype)
    assert blas.matmul(a, b, out=out[..., 10:106]) is not None
    np.testing.assert_array_equal(out[..., 10:106], _one_thread_matmul(a, b))
    assert np.isnan(out[..., :10]).all() and np.isnan(out[..., 106:]).all()


def test_batches_stay_serial_where_they_are_small_or_numpy_takes_another_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``PARALLEL_BATCH_MACS`` in all, with one numba thread, for a matrix-vector batch
    (numpy's ``gemv``) and for ``a @ a^T`` (numpy's ``syrk``), numpy runs the product as before."""
    if blas._SET is None or not blas._GEMM[np.dtype(np.float64)]:
        pytest.skip("numpy's BLAS is not a multithreaded scipy-openblas64")
    ran: list[int] = []
    monkeypatch.setattr(blas, "_gemm_parallel", lambda call, *arrays: ran.append(1))
    monkeypatch.setattr(blas, "_PARALLEL_THREADS", lambda: 2)
    r = np.random.default_rng(4)
    q = r.standard_normal((4, 4, 64, 64))
    cases = [(q[:, :, :16], q[:, :, :, :16]), (q, q[..., :1]), (q, np.swapaxes(q, -1, -2))]
    for a, b in cases:
        np.testing.assert_array_equal(blas.matmul(a, b), _one_thread_matmul(a, b))
    monkeypatch.setattr(blas, "_PARALLEL_THREADS", lambda: 1)
    np.testing.assert_array_equal(blas.matmul(q, q), _one_thread_matmul(q, q))
    assert ran == []


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


def test_empty_and_mismatched_batches_get_numpys_result_or_error() -> None:
    """Batches with a dim of 0, and mismatched core dims, take numpy's path: its empty result
    or its ValueError (not a ZeroDivisionError from counting the batch's matrices)."""
    for ashape, bshape in [((0, 4, 8, 8), (0, 4, 8, 8)), ((2, 4, 0, 8), (2, 4, 8, 8)), ((2, 4, 8, 0), (2, 4, 0, 8))]:
        a, b = np.ones(ashape, np.float32), np.ones(bshape, np.float32)
        np.testing.assert_array_equal(blas.matmul(a, b), np.matmul(a, b))
    with pytest.raises(ValueError):
        blas.matmul(np.ones((4, 64, 64), np.float32), np.ones((4, 0, 64), np.float32))
