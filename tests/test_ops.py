"""Every op and loss: gradients against finite differences (float64), float32 forward values
against numpy, hand-computed gradients, the checker's own ability to fail, and op errors."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, TapeError, Tensor
from gradtape.losses import cross_entropy
from gradtape.tape import merge_tapes
from gradtape.testing import GradcheckError, gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]
Fn = Callable[..., Any]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(1234)


def rnd(*shape: int) -> Array:
    """Standard normal float64 samples."""
    return _RNG.standard_normal(shape)


def pos(*shape: int) -> Array:
    """Positive float64 samples in [0.5, 2), for log and divisors."""
    return _RNG.uniform(0.5, 2.0, shape)


def away(*shape: int) -> Array:
    """Samples with |x| in [0.2, 1.5) and random sign: no kink of relu within eps."""
    sign = np.where(_RNG.random(shape) < 0.5, -1.0, 1.0)
    return np.asarray(sign * _RNG.uniform(0.2, 1.5, shape))


def nc(arr: Array) -> T:
    """A tensor whose data is the transposed (non-C-contiguous) view of ``arr``."""
    t: T = Tensor(arr.T, DEV)
    assert not t.data.flags.c_contiguous
    return t


# ----- (1) gradcheck in float64 ------------------------------------------------------------

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
}


def _binary_cases() -> list[Any]:
    cases = []
    for name, f in _BINARY.items():
        rhs = pos if name == "div" else rnd
        table: list[tuple[str, Fn, list[Any]]] = [
            ("tensor_tensor", f, [rnd(2, 3), rhs(2, 3)]),
            ("size1_dims", f, [rnd(1, 3), rhs(1, 3)]),
            ("tensor_scalar", lambda a, f=f: f(a, 1.75), [rnd(2, 3)]),
            ("tensor_numpy_scalar", lambda a, f=f: f(a, np.float64(-0.5)), [rnd(1, 2)]),
            ("scalar_tensor", lambda a, f=f: f(1.75, a), [rhs(2, 3)]),
            ("scalar_tensor_size1", lambda a, f=f: f(-3, a), [rhs(1)]),
            ("matrix_bias_row", f, [rnd(2, 3), rhs(3)]),
            ("bias_row_matrix", f, [rnd(3), rhs(2, 3)]),
            ("col_row_broadcast", f, [rnd(3, 1), rhs(1, 4)]),
            ("rank3_broadcast", f, [rnd(2, 1, 3), rhs(2, 1)]),
            ("noncontig_lhs", f, [nc(rnd(3, 2)), rhs(2, 3)]),
            ("noncontig_both", f, [nc(rnd(3, 2)), nc(rhs(3, 2))]),
            ("noncontig_bias", f, [nc(rnd(3, 2)), rhs(3)]),
            ("same_tensor", lambda a, f=f: f(a, a), [pos(2, 3)]),
        ]
        cases += [pytest.param(fn, inputs, id=f"{name}-{cid}") for cid, fn, inputs in table]
    return cases


_UNARY: dict[str, tuple[Callable[[Any], Any], Callable[..., Array]]] = {
    "neg": (lambda a: -a, rnd),
    "exp": (lambda a: a.exp(), rnd),
    "log": (lambda a: a.log(), pos),
    "relu": (lambda a: a.relu(), away),
    "sin": (lambda a: a.sin(), rnd),
}


def _unary_cases() -> list[Any]:
    cases = []
    for name, (f, gen) in _UNARY.items():
        for cid, x in [("2x3", gen(2, 3)), ("1", gen(1)), ("1x3x1", gen(1, 3, 1))]:
            cases.append(pytest.param(f, [x], id=f"{name}-{cid}"))
        cases.append(pytest.param(f, [nc(gen(3, 2))], id=f"{name}-noncontig"))
        cases.append(pytest.param(lambda a, f=f: f(a) * a, [gen(2, 2)], id=f"{name}-reused-input"))
    return cases


def _reduce_cases() -> list[Any]:
    cases = []
    table: list[tuple[str, dict[str, Any], Any]] = [
        ("all", {}, rnd(2, 3)),
        ("all_rank0", {}, rnd()),
        ("all_1d", {"axis": 0}, rnd(4)),
        ("axis0", {"axis": 0}, rnd(2, 3)),
        ("axis1", {"axis": 1}, rnd(2, 3)),
        ("axis_neg1", {"axis": -1}, rnd(2, 3)),
        ("axis_neg2", {"axis": -2}, rnd(2, 3)),
        ("axis_tuple", {"axis": (0, 2)}, rnd(2, 1, 3)),
        ("axis_tuple_neg", {"axis": (-1, 0)}, rnd(2, 2, 3)),
        ("size1_axis", {"axis": 1}, rnd(1, 1)),
        ("keepdims_all", {"keepdims": True}, rnd(2, 3)),
        ("keepdims_axis1", {"axis": 1, "keepdims": True}, rnd(2, 3)),
        ("keepdims_tuple", {"axis": (0, 2), "keepdims": True}, rnd(2, 1, 3)),
        ("noncontig_axis0", {"axis": 0}, nc(rnd(3, 2))),
        ("noncontig_all", {}, nc(rnd(3, 2))),
    ]
    for op in ("sum", "mean"):
        for cid, kw, x in table:
            cases.append(pytest.param(lambda a, op=op, kw=kw: getattr(a, op)(**kw), [x], id=f"{op}-{cid}"))
    return cases


_MATMUL_CASES = [
    pytest.param(operator.matmul, [rnd(2, 3), rnd(3, 4)], id="2x3@3x4"),
    pytest.param(operator.matmul, [rnd(1, 3), rnd(3, 1)], id="1x3@3x1"),
    pytest.param(operator.matmul, [rnd(1, 1), rnd(1, 2)], id="1x1@1x2"),
    pytest.param(operator.matmul, [nc(rnd(3, 2)), nc(rnd(4, 3))], id="noncontig"),
    pytest.param(lambda a: a.matmul(a), [rnd(2, 2)], id="same_tensor"),
]

_LOG_SOFTMAX_CASES = [
    pytest.param(lambda a: a.log_softmax(), [rnd(2, 3)], id="2x3-default"),
    pytest.param(lambda a: a.log_softmax(axis=-1), [rnd(1, 4)], id="1x4-axis-1"),
    pytest.param(lambda a: a.log_softmax(axis=0), [rnd(2, 3)], id="2x3-axis0"),
    pytest.param(lambda a: a.log_softmax(axis=0), [rnd(1, 4)], id="1x4-axis0"),
    pytest.param(lambda a: a.log_softmax(axis=1), [rnd(3, 1)], id="3x1-axis1"),
    pytest.param(lambda a: a.log_softmax(axis=0), [rnd(5)], id="1d"),
    pytest.param(lambda a: a.log_softmax(axis=1), [rnd(2, 2, 3)], id="rank3-axis1"),
    pytest.param(lambda a: a.log_softmax(axis=-1), [nc(rnd(3, 2))], id="noncontig-axis-1"),
    pytest.param(lambda a: a.log_softmax(axis=0), [nc(rnd(3, 2))], id="noncontig-axis0"),
]


def _ce(targets: Any, reduction: str) -> Fn:
    return lambda a: cross_entropy(a, targets, reduction=reduction)  # type: ignore[call-overload]


_CE_CASES = [pytest.param(_ce([0, 3, 1], red), [rnd(3, 4)], id=f"3x4-{red}") for red in ("mean", "sum")] + [
    pytest.param(_ce([1], "mean"), [rnd(1, 2)], id="1x2-mean"),
    pytest.param(_ce(np.array([0], dtype=np.int32), "sum"), [rnd(1, 1)], id="1x1-sum-int32"),
    pytest.param(_ce(np.array([2, 0], dtype=np.uint8), "mean"), [nc(rnd(3, 2))], id="noncontig-uint8"),
    pytest.param(_ce([2, 2, 0], "sum"), [nc(rnd(3, 3))], id="noncontig-repeated-class"),
]

_GRADCHECK_CASES = _binary_cases() + _unary_cases() + _reduce_cases() + _MATMUL_CASES + _LOG_SOFTMAX_CASES + _CE_CASES


@pytest.mark.parametrize(("fn", "inputs"), _GRADCHECK_CASES)
def test_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """The tape's gradient matches central finite differences in float64."""
    assert gradcheck(fn, inputs) is True


