"""The activation family of elementwise unary ops (abs, sqrt, square, pow, cos, tanh, sigmoid,
leaky_relu, gelu, silu, softplus, clamp, nans_to, recip) and their fused kernels:
gradients against finite differences (float64), float32 forward values against numpy,
hand-checked values at kinks, bounds and special inputs, PyTorch's conventions (when
installed), the kernels against their numpy expressions, and argument errors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape.ops
from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor
from gradtape.devices.kernels import activations as ka
from gradtape.devices.kernels import elementwise as ke
from gradtape.tape import NONE_TAPE
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]
Fn = Callable[..., Any]
Gen = Callable[..., Array]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(4321)
N_PAR = ke.PARALLEL_THRESHOLD + 5


def rnd(*shape: int) -> Array:
    """Standard normal float64 samples."""
    return _RNG.standard_normal(shape)


def wide(*shape: int) -> Array:
    """Normal samples with standard deviation 3 (reaching the saturated parts of sigmoid & co)."""
    return 3.0 * _RNG.standard_normal(shape)


def pos(*shape: int) -> Array:
    """Positive samples in [0.5, 2)."""
    return _RNG.uniform(0.5, 2.0, shape)


def away(*shape: int) -> Array:
    """Samples with |x| in [0.2, 1.5) and random sign: no kink at 0 within the step."""
    sign = np.where(_RNG.random(shape) < 0.5, -1.0, 1.0)
    return np.asarray(sign * _RNG.uniform(0.2, 1.5, shape))


def off_bounds(*shape: int) -> Array:
    """Samples at least 0.15 away from clamp's test bounds -0.5 and 0.7, on all three sides."""
    centers = np.array([-1.3, -0.9, -0.2, 0.1, 0.4, 1.0, 1.4])
    return np.asarray(_RNG.choice(centers, shape) + _RNG.uniform(-0.05, 0.05, shape))


def off_threshold(*shape: int) -> Array:
    """Samples in [-1, 0.3] and [0.7, 2]: softplus(beta=2, threshold=1) switches at 0.5."""
    return np.asarray(away(*shape) + 0.5)


def with_nans(*shape: int) -> Array:
    """Normal samples with every third element NaN (the first one included)."""
    x = rnd(*shape)
    x.reshape(-1)[::3] = np.nan
    return x


def nc(arr: Array) -> T:
    """A tensor over the transposed (non-C-contiguous) view of ``arr``."""
    t: T = Tensor(arr.T, DEV)
    assert arr.ndim < 2 or not t.data.flags.c_contiguous
    return t


# name -> (the op applied to a tensor, input sampler)
OPS: dict[str, tuple[Fn, Gen]] = {
    "abs": (lambda a: a.abs(), away),
    "abs-builtin": (lambda a: abs(a), away),
    "sqrt": (lambda a: a.sqrt(), pos),
    "square": (lambda a: a.square(), rnd),
    "pow-2": (lambda a: a**2, rnd),
    "pow-3": (lambda a: a.pow(3), rnd),
    "pow-neg-int": (lambda a: a**-2, away),
    "pow-half": (lambda a: a**0.5, pos),
    "pow-neg-frac": (lambda a: gradtape.ops.pow(a, -1.5), pos),
    "pow-0": (lambda a: a**0, rnd),
    "pow-1": (lambda a: a**1.0, rnd),
    "cos": (lambda a: a.cos(), rnd),
    "tanh": (lambda a: a.tanh(), wide),
    "sigmoid": (lambda a: a.sigmoid(), wide),
    "leaky_relu": (lambda a: a.leaky_relu(), away),
    "leaky_relu-0.2": (lambda a: a.leaky_relu(negative_slope=0.2), away),
    "leaky_relu-neg-slope": (lambda a: a.leaky_relu(-0.5), away),
    "gelu": (lambda a: a.gelu(), wide),
    "gelu-tanh": (lambda a: a.gelu(approximate="tanh"), wide),
    "silu": (lambda a: a.silu(), wide),
    "softplus": (lambda a: a.softplus(), wide),
    "softplus-beta2-thr1": (lambda a: a.softplus(beta=2.0, threshold=1.0), off_threshold),
    "softplus-neg-beta": (lambda a: a.softplus(beta=-1.5), wide),
    "clamp": (lambda a: a.clamp(-0.5, 0.7), off_bounds),
    "clamp-min": (lambda a: a.clamp(min=-0.5), off_bounds),
    "clamp-max": (lambda a: a.clamp(max=0.7), off_bounds),
    "nans_to": (lambda a: a.nans_to(2.5), with_nans),
    "recip": (lambda a: a.recip(), away),
}


def _gradcheck_cases() -> list[Any]:
    cases = []
    for name, (f, gen) in OPS.items():
        table: list[tuple[str, Fn, Any]] = [
            ("2x3", f, gen(2, 3)),
            ("1", f, gen(1)),
            ("1x3x1", f, gen(1, 3, 1)),
            ("rank0", f, gen()),
            ("noncontig", f, nc(gen(3, 2))),
            # the same input twice: the second backward runs the in-place kernel on an owned buffer
            ("twice", lambda a, f=f: f(a) + f(a), gen(2, 3)),
            # add aliases its gradient into a's: the op's backward meets a shared buffer (the
            # outer nans_to keeps NaN inputs of nans_to out of the checked sum)
            ("plus-input", lambda a, f=f: (a + f(a)).nans_to(1.0), gen(2, 3)),
            ("reused", lambda a, f=f: f(a) * f(a).cos(), gen(2, 2)),
        ]
        cases += [pytest.param(fn, [x], id=f"{name}-{cid}") for cid, fn, x in table]
    return cases


