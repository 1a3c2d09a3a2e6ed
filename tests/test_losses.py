"""gradtape.losses: gradients against finite differences (float64, w.r.t. inputs and traced
targets), values against the formulas written out in numpy (float32), PyTorch's functional
losses where installed, and errors that name the loss and both shapes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor
from gradtape.losses import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mae_loss,
    mse_loss,
    smooth_l1_loss,
)
from gradtape.tape import NONE_TAPE
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]
Fn = Callable[..., Any]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(2024)


def rnd(*shape: int) -> Array:
    return _RNG.standard_normal(shape)


def prob(*shape: int) -> Array:
    """Rows of probabilities (softmax of normals) along the last axis."""
    x = _RNG.standard_normal(shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.asarray(e / e.sum(axis=-1, keepdims=True))


def unit(*shape: int) -> Array:
    """Uniform samples in (0.05, 0.95): binary targets, probabilities away from 0."""
    return _RNG.uniform(0.05, 0.95, shape)


def logp(*shape: int) -> Array:
    return np.log(prob(*shape))


def nc(arr: Array) -> T:
    t: T = Tensor(arr.T, DEV)
    assert not t.data.flags.c_contiguous
    return t


def grads_of(fn: Fn, *inputs: Array | T) -> list[Array]:
    xs = [x if isinstance(x, Tensor) else DEV.tensor(x, dtype=x.dtype) for x in inputs]
    store = Gradients.leaky()
    grads = fn(*(x.trace(store) for x in xs)).backward()
    return [np.asarray(grads.get(x).numpy()) for x in xs]


# ----- numpy reference formulas ------------------------------------------------------------


def _red(e: Array, reduction: str, batch: int | None = None) -> Array:
    if reduction == "sum":
        return np.asarray(e.sum())
    if reduction == "batchmean":
        return np.asarray(e.sum() / (batch or 1))
    return np.asarray(e.mean())


def np_mse(x: Array, t: Array, r: str = "mean") -> Array:
    return _red((x - t) ** 2, r)


def np_l1(x: Array, t: Array, r: str = "mean") -> Array:
    return _red(np.abs(x - t), r)


def np_huber(x: Array, t: Array, r: str = "mean", delta: float = 1.0) -> Array:
    d = np.abs(x - t)
    return _red(np.where(d < delta, 0.5 * d**2, delta * (d - 0.5 * delta)), r)


def np_smooth_l1(x: Array, t: Array, r: str = "mean", beta: float = 1.0) -> Array:
    d = np.abs(x - t)
    if beta == 0:
        return _red(d, r)
    return _red(np.where(d < beta, 0.5 * d**2 / beta, d - 0.5 * beta), r)


def np_bce_logits(x: Array, t: Array, r: str = "mean", pos_weight: Array | None = None) -> Array:
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    sig = 1 / (1 + np.exp(-x64))
    pw = 1.0 if pos_weight is None else pos_weight
    return _red(-(pw * t64 * np.log(sig) + (1 - t64) * np.log(1 - sig)), r)


def np_kl(x: Array, t: Array, r: str = "mean", log_target: bool = False) -> Array:
    p = np.exp(t) if log_target else t
    with np.errstate(divide="ignore", invalid="ignore"):
        lp = t if log_target else np.log(t)
        e = np.where(p > 0, p * (lp - x), 0.0)
    return _red(e, r, x.shape[0] if x.ndim else 1)


def np_soft_ce(x: Array, t: Array, r: str = "mean") -> Array:
    x64 = x.astype(np.float64)
    m = x64.max(axis=1, keepdims=True)
    lsm = x64 - m - np.log(np.exp(x64 - m).sum(axis=1, keepdims=True))
    total = -(t * lsm).sum()
    return np.asarray(total / x.shape[0] if r == "mean" else total)


# ===== gradcheck ===========================================================================

_PAIRWISE: dict[str, tuple[Fn, Callable[..., Array]]] = {
    "mse": (mse_loss, rnd),
    "l1": (l1_loss, rnd),
    "huber": (huber_loss, rnd),
    "huber_delta0.3": (lambda x, t, reduction="mean": huber_loss(x, t, reduction, delta=0.3), rnd),
    "smooth_l1": (smooth_l1_loss, rnd),
    "smooth_l1_beta0.5": (lambda x, t, reduction="mean": smooth_l1_loss(x, t, reduction, beta=0.5), rnd),
    "smooth_l1_beta0": (lambda x, t, reduction="mean": smooth_l1_loss(x, t, reduction, beta=0.0), rnd),
    "bce_logits": (binary_cross_entropy_with_logits, unit),
    "bce_logits_pos_weight": (
        lambda x, t, reduction="mean": binary_cross_entropy_with_logits(
            x, t, reduction, pos_weight=np.array([0.5, 2.0, 3.0])
        ),
        unit,
    ),
    "kl_div": (kl_div, prob),
    "kl_div_batchmean": (lambda x, t, reduction="mean": kl_div(x, t, "batchmean"), prob),
    "kl_div_log_target": (lambda x, t, reduction="mean": kl_div(x, t, reduction, log_target=True), logp),
}


def _loss_cases() -> list[Any]:
    cases = []
    for name, (loss, target) in _PAIRWISE.items():
        shapes = [(2, 3), (1, 3), (4, 3)]
        for red in ("mean", "sum"):
            for shape in shapes:
                sid = "x".join(map(str, shape))
                tgt = target(*shape)
                cases.append(
                    pytest.param(
                        lambda x, loss=loss, t=tgt, red=red: loss(x, t, reduction=red),
                        [rnd(*shape)],
                        id=f"{name}-{red}-{sid}-array_target",
                    )
                )
            # gradient w.r.t. the target too, as a traced tensor
            cases.append(
                pytest.param(
                    lambda x, t, loss=loss, red=red: loss(x, t, reduction=red),
                    [rnd(2, 3), target(2, 3)],
                    id=f"{name}-{red}-traced_target",
                )
            )
        cases.append(
            pytest.param(lambda x, t, loss=loss: loss(x, t), [nc(rnd(3, 2)), target(2, 3)], id=f"{name}-noncontig")
        )
        if not name.startswith(("kl_div", "bce_logits_pos")):
            cases.append(pytest.param(lambda x, t, loss=loss: loss(x, t), [rnd(), target()], id=f"{name}-rank0"))
            cases.append(pytest.param(lambda x, t, loss=loss: loss(x, t), [rnd(5), target(5)], id=f"{name}-1d"))
    return cases


@pytest.mark.parametrize(("fn", "inputs"), _loss_cases())
def test_loss_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """Input (and traced target) gradients match central differences in float64."""
    assert gradcheck(fn, inputs) is True


def _ce_cases() -> list[Any]:
    def soft(t: Any, red: str) -> Fn:
        return lambda x: cross_entropy(x, t, reduction=red)  # type: ignore[call-overload]

    cases = []
    for red in ("mean", "sum"):
        cases.append(pytest.param(soft(prob(3, 4), red), [rnd(3, 4)], id=f"soft-{red}"))
        cases.append(
            pytest.param(
                lambda x, t, red=red: cross_entropy(x, t, red), [rnd(2, 3), prob(2, 3)], id=f"soft-traced-{red}"
            )
        )
    cases += [
        pytest.param(soft(prob(1, 1), "mean"), [rnd(1, 1)], id="soft-1x1"),
        pytest.param(soft(unit(2, 3), "mean"), [rnd(2, 3)], id="soft-unnormalised-rows"),
        pytest.param(soft(prob(3, 2).T.copy(), "sum"), [nc(rnd(3, 2))], id="soft-noncontig-logits"),
        pytest.param(lambda x, t: cross_entropy(x, t), [rnd(2, 3), nc(prob(3, 2))], id="soft-noncontig-target"),
        pytest.param(soft([1, 0, 2], "mean"), [rnd(3, 3)], id="indices-still-work"),
    ]
    return cases


@pytest.mark.parametrize(("fn", "inputs"), _ce_cases())
def test_cross_entropy_soft_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    assert gradcheck(fn, inputs) is True


# ===== values (float32) against the formulas =================================================

_VALUE_CASES: list[Any] = [
    pytest.param(mse_loss, np_mse, rnd, {}, id="mse"),
    pytest.param(l1_loss, np_l1, rnd, {}, id="l1"),
    pytest.param(huber_loss, np_huber, rnd, {}, id="huber"),
    pytest.param(huber_loss, np_huber, rnd, {"delta": 0.25}, id="huber-delta0.25"),
    pytest.param(huber_loss, np_huber, rnd, {"delta": 5.0}, id="huber-delta5"),
    pytest.param(smooth_l1_loss, np_smooth_l1, rnd, {}, id="smooth_l1"),
    pytest.param(smooth_l1_loss, np_smooth_l1, rnd, {"beta": 0.3}, id="smooth_l1-beta0.3"),
    pytest.param(smooth_l1_loss, np_smooth_l1, rnd, {"beta": 0.0}, id="smooth_l1-beta0"),
    pytest.param(binary_cross_entropy_with_logits, np_bce_logits, unit, {}, id="bce_logits"),
    pytest.param(
        binary_cross_entropy_with_logits,
        np_bce_logits,
        unit,
        {"pos_weight": np.array([1.0, 2.0, 0.5, 4.0], np.float32)},
        id="bce_logits-pos_weight",
    ),
    pytest.param(kl_div, np_kl, prob, {}, id="kl_div"),
    pytest.param(kl_div, np_kl, logp, {"log_target": True}, id="kl_div-log_target"),
]


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize(("loss", "ref", "target", "kw"), _VALUE_CASES)
def test_loss_values_match_the_formula_in_float32(
    loss: Fn, ref: Fn, target: Callable[..., Array], kw: dict[str, Any], reduction: str
) -> None:
    """The float32 loss equals the numpy formula, is a float32 scalar and carries the input's tape."""
    x = np.asarray(rnd(3, 4) * 2, np.float32)
    t = np.asarray(target(3, 4), np.float32)
    out = loss(DEV.tensor(x), t, reduction=reduction, **kw)
    assert out.shape == () and out.dtype == np.float32 and out.tape is NONE_TAPE
    np.testing.assert_allclose(out.numpy(), ref(x, t, reduction, **kw), rtol=2e-6, atol=1e-6)
    traced = loss(DEV.tensor(x).leaky_trace(), DEV.tensor(t), reduction=reduction, **kw)
    assert traced.tape is not NONE_TAPE
    np.testing.assert_array_equal(traced.numpy(), out.numpy())


