"""Run gradtape's benchmark workloads against its peers and report ratios.

    python benchmarks/run.py                      # everything, a few minutes on 2 cores
    python benchmarks/run.py --quick              # sub-minute smoke run (rough figures)
    python benchmarks/run.py --only tape,mlp      # some workloads: tape mlp kernels matmul coldstart memory hvp scan
    python benchmarks/run.py --only model         # model-scale training steps vs PyTorch and JAX (workload 9)
    python benchmarks/run.py --only distributed   # data-parallel over MPI, 1 vs 2 ranks (workload 10)
    python benchmarks/run.py --only rnn           # nn.LSTM / nn.GRU training steps vs PyTorch (workload 11)
    python benchmarks/run.py --only einsum        # einsum vs the equivalent matmul chain (workload 12)
    python benchmarks/run.py --only gpu           # the Cuda device vs PyTorch CUDA (workload 13; needs a GPU)
    python benchmarks/run.py --json out.json      # JSON elsewhere (default: benchmarks/results/latest.json)
    python benchmarks/run.py --profile            # also cProfile gradtape in workloads 1 and 2

Peers (PyTorch, HIPS autograd) run in the same process when installed and are skipped
with a line when not; numpy is always there. PyTorch is set to the thread count numba
uses (``numba.get_num_threads()``), which numpy's BLAS also uses by default. Every figure
is a median over repeats after warm-up, and every comparison is a ratio gradtape / peer.
The table is printed, written as JSON, and written as Markdown beside the JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: import ``benchmarks`` from the checkout, and gradtape from its src/.
    _root = Path(__file__).resolve().parents[1]
    sys.path[0] = str(_root)
    sys.path.insert(1, str(_root / "src"))

from typing import Any

# gradtape first: its import loads TBB before numba picks a threading layer (numba would pick
# OpenMP at the numba.get_num_threads() below, whose spinning workers slowed PyTorch's own
# OpenMP threads 25x in workload 8)
import gradtape  # noqa: F401
from benchmarks.common import ROOT, Config, WorkloadResult, load_autograd, load_torch, machine_facts, settle

WORKLOADS = (
    "tape",
    "mlp",
    "kernels",
    "matmul",
    "coldstart",
    "memory",
    "hvp",
    "scan",
    "model",
    "distributed",
    "rnn",
    "einsum",
    "gpu",
)
PEER_ORDER = ("torch", "torch.func", "torch-import", "autograd", "numpy", "python")


def _module(name: str) -> Any:
    import importlib

    return importlib.import_module(f"benchmarks.workloads.{name}")


def fmt(v: float | None) -> str:
    """A figure with about three significant digits."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def table_rows(results: list[WorkloadResult]) -> list[list[str]]:
    """One line per (figure, peer): the cells of the table."""
    lines: list[list[str]] = []
    for res in results:
        for row in res.rows:
            peers = sorted(row.peers, key=lambda p: PEER_ORDER.index(p) if p in PEER_ORDER else 99)
            first = True
            for p in peers or [""]:
                r = row.ratio(p) if p else None
                is_target = row.target is not None and row.target.peer == p
                lines.append(
                    [
                        row.workload if first else "",
                        f"{row.metric} [{row.unit}]" if first else "",
                        fmt(row.gradtape) if first else "",
                        p,
                        fmt(row.peers.get(p)) if p else "",
                        "-" if r is None else f"{r:.2f}x",
                        f"{row.better} better" if first else "",
                        row.target.text() if is_target and row.target else "",
                        row.status() if is_target else "",
                    ]
                )
                first = False
    return lines


HEAD = ["workload", "figure [unit]", "gradtape", "peer", "peer fig.", "gradtape/peer", "better", "target", "status"]