@pytest.mark.parametrize(("fn", "inputs"), _gradcheck_cases())
def test_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """The tape's gradient matches central finite differences in float64."""
    assert gradcheck(fn, inputs) is True


def test_gradcheck_sees_transposed_inputs() -> None:
    """The noncontig gradcheck inputs reach the ops as views (gradcheck keeps the layout)."""
    seen: list[bool] = []

    def fn(a: T) -> T:
        seen.append(bool(a.data.flags.c_contiguous))
        out: T = a.tanh()
        return out

    assert gradcheck(fn, [nc(rnd(3, 2))])
    assert seen[0] is False


@pytest.mark.parametrize("view", ["strided_1d", "reversed_1d", "transposed_2d", "sliced_2d"])
@pytest.mark.parametrize("name", list(OPS))
def test_gradient_on_views_equals_gradient_on_copies(name: str, view: str) -> None:
    """An op on a strided/reversed/transposed view, used twice (fresh buffer, then the in-place
    kernel), gets the same float64 gradient as on a contiguous copy. (gradcheck copies its
    inputs, which makes 1-D views contiguous, so views are checked here.)"""
    f, gen = OPS[name]
    base = gen(48)
    data = {
        "strided_1d": base[::2],
        "reversed_1d": base[::-1],
        "transposed_2d": base.reshape(6, 8)[:, ::2].T,
        "sliced_2d": base.reshape(6, 8)[1:5, 2:7],
    }[view]
    assert not data.flags.c_contiguous
    fn = lambda a: (f(a) + f(a) * 0.5).sum()  # noqa: E731
    (g_view,) = _grads(fn, Tensor(data, DEV))
    (g_copy,) = _grads(fn, np.ascontiguousarray(data))
    np.testing.assert_allclose(g_view, g_copy, rtol=1e-13, atol=0)
    assert np.isfinite(g_copy).sum() >= data.size * 2 // 3


# ----- float32 forward against numpy ---------------------------------------------------------


def _f32(gen: Gen, *shape: int) -> Array:
    return np.asarray(gen(*shape), dtype=np.float32)


_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_SQRT2PI = math.sqrt(2 / math.pi)


def np_gelu(x: Array) -> Array:
    return np.asarray(x * 0.5 * _erfc(-x / math.sqrt(2)))


def np_gelu_tanh(x: Array) -> Array:
    return np.asarray(0.5 * x * (1 + np.tanh(_SQRT2PI * (x + 0.044715 * x**3))))


def np_sigmoid(x: Array) -> Array:
    return np.asarray(1 / (1 + np.exp(-x)))


def np_softplus(x: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
    with np.errstate(over="ignore"):
        return np.asarray(np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta))


# name -> (op, float64 numpy reference, sampler)
FORWARD: dict[str, tuple[Fn, Fn, Gen]] = {
    "abs": (lambda a: abs(a), np.abs, rnd),
    "sqrt": (lambda a: a.sqrt(), np.sqrt, pos),
    "square": (lambda a: a.square(), np.square, rnd),
    "pow-3": (lambda a: a**3, lambda x: x**3, rnd),
    "pow-half": (lambda a: a.pow(0.5), np.sqrt, pos),
    "pow-neg-frac": (lambda a: a**-1.5, lambda x: x**-1.5, pos),
    "pow-0": (lambda a: a**0, np.ones_like, rnd),
    "pow-1": (lambda a: a**1, lambda x: x, rnd),
    "cos": (lambda a: a.cos(), np.cos, rnd),
    "tanh": (lambda a: a.tanh(), np.tanh, wide),
    "sigmoid": (lambda a: a.sigmoid(), np_sigmoid, wide),
    "leaky_relu": (lambda a: a.leaky_relu(0.1), lambda x: np.where(x > 0, x, 0.1 * x), rnd),
    "gelu": (lambda a: a.gelu(), np_gelu, wide),
    "gelu-tanh": (lambda a: a.gelu(approximate="tanh"), np_gelu_tanh, wide),
    "silu": (lambda a: a.silu(), lambda x: x * np_sigmoid(x), wide),
    "softplus": (lambda a: a.softplus(), np_softplus, wide),
    "softplus-beta": (lambda a: a.softplus(2.0, 3.0), lambda x: np_softplus(x, 2.0, 3.0), wide),
    "clamp": (lambda a: a.clamp(-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), rnd),
    "nans_to": (lambda a: a.nans_to(-1.0), lambda x: np.where(np.isnan(x), -1.0, x), with_nans),
    "recip": (lambda a: a.recip(), lambda x: 1 / x, away),
}


@pytest.mark.parametrize("layout", ["contig", "noncontig", "rank0", "parallel"])
@pytest.mark.parametrize("name", list(FORWARD))
def test_forward_float32_matches_numpy(name: str, layout: str) -> None:
    """The float32 forward equals the float64 numpy reference to float32 precision and stays
    float32, for views, rank 0 and arrays on the parallel kernels' side of the threshold."""
    f, ref, gen = FORWARD[name]
    if layout == "rank0":
        x = _f32(gen)
    elif layout == "parallel":
        x = _f32(gen, N_PAR)
    else:
        x = _f32(gen, 3, 4)
    t: T = Tensor(np.asarray(x.T.copy()).T, DEV) if layout == "noncontig" else DEV.tensor(x)
    out = f(t)
    want = ref(x.astype(np.float64))
    assert out.dtype == np.float32
    assert out.shape == x.shape
    assert isinstance(out.numpy(), np.ndarray)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


