"""``nn.Mamba`` and ``nn.MambaBlock`` against a plain PyTorch implementation of the reference
slow path (state-spaces/mamba, ``mamba_simple.py``'s ``Mamba`` with ``selective_scan_ref``,
``Block`` with ``fused_add_norm=False``), written here with a loop over time: the outputs
and the gradients of the input and of every parameter in float64, the way users take them
(only the input traced into ``alloc_grads()``; only the parameters watched by a
``GradientTape``); the reference's initialisation; a short training run; shape errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, GradientTape, ShapeError, Tensor, nn, optim
from gradtape.losses import mse_loss

torch: Any = pytest.importorskip("torch")
F: Any = torch.nn.functional

Array = np.ndarray[Any, Any]
RTOL, ATOL = 1e-9, 1e-10


class RefMamba(torch.nn.Module):  # type: ignore[misc]
    """The reference ``Mamba`` (slow path), float64, parameters copied from a gradtape layer."""

    def __init__(self, ours: nn.Mamba) -> None:
        super().__init__()
        di, dm, r, n = ours.d_inner, ours.d_model, ours.dt_rank, ours.d_state
        self.d_inner, self.dt_rank, self.d_state = di, r, n
        tl = torch.nn
        self.in_proj = tl.Linear(dm, 2 * di, bias=False, dtype=torch.float64)
        self.conv1d = tl.Conv1d(di, di, ours.d_conv, groups=di, padding=ours.d_conv - 1, bias=True, dtype=torch.float64)
        self.x_proj = tl.Linear(di, r + 2 * n, bias=False, dtype=torch.float64)
        self.dt_proj = tl.Linear(r, di, bias=True, dtype=torch.float64)
        self.A_log = tl.Parameter(torch.zeros(di, n, dtype=torch.float64))
        self.D = tl.Parameter(torch.zeros(di, dtype=torch.float64))
        self.out_proj = tl.Linear(di, dm, bias=False, dtype=torch.float64)
        copy_params(ours, self)

    def forward(self, h: Any) -> Any:
        seqlen = h.shape[1]
        xz = self.in_proj(h).transpose(1, 2)  # (b, 2d, l), as the reference's rearrange
        a = -torch.exp(self.A_log)
        x, z = xz.chunk(2, dim=1)
        x = F.silu(self.conv1d(x)[..., :seqlen])
        x_dbl = self.x_proj(x.transpose(1, 2))  # (b, l, r + 2n)
        dt, b, c = torch.split(x_dbl, [self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = self.dt_proj.weight @ dt.transpose(1, 2)  # (b, d, l), bias added in the scan
        y = selective_scan_ref(x, dt, a, b.transpose(1, 2), c.transpose(1, 2), self.D, z, self.dt_proj.bias)
        return self.out_proj(y.transpose(1, 2))


def selective_scan_ref(u: Any, delta: Any, a: Any, b: Any, c: Any, d: Any, z: Any, delta_bias: Any) -> Any:
    """``selective_scan_ref`` (delta_softplus=True, real A, B and C of shape (b, n, l)): a loop
    over time on ``u, delta, z (b, d, l)``."""
    delta = F.softplus(delta + delta_bias[..., None])
    batch, dim, length = u.shape
    x = u.new_zeros((batch, dim, a.shape[1]))
    delta_a = torch.exp(torch.einsum("bdl,dn->bdln", delta, a))
    delta_b_u = torch.einsum("bdl,bnl,bdl->bdln", delta, b, u)
    ys = []
    for i in range(length):
        x = delta_a[:, :, i] * x + delta_b_u[:, :, i]
        ys.append(torch.einsum("bdn,bn->bd", x, c[:, :, i]))
    y = torch.stack(ys, dim=2)
    out = y + u * d[None, :, None]
    return out * F.silu(z)


class RefBlock(torch.nn.Module):  # type: ignore[misc]
    """The reference ``Block(dim, Mamba, RMSNorm)`` with ``fused_add_norm=False``: the
    residual stream carried separately, ``(mixer(norm(residual)), residual)``."""

    def __init__(self, ours: nn.MambaBlock) -> None:
        super().__init__()
        self.mixer = RefMamba(ours.mixer)
        self.norm = torch.nn.RMSNorm(ours.d_model, eps=ours.norm.eps, dtype=torch.float64)
        copy_params(ours, self)

    def forward(self, h: Any) -> Any:
        residual = h
        hidden = self.mixer(self.norm(residual))
        return hidden + residual


def copy_params(ours: nn.Module, ref: Any) -> None:
    """Copy every gradtape parameter into the torch module's parameter of the same name."""
    mine = dict(ours.named_parameters())
    theirs = dict(ref.named_parameters())
    with torch.no_grad():
        for name, p in theirs.items():
            if name in mine:
                p.copy_(torch.from_numpy(mine[name].numpy().copy()))


