"""``gradtape.optim.swa_utils`` against ``torch.optim.swa_utils``: a PyTorch user's SWA / EMA
program ported by renaming ``torch`` to ``gradtape``.

Each test runs the same program in both libraries from identical float64 weights (copied
through ``state_dict``): an MLP with BatchNorm1d trained with SGD (4 batches an epoch from a
``DataLoader``), a CosineAnnealingLR for the first epochs and :class:`SWALR` afterwards (both
built at the start, as in PyTorch's example), :class:`AveragedModel` updated once an epoch
(SWA; EMA through ``multi_avg_fn`` and ``avg_fn``; the explicit SWA functions;
``use_buffers``), then :func:`update_bn`. Every epoch the averaged parameters and buffers,
``n_averaged`` and the learning rates are compared with PyTorch's; at the end the BatchNorm
statistics :func:`update_bn` recomputes and the averaged model's outputs. Bad arguments raise
PyTorch's exception types.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import losses, nn, optim
from gradtape.optim import swa_utils
from gradtape.utils.data import DataLoader, TensorDataset

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
F64 = np.float64
RTOL = 1e-10
EPOCHS = 5
SWA_START = 2  # epochs 0, 1: CosineAnnealingLR; from epoch 2: averaging and SWALR


@pytest.fixture(autouse=True)
def _torch_float64() -> Iterator[None]:
    """PyTorch computes some scalars in its default dtype (``1 / (n + 1)`` of the SWA lerp, an
    integer buffer's EMA): make it float64 so that both sides compute in float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


# ----- the program, on both sides ----------------------------------------------------------


def _models(seed: int = 0, bn: bool = True) -> tuple[Any, Any]:
    """A gradtape MLP 4 -> 8 (BatchNorm1d) -> tanh -> 3 and the torch MLP with its state."""
    dev = gt.Cpu(seed=seed)
    mid_g: list[nn.Module] = [nn.BatchNorm1d(8, dev=dev, dtype=F64)] if bn else []
    mid_t: list[Any] = [torch.nn.BatchNorm1d(8)] if bn else []
    model = nn.Sequential(nn.Linear(4, 8, dev=dev, dtype=F64), *mid_g, nn.Tanh(), nn.Linear(8, 3, dev=dev, dtype=F64))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), *mid_t, torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    # non-trivial BatchNorm affine parameters
    ref.load_state_dict({k: torch.from_numpy(np.array(v.data)) for k, v in model.state_dict().items()})
    return model, ref


def _data(seed: int = 0) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((24, 4)), rng.standard_normal((24, 3))


def _loaders(x: Array, y: Array) -> tuple[DataLoader[Any], Any]:
    ours = DataLoader(TensorDataset(x, y), batch_size=6)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=6
    )
    return ours, theirs


def _close(a: Any, b: Any, what: str) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=RTOL, atol=1e-12, err_msg=what)


def _same_state(ours: nn.Module, theirs: Any, what: str) -> None:
    """Every state_dict entry (parameters and buffers, ``n_averaged`` included), keys and values."""
    sd_g, sd_t = ours.state_dict(), theirs.state_dict()
    assert list(sd_g) == list(sd_t), what
    for k in sd_t:
        _close(sd_g[k].numpy(), sd_t[k].detach().numpy(), f"{k} {what}")


def _avg_kwargs(lib: Any, kind: str) -> dict[str, Any]:
    su = lib.optim.swa_utils
    return {
        "swa": {},
        "ema_multi": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
        "ema_avg": {"avg_fn": su.get_ema_avg_fn(0.9)},
        "ema_avg_default": {"avg_fn": su.get_ema_avg_fn()},
        "swa_multi": {"multi_avg_fn": su.get_swa_multi_avg_fn()},
        "swa_avg": {"avg_fn": su.get_swa_avg_fn()},
    }[kind]


