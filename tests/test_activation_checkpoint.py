"""gradtape.checkpoint (activation checkpointing, issue 16): gradients bitwise equal to the
uncheckpointed run, dropout replayed, memory saved, clear errors."""

from __future__ import annotations

import functools
import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, Gradients, GradientTape, TapeError, Tensor, checkpoint, nn, no_grad

Array = np.ndarray[Any, Any]
Fwd = Callable[[Tensor[Any, Any], bool], Any]


def _mlp(dev: Cpu, width: int, dtype: Any, hidden: int | None = None) -> nn.Sequential:
    h = hidden or 2 * width
    return nn.Sequential(
        nn.Linear(width, h, dev=dev, dtype=dtype), nn.GELU(), nn.Linear(h, width, dev=dev, dtype=dtype), nn.Tanh()
    )


def _run(model: nn.Module, x: Tensor[Any, Any], fwd: Fwd, ckpt: bool, rng_state: Any = None) -> dict[str, Array]:
    """Forward + backward from a fresh leaky store; the input's and every parameter's gradient."""
    if rng_state is not None:
        x.device.rng.bit_generator.state = rng_state  # type: ignore[attr-defined]
    grads = Gradients.leaky()
    out = fwd(x.trace(grads), ckpt)
    outs = out if isinstance(out, tuple) else (out,)
    loss = outs[0].square().mean()
    for k, o in enumerate(outs[1:]):
        loss = loss + o.sin().sum() * (0.5 + k)
    g = loss.backward()
    res = {"input": g.get(x).data, "loss": loss.data}
    res.update({n: g.get(p).data for n, p in model.named_parameters()})
    return res


