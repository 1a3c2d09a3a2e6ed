"""PyTorch's five other learning-rate schedules, ported by renaming: ConstantLR,
MultiplicativeLR, PolynomialLR, ChainedScheduler and CyclicLR.

Each test is a PyTorch user's loop (``opt.step(); sched.step()``) on a gradtape optimizer and
the same loop on the same torch optimizer: the rates (and the momentum or beta1 that CyclicLR
cycles) are compared epoch by epoch to 1e-12 relative, with one and two parameter groups,
including runs saved with ``state_dict`` and resumed mid-way against PyTorch's own resumed
run; CyclicLR also in a training loop, every parameter against PyTorch's. Bad arguments are
refused with PyTorch's exception types, naming the schedule and the argument.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import optim
from gradtape.optim import lr_scheduler

torch: Any = pytest.importorskip("torch")

from test_optim_torch_port import (  # noqa: E402
    _batches,
    _model,
    _opt_step,
    _our_step,
    _pair,
    _record,
    _same_params,
    _sgd_pair,
    _torch_step,
)

Factory = Callable[[Any, Any], Any]  # (lr_scheduler module, optimizer) -> schedule
EPOCHS = 30
RTOL = 1e-12


class Decay:
    """A callable object as a lambda (its ``__dict__`` is what a state dict saves)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, epoch: int) -> float:
        return self.rate


def _two(o: Any, a: float, b: float) -> Any:
    """``[a, b]`` for a two-group optimizer, ``a`` for one group."""
    return [a, b] if len(o.param_groups) == 2 else a


SCHEDULES: list[tuple[str, Factory]] = [
    ("ConstantLR", lambda m, o: m.ConstantLR(o)),
    ("ConstantLR-half", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4)),
    ("MultiplicativeLR", lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.95)),
    ("MultiplicativeLR-epoch", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.9 if e % 3 else 1.05)),
    ("MultiplicativeLR-object", lambda m, o: m.MultiplicativeLR(o, Decay(0.93))),
    ("PolynomialLR", lambda m, o: m.PolynomialLR(o)),
    ("PolynomialLR-2", lambda m, o: m.PolynomialLR(o, total_iters=12, power=2.0)),
    ("PolynomialLR-0.9", lambda m, o: m.PolynomialLR(o, total_iters=20, power=0.9)),
    ("ChainedScheduler", lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=8), m.ExponentialLR(o, gamma=0.9)], optimizer=o)),
    ("ChainedScheduler-3", lambda m, o: m.ChainedScheduler(
        [m.LinearLR(o, start_factor=0.2, total_iters=5), m.PolynomialLR(o, total_iters=25, power=1.5),
         m.MultiplicativeLR(o, lambda e: 0.99)])),
    ("ChainedScheduler-cos", lambda m, o: m.ChainedScheduler(
        [m.CosineAnnealingLR(o, T_max=7, eta_min=0.001), m.StepLR(o, step_size=4, gamma=0.5)])),
    ("SequentialLR-chained", lambda m, o: m.SequentialLR(
        o, [m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=3), m.ExponentialLR(o, gamma=0.9)]),
            m.PolynomialLR(o, total_iters=10, power=2.0)], milestones=[6])),
    ("CyclicLR", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("CyclicLR-triangular2", lambda m, o: m.CyclicLR(
        o, base_lr=_two(o, 0.01, 0.02), max_lr=_two(o, 0.1, 0.3), step_size_up=3, step_size_down=5,
        mode="triangular2")),
    ("CyclicLR-exp_range", lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=4, mode="exp_range", gamma=0.95,
        base_momentum=_two(o, 0.8, 0.85), max_momentum=_two(o, 0.9, 0.95))),
    ("CyclicLR-iterations", lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.2, step_size_up=5, step_size_down=3, scale_fn=lambda x: 1 / (1 + 0.05 * x),
        scale_mode="iterations")),
    ("CyclicLR-cycle-fn", lambda m, o: m.CyclicLR(
        o, base_lr=0.05, max_lr=0.5, step_size_up=2, scale_fn=lambda c: 0.7**c, mode="ignored")),
    ("CyclicLR-sawtooth", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, step_size_down=0)),
    ("CyclicLR-fractional", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2.5)),
    ("CyclicLR-no-momentum", lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False)),
]  # fmt: skip