def test_gelu_exact_float64_accuracy() -> None:
    """Exact gelu in float64 agrees with ``x * Phi(x)`` from ``math.erfc`` to ~1e-13 relative,
    also deep in the negative tail where ``1 + erf`` would round to 0."""
    x = np.concatenate([np.linspace(-10, 10, 2001), [-30.0, -20.0, 1e-8, -1e-300, 40.0]])
    out = DEV.tensor(x, dtype=np.float64).gelu().numpy()
    want = np_gelu(x)
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-300)
    assert np.max(np.abs(out - x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))))) < 1e-7
    assert out[-5] < 0 and out[-5] > -1e-190  # -30 * Phi(-30) ~ -1.5e-196, not 0


def test_sigmoid_and_softplus_are_stable() -> None:
    """No overflow at large |x|; tails keep relative precision."""
    x = np.array([-1000.0, -100.0, -20.0, 0.0, 20.0, 1000.0])
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        s = DEV.tensor(x, dtype=np.float64).sigmoid().numpy()
        sp = DEV.tensor(x, dtype=np.float64).softplus(threshold=math.inf).numpy()
    np.testing.assert_allclose(
        s[1:],
        [math.exp(-100) / (1 + math.exp(-100)), 2.0611536181902037e-09, 0.5, 1 - 2.0611536181902037e-09, 1.0],
        rtol=1e-14,
    )
    assert s[0] == 0.0
    np.testing.assert_allclose(
        sp,
        [
            0.0,
            math.log1p(math.exp(-100)),
            math.log1p(math.exp(-20)),
            math.log(2),
            20 + math.log1p(math.exp(-20)),
            1000.0,
        ],
        rtol=1e-14,
    )
    s32 = DEV.tensor(np.array([-20.0, -80.0], np.float32)).sigmoid().numpy()
    np.testing.assert_allclose(s32, [2.0611537e-09, math.exp(-80)], rtol=1e-6)


def test_float32_gradients_stay_float32() -> None:
    """Every op's gradient of a float32 input is float32."""
    x = _f32(pos, 2, 3)
    for name, (f, _) in OPS.items():
        (g,) = _grads(lambda a, f=f: f(a).sum(), x)
        assert g.dtype == np.float32, name
        assert np.isfinite(g).all() or name == "nans_to", name


def test_untraced_input_gives_untraced_output() -> None:
    """An op on a NoneTape tensor records nothing and returns a NoneTape tensor."""
    t = DEV.tensor(_f32(pos, 2, 3))
    for name, (f, _) in OPS.items():
        assert f(t).tape is NONE_TAPE, name


# ----- hand-checked values ---------------------------------------------------------------------


def _grads(fn: Fn, *inputs: Array | T) -> list[Array]:
    """Gradients of the scalar ``fn(*inputs)`` w.r.t. each input (arrays keep their dtype)."""
    xs = [x if isinstance(x, Tensor) else DEV.tensor(x, dtype=np.asarray(x).dtype) for x in inputs]
    store = Gradients.leaky()
    grads = fn(*(x.trace(store) for x in xs)).backward()
    return [np.asarray(grads.get(x).numpy()) for x in xs]


def _value_and_grad(f: Fn, x: list[float] | Array, dtype: Any = np.float64) -> tuple[Array, Array]:
    arr = np.asarray(x, dtype=dtype)
    out = f(DEV.tensor(arr, dtype=dtype)).numpy()
    (g,) = _grads(lambda a: f(a).sum(), arr)
    return out, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_kinks_follow_pytorch(dtype: Any) -> None:
    """abs' gradient is 0 at 0; leaky_relu's is the slope at 0 (x > 0 picks 1)."""
    _, g = _value_and_grad(lambda a: a.abs(), [-2.0, 0.0, -0.0, 3.0], dtype)
    np.testing.assert_array_equal(g, [-1.0, 0.0, 0.0, 1.0])
    y, g = _value_and_grad(lambda a: a.leaky_relu(0.25), [-2.0, 0.0, 1e-30, 3.0], dtype)
    np.testing.assert_array_equal(y, np.array([-0.5, 0.0, 1e-30, 3.0], dtype))
    np.testing.assert_array_equal(g, np.array([0.25, 0.25, 1.0, 1.0], dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_clamp_bounds_have_gradient_one(dtype: Any) -> None:
    """clamp's gradient is 1 on [min, max] with both bounds included, 0 outside and at NaN."""
    x = [-1.0, 0.0, 0.5, 1.0, 2.0, math.nan]
    y, g = _value_and_grad(lambda a: a.clamp(0.0, 1.0), x, dtype)
    np.testing.assert_array_equal(y, np.array([0.0, 0.0, 0.5, 1.0, 1.0, math.nan], dtype))
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    _, g = _value_and_grad(lambda a: a.clamp(min=0.0), [-1.0, 0.0, 5.0], dtype)
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0])
    _, g = _value_and_grad(lambda a: a.clamp(max=1.0), [-1.0, 1.0, 5.0], dtype)
    np.testing.assert_array_equal(g, [1.0, 1.0, 0.0])
    _, g = _value_and_grad(lambda a: a.clamp(0.5, 0.5), [0.4, 0.5, 0.6], dtype)  # min == max
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_nans_to_gradient_is_zero_at_nan(dtype: Any) -> None:
    """nans_to replaces NaN only (infinities pass) and passes no gradient through a NaN."""
    with np.errstate(invalid="ignore"):  # the checked sum adds inf and -inf
        y, g = _value_and_grad(lambda a: a.nans_to(5.0), [math.nan, 1.5, math.inf, -math.inf, 0.0], dtype)
    np.testing.assert_array_equal(y, np.array([5.0, 1.5, math.inf, -math.inf, 0.0], dtype))
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0, 1.0])


