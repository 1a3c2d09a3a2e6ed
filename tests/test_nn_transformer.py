"""PyTorch's transformer layers in gradtape.nn, written as the PyTorch user's program.

The torch module is built in float64, its ``state_dict`` loaded into the gradtape module
(``load_state_dict``, strict), then outputs and every parameter's gradient (dropout 0) are
compared, for ``batch_first`` False/True, ``norm_first`` False/True, relu/gelu, the causal
``tgt_mask`` and key padding masks; ``nn.MultiheadAttention``'s weights too. Small shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Tensor, nn
from gradtape.errors import DTypeError, ShapeError
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")

F64 = np.float64
RTOL, ATOL = 1e-9, 1e-11


def _load(ours: nn.Module, ref: Any) -> None:
    """Random values in every torch parameter (no trivial zero bias / unit norm), then the
    torch state dict loaded into ours; the keys must be PyTorch's."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.rand(p.shape, generator=gen, dtype=torch.float64) - 0.5)
    assert list(ours.state_dict()) == list(ref.state_dict())
    result = ours.load_state_dict(ref.state_dict())
    assert not result.missing_keys and not result.unexpected_keys


def _compare_grads(ours: nn.Module, ref: Any) -> None:
    named = dict(ref.named_parameters())
    count = 0
    for name, p in ours.named_parameters():
        assert p.grad is not None, name
        want = named[name].grad
        assert want is not None and float(want.abs().max()) > 0, name
        np.testing.assert_allclose(p.grad.numpy(), want.numpy(), rtol=RTOL, atol=ATOL, err_msg=name)
        count += 1
    assert count == len(named)


def _run(ours: Any, ref: Any, inputs: list[np.ndarray[Any, Any]], call: Any, rcall: Any) -> None:
    """``call(ours, *tensors)`` against ``rcall(ref, *torch_tensors)``: the output values, the
    inputs' gradients and every parameter gradient of ``sum(out * w)``."""
    dev = Cpu(seed=3)
    xs: list[Tensor[Any, Any]] = [Tensor(a.copy(), dev).requires_grad_() for a in inputs]
    txs = [torch.from_numpy(a.copy()).requires_grad_() for a in inputs]
    out = call(ours, *xs)
    tout = rcall(ref, *txs)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=RTOL, atol=ATOL)
    w = np.random.default_rng(1).standard_normal(out.shape)
    (out * Tensor(w, dev)).sum().backward()
    (tout * torch.from_numpy(w)).sum().backward()
    for x, tx in zip(xs, txs, strict=True):
        assert x.grad is not None
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=RTOL, atol=ATOL)
    _compare_grads(ours, ref)


def _causal(n: int) -> np.ndarray[Any, Any]:
    return np.triu(np.ones((n, n), bool), 1)


# ----- nn.MultiheadAttention ---------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "causal-padding", "float"])
def test_multihead_attention_matches_torch(batch_first: bool, masks: str) -> None:
    dev = Cpu(seed=0)
    ours = nn.MultiheadAttention(8, 2, batch_first=batch_first, dev=dev, dtype=F64)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=torch.float64)
    _load(ours, ref)
    rng = np.random.default_rng(0)
    n, lq, lk = 2, 3, 4
    shape_q, shape_k = ((n, lq, 8), (n, lk, 8)) if batch_first else ((lq, n, 8), (lk, n, 8))
    q, k, v = rng.standard_normal(shape_q), rng.standard_normal(shape_k), rng.standard_normal(shape_k)
    am: Any = None
    kpm: Any = None
    if masks == "causal-padding":
        am = np.triu(np.ones((lq, lk), bool), 2)
        kpm = np.array([[False, False, False, True], [False, True, False, False]])
    elif masks == "float":
        am = rng.standard_normal((n * 2, lq, lk))
        kpm = np.where(rng.random((n, lk)) > 0.7, -1.5, 0.0)
    tam = None if am is None else torch.from_numpy(am)
    tkpm = None if kpm is None else torch.from_numpy(kpm)
    for average in (True, False):
        out, weights = ours(Tensor(q, dev), Tensor(k, dev), Tensor(v, dev), kpm, True, am, average)
        tout, tweights = ref(*map(torch.from_numpy, (q, k, v)), tkpm, True, tam, average)
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=RTOL, atol=ATOL)
        assert weights is not None
        np.testing.assert_allclose(weights.numpy(), tweights.detach().numpy(), rtol=RTOL, atol=ATOL)

    def call(m: Any, a: Any, b: Any, c: Any) -> Any:
        return m(a, b, c, key_padding_mask=kpm, need_weights=False, attn_mask=am)[0]

    def rcall(m: Any, a: Any, b: Any, c: Any) -> Any:
        return m(a, b, c, key_padding_mask=tkpm, need_weights=False, attn_mask=tam)[0]

    _run(ours, ref, [q, k, v], call, rcall)


