"""gradtape.optim: optimizers against their published rules (hand-computed) and torch.optim,
the fused kernels against numpy (large and non-contiguous parameters), schedules, gradient
clipping, gradient accumulation and argument errors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor
from gradtape.devices.kernels import optim as ko
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD
from gradtape.losses import cross_entropy
from gradtape.optim import (
    SGD,
    Adam,
    AdamW,
    CosineAnnealingLR,
    Optimizer,
    RMSprop,
    StepLR,
    clip_grad_norm_,
)

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)


def _param(values: Any, dtype: Any = np.float64) -> Tensor[Any, Any]:
    """A parameter: a leaf that requires grad."""
    return DEV.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def _grads(pairs: list[tuple[Tensor[Any, Any], Any]]) -> Gradients:
    grads = Gradients()
    for p, g in pairs:
        grads.grad_replace(p, np.asarray(g, dtype=p.dtype))
    return grads


def _run(opt: Optimizer, p: Tensor[Any, Any], gs: list[Any]) -> list[Array]:
    """Step ``opt`` once per gradient in ``gs``; return p's values after each step."""
    out = []
    for g in gs:
        opt.step(_grads([(p, [g] if np.ndim(g) == 0 else g)]))
        out.append(p.data.copy())
    return out


def _close(actual: list[Array], expected: list[float], rtol: float = 1e-12) -> None:
    np.testing.assert_allclose([float(a[0]) for a in actual], expected, rtol=rtol, atol=1e-12)


# ----- published rules, hand-computed ---------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sgd_plain_and_weight_decay(dtype: Any) -> None:
    p = _param([1.0, -2.0], dtype)
    data = p.data
    opt = SGD([p], lr=0.1)
    opt.step(_grads([(p, [0.5, 1.0])]))
    opt.step(_grads([(p, [0.5, 1.0])]))
    assert p.data is data and p.dtype == dtype  # updated in place
    np.testing.assert_allclose(p.data, [0.9, -2.2], rtol=1e-6)
    q = _param([1.0], dtype)
    _close(_run(SGD([q], lr=0.1, weight_decay=0.1), q, [1.0, 1.0]), [0.89, 0.7811], rtol=1e-6)


def test_sgd_momentum_dampening_nesterov() -> None:
    # buf = g on the first step, then 0.9 * buf + (1 - dampening) * g
    p = _param([1.0])
    _close(_run(SGD([p], lr=0.1, momentum=0.9), p, [1.0, 1.0, 1.0]), [0.9, 0.71, 0.439])
    p = _param([1.0])
    _close(_run(SGD([p], lr=0.1, momentum=0.9, dampening=0.5), p, [1.0, 1.0]), [0.9, 0.76])
    # Nesterov: d = g + 0.9 * buf
    p = _param([1.0])
    _close(_run(SGD([p], lr=0.1, momentum=0.9, nesterov=True), p, [1.0, 1.0]), [0.81, 0.539])
    # momentum with weight decay: d = g + 0.5 * p
    p = _param([2.0])
    d1 = 1.0 + 0.5 * 2.0
    p1 = 2.0 - 0.1 * d1
    d2 = 1.0 + 0.5 * p1
    p2 = p1 - 0.1 * (0.9 * d1 + d2)
    _close(_run(SGD([p], lr=0.1, momentum=0.9, weight_decay=0.5), p, [1.0, 1.0]), [p1, p2])


def test_adam_rule() -> None:
    # constant gradient: bias-corrected m = g, v = g**2, so each step moves lr * g / (|g| + eps)
    p = _param([1.0])
    _close(_run(Adam([p], lr=0.1), p, [2.0] * 3), [1.0 - k * 0.1 * 2.0 / (2.0 + 1e-8) for k in (1, 2, 3)])
    # beta1 = 0.5, beta2 = 0.75, lr = 1, eps = 0, gradients 1 then -1
    p = _param([1.0])
    _close(_run(Adam([p], lr=1.0, betas=(0.5, 0.75), eps=0.0), p, [1.0, -1.0]), [0.0, 1.0 / 3.0])
    # L2 weight decay enters the gradient: g = -0.5 + 1 * p = 0.5 > 0
    p = _param([1.0])
    _close(_run(Adam([p], lr=1.0, betas=(0.0, 0.0), eps=0.0, weight_decay=1.0), p, [-0.5]), [0.0])


