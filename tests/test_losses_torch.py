"""gradtape.losses and the nn loss layers against PyTorch (issue 27), written as the PyTorch
user's program: values and gradients equal ``torch.nn.functional`` in float64 for every
reduction (the inputs' and the traced targets' gradients), ``gradcheck``, the second rules
against ``torch.func.hessian``, integer tensors as targets, PyTorch's constructor arguments
of the ``nn.*Loss`` layers, and bad input refused with an error naming the loss and shapes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor, losses, nn
from gradtape.autograd import grad
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")
F: Any = torch.nn.functional

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)
REDUCTIONS: list[Any] = ["none", "mean", "sum"]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(*shape: int, seed: int = 0) -> Array:
    return _rng(seed).standard_normal(shape)


def unit(*shape: int, seed: int = 0) -> Array:
    """Uniform in (0.05, 0.95): probabilities away from 0 and 1."""
    return _rng(seed).uniform(0.05, 0.95, shape)


def probs(*shape: int, axis: int = 1, seed: int = 0) -> Array:
    e = np.exp(randn(*shape, seed=seed))
    return np.asarray(e / e.sum(axis=axis, keepdims=True))


def log_probs(*shape: int, seed: int = 0) -> Array:
    return np.log(probs(*shape, seed=seed))


def labels(*shape: int, classes: int, seed: int = 0) -> Array:
    return _rng(seed).integers(0, classes, shape).astype(np.int64)


def signs(*shape: int, seed: int = 0) -> Array:
    return np.where(_rng(seed).random(shape) < 0.5, -1.0, 1.0)


Fn = Callable[..., Any]


def compare(ours: Fn, theirs: Fn, floats: list[Array], consts: tuple[Any, ...] = (), rtol: float = 1e-10) -> None:
    """``ours(*tensors, *consts)`` against ``theirs`` on torch tensors: the value (shape and
    numbers) and the gradient of every float input (all traced, ``requires_grad`` in torch) for
    a random weighting of the output (a non-scalar output checks a vector-Jacobian product)."""
    store = Gradients.leaky()
    xs = [DEV.tensor(a, dtype=np.float64) for a in floats]
    cs = [DEV.tensor(c) if isinstance(c, np.ndarray) else c for c in consts]
    out = ours(*(x.trace(store) for x in xs), *cs)
    txs = [torch.tensor(a, requires_grad=True) for a in floats]
    tcs = [torch.tensor(c) if isinstance(c, np.ndarray) else c for c in consts]
    tout = theirs(*txs, *tcs)
    assert out.shape == tuple(tout.shape)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=1e-12)
    w = _rng(99).standard_normal(out.shape)
    grads = (out * DEV.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for k, (x, tx) in enumerate(zip(xs, txs, strict=True)):
        np.testing.assert_allclose(
            grads.get(x).numpy(), tx.grad.numpy(), rtol=rtol, atol=1e-12, err_msg=f"gradient of input {k}"
        )


# ===== nll_loss and cross_entropy ============================================================


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "case",
    ["plain", "weight", "ignore", "weight-ignore", "unbatched", "spatial", "spatial-weight-ignore"],
)
def test_nll_loss_matches_torch(case: str, reduction: Any) -> None:
    shapes: dict[str, tuple[int, ...]] = {
        "unbatched": (5,),
        "spatial": (3, 5, 2, 2),
        "spatial-weight-ignore": (3, 5, 2),
    }
    shape = shapes.get(case, (6, 5))
    x = np.log(probs(*shape, axis=0 if len(shape) == 1 else 1))
    batch = () if len(shape) == 1 else (shape[0], *shape[2:])
    t = labels(*batch, classes=5, seed=1)
    if "ignore" in case:
        t.reshape(-1)[::3] = 2  # ignore_index=2: PyTorch's weighted mean leaves them out
    kw: dict[str, Any] = {"ignore_index": 2} if "ignore" in case else {}
    wt = np.array([0.5, 1.0, 2.0, 0.3, 1.5])
    w_ours = DEV.tensor(wt) if "weight" in case else None
    w_torch = torch.tensor(wt) if "weight" in case else None
    compare(
        lambda a, y: losses.nll_loss(a, y, weight=w_ours, reduction=reduction, **kw),
        lambda a, y: F.nll_loss(a, y, weight=w_torch, reduction=reduction, **kw),
        [x],
        (t,),
    )


CE_CASES = [
    "plain",
    "weight",
    "ignore",
    "smooth",
    "weight-smooth-ignore",
    "unbatched",
    "unbatched-smooth",
    "spatial",
    "spatial-weight-smooth-ignore",
    "probs",
    "probs-weight-smooth",
    "probs-spatial",
    "probs-unbatched",
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CE_CASES)
def test_cross_entropy_matches_torch(case: str, reduction: Any) -> None:
    """Class indices and (traced) probabilities, weights, ignore_index, label smoothing, the
    class axis 1 of ``(N, C, d1, ...)`` and ``(C,)`` unbatched input."""
    shape: tuple[int, ...] = (6, 4)
    if "unbatched" in case:
        shape = (4,)
    elif "spatial" in case:
        shape = (3, 4, 2, 3)
    x = randn(*shape) * 2
    batch = () if len(shape) == 1 else (shape[0], *shape[2:])
    kw: dict[str, Any] = {}
    if "ignore" in case:
        kw["ignore_index"] = -1
    if "smooth" in case:
        kw["label_smoothing"] = 0.2
    wt = np.array([0.5, 2.0, 1.0, 0.7])
    w_ours = DEV.tensor(wt) if "weight" in case else None
    w_torch = torch.tensor(wt) if "weight" in case else None
    if case.startswith("probs"):
        p = probs(*shape, axis=0 if len(shape) == 1 else 1, seed=3)
        compare(
            lambda a, b: losses.cross_entropy(a, b, weight=w_ours, reduction=reduction, **kw),
            lambda a, b: F.cross_entropy(a, b, weight=w_torch, reduction=reduction, **kw),
            [x, p],
        )
        return
    t = labels(*batch, classes=4, seed=2)
    if "ignore" in case:
        t.reshape(-1)[::4] = -1
    compare(
        lambda a, y: losses.cross_entropy(a, y, w_ours, reduction=reduction, **kw),
        lambda a, y: F.cross_entropy(a, y, w_torch, reduction=reduction, **kw),
        [x],
        (t,),
    )


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_tensor_targets_work_everywhere(dtype: type) -> None:
    """Issue 27: ``cross_entropy(logits, targets)`` with an int64 *tensor* (PyTorch's spelling,
    ``torch.tensor(labels)``) or an int32 one, as with a numpy array; nll_loss and the loss
    layers too, and integer tensors as the float targets of the regression losses."""
    x = randn(5, 3)
    y = labels(5, classes=3)
    want = F.cross_entropy(torch.tensor(x), torch.tensor(y)).item()
    logits = DEV.tensor(x)
    targets = DEV.tensor(y.astype(dtype))
    assert targets.dtype == dtype
    assert losses.cross_entropy(logits, targets).item() == pytest.approx(want, rel=1e-12)
    assert losses.cross_entropy(logits, y.astype(dtype)).item() == pytest.approx(want, rel=1e-12)
    assert nn.CrossEntropyLoss()(logits, targets).item() == pytest.approx(want, rel=1e-12)
    lp = logits.log_softmax(1)
    assert losses.nll_loss(lp, targets).item() == pytest.approx(want, rel=1e-12)
    assert nn.NLLLoss()(lp, targets).item() == pytest.approx(want, rel=1e-12)
    # a traced integer tensor is an index too (it gets no gradient)
    store = Gradients.leaky()
    loss = losses.cross_entropy(logits.trace(store), targets.trace(store))
    assert loss.item() == pytest.approx(want, rel=1e-12)
    # spatial targets, (N, d1) int tensors
    xs = randn(2, 3, 4)
    ys = labels(2, 4, classes=3)
    assert losses.cross_entropy(DEV.tensor(xs), DEV.tensor(ys.astype(dtype))).item() == pytest.approx(
        F.cross_entropy(torch.tensor(xs), torch.tensor(ys)).item(), rel=1e-12
    )
    # regression targets given as integer tensors are constants of the input's dtype
    r = DEV.tensor(randn(2, 3))
    counts = np.arange(6).reshape(2, 3)
    assert losses.mse_loss(r, DEV.tensor(counts.astype(dtype))).item() == pytest.approx(
        F.mse_loss(torch.tensor(r.numpy()), torch.tensor(counts)).item(), rel=1e-12
    )


def test_ignored_targets_give_nan_mean_and_zero_gradient_as_torch() -> None:
    x = randn(3, 4)
    t = np.full(3, -100)
    for name in ("nll_loss", "cross_entropy"):
        xt = torch.tensor(x, requires_grad=True)
        want = getattr(F, name)(xt, torch.tensor(t))
        want.backward()
        a = DEV.tensor(x, requires_grad=True)
        got = getattr(losses, name)(a, t)
        got.backward()
        assert np.isnan(got.item()) and np.isnan(want.item())
        assert a.grad is not None
        np.testing.assert_array_equal(a.grad.numpy(), xt.grad.numpy())
        assert losses.cross_entropy(DEV.tensor(x), t, reduction="sum").item() == 0.0


def test_cross_entropy_fast_path_and_general_path_agree() -> None:
    """The compiled kernel path (plain indices) equals the general path (taken with a weight
    of ones, or label_smoothing=0 with an ignore_index present elsewhere)."""
    x, t = randn(8, 5), labels(8, classes=5)
    a = DEV.tensor(x)
    fast = losses.cross_entropy(a.leaky_trace(), t)
    general = losses.cross_entropy(a.leaky_trace(), t, weight=np.ones(5))
    np.testing.assert_allclose(fast.numpy(), general.numpy(), rtol=1e-12)
    (ga,) = grad(fast, a)
    (gb,) = grad(general, a)
    assert ga is not None and gb is not None
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-12, atol=1e-15)


def test_cross_entropy_keeps_gradtapes_positional_reduction() -> None:
    """gradtape's earlier ``cross_entropy(x, t, "sum")`` still means the reduction; PyTorch's
    third positional argument is the weight."""
    x, t = DEV.tensor(randn(4, 3)), labels(4, classes=3)
    assert losses.cross_entropy(x, t, "sum").item() == pytest.approx(losses.cross_entropy(x, t, reduction="sum").item())
    w = np.array([1.0, 2.0, 3.0])
    assert losses.cross_entropy(x, t, w).item() == pytest.approx(
        F.cross_entropy(torch.tensor(x.numpy()), torch.tensor(t), torch.tensor(w)).item(), rel=1e-12
    )
    with pytest.raises(TypeError, match="cross_entropy: reduction given twice"):
        losses.cross_entropy(x, t, "sum", reduction="none")


# ===== binary cross-entropy ================================================================


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_torch(reduction: Any, weighted: bool) -> None:
    w = np.array([0.5, 1.0, 2.0, 1.5])
    compare(
        lambda a, b: losses.binary_cross_entropy(a, b, DEV.tensor(w) if weighted else None, reduction=reduction),
        lambda a, b: F.binary_cross_entropy(a, b, torch.tensor(w) if weighted else None, reduction=reduction),
        [unit(3, 4), unit(3, 4, seed=1)],
    )


def test_binary_cross_entropy_clamps_the_log_at_minus_100() -> None:
    """Probabilities of exactly 0 and 1 give PyTorch's finite loss (log clamped at -100)."""
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.3])
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.5])
    for reduction in ("none", "mean", "sum"):
        want = F.binary_cross_entropy(torch.tensor(x), torch.tensor(t), reduction=reduction).numpy()
        got = losses.binary_cross_entropy(DEV.tensor(x), t, reduction=reduction).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert losses.binary_cross_entropy(DEV.tensor(x), t, reduction="sum").item() == pytest.approx(
        200.0 - 0.5 * (np.log(0.3) + np.log(0.7)), rel=1e-12
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", ["", "weight", "pos_weight", "weight-pos_weight"])
def test_bce_with_logits_matches_torch(reduction: Any, options: str) -> None:
    w, pw = np.array([[0.5], [1.0], [2.0]]), np.array([0.5, 1.0, 2.0, 4.0])
    kw_ours: dict[str, Any] = {"reduction": reduction}
    kw_torch: dict[str, Any] = {"reduction": reduction}
    if "weight" in options.replace("pos_weight", ""):
        kw_ours["weight"], kw_torch["weight"] = DEV.tensor(w), torch.tensor(w)
    if "pos_weight" in options:
        kw_ours["pos_weight"], kw_torch["pos_weight"] = pw, torch.tensor(pw)
    compare(
        lambda a, b: losses.binary_cross_entropy_with_logits(a, b, **kw_ours),
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, **kw_torch),
        [randn(3, 4) * 4, unit(3, 4, seed=1)],
    )


