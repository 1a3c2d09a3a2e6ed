"""What every workload shares: settings, timing, result rows, optional peers, machine facts.

Peers (PyTorch, HIPS autograd) are optional: :func:`load_torch` and :func:`load_autograd`
return ``None`` when they are not installed and each workload then skips that peer with a
line saying so. They are typed ``Any`` (see ``pyproject.toml``), never imported at module
level, and never a dependency of the library.
"""

from __future__ import annotations

import gc
import importlib
import importlib.metadata
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root (the folder holding ``src/`` and ``benchmarks/``)."""

SRC = ROOT / "src"

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Config:
    """Settings every workload reads.

    Args:
        quick: a sub-minute smoke run (fewer repeats, fewer epochs, shorter chains); the
            figures are then rough.
        threads: the thread count numba and numpy's BLAS run with; PyTorch is set to it.
    """

    quick: bool
    threads: int

    def reps(self, full: int, quick: int) -> int:
        """``quick`` repeats in a quick run, else ``full``."""
        return quick if self.quick else full


# ----- timing ---------------------------------------------------------------------------


def settle() -> None:
    """Collect garbage, then freeze every live object out of the collector's sight.

    With PyTorch, autograd and scikit-learn imported, a full ``gc.collect()`` scans about
    250k objects (about 0.1 s here); frozen, the collections the timed code triggers see
    only the objects it makes, as in a process that imported one library.
    """
    gc.collect()
    gc.freeze()


def interleaved(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2) -> dict[str, list[float]]:
    """Time each function ``repeats`` times (seconds), round-robin so that drift in the
    machine's speed hits every implementation alike, after ``warmup`` untimed rounds.
    For single-threaded work only (see :func:`blockwise` for the rest).

    A ``gc.collect()`` runs before each timed call, outside the timing.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


HANDOVER_SECONDS = 0.2
"""Idle time before a multi-threaded library takes over the cores from another one."""


def handover() -> None:
    """Sleep long enough for the previous library's thread pool to stop spinning.

    OpenBLAS, numba's and PyTorch's OpenMP pools busy-wait for a while after each task;
    on 2 cores, a pool still spinning steals the cores from the next library's pool.
    Measured here on a 512x512 matmul fwd+bwd, alternating numpy and PyTorch call by
    call doubled both their times; a short sleep at each switch removes that.
    """
    time.sleep(HANDOVER_SECONDS)


