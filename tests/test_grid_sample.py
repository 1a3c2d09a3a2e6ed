"""``F.grid_sample`` and ``F.affine_grid`` written as a PyTorch program, against PyTorch.

Each test builds the same float64 tensors in both libraries and compares the values and the
gradients of ``input``, ``grid`` and ``theta``: every ``mode`` x ``padding_mode`` x
``align_corners``, with sample points inside, outside ``[-1, 1]``, on pixel centres, on the
edges, on half pixels (``"nearest"``'s ties) and shared by many points (the input gradient's
scatter-add), 4-D and 5-D; gradients of gradients; a spatial transformer trained in both; the
errors' messages.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest

import gradtape
import gradtape.nn.functional as F
from gradtape import autograd
from gradtape.errors import DTypeError, ShapeError
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")
tF: Any = torch.nn.functional

Array = np.ndarray[Any, Any]
MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
CASES = list(itertools.product(MODES, PADDINGS, (False, True)))


def _points(rng: np.random.Generator, shape: tuple[int, ...], h: int, w: int) -> Array:
    """Sample points ``(N, H_out, W_out, 2)``: uniform over ``[-1.4, 1.4]`` (outside the image
    too), then the first row set to the corners, the centre, far outside, and the pixel centres
    and edges of an ``h x w`` input under both ``align_corners`` conventions."""
    grid = rng.uniform(-1.4, 1.4, shape)
    special = [(-1.0, -1.0), (1.0, 1.0), (0.0, 0.0), (-3.0, 2.5), (1.0, -1.0)]
    special += [(2 * (i + 0.5) / w - 1, 2 * (j + 0.5) / h - 1) for i, j in ((0, 0), (w - 1, h - 1), (1, 0))]
    special += [(2 * i / (w - 1) - 1, 2 * j / (h - 1) - 1) for i, j in ((1, 1), (w - 2, 0))]
    flat = grid.reshape(-1, 2)
    flat[: len(special)] = special
    return grid


def _both(x: Array, *others: Array) -> tuple[list[Any], list[Any]]:
    """The arrays as leaf tensors requiring grad, in PyTorch and in gradtape."""
    arrays = (x, *others)
    return (
        [torch.tensor(a, requires_grad=True) for a in arrays],
        [gradtape.tensor(a, requires_grad=True) for a in arrays],
    )


def _close(got: Any, want: Any, what: str, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    g = got.numpy() if hasattr(got, "numpy") and not hasattr(got, "detach") else got.detach().numpy()
    w = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, PyTorch's {w.shape}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)


def _run(
    x: Array, grid: Array, mode: str, padding: str, corners: bool, rng: np.random.Generator
) -> tuple[list[Any], list[Any], Any, Any]:
    """``sum(grid_sample(x, grid) * w)`` backpropagated in both libraries."""
    (tx, tg), (gx, gg) = _both(x, grid)
    ty = tF.grid_sample(tx, tg, mode=mode, padding_mode=padding, align_corners=corners)
    y = F.grid_sample(gx, gg, mode=mode, padding_mode=padding, align_corners=corners)
    w = rng.standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    (y * gradtape.tensor(w)).sum().backward()
    return [tx, tg], [gx, gg], ty, y


@pytest.mark.parametrize(("mode", "padding", "corners"), CASES)
def test_grid_sample_4d_values_and_gradients_as_pytorchs(mode: str, padding: str, corners: bool) -> None:
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 3, 5, 6))
    grid = _points(rng, (2, 4, 7, 2), 5, 6)
    (tx, tg), (gx, gg), ty, y = _run(x, grid, mode, padding, corners, rng)
    what = f"grid_sample({mode}, {padding}, align_corners={corners})"
    assert y.shape == (2, 3, 4, 7) and y.dtype == np.float64
    _close(y, ty, f"{what} values")
    _close(gx.grad, tx.grad, f"{what} d/dinput")
    _close(gg.grad, tg.grad, f"{what} d/dgrid")


@pytest.mark.parametrize(("mode", "padding", "corners"), [c for c in CASES if c[0] != "bicubic"])
def test_grid_sample_5d_values_and_gradients_as_pytorchs(mode: str, padding: str, corners: bool) -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 2, 3, 4, 5))
    grid = rng.uniform(-1.3, 1.3, (2, 2, 3, 4, 3))
    grid[0, 0, 0, :3] = [[-1, -1, -1], [1, 1, 1], [0, 0, 0]]
    (tx, tg), (gx, gg), ty, y = _run(x, grid, mode, padding, corners, rng)
    what = f"5-D grid_sample({mode}, {padding}, align_corners={corners})"
    assert y.shape == (2, 2, 2, 3, 4)
    _close(y, ty, f"{what} values")
    _close(gx.grad, tx.grad, f"{what} d/dinput")
    _close(gg.grad, tg.grad, f"{what} d/dgrid")


@pytest.mark.parametrize("mode", MODES)
def test_points_sharing_pixels_accumulate_into_the_input_gradient(mode: str) -> None:
    """Many sample points on the same spot (and on one pixel centre): the scatter-add of the
    input gradient sums them all."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 4, 4))
    grid = np.empty((2, 6, 5, 2))
    grid[:, :3] = [0.1, -0.3]  # 15 points per image on one spot between pixels
    grid[:, 3:] = [2 * 1.5 / 4 - 1, 2 * 2.5 / 4 - 1]  # 15 on the centre of pixel (2, 1)
    (tx, tg), (gx, gg), ty, y = _run(x, grid, mode, "zeros", False, rng)
    _close(y, ty, f"{mode} values")
    _close(gx.grad, tx.grad, f"{mode} d/dinput")
    _close(gg.grad, tg.grad, f"{mode} d/dgrid")
    # 30 points on one pixel centre, a unit output gradient: that pixel gets exactly 30, no other any
    (tx, tg), (gx, gg) = _both(x, np.broadcast_to(grid[:, 3:4, :1], grid.shape).copy())
    F.grid_sample(gx, gg, mode=mode, align_corners=False).sum().backward()
    assert gx.grad is not None
    want = np.zeros_like(x)
    want[:, :, 2, 1] = 30.0
    np.testing.assert_array_equal(gx.grad.numpy(), want)