_RANK0_CASES = [
    pytest.param(operator.add, [rnd(), rnd()], id="add"),
    pytest.param(operator.sub, [rnd(), rnd()], id="sub"),
    pytest.param(operator.mul, [rnd(), rnd()], id="mul"),
    pytest.param(lambda a: 2.5 - a, [rnd()], id="rsub"),
    pytest.param(lambda a: a * -2.5, [rnd()], id="mul-scalar"),
    pytest.param(lambda a: -a, [rnd()], id="neg"),
    pytest.param(lambda a: a.exp(), [rnd()], id="exp"),
    pytest.param(lambda a: a.log(), [pos()], id="log"),
    pytest.param(lambda a: a.relu() + a.relu(), [away()], id="relu-reused"),
    pytest.param(lambda a: a.sum() * a.mean(), [rnd(3)], id="sum_times_mean"),
    pytest.param(operator.truediv, [rnd(), pos()], id="div"),
    pytest.param(lambda a: 2.0 / a, [pos()], id="rdiv"),
    pytest.param(lambda a: a.sin(), [rnd()], id="sin"),
    pytest.param(lambda a: a * a, [rnd()], id="square"),
    pytest.param(lambda a: a.exp() + a.exp(), [rnd()], id="exp-reused"),
    pytest.param(lambda a: a.log() * 2.0 + a.log(), [pos()], id="log-reused"),
    pytest.param(lambda a: a.mean() / a.sum(), [pos(3)], id="mean_over_sum"),
    pytest.param(lambda a: a.sum().sin(), [rnd(2, 3)], id="sin_of_sum"),
    pytest.param(lambda s, m: s * m + s * m, [rnd(), rnd(2, 3)], id="scalar_param_reused"),
    pytest.param(lambda s, m: m / s - m / s * 2.0, [pos(), rnd(2, 3)], id="scalar_divisor_reused"),
    pytest.param(lambda s, m: s.exp() * m + s.exp(), [rnd(), rnd(2, 3)], id="exp_scalar_reused"),
    pytest.param(lambda s, m: s - m - m, [rnd(), rnd(2, 3)], id="scalar_minus_matrix_reused"),
]