def test_kl_div_batchmean_and_zero_targets() -> None:
    """batchmean divides the sum by the batch size; p == 0 contributes 0 (xlogy)."""
    x = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]], np.float32))
    t = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]], np.float32)
    out = kl_div(DEV.tensor(x), t, reduction="batchmean")
    want = (0.5 * np.log(0.5 / 0.3) + 0.5 * np.log(0.5 / 0.5) + 1.0 * np.log(1.0 / 0.6)) / 2
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(kl_div(DEV.tensor(x), t, "sum").numpy(), 2 * want, rtol=1e-6)
    np.testing.assert_allclose(kl_div(DEV.tensor(x), t).numpy(), 2 * want / 6, rtol=1e-6)
    (gx,) = grads_of(lambda a: kl_div(a, t, reduction="batchmean"), x)
    np.testing.assert_allclose(gx, -t / 2, rtol=1e-6)
    assert kl_div(DEV.tensor(np.float32(-1.0)), np.array(0.5, np.float32), "batchmean").numpy() == pytest.approx(
        0.5 * (np.log(0.5) + 1.0), rel=1e-6
    )


def test_regression_grads_by_hand() -> None:
    """mse: 2 d / n; l1: sign(d) / n (0 at d == 0); huber: clip(d, -delta, delta) / n;
    smooth_l1: clip(d / beta, -1, 1) / n; the target gets the negation."""
    x = np.array([0.0, 0.5, -2.0, 3.0], np.float32)
    t = np.array([0.0, 0.0, 0.0, 1.0], np.float32)
    d = x - t
    cases: list[tuple[Fn, Array]] = [
        (mse_loss, 2 * d / 4),
        (l1_loss, np.sign(d) / 4),
        (lambda a, b: huber_loss(a, b, delta=1.0), np.clip(d, -1, 1) / 4),
        (lambda a, b: smooth_l1_loss(a, b, beta=2.0), np.clip(d / 2, -1, 1) / 4),
    ]
    for loss, want in cases:
        gx, gt = grads_of(loss, x, t)
        np.testing.assert_allclose(gx, want, rtol=1e-6)
        np.testing.assert_allclose(gt, -want, rtol=1e-6)