def _build(kind: str, d_model: int = 6, **kw: Any) -> tuple[nn.Module, Any]:
    dev = Cpu(seed=3)
    m: nn.Module
    ref: Any
    if kind == "Mamba":
        mixer: nn.Mamba = nn.Mamba(d_model, dev=dev, dtype=np.float64, **kw)
        # perturb D so that its gradient is not tied to its init value
        mixer.D.data[:] = dev.rng.uniform(0.5, 1.5, mixer.D.shape)
        m, ref = mixer, RefMamba(mixer)
    else:
        block: nn.MambaBlock = nn.MambaBlock(d_model, dev=dev, dtype=np.float64, **kw)
        assert block.norm.weight is not None
        block.norm.weight.data[:] = dev.rng.uniform(0.5, 1.5, d_model)
        m, ref = block, RefBlock(block)
    assert {n for n, _ in m.named_parameters()} == {n for n, _ in ref.named_parameters()}
    return m, ref


def _torch_grads(ref: Any, x: Array, w: Array) -> tuple[Array, dict[str, Array], Array]:
    xt = torch.tensor(x, requires_grad=True)
    out = ref(xt)
    (out * torch.from_numpy(w)).sum().backward()
    return (
        out.detach().numpy(),
        {n: p.grad.numpy() for n, p in ref.named_parameters()},
        xt.grad.numpy(),
    )


CONFIGS = [
    pytest.param("Mamba", {}, (2, 7), id="Mamba-default"),
    pytest.param("Mamba", {"d_state": 3, "d_conv": 2, "expand": 1.5, "dt_rank": 2}, (3, 5), id="Mamba-small"),
    pytest.param("Mamba", {"d_state": 4}, (1, 1), id="Mamba-length1"),
    pytest.param("MambaBlock", {"d_state": 5}, (2, 9), id="MambaBlock"),
]


@pytest.mark.parametrize(("kind", "kw", "bl"), CONFIGS)
def test_matches_the_reference_with_the_input_traced(kind: str, kw: dict[str, Any], bl: tuple[int, int]) -> None:
    """Only the input traced into ``alloc_grads()`` (dfdx's usage): the output, the input's
    gradient and every parameter's gradient equal the PyTorch reference's in float64."""
    m, ref = _build(kind, **kw)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((*bl, 6))
    w = rng.standard_normal((*bl, 6))
    want_out, want_p, want_x = _torch_grads(ref, x, w)
    dev = Cpu()
    xt = dev.tensor(x)
    grads = m.alloc_grads()
    grads.retain_leafs([xt])
    out = m(xt.trace(grads))
    g = (out * dev.tensor(w)).sum().backward()
    np.testing.assert_allclose(out.numpy(), want_out, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(g.get(xt).numpy(), want_x, rtol=RTOL, atol=ATOL, err_msg="input")
    names = [n for n, _ in m.named_parameters()]
    assert len(names) == len(want_p) == (10 if kind == "MambaBlock" else 9)
    for name, p in m.named_parameters():
        got = g.get(p).numpy()
        np.testing.assert_allclose(got, want_p[name], rtol=RTOL, atol=ATOL, err_msg=name)
        if not (name == "A_log" and bl[1] == 1):  # length 1: h_0 = dt_0 x_0 B_0 has no decay
            assert np.abs(got).max() > 0, f"{name}: zero gradient"


@pytest.mark.parametrize("kind", ["Mamba", "MambaBlock"])
def test_matches_the_reference_with_only_the_parameters_watched(kind: str) -> None:
    """TensorFlow style: the parameters watched by a ``GradientTape`` context, the input
    untraced: every parameter's gradient equals the reference's."""
    m, ref = _build(kind, d_state=4)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 6))
    w = rng.standard_normal((2, 6, 6))
    want_out, want_p, _ = _torch_grads(ref, x, w)
    dev = Cpu()
    params = m.parameters()
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(params)
        out = m(dev.tensor(x))
        loss = (out * dev.tensor(w)).sum()
    gs = tape.gradient(loss, params)
    assert isinstance(gs, list) and len(gs) == len(params) == len(want_p)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=RTOL, atol=ATOL)
    for (name, _), gp in zip(m.named_parameters(), gs, strict=True):
        assert isinstance(gp, Tensor), f"{name}: no gradient"
        np.testing.assert_allclose(gp.numpy(), want_p[name], rtol=RTOL, atol=ATOL, err_msg=name)


