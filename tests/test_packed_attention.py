"""Self-attention from the packed in-projection (``ops.attention.packed_self_attention``): the
path ``nn.MultiheadAttention``, ``nn.MultiHeadAttention`` and the transformer layers take
when query, key and value are one tensor, without dropout and without a mask other than the
causal one. One (batch, head) per thread, no copy into or out of the heads, causal heads in
blocks of 64 rows.

The tests are the PyTorch user's program (``requires_grad``, ``.backward()``, ``.grad``)
against PyTorch in float64 from the same weights, at lengths around the block size (1, 5, 64,
65, 130); the fused path against the unfused one it replaces; which path runs; higher-order
derivatives; a captured training step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import Cpu, Tensor, nn
from gradtape.devices.kernels import attention as ka
from gradtape.devices.kernels import blas
from gradtape.errors import ShapeError

torch: Any = pytest.importorskip("torch")

F32, F64 = np.float32, np.float64
Array = np.ndarray[Any, Any]


@pytest.fixture(autouse=True)
def _openblas_products(monkeypatch: pytest.MonkeyPatch) -> None:
    """The packed kernels run where the products stay on OpenBLAS; on a machine whose large
    products go to oneDNN (AVX-512 CPUs with older OpenBLAS kernels) the layers keep the
    unfused op. Pin the choice so that these tests run the packed kernels everywhere."""
    monkeypatch.setattr(blas, "_MATMUL_CHOICE", (False, "OpenBLAS (pinned by the test)"))


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record which core each attention call runs: ``packed`` or ``unfused``."""
    from gradtape.nn import attention as att

    calls: list[str] = []
    packed, unfused = getattr(att, "packed_self_attention"), getattr(att, "sdpa")  # noqa: B009 (not exported)

    def spy_packed(*args: Any) -> Any:
        calls.append("packed")
        return packed(*args)

    def spy_unfused(*args: Any) -> Any:
        calls.append("unfused")
        return unfused(*args)

    monkeypatch.setattr(att, "packed_self_attention", spy_packed)
    monkeypatch.setattr(att, "sdpa", spy_unfused)
    return calls