def test_multihead_attention_weights_gradient_kdim_vdim_and_unbatched() -> None:
    """A loss on the returned weights reaches the parameters as in torch; kdim/vdim give
    PyTorch's q/k/v_proj_weight; an unbatched call."""
    dev = Cpu(seed=1)
    ours = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, dev=dev, dtype=F64)
    ref = torch.nn.MultiheadAttention(6, 3, kdim=4, vdim=5, dtype=torch.float64)
    assert [n for n, _ in ours.named_parameters()] == [
        "q_proj_weight",
        "k_proj_weight",
        "v_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    _load(ours, ref)
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((3, 2, 6)), rng.standard_normal((4, 2, 4)), rng.standard_normal((4, 2, 5))

    def call(m: Any, a: Any, b: Any, c: Any) -> Any:
        out, w = m(a, b, c, average_attn_weights=False)
        return out.sum(0) + (w * w).sum((1, 3)).sum(1, keepdims=True)

    _run(ours, ref, [q, k, v], call, call)
    ours.zero_grad()
    un_out, un_w = ours(Tensor(q[:, 0], dev), Tensor(k[:, 0], dev), Tensor(v[:, 0], dev))
    t_out, t_w = ref(*(torch.from_numpy(a[:, 0]) for a in (q, k, v)))
    np.testing.assert_allclose(un_out.numpy(), t_out.detach().numpy(), rtol=RTOL, atol=ATOL)
    assert un_w is not None
    np.testing.assert_allclose(un_w.numpy(), t_w.detach().numpy(), rtol=RTOL, atol=ATOL)


def test_multihead_attention_gradcheck_and_fully_masked_rows() -> None:
    dev = Cpu(seed=2)
    mha = nn.MultiheadAttention(4, 2, batch_first=True, dev=dev, dtype=F64)
    x = dev.randn((1, 3, 4), dtype=F64)
    m = dev.randn((1, 2, 4), dtype=F64)
    assert gradcheck(lambda a, b: mha(a, b, b, attn_mask=_causal(3)[:, :2])[0], [x, m])

    def weights(a: Tensor[Any, Any]) -> Tensor[Any, Any]:
        w = mha(a, a, a, need_weights=True)[1]
        assert w is not None
        return w

    assert gradcheck(weights, [x])
    # a query whose keys are all padding: NaN with need_weights, 0 without, as torch 2.13
    kpm = np.array([[True, True, True]])
    with np.errstate(invalid="ignore"):
        out, _ = mha(x, x, x, key_padding_mask=kpm)
    assert np.isnan(out.numpy()).all()
    out, _ = mha(x, x, x, key_padding_mask=kpm, need_weights=False)
    assert mha.out_proj.bias is not None
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(mha.out_proj.bias.numpy(), (1, 3, 4)))


def test_multihead_attention_refuses_bad_input() -> None:
    dev = Cpu(seed=0)
    mha = nn.MultiheadAttention(8, 2, dev=dev)
    x = dev.randn((3, 2, 8))
    with pytest.raises(ValueError, match=r"MultiheadAttention: num_heads=3 must divide embed_dim=8"):
        nn.MultiheadAttention(8, 3, dev=dev)
    with pytest.raises(NotImplementedError, match="MultiheadAttention: add_bias_kv"):
        nn.MultiheadAttention(8, 2, add_bias_kv=True, dev=dev)
    with pytest.raises(ShapeError, match=r"MultiheadAttention: query must have 8 features.*\(3, 2, 6\)"):
        mha(dev.randn((3, 2, 6)), x, x)
    with pytest.raises(ShapeError, match=r"MultiheadAttention: key and value.*\(5, 2, 8\)"):
        mha(x, x, dev.randn((5, 2, 8)))
    with pytest.raises(ShapeError, match=r"MultiheadAttention: query and key must have the same batch size"):
        mha(x, dev.randn((3, 4, 8)), dev.randn((3, 4, 8)))
    with pytest.raises(
        ShapeError, match=r"MultiheadAttention: attn_mask of shape \(2, 3\) should be \(L, S\) = \(3, 3\)"
    ):
        mha(x, x, x, attn_mask=np.zeros((2, 3), bool))
    with pytest.raises(ShapeError, match=r"MultiheadAttention: key_padding_mask of shape \(3, 2\) should be"):
        mha(x, x, x, key_padding_mask=np.zeros((3, 2), bool))
    with pytest.raises(DTypeError, match=r"MultiheadAttention: attn_mask must be bool"):
        mha(x, x, x, attn_mask=np.zeros((3, 3), np.int64))