def text_table(results: list[WorkloadResult]) -> str:
    rows = [HEAD, *table_rows(results)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    out = []
    for k, r in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def markdown_table(results: list[WorkloadResult]) -> str:
    rows = table_rows(results)
    out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def machine_lines(facts: dict[str, Any]) -> list[str]:
    th = facts["threads"]
    blas = (
        ", ".join(
            f"{b['internal_api']} {b['num_threads']}"
            + (f" ({b['architecture']} kernels)" if b.get("architecture") else "")
            for b in th["blas"]
        )
        or "unknown"
    )
    forced = facts.get("openblas_env") or {}
    return [
        f"CPU: {facts['cpu_model']} ({facts['usable_cpus']} usable of {facts['logical_cpus']} logical CPUs; "
        f"{' '.join(facts['cpu_flags'])}), {facts['mem_total_gb']} GB RAM, {facts['platform']}",
        f"python {facts['python']}, numpy {facts['numpy']}, numba {facts['numba']} (llvmlite {facts['llvmlite']}), "
        f"torch {facts['torch'] or 'not installed'}, autograd {facts['autograd'] or 'not installed'}, "
        f"scikit-learn {facts['scikit_learn'] or 'not installed'}; gradtape {facts['gradtape_commit']}",
        f"threads: numba {th['numba']}, numpy BLAS/OpenMP pools: {blas}; "
        + (f"torch.set_num_threads({th['torch']})" if th["torch"] is not None else "torch not installed")
        + ("; environment forces " + " ".join(f"{k}={v}" for k, v in sorted(forced.items())) if forced else "")
        + (
            f"; OpenBLAS workers spin 2**{facts['openblas_thread_timeout']} cycles after a product"
            if facts.get("openblas_thread_timeout") is not None
            else ""
        ),
        f"convolutions, LSTMs and GRUs (float32): {facts.get('onednn') or 'numba + BLAS'}",
        f"matrix products (float32): {facts.get('matmul') or 'numpy BLAS'}",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="sub-minute smoke run: fewer repeats, rough figures")
    ap.add_argument("--only", default="", help=f"comma-separated workloads out of: {', '.join(WORKLOADS)}")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "latest.json", help="JSON output")
    ap.add_argument("--profile", action="store_true", help="also cProfile gradtape in workloads 1 and 2")
    args = ap.parse_args(argv)

    selected = [w.strip() for w in args.only.split(",") if w.strip()] or list(WORKLOADS)
    unknown = [w for w in selected if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")

    import numba

    threads = numba.get_num_threads()
    cfg = Config(quick=args.quick, threads=threads)
    if load_torch(threads) is None:
        print("torch: not installed; PyTorch columns are skipped")
    load_autograd()
    facts = machine_facts(threads)
    header = machine_lines(facts)
    command = "python benchmarks/run.py" + (" " + " ".join(sys.argv[1:]) if argv is None and sys.argv[1:] else "")
    print("\n".join(header))
    print(f"command: {command}\n")

    results: list[WorkloadResult] = []
    failed: list[str] = []
    started = time.perf_counter()
    for name in selected:
        mod = _module(name)
        print(f"== {mod.TITLE}", flush=True)
        t0 = time.perf_counter()
        settle()
        try:
            res: WorkloadResult = mod.run(cfg)
        except Exception:
            traceback.print_exc()
            failed.append(name)
            continue
        res.seconds = time.perf_counter() - t0
        print(f"  done in {res.seconds:.1f} s", flush=True)
        results.append(res)

    profile = None
    if args.profile:
        from benchmarks.hotspots import profile as run_profile

        profile = run_profile(cfg)

    print()
    print("\n".join(header))
    print(f"command: {command}  ({time.perf_counter() - started:.0f} s{', QUICK: rough figures' if cfg.quick else ''})")
    print("ratio = gradtape / peer, medians over repeats; 'better' says which direction is good for the figure\n")
    print(text_table(results))
    notes = [f"[{r.name}] {n}" for r in results for n in r.notes]
    if notes:
        print("\nnotes:\n  " + "\n  ".join(notes))
    if failed:
        print(f"\nFAILED workloads: {', '.join(failed)}")

    payload = {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command,
        "quick": cfg.quick,
        "machine": facts,
        "threads": threads,
        "workloads": {r.name: r.to_json() for r in results},
        "failed": failed,
        "profile": profile,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    md = args.json.with_suffix(".md")
    md.write_text(
        "\n".join(f"- {h}" for h in header)
        + f"\n- command: `{command}`\n\n"
        + markdown_table(results)
        + ("\n\nNotes:\n\n" + "\n".join(f"- {n}" for n in notes) if notes else "")
        + "\n"
    )
    print(f"\nwrote {args.json} and {md}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
