"""Train an MLP on scikit-learn's bundled handwritten digits with gradtape.

    python -m gradtape.examples.digits [--epochs N] [--batch-size B] [--lr LR] [--hidden H] [--seed S]

The data set (1797 8x8 grey-level images of the digits 0-9, UCI's optdigits test set)
ships with scikit-learn, so nothing is downloaded. A stratified 75/25 train/test split
with the run's seed; pixels are scaled from [0, 16] to [0, 1].

Model: ``64 -> hidden -> 10`` with ReLU, softmax cross-entropy, plain SGD (``p -= lr * g``),
written directly on gradtape's ops: the parameters are untraced tensors, each batch's
input is traced into a ``Gradients`` store that keeps only the parameters' gradients
(dfdx's pattern). Prints the mean training loss per epoch and the final test accuracy.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import numpy as np

from gradtape import Cpu, Gradients, NoneTape, Rank1, Rank2, Tape, Tensor
from gradtape.losses import cross_entropy

__all__ = ["MLP", "accuracy", "load_digits_split", "main", "train"]

Batch: TypeAlias = int
Hidden: TypeAlias = int
Pixels: TypeAlias = Literal[64]
Classes: TypeAlias = Literal[10]
Array = np.ndarray[Any, Any]


def load_digits_split(seed: int) -> tuple[Array, Array, Array, Array]:
    """Return ``(x_train, y_train, x_test, y_test)``: float32 pixels in [0, 1] of shape
    ``(n, 64)`` and int64 labels, a stratified 75/25 split of sklearn's digits."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)
    return x_tr, y_tr.astype(np.int64), x_te, y_te.astype(np.int64)


class MLP:
    """``64 -> hidden -> 10`` ReLU network; weights initialised as PyTorch's ``nn.Linear``
    (uniform in ``+-1/sqrt(fan_in)``)."""

    def __init__(self, dev: Cpu, hidden: int) -> None:
        def uniform(shape: tuple[int, ...], fan_in: int) -> Tensor[Any, NoneTape]:
            bound = 1.0 / math.sqrt(fan_in)
            return dev.rand(shape, -bound, bound)

        self.w1: Tensor[Rank2[Pixels, Hidden], NoneTape] = uniform((64, hidden), 64)
        self.b1: Tensor[Rank1[Hidden], NoneTape] = uniform((hidden,), 64)
        self.w2: Tensor[Rank2[Hidden, Classes], NoneTape] = uniform((hidden, 10), hidden)
        self.b2: Tensor[Rank1[Classes], NoneTape] = uniform((10,), hidden)

    def params(self) -> list[Tensor[Any, NoneTape]]:
        """The parameters, in a fixed order."""
        return [self.w1, self.b1, self.w2, self.b2]

    def forward(self, x: Tensor[Rank2[Batch, Pixels], Tape]) -> Tensor[Rank2[Batch, Classes], Any]:
        """Logits of shape ``(batch, 10)``."""
        h = (x.matmul(self.w1) + self.b1).relu()
        return h.matmul(self.w2) + self.b2


def accuracy(model: MLP, dev: Cpu, x: Array, y: Array) -> float:
    """Fraction of ``x``'s rows whose arg-max logit is the label ``y`` (untraced forward)."""
    logits = model.forward(dev.tensor(x))
    return float((logits.numpy().argmax(axis=1) == y).mean())


def train(
    epochs: int = 30, batch_size: int = 32, lr: float = 0.1, hidden: int = 128, seed: int = 0, verbose: bool = True
) -> tuple[MLP, float, list[float]]:
    """Train the MLP; return ``(model, test accuracy, mean training loss per epoch)``."""
    x_tr, y_tr, x_te, y_te = load_digits_split(seed)
    dev = Cpu(seed=seed)
    model = MLP(dev, hidden)
    order_rng = np.random.default_rng(seed)
    losses: list[float] = []
    for epoch in range(epochs):
        started = time.perf_counter()
        order = order_rng.permutation(len(x_tr))
        total, batches = 0.0, 0
        for lo in range(0, len(order), batch_size):
            idx = order[lo : lo + batch_size]
            grads = Gradients.leaky()
            grads.retain_leafs(model.params())
            x: Tensor[Rank2[Batch, Pixels], NoneTape] = dev.tensor(x_tr[idx])
            loss = cross_entropy(model.forward(x.trace(grads)), y_tr[idx])
            grads = loss.backward()
            for p in model.params():
                g = grads.get_ref_checked(p)
                if g is not None:
                    dev.axpy(p.data, -lr, g)
            total += loss.item()
            batches += 1
        losses.append(total / batches)
        if verbose:
            secs = time.perf_counter() - started
            print(f"epoch {epoch + 1:3d}  train loss {losses[-1]:.4f}  ({secs * 1000:.0f} ms)")
    acc = accuracy(model, dev, x_te, y_te)
    return model, acc, losses


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point; prints per-epoch loss and the final test accuracy."""
    ap = argparse.ArgumentParser(prog="python -m gradtape.examples.digits", description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    _, acc, _ = train(args.epochs, args.batch_size, args.lr, args.hidden, args.seed)
    print(f"test accuracy: {acc * 100:.2f}%")


if __name__ == "__main__":
    main()
