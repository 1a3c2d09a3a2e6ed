"""Workload 11, recurrent layers: an ``nn.LSTM`` and an ``nn.GRU`` training step (issue 27).

Two layers, input and hidden size 256, sequence 64, batch 32, float32 (the issue's size; a
word-language-model LSTM): forward, the loss ``sum(output * w)`` for a fixed ``w`` plus the
final hidden state's sum, backward into every parameter's ``.grad``, written the same way in
both libraries (PyTorch's own ``torch.nn.LSTM``/``GRU`` on the CPU, from the same weights).
Milliseconds per step, medians over blocks of repeats (both libraries use every core, so the
blocks keep their thread pools from alternating); the gradients are checked against each
other first. Target: gradtape at most 1.0x PyTorch's time (PyTorch on as many threads as
numba; a second peer, ``torch-1thread``, runs PyTorch on one thread). Both libraries run the
float32 LSTM on oneDNN's LSTM primitive, one per layer (PyTorch's bundled oneDNN, gradtape's the
optional ``onednn-cpu-gomp`` wheel's: ``gradtape.devices.kernels.rnn.OneDNNStack``); gradtape runs
the GRU on oneDNN's ``lbr_gru`` too, PyTorch on its own kernels. Without the wheel gradtape runs
both on its numba path: the two layers as a wavefront on two threads, each doing its own small
products on one BLAS thread (``gradtape.devices.kernels.rnn.Stack``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import Config, Row, Target, WorkloadResult, blockwise, load_torch, median, settle

NAME = "rnn"
TITLE = "11. nn.LSTM / nn.GRU training step, 2 layers, hidden 256, seq 64, batch 32 (float32)"
SHAPE = (64, 32, 256, 256)
"""(sequence, batch, input size, hidden size)."""
LAYERS = 2

Array = np.ndarray[Any, Any]


def inputs(shape: tuple[int, int, int, int] = SHAPE, seed: int = 0) -> dict[str, Array]:
    """The input sequence ``x (L, B, I)`` and the loss weights ``w (L, B, H)``, float32."""
    length, batch, ni, nh = shape
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((length, batch, ni)).astype(np.float32),
        "w": rng.standard_normal((length, batch, nh)).astype(np.float32),
    }


def gradtape_model(kind: str, shape: tuple[int, int, int, int], layers: int = LAYERS) -> Any:
    """``gradtape.nn.LSTM`` or ``GRU`` with PyTorch's initialisation (seeded)."""
    from gradtape import Cpu, nn

    cls = nn.LSTM if kind == "LSTM" else nn.GRU
    return cls(shape[2], shape[3], num_layers=layers, dev=Cpu(seed=0))


def gradtape_step(model: Any, arrays: dict[str, Array]) -> Callable[[], dict[str, Array]]:
    """One training step's forward and backward; returns every parameter's gradient."""
    from gradtape import Cpu

    dev = Cpu()
    x, w = dev.tensor(arrays["x"]), dev.tensor(arrays["w"])

    def step() -> dict[str, Array]:
        model.zero_grad()
        out, state = model(x)
        h_n = state[0] if isinstance(state, tuple) else state
        ((out * w).sum() + h_n.sum()).backward()
        return {n: p.grad.numpy() for n, p in model.named_parameters()}

    return step


def torch_step(
    torch: Any, kind: str, ours: Any, arrays: dict[str, Array], threads: int | None = None
) -> Callable[[], dict[str, Array]]:
    """The same step in PyTorch, its layer holding ``ours``' weights; with ``threads``, on that
    many intra-op threads (restored after each step)."""
    ni, nh = arrays["x"].shape[2], arrays["w"].shape[2]
    cls = torch.nn.LSTM if kind == "LSTM" else torch.nn.GRU
    model = cls(ni, nh, num_layers=ours.num_layers)
    mine = dict(ours.named_parameters())
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.from_numpy(mine[n].numpy().copy()))
    x, w = torch.from_numpy(arrays["x"]), torch.from_numpy(arrays["w"])

    def step() -> dict[str, Array]:
        before = torch.get_num_threads()
        if threads is not None:
            torch.set_num_threads(threads)
        try:
            model.zero_grad(set_to_none=True)
            out, state = model(x)
            h_n = state[0] if isinstance(state, tuple) else state
            ((out * w).sum() + h_n.sum()).backward()
        finally:
            torch.set_num_threads(before)
        return {n: p.grad.numpy() for n, p in model.named_parameters()}

    return step


def run(cfg: Config) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    shape = (16, 32, 256, 256) if cfg.quick else SHAPE
    arrays = inputs(shape)
    torch = load_torch(cfg.threads)
    if torch is None:
        res.note("torch: not installed, skipped")
    ms_all: dict[str, dict[str, float]] = {}
    for kind in ("LSTM", "GRU"):
        model = gradtape_model(kind, shape)
        fns: dict[str, Callable[[], object]] = {"gradtape": gradtape_step(model, arrays)}
        if torch is not None:
            fns["torch"] = torch_step(torch, kind, model, arrays)
            if cfg.threads > 1:  # gradtape runs its time loop's products on one thread: PyTorch so too
                fns["torch-1thread"] = torch_step(torch, kind, model, arrays, threads=1)
            ours, theirs = fns["gradtape"](), fns["torch"]()
            assert isinstance(ours, dict) and isinstance(theirs, dict)
            worst = max(
                float(np.max(np.abs(ours[k] - theirs[k])) / (np.max(np.abs(theirs[k])) + 1e-30)) for k in theirs
            )
            res.details[f"{kind}_max_rel_grad_diff_vs_torch"] = worst
            if worst > 1e-3:
                res.note(f"WARNING: {kind} gradients differ from PyTorch's by {worst:g} (relative)")
        settle()
        times = blockwise(fns, cfg.reps(9, 3), warmup=1, rounds=3)
        ms = {name: median(t) * 1e3 for name, t in times.items()}
        ms_all[kind] = ms
        res.rows.append(
            Row(
                NAME,
                f"nn.{kind} fwd+bwd {LAYERS} layers, (L, B, I, H) = {shape}",
                "ms",
                "lower",
                ms["gradtape"],
                {"torch": ms.get("torch"), **({"torch-1thread": ms["torch-1thread"]} if "torch-1thread" in ms else {})},
                Target("torch", "<=", 1.0),
            )
        )
    res.details["ms_per_step"] = ms_all
    return res
