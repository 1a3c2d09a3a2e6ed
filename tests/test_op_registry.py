"""Every declared elementwise op (``gradtape.ops.declare.ELEMENTWISE``), from its one row in
:data:`TABLE`: gradcheck in float64, PyTorch's values and gradients in float32 and float64 (the
user's program: ``requires_grad=True``, ``loss.backward()``, ``.grad``), second derivatives
against ``torch.func.hessian``, the fused kernel (where one is declared) against the declared
derivative, float32 kept float32, and bad input named. Adding an op is its declaration in
``ops/unary.py`` plus one row here; a declaration without a row fails
:func:`test_every_declared_op_has_a_row`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, DTypeError
from gradtape.ops.declare import ELEMENTWISE, NUMPY, OPS
from gradtape.tape import NONE_TAPE
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(sum(map(ord, name)))


def normal(r: np.random.Generator, n: int) -> Array:
    return r.standard_normal(n)


def wide(r: np.random.Generator, n: int) -> Array:
    return 3.0 * r.standard_normal(n)


def positive(r: np.random.Generator, n: int) -> Array:
    return r.uniform(0.5, 2.0, n)


def unit(r: np.random.Generator, n: int) -> Array:
    """Inside (-1, 1), away from the ends (asin, acos)."""
    return r.uniform(-0.9, 0.9, n)


def away(r: np.random.Generator, n: int) -> Array:
    """|x| in [0.2, 1.5) with random sign: no kink at 0 within a finite-difference step."""
    return np.where(r.random(n) < 0.5, -1.0, 1.0) * r.uniform(0.2, 1.5, n)


def around(*kinks: float, spread: float = 2.0) -> Callable[[np.random.Generator, int], Array]:
    """Samples on every side of ``kinks``, at least 0.1 away from each."""

    def sample(r: np.random.Generator, n: int) -> Array:
        lo, hi = min(kinks) - spread, max(kinks) + spread
        x = r.uniform(lo, hi, 4 * n)
        far = np.min(np.abs(x[:, None] - np.asarray(kinks)[None, :]), axis=1) > 0.1
        return np.asarray(x[far][:n])

    return sample


@dataclass(frozen=True)
class Row:
    """One declared op under test: its parameters, PyTorch's spelling, and an input sampler."""

    torch: Callable[..., Any]
    sample: Callable[[np.random.Generator, int], Array]
    params: tuple[float, ...] = ()
    f64_rtol: float = 1e-12
    """float64 tolerance against PyTorch (looser where PyTorch's own constant is a float32 one)."""
    piecewise_linear: bool = False
    """PyTorch cannot differentiate the op's backward (hardsigmoid): its Hessian is checked as 0."""


def _t(name: str) -> Callable[..., Any]:
    """``torch.<name>`` or ``torch.nn.functional.<name>``, looked up when the test runs."""

    def call(t: Any, *args: Any, **kwargs: Any) -> Any:
        import torch

        fn = getattr(torch, name, None) or getattr(torch.nn.functional, name)
        return fn(t, *args, **kwargs)

    return call


