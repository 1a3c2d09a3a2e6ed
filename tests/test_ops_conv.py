"""Convolutions, pooling and upscaling: gradcheck (float64) over a grid of strides, paddings,
dilations and groups; the im2col and direct kernels against each other; forward values and
gradients against PyTorch (skipped without torch); tie and NaN rules of max/min pooling;
errors naming the op and the shapes."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import conv_oracle
import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor
from gradtape.devices.kernels import conv as kconv
from gradtape.ops import avg_pool2d, conv1d, conv2d, conv_transpose2d, max_pool2d, min_pool2d, upscale2d
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]
Fn = Callable[..., Any]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(7)


def rnd(*shape: int) -> Array:
    """Standard normal float64 samples."""
    return _RNG.standard_normal(shape)


def distinct(*shape: int) -> Array:
    """Values at least 0.05 apart in random order: no two tie within gradcheck's eps."""
    n = int(np.prod(shape))
    return np.asarray(_RNG.permutation(n).reshape(shape) * 0.05 - n * 0.025)


def _grads(fn: Fn, arrays: list[Array], gy: Array | None = None, dtype: Any = np.float64) -> tuple[Array, list[Array]]:
    """``(fn(*xs), [d sum(fn * gy) / d x for each x])`` with gradtape."""
    xs = [DEV.tensor(a, dtype=dtype) for a in arrays]
    store = Gradients.leaky()
    y = fn(*(x.trace(store) for x in xs))
    if gy is None:
        gy = np.ones(y.shape)
    grads = (y * DEV.tensor(gy, dtype=dtype)).sum().backward()
    return y.numpy(), [grads.get(x).numpy() for x in xs]


# ----- gradcheck ---------------------------------------------------------------------------

# (stride, padding, dilation, groups) on x (1, 4, 5, 6) and w (4, 4 / groups, 3, 2)
_CONV2D_GRID = [
    (1, 0, 1, 1),
    (1, 1, 1, 1),
    (2, 1, 1, 1),
    ((2, 1), (0, 2), (2, 1), 1),
    (1, "same", 2, 1),
    (1, "valid", 1, 2),
    (2, (1, 0), 1, 2),
    ((1, 2), 1, (1, 2), 4),
    (3, 2, 2, 2),
]


