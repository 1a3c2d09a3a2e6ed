"""PyTorch's margin losses ``SoftMarginLoss``, ``MultiMarginLoss`` and
``MultiLabelSoftMarginLoss`` (and their functional forms), written as a PyTorch user's
program: each ``nn`` module trains a small model for a few SGD steps next to PyTorch from
identical weights (float64; the loss at every step and the weights after), every reduction,
class weights, ``p=2``, a 1-D input, the targets' gradient where PyTorch has one, second
derivatives, and the errors (naming the loss and the shapes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape as gt
import gradtape.nn.functional as gF
from gradtape import DTypeError, ShapeError, nn, optim
from gradtape.autograd import grad

torch: Any = pytest.importorskip("torch")
tF: Any = torch.nn.functional

F64 = np.float64
STEPS = 4
REDUCTIONS: list[Any] = ["none", "mean", "sum"]
DEV = gt.Cpu(seed=0)
_R = np.random.default_rng(31)
X = _R.standard_normal((6, 5))
SIGNS = np.where(_R.random((6, 3)) < 0.5, -1.0, 1.0)
MULTI_HOT = (_R.random((6, 3)) < 0.5).astype(F64)
CLASSES = np.array([0, 2, 1, 2, 0, 1], dtype=np.int64)
WEIGHT = np.array([0.5, 2.0, 1.25])


def _models() -> tuple[Any, Any]:
    """A 5 -> 8 -> 3 MLP in gradtape and in PyTorch, with gradtape's initial weights."""
    ours = nn.Sequential(nn.Linear(5, 8, dev=DEV, dtype=F64), nn.Tanh(), nn.Linear(8, 3, dev=DEV, dtype=F64))
    ref = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    mine = dict(ours.named_parameters())
    with torch.no_grad():
        for name, q in ref.named_parameters():
            q.copy_(torch.from_numpy(np.asarray(mine[name].data)))
    return ours, ref


def _train(criterion: Any, tcriterion: Any, target: np.ndarray[Any, Any]) -> None:
    """PyTorch's loop, renamed, next to PyTorch's: equal losses and weights."""
    ours, ref = _models()
    opt = optim.SGD(ours.parameters(), lr=0.2, momentum=0.5)
    topt = torch.optim.SGD(ref.parameters(), lr=0.2, momentum=0.5)
    for step in range(STEPS):
        opt.zero_grad()
        out = criterion(ours(DEV.tensor(X)), DEV.tensor(target))
        loss = out if out.ndim == 0 else out.sum()
        loss.backward()
        topt.zero_grad()
        tout = tcriterion(ref(torch.from_numpy(X)), torch.from_numpy(target))
        tloss = tout if tout.ndim == 0 else tout.sum()
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10, err_msg=f"loss at step {step}")
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-13)
        opt.step()
        topt.step()
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss_trains_as_pytorchs(reduction: Any) -> None:
    _train(nn.SoftMarginLoss(reduction=reduction), torch.nn.SoftMarginLoss(reduction=reduction), SIGNS)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss_trains_as_pytorchs(reduction: Any, weighted: bool) -> None:
    w = WEIGHT if weighted else None
    ours = nn.MultiLabelSoftMarginLoss(DEV.tensor(w) if w is not None else None, reduction=reduction)
    theirs = torch.nn.MultiLabelSoftMarginLoss(torch.tensor(w) if w is not None else None, reduction=reduction)
    _train(ours, theirs, MULTI_HOT)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("p", "margin", "weighted"), [(1, 1.0, False), (2, 1.0, False), (2, 0.5, True), (1, 2.0, True)]
)
def test_multi_margin_loss_trains_as_pytorchs(reduction: Any, p: int, margin: float, weighted: bool) -> None:
    w = WEIGHT if weighted else None
    ours = nn.MultiMarginLoss(p, margin, DEV.tensor(w) if w is not None else None, reduction=reduction)
    theirs = torch.nn.MultiMarginLoss(p, margin, torch.tensor(w) if w is not None else None, reduction=reduction)
    _train(ours, theirs, CLASSES)


def _grad(out: Any, x: Any, create_graph: bool = False) -> Any:
    """PyTorch's ``torch.autograd.grad(out, [x])``, one input."""
    (g,) = grad(out, [x], create_graph=create_graph)
    assert g is not None
    return g