# ===== the elementwise regression losses with reduction="none" =================================


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss"])
def test_regression_losses_match_torch_for_every_reduction(name: str, reduction: Any) -> None:
    kw = {"delta": 0.5} if name == "huber_loss" else {"beta": 0.5} if name == "smooth_l1_loss" else {}
    compare(
        lambda a, b: getattr(losses, name)(a, b, reduction=reduction, **kw),
        lambda a, b: getattr(F, name)(a, b, reduction=reduction, **kw),
        [randn(3, 4), randn(3, 4, seed=1)],
    )


@pytest.mark.parametrize("reduction", [*REDUCTIONS, "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch_for_every_reduction(reduction: Any, log_target: bool) -> None:
    t = log_probs(3, 4, seed=1) if log_target else probs(3, 4, seed=1)
    compare(
        lambda a, b: losses.kl_div(a, b, reduction=reduction, log_target=log_target),
        lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
        [log_probs(3, 4), t],
    )


# ===== embedding, ranking and likelihood losses =================================================


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding_loss_matches_torch(reduction: Any, margin: float) -> None:
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 0.0])  # 0: neither label, no loss (as PyTorch)
    compare(
        lambda a, b, t: losses.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        [randn(6, 5), randn(6, 5, seed=1)],
        (y,),
    )
    # one pair: (D,) inputs and a 0-d target
    compare(
        lambda a, b, t: losses.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        [randn(5), randn(5, seed=1)],
        (np.array(-1.0),),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss_matches_torch(reduction: Any, margin: float) -> None:
    """The target is a traced float tensor too: PyTorch differentiates it."""
    compare(
        lambda a, b, t: losses.margin_ranking_loss(a, b, t, margin, reduction=reduction),
        lambda a, b, t: F.margin_ranking_loss(a, b, t, margin, reduction=reduction),
        [randn(7), randn(7, seed=1), signs(7, seed=2)],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.2])
