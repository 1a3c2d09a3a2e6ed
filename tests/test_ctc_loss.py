"""``F.ctc_loss`` / ``nn.CTCLoss`` against PyTorch, written as the PyTorch user's program:
logits fed through ``log_softmax`` into the loss, values and the logits' gradients equal
``torch.nn.functional.ctc_loss`` in float64 over padded and concatenated targets, every
reduction, ``zero_infinity`` with impossible alignments, repeated labels, ``blank != 0``,
varying input lengths, unbatched input and float32; a small training loop step by step equal
to PyTorch's; the double backward refused; bad input refused with errors naming the op."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape as gt
import gradtape.nn.functional as gF
from gradtape import DTypeError, ShapeError, TapeError, losses, nn, optim
from gradtape.autograd import grad

torch: Any = pytest.importorskip("torch")
tF: Any = torch.nn.functional

Array = np.ndarray[Any, Any]
REDUCTIONS = ["none", "mean", "sum"]


def _case(
    seed: int, t: int, n: int, c: int, s: int, blank: int = 0, min_len: int = 1
) -> tuple[Array, Array, Array, Array]:
    """Logits (T, N, C), padded targets (N, S) avoiding ``blank``, input and target lengths."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((t, n, c)) * 2.0
    others = np.array([k for k in range(c) if k != blank])
    targets = others[rng.integers(0, len(others), (n, s))]
    tl = rng.integers(min_len, s + 1, n)
    il = rng.integers(max(1, t // 2), t + 1, n)
    il[0] = t
    return logits, targets.astype(np.int64), il.astype(np.int64), tl.astype(np.int64)


def _concat(targets: Array, tl: Array) -> Array:
    return np.concatenate([targets[b, : tl[b]] for b in range(len(tl))]).astype(np.int64)


def _run_torch(
    logits: Array, targets: Any, il: Any, tl: Any, dtype: Any = torch.float64, **kw: Any
) -> tuple[Array, Array]:
    x = torch.tensor(logits, dtype=dtype, requires_grad=True)
    tt = torch.tensor(targets) if isinstance(targets, np.ndarray) else targets
    il_t = torch.tensor(il) if isinstance(il, np.ndarray) else il
    tl_t = torch.tensor(tl) if isinstance(tl, np.ndarray) else tl
    loss = tF.ctc_loss(tx := x.log_softmax(-1), tt, il_t, tl_t, **kw)
    del tx
    w = torch.tensor(np.linspace(0.5, 1.5, loss.numel()).reshape(loss.shape), dtype=dtype)
    (loss * w).sum().backward()
    assert x.grad is not None
    return loss.detach().numpy(), x.grad.numpy()


def _run_ours(logits: Array, targets: Any, il: Any, tl: Any, dtype: Any = np.float64, **kw: Any) -> tuple[Array, Array]:
    x = gt.tensor(logits.astype(dtype), requires_grad=True)
    tt = gt.tensor(targets) if isinstance(targets, np.ndarray) else targets
    il_t = gt.tensor(il) if isinstance(il, np.ndarray) else il
    tl_t = gt.tensor(tl) if isinstance(tl, np.ndarray) else tl
    loss = gF.ctc_loss(gF.log_softmax(x, -1), tt, il_t, tl_t, **kw)
    assert loss.dtype == dtype
    w = gt.tensor(np.linspace(0.5, 1.5, loss.numel()).reshape(loss.shape).astype(dtype))
    (loss * w).sum().backward()
    assert x.grad is not None
    return loss.numpy(), x.grad.numpy()


def _check(logits: Array, targets: Any, il: Any, tl: Any, rtol: float = 1e-10, **kw: Any) -> None:
    want, want_g = _run_torch(logits, targets, il, tl, **kw)
    got, got_g = _run_ours(logits, targets, il, tl, **kw)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(got_g, want_g, rtol=rtol, atol=1e-12)


GRID = [
    pytest.param(
        seed, t, n, c, s, blank, layout, reduction, id=f"{seed}-T{t}N{n}C{c}S{s}-b{blank}-{layout}-{reduction}"
    )
    for seed, (t, n, c, s) in enumerate([(12, 5, 6, 4), (30, 3, 4, 10), (8, 1, 3, 3), (50, 8, 20, 15)])
    for blank in (0, 2)
    for layout in ("padded", "concat")
    for reduction in REDUCTIONS
]


@pytest.mark.parametrize(("seed", "t", "n", "c", "s", "blank", "layout", "reduction"), GRID)
def test_values_and_gradients_equal_torch(
    seed: int, t: int, n: int, c: int, s: int, blank: int, layout: str, reduction: str
) -> None:
    logits, targets, il, tl = _case(seed, t, n, c, s, blank)
    tg = targets if layout == "padded" else _concat(targets, tl)
    _check(logits, tg, il, tl, blank=blank, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_repeated_labels_need_a_blank_between_them(reduction: str) -> None:
    # "1 1 1" needs 5 steps (1 _ 1 _ 1), "2 2 1" 4 steps: just enough; "1 1 2" in 3: impossible
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((6, 4, 3))
    targets = np.array([[1, 1, 1], [1, 1, 1], [2, 2, 1], [1, 1, 2]])
    il = np.array([5, 6, 4, 3])
    tl = np.array([3, 3, 3, 3])
    _check(logits, targets, il, tl, reduction=reduction, zero_infinity=True)
    want, _ = _run_torch(logits, targets, il, tl, reduction="none")
    got, got_g = _run_ours(logits, targets, il, tl, reduction="none")
    assert np.isinf(want[3]) and np.isinf(got[3]) and np.isfinite(got[:3]).all()
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # an infinite loss without zero_infinity: NaN gradients for that element, as PyTorch's
    assert np.isnan(got_g[:3, 3]).all() and np.isfinite(got_g[:, :3]).all()


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("layout", ["padded", "concat"])
def test_zero_infinity_zeroes_impossible_alignments(reduction: str, layout: str) -> None:
    logits, targets, il, tl = _case(7, 10, 4, 5, 8, min_len=6)
    il = np.array([10, 3, 10, 5])  # elements 1 and 3: targets longer than their inputs
    tg = targets if layout == "padded" else _concat(targets, tl)
    _check(logits, tg, il, tl, reduction=reduction, zero_infinity=True)
    _, g = _run_ours(logits, tg, il, tl, reduction=reduction, zero_infinity=True)
    assert (g[:, 1] == 0).all() and (g[:, 3] == 0).all() and (g[:, 0] != 0).any()
    loss, _ = _run_ours(logits, tg, il, tl, reduction="none", zero_infinity=False)
    assert np.isinf(loss[1]) and np.isinf(loss[3])


def test_gradient_beyond_input_length_is_zero() -> None:
    logits, targets, il, tl = _case(11, 15, 3, 5, 4)
    il = np.array([15, 9, 4])
    _check(logits, targets, il, tl)
    _, g = _run_ours(logits, targets, il, tl)
    assert (g[9:, 1] == 0).all() and (g[4:, 2] == 0).all() and (g[:9, 1] != 0).any()


def test_empty_targets_and_zero_input_length() -> None:
    logits, targets, il, tl = _case(5, 6, 4, 4, 3)
    tl = np.array([0, 2, 0, 1])
    il = np.array([6, 6, 0, 0])  # element 3: a label and no input (inf), element 2: 0 loss
    for reduction in REDUCTIONS:
        _check(logits, targets, il, tl, reduction=reduction, zero_infinity=True)
    got, _ = _run_ours(logits, targets, il, tl, reduction="none")
    want, _ = _run_torch(logits, targets, il, tl, reduction="none")
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("kind", ["tuple", "list"])
def test_lengths_as_tuples_or_lists(kind: str) -> None:
    logits, targets, il, tl = _case(2, 9, 3, 5, 4)
    conv = tuple if kind == "tuple" else list
    il_seq, tl_seq = conv(int(v) for v in il), conv(int(v) for v in tl)
    want, want_g = _run_torch(logits, torch.tensor(targets), il_seq, tl_seq, reduction="sum")
    got, got_g = _run_ours(logits, gt.tensor(targets), il_seq, tl_seq, reduction="sum")
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("lengths", ["0-d", "1-elem"])
def test_unbatched_input(reduction: str, lengths: str) -> None:
    rng = np.random.default_rng(9)
    logits = rng.standard_normal((10, 5))
    targets = np.array([1, 3, 3, 2], np.int64)
    il, tl = (np.array(8), np.array(4)) if lengths == "0-d" else (np.array([8]), np.array([4]))
    want, want_g = _run_torch(logits, targets, il, tl, reduction=reduction)
    got, got_g = _run_ours(logits, targets, il, tl, reduction=reduction)
    assert got.shape == want.shape == ()
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_float32_follows_torch(reduction: str) -> None:
    logits, targets, il, tl = _case(4, 20, 4, 7, 6)
    want, want_g = _run_torch(logits, targets, il, tl, dtype=torch.float32, reduction=reduction)
    got, got_g = _run_ours(logits, targets, il, tl, dtype=np.float32, reduction=reduction)
    assert got.dtype == np.float32 and got_g.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-4, atol=1e-5)


def test_log_probs_as_leaf_match_torchs_gradient_formula() -> None:
    """The gradient with respect to log_probs given directly (not through log_softmax) is
    PyTorch's ``exp(lp) - exp(log(alpha beta) + nll - lp)``."""
    logits, targets, il, tl = _case(6, 9, 3, 4, 3)
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    xt = torch.tensor(lp, requires_grad=True)
    tF.ctc_loss(xt, torch.tensor(targets), torch.tensor(il), torch.tensor(tl), reduction="sum").backward()
    x = gt.tensor(lp, requires_grad=True)
    gF.ctc_loss(x, targets, il, tl, reduction="sum").backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nn_ctcloss_layer_equals_torch(reduction: str) -> None:
    logits, targets, il, tl = _case(8, 14, 5, 6, 5, blank=5)
    il[2] = 2
    crit, tcrit = (
        nn.CTCLoss(blank=5, reduction=reduction, zero_infinity=True),
        torch.nn.CTCLoss(blank=5, reduction=reduction, zero_infinity=True),
    )
    x = gt.tensor(logits, requires_grad=True)
    xt = torch.tensor(logits, requires_grad=True)
    loss = crit(gF.log_softmax(x, 2), gt.tensor(targets), gt.tensor(il), gt.tensor(tl))
    tloss = tcrit(xt.log_softmax(2), torch.tensor(targets), torch.tensor(il), torch.tensor(tl))
    np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-10)
    loss.sum().backward()
    tloss.sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert "reduction" in repr(crit)


def test_exported_where_the_losses_are() -> None:
    assert losses.ctc_loss is gF.ctc_loss
    assert "ctc_loss" in losses.__all__ and "ctc_loss" in gF.__all__ and "CTCLoss" in nn.__all__


def test_training_loop_equals_torch_step_by_step() -> None:
    """Linear -> log_softmax -> CTCLoss -> Adam, PyTorch's loop, every step's loss, gradients
    and weights equal to PyTorch's."""
    rng = np.random.default_rng(42)
    t_len, n, feat, classes = 16, 4, 8, 6
    model = nn.Linear(feat, classes, dev=gt.Cpu(), dtype=np.float64)
    ref = torch.nn.Linear(feat, classes).double()
    assert model.bias is not None
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(np.asarray(model.weight.data)))
        ref.bias.copy_(torch.from_numpy(np.asarray(model.bias.data)))
    opt, topt = optim.Adam(model.parameters(), lr=0.05), torch.optim.Adam(ref.parameters(), lr=0.05)
    crit, tcrit = nn.CTCLoss(), torch.nn.CTCLoss()
    for step in range(6):
        x = rng.standard_normal((t_len, n, feat))
        tl = rng.integers(2, 6, n)
        targets = rng.integers(1, classes, int(tl.sum()))  # concatenated
        il = rng.integers(10, t_len + 1, n)
        opt.zero_grad()
        loss = crit(gF.log_softmax(model(gt.tensor(x)), -1), targets, gt.tensor(il), gt.tensor(tl))
        loss.backward()
        topt.zero_grad()
        tloss = tcrit(
            ref(torch.from_numpy(x)).log_softmax(-1),
            torch.from_numpy(targets),
            torch.from_numpy(il),
            torch.from_numpy(tl),
        )
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10, err_msg=f"loss at step {step}")
        for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
            assert p.grad is not None
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"{name} {step}")
        opt.step()
        topt.step()
        for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=f"{name} {step}")
    assert tloss.item() < 10.0


