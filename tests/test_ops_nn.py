"""matmul of 1-D to 4-D operands, linear, dropout, layer_norm, rms_norm and embedding:
gradients against finite differences (float64), forward values against numpy and the published
formulas (and against PyTorch where installed), the norm kernels on large and strided inputs,
and the ops' errors."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor
from gradtape import ops as gtops
from gradtape.devices.kernels import norm as _norm
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD
from gradtape.ops import dropout, embedding, layer_norm, linear, matmul, rms_norm
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]
Fn = Callable[..., Any]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(2024)


def rnd(*shape: int) -> Array:
    """Standard normal float64 samples."""
    return _RNG.standard_normal(shape)


def f32(*shape: int) -> Array:
    """Standard normal float32 samples."""
    return _RNG.standard_normal(shape).astype(np.float32)


def nc(arr: Array) -> T:
    """A tensor whose data is the transposed (non-C-contiguous) view of ``arr``."""
    t: T = Tensor(arr.T, DEV)
    assert not t.data.flags.c_contiguous or t.data.ndim < 2
    return t


def _grads(fn: Fn, *inputs: Array | T) -> list[Array]:
    """Gradients of the scalar ``fn(*inputs)`` w.r.t. each input (arrays become tensors of their dtype)."""
    xs = [x if isinstance(x, Tensor) else DEV.tensor(x) for x in inputs]
    store = Gradients.leaky()
    grads = fn(*(x.trace(store) for x in xs)).backward()
    return [np.asarray(grads.get(x).numpy()) for x in xs]


# ----- matmul: 1-D to 4-D, batch broadcasting --------------------------------------------

_MATMUL_SHAPES = [
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((3,), (3,)),
    ((1,), (1,)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((1, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (1, 4, 2)),
    ((2, 2, 3, 4), (2, 2, 4, 3)),
    ((2, 2, 3, 4), (4, 3)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((2, 1, 3, 4), (1, 3, 4, 2)),
    ((3, 4), (2, 1, 4, 2)),
    ((2, 1, 3), (3,)),
    ((3,), (2, 2, 3, 2)),
]


def _mm_id(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> str:
    return "x".join(map(str, shapes[0])) + "@" + "x".join(map(str, shapes[1]))


@pytest.mark.parametrize("shapes", _MATMUL_SHAPES, ids=_mm_id)
def test_matmul_gradcheck(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """Every rank pair of 1-D to 4-D operands, batch broadcasting included, differentiates."""
    sa, sb = shapes
    assert gradcheck(operator.matmul, [rnd(*sa), rnd(*sb)])


@pytest.mark.parametrize("shapes", _MATMUL_SHAPES, ids=_mm_id)
def test_matmul_forward_matches_numpy(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """The float32 result equals np.matmul in shape, dtype and value."""
    a, b = f32(*shapes[0]), f32(*shapes[1])
    out = DEV.tensor(a) @ DEV.tensor(b)
    want = np.matmul(a, b)
    assert out.shape == want.shape
    assert out.dtype == np.float32
    assert isinstance(out.numpy(), np.ndarray)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


def _noncontig_3d(shape: tuple[int, int, int]) -> T:
    """A rank-3 tensor over a view with its last two axes swapped (not C-contiguous)."""
    base = rnd(shape[0], shape[2], shape[1])
    t: T = Tensor(np.swapaxes(base, 1, 2), DEV)
    assert not t.data.flags.c_contiguous
    return t


@pytest.mark.parametrize(
    ("fn", "inputs"),
    [
        pytest.param(operator.matmul, [nc(rnd(4, 3)), rnd(4)], id="noncontig2d@1d"),
        pytest.param(operator.matmul, [rnd(3), nc(rnd(2, 3))], id="1d@noncontig2d"),
        pytest.param(operator.matmul, [_noncontig_3d((2, 3, 4)), rnd(4, 2)], id="noncontig3d@2d"),
        pytest.param(operator.matmul, [_noncontig_3d((2, 3, 4)), _noncontig_3d((2, 4, 2))], id="noncontig3d@3d"),
        pytest.param(operator.matmul, [rnd(2, 3, 4), nc(rnd(2, 4))], id="3d@noncontig2d"),
        pytest.param(lambda a: a @ a, [rnd(2, 3, 3)], id="same_tensor_3d"),
        pytest.param(lambda a: a @ a, [rnd(3)], id="same_tensor_1d"),
        pytest.param(lambda a, b: (a @ b) @ b, [rnd(2, 3, 4), rnd(4, 4)], id="chained-reused"),
        pytest.param(lambda a, b: (b @ a) @ b, [rnd(2, 2, 3), rnd(3, 2)], id="chained-broadcast"),
    ],
)
def test_matmul_gradcheck_views_and_reuse(fn: Fn, inputs: list[Any]) -> None:
    """Non-contiguous operands (the stacked path copies them) and an operand used twice."""
    assert gradcheck(fn, inputs)


def test_matmul_batched_grads_sum_over_broadcast_dims() -> None:
    """d sum(a @ b) / db for a (2, 1, 3, 4) times a (5, 4, 2): a^T @ 1 summed over both batch dims."""
    a, b = f32(2, 1, 3, 4), f32(5, 4, 2)
    ga, gb = _grads(lambda x, y: (x @ y).sum(), a, b)
    ones = np.ones((2, 5, 3, 2), np.float32)
    want_a = np.matmul(ones, np.swapaxes(b, -1, -2)).sum(axis=1, keepdims=True)
    want_b = np.matmul(np.swapaxes(a, -1, -2), ones).sum(axis=0)
    np.testing.assert_allclose(ga, want_a, rtol=1e-5)
    np.testing.assert_allclose(gb, want_b, rtol=1e-5)


def test_matmul_vector_grads() -> None:
    """d (u . v) / du = v, / dv = u (1-D @ 1-D is a scalar)."""
    u, v = f32(5), f32(5)
    out = DEV.tensor(u) @ DEV.tensor(v)
    assert out.shape == ()
    gu, gv = _grads(lambda x, y: x @ y, u, v)
    np.testing.assert_allclose(gu, v)
    np.testing.assert_allclose(gv, u)


def test_matmul_skips_unretained_leaf() -> None:
    """With retained leafs, the batched backward skips a traced input nobody keeps."""
    a, b = DEV.tensor(f32(2, 3, 4)), DEV.tensor(f32(4, 2))
    store = Gradients.leaky()
    store.retain_leafs([b])
    grads = (a.trace(store) @ b.trace(store)).sum().backward()
    assert a not in grads
    np.testing.assert_allclose(grads.get(b).numpy(), a.numpy().reshape(-1, 4).T @ np.ones((6, 2)), rtol=1e-5)


def test_matmul_2d_path_unchanged() -> None:
    """2-D @ 2-D still gives the BLAS product and the standard gradients."""
    a, b = f32(3, 4), f32(4, 2)
    ga, gb = _grads(lambda x, y: (x @ y).sum(), a, b)
    np.testing.assert_allclose(ga, np.ones((3, 2), np.float32) @ b.T, rtol=1e-6)
    np.testing.assert_allclose(gb, a.T @ np.ones((3, 2), np.float32), rtol=1e-6)


@pytest.mark.parametrize(
    ("sa", "sb", "pattern"),
    [
        ((2, 3), (4, 2), r"matmul: inner dims differ: \(2, 3\) @ \(4, 2\)"),
        ((3,), (4, 2), r"matmul: inner dims differ: \(3,\) @ \(4, 2\)"),
        ((2, 3), (2,), r"matmul: inner dims differ: \(2, 3\) @ \(2,\)"),
        ((3,), (4,), r"matmul: inner dims differ: \(3,\) @ \(4,\)"),
        ((2, 3, 4), (3, 4, 5), r"matmul: batch dims do not broadcast: \(2, 3, 4\) @ \(3, 4, 5\)"),
        ((1, 1, 1, 1, 2), (2, 3), r"matmul: expects 1-D to 4-D.*\(1, 1, 1, 1, 2\) and \(2, 3\)"),
        ((), (2, 3), r"matmul: expects 1-D to 4-D.*\(\) and \(2, 3\)"),
    ],
)
def test_matmul_errors_name_both_shapes(sa: tuple[int, ...], sb: tuple[int, ...], pattern: str) -> None:
    """Mismatched inner dims, non-broadcasting batches and unsupported ranks raise ShapeError."""
    with pytest.raises(ShapeError, match=pattern):
        DEV.tensor(np.zeros(sa, np.float32)) @ DEV.tensor(np.zeros(sb, np.float32))


def test_matmul_nd_dtype_error() -> None:
    """float32 @ float64 raises DTypeError naming both dtypes, in the batched path too."""
    with pytest.raises(DTypeError, match=r"matmul.*float32.*float64"):
        DEV.tensor(f32(2, 3, 4)) @ DEV.tensor(rnd(4, 2), dtype=np.float64)


# ----- linear -------------------------------------------------------------------------------

_LINEAR_CASES = [
    pytest.param(linear, [rnd(3, 4), rnd(5, 4), rnd(5)], id="2d-bias"),
    pytest.param(lambda x, w: linear(x, w), [rnd(3, 4), rnd(5, 4)], id="2d-no-bias"),
    pytest.param(linear, [rnd(2, 3, 4), rnd(5, 4), rnd(5)], id="3d-bias"),
    pytest.param(linear, [rnd(2, 1, 3, 4), rnd(2, 4), rnd(2)], id="4d-bias"),
    pytest.param(linear, [rnd(4), rnd(5, 4), rnd(5)], id="1d-bias"),
    pytest.param(linear, [rnd(1, 1), rnd(1, 1), rnd(1)], id="size1"),
    pytest.param(linear, [nc(rnd(4, 3)), nc(rnd(4, 5)), rnd(5)], id="noncontig"),
    pytest.param(linear, [_noncontig_3d((2, 3, 4)), rnd(5, 4), rnd(5)], id="noncontig-3d"),
    pytest.param(lambda x, w: linear(linear(x, w), w), [rnd(3, 5), rnd(5, 5)], id="reuse"),
]


@pytest.mark.parametrize(("fn", "inputs"), _LINEAR_CASES)
def test_linear_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """linear's fused backward matches finite differences for x, weight and bias."""
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("xshape", [(3, 4), (2, 3, 4), (4,)], ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_linear_forward_matches_numpy(xshape: tuple[int, ...], bias: bool) -> None:
    """y = x @ w.T + b in float32, of shape x.shape[:-1] + (out,)."""
    x, w, b = f32(*xshape), f32(5, 4), f32(5)
    out = linear(DEV.tensor(x), DEV.tensor(w), DEV.tensor(b) if bias else None)
    want = x @ w.T + (b if bias else 0)
    assert out.shape == (*xshape[:-1], 5)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


def test_linear_grads_by_hand() -> None:
    """grad_x = g @ w, grad_w = g^T x over all batch dims, grad_b = g summed over batch dims."""
    x, w, b = f32(2, 3, 4), f32(5, 4), f32(5)
    gx, gw, gb = _grads(lambda x_, w_, b_: linear(x_, w_, b_).sum(), x, w, b)
    g = np.ones((6, 5), np.float32)
    np.testing.assert_allclose(gx, (g @ w).reshape(2, 3, 4), rtol=1e-5)
    np.testing.assert_allclose(gw, g.T @ x.reshape(6, 4), rtol=1e-5)
    np.testing.assert_allclose(gb, np.full(5, 6.0, np.float32))


def test_linear_skips_unretained_input() -> None:
    """An input batch that is traced but not retained gets no gradient (weights still do)."""
    x, w = DEV.tensor(f32(3, 4)), DEV.tensor(f32(2, 4))
    store = Gradients.leaky()
    store.retain_leafs([w])
    grads = linear(x.trace(store), w.trace(store)).sum().backward()
    assert x not in grads and w in grads


def test_linear_errors_name_op_and_shapes() -> None:
    """Wrong in-features, a non-2-D weight, a wrong bias and mixed dtypes are rejected."""
    x = DEV.tensor(f32(3, 4))
    with pytest.raises(ShapeError, match=r"linear: in-features differ: x \(3, 4\) and weight \(5, 3\)"):
        linear(x, DEV.tensor(f32(5, 3)))
    with pytest.raises(ShapeError, match=r"linear: weight must be 2-D.*\(4,\).*\(3, 4\)"):
        linear(x, DEV.tensor(f32(4)))
    with pytest.raises(ShapeError, match=r"linear: bias of shape \(4,\) does not match weight \(5, 4\)"):
        linear(x, DEV.tensor(f32(5, 4)), DEV.tensor(f32(4)))
    with pytest.raises(ShapeError, match=r"linear: in-features differ: x \(\)"):
        linear(DEV.tensor(1.0), DEV.tensor(f32(5, 4)))
    with pytest.raises(DTypeError, match=r"linear.*float32.*float64"):
        linear(x, DEV.tensor(rnd(5, 4), dtype=np.float64))


# ----- dropout ------------------------------------------------------------------------------


def test_dropout_mask_reproducible_with_seed() -> None:
    """The same int seed gives the same mask; another seed gives another."""
    x = DEV.ones((40, 50))
    a = dropout(x, 0.5, rng=123).numpy()
    b = dropout(x, 0.5, rng=123).numpy()
    c = dropout(x, 0.5, rng=124).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dropout_device_generator_is_seeded() -> None:
    """Without rng, the device's generator is used: two devices of one seed agree."""
    y1 = dropout(Cpu(seed=5).ones((100,)), 0.3).numpy()
    y2 = dropout(Cpu(seed=5).ones((100,)), 0.3).numpy()
    np.testing.assert_array_equal(y1, y2)


def test_dropout_generator_argument() -> None:
    """A Generator is consumed: successive calls draw new masks, reproducible from its seed."""
    gen = np.random.default_rng(9)
    x = DEV.ones((200,))
    m1, m2 = dropout(x, 0.5, rng=gen).numpy(), dropout(x, 0.5, rng=gen).numpy()
    assert not np.array_equal(m1, m2)
    gen2 = np.random.default_rng(9)
    np.testing.assert_array_equal(dropout(x, 0.5, rng=gen2).numpy(), m1)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_preserves_expectation(p: float) -> None:
    """Kept elements are scaled by 1/(1-p): the mean of many ones stays about 1, a fraction
    of about p is zero, and every other element is exactly 1/(1-p)."""
    y = dropout(DEV.ones((400_000,)), p, rng=1).numpy()
    assert y.dtype == np.float32
    assert abs(float(y.mean(dtype=np.float64)) - 1.0) < 0.01
    assert abs(float((y == 0).mean()) - p) < 0.005
    np.testing.assert_allclose(y[y != 0], np.float32(1.0 / (1.0 - p)), rtol=1e-6)


def test_dropout_gradient_is_mask_times_scale() -> None:
    """d sum(dropout(x) * w) / dx = w * mask / (1 - p), with the forward's mask."""
    x, w = f32(30, 20), f32(30, 20)
    p = 0.25
    y = dropout(DEV.tensor(x), p, rng=3).numpy()
    mask = y != 0
    (g,) = _grads(lambda a: (dropout(a, p, rng=3) * DEV.tensor(w)).sum(), x)
    np.testing.assert_allclose(g, w * mask * np.float32(1 / (1 - p)), rtol=1e-6)
    np.testing.assert_allclose(y, x * mask * np.float32(1 / (1 - p)), rtol=1e-6)


@pytest.mark.parametrize("shape", [(3, 4), (5,), (), (2, 1, 3)], ids=str)
def test_dropout_gradcheck(shape: tuple[int, ...]) -> None:
    """With a fixed seed every forward draws the same mask, so finite differences apply."""
    assert gradcheck(lambda a: dropout(a, 0.4, rng=11), [rnd(*shape)])
    assert gradcheck(lambda a: dropout(a, 0.4, rng=11), [nc(rnd(4, 3))])


def test_dropout_identity_cases() -> None:
    """p=0 and training=False return the input itself."""
    x = DEV.tensor(f32(3, 4))
    assert dropout(x, 0.0) is x
    assert dropout(x, 0.9, training=False) is x
    assert x.dropout(0.0) is x


def test_dropout_p1_gives_zeros_and_zero_grad() -> None:
    """p=1 zeros everything (also inf inputs) and the gradient is zero."""
    x = np.array([1.0, -2.0, np.inf], np.float32)
    y = dropout(DEV.tensor(x), 1.0)
    np.testing.assert_array_equal(y.numpy(), np.zeros(3, np.float32))
    (g,) = _grads(lambda a: dropout(a, 1.0).sum(), x)
    np.testing.assert_array_equal(g, np.zeros(3, np.float32))


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), "0.5", True])
def test_dropout_rejects_bad_p(p: Any) -> None:
    """p outside [0, 1] (or not a number) is a ValueError naming dropout."""
    with pytest.raises(ValueError, match=r"dropout: p must be a probability in \[0, 1\]"):
        dropout(DEV.ones((2,)), p)


