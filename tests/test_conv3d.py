"""3-D convolutions (``conv3d``, ``conv_transpose3d``, ``nn.Conv3d``, ``nn.ConvTranspose3d``)
written as a PyTorch user's program: build PyTorch's layer in float64, give it gradtape's
weights, and compare outputs and every gradient (input, weight, bias) over a grid of strides,
paddings ("same", "valid", per dim), dilations, groups (depthwise too), no bias and output
paddings; gradients of gradients against ``torch.autograd.grad(create_graph=True)``; the
functional spellings; the bad-input errors (naming the op and both shapes); and a short SGD
training loop equal to PyTorch's step by step. The kernels' array-function path (the GPU's)
and the chunked path are checked against the numba one on the CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import DTypeError, ShapeError, losses, nn, optim
from gradtape.autograd import grad
from gradtape.devices.kernels import conv3d as k3

torch: Any = pytest.importorskip("torch")
TF: Any = torch.nn.functional
GF: Any = gt.nn.functional

Array = np.ndarray[Any, Any]
DEV = gt.Cpu(seed=0)
_RNG = np.random.default_rng(3)


def rnd(*shape: int) -> Array:
    return _RNG.standard_normal(shape)


def _copy_weights(ours: nn.Module, ref: Any) -> None:
    """Give PyTorch's layer gradtape's parameters (the names are PyTorch's)."""
    mine = dict(ours.named_parameters())
    theirs = dict(ref.named_parameters())
    assert list(mine) == list(theirs)
    with torch.no_grad():
        for name, q in theirs.items():
            assert tuple(q.shape) == tuple(mine[name].shape), name
            q.copy_(torch.from_numpy(np.asarray(mine[name].data, dtype=np.float64)).to(q.dtype))


def _compare(ours: nn.Module, ref: Any, x: Array, dtype: Any, rtol: float, atol: float) -> None:
    """Forward both on ``x`` and backward ``sum(y * gy)``: outputs, ``x.grad`` and every
    parameter's ``.grad`` agree."""
    xt = DEV.tensor(x, dtype=dtype, requires_grad=True)
    y = ours(xt)
    xr = torch.tensor(x, dtype=torch.float64 if dtype == np.float64 else torch.float32, requires_grad=True)
    yr = ref(xr)
    assert tuple(y.shape) == tuple(yr.shape)
    assert y.numpy().dtype == dtype
    np.testing.assert_allclose(y.numpy(), yr.detach().numpy(), rtol=rtol, atol=atol)
    gy = rnd(*yr.shape)
    (y * DEV.tensor(gy, dtype=dtype)).sum().backward()
    (yr * torch.tensor(gy, dtype=yr.dtype)).sum().backward()
    assert xt.grad is not None
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=rtol, atol=atol, err_msg="x.grad")
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)


# (in, out, kernel, kwargs, input shape (N, D, H, W))
CONV3D_GRID: list[tuple[int, int, Any, dict[str, Any], tuple[int, int, int, int]]] = [
    (2, 3, 3, {}, (2, 5, 6, 7)),
    (2, 4, 3, {"padding": 1}, (2, 5, 5, 5)),
    (3, 4, 3, {"stride": 2, "padding": 1}, (2, 7, 6, 5)),
    (2, 3, (2, 3, 1), {"stride": (1, 2, 3), "padding": (1, 0, 2)}, (1, 5, 7, 8)),
    (2, 2, 3, {"dilation": 2, "padding": 2}, (2, 6, 7, 6)),
    (2, 3, (3, 2, 2), {"dilation": (1, 2, 3), "padding": (0, 1, 2)}, (1, 5, 6, 8)),
    (4, 6, 3, {"groups": 2, "padding": 1}, (2, 4, 5, 4)),
    (4, 4, 3, {"groups": 4, "padding": 1, "stride": 2}, (2, 5, 6, 5)),  # depthwise
    (3, 6, 3, {"groups": 3, "padding": "same"}, (1, 4, 5, 6)),  # depthwise multiplier 2
    (2, 3, (2, 4, 3), {"padding": "same", "dilation": (2, 1, 3)}, (2, 6, 6, 7)),  # odd total padding
    (2, 3, 3, {"padding": "valid", "bias": False}, (2, 4, 5, 6)),
    (2, 3, 1, {"stride": 3, "bias": False}, (2, 7, 5, 4)),
    (2, 3, 3, {"padding": 1, "padding_mode": "reflect"}, (2, 4, 5, 6)),
    (2, 3, 3, {"padding": (1, 2, 1), "padding_mode": "replicate", "stride": 2}, (1, 5, 6, 7)),
    (2, 3, (3, 2, 3), {"padding": "same", "padding_mode": "circular"}, (2, 4, 5, 6)),
]