@pytest.mark.parametrize("corners", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
def test_nearest_rounds_half_pixels_to_even_as_pytorch(padding: str, corners: bool) -> None:
    """Points exactly between two pixels (after PyTorch's unnormalisation) go to the even one."""
    w = 8
    x = np.arange(3.0 * w).reshape(1, 1, 3, w)
    ks = np.arange(-1, w + 1) + 0.5
    xs = 2 * ks / (w - 1) - 1 if corners else (2 * ks + 1) / w - 1
    grid = np.stack([xs, np.zeros_like(xs)], -1)[None, None]
    want = tF.grid_sample(torch.tensor(x), torch.tensor(grid), "nearest", padding, corners)
    got = F.grid_sample(gradtape.tensor(x), gradtape.tensor(grid), "nearest", padding, corners)
    _close(got, want, f"nearest ties ({padding}, align_corners={corners})", rtol=0, atol=0)


def test_infinite_and_nan_points_read_what_pytorch_reads() -> None:
    x = np.random.default_rng(13).standard_normal((1, 2, 3, 4))
    grid = np.array([[[[np.nan, 0.0], [np.inf, 0.2], [-np.inf, 0.1], [1e30, 0.0], [-1e30, 0.3], [0.5, np.nan]]]])
    for mode, padding, corners in CASES:
        want = tF.grid_sample(torch.tensor(x), torch.tensor(grid), mode, padding, corners).numpy()
        got = F.grid_sample(gradtape.tensor(x), gradtape.tensor(grid), mode, padding, corners).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=f"{mode} {padding}")


def test_float32_stays_float32_and_matches_pytorch() -> None:
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    grid = rng.uniform(-1.2, 1.2, (2, 4, 4, 2)).astype(np.float32)
    for mode, padding, corners in CASES:
        (tx, tg), (gx, gg) = _both(x, grid)
        ty = tF.grid_sample(tx, tg, mode, padding, corners)
        y = F.grid_sample(gx, gg, mode, padding, corners)
        ty.sum().backward()
        y.sum().backward()
        assert y.dtype == np.float32 and gx.grad.dtype == np.float32 and gg.grad.dtype == np.float32
        _close(y, ty, f"float32 {mode} {padding}", rtol=1e-5, atol=1e-5)
        _close(gx.grad, tx.grad, f"float32 {mode} {padding} d/dinput", rtol=1e-5, atol=1e-5)
        _close(gg.grad, tg.grad, f"float32 {mode} {padding} d/dgrid", rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("mode", "padding", "corners"), [c for c in CASES if c[1] != "border" or c[2]])