# ----- encoder and decoder layers, stacks, nn.Transformer ----------------------------------


def _layer_cases() -> list[tuple[bool, bool, str]]:
    return [(False, False, "relu"), (True, True, "gelu"), (False, True, "gelu"), (True, False, "relu")]


@pytest.mark.parametrize(("batch_first", "norm_first", "activation"), _layer_cases())
def test_transformer_encoder_matches_torch(batch_first: bool, norm_first: bool, activation: str) -> None:
    dev = Cpu(seed=4)
    kw: dict[str, Any] = {
        "dropout": 0.0,
        "activation": activation,
        "batch_first": batch_first,
        "norm_first": norm_first,
    }
    layer = nn.TransformerEncoderLayer(8, 2, 12, **kw, dev=dev, dtype=F64)
    ours = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, dev=dev, dtype=F64))
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, 12, **kw, dtype=torch.float64)
    ref = torch.nn.TransformerEncoder(
        tlayer, 2, norm=torch.nn.LayerNorm(8, dtype=torch.float64), enable_nested_tensor=False
    )
    assert "layers.1.self_attn.in_proj_weight" in ours.state_dict()
    _load(ours, ref)
    x = np.random.default_rng(5).standard_normal((2, 4, 8) if batch_first else (4, 2, 8))
    mask = _causal(4)
    kpm = np.array([[False, False, False, True], [False, False, False, False]])

    def call(m: Any, a: Any) -> Any:
        return m(a, mask=mask, src_key_padding_mask=kpm)

    def rcall(m: Any, a: Any) -> Any:
        return m(a, mask=torch.from_numpy(mask), src_key_padding_mask=torch.from_numpy(kpm))

    _run(ours, ref, [x], call, rcall)


@pytest.mark.parametrize(("batch_first", "norm_first", "activation"), _layer_cases()[:2])
def test_transformer_decoder_matches_torch(batch_first: bool, norm_first: bool, activation: str) -> None:
    dev = Cpu(seed=5)
    kw: dict[str, Any] = {
        "dropout": 0.0,
        "activation": activation,
        "batch_first": batch_first,
        "norm_first": norm_first,
    }
    ours = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 12, **kw, dev=dev, dtype=F64), 2)
    ref = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, 12, **kw, dtype=torch.float64), 2)
    _load(ours, ref)
    rng = np.random.default_rng(6)
    tgt = rng.standard_normal((2, 3, 8) if batch_first else (3, 2, 8))
    mem = rng.standard_normal((2, 4, 8) if batch_first else (4, 2, 8))
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=F64)
    mkpm = np.array([[False, True, False, False], [False, False, False, True]])
    tkpm = np.array([[False, False, True], [False, False, False]])

    def call(m: Any, a: Any, b: Any) -> Any:
        return m(a, b, tgt_mask=tgt_mask, tgt_key_padding_mask=tkpm, memory_key_padding_mask=mkpm, tgt_is_causal=True)

    def rcall(m: Any, a: Any, b: Any) -> Any:
        tm = torch.from_numpy(tgt_mask.numpy())
        return m(
            a,
            b,
            tgt_mask=tm,
            tgt_key_padding_mask=torch.from_numpy(tkpm),
            memory_key_padding_mask=torch.from_numpy(mkpm),
            tgt_is_causal=True,
        )

    _run(ours, ref, [tgt, mem], call, rcall)


def test_transformer_matches_torch_and_causal_mask() -> None:
    dev = Cpu(seed=6)
    kw: dict[str, Any] = {"num_encoder_layers": 1, "num_decoder_layers": 1, "dim_feedforward": 12, "dropout": 0.0}
    ours = nn.Transformer(8, 2, **kw, dev=dev, dtype=F64)
    ref = torch.nn.Transformer(8, 2, **kw, dtype=torch.float64)
    assert list(ours.state_dict()) == list(ref.state_dict())
    _load(ours, ref)
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    want = torch.nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask.numpy(), want.numpy())
    assert mask.dtype == np.float32
    rng = np.random.default_rng(7)
    src, tgt = rng.standard_normal((4, 2, 8)), rng.standard_normal((3, 2, 8))

    def call(m: Any, a: Any, b: Any) -> Any:
        return m(a, b, tgt_mask=mask)

    def rcall(m: Any, a: Any, b: Any) -> Any:
        return m(a, b, tgt_mask=want.double())

    _run(ours, ref, [src, tgt], call, rcall)
    with pytest.raises(ShapeError, match=r"Transformer: the batch number of src \(4, 2, 8\) and tgt \(3, 5, 8\)"):
        ours(Tensor(src, dev), Tensor(rng.standard_normal((3, 5, 8)), dev))