@pytest.mark.parametrize(("fn", "inputs"), _RANK0_CASES)
def test_gradcheck_rank0(fn: Fn, inputs: list[Any]) -> None:
    """Ops on rank-0 tensors (what every full reduction and loss returns) differentiate too."""
    assert gradcheck(fn, inputs) is True


@pytest.mark.parametrize("op", ["add", "div", "exp"])
def test_rank0_op_output_is_an_ndarray(op: str) -> None:
    """An op on 0-d tensors returns a tensor whose data is a 0-d ndarray."""
    a, b = DEV.tensor(1.5), DEV.tensor(0.5)
    make: dict[str, Callable[[], T]] = {"add": lambda: a + b, "div": lambda: a / b, "exp": lambda: a.exp()}
    out = make[op]()
    assert isinstance(out.numpy(), np.ndarray)
    assert out.shape == ()


def test_gradcheck_keeps_non_contiguous_layout() -> None:
    """gradcheck's traced pass sees the non-C-contiguous data that ``nc`` builds."""
    seen: list[bool] = []

    def fn(a: T) -> T:
        seen.append(bool(a.data.flags.c_contiguous))
        return a.relu()

    assert gradcheck(fn, [nc(away(3, 2))])
    assert seen[0] is False


# ----- (2) float32 forward against numpy ---------------------------------------------------


def _f32(*shape: int, low: float | None = None) -> Array:
    x = _RNG.uniform(low, 2.0, shape) if low is not None else _RNG.standard_normal(shape)
    return np.asarray(x, dtype=np.float32)


def _np_log_softmax(x: Array, axis: int) -> Array:
    x64 = x.astype(np.float64)
    m = x64.max(axis=axis, keepdims=True)
    return np.asarray(x64 - m - np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True)))


def _np_ce(x: Array, t: Sequence[int], reduction: str) -> Array:
    lp = _np_log_softmax(x, 1)
    total = -lp[np.arange(len(t)), np.asarray(t)].sum()
    return np.asarray(total / len(t) if reduction == "mean" else total)