def test_dropout_rejects_bad_rng() -> None:
    """An rng that is not a Generator, an int or None is a TypeError."""
    with pytest.raises(TypeError, match="dropout: rng"):
        dropout(DEV.ones((2,)), 0.5, rng="seed")  # type: ignore[arg-type]


# ----- layer_norm and rms_norm: formulas ---------------------------------------------------


def ref_norm(x: Array, k: int, w: Array | None, b: Array | None, eps: float, centered: bool) -> Array:
    """The published formula in float64: (x - mean) / sqrt(var + eps) * w + b over the last k dims."""
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axis=axes, keepdims=True) if centered else 0.0
    ms = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(ms + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return np.asarray(y)


def ref_norm_grads(
    g: Array, x: Array, k: int, w: Array | None, eps: float, centered: bool
) -> tuple[Array, Array, Array]:
    """Gradients of ``sum(ref_norm * g)`` in float64 from the textbook derivation."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    n = int(np.prod(x.shape[x.ndim - k :]))
    mu = x.mean(axis=axes, keepdims=True) if centered else 0.0
    rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    xhat = (x - mu) * rstd
    dxhat = g * (w if w is not None else 1.0)
    dx = dxhat * n - xhat * (dxhat * xhat).sum(axis=axes, keepdims=True)
    if centered:
        dx = dx - dxhat.sum(axis=axes, keepdims=True)
    dx = dx * rstd / n
    return np.asarray(dx), np.asarray((g * xhat).sum(axis=lead)), np.asarray(g.sum(axis=lead))


_LN_CASES = [
    pytest.param(lambda x: layer_norm(x), [rnd(3, 5)], id="no-affine"),
    pytest.param(lambda x, w, b: layer_norm(x, weight=w, bias=b), [rnd(3, 5), rnd(5), rnd(5)], id="affine"),
    pytest.param(lambda x, w: layer_norm(x, weight=w), [rnd(2, 3, 9), rnd(9)], id="weight-only-rank3"),
    pytest.param(lambda x, b: layer_norm(x, bias=b), [rnd(4, 3), rnd(3)], id="bias-only"),
    pytest.param(lambda x, w, b: layer_norm(x, (3, 4), w, b), [rnd(2, 3, 4), rnd(3, 4), rnd(3, 4)], id="two-axes"),
    pytest.param(lambda x: layer_norm(x, 6), [rnd(6)], id="rank1-int-shape"),
    pytest.param(lambda x, w, b: x.layer_norm(weight=w, bias=b), [nc(rnd(5, 3)), rnd(5), rnd(5)], id="noncontig"),
    pytest.param(lambda x: layer_norm(x, eps=0.5), [rnd(2, 2)], id="two-elements-big-eps"),
    pytest.param(lambda x: layer_norm(x) * x, [rnd(3, 4)], id="reused-input"),
]


@pytest.mark.parametrize(("fn", "inputs"), _LN_CASES)
def test_layer_norm_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """layer_norm's fused backward matches finite differences for x, weight and bias."""
    assert gradcheck(fn, inputs)


_RMS_CASES = [
    pytest.param(lambda x: rms_norm(x), [rnd(3, 5)], id="no-weight"),
    pytest.param(lambda x, w: rms_norm(x, w), [rnd(3, 5), rnd(5)], id="weight"),
    pytest.param(lambda x, w: rms_norm(x, w, eps=1e-3), [rnd(2, 3, 10), rnd(10)], id="rank3-eps"),
    pytest.param(lambda x: rms_norm(x), [rnd(7)], id="rank1"),
    pytest.param(lambda x, w: x.rms_norm(w), [nc(rnd(4, 3)), rnd(4)], id="noncontig"),
    pytest.param(lambda x: rms_norm(x) * x, [rnd(2, 3)], id="reused-input"),
]


@pytest.mark.parametrize(("fn", "inputs"), _RMS_CASES)
def test_rms_norm_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """rms_norm's fused backward matches finite differences for x and weight."""
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_layer_norm_forward_matches_formula(dtype: Any, noncontig: bool) -> None:
    """y = (x - mean) / sqrt(var + eps) * w + b (biased variance), x's dtype kept."""
    x, w, b = rnd(6, 10).astype(dtype), rnd(10).astype(dtype), rnd(10).astype(dtype)
    xt: T = Tensor(np.asfortranarray(x), DEV) if noncontig else DEV.tensor(x)
    out = layer_norm(xt, weight=DEV.tensor(w), bias=DEV.tensor(b), eps=1e-5)
    assert out.dtype == dtype
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), ref_norm(x, 1, w, b, 1e-5, True), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_rms_norm_forward_matches_formula(dtype: Any) -> None:
    """y = x / sqrt(mean(x**2) + eps) * w; the default eps is the dtype's machine epsilon."""
    x, w = rnd(4, 3, 12).astype(dtype), rnd(12).astype(dtype)
    out = rms_norm(DEV.tensor(x), DEV.tensor(w))
    eps = float(np.finfo(dtype).eps)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), ref_norm(x, 1, w, None, eps, False), rtol=tol, atol=tol)