def _ids(grid: list[Any]) -> list[str]:
    return [f"{c[0]}-{c[1]}-k{c[2]}-{c[3]}" for c in grid]


@pytest.mark.parametrize(("cin", "cout", "k", "kw", "shape"), CONV3D_GRID, ids=_ids(CONV3D_GRID))
def test_conv3d_layer_matches_torch_float64(cin: int, cout: int, k: Any, kw: dict[str, Any], shape: Any) -> None:
    ours = nn.Conv3d(cin, cout, k, dev=DEV, dtype=np.float64, **kw)
    ref = torch.nn.Conv3d(cin, cout, k, dtype=torch.float64, **kw)
    _copy_weights(ours, ref)
    _compare(ours, ref, rnd(shape[0], cin, *shape[1:]), np.float64, 1e-10, 1e-12)


@pytest.mark.parametrize(("cin", "cout", "k", "kw", "shape"), CONV3D_GRID[:10], ids=_ids(CONV3D_GRID[:10]))
def test_conv3d_layer_matches_torch_float32(cin: int, cout: int, k: Any, kw: dict[str, Any], shape: Any) -> None:
    ours = nn.Conv3d(cin, cout, k, dev=DEV, **kw)
    ref = torch.nn.Conv3d(cin, cout, k, **kw)
    _copy_weights(ours, ref)
    assert ours.weight.numpy().dtype == np.float32
    _compare(ours, ref, rnd(shape[0], cin, *shape[1:]), np.float32, 2e-4, 2e-5)


# (in, out, kernel, kwargs, input shape (N, D, H, W))
CONVT3D_GRID: list[tuple[int, int, Any, dict[str, Any], tuple[int, int, int, int]]] = [
    (2, 3, 3, {}, (2, 3, 4, 5)),
    (3, 2, 3, {"stride": 2, "padding": 1}, (2, 3, 3, 4)),
    (3, 2, 3, {"stride": 2, "padding": 1, "output_padding": 1}, (1, 3, 4, 3)),
    (2, 3, (2, 3, 2), {"stride": (1, 2, 3), "padding": (0, 1, 1), "output_padding": (0, 1, 2)}, (2, 3, 4, 3)),
    (2, 2, 3, {"dilation": 2, "padding": 1}, (2, 3, 4, 3)),
    (2, 2, 2, {"dilation": 3, "stride": 1, "output_padding": 2}, (1, 3, 3, 4)),  # op < dilation
    (4, 6, 3, {"groups": 2, "stride": 2}, (2, 3, 3, 3)),
    (4, 4, 3, {"groups": 4, "padding": 1}, (2, 3, 4, 3)),  # depthwise
    (2, 3, 3, {"bias": False, "stride": (2, 1, 2), "output_padding": (1, 0, 1)}, (2, 3, 3, 3)),
]


@pytest.mark.parametrize(("cin", "cout", "k", "kw", "shape"), CONVT3D_GRID, ids=_ids(CONVT3D_GRID))
def test_conv_transpose3d_layer_matches_torch_float64(
    cin: int, cout: int, k: Any, kw: dict[str, Any], shape: Any
) -> None:
    ours = nn.ConvTranspose3d(cin, cout, k, dev=DEV, dtype=np.float64, **kw)
    ref = torch.nn.ConvTranspose3d(cin, cout, k, dtype=torch.float64, **kw)
    _copy_weights(ours, ref)
    _compare(ours, ref, rnd(shape[0], cin, *shape[1:]), np.float64, 1e-10, 1e-12)