_FORWARD_CASES: list[Any] = [
    pytest.param(operator.add, operator.add, [_f32(2, 3), _f32(2, 3)], id="add"),
    pytest.param(operator.sub, operator.sub, [_f32(2, 3), _f32(2, 3)], id="sub"),
    pytest.param(operator.mul, operator.mul, [_f32(2, 3), _f32(2, 3)], id="mul"),
    pytest.param(operator.truediv, operator.truediv, [_f32(2, 3), _f32(2, 3, low=0.5)], id="div"),
    pytest.param(operator.add, operator.add, [_f32(2, 3), _f32(3)], id="add-bias"),
    pytest.param(operator.sub, operator.sub, [_f32(3, 1), _f32(1, 4)], id="sub-outer"),
    pytest.param(operator.mul, operator.mul, [_f32(2, 3), _f32(3)], id="mul-bias"),
    pytest.param(operator.truediv, operator.truediv, [_f32(3, 1), _f32(1, 4, low=0.5)], id="div-outer"),
    pytest.param(lambda a: a + 2.5, lambda a: a + 2.5, [_f32(2, 3)], id="add-scalar"),
    pytest.param(lambda a: 2.5 + a, lambda a: 2.5 + a, [_f32(2, 3)], id="radd"),
    pytest.param(lambda a: a - 2.5, lambda a: a - 2.5, [_f32(2, 3)], id="sub-scalar"),
    pytest.param(lambda a: 2.5 - a, lambda a: 2.5 - a, [_f32(2, 3)], id="rsub"),
    pytest.param(lambda a: a * 3, lambda a: a * 3, [_f32(2, 3)], id="mul-int-scalar"),
    pytest.param(lambda a: np.float64(3.0) * a, lambda a: a * np.float32(3.0), [_f32(2, 3)], id="rmul-np-float64"),
    pytest.param(lambda a: a / 4.0, lambda a: a / 4.0, [_f32(2, 3)], id="div-scalar"),
    pytest.param(lambda a: 4.0 / a, lambda a: 4.0 / a, [_f32(2, 3, low=0.5)], id="rdiv"),
    pytest.param(lambda a: -a, np.negative, [_f32(2, 3)], id="neg"),
    pytest.param(lambda a: a.exp(), np.exp, [_f32(2, 3)], id="exp"),
    pytest.param(lambda a: a.log(), np.log, [_f32(2, 3, low=0.1)], id="log"),
    pytest.param(lambda a: a.relu(), lambda a: np.maximum(a, 0), [_f32(2, 3)], id="relu"),
    pytest.param(lambda a: a.sin(), np.sin, [_f32(2, 3)], id="sin"),
    pytest.param(lambda a: a.sum(), np.sum, [_f32(2, 3)], id="sum"),
    pytest.param(lambda a: a.sum(axis=0), lambda a: a.sum(axis=0), [_f32(2, 3)], id="sum-axis0"),
    pytest.param(
        lambda a: a.sum(axis=-1, keepdims=True), lambda a: a.sum(-1, keepdims=True), [_f32(2, 3)], id="sum-kd"
    ),
    pytest.param(lambda a: a.sum(axis=(0, 2)), lambda a: a.sum(axis=(0, 2)), [_f32(2, 2, 3)], id="sum-tuple"),
    pytest.param(lambda a: a.mean(), np.mean, [_f32(2, 3)], id="mean"),
    pytest.param(lambda a: a.mean(axis=1), lambda a: a.mean(axis=1), [_f32(2, 3)], id="mean-axis1"),
    pytest.param(
        lambda a: a.mean(axis=-2, keepdims=True), lambda a: a.mean(-2, keepdims=True), [_f32(2, 3)], id="mean-kd"
    ),
    pytest.param(operator.matmul, np.matmul, [_f32(2, 3), _f32(3, 4)], id="matmul"),
    pytest.param(lambda a: a.log_softmax(), lambda a: _np_log_softmax(a, -1), [_f32(2, 3)], id="log_softmax-1"),
    pytest.param(lambda a: a.log_softmax(0), lambda a: _np_log_softmax(a, 0), [_f32(2, 3)], id="log_softmax0"),
    pytest.param(lambda a: cross_entropy(a, [0, 2]), lambda a: _np_ce(a, [0, 2], "mean"), [_f32(2, 3)], id="ce-mean"),
    pytest.param(
        lambda a: cross_entropy(a, [1, 1], reduction="sum"),
        lambda a: _np_ce(a, [1, 1], "sum"),
        [_f32(2, 3)],
        id="ce-sum",
    ),
]


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
@pytest.mark.parametrize(("fn", "np_fn", "arrays"), _FORWARD_CASES)
def test_forward_float32_matches_numpy(fn: Fn, np_fn: Fn, arrays: list[Array], noncontig: bool) -> None:
    """The float32 forward equals the numpy expression and stays float32 (also for views)."""
    if noncontig:
        tensors: list[T] = [Tensor(np.ascontiguousarray(x.T).T, DEV) for x in arrays]
    else:
        tensors = [DEV.tensor(x) for x in arrays]
    out = fn(*tensors)
    want = np.asarray(np_fn(*arrays))
    assert out.dtype == np.float32
    assert out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=1e-6)


# ----- (3) hand-computed gradients (float32) -----------------------------------------------


def _grads(fn: Fn, *inputs: Array | T) -> list[Array]:
    """Gradients of the scalar ``fn(*inputs)`` w.r.t. each input (arrays become float32 tensors)."""
    xs = [x if isinstance(x, Tensor) else DEV.tensor(x) for x in inputs]
    store = Gradients.leaky()
    grads = fn(*(x.trace(store) for x in xs)).backward()
    return [np.asarray(grads.get(x).numpy()) for x in xs]


