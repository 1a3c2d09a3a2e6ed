"""pytorch/examples ``mnist/main.py`` ported to gradtape by renaming, on scikit-learn's digits.

    python -m gradtape.examples.mnist [--batch-size N] [--test-batch-size N] [--epochs N]
        [--lr LR] [--gamma M] [--dry-run] [--seed S] [--log-interval N] [--save-model]

The program is https://github.com/pytorch/examples/blob/main/mnist/main.py with its structure,
names, flags and log lines: :class:`Net` (``conv1`` ``Conv2d(1, 32, 3, 1)``, ReLU, ``conv2``
``Conv2d(32, 64, 3, 1)``, ReLU, ``max_pool2d(x, 2)``, ``dropout1`` (0.25), flatten, ``fc1``,
ReLU, ``dropout2`` (0.5), ``fc2``, ``log_softmax``), :func:`train` (``zero_grad``,
``nll_loss``, ``backward``, ``step``, a ``Train Epoch`` line every ``--log-interval``
batches), :func:`test` (summed ``nll_loss``, ``argmax(dim=1, keepdim=True)`` accuracy, the
``Test set`` line), ``Adadelta(lr=1.0)`` and ``StepLR(step_size=1, gamma=0.7)`` stepped once
an epoch.

What changes in the port:

- The data: scikit-learn's bundled digits (1,797 8x8 grey-level images, no download) in
  place of MNIST's 28x28, split as :func:`gradtape.examples.digits.load_digits_split` does
  (1,347 training / 450 test images, stratified, fixed) and normalised with the training
  pixels' mean and standard deviation (the role of MNIST's ``Normalize((0.1307,),
  (0.3081,))``). On 8x8 images the two 3x3 convolutions leave 4x4 maps and the pooling 2x2,
  so **``fc1`` takes 64 * 2 * 2 = 256 inputs** instead of MNIST's 9216; every other layer is
  the original's.
- ``gradtape.data.DataLoader`` over a ``TensorDataset``. The training loader shuffles (seeded
  by ``--seed``), as the original's loader does on an accelerator (its CPU loader does not).
- ``target.view_as(pred)`` is ``target.view(pred.shape)``; the layers take ``dev=``; ``.to(device)`` has nothing to
  do (gradtape computes on the CPU), so ``--no-accel`` is gone; ``--save-model`` writes a
  safetensors file (``mnist_cnn.safetensors``, the original's ``state_dict`` keys).

Measured on the shared 2-vCPU test VM (defaults: 14 epochs, batch 64, seed 1): test accuracy
96.67% (435/450) after 14 epochs, 3.5 s of training.
tests/test_examples_mnist.py runs the same network and loop
in PyTorch (float64, identical weights) and compares every loss and gradient.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import gradtape
from gradtape import Cpu, Tensor, nn, optim
from gradtape import ops as F
from gradtape.data import DataLoader, TensorDataset
from gradtape.examples._cli import nonnegative_float, nonnegative_int, positive_int
from gradtape.examples.digits import load_digits_split
from gradtape.losses import nll_loss
from gradtape.optim.lr_scheduler import StepLR

__all__ = ["Net", "load_data", "main", "test", "train"]

Array = np.ndarray[Any, Any]


class Net(nn.Module):
    """The original's CNN with ``fc1`` sized for 8x8 images: ``(B, 1, 8, 8)`` images ->
    ``(B, 10)`` log-probabilities (``log_softmax`` over the classes).

    Shapes: conv1 -> ``(B, 32, 6, 6)``, conv2 -> ``(B, 64, 4, 4)``, max-pool -> ``(B, 64, 2,
    2)``, flatten -> ``(B, 256)``, fc1 -> ``(B, 128)``, fc2 -> ``(B, 10)``. Dropout 0.25 after
    the pooling and 0.5 after fc1, in training mode only (masks from ``dev``'s generator).

    Args:
        dev: the device whose seeded generator initialises the layers (PyTorch's init).
        dtype: float32 (default) or float64.
    """

    def __init__(self, *, dev: Cpu, dtype: Any = np.float32) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1, dev=dev, dtype=dtype)
        self.conv2 = nn.Conv2d(32, 64, 3, 1, dev=dev, dtype=dtype)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(256, 128, dev=dev, dtype=dtype)  # MNIST's 9216 = 64 * 12 * 12; digits: 64 * 2 * 2
        self.fc2 = nn.Linear(128, 10, dev=dev, dtype=dtype)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Log-probabilities ``(B, 10)`` of images ``x (B, 1, 8, 8)``."""
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = F.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(
    args: argparse.Namespace,
    model: Net,
    device: Cpu,
    train_loader: DataLoader[Any],
    optimizer: optim.Optimizer,
    epoch: int,
) -> None:
    """One epoch over ``train_loader`` (the original's ``train``): per batch ``zero_grad``,
    forward, ``nll_loss``, ``backward``, ``step``; every ``args.log_interval`` batches a
    ``Train Epoch: E [seen/total (pct%)]\\tLoss: L`` line, after which ``args.dry_run`` stops."""
    del device  # data.to(device): the batches are already on the CPU
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)} "
                f"({100.0 * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss.item():.6f}"
            )
            if args.dry_run:
                break