def _value_and_grad(fn: Callable[..., Any], tfn: Callable[..., Any], x: np.ndarray[Any, Any], *rest: Any) -> None:
    xt = torch.tensor(x, requires_grad=True)
    tout = tfn(xt, *(torch.tensor(r) if isinstance(r, np.ndarray) else r for r in rest))
    (gx,) = torch.autograd.grad(tout.sum(), xt)
    out = fn(DEV.tensor(x), *(DEV.tensor(r) if isinstance(r, np.ndarray) else r for r in rest))
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-14)
    xg = gt.tensor(x, requires_grad=True)
    g = _grad(fn(xg, *(DEV.tensor(r) if isinstance(r, np.ndarray) else r for r in rest)).sum(), xg)
    np.testing.assert_allclose(g.numpy(), gx.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_on_one_sample(reduction: Any, p: int) -> None:
    """A 1-D input (C,) with a 0-d target, or a target of shape (1,), as PyTorch."""
    for target in (np.array(2), np.array([1])):
        _value_and_grad(
            lambda a, t: gF.multi_margin_loss(a, t, p, 0.8, WEIGHT, reduction),
            lambda a, t: tF.multi_margin_loss(a, t, p, 0.8, torch.tensor(WEIGHT), reduction=reduction),
            X[0, :3],
            target,
        )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_soft_margin_loss_on_one_sample_and_targets_gradient(reduction: Any) -> None:
    _value_and_grad(
        lambda a, t: gF.multilabel_soft_margin_loss(a, t, reduction=reduction),
        lambda a, t: tF.multilabel_soft_margin_loss(a, t, reduction=reduction),
        X[0, :3],
        MULTI_HOT[0],
    )
    # a traced probability target gets PyTorch's gradient, -weight x / C
    t = _R.uniform(0.1, 0.9, (6, 3))
    tt = torch.tensor(t, requires_grad=True)
    (gt_ref,) = torch.autograd.grad(
        tF.multilabel_soft_margin_loss(torch.tensor(X[:, :3]), tt, torch.tensor(WEIGHT), reduction=reduction).sum(), tt
    )
    tg = gt.tensor(t, requires_grad=True)
    g = _grad(gF.multilabel_soft_margin_loss(DEV.tensor(X[:, :3]), tg, WEIGHT, reduction).sum(), tg)
    np.testing.assert_allclose(g.numpy(), gt_ref.numpy(), rtol=1e-12)


def test_soft_margin_loss_does_not_overflow() -> None:
    """``log(1 + exp(-y x))`` for ``-y x`` far past exp's range: ``-y x`` itself, gradient ``-y``."""
    x = np.array([800.0, -800.0, 3.0])
    y = np.array([-1.0, 1.0, 1.0])
    out = gF.soft_margin_loss(DEV.tensor(x), y, reduction="none")
    np.testing.assert_allclose(out.numpy(), [800.0, 800.0, np.log1p(np.exp(-3.0))])
    xg = gt.tensor(x, requires_grad=True)
    g = _grad(gF.soft_margin_loss(xg, y, reduction="sum"), xg)
    np.testing.assert_allclose(g.numpy(), [1.0, -1.0, -1.0 / (1.0 + np.exp(3.0))])


def _multi_margin_formula(a: Any) -> Any:
    """``multi_margin_loss(a, CLASSES, p=2, margin=1.5, weight=WEIGHT)`` in PyTorch's ops:
    ``sum_{i != y} w[y] max(0, margin - a[y] + a[i])**2 / C``, the mean over samples."""
    y = torch.tensor(CLASSES)
    z = (1.5 - a.gather(1, y[:, None]) + a).clamp_min(0) ** 2
    z = z * (torch.arange(a.shape[1])[None, :] != y[:, None])
    return (z.sum(1) * torch.tensor(WEIGHT)[y] / a.shape[1]).mean()


def test_second_derivatives_match_pytorchs() -> None:
    """Composed of gradtape ops, the losses differentiate twice: Hessian-vector products."""
    v = _R.standard_normal((6, 3))
    cases: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = [
        (lambda a: gF.soft_margin_loss(a, SIGNS), lambda a: tF.soft_margin_loss(a, torch.tensor(SIGNS))),
        (
            lambda a: gF.multilabel_soft_margin_loss(a, MULTI_HOT, WEIGHT),
            lambda a: tF.multilabel_soft_margin_loss(a, torch.tensor(MULTI_HOT), torch.tensor(WEIGHT)),
        ),
        (
            lambda a: gF.multi_margin_loss(a, CLASSES, 2, 1.5, WEIGHT),
            _multi_margin_formula,  # PyTorch's multi_margin_loss has no double backward
        ),
    ]
    x = X[:, :3]
    for fn, tfn in cases:
        xt = torch.tensor(x, requires_grad=True)
        (gx,) = torch.autograd.grad(tfn(xt), xt, create_graph=True)
        (hv,) = torch.autograd.grad((gx * torch.tensor(v)).sum(), xt)
        xg = gt.tensor(x, requires_grad=True)
        g1 = _grad(fn(xg), xg, create_graph=True)
        ours = _grad((g1 * DEV.tensor(v)).sum(), xg)
        np.testing.assert_allclose(ours.numpy(), hv.numpy(), rtol=1e-10, atol=1e-13)


def test_errors_name_the_loss_and_the_shapes() -> None:
    x = DEV.tensor(X[:, :3])
    with pytest.raises(ShapeError, match=r"^soft_margin_loss: target of shape \(6, 2\) does not match .*\(6, 3\)"):
        gF.soft_margin_loss(x, SIGNS[:, :2])
    with pytest.raises(ValueError, match=r"^soft_margin_loss: reduction must be one of"):
        gF.soft_margin_loss(x, SIGNS, reduction="avg")  # type: ignore[call-overload]
    with pytest.raises(
        ShapeError,
        match=r"^multilabel_soft_margin_loss: target of shape \(6, 2\) does not match input of shape \(6, 3\)",
    ):
        gF.multilabel_soft_margin_loss(x, MULTI_HOT[:, :2])
    with pytest.raises(ShapeError, match=r"^multilabel_soft_margin_loss: weight of shape \(2,\) does not broadcast"):
        gF.multilabel_soft_margin_loss(x, MULTI_HOT, WEIGHT[:2])
    with pytest.raises(ValueError, match=r"^multi_margin_loss: only p == 1 and p == 2 are supported, got p=3"):
        gF.multi_margin_loss(x, CLASSES, p=3)
    with pytest.raises(
        ValueError, match=r"^multi_margin_loss: class indices must lie in \[0, 3\), got min 3 and max 3"
    ):
        gF.multi_margin_loss(x, [0, 1, 2, 3, 0, 1])
    with pytest.raises(ValueError, match=r"^multi_margin_loss: class indices must lie in \[0, 3\), got min -1"):
        gF.multi_margin_loss(x, [0, 1, 2, -1, 0, 1])
    with pytest.raises(
        ShapeError, match=r"^multi_margin_loss: targets must have shape \(6,\) for input of shape \(6, 3\)"
    ):
        gF.multi_margin_loss(x, [0, 1])
    with pytest.raises(ShapeError, match=r"^multi_margin_loss: input must have shape \(N, C\) or \(C,\)"):
        gF.multi_margin_loss(DEV.tensor(X.reshape(2, 3, 5)), [0, 1])
    with pytest.raises(ShapeError, match=r"^multi_margin_loss: weight of shape \(2,\) must have one entry per class"):
        gF.multi_margin_loss(x, CLASSES, weight=WEIGHT[:2])
    with pytest.raises(DTypeError, match=r"^multi_margin_loss: targets must be integer class indices"):
        gF.multi_margin_loss(x, CLASSES.astype(F64))
    with pytest.raises(ValueError, match=r"^MultiMarginLoss: only p == 1 and p == 2 are supported, got p=3"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match=r"^SoftMarginLoss: reduction must be one of"):
        nn.SoftMarginLoss(reduction="avg")


def test_layers_repr_and_weight_buffer() -> None:
    crit = nn.MultiMarginLoss(p=2, margin=0.5, weight=DEV.tensor(WEIGHT))
    assert repr(crit) == "MultiMarginLoss(p=2, margin=0.5, reduction='mean')"
    assert set(crit.state_dict()) == {"weight"}
    assert set(nn.MultiLabelSoftMarginLoss(DEV.tensor(WEIGHT)).state_dict()) == {"weight"}