@pytest.mark.parametrize(("cin", "cout", "k", "kw", "shape"), CONVT3D_GRID[:4], ids=_ids(CONVT3D_GRID[:4]))
def test_conv_transpose3d_layer_matches_torch_float32(
    cin: int, cout: int, k: Any, kw: dict[str, Any], shape: Any
) -> None:
    ours = nn.ConvTranspose3d(cin, cout, k, dev=DEV, **kw)
    ref = torch.nn.ConvTranspose3d(cin, cout, k, **kw)
    _copy_weights(ours, ref)
    _compare(ours, ref, rnd(shape[0], cin, *shape[1:]), np.float32, 2e-4, 2e-5)


def test_parameters_names_shapes_and_init_follow_pytorch() -> None:
    """state_dict names and shapes, and PyTorch's init bound ``1/sqrt(fan_in)``."""
    conv = nn.Conv3d(4, 6, (3, 2, 1), groups=2, dev=DEV)
    convt = nn.ConvTranspose3d(4, 6, (3, 2, 1), groups=2, dev=DEV)
    ref = torch.nn.Conv3d(4, 6, (3, 2, 1), groups=2)
    reft = torch.nn.ConvTranspose3d(4, 6, (3, 2, 1), groups=2)
    for ours, theirs, fan_in in ((conv, ref, 2 * 6), (convt, reft, 3 * 6)):
        sd, tsd = ours.state_dict(), theirs.state_dict()
        assert list(sd) == list(tsd) == ["weight", "bias"]
        for name in sd:
            assert tuple(sd[name].shape) == tuple(tsd[name].shape)
            v = sd[name].numpy()
            assert v.dtype == np.float32
            assert np.abs(v).max() <= 1 / np.sqrt(fan_in)
        assert np.abs(sd["weight"].numpy()).max() > 0.5 / np.sqrt(fan_in)  # uniform, not tiny
    big = nn.Conv3d(8, 16, 3, dev=DEV, dtype=np.float64)
    bound = 1 / np.sqrt(8 * 27)
    # U(-b, b) has standard deviation b / sqrt(3)
    assert abs(big.weight.numpy().std() - bound / np.sqrt(3)) < 0.1 * bound
    assert nn.Conv3d(2, 3, 3, bias=False, dev=DEV).bias is None
    assert list(nn.ConvTranspose3d(2, 3, 3, bias=False, dev=DEV).state_dict()) == ["weight"]


def test_load_state_dict_from_torch_then_equal_outputs() -> None:
    """A PyTorch state_dict, converted to arrays, loads into the gradtape layer."""
    ref = torch.nn.Conv3d(3, 4, 3, stride=2, padding=1, dtype=torch.float64)
    ours = nn.Conv3d(3, 4, 3, stride=2, padding=1, dev=DEV, dtype=np.float64)
    ours.load_state_dict({k: DEV.tensor(v.numpy(), dtype=np.float64) for k, v in ref.state_dict().items()})
    x = rnd(2, 3, 5, 6, 7)
    np.testing.assert_allclose(ours(DEV.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), rtol=1e-10)


# ----- functional spellings ----------------------------------------------------------------


FUNCTIONAL_CASES = [
    ((2, 4, 5, 6, 7), (6, 4, 3, 2, 3), {}),
    ((2, 4, 5, 6, 7), (6, 2, 3, 3, 3), {"stride": (2, 1, 2), "padding": (1, 0, 1), "groups": 2}),
    ((1, 3, 6, 5, 6), (3, 1, 2, 2, 3), {"padding": "same", "dilation": (1, 2, 1), "groups": 3}),
    ((2, 2, 5, 5, 5), (3, 2, 3, 3, 3), {"padding": "valid", "dilation": 2}),
]