def test_encoder_layer_gradcheck_and_bad_input() -> None:
    dev = Cpu(seed=7)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu", dev=dev, dtype=F64)
    x = dev.randn((3, 1, 4), dtype=F64)
    assert gradcheck(lambda a: layer(a, src_mask=_causal(3)), [x])
    dec = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, dev=dev, dtype=F64)
    assert gradcheck(lambda a, b: dec(a, b), [dev.randn((2, 1, 4), dtype=F64), dev.randn((3, 1, 4), dtype=F64)])
    with pytest.raises(
        ShapeError, match=r"TransformerEncoderLayer: src must be \(L, N, E\).*d_model = 4, got shape \(3, 1, 5\)"
    ):
        layer(dev.randn((3, 1, 5), dtype=F64))
    with pytest.raises(ShapeError, match=r"TransformerDecoderLayer: memory must be .*got shape \(2, 3\)"):
        dec(dev.randn((2, 1, 4), dtype=F64), dev.randn((2, 3), dtype=F64))
    with pytest.raises(ValueError, match="TransformerEncoderLayer: activation should be 'relu' or 'gelu'"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh", dev=dev)
    with pytest.raises(
        TypeError, match="TransformerEncoder: expects a TransformerEncoderLayer, got TransformerDecoderLayer"
    ):
        nn.TransformerEncoder(dec, 2)  # type: ignore[arg-type]


def test_encoder_layer_inference_matches_torch_and_the_recorded_pass() -> None:
    """Under no_grad a ReLU layer's feed-forward adds the bias and applies the ReLU in one
    pass (ops.linalg.linear_relu): the output is torch's (eval, no_grad, float64), and in
    float32 bit for bit the recorded pass's (linear then relu as two ops), on the two-thread
    kernel too (a 1024 x 1024 hidden activation)."""
    import gradtape
    from gradtape.devices.kernels import elementwise

    dev = Cpu(seed=6)
    layer = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, batch_first=True, dev=dev, dtype=F64)
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, batch_first=True, dtype=torch.float64)
    _load(layer, tlayer)
    layer.eval()
    tlayer.eval()
    x = np.random.default_rng(7).standard_normal((2, 5, 8))
    with gradtape.no_grad(), torch.no_grad():
        got: Tensor[Any, Any] = layer(Tensor(x, dev))
        want = tlayer(torch.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)

    big = nn.TransformerEncoderLayer(64, 4, 1024, dropout=0.0, batch_first=True, dev=dev)
    big.eval()
    xb = np.random.default_rng(8).standard_normal((8, 128, 64)).astype(np.float32)
    xb[0, 0, :3] = np.nan
    assert 8 * 128 * 1024 >= elementwise.PARALLEL_THRESHOLD
    with gradtape.no_grad():
        fused = big(Tensor(xb.copy(), dev)).numpy()
    recorded: Tensor[Any, Any] = big(Tensor(xb.copy(), dev).requires_grad_())
    assert recorded.requires_grad
    np.testing.assert_array_equal(fused, recorded.detach().numpy())


def test_linear_relu_records_linear_then_relu() -> None:
    """ops.linalg.linear_relu with a tape is relu(linear(...)) and its gradients (checked
    numerically); a bias of the wrong length is linear's ShapeError, fused path or not."""
    import gradtape
    from gradtape.ops.linalg import linear_relu

    dev = Cpu(seed=9)
    rng = np.random.default_rng(10)
    x: Tensor[Any, Any] = Tensor(rng.standard_normal((3, 4, 5)), dev)
    w: Tensor[Any, Any] = Tensor(rng.standard_normal((6, 5)), dev)
    b: Tensor[Any, Any] = Tensor(rng.standard_normal(6), dev)
    gradcheck(lambda x, w, b: linear_relu(x, w, b), [x, w, b])
    want = np.maximum(x.numpy() @ w.numpy().T + b.numpy(), 0)
    with gradtape.no_grad():
        np.testing.assert_allclose(linear_relu(x, w, b).numpy(), want, rtol=1e-12)
        np.testing.assert_array_equal(linear_relu(x, w, None).numpy(), np.maximum(x.numpy() @ w.numpy().T, 0))
        with pytest.raises(ShapeError, match=r"bias of shape \(5,\) does not match weight \(6, 5\)"):
            linear_relu(x, w, Tensor(np.zeros(5), dev))
    with pytest.raises(ShapeError, match=r"bias of shape \(5,\) does not match weight \(6, 5\)"):
        linear_relu(x.requires_grad_(), w, Tensor(np.zeros(5), dev))
