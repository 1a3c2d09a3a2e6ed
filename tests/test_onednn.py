"""oneDNN's convolutions (``gradtape.devices.kernels.onednn``, the optional ``onednn`` extra):
the same numbers as PyTorch in float64 for every geometry the conv tests cover, used by the
ops above the size bound, off by switch, and never in a forked child."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, nn
from gradtape.devices.kernels import conv as kconv
from gradtape.devices.kernels import onednn
from gradtape.ops import conv2d

pytestmark = pytest.mark.skipif(not onednn.available(), reason=onednn.info())

Array = np.ndarray[Any, Any]
_RNG = np.random.default_rng(7)

# (x, w, stride, ((top, bottom), (left, right)), dilation, groups): plain, strided, dilated,
# asymmetric padding, grouped, depthwise, 1-wide (conv1d's height-1 image), one sample
GEOMETRIES = [
    ((2, 3, 8, 8), (5, 3, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 4, 9, 7), (6, 2, 3, 2), (2, 1), ((1, 1), (1, 1)), (1, 2), 2),
    ((3, 6, 7, 7), (6, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 6),
    ((2, 3, 10, 9), (4, 3, 4, 3), (1, 1), ((3, 3), (2, 2)), (2, 2), 1),
    ((2, 4, 11, 12), (8, 4, 5, 5), (3, 3), ((2, 2), (0, 0)), (1, 1), 1),
    ((4, 8, 16, 16), (16, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 5, 6, 7), (3, 5, 2, 3), (1, 2), ((0, 2), (1, 0)), (1, 1), 1),
    ((3, 4, 1, 12), (6, 4, 1, 3), (1, 2), ((0, 0), (1, 1)), (1, 1), 1),
    ((1, 16, 32, 32), (32, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
]


def _out_hw(xs: tuple[int, ...], ws: tuple[int, ...], s: Any, pads: Any, d: Any) -> tuple[int, int]:
    return (
        (xs[2] + pads[0][0] + pads[0][1] - d[0] * (ws[2] - 1) - 1) // s[0] + 1,
        (xs[3] + pads[1][0] + pads[1][1] - d[1] * (ws[3] - 1) - 1) // s[1] + 1,
    )


def _torch_reference(x: Array, w: Array, b: Array, gy: Array, s: Any, pads: Any, d: Any, g: int) -> list[Array]:
    """PyTorch in float64: ``[y, gx, gw, gb]`` of ``sum(conv(pad(x), w, b) * gy)``."""
    torch = pytest.importorskip("torch")
    tx, tw, tb = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (x, w, b))
    xp = torch.nn.functional.pad(tx, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    ty = torch.nn.functional.conv2d(xp, tw, tb, stride=s, dilation=d, groups=g)
    ty.backward(torch.tensor(gy.astype(np.float64)))
    assert tx.grad is not None and tw.grad is not None and tb.grad is not None
    return [ty.detach().numpy(), tx.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()]


def _close(got: Array, want: Array, what: str) -> None:
    """float32 against float64: within a few float32 roundings of the largest term."""
    scale = float(np.abs(want).max()) or 1.0
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    assert got.dtype == np.float32 and got.shape == want.shape, (what, got.dtype, got.shape, want.shape)
    assert err < 2e-6, f"{what}: relative error {err:.2e}"


@pytest.mark.parametrize(("xs", "ws", "s", "pads", "d", "g"), GEOMETRIES)
def test_kernels_equal_torch_float64(xs: Any, ws: Any, s: Any, pads: Any, d: Any, g: int) -> None:
    """The forward (with and without bias), input and weight gradients of the forced oneDNN path
    equal PyTorch's float64 conv2d on the same float32 numbers."""
    x = _RNG.standard_normal(xs).astype(np.float32)
    w = _RNG.standard_normal(ws).astype(np.float32)
    b = _RNG.standard_normal(ws[0]).astype(np.float32)
    out_hw = _out_hw(xs, ws, s, pads, d)
    gy = _RNG.standard_normal((xs[0], ws[0], *out_hw)).astype(np.float32)
    y, gx, gw, gb = _torch_reference(x, w, b, gy, s, pads, d, g)
    got, cols = kconv.forward(x, w, s, pads, d, g, out_hw, "onednn", keep_cols=True, bias=b)
    assert cols is None
    _close(got, y, "forward")
    nobias, _ = kconv.forward(x, w, s, pads, d, g, out_hw, "onednn")
    _close(nobias, y - b.reshape(1, -1, 1, 1), "forward without bias")
    _close(kconv.backward_input(gy, w, xs, s, pads, d, g, "onednn"), gx, "input gradient")
    _close(kconv.backward_weight(x, gy, ws, s, pads, d, g, "onednn"), gw, "weight gradient")
    gx2, gw2 = kconv.backward(gy, x, w, s, pads, d, g, impl="onednn")
    assert gx2 is not None and gw2 is not None
    _close(gx2, gx, "backward's input gradient")
    _close(gw2, gw, "backward's weight gradient")
    _close(kconv.bias_grad(gy), gb, "bias gradient")