TABLE: dict[str, Row] = {
    "exp": Row(_t("exp"), normal),
    "log": Row(_t("log"), positive),
    "expm1": Row(_t("expm1"), normal),
    "log1p": Row(_t("log1p"), lambda r, n: r.uniform(-0.7, 2.0, n)),
    "exp2": Row(_t("exp2"), normal),
    "log2": Row(_t("log2"), positive),
    "log10": Row(_t("log10"), positive),
    "rsqrt": Row(_t("rsqrt"), positive),
    "_nan_to_num": Row(lambda t, n, p, m: _t("nan_to_num")(t, nan=n, posinf=p, neginf=m), normal, (2.5, 7.0, -7.0)),
    "erf": Row(_t("erf"), normal),
    "erfc": Row(_t("erfc"), normal),
    "sqrt": Row(_t("sqrt"), positive),
    "square": Row(_t("square"), normal),
    "recip": Row(_t("reciprocal"), away),
    "_pow": Row(lambda t, p: t**p, positive, (3.3,)),
    "sin": Row(_t("sin"), normal),
    "cos": Row(_t("cos"), normal),
    "tan": Row(_t("tan"), lambda r, n: r.uniform(-1.2, 1.2, n)),
    "asin": Row(_t("asin"), unit),
    "acos": Row(_t("acos"), unit),
    "atan": Row(_t("atan"), wide),
    "sinh": Row(_t("sinh"), normal),
    "cosh": Row(_t("cosh"), normal),
    "tanh": Row(_t("tanh"), wide),
    "relu": Row(_t("relu"), away),
    "leaky_relu": Row(lambda t, s: _t("leaky_relu")(t, negative_slope=s), away, (0.2,)),
    "sigmoid": Row(_t("sigmoid"), wide),
    "logsigmoid": Row(_t("logsigmoid"), wide),
    "silu": Row(_t("silu"), wide),
    "mish": Row(_t("mish"), wide),
    "elu": Row(lambda t, a: _t("elu")(t, alpha=a), away, (1.3,)),
    "selu": Row(_t("selu"), away),
    "hardswish": Row(_t("hardswish"), around(-3.0, 3.0)),
    # PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32, also in float64
    "hardsigmoid": Row(_t("hardsigmoid"), around(-3.0, 3.0), f64_rtol=1e-7, piecewise_linear=True),
    "hardtanh": Row(_t("hardtanh"), around(-0.5, 0.8), (-0.5, 0.8), piecewise_linear=True),
    "relu6": Row(
        _t("relu6"), lambda r, n: r.uniform(0.1, 5.9, n) * np.where(r.random(n) < 0.8, 1.0, -1.0), piecewise_linear=True
    ),
    "softsign": Row(_t("softsign"), away),
    "tanhshrink": Row(_t("tanhshrink"), normal),
    "softshrink": Row(_t("softshrink"), around(-0.4, 0.4), (0.4,), piecewise_linear=True),
    "hardshrink": Row(_t("hardshrink"), around(-0.4, 0.4), (0.4,), piecewise_linear=True),
    "threshold": Row(_t("threshold"), around(0.1), (0.1, 2.5), piecewise_linear=True),
    "celu": Row(_t("celu"), away, (0.5,)),  # PyTorch rounds alpha to float32: 0.5 is exact there
    "_gelu": Row(_t("gelu"), wide),
    "_gelu_tanh": Row(lambda t: _t("gelu")(t, approximate="tanh"), wide),
    "softplus": Row(lambda t, b, th: _t("softplus")(t, beta=b, threshold=th), around(2.0), (1.5, 3.0)),
    "abs": Row(_t("abs"), away),
    "_clamp": Row(lambda t, lo, hi: _t("clamp")(t, lo, hi), around(-0.5, 0.7), (-0.5, 0.7)),
    "nans_to": Row(lambda t, v: _t("nan_to_num")(t, nan=v), normal, (2.5,)),
}

NAMES = list(ELEMENTWISE)


def _apply(name: str, x: Any) -> Any:
    return OPS[name](x, *TABLE[name].params)


def test_every_declared_op_has_a_row() -> None:
    assert set(TABLE) == set(ELEMENTWISE), "add a row to TABLE for each declared op (and none for another)"


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_float64(name: str) -> None:
    x = TABLE[name].sample(_rng(name), 7).reshape(7)
    assert gradcheck(lambda a: _apply(name, a), [x.reshape(7)])
    assert gradcheck(lambda a: _apply(name, a), [x[:6].reshape(2, 3)])  # rank 2 too


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", NAMES)
def test_values_and_gradients_match_pytorch(name: str, dtype: Any) -> None:
    """The user's program in both spellings, from the same data; float32 stays float32."""
    torch = pytest.importorskip("torch")
    row = TABLE[name]
    r = _rng(name)
    data = row.sample(r, 40).astype(dtype)
    w = r.standard_normal(40).astype(dtype)

    x = DEV.tensor(data, requires_grad=True)
    loss = (_apply(name, x) * DEV.tensor(w)).sum()
    loss.backward()
    assert x.grad is not None
    assert _apply(name, DEV.tensor(data)).dtype == dtype and x.grad.dtype == dtype

    xt = torch.tensor(data, requires_grad=True)
    lt = (row.torch(xt, *row.params) * torch.tensor(w)).sum()
    lt.backward()
    assert xt.grad is not None

    tol: dict[str, Any] = {"rtol": 2e-5, "atol": 2e-6} if dtype == np.float32 else {"rtol": row.f64_rtol, "atol": 1e-13}
    want = row.torch(torch.tensor(data), *row.params).numpy()
    np.testing.assert_allclose(_apply(name, DEV.tensor(data)).numpy(), want, **tol)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **tol)


