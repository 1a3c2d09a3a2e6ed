"""PyTorch's remaining common layers and functions, ported by renaming ``torch`` to ``gradtape``.

``nn.Bilinear`` / ``F.bilinear``, ``nn.LocalResponseNorm`` / ``F.local_response_norm``,
``nn.Unfold`` / ``F.unfold``, ``nn.Fold`` / ``F.fold``, ``nn.ChannelShuffle`` /
``F.channel_shuffle``, ``nn.LPPool1d`` / ``nn.LPPool2d`` / ``F.lp_pool*``, ``nn.RReLU`` /
``F.rrelu``, ``nn.AlphaDropout`` / ``nn.FeatureAlphaDropout`` / ``nn.Dropout1d`` /
``nn.Dropout3d`` and their functions, the 1-D, 2-D and 3-D padding layers PyTorch has and
gradtape lacked, ``F.batch_norm``, ``F.gumbel_softmax`` and the deprecated ``F.upsample*``.

Each deterministic layer is built in both libraries, the PyTorch layer's ``state_dict`` loaded
into gradtape's (the keys must be equal), and outputs and gradients (every input and every
parameter) compared in float64 to 1e-10; gradients of gradients go through gradtape's second
rules and are compared with ``torch.autograd.grad(create_graph=True)``. Random ones are checked
by their distribution and by PyTorch's formula on gradtape's own draws (redrawn by seeding).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pytest

import gradtape
import gradtape.nn.functional as gF
from gradtape import Cpu, Tensor, nn
from gradtape.autograd import grad
from gradtape.errors import DTypeError, ShapeError

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn
tF: Any = torch.nn.functional

Array = np.ndarray[Any, Any]
F64 = np.float64
RTOL, ATOL = 1e-10, 1e-12


def _rand(shape: tuple[int, ...], seed: int = 0, positive: bool = False) -> Array:
    a = np.random.default_rng(seed).standard_normal(shape)
    return np.abs(a) + 0.1 if positive else a


def _np(t: Any) -> Array:
    return np.asarray(t.numpy() if isinstance(t, Tensor) else t.detach().numpy())


def _close(got: Any, want: Any, what: str) -> None:
    g, w = _np(got), _np(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, torch {w.shape}"
    np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=what)


def _same_as_torch(ours: Any, ref: Any, shapes: list[tuple[int, ...]], positive: bool = False) -> None:
    """``ours`` and ``ref`` (the same layer in gradtape and torch, float64): equal state-dict keys;
    ``ref``'s weights loaded into ``ours``; equal outputs and gradients of ``sum(y * w)`` for
    every input and every parameter."""
    ref = ref.double()
    sd = ref.state_dict()
    assert list(nn.state_dict(ours)) == list(sd)
    if sd:
        assert ours.load_state_dict(sd).missing_keys == []
    arrays = [_rand(s, seed=i + 1, positive=positive) for i, s in enumerate(shapes)]
    xs = [gradtape.tensor(a, requires_grad=True) for a in arrays]
    xt = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = ours(*xs), ref(*xt)
    _close(y, yt, f"{type(ours).__name__} output")
    w = _rand(tuple(yt.shape), seed=99)
    (y * gradtape.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(xs, xt, strict=True)):
        assert a.grad is not None and b.grad is not None
        _close(a.grad, b.grad, f"{type(ours).__name__} d/dinput{i}")
    for name, p in ref.named_parameters():
        g = nn.state_dict(ours)[name].grad
        assert g is not None, name
        _close(g, p.grad, f"{type(ours).__name__} d/d{name}")


# ----- the layers, against PyTorch's with the same weights -----------------------------------

LAYERS: list[tuple[str, Callable[[Any], Any], list[tuple[int, ...]]]] = [
    ("bilinear", lambda m: m.Bilinear(4, 3, 5), [(6, 4), (6, 3)]),
    ("bilinear no bias, 3-D", lambda m: m.Bilinear(4, 3, 2, bias=False), [(2, 7, 4), (2, 7, 3)]),
    ("bilinear one pair", lambda m: m.Bilinear(2, 3, 4), [(2,), (3,)]),
    ("lrn", lambda m: m.LocalResponseNorm(3), [(2, 5, 4, 4)]),
    ("lrn 3-D", lambda m: m.LocalResponseNorm(2, alpha=0.5, beta=0.5, k=2.0), [(2, 4, 6)]),
    ("lrn 5-D, wide", lambda m: m.LocalResponseNorm(4, alpha=1.0), [(2, 6, 3, 2, 2)]),
    ("unfold", lambda m: m.Unfold(3), [(2, 3, 5, 5)]),
    ("unfold all args", lambda m: m.Unfold((2, 3), dilation=(2, 1), padding=(1, 0), stride=(1, 2)), [(2, 3, 7, 6)]),
    ("unfold unbatched", lambda m: m.Unfold(2, padding=1, stride=2), [(3, 5, 4)]),
    ("fold", lambda m: m.Fold((6, 6), 3, padding=1), [(2, 27, 36)]),
    ("fold all args", lambda m: m.Fold((5, 7), (2, 3), dilation=(1, 2), stride=2), [(2, 12, 4)]),
    ("fold unbatched", lambda m: m.Fold(4, 2, stride=2), [(8, 4)]),
    ("channel shuffle", lambda m: m.ChannelShuffle(3), [(2, 6, 4, 4)]),
    ("channel shuffle 3-D", lambda m: m.ChannelShuffle(2), [(2, 4, 5)]),
    ("lp pool 1d", lambda m: m.LPPool1d(2, 3), [(2, 3, 8)]),
    ("lp pool 1d ceil", lambda m: m.LPPool1d(1.5, 3, 2, ceil_mode=True), [(3, 8)]),
    ("lp pool 2d", lambda m: m.LPPool2d(2, 2), [(2, 3, 6, 6)]),
    ("lp pool 2d ceil", lambda m: m.LPPool2d(3, (3, 2), stride=(2, 1), ceil_mode=True), [(2, 3, 6, 5)]),
    ("rrelu eval", lambda m: m.RReLU().eval(), [(3, 4)]),
    ("rrelu bounds eval", lambda m: m.RReLU(0.1, 0.3).eval(), [(2, 3, 4)]),
    ("alpha dropout eval", lambda m: m.AlphaDropout(0.3).eval(), [(3, 4)]),
    ("feature alpha dropout eval", lambda m: m.FeatureAlphaDropout().eval(), [(2, 3, 4)]),
    ("dropout1d eval", lambda m: m.Dropout1d(0.4).eval(), [(2, 3, 4)]),
    ("dropout3d eval", lambda m: m.Dropout3d().eval(), [(2, 2, 3, 3, 3)]),
    ("zero pad 1d", lambda m: m.ZeroPad1d(2), [(2, 3, 5)]),
    ("zero pad 1d crop", lambda m: m.ZeroPad1d((1, -2)), [(3, 5)]),
    ("constant pad 1d", lambda m: m.ConstantPad1d((2, 1), 0.5), [(2, 3, 5)]),
    ("zero pad 3d", lambda m: m.ZeroPad3d((1, 0, 2, 1, 0, 1)), [(2, 2, 3, 3, 3)]),
    ("constant pad 3d", lambda m: m.ConstantPad3d(1, -1.0), [(2, 3, 3, 3)]),
    ("reflection pad 1d", lambda m: m.ReflectionPad1d((2, 1)), [(2, 3, 5)]),
    ("reflection pad 3d", lambda m: m.ReflectionPad3d(1), [(2, 2, 3, 3, 3)]),
    ("replication pad 1d", lambda m: m.ReplicationPad1d(3), [(3, 5)]),
    ("replication pad 3d", lambda m: m.ReplicationPad3d((1, 2, 0, 1, 2, 0)), [(2, 2, 3, 3, 3)]),
    ("circular pad 1d", lambda m: m.CircularPad1d((2, 1)), [(2, 3, 5)]),
    ("circular pad 2d", lambda m: m.CircularPad2d((1, 2, 2, 1)), [(2, 3, 4, 5)]),
    ("circular pad 3d", lambda m: m.CircularPad3d(1), [(2, 2, 3, 3, 3)]),
    # the brief's list of layers that gradtape already had: present and PyTorch's
    ("unflatten", lambda m: m.Unflatten(1, (2, 3)), [(4, 6)]),
    ("cosine similarity", lambda m: m.CosineSimilarity(dim=1), [(4, 5), (4, 5)]),
    ("pairwise distance", lambda m: m.PairwiseDistance(), [(4, 5), (4, 5)]),
    ("softmax2d", lambda m: m.Softmax2d(), [(2, 3, 4, 4)]),
    ("softmin", lambda m: m.Softmin(dim=1), [(3, 4)]),
    ("log sigmoid", lambda m: m.LogSigmoid(), [(3, 4)]),
    ("hardtanh", lambda m: m.Hardtanh(-0.5, 0.7), [(3, 4)]),
    ("relu6", lambda m: m.ReLU6(), [(3, 4)]),
    ("threshold", lambda m: m.Threshold(0.1, 20.0), [(3, 4)]),
    ("tanhshrink", lambda m: m.Tanhshrink(), [(3, 4)]),
    ("softshrink", lambda m: m.Softshrink(0.3), [(3, 4)]),
    ("hardshrink", lambda m: m.Hardshrink(0.3), [(3, 4)]),
    ("glu", lambda m: m.GLU(1), [(3, 4)]),
    ("celu", lambda m: m.CELU(0.5), [(3, 4)]),
    ("constant pad 2d", lambda m: m.ConstantPad2d((1, 0, 2, 1), 0.5), [(2, 3, 4, 4)]),
    ("replication pad 2d", lambda m: m.ReplicationPad2d(2), [(2, 3, 4, 4)]),
    ("adaptive max pool 1d", lambda m: m.AdaptiveMaxPool1d(3), [(2, 3, 7)]),
    ("avg pool 1d", lambda m: m.AvgPool1d(3, 2, 1), [(2, 3, 7)]),
    ("upsample nearest", lambda m: m.Upsample(scale_factor=2), [(2, 3, 4, 4)]),
    ("upsample linear", lambda m: m.Upsample(size=7, mode="linear", align_corners=True), [(2, 3, 4)]),
    ("upsample bilinear", lambda m: m.Upsample(scale_factor=1.5, mode="bilinear"), [(2, 3, 4, 4)]),
    ("upsampling nearest 2d", lambda m: m.UpsamplingNearest2d(size=(5, 7)), [(2, 3, 4, 4)]),
    ("upsampling bilinear 2d", lambda m: m.UpsamplingBilinear2d(scale_factor=2), [(2, 3, 4, 4)]),
    # the modes gradtape.ops.interpolate lacks
    ("upsample bicubic", lambda m: m.Upsample(scale_factor=1.7, mode="bicubic"), [(2, 3, 4, 5)]),
    ("upsample bicubic corners", lambda m: m.Upsample(size=(7, 3), mode="bicubic", align_corners=True), [(1, 2, 4, 5)]),
    ("upsample trilinear", lambda m: m.Upsample(scale_factor=(1.5, 2, 0.7), mode="trilinear"), [(1, 2, 3, 4, 5)]),
    ("upsample nearest-exact", lambda m: m.Upsample(scale_factor=1.6, mode="nearest-exact"), [(2, 3, 5, 4)]),
    ("upsample nearest 3d", lambda m: m.Upsample(size=(4, 5, 7), mode="nearest"), [(1, 2, 3, 4, 5)]),
    ("upsample area", lambda m: m.Upsample(size=(3, 2), mode="area"), [(2, 3, 7, 5)]),
]


@pytest.mark.parametrize(("name", "make", "shapes"), LAYERS, ids=[n for n, _, _ in LAYERS])
def test_layer_equals_torch_with_its_weights(
    name: str, make: Callable[[Any], Any], shapes: list[tuple[int, ...]]
) -> None:
    gradtape.manual_seed(0)
    ours = make(nn)
    if nn.state_dict(ours):
        ours = ours.double()
    ref = make(tnn)
    assert type(ours).__name__ == type(ref).__name__
    _same_as_torch(ours, ref, shapes, positive=name.startswith("lp pool"))  # fractional powers: x > 0


def test_lp_pool_of_any_sign_input_equals_torch() -> None:
    """Integer powers of negative inputs: PyTorch's ``sign(m) * relu(|m|)`` (a negative window
    mean of ``x**3`` gives NaN through the fractional root, in both)."""
    _same_as_torch(nn.LPPool2d(2, 2), tnn.LPPool2d(2, 2), [(2, 3, 4, 4)])
    x = _rand((2, 3, 4, 4), 5)
    ours = nn.LPPool2d(3, 2)(gradtape.tensor(x)).numpy()
    want = tnn.LPPool2d(3, 2)(torch.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(want))
    np.testing.assert_allclose(ours[~np.isnan(ours)], want[~np.isnan(want)], rtol=RTOL)


# ----- parameters: PyTorch's shapes, names and initialisation ---------------------------------


def test_bilinear_parameters_are_pytorchs_drawn_from_gradtapes_generator() -> None:
    ref = tnn.Bilinear(5, 4, 3)
    gradtape.manual_seed(11)
    ours = nn.Bilinear(5, 4, 3)
    assert [(k, tuple(v.shape)) for k, v in nn.state_dict(ours).items()] == [
        (k, tuple(v.shape)) for k, v in ref.state_dict().items()
    ]
    assert ours.weight.dtype == np.float32 and ours.bias is not None
    # U(-1/sqrt(in1), 1/sqrt(in1)) for both, the weight drawn first (PyTorch's reset_parameters)
    bound = 1.0 / math.sqrt(5)
    gradtape.manual_seed(11)
    dev = gradtape.get_default_device()
    np.testing.assert_array_equal(ours.weight.numpy(), dev.rand((3, 5, 4), -bound, bound, np.float32).numpy())
    np.testing.assert_array_equal(ours.bias.numpy(), dev.rand((3,), -bound, bound, np.float32).numpy())
    big = nn.Bilinear(64, 8, 50, dev=Cpu(seed=1), dtype=F64).weight.numpy()
    b = 1.0 / 8.0
    assert big.dtype == F64 and -b <= big.min() and big.max() < b
    assert abs(big.mean()) < 0.01 and abs(big.var() - b * b / 3) < 0.01 * b * b
    assert nn.Bilinear(2, 3, 4, bias=False).bias is None
    assert list(nn.state_dict(nn.Bilinear(2, 3, 4, bias=False))) == list(tnn.Bilinear(2, 3, 4, False).state_dict())
    assert repr(nn.Bilinear(2, 3, 4)).endswith("(in1_features=2, in2_features=3, out_features=4, bias=True)")
    # the state dict goes both ways
    fresh = tnn.Bilinear(5, 4, 3).double()
    fresh.load_state_dict({k: torch.from_numpy(np.array(v.numpy(), F64)) for k, v in ours.state_dict().items()})
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), ours.weight.numpy().astype(F64))


def test_parameterless_layers_have_no_state() -> None:
    for layer in (nn.LocalResponseNorm(2), nn.Unfold(2), nn.Fold(3, 2), nn.ChannelShuffle(2), nn.LPPool2d(2, 2)):
        assert list(layer.parameters()) == [] and list(nn.state_dict(layer)) == []


# ----- second derivatives, through gradtape's second rules -------------------------------------


SECOND: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[int, ...]]] = [
    ("unfold", lambda x: gF.unfold(x, 2, 1, 1, 2), lambda x: tF.unfold(x, 2, 1, 1, 2), (2, 2, 4, 5)),
    ("fold", lambda x: gF.fold(x, (4, 5), 2, 1, 1, 2), lambda x: tF.fold(x, (4, 5), 2, 1, 1, 2), (2, 8, 9)),
    ("lrn", lambda x: gF.local_response_norm(x, 3, 0.7), lambda x: tF.local_response_norm(x, 3, 0.7), (2, 4, 3)),
    ("channel_shuffle", lambda x: gF.channel_shuffle(x, 2), lambda x: tF.channel_shuffle(x, 2), (2, 4, 3)),
    ("lp_pool2d", lambda x: gF.lp_pool2d(x * x, 2.5, 2), lambda x: tF.lp_pool2d(x * x, 2.5, 2), (1, 2, 4, 4)),
    (
        "batch_norm",
        lambda x: gF.batch_norm(x, None, None, training=True),
        lambda x: tF.batch_norm(x, None, None, training=True),
        (4, 3),
    ),
]


@pytest.mark.parametrize(("ours", "theirs", "shape"), [(o, t, s) for _, o, t, s in SECOND], ids=[n for n, *_ in SECOND])
def test_gradient_of_gradient_equals_torch(
    ours: Callable[..., Any], theirs: Callable[..., Any], shape: tuple[int, ...]
) -> None:
    a = _rand(shape, 3)
    x = gradtape.tensor(a, requires_grad=True)
    (gx,) = grad((ours(x * x.tanh()) ** 3).sum(), x, create_graph=True)
    assert gx is not None
    (hx,) = grad((gx * gx).sum(), x)
    xt = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad((theirs(xt * xt.tanh()) ** 3).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
    _close(gx, gt, "gradient")
    assert hx is not None
    _close(hx, ht, "gradient of the gradient")


def test_bilinear_second_derivatives_in_every_argument() -> None:
    arrays = [_rand((3, 4), 1), _rand((3, 2), 2), _rand((5, 4, 2), 3), _rand((5,), 4)]
    ours = [gradtape.tensor(a, requires_grad=True) for a in arrays]
    ref = [torch.tensor(a, requires_grad=True) for a in arrays]
    g1 = grad((gF.bilinear(*ours).tanh() ** 2).sum(), ours, create_graph=True)
    t1 = torch.autograd.grad((tF.bilinear(*ref).tanh() ** 2).sum(), ref, create_graph=True)
    s = sum(((g * g).sum() for g in g1 if g is not None), gradtape.tensor(0.0, dtype=F64))
    g2 = grad(s, ours)
    t2 = torch.autograd.grad(sum((g * g).sum() for g in t1), ref)
    for a, b in zip(g1, t1, strict=True):
        _close(a, b, "bilinear gradient")
    for a, b in zip(g2, t2, strict=True):
        _close(a, b, "bilinear gradient of the gradient")


def test_fold_is_unfolds_adjoint() -> None:
    """``<unfold(x), c> == <x, fold(c)>`` for every geometry: each is the other's gradient."""
    geometries: list[tuple[Any, Any, Any, Any, tuple[int, int]]] = [
        (3, 1, 1, 1, (6, 5)),
        ((2, 3), (2, 1), (0, 2), (1, 2), (7, 6)),
        (2, 1, 0, 2, (5, 5)),
    ]
    for k, d, p, s, hw in geometries:
        x = gradtape.tensor(_rand((2, 3, *hw), 1))
        cols = gF.unfold(x, k, d, p, s)
        c = gradtape.tensor(_rand(tuple(cols.shape), 2))
        lhs = float((cols * c).sum().item())
        rhs = float((x * gF.fold(c, hw, k, d, p, s)).sum().item())
        assert math.isclose(lhs, rhs, rel_tol=1e-12), (k, d, p, s, hw)
        counts = gF.fold(gF.unfold(gradtape.ones((1, 1, *hw), dtype=F64), k, d, p, s), hw, k, d, p, s)
        ref = tF.fold(tF.unfold(torch.ones(1, 1, *hw, dtype=torch.float64), k, d, p, s), hw, k, d, p, s)
        _close(counts, ref, "blocks covering each pixel")