def test_strided_inputs_are_read_as_they_are() -> None:
    """Non-contiguous arrays (a transposed view, a Fortran-ordered copy) give the contiguous
    array's results."""
    x = np.ascontiguousarray(_RNG.standard_normal((8, 8, 3, 2)).astype(np.float32).transpose(3, 2, 0, 1))
    w = _RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    view = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    args = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1, (8, 8))
    ref, _ = kconv.forward(x, w, *args, impl="onednn")
    for other in (view, np.asfortranarray(x)):
        assert not other.flags.c_contiguous
        np.testing.assert_array_equal(kconv.forward(other, np.asfortranarray(w), *args, impl="onednn")[0], ref)


def test_auto_uses_onednn_for_float32_above_the_bound_only() -> None:
    """``auto`` plans oneDNN for a float32 conv of at least ONEDNN_MIN_MACS multiply-adds, not
    for a smaller one nor for float64."""
    onednn._PLANS.clear()
    args = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1, (16, 16))
    big_x, big_w = np.ones((4, 16, 16, 16), np.float32), np.ones((32, 16, 3, 3), np.float32)
    assert 4 * 32 * 16 * 16 * 16 * 9 >= kconv.ONEDNN_MIN_MACS
    kconv.forward(big_x, big_w, *args)
    assert [k[:2] for k in onednn._PLANS] == [(big_x.shape, big_w.shape)]
    kconv.forward(big_x.astype(np.float64), big_w.astype(np.float64), *args)
    kconv.forward(big_x[:1, :2], big_w[:2, :2], *args)
    assert len(onednn._PLANS) == 1


def test_a_conv_model_trains_as_torch_does() -> None:
    """Two float32 conv layers (above the size bound) through nn and the tape: loss and every
    parameter's gradient equal PyTorch's float64 on the same weights."""
    torch = pytest.importorskip("torch")
    dev = Cpu(seed=0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, dev=dev), nn.ReLU(), nn.Conv2d(16, 16, 3, stride=2, padding=1, dev=dev)
    )
    ref = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3, stride=2, padding=1)
    ).double()
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
            q.copy_(torch.tensor(p.numpy().astype(np.float64)))
    onednn._PLANS.clear()
    x = _RNG.standard_normal((8, 3, 24, 24)).astype(np.float32)
    loss = (model(dev.from_numpy(x)) ** 2).mean()
    loss.backward()
    assert len(onednn._PLANS) == 2  # both layers ran on oneDNN
    tloss = (ref(torch.tensor(x.astype(np.float64))) ** 2).mean()
    tloss.backward()
    assert abs(float(loss.item()) - float(tloss.item())) <= 2e-6 * abs(float(tloss.item()))
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
        assert p.grad is not None and q.grad is not None, name
        _close(p.grad.numpy(), q.grad.numpy(), name)


def test_forcing_onednn_where_it_cannot_run_names_the_op() -> None:
    """float64 has no oneDNN convolution: ``impl="onednn"`` refuses, naming conv2d and the shapes."""
    x, w = np.ones((1, 2, 5, 5)), np.ones((3, 2, 3, 3))
    with pytest.raises(onednn.OneDNNError, match=r"conv2d: oneDNN cannot run x \(1, 2, 5, 5\), w \(3, 2, 3, 3\)"):
        kconv.forward(x, w, (1, 1), ((0, 0), (0, 0)), (1, 1), 1, (3, 3), "onednn")


def test_plan_cache_is_bounded() -> None:
    """At most CACHE_SIZE plans stay; the least recently used go first."""
    onednn._PLANS.clear()
    for k in range(onednn.CACHE_SIZE + 3):
        assert onednn.conv2d_plan((1, 1, 4, 4 + k), (1, 1, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1) is not None
    assert len(onednn._PLANS) == onednn.CACHE_SIZE
    assert next(iter(onednn._PLANS))[0] == (1, 1, 4, 7)


def _child(queue: Any) -> None:
    x = np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6) / 100
    w = np.ones((32, 3, 3, 3), np.float32) / 10
    out = conv2d(Cpu().from_numpy(x), Cpu().from_numpy(w), padding=1).numpy()
    queue.put((onednn.available(), out))


def test_a_forked_child_falls_back_to_numba() -> None:
    """GNU OpenMP's pool does not survive fork: a forked child (a data-loader worker) computes
    its convolutions with the numba kernels, and gets the same numbers."""
    assert onednn.available()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue,))
    proc.start()
    in_child, out = queue.get(timeout=120)
    proc.join(timeout=60)
    assert in_child is False
    x = np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6) / 100
    w = np.ones((32, 3, 3, 3), np.float32) / 10
    ref, _ = kconv.forward(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1, (6, 6), "onednn")
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


def test_switched_off_by_environment() -> None:
    """``GRADTAPE_ONEDNN=0``: not available, and info() says why."""
    code = "from gradtape.devices.kernels import onednn as o; print(o.available(), o.info())"
    env = {**os.environ, "GRADTAPE_ONEDNN": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False oneDNN: turned off (GRADTAPE_ONEDNN=0)"


def test_info_names_version_and_isa() -> None:
    """The benchmarks' header line: version 3.x, the instruction set, the library's path."""
    line = onednn.info()
    assert line.startswith("oneDNN 3.") and "libdnnl" in line, line