@pytest.mark.parametrize("name", NAMES)
def test_second_rule_matches_torch_hessian(name: str) -> None:
    """The differentiable rule (the same derivative on tensors) against ``torch.func.hessian``."""
    torch = pytest.importorskip("torch")
    row = TABLE[name]
    r = _rng(name)
    data = row.sample(r, 5)
    w = r.standard_normal(5)
    wt = DEV.tensor(w)
    h = gradtape.functional.hessian(lambda a: (_apply(name, a) * wt).sum(), DEV.tensor(data))

    def f(t: Any) -> Any:
        return (row.torch(t, *row.params) * torch.tensor(w)).sum()

    want: Array = np.zeros((5, 5)) if row.piecewise_linear else torch.func.hessian(f)(torch.tensor(data)).numpy()
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-10, atol=1e-12)


def _kernel_cases() -> list[Any]:
    return [
        pytest.param(name, dtype, n, id=f"{name}-{np.dtype(dtype).name}-{n}")
        for name, decl in ELEMENTWISE.items()
        if decl.kernel is not None
        for dtype in (np.float32, np.float64)
        for n in (13, 70_001)  # a serial and a parallel kernel
    ]


@pytest.mark.parametrize(("name", "dtype", "n"), _kernel_cases())
def test_fused_kernel_matches_the_declared_derivative(name: str, dtype: Any, n: int) -> None:
    """``kernel(out, s, g, ...)`` adds exactly ``derivative(numpy, s) * g`` (and ``fresh`` returns it)."""
    decl = ELEMENTWISE[name]
    assert decl.kernel is not None
    r = _rng(name)
    x = TABLE[name].sample(r, n).astype(dtype)
    params = TABLE[name].params
    res = decl.forward(x, *params)
    y, extra = (res[0], (res[1],)) if decl.aux else (res, ())
    s = x if decl.uses == "x" else y
    g = r.standard_normal(n).astype(dtype)
    base = r.standard_normal(n).astype(dtype)
    want = base + np.asarray(decl.derivative(NUMPY, s, *params), dtype) * g
    out = base.copy()
    decl.kernel(out, s, g, *params, *extra)
    tol: dict[str, Any] = {"rtol": 3e-6, "atol": 3e-6} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-13}
    np.testing.assert_allclose(out, want, **tol)
    if decl.fresh is not None:
        np.testing.assert_allclose(decl.fresh(s, g, *params, *extra), want - base, **tol)


@pytest.mark.parametrize(
    ("name", "dtype", "n"),
    [
        (name, dtype, n)
        for name, decl in ELEMENTWISE.items()
        if decl.into is not None
        for dtype in (np.float32, np.float64)
        for n in (13, 70_001, 1 << 21)  # numpy's path, the serial and the parallel kernel
    ],
)
def test_into_form_gives_the_forward_bit_for_bit(name: str, dtype: Any, n: int) -> None:
    """``into(out, x, ...)`` (what a gradtape.capture replay runs) writes exactly the forward's
    values into ``out``, NaN, infinities and signed zeros included."""
    decl = ELEMENTWISE[name]
    assert decl.into is not None
    x = TABLE[name].sample(_rng(name), n).astype(dtype)
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    params = TABLE[name].params
    out = np.full(n, 7.0, dtype)
    decl.into(out, x, *params)
    want = decl.forward(x, *params)
    np.testing.assert_array_equal(out, want[0] if decl.aux else want)
    assert np.array_equal(np.signbit(out), np.signbit(want[0] if decl.aux else want))