def test_double_backward_raises_naming_ctc_loss() -> None:
    logits, targets, il, tl = _case(1, 8, 2, 4, 3)
    x = gt.tensor(logits, requires_grad=True)
    loss = gF.ctc_loss(gF.log_softmax(x, -1), targets, il, tl)
    (g,) = grad(loss, [x], create_graph=True)  # the first backward works, as PyTorch's
    assert g is not None
    xt = torch.tensor(logits, requires_grad=True)
    (gt_,) = torch.autograd.grad(
        tF.ctc_loss(xt.log_softmax(-1), torch.tensor(targets), torch.tensor(il), torch.tensor(tl)),
        [xt],
        create_graph=True,
    )
    np.testing.assert_allclose(g.numpy(), gt_.detach().numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError):  # PyTorch refuses the double backward too
        gt_.sum().backward()
    with pytest.raises(TapeError, match="ctc_loss"):
        (g * g).sum().backward()


def test_no_recording_without_grad() -> None:
    logits, targets, il, tl = _case(1, 8, 2, 4, 3)
    loss = gF.ctc_loss(gF.log_softmax(gt.tensor(logits), -1), targets, il, tl)
    assert not loss.requires_grad
    want, _ = _run_torch(logits, targets, il, tl)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-10)


def _lp(t: int = 6, n: int = 2, c: int = 4, dtype: Any = np.float64) -> Any:
    return gt.tensor(np.log(np.full((t, n, c), 1.0 / c)).astype(dtype))