def _program(
    kind: str, strategy: Any = "cos", use_buffers: bool = False, anneal_epochs: int = 2
) -> tuple[Any, Any, Any, Any, list[float], list[float]]:
    """The user's program on both sides, compared every epoch; returns both models, both
    averaged models and both rate histories."""
    model, ref = _models()
    x, y = _data()
    loader, tloader = _loaders(x, y)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=10)
    swa_sched = swa_utils.SWALR(opt, swa_lr=0.03, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    tswa_sched = torch.optim.swa_utils.SWALR(topt, swa_lr=0.03, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    swa = swa_utils.AveragedModel(model, use_buffers=use_buffers, **_avg_kwargs(gt, kind))
    tswa = torch.optim.swa_utils.AveragedModel(ref, use_buffers=use_buffers, **_avg_kwargs(torch, kind))
    _same_state(swa, tswa, "at construction")
    lrs: list[float] = []
    tlrs: list[float] = []
    for epoch in range(EPOCHS):
        for (xb, yb), (txb, tyb) in zip(loader, tloader, strict=True):
            opt.zero_grad()
            losses.mse_loss(model(xb), yb).backward()
            opt.step()
            topt.zero_grad()
            torch.nn.functional.mse_loss(ref(txb), tyb).backward()
            topt.step()
        if epoch >= SWA_START:
            swa.update_parameters(model)
            tswa.update_parameters(ref)
            swa_sched.step()
            tswa_sched.step()
        else:
            sched.step()
            tsched.step()
        lrs += swa_sched.get_last_lr() if epoch >= SWA_START else sched.get_last_lr()
        tlrs += tswa_sched.get_last_lr() if epoch >= SWA_START else tsched.get_last_lr()
        _close(lrs, tlrs, f"learning rates after epoch {epoch}")
        _same_state(model, ref, f"trained model after epoch {epoch}")
        _same_state(swa, tswa, f"{kind} averaged model after epoch {epoch}")
        assert int(swa.n_averaged.item()) == int(tswa.n_averaged) == max(0, epoch - SWA_START + 1)
    # update_bn over the DataLoader, then the averaged model's outputs
    swa_utils.update_bn(loader, swa)
    torch.optim.swa_utils.update_bn(tloader, tswa)
    _same_state(swa, tswa, f"{kind} after update_bn")
    swa.eval()
    tswa.eval()
    with gt.no_grad():
        out = swa(gt.from_numpy(x)).numpy()
    with torch.no_grad():
        tout = tswa(torch.from_numpy(x)).numpy()
    _close(out, tout, f"{kind} averaged model's outputs")
    return model, ref, swa, tswa, lrs, tlrs


# ----- AveragedModel, SWALR, update_bn: the whole program --------------------------------


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg", "ema_avg_default", "swa_multi", "swa_avg"])
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_program_matches_torch(kind: str, strategy: str) -> None:
    model, _, swa, _, lrs, _ = _program(kind, strategy)
    # the rates: cosine schedule for 2 epochs, then annealed to swa_lr in 2 epochs and kept there
    assert lrs[-1] == pytest.approx(0.03) and lrs[-2] == pytest.approx(0.03)
    # the averaged model is its own copy: its tensors are not the model's
    ids = {id(p) for p in model.parameters()} | {id(b) for b in model.buffers()}
    assert not ids & {id(t) for t in swa.state_dict(keep_vars=True).values()}


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg"])
def test_use_buffers_matches_torch(kind: str) -> None:
    """``use_buffers=True``: the running statistics (and the integer ``num_batches_tracked``,
    truncated) are averaged too, not copied."""
    model, _, swa, _, _, _ = _program(kind, use_buffers=True)
    # averaged, so not the model's (num_batches_tracked's average lags the model's count)
    assert int(swa.module[1].num_batches_tracked.item()) < int(model[1].num_batches_tracked.item())


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before:UserWarning")
def test_anneal_epochs_zero_and_resume_match_torch() -> None:
    """``anneal_epochs=0`` jumps to ``swa_lr``; a schedule saved mid-way and loaded into a new
    one continues as PyTorch's does; two groups with their own ``swa_lr``."""
    runs: list[tuple[int, Any]] = [(0, "cos"), (5, "linear"), (5, "cos")]
    for anneal_epochs, strategy in runs:
        model, ref = _models()
        groups = [{"params": model[0].parameters()}, {"params": model[3].parameters(), "lr": 0.2}]
        tgroups = [{"params": ref[0].parameters()}, {"params": ref[3].parameters(), "lr": 0.2}]
        opt = optim.SGD(groups, lr=0.1)
        topt = torch.optim.SGD(tgroups, lr=0.1)
        s = swa_utils.SWALR(opt, swa_lr=[0.01, 0.05], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
        ts = torch.optim.swa_utils.SWALR(
            topt, swa_lr=[0.01, 0.05], anneal_epochs=anneal_epochs, anneal_strategy=strategy
        )
        _close(s.get_last_lr(), ts.get_last_lr(), f"{anneal_epochs} {strategy} at construction")
        for k in range(3):
            s.step()
            ts.step()
            _close(s.get_last_lr(), ts.get_last_lr(), f"{anneal_epochs} {strategy} step {k}")
        state = s.state_dict()
        assert "anneal_func" not in state and state["_anneal_strategy"] == strategy
        s2 = swa_utils.SWALR(opt, swa_lr=[0.01, 0.05], anneal_epochs=1, anneal_strategy="cos")
        s2.load_state_dict(state)
        for k in range(4):
            s2.step()
            ts.step()
            _close(s2.get_last_lr(), ts.get_last_lr(), f"{anneal_epochs} {strategy} resumed step {k}")
            assert s2.optimizer.param_groups[1]["swa_lr"] == 0.05


def test_state_dict_keys_and_load() -> None:
    """PyTorch's keys (``n_averaged``, then ``module.<...>``), loadable from PyTorch's
    averaged model's state dict."""
    model, ref = _models()
    swa = swa_utils.AveragedModel(model)
    tswa = torch.optim.swa_utils.AveragedModel(ref)
    assert list(swa.state_dict()) == list(tswa.state_dict())
    assert next(iter(swa.state_dict())) == "n_averaged"
    assert swa.n_averaged.dtype == np.int64 and swa.n_averaged.shape == ()
    # buffers are not parameters: the averaged model's parameters are the copy's
    assert [n for n, _ in swa.named_parameters()] == [n for n, _ in tswa.named_parameters()]
    assert [n for n, _ in swa.named_buffers()] == [n for n, _ in tswa.named_buffers()]
    tswa.update_parameters(ref)
    tswa.update_parameters(ref)
    swa.load_state_dict(tswa.state_dict())
    assert int(swa.n_averaged.item()) == 2
    # device="cpu" is accepted, as in PyTorch
    assert int(swa_utils.AveragedModel(model, device="cpu").n_averaged.item()) == 0


def test_updates_record_nothing() -> None:
    """The averages are written in place under no_grad: the averaged parameters stay leafs
    without gradients, the model's gradients are untouched, and a backward over values the
    update overwrote refuses to run (as PyTorch's version counter does)."""
    model, _ = _models(bn=False)
    x, y = _data()
    swa = swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(0.5))
    losses.mse_loss(model(gt.from_numpy(x)), gt.from_numpy(y)).backward()
    grads = [p.grad.numpy().copy() for p in model.parameters() if p.grad is not None]
    swa.update_parameters(model)
    swa.update_parameters(model)
    for p in swa.parameters():
        assert p.is_leaf and p.requires_grad and p.grad is None
    assert all(
        np.array_equal(g, p.grad.numpy()) for g, p in zip(grads, model.parameters(), strict=True) if p.grad is not None
    )
    loss = losses.mse_loss(swa(gt.from_numpy(x)), gt.from_numpy(y))
    swa.update_parameters(model)
    with pytest.raises(Exception, match=r"(?i)in place|modified"):
        loss.backward()


def test_update_bn_without_batchnorm_and_restores_mode() -> None:
    model, ref = _models()
    x, _ = _data()
    loader, tloader = _loaders(x, np.zeros((24, 1)))
    model.eval()
    ref.eval()
    model[1].momentum = 0.3
    ref[1].momentum = 0.3
    swa_utils.update_bn([gt.from_numpy(x[:6]), gt.from_numpy(x[6:])], model)  # plain tensors as batches
    torch.optim.swa_utils.update_bn([torch.from_numpy(x[:6]), torch.from_numpy(x[6:])], ref)
    _same_state(model, ref, "update_bn on tensors")
    assert not model.training and not model[1].training and model[1].momentum == 0.3
    swa_utils.update_bn(loader, model, device="cpu")
    torch.optim.swa_utils.update_bn(tloader, ref, device="cpu")
    _same_state(model, ref, "update_bn with device")
    plain, tplain = _models(bn=False)
    before = copy.deepcopy(plain.state_dict())
    swa_utils.update_bn(loader, plain)  # no BatchNorm: nothing to do
    torch.optim.swa_utils.update_bn(tloader, tplain)
    _same_state(plain, tplain, "no BatchNorm")
    assert all(np.array_equal(before[k].numpy(), v.numpy()) for k, v in plain.state_dict().items())


# ----- errors: PyTorch's exception types ----------------------------------------------------


def _raises_like_torch(ours: Any, theirs: Any) -> None:
    with pytest.raises(Exception) as e_t:
        theirs()
    with pytest.raises(type(e_t.value)):
        ours()


def test_errors_match_torch() -> None:
    model, ref = _models()
    opt = optim.SGD(model.parameters(), lr=0.1)
    topt = torch.optim.SGD(ref.parameters(), lr=0.1)
    su: Any = swa_utils  # bad arguments on purpose: untyped
    tsu = torch.optim.swa_utils
    cases: list[tuple[Any, Any]] = [
        (
            lambda: su.AveragedModel(model, avg_fn=su.get_ema_avg_fn(), multi_avg_fn=su.get_ema_multi_avg_fn()),
            lambda: tsu.AveragedModel(ref, avg_fn=tsu.get_ema_avg_fn(), multi_avg_fn=tsu.get_ema_multi_avg_fn()),
        ),
        (lambda: su.get_ema_multi_avg_fn(1.5), lambda: tsu.get_ema_multi_avg_fn(1.5)),
        (lambda: su.get_ema_multi_avg_fn(-0.1), lambda: tsu.get_ema_multi_avg_fn(-0.1)),
        (lambda: su.get_ema_avg_fn(2), lambda: tsu.get_ema_avg_fn(2)),
        (lambda: su.get_ema_avg_fn("0.9"), lambda: tsu.get_ema_avg_fn("0.9")),
        (
            lambda: su.SWALR(opt, swa_lr=0.05, anneal_strategy="exp"),
            lambda: tsu.SWALR(topt, 0.05, anneal_strategy="exp"),
        ),
        (lambda: su.SWALR(opt, swa_lr=0.05, anneal_epochs=-1), lambda: tsu.SWALR(topt, 0.05, anneal_epochs=-1)),
        (lambda: su.SWALR(opt, swa_lr=0.05, anneal_epochs=2.5), lambda: tsu.SWALR(topt, 0.05, anneal_epochs=2.5)),
        (lambda: su.SWALR(opt, swa_lr=[0.05, 0.1]), lambda: tsu.SWALR(topt, [0.05, 0.1])),
        (lambda: su.SWALR(opt, swa_lr="0.05"), lambda: tsu.SWALR(topt, "0.05")),
    ]
    # resuming (last_epoch >= 0) needs each group's initial_lr: fresh optimizers without one
    fresh = optim.SGD(model.parameters(), lr=0.1)
    tfresh = torch.optim.SGD(ref.parameters(), lr=0.1)
    cases.append((lambda: su.SWALR(fresh, swa_lr=0.05, last_epoch=3), lambda: tsu.SWALR(tfresh, 0.05, last_epoch=3)))
    for ours, theirs in cases:
        _raises_like_torch(ours, theirs)
    # a model whose parameters do not pair with the averaged model's: RuntimeError
    plain, tplain = _models(bn=False)
    swa, tswa = su.AveragedModel(model), tsu.AveragedModel(ref)
    before = {k: v.numpy().copy() for k, v in swa.state_dict().items()}
    _raises_like_torch(lambda: swa.update_parameters(plain), lambda: tswa.update_parameters(tplain))
    assert all(np.array_equal(before[k], v.numpy()) for k, v in swa.state_dict().items())  # nothing written
    # the same parameters but no buffers to copy (without use_buffers): ValueError
    nostats = nn.Sequential(nn.Linear(4, 8, dtype=F64), nn.BatchNorm1d(8, track_running_stats=False, dtype=F64))
    tnostats = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8, track_running_stats=False))
    swa = su.AveragedModel(nn.Sequential(nn.Linear(4, 8, dtype=F64), nn.BatchNorm1d(8, dtype=F64)))
    tswa = tsu.AveragedModel(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8)))
    _raises_like_torch(lambda: swa.update_parameters(nostats), lambda: tswa.update_parameters(tnostats.double()))


def test_exported_from_gradtape_optim() -> None:
    assert gt.optim.swa_utils.AveragedModel is swa_utils.AveragedModel
    assert "swa_utils" in gt.optim.__all__
    assert set(swa_utils.__all__) == set(torch.optim.swa_utils.__all__)
