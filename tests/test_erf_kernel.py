"""The float32 ``erf``/``erfc`` kernels (Cephes' single-precision approximations in float64
arithmetic, inlined and vectorized) and exact GELU's float32 forward and backward built on
them: accuracy against float64 ``math.erf``/``math.erfc`` and PyTorch's float64 GELU over the
whole float32 range, special values, and that the loops vectorize (no libm call left)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import pytest
import torch

from gradtape import Cpu, ops
from gradtape.devices.kernels import activations as ka
from gradtape.devices.kernels._jit import _options
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD

Array = np.ndarray[Any, Any]

TINY = float(np.finfo(np.float32).tiny)


def _sweep() -> Array:
    """float32 inputs: a dense grid over [-10, 10] (step 1e-5), both tails to where erfc
    underflows and beyond, tiny and subnormal magnitudes, and +-0, +-inf, NaN (last five)."""
    grid = np.linspace(-10.0, 10.0, 2_000_001)
    tails = np.concatenate([np.linspace(9.0, 11.0, 20_001), np.geomspace(10.0, 3e38, 2000)])
    small = np.geomspace(1e-45, 1.0, 5000)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    return np.concatenate([grid, tails, -tails, small, -small, special]).astype(np.float32)


def _ulps(got: Array, want: Array) -> Array:
    """``|got - want|`` in float32 ulps of ``want`` (subnormal ulps below float32's tiny)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    diff: Array = np.abs(got.astype(np.float64) - want) / spacing
    return diff


@pytest.mark.parametrize(("complement", "ref"), [(True, math.erfc), (False, math.erf)])
def test_float32_erf_and_erfc_are_within_about_one_ulp(complement: bool, ref: Callable[[float], float]) -> None:
    """Max error against float64 libm over the sweep: at most 1.1 float32 ulp (measured 1.003
    for erfc, 0.57 for erf) and 1.5e-7 relative where the result is a normal float32 (measured
    8.9e-8 and 6e-8); the subnormal tail of erfc (x in about [9.2, 10.06]) is within 1.1
    subnormal ulps, 0 beyond. Cephes' float32 evaluation errs by about 7e-7 near |x| = 1."""
    x = _sweep()
    got = ka.erf(x, complement=complement)
    assert got.dtype == np.float32 and got.shape == x.shape
    want = np.array([ref(float(v)) for v in x[:-1]] + [math.nan])
    finite = np.isfinite(x)
    assert _ulps(got[finite], want[finite]).max() <= 1.1
    normal = finite & (np.abs(want) >= TINY)
    rel = np.abs(got[normal] / want[normal] - 1.0)
    assert rel.max() <= 1.5e-7
    if complement:
        assert np.all(got[(x > 0) & (x < 9.0)] > 0)  # no early underflow
        assert np.all(got[x >= 10.1] == 0.0) and np.all(got[x <= -4.0] == 2.0)
        np.testing.assert_array_equal(got[-5:-1], [1.0, 1.0, 0.0, 2.0])
    else:
        assert np.all(got[x >= 4.0] == 1.0) and np.all(got[x <= -4.0] == -1.0)
        np.testing.assert_array_equal(got[-5:-1], [0.0, 0.0, 1.0, -1.0])
        assert np.signbit(got[-4]) and not np.signbit(got[-5])  # erf(-0) = -0
        sub = (np.abs(x) < TINY) & (x != 0)  # subnormal x: erf(x) = 2 x / sqrt(pi), rounded
        assert sub.any() and _ulps(got[sub], want[sub]).max() <= 1.0
    assert np.isnan(got[-1])


def test_float32_erf_parallel_kernels_equal_serial_ones_and_float64_keeps_libm() -> None:
    """Arrays from the parallel threshold on run the prange kernels, with the same values;
    float64 inputs still give libm's values bit for bit."""
    x = np.random.default_rng(0).uniform(-12, 12, PARALLEL_THRESHOLD + 3).astype(np.float32)
    for comp in (False, True):
        serial = np.empty_like(x)
        ka._erf32_serial(serial, x, comp)
        np.testing.assert_array_equal(ka.erf(x, complement=comp), serial)
    y, cdf = ka.gelu(x)
    ys, cs = np.empty_like(x), np.empty_like(x)
    ka._gelu_forward_f32_serial(ys, cs, x)
    np.testing.assert_array_equal(y, ys)
    np.testing.assert_array_equal(cdf, cs)
    g = np.random.default_rng(1).standard_normal(x.size).astype(np.float32)
    a, b = np.zeros_like(x), np.zeros_like(x)
    ka.gelu_backward(a, x, cdf, g)
    ka._gelu_backward_f32_serial(b, x, cdf, g)
    np.testing.assert_array_equal(a, b)
    x64 = np.linspace(-7, 7, 1001)
    np.testing.assert_array_equal(ka.erf(x64, complement=True), [math.erfc(v) for v in x64])
    np.testing.assert_array_equal(ka.erf(x64), [math.erf(v) for v in x64])


def test_float32_gelu_values_and_gradients_match_torch_float64() -> None:
    """``ops.gelu`` on float32 (forward and backward through the tape) against PyTorch's GELU in
    float64 from the same float32 inputs, and against ``x Phi(x)`` from ``math.erfc``:
    outputs within 1 ulp of the latter (they are rounded once from float64), gradients within
    1.5 ulp of the gradient's scale ``|g| (|Phi| + |x phi|)`` (the derivative changes sign
    near x = -0.75, where no relative bound holds). PyTorch computes ``1 + erf(x / sqrt(2))``,
    which cancels below x = -7 (0 from about -8.3 on, where ours stays accurate): against it,
    2 ulp plus an absolute 1e-14."""
    rng = np.random.default_rng(2)
    x = np.concatenate([np.linspace(-12, 12, 48001), rng.standard_normal(16000) * 3]).astype(np.float32)
    x = np.concatenate([x, np.array([0.0, -0.0, 1e-30, -1e-30, -20.0, 20.0, 1e30, -1e30], np.float32)])
    g = rng.standard_normal(x.size).astype(np.float32)
    dev = Cpu(seed=0)
    t = dev.tensor(x, requires_grad=True)
    y = ops.gelu(t)
    assert y.dtype == np.float32
    (y * dev.tensor(g)).sum().backward()
    assert t.grad is not None and t.grad.dtype == np.float32
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    ty = torch.nn.functional.gelu(tx)
    ty.backward(torch.from_numpy(g.astype(np.float64)))
    x64 = x.astype(np.float64)
    cdf = 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x64])
    phi = np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    assert _ulps(y.numpy(), x64 * cdf).max() <= 1.0
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=2 * 2.0**-23, atol=1e-14)
    assert tx.grad is not None
    scale = np.abs(g) * (cdf + np.abs(x64 * phi))
    bound = 1.5 * np.spacing(scale.astype(np.float32)).astype(np.float64)
    got_g = t.grad.numpy().astype(np.float64)
    assert np.all(np.abs(got_g - g * (cdf + x64 * phi)) <= bound)
    assert np.all(np.abs(got_g - tx.grad.numpy()) <= 2 * bound + 1e-14)