def test_layer_norm_rows_have_zero_mean_unit_variance() -> None:
    """Without affine parameters every row has mean 0 and (biased) variance 1 (eps=0)."""
    y = layer_norm(DEV.tensor(rnd(8, 33) * 5 + 3, dtype=np.float64), eps=0.0).numpy()
    np.testing.assert_allclose(y.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=1), 1.0, rtol=1e-12)


def test_norm_grads_by_formula() -> None:
    """layer_norm and rms_norm gradients equal the textbook formulas (float64)."""
    x, w, b, g = rnd(5, 7), rnd(7), rnd(7), rnd(5, 7)
    gt = DEV.tensor(g, dtype=np.float64)
    gx, gw, gb = _grads(lambda x_, w_, b_: (layer_norm(x_, weight=w_, bias=b_) * gt).sum(), x, w, b)
    rx, rw, rb = ref_norm_grads(g, x, 1, w, 1e-5, True)
    np.testing.assert_allclose(gx, rx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, rw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb, rb, rtol=1e-10, atol=1e-12)
    gx, gw = _grads(lambda x_, w_: (rms_norm(x_, w_, eps=1e-6) * gt).sum(), x, w)
    rx, rw, _ = ref_norm_grads(g, x, 1, w, 1e-6, False)
    np.testing.assert_allclose(gx, rx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, rw, rtol=1e-10, atol=1e-12)