@pytest.mark.parametrize(("xs", "ws", "kw"), FUNCTIONAL_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_functional_conv3d_matches_torch(xs: Any, ws: Any, kw: dict[str, Any], with_bias: bool) -> None:
    x, w, b = rnd(*xs), rnd(*ws), rnd(ws[0])
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yr = TF.conv3d(tx, tw, tb if with_bias else None, **kw)
    gx, gw, gb = (DEV.tensor(a, requires_grad=True) for a in (x, w, b))
    y = GF.conv3d(gx, gw, gb if with_bias else None, **kw)
    np.testing.assert_allclose(y.numpy(), yr.detach().numpy(), rtol=1e-10, atol=1e-12)
    gy = rnd(*yr.shape)
    (yr * torch.tensor(gy)).sum().backward()
    (y * DEV.tensor(gy)).sum().backward()
    pairs = [(gx, tx), (gw, tw)] + ([(gb, tb)] if with_bias else [])
    for ours, theirs in pairs:
        assert ours.grad is not None
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    if not with_bias:
        assert gb.grad is None


def test_functional_conv_transpose3d_matches_torch() -> None:
    x, w, b = rnd(2, 4, 3, 4, 3), rnd(4, 3, 3, 2, 3), rnd(6)
    kw: dict[str, Any] = {
        "stride": (2, 1, 2),
        "padding": (1, 0, 1),
        "output_padding": (1, 0, 0),
        "groups": 2,
        "dilation": (1, 2, 1),
    }
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    gx, gw, gb = (DEV.tensor(a, requires_grad=True) for a in (x, w, b))
    yr = TF.conv_transpose3d(tx, tw, tb, **kw)
    y = gt.conv_transpose3d(gx, gw, gb, **kw)
    np.testing.assert_allclose(y.numpy(), yr.detach().numpy(), rtol=1e-10, atol=1e-12)
    gy = rnd(*yr.shape)
    (yr * torch.tensor(gy)).sum().backward()
    (y * DEV.tensor(gy)).sum().backward()
    for ours, theirs in ((gx, tx), (gw, tw), (gb, tb)):
        assert ours.grad is not None
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_spellings_are_the_same_op() -> None:
    assert gt.conv3d is gt.nn.functional.conv3d
    assert gt.ops.conv_transpose3d is gt.nn.functional.conv_transpose3d


# ----- second order ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "xs", "ws", "kw"),
    [
        ("conv3d", (2, 4, 4, 5, 4), (4, 2, 2, 3, 2), {"stride": (1, 2, 1), "padding": 1, "groups": 2}),
        ("conv3d", (1, 2, 5, 4, 5), (3, 2, 3, 2, 2), {"dilation": (2, 1, 1), "padding": "same"}),
        ("conv_transpose3d", (2, 2, 3, 3, 2), (2, 3, 2, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1}),
    ],
)
def test_double_backward_matches_torch(op: str, xs: Any, ws: Any, kw: dict[str, Any]) -> None:
    """``d/dx, d/dw`` of ``sum(grad_x(loss)**2) + sum(grad_w(loss) * v)`` with a loss that
    is not linear in the output: the gradients of the conv's own gradients, as PyTorch's."""
    x, w = rnd(*xs), rnd(*ws)
    b = rnd(ws[1] * kw.get("groups", 1) if op == "conv_transpose3d" else ws[0])
    v = rnd(*ws)

    def run(lib: Any, fn: Any, tensor: Any, autograd_grad: Any) -> list[Array]:
        tx, tw, tb = (tensor(a) for a in (x, w, b))
        y = fn(tx, tw, tb, **kw)
        loss = (y * y * y).sum()
        dx, dw, db = autograd_grad(loss, [tx, tw, tb])
        second = (dx * dx).sum() + (dw * tensor(v, False)).sum() + (db * db).sum()
        return [g_.detach().numpy() for g_ in autograd_grad(second, [tx, tw, tb])]

    def t_tensor(a: Array, rg: bool = True) -> Any:
        return torch.tensor(a, requires_grad=rg)

    def g_tensor(a: Array, rg: bool = True) -> Any:
        return DEV.tensor(a, requires_grad=rg)

    theirs = run(torch, getattr(TF, op), t_tensor, lambda o, i: torch.autograd.grad(o, i, create_graph=True))
    ours = run(gt, getattr(GF, op), g_tensor, lambda o, i: grad(o, i, create_graph=True))
    for name, a, r in zip(("x", "w", "b"), ours, theirs, strict=True):
        np.testing.assert_allclose(a, r, rtol=1e-9, atol=1e-10, err_msg=name)


# ----- errors ------------------------------------------------------------------------------