@pytest.mark.parametrize("name", [n for n in NAMES if ELEMENTWISE[n].integer is None])
def test_integer_and_bool_input_is_refused_naming_the_op(name: str) -> None:
    public = ELEMENTWISE[name].public
    assert not public.startswith("_")
    for data in (np.arange(3), np.array([True, False])):
        with pytest.raises(DTypeError, match=public):
            _apply(name, DEV.tensor(data))


@pytest.mark.parametrize("name", [n for n in NAMES if ELEMENTWISE[n].integer is not None])
@pytest.mark.parametrize("data", [[-3, 0, 2, 7], [True, False]], ids=["int64", "bool"])
def test_an_op_with_an_integer_kernel_follows_pytorch_on_integers(name: str, data: list[int]) -> None:
    """``abs``, ``square``: PyTorch's dtype and exact values on integers, untraced, or both refuse."""
    import torch

    try:
        want = TABLE[name].torch(torch.tensor(data), *TABLE[name].params)
    except (RuntimeError, NotImplementedError):  # PyTorch has no kernel for the dtype: neither has gradtape
        with pytest.raises(DTypeError, match=ELEMENTWISE[name].public):
            _apply(name, DEV.tensor(np.array(data)))
        return
    got = _apply(name, DEV.tensor(np.array(data)))
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.tape is NONE_TAPE


@pytest.mark.parametrize("name", [n for n, d in ELEMENTWISE.items() if d.params])
def test_a_parameter_that_is_not_a_number_is_refused_naming_it(name: str) -> None:
    decl = ELEMENTWISE[name]
    x = DEV.tensor(np.ones(3))
    bad = list(TABLE[name].params)
    bad[0] = "0.5"  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=f"{decl.public}: {decl.params[0]} must be a real number"):
        OPS[name](x, *bad)


def test_the_functional_api_refuses_a_list_naming_the_op() -> None:
    with pytest.raises(TypeError, match="erf: a must be a Tensor"):
        gradtape.ops.erf([0.5, 1.0])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "points"),
    [
        ("hardswish", [-3.0, 3.0, 0.0]),
        ("hardsigmoid", [-3.0, 3.0]),
        ("hardtanh", [-0.5, 0.8]),
        ("relu6", [0.0, 6.0]),
        ("softshrink", [-0.4, 0.4]),
        ("hardshrink", [-0.4, 0.4]),
        ("threshold", [0.1]),
        ("celu", [0.0]),
        ("elu", [0.0]),
        ("selu", [0.0]),
        ("relu", [0.0]),
        ("leaky_relu", [0.0]),
        ("abs", [0.0]),
        ("_clamp", [-0.5, 0.7]),
        ("asin", [1.0, -1.0]),
        ("log1p", [-1.0]),
    ],
)
def test_values_and_gradients_at_kinks_and_ends_follow_pytorch(name: str, points: list[float]) -> None:
    """PyTorch's choice at each kink, bound and domain end (a subgradient, ``inf``, ``nan``)."""
    torch = pytest.importorskip("torch")
    row = TABLE[name]
    x = DEV.tensor(np.array(points), requires_grad=True)
    _apply(name, x).sum().backward()
    xt = torch.tensor(points, dtype=torch.float64, requires_grad=True)
    row.torch(xt, *row.params).sum().backward()
    assert x.grad is not None and xt.grad is not None
    np.testing.assert_array_equal(
        _apply(name, DEV.tensor(np.array(points))).numpy(), row.torch(xt, *row.params).detach().numpy()
    )
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-15)


def _readme_second_rules_block() -> str:
    import textwrap

    import gradtape.losses

    masks = {"eq", "ne", "lt", "le", "gt", "ge"}  # comparisons: their masks carry no gradient
    masks |= {"multinomial"}  # sampling: integer draws
    masks |= {"argmax", "argmin", "argsort", "one_hot"}  # int64 indices: no gradient either
    masks |= {"floor_divide"}  # not differentiable, as in PyTorch
    first_order = {"ctc_loss"}  # no double backward, as in PyTorch: it raises
    names = sorted(set(gradtape.ops.__all__) - masks) + sorted(set(gradtape.losses.__all__) - first_order)
    return "\n".join(textwrap.wrap(", ".join(f"`{n}`" for n in names), 100, break_on_hyphens=False))


