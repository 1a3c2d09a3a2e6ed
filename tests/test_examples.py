"""The main job, ``python -m gradtape.examples.digits``: it trains to its stated accuracy,
writes its checkpoint and curves, and rejects bad flags with a clear message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gradtape import Cpu, ShapeError, nn
from gradtape.examples import digits


def _final_accuracy(out: str) -> float:
    last = out.strip().splitlines()[-1]
    assert last.startswith("test accuracy: "), last
    return float(last.removeprefix("test accuracy: ").rstrip("%"))


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in a temporary directory (the default checkpoint is written to the cwd)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_default_run_reaches_96_percent_and_saves_a_checkpoint(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """README's first command with its defaults (MLP, SGD momentum, 30 epochs): a line per
    epoch, the checkpoint in the cwd, and a final test accuracy of at least 96%."""
    digits.main(["--no-progress"])
    out = capsys.readouterr().out
    assert _final_accuracy(out) >= 96.0
    assert out.count("train loss") == 30
    assert "saved checkpoint to digits-mlp.safetensors" in out
    assert (in_tmp / "digits-mlp.safetensors").stat().st_size > 9610 * 4


def test_cnn_reaches_97_percent(capsys: pytest.CaptureFixture[str]) -> None:
    """``--model cnn`` at its defaults (SGD momentum, 20 epochs) reaches at least 97%."""
    digits.main(["--model", "cnn", "--no-save", "--no-progress"])
    out = capsys.readouterr().out
    assert _final_accuracy(out) >= 97.0
    assert out.count("train loss") == 20


def test_checkpoint_round_trip_reproduces_the_accuracy(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The file ``--out`` names loads into a fresh model, which then scores exactly what the
    run printed (and a model of another shape is refused with the key and both shapes)."""
    digits.main(["--epochs", "3", "--hidden", "32", "--out", "ck.safetensors", "--no-progress"])
    printed = _final_accuracy(capsys.readouterr().out)
    fresh = digits.MLP(Cpu(seed=123), hidden=32)
    nn.load(fresh, in_tmp / "ck.safetensors")
    _, _, x_te, y_te = digits.load_digits_split(0)
    _, acc = digits.evaluate(fresh, Cpu(), x_te, y_te)
    assert round(acc * 100, 2) == printed
    with pytest.raises(ShapeError, match=r"fc1\.weight.*\(32, 64\)"):
        nn.load(digits.MLP(Cpu(), hidden=16), in_tmp / "ck.safetensors")


def test_plot_writes_a_png(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--plot FILE`` writes a PNG image of the curves (checked by its signature and size)."""
    digits.main(["--epochs", "2", "--no-save", "--plot", "curves.png", "--no-progress"])
    assert "saved curves to curves.png" in capsys.readouterr().out
    data = (in_tmp / "curves.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000  # two axes with curves, not an empty canvas


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "rmsprop"])
def test_other_optimizers_train(optimizer: str) -> None:
    """Each ``--optimizer`` trains: after 5 epochs at its default lr the loss has fallen
    below a fifth of the first epoch's and the accuracy is above 90%."""
    _, hist = digits.train("mlp", optimizer, epochs=5, verbose=False, progress=False)
    assert hist.train_loss[-1] < hist.train_loss[0] / 5
    assert hist.test_acc[-1] > 0.9


def test_optimizer_flag_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """``--optimizer adam`` reaches the optimizer: 5 epochs at its default lr (0.003) score
    above 93% on the test set."""
    digits.main(["--optimizer", "adam", "--epochs", "5", "--no-save", "--no-progress"])
    out = capsys.readouterr().out
    assert out.count("train loss") == 5
    assert _final_accuracy(out) > 93.0


def test_training_is_reproducible_for_a_seed() -> None:
    """Same seed, same curves (init and batch order come from the seed); another seed gives
    another run, scored on the same fixed test split (seed 0's, whatever the run's seed)."""
    split, split0 = digits.load_digits_split(), digits.load_digits_split(0)
    assert all(np.array_equal(u, v) for u, v in zip(split, split0, strict=True))
    a = digits.train(epochs=2, verbose=False, progress=False)[1]
    b = digits.train(epochs=2, verbose=False, progress=False)[1]
    c = digits.train(epochs=2, seed=1, verbose=False, progress=False)[1]
    assert a.train_loss == b.train_loss and a.test_acc == b.test_acc
    assert a.train_loss != c.train_loss


def test_training_loss_falls_and_mlp_output_shape() -> None:
    """Training lowers the loss (last epoch below a quarter of the first) and the model maps
    ``(B, 64)`` images to ``(B, 10)`` logits."""
    model, hist = digits.train(epochs=5, verbose=False, progress=False)
    assert hist.train_loss[-1] < hist.train_loss[0] / 4
    assert hist.test_acc[-1] > 0.9
    logits = model(Cpu().tensor(np.zeros((3, 64), np.float32)))
    assert logits.shape == (3, 10)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "rnn"], "argument --model: invalid choice: 'rnn'"),
        (["--optimizer", "lbfgs"], "argument --optimizer: invalid choice: 'lbfgs'"),
        (["--epochs", "0"], "argument --epochs: must be >= 1, got 0"),
        (["--batch-size", "-3"], "argument --batch-size: must be >= 1, got -3"),
        (["--lr", "-0.1"], "argument --lr: must be a finite number >= 0, got -0.1"),
        (["--seed", "-1"], "argument --seed: must be >= 0, got -1"),
        (["--out", "x.safetensors", "--no-save"], "--out and --no-save exclude each other"),
    ],
)
def test_bad_flags_exit_with_a_message(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse rejects bad flags with exit status 2 and a message naming the flag."""
    with pytest.raises(SystemExit) as exc:
        digits.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_train_rejects_bad_arguments() -> None:
    """The library entry point checks what argparse checks for the command line."""
    with pytest.raises(ValueError, match="unknown model 'rnn'"):
        digits.train("rnn", verbose=False)
    with pytest.raises(ValueError, match="unknown optimizer 'lbfgs'"):
        digits.train("mlp", "lbfgs", verbose=False)
    with pytest.raises(ValueError, match="epochs must be >= 1, got 0"):
        digits.train(epochs=0, verbose=False)