def test_softplus_threshold() -> None:
    """Above ``threshold / beta`` softplus is exactly the identity with gradient exactly 1; at
    and below it, log1p(exp(beta x)) / beta with gradient sigmoid(beta x)."""
    y, g = _value_and_grad(lambda a: a.softplus(), [21.0, 20.0, 0.0, -30.0])
    assert y[0] == 21.0 and g[0] == 1.0
    sig20 = 1 / (1 + math.exp(-20))
    np.testing.assert_allclose(y[1:], [math.log1p(math.exp(20)), math.log(2), math.log1p(math.exp(-30))], rtol=1e-14)
    np.testing.assert_allclose(g[1:], [sig20, 0.5, math.exp(-30) / (1 + math.exp(-30))], rtol=1e-14)
    assert g[1] < 1.0
    y, g = _value_and_grad(lambda a: a.softplus(beta=2.0, threshold=4.0), [2.5, 2.0, -1.0])
    assert y[0] == 2.5 and g[0] == 1.0
    np.testing.assert_allclose(y[1:], [math.log1p(math.exp(4)) / 2, math.log1p(math.exp(-2)) / 2], rtol=1e-14)
    np.testing.assert_allclose(g[1:], [1 / (1 + math.exp(-4)), 1 / (1 + math.exp(2))], rtol=1e-14)


def test_derivatives_at_special_points() -> None:
    """Known derivative values (float64)."""
    cases: list[tuple[Fn, list[float], list[float]]] = [
        (lambda a: a.sqrt(), [4.0, 0.25, 0.0], [0.25, 1.0, math.inf]),
        (lambda a: a.recip(), [2.0, -0.5], [-0.25, -4.0]),
        (lambda a: a.square(), [3.0, -0.5], [6.0, -1.0]),
        (lambda a: a**3, [2.0, -1.0], [12.0, 3.0]),
        (lambda a: a**0.5, [4.0], [0.25]),
        (lambda a: a**-1, [2.0], [-0.25]),
        (lambda a: a**0, [0.0, math.nan, 3.0], [0.0, 0.0, 0.0]),
        (lambda a: a**1, [math.inf, 2.0], [1.0, 1.0]),
        (lambda a: a.cos(), [0.0, math.pi / 2], [0.0, -1.0]),
        (lambda a: a.tanh(), [0.0], [1.0]),
        (lambda a: a.sigmoid(), [0.0], [0.25]),
        (
            lambda a: a.gelu(),
            [0.0, 1.0],
            [0.5, 0.5 * math.erfc(-1 / math.sqrt(2)) + math.exp(-0.5) / math.sqrt(2 * math.pi)],
        ),
        (lambda a: a.gelu(approximate="tanh"), [0.0], [0.5]),
        (lambda a: a.silu(), [0.0], [0.5]),
        (lambda a: a.softplus(), [0.0], [0.5]),
    ]
    for f, x, want in cases:
        with np.errstate(divide="ignore"):
            _, g = _value_and_grad(f, x)
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)


def test_gelu_tanh_is_close_to_exact() -> None:
    """The tanh approximation stays within 1e-3 of the exact gelu."""
    x = DEV.tensor(np.linspace(-6, 6, 241), dtype=np.float64)
    assert np.max(np.abs(x.gelu(approximate="tanh").numpy() - x.gelu().numpy())) < 1e-3


def test_operators_and_function_forms() -> None:
    """``abs(t)``, ``t ** p``, the methods and the ``gradtape.ops`` functions agree."""
    x = DEV.tensor(_f32(away, 2, 3))
    np.testing.assert_array_equal(abs(x).numpy(), x.abs().numpy())
    np.testing.assert_array_equal((x**2).numpy(), gradtape.ops.square(x).numpy())
    np.testing.assert_array_equal((x**3).numpy(), x.pow(3.0).numpy())
    np.testing.assert_array_equal(x.recip().numpy(), (1.0 / x).numpy())
    np.testing.assert_array_equal(gradtape.ops.gelu(x, approximate="tanh").numpy(), x.gelu("tanh").numpy())
    for name in ("abs", "sqrt", "square", "pow", "cos", "tanh", "sigmoid", "leaky_relu", "gelu", "silu"):
        assert name in gradtape.ops.__all__ and hasattr(Tensor, name)
    for name in ("softplus", "clamp", "nans_to", "recip", "exp", "relu", "sin"):
        assert name in gradtape.ops.__all__ and hasattr(Tensor, name)


