"""Fork safety of the parallel kernels (issue 15).

A process forked after a parallel kernel ran (multiprocessing's default start method on
Linux: data loaders, pools) used to be killed at its first parallel kernel ("fork() called
from a process already using GNU OpenMP"). Each scenario runs in a fresh interpreter, so a
crash or a hang fails the test instead of taking pytest down.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import textwrap

import pytest

# gradtape depends on ``tbb`` (numba's fork-safe layer) where PyPI has wheels for it; elsewhere
# numba keeps GNU OpenMP, which is not fork safe (README, "Threads").
pytestmark = pytest.mark.skipif(
    not (sys.platform == "linux" and platform.machine() == "x86_64"), reason="tbb is a dependency on x86-64 Linux only"
)

# Runs leaky_relu and a product forward and backward, and addmul, on 2M elements: all on the
# parallel path (PARALLEL_THRESHOLD is 1M). Prints the largest error against numpy.
_STEP = """
import multiprocessing, os, sys, threading, traceback
import numpy as np
from gradtape import Cpu
from gradtape.devices.kernels import elementwise as ke

N = 2_000_000
assert N >= ke.PARALLEL_THRESHOLD


def step(seed):
    x = Cpu(seed=seed).randn((N,)).leaky_trace()
    g = (x.leaky_relu(0.1) * x).sum().backward().get(x).numpy()
    xa = x.numpy()
    out = np.zeros(N, np.float32)
    ke.addmul(out, xa, xa)
    want = np.where(xa > 0, 2 * xa, np.float32(0.2) * xa)
    return float(max(np.abs(g - want).max(), np.abs(out - xa * xa).max()))


def check(err, who):
    print(who, "error", err, flush=True)
    assert err < 1e-5, (who, err)
"""

_SCENARIOS = {
    "multiprocessing": """
def child(q):
    q.put(step(1))

if __name__ == "__main__":
    check(step(0), "parent")
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    err = q.get(timeout=40)
    p.join(10)
    assert p.exitcode == 0, p.exitcode
    check(err, "child")
    with ctx.Pool(2) as pool:  # a pool forks two workers at once
        for i, err in enumerate(pool.map(step, [2, 3])):
            check(err, f"pool worker {i}")
    check(step(4), "parent after the children")
""",
    "os.fork": """
if __name__ == "__main__":
    check(step(0), "parent")
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            check(step(1), "child")
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)
    check(step(3), "parent after the child")
""",
    # The layer must stay thread safe: numba's fork-safe "workqueue" layer aborts the process
    # when two threads run parallel kernels at once (the kernels release the GIL).
    "threads then fork": """
if __name__ == "__main__":
    errs = []
    def work():
        for i in range(3):
            errs.append(step(i))
    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(errs) == 9
    check(max(errs), "threads")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        check(pool.apply(step, (5,)), "child")
""",
    # nn.LSTM's stacked op runs its layers on a pool of threads (kernels.rnn.Stack): a forked
    # child has none of them and must make its own pool rather than wait on its parent's.
    "recurrent stack threads then fork": """
from gradtape import nn
from gradtape.devices.kernels import rnn as kr

kr.PIPELINE_MACS = 0
kr._cores = lambda: 2
kr._others_busy = lambda: 1.0


def lstm_grad(seed):
    lstm = nn.LSTM(3, 4, num_layers=3, dev=Cpu(seed=seed), dtype=np.float64)
    x = Cpu().tensor(np.ones((9, 2, 3)), requires_grad=True)
    lstm(x)[0].sum().backward()
    return x.grad.numpy()


if __name__ == "__main__":
    want = lstm_grad(1)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply(lstm_grad, (1,))
    check(float(np.abs(got - want).max()), "child")
    check(float(np.abs(lstm_grad(1) - want).max()), "parent after the child")
""",
}


def _run(code: str) -> tuple[int, str, str]:
    """Run ``code`` in a fresh interpreter under gradtape's default threading layer; kill it and
    everything it forked if it has not exited within 60 s."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: a hung child dies with it
    )
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"no exit within 60 s (hung)\n{out}\n{err}")
    return proc.returncode, out, err


@pytest.mark.parametrize("scenario", list(_SCENARIOS))
def test_parallel_kernels_run_in_a_forked_child(scenario: str) -> None:
    """Parallel kernels in the parent, then fork: the child's kernels give numpy's results and
    it exits 0; the parent's kernels still work afterwards."""
    code, out, err = _run(textwrap.dedent(_STEP) + textwrap.dedent(_SCENARIOS[scenario]))
    assert code == 0, f"{scenario}: exit {code}\n{out}\n{err}"
    assert "child error" in out, out


def test_the_threading_layer_is_tbb() -> None:
    """numba picks TBB (fork and thread safe) over GNU OpenMP once gradtape has loaded pip's libtbb."""
    code, out, err = _run(
        "import numba, numpy as np\n"
        "from gradtape.devices.kernels import elementwise as ke\n"
        "n = ke.PARALLEL_THRESHOLD\n"
        "ke.addmul(np.zeros(n, np.float32), np.ones(n, np.float32), np.ones(n, np.float32))\n"
        "print(numba.threading_layer())\n"
    )
    assert code == 0, err
    assert out.split() == ["tbb"]
