"""Workload 12, ``einsum`` against the matmul chain it stands for (issue 27).

Three contractions a PyTorch program writes with ``torch.einsum``, each timed forward and
backward (``.sum()`` of the result, backward into both or all operands' ``.grad``), float32:

- ``bij,bjk->bik``, a batched matrix product (32 x 128 x 128 by 128 x 128);
- ``bhqd,bhkd->bhqk``, attention scores (batch 8, 4 heads, 64 queries and keys, head 32);
- ``ij,jk,kl->il``, a three-matrix chain whose cheap order is the right-to-left one
  (256 x 512, 512 x 512, 512 x 8).

The peer ``matmul`` is the same computation written with gradtape's ``matmul`` and
``transpose`` (in the cheap order for the chain): the target is einsum within 1.2x of it,
the price of parsing the equation and choosing the order. PyTorch's ``torch.einsum`` is
timed as a second peer. Milliseconds per step, medians over interleaved repeats; every
einsum's gradients are checked against the matmul chain's first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import Config, Row, Target, WorkloadResult, blockwise, load_torch, median, settle

NAME = "einsum"
TITLE = "12. einsum vs the equivalent matmul chain, forward + backward (float32)"

Array = np.ndarray[Any, Any]

CASES: dict[str, tuple[tuple[int, ...], ...]] = {
    "bij,bjk->bik": ((32, 128, 128), (32, 128, 128)),
    "bhqd,bhkd->bhqk": ((8, 4, 64, 32), (8, 4, 64, 32)),
    "ij,jk,kl->il": ((256, 512), (512, 512), (512, 8)),
}


def _chain(eq: str, ts: list[Any]) -> Any:
    """The matmul spelling of each case."""
    from gradtape import ops

    if eq == "bij,bjk->bik":
        return ops.matmul(ts[0], ts[1])
    if eq == "bhqd,bhkd->bhqk":
        return ops.matmul(ts[0], ops.transpose(ts[1], -1, -2))
    return ops.matmul(ts[0], ops.matmul(ts[1], ts[2]))


def gradtape_step(eq: str, arrays: list[Array], chain: bool) -> Callable[[], list[Array]]:
    """Forward and backward through ``einsum`` (or its matmul chain); returns the gradients."""
    from gradtape import Cpu, ops

    dev = Cpu()
    ts = [dev.tensor(a, requires_grad=True) for a in arrays]

    def step() -> list[Array]:
        for t in ts:
            t.grad = None
        y = _chain(eq, ts) if chain else ops.einsum(eq, *ts)
        y.sum().backward()
        return [t.grad.numpy() for t in ts if t.grad is not None]

    return step


def torch_step(torch: Any, eq: str, arrays: list[Array]) -> Callable[[], list[Array]]:
    """``torch.einsum`` forward and backward on the same arrays."""
    ts = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]

    def step() -> list[Array]:
        for t in ts:
            t.grad = None
        torch.einsum(eq, *ts).sum().backward()
        return [t.grad.numpy() for t in ts]

    return step


def run(cfg: Config) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    torch = load_torch(cfg.threads)
    if torch is None:
        res.note("torch: not installed, its column is empty")
    rng = np.random.default_rng(0)
    for eq, shapes in CASES.items():
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        fns: dict[str, Callable[[], object]] = {
            "gradtape": gradtape_step(eq, arrays, chain=False),
            "matmul": gradtape_step(eq, arrays, chain=True),
        }
        if torch is not None:
            fns["torch"] = torch_step(torch, eq, arrays)
        ours, ref = fns["gradtape"](), fns["matmul"]()
        assert isinstance(ours, list) and isinstance(ref, list)
        worst = max(float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30)) for a, b in zip(ours, ref, strict=True))
        res.details[f"{eq}_max_rel_grad_diff_vs_matmul"] = worst
        if worst > 1e-4:
            res.note(f"WARNING: {eq}: einsum's gradients differ from the matmul chain's by {worst:g}")
        settle()
        times = blockwise(fns, cfg.reps(30, 6), warmup=2, rounds=3)
        ms = {name: median(t) * 1e3 for name, t in times.items()}
        res.rows.append(
            Row(
                NAME,
                f"einsum {eq!r} fwd+bwd, shapes {list(shapes)}",
                "ms",
                "lower",
                ms["gradtape"],
                {"matmul": ms["matmul"], "torch": ms.get("torch")},
                Target("matmul", "<=", 1.2),
            )
        )
    return res
