"""The main job: ``python -m gradtape.examples.digits`` trains to its stated accuracy."""

from __future__ import annotations

import pytest

from gradtape.examples import digits


def test_digits_default_run_reaches_95_percent(capsys: pytest.CaptureFixture[str]) -> None:
    """README's first command, with its defaults, prints a test accuracy of at least 95%."""
    digits.main([])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("test accuracy: ")
    assert float(last.removeprefix("test accuracy: ").rstrip("%")) >= 95.0
    assert out.count("train loss") == 30


def test_digits_training_loss_falls() -> None:
    """Training lowers the loss: the last epoch's mean loss is below a quarter of the first's."""
    _, acc, losses = digits.train(epochs=5, verbose=False)
    assert losses[-1] < losses[0] / 4
    assert acc > 0.9
