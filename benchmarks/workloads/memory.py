"""Workload 6, memory: what the tape holds per op, and the peak of an MLP training step.

Two instruments, each used only where it sees everything:

- ``tracemalloc`` (in this process) sees Python objects and numpy's array buffers, so it
  measures gradtape, HIPS autograd and hand-written numpy exactly; it does not see
  PyTorch's C++ allocator.
- RSS growth of a fresh process (``/proc/self/statm``) sees everything, to page
  granularity; it compares gradtape with PyTorch.

Deep chain: workload 1's chain (``y = (y * 0.999).sin() + x`` on 64 float32) with 3,334
repeats (10,002 ops); memory held after the forward pass and before backward, minus
memory before it, divided by the number of ops: the tape's bytes per op (closures, saved
arrays, ids; the intermediate tensors themselves are freed as the loop rebinds ``y``
unless the tape keeps them). MLP: the peak traced memory during one epoch of workload 2's
training steps, above what was allocated before the epoch.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import SRC, Config, Row, WorkloadResult, load_autograd, load_torch, median
from benchmarks.workloads import mlp
from benchmarks.workloads.tape import OPS_PER_REPEAT, chain_input

NAME = "memory"
TITLE = "6. Memory: tape bytes per op (10,002-op chain), MLP step peak"

Array = np.ndarray[Any, Any]

CHAIN_REPEATS = 3334


def _traced(build: Callable[[], object]) -> tuple[int, object]:
    """Bytes that stay allocated while the result of ``build()`` is alive."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, kept


def chain_bytes_tracemalloc(autograd: tuple[Any, Any] | None, repeats: int, samples: int) -> dict[str, float]:
    """Bytes per op held before backward, for gradtape, autograd and hand-written numpy."""
    from gradtape import Cpu, Gradients

    ops = repeats * OPS_PER_REPEAT
    x0 = chain_input()
    dev = Cpu(seed=0)
    x = dev.tensor(x0)

    def gradtape_build() -> object:
        grads = Gradients.leaky()
        grads.retain_leafs([x])
        xt = x.trace(grads)
        y = xt
        for _ in range(repeats):
            y = (y * 0.999).sin() + xt
        return y.sum()

    def numpy_build() -> object:
        saved = []
        y = x0
        c = np.float32(0.999)
        for _ in range(repeats):
            u = y * c
            saved.append(u)
            y = np.sin(u)
            y += x0
        return saved

    builds: dict[str, Callable[[], object]] = {"gradtape": gradtape_build, "numpy": numpy_build}
    if autograd is not None:
        from autograd import make_vjp

        anp = autograd[1]

        def f(v: Any) -> Any:
            y = v
            for _ in range(repeats):
                y = anp.sin(y * 0.999) + v
            return anp.sum(y)

        builds["autograd"] = lambda: make_vjp(f)(x0.copy())

    out: dict[str, float] = {}
    gradtape_build().backward()  # type: ignore[attr-defined]  # warm-up: kernels loaded
    for name, build in builds.items():
        per_op = []
        for _ in range(samples):
            nbytes, kept = _traced(build)
            per_op.append(nbytes / ops)
            del kept
        out[name] = median(per_op)
    return out


_RSS_CHILD = """
import gc, json, os, sys
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
import numpy as np
x0 = np.random.default_rng(0).standard_normal(64).astype(np.float32)
R = REPEATS
if LIB == "gradtape":
    from gradtape import Cpu, Gradients
    dev = Cpu(seed=0)
    x = dev.tensor(x0)
    def build(r):
        grads = Gradients.leaky()
        grads.retain_leafs([x])
        xt = x.trace(grads)
        y = xt
        for _ in range(r):
            y = (y * 0.999).sin() + xt
        return y.sum()
    def backward(loss):
        loss.backward()
else:
    import torch
    torch.set_num_threads(THREADS)
    x = torch.from_numpy(x0.copy()).requires_grad_()
    def build(r):
        y = x
        for _ in range(r):
            y = (y * 0.999).sin() + x
        return y.sum()
    def backward(loss):
        loss.backward()
for _ in range(3):
    backward(build(R // 10))
gc.collect()
r0 = rss()
loss = build(R)
gc.collect()
r1 = rss()
print(json.dumps({"bytes": r1 - r0}))
"""


