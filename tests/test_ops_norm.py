"""layer_norm / rms_norm: the bandwidth kernels of ``devices/kernels/norm.py`` and the ops.

Checked against (1) the oracle: the plain-numpy forward and backward the ops used before
the kernels were rewritten (copied below unchanged in substance, float64 or the input's
dtype), (2) PyTorch's ``F.layer_norm`` / ``F.rms_norm`` in float64 and float32 (values and
gradients, and double backward for the second rule), (3) finite differences in float64.
Cases: with and without weight/bias, one and two normalised dims, widths 1, 3 and 257,
several eps, one row and many rows (serial and ``prange`` kernels), non-contiguous inputs,
gradients skipped when not wanted, and bitwise reproducibility of ``dw``/``db`` whatever the
kernel (serial or parallel) and thread count.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor
from gradtape.autograd import grad
from gradtape.devices.kernels import norm as _norm
from gradtape.ops import layer_norm, rms_norm
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(1717)


# ----- the oracle: the pre-rewrite numpy forward and backward ------------------------------


def oracle_forward(
    x: Array, k: int, w: Array | None, b: Array | None, eps: float, centered: bool
) -> tuple[Array, Array, Array]:
    """``(y, mean, rstd)``: the numpy forward the ops used before the kernels were rewritten."""
    axes = tuple(range(x.ndim - k, x.ndim))
    if centered:
        mu = x.mean(axis=axes, keepdims=True)
        xc = x - mu
    else:
        mu = np.zeros(x.shape[: x.ndim - k] + (1,) * k, x.dtype)
        xc = x
    var = np.mean(xc * xc, axis=axes, keepdims=True)
    r = np.divide(x.dtype.type(1), np.sqrt(var + x.dtype.type(eps)))
    y = np.multiply(xc, r)
    if w is not None:
        y *= w
    if b is not None:
        y += b
    lead = x.shape[: x.ndim - k]
    return y, mu.reshape(lead), r.reshape(lead)


def oracle_backward(
    g: Array, x: Array, k: int, w: Array | None, mean: Array, rstd: Array, centered: bool
) -> tuple[Array, Array, Array]:
    """``(dx, dw, db)``: the numpy backward the ops used before the kernels were rewritten."""
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    kept = mean.shape + (1,) * k
    r = rstd.reshape(kept)
    xh = (x - mean.reshape(kept)) * r
    dw = np.asarray((g * xh).sum(axis=lead))
    db = np.asarray(g.sum(axis=lead))
    dxh = g * w if w is not None else g
    inner = dxh - xh * np.mean(dxh * xh, axis=axes, keepdims=True)
    if centered:
        inner -= np.mean(dxh, axis=axes, keepdims=True)
    return np.multiply(inner, r), dw, db


# ----- helpers ---------------------------------------------------------------------------


def normal(shape: tuple[int, ...], dtype: Any = np.float64, scale: float = 1.0, shift: float = 0.0) -> Array:
    return (_RNG.standard_normal(shape) * scale + shift).astype(dtype)


def strided(a: Array) -> Array:
    """The same values as a non-contiguous view (every other element of a wider array)."""
    wide = np.empty((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)
    wide[..., ::2] = a
    v = wide[..., ::2]
    assert not v.flags.c_contiguous
    return v


def tols(dtype: Any) -> tuple[float, float]:
    return (1e-12, 1e-12) if dtype == np.float64 else (2e-5, 2e-5)


def run_op(
    centered: bool,
    x: Array,
    k: int,
    w: Array | None,
    b: Array | None,
    eps: float,
    g: Array,
    create_graph: bool = False,
) -> tuple[Array, list[Array | None]]:
    """The op's output and the gradients of ``sum(y * g)`` for x, w, b (traced)."""
    store = Gradients.leaky()
    xt: T = Tensor(x, DEV).trace(store)
    wt = DEV.tensor(w).trace(store) if w is not None else None
    bt = DEV.tensor(b).trace(store) if b is not None else None
    if centered:
        y = layer_norm(xt, x.shape[x.ndim - k :], wt, bt, eps)
    else:
        y = rms_norm(xt, wt, eps)
    ins = [t for t in (xt, wt, bt) if t is not None]
    gs = grad(y, ins, grad_outputs=g, create_graph=create_graph)
    out: list[Array | None] = [gs[0].numpy() if gs[0] is not None else None]
    it = iter(gs[1:])
    out.append(next(it).numpy() if wt is not None else None)  # type: ignore[union-attr]
    out.append(next(it).numpy() if bt is not None else None)  # type: ignore[union-attr]
    return y.numpy(), out