BAD: list[tuple[str, Any, type[Exception], str]] = [
    (
        "blank out of range",
        lambda: gF.ctc_loss(_lp(), [[1], [2]], [6, 6], [1, 1], blank=4),
        ValueError,
        r"blank.*\[0, 4\)",
    ),
    ("negative blank", lambda: gF.ctc_loss(_lp(), [[1], [2]], [6, 6], [1, 1], blank=-1), ValueError, "blank"),
    ("label out of range", lambda: gF.ctc_loss(_lp(), [[1], [4]], [6, 6], [1, 1]), ValueError, "labels"),
    ("input length > T", lambda: gF.ctc_loss(_lp(), [[1], [2]], [7, 6], [1, 1]), ValueError, r"T = 6"),
    ("negative length", lambda: gF.ctc_loss(_lp(), [[1], [2]], [6, 6], [-1, 1]), ValueError, "non-negative"),
    ("target length > S", lambda: gF.ctc_loss(_lp(), [[1], [2]], [6, 6], [2, 1]), ShapeError, r"\(2, 1\)"),
    ("wrong number of lengths", lambda: gF.ctc_loss(_lp(), [[1], [2]], [6, 6, 6], [1, 1]), ShapeError, r"\(3,\)"),
    ("2-D lengths", lambda: gF.ctc_loss(_lp(), [[1], [2]], [[6, 6]], [1, 1]), ShapeError, "input_lengths"),
    ("padded rows != N", lambda: gF.ctc_loss(_lp(), [[1], [2], [3]], [6, 6], [1, 1]), ShapeError, r"\(3, 1\)"),
    ("concat wrong total", lambda: gF.ctc_loss(_lp(), [1, 2, 3], [6, 6], [1, 1]), ShapeError, "sum"),
    (
        "float lengths",
        lambda: gF.ctc_loss(_lp(), [[1], [2]], gt.tensor([6.0, 6.0]), [1, 1]),
        DTypeError,
        "input_lengths",
    ),
    ("float targets", lambda: gF.ctc_loss(_lp(), gt.tensor([[1.0], [2.0]]), [6, 6], [1, 1]), DTypeError, "targets"),
    (
        "int log_probs",
        lambda: gF.ctc_loss(gt.tensor(np.zeros((6, 2, 4), np.int64)), [[1], [2]], [6, 6], [1, 1]),
        DTypeError,
        "int64",
    ),
    (
        "bool log_probs",
        lambda: gF.ctc_loss(gt.tensor(np.zeros((6, 2, 4), bool)), [[1], [2]], [6, 6], [1, 1]),
        DTypeError,
        "bool",
    ),
    (
        "rank 4",
        lambda: gF.ctc_loss(gt.tensor(np.zeros((6, 2, 4, 1))), [[1], [2]], [6, 6], [1, 1]),
        ShapeError,
        r"\(6, 2, 4, 1\)",
    ),
    (
        "raw array",
        lambda: gF.ctc_loss(np.zeros((6, 2, 4)), [[1], [2]], [6, 6], [1, 1]),  # type: ignore[arg-type]  # the misuse tested
        TypeError,
        "Tensor",
    ),
    (
        "bad reduction",
        lambda: gF.ctc_loss(_lp(), [[1], [2]], [6, 6], [1, 1], reduction="avg"),  # type: ignore[arg-type]  # the misuse tested
        ValueError,
        "reduction",
    ),
    ("unbatched 2-D targets", lambda: gF.ctc_loss(gt.tensor(np.zeros((6, 4))), [[1]], 6, 1), ShapeError, "unbatched"),
]


@pytest.mark.parametrize(("what", "call", "exc", "match"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_a_named_error(what: str, call: Any, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match) as info:
        call()
    assert str(info.value).startswith("ctc_loss: "), str(info.value)
    assert "numba" not in type(info.value).__module__


def test_nn_ctcloss_refuses_unknown_reduction() -> None:
    with pytest.raises(ValueError, match="CTCLoss"):
        nn.CTCLoss(reduction="avg")
