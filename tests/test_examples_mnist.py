"""``python -m gradtape.examples.mnist`` against pytorch/examples' ``mnist/main.py`` (issue 27).

The original's ``Net`` is written below in PyTorch (``fc1`` sized for the 8x8 digits, 256
inputs, as the port), in float64. The gradtape port gets its initial weights through
``load_state_dict`` (the original's keys), and both run three epochs of one batch each of the
original's loop: ``optimizer.zero_grad()``, ``nll_loss(model(data), target)``, ``backward()``,
``Adadelta(lr=1.0).step()``, then ``StepLR(step_size=1, gamma=0.7).step()`` (so the three
steps run at lr 1.0, 0.7 and 0.49). Every loss, every parameter's gradient, the learning
rates and the parameters after each step must agree (rtol 1e-9). Both models are in eval
mode during these steps: dropout's random masks cannot be matched between the libraries
(``Dropout`` is the identity in eval mode; nothing else in ``Net`` depends on the mode). The
example's ``test`` is compared with the original's on the test images after the steps.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, nn, optim
from gradtape.data import DataLoader
from gradtape.examples import mnist
from gradtape.losses import nll_loss
from gradtape.optim.lr_scheduler import StepLR

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn
F: Any = torch.nn.functional
RTOL, ATOL = 1e-9, 1e-12


class TorchNet(tnn.Module):  # type: ignore[misc]
    """mnist/main.py's Net, with fc1's input width for 8x8 images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = tnn.Conv2d(1, 32, 3, 1)
        self.conv2 = tnn.Conv2d(32, 64, 3, 1)
        self.dropout1 = tnn.Dropout(0.25)
        self.dropout2 = tnn.Dropout(0.5)
        self.fc1 = tnn.Linear(256, 128)
        self.fc2 = tnn.Linear(128, 10)

    def forward(self, x: Any) -> Any:
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def test_three_steps_of_the_original_loop_equal_pytorch(capsys: pytest.CaptureFixture[str]) -> None:
    dev = Cpu(seed=0)
    train_set, test_set = mnist.load_data(dev, np.float64)
    torch.manual_seed(0)
    ref = TorchNet().double()
    model = mnist.Net(dev=dev, dtype=np.float64)
    assert list(model.state_dict()) == list(ref.state_dict())
    model.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    toptimizer = torch.optim.Adadelta(ref.parameters(), lr=1.0)
    tscheduler = torch.optim.lr_scheduler.StepLR(toptimizer, step_size=1, gamma=0.7)
    model.eval()  # dropout off in both (see the module docstring)
    ref.eval()
    tnamed = dict(ref.named_parameters())
    batches = list(DataLoader(train_set, batch_size=16))[:3]
    for step, (data, target) in enumerate(batches):
        assert data.shape == (16, 1, 8, 8) and target.dtype == np.int64
        optimizer.zero_grad()
        output = model(data)
        loss = nll_loss(output, target)
        loss.backward()
        toptimizer.zero_grad()
        toutput = ref(torch.from_numpy(data.numpy()))
        tloss = F.nll_loss(toutput, torch.from_numpy(target.numpy()))
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=RTOL, err_msg=f"loss at step {step}")
        np.testing.assert_allclose(output.numpy(), toutput.detach().numpy(), rtol=RTOL, atol=ATOL)
        for name, p in model.named_parameters():
            assert p.grad is not None, name
            np.testing.assert_allclose(
                p.grad.numpy(), tnamed[name].grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name}.grad at {step}"
            )
        optimizer.step()
        toptimizer.step()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(
                p.numpy(), tnamed[name].detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name} after {step}"
            )
        assert scheduler.get_last_lr() == pytest.approx(tscheduler.get_last_lr(), rel=1e-15)
        scheduler.step()
        tscheduler.step()
    assert scheduler.get_last_lr() == pytest.approx([0.7**3], rel=1e-12)
    # the example's test() against the original's on the test images
    test_loss, correct = mnist.test(model, dev, DataLoader(test_set, batch_size=200))
    line = capsys.readouterr().out
    x = torch.from_numpy(test_set.arrays[0])
    y = torch.from_numpy(test_set.arrays[1])
    with torch.no_grad():
        tout = ref(x)
    np.testing.assert_allclose(test_loss, F.nll_loss(tout, y, reduction="sum").item() / len(y), rtol=RTOL)
    assert correct == int(tout.argmax(dim=1, keepdim=True).eq(y.view(-1, 1)).sum().item())
    assert f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/450 (" in line


def test_train_logs_the_originals_lines_and_dry_run_stops(capsys: pytest.CaptureFixture[str]) -> None:
    """train() prints ``Train Epoch: E [seen/total (pct%)]\\tLoss: L`` every log-interval
    batches; --dry-run stops after the first line; the loss falls over an epoch; dropout is
    on in training (two passes over one batch differ) and off in test()."""
    dev = Cpu(seed=1)
    train_set, _ = mnist.load_data(dev)
    model = mnist.Net(dev=dev)
    loader = DataLoader(train_set, batch_size=64)
    opt = optim.Adadelta(model.parameters(), lr=1.0)
    args = argparse.Namespace(log_interval=10, dry_run=False)
    mnist.train(args, model, dev, loader, opt, 1)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Train Epoch: 1 [0/1347 (0%)]\tLoss: ")
    assert lines[1].startswith("Train Epoch: 1 [640/1347 (45%)]\tLoss: ")
    assert len(lines) == 3 and float(lines[-1].split()[-1]) < float(lines[0].split()[-1])
    mnist.train(argparse.Namespace(log_interval=1, dry_run=True), model, dev, loader, opt, 2)
    assert len(capsys.readouterr().out.splitlines()) == 1
    data = Cpu().tensor(train_set.arrays[0][:8])
    model.train()
    assert not np.allclose(model(data).numpy(), model(data).numpy())
    model.eval()
    np.testing.assert_array_equal(model(data).numpy(), model(data).numpy())


def test_main_trains_and_saves(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two epochs reach 80% (measured: 90%); --save-model writes the original's keys."""
    monkeypatch.chdir(tmp_path)
    accuracies = mnist.main(["--epochs", "2", "--log-interval", "100", "--save-model"])
    out = capsys.readouterr().out
    assert len(accuracies) == 2 and accuracies[-1] > 0.8
    assert len(re.findall(r"Test set: Average loss: \d\.\d{4}, Accuracy: \d+/450 \(\d+%\)", out)) == 2
    fresh = mnist.Net(dev=Cpu(seed=5))
    nn.load(fresh, tmp_path / "mnist_cnn.safetensors")
    keys = ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert list(fresh.state_dict()) == [*keys, "fc2.bias"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--batch-size", "0"], "argument --batch-size: must be >= 1, got 0"),
        (["--lr", "-1"], "argument --lr: must be a finite number >= 0, got -1"),
        (["--no-accel"], "unrecognized arguments: --no-accel"),
    ],
)
def test_bad_flags_exit_with_a_message(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        mnist.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