@pytest.mark.parametrize(
    ("f", "arg"),
    [
        (lambda a, v: a**v, np.float64(2.0)),
        (lambda a, v: a.pow(v), np.float64(0.5)),
        (lambda a, v: a.clamp(v, np.float64(1.0)), np.float64(0.1)),
        (lambda a, v: a.leaky_relu(v), np.float64(0.1)),
        (lambda a, v: a.softplus(v, np.float64(5.0)), np.float64(2.0)),
        (lambda a, v: a.nans_to(v), np.float64(1.0)),
        (lambda a, v: a.clamp(v, 2), 0),
        (lambda a, v: a**v, 3),
        (lambda a, v: a**v, np.int64(3)),
    ],
)
def test_numpy_scalar_arguments_keep_float32(f: Fn, arg: Any) -> None:
    """np.float64 / int scalar arguments do not promote a float32 tensor."""
    out = f(DEV.tensor(_f32(pos, 2, 3)).leaky_trace(), arg)
    assert out.dtype == np.float32
    (g,) = _grads(lambda a: f(a, arg).sum(), _f32(pos, 2, 3))
    assert g.dtype == np.float32


# ----- PyTorch's conventions -------------------------------------------------------------------


def _torch_ops(torch: Any) -> dict[str, tuple[Fn, Fn]]:
    F = torch.nn.functional
    return {
        "abs": (lambda a: a.abs(), torch.abs),
        "sqrt": (lambda a: a.sqrt(), torch.sqrt),
        "square": (lambda a: a.square(), torch.square),
        "pow-3": (lambda a: a**3, lambda t: t**3),
        "pow-0": (lambda a: a**0, lambda t: t**0),
        "pow-half": (lambda a: a**0.5, lambda t: t**0.5),
        "cos": (lambda a: a.cos(), torch.cos),
        "tanh": (lambda a: a.tanh(), torch.tanh),
        "sigmoid": (lambda a: a.sigmoid(), torch.sigmoid),
        "leaky_relu": (lambda a: a.leaky_relu(0.1), lambda t: F.leaky_relu(t, 0.1)),
        "gelu": (lambda a: a.gelu(), F.gelu),
        "gelu-tanh": (lambda a: a.gelu(approximate="tanh"), lambda t: F.gelu(t, approximate="tanh")),
        "silu": (lambda a: a.silu(), F.silu),
        "softplus": (lambda a: a.softplus(), F.softplus),
        "softplus-beta": (lambda a: a.softplus(2.0, 3.0), lambda t: F.softplus(t, 2.0, 3.0)),
        "clamp": (lambda a: a.clamp(-0.5, 1.0), lambda t: t.clamp(-0.5, 1.0)),
        "clamp-min": (lambda a: a.clamp(min=0.0), lambda t: t.clamp(min=0.0)),
        "nans_to": (lambda a: a.nans_to(3.0), lambda t: torch.nan_to_num(t, 3.0, math.inf, -math.inf)),
        "recip": (lambda a: a.recip(), torch.reciprocal),
    }


_TORCH_NAMES = [
    "abs",
    "sqrt",
    "square",
    "pow-3",
    "pow-0",
    "pow-half",
    "cos",
    "tanh",
    "sigmoid",
    "leaky_relu",
    "gelu",
    "gelu-tanh",
    "silu",
    "softplus",
    "softplus-beta",
    "clamp",
    "clamp-min",
    "nans_to",
    "recip",
]
# kinks, bounds, thresholds, zeros, tails
_SPECIAL = [-40.0, -20.0, -3.0, -1.0, -0.5, 0.0, 1e-8, 0.25, 0.5, 1.0, 1.5, 2.0, 10.0, 20.0, 21.0, 50.0]


@pytest.mark.parametrize("name", _TORCH_NAMES)
def test_matches_torch_at_special_points(name: str) -> None:
    """Values and gradients equal PyTorch's (float64) at kinks, bounds, thresholds and tails."""
    torch = pytest.importorskip("torch")
    ours, theirs = _torch_ops(torch)[name]
    x = np.array(_SPECIAL + ([math.nan, -math.nan] if name == "nans_to" else []))
    if name in ("sqrt", "pow-half"):
        x = np.abs(x)
    if name == "recip":
        x = x[x != 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        y, g = _value_and_grad(ours, x)
    tx = torch.tensor(x, requires_grad=True)
    ty = theirs(tx)
    ty.sum().backward()
    # atol: PyTorch's gelu rounds x * Phi(x) to 0 below x ~ -8 (1 + erf cancels), ours keeps
    # the tiny value; rtol of the gradient: formulas like 1 - tanh(x)**2 near saturation
    # amplify 1-ulp differences of the transcendental in the forward
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-12, atol=1e-60)
    np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-7, atol=1e-60)


def test_nans_to_keeps_the_gradient_of_infinities() -> None:
    """Unlike ``torch.nan_to_num`` (whose gradient is 0 at +-inf, which it replaces by default),
    ``nans_to`` passes infinities through unchanged, so their gradient is 1 (as dfdx)."""
    with np.errstate(invalid="ignore"):  # the checked sum adds inf and -inf
        y, g = _value_and_grad(lambda a: a.nans_to(0.0), [math.inf, -math.inf, math.nan])
    assert y.tolist()[:2] == [math.inf, -math.inf] and y[2] == 0.0
    assert g.tolist() == [1.0, 1.0, 0.0]


# ----- the fused kernels against their numpy expressions --------------------------------------


def _dt(o: Array) -> Any:
    return o.dtype.type


