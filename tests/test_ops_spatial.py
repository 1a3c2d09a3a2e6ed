"""pad, interpolate, adaptive pooling, pixel (un)shuffle and their layers against PyTorch (issue 27).

Written as the PyTorch user's program: ``F.pad(x, (1, 2), mode="reflect")`` becomes
``ops.pad(x, (1, 2), mode="reflect")``, ``nn.Upsample(scale_factor=2)`` stays itself. Values and
gradients are compared with torch in float64 from identical inputs, second derivatives with
``torch.autograd.grad(..., create_graph=True)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Tensor, nn, ops
from gradtape.autograd import grad
from gradtape.errors import ShapeError
from gradtape.testing import gradcheck

torch = pytest.importorskip("torch")
F = torch.nn.functional
dev = Cpu(seed=0)
Array = np.ndarray[Any, Any]


def _rand(shape: tuple[int, ...], seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal(shape)


def _same_as_torch(
    ours: Callable[[Any], Any], theirs: Callable[[Any], Any], shape: tuple[int, ...], torch_grad: bool = True
) -> None:
    """Values and the gradient of ``sum(y * w)`` equal torch's in float64 (without
    ``torch_grad``: the gradient passes gradcheck instead, where torch's own fails it)."""
    a = _rand(shape, 1)
    x = dev.tensor(a, requires_grad=True)
    y = ours(x)
    xt = torch.tensor(a, requires_grad=True)
    yt = theirs(xt)
    assert y.shape == tuple(yt.shape)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-13)
    if not torch_grad:
        assert gradcheck(ours, [a])
        return
    w = _rand(y.shape, 2)
    (y * dev.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-13)


def _double_backward_as_torch(ours: Callable[[Any], Any], theirs: Callable[[Any], Any], shape: tuple[int, ...]) -> None:
    """The gradient of ``|d loss / dx|^2`` (through the op's second rule) equals torch's, with
    ``loss = sum(op(x * tanh(x)) ** 3)`` so that the second derivative is not zero."""
    a = _rand(shape, 3)
    x = dev.tensor(a, requires_grad=True)
    (gx,) = grad((ours(x * x.tanh()) ** 3).sum(), x, create_graph=True)
    assert gx is not None
    (hx,) = grad((gx * gx).sum(), x)
    xt = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad((theirs(xt * xt.tanh()) ** 3).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
    np.testing.assert_allclose(gx.numpy(), gt.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert hx is not None
    np.testing.assert_allclose(hx.numpy(), ht.numpy(), rtol=1e-10, atol=1e-12)


# ----- pad ---------------------------------------------------------------------------------

PADS = [
    ("constant", (1, 2), (4, 5)),
    ("constant", (2, 1, 1, 3), (2, 3, 4, 5)),
    ("constant", (-1, 2, 1, -2), (2, 3, 4, 5)),
    ("constant", (1, 1, 2, 0, 1, 0), (2, 3, 4, 5)),
    ("reflect", (1, 2), (3, 5)),
    ("reflect", (3, 1, 2, 3), (2, 3, 4, 5)),
    ("reflect", (-1, 2, 1, -1), (3, 4, 5)),
    ("reflect", (1, 0, 2, 2, 1, 1), (1, 3, 4, 5)),
    ("replicate", (3, 1), (2, 3, 5)),
    ("replicate", (4, 1, 2, 6), (2, 3, 4, 5)),
    ("replicate", (1, -2, 1, 0, 2, 1), (2, 3, 4, 5)),
    ("circular", (2, 1, 1, 3), (2, 3, 4, 5)),
    ("circular", (-1, 2, 2, -1), (3, 4, 5)),
]


@pytest.mark.parametrize(("mode", "pad", "shape"), PADS, ids=[f"{m}-{p}" for m, p, _ in PADS])
def test_pad_matches_torch(mode: str, pad: tuple[int, ...], shape: tuple[int, ...]) -> None:
    value = {"value": 1.5} if mode == "constant" else {}
    _same_as_torch(lambda x: ops.pad(x, pad, mode=mode, **value), lambda x: F.pad(x, pad, mode=mode, **value), shape)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
def test_pad_second_rule_and_gradcheck(mode: str) -> None:
    pad = (2, -1, 1, 2)
    _double_backward_as_torch(lambda x: ops.pad(x, pad, mode), lambda x: F.pad(x, pad, mode=mode), (1, 2, 3, 4))  # type: ignore[arg-type]
    assert gradcheck(lambda x: ops.pad(x, (1, 2, 2, 1), mode), [_rand((2, 3, 4))])  # type: ignore[arg-type]


def test_pad_keeps_float32() -> None:
    x = dev.tensor(_rand((2, 3, 4)).astype(np.float32))
    y = ops.pad(x, (1, 1), mode="reflect")
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1)), mode="reflect"))