def test_hinge_embedding_loss_matches_torch(reduction: Any, margin: float) -> None:
    y = signs(3, 4, seed=2)
    compare(
        lambda a, t: losses.hinge_embedding_loss(a, t, margin, reduction=reduction),
        lambda a, t: F.hinge_embedding_loss(a, t, margin, reduction=reduction),
        [randn(3, 4)],
        (y,),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (4,)])
def test_triplet_margin_loss_matches_torch(reduction: Any, swap: bool, shape: tuple[int, ...]) -> None:
    a = randn(*shape)
    compare(
        lambda x, p, n: losses.triplet_margin_loss(x, p, n, margin=1.5, swap=swap, reduction=reduction),
        lambda x, p, n: F.triplet_margin_loss(x, p, n, margin=1.5, swap=swap, reduction=reduction),
        [a, a + 0.5 * randn(*shape, seed=1), randn(*shape, seed=2)],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", ["same", "per-sample", "size-1", "float"])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss_matches_torch(reduction: Any, var_shape: str, full: bool) -> None:
    x, t = randn(4, 3), randn(4, 3, seed=1)
    if var_shape == "float":
        compare(
            lambda a, b: losses.gaussian_nll_loss(a, b, 0.7, full=full, reduction=reduction),
            lambda a, b: F.gaussian_nll_loss(a, b, 0.7, full=full, reduction=reduction),
            [x, t],
        )
        return
    vshape = {"same": (4, 3), "per-sample": (4,), "size-1": (4, 1)}[var_shape]
    v = unit(*vshape, seed=2)
    v.reshape(-1)[0] = 1e-9  # below eps: the clamp changes the value, not the gradient's path
    compare(
        lambda a, b, s: losses.gaussian_nll_loss(a, b, s, full=full, eps=1e-6, reduction=reduction),
        lambda a, b, s: F.gaussian_nll_loss(a, b, s, full=full, eps=1e-6, reduction=reduction),
        [x, t, v],
        rtol=1e-9,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss_matches_torch(reduction: Any, log_input: bool, full: bool) -> None:
    x = randn(3, 4) if log_input else unit(3, 4) * 3
    counts = np.array([[0, 1, 2, 5], [3, 0, 1, 7], [2, 2, 4, 1]], dtype=np.float64)
    if full:  # PyTorch's target gradient is NaN at 0 there (0 * log 0 in its masked Stirling term)
        counts[counts == 0] = 0.5
    compare(
        lambda a, b: losses.poisson_nll_loss(a, b, log_input=log_input, full=full, reduction=reduction),
        lambda a, b: F.poisson_nll_loss(a, b, log_input=log_input, full=full, reduction=reduction),
        [x, counts],
    )


# ===== gradcheck ===========================================================================

GRADCHECK: list[Any] = [
    pytest.param(lambda x: losses.nll_loss(x, [0, 2, 1], weight=np.array([1.0, 2.0, 0.5])), [randn(3, 3)], id="nll"),
    pytest.param(
        lambda x: losses.cross_entropy(x, labels(2, 3, classes=4), label_smoothing=0.1, reduction="none"),
        [randn(2, 4, 3)],
        id="ce-spatial-smooth-none",
    ),
    pytest.param(
        lambda x, t: losses.cross_entropy(x, t, weight=np.array([1.0, 3.0, 0.5]), label_smoothing=0.3),
        [randn(4, 3), probs(4, 3, seed=1)],
        id="ce-probs-weight-smooth",
    ),
    pytest.param(
        lambda x, t: losses.binary_cross_entropy(x, t, np.array([1.0, 2.0, 0.5]), reduction="sum"),
        [unit(2, 3), unit(2, 3, seed=1)],
        id="bce",
    ),
    pytest.param(
        lambda x, t: losses.binary_cross_entropy_with_logits(x, t, np.array([1.0, 2.0, 0.5]), pos_weight=[2.0, 1, 3]),
        [randn(2, 3), unit(2, 3, seed=1)],
        id="bce-logits-weights",
    ),
    pytest.param(
        lambda a, b: losses.cosine_embedding_loss(a, b, np.array([1, -1, -1]), -0.5, reduction="none"),
        [randn(3, 4), randn(3, 4, seed=1)],
        id="cosine",
    ),
    pytest.param(
        lambda a, b, t: losses.margin_ranking_loss(a, b, t, 0.1),
        [randn(5), randn(5, seed=1), signs(5, seed=2)],
        id="margin-ranking",
    ),
    pytest.param(lambda x: losses.hinge_embedding_loss(x, signs(2, 3, seed=3), 2.0), [randn(2, 3) * 0.5], id="hinge"),
    pytest.param(
        lambda a, p, n: losses.triplet_margin_loss(a, p, n, margin=3.0, swap=True, reduction="none"),
        [randn(3, 4), randn(3, 4, seed=1), randn(3, 4, seed=2)],
        id="triplet-swap",
    ),
    pytest.param(
        lambda x, t, v: losses.gaussian_nll_loss(x, t, v, full=True),
        [randn(3, 2), randn(3, 2, seed=1), unit(3, seed=2)],
        id="gaussian-nll",
    ),
    pytest.param(
        lambda x, t: losses.poisson_nll_loss(x, t, full=True, reduction="sum"),
        [randn(2, 3), unit(2, 3) * 4 + 0.5],
        id="poisson-nll",
    ),
    pytest.param(
        lambda x, t: losses.poisson_nll_loss(x, t, log_input=False),
        [unit(2, 3) + 0.5, unit(2, 3) * 3],
        id="poisson-rate",
    ),
    pytest.param(lambda x, t: losses.kl_div(x, t, reduction="none"), [log_probs(2, 3), probs(2, 3)], id="kl-none"),
]


@pytest.mark.parametrize(("fn", "inputs"), GRADCHECK)
def test_gradcheck(fn: Fn, inputs: list[Array]) -> None:
    assert gradcheck(fn, inputs) is True


# ===== second rules against torch.func.hessian ===============================================


def _hessian(f: Callable[[Tensor[Any, Any]], Tensor[Any, Any]], x0: Array) -> Array:
    """Rows of the Hessian of scalar ``f`` at ``x0`` through the losses' second rules; also
    checks that the first gradient the second rules give equals the fused first rule's."""
    rows = []
    for i in range(x0.size):
        x = DEV.tensor(x0)
        (gx,) = grad(f(x.leaky_trace()), x, create_graph=True)
        assert gx is not None
        if i == 0:
            (g1,) = grad(f(x.leaky_trace()), x)
            assert g1 is not None
            np.testing.assert_allclose(gx.numpy(), g1.numpy(), rtol=1e-9, atol=1e-12)
        e = np.zeros(x0.size)
        e[i] = 1.0
        (row,) = grad((gx * DEV.tensor(e)).sum(), x, allow_unused=True)
        rows.append(np.zeros(x0.size) if row is None else row.numpy())
    return np.stack(rows)


def _reshape(h: Any, shape: tuple[int, ...]) -> Any:
    return h.reshape(shape) if isinstance(h, Tensor) else h.reshape(*shape)


def _const(a: Array, like: Any) -> Any:
    return DEV.tensor(a) if isinstance(like, Tensor) else torch.tensor(a)


def _second(name: str, x: Any, reduction: Any) -> Any:
    """A scalar function of ``x`` (12 numbers) through loss ``name``, in PyTorch's spelling,
    for gradtape tensors (``losses``) and torch tensors (``F``) alike; targets that a loss
    differentiates depend on ``x`` too, so their second rules are checked."""
    ours = isinstance(x, Tensor)
    L: Any = losses if ours else F
    h = x * x.sin()
    m = _reshape(h, (3, 4))
    if name == "nll_loss":
        out = L.nll_loss(m.log_softmax(1), _const(np.array([0, 3, 1]), x), reduction=reduction)
    elif name == "cross_entropy_spatial":
        w = _const(np.array([0.5, 1.0, 2.0]), x)
        t = _const(np.array([[0, 2], [1, -100]]), x)
        out = L.cross_entropy(_reshape(h, (2, 3, 2)), t, weight=w, reduction=reduction, label_smoothing=0.2)
    elif name == "cross_entropy_probs":
        t = (_reshape(x, (3, 4)) * 0.5).softmax(1)
        out = L.cross_entropy(m, t, weight=_const(np.array([0.5, 1.0, 2.0, 1.5]), x), reduction=reduction)
    elif name == "binary_cross_entropy":
        out = L.binary_cross_entropy(m.sigmoid(), (_reshape(x, (3, 4)) * 0.3).sigmoid(), reduction=reduction)
    elif name == "binary_cross_entropy_with_logits":
        w = _const(np.array([1.0, 0.5, 2.0, 1.0]), x)
        t = (_reshape(x, (3, 4)) * 0.3).sigmoid()
        out = L.binary_cross_entropy_with_logits(m, t, weight=w, pos_weight=w * 2.0, reduction=reduction)
    elif name == "cosine_embedding_loss":
        y = _const(np.array([1.0, -1.0, -1.0]), x)
        out = L.cosine_embedding_loss(m[:, :2], m[:, 2:] * m[:, :2].cos(), y, -0.9, reduction=reduction)
    elif name == "margin_ranking_loss":
        out = L.margin_ranking_loss(m[0], m[1], m[2].tanh(), 0.5, reduction=reduction)
    elif name == "hinge_embedding_loss":
        out = L.hinge_embedding_loss(m, _const(signs(3, 4, seed=4), x), 0.5, reduction=reduction)
    elif name == "triplet_margin_loss":
        out = L.triplet_margin_loss(
            m[:, :2], m[:, 2:] * 0.5, (m[:, :2] + 1.0).exp(), margin=4.0, swap=True, reduction=reduction
        )
    elif name == "gaussian_nll_loss":
        out = L.gaussian_nll_loss(m[:, :2], m[:, 2:].sin(), m[:, 3].exp(), full=True, reduction=reduction)
    elif name == "poisson_nll_loss":
        out = L.poisson_nll_loss(m, _reshape(x, (3, 4)).exp() + 1.0, full=True, reduction=reduction)
    elif name == "kl_div":
        out = L.kl_div(m.log_softmax(1), (_reshape(x, (3, 4)) * 0.5).softmax(1), reduction=reduction)
    else:
        out = getattr(L, name)(m, (_reshape(x, (3, 4)) * 0.5).cos(), reduction=reduction)
    if reduction == "none":
        out = (out * out.tanh()).sum()  # the unreduced loss's gradient is a tensor
    return out * out  # a nonlinearity after the loss: its gradient's scale is traced too


SECOND = [
    "nll_loss",
    "cross_entropy_spatial",
    "cross_entropy_probs",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "triplet_margin_loss",
    "gaussian_nll_loss",
    "poisson_nll_loss",
    "kl_div",
    "mse_loss",
    "smooth_l1_loss",
]


@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("name", SECOND)
def test_second_rules_match_torch_hessian(name: str, reduction: Any) -> None:
    x0 = np.linspace(-1.2, 1.1, 12) + 0.05 * randn(12, seed=7)
    want = torch.func.hessian(lambda t: _second(name, t, reduction))(torch.tensor(x0)).numpy()
    got = _hessian(lambda t: _second(name, t, reduction), x0)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


# ===== the nn loss layers ====================================================================

LAYERS: list[Any] = [
    ("L1Loss", {}, "pair"),
    ("MSELoss", {"reduction": "sum"}, "pair"),
    ("SmoothL1Loss", {"beta": 0.5, "reduction": "none"}, "pair"),
    ("HuberLoss", {"delta": 0.5}, "pair"),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, "kl"),
    ("NLLLoss", {"weight": "w", "ignore_index": 1}, "nll"),
    ("CrossEntropyLoss", {"weight": "w", "label_smoothing": 0.1, "reduction": "none"}, "ce"),
    ("CrossEntropyLoss", {"ignore_index": 0}, "ce-spatial"),
    ("BCELoss", {"weight": "w4"}, "bce"),
    ("BCEWithLogitsLoss", {"pos_weight": "w4", "reduction": "sum"}, "pair"),
    ("CosineEmbeddingLoss", {"margin": 0.2}, "cosine"),
    ("MarginRankingLoss", {"margin": 0.3, "reduction": "none"}, "ranking"),
    ("HingeEmbeddingLoss", {"margin": 0.5}, "hinge"),
    ("TripletMarginLoss", {"margin": 2.0, "swap": True}, "triplet"),
    ("GaussianNLLLoss", {"full": True}, "gaussian"),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, "poisson"),
    ("MSELoss", {"size_average": False}, "pair"),  # PyTorch's deprecated flags: "sum"
    ("L1Loss", {"reduce": False}, "pair"),  # "none"
]