def test_initialisation_follows_the_reference() -> None:
    """Shapes, A_log = log(1..N) per channel, D = 1, softplus(dt_proj.bias) in [dt_min,
    dt_max], dt_proj.weight within +-dt_rank**-0.5, dt_rank 'auto' = ceil(d_model / 16),
    no biases on the projections, float32 by default."""
    m = nn.Mamba(40, d_state=8, d_conv=3, dt_min=0.01, dt_max=0.05, dev=Cpu(seed=0))
    assert (m.d_inner, m.dt_rank) == (80, math.ceil(40 / 16))
    shapes = {n: p.shape for n, p in m.named_parameters()}
    assert shapes == {
        "A_log": (80, 8),
        "D": (80,),
        "in_proj.weight": (160, 40),
        "conv1d.weight": (80, 1, 3),
        "conv1d.bias": (80,),
        "x_proj.weight": (3 + 16, 80),
        "dt_proj.weight": (80, 3),
        "dt_proj.bias": (80,),
        "out_proj.weight": (40, 80),
    }
    assert all(p.dtype == np.float32 for p in m.parameters())
    np.testing.assert_allclose(m.A_log.numpy(), np.tile(np.log(np.arange(1, 9)), (80, 1)), rtol=1e-6)
    np.testing.assert_array_equal(m.D.numpy(), 1.0)
    assert m.dt_proj.bias is not None
    dt = np.log1p(np.exp(m.dt_proj.bias.numpy().astype(np.float64)))
    assert dt.min() >= 0.01 * (1 - 1e-5) and dt.max() <= 0.05 * (1 + 1e-5)
    assert dt.max() / dt.min() > 2  # spread over the range, not constant
    assert np.abs(m.dt_proj.weight.numpy()).max() <= 3**-0.5
    assert nn.Mamba(8, dt_rank=5, dev=Cpu()).dt_rank == 5


def test_training_reduces_the_loss() -> None:
    """A two-block model learns to output the running mean of its input (a causal
    sequence task): the loss falls by more than half within 40 Adam steps."""
    dev = Cpu(seed=0)
    blocks = [nn.MambaBlock(4, d_state=4, dev=dev) for _ in range(2)]
    model = nn.Sequential(*blocks)
    rng = np.random.default_rng(0)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(40):
        x = rng.standard_normal((8, 12, 4)).astype(np.float32)
        target = np.cumsum(x, axis=1) / np.arange(1, 13)[None, :, None]
        grads = model.alloc_grads()
        loss = mse_loss(model(dev.tensor(x).trace(grads)), dev.tensor(target.astype(np.float32)))
        opt.step(loss.backward())
        losses.append(loss.item())
    assert np.isfinite(losses).all()
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses


def test_causal_and_shape_preserving() -> None:
    """Float32 in, float32 out of the input's shape; changing a later step leaves the
    earlier outputs unchanged."""
    dev = Cpu(seed=1)
    m = nn.MambaBlock(8, dev=dev)
    x = dev.randn((2, 10, 8)).numpy()
    out = m(dev.tensor(x)).numpy()
    assert out.shape == (2, 10, 8) and out.dtype == np.float32
    y = x.copy()
    y[:, 6:] += 1.0
    out2 = m(dev.tensor(y)).numpy()
    np.testing.assert_array_equal(out2[:, :6], out[:, :6])
    assert not np.allclose(out2[:, 6:], out[:, 6:])


@pytest.mark.parametrize("kind", ["Mamba", "MambaBlock"])
def test_shape_errors_name_the_layer(kind: str) -> None:
    """A wrong width, a wrong rank or length 0 raises ShapeError naming the layer and the shape."""
    dev = Cpu()
    m = nn.Mamba(8, dev=dev) if kind == "Mamba" else nn.MambaBlock(8, dev=dev)
    with pytest.raises(ShapeError, match=rf"^{kind}: expected an input of shape \(B, L, 8\), got \(2, 3, 5\)"):
        m(dev.zeros((2, 3, 5)))
    with pytest.raises(ShapeError, match=rf"^{kind}: .*got \(3, 8\)"):
        m(dev.zeros((3, 8)))  # type: ignore[arg-type]  # the wrong rank is also a type error
    with pytest.raises(ShapeError, match=rf"^{kind}: input of shape \(2, 0, 8\) has length 0"):
        m(dev.zeros((2, 0, 8)))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"d_state": 0}, "d_state must be an int >= 1, got 0"),
        ({"d_conv": 0}, "d_conv must be an int >= 1, got 0"),
        ({"dt_rank": 0}, "dt_rank must be 'auto' or an int >= 1, got 0"),
        ({"dt_min": 0.2}, r"need 0 < dt_min <= dt_max, got dt_min=0.2, dt_max=0.1"),
        ({"expand": 0}, "d_inner must be an int >= 1, got 0"),
    ],
)
def test_bad_arguments(kw: dict[str, Any], message: str) -> None:
    """Bad hyper-parameters raise ValueError naming Mamba and the argument."""
    with pytest.raises(ValueError, match=f"^Mamba: {message}"):
        nn.Mamba(8, dev=Cpu(), **kw)