# ----- interpolate -------------------------------------------------------------------------

RESIZES: list[dict[str, Any]] = [
    {"scale_factor": 1.5},
    {"scale_factor": 0.6},
    {"scale_factor": 1.1},  # the same size with a scale that is not 1: PyTorch's 1-D nearest differs
    {"scale_factor": 2},
    {"size": (9, 11)},
    {"size": (3, 4)},
]
MODES = [("nearest", None), ("bilinear", False), ("bilinear", True), ("linear", False), ("linear", True)]


@pytest.mark.parametrize(("mode", "align_corners"), MODES)
@pytest.mark.parametrize("resize", RESIZES, ids=[str(r) for r in RESIZES])
def test_interpolate_matches_torch(mode: str, align_corners: bool | None, resize: dict[str, Any]) -> None:
    ranks = {"nearest": (4, 3), "bilinear": (4,), "linear": (3,)}[mode]
    for rank in ranks:
        kw = {"size": resize["size"][1:]} if "size" in resize and rank == 3 else resize
        shape = (2, 3, 5, 7) if rank == 4 else (2, 3, 7)
        # torch 2.13's 1-D nearest backward takes the equal-size shortcut its forward does not
        # take (scale 1.1 on 7 reads [0, 0, 1, ..., 5] but sends the gradient back unchanged;
        # torch.autograd.gradcheck fails it): there the gradient is checked by gradcheck
        torch_grad = not (mode == "nearest" and rank == 3 and resize.get("scale_factor") == 1.1)
        ours = functools.partial(ops.interpolate, mode=mode, align_corners=align_corners, **kw)
        theirs = functools.partial(F.interpolate, mode=mode, align_corners=align_corners, **kw)
        _same_as_torch(ours, theirs, shape, torch_grad)


def test_interpolate_recompute_scale_factor_and_tuples() -> None:
    _same_as_torch(
        lambda x: ops.interpolate(x, scale_factor=(1.5, 0.7), mode="bilinear", recompute_scale_factor=True),
        lambda x: F.interpolate(x, scale_factor=(1.5, 0.7), mode="bilinear", recompute_scale_factor=True),
        (1, 2, 5, 7),
    )
    _same_as_torch(lambda x: ops.interpolate(x, size=6), lambda x: F.interpolate(x, size=6), (1, 2, 5, 7))


@pytest.mark.parametrize(("mode", "align_corners"), [("nearest", None), ("bilinear", False), ("bilinear", True)])
def test_interpolate_second_rule_and_gradcheck(mode: str, align_corners: bool | None) -> None:
    _double_backward_as_torch(
        lambda x: ops.interpolate(x, size=(4, 5), mode=mode, align_corners=align_corners),
        lambda x: F.interpolate(x, size=(4, 5), mode=mode, align_corners=align_corners),
        (1, 2, 3, 3),
    )
    assert gradcheck(
        lambda x: ops.interpolate(x, scale_factor=1.5, mode=mode, align_corners=align_corners), [_rand((1, 2, 3, 4))]
    )
    assert gradcheck(
        lambda x: ops.interpolate(
            x, scale_factor=1.5, mode="linear" if mode != "nearest" else mode, align_corners=align_corners
        ),
        [_rand((2, 2, 5))],
    )