def _epochs(sched: Any) -> Any:
    """``last_epoch``, or the schedules' for a ChainedScheduler (it has none of its own)."""
    if isinstance(sched, (lr_scheduler.ChainedScheduler, torch.optim.lr_scheduler.ChainedScheduler)):
        return [_epochs(s) for s in sched._schedulers]
    return sched.last_epoch


def _resumed(
    module: Any, make_opt: Callable[[], Any], factory: Factory, stop: int, epochs: int
) -> tuple[list[list[float]], Any]:
    """Run ``stop`` epochs, save both state dicts, build a fresh optimizer and schedule, load
    them, and record the rest: the sequence and the resumed schedule's epoch."""
    opt = make_opt()
    sched = factory(module, opt)
    head = _record(opt, sched, stop)
    saved_opt, saved_sched = opt.state_dict(), sched.state_dict()
    opt2 = make_opt()
    sched2 = factory(module, opt2)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    at = _epochs(sched2)
    tail = _record(opt2, sched2, epochs - stop)
    return head + tail[1:], at


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before:UserWarning")  # torch's, in
@pytest.mark.parametrize(("name", "factory"), SCHEDULES, ids=[n for n, _ in SCHEDULES])  # SequentialLR's init
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_schedule_matches_torch_and_resumes_exactly(name: str, factory: Factory, groups: int, kind: str) -> None:
    """The rates (and each group's momentum or beta1) after construction and each of 30
    epochs equal PyTorch's; a run saved at epoch 7 or 13 and resumed continues exactly."""
    o = _pair(kind, groups)[0]
    got = _record(o, factory(lr_scheduler, o), EPOCHS)
    t = _pair(kind, groups)[1]
    want = _record(t, factory(torch.optim.lr_scheduler, t), EPOCHS)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-15)
    assert len({tuple(r[:groups]) for r in got}) > 1  # the schedule moves the rates
    for stop in (7, 13):
        got_r, at = _resumed(lr_scheduler, lambda: _pair(kind, groups)[0], factory, stop, EPOCHS)
        want_r, tat = _resumed(torch.optim.lr_scheduler, lambda: _pair(kind, groups)[1], factory, stop, EPOCHS)
        assert at == tat
        np.testing.assert_allclose(got_r, want_r, rtol=RTOL, atol=1e-15)
        np.testing.assert_allclose(got_r, got, rtol=RTOL, atol=1e-15)  # exactly where it left off