INTERPOLATE: list[tuple[tuple[int, ...], dict[str, Any]]] = [
    ((2, 3, 5, 6), {"scale_factor": 2.0, "mode": "bicubic"}),
    ((2, 3, 5, 6), {"size": (3, 9), "mode": "bicubic", "align_corners": True}),
    ((2, 3, 5, 6), {"scale_factor": 0.6, "mode": "bicubic", "recompute_scale_factor": True}),
    ((1, 2, 3, 4, 5), {"size": 6, "mode": "trilinear"}),
    ((1, 2, 3, 4, 5), {"scale_factor": 2.5, "mode": "trilinear", "align_corners": True}),
    ((2, 3, 7), {"scale_factor": 1.7, "mode": "nearest-exact"}),
    ((2, 3, 5, 6), {"size": (11, 4), "mode": "nearest-exact"}),
    ((1, 2, 3, 4, 5), {"scale_factor": 0.6, "mode": "nearest-exact"}),
    ((1, 2, 3, 4, 5), {"scale_factor": 1.7, "mode": "nearest"}),
    ((2, 3, 9), {"size": 4, "mode": "area"}),
    ((2, 3, 7, 8), {"scale_factor": 0.5, "mode": "area"}),
    ((2, 3, 4, 4), {"scale_factor": 1.5, "mode": "bilinear", "align_corners": False}),  # gradtape.ops' kernels
]