# ----- adaptive pooling --------------------------------------------------------------------

SIZES: list[Any] = [(3, 4), 2, (None, 3), (7, 9), 1]


@pytest.mark.parametrize("output_size", SIZES, ids=[str(s) for s in SIZES])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 5, 7)])
def test_adaptive_pools_match_torch(output_size: Any, shape: tuple[int, ...]) -> None:
    _same_as_torch(
        lambda x: ops.adaptive_avg_pool2d(x, output_size), lambda x: F.adaptive_avg_pool2d(x, output_size), shape
    )
    _same_as_torch(
        lambda x: ops.adaptive_max_pool2d(x, output_size), lambda x: F.adaptive_max_pool2d(x, output_size), shape
    )


def test_adaptive_max_pool2d_indices_match_torch() -> None:
    a = _rand((2, 3, 5, 7))
    values, indices = ops.adaptive_max_pool2d(dev.tensor(a), (3, 4), return_indices=True)
    want_values, want_indices = F.adaptive_max_pool2d(torch.tensor(a), (3, 4), return_indices=True)
    np.testing.assert_array_equal(values.numpy(), want_values.numpy())
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices.numpy(), want_indices.numpy())


def test_adaptive_pools_second_rule_and_gradcheck() -> None:
    pairs: list[tuple[Callable[..., Any], Callable[..., Any]]] = [
        (ops.adaptive_avg_pool2d, F.adaptive_avg_pool2d),
        (ops.adaptive_max_pool2d, F.adaptive_max_pool2d),
    ]
    for ours, theirs in pairs:
        _double_backward_as_torch(
            functools.partial(ours, output_size=(2, 3)), functools.partial(theirs, output_size=(2, 3)), (1, 2, 3, 5)
        )
        assert gradcheck(functools.partial(ours, output_size=(3, 2)), [_rand((2, 2, 5, 4))])


# ----- pixel shuffle -----------------------------------------------------------------------


def test_pixel_shuffle_and_unshuffle_match_torch() -> None:
    _same_as_torch(lambda x: ops.pixel_shuffle(x, 2), lambda x: F.pixel_shuffle(x, 2), (2, 8, 3, 4))
    _same_as_torch(lambda x: ops.pixel_shuffle(x, 3), lambda x: F.pixel_shuffle(x, 3), (9, 2, 3))
    _same_as_torch(lambda x: ops.pixel_unshuffle(x, 2), lambda x: F.pixel_unshuffle(x, 2), (2, 2, 4, 6))
    _same_as_torch(lambda x: ops.pixel_unshuffle(x, 3), lambda x: F.pixel_unshuffle(x, 3), (1, 2, 1, 3, 6))
    _double_backward_as_torch(lambda x: ops.pixel_shuffle(x, 2), lambda x: F.pixel_shuffle(x, 2), (1, 4, 2, 2))
    assert gradcheck(lambda x: ops.pixel_unshuffle(ops.pixel_shuffle(x, 2) * x.sum(), 2), [_rand((1, 4, 2, 3))])


# ----- layers ------------------------------------------------------------------------------

