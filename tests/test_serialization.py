"""``torch.save`` / ``torch.load`` spelled ``gradtape.save`` / ``gradtape.load``: the
checkpoint loop PyTorch programs write (model and optimizer state, the epoch), a resumed run
equal to the uninterrupted one, files and in-memory buffers, and a ``weights_only`` load that
refuses to build anything but tensors, arrays and plain values."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import nn, optim


def _model() -> nn.Sequential:
    gradtape.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def _train(model: nn.Sequential, opt: Any, steps: int, start: int) -> None:
    rng = np.random.default_rng(start)
    for _ in range(steps):
        x = gradtape.tensor(rng.standard_normal((16, 4)), dtype=gradtape.float32)
        y = gradtape.tensor(rng.integers(0, 2, 16))
        opt.zero_grad()
        gradtape.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def test_a_checkpoint_resumes_the_run_exactly(tmp_path: Path) -> None:
    """PyTorch's resume idiom: save ``{'model': ..., 'optimizer': ..., 'epoch': ...}``, load it
    into fresh objects, continue: the same parameters and buffers as without the break."""
    straight = _model()
    opt_s = optim.AdamW(straight.parameters(), lr=0.01)
    _train(straight, opt_s, 3, 0)
    _train(straight, opt_s, 3, 1)

    first = _model()
    opt_f = optim.AdamW(first.parameters(), lr=0.01)
    _train(first, opt_f, 3, 0)
    path = tmp_path / "ckpt.pt"
    gradtape.save({"model": first.state_dict(), "optimizer": opt_f.state_dict(), "epoch": 3}, path)

    ckpt = gradtape.load(path)
    assert ckpt["epoch"] == 3 and isinstance(ckpt["model"]["0.weight"], gradtape.Tensor)
    resumed = _model()
    resumed.load_state_dict(ckpt["model"])
    opt_r = optim.AdamW(resumed.parameters(), lr=0.01)
    opt_r.load_state_dict(ckpt["optimizer"])
    _train(resumed, opt_r, 3, 1)
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_values_dtypes_and_flags_round_trip_through_a_buffer() -> None:
    buf = io.BytesIO()
    w = gradtape.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    obj = {"w": w, "ids": gradtape.tensor([3, 1]), "nested": [(1.5, "s"), {"a": np.ones(2)}], "n": None}
    gradtape.save(obj, buf)
    buf.seek(0)
    back = gradtape.load(buf)
    assert back["w"].requires_grad and back["w"].dtype == np.float64 and back["w"] is not w
    np.testing.assert_array_equal(back["w"].detach().numpy(), w.detach().numpy())
    assert back["ids"].dtype == np.int64 and back["nested"][0] == (1.5, "s") and back["n"] is None
    np.testing.assert_array_equal(back["nested"][1]["a"], np.ones(2))


def test_a_weights_only_load_refuses_code(tmp_path: Path) -> None:
    """A pickle that would run a command is refused by the default load, naming what it asked
    for; ``weights_only=False`` (trusted files) reads whole pickled objects."""

    class Runs:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, ("echo should-not-run",))

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"x": Runs()}))
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        gradtape.load(path)
    model = _model()
    path2 = tmp_path / "whole.pt"
    gradtape.save(model, path2)  # a whole module: pickled as it is
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
        gradtape.load(path2)
    back = gradtape.load(path2, weights_only=False)
    assert isinstance(back, nn.Sequential)
    np.testing.assert_array_equal(back.state_dict()["0.weight"].numpy(), model.state_dict()["0.weight"].numpy())