# name -> (array operands besides out, call, numpy expression of the new out, operand sampler)
KERNELS: dict[str, tuple[int, Fn, Fn, str]] = {
    "addmul_scaled": (
        2,
        lambda o, x: ka.addmul_scaled(o, -0.75, x[0], x[1]),
        lambda o, x: o + _dt(o)(-0.75) * x[0] * x[1],
        "any",
    ),
    "abs_backward": (2, lambda o, x: ka.abs_backward(o, x[0], x[1]), lambda o, x: o + np.sign(x[0]) * x[1], "any"),
    "sqrt_backward": (2, lambda o, x: ka.sqrt_backward(o, x[0], x[1]), lambda o, x: o + x[1] / (2 * x[0]), "pos"),
    "square_backward": (
        2,
        lambda o, x: ka.square_backward(o, x[0], x[1]),
        lambda o, x: o + _dt(o)(2) * x[0] * x[1],
        "any",
    ),
    "pow_backward": (
        2,
        lambda o, x: ka.pow_backward(o, x[0], x[1], 2.5),
        lambda o, x: o + _dt(o)(2.5) * np.power(x[0], 1.5) * x[1],
        "pos",
    ),
    "cos_backward": (
        2,
        lambda o, x: ka.cos_backward(o, x[0], x[1]),
        lambda o, x: o + _dt(o)(-1) * np.sin(x[0]) * x[1],
        "any",
    ),
    "tanh_backward": (
        2,
        lambda o, x: ka.tanh_backward(o, x[0], x[1]),
        lambda o, x: o + (1 - x[0] * x[0]) * x[1],
        "any",
    ),
    "sigmoid_backward": (
        2,
        lambda o, x: ka.sigmoid_backward(o, x[0], x[1]),
        lambda o, x: o + x[0] * (1 - x[0]) * x[1],
        "any",
    ),
    "recip_backward": (2, lambda o, x: ka.recip_backward(o, x[0], x[1]), lambda o, x: o - x[0] * x[0] * x[1], "any"),
    "nans_to_backward": (
        2,
        lambda o, x: ka.nans_to_backward(o, x[0], x[1]),
        lambda o, x: o + np.where(np.isnan(x[0]), 0, x[1]),
        "nan",
    ),
    "leaky_relu_backward": (
        2,
        lambda o, x: ka.leaky_relu_backward(o, x[0], x[1], 0.1),
        lambda o, x: o + np.where(x[0] > 0, x[1], _dt(o)(0.1) * x[1]),
        "any",
    ),
    "clamp_backward": (
        2,
        lambda o, x: ka.clamp_backward(o, x[0], x[1], -0.8, 1.2),
        lambda o, x: o + np.where((x[0] >= _dt(o)(-0.8)) & (x[0] <= _dt(o)(1.2)), x[1], 0),
        "any",
    ),
    "silu_backward": (
        3,
        lambda o, x: ka.silu_backward(o, x[0], x[1], x[2]),
        lambda o, x: o + x[1] * (1 + x[0] * (1 - x[1])) * x[2],
        "any",
    ),
    "gelu_backward": (
        3,
        lambda o, x: ka.gelu_backward(o, x[0], x[1], x[2]),
        lambda o, x: o + (x[1] + x[0] * np.exp(x[0] * x[0] * -0.5) * _dt(o)(ka.INV_SQRT_2PI)) * x[2],
        "any",
    ),
    "gelu_tanh_backward": (
        3,
        lambda o, x: ka.gelu_tanh_backward(o, x[0], x[1], x[2]),
        lambda o, x: (
            o
            + (
                x[1]
                + 2 * x[0] * x[1] * (1 - x[1]) * _dt(o)(ka.SQRT_2_OVER_PI) * (1 + _dt(o)(3 * 0.044715) * x[0] * x[0])
            )
            * x[2]
        ),
        "any",
    ),
}


def _vals(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, kind: str) -> Array:
    """Values in +-[0.5, 2) ("any"), [0.5, 2) ("pos"), or "any" with every fifth one NaN."""
    mag = rng.uniform(0.5, 2.0, shape)
    if kind == "pos":
        return np.asarray(mag, dtype)
    x = np.asarray(mag * np.where(rng.random(shape) < 0.4, -1.0, 1.0), dtype)
    if kind == "nan":
        x.reshape(-1)[::5] = np.nan
    return x


LAYOUTS = [
    "1d",
    "2d",
    "rank0",
    "strided_in",
    "strided_out",
    "transposed",
    "broadcast",
    "parallel_1d",
    "parallel_2d",
    "parallel_strided",
]


def _layout(name: str, dtype: Any, arity: int, kind: str) -> tuple[Array, list[Array]]:
    """``(out, operands)``: the first operand is sampled as ``kind``, the rest as "any"."""
    rng = np.random.default_rng(11)

    def ops(make: Callable[[str], Array]) -> list[Array]:
        return [make(kind if j == 0 else "any") for j in range(arity)]

    def v(k: str, *shape: int) -> Array:
        return _vals(rng, shape, dtype, k)

    if name == "1d":
        return v("any", 7), ops(lambda k: v(k, 7))
    if name == "2d":
        return v("any", 3, 4), ops(lambda k: v(k, 3, 4))
    if name == "rank0":
        return v("any"), ops(lambda k: v(k))
    if name == "strided_in":
        return v("any", 5), ops(lambda k: v(k, 15)[::3])
    if name == "strided_out":
        return v("any", 12)[1::2], ops(lambda k: v(k, 6))
    if name == "transposed":
        return v("any", 3, 4), ops(lambda k: v(k, 4, 3).T)
    if name == "broadcast":
        return v("any", 3, 4), ops(lambda k: v(k, 4))
    if name == "parallel_1d":
        return v("any", N_PAR), ops(lambda k: v(k, N_PAR))
    if name == "parallel_2d":
        rows = ke.PARALLEL_THRESHOLD // 256 + 1
        return v("any", rows, 256), ops(lambda k: v(k, rows, 256))
    if name == "parallel_strided":
        return v("any", N_PAR), ops(lambda k: v(k, 2 * N_PAR)[::2])
    raise AssertionError(name)


