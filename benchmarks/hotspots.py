"""``--profile``: where gradtape's time goes in workloads 1 and 2 (cProfile, by self time).

cProfile adds its own cost to every Python call, which inflates many cheap calls relative
to few expensive ones; read the ranking, not the absolute times. It does not list numpy
ufunc calls (``np.sin``, ``np.matmul``, ``a * b``) as functions: their time is the self
time of the Python function that made them.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from typing import Any

from benchmarks.common import Config, settle


def _where(file: str, line: int, func: str) -> str:
    if file == "~":
        return func
    return f"{file.split('/src/')[-1].split('site-packages/')[-1].split('/main/')[-1]}:{line}({func})"


def _top(
    fn: Callable[[], object], n: int, phases: dict[str, tuple[str, str]]
) -> tuple[float, list[dict[str, Any]], dict[str, float]]:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = float(stats.total_tt)  # type: ignore[attr-defined]
    rows = []
    cum: dict[str, float] = dict.fromkeys(phases, 0.0)
    for (file, line, func), (_cc, ncalls, tottime, cumtime, _callers) in raw.items():
        rows.append(
            {"function": _where(file, line, func), "ncalls": ncalls, "tottime_s": tottime, "cumtime_s": cumtime}
        )
        for label, (file_end, name) in phases.items():
            if func == name and file.endswith(file_end):
                cum[label] += cumtime
    rows.sort(key=lambda r: -float(r["tottime_s"]))
    return total, rows[:n], cum


def profile(cfg: Config, n: int = 15) -> dict[str, Any]:
    """Profile gradtape's side of workloads 1 (5 chains) and 2 (2 epochs); print and return
    the top ``n`` functions by self time."""
    from benchmarks.workloads import mlp, tape

    run_chain, _ = tape.gradtape_chain(tape.chain_input(), tape.REPEATS_IN_CHAIN)
    run_chain()

    def chains() -> None:
        for _ in range(5):
            run_chain()

    data = mlp.load_data()
    trainer = mlp.GradtapeMLP(data, mlp.init_params())
    plan = mlp.epoch_batches(len(data.x_tr), 3)
    for idx in plan[0]:
        trainer.step(idx)

    def epochs() -> None:
        for batches in plan[1:]:
            for idx in batches:
                trainer.step(idx)

    tape_phases = {
        "backward (Tensor.backward)": ("gradtape/tensor.py", "backward"),
        "  of which drop_non_leafs": ("gradtape/gradients.py", "drop_non_leafs"),
    }
    mlp_phases = {
        "forward (model)": ("benchmarks/workloads/mlp.py", "forward"),
        "cross_entropy": ("gradtape/losses.py", "cross_entropy"),
        "backward (Tensor.backward)": ("gradtape/tensor.py", "backward"),
        "optimizer axpy (2 per param)": ("gradtape/devices/kernels/elementwise.py", "axpy"),
        "input dev.tensor": ("gradtape/devices/cpu.py", "tensor"),
    }
    settle()
    out: dict[str, Any] = {}
    for key, fn, what, phases in (
        ("tape", chains, "workload 1, gradtape: 5 chains of 3,000 ops", tape_phases),
        ("mlp", epochs, f"workload 2, gradtape: 2 epochs ({2 * len(plan[0])} steps)", mlp_phases),
    ):
        total, rows, cum = _top(fn, n, phases)
        out[key] = {"what": what, "total_s": total, "top_by_self_time": rows, "phases_cumtime_s": cum}
        print(f"\ncProfile, {what}: {total:.3f} s under the profiler")
        for label, secs in cum.items():
            print(f"  {label:<30} {secs:8.4f} s cumulative ({100 * secs / total if total else 0:4.1f}%)")
        print(f"  top {n} by self time (numpy ufunc calls count as their caller's self time):")
        print(f"  {'self s':>8} {'self %':>7} {'calls':>9}  function")
        for r in rows:
            pct = 100 * float(r["tottime_s"]) / total if total else 0.0
            print(f"  {r['tottime_s']:8.4f} {pct:6.1f}% {r['ncalls']:9d}  {r['function']}")
    return out