def test_errors_name_the_op_and_the_shapes() -> None:
    x = DEV.tensor(rnd(2, 3, 4, 4, 4))
    with pytest.raises(ShapeError, match=r"conv3d: expects x \(N, C, D, H, W\).*\(2, 3, 4, 4\).*\(4, 3, 3, 3, 3\)"):
        GF.conv3d(DEV.tensor(rnd(2, 3, 4, 4)), DEV.tensor(rnd(4, 3, 3, 3, 3)))
    with pytest.raises(ShapeError, match=r"conv3d: x has 3 channels.*x \(2, 3, 4, 4, 4\), w \(4, 2, 3, 3, 3\)"):
        GF.conv3d(x, DEV.tensor(rnd(4, 2, 3, 3, 3)))
    with pytest.raises(ShapeError, match=r"conv3d: groups=2 must divide.*x \(2, 3, 4, 4, 4\)"):
        GF.conv3d(x, DEV.tensor(rnd(4, 1, 3, 3, 3)), groups=2)
    with pytest.raises(ShapeError, match=r"conv3d: bias must have shape \(4,\).*\(5,\)"):
        GF.conv3d(x, DEV.tensor(rnd(4, 3, 3, 3, 3)), DEV.tensor(rnd(5)))
    with pytest.raises(ShapeError, match=r"conv3d: kernel \(5, 5, 5\).*larger than the padded input \(4, 4, 4\)"):
        GF.conv3d(x, DEV.tensor(rnd(4, 3, 5, 5, 5)))
    with pytest.raises(ValueError, match=r"conv3d: padding='same' needs stride 1"):
        GF.conv3d(x, DEV.tensor(rnd(4, 3, 3, 3, 3)), padding="same", stride=2)
    with pytest.raises(ValueError, match=r"conv3d: stride must be >= 1"):
        GF.conv3d(x, DEV.tensor(rnd(4, 3, 3, 3, 3)), stride=(1, 0, 1))
    with pytest.raises(TypeError, match=r"conv3d: dilation must be an int or a tuple of 3 ints"):
        GF.conv3d(x, DEV.tensor(rnd(4, 3, 3, 3, 3)), dilation=(1, 1))
    with pytest.raises(DTypeError, match=r"conv3d"):
        GF.conv3d(x, DEV.tensor(rnd(4, 3, 3, 3, 3), dtype=np.float32))
    with pytest.raises(
        ShapeError, match=r"conv_transpose3d: x has 3 channels but w's first dim \(C_in\) is 4: x \(2, 3, 4, 4, 4\)"
    ):
        GF.conv_transpose3d(x, DEV.tensor(rnd(4, 2, 3, 3, 3)))
    with pytest.raises(ShapeError, match=r"conv_transpose3d: expects x \(N, C, D, H, W\) and w \(C_in, C_out/groups"):
        GF.conv_transpose3d(x, DEV.tensor(rnd(3, 2, 3, 3)))
    with pytest.raises(ValueError, match=r"conv_transpose3d: output_padding \(2, 0, 0\) must be smaller"):
        GF.conv_transpose3d(x, DEV.tensor(rnd(3, 2, 3, 3, 3)), stride=2, output_padding=(2, 0, 0))
    with pytest.raises(ShapeError, match=r"conv_transpose3d: output size .* is empty"):
        GF.conv_transpose3d(x, DEV.tensor(rnd(3, 2, 1, 1, 1)), padding=(3, 0, 0))
    with pytest.raises(ValueError, match=r"Conv3d: groups=2 must divide in_channels=3"):
        nn.Conv3d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match=r"Conv3d: padding_mode"):
        nn.Conv3d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match=r"ConvTranspose3d: only padding_mode='zeros'"):
        nn.ConvTranspose3d(3, 4, 3, padding_mode="reflect")
    layer = nn.Conv3d(3, 4, 3, dev=DEV, dtype=np.float64)
    with pytest.raises(ShapeError, match=r"conv3d: x has 2 channels.*x \(1, 2, 4, 4, 4\), w \(4, 3, 3, 3, 3\)"):
        layer(DEV.tensor(rnd(1, 2, 4, 4, 4)))


# ----- training ----------------------------------------------------------------------------


class _Net(nn.Module):
    def __init__(self) -> None:
        self.conv1 = nn.Conv3d(2, 4, 3, padding=1, dev=DEV, dtype=np.float64)
        self.conv2 = nn.Conv3d(4, 4, 3, stride=2, groups=2, dev=DEV, dtype=np.float64)
        self.up = nn.ConvTranspose3d(4, 1, 2, stride=2, output_padding=1, dev=DEV, dtype=np.float64)

    def forward(self, x: Any) -> Any:
        return self.up(GF.relu(self.conv2(GF.relu(self.conv1(x)))))