LAYERS: list[tuple[Callable[[Any], Any], tuple[int, ...]]] = [
    (lambda m: m.ZeroPad2d(2), (2, 3, 4, 5)),
    (lambda m: m.ZeroPad2d((1, -1, 0, 2)), (3, 4, 5)),
    (lambda m: m.ConstantPad2d((1, 2, 3, 0), 2.5), (2, 3, 4, 5)),
    (lambda m: m.ReflectionPad2d((1, 3, 2, 0)), (2, 3, 4, 5)),
    (lambda m: m.ReplicationPad2d(3), (3, 4, 5)),
    (lambda m: m.Upsample(scale_factor=2), (2, 3, 4, 5)),
    (lambda m: m.Upsample(size=(9, 11), mode="bilinear", align_corners=True), (2, 3, 4, 5)),
    (lambda m: m.Upsample(scale_factor=1.5, mode="linear"), (2, 3, 5)),
    (lambda m: m.UpsamplingNearest2d(size=(7, 3)), (2, 3, 4, 5)),
    (lambda m: m.UpsamplingBilinear2d(scale_factor=2), (2, 3, 4, 5)),
    (lambda m: m.AdaptiveAvgPool2d((3, 4)), (2, 3, 5, 7)),
    (lambda m: m.AdaptiveAvgPool2d((None, 2)), (3, 5, 7)),
    (lambda m: m.AdaptiveMaxPool2d(3), (2, 3, 5, 7)),
    (lambda m: m.PixelShuffle(2), (2, 8, 3, 4)),
    (lambda m: m.PixelUnshuffle(2), (2, 2, 4, 6)),
]


@pytest.mark.parametrize(("make", "shape"), LAYERS, ids=[str(i) for i in range(len(LAYERS))])
def test_layers_match_torch(make: Callable[[Any], Any], shape: tuple[int, ...]) -> None:
    ours, theirs = make(nn), make(torch.nn)
    assert type(ours).__name__ == type(theirs).__name__
    assert list(ours.parameters()) == []
    _same_as_torch(ours, theirs, shape)


def test_adaptive_max_pool_layer_returns_indices_and_upsample_keeps_float32() -> None:
    a = _rand((1, 2, 5, 5))
    values, indices = nn.AdaptiveMaxPool2d(2, return_indices=True)(dev.tensor(a))
    want = torch.nn.AdaptiveMaxPool2d(2, return_indices=True)(torch.tensor(a))
    np.testing.assert_array_equal(values.numpy(), want[0].numpy())
    np.testing.assert_array_equal(indices.numpy(), want[1].numpy())
    y = nn.Upsample(scale_factor=2, mode="bilinear")(dev.tensor(a.astype(np.float32)))
    assert y.dtype == np.float32
    want32 = F.interpolate(torch.tensor(a.astype(np.float32)), scale_factor=2, mode="bilinear")
    np.testing.assert_allclose(y.numpy(), want32.numpy(), rtol=1e-6, atol=1e-6)


# ----- bad input ---------------------------------------------------------------------------