def test_formulas() -> None:
    """The documented rates: ConstantLR, PolynomialLR's closed form, MultiplicativeLR's
    product, the ChainedScheduler example of PyTorch's docs, and CyclicLR's three modes."""
    o, _ = _sgd_pair(0.05)
    got = _record(o, lr_scheduler.ConstantLR(o, factor=0.5, total_iters=4), 6)
    assert [r[0] for r in got] == pytest.approx([0.025] * 4 + [0.05] * 3, rel=RTOL)

    o, _ = _sgd_pair(0.05)
    got = _record(o, lr_scheduler.PolynomialLR(o, total_iters=8, power=0.9), 10)
    want = [0.05 * (1 - min(e, 8) / 8) ** 0.9 for e in range(11)]
    np.testing.assert_allclose([r[0] for r in got], want, rtol=1e-12, atol=1e-17)

    o, _ = _sgd_pair(0.1)
    got = _record(o, lr_scheduler.MultiplicativeLR(o, lambda e: 1.0 / (e + 1)), 5)
    np.testing.assert_allclose([r[0] for r in got], [0.1 / math.factorial(e + 1) for e in range(6)], rtol=1e-12)

    o, _ = _sgd_pair(0.05)  # PyTorch's docstring: 0.05, 0.045, 0.0405, ..., 0.00675 at 19, 0.06078 at 20
    chained = lr_scheduler.ChainedScheduler(
        [lr_scheduler.ConstantLR(o, factor=0.1, total_iters=20), lr_scheduler.ExponentialLR(o, gamma=0.9)],
        optimizer=o,
    )
    lrs = [r[0] for r in _record(o, chained, 21)]
    np.testing.assert_allclose(lrs, [0.005 * 0.9**e for e in range(20)] + [0.05 * 0.9**e for e in (20, 21)], rtol=1e-12)
    assert lrs[19] == pytest.approx(0.000675, rel=1e-3) and lrs[20] == pytest.approx(0.006078, rel=1e-3)

    def cyclic(mode: str, gamma: float = 1.0) -> list[float]:
        o, _ = _sgd_pair(0.5)
        sched = lr_scheduler.CyclicLR(o, 0.1, 0.5, step_size_up=2, mode=mode, gamma=gamma)  # type: ignore[arg-type]
        return [r[0] for r in _record(o, sched, 8)]

    up_down = [0.0, 0.5, 1.0, 0.5] * 2 + [0.0]
    np.testing.assert_allclose(cyclic("triangular"), [0.1 + 0.4 * s for s in up_down], rtol=1e-12)
    halved = [0.1 + 0.4 * s / 2 ** (i // 4) for i, s in enumerate(up_down)]
    np.testing.assert_allclose(cyclic("triangular2"), halved, rtol=1e-12)
    np.testing.assert_allclose(cyclic("exp_range", 0.9), [0.1 + 0.4 * s * 0.9**i for i, s in enumerate(up_down)])


def test_cyclic_lr_step_zero_reads_initial_lr_like_torch() -> None:
    """PyTorch's CyclicLR computes its first rate from the groups' ``initial_lr`` (set by an
    earlier schedule here), and the later ones from ``base_lr``: the same here."""
    rows = []
    for mod, o in ((lr_scheduler, _sgd_pair(0.1)[0]), (torch.optim.lr_scheduler, _sgd_pair(0.1)[1])):
        mod.StepLR(o, 3)
        rows.append(_record(o, mod.CyclicLR(o, 0.01, 0.1, step_size_up=2), 5))
    np.testing.assert_allclose(rows[0], rows[1], rtol=RTOL)
    assert [r[0] for r in rows[0]] == pytest.approx([0.1, 0.055, 0.1, 0.055, 0.01, 0.055], rel=RTOL)


def test_cyclic_lr_in_training_loops_like_torch() -> None:
    """CyclicLR per batch on SGD (plain: no momentum given) and on Adam: the rate and the
    momentum or beta1 cycle, so every parameter follows torch's."""
    for kind in ("SGD", "Adam"):
        model, ref = _model(21)
        if kind == "SGD":
            opt: optim.Optimizer = optim.SGD(model.parameters(), lr=0.1)
            topt = torch.optim.SGD(ref.parameters(), lr=0.1)
        else:
            opt = optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.99))
            topt = torch.optim.Adam(ref.parameters(), lr=1e-3, betas=(0.9, 0.99), foreach=False)
        kw: dict[str, Any] = {"base_lr": 0.001, "max_lr": 0.05, "step_size_up": 3, "mode": "triangular2"}
        sched = lr_scheduler.CyclicLR(opt, **kw)
        tsched = torch.optim.lr_scheduler.CyclicLR(topt, **kw)
        key = "momentum" if kind == "SGD" else "betas"
        assert opt.param_groups[0][key] == pytest.approx(topt.param_groups[0][key], rel=RTOL)
        for k in ("initial_lr", "max_momentum", "base_momentum", "lr"):
            assert opt.param_groups[0][k] == pytest.approx(topt.param_groups[0][k], rel=RTOL), k
        for i, (x, y) in enumerate(_batches(14, 21)):
            _our_step(model, opt, x, y)
            _torch_step(ref, topt, x, y)
            sched.step()
            tsched.step()
            _same_params(model, ref, what=f"{kind} after step {i + 1}")
            assert opt.param_groups[0][key] == pytest.approx(topt.param_groups[0][key], rel=RTOL)
            assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=RTOL)