@pytest.mark.parametrize(("shape", "kwargs"), INTERPOLATE, ids=[str(kw) for _, kw in INTERPOLATE])
def test_interpolate_every_mode_equals_torch(shape: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    a = _rand(shape, 2)
    x, xt = gradtape.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = gF.interpolate(x, **kwargs), tF.interpolate(xt, **kwargs)
    _close(y, yt, f"interpolate {kwargs}")
    w = _rand(tuple(yt.shape), 3)
    (y * gradtape.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert x.grad is not None
    _close(x.grad, xt.grad, f"interpolate {kwargs} gradient")


def test_interpolate_new_modes_second_derivatives_and_float32() -> None:
    for kwargs in ({"scale_factor": 1.5, "mode": "bicubic"}, {"size": (4, 2, 3), "mode": "trilinear"}):
        shape = (1, 2, 3, 4) if kwargs["mode"] == "bicubic" else (1, 2, 3, 3, 2)
        a = _rand(shape, 4)
        x = gradtape.tensor(a, requires_grad=True)
        (gx,) = grad((gF.interpolate(x * x.tanh(), **kwargs) ** 3).sum(), x, create_graph=True)
        assert gx is not None
        (hx,) = grad((gx * gx).sum(), x)
        xt = torch.tensor(a, requires_grad=True)
        (gt,) = torch.autograd.grad((tF.interpolate(xt * xt.tanh(), **kwargs) ** 3).sum(), xt, create_graph=True)
        (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
        _close(gx, gt, f"{kwargs} gradient")
        assert hx is not None
        _close(hx, ht, f"{kwargs} gradient of the gradient")
    a32 = _rand((2, 3, 5, 6), 5).astype(np.float32)
    y32 = gF.interpolate(gradtape.tensor(a32), scale_factor=1.7, mode="bicubic")
    assert y32.dtype == np.float32
    want = tF.interpolate(torch.tensor(a32), scale_factor=1.7, mode="bicubic").numpy()
    np.testing.assert_allclose(y32.numpy(), want, rtol=1e-5, atol=1e-5)  # float32 weights, another sum order


# ----- a PyTorch program that uses them -------------------------------------------------------


def _patch_net(m: Any) -> Any:
    """A small model written against ``torch.nn``; ``m`` is ``torch.nn`` or ``gradtape.nn``."""

    class PatchNet(m.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.lrn = m.LocalResponseNorm(3, alpha=0.5)
            self.unfold = m.Unfold(3, padding=1)
            self.proj = m.Linear(27, 6)
            self.fold = m.Fold((8, 8), 1)
            self.shuffle = m.ChannelShuffle(2)
            self.pad = m.CircularPad2d(1)
            self.pool = m.LPPool2d(2, 2)
            self.act = m.RReLU()
            self.head = m.Bilinear(6, 6, 4)

        def forward(self, x: Any) -> Any:
            cols = self.unfold(self.lrn(x))  # (N, 27, 64)
            h = self.act(self.proj(cols.transpose(1, 2)))  # (N, 64, 6)
            img = self.shuffle(self.fold(h.transpose(1, 2)))  # (N, 6, 8, 8)
            p = self.pool(self.pad(img) ** 2 + 0.1)  # (N, 6, 5, 5)
            v = p.flatten(2).mean(-1)
            return self.head(v, v.tanh())

    return PatchNet()


def test_a_pytorch_program_with_the_new_layers_trains_as_torchs() -> None:
    gradtape.manual_seed(0)
    ours, ref = _patch_net(nn).double().eval(), _patch_net(tnn).double().eval()
    assert list(nn.state_dict(ours)) == list(ref.state_dict())
    ours.load_state_dict(ref.state_dict())
    x = _rand((2, 3, 8, 8), 7)
    y, yt = ours(gradtape.tensor(x)), ref(torch.tensor(x))
    _close(y, yt, "PatchNet output")
    (y**2).sum().backward()
    (yt**2).sum().backward()
    for name, p in ref.named_parameters():
        g = nn.state_dict(ours)[name].grad
        assert g is not None, name
        _close(g, p.grad, f"PatchNet d/d{name}")
    ours.train()  # RReLU draws its slopes in training mode: still a forward and a backward
    (ours(gradtape.tensor(x)) ** 2).sum().backward()


# ----- the random ones: PyTorch's formula on gradtape's draws, and their distribution -------------


def test_gumbel_softmax_is_pytorchs_formula_on_gradtapes_noise() -> None:
    """Values and the straight-through gradient of ``hard=True``: PyTorch's code run on the
    Gumbel noise gradtape drew (drawn again by seeding the generator the same way)."""
    a = _rand((5, 4), 1)
    w = _rand((5, 4), 2)
    for hard, tau, dim in [(True, 1.0, -1), (False, 0.5, -1), (True, 2.0, 0), (False, 1.0, 0)]:
        x = gradtape.tensor(a, requires_grad=True)
        gradtape.manual_seed(3)
        y = gF.gumbel_softmax(x, tau=tau, hard=hard, dim=dim)
        (y * gradtape.tensor(w)).sum().backward()
        gradtape.manual_seed(3)
        u = gradtape.get_default_device().rand((5, 4), 0.0, 1.0, F64).numpy()
        gumbels = torch.tensor(-np.log(-np.log1p(-u)))
        xt = torch.tensor(a, requires_grad=True)
        y_soft = ((xt + gumbels) / tau).softmax(dim)  # PyTorch's gumbel_softmax, its noise replaced
        if hard:
            index = y_soft.max(dim, keepdim=True)[1]
            y_hard = torch.zeros_like(xt).scatter_(dim, index, 1.0)
            yt = y_hard - y_soft.detach() + y_soft
        else:
            yt = y_soft
        (yt * torch.tensor(w)).sum().backward()
        _close(y, yt, f"gumbel_softmax(hard={hard}, tau={tau}, dim={dim})")
        assert x.grad is not None
        _close(x.grad, xt.grad, f"gumbel_softmax(hard={hard}) gradient")
        if hard:
            assert set(np.unique(y.numpy())) == {0.0, 1.0} and np.all(y.numpy().sum(dim) == 1.0)


def test_gumbel_softmax_samples_the_categorical_distribution() -> None:
    """The argmax of ``gumbel_softmax(logits, hard=True)`` is distributed as ``softmax(logits)``
    (the Gumbel-max trick); soft samples lie on the simplex and sharpen as ``tau`` falls."""
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    n = 40000
    x = gradtape.tensor(np.tile(logits, (n, 1)))
    gradtape.manual_seed(0)
    hard = gF.gumbel_softmax(x, hard=True).numpy()
    freq = hard.mean(0)
    assert np.all(np.abs(freq - np.array([0.1, 0.2, 0.3, 0.4])) < 4 * np.sqrt(0.25 / n))
    soft = gF.gumbel_softmax(x, tau=0.5).numpy()
    np.testing.assert_allclose(soft.sum(1), 1.0, rtol=1e-12)
    assert soft.min() >= 0.0
    cold = gF.gumbel_softmax(x[:1000], tau=0.01).numpy()
    assert np.mean(cold.max(1) > 0.99) > 0.95
    gradtape.manual_seed(5)
    first = gF.gumbel_softmax(x[:3]).numpy()
    gradtape.manual_seed(5)
    np.testing.assert_array_equal(gF.gumbel_softmax(x[:3]).numpy(), first)
    f32 = gF.gumbel_softmax(gradtape.tensor(logits.astype(np.float32)), hard=True)
    assert f32.dtype == np.float32


def test_rrelu_in_training_draws_slopes_in_its_bounds() -> None:
    a = _rand((200, 50), 4)
    x = gradtape.tensor(a, requires_grad=True)
    gradtape.manual_seed(1)
    layer = nn.RReLU(0.1, 0.3)
    y = layer(x)
    y.sum().backward()
    slope = y.numpy() / a
    neg = a <= 0
    np.testing.assert_array_equal(y.numpy()[~neg], a[~neg])
    assert slope[neg].min() >= 0.1 and slope[neg].max() < 0.3
    assert abs(slope[neg].mean() - 0.2) < 0.005
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), np.where(neg, slope, 1.0), rtol=1e-12)  # the drawn slope
    layer.eval()
    _close(layer(gradtape.tensor(a)), tF.rrelu(torch.tensor(a), 0.1, 0.3), "rrelu eval")


def test_alpha_dropout_keeps_selu_statistics_and_its_formula() -> None:
    p = 0.2
    a = np.random.default_rng(0).standard_normal((400, 250))
    x = gradtape.tensor(a, requires_grad=True)
    gradtape.manual_seed(2)
    y = gF.alpha_dropout(x, p, training=True)
    (y * 2.0).sum().backward()
    alpha = 1.7580993408473766
    scale = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    out = y.numpy()
    dropped = np.isclose(out, -alpha * scale + alpha * scale * p, rtol=0, atol=1e-12)
    kept = ~dropped
    np.testing.assert_allclose(out[kept], scale * a[kept] + alpha * scale * p, rtol=1e-12)
    assert abs(dropped.mean() - p) < 0.005
    assert abs(out.mean()) < 0.01 and abs(out.var() - 1.0) < 0.02  # zero mean, unit variance kept
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 2.0 * scale, 0.0), rtol=1e-12)
    np.testing.assert_array_equal(gF.alpha_dropout(x, 1.0, True).numpy(), np.zeros_like(a))
    assert gF.alpha_dropout(x, p) is x  # training=False by default, as PyTorch