def test_adam_amsgrad() -> None:
    # beta1 = 0, beta2 = 0.5: v = 2 then 1.5; AMSGrad keeps v_max = 2
    p = _param([0.0])
    out = _run(Adam([p], lr=1.0, betas=(0.0, 0.5), eps=0.0, amsgrad=True), p, [2.0, 1.0])
    _close(out, [-1.0, -1.0 - 1.0 / math.sqrt(2.0 / 0.75)])
    p = _param([0.0])
    out = _run(Adam([p], lr=1.0, betas=(0.0, 0.5), eps=0.0), p, [2.0, 1.0])
    _close(out, [-1.0, -1.0 - 1.0 / math.sqrt(1.5 / 0.75)])


def test_adamw_decoupled_decay() -> None:
    # p *= 1 - lr * wd before the Adam step; the gradient is left alone
    p = _param([1.0])
    step = 0.1 * 2.0 / (2.0 + 1e-8)
    p1 = 1.0 * 0.95 - step
    _close(_run(AdamW([p], lr=0.1, weight_decay=0.5), p, [2.0, 2.0]), [p1, p1 * 0.95 - step])
    assert AdamW([p]).weight_decay == 1e-2


def test_rmsprop_rule() -> None:
    p = _param([0.0])
    _close(
        _run(RMSprop([p], lr=1.0, alpha=0.5, eps=0.0), p, [2.0, 2.0]), [-math.sqrt(2), -math.sqrt(2) - 2 / math.sqrt(3)]
    )
    # centered: s = 2, a = 1 -> sqrt(s - a^2) = 1; then s = 3, a = -0.5 -> sqrt(2.75)
    p = _param([0.0])
    out = _run(RMSprop([p], lr=1.0, alpha=0.5, eps=0.0, centered=True), p, [2.0, -2.0])
    _close(out, [-2.0, -2.0 + 2.0 / math.sqrt(2.75)])
    # momentum: b = 0.5 * b + g / sqrt(s)
    p = _param([0.0])
    b1 = math.sqrt(2)
    b2 = 0.5 * b1 + 2 / math.sqrt(3)
    _close(_run(RMSprop([p], lr=1.0, alpha=0.5, eps=0.0, momentum=0.5), p, [2.0, 2.0]), [-b1, -b1 - b2])
    # weight decay: g = 0 + 1 * p = 1, s = 0.5
    p = _param([1.0])
    _close(_run(RMSprop([p], lr=1.0, alpha=0.5, eps=0.0, weight_decay=1.0), p, [0.0]), [1.0 - math.sqrt(2)])


def test_parameter_without_gradient_is_skipped_and_lr_is_settable() -> None:
    a, b = _param([1.0]), _param([1.0])
    opt = Adam([a, b], lr=0.1)
    opt.step(_grads([(a, [1.0])]))
    assert b.data[0] == 1.0 and not opt.state[1] and opt.state[0]["step"] == 1
    opt.lr = 0.0
    before = a.data.copy()
    opt.step(_grads([(a, [1.0])]))
    np.testing.assert_array_equal(a.data, before)
    assert opt.state[0]["step"] == 2