def test_step_with_an_epoch_uses_the_closed_form_like_torch() -> None:
    """``step(epoch)`` (deprecated): ConstantLR's and PolynomialLR's closed form;
    MultiplicativeLR and CyclicLR have none, so one recursive step at that epoch."""
    factories: list[Factory] = [
        lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=5),
        lambda m, o: m.PolynomialLR(o, total_iters=10, power=1.5),
        lambda m, o: m.MultiplicativeLR(o, lambda e: 0.5 + 0.01 * e),
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9),
    ]
    for factory in factories:
        rows = []
        for mod, o in ((lr_scheduler, _sgd_pair(0.1, 2)[0]), (torch.optim.lr_scheduler, _sgd_pair(0.1, 2)[1])):
            sched = factory(mod, o)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                for epoch in (3, 7, 2, 12, 5):
                    _opt_step(o)
                    sched.step(epoch)
                    rows.append([*sched.get_last_lr(), *(g["momentum"] for g in o.param_groups)])
        np.testing.assert_allclose(rows[:5], rows[5:], rtol=RTOL)
    with pytest.warns(UserWarning, match="deprecated"):
        lr_scheduler.PolynomialLR(_sgd_pair()[0]).step(3)


@pytest.mark.parametrize("last_epoch", [4, 9])
def test_resume_with_last_epoch_argument_like_torch(last_epoch: int) -> None:
    """PyTorch's older resume: keep the optimizer, build the schedule again with last_epoch."""
    factories: list[Callable[..., Any]] = [
        lambda m, o, **kw: m.ConstantLR(o, factor=0.5, total_iters=6, **kw),
        lambda m, o, **kw: m.PolynomialLR(o, total_iters=12, power=2.0, **kw),
        lambda m, o, **kw: m.MultiplicativeLR(o, lambda e: 0.9, **kw),
        lambda m, o, **kw: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="triangular2", **kw),
    ]
    for factory in factories:
        seqs = []
        for mod, o in ((lr_scheduler, _sgd_pair(0.2)[0]), (torch.optim.lr_scheduler, _sgd_pair(0.2)[1])):
            first = factory(mod, o)
            for _ in range(last_epoch):
                _opt_step(o)
                first.step()
            sched = factory(mod, o, last_epoch=last_epoch)
            assert sched.last_epoch == last_epoch + 1
            seqs.append(_record(o, sched, 8))
        np.testing.assert_allclose(seqs[0], seqs[1], rtol=RTOL)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.CyclicLR(_sgd_pair(0.2)[0], 0.01, 0.1, last_epoch=3)


def test_state_dicts_like_torch() -> None:
    """The callable objects' ``__dict__`` are saved (MultiplicativeLR's lambdas, CyclicLR's
    scale_fn; functions are not), ChainedScheduler's schedules' states under ``"_schedulers"``,
    with PyTorch's keys."""
    o, t = _sgd_pair(0.1)
    sd = lr_scheduler.MultiplicativeLR(o, Decay(0.9)).state_dict()
    tsd = torch.optim.lr_scheduler.MultiplicativeLR(t, Decay(0.9)).state_dict()
    assert sd["lr_lambdas"] == tsd["lr_lambdas"] == [{"rate": 0.9}]
    fn = Decay(0.5)
    sched = lr_scheduler.MultiplicativeLR(_sgd_pair(0.1)[0], fn)
    sched.load_state_dict(sd)
    assert fn.rate == 0.9
    assert lr_scheduler.MultiplicativeLR(o, lambda e: 1.0).state_dict()["lr_lambdas"] == [None]

    class Scale:
        def __init__(self, k: float) -> None:
            self.k = k

        def __call__(self, x: float) -> float:
            return 1.0 / (1.0 + self.k * x)

    o, t = _sgd_pair(0.1)
    cyc = lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3, scale_fn=Scale(0.5))
    tcyc = torch.optim.lr_scheduler.CyclicLR(t, 0.01, 0.1, step_size_up=3, scale_fn=Scale(0.5))
    for _ in range(5):
        _opt_step(o)
        _opt_step(t)
        cyc.step()
        tcyc.step()
    sd, tsd = cyc.state_dict(), tcyc.state_dict()
    assert sd["_scale_fn_custom"] == tsd["_scale_fn_custom"] == {"k": 0.5}
    assert sd["last_epoch"] == tsd["last_epoch"] == 5
    for k in ("base_lrs", "max_lrs", "base_momentums", "max_momentums", "total_size", "step_ratio", "scale_mode"):
        assert sd[k] == tsd[k], k
    assert "optimizer" not in sd
    fn2 = Scale(3.0)
    cyc2 = lr_scheduler.CyclicLR(_sgd_pair(0.1)[0], 0.01, 0.1, step_size_up=3, scale_fn=fn2)
    cyc2.load_state_dict(sd)
    assert fn2.k == 0.5 and cyc2.last_epoch == 5
    assert lr_scheduler.CyclicLR(o, 0.01, 0.1, scale_fn=lambda x: 1.0).state_dict()["_scale_fn_custom"] is None
    exp = lr_scheduler.CyclicLR(o, 0.01, 0.1, mode="exp_range", scale_mode="cycle").state_dict()
    assert exp["scale_mode"] == "iterations"  # the built-in modes set their own, as PyTorch's

    o, t = _sgd_pair(0.1)
    ch = lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(o), lr_scheduler.ExponentialLR(o, 0.9)])
    ts = torch.optim.lr_scheduler
    tch = ts.ChainedScheduler([ts.ConstantLR(t), ts.ExponentialLR(t, 0.9)])
    for _ in range(3):
        _opt_step(o)
        _opt_step(t)
        ch.step()
        tch.step()
    sd, tsd = ch.state_dict(), tch.state_dict()
    assert set(sd) == set(tsd) == {"_last_lr", "_schedulers"}
    assert [s["last_epoch"] for s in sd["_schedulers"]] == [s["last_epoch"] for s in tsd["_schedulers"]] == [3, 3]
    assert all("optimizer" not in s for s in sd["_schedulers"])
    assert ch.get_last_lr() == pytest.approx(tch.get_last_lr(), rel=RTOL)
    with pytest.raises(ValueError, match=r"ChainedScheduler\.load_state_dict: the saved state has 2 schedulers"):
        lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(o)]).load_state_dict(sd)