X = np.array([[-1.5, 2.0, 0.5], [3.0, -0.25, -2.0]], dtype=np.float32)
P = np.array([[0.5, 2.0, 4.0], [1.0, 0.25, 8.0]], dtype=np.float32)


def test_relu_grad_is_exactly_the_mask() -> None:
    """d sum(relu(x)) / dx is 1 where x > 0 and 0 elsewhere, exactly."""
    (g,) = _grads(lambda a: a.relu().sum(), X)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, (X > 0).astype(np.float32))


def test_relu_grad_at_zero_is_zero() -> None:
    """At x == 0 relu's gradient is 0 (as PyTorch)."""
    (g,) = _grads(lambda a: a.relu().sum(), np.array([0.0, -0.0, 1e-30], dtype=np.float32))
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])


def test_log_grad_is_reciprocal() -> None:
    """d sum(log(x)) / dx = 1/x."""
    (g,) = _grads(lambda a: a.log().sum(), P)
    np.testing.assert_allclose(g, 1.0 / P, rtol=1e-6)


def test_exp_and_sin_grads() -> None:
    """exp' = exp, sin' = cos."""
    (ge,) = _grads(lambda a: a.exp().sum(), X)
    (gs,) = _grads(lambda a: a.sin().sum(), X)
    np.testing.assert_allclose(ge, np.exp(X), rtol=1e-6)
    np.testing.assert_allclose(gs, np.cos(X), rtol=1e-6)


def test_mul_div_grads() -> None:
    """d(a*b)/da = b, d(a/b)/db = -a/b**2."""
    ga, gb = _grads(lambda a, b: (a * b).sum(), X, P)
    np.testing.assert_array_equal(ga, P)
    np.testing.assert_array_equal(gb, X)
    ga, gb = _grads(lambda a, b: (a / b).sum(), X, P)
    np.testing.assert_allclose(ga, 1.0 / P, rtol=1e-6)
    np.testing.assert_allclose(gb, -X / P**2, rtol=1e-6)