def test_float32_gelu_special_values() -> None:
    """+inf passes through, -inf gives NaN (``-inf * Phi(-inf) = -inf * 0``, as before and as
    PyTorch), NaN propagates; the gradient is 1 far right, 0 far left, NaN at NaN."""
    x = np.array([np.inf, -np.inf, np.nan, 40.0, -40.0, 0.0], np.float32)
    y, cdf = ka.gelu(x)
    want = torch.nn.functional.gelu(torch.from_numpy(x.astype(np.float64))).numpy()
    np.testing.assert_array_equal(y, want.astype(np.float32))
    np.testing.assert_array_equal(cdf[[0, 1, 3, 4, 5]], [1.0, 0.0, 1.0, 0.0, 0.5])
    out = np.zeros_like(x)
    ka.gelu_backward(out, x, cdf, np.ones_like(x))
    assert np.isnan(out[2]) and out[3] == 1.0 and out[4] == 0.0 and out[5] == 0.5


def _vector_ops(kernel: Callable[..., None], fastmath: frozenset[str] | None, *args: Any) -> set[str]:
    """The vector arithmetic (``fmul <4 x double>``, ...) in the optimized LLVM IR of ``kernel``
    compiled serially with gradtape's options (afresh: numba does not inspect cached code) and
    called on ``args``, plus ``"call erf"`` if a libm erf/erfc is still called."""
    fresh: Any = numba.njit(cache=False, **_options(False, fastmath))(kernel)
    fresh(*args)
    text = "\n".join(fresh.inspect_llvm().values())
    found = set(re.findall(r"f(?:mul|add|sub)[a-z ]* <\d+ x double>", text))
    found = {re.sub(r"f(mul|add|sub)[a-z ]* ", r"f\1 ", f) for f in found}
    if re.search(r"call [^\n]*@\w*erfc?f?\b", text):
        found.add("call erf")
    return found


@pytest.mark.parametrize("name", ["_erf32", "_gelu_forward_f32", "_gelu_backward_f32"])
def test_float32_kernels_vectorize(name: str) -> None:
    """The float32 kernels' loops compile to vector arithmetic (``fmul <N x double>``, N >= 2:
    4 or 8 on AVX2) with no libm ``erf``/``erfc`` call. The libm kernel (float64's), compiled
    for float32 as it ran before, shows the call and no vector arithmetic."""
    x = np.linspace(-5, 5, 64, dtype=np.float32)
    out, cdf = np.zeros_like(x), np.full_like(x, 0.5)
    args: dict[str, tuple[Any, ...]] = {
        "_erf32": (out, x, True),
        "_gelu_forward_f32": (out, cdf, x),
        "_gelu_backward_f32": (out, x, cdf, x),
    }
    found = _vector_ops(getattr(ka, name), ka.CONTRACT, *args[name])
    widths = {int(m) for f in found for m in re.findall(r"<(\d+) x", f) if f.startswith("fmul")}
    assert widths and min(widths) >= 2, found
    assert "call erf" not in found
    assert _vector_ops(ka._erf, None, np.empty_like(x), x, True) == {"call erf"}
