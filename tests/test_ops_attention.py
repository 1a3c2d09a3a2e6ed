"""``ops.scaled_dot_product_attention`` (fused: BLAS products around one kernel pass each way)
and its use in ``nn.MultiHeadAttention``: values and the three gradients against PyTorch's
``F.scaled_dot_product_attention`` in float64 and float32 over masks, shapes and scales;
finite differences; the second rule (grad of grad) against the first rule and against
PyTorch's double backward; dropout; errors; no subnormals; the fused kernels against numpy
in both the serial and the parallel variant; the packed q/k/v split of ``MultiHeadAttention``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, Tensor, nn, ops
from gradtape.devices.kernels import attention as ka
from gradtape.errors import DTypeError, ShapeError
from gradtape.functional import hvp
from gradtape.testing import gradcheck

dev = Cpu(seed=0)
Array = np.ndarray[Any, Any]
sdpa = ops.scaled_dot_product_attention


def _data(shapes: list[tuple[int, ...]], dt: Any, seed: int) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dt) for s in shapes]


def _ours(qa: Array, ka_: Array, va: Array, g: Array, **kw: Any) -> tuple[Array, list[Array]]:
    grads = Gradients()
    ts = [dev.tensor(a).trace(grads) for a in (qa, ka_, va)]
    y = sdpa(ts[0], ts[1], ts[2], **kw)
    (y * dev.tensor(g)).sum().backward()
    return np.asarray(y.data), [np.asarray(grads.get(t).data) for t in ts]


def _torch(qa: Array, ka_: Array, va: Array, g: Array, attn_mask: Any = None, **kw: Any) -> tuple[Array, list[Array]]:
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(a, requires_grad=True) for a in (qa, ka_, va)]
    m = None if attn_mask is None else torch.tensor(np.asarray(attn_mask))
    y = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=m, **kw)
    y.backward(torch.tensor(g))
    return y.detach().numpy(), [t.grad.numpy() for t in ts]


CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], dict[str, Any]]] = {
    # name: (q, k, v shapes, keyword arguments; "mask" builds a mask from the shapes)
    "rank4": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), {}),
    "rank3": ((3, 4, 5), (3, 6, 5), (3, 6, 2), {}),
    "odd_L1_S7_E5": ((2, 1, 1, 5), (2, 1, 7, 5), (2, 1, 7, 3), {}),
    "scale": ((2, 2, 4, 5), (2, 2, 6, 5), (2, 2, 6, 3), {"scale": 0.37}),
    "causal_square": ((2, 3, 6, 5), (2, 3, 6, 5), (2, 3, 6, 4), {"is_causal": True}),
    "causal_L<S": ((2, 3, 4, 5), (2, 3, 7, 5), (2, 3, 7, 4), {"is_causal": True}),
    "causal_L>S": ((2, 7, 5), (2, 4, 5), (2, 4, 4), {"is_causal": True}),
    # L >= 256: the causal products run in row blocks (ops.attention._blocks)
    "causal_blocks_square": ((1, 2, 512, 8), (1, 2, 512, 8), (1, 2, 512, 5), {"is_causal": True}),
    "causal_blocks_L<S": ((2, 270, 6), (2, 290, 6), (2, 290, 3), {"is_causal": True}),
    "causal_blocks_L>S": ((1, 2, 300, 4), (1, 2, 145, 4), (1, 2, 145, 3), {"is_causal": True}),
    "bool_LS": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 3), {"mask": ("bool", (4, 6))}),
    "bool_B1LS": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 3), {"mask": ("bool", (2, 1, 4, 6))}),
    "bool_full": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 3), {"mask": ("bool", (2, 3, 4, 6))}),
    "float_LS": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 3), {"mask": ("float", (4, 6))}),
    "float_B1LS": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 3), {"mask": ("float", (2, 1, 4, 6))}),
    "float_rank3": ((3, 4, 5), (3, 6, 5), (3, 6, 3), {"mask": ("float", (3, 1, 6))}),
    "bool_rows_fully_masked": ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 3), {"mask": ("dead", (2, 1, 4, 6))}),
    "float_rows_fully_masked": ((2, 2, 4, 5), (2, 2, 6, 5), (2, 2, 6, 3), {"mask": ("deadf", (4, 6))}),
}


def _kwargs(spec: dict[str, Any], dt: Any, seed: int) -> dict[str, Any]:
    kw = {k: v for k, v in spec.items() if k != "mask"}
    if "mask" in spec:
        kind, shape = spec["mask"]
        rng = np.random.default_rng(seed + 100)
        m = rng.random(shape) > 0.35
        m[..., 0] = True  # every row keeps a key, but in the "dead" masks
        if kind.startswith("dead"):
            m[..., 1, :] = False  # query 1 sees no key
        if kind == "float":
            kw["attn_mask"] = rng.standard_normal(shape).astype(dt)
        elif kind == "deadf":
            kw["attn_mask"] = np.where(m, 0.5, -np.inf).astype(dt)
        else:
            kw["attn_mask"] = m
    return kw


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name: str, dt: Any) -> None:
    sq, sk, sv, spec = CASES[name]
    qa, ka_, va = _data([sq, sk, sv], dt, seed=len(name))
    g = _data([sq[:-1] + sv[-1:]], dt, seed=7)[0]
    kw = _kwargs(spec, dt, seed=len(name))
    y, grads = _ours(qa, ka_, va, g, **kw)
    ty, tgrads = _torch(qa, ka_, va, g, **kw)
    assert y.dtype == dt and y.shape == ty.shape
    rtol, atol = (1e-10, 1e-12) if dt == np.float64 else (2e-4, 2e-5)
    np.testing.assert_allclose(y, ty, rtol=rtol, atol=atol)
    for name_, a, b in zip("qkv", grads, tgrads, strict=True):
        assert a.dtype == dt
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=name_)
    if "dead" in str(spec.get("mask", "")):  # PyTorch 2.13 CPU: zeros, and no gradient through them
        assert np.all(y[..., 1, :] == 0) and np.all(grads[0][..., 1, :] == 0)


def test_bool_and_float_masks_agree_and_mask_tensor_accepted() -> None:
    qa, ka_, va = _data([(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)], np.float64, 3)
    m = np.random.default_rng(0).random((3, 5)) > 0.3
    m[:, 0] = True
    q, k, v = (dev.tensor(a) for a in (qa, ka_, va))
    a = sdpa(q, k, v, attn_mask=m).numpy()
    np.testing.assert_array_equal(sdpa(q, k, v, attn_mask=np.where(m, 0.0, -np.inf)).numpy(), a)
    np.testing.assert_array_equal(sdpa(q, k, v, attn_mask=dev.tensor(m.astype(np.float64)) > 0.5).numpy(), a)
    causal = sdpa(q, k, v, is_causal=True).numpy()
    np.testing.assert_array_equal(sdpa(q, k, v, attn_mask=np.tri(3, 5, dtype=bool)).numpy(), causal)


@pytest.mark.parametrize("name", ["rank4", "causal_L<S", "bool_B1LS", "float_rank3", "bool_rows_fully_masked"])
def test_gradcheck_float64(name: str) -> None:
    sq, sk, sv, spec = CASES[name]
    qa, ka_, va = _data([sq, sk, sv], np.float64, seed=11)
    kw = _kwargs(spec, np.float64, seed=len(name))
    assert gradcheck(lambda a, b, c: sdpa(a, b, c, **kw), [dev.tensor(qa), dev.tensor(ka_), dev.tensor(va)])


def test_non_contiguous_inputs() -> None:
    qa, ka_, va = _data([(2, 5, 3), (2, 5, 4), (2, 3, 4)], np.float64, 12)
    views = [np.swapaxes(a, 1, 2) for a in (qa, ka_, va)]  # (2, 3, 5), (2, 4, 5), (2, 4, 3) views
    g = _data([(2, 3, 3)], np.float64, 13)[0]
    grads = Gradients()
    ts: list[Tensor[Any, Any]] = [Tensor(a, dev).trace(grads) for a in views]
    assert not ts[0].data.flags.c_contiguous
    y = sdpa(ts[0], ts[1], ts[2], scale=0.8)
    (y * dev.tensor(g)).sum().backward()
    c = [np.ascontiguousarray(a) for a in views]
    want, wgrads = _ours(c[0], c[1], c[2], g, scale=0.8)
    np.testing.assert_array_equal(y.numpy(), want)
    for t, w in zip(ts, wgrads, strict=True):
        np.testing.assert_allclose(grads.get(t).numpy(), w, rtol=1e-14, atol=1e-15)
    assert gradcheck(lambda a, b, c: sdpa(a, b, c, scale=0.8), [Tensor(a, dev) for a in views])


def _second_order(kw: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    """hvp (grad of <grad f, u>, the second rule recorded) against PyTorch's double backward;
    the first gradient from the second rule against the fused first rule."""
    torch = pytest.importorskip("torch")
    qa, ka_, va = _data(shapes, np.float64, 21)
    w = _data([shapes[0][:-1] + shapes[2][-1:]], np.float64, 22)[0]
    us = _data(shapes, np.float64, 23)

    def f(q: Any, k: Any, v: Any) -> Any:
        y = sdpa(q, k, v, **kw)
        return ((y * y) * dev.tensor(w)).sum()  # nonlinear in y: second derivatives through v too

    xs = tuple(dev.tensor(a) for a in (qa, ka_, va))
    _, hv = hvp(f, xs, tuple(dev.tensor(u) for u in us))
    tkw = dict(kw)
    if "attn_mask" in tkw:
        tkw["attn_mask"] = torch.tensor(np.asarray(tkw["attn_mask"]))
    ts = [torch.tensor(a, requires_grad=True) for a in (qa, ka_, va)]
    ty = torch.nn.functional.scaled_dot_product_attention(*ts, **tkw)
    tl = ((ty * ty) * torch.tensor(w)).sum()
    tg = torch.autograd.grad(tl, ts, create_graph=True)
    dot = sum((g * torch.tensor(u)).sum() for g, u in zip(tg, us, strict=True))
    th = torch.autograd.grad(dot, ts)
    for name, a, b in zip("qkv", hv, th, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-11, err_msg=name)
    # the first gradient, by the second rule (create_graph) and by the fused first rule
    from gradtape.autograd import grad

    grads = Gradients.leaky()
    traced = [x.trace(grads) for x in xs]
    slow = grad(f(*traced), traced, create_graph=True)
    grads2 = Gradients()
    traced2 = [x.trace(grads2) for x in xs]
    f(*traced2).backward()
    for s, x in zip(slow, traced2, strict=True):
        assert s is not None
        np.testing.assert_allclose(s.numpy(), grads2.get(x).numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["rank4", "causal_L>S", "bool_LS", "float_B1LS", "scale", "bool_rows_fully_masked"])
def test_second_rule_matches_torch_double_backward(name: str) -> None:
    sq, sk, sv, spec = CASES[name]
    _second_order(_kwargs(spec, np.float64, seed=len(name)), [sq, sk, sv])


def test_dropout_zero_is_exact_and_dropout_statistics() -> None:
    qa, ka_, va = _data([(4, 2, 16, 8), (4, 2, 16, 8), (4, 2, 16, 8)], np.float64, 5)
    q, k, v = (dev.tensor(a) for a in (qa, ka_, va))
    base = sdpa(q, k, v).numpy()
    np.testing.assert_array_equal(sdpa(q, k, v, dropout_p=0.0, rng=3).numpy(), base)
    a = sdpa(q, k, v, dropout_p=0.3, rng=7).numpy()
    np.testing.assert_array_equal(sdpa(q, k, v, dropout_p=0.3, rng=7).numpy(), a)  # seeded: same mask
    assert not np.allclose(sdpa(q, k, v, dropout_p=0.3, rng=8).numpy(), a)
    # the mask is ops.dropout's: rng.random(P.shape) >= p, kept weights scaled by 1 / (1 - p)
    s = qa @ np.swapaxes(ka_, -1, -2) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    keep = np.random.default_rng(7).random(p.shape) >= 0.3
    np.testing.assert_allclose(a, (p * keep / 0.7) @ va, rtol=1e-12, atol=1e-13)
    # unbiased: the mean over many seeds approaches the undropped output
    mean = np.mean([sdpa(q, k, v, dropout_p=0.5, rng=s_).numpy() for s_ in range(300)], axis=0)
    assert np.abs(mean - base).mean() < 0.05 * np.abs(base).mean() + 0.01
    np.testing.assert_array_equal(sdpa(q, k, v, dropout_p=1.0).numpy(), 0.0)


def test_dropout_gradients() -> None:
    qa, ka_, va = _data([(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3)], np.float64, 6)
    assert gradcheck(
        lambda a, b, c: sdpa(a, b, c, dropout_p=0.4, rng=5), [dev.tensor(qa), dev.tensor(ka_), dev.tensor(va)]
    )
    _second_order({"dropout_p": 0.0}, [(2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3)])
    # dropout in the second rule: the recorded gradient equals the fused one
    from gradtape.autograd import grad

    xs = [dev.tensor(a) for a in (qa, ka_, va)]
    grads = Gradients.leaky()
    tr = [x.trace(grads) for x in xs]
    slow = grad((sdpa(tr[0], tr[1], tr[2], dropout_p=0.4, rng=9) ** 2).sum(), tr, create_graph=True)
    grads2 = Gradients()
    tr2 = [x.trace(grads2) for x in xs]
    (sdpa(tr2[0], tr2[1], tr2[2], dropout_p=0.4, rng=9) ** 2).sum().backward()
    for s, x in zip(slow, tr2, strict=True):
        assert s is not None
        np.testing.assert_allclose(s.numpy(), grads2.get(x).numpy(), rtol=1e-10, atol=1e-12)


def test_errors() -> None:
    q, k, v = (dev.tensor(a) for a in _data([(2, 3, 4), (2, 5, 4), (2, 5, 6)], np.float32, 1))
    with pytest.raises(ShapeError, match=r"scaled_dot_product_attention: q and k differ.*\(2, 3, 4\).*\(2, 5, 3\)"):
        sdpa(q, dev.tensor(np.zeros((2, 5, 3), np.float32)), v)
    with pytest.raises(ShapeError, match="k and v differ in the number of keys S"):
        sdpa(q, k, dev.tensor(np.zeros((2, 4, 6), np.float32)))
    with pytest.raises(ShapeError, match="batch dims"):
        sdpa(q, dev.tensor(np.zeros((3, 5, 4), np.float32)), dev.tensor(np.zeros((3, 5, 6), np.float32)))
    with pytest.raises(ShapeError, match="must all be 3-D"):
        sdpa(dev.tensor(np.zeros((1, 2, 3, 4), np.float32)), k, v)
    with pytest.raises(ShapeError, match=r"attn_mask of shape \(4, 5\) does not broadcast to the scores \(2, 3, 5\)"):
        sdpa(q, k, v, attn_mask=np.ones((4, 5), bool))
    with pytest.raises(DTypeError, match=r"attn_mask must be bool.*int64"):
        sdpa(q, k, v, attn_mask=np.ones((3, 5), np.int64))
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        sdpa(q, k, v, attn_mask=np.ones((3, 5), bool), is_causal=True)
    with pytest.raises(ValueError, match="dropout_p"):
        sdpa(q, k, v, dropout_p=1.5)
    with pytest.raises(ValueError, match="scale"):
        sdpa(q, k, v, scale="big")  # type: ignore[call-overload]
    with pytest.raises(DTypeError, match="share a dtype"):
        sdpa(q, k, dev.tensor(np.zeros((2, 5, 6), np.float64)))
    with pytest.raises(TypeError, match="scaled_dot_product_attention: v must be a Tensor"):
        sdpa(q, k, np.zeros((2, 5, 6), np.float32))  # type: ignore[call-overload]


def test_sharp_attention_has_no_subnormals() -> None:
    """Scores ~1e3 apart: exp underflows; P and the gradients hold zeros, never subnormals."""
    rng = np.random.default_rng(4)
    for dt in (np.float32, np.float64):
        qa = (rng.standard_normal((2, 2, 16, 8)) * 30).astype(dt)
        ka_ = (rng.standard_normal((2, 2, 16, 8)) * 30).astype(dt)
        va = rng.standard_normal((2, 2, 16, 8)).astype(dt)
        p = ka.attention_softmax(np.matmul(qa, np.swapaxes(ka_, -1, -2)), None, False, 1 / np.sqrt(8))
        tiny = np.finfo(dt).tiny
        assert np.all((p == 0) | (np.abs(p) >= tiny)) and (p == 0).any()
        with np.errstate(under="ignore"):  # the unflushed expression underflows
            s = np.matmul(qa, np.swapaxes(ka_, -1, -2)).astype(np.float64) / np.sqrt(8)
            ref = np.exp(s - s.max(-1, keepdims=True))
            ref /= ref.sum(-1, keepdims=True)
        assert np.abs(p - ref).max() <= 1e-6 if dt == np.float32 else 1e-13
        y, grads = _ours(qa, ka_, va, rng.standard_normal((2, 2, 16, 8)).astype(dt))
        for a in (y, *grads):
            assert np.all((a == 0) | (np.abs(a) >= tiny))
        d = ka.attention_softmax_backward(np.asarray(rng.standard_normal(p.shape), dt), p, None, False, 0.3)
        assert np.all((d == 0) | (np.abs(d) >= tiny))


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_kernels_serial_and_parallel(parallel: bool, dt: Any) -> None:
    rng = np.random.default_rng(2)
    s = rng.standard_normal((2, 3, 5, 7)).astype(dt)
    m = rng.random((3, 1, 7)) > 0.3
    m[..., 0] = True
    mf = rng.standard_normal((5, 7)).astype(dt)
    tol = 1e-6 if dt == np.float32 else 1e-14

    def soft(x: Array) -> Array:
        e = np.exp(x - x.max(-1, keepdims=True))
        out: Array = e / e.sum(-1, keepdims=True)
        return out

    for mask, causal, ref in (
        (None, False, soft(s * 0.5)),
        (np.broadcast_to(m, s.shape), False, soft(np.where(m, s * 0.5, -np.inf))),
        (np.broadcast_to(mf, s.shape), False, soft(s * 0.5 + mf)),
        (None, True, soft(np.where(np.tri(5, 7, dtype=bool), s * 0.5, -np.inf))),
    ):
        p = ka.attention_softmax(s.copy(), mask, causal, 0.5, parallel=parallel)
        np.testing.assert_allclose(p, ref, rtol=tol, atol=tol)
        d = rng.standard_normal(s.shape).astype(dt)
        drop = (rng.random(s.shape) > 0.2).astype(dt) * dt(1.25)
        want = 0.5 * p * (d * drop - (d * drop * p).sum(-1, keepdims=True))
        got = ka.attention_softmax_backward(d.copy(), p, drop, causal, 0.5, parallel=parallel)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    dead = np.zeros(s.shape, bool)
    assert np.all(ka.attention_softmax(s.copy(), dead, False, 1.0, parallel=parallel) == 0)
    assert np.all(np.isnan(ka.attention_softmax(s.copy(), dead, False, 1.0, nan_rows=True, parallel=parallel)))
    s2 = s.copy()
    s2[0, 0, 0, 3] = np.nan
    p = ka.attention_softmax(s2, None, False, 1.0, parallel=parallel)
    assert np.all(np.isnan(p[0, 0, 0])) and not np.isnan(p[0, 0, 1:]).any()


def test_kernel_errors() -> None:
    with pytest.raises(ShapeError, match="attention_softmax: expects a 4-D"):
        ka.attention_softmax(np.zeros((3, 4), np.float32), None, False, 1.0)
    with pytest.raises(DTypeError, match="attention_softmax"):
        ka.attention_softmax(np.zeros((1, 1, 3, 4), np.int32), None, False, 1.0)
    with pytest.raises(ShapeError, match="mask"):
        ka.attention_softmax(np.zeros((1, 1, 3, 4), np.float32), np.zeros((3, 4), bool), False, 1.0)
    with pytest.raises(DTypeError, match="mask dtype"):
        ka.attention_softmax(np.zeros((1, 1, 3, 4), np.float32), np.zeros((1, 1, 3, 4), np.float64), False, 1.0)
    with pytest.raises(ShapeError, match="p"):
        ka.attention_softmax_backward(np.zeros((1, 1, 3, 4)), np.zeros((1, 1, 3, 5)), None, False, 1.0)


# ----- nn.MultiHeadAttention: the fused core and the packed q/k/v split --------------------


def _mha_old(mha: Any, x: Any, mask: Array | None) -> Any:
    """The ops MultiHeadAttention ran before the fused op (slices, matmul, softmax)."""
    b, n, e = x.shape
    h, d = mha.num_heads, mha.head_dim
    y = ops.linear(x, mha.in_proj_weight, mha.in_proj_bias).reshape((b, n, 3, h, d))
    qh, kh, vh = (y[:, :, i].permute((0, 2, 1, 3)) for i in range(3))
    s = (qh @ kh.permute((0, 1, 3, 2))) * (1.0 / np.sqrt(d))
    if mask is not None:
        s = s + x._like(np.broadcast_to(np.where(mask, -np.inf, 0.0).astype(x.dtype), s.shape).copy())
    out = (s.softmax(-1) @ vh).permute((0, 2, 1, 3)).reshape((b, n, e))
    return mha.out_proj(out)


@pytest.mark.parametrize("masked", [False, True])
def test_mha_matches_the_old_path_and_grad_of_grad(masked: bool) -> None:
    mha = nn.MultiHeadAttention(8, 2, dev=Cpu(seed=1), dtype=np.float64)
    xa = _data([(2, 5, 8)], np.float64, 9)[0]
    mask = np.triu(np.ones((5, 5), bool), k=1) if masked else None
    grads, grads_old = Gradients(), Gradients()
    y = mha(dev.tensor(xa).trace(grads), attn_mask=mask)
    y_old = _mha_old(mha, dev.tensor(xa).trace(grads_old), mask)
    np.testing.assert_allclose(y.numpy(), y_old.numpy(), rtol=1e-12, atol=1e-14)
    w = dev.tensor(_data([(2, 5, 8)], np.float64, 10)[0])
    (y * w).sum().backward()
    (y_old * w).sum().backward()
    assert mha.in_proj_bias is not None
    for p in (mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight):
        np.testing.assert_allclose(grads.get(p).numpy(), grads_old.get(p).numpy(), rtol=1e-11, atol=1e-13)
    # second rule of the fused op and of the packed split: hvp against the old ops' rules
    u = dev.tensor(_data([(2, 5, 8)], np.float64, 11)[0])
    x0 = dev.tensor(xa)
    _, hv = hvp(lambda x: (mha(x, attn_mask=mask) ** 2).sum(), x0, u)
    _, hv_old = hvp(lambda x: (_mha_old(mha, x, mask) ** 2).sum(), x0, u)
    np.testing.assert_allclose(hv.numpy(), hv_old.numpy(), rtol=1e-9, atol=1e-11)


def test_mha_cross_attention_split_gradients() -> None:
    """Cross-attention splits (0,) from q's projection and (1, 2) from k's: the unused parts of
    the packed buffer stay zero and the parameter gradients match finite differences."""
    mha = nn.MultiHeadAttention(4, 2, dev=Cpu(seed=2), dtype=np.float64)
    q, kv = (dev.tensor(a) for a in _data([(2, 3, 4), (2, 5, 4)], np.float64, 13))
    assert gradcheck(lambda a, b: mha(a, b, b), [q, kv])
    assert gradcheck(lambda a, b, c: mha(a, b, c), [q, kv, kv * 0.5])


def test_mha_fully_masked_query_is_nan_as_before() -> None:
    mha = nn.MultiHeadAttention(4, 2, dev=Cpu(seed=3), dtype=np.float64)
    x = dev.tensor(_data([(1, 3, 4)], np.float64, 14)[0])
    mask = np.zeros((3, 3), bool)
    mask[1] = True  # query 1 blocks every key
    y = mha(x, attn_mask=mask).numpy()
    assert np.isnan(y[0, 1]).all() and not np.isnan(y[0, [0, 2]]).any()


def test_mha_dropout_uses_the_device_generator_as_before() -> None:
    """Training-mode dropout draws the same mask, from the same generator, as the separate
    dropout op did: two layers on equally seeded devices give the old path's values."""
    xa = _data([(2, 4, 8)], np.float64, 15)[0]
    d1, d2 = Cpu(seed=5), Cpu(seed=5)
    m1 = nn.MultiHeadAttention(8, 2, dropout=0.3, dev=d1, dtype=np.float64)
    m2 = nn.MultiHeadAttention(8, 2, dropout=0.3, dev=d2, dtype=np.float64)
    y = m1(d1.tensor(xa)).numpy()
    x2 = d2.tensor(xa)
    b, n, e = x2.shape
    yy = ops.linear(x2, m2.in_proj_weight, m2.in_proj_bias).reshape((b, n, 3, 2, 4))
    qh, kh, vh = (yy[:, :, i].permute((0, 2, 1, 3)) for i in range(3))
    a = ((qh @ kh.permute((0, 1, 3, 2))) * 0.5).softmax(-1)
    a = ops.dropout(a, 0.3)
    want = m2.out_proj((a @ vh).permute((0, 2, 1, 3)).reshape((b, n, e))).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-14)