def test_feature_and_channel_dropouts_drop_whole_channels() -> None:
    a = _rand((30, 40, 3, 4), 6)
    gradtape.manual_seed(4)
    y = gF.feature_alpha_dropout(gradtape.tensor(a), 0.5, True).numpy()
    flat = y.reshape(30, 40, -1)
    alpha = 1.7580993408473766
    scale = 1.0 / math.sqrt((alpha * alpha * 0.5 + 1) * 0.5)
    dropped = np.all(np.isclose(flat, -alpha * scale + alpha * scale * 0.5), axis=2)
    np.testing.assert_allclose(flat[~dropped], (scale * a.reshape(30, 40, -1) + alpha * scale * 0.5)[~dropped])
    assert 0.4 < dropped.mean() < 0.6
    for fn, shape, ch in [(gF.dropout1d, (20, 30, 5), (20, 30)), (gF.dropout1d, (30, 5), (30,))]:
        z = fn(gradtape.tensor(_rand(shape, 1)), 0.25).numpy()
        ratio = (z / _rand(shape, 1)).reshape(*ch, -1)
        assert np.all(np.isclose(ratio, 0.0) | np.isclose(ratio, 1 / 0.75))
        assert np.all(np.isclose(ratio, ratio[..., :1]))  # one draw per channel
    z3 = nn.Dropout3d(0.5)(gradtape.tensor(_rand((4, 6, 2, 2, 2), 2))).numpy().reshape(4, 6, -1)
    assert np.all((z3 == 0).all(-1) | (z3 != 0).all(-1))
    z3u = gF.dropout3d(gradtape.tensor(_rand((6, 2, 2, 2), 2)), 0.5).numpy().reshape(6, -1)  # unbatched
    assert np.all((z3u == 0).all(-1) | (z3u != 0).all(-1))
    with pytest.warns(UserWarning, match="dropout2d: received a 3-D input"):
        gF.dropout2d(gradtape.tensor(_rand((2, 3, 4), 1)), 0.5)
    with pytest.warns(UserWarning, match="dropout3d: received a 3-D input"):
        gF.dropout3d(gradtape.tensor(_rand((2, 3, 4), 1)), 0.5)
    x = gradtape.tensor(_rand((2, 3, 4, 4), 1))
    x0 = x[0, 0]
    assert gF.dropout2d(x, 0.5, training=False) is x and gF.dropout1d(x0, 0.0) is x0  # unbatched (C, L)


