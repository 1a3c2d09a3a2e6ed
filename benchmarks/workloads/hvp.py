"""Workload 7, Hessian-vector product of a small network's loss (higher-order derivatives).

``f(x) = sum((tanh(x @ W1) @ W2) ** 2)`` with ``x`` 64x32, ``W1`` 32x64, ``W2`` 64x1 (float64),
and ``H v`` at ``x`` for a fixed ``v``: gradtape's ``gradtape.functional.hvp`` (reverse over
reverse: ``grad(create_graph=True)`` then a second ``grad``), against PyTorch's
``torch.autograd.functional.hvp`` and ``torch.func`` (``jvp`` of ``grad``, forward over
reverse) on the same function and data. Microseconds per product, medians over interleaved
repeats; each implementation's product is checked against torch.func's first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import Config, Row, WorkloadResult, interleaved, load_torch, median, settle

NAME = "hvp"
TITLE = "7. Hessian-vector product of a small MLP loss (64x32 input, float64)"

Array = np.ndarray[Any, Any]


def run(cfg: Config) -> WorkloadResult:
    from gradtape import Cpu
    from gradtape import functional as F

    res = WorkloadResult(NAME, TITLE)
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((64, 32))
    w1 = rng.standard_normal((32, 64)) / 6
    w2 = rng.standard_normal((64, 1)) / 8
    v0 = rng.standard_normal((64, 32))
    dev = Cpu(seed=0)
    x, v, tw1, tw2 = dev.tensor(x0), dev.tensor(v0), dev.tensor(w1), dev.tensor(w2)
    out: dict[str, Array] = {}

    def f(t: Any) -> Any:
        return ((t @ tw1).tanh() @ tw2).square().sum()

    def gradtape_hvp() -> None:
        out["gradtape"] = F.hvp(f, x, v)[1].numpy()

    fns: dict[str, Callable[[], object]] = {"gradtape": gradtape_hvp}
    torch = load_torch(cfg.threads)
    if torch is None:
        res.note("torch: not installed, skipped")
    else:
        tx, tv = torch.from_numpy(x0), torch.from_numpy(v0)
        a, b = torch.from_numpy(w1), torch.from_numpy(w2)

        def g(t: Any) -> Any:
            return ((t @ a).tanh() @ b).square().sum()

        def torch_hvp() -> None:
            out["torch"] = torch.autograd.functional.hvp(g, tx, tv)[1].numpy()

        def torch_func_hvp() -> None:
            out["torch.func"] = torch.func.jvp(torch.func.grad(g), (tx,), (tv,))[1].numpy()

        fns["torch"] = torch_hvp
        fns["torch.func"] = torch_func_hvp
    for fn in fns.values():
        fn()
    if "torch.func" in out:
        for name, hv in out.items():
            err = float(np.max(np.abs(hv - out["torch.func"])))
            res.details.setdefault("max_abs_diff_vs_torch.func", {})[name] = err
            if err > 1e-8:
                res.note(f"WARNING: {name}'s product differs from torch.func's by {err:g}")
    settle()
    times = interleaved(fns, cfg.reps(40, 8), warmup=3)
    us = {name: median(t) * 1e6 for name, t in times.items()}
    res.details["us_per_hvp"] = us
    res.rows.append(
        Row(
            NAME,
            "hvp (reverse over reverse)",
            "us/call",
            "lower",
            us["gradtape"],
            {p: us.get(p) for p in ("torch", "torch.func")},
        )
    )
    return res
