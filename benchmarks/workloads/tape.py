"""Workload 1, tape overhead: forward+backward of a chain of 3,000 small elementwise ops.

The chain is 1,000 repeats of ``y = (y * 0.999).sin() + x`` on a traced 64-float float32
vector ``x``, then ``y.sum().backward()``: three recorded ops per repeat, each on 64
floats, so the time is almost all per-op bookkeeping (creating the output, recording
the backward closure, running it). Reported in microseconds per op (the chain's 3,000
ops; the final sum and its backward are timed too but not counted).

A second chain, with no target, uses tensor operands throughout:
``y = (y * w).tanh() + x`` with ``x`` and ``w`` both traced (a gated, residual update, the
shape of the elementwise work inside real models); both inputs' gradients are computed.

Implementations: gradtape (``x.trace(grads)`` into a store that keeps only ``x``'s
gradient), PyTorch eager (``requires_grad`` leaf), HIPS autograd (``make_vjp``) and a
hand-written numpy forward+backward that saves what the backward needs (no tape at all:
the floor).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import (
    Config,
    Row,
    Target,
    WorkloadResult,
    interleaved,
    load_autograd,
    load_torch,
    median,
    settle,
)

NAME = "tape"
TITLE = "1. Tape overhead: 3,000-op elementwise chain on 64 float32, fwd+bwd"

Array = np.ndarray[Any, Any]
Timed = Callable[[], tuple[float, float]]
"""A run of the chain returning ``(forward seconds, backward seconds)``."""

N = 64
REPEATS_IN_CHAIN = 1000
OPS_PER_REPEAT = 3


def chain_input(n: int = N) -> Array:
    """The chain's input: ``n`` float32 standard-normal samples (seed 0)."""
    return np.random.default_rng(0).standard_normal(n).astype(np.float32)


def _last_grad(run: Timed, last: list[Array]) -> Callable[[], Array]:
    """``grad()``: one more run of the chain, then the gradient it stored in ``last[0]``."""

    def grad() -> Array:
        run()
        return last[0]

    return grad