def test_state_dict_roundtrip() -> None:
    rng = np.random.default_rng(1)
    p = _param(rng.standard_normal(6))
    opt = Adam([p], lr=0.05, amsgrad=True)
    for _ in range(2):
        opt.step(_grads([(p, rng.standard_normal(6))]))
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 2 and isinstance(sd["state"][0]["exp_avg"], np.ndarray)
    sd["state"][0]["exp_avg"] = sd["state"][0]["exp_avg"].copy()
    q = _param(p.data.copy())
    opt2 = Adam([q], lr=1.0)
    opt2.load_state_dict(sd)
    assert opt2.lr == 0.05 and opt2.amsgrad
    g = rng.standard_normal(6)
    opt.step(_grads([(p, g)]))
    opt2.step(_grads([(q, g)]))
    np.testing.assert_array_equal(p.data, q.data)
    assert sd["state"][0]["step"] == 2  # the saved dict is a copy
    bad = opt.state_dict()
    bad["state"][0]["exp_avg"] = np.zeros(5)
    with pytest.raises(ShapeError):
        opt2.load_state_dict(bad)


# ----- against torch.optim --------------------------------------------------------------

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.2, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.9), "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.03, "weight_decay": 0.2, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.05}),
]


@pytest.mark.parametrize(("name", "kw"), CONFIGS)
def test_matches_torch(name: str, kw: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    import gradtape.optim as go

    rng = np.random.default_rng(7)
    inits = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    ps = [_param(x.copy()) for x in inits]
    tps = [torch.tensor(x.copy(), requires_grad=True) for x in inits]
    opt = getattr(go, name)(ps, **kw)
    topt = getattr(torch.optim, name)(tps, foreach=False, **kw)
    for _ in range(5):
        gs = [rng.standard_normal(x.shape) for x in inits]
        opt.step(_grads(list(zip(ps, gs, strict=True))))
        for tp, g in zip(tps, gs, strict=True):
            tp.grad = torch.tensor(g)
        topt.step()
    for p, tp in zip(ps, tps, strict=True):
        np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-6, atol=1e-12)


# ----- kernels: parallel sizes and non-contiguous layouts against numpy --------------------


def _ref_sgd(p: Array, g: Array, b: Array, first: bool) -> None:
    t = p.dtype.type
    d = g + t(0.01) * p
    b[...] = d if first else t(0.9) * b + t(0.8) * d
    p -= t(0.1) * (d + t(0.9) * b)


def _ref_adam(p: Array, g: Array, m: Array, v: Array, vmax: Array, step: int) -> None:
    t = p.dtype.type
    p *= t(1 - 0.01 * 0.1)
    m[...] = t(0.9) * m + t(0.1) * g
    v[...] = t(0.999) * v + t(0.001) * g * g
    np.maximum(vmax, v, out=vmax)
    p -= t(0.01 / (1 - 0.9**step)) * m / (np.sqrt(vmax) / t(math.sqrt(1 - 0.999**step)) + t(1e-8))


def _ref_rms(p: Array, g: Array, s: Array, a: Array, b: Array) -> None:
    t = p.dtype.type
    gg = g + t(0.05) * p
    s[...] = t(0.9) * s + t(0.1) * gg * gg
    a[...] = t(0.9) * a + t(0.1) * gg
    b[...] = t(0.5) * b + gg / (np.sqrt(s - a * a) + t(1e-8))
    p -= t(0.01) * b