def _layer_inputs(kind: str) -> tuple[list[Array], tuple[Any, ...]]:
    """(float inputs, constant inputs) of a loss layer's forward."""
    return {
        "pair": ([randn(3, 4), unit(3, 4, seed=1)], ()),
        "kl": ([log_probs(3, 4), log_probs(3, 4, seed=1)], ()),
        "nll": ([log_probs(5, 3)], (labels(5, classes=3, seed=1),)),
        "ce": ([randn(5, 3)], (labels(5, classes=3, seed=1),)),
        "ce-spatial": ([randn(2, 3, 4)], (labels(2, 4, classes=3, seed=1),)),
        "bce": ([unit(3, 4), unit(3, 4, seed=1)], ()),
        "cosine": ([randn(4, 3), randn(4, 3, seed=1)], (signs(4, seed=2),)),
        "ranking": ([randn(5), randn(5, seed=1), signs(5, seed=2)], ()),
        "hinge": ([randn(3, 4)], (signs(3, 4, seed=2),)),
        "triplet": ([randn(4, 3), randn(4, 3, seed=1), randn(4, 3, seed=2)], ()),
        "gaussian": ([randn(4, 3), randn(4, 3, seed=1), unit(4, 1, seed=2)], ()),
        "poisson": ([unit(3, 4) * 3, unit(3, 4, seed=1) * 4], ()),
    }[kind]