def test(model: Net, device: Cpu, test_loader: DataLoader[Any]) -> tuple[float, int]:
    """The original's ``test``: in eval mode and without recording, the mean ``nll_loss`` over
    ``test_loader``'s data set and the number of images whose arg-max class is the label;
    prints the ``Test set`` line and returns ``(test_loss, correct)``."""
    del device
    model.eval()
    test_loss = 0.0
    correct = 0
    with gradtape.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += nll_loss(output, target, reduction="sum").item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += int(pred.eq(target.view(pred.shape)).sum().item())  # target.view_as(pred)

    n = len(test_loader.dataset)
    test_loss /= n

    print(f"\nTest set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{n} ({100.0 * correct / n:.0f}%)\n")
    return test_loss, correct


def load_data(dev: Cpu, dtype: Any = np.float32) -> tuple[TensorDataset, TensorDataset]:
    """``(train, test)`` data sets of the digits: images ``(n, 1, 8, 8)`` in ``dtype``,
    normalised with the training pixels' mean and standard deviation, and int64 labels
    (1,347 and 450 images, :func:`~gradtape.examples.digits.load_digits_split`).

    Raises:
        ImportError: scikit-learn is not installed (``pip install 'gradtape[examples]'``).
    """
    x_tr, y_tr, x_te, y_te = load_digits_split()
    mean, std = float(x_tr.mean()), float(x_tr.std())  # transforms.Normalize((mean,), (std,))

    def images(x: Array) -> Tensor[Any, Any]:
        return dev.tensor(((x - mean) / std).reshape(-1, 1, 8, 8), dtype=dtype)

    return TensorDataset(images(x_tr), dev.tensor(y_tr)), TensorDataset(images(x_te), dev.tensor(y_te))


def main(argv: Sequence[str] | None = None) -> list[float]:
    """Command-line entry point (the original's ``main``; see the module docstring). Returns the
    test accuracy (a fraction) after each epoch."""
    # Training settings
    parser = argparse.ArgumentParser(prog="python -m gradtape.examples.mnist", description="gradtape MNIST Example")
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=64,
        metavar="N",
        help="input batch size for training (default: 64)",
    )
    parser.add_argument(
        "--test-batch-size",
        type=positive_int,
        default=1000,
        metavar="N",
        help="input batch size for testing (default: 1000)",
    )
    parser.add_argument(
        "--epochs", type=nonnegative_int, default=14, metavar="N", help="number of epochs to train (default: 14)"
    )
    parser.add_argument("--lr", type=nonnegative_float, default=1.0, metavar="LR", help="learning rate (default: 1.0)")
    parser.add_argument(
        "--gamma", type=nonnegative_float, default=0.7, metavar="M", help="Learning rate step gamma (default: 0.7)"
    )
    parser.add_argument("--dry-run", action="store_true", help="quickly check a single pass")
    parser.add_argument("--seed", type=nonnegative_int, default=1, metavar="S", help="random seed (default: 1)")
    parser.add_argument(
        "--log-interval",
        type=positive_int,
        default=10,
        metavar="N",
        help="how many batches to wait before logging training status",
    )
    parser.add_argument("--save-model", action="store_true", help="For Saving the current Model")
    args = parser.parse_args(argv)

    device = Cpu(seed=args.seed)  # torch.manual_seed(args.seed)

    dataset1, dataset2 = load_data(device)
    train_loader = DataLoader(dataset1, batch_size=args.batch_size, shuffle=True, generator=args.seed)
    test_loader = DataLoader(dataset2, batch_size=args.test_batch_size)

    model = Net(dev=device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    accuracies = []
    started = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        _, correct = test(model, device, test_loader)
        accuracies.append(correct / len(dataset2))
        scheduler.step()
    print(f"trained {args.epochs} epochs in {time.perf_counter() - started:.1f} s")

    if args.save_model:
        nn.save(model, "mnist_cnn.safetensors")
    return accuracies


if __name__ == "__main__":
    main()