def test_bce_with_logits_is_stable_at_extreme_logits() -> None:
    """Logits of +-100 (float32): finite loss, exact gradient sigmoid(x) - t."""
    x = np.array([100.0, -100.0, 100.0, -100.0, 0.0], np.float32)
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.5], np.float32)
    out = binary_cross_entropy_with_logits(DEV.tensor(x), t, reduction="sum")
    np.testing.assert_allclose(out.numpy(), 200.0 + np.log(2), rtol=1e-6)
    (g,) = grads_of(lambda a: binary_cross_entropy_with_logits(a, t, reduction="sum"), x)
    np.testing.assert_allclose(g, [0.0, 0.0, 1.0, -1.0, 0.0], atol=1e-7)


def test_soft_cross_entropy_with_one_hot_targets_equals_class_indices() -> None:
    """One-hot probabilities give the class-index loss and gradient."""
    x = np.asarray(rnd(3, 4), np.float32)
    idx = [2, 0, 3]
    onehot = np.eye(4, dtype=np.float32)[idx]
    for red in ("mean", "sum"):
        a = cross_entropy(DEV.tensor(x), idx, reduction=red)
        b = cross_entropy(DEV.tensor(x), onehot, reduction=red)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
        (ga,) = grads_of(lambda z, red=red: cross_entropy(z, idx, reduction=red), x)
        (gb,) = grads_of(lambda z, red=red: cross_entropy(z, onehot, reduction=red), x)
        np.testing.assert_allclose(ga, gb, rtol=1e-6, atol=1e-7)


