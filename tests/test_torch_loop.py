"""PyTorch's own training loop, verbatim but for names, against PyTorch (issue 25).

Each test is the program a PyTorch user writes first, ported by renaming (``torch`` ->
``gradtape``, ``torch.tensor`` -> ``dev.tensor``, ``F.cross_entropy`` ->
``losses.cross_entropy``)::

    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches:
        opt.zero_grad()
        loss = losses.cross_entropy(model(dev.tensor(x)), dev.tensor(y))
        loss.backward()
        opt.step()

and the same loop in PyTorch (float64, identical initial weights) must give the same loss at
every step, the same ``.grad`` of every parameter at step 1 and the same parameters after N
steps: an MLP with SGD + momentum, a CNN with BatchNorm2d and Adam, a transformer encoder
layer with AdamW and ``clip_grad_norm_``, and ``nn.Embedding`` fed an int64 token tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import losses, nn, optim

torch: Any = pytest.importorskip("torch")
F64 = np.float64
STEPS = 5


def _copy_weights(ours: nn.Module, ref: Any) -> None:
    """Give the PyTorch model our initial weights (the parameter names are PyTorch's)."""
    mine = dict(ours.named_parameters())
    theirs = dict(ref.named_parameters())
    assert list(mine) == list(theirs)
    with torch.no_grad():
        for name, q in theirs.items():
            q.copy_(torch.from_numpy(np.asarray(mine[name].data)))


def _run_both(
    ours: nn.Module,
    ref: Any,
    make_opts: Callable[[nn.Module, Any], tuple[Any, Any]],
    batches: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]],
    loss_fn: Callable[[Any, Any], Any],
    torch_loss_fn: Callable[[Any, Any], Any],
    clip: float | None = None,
    rtol: float = 1e-9,
) -> None:
    """Run the canonical loop on both, step by step, comparing what the issue lists."""
    dev = gt.Cpu()
    _copy_weights(ours, ref)
    opt, topt = make_opts(ours, ref)
    for step, (x, y) in enumerate(batches):
        # ---- gradtape: PyTorch's loop, renamed
        opt.zero_grad()
        loss = loss_fn(ours(dev.tensor(x)), dev.tensor(y))
        loss.backward()
        if clip is not None:
            norm = nn.utils.clip_grad_norm_(ours.parameters(), clip)
        # ---- PyTorch
        topt.zero_grad()
        tloss = torch_loss_fn(ref(torch.from_numpy(x)), torch.from_numpy(y))
        tloss.backward()
        if clip is not None:
            tnorm = torch.nn.utils.clip_grad_norm_(ref.parameters(), clip)
            np.testing.assert_allclose(float(norm.item()), float(tnorm), rtol=rtol)
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=rtol, err_msg=f"loss at step {step}")
        if step == 0:
            for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
                assert p.grad is not None, f"{name}.grad is None after backward()"
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=rtol, atol=1e-10, err_msg=name)
        opt.step()
        topt.step()
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=rtol, atol=1e-10, err_msg=name)


def _batches(
    rng: np.random.Generator, shape: tuple[int, ...], classes: int, n: int = STEPS
) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    return [(rng.standard_normal(shape), rng.integers(0, classes, shape[0]).astype(np.int64)) for _ in range(n)]


class MLP(nn.Module):
    def __init__(self, dev: gt.Cpu) -> None:
        self.fc1 = nn.Linear(8, 16, dev=dev, dtype=F64)
        self.fc2 = nn.Linear(16, 3, dev=dev, dtype=F64)

    def forward(self, x: Any) -> Any:
        return self.fc2(self.fc1(x).relu())


def test_mlp_sgd_momentum_loop_equals_torch() -> None:
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).double()
    ref_named = torch.nn.ModuleDict({"fc1": ref[0], "fc2": ref[2]})  # our names: fc1.weight, ...

    class Ref(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = ref_named["fc1"], ref_named["fc2"]

        def forward(self, x: Any) -> Any:
            return self.fc2(torch.relu(self.fc1(x)))

    _run_both(
        MLP(gt.Cpu(seed=0)),
        Ref(),
        lambda m, r: (
            optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
            torch.optim.SGD(r.parameters(), lr=0.1, momentum=0.9),
        ),
        _batches(np.random.default_rng(0), (16, 8), 3),
        losses.cross_entropy,
        torch.nn.functional.cross_entropy,
    )


class CNN(nn.Module):
    def __init__(self, dev: gt.Cpu) -> None:
        self.conv = nn.Conv2d(1, 4, 3, padding=1, dev=dev, dtype=F64)
        self.bn = nn.BatchNorm2d(4, dev=dev, dtype=F64)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 3 * 3, 5, dev=dev, dtype=F64)

    def forward(self, x: Any) -> Any:
        h = self.pool(self.bn(self.conv(x)).relu())
        return self.fc(h.reshape((h.shape[0], -1)))


class TorchCNN(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 3 * 3, 5)

    def forward(self, x: Any) -> Any:
        h = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(h.reshape(h.shape[0], -1))


