"""Seed 001, the Mamba-model crate's record-style tape, on gradtape's one tape.

The seed's ``backward(loss_grad, tensors)`` seeds the pass with the loss gradient of the last
output (shape checked) and returns ``ModelError::numerical_instability`` when a gradient is NaN
or Inf. In gradtape: ``out.backward(loss_grad)`` (a tensor or array of ``out``'s shape) and
anomaly detection (``detect_anomaly``), which raises ``NumericalInstabilityError`` naming the op
and the line that called it. (The crate's selective-scan op is issue 16's.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, NumericalInstabilityError, ShapeError, Tensor
from gradtape import tape as tp
from gradtape.autograd import detect_anomaly, is_anomaly_enabled, set_detect_anomaly

dev = Cpu(seed=0)
HERE = __file__


@pytest.fixture(autouse=True)
def _anomaly_off() -> Any:
    assert not is_anomaly_enabled()
    yield
    set_detect_anomaly(False)


def test_seeded_backward_like_the_crate() -> None:
    """record_mul then record_silu, backward from the silu output seeded with loss_grad."""
    a, b = np.array([1.0, -2.0, 0.5], np.float32), np.array([3.0, 0.5, -1.0], np.float32)
    loss_grad = np.array([1.0, 2.0, -1.0], np.float32)
    at, bt = dev.tensor(a), dev.tensor(b)
    out = (at.leaky_trace() * bt.leaky_trace()).silu()
    grads = out.backward(loss_grad)
    z = a * b
    s = 1 / (1 + np.exp(-z))
    dz = loss_grad * (s + z * s * (1 - s))
    np.testing.assert_allclose(grads.get(at).numpy(), dz * b, rtol=1e-6)
    np.testing.assert_allclose(grads.get(bt).numpy(), dz * a, rtol=1e-6)
    out2 = (at.leaky_trace() * 2.0).silu()
    bad = r"backward: gradient has shape \(2,\), the tensor it seeds has shape \(3,\)"
    with pytest.raises(ShapeError, match=bad):
        out2.backward(np.ones(2, np.float32))


def test_seed_numerical_instability_d_sqrt_at_zero() -> None:
    """d sqrt(x)/dx at x = 0 is inf: the error names sqrt and the line that called it."""
    x = dev.tensor(np.array([0.0, 4.0]))
    with detect_anomaly():
        y = x.leaky_trace().sqrt()  # the line named in the error
        line = y  # noqa: F841
        named = r"backward of op 'sqrt' \(its forward called at .*test_seed_mamba.py:\d+"
        with pytest.raises(NumericalInstabilityError, match=named) as e:
            y.sum().backward()
    assert "inf" in str(e.value)
    assert isinstance(e.value, FloatingPointError)


def test_forward_names_the_op_that_first_produced_a_non_finite_value() -> None:
    x = dev.tensor(np.array([-1.0, 2.0]))
    with detect_anomaly():
        with np.errstate(invalid="ignore"):
            h = x.leaky_trace().log()  # nan at index 0
        with pytest.raises(
            NumericalInstabilityError,
            match=r"forward: operand 0 .* of op 'mul' called at .*test_seed_mamba.py:\d+ .* holds non-finite values "
            r"\(nan at index \(0,\)\); it was produced by op 'log' called at .*test_seed_mamba.py:\d+",
        ):
            h * 2.0


def test_the_loss_itself_is_checked() -> None:
    x = dev.tensor(np.array([1.0, 2.0]))
    with detect_anomaly():
        with np.errstate(divide="ignore"):
            loss = (x.leaky_trace() * 0.0).sum().log()  # the last op makes -inf
        with pytest.raises(NumericalInstabilityError, match=r"the tensor backward starts from .* is non-finite"):
            loss.backward()


def test_decorator_and_switch_and_off_by_default() -> None:
    @detect_anomaly()
    def f(t: Tensor[Any, Any]) -> Any:
        return t.sqrt().sum().backward()

    assert tp.direct
    with pytest.raises(NumericalInstabilityError):
        f(dev.tensor(np.array([0.0])).leaky_trace())
    assert not is_anomaly_enabled() and tp.direct
    prev = set_detect_anomaly(True)
    assert prev is False and is_anomaly_enabled() and not tp.direct
    set_detect_anomaly(False)
    z = dev.tensor(np.array([0.0]))
    g = z.leaky_trace().sqrt().sum().backward()  # off: inf, no error
    assert np.isinf(g.get(z).numpy()).all()
    with pytest.raises(TypeError, match=r"set_detect_anomaly: mode must be a bool"):
        set_detect_anomaly(1)


def test_finite_passes_are_unchanged_under_anomaly_mode() -> None:
    x = dev.tensor(np.array([1.0, 2.0, 3.0]))
    with detect_anomaly():
        g1 = (x.leaky_trace().exp() * 2.0).sum().backward().get(x).numpy()
    g2 = (x.leaky_trace().exp() * 2.0).sum().backward().get(x).numpy()
    np.testing.assert_array_equal(g1, g2)