def test_soft_cross_entropy_value_and_float64_targets_for_float32_logits() -> None:
    """Float64 probability arrays are converted to the logits' float32."""
    x = np.asarray(rnd(2, 5), np.float32)
    t = prob(2, 5)
    out = cross_entropy(DEV.tensor(x), t)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np_soft_ce(x, t), rtol=2e-6)


@pytest.mark.parametrize(("name", "loss"), [("mse", mse_loss), ("kl_div", kl_div), ("ce", cross_entropy)])
def test_kept_operands_get_gradients(name: str, loss: Fn) -> None:
    """Every tensor operand of a recorded loss gets its gradient, as in every other op: a
    leaky store keeps both the traced operand's and the untraced one's; a store that keeps
    only the traced operand (``retain_leafs``) gets only that one, and backward skips the
    other's work."""
    x, t = DEV.tensor(np.asarray(logp(2, 3), np.float32)), DEV.tensor(np.asarray(prob(2, 3), np.float32))
    grads = loss(x, t.trace(Gradients.leaky())).backward()
    assert t in grads and x in grads
    grads = loss(x.trace(Gradients.leaky()), t).backward()
    assert x in grads and t in grads
    store = Gradients.leaky()
    store.retain_leafs([t])
    grads = loss(x, t.trace(store)).backward()
    assert t in grads and x not in grads
    store = Gradients.leaky()
    store.retain_leafs([x])
    grads = loss(x.trace(store), t).backward()
    assert x in grads and t not in grads


def test_mae_loss_is_l1_loss() -> None:
    assert mae_loss is l1_loss


def test_losses_are_exported() -> None:
    import gradtape.losses as gl

    for name in ("mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits", "kl_div"):
        assert name in gl.__all__ and callable(getattr(gl, name))