def _check_kernels(shape: tuple[int, ...], layout: Callable[[Array], Array]) -> None:
    rng = np.random.default_rng(3)
    dt = np.float32

    def arr(pos: bool = False) -> Array:
        x = rng.standard_normal(shape).astype(dt)
        return layout(np.abs(x) if pos else x)

    for step in (1, 2):
        p, g = arr(), arr()
        g.flags.writeable = False
        b = arr()
        rp, rb = p.copy(), b.copy()
        ko.sgd_step(p, g, b, lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01, nesterov=True, first=step == 1)
        _ref_sgd(rp, g, rb, step == 1)
        np.testing.assert_allclose(p, rp, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, rb, rtol=1e-5, atol=1e-6)

        p, g, m, v, vm = arr(), arr(), arr(), arr(True), arr(True)
        ref = [x.copy() for x in (p, m, v, vm)]
        ko.adam_step(
            p, g, m, v, vm, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, step=step, weight_decay=0.1, decoupled=True
        )
        _ref_adam(ref[0], g, ref[1], ref[2], ref[3], step)
        for got, want in zip((p, m, v, vm), ref, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)

        p, g, s, b = arr(), arr(), arr(True) + 2, arr()
        a = arr() * dt(0.1)
        ref = [x.copy() for x in (p, s, a, b)]
        ko.rmsprop_step(p, g, s, a, b, lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.05, momentum=0.5)
        _ref_rms(ref[0], g, ref[1], ref[2], ref[3])
        for got, want in zip((p, s, a, b), ref, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_kernels_parallel_size_match_numpy() -> None:
    _check_kernels((PARALLEL_THRESHOLD + 3,), lambda x: x)


def test_kernels_non_contiguous_match_numpy() -> None:
    _check_kernels((40, 30), lambda x: np.asarray(x.T))  # F-ordered: the numpy fallback
    _check_kernels((40, 30), lambda x: x)  # C-contiguous 2-D: the serial kernel


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_optimizer_on_non_contiguous_param(name: str) -> None:
    import gradtape.optim as go

    kw: dict[str, Any] = {"lr": 0.1, "momentum": 0.9} if name != "Adam" else {"lr": 0.1}
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 7))
    a: Tensor[Any, Any] = Tensor(x.copy().T, DEV)
    b = _param(x.T.copy())
    assert not a.data.flags.c_contiguous
    data = a.data
    oa, ob = getattr(go, name)([a], **kw), getattr(go, name)([b], **kw)
    for _ in range(3):
        g = rng.standard_normal((7, 5))
        oa.step(_grads([(a, g)]))
        ob.step(_grads([(b, g)]))
    assert a.data is data
    np.testing.assert_allclose(a.data, b.data, rtol=1e-12)


def test_kernel_errors() -> None:
    p = np.zeros(4)
    with pytest.raises(ShapeError, match="gradient shape"):
        ko.sgd_step(p, np.zeros(3), None, lr=0.1)
    with pytest.raises(DTypeError, match="gradient dtype"):
        ko.sgd_step(p, np.zeros(4, np.float32), None, lr=0.1)
    with pytest.raises(ShapeError, match="exp_avg"):
        ko.adam_step(p, np.zeros(4), np.zeros(3), np.zeros(4), None, lr=0.1, beta1=0.9, beta2=0.9, eps=0.0, step=1)
    with pytest.raises(ValueError, match="step"):
        ko.adam_step(p, np.zeros(4), np.zeros(4), np.zeros(4), None, lr=0.1, beta1=0.9, beta2=0.9, eps=0.0, step=0)
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ko.sgd_step(ro, np.zeros(4), None, lr=0.1)
    param = _param([1.0, 2.0])
    grads = Gradients()
    grads._data[param.id] = np.zeros(3)  # grad_replace would refuse it
    with pytest.raises(ShapeError, match="gradient shape"):
        SGD([param], lr=0.1).step(grads)
    grads._data[param.id] = np.zeros(2, np.float32)
    with pytest.raises(DTypeError, match="gradient dtype"):
        Adam([param], lr=0.1).step(grads)
    # step() checks the parameter's current .data (it may have been replaced since __init__)
    opt = RMSprop([param], lr=0.1)
    param.data = np.array([1.0, 2.0])
    param.data.flags.writeable = False
    grads._data[param.id] = np.zeros(2)
    with pytest.raises(ValueError, match=r"params\[0\].*read-only"):
        opt.step(grads)


# ----- schedules ------------------------------------------------------------------------


def _lrs(sched: StepLR | CosineAnnealingLR, n: int) -> list[float]:
    out = [sched.get_last_lr()[0]]
    for _ in range(n):
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out


