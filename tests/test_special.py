"""gradtape.special against torch.special, written as the PyTorch user's program: the same
float64 inputs, values and the gradients of ``sum(out * w)`` to 1e-10 (special points
included: zeros, negative inputs, large magnitudes), second derivatives against
``torch.func.hessian``, the re-exports the same objects as the top level's."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, Gradients, Tensor, special
from gradtape.autograd import grad

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)
Fn = Callable[..., Any]

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _close(a: Array, b: Array, msg: str = "") -> None:
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=msg)


def compare(ours: Fn, theirs: Fn, floats: list[Array], consts: tuple[Any, ...] = ()) -> None:
    """Values and the gradient of every float input for a random weighting of the output."""
    store = Gradients.leaky()
    xs = [DEV.tensor(a, dtype=np.float64) for a in floats]
    out = ours(*(x.trace(store) for x in xs), *consts)
    txs = [torch.tensor(a, requires_grad=True) for a in floats]
    tout = theirs(*txs, *consts)
    assert out.shape == tuple(tout.shape)
    assert out.dtype == np.float64
    _close(out.numpy(), tout.detach().numpy(), "value")
    w = np.random.default_rng(99).standard_normal(out.shape)
    grads = (out * DEV.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for k, (x, tx) in enumerate(zip(xs, txs, strict=True)):
        _close(grads.get(x).numpy(), tx.grad.numpy(), f"gradient of input {k}")


RNG = np.random.default_rng(0)
REALS = np.concatenate([RNG.standard_normal(8) * 3, [0.0, -0.0, 1.0, -1.0, 0.5, -7.5, 30.0, -30.0]])
POS = np.concatenate([RNG.uniform(0.01, 5.0, 6), [1.0, 1e-8, 1e6]])


# ===== re-exports ============================================================================


@pytest.mark.parametrize(
    ("name", "top"),
    [
        ("erf", "erf"),
        ("erfc", "erfc"),
        ("expm1", "expm1"),
        ("exp2", "exp2"),
        ("log1p", "log1p"),
        ("round", "round"),
        ("logit", "logit"),
        ("logsumexp", "logsumexp"),
        ("expit", "sigmoid"),
    ],
)
def test_reexports_are_the_top_level_ops(name: str, top: str) -> None:
    assert getattr(special, name) is getattr(gradtape, top)


@pytest.mark.parametrize("name", ["erf", "erfc", "expm1", "exp2", "expit", "ndtr", "sinc", "round"])
def test_unary_matches_torch(name: str) -> None:
    compare(lambda x: getattr(special, name)(x), lambda x: getattr(torch.special, name)(x), [REALS])


def test_log1p_matches_torch() -> None:
    x = np.concatenate([POS - 0.999, [0.0, -0.5, 1e-12, 1e8]])
    compare(lambda a: special.log1p(a), lambda a: torch.special.log1p(a), [x])


def test_round_decimals_matches_torch() -> None:
    x = RNG.standard_normal(10) * 100
    compare(lambda a: special.round(a, decimals=2), lambda a: torch.special.round(a, decimals=2), [x])


@pytest.mark.parametrize("eps", [None, 0.1, 1e-6])
def test_logit_matches_torch(eps: float | None) -> None:
    p = np.concatenate([RNG.uniform(0.01, 0.99, 6), [0.05, 0.5, 0.95, 0.1, 0.9]])
    compare(lambda a: special.logit(a, eps), lambda a: torch.special.logit(a, eps), [p])
    compare(lambda a: special.logit(a, eps=eps), lambda a: torch.special.logit(a, eps=eps), [p])


def test_logit_outside_unit_interval_matches_torch() -> None:
    """The ends 0 and 1 (``-inf``/``inf``, gradient ``inf``); outside ``[0, 1]`` with ``eps``
    (clamped: gradient 0) and without it: a NaN value and, as PyTorch, a NaN gradient (it was
    a finite ``1/p + 1/(1-p)`` there)."""
    compare(lambda a: special.logit(a), lambda a: torch.special.logit(a), [np.array([0.0, 1.0])])
    p = np.array([0.0, 1.0, -0.5, 1.5])
    compare(lambda a: special.logit(a, 0.2), lambda a: torch.special.logit(a, 0.2), [p])
    x = np.array([-0.5, 0.0, 0.3, 1.0, 1.5, math.inf])
    t = gradtape.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        special.logit(t).sum().backward()
    want = torch.tensor(x, requires_grad=True)
    torch.special.logit(want).sum().backward()
    assert t.grad is not None and want.grad is not None
    np.testing.assert_allclose(t.grad.numpy(), want.grad.numpy(), rtol=1e-12)
    got, ref = special.logit(gradtape.tensor(x)).numpy(), torch.special.logit(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12)


# ===== xlogy, xlog1py ========================================================================

NAN = math.nan
XS = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 2.5, -3.0, 0.5, 0.0, 4.0])
YS = np.array([0.0, NAN, 2.0, -1.0, 1e-300, 0.0, -1.0, 1e10, 0.3, 7.0, math.inf, math.inf])


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_special_points_match_torch(name: str) -> None:
    """``xlogy(0, y) = 0`` (NaN for ``y`` NaN), the gradients at ``x == 0`` and ``y <= 0``."""
    ys = YS - 1.0 if name == "xlog1py" else YS
    compare(lambda a, b: getattr(special, name)(a, b), lambda a, b: getattr(torch.special, name)(a, b), [XS, ys])


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_broadcasts_like_torch(name: str) -> None:
    x = RNG.standard_normal((3, 1))
    y = RNG.uniform(0.1, 3.0, (4,))
    compare(lambda a, b: getattr(special, name)(a, b), lambda a, b: getattr(torch.special, name)(a, b), [x, y])


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
@pytest.mark.parametrize("scalar", [0.0, 2.0, 3])
def test_xlogy_scalar_operands_match_torch(name: str, scalar: float) -> None:
    y = np.array([0.5, 2.0, 0.0, 1e-5])
    f, tf = getattr(special, name), getattr(torch.special, name)
    compare(lambda b: f(scalar, b), lambda b: tf(scalar, b), [y])
    compare(lambda a: f(a, scalar), lambda a: tf(a, scalar), [y - 0.5])


def test_xlogy_integer_operands_follow_torch_promotion() -> None:
    xi, yf = np.array([0, 1, 2, 3]), np.array([0.5, 1.5, 2.0, 0.0])
    got = special.xlogy(DEV.tensor(xi), DEV.tensor(yf))
    assert got.dtype == np.float64
    _close(got.numpy(), torch.special.xlogy(torch.tensor(xi), torch.tensor(yf)).numpy())
    both = special.xlogy(DEV.tensor(xi), DEV.tensor(xi))
    want = torch.special.xlogy(torch.tensor(xi), torch.tensor(xi))
    assert both.dtype == np.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(both.numpy(), want.numpy(), rtol=1e-6)


def test_xlogy_refuses_mixed_float_precisions() -> None:
    with pytest.raises(gradtape.DTypeError, match="xlogy"):
        special.xlogy(DEV.tensor(np.ones(2, np.float32)), DEV.tensor(np.ones(2)))


@pytest.mark.parametrize("name", ["entr", "sinc", "log_ndtr", "xlogy", "softmax"])
def test_float32_stays_float32(name: str) -> None:
    x = np.array([0.0, 0.5, 3.0, 20.0], dtype=np.float32)
    args: tuple[Any, ...] = (x, x) if name == "xlogy" else (x, 0) if name == "softmax" else (x,)
    got = getattr(special, name)(*(DEV.tensor(a) if isinstance(a, np.ndarray) else a for a in args))
    want = getattr(torch.special, name)(*(torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)


def test_xlogy_needs_a_tensor() -> None:
    with pytest.raises(TypeError, match="xlogy"):
        special.xlogy(1.0, 2.0)
    with pytest.raises(TypeError, match="xlog1py"):
        special.xlog1py(DEV.tensor(np.ones(2)), "a")  # type: ignore[arg-type]


# ===== entr, sinc, ndtr, log_ndtr ============================================================


def test_entr_matches_torch() -> None:
    x = np.array([0.0, 0.5, 1.0, 2.0, 1e-10, 1e8, -1.0, NAN, math.inf])
    compare(lambda a: special.entr(a), lambda a: torch.special.entr(a), [x])


def test_sinc_matches_torch() -> None:
    x = np.array([0.0, 1.0, -1.0, 0.5, 1e-9, -2.25, 100.3, 1e6 + 0.25])
    compare(lambda a: special.sinc(a), lambda a: torch.special.sinc(a), [x])


def test_ndtr_matches_torch() -> None:
    """Down to -5: below, PyTorch's float64 ndtr loses its digits (0 from -10 on) and
    gradtape's ``erfc(-x/sqrt 2)/2`` keeps them (checked against ``math.erfc``)."""
    x = np.concatenate([REALS[np.abs(REALS) < 5], [-5.0, -4.0, 6.0, 40.0]])
    compare(lambda a: special.ndtr(a), lambda a: torch.special.ndtr(a), [x])
    tail = np.array([-10.0, -25.0, -37.0])
    want = [0.5 * math.erfc(-v / math.sqrt(2)) for v in tail]
    np.testing.assert_allclose(special.ndtr(DEV.tensor(tail)).numpy(), want, rtol=1e-12)