def blockwise(
    fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2, rounds: int = 3
) -> dict[str, list[float]]:
    """Time multi-threaded work: ``rounds`` times over, each function gets a
    :func:`handover` pause, ``warmup`` untimed calls and then ``repeats / rounds`` timed
    calls in a row (seconds). Rotating rounds spread the machine's drift over every
    implementation; the blocks keep thread pools from alternating.
    """
    per_block = max(1, -(-repeats // rounds))
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            handover()
            for _ in range(warmup):
                fn()
            for _ in range(per_block):
                gc.collect()
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return times


def median(xs: list[float]) -> float:
    """The median of a non-empty list."""
    return float(statistics.median(xs))


def spread(xs: list[float]) -> dict[str, float]:
    """Median, min, max and quartiles of ``xs`` (for the JSON)."""
    if len(xs) >= 2:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    else:
        q1 = q3 = xs[0]
    return {"median": median(xs), "min": min(xs), "max": max(xs), "q1": float(q1), "q3": float(q3), "n": len(xs)}


# ----- results --------------------------------------------------------------------------


@dataclass
class Target:
    """A stated goal: ``gradtape / peer`` at most (``<=``) or at least (``>=``) ``ratio``."""

    peer: str
    op: Literal["<=", ">="]
    ratio: float

    def text(self) -> str:
        return f"{self.op} {self.ratio:g}x {self.peer}"

    def met(self, ratio: float) -> bool:
        return ratio <= self.ratio if self.op == "<=" else ratio >= self.ratio


@dataclass
class Row:
    """One measured figure: gradtape's value and each peer's, in the same unit.

    ``peers`` maps a peer's name to its figure, or to ``None`` when the peer is not
    installed or cannot be measured (the reason goes to the workload's notes).
    """

    workload: str
    metric: str
    unit: str
    better: Better
    gradtape: float | None
    peers: dict[str, float | None] = field(default_factory=dict)
    target: Target | None = None

    def ratio(self, peer: str) -> float | None:
        """``gradtape / peer``, or ``None`` when either figure is missing."""
        p = self.peers.get(peer)
        if p is None or self.gradtape is None or p == 0:
            return None
        return self.gradtape / p

    def status(self) -> str:
        """``PASS``/``MISS`` against the target, ``SKIP`` if its peer is missing, ``""`` if none."""
        if self.target is None:
            return ""
        r = self.ratio(self.target.peer)
        if r is None:
            return "SKIP"
        return "PASS" if self.target.met(r) else "MISS"

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "gradtape": self.gradtape,
            "peers": self.peers,
            "ratios": {p: self.ratio(p) for p in self.peers},
            "target": None if self.target is None else self.target.text(),
            "status": self.status(),
        }


@dataclass
class WorkloadResult:
    """What a workload hands back: table rows, free-form details for the JSON, notes."""

    name: str
    title: str
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def note(self, text: str) -> None:
        """Record a note (peer skipped, method used) and print it at once."""
        self.notes.append(text)
        print(f"  [{self.name}] {text}", flush=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "seconds": self.seconds,
            "rows": [r.to_json() for r in self.rows],
            "details": self.details,
            "notes": self.notes,
        }


# ----- optional peers -------------------------------------------------------------------

_torch: Any = None
_torch_tried = False


def load_torch(threads: int) -> Any | None:
    """PyTorch with ``torch.set_num_threads(threads)``, or ``None`` if it is not installed."""
    global _torch, _torch_tried
    if not _torch_tried:
        _torch_tried = True
        try:
            import torch
        except ImportError:
            _torch = None
        else:
            torch.set_num_threads(threads)
            _torch = torch
    return _torch


def load_autograd() -> tuple[Any, Any] | None:
    """``(autograd, autograd.numpy)`` (HIPS autograd), or ``None`` if it is not installed."""
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None
    return autograd, anp


def load_jax() -> tuple[Any, Any] | None:
    """``(jax, jax.numpy)``, or ``None`` if JAX is not installed. Imported through
    :mod:`importlib` so that both are typed ``Any`` whether or not JAX (which ships its own
    type hints) is installed: mypy's result must not depend on it."""
    try:
        jax: Any = importlib.import_module("jax")
        jnp: Any = importlib.import_module("jax.numpy")
    except ImportError:
        return None
    return jax, jnp


def version_of(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or ``None``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# ----- machine --------------------------------------------------------------------------


def _onednn_info() -> str:
    """gradtape's float32 convolution, LSTM and GRU library line (oneDNN's version and instruction set, or why not)."""
    from gradtape.devices.kernels import onednn

    return onednn.info()


def _matmul_info() -> str:
    """gradtape's large float32 product line: oneDNN or OpenBLAS, and why (decided once per
    machine, ``gradtape.devices.kernels.blas.matmul_choice``)."""
    from gradtape.devices.kernels import blas

    return blas.matmul_info()


def _cpu_model() -> str:
    """The CPU's model name, with its family, model and stepping numbers where the name alone
    does not tell the generation (a VM's "AMD EPYC": family 25 model 1 is a Zen 3 Milan,
    family 26 a Zen 5)."""
    try:
        fields: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model", "stepping") and key not in fields:
                fields[key] = value.strip()
        if "model name" in fields:
            ids = " ".join(
                f"{k.removeprefix('cpu ')} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields
            )
            return f"{fields['model name']}, {ids}" if ids else fields["model name"]
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return sorted(f for f in flags if f in {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl"})
    except OSError:
        pass
    return []


def _mem_total_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def blas_info() -> list[dict[str, Any]]:
    """numpy's BLAS and OpenMP thread pools (via threadpoolctl, when installed)."""
    try:
        tpc: Any = importlib.import_module("threadpoolctl")
    except ImportError:
        return []
    info: list[dict[str, Any]] = tpc.threadpool_info()
    return [
        {k: d.get(k) for k in ("user_api", "internal_api", "prefix", "version", "num_threads", "architecture")}
        for d in info
    ]


def _openblas_thread_timeout() -> int | None:
    from gradtape.devices.kernels import blas

    report: Any = getattr(blas, "thread_timeout", None)  # missing in checkouts before session 8
    return None if report is None else report()


def machine_facts(threads: int) -> dict[str, Any]:
    """CPU, cores, memory, OS and the versions of everything measured."""
    import numba
    import numpy as np

    import gradtape

    torch = load_torch(threads)
    return {
        "cpu_model": _cpu_model(),
        "cpu_flags": _cpu_flags(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "mem_total_gb": _mem_total_gb(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numba": numba.__version__,
        "llvmlite": version_of("llvmlite"),
        "torch": None if torch is None else str(torch.__version__),
        "autograd": version_of("autograd"),
        "scikit_learn": version_of("scikit-learn"),
        "gradtape_commit": _git_commit(),
        # Some machines force older OpenBLAS kernels (OPENBLAS_CORETYPE=Haswell on the
        # AVX-512 benchmark VM), which slows every matrix product: the header says so.
        "openblas_env": {k: v for k, v in os.environ.items() if k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        # how long OpenBLAS's workers spin after a product (2**N cycles), as numpy loaded it
        "openblas_thread_timeout": _openblas_thread_timeout(),
        "gradtape_path": str(Path(gradtape.__file__).parent),
        # float32 convolutions, LSTMs and GRUs run on oneDNN when the optional wheel is installed
        "onednn": _onednn_info(),
        # large float32 products: oneDNN where OpenBLAS's kernels are older than the CPU
        "matmul": _matmul_info(),
        "threads": {
            "numba": numba.get_num_threads(),
            "blas": blas_info(),
            "torch": None if torch is None else int(torch.get_num_threads()),
        },
    }


def rss_bytes() -> int:
    """This process's resident set size in bytes (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")
