"""Workload 8, Mamba's selective scan, forward + backward (issue 16).

``y = selective_scan(x, dt, A, B, C, D, z)`` at (batch 8, length 1,024, channels 64, state
16), float32, every input traced, the loss ``sum(y * w)`` for a fixed ``w``: gradtape's fused
kernels (``gradtape.ops.selective_scan``) against the same recurrence in PyTorch written as a
PyTorch user without Mamba's CUDA kernel writes it, a Python loop over time
(:func:`torch_scan`), differentiated by autograd. Milliseconds per forward+backward, medians
over interleaved repeats; the gradients are checked against each other first. Target: at
least 5x faster than the PyTorch loop (gradtape / torch <= 0.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import Config, Row, Target, WorkloadResult, interleaved, load_torch, median, settle

NAME = "scan"
TITLE = "8. Selective scan (Mamba S6) fwd+bwd, batch 8, length 1024, channels 64, state 16 (float32)"
SHAPE = (8, 1024, 64, 16)

Array = np.ndarray[Any, Any]


def inputs(shape: tuple[int, int, int, int] = SHAPE, seed: int = 0) -> dict[str, Array]:
    """x, dt, A, B, C, D, z and the loss weights w, float32, in ranges a Mamba layer produces
    (dt from a softplus, A negative)."""
    b, length, d, n = shape
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return {
        "x": rng.standard_normal((b, length, d)).astype(f32),
        "dt": np.log1p(np.exp(rng.standard_normal((b, length, d)) - 3.0)).astype(f32),
        "A": -np.exp(rng.standard_normal((d, n)) * 0.5).astype(f32),
        "B": rng.standard_normal((b, length, n)).astype(f32),
        "C": rng.standard_normal((b, length, n)).astype(f32),
        "D": rng.standard_normal(d).astype(f32),
        "z": rng.standard_normal((b, length, d)).astype(f32),
        "w": rng.standard_normal((b, length, d)).astype(f32),
    }


def gradtape_step(arrays: dict[str, Array]) -> Callable[[], dict[str, Array]]:
    """One forward+backward through ``ops.selective_scan``; returns the seven gradients."""
    from gradtape import Cpu, Gradients, ops

    dev = Cpu()
    names = ("x", "dt", "A", "B", "C", "D", "z")
    ts = {k: dev.tensor(arrays[k]) for k in names}
    w = dev.tensor(arrays["w"])

    def step() -> dict[str, Array]:
        store = Gradients.leaky()
        traced = {k: t.trace(store) for k, t in ts.items()}
        y = ops.selective_scan(*(traced[k] for k in names))
        g = (y * w).sum().backward()
        return {k: g.get(ts[k]).numpy() for k in names}

    return step


def torch_scan(torch: Any, x: Any, dt: Any, A: Any, B: Any, C: Any, D: Any, z: Any) -> Any:
    """The recurrence in PyTorch as a user without Mamba's CUDA kernel writes it: a Python
    loop over time for ``h = exp(dt A) h + dt B x`` and ``y = C . h``, then ``+ D x`` and the
    ``silu(z)`` gate. The per-step slices come from ``unbind`` (one backward node for all
    steps; indexing ``x[:, t]`` in the loop instead allocates a full-size gradient per step
    and runs about 10x slower)."""
    xs, dts, bs, cs = x.unbind(1), dt.unbind(1), B.unbind(1), C.unbind(1)
    h = x.new_zeros((x.shape[0], x.shape[2], A.shape[1]))
    ys = []
    for xt, dtt, bt, ct in zip(xs, dts, bs, cs, strict=True):
        h = torch.exp(dtt[..., None] * A) * h + (dtt * xt)[..., None] * bt[:, None, :]
        ys.append((h * ct[:, None, :]).sum(-1))
    y = torch.stack(ys, dim=1) + D * x
    return y * torch.nn.functional.silu(z)


def torch_step(torch: Any, arrays: dict[str, Array]) -> Callable[[], dict[str, Array]]:
    names = ("x", "dt", "A", "B", "C", "D", "z")
    w = torch.from_numpy(arrays["w"])

    def step() -> dict[str, Array]:
        ts = {k: torch.from_numpy(arrays[k]).requires_grad_(True) for k in names}
        (torch_scan(torch, *(ts[k] for k in names)) * w).sum().backward()
        return {k: ts[k].grad.numpy() for k in names}

    return step


def run(cfg: Config) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    shape = (8, 256, 64, 16) if cfg.quick else SHAPE
    arrays = inputs(shape)
    fns: dict[str, Callable[[], object]] = {"gradtape": gradtape_step(arrays)}
    torch = load_torch(cfg.threads)
    if torch is None:
        res.note("torch: not installed, skipped")
    else:
        fns["torch"] = torch_step(torch, arrays)
        ours, theirs = fns["gradtape"](), fns["torch"]()
        assert isinstance(ours, dict) and isinstance(theirs, dict)
        worst = max(float(np.max(np.abs(ours[k] - theirs[k])) / (np.max(np.abs(theirs[k])) + 1e-30)) for k in theirs)
        res.details["max_rel_grad_diff_vs_torch"] = worst
        if worst > 1e-3:
            res.note(f"WARNING: gradients differ from PyTorch's by {worst:g} (relative)")
    settle()
    times = interleaved(fns, cfg.reps(5, 2), warmup=1)
    ms = {name: median(t) * 1e3 for name, t in times.items()}
    res.details["ms_per_fwd_bwd"] = ms
    res.rows.append(
        Row(
            NAME,
            f"selective_scan fwd+bwd {shape}",
            "ms",
            "lower",
            ms["gradtape"],
            {"torch": ms.get("torch")},
            Target("torch", "<=", 0.2),
        )
    )
    return res