def _torch_pair(e: int, h: int, batch_first: bool, seed: int = 0) -> tuple[Any, nn.MultiheadAttention[int]]:
    """A torch ``nn.MultiheadAttention`` with random float64 weights (biases included) and
    gradtape's, loaded from its state dict."""
    torch.manual_seed(seed)
    ref = torch.nn.MultiheadAttention(e, h, batch_first=batch_first, dtype=torch.float64)
    with torch.no_grad():
        for p in ref.parameters():
            p.uniform_(-0.5, 0.5)
    ours: nn.MultiheadAttention[int] = nn.MultiheadAttention(e, h, batch_first=batch_first, dtype=F64)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def _same_parameter_grads(ours: nn.Module, ref: Any, rtol: float, atol: float) -> None:
    """Every parameter's ``.grad`` equals PyTorch's (by name), none of them zero."""
    named = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None, name
        want = named[name].grad
        assert want is not None and float(want.abs().max()) > 0, name
        np.testing.assert_allclose(p.grad.numpy(), want.numpy(), rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("length", [1, 5, 64, 65, 130])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("causal", ["none", "is_causal", "mask"])
def test_self_attention_matches_torch(
    length: int, batch_first: bool, causal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``attn(x, x, x, need_weights=False)`` as a PyTorch program writes it: the output, the
    input's gradient and every parameter's ``.grad`` equal PyTorch's in float64, for no mask,
    ``is_causal=True`` and the causal mask PyTorch's ``generate_square_subsequent_mask``
    gives, on the packed kernels (the spy says so)."""
    e, h, n = 12, 3, 2
    ref, ours = _torch_pair(e, h, batch_first)
    rng = np.random.default_rng(length)
    shape = (n, length, e) if batch_first else (length, n, e)
    xd = rng.standard_normal(shape)
    w = rng.standard_normal(shape)
    kw: dict[str, Any] = {"need_weights": False}
    tkw: dict[str, Any] = {"need_weights": False}
    if causal == "is_causal":
        mask = torch.nn.Transformer.generate_square_subsequent_mask(length, dtype=torch.float64)
        kw |= {"is_causal": True}
        tkw |= {"is_causal": True, "attn_mask": mask}  # PyTorch wants the mask with the hint
    elif causal == "mask":
        mask = torch.nn.Transformer.generate_square_subsequent_mask(length, dtype=torch.float64)
        kw |= {"attn_mask": mask.numpy()}
        tkw |= {"attn_mask": mask}
    calls = _spy(monkeypatch)

    x = gt.tensor(xd, requires_grad=True)
    out, weights = ours(x, x, x, **kw)
    assert weights is None
    (out * gt.tensor(w)).sum().backward()

    tx = torch.tensor(xd, requires_grad=True)
    tout, _ = ref(tx, tx, tx, **tkw)
    (tout * torch.from_numpy(w)).sum().backward()

    assert calls == ["packed"]
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
    _same_parameter_grads(ours, ref, 1e-9, 1e-11)


@pytest.mark.parametrize("length", [7, 64, 130])
@pytest.mark.parametrize("causal", [False, True])
def test_packed_equals_the_unfused_op(length: int, causal: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """float32, dfdx-style ``nn.MultiHeadAttention``: the packed kernels against the unfused
    op (split into heads, ``scaled_dot_product_attention``, merge) they replace. In one block
    (up to 64 rows, or without a mask) the two run the same products and row passes: equal to
    the last bit; longer causal heads run their products in row blocks, whose sums may differ
    in the last bits."""
    e, h, n = 32, 4, 3
    dev = Cpu(seed=5)
    mha = nn.MultiHeadAttention(e, h, dev=dev)
    rng = np.random.default_rng(1)
    xd = rng.standard_normal((n, length, e), dtype=F32)
    gd = rng.standard_normal((n, length, e), dtype=F32)
    mask = np.triu(np.ones((length, length), bool), 1) if causal else None

    def run() -> tuple[Array, Array, list[Array]]:
        mha.zero_grad()
        x: Tensor[Any, Any] = Tensor(xd.copy(), dev).requires_grad_()
        out = mha(x, attn_mask=mask)
        out.backward(Tensor(gd, dev))
        assert x.grad is not None
        grads = [p.grad for p in mha.parameters()]
        assert all(g is not None for g in grads)
        return out.numpy().copy(), x.grad.numpy().copy(), [g.numpy().copy() for g in grads if g is not None]

    calls = _spy(monkeypatch)
    fused = run()
    with monkeypatch.context() as m:
        m.setattr(ka, "packed_attention_runs", lambda y: False)
        unfused = run()
    assert calls == ["packed", "unfused"]
    exact = length <= ka.PACKED_BLOCK_ROWS or not causal
    for a, b in zip([fused[0], fused[1], *fused[2]], [unfused[0], unfused[1], *unfused[2]], strict=True):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_which_calls_take_the_packed_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Self-attention without dropout and with no mask or the causal one takes the packed
    kernels (also unbatched, and in eval mode with a dropout rate); cross-attention, the
    attention weights, dropout in training, a padding mask or another mask take the unfused op."""
    dev = Cpu(seed=2)
    mha = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True, dev=dev)
    x = dev.randn((2, 6, 8))
    k = dev.randn((2, 6, 8))
    calls = _spy(monkeypatch)

    mha.eval()
    mha(x, x, x, need_weights=False)
    u = x[0]
    mha(u, u, u, need_weights=False)  # unbatched (L, E): run as (1, L, E)
    mha(x, x, x, need_weights=False, is_causal=True)
    assert calls == ["packed"] * 3
    calls.clear()

    mha(x, x, x)  # need_weights=True (PyTorch's default): the weights are an output, separate ops
    assert calls == []
    mha(x, k, k, need_weights=False)  # cross-attention
    mha(x, x, x, need_weights=False, key_padding_mask=np.zeros((2, 6), bool))
    mha(x, x, x, need_weights=False, attn_mask=np.triu(np.ones((6, 6), bool), 2))  # not the causal mask
    mha.train()
    mha(x, x, x, need_weights=False)  # dropout 0.5 while training
    assert calls == ["unfused"] * 4


def test_second_derivatives_through_the_packed_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gradient penalty through causal self-attention (``create_graph=True``, then the
    penalty's backward), as a PyTorch program writes it: the input's and the parameters'
    second-order gradients equal PyTorch's in float64 (its math SDPA backend, which
    differentiates twice). The packed op's second rule is the unfused op's, on the heads of the
    rebuilt projection."""
    e, h, n, length = 8, 2, 2, 70  # 70 rows: two causal blocks
    ref, ours = _torch_pair(e, h, True, seed=3)
    xd = np.random.default_rng(4).standard_normal((n, length, e))
    calls = _spy(monkeypatch)

    x = gt.tensor(xd, requires_grad=True)
    out, _ = ours(x, x, x, need_weights=False, is_causal=True)
    (gx,) = gt.autograd.grad(out.pow(2).sum(), [x], create_graph=True)
    assert gx is not None
    gx.pow(2).sum().backward()
    assert calls == ["packed"]

    mask = torch.nn.Transformer.generate_square_subsequent_mask(length, dtype=torch.float64)
    tx = torch.tensor(xd, requires_grad=True)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        tout, _ = ref(tx, tx, tx, need_weights=False, attn_mask=mask, is_causal=True)
        (tgx,) = torch.autograd.grad(tout.pow(2).sum(), [tx], create_graph=True)
        tgx.pow(2).sum().backward()
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-9, atol=1e-10)
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-9)
    _same_parameter_grads(ours, ref, 1e-8, 1e-9)


def test_gradgradcheck_of_the_packed_op() -> None:
    """``torch.autograd.gradgradcheck``'s check, gradtape's spelling, on the op itself (float64,
    causal, two row blocks): first and second derivatives against finite differences."""
    from gradtape.ops.attention import packed_self_attention

    y = gt.tensor(np.random.default_rng(6).standard_normal((1, 66, 12)) * 0.5, requires_grad=True)

    def f(t: Any) -> Any:
        return packed_self_attention(t, 2, True, True, False, "test")

    assert gt.autograd.gradcheck(f, (y,), eps=1e-6, atol=1e-6)
    assert gt.autograd.gradgradcheck(f, (y,), eps=1e-6, atol=1e-5)


def test_a_captured_transformer_step_replays_the_packed_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A causal ``nn.TransformerEncoderLayer`` training step under ``gradtape.capture``: eight
    captured AdamW steps equal eight eager ones to the last bit (the replays rerun the packed
    forward into the recorded weights the backward reads)."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array]]:
        dev = Cpu(seed=8)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True, dev=dev)
        opt = optim.AdamW(layer.parameters(), lr=1e-2)
        mask = nn.Transformer.generate_square_subsequent_mask(80)

        def step(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            opt.zero_grad()
            loss = layer(x, src_mask=mask, is_causal=True).pow(2).mean()
            loss.backward()
            opt.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        rng = np.random.default_rng(9)
        losses = [f(dev.tensor(rng.standard_normal((2, 80, 32), dtype=F32))).item() for _ in range(8)]
        return losses, [p.numpy().copy() for p in layer.parameters()]

    calls = _spy(monkeypatch)
    eager_losses, eager_params = run(False)
    assert calls and set(calls) == {"packed"}
    losses, params = run(True)
    assert losses == eager_losses
    for a, b in zip(params, eager_params, strict=True):
        np.testing.assert_array_equal(a, b)


def test_kernel_errors_name_the_shapes() -> None:
    """The kernel wrappers' own checks: a packed width that is not ``3 * heads * D``, and a
    gradient of another shape than the output."""
    y = np.zeros((2, 4, 12), F32)
    with pytest.raises(ShapeError, match=r"packed projection \(2, 4, 12\) is not \(\.\., \.\., 3 \* 5 \* D\)"):
        ka.packed_attention(y, 5, True, False, 1.0, False)
    _, p = ka.packed_attention(y, 2, True, False, 1.0, False)
    with pytest.raises(ShapeError, match=r"gradient \(2, 4, 3\) for an output of shape \(2, 4, 4\)"):
        ka.packed_attention_backward(y, p, np.zeros((2, 4, 3), F32), 2, True, False, 1.0)