# ===== errors ================================================================================

_SHAPE_CHECKED: list[tuple[str, Fn]] = [
    ("mse_loss", mse_loss),
    ("l1_loss", l1_loss),
    ("huber_loss", huber_loss),
    ("smooth_l1_loss", smooth_l1_loss),
    ("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits),
    ("kl_div", kl_div),
]


@pytest.mark.parametrize(("name", "loss"), _SHAPE_CHECKED, ids=[n for n, _ in _SHAPE_CHECKED])
def test_mismatched_shapes_name_the_loss_and_both_shapes(name: str, loss: Fn) -> None:
    """No silent broadcasting: (2, 3) against (3,) or (3, 2) raises ShapeError naming both."""
    x = DEV.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(ShapeError, match=rf"{name}: target of shape \(3,\) does not match input of shape \(2, 3\)"):
        loss(x, np.zeros(3, np.float32))
    with pytest.raises(ShapeError, match=rf"{name}: target of shape \(3, 2\) does not match input of shape \(2, 3\)"):
        loss(x, DEV.tensor(np.zeros((3, 2), np.float32)))


@pytest.mark.parametrize(("name", "loss"), _SHAPE_CHECKED, ids=[n for n, _ in _SHAPE_CHECKED])
def test_loss_argument_errors(name: str, loss: Fn) -> None:
    """Mixed dtypes, unknown reductions, non-numeric targets and empty means are rejected."""
    x = DEV.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(
        DTypeError, match=rf"{name}: target dtype float64 \(shape \(2, 3\)\) differs from input dtype float32"
    ):
        loss(x, DEV.tensor(np.zeros((2, 3)), dtype=np.float64))
    # reduction="none" is valid since issue 27 (PyTorch's); an unknown reduction is still refused
    with pytest.raises(ValueError, match=rf"{name}: reduction must be one of 'mean', 'sum'.*got 'max'"):
        loss(x, np.zeros((2, 3)), reduction="max")
    with pytest.raises(DTypeError, match=rf"{name}: target must be numeric, got dtype <U1"):
        loss(x, np.full((2, 3), "a"))
    with pytest.raises(ShapeError, match=rf"{name}: reduction='mean' over an empty input \(shape \(0, 3\)\)"):
        loss(DEV.tensor(np.zeros((0, 3), np.float32)), np.zeros((0, 3)))
    assert loss(DEV.tensor(np.zeros((0, 3), np.float32)), np.zeros((0, 3)), reduction="sum").numpy() == 0.0


def test_parameter_errors() -> None:
    x = DEV.tensor(np.zeros((2, 3), np.float32))
    t = np.zeros((2, 3), np.float32)
    for delta in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="huber_loss: delta must be positive"):
            huber_loss(x, t, delta=delta)
    for beta in (-0.5, float("nan")):
        with pytest.raises(ValueError, match="smooth_l1_loss: beta must be non-negative"):
            smooth_l1_loss(x, t, beta=beta)
    with pytest.raises(
        ShapeError,
        match=r"binary_cross_entropy_with_logits: pos_weight of shape \(2,\) does not broadcast to input of "
        r"shape \(2, 3\)",
    ):
        binary_cross_entropy_with_logits(x, t, pos_weight=np.ones(2))
    with pytest.raises(ShapeError, match=r"pos_weight of shape \(4, 3\)"):
        binary_cross_entropy_with_logits(x, t, pos_weight=np.ones((4, 3)))
    with pytest.raises(ValueError, match="pos_weight is a constant"):
        binary_cross_entropy_with_logits(x, t, pos_weight=DEV.tensor(np.ones(3, np.float32)).leaky_trace())
    with pytest.raises(ValueError, match=r"kl_div: reduction must be one of 'mean', 'sum', 'batchmean'"):
        kl_div(x, t, reduction="max")  # type: ignore[call-overload]  # "none" is valid since issue 27
    with pytest.raises(ShapeError, match=r"kl_div: reduction='batchmean' over an empty input"):
        kl_div(DEV.tensor(np.zeros((0, 3), np.float32)), np.zeros((0, 3)), reduction="batchmean")