def _only_path(monkeypatch: pytest.MonkeyPatch, parallel: bool) -> None:
    """Make the compiled kernels of the path that must not run raise."""

    def boom(*args: Any) -> None:
        raise AssertionError("wrong serial/parallel kernel chosen")

    unwanted = "_serial" if parallel else "_parallel"
    for name in dir(ka):
        if name.startswith("_") and name.endswith(unwanted):
            monkeypatch.setattr(ka, name, boom)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_kernel_matches_numpy(kernel: str, layout: str, dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each backward kernel updates ``out`` in place as its numpy expression does, in ``out``'s
    dtype, on the serial path below PARALLEL_THRESHOLD and the parallel one above it (or on
    the numpy fallback for transposed and broadcast operands)."""
    arity, call, expr, kind = KERNELS[kernel]
    out, ins = _layout(layout, dtype, arity, kind)
    _only_path(monkeypatch, parallel=layout.startswith("parallel"))
    want = np.asarray(expr(out.copy(), ins), dtype=dtype)
    call(out, ins)
    assert out.dtype == dtype
    rtol, atol = (1e-6, 1e-6) if dtype is np.float32 else (1e-13, 1e-14)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=atol)


_FORWARD_KERNELS: dict[str, tuple[Fn, Fn]] = {
    "sigmoid": (ka.sigmoid, np_sigmoid),
    "gelu": (lambda x: ka.gelu(x)[0], np_gelu),
    "gelu_cdf": (lambda x: ka.gelu(x)[1], lambda x: 0.5 * _erfc(-x / math.sqrt(2))),
    "gelu_tanh": (lambda x: ka.gelu_tanh(x)[0], np_gelu_tanh),
    "gelu_tanh_s": (lambda x: ka.gelu_tanh(x)[1], lambda x: (1 + np.tanh(_SQRT2PI * (x + 0.044715 * x**3))) / 2),
    "softplus": (lambda x: ka.softplus(x, 1.5, 2.0)[0], lambda x: np_softplus(x, 1.5, 2.0)),
    "softplus_grad": (
        lambda x: ka.softplus(x, 1.5, 2.0)[1],
        lambda x: np.where(1.5 * x > 2.0, 1.0, np_sigmoid(1.5 * x)),
    ),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("layout", ["1d", "2d", "rank0", "strided_in", "transposed", "parallel_1d", "parallel_strided"])
@pytest.mark.parametrize("kernel", list(_FORWARD_KERNELS))
def test_forward_kernel_matches_numpy(kernel: str, layout: str, dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The forward wrappers return new C-contiguous arrays of the input's shape and dtype equal
    to the float64 numpy reference (to the dtype's precision), on both paths."""
    f, ref = _FORWARD_KERNELS[kernel]
    _, (x,) = _layout(layout, dtype, 1, "any")
    x = x * 3  # reach the tails and softplus' threshold
    _only_path(monkeypatch, parallel=layout.startswith("parallel"))
    before = x.copy()
    out = f(x)
    assert out.dtype == dtype and out.shape == x.shape and out.flags.c_contiguous
    np.testing.assert_array_equal(x, before)  # the input is not written
    # float32: exp(-|z|) of a z rounded in float32 is off by up to |z| * 2**-24 relative
    rtol, atol = (1e-5, 1e-7) if dtype is np.float32 else (1e-13, 1e-15)
    np.testing.assert_allclose(out, ref(x.astype(np.float64)), rtol=rtol, atol=atol)


def test_kernels_on_known_values() -> None:
    """Hand-computed results on tiny float32 inputs."""
    out = np.zeros(4, np.float32)
    ka.abs_backward(out, np.array([-2.0, 0.0, 3.0, -0.0], np.float32), np.full(4, 2.0, np.float32))
    assert out.tolist() == [-2.0, 0.0, 2.0, 0.0]
    ka.clamp_backward(out, np.array([0.0, 1.0, 1.5, -1.0], np.float32), np.ones(4, np.float32), 0.0, 1.0)
    assert out.tolist() == [-1.0, 1.0, 2.0, 0.0]
    ka.leaky_relu_backward(out, np.array([0.0, 1.0, -1.0, 2.0], np.float32), np.full(4, 4.0, np.float32), 0.25)
    assert out.tolist() == [0.0, 5.0, 3.0, 4.0]
    ka.nans_to_backward(out, np.array([np.nan, 1.0, np.inf, np.nan], np.float32), np.ones(4, np.float32))
    assert out.tolist() == [0.0, 6.0, 4.0, 4.0]
    ka.recip_backward(out, np.array([2.0, 1.0, 0.5, 0.0], np.float32), np.ones(4, np.float32))
    assert out.tolist() == [-4.0, 5.0, 3.75, 4.0]


def test_abs_backward_nan_input_gives_nan() -> None:
    """sign(NaN) * g is NaN on the kernel path too."""
    for n in (3, N_PAR):
        out = np.zeros(n)
        x = np.ones(n)
        x[1] = np.nan
        ka.abs_backward(out, x, np.ones(n))
        assert np.isnan(out[1]) and out[0] == 1.0


# ----- errors ----------------------------------------------------------------------------------


X32 = np.array([[-1.5, 2.0, 0.5], [3.0, -0.25, -2.0]], dtype=np.float32)


def test_clamp_errors_name_the_op() -> None:
    """min > max, no bound, a NaN bound: ValueError; a non-number bound: TypeError."""
    a = DEV.tensor(X32)
    with pytest.raises(ValueError, match=r"clamp: min \(1.0\) is greater than max \(0.0\)"):
        a.clamp(1.0, 0.0)
    with pytest.raises(ValueError, match="clamp: give at least one of min and max"):
        a.clamp()
    with pytest.raises(ValueError, match="clamp: bounds must not be NaN"):
        a.clamp(min=math.nan)
    with pytest.raises(TypeError, match=r"clamp: max must be a real number.*str"):
        a.clamp(0.0, "1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "p", ["2", None, [2.0], 1 + 2j, np.complex128(1 + 2j), np.array([2.0]), DEV.tensor([2.0])], ids=repr
)
def test_unary_pow_rejects_a_non_number_exponent(p: Any) -> None:
    """The scalar-exponent op raises TypeError naming pow for anything but a real number
    (tensors included: ``t ** tensor`` is the binary family's ``pow``)."""
    a = DEV.tensor(X32)
    with pytest.raises(TypeError, match=r"pow: exponent p must be a real number \(int or float\), got"):
        gradtape.ops.unary.pow(a, p)


@pytest.mark.parametrize("p", ["2", None, [2.0], 1 + 2j, np.array([2.0])], ids=repr)
def test_pow_operator_rejects_a_non_number_exponent(p: Any) -> None:
    """``t ** p`` and ``t.pow(p)`` with neither a number nor a tensor raise TypeError naming pow."""
    a = DEV.tensor(X32)
    with pytest.raises(TypeError, match="pow: "):
        a.pow(p)
    with pytest.raises(TypeError, match="pow: "):
        a**p


def test_number_exponent_goes_to_the_fused_op() -> None:
    """``t ** 3`` records the scalar-exponent op: its gradient is 3 x**2 from the fused kernel."""
    x = _f32(pos, 2, 3)
    (g,) = _grads(lambda a: (a**3).sum() + (a**3).sum(), x)
    np.testing.assert_allclose(g, 6 * x.astype(np.float64) ** 2, rtol=1e-6)


def test_other_argument_errors_name_the_op() -> None:
    """gelu's approximate, leaky_relu's slope, softplus' beta/threshold, nans_to's value."""
    a = DEV.tensor(X32)
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'erf'"):
        a.gelu(approximate="erf")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="leaky_relu: negative_slope must be a real number"):
        a.leaky_relu("0.1")  # type: ignore[arg-type]
    for beta in (0.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="softplus: beta must be a finite nonzero number"):
            a.softplus(beta=beta)
    with pytest.raises(ValueError, match="softplus: threshold is NaN"):
        a.softplus(threshold=math.nan)
    with pytest.raises(TypeError, match="softplus: beta must be a real number"):
        a.softplus(beta=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nans_to: value must be a real number"):
        a.nans_to("0")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call",
    [
        lambda o, x, g: ka.tanh_backward(o, x, g),
        lambda o, x, g: ka.clamp_backward(o, x, g, 0.0, 1.0),
        lambda o, x, g: ka.leaky_relu_backward(o, x, g, 0.1),
        lambda o, x, g: ka.silu_backward(o, x, x, g),
        lambda o, x, g: ka.gelu_backward(o, x, x, g),
        lambda o, x, g: ka.pow_backward(o, x, g, 3.0),
    ],
    ids=["tanh", "clamp", "leaky_relu", "silu", "gelu", "pow"],
)
def test_kernel_wrappers_validate(call: Fn) -> None:
    """Wrong shapes, mixed dtypes and a read-only out raise before any kernel runs."""
    out = np.zeros((2, 3), np.float32)
    good = np.ones((2, 3), np.float32)
    with pytest.raises(ShapeError, match=r"_backward: operands of shapes .*\(4,\)"):
        call(out, good, np.ones(4, np.float32))
    with pytest.raises(DTypeError, match=r"float64.*float32"):
        call(out, good, np.ones((2, 3), np.float64))
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        call(ro, good, good)
    assert not out.any()


def test_forward_kernels_reject_integer_input() -> None:
    """The forward wrappers take float32/float64 only and say which op got what."""
    for f, op in ((ka.sigmoid, "sigmoid"), (ka.gelu, "gelu"), (ka.gelu_tanh, "gelu_tanh")):
        with pytest.raises(DTypeError, match=rf"{op}: input has dtype int64"):
            f(np.arange(3))
    with pytest.raises(DTypeError, match="softplus: input has dtype int64"):
        ka.softplus(np.arange(3), 1.0, 20.0)


def test_existing_ops_unchanged_next_to_new_ones() -> None:
    """The original unary ops still differentiate, chained with the new ones."""
    assert gradcheck(lambda a: a.relu().exp().log().sin().tanh().sigmoid() + (-a).square(), [away(2, 3)])
