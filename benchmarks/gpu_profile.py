"""Where a Cuda-device training step spends its time: the step's wall time, then cProfile over
steps of one workload-13 row (``python benchmarks/gpu_profile.py [mlp|conv|seq] [steps]``);
``loss.item()`` ends each step, as in the benchmark. Needs a GPU."""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    _root = Path(__file__).resolve().parents[1]
    sys.path[0] = str(_root)
    sys.path.insert(1, str(_root / "src"))

from benchmarks.workloads.gpu import GradtapeGpu, gpu_cases
from benchmarks.workloads.model import SEED


def main(argv: list[str]) -> None:
    which = argv[0] if argv else "mlp"
    steps = int(argv[1]) if len(argv) > 1 else 20
    case = {c.key: c for c in gpu_cases()}[f"gpu_{which}"]
    from gradtape import Cpu

    g = GradtapeGpu(case, case.build(Cpu(seed=SEED)))
    for _ in range(3):
        g.step()
    t0 = time.perf_counter()
    for _ in range(steps):
        g.step()
    print(f"{case.label}: {(time.perf_counter() - t0) / steps * 1e3:.2f} ms per step")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        g.step()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main(sys.argv[1:])
