"""Issue 31: the ``Cuda`` device's numba-cuda kernels, run on the CPU by numba-cuda's simulator.

numba chooses the simulator when ``numba.cuda`` is first imported, from
``NUMBA_ENABLE_CUDASIM=1``, for the whole process. So the main test run starts this file once
more in a child process with that variable set (``test_the_kernels_under_the_simulator``), and
the tests below run there (or directly: ``NUMBA_ENABLE_CUDASIM=1 python -m pytest
tests/test_cuda_kernels.py``).

Each kernel is compared with the CPU device's kernel on the same arrays (the formulas are the
same, so float64 results agree to the last bit but for contraction, float32 to 1 ulp), with
arrays larger than one block and with the grid-stride loop forced (one block of 32 threads).

What the simulator cannot check: speed, and warp-level behaviour (it runs every thread as a
Python thread, with no warps and no concurrency between blocks); nor whether the GPU's
compiler contracts ``a * b + c`` into one fused multiply-add (the simulator computes in numpy,
as the CPU does). Those are checked on a real GPU by tests/test_cuda.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

Array = np.ndarray[Any, Any]


def _child_pytest(test: Path, **env: str) -> str:
    """Run the test file ``test`` in a child pytest with ``env`` added; return its summary line
    after checking that it passed (a module skipped whole, for want of numba-cuda or the
    stand-in, would report no test passed)."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=str(test.parent),
    )
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert " passed" in summary, r.stdout[-2000:]
    return summary


def test_the_kernels_under_the_simulator() -> None:
    """Run this file's kernel tests in a child process under numba-cuda's simulator."""
    if SIMULATED:
        pytest.skip("this is the child run")
    pytest.importorskip("numba.cuda")
    _child_pytest(Path(__file__), NUMBA_ENABLE_CUDASIM="1")


def test_the_gpu_suite_on_cupys_cpu_stand_in() -> None:
    """tests/test_cuda.py, the GPU suite, on tests/fakecupy.py (CuPy's CPU stand-in, as strict as
    CuPy about host and device memory) with the numba-cuda kernels in the simulator: every op
    row, training against the CPU device, moves and errors, in a child process."""
    if SIMULATED:
        pytest.skip("this is the child run")
    pytest.importorskip("numba.cuda")
    from gradtape.devices.cuda import cuda_available

    if cuda_available():
        pytest.skip("a real GPU is here: tests/test_cuda.py runs on it instead")
    summary = _child_pytest(Path(__file__).with_name("test_cuda.py"), NUMBA_ENABLE_CUDASIM="1", GRADTAPE_FAKE_CUPY="1")
    assert "skipped" not in summary, summary


sim = pytest.mark.skipif(not SIMULATED, reason="runs in the simulator child process")


@pytest.fixture(params=["one block per 256", "grid-stride"])
def launch(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    from gradtape.devices.kernels import cuda as kc

    if request.param == "grid-stride":
        monkeypatch.setattr(kc, "MAX_BLOCKS", 1)
        monkeypatch.setattr(kc, "THREADS", 32)
    return str(request.param)


def _arrays(dtype: Any, n: int = 300, k: int = 3, seed: int = 0) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype) for _ in range(k)]


def _ulp_equal(got: Array, want: Array, ulps: int) -> None:
    if ulps == 0:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_array_max_ulp(got, want, maxulp=ulps)


@sim
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["addmul", "adddiv", "relu_backward"])
def test_three_array_kernels_equal_the_cpu_kernels(op: str, dtype: Any, launch: str) -> None:
    from gradtape.devices.kernels import cuda as kc
    from gradtape.devices.kernels import elementwise as ke

    out, a, b = _arrays(dtype)
    if op == "adddiv":
        b = np.abs(b) + 0.5
    want = out.copy()
    getattr(ke, op)(want, a, b)
    got = out.copy()
    getattr(kc, op)(got, a, b)
    _ulp_equal(got, want, 0)


@sim
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_and_axpy(dtype: Any, launch: str) -> None:
    from gradtape.devices.kernels import cuda as kc
    from gradtape.devices.kernels import elementwise as ke

    x, g, out = _arrays(dtype)
    np.testing.assert_array_equal(kc.relu_grad(x, g), ke.relu_grad(x, g))
    want, got = out.copy(), out.copy()
    ke.axpy(want, -0.37, x)
    kc.axpy(got, -0.37, x)
    _ulp_equal(got, want, 0)


