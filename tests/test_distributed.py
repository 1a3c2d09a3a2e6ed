"""gradtape.distributed (issue 18): two MPI processes on loopback train to the parameters of
one process on the doubled batch; a failing rank makes the job end with a clear error within
the stated time; ranks with different models are refused at start; shards, bucketing and
the errors without MPI, in one process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gradtape import Cpu, nn
from gradtape import distributed as dist

WORKER = Path(__file__).with_name("distributed_worker.py")


def _mpiexec() -> str | None:
    """The ``mpiexec`` beside this interpreter (the mpich wheel's), else on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def _have_mpi() -> bool:
    try:
        import mpi4py.MPI  # noqa: F401
    except (ImportError, RuntimeError):
        return False
    return _mpiexec() is not None


needs_mpi = pytest.mark.skipif(
    not _have_mpi(), reason="mpi4py or an MPI runtime (mpiexec) is not installed: pip install 'gradtape[distributed]'"
)


def _launch(mode: str, out: Path, n: int = 2, limit: float = 120.0) -> tuple[subprocess.CompletedProcess[str], float]:
    exe = _mpiexec()
    assert exe is not None
    cmd = [exe, "-n", str(n)]
    if "Open MPI" in subprocess.run([exe, "--version"], capture_output=True, text=True).stdout:
        cmd += ["--oversubscribe", "--allow-run-as-root"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(dist.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]),
    }
    start = time.perf_counter()
    proc = subprocess.run(
        [*cmd, sys.executable, str(WORKER), mode, str(out)], capture_output=True, text=True, timeout=limit, env=env
    )
    return proc, time.perf_counter() - start


@needs_mpi
def test_two_ranks_equal_one_process_on_the_doubled_batch(tmp_path: Path) -> None:
    """Five Adam steps of a 3-layer MLP: rank r trains on half r of each batch, gradients
    averaged by the bucketed all-reduce during backward (one bucket, and four small ones);
    rank 0 also trains alone on the whole batch. Rank 1 starts from other weights, which the
    broadcast replaces. Parameters agree within float32 rounding."""
    proc, _ = _launch("equal", tmp_path / "eq.npz")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    d = np.load(tmp_path / "eq.npz")
    assert int(d["size"]) == 2
    n = sum(1 for k in d.files if k.startswith("one"))
    assert n == 6
    for i in range(n):
        one = d[f"one{i}"]
        scale = np.abs(one).max()
        for kind in ("many", "small"):
            np.testing.assert_allclose(d[f"{kind}{i}"], one, rtol=0, atol=2e-6 * scale)


@needs_mpi
def test_a_rank_that_raises_makes_the_other_fail_clearly_within_its_timeout(tmp_path: Path) -> None:
    """Rank 1 raises at step 2; rank 0, waiting in the gradient all-reduce with a 3 s timeout,
    raises DistributedError naming itself and the operation; the job ends, not hangs."""
    proc, took = _launch("raise", tmp_path / "x.npz")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "rank 1 fails on purpose" in out
    assert "rank 0 of 2: DistributedDataParallel: gradient all-reduce of bucket 0 did not complete within 3 s" in out
    assert "Segmentation fault" not in out  # MPI aborts rather than finalizing under the blocked thread
    assert took < 60.0


@needs_mpi
def test_a_killed_rank_ends_the_job(tmp_path: Path) -> None:
    """Rank 1 is killed by SIGKILL at step 2: mpiexec ends the job with an error at once."""
    proc, took = _launch("kill", tmp_path / "x.npz")
    assert proc.returncode != 0
    assert "signal 9" in proc.stdout + proc.stderr or "Killed" in proc.stdout + proc.stderr
    assert took < 60.0


@needs_mpi
def test_ranks_with_different_models_are_refused_at_start(tmp_path: Path) -> None:
    proc, _ = _launch("mismatch", tmp_path / "x.npz")
    assert proc.returncode != 0
    assert (
        "DistributedDataParallel: the ranks' models differ: parameter 0: rank 0 has ('fc1.weight', (32, 12), "
        "'float32'), rank 1 has ('fc1.weight', (33, 12), 'float32')" in proc.stdout + proc.stderr
    )