def test_log_ndtr_matches_torch() -> None:
    """Every branch: ``x > -1``, ``-20 <= x <= -1`` and the asymptotic tail below ``-20``."""
    x = np.array([-1e3, -100.0, -40.0, -25.0, -20.5, -20.0, -19.5, -10.0, -3.0, -1.0, -0.999, 0.0, 2.0, 8.0, 20.0])
    compare(lambda a: special.log_ndtr(a), lambda a: torch.special.log_ndtr(a), [x])
    compare(lambda a: special.log_ndtr(a), lambda a: torch.special.log_ndtr(a), [REALS])


# ===== softmax, log_softmax, logsumexp =======================================================


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_matches_torch(name: str, dim: int) -> None:
    x = RNG.standard_normal((3, 4)) * 10
    f, tf = getattr(special, name), getattr(torch.special, name)
    compare(lambda a: f(a, dim), lambda a: tf(a, dim), [x])
    compare(lambda a: f(a, dim=dim), lambda a: tf(a, dim=dim), [x])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_dtype_casts_first(name: str) -> None:
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    ours = getattr(special, name)(DEV.tensor(x), 1, dtype=gradtape.float64)
    want = getattr(torch.special, name)(torch.tensor(x), 1, dtype=torch.float64)
    assert ours.dtype == np.float64
    _close(ours.numpy(), want.numpy())


