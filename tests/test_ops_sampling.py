"""``torch.multinomial`` as nanoGPT's sampling loop uses it: draws follow the weights, repeat
from a seeded device, respect ``replacement``, and bad weights are refused naming the op."""

from __future__ import annotations

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, ShapeError, ops


def test_draws_follow_the_weights_per_row() -> None:
    w = np.array([[1.0, 3.0, 0.0, 6.0], [5.0, 5.0, 0.0, 0.0]])
    s = Cpu(seed=0).tensor(w).multinomial(20000, replacement=True)
    assert s.shape == (2, 20000) and s.dtype == np.int64
    freq = np.stack([np.bincount(s.numpy()[i], minlength=4) / 20000 for i in range(2)])
    np.testing.assert_allclose(freq, w / w.sum(axis=1, keepdims=True), atol=0.015)


def test_nanogpt_sampling_step_is_reproducible_from_the_seed() -> None:
    logits = np.random.default_rng(0).standard_normal((3, 50)).astype(np.float32)
    draws = []
    for _ in range(2):
        dev = Cpu(seed=7)
        probs = dev.tensor(logits).softmax(axis=-1)
        draws.append(ops.multinomial(probs, num_samples=1).numpy())
    assert draws[0].shape == (3, 1)
    np.testing.assert_array_equal(draws[0], draws[1])


def test_without_replacement_each_category_once() -> None:
    s = Cpu(seed=1).tensor(np.array([0.2, 0.0, 0.5, 0.3])).multinomial(3)
    assert sorted(s.numpy().tolist()) == [0, 2, 3]


def test_bad_weights_are_refused_naming_multinomial() -> None:
    dev = Cpu(seed=0)
    with pytest.raises(ValueError, match=r"multinomial: cannot draw 3 samples without replacement from a row with 2"):
        dev.tensor(np.array([1.0, 0.0, 2.0])).multinomial(3)
    with pytest.raises(ValueError, match="element < 0"):
        dev.tensor(np.array([1.0, -1.0])).multinomial(1)
    with pytest.raises(ValueError, match="sum of probabilities <= 0"):
        dev.tensor(np.zeros(3)).multinomial(1, replacement=True)
    with pytest.raises(ShapeError, match=r"multinomial: input must be 1-D or 2-D weights, got shape \(1, 1, 2\)"):
        dev.tensor(np.ones((1, 1, 2))).multinomial(1)
    with pytest.raises(DTypeError, match="multinomial: input must be float weights"):
        dev.tensor(np.array([1, 2])).multinomial(1)
    with pytest.raises(ValueError, match="num_samples must be a positive int"):
        dev.tensor(np.ones(3)).multinomial(0)