X3, X4 = dev.tensor(_rand((2, 3, 4))), dev.tensor(_rand((2, 3, 4, 5)))
BAD: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("pad odd", lambda: ops.pad(X4, (1, 2, 3)), ValueError, r"pad: .*even"),
    ("pad too many", lambda: ops.pad(X3, (1,) * 8), ValueError, r"pad: .*4 dims.*\(2, 3, 4\)"),
    ("pad not ints", lambda: ops.pad(X3, (1.0, 2)), TypeError, r"pad: pad must be a tuple of ints"),  # type: ignore[arg-type]
    ("pad crop", lambda: ops.pad(X3, (-3, -2)), ShapeError, r"pad: .*size 4.*\(2, 3, 4\)"),
    ("reflect too large", lambda: ops.pad(X3, (4, 0), mode="reflect"), ValueError, r"pad: reflect .*size 4"),
    ("reflect wrong rank", lambda: ops.pad(X3, (1, 1, 1, 1, 1, 1), mode="reflect"), ShapeError, r"pad: .*\(2, 3, 4\)"),
    ("replicate 2 pads on 4-D", lambda: ops.pad(X4, (1, 1), mode="replicate"), ShapeError, r"pad: .*\(2, 3, 4, 5\)"),
    ("circular too large", lambda: ops.pad(X3, (5, 0), mode="circular"), ValueError, r"pad: circular"),
    ("pad mode", lambda: ops.pad(X3, (1, 1), mode="edge"), ValueError, r"pad: mode"),  # type: ignore[arg-type]
    ("pad value with reflect", lambda: ops.pad(X3, (1, 1), "reflect", 2.0), ValueError, r"pad: value"),
    ("both sizes", lambda: ops.interpolate(X4, size=3, scale_factor=2), ValueError, r"interpolate: .*exactly one"),
    ("no size", lambda: ops.interpolate(X4), ValueError, r"interpolate: .*exactly one"),
    (
        "bilinear on 3-D",
        lambda: ops.interpolate(X3, scale_factor=2, mode="bilinear"),
        ShapeError,
        r"interpolate: .*4-D.*\(2, 3, 4\)",
    ),
    ("linear on 4-D", lambda: ops.interpolate(X4, scale_factor=2, mode="linear"), ShapeError, r"interpolate: .*3-D"),
    (
        "nearest corners",
        lambda: ops.interpolate(X4, scale_factor=2, align_corners=True),
        ValueError,
        r"interpolate: align_corners",
    ),
    ("interp mode", lambda: ops.interpolate(X4, scale_factor=2, mode="bicubic"), ValueError, r"interpolate: mode"),
    (
        "interp 2-D",
        lambda: ops.interpolate(dev.tensor(_rand((3, 4))), scale_factor=2),
        ShapeError,
        r"interpolate: .*\(3, 4\)",
    ),
    ("size length", lambda: ops.interpolate(X4, size=(2, 3, 4)), TypeError, r"interpolate: size"),
    ("empty output", lambda: ops.interpolate(X4, scale_factor=0.1), ShapeError, r"interpolate: .*empty"),
    ("negative scale", lambda: ops.interpolate(X4, scale_factor=-2.0), ValueError, r"interpolate: scale_factor"),
    (
        "adaptive 2-D",
        lambda: ops.adaptive_avg_pool2d(dev.tensor(_rand((4, 5))), 2),
        ShapeError,
        r"adaptive_avg_pool2d: .*\(4, 5\)",
    ),
    ("adaptive zero", lambda: ops.adaptive_max_pool2d(X4, (0, 2)), ValueError, r"adaptive_max_pool2d: output_size"),
    ("adaptive type", lambda: ops.adaptive_avg_pool2d(X4, 2.5), TypeError, r"adaptive_avg_pool2d: output_size"),  # type: ignore[call-overload]
    (
        "shuffle channels",
        lambda: ops.pixel_shuffle(X4, 2),
        ShapeError,
        r"pixel_shuffle: .*channels 3.*divisible by .*4",
    ),
    ("shuffle rank", lambda: ops.pixel_shuffle(dev.tensor(_rand((4, 4))), 2), ShapeError, r"pixel_shuffle: .*\(4, 4\)"),
    ("shuffle factor", lambda: ops.pixel_shuffle(X4, 0), ValueError, r"pixel_shuffle: upscale_factor"),
    ("unshuffle size", lambda: ops.pixel_unshuffle(X4, 2), ShapeError, r"pixel_unshuffle: .*divisible by 2"),
    ("layer padding", lambda: nn.ReflectionPad2d((1, 2)), TypeError, r"ReflectionPad2d: padding"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("name", "call", "error", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_naming_the_op(
    name: str, call: Callable[[], Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call()


def test_gradients_flow_into_a_model_with_the_layers() -> None:
    """A small U-Net-like block, as a PyTorch user writes it, trains the conv weight below it."""
    conv = nn.Conv2d(2, 8, 3, padding=0, dev=dev)
    block = nn.Sequential(nn.ReflectionPad2d(1), conv, nn.PixelShuffle(2), nn.AdaptiveAvgPool2d((4, 4)))
    x = dev.tensor(_rand((1, 2, 5, 5)).astype(np.float32))
    y = block(x)
    assert y.shape == (1, 2, 4, 4)
    (y * y).sum().backward()
    assert isinstance(conv.weight.grad, Tensor) and np.abs(conv.weight.grad.numpy()).sum() > 0