@sim
def test_broadcast_operands_take_the_array_expression() -> None:
    from gradtape.devices.kernels import cuda as kc

    out = np.zeros((4, 5))
    a = np.arange(5.0)
    b = np.arange(4.0)[:, None]
    kc.addmul(out, a, b)
    np.testing.assert_array_equal(out, a * b)
    from gradtape.errors import ShapeError

    with pytest.raises(ShapeError, match=r"addmul: operands of shapes \(3,\), \(4, 1\)"):
        kc.addmul(out, np.zeros(3), b)


@sim
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("momentum", "nesterov", "wd"), [(0.0, False, 0.0), (0.9, False, 1e-2), (0.9, True, 0.0)])
def test_sgd_step_equals_the_cpu_kernel(dtype: Any, momentum: float, nesterov: bool, wd: float, launch: str) -> None:
    from gradtape.devices.kernels import cuda as kc
    from gradtape.devices.kernels import optim as ko

    p, g, buf = _arrays(dtype)
    pc, bc = p.copy(), buf.copy()
    pg, bg = p.copy(), buf.copy()
    for first in (True, False, False):
        b_c = bc if momentum else None
        b_g = bg if momentum else None
        ko._sgd_apply(pc, g, b_c, 0.1, momentum, 0.1, wd, nesterov, first)
        kc.sgd_step(pg, g, b_g, 0.1, momentum, 0.1, wd, nesterov, first)
    _ulp_equal(pg, pc, 1)
    _ulp_equal(bg, bc, 1)


@sim
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("decoupled", "amsgrad", "wd"), [(False, False, 0.0), (False, True, 1e-2), (True, False, 1e-2)]
)
def test_adam_step_equals_the_cpu_kernel(dtype: Any, decoupled: bool, amsgrad: bool, wd: float, launch: str) -> None:
    from gradtape.devices.kernels import cuda as kc
    from gradtape.devices.kernels import optim as ko

    p, g, _ = _arrays(dtype)
    state = [np.zeros_like(p) for _ in range(3)]
    cpu = [p.copy(), *[s.copy() for s in state]]
    gpu = [p.copy(), *[s.copy() for s in state]]
    for step in (1, 2, 3):
        gs = g * step
        ko._adam_apply(
            cpu[0], gs, cpu[1], cpu[2], cpu[3] if amsgrad else None, 1e-2, 0.9, 0.999, 1e-8, step, wd, decoupled
        )
        step_size, bc2_sqrt, decay, wd_ = ko.adam_scalars(1e-2, 0.9, 0.999, step, wd, decoupled)
        kc.adam_step(
            gpu[0], gs, gpu[1], gpu[2], gpu[3] if amsgrad else None, step_size, 0.9, 0.999, 1e-8, wd_, decay, bc2_sqrt
        )
    for a, b in zip(gpu, cpu, strict=True):
        _ulp_equal(a, b, 1)


@sim
def test_kernels_refuse_bad_input() -> None:
    from gradtape.devices.kernels import cuda as kc
    from gradtape.errors import DTypeError, ShapeError

    with pytest.raises(DTypeError, match="addmul: out has dtype int64"):
        kc.addmul(np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int64))
    with pytest.raises(DTypeError, match="mixed with out's float64"):
        kc.addmul(np.zeros(3), np.zeros(3, np.float32), np.zeros(3))
    with pytest.raises(ShapeError, match="relu_grad: x \\(3,\\) and g \\(4,\\)"):
        kc.relu_grad(np.zeros(3), np.zeros(4))
    with pytest.raises(ShapeError, match="sgd_step"):
        kc.sgd_step(np.zeros(3), np.zeros(4), None, 0.1, 0.0, 0.0, 0.0, False, True)


def test_without_cupy_the_cuda_device_says_what_is_missing() -> None:
    """Without CuPy (CI, a CPU-only install), Cuda() and every spelling of "cuda" raise one
    RuntimeError that names the missing extra; the rest of gradtape is unchanged."""
    if SIMULATED:
        pytest.skip("the child run installs CuPy's stand-in")
    try:
        import cupy  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("CuPy is installed here")
    import gradtape
    from gradtape.devices.cuda import cuda_available

    assert not cuda_available()
    want = r"Cuda: the CUDA device needs CuPy and numba-cuda, which are not installed: pip install 'gradtape\[cuda\]'"
    for make in (
        lambda: gradtape.Cuda(),
        lambda: gradtape.tensor([1.0]).cuda(),
        lambda: gradtape.tensor([1.0]).to("cuda:0"),
        lambda: gradtape.zeros(2, device="cuda"),
        lambda: gradtape.nn.Linear(2, 2).to("cuda"),
    ):
        with pytest.raises(RuntimeError, match=want):
            make()
    assert gradtape.tensor([1.0]).cpu().numpy().tolist() == [1.0]