def test_batch_norm_updates_running_statistics_as_torchs() -> None:
    a = _rand((6, 3, 4), 8)
    rm, rv = _rand((3,), 1), _rand((3,), 2, positive=True)
    ours = [gradtape.tensor(rm.copy()), gradtape.tensor(rv.copy())]
    ref = [torch.tensor(rm.copy()), torch.tensor(rv.copy())]
    for _ in range(2):
        y = gF.batch_norm(gradtape.tensor(a), ours[0], ours[1], training=True, momentum=0.3)
        yt = tF.batch_norm(torch.tensor(a), ref[0], ref[1], training=True, momentum=0.3)
        _close(y, yt, "batch_norm training")
    _close(ours[0], ref[0], "running_mean")
    _close(ours[1], ref[1], "running_var")
    w, b = _rand((3,), 3), _rand((3,), 4)
    y = gF.batch_norm(gradtape.tensor(a), ours[0], ours[1], gradtape.tensor(w), gradtape.tensor(b))
    yt = tF.batch_norm(torch.tensor(a), ref[0], ref[1], torch.tensor(w), torch.tensor(b))
    _close(y, yt, "batch_norm eval")
    with pytest.raises(ValueError, match="batch_norm: running_mean and running_var must be given"):
        gF.batch_norm(gradtape.tensor(a), None, None)
    with pytest.raises(ValueError, match="batch_norm: expected more than 1 value per channel"):
        gF.batch_norm(gradtape.tensor(a[:1, :, :1]), None, None, training=True)
    with pytest.raises(ShapeError, match=r"batch_norm: weight of shape \(4,\) does not match the 3 channels"):
        gF.batch_norm(gradtape.tensor(a), None, None, gradtape.tensor(np.ones(4)), training=True)