def test_cross_entropy_target_errors() -> None:
    """Soft targets must have the logits' shape; float (N,) targets read as misused indices."""
    x = DEV.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(
        ShapeError, match=r"probability targets of shape \(2, 4\) do not match logits of shape \(2, 3\)"
    ):
        cross_entropy(x, np.zeros((2, 4)))
    with pytest.raises(DTypeError, match=r"integer class indices of shape \(2,\) or class probabilities.*float64"):
        cross_entropy(x, np.zeros(2))
    with pytest.raises(DTypeError, match=r"target dtype float64 \(shape \(2, 3\)\) differs from logits dtype float32"):
        cross_entropy(x, DEV.tensor(np.zeros((2, 3)), dtype=np.float64))
    with pytest.raises(DTypeError, match="integer class indices, got dtype bool"):
        cross_entropy(x, np.array([True, False]))
    with pytest.raises(ValueError, match="reduction must be one of 'mean', 'sum'"):
        cross_entropy(x, np.full((2, 3), 1 / 3), reduction="batchmean")  # type: ignore[call-overload]
    with pytest.raises(ShapeError, match="empty batch"):
        cross_entropy(DEV.tensor(np.zeros((0, 3), np.float32)), np.zeros((0, 3)))


# ===== against PyTorch ========================================================================


def _torch_pair(loss: Fn, tloss: Fn, x: Array, t: Array, kw: dict[str, Any], tkw: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(t, requires_grad=True)
    ty = tloss(tx, tt, **tkw)
    ty.backward()
    ours = loss(DEV.tensor(x, dtype=np.float64), t, **kw)
    np.testing.assert_allclose(ours.numpy(), ty.detach().numpy(), rtol=1e-12)
    gx, gt = grads_of(lambda a, b: loss(a, b, **kw), x, t)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(gt, tt.grad.numpy(), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_regression_losses_against_torch(reduction: str) -> None:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, t = rnd(3, 4) * 2, rnd(3, 4)
    kw = {"reduction": reduction}
    _torch_pair(mse_loss, F.mse_loss, x, t, kw, kw)
    _torch_pair(l1_loss, F.l1_loss, x, t, kw, kw)
    for delta in (1.0, 0.4, 3.0):
        _torch_pair(huber_loss, F.huber_loss, x, t, {**kw, "delta": delta}, {**kw, "delta": delta})
    for beta in (1.0, 0.4, 0.0):
        _torch_pair(smooth_l1_loss, F.smooth_l1_loss, x, t, {**kw, "beta": beta}, {**kw, "beta": beta})


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_bce_with_logits_against_torch(reduction: str) -> None:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, t = rnd(3, 4) * 5, unit(3, 4)
    _torch_pair(
        binary_cross_entropy_with_logits,
        F.binary_cross_entropy_with_logits,
        x,
        t,
        {"reduction": reduction},
        {"reduction": reduction},
    )
    pw = np.array([0.5, 1.0, 2.0, 4.0])
    _torch_pair(
        binary_cross_entropy_with_logits,
        F.binary_cross_entropy_with_logits,
        x,
        t,
        {"reduction": reduction, "pos_weight": pw},
        {"reduction": reduction, "pos_weight": torch.tensor(pw)},
    )


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning")
@pytest.mark.parametrize("reduction", ["mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_against_torch(reduction: str, log_target: bool) -> None:
    torch = pytest.importorskip("torch")
    x = logp(3, 4)
    t = logp(3, 4) if log_target else prob(3, 4)
    kw = {"reduction": reduction, "log_target": log_target}
    _torch_pair(kl_div, torch.nn.functional.kl_div, x, t, kw, kw)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_soft_cross_entropy_against_torch(reduction: str) -> None:
    torch = pytest.importorskip("torch")
    x, t = rnd(3, 5), prob(3, 5)
    _torch_pair(
        cross_entropy, torch.nn.functional.cross_entropy, x, t, {"reduction": reduction}, {"reduction": reduction}
    )