def test_norm_skips_unretained_input() -> None:
    """Only the retained weight gets a gradient; an unretained traced input gets none."""
    x, w = DEV.tensor(f32(4, 6)), DEV.tensor(f32(6))
    store = Gradients.leaky()
    store.retain_leafs([w])
    grads = layer_norm(x.trace(store), weight=w.trace(store)).sum().backward()
    assert x not in grads and w in grads


# ----- the norm kernels: large (parallel) and strided (numpy fallback) inputs --------------

_LARGE = (3500, 300)  # > PARALLEL_THRESHOLD elements; 300 is not a multiple of the 8-way unroll


@pytest.mark.parametrize("centered", [True, False], ids=["layer", "rms"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("layout", ["large", "small", "strided", "strided-params"])
def test_norm_kernels_match_numpy(centered: bool, dtype: Any, layout: str) -> None:
    """norm_forward / norm_backward equal the float64 formulas on the parallel kernels
    (large), the serial kernels (small) and the numpy fallback (strided x, strided params)."""
    shape = _LARGE if layout == "large" else (7, 13)
    x = (_RNG.standard_normal(shape) * 3 + 1).astype(dtype)
    g = _RNG.standard_normal(shape).astype(dtype)
    w = _RNG.standard_normal(shape[1]).astype(dtype)
    b = _RNG.standard_normal(shape[1]).astype(dtype) if centered else None
    if layout == "large":
        assert x.size > PARALLEL_THRESHOLD
    if layout == "strided":
        x = np.asfortranarray(x)
        g = np.asfortranarray(g)
    if layout == "strided-params":
        w = np.repeat(w, 2)[::2]
        assert not w.flags.c_contiguous
    y, mean, rstd = _norm.norm_forward(x, 1, w, b, 1e-5, centered)
    assert y.dtype == dtype and mean.shape == rstd.shape == shape[:1]
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(y, ref_norm(x, 1, w, b, 1e-5, centered), rtol=tol, atol=tol)
    dx, dw, db = _norm.norm_backward(g, x, 1, w, mean, rstd, centered)
    assert dx is not None
    rx, rw, rb = ref_norm_grads(g, x, 1, w, 1e-5, centered)
    np.testing.assert_allclose(dx, rx, rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(dw, rw, rtol=tol, atol=tol * 100)
    np.testing.assert_allclose(db, rb, rtol=tol, atol=tol * 100)
    _, dw2, db2 = _norm.norm_backward(g, x, 1, w, mean, rstd, centered, need_dx=False)
    np.testing.assert_allclose(dw2, rw, rtol=tol, atol=tol * 100)
    np.testing.assert_allclose(db2, rb, rtol=tol, atol=tol * 100)


# The serial and parallel kernels compute each row with the same code, and agree bit for bit in
# every run but two of some twenty full-suite runs on the AVX-512 EPYC VM (session 17): there,
# 155 rows of the forward differed by 1-2 ulp, in a state that did not reproduce (the same test
# alone, after the same preceding tests, 300 repeats under load). Until that is explained the
# comparison allows 8 ulp: a wrong chunk boundary or a lost partial sum is far larger.
_ULP_RTOL = _ULP_ATOL = 1e-6


def test_norm_kernel_serial_and_parallel_agree() -> None:
    """The parallel backward (partial sums per chunk of rows) equals the serial one."""
    x, g, w = f32(*_LARGE), f32(*_LARGE), f32(_LARGE[1])
    y, mean, rstd = _norm.norm_forward(x, 1, w, None, 1e-5, True)
    n = _LARGE[1]
    zeros = np.zeros(n, np.float32)
    y_ser, m_ser, r_ser = np.empty_like(x), np.empty(_LARGE[0], np.float32), np.empty(_LARGE[0], np.float32)
    _norm._norm_forward_serial(y_ser, m_ser, r_ser, x, w, zeros, np.float32(1 / n), np.float32(1e-5), True)
    np.testing.assert_allclose(y, y_ser, rtol=_ULP_RTOL, atol=_ULP_ATOL)
    dx, dw, db = _norm.norm_backward(g, x, 1, w, mean, rstd, True)
    dx_ser, dw_ser, db_ser = np.empty_like(x), np.zeros((1, n), np.float32), np.zeros((1, n), np.float32)
    _norm._norm_backward_serial(dx_ser, dw_ser, db_ser, x, g, w, mean, rstd, np.float32(1 / n), True)
    assert dx is not None
    np.testing.assert_allclose(dx, dx_ser, rtol=_ULP_RTOL, atol=_ULP_ATOL)
    np.testing.assert_allclose(dw, dw_ser[0], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(db, db_ser[0], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_norm_ops_on_large_inputs(op: str) -> None:
    """The ops on a large float32 tensor (the parallel kernels) give the formulas' values and gradients."""
    x, w, g = f32(*_LARGE) * 2, f32(_LARGE[1]), f32(*_LARGE)
    gt = DEV.tensor(g)
    centered = op == "layer_norm"
    eps = 1e-5 if centered else float(np.finfo(np.float32).eps)

    def fn(x_: T, w_: T) -> T:
        y: T = layer_norm(x_, weight=w_) if centered else rms_norm(x_, w_)
        return y

    np.testing.assert_allclose(
        fn(DEV.tensor(x), DEV.tensor(w)).numpy(), ref_norm(x, 1, w, None, eps, centered), rtol=1e-4, atol=1e-4
    )
    gx, gw = _grads(lambda x_, w_: (fn(x_, w_) * gt).sum(), x, w)
    rx, rw, _ = ref_norm_grads(g, x, 1, w, eps, centered)
    np.testing.assert_allclose(gx, rx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw, rw, rtol=1e-4, atol=2e-3)


def test_norm_kernel_errors() -> None:
    """The kernel wrappers validate shapes and dtypes before compiling anything."""
    x = f32(3, 4)
    with pytest.raises(ShapeError, match=r"norm_forward: parameter of shape \(3,\).*\(4,\)"):
        _norm.norm_forward(x, 1, f32(3), None, 1e-5, True)
    with pytest.raises(DTypeError, match="norm_forward: parameter dtype float64"):
        _norm.norm_forward(x, 1, rnd(4), None, 1e-5, True)
    with pytest.raises(DTypeError, match="norm_forward: x has dtype int64"):
        _norm.norm_forward(np.zeros((3, 4), np.int64), 1, None, None, 1e-5, True)
    with pytest.raises(ShapeError, match=r"norm_forward: cannot normalise the last 3 dims.*\(3, 4\)"):
        _norm.norm_forward(x, 3, None, None, 1e-5, True)
    _, m, r = _norm.norm_forward(x, 1, None, None, 1e-5, True)
    with pytest.raises(ShapeError, match=r"norm_backward: gradient \(4, 3\)"):
        _norm.norm_backward(f32(4, 3), x, 1, None, m, r, True)


# ----- layer_norm / rms_norm errors --------------------------------------------------------


def test_layer_norm_errors_name_op_and_shapes() -> None:
    """Mismatched normalized_shape, weight or bias shapes, bad eps and 0-D inputs are rejected."""
    x = DEV.tensor(f32(3, 4))
    with pytest.raises(ShapeError, match=r"layer_norm: normalized_shape \(3,\) is not the trailing dims.*\(3, 4\)"):
        layer_norm(x, 3)
    with pytest.raises(ShapeError, match=r"layer_norm: normalized_shape \(2, 3, 4\).*\(3, 4\)"):
        layer_norm(x, (2, 3, 4))
    with pytest.raises(ShapeError, match=r"layer_norm: weight of shape \(3,\).*\(4,\) \(x \(3, 4\)\)"):
        layer_norm(x, weight=DEV.tensor(f32(3)))
    with pytest.raises(ShapeError, match=r"layer_norm: bias of shape \(1, 4\).*\(4,\)"):
        layer_norm(x, bias=DEV.tensor(f32(1, 4)))
    with pytest.raises(ShapeError, match=r"layer_norm: .*\(\)"):
        layer_norm(DEV.tensor(1.0))
    with pytest.raises(ShapeError, match="layer_norm: cannot normalise over zero elements"):
        layer_norm(DEV.zeros((3, 0)))
    with pytest.raises(ValueError, match="layer_norm: eps must be a non-negative number"):
        layer_norm(x, eps=-1.0)
    with pytest.raises(DTypeError, match=r"layer_norm.*float32.*float64"):
        layer_norm(x, weight=DEV.tensor(rnd(4), dtype=np.float64))


def test_rms_norm_errors_name_op_and_shapes() -> None:
    """A weight not of the last dim's size, a 0-D or empty input and a bad eps are rejected."""
    x = DEV.tensor(f32(3, 4))
    with pytest.raises(ShapeError, match=r"rms_norm: weight of shape \(3,\) does not match.*\(4,\) \(x \(3, 4\)\)"):
        rms_norm(x, DEV.tensor(f32(3)))
    with pytest.raises(ShapeError, match=r"rms_norm: needs a non-empty last axis, got x of shape \(\)"):
        rms_norm(DEV.tensor(2.0))
    with pytest.raises(ShapeError, match=r"rms_norm: .*\(2, 0\)"):
        rms_norm(DEV.zeros((2, 0)))
    with pytest.raises(ValueError, match="rms_norm: eps"):
        rms_norm(x, eps=float("nan"))


def test_norm_empty_batch() -> None:
    """Zero rows normalise to an empty result, and backward gives empty/zero gradients."""
    x, w = DEV.zeros((0, 4)), DEV.ones((4,))
    assert layer_norm(x, weight=w).shape == (0, 4)
    _, gw = _grads(lambda x_, w_: layer_norm(x_, weight=w_).sum(), x, w)
    np.testing.assert_array_equal(gw, np.zeros(4, np.float32))


# ----- embedding ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "indices",
    [[0, 2, 2, 5], [[1, 1], [0, 4]], np.array(3), np.array([[[5], [0]]], dtype=np.uint8), []],
    ids=["1d-repeated", "2d", "0d", "3d-uint8", "empty"],
)
def test_embedding_gradcheck(indices: Any) -> None:
    """embedding's scatter-add backward matches finite differences (repeated rows accumulate)."""
    assert gradcheck(lambda w: embedding(indices, w), [rnd(6, 3)])
    assert gradcheck(lambda w: embedding(indices, w), [nc(rnd(3, 6))])


def test_embedding_forward_and_repeated_index_grads() -> None:
    """y = weight[indices] of shape indices.shape + (dim,); a row used k times gets k * g."""
    w = f32(5, 3)
    idx = np.array([[4, 0, 4], [4, 1, 1]])
    out = embedding(idx, DEV.tensor(w))
    assert out.shape == (2, 3, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), w[idx])
    (g,) = _grads(lambda w_: embedding(idx, w_).sum(), w)
    counts = np.bincount(idx.ravel(), minlength=5).astype(np.float32)
    np.testing.assert_array_equal(g, np.repeat(counts[:, None], 3, axis=1))


def test_embedding_accumulates_into_existing_gradient() -> None:
    """A tied weight used twice (embedding and a product) gets both gradients."""
    w = f32(4, 3)
    idx = [3, 3, 0]
    (g,) = _grads(lambda w_: embedding(idx, w_).sum() + (w_ * w_).sum() + embedding([1], w_).sum(), w)
    want = 2 * w
    want[3] += 2
    want[0] += 1
    want[1] += 1
    np.testing.assert_allclose(g, want, rtol=1e-6)


def test_embedding_keeps_its_own_copy_of_indices() -> None:
    """Changing the caller's index array after the forward does not change the backward."""
    idx = np.array([0, 1])
    store = Gradients.leaky()
    w = DEV.tensor(f32(3, 2))
    loss = embedding(idx, w.trace(store)).sum()
    idx[:] = 2
    g = loss.backward().get(w).numpy()
    np.testing.assert_array_equal(g, np.array([[1, 1], [1, 1], [0, 0]], np.float32))


def test_embedding_large_uses_kernel() -> None:
    """A large lookup (the parallel scatter kernel) equals np.add.at."""
    w = f32(1000, 64)
    idx = _RNG.integers(0, 1000, size=(64, 40))
    g = f32(64, 40, 64)
    (gw,) = _grads(lambda w_: (embedding(idx, w_) * DEV.tensor(g)).sum(), w)
    want = np.zeros((1000, 64), np.float32)
    np.add.at(want, idx.ravel(), g.reshape(-1, 64))
    np.testing.assert_allclose(gw, want, rtol=1e-5, atol=1e-5)


def test_embedding_errors() -> None:
    """Float indices, out-of-range indices and a non-2-D weight are rejected, naming the op."""
    w = DEV.tensor(f32(4, 3))
    with pytest.raises(DTypeError, match=r"embedding: indices must be integers, got dtype float64 of shape \(2,\)"):
        embedding(np.array([0.0, 1.0]), w)
    with pytest.raises(DTypeError, match="embedding: indices must be integers, got dtype bool"):
        embedding(np.array([True]), w)
    with pytest.raises(ValueError, match=r"embedding: indices must lie in \[0, 4\) for weight \(4, 3\)"):
        embedding([0, 4], w)
    with pytest.raises(ValueError, match=r"\[0, 4\).*min -1"):
        embedding([-1], w)
    with pytest.raises(ShapeError, match=r"embedding: weight must be 2-D \(num, dim\), got shape \(4,\)"):
        embedding([0], DEV.tensor(f32(4)))


# ----- against PyTorch ---------------------------------------------------------------------


def _torch_grads(torch: Any, fn: Fn, *arrays: Array) -> tuple[Array, list[Array]]:
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*ts)
    (y * torch.tensor(np.ones(y.shape, dtype=arrays[0].dtype) * 0.5)).sum().backward()
    return y.detach().numpy(), [t.grad.numpy() for t in ts]


def _our_grads(fn: Fn, *arrays: Array) -> tuple[Array, list[Array]]:
    xs = [DEV.tensor(a) for a in arrays]
    store = Gradients.leaky()
    y = fn(*(x.trace(store) for x in xs))
    grads = (y * 0.5).sum().backward()
    return y.numpy(), [grads.get(x).numpy() for x in xs]


def _assert_same(ours: tuple[Array, list[Array]], theirs: tuple[Array, list[Array]], tol: float) -> None:
    np.testing.assert_allclose(ours[0], theirs[0], rtol=tol, atol=tol)
    for a, b in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_layer_norm_matches_torch() -> None:
    """layer_norm equals torch.nn.functional.layer_norm, values and gradients, float32 and float64."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        x, w, b = rnd(4, 5, 16).astype(dt), rnd(16).astype(dt), rnd(16).astype(dt)
        ours = _our_grads(lambda x_, w_, b_: layer_norm(x_, weight=w_, bias=b_), x, w, b)
        theirs = _torch_grads(torch, lambda x_, w_, b_: F.layer_norm(x_, (16,), w_, b_, 1e-5), x, w, b)
        _assert_same(ours, theirs, tol)
        x2, w2 = rnd(3, 4, 5).astype(dt), rnd(4, 5).astype(dt)
        ours = _our_grads(lambda x_, w_: layer_norm(x_, (4, 5), w_, eps=1e-3), x2, w2)
        theirs = _torch_grads(torch, lambda x_, w_: F.layer_norm(x_, (4, 5), w_, None, 1e-3), x2, w2)
        _assert_same(ours, theirs, tol)


def test_rms_norm_matches_torch() -> None:
    """rms_norm equals torch.nn.functional.rms_norm (default eps included), values and gradients."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    if not hasattr(F, "rms_norm"):
        pytest.skip("this torch has no rms_norm")
    for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        x, w = rnd(6, 24).astype(dt), rnd(24).astype(dt)
        ours = _our_grads(lambda x_, w_: rms_norm(x_, w_), x, w)
        theirs = _torch_grads(torch, lambda x_, w_: F.rms_norm(x_, (24,), w_), x, w)
        _assert_same(ours, theirs, tol)


def test_linear_matches_torch() -> None:
    """linear equals torch.nn.functional.linear, values and gradients, with and without bias."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, b = f32(2, 3, 8), f32(5, 8), f32(5)
    _assert_same(_our_grads(linear, x, w, b), _torch_grads(torch, F.linear, x, w, b), 1e-5)
    _assert_same(_our_grads(lambda x_, w_: linear(x_, w_), x[0], w), _torch_grads(torch, F.linear, x[0], w), 1e-5)


def test_embedding_matches_torch() -> None:
    """embedding equals torch.nn.functional.embedding, values and the weight's gradient."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    w = f32(7, 4)
    idx = np.array([[0, 6, 6], [2, 0, 6]])
    ours = _our_grads(lambda w_: embedding(idx, w_), w)
    theirs = _torch_grads(torch, lambda w_: F.embedding(torch.tensor(idx), w_), w)
    _assert_same(ours, theirs, 1e-6)


def test_matmul_batched_matches_torch() -> None:
    """Broadcast batched matmul equals torch.matmul, values and gradients."""
    torch = pytest.importorskip("torch")
    for sa, sb in (((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))):
        a, b = rnd(*sa), rnd(*sb)
        _assert_same(_our_grads(matmul, a, b), _torch_grads(torch, torch.matmul, a, b), 1e-10)


# ----- prelu -------------------------------------------------------------------------------


@pytest.mark.parametrize(("xshape", "wshape"), [((2, 3), (3,)), ((2, 3, 4), (3,)), ((2, 3, 2, 2), (1,)), ((5,), (1,))])
def test_prelu_gradcheck(xshape: tuple[int, ...], wshape: tuple[int, ...]) -> None:
    """prelu's gradients (input and per-channel slope) match finite differences."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, xshape)
    x[np.abs(x) < 0.05] = 0.3  # keep away from the kink at 0
    w = rng.uniform(0.05, 0.5, wshape)
    assert gradcheck(lambda a, b: gtops.prelu(a, b), [x, w]) is True


def test_prelu_forward_and_slope_gradient_values() -> None:
    """y = x where x > 0 else w_c * x; d/dw_c sums x over the channel's non-positive inputs."""
    dev = Cpu()
    x = dev.tensor([[1.0, -2.0], [-3.0, 4.0]])
    w = dev.tensor([0.5, 0.25])
    y = gtops.prelu(x, w.leaky_trace())
    np.testing.assert_allclose(y.numpy(), [[1.0, -0.5], [-1.5, 4.0]])
    grads = y.sum().backward()
    np.testing.assert_allclose(grads.get(w).numpy(), [-3.0, -2.0])


def test_prelu_channel_mismatch_names_shapes() -> None:
    """A slope count that is neither 1 nor the channel count is a ShapeError naming both shapes."""
    dev = Cpu()
    with pytest.raises(ShapeError, match=r"prelu: .*\(4,\).*\(2, 3\)"):
        gtops.prelu(dev.zeros((2, 3)), dev.zeros((4,)))