@pytest.mark.parametrize(("stride", "padding", "dilation", "groups"), _CONV2D_GRID)
def test_conv2d_gradcheck(stride: Any, padding: Any, dilation: Any, groups: int) -> None:
    """x, w and b gradients of conv2d match finite differences (im2col for groups 1, the
    direct kernels for grouped convs)."""

    def f(x: T, w: T, b: T) -> T:
        return conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)

    assert gradcheck(f, [rnd(1, 4, 5, 6), rnd(4, 4 // groups, 3, 2), rnd(4)])


@pytest.mark.parametrize(
    ("stride", "padding", "dilation", "groups"), [(1, 0, 1, 1), (2, 1, 1, 1), (1, "same", 2, 2), (3, 2, 1, 3)]
)
def test_conv1d_gradcheck(stride: int, padding: Any, dilation: int, groups: int) -> None:
    """conv1d's gradients match finite differences."""

    def f(x: T, w: T, b: T) -> T:
        return conv1d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)

    assert gradcheck(f, [rnd(2, 6, 7), rnd(6, 6 // groups, 3), rnd(6)])


# (stride, padding, output_padding, dilation, groups) on x (1, 4, 3, 4), w (4, 2, 3, 2)
_CONVT_GRID = [
    (1, 0, 0, 1, 1),
    (2, 1, 1, 1, 1),
    ((2, 3), (0, 1), (1, 2), 1, 2),
    (1, 1, (0, 1), 2, 2),
    (2, 0, 1, (2, 1), 4),
]


@pytest.mark.parametrize(("stride", "padding", "output_padding", "dilation", "groups"), _CONVT_GRID)
def test_conv_transpose2d_gradcheck(stride: Any, padding: Any, output_padding: Any, dilation: Any, groups: int) -> None:
    """conv_transpose2d's gradients match finite differences."""

    def f(x: T, w: T, b: T) -> T:
        return conv_transpose2d(x, w, b, stride, padding, output_padding, groups=groups, dilation=dilation)

    assert gradcheck(f, [rnd(1, 4, 3, 4), rnd(4, 2, 3, 2), rnd(2 * groups)])


_POOLS = {"max": max_pool2d, "min": min_pool2d, "avg": avg_pool2d}


@pytest.mark.parametrize("kind", list(_POOLS))
@pytest.mark.parametrize(
    ("kernel", "stride", "padding"), [(2, None, 0), (3, 1, 1), ((2, 3), (1, 2), (1, 1)), (3, 2, (0, 1))]
)
def test_pool_gradcheck(kind: str, kernel: Any, stride: Any, padding: Any) -> None:
    """Pooling gradients match finite differences (overlapping windows accumulate)."""
    pool = _POOLS[kind]
    assert gradcheck(lambda x: pool(x, kernel, stride, padding), [distinct(2, 2, 5, 6)])


@pytest.mark.parametrize(
    "kw",
    [
        {"scale_factor": 2},
        {"scale_factor": (1.5, 0.75)},
        {"size": (7, 3)},
        {"size": 4, "mode": "bilinear"},
        {"scale_factor": 2, "mode": "bilinear"},
        {"size": (5, 9), "mode": "bilinear", "align_corners": True},
        {"scale_factor": (0.5, 1.7), "mode": "bilinear"},
    ],
    ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()),
)
def test_upscale2d_gradcheck(kw: dict[str, Any]) -> None:
    """upscale2d's gradients (nearest and bilinear) match finite differences."""
    assert gradcheck(lambda x: upscale2d(x, **kw), [rnd(1, 2, 3, 4)])


def test_gradcheck_noncontiguous_and_reused() -> None:
    """A transposed (non-contiguous) input and a weight used twice differentiate too."""
    x: T = Tensor(np.ascontiguousarray(rnd(1, 6, 5, 2).transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2), DEV)
    assert not x.data.flags.c_contiguous

    def f(x: T, w: T, w2: T) -> T:
        return conv2d(conv2d(x, w, padding=1), w2, groups=3) * conv2d(x, w, padding=1)

    assert gradcheck(f, [x, rnd(3, 6, 3, 2), rnd(3, 1, 1, 1)])
    assert gradcheck(lambda x, w: conv2d(x, w, stride=2) * conv2d(x, w, stride=2), [x, rnd(3, 6, 2, 2)])


def test_small_cnn_gradcheck() -> None:
    """conv -> relu -> max pool -> conv_transpose -> upscale -> avg pool, end to end."""

    def f(x: T, w1: T, b1: T, w2: T) -> T:
        h = max_pool2d(conv2d(x, w1, b1, padding=1).relu(), 2)
        return avg_pool2d(upscale2d(conv_transpose2d(h, w2, stride=2), scale_factor=2, mode="bilinear"), 2)

    xs = [distinct(2, 1, 4, 4), rnd(3, 1, 3, 3), np.full(3, 0.3), rnd(3, 2, 2, 2)]
    assert gradcheck(f, xs, atol=1e-5)


# ----- the two kernel families agree ---------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "o", "hw", "k", "s", "d", "g"),
    [
        (2, 4, 6, (7, 9), (3, 2), (1, 1), (1, 1), 1),
        (2, 4, 6, (7, 9), (3, 2), (2, 3), (2, 1), 2),
        (3, 6, 6, (5, 5), (3, 3), (1, 1), (1, 1), 6),
        (1, 12, 12, (6, 7), (2, 3), (1, 2), (1, 1), 3),
        (4, 8, 16, (16, 16), (3, 3), (1, 1), (1, 1), 1),  # large enough for the prange kernels
        (4, 8, 8, (16, 16), (3, 3), (2, 1), (1, 2), 8),
    ],
)
def test_im2col_and_direct_kernels_agree(
    n: int, c: int, o: int, hw: tuple[int, int], k: tuple[int, int], s: Any, d: Any, g: int
) -> None:
    """Forward, input and weight backward of the im2col and the direct kernels agree (float32
    and float64), also when the weight gradient reuses the forward's columns."""
    pads = ((1, 1), (0, 2))
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4)):
        x = rnd(n, c, *hw).astype(dtype)
        w = rnd(o, c // g, *k).astype(dtype)
        padded = (hw[0] + 2, hw[1] + 2)
        out_hw = (
            (padded[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1,
            (padded[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1,
        )
        gy = rnd(n, o, *out_hw).astype(dtype)
        ref, cols = kconv.forward(x, w, s, pads, d, g, out_hw, "im2col", keep_cols=True)
        out, none = kconv.forward(x, w, s, pads, d, g, out_hw, "direct", keep_cols=True)
        assert none is None and cols is not None and out.dtype == dtype
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
        gi = [kconv.backward_input(gy, w, x.shape, s, pads, d, g, impl) for impl in ("im2col", "direct")]
        np.testing.assert_allclose(gi[1], gi[0], rtol=tol, atol=tol)
        gw = [kconv.backward_weight(x, gy, w.shape, s, pads, d, g, impl) for impl in ("im2col", "direct")]
        gw.append(kconv.backward_weight(x, gy, w.shape, s, pads, d, g, cols=cols))
        np.testing.assert_allclose(gw[1], gw[0], rtol=tol, atol=tol * 10)
        np.testing.assert_allclose(gw[2], gw[0], rtol=tol, atol=tol)


# ----- semantics without torch ---------------------------------------------------------------


def test_conv2d_hand_computed() -> None:
    """A 1-channel 3x3 input with a 2x2 kernel: each output is the window's weighted sum; the
    weight's gradient under sum() is the sum of the windows."""
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    w = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    y, (gx, gw, gb) = _grads(lambda x, w, b: conv2d(x, w, b), [x, w, np.array([0.5])])
    want = np.array([[0 + 2 + 9 + 16, 1 + 4 + 12 + 20], [3 + 8 + 18 + 28, 4 + 10 + 21 + 32]]) + 0.5
    np.testing.assert_array_equal(y[0, 0], want)
    np.testing.assert_array_equal(gw[0, 0], [[0 + 1 + 3 + 4, 1 + 2 + 4 + 5], [3 + 4 + 6 + 7, 4 + 5 + 7 + 8]])
    np.testing.assert_array_equal(gx[0, 0], [[1, 3, 2], [4, 10, 6], [3, 7, 4]])
    np.testing.assert_array_equal(gb, [4.0])


def test_output_sizes() -> None:
    """Output sizes follow the documented formulas."""
    x = DEV.zeros((2, 3, 11, 8))
    assert conv2d(x, DEV.zeros((5, 3, 3, 2)), stride=(2, 3), padding=(1, 2), dilation=(2, 1)).shape == (2, 5, 5, 4)
    assert conv2d(x, DEV.zeros((5, 3, 4, 4)), padding="same").shape == (2, 5, 11, 8)
    assert conv1d(DEV.zeros((2, 3, 10)), DEV.zeros((6, 1, 3)), stride=3, groups=3).shape == (2, 6, 3)
    ct = conv_transpose2d(x, DEV.zeros((3, 2, 3, 2)), stride=(2, 3), padding=1, output_padding=(1, 2), dilation=2)
    assert ct.shape == (2, 2, (11 - 1) * 2 - 2 + 2 * 2 + 1 + 1, (8 - 1) * 3 - 2 + 2 * 1 + 2 + 1)
    assert max_pool2d(x, 3, 2, 1).shape == (2, 3, 6, 4)
    assert avg_pool2d(x, (2, 4)).shape == (2, 3, 5, 2)
    assert upscale2d(x, scale_factor=1.5).shape == (2, 3, 16, 12)
    assert upscale2d(x, size=(4, 20), mode="bilinear").shape == (2, 3, 4, 20)


def test_conv_transpose2d_is_conv2d_input_gradient() -> None:
    """<conv2d(x, w), y> = <x, conv_transpose2d(y, w)>: the two are adjoint."""
    x, w = rnd(2, 4, 9, 8), rnd(6, 2, 3, 2)
    kw: dict[str, Any] = {"stride": (2, 3), "padding": (1, 0), "dilation": (1, 2)}
    y = conv2d(DEV.tensor(x, dtype=np.float64), DEV.tensor(w, dtype=np.float64), groups=2, **kw).numpy()
    gy = rnd(*y.shape)
    back = conv_transpose2d(
        DEV.tensor(gy, dtype=np.float64), DEV.tensor(w, dtype=np.float64), output_padding=(0, 2), groups=2, **kw
    ).numpy()
    assert back.shape == x.shape
    np.testing.assert_allclose((y * gy).sum(), (x * back).sum(), rtol=1e-10)


def test_float32_stays_float32() -> None:
    """float32 in, float32 out and float32 gradients, for every op."""
    x = _RNG.standard_normal((2, 4, 6, 6)).astype(np.float32)
    ops: list[tuple[Fn, list[Array]]] = [
        (lambda x, w: conv2d(x, w, padding=1), [x, np.ones((3, 4, 3, 3), np.float32)]),
        (lambda x, w: conv2d(x, w, groups=2), [x, np.ones((4, 2, 3, 3), np.float32)]),
        (lambda x, w: conv_transpose2d(x, w, stride=2), [x, np.ones((4, 1, 2, 2), np.float32)]),
        (lambda x, w: conv1d(x, w), [x[:, :, 0], np.ones((2, 4, 3), np.float32)]),
        (lambda x: max_pool2d(x, 2), [x]),
        (lambda x: min_pool2d(x, 3, 1, 1), [x]),
        (lambda x: avg_pool2d(x, 3, 2, 1), [x]),
        (lambda x: upscale2d(x, scale_factor=1.5), [x]),
        (lambda x: upscale2d(x, scale_factor=2, mode="bilinear"), [x]),
    ]
    for fn, arrays in ops:
        y, gs = _grads(fn, arrays, dtype=np.float32)
        assert y.dtype == np.float32
        assert all(g.dtype == np.float32 for g in gs)


def test_max_pool_ties_go_to_the_first_and_min_pool_mirrors() -> None:
    """An all-equal window sends its whole gradient to its first element (row-major); with
    overlapping windows a shared maximum collects every window's gradient."""
    x = np.zeros((1, 1, 4, 4))
    _, (gx,) = _grads(lambda t: max_pool2d(t, 2), [x])
    want = np.zeros((4, 4))
    want[::2, ::2] = 1.0
    np.testing.assert_array_equal(gx[0, 0], want)
    _, (gn,) = _grads(lambda t: min_pool2d(t, 2), [x])
    np.testing.assert_array_equal(gn[0, 0], want)
    peak = np.zeros((1, 1, 3, 3))
    peak[0, 0, 1, 1] = 5.0
    y, (gp,) = _grads(lambda t: max_pool2d(t, 2, 1), [peak])
    np.testing.assert_array_equal(y[0, 0], np.full((2, 2), 5.0))
    assert gp[0, 0, 1, 1] == 4.0 and gp.sum() == 4.0
    y, (gm,) = _grads(lambda t: min_pool2d(t, 2, 1), [-peak])
    np.testing.assert_array_equal(y[0, 0], np.full((2, 2), -5.0))
    assert gm[0, 0, 1, 1] == 4.0


def test_max_pool_padding_never_wins_and_nan_propagates() -> None:
    """Padded positions are not candidates (an all-negative input stays negative); a NaN
    in a window makes its output NaN and takes the gradient."""
    x = -np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
    y, _ = _grads(lambda t: max_pool2d(t, 3, 1, 1), [x])
    assert (y < 0).all()
    x[0, 0, 0, 0] = np.nan
    y, (gx,) = _grads(lambda t: max_pool2d(t, 2), [x])
    assert np.isnan(y[0, 0, 0, 0]) and gx[0, 0, 0, 0] == 1.0


def test_avg_pool_counts_padding() -> None:
    """count_include_pad=True: a corner window of a padded ones input averages to 4/9."""
    y, (gx,) = _grads(lambda t: avg_pool2d(t, 3, 1, 1), [np.ones((1, 1, 3, 3))])
    assert y[0, 0, 0, 0] == pytest.approx(4 / 9)
    assert y[0, 0, 1, 1] == pytest.approx(1.0)
    assert gx[0, 0, 1, 1] == pytest.approx(1.0)
    assert gx[0, 0, 0, 0] == pytest.approx(4 / 9)


def test_nearest_upscale_by_two_repeats() -> None:
    """Nearest x2 repeats each pixel into a 2x2 block; its gradient sums the block."""
    x = rnd(1, 2, 3, 3)
    y, (gx,) = _grads(lambda t: upscale2d(t, scale_factor=2), [x])
    np.testing.assert_array_equal(y, x.repeat(2, axis=2).repeat(2, axis=3))
    np.testing.assert_array_equal(gx, np.full(x.shape, 4.0))


def test_untraced_leaf_input_gradient_is_skipped() -> None:
    """With retain_leafs([w]) the traced input batch's gradient is not computed."""
    x, w = DEV.tensor(rnd(2, 3, 5, 5)), DEV.tensor(rnd(4, 3, 3, 3))
    store = Gradients.leaky()
    store.retain_leafs([w])
    grads = conv2d(x.trace(store), w).sum().backward()
    assert w in grads and x not in grads


# ----- errors --------------------------------------------------------------------------------


def z(*shape: int) -> T:
    """An untyped float32 zeros tensor (for calls mypy would reject)."""
    return DEV.zeros(shape)


def _raises(exc: type[Exception], fn: Fn, *words: str) -> None:
    with pytest.raises(exc) as info:
        fn()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_errors_name_the_op_and_shapes() -> None:
    """Channel mismatch, a kernel larger than the padded input and groups not dividing the
    channels raise ShapeError naming the op and both shapes."""
    x = DEV.zeros((2, 4, 5, 5))
    _raises(ShapeError, lambda: conv2d(x, DEV.zeros((3, 5, 3, 3))), "conv2d", "(2, 4, 5, 5)", "(3, 5, 3, 3)")
    _raises(ShapeError, lambda: conv2d(x, DEV.zeros((3, 4, 7, 3))), "conv2d", "larger", "(3, 4, 7, 3)", "(5, 5)")
    _raises(ShapeError, lambda: conv2d(x, DEV.zeros((3, 4, 3, 3)), dilation=3), "conv2d", "dilated")
    _raises(ShapeError, lambda: conv2d(x, DEV.zeros((3, 2, 3, 3)), groups=2), "conv2d", "groups=2", "(3, 2, 3, 3)")
    _raises(ShapeError, lambda: conv2d(x, DEV.zeros((4, 1, 3, 3)), groups=3), "conv2d", "groups=3", "(2, 4, 5, 5)")
    _raises(ShapeError, lambda: conv2d(x, DEV.zeros((3, 4, 3, 3)), DEV.zeros((4,))), "conv2d", "bias", "(4,)")
    _raises(ShapeError, lambda: conv2d(z(4, 5, 5), z(3, 4, 3, 3)), "conv2d", "(4, 5, 5)")
    _raises(ShapeError, lambda: conv1d(DEV.zeros((2, 4, 5)), DEV.zeros((3, 2, 3))), "conv1d", "(2, 4, 5)", "(3, 2, 3)")
    _raises(ShapeError, lambda: conv1d(DEV.zeros((2, 4, 2)), DEV.zeros((3, 4, 3))), "conv1d", "larger")
    _raises(
        ShapeError, lambda: conv_transpose2d(x, DEV.zeros((3, 2, 3, 3))), "conv_transpose2d", "(2, 4, 5, 5)", "(3, 2"
    )
    _raises(ShapeError, lambda: conv_transpose2d(x, DEV.zeros((4, 2, 3, 3)), groups=3), "conv_transpose2d", "groups")
    _raises(ShapeError, lambda: conv_transpose2d(x, DEV.zeros((4, 1, 1, 1)), padding=3), "conv_transpose2d", "empty")
    _raises(ShapeError, lambda: max_pool2d(x, 6), "max_pool2d", "larger", "(2, 4, 5, 5)")
    _raises(ShapeError, lambda: avg_pool2d(z(4, 5, 5), 2), "avg_pool2d", "(4, 5, 5)")
    _raises(ShapeError, lambda: upscale2d(z(5, 5), scale_factor=2), "upscale2d", "(5, 5)")


def test_argument_errors() -> None:
    """Bad strides, paddings, groups, modes and sizes are rejected before any kernel runs."""
    x, w = DEV.zeros((1, 2, 6, 6)), DEV.zeros((2, 2, 3, 3))
    _raises(ValueError, lambda: conv2d(x, w, stride=0), "conv2d", "stride")
    _raises(ValueError, lambda: conv2d(x, w, padding=-1), "conv2d", "padding")
    _raises(ValueError, lambda: conv2d(x, w, stride=2, padding="same"), "conv2d", "same")
    _raises(ValueError, lambda: conv2d(x, w, padding="full"), "conv2d", "full")  # type: ignore[call-overload]
    _raises(ValueError, lambda: conv2d(x, w, groups=0), "conv2d", "groups")
    _raises(TypeError, lambda: conv2d(x, w, stride=(1, 2, 3)), "conv2d", "stride")  # type: ignore[arg-type]
    _raises(TypeError, lambda: conv2d(x, w, stride=1.5), "conv2d", "stride")  # type: ignore[call-overload]
    _raises(
        ValueError, lambda: conv_transpose2d(x, w, stride=2, output_padding=2), "conv_transpose2d", "output_padding"
    )
    _raises(ValueError, lambda: max_pool2d(x, 2, padding=2), "max_pool2d", "half")
    _raises(ValueError, lambda: upscale2d(x), "upscale2d", "exactly one")
    _raises(ValueError, lambda: upscale2d(x, size=4, scale_factor=2), "upscale2d", "exactly one")
    _raises(ValueError, lambda: upscale2d(x, size=4, mode="bicubic"), "upscale2d", "mode")  # type: ignore[call-overload]
    _raises(ValueError, lambda: upscale2d(x, size=4, align_corners=True), "upscale2d", "align_corners")
    _raises(ValueError, lambda: upscale2d(x, scale_factor=-1.0), "upscale2d", "positive")
    _raises(ShapeError, lambda: upscale2d(x, scale_factor=0.1), "upscale2d", "empty")


def test_dtype_mismatch() -> None:
    """float32 meeting float64 raises DTypeError naming the op."""
    x = DEV.zeros((1, 2, 4, 4))
    _raises(DTypeError, lambda: conv2d(x, DEV.zeros((2, 2, 3, 3), dtype=np.float64)), "conv2d")
    _raises(
        DTypeError, lambda: conv2d(x, DEV.zeros((2, 2, 3, 3)), DEV.zeros((2,), dtype=np.float64)), "conv2d", "float64"
    )


# ----- against PyTorch -----------------------------------------------------------------------


def _torch_check(fn: Fn, tfn: Fn, arrays: list[Array], dtype: Any = np.float64) -> None:
    """gradtape's forward and gradients of ``sum(fn(*xs) * gy)`` equal PyTorch's."""
    torch = pytest.importorskip("torch")
    ref_x = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    ref_y = tfn(*ref_x)
    gy = _RNG.standard_normal(tuple(ref_y.shape))
    ref_y.backward(torch.tensor(gy.astype(dtype)))
    y, grads = _grads(fn, [a.astype(dtype) for a in arrays], gy, dtype)
    tol = 1e-10 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(y, ref_y.detach().numpy(), rtol=tol, atol=tol)
    for g, t in zip(grads, ref_x, strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=tol, atol=tol * 10)


_TORCH_CONV2D = [
    ((2, 3, 8, 8), (5, 3, 3, 3), {}),
    ((2, 4, 9, 7), (6, 2, 3, 2), {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2}),
    ((3, 6, 7, 7), (6, 1, 3, 3), {"padding": 1, "groups": 6}),  # depthwise
    ((2, 3, 10, 9), (4, 3, 4, 3), {"padding": "same", "dilation": 2}),
    ((2, 4, 11, 12), (8, 4, 5, 5), {"stride": 3, "padding": (2, 0)}),
    ((4, 8, 16, 16), (16, 8, 3, 3), {"padding": 1}),  # prange kernels (col2im)
    ((4, 8, 16, 16), (8, 2, 3, 3), {"padding": 1, "groups": 4}),  # prange kernels (direct)
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("xs", "ws", "kw"), _TORCH_CONV2D)
def test_conv2d_matches_torch(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], dtype: Any) -> None:
    """conv2d's output and x, w, b gradients equal torch.nn.functional.conv2d's."""
    torch = pytest.importorskip("torch")
    fn = torch.nn.functional.conv2d
    _torch_check(
        lambda x, w, b: conv2d(x, w, b, **kw),
        lambda x, w, b: fn(x, w, b, **kw),
        [rnd(*xs), rnd(*ws), rnd(ws[0])],
        dtype,
    )


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize(
    ("xs", "ws", "kw"),
    [
        ((2, 3, 12), (4, 3, 3), {}),
        ((2, 4, 12), (6, 2, 4), {"stride": 2, "padding": 3, "dilation": 2, "groups": 2}),
        ((1, 3, 9), (2, 3, 4), {"padding": "same"}),
    ],
)
def test_conv1d_matches_torch(xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any]) -> None:
    """conv1d equals torch.nn.functional.conv1d, forward and gradients."""
    torch = pytest.importorskip("torch")
    fn = torch.nn.functional.conv1d
    _torch_check(
        lambda x, w, b: conv1d(x, w, b, **kw), lambda x, w, b: fn(x, w, b, **kw), [rnd(*xs), rnd(*ws), rnd(ws[0])]
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    ("xs", "ws", "args"),
    [
        ((2, 3, 5, 5), (3, 4, 3, 3), (1, 0, 0, 1, 1)),
        ((2, 4, 4, 5), (4, 3, 3, 2), (2, 1, 1, 2, 1)),
        ((2, 4, 4, 5), (4, 2, 3, 3), ((2, 3), (1, 0), (1, 2), 2, (1, 2))),
        ((1, 6, 3, 3), (6, 1, 4, 4), (2, 1, 0, 6, 1)),
        ((4, 16, 8, 8), (16, 8, 3, 3), (2, 1, 1, 1, 1)),
    ],
)
def test_conv_transpose2d_matches_torch(
    xs: tuple[int, ...], ws: tuple[int, ...], args: tuple[Any, ...], dtype: Any
) -> None:
    """conv_transpose2d equals torch's (args: stride, padding, output_padding, groups, dilation)."""
    torch = pytest.importorskip("torch")
    fn = torch.nn.functional.conv_transpose2d
    s, p, op, g, d = args
    _torch_check(
        lambda x, w, b: conv_transpose2d(x, w, b, s, p, op, groups=g, dilation=d),
        lambda x, w, b: fn(x, w, b, s, p, op, g, d),
        [rnd(*xs), rnd(*ws), rnd(ws[1] * g)],
        dtype,
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("kernel", "stride", "padding"), [(2, None, 0), (3, 2, 1), ((3, 2), (1, 2), (1, 0))])
def test_pools_match_torch(kernel: Any, stride: Any, padding: Any, dtype: Any) -> None:
    """max/avg pooling equal torch's; min pooling equals -max_pool2d(-x); also with ties."""
    torch = pytest.importorskip("torch")
    f = torch.nn.functional
    ties = np.round(rnd(2, 3, 7, 6))  # few distinct values: many ties
    for x in (rnd(2, 3, 7, 6), ties):
        _torch_check(
            lambda t: max_pool2d(t, kernel, stride, padding),
            lambda t: f.max_pool2d(t, kernel, stride, padding),
            [x],
            dtype,
        )
        _torch_check(
            lambda t: avg_pool2d(t, kernel, stride, padding),
            lambda t: f.avg_pool2d(t, kernel, stride, padding),
            [x],
            dtype,
        )
        _torch_check(
            lambda t: min_pool2d(t, kernel, stride, padding),
            lambda t: -f.max_pool2d(-t, kernel, stride, padding),
            [x],
            dtype,
        )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    ("mode", "kw"),
    list(
        itertools.product(
            ["nearest", "bilinear"],
            [{"scale_factor": 2}, {"scale_factor": 3}, {"scale_factor": (1.7, 0.6)}, {"size": (11, 5)}, {"size": 3}],
        )
    ),
)
def test_upscale2d_matches_torch(mode: str, kw: dict[str, Any], dtype: Any) -> None:
    """upscale2d equals F.interpolate (nearest; bilinear with and without align_corners)."""
    torch = pytest.importorskip("torch")
    f = torch.nn.functional
    x = rnd(2, 3, 7, 6)
    for ac in [None] if mode == "nearest" else [False, True]:
        _torch_check(
            lambda t, ac=ac: upscale2d(t, mode=mode, align_corners=ac, **kw),  # type: ignore[call-overload]
            lambda t, ac=ac: f.interpolate(t, mode=mode, align_corners=ac, **kw),
            [x],
            dtype,
        )


# ----- against the previous implementation (tests/conv_oracle.py), chunking, second rule ----

# conv2d: (x shape, w shape, kwargs); every stride 1-3, padding 0/1/2/"same"/"valid",
# dilation 1-2, groups 1/2/C, 1x1 kernels, kernel == input size, H != W, batch 1 and 5.
_ORACLE_CONV2D: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((5, 3, 7, 6), (4, 3, 3, 3), {"padding": 1}),
    ((5, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 2, "dilation": 2}),
    ((1, 4, 9, 5), (6, 2, 3, 3), {"stride": 3, "padding": (1, 0), "groups": 2}),
    ((5, 4, 8, 7), (4, 1, 3, 3), {"padding": 1, "groups": 4}),  # depthwise
    ((5, 4, 8, 7), (8, 1, 2, 3), {"stride": (2, 1), "padding": "valid", "dilation": (1, 2), "groups": 4}),
    ((5, 3, 6, 9), (2, 3, 1, 1), {}),  # 1x1
    ((5, 3, 6, 9), (2, 3, 1, 1), {"stride": 2, "padding": 1}),
    ((5, 2, 5, 4), (3, 2, 5, 4), {}),  # kernel == input size
    ((5, 2, 5, 4), (3, 2, 5, 4), {"padding": 2, "stride": 3}),
    ((5, 3, 10, 7), (4, 3, 4, 3), {"padding": "same", "dilation": 2}),
    ((1, 3, 10, 7), (4, 3, 2, 2), {"padding": "same"}),  # odd total padding: extra at the end
    ((5, 8, 6, 6), (8, 2, 3, 3), {"padding": 1, "groups": 4, "dilation": 2}),
    ((5, 8, 6, 6), (4, 8, 3, 3), {"stride": 3, "padding": 2}),
    # padding wider than the kernel: the stride-1 input gradient's own padding is negative
    ((5, 3, 6, 9), (2, 3, 1, 1), {"padding": 1}),
    ((5, 2, 5, 4), (3, 2, 2, 3), {"padding": (3, 2), "dilation": (2, 1)}),
]
_ORACLE_CONV1D: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((5, 3, 11), (4, 3, 3), {"padding": 1}),
    ((5, 4, 12), (6, 2, 4), {"stride": 2, "padding": 3, "dilation": 2, "groups": 2}),
    ((5, 6, 9), (6, 1, 4), {"padding": 3, "groups": 6}),  # nn.Mamba's depthwise causal conv
    ((1, 3, 9), (2, 3, 4), {"padding": "same"}),
    ((5, 3, 7), (2, 3, 7), {"stride": 3}),  # kernel == input size
]
# conv_transpose2d: (x shape, w shape, (stride, padding, output_padding, groups, dilation))
_ORACLE_CONVT: list[tuple[tuple[int, ...], tuple[int, ...], tuple[Any, ...]]] = [
    ((5, 3, 5, 4), (3, 4, 3, 3), (1, 0, 0, 1, 1)),
    ((5, 4, 4, 5), (4, 3, 3, 2), (2, 1, 1, 1, 1)),
    ((1, 4, 4, 5), (4, 2, 3, 3), ((2, 3), (1, 0), (1, 2), 2, (1, 2))),
    ((5, 6, 3, 3), (6, 1, 4, 4), (2, 1, 0, 6, 1)),
    ((5, 4, 3, 4), (4, 2, 1, 1), (3, 0, 2, 1, 1)),
    ((5, 2, 4, 3), (2, 3, 3, 2), (1, 2, 0, 1, 2)),
]

# "default": the shipped chunking (these small maps run on rows, _small_forward and
# _small_backward); "chunks2":
# chunks of 2 samples (5 = 2 + 2 + 1) with the columns or rows rebuilt in backward and every
# input gradient through col2im; "chunks1": one sample per chunk, columns kept; "bigplane":
# the main im2col kernel (the one for output planes of SMALL_PLANE or more), the weight
# gradient one product per sample; "bigplane_chunkw": the same with one weight-gradient
# product per chunk, columns rebuilt and the input gradient through col2im.
_MODES = ["default", "chunks2", "chunks1", "bigplane", "bigplane_chunkw"]
_CONV_OPS: dict[str, Fn] = {"conv2d": conv2d, "conv1d": conv1d, "conv_transpose2d": conv_transpose2d}


def _set_mode(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if mode == "chunks2":
        monkeypatch.setattr(kconv, "chunk_samples", lambda n, rows, out_hw, itemsize: min(n, 2))
        monkeypatch.setattr(kconv, "COLS_MAX_BYTES", 0)
        monkeypatch.setattr(kconv, "GRAD_X_AS_CONV", False)
    elif mode == "chunks1":
        monkeypatch.setattr(kconv, "CHUNK_BYTES", 1)
        monkeypatch.setattr(kconv, "COLS_MAX_BYTES", 1 << 40)
    elif mode in ("bigplane", "bigplane_chunkw"):
        monkeypatch.setattr(kconv, "SMALL_PLANE", 0)
        monkeypatch.setattr(kconv, "chunk_samples", lambda n, rows, out_hw, itemsize: min(n, 2))
        monkeypatch.setattr(kconv, "PER_SAMPLE_WEIGHT", 1 if mode == "bigplane" else 1 << 40)
        if mode == "bigplane_chunkw":
            monkeypatch.setattr(kconv, "COLS_MAX_BYTES", 0)
            monkeypatch.setattr(kconv, "GRAD_X_AS_CONV", False)


def _noncontiguous(a: Array) -> Array:
    """``a``'s values in a layout that is not C-contiguous (last two axes stored swapped)."""
    v = np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    assert not v.flags.c_contiguous or a.shape[-1] == 1 or a.shape[-2] == 1
    return v


def _oracle_check(
    fn: Fn,
    ref: Callable[[Array, Array, Array | None, Array], tuple[Array, ...]],
    xs: tuple[int, ...],
    ws: tuple[int, ...],
    nb: int,
) -> None:
    """``fn``'s value and x, w, b gradients equal the previous implementation's (float64:
    1e-10, float32: 1e-4 relative to the values' scale), with and without a bias, also on
    a non-contiguous x."""
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4)):
        for with_bias in (True, False):
            x, w = rnd(*xs).astype(dtype), rnd(*ws).astype(dtype)
            b = rnd(nb).astype(dtype)
            y0 = fn(DEV.tensor(x), DEV.tensor(w), None).numpy()
            gy = rnd(*y0.shape).astype(dtype)
            want = ref(x, w, b if with_bias else None, gy)
            for xin in (x, _noncontiguous(x)):
                arrays = [xin, w, b] if with_bias else [xin, w]
                got_y, got_g = _grads(lambda *a, wb=with_bias: fn(*a) if wb else fn(*a, None), arrays, gy, dtype)
                assert got_y.dtype == dtype and all(g.dtype == dtype for g in got_g)
                pairs = zip([got_y, *got_g], want if with_bias else want[:3], strict=True)
                for got, exp in pairs:
                    scale = max(1.0, float(np.abs(exp).max()))
                    np.testing.assert_allclose(got, exp, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize(("xs", "ws", "kw"), _ORACLE_CONV2D)
def test_conv2d_matches_previous_implementation(
    xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """conv2d's value and gradients equal the previous implementation's over the grid, with
    the shipped chunking, chunks of 2 (a remainder chunk, columns rebuilt) and of 1 (kept)."""
    _set_mode(mode, monkeypatch)
    g = int(kw.get("groups", 1))
    args = (kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1), g)
    _oracle_check(
        lambda x, w, b: conv2d(x, w, b, **kw),
        lambda x, w, b, gy: conv_oracle.conv_ref(x, w, b, gy, *args),
        xs,
        ws,
        ws[0],
    )


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize(("xs", "ws", "kw"), _ORACLE_CONV1D)
def test_conv1d_matches_previous_implementation(
    xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """conv1d's value and gradients equal the previous implementation's."""
    _set_mode(mode, monkeypatch)
    args = (kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1), int(kw.get("groups", 1)))
    _oracle_check(
        lambda x, w, b: conv1d(x, w, b, **kw),
        lambda x, w, b, gy: conv_oracle.conv_ref(x, w, b, gy, *args),
        xs,
        ws,
        ws[0],
    )


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize(("xs", "ws", "args"), _ORACLE_CONVT)
def test_conv_transpose2d_matches_previous_implementation(
    xs: tuple[int, ...], ws: tuple[int, ...], args: tuple[Any, ...], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """conv_transpose2d's value and gradients equal the previous implementation's."""
    _set_mode(mode, monkeypatch)
    s, p, op, g, d = args
    _oracle_check(
        lambda x, w, b: conv_transpose2d(x, w, b, s, p, op, groups=g, dilation=d),
        lambda x, w, b, gy: conv_oracle.conv_transpose2d_ref(x, w, b, gy, s, p, op, g, d),
        xs,
        ws,
        ws[1] * g,
    )


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize(
    ("op", "xs", "ws", "kw"),
    [("conv2d", *c) for c in _ORACLE_CONV2D[::2]]
    + [("conv1d", *c) for c in _ORACLE_CONV1D[:3]]
    + [
        (
            "conv_transpose2d",
            xs,
            ws,
            dict(zip(("stride", "padding", "output_padding", "groups", "dilation"), a, strict=True)),
        )
        for xs, ws, a in _ORACLE_CONVT[:4]
    ],
)
def test_conv_grid_matches_torch(
    op: str, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Value and x, w, b gradients equal PyTorch's (float64 and float32), with each chunking."""
    torch = pytest.importorskip("torch")
    _set_mode(mode, monkeypatch)
    ours = _CONV_OPS[op]
    theirs = getattr(torch.nn.functional, op)
    nb = ws[1] * int(kw.get("groups", 1)) if op == "conv_transpose2d" else ws[0]
    for dtype in (np.float64, np.float32):
        _torch_check(
            lambda x, w, b: ours(x, w, b, **kw),
            lambda x, w, b: theirs(x, w, b, **kw),
            [rnd(*xs), rnd(*ws), rnd(nb)],
            dtype,
        )


@pytest.mark.parametrize("mode", ["default", "chunks2"])
@pytest.mark.parametrize(
    ("op", "xs", "ws", "kw"),
    [
        ("conv2d", (3, 3, 5, 4), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
        ("conv2d", (3, 4, 5, 5), (4, 1, 3, 3), {"padding": 1, "groups": 4}),
        ("conv1d", (3, 4, 9), (4, 1, 4), {"padding": 3, "groups": 4}),
        ("conv1d", (3, 2, 9), (3, 2, 3), {"dilation": 2}),
        ("conv_transpose2d", (3, 2, 3, 4), (2, 3, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ],
)
def test_conv_gradcheck_chunked(
    op: str, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x, w, b gradients match finite differences (float64) with several chunks per batch."""
    _set_mode(mode, monkeypatch)
    f = _CONV_OPS[op]
    nb = ws[1] if op == "conv_transpose2d" else ws[0]
    assert gradcheck(lambda x, w, b: f(x, w, b, **kw), [rnd(*xs), rnd(*ws), rnd(nb)])


@pytest.mark.parametrize("mode", ["default", "chunks2"])
@pytest.mark.parametrize(
    ("op", "xs", "ws", "kw"),
    [
        ("conv2d", (3, 3, 6, 5), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
        ("conv2d", (3, 4, 5, 5), (4, 1, 3, 3), {"padding": "same", "groups": 4}),
        ("conv1d", (3, 4, 9), (4, 2, 4), {"padding": 3, "groups": 2}),
        ("conv_transpose2d", (3, 2, 3, 4), (2, 3, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ],
)
def test_second_rule_matches_fast_rule(
    op: str, xs: tuple[int, ...], ws: tuple[int, ...], kw: dict[str, Any], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``create_graph`` the gradients (the second rule) equal the fast rule's, and their
    own gradients are the bilinear identities computed by the fast rule:
    ``d<gx(w; gy), V>/dw = gw(x=V; gy)`` and ``d<gw(x; gy), U>/dx = gx(w=U; gy)``."""
    from gradtape.autograd import grad

    _set_mode(mode, monkeypatch)
    f = _CONV_OPS[op]
    x, w = rnd(*xs), rnd(*ws)
    y0 = f(DEV.tensor(x, dtype=np.float64), DEV.tensor(w, dtype=np.float64), **kw).numpy()
    gy = rnd(*y0.shape)
    v, u = rnd(*xs), rnd(*ws)

    def fast(xa: Array, wa: Array) -> tuple[Array, Array]:
        _, (gx_, gw_) = _grads(lambda a, c: f(a, c, **kw), [xa, wa], gy)
        return gx_, gw_

    xt = DEV.tensor(x, dtype=np.float64).leaky_trace()
    wt = DEV.tensor(w, dtype=np.float64).leaky_trace()
    gx, gw = grad(f(xt, wt, **kw), [xt, wt], grad_outputs=gy, create_graph=True)
    assert gx is not None and gw is not None
    fx, fw = fast(x, w)
    np.testing.assert_allclose(gx.numpy(), fx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), fw, rtol=1e-12, atol=1e-12)
    s = (gx * DEV.tensor(v, dtype=np.float64)).sum() + (gw * DEV.tensor(u, dtype=np.float64)).sum()
    hx, hw = grad(s, [xt, wt])
    assert hx is not None and hw is not None
    np.testing.assert_allclose(hw.numpy(), fast(v, w)[1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hx.numpy(), fast(x, u)[0], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("is_min", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max2x2_fast_path_equals_the_general_kernel(is_min: bool, dtype: Any) -> None:
    """The 2x2 / stride 2 / unpadded path gives the general kernel's values and indices,
    ties (the first wins), NaNs (the last wins, as PyTorch) and infinities included, on
    odd-sized planes."""
    from gradtape.devices.kernels import pool as kpool

    r = np.random.default_rng(3)
    # the last shape has enough windows (4 per output) for pool_maxmin's parallel variant
    big = (kpool.PARALLEL_WORK // 4 // 64 + 1, 17, 16)
    for shape in [(7, 8, 8), (5, 5, 7), (3, 4, 4), big]:
        x = r.integers(-2, 3, shape).astype(dtype)  # many ties
        x[0, 1, 1] = np.nan
        x[1, 2, 3] = np.nan
        x[1, 3, 2] = np.nan
        x[2, 0, 0], x[2, 0, 1] = np.inf, -np.inf  # a window whose sum is NaN without a NaN
        x[2, 2, 3], x[-1, 1, 0] = np.inf, -np.inf
        oh, ow = shape[1] // 2, shape[2] // 2
        out1, idx1 = np.empty((shape[0], oh, ow), dtype), np.empty((shape[0], oh, ow), np.int32)
        out2, idx2 = np.empty_like(out1), np.empty_like(idx1)
        kpool._maxmin_serial(x, out2, idx2, 2, 2, 2, 2, 0, 0, is_min)
        for kernel in (kpool._max2x2_serial, kpool._max2x2_parallel):
            kernel(x, out1, idx1, dtype(-1 if is_min else 1))
            np.testing.assert_array_equal(out1, out2)
            np.testing.assert_array_equal(idx1, idx2)
        got, got_idx = kpool.pool_maxmin(x, (2, 2), (2, 2), (0, 0), (oh, ow), is_min)
        np.testing.assert_array_equal(got, out2)
        np.testing.assert_array_equal(got_idx, idx2)


@pytest.mark.parametrize("op", [max_pool2d, min_pool2d])
@pytest.mark.parametrize("shape", [(2, 3, 8, 9), (2, 3, 9, 8), (4, 40, 32, 32)])
def test_untraced_2x2_pooling_skips_indices_and_gives_the_traced_values(op: Fn, shape: tuple[int, ...]) -> None:
    """Untraced (inference), the 2x2 window runs a values-only kernel (serial, and parallel
    for the large shape); its values equal the traced path's, ties and NaNs included, and a
    traced call still routes gradients."""
    from gradtape.devices.kernels import pool as kpool

    r = np.random.default_rng(5)
    x = r.integers(-2, 3, shape).astype(np.float32)
    x[0, 0, 1, 1] = np.nan
    x[1, 2, 5, 4] = np.nan
    calls: list[bool] = []
    real = kpool.pool_maxmin

    def spy(*args: Any) -> Any:
        calls.append(bool(args[-1]))
        return real(*args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kpool, "pool_maxmin", spy)
        untraced = op(DEV.tensor(x), 2).numpy()
        xt = DEV.tensor(x).trace(Gradients.leaky())
        traced = op(xt, 2)
    assert calls == [False, True]
    np.testing.assert_array_equal(untraced, traced.numpy())
    assert np.isnan(untraced[0, 0, 0, 0]) and np.isnan(untraced[1, 2, 2, 2])
    g = traced.sum().backward().get(xt)
    assert g.shape == x.shape and float(g.sum()) == traced.size


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5, 4, 7), (2, 3, 9), (16, 8, 96, 96)])
def test_bias_grad_sums_every_axis_but_the_channel(dtype: Any, shape: tuple[int, ...]) -> None:
    """kernels.conv.bias_grad equals numpy's float64 sum (the last shape runs the parallel
    variant) and gives the same bits on every call."""
    r = np.random.default_rng(7)
    g = r.standard_normal(shape).astype(dtype) + 3.0
    assert (g.size >= kconv.PARALLEL_COPY) == (shape[0] == 16)
    got = kconv.bias_grad(g)
    want = g.astype(np.float64).sum(axis=tuple(i for i in range(g.ndim) if i != 1))
    assert got.dtype == dtype and got.shape == (shape[1],)
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13)
    np.testing.assert_array_equal(kconv.bias_grad(g), got)
    np.testing.assert_array_equal(kconv.bias_grad(np.asfortranarray(g)), got)


@pytest.mark.parametrize("side", [6, 20])  # a small plane (rows path) and a big one
@pytest.mark.parametrize("groups", [1, 2])
def test_an_empty_batch_gives_zero_weight_and_bias_gradients(side: int, groups: int) -> None:
    """N = 0: the output is empty and the weight and bias gradients are zeros of their
    shapes, not uninitialised memory, on every conv path."""
    store = Gradients.leaky()
    x = DEV.tensor(np.zeros((0, 4, side, side))).trace(store)
    w = DEV.tensor(rnd(6, 4 // groups, 3, 3)).trace(store)
    b = DEV.tensor(rnd(6)).trace(store)
    y = conv2d(x, w, b, padding=1, groups=groups)
    assert y.shape == (0, 6, side, side)
    grads = y.sum().backward()
    np.testing.assert_array_equal(grads.get(w).numpy(), np.zeros((6, 4 // groups, 3, 3)))
    np.testing.assert_array_equal(grads.get(b).numpy(), np.zeros(6))
    assert grads.get(x).shape == (0, 4, side, side)