@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_matches_torch(keepdim: bool) -> None:
    x = RNG.standard_normal((3, 4)) * 50
    compare(lambda a: special.logsumexp(a, 1, keepdim), lambda a: torch.special.logsumexp(a, 1, keepdim), [x])
    compare(
        lambda a: special.logsumexp(a, dim=(0, 1), keepdim=keepdim),
        lambda a: torch.special.logsumexp(a, dim=(0, 1), keepdim=keepdim),
        [x],
    )


# ===== second derivatives ====================================================================


def _hessian(f: Callable[[Tensor[Any, Any]], Tensor[Any, Any]], x0: Array) -> Array:
    rows = []
    for i in range(x0.size):
        x = DEV.tensor(x0)
        (gx,) = grad(f(x.leaky_trace()), x, create_graph=True)
        assert gx is not None
        e = np.zeros(x0.size)
        e[i] = 1.0
        (row,) = grad((gx * DEV.tensor(e)).sum(), x, allow_unused=True)
        rows.append(np.zeros(x0.size) if row is None else row.numpy())
    return np.stack(rows)


HESSIAN_CASES: dict[str, tuple[Fn, Fn, Array]] = {
    "xlogy": (
        lambda m, a: m.xlogy(a[:3], a[3:]).sum(),
        lambda m, a: m.xlogy(a[:3], a[3:]).sum(),
        np.array([0.0, 1.5, -2.0, 0.7, 2.0, 3.0]),
    ),
    "xlog1py": (
        lambda m, a: (m.xlog1py(a[:3], a[3:]) ** 2).sum(),
        lambda m, a: (m.xlog1py(a[:3], a[3:]) ** 2).sum(),
        np.array([0.0, 1.5, -2.0, 0.7, 2.0, 3.0]),
    ),
    "entr": (lambda m, a: (m.entr(a) * a).sum(), lambda m, a: (m.entr(a) * a).sum(), np.array([0.3, 1.0, 2.5])),
    "sinc": (lambda m, a: m.sinc(a).sum(), lambda m, a: m.sinc(a).sum(), np.array([0.3, -1.7, 2.5])),
    "ndtr": (lambda m, a: m.ndtr(a).prod(), lambda m, a: m.ndtr(a).prod(), np.array([0.3, -1.7, 2.5])),
    "log_ndtr": (
        lambda m, a: (m.log_ndtr(a) * a).sum(),
        lambda m, a: (m.log_ndtr(a) * a).sum(),
        np.array([0.3, -1.7, -30.0, 2.5]),
    ),
    "log_softmax": (
        lambda m, a: (m.log_softmax(a.reshape(2, 2), 1) ** 2).sum(),
        lambda m, a: (m.log_softmax(a.reshape(2, 2), 1) ** 2).sum(),
        np.array([0.3, -1.7, 2.0, 2.5]),
    ),
}


@pytest.mark.parametrize("name", sorted(HESSIAN_CASES))
def test_second_derivatives_match_torch_hessian(name: str) -> None:
    ours, theirs, x0 = HESSIAN_CASES[name]
    want = torch.func.hessian(lambda t: theirs(torch.special, t))(torch.tensor(x0)).numpy()
    got = _hessian(lambda t: ours(special, t), x0)
    _close(got, want)