def test_deprecated_upsample_names_warn_as_pytorchs() -> None:
    x = gradtape.tensor(_rand((1, 2, 3, 3), 1))
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        y = gF.upsample_bilinear(x, scale_factor=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = tF.upsample_bilinear(torch.tensor(_rand((1, 2, 3, 3), 1)), scale_factor=2)
    _close(y, yt, "upsample_bilinear")


# ----- bad input: errors naming the op or layer and the shapes ------------------------------------


NOT_A_TENSOR: Any = [[1.0]]


def _t(*shape: int) -> Tensor[Any, Any]:
    return gradtape.tensor(_rand(shape, 0))


BAD: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: gF.bilinear(_t(2, 3), _t(3, 4), _t(5, 3, 4)), ShapeError, r"bilinear: .*\(2, 3\).*\(3, 4\)"),
    (lambda: gF.bilinear(_t(2, 3), _t(2, 5), _t(5, 3, 4)), ShapeError, r"bilinear: .*\(2, 5\).*\(5, 3, 4\)"),
    (lambda: gF.bilinear(_t(2, 3), _t(2, 4), _t(5, 3, 4), _t(4)), ShapeError, r"bilinear: bias of shape \(4,\)"),
    (lambda: gF.bilinear(_t(2, 3), _t(2, 4), _t(3, 4)), ShapeError, r"bilinear: weight must be 3-D.*\(3, 4\)"),
    (lambda: gF.bilinear(NOT_A_TENSOR, _t(2, 4), _t(5, 3, 4)), TypeError, "bilinear: input1 must be a Tensor"),
    (lambda: nn.Bilinear(2, 0, 3), ValueError, "Bilinear: in2_features must be at least 1"),
    (lambda: nn.Bilinear(2, 3, 4, dtype=F64)(_t(5, 2), _t(4, 3)), ShapeError, r"^Bilinear: .*\(5, 2\).*\(4, 3\)"),
    (lambda: nn.LocalResponseNorm(2)(_t(3)), ValueError, r"^LocalResponseNorm: .*3-D.*\(3,\)"),
    (lambda: nn.Unfold(2)(_t(2, 3)), ShapeError, r"^Unfold: expected a 3-D .*\(2, 3\)"),
    (lambda: nn.Fold(4, 3)(_t(1, 12, 4)), ShapeError, r"^Fold: .*divisible by the product of kernel_size \(3, 3\)"),
    (lambda: nn.ChannelShuffle(4)(_t(2, 6, 3)), ShapeError, r"^ChannelShuffle: .*6 channels and 4 groups"),
    (lambda: nn.LPPool2d(2, 3)(_t(2, 2)), ShapeError, r"^LPPool2d: expected a 3-D .*\(2, 2\)"),
    (lambda: nn.RReLU()(gradtape.tensor([1, 2])), DTypeError, "^RReLU: input must be float"),
    (lambda: gF.local_response_norm(_t(2, 4), 2), ValueError, r"local_response_norm: .*3-D.*\(2, 4\)"),
    (lambda: nn.LocalResponseNorm(0), ValueError, "LocalResponseNorm: size must be at least 1"),
    (lambda: nn.LocalResponseNorm(cast(Any, 2.5)), TypeError, "LocalResponseNorm: size must be an int"),
    (lambda: gF.unfold(_t(2, 3, 4, 4), 5), ShapeError, r"unfold: given spatial size \(4, 4\), kernel_size=\(5, 5\)"),
    (lambda: gF.unfold(_t(4, 4), 2), ShapeError, r"unfold: expected a 3-D .* or 4-D .*\(4, 4\)"),
    (lambda: nn.Unfold(0), ValueError, "Unfold: kernel_size must be at least 1"),
    (lambda: nn.Unfold(2, padding=-1), ValueError, "Unfold: padding must be at least 0"),
    (lambda: nn.Unfold(cast(Any, (2, 2, 2))), TypeError, "Unfold: kernel_size must be an int or a tuple of two ints"),
    (
        lambda: gF.fold(_t(1, 13, 9), 4, 2),
        ShapeError,
        r"fold: .*divisible by the product of kernel_size \(2, 2\).*\(1, 13, 9\)",
    ),
    (lambda: gF.fold(_t(1, 12, 8), 4, 2), ShapeError, r"fold: .*3 \* 3 = 9, got input of shape \(1, 12, 8\)"),
    (lambda: gF.fold(_t(1, 12, 9, 1), 4, 2), ShapeError, r"fold: expected a 2-D .* or 3-D .*\(1, 12, 9, 1\)"),
    (lambda: gF.channel_shuffle(_t(2, 6, 3, 3), 4), ShapeError, r"channel_shuffle: .*6 channels and 4 groups"),
    (lambda: gF.channel_shuffle(_t(2, 4), 2), ShapeError, r"channel_shuffle: .*\(2, 4\)"),
    (lambda: nn.ChannelShuffle(0), ValueError, "ChannelShuffle: groups must be at least 1"),
    (lambda: gF.gumbel_softmax(_t(2, 3), tau=0.0), ValueError, r"gumbel_softmax: tau must be positive.*\(2, 3\)"),
    (lambda: gF.gumbel_softmax(_t(2, 3), dim=2), ShapeError, r"gumbel_softmax: dim 2 is out of range.*\(2, 3\)"),
    (lambda: gF.gumbel_softmax(gradtape.tensor([1, 2])), DTypeError, "gumbel_softmax: logits must be float"),
    (lambda: nn.RReLU(0.5, 0.1), ValueError, "RReLU: lower bound 0.5 must be at most the upper bound 0.1"),
    (lambda: gF.rrelu(_t(2), inplace=True), ValueError, "rrelu: inplace=True is not supported"),
    (lambda: nn.AlphaDropout(1.5), ValueError, "AlphaDropout: dropout probability has to be between 0 and 1"),
    (lambda: gF.alpha_dropout(_t(2), -0.1), ValueError, "alpha_dropout: dropout probability"),
    (lambda: gF.feature_alpha_dropout(_t(3), 0.5, True), ShapeError, r"feature_alpha_dropout: .*\(3,\)"),
    (lambda: gF.dropout1d(_t(2, 3, 4, 5)), ShapeError, r"dropout1d: expected a 2-D .*\(2, 3, 4, 5\)"),
    (lambda: nn.Dropout1d()(_t(2, 3, 4, 5)), ShapeError, r"^Dropout1d: expected a 2-D .*\(2, 3, 4, 5\)"),
    (lambda: gF.lp_pool2d(_t(2, 3, 4), 2, 5), ShapeError, r"lp_pool2d: kernel_size \(5, 5\) is larger .*\(3, 4\)"),
    (lambda: gF.lp_pool1d(_t(2, 3, 4, 4), 2, 2), ShapeError, r"lp_pool1d: expected a 2-D .*\(2, 3, 4, 4\)"),
    (lambda: nn.LPPool2d(0, 2), ValueError, "LPPool2d: norm_type must not be 0"),
    (
        lambda: nn.ConstantPad1d(cast(Any, (1, 2, 3)), 0.0),
        TypeError,
        r"ConstantPad1d: padding must be an int or a tuple \(left, right\)",
    ),
    (
        lambda: nn.ZeroPad3d(cast(Any, (1, 2))),
        TypeError,
        r"ZeroPad3d: padding must be an int or a tuple \(left, right, top, bottom, front, back\)",
    ),
    (lambda: nn.ReflectionPad1d(5)(_t(2, 3, 4)), ValueError, "reflect padding must be less than the dim"),
    (lambda: nn.CircularPad2d(1)(_t(4, 4)), ShapeError, "pad"),
    (lambda: nn.Fold(3, 2)(NOT_A_TENSOR), TypeError, "Fold"),
    (lambda: gF.interpolate(_t(1, 2, 3, 3), scale_factor=2, mode="cubic"), ValueError, "interpolate: mode must be"),
    (lambda: nn.Upsample(scale_factor=2, mode="bicubic")(_t(1, 2, 3)), ShapeError, r"^Upsample: mode 'bicubic' needs"),
    (
        lambda: gF.interpolate(_t(1, 2, 3), scale_factor=2, mode="nearest-exact", align_corners=True),
        ValueError,
        "interpolate: align_corners can only be set with the interpolating modes",
    ),
    (lambda: gF.interpolate(_t(1, 2, 3, 3), size=2, mode="bilinear", antialias=True), ValueError, "antialias"),
    (lambda: gF.interpolate(_t(1, 2, 3, 3), mode="area"), ValueError, "interpolate: give exactly one of size"),
]


@pytest.mark.parametrize(("call", "error", "match"), BAD, ids=[m for _, _, m in BAD])
def test_bad_input_raises_a_clear_error(call: Callable[[], Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()