def test_gradients_of_gradients_as_pytorchs(mode: str, padding: str, corners: bool) -> None:
    """``create_graph=True``: the gradients are themselves differentiable (the second rule),
    and a penalty on them has PyTorch's gradients."""
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 2, 4, 5))
    grid = rng.uniform(-1.3, 1.3, (2, 3, 3, 2))
    w = rng.standard_normal((2, 2, 3, 3))
    (tx, tg), (gx, gg) = _both(x, grid)
    ty = tF.grid_sample(tx, tg, mode, padding, corners)
    t_dx, t_dg = torch.autograd.grad((ty * torch.tensor(w)).sum(), [tx, tg], create_graph=True)
    y = F.grid_sample(gx, gg, mode, padding, corners)
    dx, dg = autograd.grad((y * gradtape.tensor(w)).sum(), [gx, gg], create_graph=True)
    assert dx is not None and dg is not None
    _close(dx, t_dx, "first gradient (input), second rule")
    _close(dg, t_dg, "first gradient (grid), second rule")
    t_penalty = (t_dx**2).sum() + (t_dg**2).sum()
    penalty = (dx**2).sum() + (dg**2).sum()
    t_second = torch.autograd.grad(t_penalty, [tx, tg], allow_unused=True)
    second = autograd.grad(penalty, [gx, gg], allow_unused=True)
    for name, got, want in zip(("input", "grid"), second, t_second, strict=True):
        if want is None:
            assert got is None or not np.any(got.numpy()), name
            continue
        assert got is not None, f"no second-order gradient for {name}"
        _close(got, want, f"second-order gradient of {name}", rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(("mode", "padding"), [("bilinear", "reflection"), ("bicubic", "zeros"), ("bicubic", "border")])
def test_hessian_in_input_and_grid_as_pytorchs(mode: str, padding: str) -> None:
    """``gradtape.functional.hessian`` of ``sum(grid_sample(x, grid) ** 3)`` in both arguments,
    against ``torch.autograd.functional.hessian`` (every block: input-input, input-grid,
    grid-grid)."""
    rng = np.random.default_rng(22)
    x = rng.standard_normal((1, 2, 3, 3))
    grid = rng.uniform(-1.2, 1.2, (1, 2, 2, 2))

    def t_f(a: Any, g: Any) -> Any:
        return (tF.grid_sample(a, g, mode, padding, False) ** 3).sum()

    def f(a: Any, g: Any) -> Any:
        return (F.grid_sample(a, g, mode, padding, False) ** 3).sum()

    want = torch.autograd.functional.hessian(t_f, (torch.tensor(x), torch.tensor(grid)))
    got = gradtape.functional.hessian(f, (gradtape.tensor(x), gradtape.tensor(grid)))
    for i, j in itertools.product(range(2), range(2)):
        _close(got[i][j], want[i][j], f"Hessian block ({i}, {j})", rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_gradcheck(mode: str) -> None:
    """Finite differences in float64, the grid kept away from the kinks (pixel boundaries, the
    clipped border); a non-contiguous input and size-1 dims."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal((1, 2, 4, 3))
    xt = gradtape.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(2, 3)  # a non-contiguous view
    grid = (rng.integers(-3, 4, (1, 3, 1, 2)) + rng.uniform(0.2, 0.8, (1, 3, 1, 2))) / 3.5
    for padding in PADDINGS:

        def sample(a: Any, g: Any, padding: str = padding) -> Any:
            return F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=False)

        assert gradcheck(sample, [xt, grid])
        assert gradcheck(sample, [x[:, :1, :1], grid])  # a 1 x 1 input


def test_a_traced_grid_on_an_untraced_image_as_a_spatial_transformer() -> None:
    """The image needs no gradient; the grid (from theta) gets one, the image's ``.grad`` stays None."""
    rng = np.random.default_rng(17)
    image = gradtape.tensor(rng.standard_normal((2, 1, 6, 6)))
    theta = gradtape.tensor(np.tile(np.eye(2, 3), (2, 1, 1)) + 0.1 * rng.standard_normal((2, 2, 3)), requires_grad=True)
    out = F.grid_sample(image, F.affine_grid(theta, (2, 1, 6, 6), align_corners=False), align_corners=False)
    assert out.requires_grad
    out.sum().backward()
    assert image.grad is None and theta.grad is not None and theta.grad.shape == (2, 2, 3)


# ----- affine_grid -------------------------------------------------------------------------


@pytest.mark.parametrize("corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 5, 4), (2, 1, 1, 6), (2, 1, 7, 1), (2, 2, 3, 4, 5), (2, 1, 1, 2, 3)])
def test_affine_grid_values_and_theta_gradient_as_pytorchs(size: tuple[int, ...], corners: bool) -> None:
    rng = np.random.default_rng(18)
    k = len(size) - 2
    theta = rng.standard_normal((2, k, k + 1))
    (tt,), (gt,) = _both(theta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's (and gradtape's) warning for unit sizes with align_corners
        want = tF.affine_grid(tt, size, align_corners=corners)
        got = F.affine_grid(gt, size, align_corners=corners)
    assert got.shape == (size[0], *size[2:], k)
    _close(got, want, f"affine_grid{size} values")
    w = rng.standard_normal(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * gradtape.tensor(w)).sum().backward()
    _close(gt.grad, tt.grad, f"affine_grid{size} d/dtheta")


def test_affine_grid_float32() -> None:
    theta = np.random.default_rng(19).standard_normal((3, 2, 3)).astype(np.float32)
    got = F.affine_grid(gradtape.tensor(theta), (3, 2, 8, 9), align_corners=False)
    want = tF.affine_grid(torch.tensor(theta), (3, 2, 8, 9), align_corners=False)
    assert got.dtype == np.float32
    _close(got, want, "float32 affine_grid", rtol=1e-6, atol=1e-6)


def test_identity_affine_grid_samples_the_image_back() -> None:
    x = np.random.default_rng(20).standard_normal((2, 3, 5, 7))
    eye = gradtape.tensor(np.tile(np.eye(2, 3), (2, 1, 1)))
    for corners in (False, True):
        grid = F.affine_grid(eye, (2, 3, 5, 7), align_corners=corners)
        for mode in MODES:
            y = F.grid_sample(gradtape.tensor(x), grid, mode=mode, align_corners=corners)
            np.testing.assert_allclose(y.numpy(), x, atol=1e-12, err_msg=f"{mode}, align_corners={corners}")


@pytest.mark.parametrize(
    ("mode", "padding"), [("bilinear", "zeros"), ("bicubic", "border"), ("bilinear", "reflection")]
)
def test_spatial_transformer_training_loop_as_pytorchs(mode: str, padding: str) -> None:
    """A spatial transformer's core, trained in both libraries from the same start: theta
    learns to undo a known affine map of the image; the losses and thetas agree at every step."""
    rng = np.random.default_rng(21)
    image = rng.standard_normal((2, 3, 8, 8))
    true = np.array([[[0.9, -0.2, 0.1], [0.15, 1.1, -0.05]], [[1.0, 0.1, -0.1], [-0.1, 0.8, 0.2]]])
    ti = torch.tensor(image)
    target = tF.grid_sample(
        ti, tF.affine_grid(torch.tensor(true), (2, 3, 8, 8), align_corners=False), mode, padding, False
    )
    t_theta = torch.tensor(np.tile(np.eye(2, 3), (2, 1, 1)), requires_grad=True)
    g_theta = gradtape.tensor(np.tile(np.eye(2, 3), (2, 1, 1)), requires_grad=True)
    t_opt = torch.optim.SGD([t_theta], lr=0.05, momentum=0.9)
    g_opt = gradtape.optim.SGD([g_theta], lr=0.05, momentum=0.9)
    g_image, g_target = gradtape.tensor(image), gradtape.tensor(target.numpy())
    losses = []
    for step in range(15):
        t_opt.zero_grad()
        t_out = tF.grid_sample(ti, tF.affine_grid(t_theta, (2, 3, 8, 8), align_corners=False), mode, padding, False)
        t_loss = tF.mse_loss(t_out, target)
        t_loss.backward()
        t_opt.step()
        g_opt.zero_grad()
        out = F.grid_sample(g_image, F.affine_grid(g_theta, (2, 3, 8, 8), align_corners=False), mode, padding, False)
        loss = F.mse_loss(out, g_target)
        loss.backward()
        g_opt.step()
        np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-9, err_msg=f"loss at step {step}")
        _close(g_theta, t_theta, f"theta after step {step}", rtol=1e-8, atol=1e-10)
        losses.append(loss.item())
    assert losses[-1] < losses[0]


# ----- errors -----------------------------------------------------------------------------


def _t(shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
    return gradtape.tensor(np.zeros(shape, dtype))


def test_align_corners_none_warns_as_pytorch_and_means_false() -> None:
    x, grid = _t((1, 1, 3, 3)), gradtape.tensor(np.full((1, 2, 2, 2), 0.3))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        y = F.grid_sample(x, grid)
    np.testing.assert_array_equal(y.numpy(), F.grid_sample(x, grid, align_corners=False).numpy())
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(_t((1, 2, 3)), (1, 1, 3, 3))


@pytest.mark.parametrize(
    ("input_shape", "grid_shape", "message"),
    [
        (
            (2, 3, 4),
            (2, 4, 4, 2),
            r"expects a 4-D input .* got input of shape \(2, 3, 4\) and grid of shape \(2, 4, 4, 2\)",
        ),
        (
            (2, 3, 4, 4),
            (2, 4, 2),
            r"a 4-D input needs a 4-D grid, got input of shape \(2, 3, 4, 4\) and grid of shape \(2, 4, 2\)",
        ),
        (
            (2, 3, 4, 4),
            (3, 4, 4, 2),
            r"same batch size N, got input of shape \(2, 3, 4, 4\) and grid of shape \(3, 4, 4, 2\)",
        ),
        (
            (2, 3, 4, 4),
            (2, 4, 4, 3),
            r"last dim must be 2 .* got input of shape \(2, 3, 4, 4\) and grid of shape \(2, 4, 4, 3\)",
        ),
        ((2, 3, 2, 4, 4), (2, 1, 4, 4, 2), r"last dim must be 3 .* for a 5-D input"),
        ((2, 3, 0, 4), (2, 4, 4, 2), r"spatial dims must be non-empty, got input of shape \(2, 3, 0, 4\)"),
    ],
)
def test_grid_sample_shape_errors_name_the_op_and_both_shapes(
    input_shape: tuple[int, ...], grid_shape: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ShapeError, match="^grid_sample: .*" + message):
        F.grid_sample(_t(input_shape), _t(grid_shape), align_corners=False)


def test_grid_sample_argument_errors() -> None:
    x, grid = _t((1, 2, 3, 3)), _t((1, 2, 2, 2))
    with pytest.raises(
        ValueError, match=r"^grid_sample: mode must be one of 'bilinear', 'nearest', 'bicubic', got 'area'"
    ):
        F.grid_sample(x, grid, mode="area", align_corners=False)
    with pytest.raises(ValueError, match=r"^grid_sample: padding_mode must be one of 'zeros', 'border', 'reflection'"):
        F.grid_sample(x, grid, padding_mode="constant", align_corners=False)
    with pytest.raises(ValueError, match=r"^grid_sample: mode 'bicubic' samples 4-D inputs only, got input of shape"):
        F.grid_sample(_t((1, 2, 3, 3, 3)), _t((1, 2, 2, 2, 3)), mode="bicubic", align_corners=False)
    with pytest.raises(DTypeError, match=r"^grid_sample: .*float64 \(1, 2, 3, 3\) and float32 \(1, 2, 2, 2\)"):
        F.grid_sample(x, _t((1, 2, 2, 2), np.float32), align_corners=False)
    with pytest.raises(DTypeError, match=r"^grid_sample: input has dtype int64"):
        F.grid_sample(_t((1, 2, 3, 3), np.int64), grid, align_corners=False)
    with pytest.raises(TypeError, match=r"^grid_sample: grid must be a Tensor, got ndarray"):
        F.grid_sample(x, np.zeros((1, 2, 2, 2)), align_corners=False)  # type: ignore[call-overload]


def test_affine_grid_errors() -> None:
    theta = _t((2, 2, 3))
    with pytest.raises(
        ShapeError,
        match=r"^affine_grid: size \(2, 3, 4, 5\) needs theta of shape \(N, 2, 3\) = \(2, 2, 3\).*"
        r"got theta of shape \(2, 3, 4\)",
    ):
        F.affine_grid(_t((2, 3, 4)), (2, 3, 4, 5), align_corners=False)
    with pytest.raises(ShapeError, match=r"^affine_grid: size \(3, 3, 4, 5\) needs theta of shape .* \(3, 2, 3\)"):
        F.affine_grid(theta, (3, 3, 4, 5), align_corners=False)
    with pytest.raises(ShapeError, match=r"^affine_grid: size \(2, 1, 2, 4, 5\) needs theta of shape \(N, 3, 4\)"):
        F.affine_grid(theta, (2, 1, 2, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match=r"^affine_grid: size must be \(N, C, H, W\) .* got \(2, 4, 5\)"):
        F.affine_grid(theta, (2, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match=r"^affine_grid: every size must be positive, got \(2, 3, 0, 5\)"):
        F.affine_grid(theta, (2, 3, 0, 5), align_corners=False)
    with pytest.raises(TypeError, match=r"^affine_grid: size must be a tuple of 4 or 5 ints"):
        F.affine_grid(theta, (2, 3, 4.0, 5), align_corners=False)
    with pytest.raises(DTypeError, match=r"^affine_grid: theta has dtype int64"):
        F.affine_grid(_t((2, 2, 3), np.int64), (2, 3, 4, 5), align_corners=False)