def test_cyclic_lr_momentum_keys_saved_with_the_optimizer() -> None:
    """The groups carry ``max_momentum`` and ``base_momentum`` (PyTorch's), which the
    optimizer's state dict saves; Adam's beta1 is cycled and beta2 kept."""
    o, t = _pair("Adam", 2)
    lr_scheduler.CyclicLR(o, [0.01, 0.02], [0.1, 0.2], base_momentum=[0.7, 0.75], max_momentum=0.95)
    torch.optim.lr_scheduler.CyclicLR(t, [0.01, 0.02], [0.1, 0.2], base_momentum=[0.7, 0.75], max_momentum=0.95)
    for g, tg in zip(o.param_groups, t.param_groups, strict=True):
        for k in ("lr", "initial_lr", "max_momentum", "base_momentum", "betas"):
            assert g[k] == pytest.approx(tg[k], rel=RTOL), k
    saved = o.state_dict()["param_groups"]
    assert [g["base_momentum"] for g in saved] == [0.7, 0.75]
    assert [g["betas"][1] for g in saved] == [0.999, 0.999]


def test_chained_scheduler_after_a_sequential_milestone_fails_like_torch() -> None:
    """A ChainedScheduler has no closed form to start from at a SequentialLR milestone: both
    libraries raise NotImplementedError there (and run until then)."""
    for mod, o in ((lr_scheduler, _sgd_pair(0.1)[0]), (torch.optim.lr_scheduler, _sgd_pair(0.1)[1])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            chained = mod.ChainedScheduler([mod.ConstantLR(o), mod.ExponentialLR(o, 0.8)])
            seq = mod.SequentialLR(o, [mod.ExponentialLR(o, 0.9), chained], milestones=[3])
        for _ in range(2):
            _opt_step(o)
            seq.step()
        assert seq.get_last_lr() == pytest.approx([0.1 * 0.9**2], rel=RTOL)
        with pytest.raises(NotImplementedError):
            seq.step()


def _adagrad(module: Any) -> Any:
    """An optimizer with neither momentum nor betas, on ``module``'s side."""
    if module is torch.optim.lr_scheduler:
        return torch.optim.Adagrad([torch.zeros(2, requires_grad=True)])
    return optim.Adagrad([gt.Cpu().tensor(np.zeros(2), requires_grad=True)])


# (make(module, optimizer, other optimizer), exception type PyTorch raises too, our message)
SCHED_BAD: list[tuple[Callable[[Any, Any, Any], Any], type[Exception], str]] = [
    (lambda m, o, _: m.ConstantLR(o, factor=1.5), ValueError, r"ConstantLR: factor .* must be in \(0, 1\]"),
    (lambda m, o, _: m.ConstantLR(o, factor=-0.1), ValueError, "ConstantLR: factor"),
    (lambda m, o, _: m.MultiplicativeLR(o, [lambda e: 1.0] * 2), ValueError, "MultiplicativeLR: lr_lambda must have"),
    (lambda m, o, _: m.MultiplicativeLR(o, 3), TypeError, "MultiplicativeLR: lr_lambda should be a function"),
    (lambda m, o, _: m.ChainedScheduler([]), ValueError, "ChainedScheduler expects at least one scheduler"),
    (lambda m, o, _: m.ChainedScheduler([m.StepLR(o, 2), object()], optimizer=o), TypeError,
     r"ChainedScheduler: schedulers\[1\] is a object, not an LRScheduler"),
    (lambda m, o, x: m.ChainedScheduler([m.StepLR(o, 2), m.StepLR(x, 2)]), ValueError,
     r"ChainedScheduler expects all schedulers to belong to the same optimizer, but schedulers\[1\]"),
    (lambda m, o, x: m.ChainedScheduler([m.StepLR(o, 2)], optimizer=x), ValueError,
     "ChainedScheduler expects all schedulers to belong to the same optimizer"),
    (lambda m, o, _: m.ChainedScheduler([m.StepLR(o, 2), m.ReduceLROnPlateau(o)]), ValueError,
     r"ChainedScheduler does not support ReduceLROnPlateau \(schedulers\[1\]\)"),
    (lambda m, o, _: m.CyclicLR(object(), 0.01, 0.1), TypeError, "CyclicLR: object is not an Optimizer"),
    (lambda m, o, _: m.CyclicLR(o, [0.01, 0.02], 0.1), ValueError, "CyclicLR: base_lr must have the same length"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, [0.1, 0.2]), ValueError, "CyclicLR: max_lr must have the same length"),
    (lambda m, o, _: m.CyclicLR(o, "a", 0.1), TypeError, "CyclicLR: base_lr must be a real number"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, 0.1, mode="linear"), ValueError,
     "CyclicLR: mode 'linear' is invalid and scale_fn is None"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, 0.1, scale_fn=3), TypeError, "CyclicLR: scale_fn should be a function"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, 0.1, step_size_up="a"), ValueError, "CyclicLR: step_size_up must be a number"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, 0.1, step_size_up=None), TypeError, "CyclicLR: step_size_up must be a"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, 0.1, base_momentum=[0.8, 0.85]), ValueError,
     "CyclicLR: base_momentum must have the same length"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, 0.1, max_momentum=[0.8, 0.85]), ValueError,
     "CyclicLR: max_momentum must have the same length"),
    (lambda m, o, _: m.CyclicLR(_adagrad(m), 0.01, 0.1), ValueError,
     "CyclicLR: optimizer must support momentum or beta1"),
    (lambda m, o, _: m.CyclicLR(o, 0.01, 0.1, last_epoch=2), KeyError, "CyclicLR: param 'initial_lr'"),
    (lambda m, o, _: m.PolynomialLR(o, last_epoch=2), KeyError, "PolynomialLR: param 'initial_lr'"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "error", "message"), SCHED_BAD)