@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated:UserWarning")
@pytest.mark.parametrize(("name", "kwargs", "kind"), LAYERS, ids=[f"{n}-{k}" for n, _, k in LAYERS])
def test_loss_layers_match_torch(name: str, kwargs: dict[str, Any], kind: str) -> None:
    weights = {"w": np.array([0.5, 2.0, 1.0]), "w4": np.array([0.5, 2.0, 1.0, 3.0])}
    ours_kw = {k: DEV.tensor(weights[v]) if k.endswith("weight") else v for k, v in kwargs.items()}
    torch_kw = {k: torch.tensor(weights[v]) if k.endswith("weight") else v for k, v in kwargs.items()}
    ours, theirs = getattr(nn, name)(**ours_kw), getattr(torch.nn, name)(**torch_kw)
    assert ours.reduction == theirs.reduction
    floats, consts = _layer_inputs(kind)
    compare(ours, theirs, floats, consts)


def test_loss_layers_hold_weights_as_buffers_as_torch() -> None:
    """A weight given to the constructor is state (saved, never trained): PyTorch's buffer."""
    w = DEV.tensor(np.array([1.0, 2.0, 3.0]))
    ce = nn.CrossEntropyLoss(weight=w)
    assert list(ce.parameters()) == []
    assert set(nn.state_dict(ce)) == set(torch.nn.CrossEntropyLoss(weight=torch.ones(3)).state_dict()) == {"weight"}
    bce = nn.BCEWithLogitsLoss(pos_weight=DEV.tensor(np.ones(3)))
    assert set(nn.state_dict(bce)) == set(torch.nn.BCEWithLogitsLoss(pos_weight=torch.ones(3)).state_dict())
    assert nn.state_dict(nn.MSELoss()) == {}