def test_float32_polynomial_exp() -> None:
    """The vectorizable float32 exp of the forward kernel: within 2 ulp of exp where exp is at
    least tiny, below tiny (so flushed by the softmax) under it, 0 at -inf."""
    xs = np.concatenate([-np.geomspace(1e-8, 87.3, 700), np.linspace(-87.3, 0.0, 700)]).astype(np.float32)
    got = np.array([ka._exp32(x) for x in xs], np.float32)
    want = np.exp(xs.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2 * 2.0**-23, atol=0)
    tiny = np.finfo(np.float32).tiny
    for x in (-87.5, -88.0, -90.0, -103.0, -500.0, -np.inf):
        assert 0.0 <= ka._exp32(np.float32(x)) < tiny
    assert ka._exp32(np.float32(-np.inf)) == 0.0


def test_causal_row_blocks() -> None:
    """The causal block split covers every row once and every key a row sees; with dropout
    the blocked products equal the unblocked ones."""
    from gradtape.ops.attention import _blocks

    assert _blocks(128, 128, True) == [(0, 128, 128)] and _blocks(512, 512, False) == [(0, 512, 512)]
    assert _blocks(512, 512, True) == [(0, 128, 128), (128, 256, 256), (256, 384, 384), (384, 512, 512)]
    assert _blocks(300, 145, True) == [(0, 150, 145), (150, 300, 145)]
    qa, ka_, va = _data([(1, 2, 288, 4), (1, 2, 288, 4), (1, 2, 288, 3)], np.float64, 30)
    g = _data([(1, 2, 288, 3)], np.float64, 31)[0]
    y, grads = _ours(qa, ka_, va, g, is_causal=True, dropout_p=0.3, rng=4)
    m = np.tri(288, 288, dtype=bool)
    y2, grads2 = _ours(qa, ka_, va, g, attn_mask=m, dropout_p=0.3, rng=4)  # one block
    np.testing.assert_allclose(y, y2, rtol=1e-13, atol=1e-14)
    for a, b in zip(grads, grads2, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