def test_step_lr_formula() -> None:
    opt = SGD([_param([0.0])], lr=0.5)
    got = _lrs(StepLR(opt, step_size=3, gamma=0.5), 10)
    np.testing.assert_allclose(got, [0.5 * 0.5 ** (e // 3) for e in range(11)], rtol=1e-12)
    assert opt.lr == got[-1]


def test_cosine_lr_formula() -> None:
    opt = Adam([_param([0.0])], lr=0.1)
    got = _lrs(CosineAnnealingLR(opt, T_max=5, eta_min=0.01), 15)
    want = [0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(16)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_schedules_match_torch() -> None:
    torch = pytest.importorskip("torch")
    ts = torch.optim.lr_scheduler
    for kind in ("step", "cosine"):
        opt, topt = SGD([_param([0.0])], lr=0.2), torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.2)
        sched: StepLR | CosineAnnealingLR
        if kind == "step":
            sched, tsched = StepLR(opt, 4, 0.3), ts.StepLR(topt, 4, 0.3)
        else:
            sched, tsched = CosineAnnealingLR(opt, 6), ts.CosineAnnealingLR(topt, 6)
        for _ in range(20):
            assert sched.get_last_lr()[0] == pytest.approx(tsched.get_last_lr()[0], rel=1e-12, abs=1e-15)
            sched.step()
            tsched.step()


# ----- clipping and accumulation --------------------------------------------------------


def test_clip_grad_norm() -> None:
    a, b, c = _param([0.0, 0.0]), _param([0.0]), _param([0.0])
    grads = _grads([(a, [3.0, 4.0]), (b, [12.0])])
    assert clip_grad_norm_([a, b, c], grads, max_norm=20.0) == pytest.approx(13.0)
    np.testing.assert_array_equal(grads.get(a).numpy(), [3.0, 4.0])  # below max_norm: unchanged
    total = clip_grad_norm_([a, b, c], grads, max_norm=6.5)
    assert total == pytest.approx(13.0)
    coef = 6.5 / (13.0 + 1e-6)
    np.testing.assert_allclose(grads.get(a).numpy(), [3.0 * coef, 4.0 * coef], rtol=1e-12)
    np.testing.assert_allclose(grads.get(b).numpy(), [12.0 * coef], rtol=1e-12)
    grads = _grads([(a, [3.0, -4.0]), (b, [2.0])])
    assert clip_grad_norm_([a, b], grads, max_norm=1.0, norm_type=math.inf) == 4.0
    np.testing.assert_allclose(grads.get(a).numpy(), [3.0 / (4 + 1e-6), -4.0 / (4 + 1e-6)])
    assert clip_grad_norm_([a], grads, max_norm=1.0, norm_type=1.0) == pytest.approx(7.0 / (4 + 1e-6))
    assert clip_grad_norm_([c], grads, 1.0) == 0.0


def test_clip_grad_norm_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    gs = [rng.standard_normal((3, 4)), rng.standard_normal(7)]
    ps = [_param(np.zeros(g.shape)) for g in gs]
    grads = _grads(list(zip(ps, gs, strict=True)))
    tps = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in gs]
    for tp, g in zip(tps, gs, strict=True):
        tp.grad = torch.tensor(g)
    total = clip_grad_norm_(ps, grads, 0.5, norm_type=3.0)
    ttotal = torch.nn.utils.clip_grad_norm_(tps, 0.5, norm_type=3.0)
    assert total == pytest.approx(float(ttotal), rel=1e-12)
    for p, tp in zip(ps, tps, strict=True):
        np.testing.assert_allclose(grads.get(p).numpy(), tp.grad.numpy(), rtol=1e-12)


def test_clip_does_not_change_a_gradient_sharing_the_buffer() -> None:
    x, y = _param([1.0, 2.0]), _param([3.0, 4.0])
    grads = Gradients.leaky()
    grads = ((x.trace(grads) + y) * 3.0).sum().backward()
    gx, gy = grads.get_ref_checked(x), grads.get_ref_checked(y)
    assert gx is not None and gy is not None and np.shares_memory(gx, gy)  # add's backward shares it
    total = clip_grad_norm_([x], grads, max_norm=1.0)
    assert total == pytest.approx(math.sqrt(18.0))
    np.testing.assert_allclose(grads.get(x).numpy(), 3.0 / (math.sqrt(18.0) + 1e-6))
    np.testing.assert_array_equal(grads.get(y).numpy(), [3.0, 3.0])


def test_gradient_accumulation_over_micro_batches() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3))
    y = np.array([0, 1, 1, 0])
    w = _param(rng.standard_normal((3, 2)))
    full = Gradients.leaky()
    full.retain_leafs([w])
    full = cross_entropy(DEV.tensor(x).trace(full).matmul(w), y).backward()
    assert w.grad is not None
    np.testing.assert_array_equal(w.grad.numpy(), full.get(w).numpy())
    w.grad = None  # PyTorch's zero_grad: .grad accumulates over the micro-batches below, as the store does
    acc = Gradients.leaky()
    acc.retain_leafs([w])
    for lo in (0, 2):  # two micro-batches of 2, each loss scaled by 1/2: the mean over all 4
        loss = cross_entropy(DEV.tensor(x[lo : lo + 2]).trace(acc).matmul(w), y[lo : lo + 2]) * 0.5
        acc = loss.backward()
    np.testing.assert_allclose(acc.get(w).numpy(), full.get(w).numpy(), rtol=1e-12)
    acc_grad = w.grad
    assert acc_grad is not None
    np.testing.assert_allclose(acc_grad.numpy(), full.get(w).numpy(), rtol=1e-12)
    w0 = w.data.copy()
    SGD([w], lr=0.5).step(acc)
    np.testing.assert_allclose(w.data, w0 - 0.5 * full.get(w).numpy(), rtol=1e-12)


