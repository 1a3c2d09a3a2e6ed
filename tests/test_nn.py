"""Tests of gradtape.nn: layers against reference formulas (numpy, torch when installed),
gradients by finite differences, parameter discovery, train/eval, gradient stores,
checkpoints and a small end-to-end training run."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor, nn
from gradtape.losses import cross_entropy
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
F64 = np.float64


@pytest.fixture
def dev() -> Cpu:
    return Cpu(seed=0)


def _x(dev: Cpu, *shape: int) -> Tensor[Any, Any]:
    return dev.randn(shape, F64)


def _check_with_params(layer: nn.Module, names: Sequence[str], x: Tensor[Any, Any]) -> bool:
    """gradcheck of ``layer(x)`` w.r.t. ``x`` and the named parameters (set as attributes)."""
    saved = {n: getattr(layer, n) for n in names}

    def fn(xx: Tensor[Any, Any], *ps: Tensor[Any, Any]) -> Tensor[Any, Any]:
        for n, p in zip(names, ps, strict=True):
            setattr(layer, n, p)
        out: Tensor[Any, Any] = layer(xx)
        return out

    try:
        return gradcheck(fn, [x, *saved.values()])
    finally:
        for n, p in saved.items():
            setattr(layer, n, p)


def _arr(t: Tensor[Any, Any]) -> Array:
    return np.asarray(t.data)


# ----- Linear ------------------------------------------------------------------------------


def test_linear_forward_and_init(dev: Cpu) -> None:
    lin = nn.Linear(5, 3, dev=dev, dtype=F64)
    assert lin.weight.shape == (3, 5) and lin.bias is not None and lin.bias.shape == (3,)
    x = _x(dev, 4, 5)
    np.testing.assert_allclose(_arr(lin(x)), _arr(x) @ _arr(lin.weight).T + _arr(lin.bias), rtol=1e-12)
    big = nn.Linear(100, 200, dev=dev)
    w = _arr(big.weight)
    assert w.dtype == np.float32
    bound = 1 / math.sqrt(100)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.005  # U(-b, b) has std b / sqrt(3)
    assert nn.Linear(4, 2, bias=False, dev=dev).bias is None
    assert len(nn.Linear(4, 2, bias=False, dev=dev).parameters()) == 1


def test_linear_seeded_init_repeats() -> None:
    a, b = nn.Linear(3, 4, dev=Cpu(7)), nn.Linear(3, 4, dev=Cpu(7))
    np.testing.assert_array_equal(_arr(a.weight), _arr(b.weight))


def test_linear_gradcheck(dev: Cpu) -> None:
    lin = nn.Linear(4, 3, dev=dev, dtype=F64)
    assert _check_with_params(lin, ["weight", "bias"], _x(dev, 2, 4))
    assert _check_with_params(lin, ["weight", "bias"], _x(dev, 2, 3, 4))


def test_linear_shape_error(dev: Cpu) -> None:
    with pytest.raises(ShapeError):
        nn.Linear(4, 3, dev=dev)(dev.randn((2, 5)))


def test_linear_matches_torch(dev: Cpu) -> None:
    torch = pytest.importorskip("torch")
    lin = nn.Linear(6, 4, dev=dev, dtype=F64)
    ref = torch.nn.Linear(6, 4).double()
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(_arr(lin.weight)))
        ref.bias.copy_(torch.from_numpy(_arr(lin.bias)))  # type: ignore[arg-type]
    x = _x(dev, 3, 6)
    np.testing.assert_allclose(_arr(lin(x)), ref(torch.from_numpy(_arr(x))).detach().numpy(), rtol=1e-12)
    assert [n for n, _ in lin.named_parameters()] == [n for n, _ in ref.named_parameters()]


# ----- convolutions and pooling --------------------------------------------------------------


def _conv2d_ref(x: Array, w: Array, b: Array | None, stride: int, pad: int) -> Array:
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            y[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return y if b is None else y + b[None, :, None, None]


def test_conv2d_forward_init_and_gradcheck(dev: Cpu) -> None:
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1, dev=dev, dtype=F64)
    assert conv.weight.shape == (3, 2, 3, 3)
    assert np.abs(_arr(conv.weight)).max() <= 1 / math.sqrt(2 * 9)
    x = _x(dev, 2, 2, 5, 5)
    assert conv.bias is not None
    np.testing.assert_allclose(
        _arr(conv(x)), _conv2d_ref(_arr(x), _arr(conv.weight), _arr(conv.bias), 2, 1), atol=1e-12
    )
    assert _check_with_params(conv, ["weight", "bias"], _x(dev, 1, 2, 4, 4))


def test_conv1d_forward_and_gradcheck(dev: Cpu) -> None:
    conv = nn.Conv1d(2, 3, 3, padding=1, dev=dev, dtype=F64)
    assert conv.weight.shape == (3, 2, 3)
    x = _x(dev, 2, 2, 6)
    assert conv.bias is not None
    xp, w = np.pad(_arr(x), ((0, 0), (0, 0), (1, 1))), _arr(conv.weight)
    ref = np.stack([np.einsum("nck,ock->no", xp[:, :, i : i + 3], w) for i in range(6)], axis=-1)
    np.testing.assert_allclose(_arr(conv(x)), ref + _arr(conv.bias)[:, None], atol=1e-12)
    assert _check_with_params(conv, ["weight", "bias"], _x(dev, 1, 2, 5))


def test_conv_transpose2d_is_conv2d_adjoint_and_gradchecks(dev: Cpu) -> None:
    ct = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, bias=False, dev=dev, dtype=F64)
    assert ct.weight.shape == (3, 2, 3, 3)
    assert np.abs(_arr(ct.weight)).max() <= 1 / math.sqrt(2 * 9)  # PyTorch's fan_in: C_out * K * K
    x, z = _x(dev, 1, 3, 3, 3), _x(dev, 1, 2, 5, 5)
    # <conv_transpose(x), z> == <x, conv(z)> with the same weight
    lhs = float((_arr(ct(x)) * _arr(z)).sum())
    rhs = float((_arr(x) * _conv2d_ref(_arr(z), _arr(ct.weight), None, 2, 1)).sum())
    assert abs(lhs - rhs) < 1e-10
    ct2 = nn.ConvTranspose2d(2, 2, 2, stride=2, dev=dev, dtype=F64)
    assert _check_with_params(ct2, ["weight", "bias"], _x(dev, 1, 2, 2, 2))


def test_conv_groups_error(dev: Cpu) -> None:
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2d(3, 4, 3, groups=2, dev=dev)


def test_convs_match_torch(dev: Cpu) -> None:
    torch = pytest.importorskip("torch")
    cases: list[tuple[nn.Module, Any, tuple[int, ...]]] = [
        (nn.Conv1d(2, 4, 3, 2, 1, dev=dev, dtype=F64), torch.nn.Conv1d(2, 4, 3, 2, 1), (2, 2, 7)),
        (
            nn.Conv2d(4, 6, 3, 1, 1, groups=2, dev=dev, dtype=F64),
            torch.nn.Conv2d(4, 6, 3, 1, 1, groups=2),
            (2, 4, 5, 5),
        ),
        (
            nn.ConvTranspose2d(2, 3, 3, 2, 1, output_padding=1, dev=dev, dtype=F64),
            torch.nn.ConvTranspose2d(2, 3, 3, 2, 1, output_padding=1),
            (1, 2, 4, 4),
        ),
    ]
    for ours, ref, shape in cases:
        ref = ref.double()
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
        with torch.no_grad():
            for (_, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
                assert p.shape == tuple(q.shape)
                q.copy_(torch.from_numpy(_arr(p)))
        x = _x(dev, *shape)
        np.testing.assert_allclose(_arr(ours(x)), ref(torch.from_numpy(_arr(x))).detach().numpy(), atol=1e-10)


def test_pools(dev: Cpu) -> None:
    x = _x(dev, 1, 2, 4, 4)
    a = _arr(x).reshape(1, 2, 2, 2, 2, 2)
    np.testing.assert_allclose(_arr(nn.MaxPool2d(2)(x)), a.max(axis=(3, 5)))
    np.testing.assert_allclose(_arr(nn.AvgPool2d(2)(x)), a.mean(axis=(3, 5)))
    np.testing.assert_allclose(_arr(nn.MinPool2d(2)(x)), a.min(axis=(3, 5)))
    for pool in (nn.MaxPool2d(2), nn.AvgPool2d(3, stride=1, padding=1), nn.MinPool2d(2, 1)):
        assert gradcheck(pool, [x])
        assert pool.parameters() == []


# ----- normalisation -----------------------------------------------------------------------


def test_layer_norm(dev: Cpu) -> None:
    ln = nn.LayerNorm(4, dtype=F64)
    assert ln.weight is not None and ln.bias is not None
    ln.weight.data[:] = _arr(_x(dev, 4))
    ln.bias.data[:] = _arr(_x(dev, 4))
    x = _arr(_x(dev, 3, 4))
    xh = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_arr(ln(dev.tensor(x))), xh * _arr(ln.weight) + _arr(ln.bias), rtol=1e-10)
    assert _check_with_params(ln, ["weight", "bias"], _x(dev, 2, 4))
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    with pytest.raises(ShapeError):
        ln(_x(dev, 2, 5))


def test_rms_norm(dev: Cpu) -> None:
    rn = nn.RMSNorm(4, eps=1e-6, dtype=F64)
    assert rn.weight is not None
    rn.weight.data[:] = _arr(_x(dev, 4))
    x = _arr(_x(dev, 3, 4))
    ref = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * _arr(rn.weight)
    np.testing.assert_allclose(_arr(rn(dev.tensor(x))), ref, rtol=1e-10)
    assert _check_with_params(rn, ["weight"], _x(dev, 2, 4))
    with pytest.raises(ShapeError, match="RMSNorm"):
        rn(_x(dev, 2, 3))


def _bn_ref(x: Array, axes: tuple[int, ...], w: Array, b: Array, eps: float) -> Array:
    shape = [1] * x.ndim
    shape[1] = -1
    m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    out: Array = (x - m) / np.sqrt(v + eps) * w.reshape(shape) + b.reshape(shape)
    return out


@pytest.mark.parametrize(
    ("cls", "shape", "axes"),
    [(nn.BatchNorm1d, (5, 3), (0,)), (nn.BatchNorm1d, (4, 3, 2), (0, 2)), (nn.BatchNorm2d, (2, 3, 2, 2), (0, 2, 3))],
)
def test_batch_norm_train_eval(
    dev: Cpu, cls: type[nn.BatchNorm1d], shape: tuple[int, ...], axes: tuple[int, ...]
) -> None:
    bn = cls(3, dtype=F64)
    assert bn.weight is not None and bn.bias is not None
    assert bn.running_mean is not None and bn.running_var is not None  # None without track_running_stats
    bn.weight.data[:] = [1.0, 2.0, 0.5]
    bn.bias.data[:] = [0.0, -1.0, 3.0]
    x = _arr(_x(dev, *shape))
    y = bn(dev.tensor(x))
    np.testing.assert_allclose(_arr(y), _bn_ref(x, axes, _arr(bn.weight), _arr(bn.bias), 1e-5), rtol=1e-10)
    n = x.size // 3
    np.testing.assert_allclose(_arr(bn.running_mean), 0.1 * x.mean(axis=axes), rtol=1e-12)
    np.testing.assert_allclose(_arr(bn.running_var), 0.9 + 0.1 * x.var(axis=axes) * n / (n - 1), rtol=1e-12)
    # eval: the running statistics, not the batch's
    bn.eval()
    assert not bn.training
    rs = [1] * x.ndim
    rs[1] = 3
    m, v = _arr(bn.running_mean).reshape(rs), _arr(bn.running_var).reshape(rs)
    ref = (x - m) / np.sqrt(v + 1e-5) * _arr(bn.weight).reshape(rs) + _arr(bn.bias).reshape(rs)
    before = _arr(bn.running_mean).copy()
    np.testing.assert_allclose(_arr(bn(dev.tensor(x))), ref, rtol=1e-10)
    np.testing.assert_array_equal(_arr(bn.running_mean), before)  # eval leaves the stats alone
    assert [k for k, _ in bn.named_parameters()] == ["weight", "bias"]
    assert [k for k, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]  # PyTorch's


def test_batch_norm_gradcheck(dev: Cpu) -> None:
    bn = nn.BatchNorm2d(2, dtype=F64)
    assert bn.weight is not None
    bn.weight.data[:] = [1.5, -0.5]
    assert _check_with_params(bn, ["weight", "bias"], _x(dev, 3, 2, 2, 2))
    bn1 = nn.BatchNorm1d(3, dtype=F64)
    assert _check_with_params(bn1, ["weight", "bias"], _x(dev, 4, 3))
    bn1.eval()
    assert _check_with_params(bn1, ["weight", "bias"], _x(dev, 4, 3))


def test_batch_norm_errors(dev: Cpu) -> None:
    with pytest.raises(ShapeError, match="BatchNorm2d"):
        nn.BatchNorm2d(3)(dev.randn((2, 4, 2, 2)))
    with pytest.raises(ShapeError, match="BatchNorm1d"):
        nn.BatchNorm1d(3)(dev.randn((2, 3, 2, 2)))
    with pytest.raises(ValueError, match="more than 1 value"):
        nn.BatchNorm1d(3)(dev.randn((1, 3)))
    with pytest.raises(ValueError, match="momentum"):
        nn.BatchNorm1d(3, momentum=1.5)


def test_batch_norm_matches_torch(dev: Cpu) -> None:
    torch = pytest.importorskip("torch")
    ours, ref = nn.BatchNorm2d(3, dtype=F64), torch.nn.BatchNorm2d(3).double()
    assert ours.running_mean is not None and ours.running_var is not None  # None without track_running_stats
    for _ in range(3):
        x = _x(dev, 4, 3, 2, 2)
        np.testing.assert_allclose(_arr(ours(x)), ref(torch.from_numpy(_arr(x))).detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(_arr(ours.running_mean), ref.running_mean.numpy(), atol=1e-12)
    np.testing.assert_allclose(_arr(ours.running_var), ref.running_var.numpy(), atol=1e-12)
    ours.eval()
    ref.eval()
    x = _x(dev, 2, 3, 2, 2)
    np.testing.assert_allclose(_arr(ours(x)), ref(torch.from_numpy(_arr(x))).detach().numpy(), atol=1e-10)
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in ref.named_parameters()]


def test_norms_match_torch(dev: Cpu) -> None:
    torch = pytest.importorskip("torch")
    x = _x(dev, 3, 5)
    ln, tln = nn.LayerNorm(5, dtype=F64), torch.nn.LayerNorm(5).double()
    np.testing.assert_allclose(_arr(ln(x)), tln(torch.from_numpy(_arr(x))).detach().numpy(), atol=1e-10)
    rn, trn = nn.RMSNorm(5, dtype=F64), torch.nn.RMSNorm(5).double()
    np.testing.assert_allclose(_arr(rn(x)), trn(torch.from_numpy(_arr(x))).detach().numpy(), atol=1e-10)


# ----- embedding, activations, dropout, containers ------------------------------------------


def test_embedding(dev: Cpu) -> None:
    emb = nn.Embedding(6, 3, dev=dev, dtype=F64)
    idx = np.array([[0, 2], [2, 5]])
    np.testing.assert_array_equal(_arr(emb(idx)), _arr(emb.weight)[idx])
    grads = emb.alloc_grads()
    out = emb(dev.tensor(idx).trace(grads))  # integer indices (a float tensor is refused)
    w = np.arange(12.0).reshape(2, 2, 3)
    grads = (out * dev.tensor(w)).sum().backward()
    expected = np.zeros((6, 3))
    np.add.at(expected, idx, w)
    np.testing.assert_allclose(_arr(grads.get(emb.weight)), expected)
    assert list(grads.ids()) == [emb.weight.id]


ACTIVATIONS: list[tuple[nn.Module, Callable[[Array], Array]]] = [
    (nn.ReLU(), lambda a: np.maximum(a, 0)),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
    (nn.SiLU(), lambda a: a / (1 + np.exp(-a))),
    (nn.GELU(), lambda a: a * 0.5 * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))),
]


@pytest.mark.parametrize(("act", "ref"), ACTIVATIONS, ids=lambda v: type(v).__name__)
def test_activations(dev: Cpu, act: nn.Module, ref: Callable[[Array], Array]) -> None:
    x = _x(dev, 3, 4)
    np.testing.assert_allclose(_arr(act(x)), ref(_arr(x)), rtol=1e-7, atol=1e-12)
    assert gradcheck(act, [x + 0.01])  # away from relu's kink at 0
    assert act.parameters() == []


def test_dropout_train_eval(dev: Cpu) -> None:
    d = nn.Dropout(0.25)
    x = dev.ones((200, 50), F64)
    y = _arr(d(x))
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    assert 0.2 < (y == 0).mean() < 0.3
    d.eval()
    assert d(x) is x
    d.train()
    assert d.training
    with pytest.raises(ValueError, match="Dropout"):
        nn.Dropout(1.5)
    # gradient: the mask of the same pass, g * m
    grads = Gradients.leaky()
    xt = dev.ones((4, 5), F64).trace(grads)
    out = d(xt)
    g = out.sum().backward()
    np.testing.assert_allclose(_arr(g.get(xt)), _arr(out))


def test_flatten_sequential_residual(dev: Cpu) -> None:
    x = _x(dev, 2, 3, 2, 2)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 2, 2)
    with pytest.raises(ValueError, match="Flatten"):
        nn.Flatten(3, 1)(x)
    assert gradcheck(nn.Flatten(), [x])
    lin = nn.Linear(4, 4, dev=dev, dtype=F64)
    res = nn.Residual(nn.Sequential(lin, nn.Tanh()))
    v = _x(dev, 3, 4)
    np.testing.assert_allclose(_arr(res(v)), _arr(v) + np.tanh(_arr(lin(v))), rtol=1e-12)
    assert [n for n, _ in res.named_parameters()] == ["f.0.weight", "f.0.bias"]
    assert _check_with_params(lin, ["weight", "bias"], v) and gradcheck(res, [v])
    seq = nn.Sequential(nn.Linear(2, 3, dev=dev), nn.ReLU())
    assert len(seq) == 2 and isinstance(seq[0], nn.Linear) and list(seq)[1] is seq[1]
    with pytest.raises(TypeError, match="Sequential"):
        nn.Sequential(nn.ReLU(), "relu")  # type: ignore[arg-type]
    assert "Linear(in_features=2" in repr(seq)


# ----- Module: discovery, modes, gradient stores ---------------------------------------------


class _Block(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.norm = nn.BatchNorm1d(4)
        self.lin = nn.Linear(4, 4, dev=dev)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: Any) -> Any:
        return self.drop(self.lin(self.norm(x)).relu())


class _Net(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.scale = dev.ones((4,))
        self.blocks = [_Block(dev), _Block(dev)]
        self.head = nn.Linear(4, 2, dev=dev)
        self.alias = self.scale  # shared: reported once
        self._cache = dev.zeros((1,))  # private: ignored
        self.name = "net"

    def forward(self, x: Any) -> Any:
        for b in self.blocks:
            x = b(x)
        return self.head(x * self.scale)


def test_parameter_discovery(dev: Cpu) -> None:
    net = _Net(dev)
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "scale",
        "blocks.0.norm.weight",
        "blocks.0.norm.bias",
        "blocks.0.lin.weight",
        "blocks.0.lin.bias",
        "blocks.1.norm.weight",
        "blocks.1.norm.bias",
        "blocks.1.lin.weight",
        "blocks.1.lin.bias",
        "head.weight",
        "head.bias",
    ]
    assert [n for n, _ in net.named_parameters()] == names  # stable
    assert [n for n, _ in net.named_buffers()] == [
        "blocks.0.norm.running_mean",
        "blocks.0.norm.running_var",
        "blocks.0.norm.num_batches_tracked",
        "blocks.1.norm.running_mean",
        "blocks.1.norm.running_var",
        "blocks.1.norm.num_batches_tracked",
    ]
    assert net.parameters()[0] is net.scale
    # parameters() walks the tree its own (faster) way: same tensors, same order, and the
    # tensor _Net holds under two names (scale, alias) once
    assert [id(p) for p in net.parameters()] == [id(p) for _, p in net.named_parameters()]
    assert len(net.parameters()) == len(names)
    assert net.num_parameters() == 4 + 2 * (4 + 4 + 16 + 4) + 8 + 2
    assert [n for n, _ in net.named_children()] == ["blocks.0", "blocks.1", "head"]
    assert len(list(net.modules())) == 1 + 2 * 4 + 1
    with pytest.raises(NotImplementedError):
        nn.Module()(dev.ones((1,)))


def test_train_eval_recursive(dev: Cpu) -> None:
    net = _Net(dev)
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    x = dev.randn((8, 4))
    np.testing.assert_array_equal(_arr(net(x)), _arr(net(x)))  # eval: deterministic
    net.train()
    assert all(m.training for m in net.modules())


def test_alloc_grads_keeps_only_parameter_grads(dev: Cpu) -> None:
    net = _Net(dev)
    grads = net.alloc_grads()
    x = dev.randn((8, 4)).trace(grads)
    loss = cross_entropy(net(x), np.arange(8) % 2)
    grads = loss.backward()
    pids = {p.id for p in net.parameters()}
    assert set(grads.ids()) <= pids
    assert {net.head.weight.id, net.blocks[0].lin.weight.id, net.scale.id} <= set(grads.ids())
    assert x.id not in grads
    g1 = _arr(grads.get(net.head.weight)).copy()
    # the store accumulates over passes until zero_grads
    x2 = dev.randn((8, 4))
    cross_entropy(net.eval()(x2.trace(grads)), np.arange(8) % 2).backward()
    assert not np.allclose(_arr(grads.get(net.head.weight)), g1)
    net.zero_grads(grads)
    assert len(grads) == 0
    np.testing.assert_array_equal(_arr(grads.get(net.head.weight)), 0)
    cross_entropy(net(x2.trace(grads)), np.arange(8) % 2).backward()
    fresh = net.alloc_grads()
    cross_entropy(net(x2.trace(fresh)), np.arange(8) % 2).backward()
    np.testing.assert_allclose(_arr(grads.get(net.head.weight)), _arr(fresh.get(net.head.weight)), rtol=1e-6)


def test_parameter_grads_match_finite_differences(dev: Cpu) -> None:
    net = nn.Sequential(nn.Linear(3, 4, dev=dev, dtype=F64), nn.Tanh(), nn.Linear(4, 2, dev=dev, dtype=F64))
    x = _x(dev, 5, 3)
    grads = net.alloc_grads()
    grads = (net(x.trace(grads)) ** 2).sum().backward()
    for name, p in net.named_parameters():
        num = np.zeros(p.shape)
        for j in np.ndindex(p.shape):
            old = p.data[j]
            vals = []
            for step in (1e-6, -1e-6):
                p.data[j] = old + step
                vals.append(float((_arr(net(x)) ** 2).sum()))
            p.data[j] = old
            num[j] = (vals[0] - vals[1]) / 2e-6
        np.testing.assert_allclose(_arr(grads.get(p)), num, rtol=1e-5, atol=1e-7, err_msg=name)


# ----- checkpoints ---------------------------------------------------------------------------


def test_checkpoint_round_trip(dev: Cpu, tmp_path: Path) -> None:
    net = _Net(dev)
    net(dev.randn((8, 4)))  # move the running stats
    path = tmp_path / "net.safetensors"
    nn.save(net, path)
    before = {k: _arr(t).copy() for k, t in nn.state_dict(net).items()}
    ids = [p.id for p in net.parameters()]
    for t in nn.state_dict(net).values():
        t.data += 1  # an int: num_batches_tracked is int64
    nn.load(net, path)
    for k, t in nn.state_dict(net).items():
        np.testing.assert_array_equal(_arr(t), before[k], err_msg=k)
    assert [p.id for p in net.parameters()] == ids
    from safetensors.numpy import load_file

    stored = load_file(str(path))
    assert "blocks.1.norm.running_var" in stored and "head.bias" in stored
    # 11 parameters, the tied ``alias`` of ``scale`` (PyTorch's state_dict lists both names) and
    # 3 buffers per BatchNorm (running_mean, running_var, num_batches_tracked)
    assert len(stored) == 18 and "alias" in stored and "blocks.0.norm.num_batches_tracked" in stored
    other = _Net(Cpu(99))
    nn.load(other, path)
    np.testing.assert_array_equal(_arr(other.head.weight), _arr(net.head.weight))


def test_checkpoint_errors(dev: Cpu, tmp_path: Path) -> None:
    path = tmp_path / "lin.safetensors"
    nn.save(nn.Sequential(nn.Linear(3, 2, dev=dev)), path)
    with pytest.raises(KeyError, match=r"'0\.bias'"):
        nn.save(nn.Sequential(nn.Linear(3, 2, bias=False, dev=dev)), tmp_path / "nobias.safetensors")
        nn.load(nn.Sequential(nn.Linear(3, 2, dev=dev)), tmp_path / "nobias.safetensors")
    with pytest.raises(ShapeError, match=r"'0\.weight'.*\(2, 3\).*\(4, 3\)"):
        nn.load(nn.Sequential(nn.Linear(3, 4, dev=dev)), path)
    with pytest.raises(DTypeError, match=r"'0\.weight'.*float32.*float64"):
        nn.load(nn.Sequential(nn.Linear(3, 2, dev=dev, dtype=F64)), path)
    with pytest.raises(KeyError, match="does not"):
        nn.load(nn.Sequential(nn.Linear(3, 2, bias=False, dev=dev)), path)
    m = nn.Sequential(nn.Linear(3, 2, bias=False, dev=dev))
    nn.load(m, path, strict=False)
    # a failed load writes nothing
    target = nn.Sequential(nn.Linear(3, 2, dev=dev), nn.Linear(2, 2, dev=dev))
    w0 = _arr(target[0].parameters()[0]).copy()
    with pytest.raises(KeyError, match=r"'1\.weight'"):
        nn.load(target, path)
    np.testing.assert_array_equal(_arr(target[0].parameters()[0]), w0)


def test_checkpoint_loads_in_torch(dev: Cpu, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    ours = nn.Sequential(nn.Linear(3, 4, dev=dev), nn.ReLU(), nn.BatchNorm1d(4), nn.Linear(4, 2, dev=dev))
    path = tmp_path / "m.safetensors"
    nn.save(ours, path)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    sd = load_file(str(path))
    missing, unexpected = ref.load_state_dict(sd, strict=False)
    assert not missing and not unexpected  # torch tolerates the absent num_batches_tracked
    ours.eval()
    ref.eval()
    x = dev.randn((5, 3))
    np.testing.assert_allclose(_arr(ours(x)), ref(torch.from_numpy(_arr(x))).detach().numpy(), rtol=1e-5, atol=1e-6)


# ----- training ------------------------------------------------------------------------------


def test_mlp_trains_on_digits() -> None:
    pytest.importorskip("sklearn")
    from gradtape.examples.digits import load_digits_split

    x_tr, y_tr, x_te, y_te = load_digits_split(0)
    dev = Cpu(seed=0)
    model = nn.Sequential(nn.Linear(64, 64, dev=dev), nn.ReLU(), nn.Linear(64, 10, dev=dev))
    rng = np.random.default_rng(0)
    lr = 0.1
    started = time.perf_counter()
    grads = model.alloc_grads()
    for _ in range(8):
        order = rng.permutation(len(x_tr))
        for lo in range(0, len(order), 32):
            idx = order[lo : lo + 32]
            loss = cross_entropy(model(dev.tensor(x_tr[idx]).trace(grads)), y_tr[idx])
            grads = loss.backward()
            for p in model.parameters():
                g = grads.get_ref_checked(p)
                if g is not None:
                    p.data -= lr * g
            model.zero_grads(grads)
    acc = float((_arr(model.eval()(dev.tensor(x_te))).argmax(axis=1) == y_te).mean())
    assert acc >= 0.9, acc
    assert time.perf_counter() - started < 20


# ----- attention -----------------------------------------------------------------------------


def _mha_ref(
    mha: nn.MultiHeadAttention | nn.MultiheadAttention, q: Array, k: Array, v: Array, mask: Array | None = None
) -> Array:
    e, h = mha.embed_dim, mha.num_heads
    d = e // h
    assert mha.in_proj_weight is not None
    w = _arr(mha.in_proj_weight)
    bias = mha.in_proj_bias
    b = np.zeros(3 * e) if bias is None else _arr(bias)

    def heads(x: Array, i: int) -> Array:
        y = x @ w[i * e : (i + 1) * e].T + b[i * e : (i + 1) * e]
        out: Array = y.reshape(x.shape[0], x.shape[1], h, d).transpose(0, 2, 1, 3)
        return out

    s = heads(q, 0) @ heads(k, 1).transpose(0, 1, 3, 2) / math.sqrt(d)
    if mask is not None:
        s = np.where(mask, -np.inf, s)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ heads(v, 2)).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    ob = mha.out_proj.bias
    out: Array = o @ _arr(mha.out_proj.weight).T + (0 if ob is None else _arr(ob))
    return out


def test_multi_head_attention(dev: Cpu) -> None:
    mha = nn.MultiHeadAttention(8, 2, dev=dev, dtype=F64)
    assert [n for n, _ in mha.named_parameters()] == [
        "in_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert np.abs(_arr(mha.in_proj_weight)).max() <= math.sqrt(6 / 32)
    assert mha.in_proj_bias is not None and mha.out_proj.bias is not None
    mha.in_proj_bias.data[:] = _arr(_x(dev, 24))
    mha.out_proj.bias.data[:] = _arr(_x(dev, 8))
    x, kv = _x(dev, 2, 3, 8), _x(dev, 2, 4, 8)
    np.testing.assert_allclose(_arr(mha(x)), _mha_ref(mha, _arr(x), _arr(x), _arr(x)), rtol=1e-10)
    np.testing.assert_allclose(_arr(mha(x, kv, kv)), _mha_ref(mha, _arr(x), _arr(kv), _arr(kv)), rtol=1e-10)
    mask = np.triu(np.ones((3, 3), bool), 1)
    np.testing.assert_allclose(_arr(mha(x, attn_mask=mask)), _mha_ref(mha, _arr(x), _arr(x), _arr(x), mask), rtol=1e-10)
    small = nn.MultiHeadAttention(4, 2, dev=dev, dtype=F64)
    assert _check_with_params(small, ["in_proj_weight", "in_proj_bias"], _x(dev, 1, 3, 4))
    q, k = _x(dev, 1, 2, 4), _x(dev, 1, 3, 4)
    assert gradcheck(lambda a, b: small(a, b, b), [q, k])
    assert gradcheck(lambda a, b, c: small(a, b, c), [q, k, _x(dev, 1, 3, 4)])
    with pytest.raises(ValueError, match="divide"):
        nn.MultiHeadAttention(6, 4, dev=dev)
    with pytest.raises(ShapeError, match="MultiHeadAttention"):
        mha(_x(dev, 3, 8))
    with pytest.raises(ShapeError, match="MultiHeadAttention"):
        mha(x, kv, _x(dev, 2, 5, 8))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer(dev: Cpu, norm_first: bool) -> None:
    enc = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True, norm_first=norm_first, dev=dev, dtype=F64)
    x = _x(dev, 2, 3, 4)
    xa = _arr(x)

    def ln(a: Array) -> Array:
        out: Array = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
        return out

    def ff(a: Array) -> Array:
        l1, l2 = enc.linear1, enc.linear2
        assert l1.bias is not None and l2.bias is not None
        h = np.maximum(a @ _arr(l1.weight).T + _arr(l1.bias), 0)
        out: Array = h @ _arr(l2.weight).T + _arr(l2.bias)
        return out

    def sa(a: Array) -> Array:
        return _mha_ref(enc.self_attn, a, a, a)

    if norm_first:
        h = xa + sa(ln(xa))
        ref = h + ff(ln(h))
    else:
        h = ln(xa + sa(xa))
        ref = ln(h + ff(h))
    np.testing.assert_allclose(_arr(enc(x)), ref, rtol=1e-9, atol=1e-12)
    assert gradcheck(enc, [x])
    grads = enc.alloc_grads()
    enc.train()(x.trace(grads)).sum().backward()
    w_in = enc.self_attn.in_proj_weight
    assert w_in is not None and w_in.id in grads and enc.norm2.weight is not None


def test_attention_matches_torch(dev: Cpu) -> None:
    torch = pytest.importorskip("torch")
    enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, dev=dev, dtype=F64)
    ref = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).double()
    assert [n for n, _ in enc.named_parameters()] == [n for n, _ in ref.named_parameters()]
    with torch.no_grad():
        for (_, p), (_, q) in zip(enc.named_parameters(), ref.named_parameters(), strict=True):
            q.copy_(torch.from_numpy(_arr(p)))
    x = _x(dev, 2, 5, 8)
    mask = np.triu(np.ones((5, 5), bool), 1)
    ref.eval()
    got = _arr(enc.eval()(x, mask))
    want = ref(torch.from_numpy(_arr(x)), src_mask=torch.from_numpy(mask)).detach().numpy()
    np.testing.assert_allclose(got, want, atol=1e-10)


def _causal(lq: int, lk: int | None = None) -> Array:
    """``(lq, lk)`` boolean causal mask, ``True`` (blocked) where key ``j > i``."""
    return np.triu(np.ones((lq, lq if lk is None else lk), bool), 1)


def test_causal_mask_blocks_later_positions(dev: Cpu) -> None:
    """Under a causal mask query ``i`` attends to keys ``0..i`` only: changing the inputs
    after ``i`` leaves outputs ``0..i`` unchanged, and the gradient of output ``i`` reaches
    no later position (its attention weight there is exactly 0)."""
    mha = nn.MultiHeadAttention(4, 2, dev=dev, dtype=F64)
    mask = _causal(5)
    x = _x(dev, 2, 5, 4)
    base = _arr(mha(x, attn_mask=mask))
    rng = np.random.default_rng(0)
    for i in range(4):
        y = _arr(x).copy()
        y[:, i + 1 :] += 100.0 * rng.standard_normal(y[:, i + 1 :].shape)
        out = _arr(mha(dev.tensor(y), attn_mask=mask))
        np.testing.assert_allclose(out[:, : i + 1], base[:, : i + 1], rtol=1e-12, atol=1e-12)
        assert not np.allclose(out[:, i + 1 :], base[:, i + 1 :])
    for i in range(5):
        grads = Gradients.leaky()
        mha(x.trace(grads), attn_mask=mask)[:, i].sum().backward()
        g = _arr(grads.get(x))
        assert np.all(g[:, i + 1 :] == 0.0) and np.abs(g[:, : i + 1]).max() > 1e-6, i
    # without the mask, the first output does depend on the last position
    grads = Gradients.leaky()
    mha(x.trace(grads))[:, 0].sum().backward()
    assert np.abs(_arr(grads.get(x))[:, -1]).max() > 1e-6


def test_masked_attention_gradcheck(dev: Cpu) -> None:
    """float64 finite differences through a causal mask (self-attention and a rectangular
    cross-attention mask), for the inputs and the in-projection parameters, and through an
    additive float mask."""
    mha = nn.MultiHeadAttention(4, 2, dev=dev, dtype=F64)
    assert mha.in_proj_bias is not None
    mha.in_proj_bias.data[:] = _arr(_x(dev, 12))
    q, k, v = _x(dev, 2, 3, 4), _x(dev, 2, 4, 4), _x(dev, 2, 4, 4)
    assert gradcheck(lambda a: mha(a, attn_mask=_causal(3)), [q])
    assert gradcheck(lambda a, b, c: mha(a, b, c, attn_mask=_causal(3, 4)), [q, k, v])
    additive = _arr(_x(dev, 2, 1, 3, 4))  # per batch, broadcast over heads
    assert gradcheck(lambda a, b: mha(a, b, b, attn_mask=additive), [q, k])
    saved_w, saved_b = mha.in_proj_weight, mha.in_proj_bias

    def with_params(a: Tensor[Any, Any], w: Tensor[Any, Any], b: Tensor[Any, Any]) -> Tensor[Any, Any]:
        mha.in_proj_weight, mha.in_proj_bias = w, b
        return mha(a, attn_mask=_causal(3))

    try:
        assert gradcheck(with_params, [q, saved_w, saved_b])
    finally:
        mha.in_proj_weight, mha.in_proj_bias = saved_w, saved_b


def test_mask_forms_agree_and_bad_mask_shape(dev: Cpu) -> None:
    """A boolean mask equals the additive mask with -inf at blocked positions (and, nearly,
    with -1e9); a mask that does not broadcast to (B, H, Lq, Lk) is a ShapeError naming both."""
    mha = nn.MultiHeadAttention(4, 2, dev=dev, dtype=F64)
    x = _x(dev, 2, 3, 4)
    mask = _causal(3)
    want = _arr(mha(x, attn_mask=mask))
    np.testing.assert_array_equal(_arr(mha(x, attn_mask=np.where(mask, -np.inf, 0.0))), want)
    np.testing.assert_allclose(_arr(mha(x, attn_mask=np.where(mask, -1e9, 0.0))), want, rtol=1e-12)
    np.testing.assert_allclose(_arr(mha(x, attn_mask=mask[None, None])), want, rtol=1e-12)
    with pytest.raises(ShapeError, match=r"attn_mask of shape \(4, 4\).*\(2, 2, 3, 3\)"):
        mha(x, attn_mask=_causal(4))


@pytest.mark.parametrize("mask_kind", ["causal", "cross", "float"])
def test_masked_attention_matches_torch(dev: Cpu, mask_kind: str) -> None:
    """Outputs and gradients (inputs and all parameters) equal torch.nn.MultiheadAttention's
    (batch_first) under a boolean causal mask, a rectangular boolean mask and a float mask."""
    torch = pytest.importorskip("torch")
    mha = nn.MultiHeadAttention(8, 2, dev=dev, dtype=F64)
    assert mha.in_proj_bias is not None and mha.out_proj.bias is not None
    mha.in_proj_bias.data[:] = _arr(_x(dev, 24))
    mha.out_proj.bias.data[:] = _arr(_x(dev, 8))
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    with torch.no_grad():
        for (_, p), (_, r) in zip(mha.named_parameters(), ref.named_parameters(), strict=True):
            r.copy_(torch.from_numpy(_arr(p)))
    lk = 6 if mask_kind == "cross" else 5
    q, k, v = _x(dev, 3, 5, 8), _x(dev, 3, lk, 8), _x(dev, 3, lk, 8)
    if mask_kind == "float":
        mask: Array = np.random.default_rng(0).standard_normal((5, lk))
        mask[_causal(5, lk)] = -np.inf
    else:
        mask = _causal(5, lk)
    w = _arr(_x(dev, 3, 5, 8))  # weights of the projected loss sum(out * w)

    grads = Gradients.leaky()
    out = mha(q.trace(grads), k.trace(grads), v.trace(grads), attn_mask=mask)
    (out * dev.tensor(w)).sum().backward()

    tq, tk, tv = (torch.tensor(_arr(t), requires_grad=True) for t in (q, k, v))
    tout, _ = ref(tq, tk, tv, attn_mask=torch.from_numpy(mask), need_weights=False)
    (tout * torch.from_numpy(w)).sum().backward()

    np.testing.assert_allclose(_arr(out), tout.detach().numpy(), atol=1e-10)
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        assert theirs.grad is not None
        np.testing.assert_allclose(_arr(grads.get(ours)), theirs.grad.numpy(), atol=1e-10)
    for (name, p), (_, r) in zip(mha.named_parameters(), ref.named_parameters(), strict=True):
        assert r.grad is not None
        np.testing.assert_allclose(_arr(grads.get(p)), r.grad.numpy(), atol=1e-10, err_msg=name)


def test_a_causal_bool_mask_takes_the_is_causal_path(dev: Cpu, monkeypatch: pytest.MonkeyPatch) -> None:
    """A square causal boolean mask (any leading size-1 dims) runs as ``is_causal``, whose
    products skip the blocked half (from 64 positions on): the same values and gradients as
    the same mask given as -inf floats (``generate_square_subsequent_mask``'s form), which is
    recognised as causal too since the transformer layers became PyTorch's. Self-attention
    without dropout runs the packed kernels (``packed_self_attention``), the rest the unfused
    op: both are spied on, and the causal flag each got is what is checked."""
    from gradtape.nn import attention as att
    from gradtape.ops.attention import packed_self_attention as real_packed
    from gradtape.ops.attention import sdpa as real

    seen: list[bool] = []

    def spy(*args: Any) -> Any:
        seen.append(bool(args[4]))
        return real(*args)

    def spy_packed(*args: Any) -> Any:
        seen.append(bool(args[3]))
        return real_packed(*args)

    monkeypatch.setattr(att, "sdpa", spy)
    monkeypatch.setattr(att, "packed_self_attention", spy_packed)
    mha = nn.MultiHeadAttention(8, 2, dev=dev, dtype=F64)
    x = _x(dev, 2, 70, 8)
    mask = _causal(70)
    for m in (mask, mask[None], mask[None, None]):
        g1 = Gradients.leaky()
        y1 = mha(x.trace(g1), attn_mask=m)
        gx1 = y1.sum().backward().get(x).numpy()
        g2 = Gradients.leaky()
        y2 = mha(x.trace(g2), attn_mask=np.where(mask, -np.inf, 0.0))
        gx2 = y2.sum().backward().get(x).numpy()
        np.testing.assert_allclose(_arr(y1), _arr(y2), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gx1, gx2, rtol=1e-12, atol=1e-14)
    assert seen == [True, True] * 3
    seen.clear()
    mha(x, attn_mask=_causal(70).T)  # anti-causal: a mask, not is_causal
    mha(x, attn_mask=np.broadcast_to(mask, (2, 2, 70, 70)))  # leading dims > 1: kept as a mask
    assert seen == [False, False]
