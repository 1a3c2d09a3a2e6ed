"""Workload 5, cold start: a fresh ``python -c ...`` process that imports the library and runs
the first training step of workload 2's MLP (one batch of 64 random digits-shaped rows),
timed from just before the process is spawned to the end of that step.

How the numba cache is made cold or warm: each round copies ``src/gradtape`` (without
any ``__pycache__``, ``*.nbi``, ``*.nbc``) into a fresh temporary folder, byte-compiles the
copy (so Python's own ``.pyc`` cache is warm in both cases and only numba's differs), puts
the folder first on ``PYTHONPATH`` and points ``NUMBA_CACHE_DIR`` at a fresh empty folder
(numba looks there before ``__pycache__``). The first process on that copy compiles every
kernel it calls (*cold*); the second process on the same copy loads them from disk
(*warm*). The child checks it imported the copy, not the installed package.

PyTorch and HIPS autograd run the same first step (``nn.Sequential`` + ``optim.SGD``;
``value_and_grad``) in their own fresh processes; ``python -c pass`` gives the
interpreter's own start-up. One untimed round first warms the OS file cache (skipped with
``--quick``), so every figure is a warm-disk start; medians over 5 rounds.
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import SRC, Config, Row, Target, WorkloadResult, load_autograd, load_torch, median, spread

NAME = "coldstart"
TITLE = "5. Cold start: fresh process, import + first MLP training step (ms from spawn)"

_REPORT = """
import json as _json
print(_json.dumps({"import_end": _t1, "end": _t2, "file": _file}))
"""

_DATA = """
import numpy as np
_rng = np.random.default_rng(0)
_params = []
for _i, _o in ((64, 128), (128, 128), (128, 10)):
    _b = 1.0 / np.sqrt(_i)
    _params += [_rng.uniform(-_b, _b, (_i, _o)).astype(np.float32), _rng.uniform(-_b, _b, (_o,)).astype(np.float32)]
_x = _rng.random((64, 64), dtype=np.float32)
_y = _rng.integers(0, 10, 64)
"""

GRADTAPE_CHILD = (
    """
import time
_t0 = time.monotonic()
import gradtape
_t1 = time.monotonic()
_file = gradtape.__file__
"""
    + _DATA
    + """
from gradtape import Cpu, Gradients
from gradtape.losses import cross_entropy
dev = Cpu(seed=0)
params = [dev.tensor(p) for p in _params]
vel = [np.zeros_like(p) for p in _params]
grads = Gradients.leaky()
grads.retain_leafs(params)
w1, b1, w2, b2, w3, b3 = params
h = (dev.tensor(_x).trace(grads).matmul(w1) + b1).relu()
h = (h.matmul(w2) + b2).relu()
loss = cross_entropy(h.matmul(w3) + b3, _y)
grads = loss.backward()
for p, v in zip(params, vel):
    v *= 0.9
    dev.axpy(v, 1.0, grads.get_ref_checked(p))
    dev.axpy(p.data, -0.01, v)
loss.item()
_t2 = time.monotonic()
"""
    + _REPORT
)

TORCH_CHILD = (
    """
import time
_t0 = time.monotonic()
import torch
_t1 = time.monotonic()
_file = torch.__file__
torch.set_num_threads(THREADS)
"""
    + _DATA
    + """
layers = []
for i in range(0, 6, 2):
    lin = torch.nn.Linear(*_params[i].shape)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(_params[i].T.copy()))
        lin.bias.copy_(torch.from_numpy(_params[i + 1]))
    layers += [lin, torch.nn.ReLU()]
model = torch.nn.Sequential(*layers[:-1])
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
opt.zero_grad()
loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(_x)), torch.from_numpy(_y))
loss.backward()
opt.step()
loss.item()
_t2 = time.monotonic()
"""
    + _REPORT
)

AUTOGRAD_CHILD = (
    """
import time
_t0 = time.monotonic()
import autograd
import autograd.numpy as anp
_t1 = time.monotonic()
_file = autograd.__file__
"""
    + _DATA
    + """
def loss_fn(p, x, y):
    h = anp.maximum(anp.dot(x, p[0]) + p[1], 0.0)
    h = anp.maximum(anp.dot(h, p[2]) + p[3], 0.0)
    z = anp.dot(h, p[4]) + p[5]
    z = z - anp.max(z, axis=1, keepdims=True)
    logp = z - anp.log(anp.sum(anp.exp(z), axis=1, keepdims=True))
    return -anp.mean(logp[np.arange(len(y)), y])
vel = [np.zeros_like(p) for p in _params]
loss, g = autograd.value_and_grad(loss_fn)(_params, _x, _y)
for p, v, gi in zip(_params, vel, g):
    v *= 0.9
    v += gi
    p -= 0.01 * v