def test_readme_lists_the_ops_with_second_rules_from_the_exports() -> None:
    """README's list of differentiable-again ops is the exports, not a hand-kept text."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    found = re.search(r"<!-- BEGIN second-rules[^\n]*-->\n(.*?)\n<!-- END second-rules -->", readme, flags=re.S)
    assert found is not None, "README lost its second-rules markers"
    want = _readme_second_rules_block()
    assert found.group(1) == want, f"update README's second-rules block to:\n{want}"


# ----- two-input ops (gradtape.ops.declare.BINARY) -------------------------------------------


@dataclass(frozen=True)
class Row2:
    """One declared two-input op: PyTorch's spelling and samplers for each operand."""

    torch: Callable[[Any, Any], Any]
    a: Callable[[np.random.Generator, int], Array] = normal
    b: Callable[[np.random.Generator, int], Array] = normal


BINARY_TABLE: dict[str, Row2] = {
    "add": Row2(lambda a, b: a + b),
    "sub": Row2(lambda a, b: a - b),
    "mul": Row2(lambda a, b: a * b),
    "div": Row2(lambda a, b: a / b, b=away),
    "maximum": Row2(_t("maximum")),
    "minimum": Row2(_t("minimum")),
    "pow": Row2(_t("pow"), a=positive),
    "atan2": Row2(_t("atan2")),  # issue 27
    "remainder": Row2(_t("remainder"), b=away),
    "fmod": Row2(_t("fmod"), b=away),
}

SHAPES = [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3), (2, 3))]


def _pair(name: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[Array, Array]:
    row, r = BINARY_TABLE[name], _rng(name + str(sa) + str(sb))
    return row.a(r, int(np.prod(sa))).reshape(sa), row.b(r, int(np.prod(sb))).reshape(sb)


def test_every_declared_two_input_op_has_a_row() -> None:
    from gradtape.ops.declare import BINARY

    assert set(BINARY_TABLE) == set(BINARY)


@pytest.mark.parametrize(("sa", "sb"), SHAPES, ids=["row", "outer", "same"])
@pytest.mark.parametrize("name", list(BINARY_TABLE))
def test_two_input_gradcheck_and_pytorch_with_broadcasting(name: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    """Both inputs' gradients, summed back over broadcast dims, in float64 against finite
    differences and against PyTorch (``requires_grad=True``, ``backward()``, ``.grad``)."""
    from gradtape.ops.declare import BINARY_OPS

    op = BINARY_OPS[name]
    a, b = _pair(name, sa, sb)
    assert gradcheck(lambda x, y: op(x, y), [a, b])
    torch = pytest.importorskip("torch")
    x, y = DEV.tensor(a, requires_grad=True), DEV.tensor(b, requires_grad=True)
    op(x, y).sum().backward()
    xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    BINARY_TABLE[name].torch(xt, yt).sum().backward()
    assert x.grad is not None and y.grad is not None
    np.testing.assert_allclose(
        op(DEV.tensor(a), DEV.tensor(b)).numpy(), BINARY_TABLE[name].torch(xt, yt).detach().numpy(), rtol=1e-14
    )
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(BINARY_TABLE))
def test_two_input_second_rule_matches_torch_hessian(name: str) -> None:
    """All four Hessian blocks of ``sum(op(a, b) * w)`` against ``torch.func.hessian``."""
    from gradtape.ops.declare import BINARY_OPS

    torch = pytest.importorskip("torch")
    op = BINARY_OPS[name]
    a, b = _pair(name, (2, 3), (3,))
    w = _rng(name).standard_normal((2, 3))
    wt = DEV.tensor(w)
    h = gradtape.functional.hessian(lambda x, y: (op(x, y) * wt).sum(), (DEV.tensor(a), DEV.tensor(b)))
    ht = torch.func.hessian(lambda x, y: (BINARY_TABLE[name].torch(x, y) * torch.tensor(w)).sum(), argnums=(0, 1))(
        torch.tensor(a), torch.tensor(b)
    )
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(h[i][j].numpy(), ht[i][j].numpy(), rtol=1e-10, atol=1e-12)