def test_bad_arguments_refused_like_torch(
    make: Callable[[Any, Any, Any], Any], error: type[Exception], message: str
) -> None:
    o, t = _sgd_pair(0.1)
    other, tother = _sgd_pair(0.1)
    with pytest.raises(error, match=message):
        make(lr_scheduler, o, other)
    with pytest.raises(error):  # PyTorch refuses it with the same exception type
        make(torch.optim.lr_scheduler, t, tother)


# (make(module, optimizer), our message, what PyTorch does: None = accepts it, else the error it
# raises in the first steps)
EXTRA_BAD: list[tuple[Factory, str, type[Exception] | None]] = [
    (lambda m, o: m.ConstantLR(o, factor=0.0, total_iters=2), r"ConstantLR: factor .* \(0, 1\]", ZeroDivisionError),
    (lambda m, o: m.ConstantLR(o, total_iters=0), "ConstantLR: total_iters must be a positive int", None),
    (lambda m, o: m.PolynomialLR(o, total_iters=0), "PolynomialLR: total_iters must be a positive int",
     ZeroDivisionError),
    (lambda m, o: m.PolynomialLR(o, total_iters=2, power=-1.0), "PolynomialLR: power", ZeroDivisionError),
    (lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=0), "CyclicLR: step_size_up must be a finite number > 0",
     ZeroDivisionError),
    (lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=-2), "CyclicLR: step_size_up", None),
    (lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_down=-1), "CyclicLR: step_size_down", None),
    (lambda m, o: m.CyclicLR(o, 0.01, 0.1, scale_fn=lambda x: 1.0, scale_mode="iteration"),
     "CyclicLR: scale_mode must be 'cycle' or 'iterations'", None),
    (lambda m, o: m.CyclicLR(o, 0.01, 0.1, mode="exp_range", gamma=-0.5), "CyclicLR: gamma", None),
    (lambda m, o: m.CyclicLR(o, -0.01, 0.1), "CyclicLR: base_lr must be a finite number >= 0", None),
    (lambda m, o: m.CyclicLR(o, 0.01, math.inf), "CyclicLR: max_lr", None),
]  # fmt: skip