@needs_mpi
def test_digits_example_runs_distributed(tmp_path: Path) -> None:
    """README's command, two epochs: both ranks train, rank 0 reports."""
    exe = _mpiexec()
    assert exe is not None
    proc = subprocess.run(
        [exe, "-n", "2", sys.executable, "-m", "gradtape.examples.digits", "--distributed", "--epochs", "2",
         "--no-save", "--no-progress"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "data-parallel over 2 MPI ranks, global batch 32" in proc.stdout
    assert proc.stdout.count("epoch   2/2") == 1  # rank 0 alone prints
    acc = float(proc.stdout.strip().splitlines()[-1].split()[-1].rstrip("%"))
    assert acc > 90.0


class _FakeComm:
    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1


@pytest.mark.parametrize(("n", "size"), [(10, 3), (9, 3), (1347, 2), (0, 2), (5, 8)])
def test_shard_indices_cover_the_data_in_equal_shares(n: int, size: int) -> None:
    shards = [dist.shard_indices(n, 4, 1, dist.World(_FakeComm(), r, size)) for r in range(size)]
    assert len({len(s) for s in shards}) == 1 and len(shards[0]) == -(-n // size)
    together = np.concatenate(shards)
    assert set(together.tolist()) == set(range(n))
    again = dist.shard_indices(n, 4, 1, dist.World(_FakeComm(), 0, size))
    np.testing.assert_array_equal(again, shards[0])  # deterministic for (seed, epoch)
    if n > size:
        other = dist.shard_indices(n, 5, 1, dist.World(_FakeComm(), 0, size))
        assert not np.array_equal(other, shards[0])  # a new epoch reshuffles
    cut = (
        [dist.shard_indices(n, 4, 1, dist.World(_FakeComm(), r, size), drop_last=True) for r in range(size)]
        if n >= size
        else []
    )
    for s in cut:
        assert len(s) == n // size


def test_shard_indices_errors() -> None:
    w = dist.World(_FakeComm(), 0, 2)
    with pytest.raises(ValueError, match="shard_indices: n, epoch and seed must be >= 0"):
        dist.shard_indices(-1, 0, 0, w)
    with pytest.raises(ValueError, match="drop_last leaves no item of 1 for 2 ranks"):
        dist.shard_indices(1, 0, 0, w, drop_last=True)


@needs_mpi
def test_one_process_world_is_a_pass_through_with_buckets() -> None:
    """Without mpiexec, MPI's world has one rank: the wrapper returns the module's output and
    leaves the gradients alone; parameters are packed newest first into dtype buckets."""
    dev = Cpu(seed=0)
    model = nn.Sequential(nn.Linear(4, 300, dev=dev), nn.Linear(300, 2, dev=dev))
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=0.004)  # 1,048 float32 per bucket at most
    assert ddp.world.size == 1 and ddp.world.rank == 0
    assert ddp.buckets == [["1.bias", "1.weight", "0.bias"], ["0.weight"]]  # 902 floats, then 1,200 alone
    x = dev.tensor(np.ones((3, 4), np.float32))
    grads = model.alloc_grads()
    loss = ddp(x.trace(grads)).sum()
    grads = loss.backward()
    before = grads.get(model.parameters()[0]).numpy()
    ddp.synchronize(grads)
    np.testing.assert_array_equal(grads.get(model.parameters()[0]).numpy(), before)
    with pytest.raises(ValueError, match="bucket_cap_mb must be > 0"):
        dist.DistributedDataParallel(model, bucket_cap_mb=0)
    ddp.remove_hooks()


def test_missing_mpi4py_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)
    with pytest.raises(
        dist.DistributedError, match=r"needs mpi4py and an MPI runtime: pip install 'gradtape\[distributed\]'"
    ):
        dist.init()


def test_distributed_flag_without_mpi_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradtape.examples import digits

    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)
    with pytest.raises(dist.DistributedError, match="needs mpi4py"):
        digits.train(epochs=1, verbose=False, progress=False, distributed=True)


def test_ring_cost_model() -> None:
    """benchmarks/workloads/distributed.py's model: 2(N-1)/N of the bytes per link plus a
    latency per message; all buckets but the last hide behind backward."""
    from benchmarks.workloads.distributed import model_table, ring_model

    one = ring_model(8e6, 1, 1e9, 1e-5, 4, 0.02, 0.05)
    assert one == {"comm_s": 0.0, "exposed_s": 0.0, "step_s": 0.05, "hidden": 1.0}
    two = ring_model(8e6, 2, 1e9, 1e-5, 4, 0.02, 0.05)
    assert two["comm_s"] == pytest.approx(8e6 / 1e9 + 4 * 2 * 1e-5)
    assert two["exposed_s"] == pytest.approx(two["comm_s"] / 4)  # fully overlapped but the last bucket
    big = ring_model(8e6, 64, 1e8, 1e-5, 4, 0.02, 0.05)  # slow link: communication exceeds backward
    assert big["exposed_s"] == pytest.approx(big["comm_s"] - 0.015)
    assert big["step_s"] == pytest.approx(0.05 + big["exposed_s"]) and 0 < big["hidden"] < 1
    rows = model_table(8e6, 4, 0.02, 0.05)
    assert len(rows) == 2 + 2 * 6 and rows[2].startswith("| 10 Gb/s Ethernet | 2 |")