# ----- kernels against the oracle ----------------------------------------------------------

_SHAPES = [
    pytest.param((5, 257), 1, id="rows5-w257"),
    pytest.param((1, 3), 1, id="one-row-w3"),
    pytest.param((6, 1), 1, id="width1"),
    pytest.param((2, 3, 4, 5), 2, id="two-dims"),
    pytest.param((7,), 1, id="rank1"),
    pytest.param((4100, 257), 1, id="parallel-w257"),
    pytest.param((300, 60, 61), 2, id="parallel-two-dims"),
]


@pytest.mark.parametrize("affine", ["none", "w", "wb"])
@pytest.mark.parametrize("centered", [True, False], ids=["layer", "rms"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize(("shape", "k"), _SHAPES)
def test_kernels_match_oracle(
    shape: tuple[int, ...], k: int, dtype: Any, centered: bool, affine: str, request: pytest.FixtureRequest
) -> None:
    """norm_forward / norm_backward give the oracle's y, mean, rstd, dx, dw, db."""
    nshape = shape[len(shape) - k :]
    x = normal(shape, dtype, 2.0, 0.5)
    g = normal(shape, dtype)
    w = normal(nshape, dtype) if affine != "none" else None
    b = normal(nshape, dtype) if affine == "wb" else None
    if "parallel" in request.node.name:
        assert math.prod(shape) >= _norm.PARALLEL_THRESHOLD
    eps = 1e-5
    y, mean, rstd = _norm.norm_forward(x, k, w, b, eps, centered)
    ry, rmean, rrstd = oracle_forward(x.astype(np.float64), k, w, b, eps, centered)
    assert y.dtype == mean.dtype == rstd.dtype == dtype
    assert mean.shape == rstd.shape == shape[: len(shape) - k]
    rtol, atol = tols(dtype)
    np.testing.assert_allclose(y, ry, rtol=rtol, atol=atol * 10)
    np.testing.assert_allclose(mean, rmean, rtol=rtol, atol=atol)
    np.testing.assert_allclose(rstd, rrstd, rtol=rtol * 10, atol=atol)
    dx, dw, db = _norm.norm_backward(g, x, k, w, mean, rstd, centered)
    assert dx is not None and dw is not None and db is not None
    assert dx.dtype == dw.dtype == db.dtype == dtype and dw.shape == db.shape == nshape
    rdx, rdw, rdb = oracle_backward(g.astype(np.float64), x.astype(np.float64), k, w, rmean, rrstd, centered)
    # dx is a difference of terms of size |g * w| * rstd (for RMS norm of width 1 they cancel
    # to about eps * rstd**2): compare against that scale
    kept = rrstd.reshape(rrstd.shape + (1,) * k)
    scale = float(np.abs(g * (w if w is not None else 1) * kept).max())
    np.testing.assert_allclose(dx, rdx, rtol=rtol * 10, atol=atol * 10 * scale)
    sums = math.prod(shape[: len(shape) - k]) ** 0.5
    np.testing.assert_allclose(dw, rdw, rtol=rtol * 10, atol=atol * 10 * sums)
    np.testing.assert_allclose(db, rdb, rtol=rtol * 10, atol=atol * 10 * sums)


@pytest.mark.parametrize("eps", [0.0, 1e-6, 0.5, 10.0])
@pytest.mark.parametrize("centered", [True, False], ids=["layer", "rms"])
def test_kernels_eps(centered: bool, eps: float) -> None:
    """eps is added to the variance (mean square), as in the oracle."""
    x, g, w = normal((4, 9)), normal((4, 9)), normal((9,))
    y, mean, rstd = _norm.norm_forward(x, 1, w, None, eps, centered)
    ry, rmean, rrstd = oracle_forward(x, 1, w, None, eps, centered)
    np.testing.assert_allclose(y, ry, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rstd, rrstd, rtol=1e-12)
    dx, dw, _ = _norm.norm_backward(g, x, 1, w, mean, rstd, centered)
    rdx, rdw, _ = oracle_backward(g, x, 1, w, rmean, rrstd, centered)
    np.testing.assert_allclose(dx, rdx, rtol=1e-10, atol=1e-12)  # type: ignore[arg-type]
    np.testing.assert_allclose(dw, rdw, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(6, 33), (4100, 260)], ids=["serial", "parallel"])
def test_kernels_non_contiguous(shape: tuple[int, int]) -> None:
    """Strided x, g and parameters give the values of their contiguous copies, bitwise."""
    assert (math.prod(shape) >= _norm.PARALLEL_THRESHOLD) == (shape[0] > 6)
    x, g, w, b = normal(shape, np.float32), normal(shape, np.float32), normal(shape[1:]), normal(shape[1:])
    w32, b32 = w.astype(np.float32), b.astype(np.float32)
    y, mean, rstd = _norm.norm_forward(x, 1, w32, b32, 1e-5, True)
    ys, means, rstds = _norm.norm_forward(strided(x), 1, strided(w32), strided(b32), 1e-5, True)
    np.testing.assert_array_equal(ys, y)
    np.testing.assert_array_equal(means, mean)
    np.testing.assert_array_equal(rstds, rstd)
    xf = np.asfortranarray(x)
    np.testing.assert_array_equal(_norm.norm_forward(xf, 1, w32, b32, 1e-5, True)[0], y)
    ref = _norm.norm_backward(g, x, 1, w32, mean, rstd, True)
    got = _norm.norm_backward(np.asfortranarray(g), strided(x), 1, strided(w32), mean[::-1][::-1], rstd, True)
    for a, e in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("seed", range(8))
def test_kernels_large_mean_two_pass(seed: int) -> None:
    """|mean| >> std: the two-pass variance keeps float32 rows accurate (E[x^2] - mean^2 in
    float32 would return 0 or garbage here). ``y`` can be no closer than the float32 mean
    allows: near 1e4 the mean is held to its spacing (9.8e-4), and a row sum of 512 such values
    rounds a few spacings more, each times ``rstd`` (about 1) in ``y``: 4 spacings allowed.
    Each seed draws its own rows (the module's shared generator made the rows depend on which
    tests ran before, and one draw came within 1.13 spacings under pytest-xdist)."""
    x = (np.random.default_rng(seed).standard_normal((8, 512)) + 1e4).astype(np.float32)
    y, _, rstd = _norm.norm_forward(x, 1, None, None, 0.0, True)
    x64 = x.astype(np.float64)
    ry, _, rrstd = oracle_forward(x64, 1, None, None, 0.0, True)
    np.testing.assert_allclose(rstd, rrstd, rtol=1e-6)
    np.testing.assert_allclose(y, ry, rtol=0, atol=4 * float(np.spacing(np.float32(1e4))) * float(rstd.max()))


@pytest.mark.parametrize("need", ["x", "w", "b", "xw", "wb", "none"])
@pytest.mark.parametrize("shape", [(5, 7), (3500, 300)], ids=["serial", "parallel"])
def test_kernels_skip_unwanted(shape: tuple[int, int], need: str) -> None:
    """need_dx / need_dw / need_db: the gradients asked for are the full backward's,
    bitwise; the others are None."""
    assert (math.prod(shape) >= _norm.PARALLEL_THRESHOLD) == (shape[0] > 5)
    x, g, w = normal(shape, np.float32), normal(shape, np.float32), normal(shape[1:], np.float32)
    _, mean, rstd = _norm.norm_forward(x, 1, w, None, 1e-5, True)
    full = _norm.norm_backward(g, x, 1, w, mean, rstd, True)
    got = _norm.norm_backward(g, x, 1, w, mean, rstd, True, "x" in need, "w" in need, "b" in need)
    for name, a, e in zip("xwb", got, full, strict=True):
        if name in need:
            np.testing.assert_array_equal(a, e)
        else:
            assert a is None


def test_backward_bitwise_reproducible() -> None:
    """dw/db: the serial and the prange kernels, and 1 or 2 threads, give the same bits
    (fixed chunks of rows, partial sums added in chunk order)."""
    shape = (3501, 300)
    assert math.prod(shape) >= _norm.PARALLEL_THRESHOLD
    x, g, w = normal(shape, np.float32), normal(shape, np.float32), normal(shape[1:], np.float32)
    _, mean, rstd = _norm.norm_forward(x, 1, w, None, 1e-5, True)
    inv_n = np.float32(1 / shape[1])
    results = []
    for kernel in (_norm._norm_backward_serial, _norm._norm_backward_parallel):
        dx = np.empty_like(x)
        dw, db = np.full((_norm.CHUNKS, shape[1]), np.nan), np.full((_norm.CHUNKS, shape[1]), np.nan)
        kernel(dx, dw, db, x, g, w, mean, rstd, inv_n, True)
        results.append((dx, dw, db))
    for a, e in zip(results[0], results[1], strict=True):
        np.testing.assert_array_equal(a, e)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _norm.norm_backward(g, x, 1, w, mean, rstd, True)
    finally:
        numba.set_num_threads(before)
    two = _norm.norm_backward(g, x, 1, w, mean, rstd, True)
    for p1, p2 in zip(one, two, strict=True):
        np.testing.assert_array_equal(p1, p2)
    # the chunks' sum equals the float64 sum of the oracle's terms to float32 rounding
    _, rdw, rdb = oracle_backward(g.astype(np.float64), x.astype(np.float64), 1, w, mean, rstd, True)
    assert two[1] is not None and two[2] is not None
    np.testing.assert_allclose(two[1], rdw, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(two[2], rdb, rtol=1e-5, atol=1e-4)


def test_kernel_errors() -> None:
    """Bad shapes and dtypes raise before any kernel runs, naming the function and shapes."""
    x = normal((3, 4), np.float32)
    with pytest.raises(ShapeError, match=r"norm_forward: parameter of shape \(5,\).*\(4,\)"):
        _norm.norm_forward(x, 1, normal((5,), np.float32), None, 1e-5, True)
    with pytest.raises(DTypeError, match="norm_forward: x has dtype int32"):
        _norm.norm_forward(np.zeros((3, 4), np.int32), 1, None, None, 1e-5, True)
    with pytest.raises(ShapeError, match=r"norm_forward: cannot normalise the last 0 dims"):
        _norm.norm_forward(x, 0, None, None, 1e-5, True)
    _, m, r = _norm.norm_forward(x, 1, None, None, 1e-5, True)
    with pytest.raises(ShapeError, match=r"norm_backward: gradient \(3, 4\) float64"):
        _norm.norm_backward(normal((3, 4)), x, 1, None, m, r, True)
    with pytest.raises(ShapeError, match=r"norm_backward: mean \(2,\) / rstd \(3,\).*\(3,\)"):
        _norm.norm_backward(x, x, 1, None, m[:2], r, True)


# ----- the ops against PyTorch -------------------------------------------------------------

_OP_CASES = [
    pytest.param(True, (4, 257), 1, "wb", 1e-5, id="ln-w257-affine"),
    pytest.param(True, (1, 3), 1, "none", 1e-5, id="ln-one-row-w3"),
    pytest.param(True, (5, 1), 1, "wb", 1e-3, id="ln-width1"),
    pytest.param(True, (2, 3, 4, 5), 2, "wb", 1e-5, id="ln-two-dims"),
    pytest.param(True, (3, 6), 1, "w", 0.1, id="ln-weight-only-eps"),
    pytest.param(True, (3, 6), 1, "b", 1e-5, id="ln-bias-only"),
    pytest.param(True, (4100, 257), 1, "wb", 1e-5, id="ln-parallel"),
    pytest.param(False, (4, 257), 1, "w", 1e-6, id="rms-w257"),
    pytest.param(False, (1, 3), 1, "none", 1e-6, id="rms-one-row"),
    pytest.param(False, (5, 1), 1, "w", 1e-3, id="rms-width1"),
    pytest.param(False, (2, 3, 5), 1, "w", 0.5, id="rms-rank3-eps"),
    pytest.param(False, (4100, 257), 1, "w", 1e-6, id="rms-parallel"),
]


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "strided"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize(("centered", "shape", "k", "affine", "eps"), _OP_CASES)
def test_ops_match_torch(
    centered: bool, shape: tuple[int, ...], k: int, affine: str, eps: float, dtype: Any, noncontig: bool
) -> None:
    """F.layer_norm / F.rms_norm: output and the gradients of sum(y * g) for x, weight, bias."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    nshape = shape[len(shape) - k :]
    assert (math.prod(shape) >= _norm.PARALLEL_THRESHOLD) == (shape[0] == 4100)  # the "parallel" cases
    x, g = normal(shape, dtype, 1.5, 0.3), normal(shape, dtype)
    w = normal(nshape, dtype) if "w" in affine else None
    b = normal(nshape, dtype) if "b" in affine else None
    y, (gx, gw, gb) = run_op(centered, strided(x) if noncontig else x, k, w, b, eps, g)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True) if w is not None else None
    tb = torch.tensor(b, requires_grad=True) if b is not None else None
    ty = F.layer_norm(tx, nshape, tw, tb, eps) if centered else F.rms_norm(tx, nshape, tw, eps)
    ty.backward(torch.tensor(g))
    rtol, atol = (1e-10, 1e-11) if dtype == np.float64 else (1e-4, 2e-4)
    assert y.dtype == dtype and gx is not None and gx.dtype == dtype
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=rtol, atol=atol)
    lead = math.prod(shape[: len(shape) - k]) ** 0.5
    if tw is not None:
        np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=rtol, atol=atol * lead)  # type: ignore[arg-type]
    if tb is not None:
        np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=rtol, atol=atol * lead)  # type: ignore[arg-type]


# ----- gradcheck (float64, finite differences) ---------------------------------------------

_GC_CASES = [
    pytest.param(lambda x, w, b: layer_norm(x, weight=w, bias=b), [(3, 5), (5,), (5,)], id="ln-affine"),
    pytest.param(lambda x: layer_norm(x), [(1, 3)], id="ln-one-row"),
    pytest.param(lambda x, w, b: layer_norm(x, 1, w, b), [(4, 1), (1,), (1,)], id="ln-width1"),
    pytest.param(lambda x, w, b: layer_norm(x, (3, 4), w, b, 0.1), [(2, 3, 4), (3, 4), (3, 4)], id="ln-two-dims"),
    pytest.param(lambda x, w: layer_norm(x, weight=w) * x, [(3, 4), (4,)], id="ln-reused"),
    pytest.param(lambda x, w: rms_norm(x, w, 1e-3), [(3, 5), (5,)], id="rms-weight"),
    pytest.param(lambda x: rms_norm(x), [(1, 3)], id="rms-one-row"),
    pytest.param(lambda x, w: rms_norm(x, w), [(4, 1), (1,)], id="rms-width1"),
]


@pytest.mark.parametrize(("fn", "shapes"), _GC_CASES)
def test_gradcheck(fn: Callable[..., Any], shapes: list[tuple[int, ...]]) -> None:
    """The fused backward agrees with central differences in float64."""
    assert gradcheck(fn, [normal(s) for s in shapes])


def test_gradcheck_non_contiguous() -> None:
    """A transposed (non-contiguous) input goes through the same gradients."""
    x = DEV.tensor(normal((5, 4))).T
    assert gradcheck(lambda x_, w_, b_: layer_norm(x_, weight=w_, bias=b_), [x, normal((5,)), normal((5,))])
    assert gradcheck(lambda x_, w_: rms_norm(x_, w_, 1e-4), [x, normal((5,))])


# ----- skipped gradients in the op ---------------------------------------------------------


def test_op_skips_unwanted_gradients() -> None:
    """With retained leafs, only those get gradients, equal to the full backward's."""
    x, w, b, g = normal((6, 8), np.float32), normal((8,), np.float32), normal((8,), np.float32), normal((6, 8))
    g32 = g.astype(np.float32)
    _, full = run_op(True, x, 1, w, b, 1e-5, g32)
    for keep in ("w", "b", "x", "wb"):
        store = Gradients.leaky()
        xt, wt, bt = DEV.tensor(x), DEV.tensor(w), DEV.tensor(b)
        named = {"x": xt, "w": wt, "b": bt}
        store.retain_leafs([named[c] for c in keep])
        y = layer_norm(xt.trace(store), weight=wt.trace(store), bias=bt.trace(store))
        grads = y.backward(g32)
        for i, c in enumerate("xwb"):
            if c in keep:
                np.testing.assert_array_equal(grads.get(named[c]).numpy(), full[i])
            else:
                assert named[c] not in grads


# ----- the second rule (higher order) ------------------------------------------------------


@pytest.mark.parametrize(
    ("centered", "shape", "k", "affine"),
    [
        pytest.param(True, (3, 5), 1, "wb", id="ln"),
        pytest.param(True, (2, 3, 4), 2, "wb", id="ln-two-dims"),
        pytest.param(True, (1, 3), 1, "none", id="ln-one-row"),
        pytest.param(False, (3, 5), 1, "w", id="rms"),
        pytest.param(False, (4, 1), 1, "none", id="rms-width1"),
    ],
)
def test_second_rule_matches_fast_rule(centered: bool, shape: tuple[int, ...], k: int, affine: str) -> None:
    """The gradients computed by the differentiable rule (create_graph) equal the fused ones."""
    nshape = shape[len(shape) - k :]
    x, g = normal(shape), normal(shape)
    w = normal(nshape) if "w" in affine else None
    b = normal(nshape) if "b" in affine else None
    eps = 1e-5 if centered else 1e-6
    _, fast = run_op(centered, x, k, w, b, eps, g)
    _, diff = run_op(centered, x, k, w, b, eps, g, create_graph=True)
    for a, e in zip(diff, fast, strict=True):
        if e is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize("centered", [True, False], ids=["layer", "rms"])
def test_double_backward_matches_torch(centered: bool) -> None:
    """d/d(x, w) of <dL/dx, v> (a gradient penalty) equals PyTorch's double backward."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    shape, eps = (4, 6), 1e-5
    x, g, v, w, b = normal(shape), normal(shape), normal(shape), normal((6,)), normal((6,))
    store = Gradients.leaky()
    xt, wt = DEV.tensor(x).trace(store), DEV.tensor(w).trace(store)
    bt = DEV.tensor(b).trace(store)
    y = layer_norm(xt, weight=wt, bias=bt, eps=eps) if centered else rms_norm(xt, wt, eps)
    (gx,) = grad(y, xt, grad_outputs=g, create_graph=True)
    assert gx is not None
    hx, hw = grad((gx * DEV.tensor(v)).sum(), [xt, wt])
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    ty = F.layer_norm(tx, (6,), tw, tb, eps) if centered else F.rms_norm(tx, (6,), tw, eps)
    (tgx,) = torch.autograd.grad(ty, tx, torch.tensor(g), create_graph=True)
    thx, thw = torch.autograd.grad((tgx * torch.tensor(v)).sum(), [tx, tw])
    np.testing.assert_allclose(gx.numpy(), tgx.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert hx is not None and hw is not None
    np.testing.assert_allclose(hx.numpy(), thx.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(hw.numpy(), thw.numpy(), rtol=1e-9, atol=1e-11)


# ----- the modules call the ops (fast path) ------------------------------------------------


def test_modules_use_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """nn.LayerNorm and nn.RMSNorm run norm_forward / norm_backward (the fused kernels)."""
    from gradtape import nn

    calls: list[str] = []
    fwd, bwd = _norm.norm_forward, _norm.norm_backward

    def spy_fwd(*a: Any, **kw: Any) -> Any:
        calls.append("fwd")
        return fwd(*a, **kw)

    def spy_bwd(*a: Any, **kw: Any) -> Any:
        calls.append("bwd")
        return bwd(*a, **kw)

    monkeypatch.setattr(_norm, "norm_forward", spy_fwd)
    monkeypatch.setattr(_norm, "norm_backward", spy_bwd)
    x = normal((3, 8), np.float32)
    for m in (nn.LayerNorm(8), nn.RMSNorm(8)):
        calls.clear()
        store = Gradients.leaky()
        y = m(DEV.tensor(x).trace(store))
        y.backward(np.ones_like(x))
        assert calls == ["fwd", "bwd"]
