"""Workload 13, the ``Cuda`` device against PyTorch CUDA (issue 31), in one process.

Model rows: workload 9's models at batch sizes scaled for a GPU, trained with PyTorch's loop
in both libraries from the same initial weights (gradtape's, moved with ``model.to("cuda")``):
``zero_grad``, forward, ``cross_entropy``, ``backward``, optional ``clip_grad_norm_``,
``step``; each step ends with ``loss.item()``, which waits for the GPU in both. Milliseconds per
step, medians over interleaved blocks; the first losses of both are compared first. A row whose
model gradtape cannot run on the GPU yet is reported with the error, not skipped silently.

Kernel rows: the fused ``addmul`` (``out += a * b``, numba-cuda) and an array expression's
equivalent (CuPy) over 64M float32, in GB/s (bytes read and written), and as a fraction of a
device-to-device copy's bandwidth measured the same way (the memory bandwidth the GPU reaches).

Needs CuPy, numba-cuda and a GPU: without them the workload reports why and has no rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import Config, Row, Target, WorkloadResult, load_torch, median
from benchmarks.workloads.model import (
    ADAM,
    ADAMW,
    CONV_SGD,
    SEED,
    Case,
    _image_batches,
    conv_block_case,
    make_optimizer,
    mlp_case,
    transformer_case,
)

NAME = "gpu"
TITLE = "13. GPU: training steps on the Cuda device vs PyTorch CUDA, and kernel bandwidth (float32)"

Array = np.ndarray[Any, Any]


def gpu_cases(tiny: bool = False) -> list[Case]:
    """Workload 9's MLP, conv block and E256 transformer at GPU batch sizes (``tiny``: toy sizes)."""
    rng = np.random.default_rng(SEED)
    if tiny:
        mlp, mlp_b, conv_c, side, conv_b = (784, 32, 32, 10), 16, 8, 8, 4
        vocab, ctx, width, heads, seq_b = 20, 16, 32, 4, 4
        codes = rng.integers(0, vocab, 4000).astype(np.int64)
    else:
        from gradtape.examples.seq import Corpus, load_text

        mlp, mlp_b, conv_c, side, conv_b = (784, 1024, 1024, 10), 4096, 64, 32, 256
        corpus = Corpus.from_text(load_text())
        codes, vocab = corpus.train, len(corpus.vocab)
        ctx, width, heads, seq_b = 128, 256, 4, 64
    from benchmarks.workloads.model import _char_batches

    sz = "-".join(map(str, mlp))
    return [
        mlp_case("gpu_mlp", f"MLP {sz} b{mlp_b} Adam", mlp, _image_batches(rng, (mlp_b, mlp[0])), ADAM),
        conv_block_case(
            "gpu_conv",
            f"conv block 3-{conv_c}-{conv_c} {side}x{side} b{conv_b} SGD",
            conv_c,
            side,
            _image_batches(rng, (conv_b, 3, side, side)),
            CONV_SGD,
        ),
        transformer_case(
            "gpu_seq", f"char transformer d{width} L{ctx} b{seq_b} AdamW", vocab, ctx, width, heads, 2,
            _char_batches(codes, seq_b, ctx, SEED), ADAMW,
        ),
    ]  # fmt: skip


class GradtapeGpu:
    """The row on gradtape's ``Cuda`` device, PyTorch's loop."""

    def __init__(self, case: Case, model: Any) -> None:
        import gradtape
        from gradtape import optim

        self.case, self.model = case, model.to("cuda")
        ps = list(model.parameters())
        assert case.opt is not None
        self.opt: Any = make_optimizer(optim, ps, case.opt)
        self.params = ps
        dt = None if case.codes else np.float32
        self.xs = [gradtape.tensor(x, dtype=dt, device="cuda") for x, _ in case.batches]
        self.ys = [gradtape.tensor(y.reshape(-1), device="cuda") for _, y in case.batches]
        self.i = 0

    def step(self) -> float:
        from gradtape import nn

        k = self.i % len(self.xs)
        self.i += 1
        self.opt.zero_grad()
        logits = self.model(self.xs[k])
        loss = nn.functional.cross_entropy(logits.reshape((-1, logits.shape[-1])), self.ys[k])
        loss.backward()
        assert self.case.opt is not None
        if self.case.opt.clip is not None:
            nn.utils.clip_grad_norm_(self.params, self.case.opt.clip)
        self.opt.step()
        return loss.item()