def chain_bytes_rss(lib: str, repeats: int, threads: int, processes: int) -> float:
    """RSS growth per op of building the chain in a fresh process (median over processes)."""
    code = _RSS_CHILD.replace("REPEATS", str(repeats)).replace("THREADS", str(threads)).replace("LIB", repr(lib))
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    samples = []
    for _ in range(processes):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"memory child ({lib}) failed:\n{proc.stderr[-3000:]}")
        samples.append(json.loads(proc.stdout.strip().splitlines()[-1])["bytes"] / (repeats * OPS_PER_REPEAT))
    return median(samples)


def mlp_peak_bytes(cfg: Config, epochs: int) -> dict[str, float]:
    """Peak traced bytes above the pre-epoch level during training epochs (numpy-based
    implementations only; median over epochs)."""
    data = mlp.load_data()
    params = mlp.init_params()
    plan = mlp.epoch_batches(len(data.x_tr), epochs)
    trainers = mlp.make_trainers(cfg, data, params, None)
    trainers.pop("torch", None)
    out: dict[str, float] = {}
    for name, t in trainers.items():
        for idx in plan[0][:3]:
            t.step(idx)
        peaks = []
        for batches in plan:
            gc.collect()
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                for idx in batches:
                    t.step(idx)
                peaks.append(tracemalloc.get_traced_memory()[1] - base)
            finally:
                tracemalloc.stop()
        out[name] = median([float(p) for p in peaks])
    return out


def run(cfg: Config) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    repeats = CHAIN_REPEATS
    ops = repeats * OPS_PER_REPEAT
    ag = load_autograd()
    if ag is None:
        res.note("autograd: not installed, skipped")
    torch = load_torch(cfg.threads)

    samples = cfg.reps(3, 1)
    traced = chain_bytes_tracemalloc(ag, repeats, samples)
    rss = {"gradtape": chain_bytes_rss("gradtape", repeats, cfg.threads, samples)}
    if torch is None:
        res.note("torch: not installed, skipped")
    else:
        res.note("torch: its C++ allocator is invisible to tracemalloc; compared by RSS growth in fresh processes")
        rss["torch"] = chain_bytes_rss("torch", repeats, cfg.threads, samples)
    peak = mlp_peak_bytes(cfg, 1 if cfg.quick else 3)
    if torch is not None:
        res.note("torch: MLP-step peak not measured (tracemalloc cannot see it; RSS too coarse for ~1 MB)")
    res.details.update(
        {
            "chain_ops": ops,
            "chain_bytes_per_op_tracemalloc": traced,
            "chain_bytes_per_op_rss": rss,
            "mlp_epoch_peak_bytes_tracemalloc": peak,
            "payload_bytes_per_op": 64 * 4,
        }
    )
    res.rows.append(
        Row(
            NAME,
            "chain: bytes/op held (tracemalloc)",
            "B/op",
            "lower",
            traced["gradtape"],
            {"autograd": traced.get("autograd"), "numpy": traced["numpy"]},
        )
    )
    res.rows.append(
        Row(
            NAME,
            "chain: bytes/op (RSS growth)",
            "B/op",
            "lower",
            rss["gradtape"],
            {"torch": rss.get("torch")},
        )
    )
    res.rows.append(
        Row(
            NAME,
            "MLP step: peak above baseline",
            "KiB",
            "lower",
            peak["gradtape"] / 1024,
            {
                "torch": None,
                "autograd": peak["autograd"] / 1024 if "autograd" in peak else None,
                "numpy": peak["numpy"] / 1024,
            },
        )
    )
    return res