float(loss)
_t2 = time.monotonic()
"""
    + _REPORT
)

BASELINE_CHILD = "import time; _t1 = _t2 = time.monotonic(); _file = ''" + _REPORT


def _spawn(code: str, env: dict[str, str], cwd: str) -> dict[str, float | str]:
    """Run ``python -c code``; return ms from spawn to the end of import and of the step."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"cold-start child failed:\n{proc.stderr[-3000:]}")
    rep: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "import_ms": (rep["import_end"] - start) * 1e3,
        "total_ms": (rep["end"] - start) * 1e3,
        "file": rep["file"],
    }


def _fresh_copy(root: Path) -> tuple[Path, Path]:
    """A byte-compiled copy of the package under ``root`` and an empty numba cache folder."""
    pkg_parent = root / "pkg"
    shutil.copytree(SRC / "gradtape", pkg_parent / "gradtape", ignore=shutil.ignore_patterns("__pycache__", "*.nb?"))
    compileall.compile_dir(str(pkg_parent / "gradtape"), quiet=1)
    cache = root / "numba_cache"
    cache.mkdir()
    return pkg_parent, cache


def run(cfg: Config) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON"))}
    children: dict[str, str] = {}
    if load_torch(cfg.threads) is None:
        res.note("torch: not installed, skipped")
    else:
        children["torch"] = TORCH_CHILD.replace("THREADS", str(cfg.threads))
    if load_autograd() is None:
        res.note("autograd: not installed, skipped")
    else:
        children["autograd"] = AUTOGRAD_CHILD
    children["python"] = BASELINE_CHILD
    res.note("numpy: not applicable (no autodiff to import); 'python -c pass' start-up shown as 'python'")
    res.note("'torch-import' = spawn to end of 'import torch' (the target's reference); 'torch' = import + 1st step")

    rounds = cfg.reps(5, 1)
    discard = 0 if cfg.quick else 1  # a first round that only warms the OS file cache
    runs: dict[str, list[dict[str, float | str]]] = {}
    cache_files: list[int] = []
    with tempfile.TemporaryDirectory(prefix="gradtape-coldstart-") as tmp:
        for r in range(discard + rounds):
            root = Path(tmp) / f"round{r}"
            root.mkdir()
            pkg, cache = _fresh_copy(root)
            env = dict(base_env, PYTHONPATH=str(pkg), NUMBA_CACHE_DIR=str(cache))
            cold = _spawn(GRADTAPE_CHILD, env, str(root))
            if not str(cold["file"]).startswith(str(pkg)):
                raise RuntimeError(f"cold-start child imported {cold['file']}, not the copy under {pkg}")
            n_cached = sum(1 for _ in cache.rglob("*.nbi"))
            if n_cached == 0:
                res.note("WARNING: the cold run cached no numba kernel; the 'warm' run compiled again")
            warm = _spawn(GRADTAPE_CHILD, env, str(root))
            measured = {"gradtape-cold": cold, "gradtape-warm": warm}
            for name, code in children.items():
                measured[name] = _spawn(code, dict(base_env), str(root))
            if r >= discard:
                cache_files.append(n_cached)
                for name, m in measured.items():
                    runs.setdefault(name, []).append(m)
            shutil.rmtree(root)

    def fig(name: str, key: str) -> float | None:
        if name not in runs:
            return None
        return median([float(m[key]) for m in runs[name]])

    res.details.update(
        {
            "rounds": rounds,
            "numba_kernels_cached_by_cold_run": cache_files,
            "ms": {
                name: {key: spread([float(m[key]) for m in ms]) for key in ("import_ms", "total_ms")}
                for name, ms in runs.items()
            },
            "method": "fresh byte-compiled copy of src/gradtape on PYTHONPATH + empty NUMBA_CACHE_DIR; "
            "cold = first process on the copy, warm = second process",
        }
    )
    peers_total = {
        "torch": fig("torch", "total_ms"),
        "torch-import": fig("torch", "import_ms"),
        "autograd": fig("autograd", "total_ms"),
        "python": fig("python", "total_ms"),
    }
    res.rows.append(
        Row(
            NAME,
            "import+1st step, warm numba cache",
            "ms",
            "lower",
            fig("gradtape-warm", "total_ms"),
            peers_total,
            Target("torch-import", "<=", 1.0),
        )
    )
    res.rows.append(
        Row(NAME, "import+1st step, cold numba cache", "ms", "lower", fig("gradtape-cold", "total_ms"), peers_total)
    )
    res.rows.append(
        Row(
            NAME,
            "import only",
            "ms",
            "lower",
            fig("gradtape-warm", "import_ms"),
            {"torch": fig("torch", "import_ms"), "autograd": fig("autograd", "import_ms")},
        )
    )
    return res