def test_scalar_operand_grads() -> None:
    """rsub's gradient is -1, rdiv's is -c/x**2, a scalar factor's is the factor."""
    (g,) = _grads(lambda a: (3.0 - a).sum() + (a * -2.5).sum() + (2.0 / a).sum(), P)
    np.testing.assert_allclose(g, -1.0 - 2.5 - 2.0 / P**2, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("c", [0.999, -2.5, 3.0, 0.0, -0.0, 1e-45, 1e39, float("inf"), float("nan"), 7])
@pytest.mark.parametrize("op", ["mul", "add", "sub", "div", "rsub"])
def test_scalar_operands_give_numpys_weak_scalar_results(op: str, c: float, dtype: Any) -> None:
    """Scalars reach numpy as cached 0-d arrays of the tensor's dtype: bit for bit what numpy
    gives for the Python number (NEP 50), signed zeros, NaN and float32 overflow included,
    and so does the backward's ``grad * alpha``."""
    x = np.array([1.5, -2.0, 0.0, -0.0, 3e38, np.inf], dtype)
    fns: dict[str, Fn] = {
        "mul": operator.mul,
        "add": operator.add,
        "sub": operator.sub,
        "div": operator.truediv,
        "rsub": lambda a, b: b - a,
    }
    with np.errstate(all="ignore"):
        want = fns[op](x, c)
        got = fns[op](DEV.tensor(x), c).numpy()
    assert got.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
    if op == "mul":
        g = Gradients.leaky()
        xt = DEV.tensor(x[:2]).trace(g)
        with np.errstate(all="ignore"):
            (xt * c).sum().backward()
            want_g = np.ones(2, dtype) * c
        np.testing.assert_array_equal(g.get(xt).numpy(), want_g)


def test_scalar_constant_cache_is_bounded_and_read_only() -> None:
    """The 0-d constants are read-only, and a stream of distinct scalars (a schedule's values)
    does not grow the cache without bound."""
    from gradtape.ops import binary

    x = DEV.tensor(np.ones(3, np.float32))
    for i in range(1, 2000):
        x * (1.0 + i * 1e-3)
    assert 0 < len(binary._CONST32) <= binary._CONST_LIMIT
    like = np.ones(2, np.float32)
    c = binary.weak_const(0.25, like)
    assert c.shape == () and c.dtype == np.float32 and not c.flags.writeable
    assert binary.weak_const(0.25, like) is c
    assert binary.weak_const(0.0, like) is not binary.weak_const(-0.0, like)


def test_square_via_reuse() -> None:
    """x * x used twice gives 2x; x + x gives 2."""
    (g,) = _grads(lambda a: (a * a).sum() + (a + a).sum(), X)
    np.testing.assert_allclose(g, 2 * X + 2, rtol=1e-6)


def test_bias_row_grad_sums_over_batch() -> None:
    """The gradient of a (N,) bias added to a (B, N) matrix is B per element (times upstream)."""
    gm, gb = _grads(lambda m, b: ((m + b) * 2.0).sum(), X, np.zeros(3, np.float32))
    np.testing.assert_array_equal(gm, np.full((2, 3), 2.0, np.float32))
    np.testing.assert_array_equal(gb, np.full(3, 4.0, np.float32))


def test_outer_broadcast_grads() -> None:
    """(3,1) * (1,4): each input's gradient sums the other over the broadcast dim."""
    a = np.array([[1.0], [2.0], [3.0]], np.float32)
    b = np.array([[1.0, -1.0, 0.5, 2.0]], np.float32)
    ga, gb = _grads(lambda x, y: (x * y).sum(), a, b)
    np.testing.assert_array_equal(ga, np.full((3, 1), b.sum(), np.float32))
    np.testing.assert_array_equal(gb, np.full((1, 4), a.sum(), np.float32))


def test_mean_and_sum_axis_grads() -> None:
    """mean's gradient is 1/n for every element; a weighted sum(axis=0) broadcasts back."""
    (gm,) = _grads(lambda a: a.mean(), X)
    np.testing.assert_allclose(gm, np.full((2, 3), 1 / 6), rtol=1e-6)
    w = DEV.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    (gs,) = _grads(lambda a: (a.sum(axis=0) * w).sum(), X)
    np.testing.assert_array_equal(gs, np.array([[1, 2, 3], [1, 2, 3]], np.float32))


def test_matmul_grads() -> None:
    """d sum(A @ B) / dA = 1 @ B.T, / dB = A.T @ 1."""
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    ga, gb = _grads(lambda x, y: (x @ y).sum(), X, b)
    np.testing.assert_allclose(ga, np.ones((2, 4), np.float32) @ b.T, rtol=1e-6)
    np.testing.assert_allclose(gb, X.T @ np.ones((2, 4), np.float32), rtol=1e-6)


def test_log_softmax_sum_grad() -> None:
    """d sum(log_softmax(x, -1)) / dx = 1 - C * softmax(x)."""
    (g,) = _grads(lambda a: a.log_softmax().sum(), X)
    sm = np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g, 1.0 - 3 * sm, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("reduction", "scale"), [("mean", 0.5), ("sum", 1.0)])
def test_cross_entropy_grad(reduction: str, scale: float) -> None:
    """cross_entropy's gradient is (softmax - onehot) / N (mean) or unscaled (sum)."""
    t = [2, 0]
    (g,) = _grads(lambda a: cross_entropy(a, t, reduction=reduction), X)  # type: ignore[call-overload]
    sm = np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)
    sm[[0, 1], t] -= 1
    np.testing.assert_allclose(g, sm * scale, rtol=1e-5, atol=1e-7)


def _ce_reference(x: Array, t: Array) -> tuple[float, Array]:
    """Mean cross-entropy and its gradient in float64 numpy."""
    z = x.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows = np.arange(len(t))
    g = np.exp(logp)
    g[rows, t] -= 1
    return float(-logp[rows, t].mean()), g / len(t)