def test_loss_layer_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="MSELoss: reduction must be one of 'none', 'mean', 'sum', got 'avg'"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match=r"L1Loss: reduction must be one of .* got 'batchmean'"):
        nn.L1Loss(reduction="batchmean")
    assert nn.KLDivLoss(reduction="batchmean").reduction == "batchmean"
    with pytest.raises(ValueError, match=r"CrossEntropyLoss: label_smoothing must lie in \[0, 1\], got 1.5"):
        nn.CrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(ValueError, match="TripletMarginLoss: margin must be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)
    with pytest.raises(ValueError, match="TripletMarginLoss: only the Euclidean distance p=2"):
        nn.TripletMarginLoss(p=1.0)
    with pytest.raises(ValueError, match="HuberLoss: delta must be positive"):
        nn.HuberLoss(delta=0.0)
    with pytest.raises(TypeError, match="CrossEntropyLoss: input must be a Tensor, got list"):
        nn.CrossEntropyLoss()([[0.1, 0.2]], [0])  # type: ignore[arg-type]


# ===== bad input: refused, naming the loss and the shapes =======================================

X23 = DEV.tensor(randn(2, 3))
BAD: list[Any] = [
    (lambda: losses.nll_loss(X23, np.array([0.0, 1.0])), DTypeError, r"^nll_loss: targets must be integer .*float64"),
    (
        lambda: losses.nll_loss(X23, DEV.tensor(np.array([0.0, 1.0]))),
        DTypeError,
        r"^nll_loss: targets must be integer class indices of shape \(2,\) \(input of shape \(2, 3\)\)",
    ),
    (lambda: losses.nll_loss(X23, [0, 3]), ValueError, r"^nll_loss: class indices must lie in \[0, 3\)"),
    (
        lambda: losses.nll_loss(X23, [0, 1, 2]),
        ShapeError,
        r"^nll_loss: .*got targets of shape \(3,\) for input of shape \(2, 3\)",
    ),
    (lambda: losses.nll_loss(X23, [0, 1], weight=np.ones(4)), ShapeError, r"^nll_loss: weight of shape \(4,\)"),
    (
        lambda: losses.nll_loss(X23, [0, 1], weight=DEV.tensor(np.ones(3)).leaky_trace()),
        ValueError,
        "^nll_loss: weight is a constant",
    ),
    (lambda: losses.cross_entropy(X23, [0, -5]), ValueError, r"^cross_entropy: class indices must lie in \[0, 3\)"),
    (
        lambda: losses.cross_entropy(X23, [0, 7], ignore_index=0),
        ValueError,
        r"^cross_entropy: class indices must lie in \[0, 3\) or equal ignore_index=0",
    ),
    (
        lambda: losses.cross_entropy(DEV.tensor(randn(2, 3, 4)), labels(2, 3, classes=3)),
        ShapeError,
        r"^cross_entropy: .*\(N, d1, \.\.\.\) for \(N, C, d1, \.\.\.\) input.*got targets of shape \(2, 3\) for "
        r"input of shape \(2, 3, 4\)",
    ),
    (lambda: losses.cross_entropy(DEV.tensor(np.array(1.0)), 0), ShapeError, r"^cross_entropy: input must have shape"),
    (
        lambda: losses.cross_entropy(X23, [0, 1], label_smoothing=-0.1),
        ValueError,
        r"^cross_entropy: label_smoothing must lie in \[0, 1\]",
    ),
    (
        lambda: losses.binary_cross_entropy(X23, unit(2, 3)),
        ValueError,
        r"^binary_cross_entropy: all elements of input should be between 0 and 1 \(input of shape \(2, 3\)",
    ),
    (
        lambda: losses.binary_cross_entropy(DEV.tensor(unit(2, 3)), np.full((2, 3), 2.0)),
        ValueError,
        "^binary_cross_entropy: all elements of target should be between 0 and 1",
    ),
    (
        lambda: losses.binary_cross_entropy(DEV.tensor(unit(2, 3)), unit(3, 2)),
        ShapeError,
        r"^binary_cross_entropy: target of shape \(3, 2\) does not match input of shape \(2, 3\)",
    ),
    (
        lambda: losses.binary_cross_entropy(DEV.tensor(unit(2, 3)), unit(2, 3), np.ones(2)),
        ShapeError,
        r"^binary_cross_entropy: weight of shape \(2,\) does not broadcast to input of shape \(2, 3\)",
    ),
    (
        lambda: losses.binary_cross_entropy_with_logits(X23, unit(2, 3), np.ones((3, 3))),
        ShapeError,
        r"^binary_cross_entropy_with_logits: weight of shape \(3, 3\)",
    ),
    (
        lambda: losses.cosine_embedding_loss(X23, DEV.tensor(randn(2, 4)), [1, -1]),
        ShapeError,
        r"^cosine_embedding_loss: input2 of shape \(2, 4\) does not match input1 of shape \(2, 3\)",
    ),
    (
        lambda: losses.cosine_embedding_loss(X23, X23, [1, -1, 1]),
        ShapeError,
        r"^cosine_embedding_loss: target of shape \(3,\) does not match \(2,\) \(input of shape \(2, 3\)\)",
    ),
    (
        lambda: losses.cosine_embedding_loss(DEV.tensor(randn(2, 3, 4)), DEV.tensor(randn(2, 3, 4)), [1, 1]),
        ShapeError,
        r"^cosine_embedding_loss: input1 must be 1-D or 2-D .*\(2, 3, 4\)",
    ),
    (
        lambda: losses.margin_ranking_loss(X23, X23, np.ones(3)),
        ShapeError,
        r"^margin_ranking_loss: target of shape \(3,\) does not match input of shape \(2, 3\)",
    ),
    (
        lambda: losses.margin_ranking_loss(X23, DEV.tensor(randn(2, 3), dtype=np.float32), np.ones((2, 3))),
        DTypeError,
        r"^margin_ranking_loss: input2 dtype float32 \(shape \(2, 3\)\) differs from input1 dtype float64",
    ),
    (
        lambda: losses.hinge_embedding_loss(X23, np.ones(3)),
        ShapeError,
        r"^hinge_embedding_loss: target of shape \(3,\) does not match \(2, 3\)",
    ),
    (
        lambda: losses.triplet_margin_loss(X23, X23, DEV.tensor(randn(3, 3))),
        ShapeError,
        r"^triplet_margin_loss: negative of shape \(3, 3\) does not match anchor of shape \(2, 3\)",
    ),
    (lambda: losses.triplet_margin_loss(X23, X23, X23, margin=-1.0), ValueError, "^triplet_margin_loss: margin"),
    (lambda: losses.triplet_margin_loss(X23, X23, X23, p=1), ValueError, "^triplet_margin_loss: only .* p=2"),
    (
        lambda: losses.gaussian_nll_loss(X23, randn(2, 3), np.ones((3, 3))),
        ShapeError,
        r"^gaussian_nll_loss: var of shape \(3, 3\) is of incorrect size for input of shape \(2, 3\)",
    ),
    (
        lambda: losses.gaussian_nll_loss(X23, randn(2, 3), -np.ones(2)),
        ValueError,
        r"^gaussian_nll_loss: var has negative entries",
    ),
    (
        lambda: losses.poisson_nll_loss(X23, np.ones((2, 2))),
        ShapeError,
        r"^poisson_nll_loss: target of shape \(2, 2\) does not match input of shape \(2, 3\)",
    ),
    (
        lambda: losses.mse_loss(X23, randn(2, 3), reduction="avg"),  # type: ignore[call-overload]
        ValueError,
        "^mse_loss: reduction must be one of",
    ),
    (
        lambda: losses.nll_loss(DEV.tensor(np.zeros((0, 3))), np.zeros(0, np.int64)),
        ShapeError,
        r"^nll_loss: empty batch",
    ),
]


@pytest.mark.parametrize(("call", "error", "message"), BAD)
def test_bad_input_is_refused_naming_the_loss(call: Callable[[], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_empty_batches_sum_to_zero_as_torch() -> None:
    x = np.zeros((0, 3))
    t = np.zeros(0, np.int64)
    for name in ("nll_loss", "cross_entropy"):
        got = getattr(losses, name)(DEV.tensor(x), t, reduction="sum")
        assert got.item() == getattr(F, name)(torch.tensor(x), torch.tensor(t), reduction="sum").item() == 0.0
        assert getattr(losses, name)(DEV.tensor(x), t, reduction="none").shape == (0,)


def test_float32_stays_float32() -> None:
    x = DEV.tensor(randn(4, 3).astype(np.float32))
    y = labels(4, classes=3)
    for out in (
        losses.nll_loss(x, y),
        losses.cross_entropy(x, y, label_smoothing=0.1, reduction="none"),
        losses.binary_cross_entropy(x.sigmoid(), unit(4, 3)),
        losses.cosine_embedding_loss(x, x * 2.0, [1, -1, 1, 1]),
        losses.triplet_margin_loss(x, x * 2.0, x * 0.5),
        losses.gaussian_nll_loss(x, unit(4, 3), 1.0),
        losses.poisson_nll_loss(x, unit(4, 3)),
    ):
        assert out.dtype == np.float32