def gradtape_chain(x0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """gradtape's chain: ``(timed run, gradient of x)``."""
    from gradtape import Cpu, Gradients

    dev = Cpu(seed=0)
    x = dev.tensor(x0)
    last: list[Array] = []

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        grads = Gradients.leaky()
        grads.retain_leafs([x])
        xt = x.trace(grads)
        y = xt
        for _ in range(repeats):
            y = (y * 0.999).sin() + xt
        loss = y.sum()
        t1 = time.perf_counter()
        g = loss.backward()
        t2 = time.perf_counter()
        last[:] = [g.get(x).numpy()]
        return t1 - t0, t2 - t1

    return run, _last_grad(run, last)


def torch_chain(torch: Any, x0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """PyTorch eager's chain: ``(timed run, gradient of x)``."""
    x = torch.from_numpy(x0.copy()).requires_grad_()

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        x.grad = None
        y = x
        for _ in range(repeats):
            y = (y * 0.999).sin() + x
        loss = y.sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    def grad() -> Array:
        run()
        g: Array = x.grad.numpy().copy()
        return g

    return run, grad


def autograd_chain(autograd: Any, anp: Any, x0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """HIPS autograd's chain (``make_vjp``: forward records, the vjp runs backward)."""
    from autograd import make_vjp

    def f(x: Any) -> Any:
        y = x
        for _ in range(repeats):
            y = anp.sin(y * 0.999) + x
        return anp.sum(y)

    x = x0.copy()
    last: list[Array] = []

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        vjp, _ = make_vjp(f)(x)
        t1 = time.perf_counter()
        g = vjp(np.float32(1.0))
        t2 = time.perf_counter()
        last[:] = [np.asarray(g)]
        return t1 - t0, t2 - t1

    return run, _last_grad(run, last)


def numpy_chain(x0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """Hand-written numpy forward (saving each sine's argument) and backward: no tape."""
    x = x0.copy()
    c = np.float32(0.999)
    last: list[Array] = []

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        saved: list[Array] = []
        y = x
        for _ in range(repeats):
            u = y * c
            saved.append(u)
            y = np.sin(u)
            y += x
        float(y.sum())
        t1 = time.perf_counter()
        g = np.ones_like(x)
        gx = np.zeros_like(x)
        for u in reversed(saved):
            gx += g  # through "+ x"
            g = np.cos(u) * g  # through sin
            g *= c  # through "* 0.999"
        gx += g  # y0 is x itself
        t2 = time.perf_counter()
        last[:] = [gx]
        return t1 - t0, t2 - t1

    return run, _last_grad(run, last)


# ----- the tensor-operand chain: y = (y * w).tanh() + x ------------------------------------


def tensor_inputs(n: int = N) -> tuple[Array, Array]:
    """``(x, w)``: float32 samples (seed 1), ``w`` in [0.5, 1.5) so the chain neither dies nor
    explodes."""
    rng = np.random.default_rng(1)
    return rng.standard_normal(n).astype(np.float32), rng.uniform(0.5, 1.5, n).astype(np.float32)


def gradtape_tensor_chain(x0: Array, w0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """gradtape's tensor-operand chain: ``(timed run, concatenated gradients of x and w)``."""
    from gradtape import Cpu, Gradients

    dev = Cpu(seed=0)
    x, w = dev.tensor(x0), dev.tensor(w0)
    last: list[Array] = []

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        grads = Gradients.leaky()
        grads.retain_leafs([x, w])
        xt, wt = x.trace(grads), w.trace(grads)
        y = xt
        for _ in range(repeats):
            y = (y * wt).tanh() + xt
        loss = y.sum()
        t1 = time.perf_counter()
        g = loss.backward()
        t2 = time.perf_counter()
        last[:] = [np.concatenate([g.get(x).numpy(), g.get(w).numpy()])]
        return t1 - t0, t2 - t1

    return run, _last_grad(run, last)


def torch_tensor_chain(torch: Any, x0: Array, w0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """PyTorch eager's tensor-operand chain."""
    x = torch.from_numpy(x0.copy()).requires_grad_()
    w = torch.from_numpy(w0.copy()).requires_grad_()

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        x.grad = w.grad = None
        y = x
        for _ in range(repeats):
            y = (y * w).tanh() + x
        loss = y.sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1

    def grad() -> Array:
        run()
        return np.concatenate([x.grad.numpy(), w.grad.numpy()])

    return run, grad


def autograd_tensor_chain(anp: Any, x0: Array, w0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """HIPS autograd's tensor-operand chain (``make_vjp`` over ``(x, w)``)."""
    from autograd import make_vjp

    def f(xw: tuple[Any, Any]) -> Any:
        x, w = xw
        y = x
        for _ in range(repeats):
            y = anp.tanh(y * w) + x
        return anp.sum(y)

    last: list[Array] = []

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        vjp, _ = make_vjp(f)((x0.copy(), w0.copy()))
        t1 = time.perf_counter()
        gx, gw = vjp(np.float32(1.0))
        t2 = time.perf_counter()
        last[:] = [np.concatenate([np.asarray(gx), np.asarray(gw)])]
        return t1 - t0, t2 - t1

    return run, _last_grad(run, last)


def numpy_tensor_chain(x0: Array, w0: Array, repeats: int) -> tuple[Timed, Callable[[], Array]]:
    """Hand-written numpy forward (saving each step's input and tanh) and backward."""
    x, w = x0.copy(), w0.copy()
    last: list[Array] = []

    def run() -> tuple[float, float]:
        t0 = time.perf_counter()
        saved: list[tuple[Array, Array]] = []
        y = x
        for _ in range(repeats):
            t = np.tanh(y * w)
            saved.append((y, t))
            y = t + x
        float(y.sum())
        t1 = time.perf_counter()
        g = np.ones_like(x)
        gx = np.zeros_like(x)
        gw = np.zeros_like(w)
        for yi, t in reversed(saved):
            gx += g  # through "+ x"
            d = g * (1 - t * t)  # through tanh
            gw += d * yi  # through "* w"
            g = d * w
        gx += g  # y0 is x itself
        t2 = time.perf_counter()
        last[:] = [np.concatenate([gx, gw])]
        return t1 - t0, t2 - t1

    return run, _last_grad(run, last)


def _time_chains(
    impls: dict[str, tuple[Timed, Callable[[], Array]]], nrep: int, res: WorkloadResult, key: str, ops: int
) -> dict[str, dict[str, float]]:
    """Check every implementation's gradient against numpy's, time them interleaved and
    return ``{name: {"total", "forward", "backward"}}`` in us per op (``ops`` ops per chain)."""
    ref = impls["numpy"][1]()
    for name, (_, grad) in impls.items():
        err = float(np.max(np.abs(grad() - ref)))
        res.details.setdefault(f"{key}grad_max_abs_diff_vs_numpy", {})[name] = err
        if err > 1e-3 * max(1.0, float(np.max(np.abs(ref)))):
            res.note(f"WARNING: {name}'s gradient differs from numpy's by {err:g} ({key or 'scalar '}chain)")
    splits: dict[str, list[tuple[float, float]]] = {name: [] for name in impls}

    def recorder(name: str, fn: Timed) -> Callable[[], None]:
        def call() -> None:
            splits[name].append(fn())

        return call

    settle()
    interleaved({name: recorder(name, fn) for name, (fn, _) in impls.items()}, nrep, warmup=2)
    out: dict[str, dict[str, float]] = {}
    for name, sp in splits.items():
        sp = sp[2:]  # drop the warm-up rounds
        out[name] = {
            "total": median([f + b for f, b in sp]) / ops * 1e6,
            "forward": median([f for f, _ in sp]) / ops * 1e6,
            "backward": median([b for _, b in sp]) / ops * 1e6,
        }
    return out


def run(cfg: Config) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    repeats = REPEATS_IN_CHAIN
    ops = repeats * OPS_PER_REPEAT
    x0 = chain_input()
    impls: dict[str, tuple[Timed, Callable[[], Array]]] = {"gradtape": gradtape_chain(x0, repeats)}
    torch = load_torch(cfg.threads)
    if torch is None:
        res.note("torch: not installed, skipped")
    else:
        impls["torch"] = torch_chain(torch, x0, repeats)
    ag = load_autograd()
    if ag is None:
        res.note("autograd: not installed, skipped")
    else:
        impls["autograd"] = autograd_chain(ag[0], ag[1], x0, repeats)
    impls["numpy"] = numpy_chain(x0, repeats)

    # Same gradient everywhere (float32; a loose tolerance: 1,000 chained sines).
    nrep = cfg.reps(15, 4)
    us = _time_chains(impls, nrep, res, "", ops)
    res.details["us_per_op"] = us
    per_op = {name: v["total"] for name, v in us.items()}
    res.details.update({"ops": ops, "n": N, "dtype": "float32", "repeats": nrep})
    peers = {p: per_op.get(p) for p in ("torch", "autograd", "numpy")}
    res.rows.append(
        Row(
            NAME,
            "fwd+bwd per op",
            "us/op",
            "lower",
            per_op["gradtape"],
            peers,
            Target("torch", "<=", 0.35),
        )
    )
    for part in ("forward", "backward"):
        res.rows.append(
            Row(
                NAME,
                f"{part} per op",
                "us/op",
                "lower",
                res.details["us_per_op"]["gradtape"][part],
                {p: res.details["us_per_op"][p][part] for p in ("torch", "autograd", "numpy") if p in impls},
            )
        )

    xw = tensor_inputs()
    timpls: dict[str, tuple[Timed, Callable[[], Array]]] = {"gradtape": gradtape_tensor_chain(*xw, repeats)}
    if torch is not None:
        timpls["torch"] = torch_tensor_chain(torch, *xw, repeats)
    if ag is not None:
        timpls["autograd"] = autograd_tensor_chain(ag[1], *xw, repeats)
    timpls["numpy"] = numpy_tensor_chain(*xw, repeats)
    tus = _time_chains(timpls, nrep, res, "tensor_chain_", ops)
    res.details["tensor_chain_us_per_op"] = tus
    res.rows.append(
        Row(
            NAME,
            "tensor operands (y*w).tanh()+x, fwd+bwd per op",
            "us/op",
            "lower",
            tus["gradtape"]["total"],
            {p: tus[p]["total"] for p in ("torch", "autograd", "numpy") if p in timpls},
        )
    )
    return res