@pytest.mark.parametrize(
    ("case", "n", "c", "scale"),
    [("digits", 64, 10, 3.0), ("vocab", 8, 5000, 5.0), ("extreme", 6, 7, 1e4), ("one-class", 3, 1, 1.0)],
)
@pytest.mark.parametrize("tdtype", [np.int64, np.int32, np.uint8])
def test_cross_entropy_kernel_matches_float64_reference(case: str, n: int, c: int, scale: float, tdtype: Any) -> None:
    """The fused kernels (float32 logits, float64 row sums) against a float64 numpy reference:
    large class counts, logits of size 1e4 (exp would overflow unshifted), any integer dtype."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((n, c)) * scale).astype(np.float32)
    t = rng.integers(0, min(c, 255), n).astype(tdtype)
    want_loss, want_g = _ce_reference(x, t.astype(np.int64))
    g = Gradients.leaky()
    xt = DEV.tensor(x).trace(g)
    loss = cross_entropy(xt, t)
    assert loss.dtype == np.float32 and loss.shape == ()
    np.testing.assert_allclose(loss.item(), want_loss, rtol=2e-6, atol=1e-6)
    loss.backward()
    np.testing.assert_allclose(g.get(xt).numpy(), want_g, rtol=1e-4, atol=1e-7)


def test_cross_entropy_kernel_takes_transposed_logits_and_keeps_them() -> None:
    """Non-contiguous logits give the contiguous result; the logits are not modified."""
    x = np.ascontiguousarray(_RNG.standard_normal((5, 4)).astype(np.float32))
    xt_view = x.T.copy().T  # same values, Fortran order
    before = xt_view.copy()
    t = np.array([0, 3, 1, 2, 3])
    a = cross_entropy(DEV.tensor(x), t).item()
    tensor: T = Tensor(xt_view, DEV)
    assert not tensor.numpy().flags.c_contiguous
    b = cross_entropy(tensor, t).item()
    assert a == pytest.approx(b, rel=1e-6)
    np.testing.assert_array_equal(tensor.numpy(), before)


def test_cross_entropy_nan_logit_gives_nan_loss() -> None:
    """A NaN logit makes the loss NaN (as PyTorch), not an index error or a finite number."""
    x = np.zeros((2, 3), np.float32)
    x[1, 2] = np.nan
    assert np.isnan(cross_entropy(DEV.tensor(x), [0, 1]).item())


@pytest.mark.parametrize("view", ["strided_1d", "transposed_2d"])
@pytest.mark.parametrize(
    ("name", "fn", "deriv"),
    [
        ("relu", lambda a: a.relu(), lambda x: (x > 0).astype(np.float32)),
        ("log", lambda a: a.log(), lambda x: 1.0 / x),
        ("exp", lambda a: a.exp(), np.exp),
        ("sin", lambda a: a.sin(), np.cos),
        ("square", lambda a: a * a, lambda x: 2.0 * x),
        ("inverse", lambda a: 1.0 / a, lambda x: -1.0 / x**2),
        ("self_div", lambda a: a / (a * a), lambda x: -1.0 / x**2),
    ],
)
def test_fused_backward_on_views(name: str, fn: Fn, deriv: Fn, view: str) -> None:
    """A tensor over a strided/transposed view used twice runs the fused kernels (second
    accumulation) and still gets 2 * f'(x)."""
    base = np.asarray(_RNG.uniform(0.3, 2.0, 24) * np.where(np.arange(24) % 3 == 0, -1, 1), np.float32)
    if name in ("log", "self_div", "inverse"):
        base = np.abs(base)
    data = base[::2] if view == "strided_1d" else base.reshape(4, 6)[:, ::2].T
    assert not data.flags.c_contiguous
    x: T = Tensor(data, DEV)
    (g,) = _grads(lambda a: (fn(a) + fn(a)).sum(), x)
    np.testing.assert_allclose(g, 2.0 * deriv(data.astype(np.float64)), rtol=2e-6)


# ----- (4) gradcheck itself fails on a wrong closure ---------------------------------------


def _square_op(t: T, factor: float) -> T:
    """y = t**2 written by hand; its backward adds ``factor * t * grad_y`` (correct: 2)."""
    x, tape = t.split_tape()
    y = x.device.tensor(x.data * x.data, dtype=x.dtype)
    scaled = factor * x.data

    def backward(grads: Gradients) -> None:
        grad_x, grad_y = grads.mut_and_ref(x, y)
        x.device.addmul(grad_x, scaled, grad_y)

    tape.add_backward_op(backward)
    out: T = y.put_tape(tape)
    return out


def _mul_op(a: T, b: T, b_factor: float) -> T:
    """a * b written by hand; b's gradient is scaled by ``b_factor`` (correct: 1)."""
    a0, ta = a.split_tape()
    b0, tb = b.split_tape()
    tape = merge_tapes(ta, tb)
    y = a0.device.tensor(a0.data * b0.data, dtype=a0.dtype)

    def backward(grads: Gradients) -> None:
        ga, gb, gy = grads.muts_and_ref(a0, b0, y)
        a0.device.addmul(ga, b0.data, gy)
        a0.device.addmul(gb, b_factor * a0.data, gy)

    tape.add_backward_op(backward)
    out: T = y.put_tape(tape)
    return out


def test_gradcheck_accepts_a_correct_hand_written_closure() -> None:
    """The hand-written square and mul with correct backwards pass."""
    assert gradcheck(lambda t: _square_op(t, 2.0), [rnd(2, 3)])
    assert gradcheck(lambda a, b: _mul_op(a, b, 1.0), [rnd(2, 3), rnd(2, 3)])