# ----- argument errors ------------------------------------------------------------------


BAD: list[tuple[Callable[[list[Tensor[Any, Any]]], object], str]] = [
    (lambda ps: SGD(ps, lr=-0.1), "lr"),
    (lambda ps: SGD(ps, lr=float("nan")), "lr"),
    (lambda ps: SGD(ps, lr=0.1, momentum=-0.5), "momentum"),
    (lambda ps: SGD(ps, lr=0.1, nesterov=True), "nesterov"),
    (lambda ps: SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "nesterov"),
    (lambda ps: SGD(ps, lr=0.1, weight_decay=-1.0), "weight_decay"),
    (lambda ps: Adam(ps, betas=(1.0, 0.999)), "betas"),
    (lambda ps: Adam(ps, betas=(0.9, -0.1)), "betas"),
    (lambda ps: Adam(ps, eps=-1e-8), "eps"),
    (lambda ps: AdamW(ps, weight_decay=-0.1), "weight_decay"),
    (lambda ps: RMSprop(ps, alpha=1.5), "alpha"),
    (lambda ps: RMSprop(ps, momentum=-0.1), "momentum"),
    (lambda ps: SGD([], lr=0.1), "empty"),
    (lambda ps: SGD([ps[0], ps[0]], lr=0.1), "more than once"),
    (lambda ps: StepLR(SGD(ps, lr=0.1), step_size=0), "step_size"),
    (lambda ps: StepLR(SGD(ps, lr=0.1), step_size=2, gamma=-1.0), "gamma"),
    (lambda ps: CosineAnnealingLR(SGD(ps, lr=0.1), T_max=0), "T_max"),
    (lambda ps: clip_grad_norm_(ps, Gradients(), max_norm=-1.0), "max_norm"),
    (lambda ps: clip_grad_norm_(ps, Gradients(), max_norm=1.0, norm_type=0.0), "norm_type"),
]


@pytest.mark.parametrize(("make", "word"), BAD)
def test_bad_arguments_raise(make: Callable[[list[Tensor[Any, Any]]], object], word: str) -> None:
    with pytest.raises(ValueError, match=word):
        make([_param([1.0])])