def _assert_bitwise(a: dict[str, Array], b: dict[str, Array]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype, k
        assert np.array_equal(a[k], b[k]), f"{k}: max diff {np.max(np.abs(a[k] - b[k]))}"
        assert np.any(a[k] != 0) or k == "loss", f"{k}: zero gradient"


def _compare(model: nn.Module, x: Tensor[Any, Any], fwd: Fwd) -> None:
    state = x.device.rng.bit_generator.state  # type: ignore[attr-defined]
    plain = _run(model, x, fwd, False, state)
    ck = _run(model, x, fwd, True, state)
    _assert_bitwise(plain, ck)


def _maybe(ckpt: bool, fn: Callable[..., Any], *args: Any) -> Any:
    return checkpoint(fn, *args) if ckpt else fn(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_block_bitwise(dtype: Any) -> None:
    dev = Cpu(seed=1)
    block = _mlp(dev, 16, dtype)
    x = dev.randn((8, 16), dtype=dtype)
    _compare(block, x, lambda h, ck: _maybe(ck, block, h))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("train", [False, True])
def test_transformer_encoder_layer_bitwise(dtype: Any, train: bool) -> None:
    dev = Cpu(seed=2)
    layer: nn.TransformerEncoderLayer[int] = nn.TransformerEncoderLayer(
        16, 4, dim_feedforward=32, dropout=0.2, batch_first=True, dev=dev, dtype=dtype
    )
    layer.train(train)
    x = dev.randn((2, 5, 16), dtype=dtype)
    _compare(layer, x, lambda h, ck: _maybe(ck, layer, h))
    if train:  # dropout really draws: two plain runs from different generator states differ
        a = _run(layer, x, lambda h, ck: layer(h), False)
        b = _run(layer, x, lambda h, ck: layer(h), False)
        assert not np.array_equal(a["loss"], b["loss"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chain_of_four_blocks_with_residuals(dtype: Any) -> None:
    dev = Cpu(seed=3)
    blocks = nn.Sequential(*[_mlp(dev, 12, dtype) for _ in range(4)])

    def fwd(h: Tensor[Any, Any], ck: bool) -> Tensor[Any, Any]:
        for k, b in enumerate(blocks):
            h = h + _maybe(ck, b, h) if k % 2 else _maybe(ck, b, h)  # residual: h used inside and out
        return h

    _compare(blocks, dev.randn((6, 12), dtype=dtype), fwd)


def test_chain_into_alloc_grads_store() -> None:
    """A model's alloc_grads() store (leafs = parameters) gets the same gradients, and no others."""
    dev = Cpu(seed=4)
    blocks = nn.Sequential(*[_mlp(dev, 8, np.float32) for _ in range(4)])
    x = dev.randn((5, 8))

    def run(ck: bool) -> Gradients:
        grads = blocks.alloc_grads()
        h = x.trace(grads)
        for b in blocks:
            h = _maybe(ck, b, h)
        return h.square().mean().backward()

    plain, ck = run(False), run(True)
    assert set(plain.ids()) == set(ck.ids()) == {p.id for p in blocks.parameters()}
    for p in blocks.parameters():
        assert np.array_equal(plain.get(p).data, ck.get(p).data)


@pytest.mark.parametrize("train", [False, True])
def test_nested_checkpoints(train: bool) -> None:
    dev = Cpu(seed=5)
    outer = nn.Sequential(
        _mlp(dev, 8, np.float64), nn.Dropout(0.3), _mlp(dev, 8, np.float64), nn.Dropout(0.3), _mlp(dev, 8, np.float64)
    )
    outer.train(train)
    b0, d0, b1, d1, b2 = list(outer)

    def inner(h: Tensor[Any, Any], ck: bool) -> Tensor[Any, Any]:
        h = d0(_maybe(ck, b0, h))
        out: Tensor[Any, Any] = d1(_maybe(ck, lambda z: b1(z) * 2.0, h))
        return out

    def fwd(h: Tensor[Any, Any], ck: bool) -> Tensor[Any, Any]:
        h = _maybe(ck, inner, h, ck)
        out: Tensor[Any, Any] = _maybe(ck, lambda z: checkpoint(b2, z) if ck else b2(z), h)
        return out

    _compare(outer, dev.randn((4, 8), dtype=np.float64), fwd)


def test_tuple_outputs_and_non_tensor_args() -> None:
    dev = Cpu(seed=6)
    a, b = nn.Linear(6, 6, dev=dev, dtype=np.float64), nn.Linear(6, 3, dev=dev, dtype=np.float64)
    model = nn.Sequential(a, b)

    def fn(h: Tensor[Any, Any], scale: float, *, act: str, tag: str) -> tuple[Any, ...]:
        z = a(h).relu() if act == "relu" else a(h).tanh()
        return z * scale, tag, b(z).sigmoid()

    def fwd(h: Tensor[Any, Any], ck: bool) -> tuple[Any, ...]:
        out = checkpoint(fn, h, 1.5, act="tanh", tag="x") if ck else fn(h, 1.5, act="tanh", tag="x")
        assert out[1] == "x"
        return out[0], out[2]

    _compare(model, dev.randn((4, 6), dtype=np.float64), fwd)


def test_tensors_inside_lists_and_kwargs() -> None:
    dev = Cpu(seed=7)
    lin = nn.Linear(4, 4, dev=dev, dtype=np.float64)
    y = dev.randn((3, 4), dtype=np.float64)

    def fn(pair: list[Tensor[Any, Any]], other: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return lin(pair[0] * pair[1]) + other

    def fwd(h: Tensor[Any, Any], ck: bool) -> Tensor[Any, Any]:
        yt = y + h  # a second differentiable input, from the traced one
        return checkpoint(fn, [h, yt], other=h.exp()) if ck else fn([h, yt], other=h.exp())

    _compare(lin, dev.randn((3, 4), dtype=np.float64), fwd)


def _param_only(model: nn.Module, fn: Callable[[Tensor[Any, Any]], Any], x: Tensor[Any, Any], ck: bool) -> Gradients:
    """x untraced: only the parameters take part; a traced anchor makes the pass live."""
    grads = model.alloc_grads()
    anchor = x.device.zeros((), dtype=x.dtype).trace(grads)
    y = checkpoint(fn, x) if ck else fn(x)
    assert y.requires_grad
    out: Gradients = (y.square().mean() + anchor).backward()
    return out


class _Opaque:
    """A callable holding a module where checkpoint cannot see it (not a Module itself)."""

    def __init__(self, m: nn.Module) -> None:
        self.__dict__["inner"] = {"m": m}

    def __call__(self, h: Tensor[Any, Any]) -> Tensor[Any, Any]:
        out: Tensor[Any, Any] = self.__dict__["inner"]["m"](h)
        return out


@pytest.mark.parametrize("how", ["module", "lambda", "opaque"])
def test_parameters_only(how: str) -> None:
    dev = Cpu(seed=8)
    block = _mlp(dev, 8, np.float64)
    x = dev.randn((4, 8), dtype=np.float64)
    fn: Callable[[Tensor[Any, Any]], Any] = (
        block if how == "module" else (lambda h: block(h) * 1.0) if how == "lambda" else _Opaque(block)
    )
    plain, ck = _param_only(block, fn, x, False), _param_only(block, fn, x, True)
    for p in block.parameters():
        assert np.any(plain.get(p).data != 0)
        assert np.array_equal(plain.get(p).data, ck.get(p).data)


def test_parameters_only_under_a_context_tape() -> None:
    dev = Cpu(seed=9)
    block = _mlp(dev, 8, np.float64)
    x = dev.randn((4, 8), dtype=np.float64)
    res = []
    for ck in (False, True):
        with GradientTape() as tape:
            y = checkpoint(block, x) if ck else block(x)
            loss = y.square().mean()
        res.append(tape.gradient(loss, block.parameters()))
    for g0, g1 in zip(*res, strict=True):
        assert g0 is not None and g1 is not None
        assert np.array_equal(g0.data, g1.data)


def test_no_grad_and_untraced_just_run() -> None:
    dev = Cpu(seed=10)
    block = _mlp(dev, 4, np.float32)
    x = dev.randn((2, 4))
    with no_grad():
        y = checkpoint(block, x.leaky_trace())
    assert not y.requires_grad
    with no_grad():
        y2 = checkpoint(block, x)  # nothing records: a plain call
    assert not y2.requires_grad
    assert np.array_equal(y.data, y2.data)
    assert np.array_equal(y.data, block(x).data)


def test_forward_keeps_no_intermediates() -> None:
    """One backward entry for the whole block, whatever it contains."""
    dev = Cpu(seed=11)
    block = _mlp(dev, 4, np.float32)
    h = dev.randn((2, 4)).leaky_trace()
    y = checkpoint(block, h)
    assert len(y.tape) == 1
    assert len(block(h).tape) > 4


def test_rng_stream_after_backward_is_not_shifted() -> None:
    """Backward's recomputation replays the saved generator state and then puts it back."""
    dev = Cpu(seed=12)
    drop = nn.Dropout(0.5)
    x = dev.randn((64,), dtype=np.float64)
    state = dev.rng.bit_generator.state
    y = checkpoint(lambda h: drop(h), x.leaky_trace())
    after_forward = dev.rng.bit_generator.state
    g = y.sum().backward()
    assert dev.rng.bit_generator.state == after_forward
    dev.rng.bit_generator.state = state
    mask = drop(x).data != 0
    assert np.array_equal(g.get(x).data != 0, mask)  # the gradient used the forward's mask


def test_against_torch_checkpoint() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint

    dev = Cpu(seed=13)
    blocks = [_mlp(dev, 6, np.float64, hidden=10) for _ in range(3)]
    x = dev.randn((5, 6), dtype=np.float64)
    grads = Gradients.leaky()
    h = x.trace(grads)
    for b in blocks:
        h = h + checkpoint(b, h)
    loss = h.square().mean()
    g = loss.backward()

    def torch_block(b: nn.Sequential) -> Any:
        lin1, _, lin2, _ = list(b)
        t1 = torch.nn.Linear(6, 10, dtype=torch.float64)
        t2 = torch.nn.Linear(10, 6, dtype=torch.float64)
        with torch.no_grad():
            for tl, gl in ((t1, lin1), (t2, lin2)):
                tl.weight.copy_(torch.from_numpy(gl.weight.data.copy()))  # type: ignore[attr-defined]
                tl.bias.copy_(torch.from_numpy(gl.bias.data.copy()))  # type: ignore[attr-defined]
        return torch.nn.Sequential(t1, torch.nn.GELU(), t2, torch.nn.Tanh())

    tblocks = [torch_block(b) for b in blocks]
    tx = torch.from_numpy(x.data.copy()).requires_grad_(True)
    th = tx
    for tb in tblocks:
        th = th + torch_checkpoint(tb, th, use_reentrant=False)
    tloss = (th**2).mean()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    np.testing.assert_allclose(g.get(x).data, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for b, tb in zip(blocks, tblocks, strict=True):
        lin1, _, lin2, _ = list(b)
        t1, _, t2, _ = list(tb)
        for gl, tl in ((lin1, t1), (lin2, t2)):
            w, bias = gl.weight, gl.bias  # type: ignore[attr-defined]
            np.testing.assert_allclose(g.get(w).data, tl.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(g.get(bias).data, tl.bias.grad.numpy(), rtol=1e-10, atol=1e-12)


# ----- memory ------------------------------------------------------------------------------------


def _peak(blocks: list[nn.Module], x: Tensor[Any, Any], grads: Gradients, ck: bool) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        h = x.trace(grads)
        for b in blocks:
            h = checkpoint(b, h) if ck else b(h)
        loss = h.square().mean()
        del h
        loss.backward()
        del loss
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_peak_memory_is_lower(capsys: pytest.CaptureFixture[str]) -> None:
    dev = Cpu(seed=14)
    width, batch, depth = 256, 1024, 16
    blocks: list[nn.Module] = [
        nn.Sequential(nn.Linear(width, width, dev=dev), nn.ReLU(), nn.Linear(width, width, dev=dev), nn.Tanh())
        for _ in range(depth)
    ]
    model = nn.Sequential(*blocks)
    x = dev.randn((batch, width))
    grads = model.alloc_grads()
    _peak(blocks, x, grads, False)  # warm-up: kernels compiled, gradient buffers allocated
    plain = _peak(blocks, x, grads, False)
    ck = _peak(blocks, x, grads, True)
    with capsys.disabled():
        print(
            f"\n[checkpoint memory] {depth} blocks, width {width}, batch {batch}, float32: peak "
            f"{plain / 2**20:.1f} MiB without checkpointing, {ck / 2**20:.1f} MiB with ({ck / plain:.2f}x)"
        )
    assert ck < 0.6 * plain


# ----- errors ------------------------------------------------------------------------------------


def test_errors_name_checkpoint() -> None:
    dev = Cpu(seed=15)
    x = dev.randn((3,)).leaky_trace()
    with pytest.raises(TypeError, match="checkpoint: fn must return a Tensor"):
        checkpoint(lambda h: float(h.sum().item()), x)
    with pytest.raises(TypeError, match="checkpoint: fn must return a Tensor"):
        checkpoint(lambda h: [h], x)
    with pytest.raises(TypeError, match="checkpoint: fn must be callable"):
        checkpoint(3, x)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="checkpoint: determinism_check"):
        checkpoint(lambda h: h, x, determinism_check="values")  # type: ignore[arg-type]


def test_nondeterministic_fn_is_detected() -> None:
    dev = Cpu(seed=16)
    x = dev.randn((50,), dtype=np.float64)
    y = checkpoint(lambda h: gradtape.ops.dropout(h, 0.5, rng=np.random.default_rng()), x.leaky_trace())
    with pytest.raises(TapeError, match=r"checkpoint: the recomputation .* other values"):
        y.sum().backward()
    del y
    gc.collect()
    # the failed recomputation leaves grad mode as it was: parameters record, under no_grad nothing
    lin = nn.Linear(50, 2, dev=dev, dtype=np.float64)
    assert lin(x.reshape((1, 50))).requires_grad
    with no_grad():
        assert not lin(x.reshape((1, 50))).requires_grad
    # opting out runs (with the recomputation's mask)
    y = checkpoint(
        lambda h: gradtape.ops.dropout(h, 0.5, rng=np.random.default_rng()), x.leaky_trace(), determinism_check="none"
    )
    y.sum().backward()


def test_changed_shape_is_detected() -> None:
    dev = Cpu(seed=17)
    calls = [4, 3]
    y = checkpoint(lambda h: h[: calls.pop(0)] * 2.0, dev.randn((5,)).leaky_trace())
    with pytest.raises(TapeError, match=r"checkpoint: the recomputation .* shape \(3,\)"):
        y.sum().backward()


def test_higher_order_raises() -> None:
    dev = Cpu(seed=18)
    x = dev.randn((3,), dtype=np.float64).leaky_trace()
    y = checkpoint(lambda h: (h * h).sin(), x).sum()
    with pytest.raises(TapeError, match="checkpoint: gradients of gradients"):
        gradtape.autograd.grad(y, x, create_graph=True)


# ----- the other front ends ----------------------------------------------------------------------


def test_autograd_grad_and_retain_graph() -> None:
    dev = Cpu(seed=19)
    block = _mlp(dev, 6, np.float64)
    x = dev.randn((3, 6), dtype=np.float64)
    res = []
    for ck in (False, True):
        h = x.leaky_trace()
        loss = (checkpoint(block, h) if ck else block(h)).square().sum()
        w = block.parameters()[0]
        first = gradtape.autograd.grad(loss, [h, w], retain_graph=True)
        second = gradtape.autograd.grad(loss, [h, w])
        for a, b in zip(first, second, strict=True):
            assert a is not None and b is not None
            assert np.array_equal(a.data, b.data)
        res.append(first)
    for a, b in zip(*res, strict=True):
        assert np.array_equal(a.data, b.data)


def _note_grad(seen: list[Array], t: Tensor[Any, Any], gs: Gradients) -> None:
    seen.append(gs.get(t).data)


def test_hooks_fire_as_without_checkpointing() -> None:
    dev = Cpu(seed=20)
    block = _mlp(dev, 6, np.float64)
    x = dev.randn((3, 6), dtype=np.float64)
    res = []
    for ck in (False, True):
        seen: list[Array] = []
        grads = block.alloc_grads()
        y = checkpoint(block, x.trace(grads)) if ck else block(x.trace(grads))
        h1 = y.register_hook(lambda g: g * 2.0)  # doubles what flows into the block
        p = block.parameters()[0]
        h2 = p.register_post_accumulate_grad_hook(functools.partial(_note_grad, seen))
        g = y.square().sum().backward()
        h1.remove()
        h2.remove()
        assert len(seen) == 1
        assert np.array_equal(seen[0], g.get(p).data)
        res.append(seen[0])
    assert np.array_equal(res[0], res[1])


def test_anomaly_mode_checks_the_recomputation() -> None:
    dev = Cpu(seed=21)
    x = dev.tensor(np.array([1.0, 0.0, 2.0]))
    with gradtape.autograd.detect_anomaly():
        y = checkpoint(lambda h: (h * 1.0).sqrt(), x.leaky_trace())
        with pytest.raises(gradtape.NumericalInstabilityError):
            y.sum().backward()


def test_input_returned_as_is() -> None:
    dev = Cpu(seed=22)
    x = dev.randn((4,), dtype=np.float64)
    res = []
    for ck in (False, True):
        h = x.leaky_trace()
        a, b = checkpoint(lambda z: (z, z.exp()), h) if ck else (h, h.exp())
        res.append((a.sin().sum() + b.sum()).backward().get(x).data)
    np.testing.assert_allclose(res[0], res[1], rtol=1e-15)


@pytest.mark.parametrize("leaky", [False, True])
def test_same_tensor_returned_twice(leaky: bool) -> None:
    """Both outputs' gradients reach the one recomputed tensor (the seeding once kept only the
    last of them: 10 instead of 16 below)."""
    dev = Cpu(seed=23)
    x = dev.randn((4,), dtype=np.float64)

    def fn(z: Tensor[Any, Any]) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
        h = z * 2.0
        return h, h

    res = []
    for ck in (False, True):
        t = x.leaky_trace() if leaky else x.trace(Gradients())
        a, b = checkpoint(fn, t) if ck else fn(t)
        res.append(((a * 3.0).sum() + (b * 5.0).sum()).backward().get(x).data)
    np.testing.assert_allclose(res[0], np.full(4, 16.0), rtol=1e-15)
    np.testing.assert_allclose(res[1], res[0], rtol=1e-15)