def test_gradcheck_rejects_a_wrong_closure() -> None:
    """A backward missing the factor 2 of d(x**2)/dx raises GradcheckError naming input 0."""
    with pytest.raises(GradcheckError, match=r"input 0 \(shape \(2, 3\)\).*tape .* vs finite differences"):
        gradcheck(lambda t: _square_op(t, 1.0).sum(), [rnd(2, 3)])


def test_gradcheck_names_the_wrong_input() -> None:
    """Only b's gradient is wrong: the error names input 1 and all of its 4 elements."""
    with pytest.raises(GradcheckError, match=r"input 1 \(shape \(4,\)\): 4 of 4 elements differ"):
        gradcheck(lambda a, b: _mul_op(a, b, -1.0), [pos(4), pos(4)])


def test_gradcheck_error_is_an_assertion_error() -> None:
    """GradcheckError is an AssertionError, so it reads as a test failure."""
    assert issubclass(GradcheckError, AssertionError)


def test_gradcheck_needs_a_taped_output() -> None:
    """An fn whose output does not depend on its inputs raises TapeError."""
    with pytest.raises(TapeError, match="no tape"):
        gradcheck(lambda t: DEV.tensor([1.0, 2.0], dtype=np.float64), [rnd(2)])


# ----- errors ------------------------------------------------------------------------------


def test_cross_entropy_float_targets_raise_dtype_error() -> None:
    """Float targets, even integral-valued, are rejected with DTypeError."""
    with pytest.raises(DTypeError, match=r"integer class indices.*float64"):
        cross_entropy(DEV.tensor(X), np.array([0.0, 1.0]))


def test_cross_entropy_wrong_target_shape_names_both_shapes() -> None:
    """targets of shape (2, 1) against (2, 3) logits: ShapeError naming both shapes."""
    with pytest.raises(ShapeError, match=r"\(2, 1\).*\(2, 3\)"):
        cross_entropy(DEV.tensor(X), np.array([[0], [1]]))
    with pytest.raises(ShapeError, match=r"\(3,\).*\(2, 3\)"):
        cross_entropy(DEV.tensor(X), [0, 1, 2])


@pytest.mark.parametrize("targets", [[0, 3], [-1, 0]])
def test_cross_entropy_out_of_range_class_raises_value_error(targets: list[int]) -> None:
    """A class index outside [0, C) raises ValueError naming the range."""
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        cross_entropy(DEV.tensor(X), targets)


def test_cross_entropy_unknown_reduction_and_non_2d() -> None:
    """An unknown reduction is a ValueError; 1-D logits a ShapeError."""
    with pytest.raises(ValueError, match="reduction"):
        cross_entropy(DEV.tensor(X), [0, 1], reduction="max")  # type: ignore[call-overload]
    with pytest.raises(ShapeError, match=r"2-D.*\(3,\)"):
        cross_entropy(DEV.tensor([1.0, 2.0, 3.0]), [0])


def test_binary_shape_and_dtype_errors() -> None:
    """Non-broadcasting shapes raise ShapeError naming both; float32 + float64 a DTypeError."""
    a = DEV.tensor(X)
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(4,\)"):
        a + DEV.tensor(np.zeros(4, np.float32))
    with pytest.raises(DTypeError, match=r"float32.*float64"):
        a * DEV.tensor(X, dtype=np.float64)


def test_matmul_and_reduce_errors() -> None:
    """Mismatched inner dims name both shapes; an out-of-range axis is a ShapeError."""
    with pytest.raises(ShapeError, match=r"\(2, 3\) @ \(2, 3\)"):
        DEV.tensor(X) @ DEV.tensor(X)
    with pytest.raises(ShapeError, match="axis 2"):
        DEV.tensor(X).sum(axis=2)
    with pytest.raises(ShapeError, match="repeated"):
        DEV.tensor(X).mean(axis=(0, -2))


def test_div_by_zero_scalar_gives_inf() -> None:
    """t / 0.0 gives +-inf as in numpy, like t / zeros_tensor does."""
    with np.errstate(divide="ignore"):
        by_tensor = DEV.tensor([1.0, -1.0]) / DEV.tensor([0.0, 0.0])
        assert by_tensor.numpy().tolist() == [np.inf, -np.inf]
        out = DEV.tensor([1.0, -1.0]) / 0.0
    assert out.numpy().tolist() == [np.inf, -np.inf]