def test_lr_setter_validates_and_bad_params() -> None:
    opt = SGD([_param([1.0])], lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        opt.lr = -1.0
    with pytest.raises(TypeError, match="Tensor"):
        SGD([np.zeros(3)], lr=0.1)  # type: ignore[list-item]
    q = _param([1.0])
    with pytest.raises(ValueError, match="error_if_nonfinite"):
        clip_grad_norm_([q], _grads([(q, [float("inf")])]), 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rank0_parameter(dtype: Any) -> None:
    p = _param(1.0, dtype)
    opt = SGD([p], lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.step(_grads([(p, 2.0)]))
    assert p.shape == () and p.dtype == dtype
    assert float(p.data) == pytest.approx(0.42, rel=1e-6)  # buf 2 then 3.8


# ----- parameter groups (PyTorch's) -------------------------------------------------------


def _group_setup(seed: int) -> tuple[list[Tensor[Any, Any]], list[Array], list[list[Array]]]:
    """Three float64 parameters and five steps of gradients for each."""
    r = np.random.default_rng(seed)
    values = [r.standard_normal((3, 2)), r.standard_normal(4), r.standard_normal(())]
    grads = [[r.standard_normal(v.shape) for v in values] for _ in range(5)]
    return [_param(v) for v in values], values, grads


@pytest.mark.parametrize(
    ("ours", "theirs", "defaults", "overrides"),
    [
        (AdamW, "AdamW", {"lr": 1e-2, "weight_decay": 0.1}, [{"weight_decay": 0.0}, {"lr": 3e-2, "betas": (0.8, 0.9)}]),
        (Adam, "Adam", {"lr": 1e-2}, [{"weight_decay": 0.05, "amsgrad": True}, {"eps": 1e-3}]),
        (SGD, "SGD", {"lr": 0.1, "momentum": 0.9}, [{"nesterov": True}, {"lr": 0.01, "momentum": 0.0}]),
        (RMSprop, "RMSprop", {"lr": 1e-2}, [{"centered": True, "momentum": 0.5}, {"alpha": 0.9}]),
    ],
)
def test_parameter_groups_match_torch(ours: Any, theirs: str, defaults: dict[str, Any], overrides: list[Any]) -> None:
    """Two groups with their own hyper-parameters, as a PyTorch user writes them: every
    parameter after five steps equals torch.optim's."""
    torch = pytest.importorskip("torch")
    ps, values, grads = _group_setup(3)
    opt = ours([{"params": ps[:2], **overrides[0]}, {"params": [ps[2]], **overrides[1]}], **defaults)
    tps = [torch.tensor(v, requires_grad=True) for v in values]
    topt = getattr(torch.optim, theirs)(
        [{"params": tps[:2], **overrides[0]}, {"params": [tps[2]], **overrides[1]}], **defaults
    )
    for step in grads:
        opt.step(_grads(list(zip(ps, step, strict=True))))
        for t, g in zip(tps, step, strict=True):
            t.grad = torch.tensor(g)
        topt.step()
    for p, t in zip(ps, tps, strict=True):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-12, atol=1e-14)
    assert [len(g["params"]) for g in opt.param_groups] == [2, 1]
    assert opt.param_groups[0]["lr"] == topt.param_groups[0]["lr"]


def test_adamw_without_decay_on_a_group_leaves_it_undecayed() -> None:
    """The point of groups: AdamW with weight_decay=0 on one group (biases, norms, Mamba's
    A_log and D) does not shrink it when its gradient is zero."""
    w, b = _param([1.0, 2.0]), _param([1.0, 2.0])
    opt = AdamW([{"params": [w]}, {"params": [b], "weight_decay": 0.0}], lr=0.1, weight_decay=0.5)
    for _ in range(3):
        opt.step(_grads([(w, [0.0, 0.0]), (b, [0.0, 0.0])]))
    np.testing.assert_array_equal(b.data, [1.0, 2.0])
    np.testing.assert_allclose(w.data, np.array([1.0, 2.0]) * 0.95**3, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_schedules_scale_each_group_like_torch() -> None:
    torch = pytest.importorskip("torch")
    ts = torch.optim.lr_scheduler
    for kind in ("step", "cosine"):
        a, b = _param([0.0]), _param([0.0])
        opt = SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.2)
        ta, tb = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
        topt = torch.optim.SGD([{"params": [ta]}, {"params": [tb], "lr": 0.05}], lr=0.2)
        sched: StepLR | CosineAnnealingLR
        if kind == "step":
            sched, tsched = StepLR(opt, 3, 0.5), ts.StepLR(topt, 3, 0.5)
        else:
            sched, tsched = CosineAnnealingLR(opt, 4, eta_min=0.01), ts.CosineAnnealingLR(topt, 4, eta_min=0.01)
        for _ in range(12):
            np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12, atol=1e-15)
            assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
            sched.step()
            tsched.step()
        assert opt.lr == opt.param_groups[0]["lr"]


def test_parameter_group_state_dict_round_trip_and_attribute_setting() -> None:
    ps, _, grads = _group_setup(5)
    opt = Adam([{"params": ps[:1], "lr": 0.5}, {"params": ps[1:], "weight_decay": 0.1}], lr=0.01)
    opt.step(_grads(list(zip(ps, grads[0], strict=True))))
    saved = opt.state_dict()
    assert saved["param_groups"][0]["params"] == [0] and saved["param_groups"][1]["params"] == [1, 2]
    assert saved["param_groups"][0]["lr"] == 0.5 and saved["param_groups"][1]["weight_decay"] == 0.1
    other = Adam([{"params": ps[:1]}, {"params": ps[1:]}], lr=0.3)
    other.load_state_dict(saved)
    assert [g["lr"] for g in other.param_groups] == [0.5, 0.01]
    assert [g["weight_decay"] for g in other.param_groups] == [0.0, 0.1]
    np.testing.assert_array_equal(other.state[2]["exp_avg"], opt.state[2]["exp_avg"])
    with pytest.raises(ValueError, match=r"saved parameter groups hold \[1, 2\].*hold \[3\]"):
        Adam(ps, lr=0.1).load_state_dict(saved)
    legacy = {"state": {}, "hyperparams": {**opt.hyperparams(), "lr": 0.2}}  # saved before groups
    other.load_state_dict(legacy)
    assert [g["lr"] for g in other.param_groups] == [0.2, 0.2]
    # setting an attribute validates it and reaches every group; reading gives the default
    other.weight_decay = 0.25
    assert other.weight_decay == 0.25 and [g["weight_decay"] for g in other.param_groups] == [0.25, 0.25]
    other.lr = 0.7
    assert other.lr == 0.7 and [g["lr"] for g in other.param_groups] == [0.7, 0.7]
    with pytest.raises(ValueError, match=r"Adam: eps must be a finite number >= 0"):
        other.eps = -1.0
    assert other.eps == 1e-8
    with pytest.raises(AttributeError, match="momentum"):
        _ = other.momentum  # type: ignore[attr-defined]


def test_parameter_group_errors() -> None:
    a, b = _param([1.0]), _param([2.0])
    with pytest.raises(ValueError, match=r"SGD: parameter group 1 sets \['momentun'\], which SGD does not have"):
        SGD([{"params": [a]}, {"params": [b], "momentun": 0.9}], lr=0.1)
    with pytest.raises(ValueError, match=r"Adam: params\[1\] \(id \d+\) appears more than once"):
        Adam([{"params": [a]}, {"params": [a]}])
    with pytest.raises(ValueError, match="parameter group 0 has no 'params'"):
        Adam([{"lr": 0.1}])
    with pytest.raises(ValueError, match="parameter group 1 is empty"):
        Adam([{"params": [a]}, {"params": []}])
    with pytest.raises(TypeError, match="mixes tensors and parameter groups"):
        Adam([a, {"params": [b]}])
    with pytest.raises(ValueError, match=r"AdamW: betas\[1\] must be in \[0, 1\)"):
        AdamW([{"params": [a], "betas": (0.9, 1.5)}])
    with pytest.raises(ValueError, match="lr must be a finite number >= 0"):
        SGD([{"params": [a], "lr": -1.0}], lr=0.1)
    single = Adam([{"params": a}])  # a lone tensor as a group's params, as PyTorch accepts
    assert single.params == [a]
