"""PyTorch's creation functions on the device: ``randint``, ``arange``, ``*_like``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape.errors import DTypeError

torch: Any = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "args",
    [(5,), (2, 9), (1, 2, 0.25), (0.5, 3.0), (10, 0, -3), (0, 1, 0.1)],
)
def test_arange_matches_torch(args: tuple[float, ...]) -> None:
    got = gt.Cpu().arange(*args)  # type: ignore[arg-type]
    want = torch.arange(*args)
    assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch."))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_arange_dtype_and_errors() -> None:
    dev = gt.Cpu()
    assert dev.arange(4, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="arange: step"):
        dev.arange(0, 3, 0)
    with pytest.raises(DTypeError, match="arange"):
        dev.arange(3, dtype=np.complex64)


def test_randint_range_dtype_and_seed() -> None:
    a = gt.Cpu(seed=3).randint(1, 1000, (4, 50))
    b = gt.Cpu(seed=3).randint(1, 1000, (4, 50))
    assert a.dtype == np.int64 and a.shape == (4, 50)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.numpy().min() >= 1 and a.numpy().max() < 1000
    with pytest.raises(ValueError, match="randint: high"):
        gt.Cpu().randint(3, 3, (2,))
    with pytest.raises(TypeError, match="randint: low"):
        gt.Cpu().randint(0.5, 3, (2,))  # type: ignore[arg-type]


def test_like_functions_follow_the_tensor() -> None:
    dev = gt.Cpu(seed=0)
    x = dev.tensor(np.ones((3, 2), np.float64), requires_grad=True)
    for f in (dev.zeros_like, dev.ones_like, dev.randn_like, dev.rand_like):
        y = f(x)
        assert y.shape == (3, 2) and y.dtype == np.float64 and not y.requires_grad
    assert dev.zeros_like(x).numpy().sum() == 0 and dev.ones_like(x).numpy().sum() == 6
    with pytest.raises(DTypeError, match="randn_like"):
        dev.randn_like(dev.tensor(np.arange(3)))


def test_full_matches_torch() -> None:
    dev = gt.Cpu()
    got = dev.full((2, 3), 0.9)
    want = torch.full((2, 3), 0.9)
    assert got.dtype == np.float32 and got.shape == (2, 3)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert dev.full((2,), 1, dtype=np.int64).dtype == np.int64
    with pytest.raises(TypeError, match="full: fill_value"):
        dev.full((2,), "a")  # type: ignore[arg-type]
    with pytest.raises(DTypeError, match="full"):
        dev.full((2,), 1.0, dtype=np.complex64)