class _TorchNet(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv3d(2, 4, 3, padding=1, dtype=torch.float64)
        self.conv2 = torch.nn.Conv3d(4, 4, 3, stride=2, groups=2, dtype=torch.float64)
        self.up = torch.nn.ConvTranspose3d(4, 1, 2, stride=2, output_padding=1, dtype=torch.float64)

    def forward(self, x: Any) -> Any:
        return self.up(TF.relu(self.conv2(TF.relu(self.conv1(x)))))


def test_training_loop_equals_torch_step_by_step() -> None:
    ours, ref = _Net(), _TorchNet()
    _copy_weights(ours, ref)
    opt = optim.SGD(ours.parameters(), lr=0.05, momentum=0.9)
    topt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for step in range(4):
        x, target = rnd(2, 2, 7, 7, 7), rnd(2, 1, 7, 7, 7)
        opt.zero_grad()
        loss = losses.mse_loss(ours(DEV.tensor(x)), DEV.tensor(target))
        loss.backward()
        topt.zero_grad()
        tloss = TF.mse_loss(ref(torch.tensor(x)), torch.tensor(target))
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10, err_msg=f"loss at step {step}")
        for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
            assert p.grad is not None, name
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
        opt.step()
        topt.step()
        for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


# ----- kernels -----------------------------------------------------------------------------


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_array_function_path_equals_numba_path(groups: int) -> None:
    """The GPU's kernels (array functions only), run on numpy arrays, give the numba +
    BLAS path's values and gradients."""
    x, w, b = rnd(3, 4, 5, 6, 7), rnd(4, 4 // groups, 2, 3, 2), rnd(4)
    s, d = (2, 1, 2), (1, 2, 1)
    pads = ((1, 0), (2, 2), (0, 1))
    out = (3, 6, 4)
    y = k3.forward(x, w, s, pads, d, groups, out, b)
    np.testing.assert_allclose(k3._xp_forward(x, w, s, pads, d, groups, out, b), y, rtol=1e-12, atol=1e-12)
    g = rnd(*y.shape)
    gx, gw = k3.backward(g, x, w, s, pads, d, groups)
    xx, xw = k3._xp_backward(g, x, w, s, pads, d, groups, True, True)
    assert gx is not None and gw is not None and xx is not None and xw is not None
    np.testing.assert_allclose(xx, gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xw, gw, rtol=1e-12, atol=1e-12)


def test_chunked_batches_equal_one_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of one sample (a tiny CHUNK_BYTES) and the prange variants give the same
    results as one chunk."""
    x, w = rnd(5, 3, 4, 5, 6), rnd(4, 3, 3, 3, 3)
    args = ((1, 1, 1), ((1, 1), (1, 1), (1, 1)), (1, 1, 1), 1)
    y = k3.forward(x, w, *args, (4, 5, 6))
    g = rnd(*y.shape)
    gx, gw = k3.backward(g, x, w, *args)
    monkeypatch.setattr(k3, "CHUNK_BYTES", 1)
    monkeypatch.setattr(k3, "PARALLEL_COPY", 1)
    assert k3.chunk_samples(5, 7, 120, 8) == 1
    np.testing.assert_allclose(k3.forward(x, w, *args, (4, 5, 6)), y, rtol=1e-12, atol=1e-12)
    cx, cw = k3.backward(g, x, w, *args)
    assert gx is not None and gw is not None and cx is not None and cw is not None
    np.testing.assert_allclose(cx, gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cw, gw, rtol=1e-12, atol=1e-12)


def test_no_grad_inference_records_nothing_and_keeps_float32() -> None:
    layer = nn.Conv3d(2, 3, 3, padding=1, dev=DEV)
    x = DEV.tensor(rnd(1, 2, 4, 4, 4), dtype=np.float32)
    with gt.no_grad():
        y = layer(x)
    assert y.numpy().dtype == np.float32
    assert y.shape == (1, 3, 4, 4, 4)
    assert not y.requires_grad
