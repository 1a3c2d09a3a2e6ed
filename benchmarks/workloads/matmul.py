"""Workload 4, matmul 512x512 float32, forward + backward: GFLOP/s.

``loss = (a @ b).sum()`` with both ``a`` and ``b`` needing gradients, then backward:
three 512^3 matrix products (``a @ b``, ``g @ b.T``, ``a.T @ g``), counted as
``6 * 512**3`` flops; the sum and its broadcast back are timed but not counted.
gradtape (both inputs traced into one store that retains them), PyTorch (``requires_grad``
leaves), HIPS autograd (``grad`` over the pair) and numpy written by hand. Timed in blocks
per implementation (``benchmarks.common.blockwise``) with a pause at each switch: OpenBLAS's and
PyTorch's thread pools spin-wait after a call, and alternating them call by call slows
both about 2x here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import Config, Row, Target, WorkloadResult, blockwise, load_autograd, load_torch, median, settle

NAME = "matmul"
TITLE = "4. matmul 512x512 float32, forward+backward: GFLOP/s"

Array = np.ndarray[Any, Any]

N = 512
FLOPS = 6 * N**3


def run(cfg: Config) -> WorkloadResult:
    from gradtape import Cpu, Gradients

    res = WorkloadResult(NAME, TITLE)
    rng = np.random.default_rng(0)
    a0 = rng.standard_normal((N, N), dtype=np.float32)
    b0 = rng.standard_normal((N, N), dtype=np.float32)
    dev = Cpu(seed=0)
    a, b = dev.tensor(a0), dev.tensor(b0)
    out: dict[str, tuple[Array, Array]] = {}

    def gradtape_step() -> None:
        grads = Gradients.leaky()
        grads.retain_leafs([a, b])
        loss = (a.trace(grads) @ b.trace(grads)).sum()
        g = loss.backward()
        ga, gb = g.get_ref_checked(a), g.get_ref_checked(b)
        assert ga is not None and gb is not None
        out["gradtape"] = (ga, gb)

    def numpy_step() -> None:
        c = a0 @ b0
        float(c.sum())
        g = np.ones_like(c)
        out["numpy"] = (g @ b0.T, a0.T @ g)

    fns: dict[str, Callable[[], object]] = {"gradtape": gradtape_step}
    torch = load_torch(cfg.threads)
    if torch is None:
        res.note("torch: not installed, skipped")
    else:
        ta = torch.from_numpy(a0.copy()).requires_grad_()
        tb = torch.from_numpy(b0.copy()).requires_grad_()

        def torch_step() -> None:
            ta.grad = tb.grad = None
            (ta @ tb).sum().backward()
            out["torch"] = (ta.grad.numpy(), tb.grad.numpy())

        fns["torch"] = torch_step
    ag = load_autograd()
    if ag is None:
        res.note("autograd: not installed, skipped")
    else:
        autograd, anp = ag
        grad_fn = autograd.grad(lambda ab: anp.sum(anp.dot(ab[0], ab[1])))
        pair = (a0.copy(), b0.copy())

        def autograd_step() -> None:
            ga, gb = grad_fn(pair)
            out["autograd"] = (np.asarray(ga), np.asarray(gb))

        fns["autograd"] = autograd_step
    fns["numpy"] = numpy_step

    for fn in fns.values():
        fn()
    ref = out["numpy"]
    for name, (ga, gb) in out.items():
        err = max(float(np.max(np.abs(ga - ref[0]))), float(np.max(np.abs(gb - ref[1]))))
        res.details.setdefault("grad_max_abs_diff_vs_numpy", {})[name] = err
        if err > 1e-2:
            res.note(f"WARNING: {name}'s gradients differ from numpy's by {err:g}")

    nrep = cfg.reps(25, 5)
    settle()
    times = blockwise(fns, nrep, warmup=3, rounds=cfg.reps(5, 1))
    gflops = {name: FLOPS / median(t) / 1e9 for name, t in times.items()}
    res.details.update(
        {
            "n": N,
            "flops": FLOPS,
            "repeats": nrep,
            "ms": {name: median(t) * 1e3 for name, t in times.items()},
            "gflop_per_s": gflops,
        }
    )
    res.rows.append(
        Row(
            NAME,
            "fwd+bwd 512x512",
            "GFLOP/s",
            "higher",
            gflops["gradtape"],
            {p: gflops.get(p) for p in ("torch", "autograd", "numpy")},
            Target("torch", ">=", 0.9),
        )
    )
    return res