def test_cnn_batchnorm_adam_loop_equals_torch() -> None:
    _run_both(
        CNN(gt.Cpu(seed=1)),
        TorchCNN().double(),
        lambda m, r: (optim.Adam(m.parameters(), lr=1e-2), torch.optim.Adam(r.parameters(), lr=1e-2)),
        _batches(np.random.default_rng(1), (8, 1, 6, 6), 5),
        losses.cross_entropy,
        torch.nn.functional.cross_entropy,
        rtol=1e-8,
    )


class Encoder(nn.Module):
    def __init__(self, dev: gt.Cpu) -> None:
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, dev=dev, dtype=F64)
        self.head = nn.Linear(16, 4, dev=dev, dtype=F64)

    def forward(self, x: Any) -> Any:
        return self.head(self.layer(x).mean(axis=1))


class TorchEncoder(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x: Any) -> Any:
        return self.head(self.layer(x).mean(dim=1))


def test_transformer_adamw_clip_grad_norm_loop_equals_torch() -> None:
    _run_both(
        Encoder(gt.Cpu(seed=2)),
        TorchEncoder().double(),
        lambda m, r: (
            optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1),
            torch.optim.AdamW(r.parameters(), lr=1e-2, weight_decay=0.1),
        ),
        _batches(np.random.default_rng(2), (4, 6, 16), 4),
        losses.cross_entropy,
        torch.nn.functional.cross_entropy,
        clip=0.5,
        rtol=1e-8,
    )


class TokenModel(nn.Module):
    def __init__(self, dev: gt.Cpu) -> None:
        self.emb = nn.Embedding(20, 8, dev=dev, dtype=F64)
        self.out = nn.Linear(8, 20, dev=dev, dtype=F64)

    def forward(self, tokens: Any) -> Any:
        return self.out(self.emb(tokens).mean(axis=1))


class TorchTokenModel(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8)
        self.out = torch.nn.Linear(8, 20)

    def forward(self, tokens: Any) -> Any:
        return self.out(self.emb(tokens).mean(dim=1))


def test_embedding_fed_int64_tokens_loop_equals_torch() -> None:
    rng = np.random.default_rng(3)
    batches = [(rng.integers(0, 20, (6, 5)), rng.integers(0, 20, 6)) for _ in range(STEPS)]
    dev = gt.Cpu()
    assert dev.tensor(batches[0][0]).dtype == np.int64  # as torch.tensor of an int64 array
    _run_both(
        TokenModel(gt.Cpu(seed=3)),
        TorchTokenModel().double(),
        lambda m, r: (optim.SGD(m.parameters(), lr=0.5), torch.optim.SGD(r.parameters(), lr=0.5)),
        batches,
        losses.cross_entropy,
        torch.nn.functional.cross_entropy,
    )


def test_values_after_backward_compute_and_a_second_backward_raises() -> None:
    """DCGAN's loop logs from a graph that backward() has run: ``D_x = output.mean().item()``
    after ``errD_real.backward()``, ``errD = errD_real + errD_fake`` after both. PyTorch
    computes these; a backward through them raises (the graph is freed) rather than giving a
    gradient that skips the run pass."""
    dev = gt.Cpu(seed=0)
    net = nn.Linear(3, 1, dev=dev, dtype=F64)
    tnet = torch.nn.Linear(3, 1).double()
    _copy_weights(net, tnet)
    x = np.random.default_rng(0).standard_normal((4, 3))
    ones, zeros = np.ones((4, 1)), np.zeros((4, 1))

    output = net(dev.tensor(x)).sigmoid()
    err_real = losses.binary_cross_entropy(output, dev.tensor(ones))
    err_real.backward()
    d_x = output.mean().item()
    output2 = net(dev.tensor(-x)).sigmoid()
    err_fake = losses.binary_cross_entropy(output2, dev.tensor(zeros))
    err_fake.backward()
    err_d = err_real + err_fake

    toutput = tnet(torch.from_numpy(x)).sigmoid()
    terr_real = torch.nn.functional.binary_cross_entropy(toutput, torch.from_numpy(ones))
    terr_real.backward()
    td_x = toutput.mean().item()
    toutput2 = tnet(torch.from_numpy(-x)).sigmoid()
    terr_fake = torch.nn.functional.binary_cross_entropy(toutput2, torch.from_numpy(zeros))
    terr_fake.backward()
    terr_d = terr_real + terr_fake

    np.testing.assert_allclose(d_x, td_x, rtol=1e-12)
    np.testing.assert_allclose(err_d.item(), terr_d.item(), rtol=1e-12)
    for (name, p), (_, q) in zip(net.named_parameters(), tnet.named_parameters(), strict=True):
        assert p.grad is not None
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12, err_msg=name)
    with pytest.raises(gt.TapeError, match="already run by an earlier backward"):
        err_d.backward()
    # a new pass that meets the run one raises too, never a gradient of the new pass alone
    with pytest.raises(gt.TapeError, match="already run by an earlier backward"):
        (net(dev.tensor(x)).sum() + output.mean()).backward()