class TorchGpu:
    """The row in PyTorch CUDA from the same weights."""

    def __init__(self, torch: Any, case: Case, params: dict[str, Array]) -> None:
        self.torch, self.case = torch, case
        dev = torch.device("cuda")
        self.model = case.torch_build(torch)
        self.model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in params.items()}, strict=True)
        self.model.to(dev)
        assert case.opt is not None
        self.opt: Any = make_optimizer(torch.optim, list(self.model.parameters()), case.opt)
        self.xs = [torch.from_numpy(x if case.codes else x.astype(np.float32)).to(dev) for x, _ in case.batches]
        self.ys = [torch.from_numpy(y.reshape(-1)).to(dev) for _, y in case.batches]
        self.i = 0

    def step(self) -> float:
        torch = self.torch
        k = self.i % len(self.xs)
        self.i += 1
        self.opt.zero_grad(set_to_none=True)
        x = self.xs[k]
        if self.case.codes:  # the transformer's forward builds its positions and mask on the input's device
            with torch.device("cuda"):
                logits = self.case.torch_fwd(torch, self.model, x)
        else:
            logits = self.case.torch_fwd(torch, self.model, x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), self.ys[k])
        loss.backward()
        assert self.case.opt is not None
        if self.case.opt.clip is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.case.opt.clip)
        self.opt.step()
        return float(loss.item())


def _time(fns: dict[str, Callable[[], object]], steps: int, rounds: int) -> dict[str, float]:
    """Median milliseconds per step over ``rounds`` interleaved blocks of ``steps`` steps."""
    per: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            fn()
            t0 = time.perf_counter()
            for _ in range(steps):
                fn()
            per[name].append((time.perf_counter() - t0) / steps)
    return {k: median(v) * 1e3 for k, v in per.items()}


def _bandwidth(res: WorkloadResult, n: int) -> None:
    import cupy as cp

    from gradtape.devices.kernels import cuda as kc

    out, a, b = (cp.random.default_rng(0).standard_normal(n, dtype=cp.float32) for _ in range(3))
    dst = cp.empty_like(out)

    def run(f: Callable[[], object], reps: int = 20) -> float:
        f()
        cp.cuda.Device().synchronize()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            cp.cuda.Device().synchronize()
            ts.append(time.perf_counter() - t0)
        return median(ts)

    copy_s = run(lambda: dst.__setitem__(Ellipsis, out))
    copy_gbs = 2 * 4 * n / copy_s / 1e9
    fused_s = run(lambda: kc.addmul(out, a, b))
    expr_s = run(lambda: out.__iadd__(a * b))
    moved = 4 * 4 * n  # read out, a, b; write out
    res.details["copy_GBps"] = copy_gbs
    res.rows.append(
        Row(
            NAME,
            f"addmul out += a*b, {n >> 20}M float32: GB/s (copy {copy_gbs:.0f} GB/s)",
            "GB/s",
            "higher",
            moved / fused_s / 1e9,
            {"cupy expr": moved / expr_s / 1e9 * 5 / 4, "copy": copy_gbs},  # a*b then += moves 5 arrays
            Target("copy", ">=", 0.8),
        )
    )


def run(cfg: Config, tiny: bool = False) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    from gradtape.devices.cuda import cuda_available

    if not cuda_available():
        res.note("no GPU here (needs CuPy, numba-cuda and an NVIDIA GPU): no rows")
        return res
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    res.details["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    res.note(f"GPU: {res.details['gpu']}, CuPy {cp.__version__}")
    torch = load_torch(cfg.threads)
    if torch is None or not torch.cuda.is_available():
        res.note("torch CUDA: not available, its column is empty")
        torch = None
    from gradtape import Cpu

    for case in gpu_cases(tiny):
        model = case.build(Cpu(seed=SEED))
        params = {name: np.array(t.data, copy=True) for name, t in model.named_parameters()}
        fns: dict[str, Callable[[], object]] = {}
        try:
            g = GradtapeGpu(case, model)
            first_g = [g.step() for _ in range(2)]
            fns["gradtape"] = g.step
        except Exception as e:  # a model gradtape cannot run on the GPU yet: say which op
            res.note(f"{case.label}: gradtape on the GPU failed: {type(e).__name__}: {str(e)[:300]}")
            first_g = []
        if torch is not None:
            t = TorchGpu(torch, case, params)
            first_t = [t.step() for _ in range(2)]
            fns["torch"] = t.step
            if first_g:
                gap = max(abs(a - b) / abs(b) for a, b in zip(first_g, first_t, strict=True))
                res.details[f"{case.key}_first_losses"] = {"gradtape": first_g, "torch": first_t, "max_rel_gap": gap}
                if gap > 1e-4:
                    res.note(f"WARNING: {case.label}: first losses differ: {first_g} vs torch {first_t}")
        ms = _time(fns, steps=cfg.reps(10, 2), rounds=cfg.reps(5, 2)) if fns else {}
        res.rows.append(
            Row(
                NAME,
                f"train {case.label}",
                "ms",
                "lower",
                ms.get("gradtape"),
                {"torch": ms.get("torch")},
                Target("torch", "<=", 1.2),
            )
        )
    _bandwidth(res, 1 << (16 if tiny else 26))
    return res