@pytest.mark.parametrize(("make", "message", "torch_error"), EXTRA_BAD)
def test_arguments_refused_where_torch_fails_later_or_misbehaves(
    make: Factory, message: str, torch_error: type[Exception] | None
) -> None:
    """Refused here with a ValueError naming the schedule and the argument, where PyTorch
    accepts the argument and divides by zero a few steps later (``torch_error``), or runs a
    meaningless schedule (``None``; e.g. ConstantLR with ``total_iters=0`` keeps ``factor``
    for ever in its recursive form but not in its closed form)."""
    o, t = _sgd_pair(0.1)
    with pytest.raises(ValueError, match=message):
        make(lr_scheduler, o)

    def torch_run() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            sched = make(torch.optim.lr_scheduler, t)
            for _ in range(4):
                _opt_step(t)
                sched.step()
            sched.step(3)  # the closed form, where it has one

    if torch_error is None:
        torch_run()
    else:
        with pytest.raises(torch_error):
            torch_run()


def test_exports() -> None:
    for name in ("ConstantLR", "MultiplicativeLR", "PolynomialLR", "ChainedScheduler", "CyclicLR"):
        assert name in lr_scheduler.__all__
        assert hasattr(torch.optim.lr_scheduler, name)
        assert issubclass(getattr(lr_scheduler, name), lr_scheduler.LRScheduler)


@pytest.mark.parametrize("which", ["ChainedScheduler", "CyclicLR"])
def test_schedule_stepped_inside_a_captured_step_replays(which: str) -> None:
    """``sched.step()`` inside a step compiled by :func:`gradtape.capture` is recorded as a call
    and rerun at each replay: the run equals the eager one (rates, momentum, parameters)."""
    from gradtape import losses

    def run(captured: bool) -> tuple[list[float], list[Any]]:
        model, _ = _model(31)
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        if which == "CyclicLR":
            sched: Any = lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="triangular2")
        else:
            sched = lr_scheduler.ChainedScheduler(
                [lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=4), lr_scheduler.ExponentialLR(opt, 0.9)]
            )
        dev = gt.Cpu()

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            loss = losses.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        rows = []
        for x, y in _batches(12, 31):
            f(dev.tensor(x), dev.tensor(y))
            rows.append([*sched.get_last_lr(), opt.param_groups[0]["momentum"]])
        if captured:
            assert (f.recorded, f.replays) == (1, 10)  # the first call runs eagerly, the second records
        return [r for row in rows for r in row], [p.numpy().copy() for p in model.parameters()]

    (r0, p0), (r1, p1) = run(False), run(True)
    assert r0 == r1
    for a, b in zip(p0, p1, strict=True):
        np.testing.assert_array_equal(a, b)
