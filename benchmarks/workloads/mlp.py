"""Workload 2, MLP training step on scikit-learn's digits: 64-128-128-10, ReLU, softmax
cross-entropy, SGD with momentum 0.9, batch 64.

Every implementation starts from the same weights (PyTorch ``nn.Linear``'s uniform
``+-1/sqrt(fan_in)``, drawn once with numpy), sees the same batches in the same order
(full batches only: 21 steps per epoch) and applies PyTorch's SGD-momentum rule
``v = 0.9 v + g; p -= lr v``. Epochs alternate between implementations, each after a
pause and two warm-up steps on a throwaway copy (thread pools: see ``common.handover``);
every epoch is timed, and the figure is the median over epochs of (epoch time / steps):
microseconds per step, including slicing the batch out of the training set. After the last epoch each reports
its test accuracy, so the runs can be seen to train the same network, and the time of an
inference forward pass of the trained model on 64 test rows with nothing recorded (both under
``no_grad``): the cost of the tape layer when nothing records.

- gradtape, written the way ``gradtape.examples.digits`` is: ``gradtape.nn`` layers
  (untraced parameters), each batch's input traced into the model's ``alloc_grads()``
  store, ``gradtape.losses.cross_entropy``, ``gradtape.optim.SGD(momentum=0.9)``.
- gradtape in PyTorch's spelling (``gradtape-torch``): the same model, ``opt.zero_grad()``,
  ``loss.backward()`` into ``.grad``, ``opt.step()``; its row's target is within 1.05x of the
  dfdx spelling above.
- PyTorch: ``nn.Sequential`` + ``F.cross_entropy`` + ``optim.SGD(momentum=0.9)``.
- HIPS autograd: ``value_and_grad`` of the loss over the parameter list.
- numpy: forward and backward written by hand, the floor a numpy-based tape can approach.
"""

from __future__ import annotations

import gc
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from benchmarks.common import (
    Config,
    Row,
    Target,
    WorkloadResult,
    blockwise,
    handover,
    load_autograd,
    load_torch,
    median,
    settle,
    spread,
)

NAME = "mlp"
TITLE = "2. MLP training step (digits, 64-128-128-10, ReLU, CE, SGD momentum, batch 64)"

Array = np.ndarray[Any, Any]

SIZES = (64, 128, 128, 10)
BATCH = 64
LR = 0.01
MOMENTUM = 0.9
EPOCHS = 20
QUICK_EPOCHS = 3
INFER_PASSES = 100
INFER_REPEATS = 30
QUICK_INFER_REPEATS = 6
SEED = 0


@dataclass
class Data:
    """Train/test split; ``real`` is False when scikit-learn is missing (random stand-in)."""

    x_tr: Array
    y_tr: Array
    x_te: Array
    y_te: Array
    real: bool


def load_data() -> Data:
    """The digits split of ``gradtape.examples.digits`` (seed 0), or random data of the same
    shape when scikit-learn is not installed."""
    try:
        from gradtape.examples.digits import load_digits_split

        x_tr, y_tr, x_te, y_te = load_digits_split(SEED)
        return Data(x_tr, y_tr, x_te, y_te, True)
    except ImportError:
        rng = np.random.default_rng(SEED)
        x = rng.random((1797, 64), dtype=np.float32)
        y = rng.integers(0, 10, 1797).astype(np.int64)
        return Data(x[:1347], y[:1347], x[1347:], y[1347:], False)


def init_params(seed: int = SEED) -> list[Array]:
    """``[w1, b1, w2, b2, w3, b3]``, float32, ``w`` of shape ``(fan_in, fan_out)``."""
    rng = np.random.default_rng(seed)
    params: list[Array] = []
    for fan_in, fan_out in itertools.pairwise(SIZES):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return params


def epoch_batches(n: int, epochs: int, seed: int = SEED + 1) -> list[list[Array]]:
    """For each epoch, the index arrays of its full batches (a fresh permutation each)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(epochs):
        order = rng.permutation(n)
        out.append([order[lo : lo + BATCH] for lo in range(0, n - BATCH + 1, BATCH)])
    return out


class Trainer(Protocol):
    """One implementation of the model and its optimiser."""

    def step(self, idx: Array) -> float:
        """Train on the rows ``idx`` of the training set; return the batch's loss."""
        ...

    def accuracy(self, x: Array, y: Array) -> float:
        """Test accuracy (fraction of arg-max logits equal to ``y``)."""
        ...

    def infer(self, x: Array) -> Array:
        """Logits of the rows ``x`` with nothing recorded (inference), as a numpy array."""
        ...


# ----- gradtape -------------------------------------------------------------------------


class GradtapeMLP:
    """The MLP on gradtape's public API, as ``gradtape.examples.digits`` writes it:
    ``nn.Sequential`` of ``nn.Linear``/``nn.ReLU``, ``alloc_grads``/``zero_grads`` and
    ``optim.SGD(momentum=0.9)`` (one fused kernel pass per parameter)."""

    def __init__(self, data: Data, params: list[Array]) -> None:
        from gradtape import Cpu, nn, optim

        self.dev = Cpu(seed=SEED)
        layers: list[Any] = []
        for i in range(0, len(params), 2):
            lin = nn.Linear(params[i].shape[0], params[i].shape[1], dev=self.dev)
            lin.weight.data[...] = params[i].T
            assert lin.bias is not None
            lin.bias.data[...] = params[i + 1]
            layers.append(lin)
            if i + 2 < len(params):
                layers.append(nn.ReLU())
        self.model = nn.Sequential(*layers)
        self.opt = optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM)
        self.grads = self.model.alloc_grads()
        self.x_tr, self.y_tr = data.x_tr, data.y_tr

    def step(self, idx: Array) -> float:
        from gradtape.losses import cross_entropy

        x = self.dev.tensor(self.x_tr[idx])
        loss = cross_entropy(self.model(x.trace(self.grads)), self.y_tr[idx])
        grads = loss.backward()
        self.opt.step(grads)
        self.model.zero_grads(grads)
        return loss.item()

    def accuracy(self, x: Array, y: Array) -> float:
        return float((self.infer(x).argmax(axis=1) == y).mean())

    def infer(self, x: Array) -> Array:
        from gradtape import no_grad

        with no_grad():  # parameters require grad: inference records nothing only under no_grad
            out: Array = self.model(self.dev.tensor(x)).numpy()
        return out


class GradtapeTorchSpellingMLP(GradtapeMLP):
    """The same model and optimizer in PyTorch's spelling: ``opt.zero_grad()``, the loss of
    the untraced input (the parameters require grad, so the pass records), ``loss.backward()``
    into ``.grad``, ``opt.step()`` reading ``.grad``."""

    def step(self, idx: Array) -> float:
        from gradtape.losses import cross_entropy

        self.opt.zero_grad()
        loss = cross_entropy(self.model(self.dev.tensor(self.x_tr[idx])), self.y_tr[idx])
        loss.backward()
        self.opt.step()
        return loss.item()


# ----- PyTorch --------------------------------------------------------------------------


class TorchMLP:
    """``nn.Sequential`` + ``F.cross_entropy`` + ``optim.SGD(momentum=0.9)``."""

    def __init__(self, torch: Any, data: Data, params: list[Array]) -> None:
        nn = torch.nn
        self.torch = torch
        self.F = torch.nn.functional
        layers: list[Any] = []
        for i in range(0, len(params), 2):
            lin = nn.Linear(params[i].shape[0], params[i].shape[1])
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(params[i].T.copy()))
                lin.bias.copy_(torch.from_numpy(params[i + 1]))
            layers.append(lin)
            if i + 2 < len(params):
                layers.append(nn.ReLU())
        self.model = nn.Sequential(*layers)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM)
        self.x_tr = torch.from_numpy(data.x_tr)
        self.y_tr = torch.from_numpy(data.y_tr)

    def step(self, idx: Array) -> float:
        i = self.torch.from_numpy(idx)
        self.opt.zero_grad()
        loss = self.F.cross_entropy(self.model(self.x_tr[i]), self.y_tr[i])
        loss.backward()
        self.opt.step()
        return float(loss.item())

    def accuracy(self, x: Array, y: Array) -> float:
        return float((self.infer(x).argmax(axis=1) == y).mean())

    def infer(self, x: Array) -> Array:
        with self.torch.no_grad():
            out: Array = self.model(self.torch.from_numpy(x)).numpy()
        return out


# ----- HIPS autograd --------------------------------------------------------------------


class AutogradMLP:
    """``autograd.value_and_grad`` of the loss over the parameter list, momentum in numpy."""

    def __init__(self, autograd: Any, anp: Any, data: Data, params: list[Array]) -> None:
        self.anp = anp
        self.params = [p.copy() for p in params]
        self.vel = [np.zeros_like(p) for p in params]
        self.x_tr, self.y_tr = data.x_tr, data.y_tr
        self.vg = autograd.value_and_grad(self.loss)

    def logits(self, params: list[Any], x: Any) -> Any:
        anp = self.anp
        w1, b1, w2, b2, w3, b3 = params
        h = anp.maximum(anp.dot(x, w1) + b1, 0.0)
        h = anp.maximum(anp.dot(h, w2) + b2, 0.0)
        return anp.dot(h, w3) + b3

    def loss(self, params: list[Any], x: Array, y: Array) -> Any:
        anp = self.anp
        z = self.logits(params, x)
        z = z - anp.max(z, axis=1, keepdims=True)
        logp = z - anp.log(anp.sum(anp.exp(z), axis=1, keepdims=True))
        return -anp.mean(logp[np.arange(len(y)), y])

    def step(self, idx: Array) -> float:
        loss, grads = self.vg(self.params, self.x_tr[idx], self.y_tr[idx])
        for p, v, g in zip(self.params, self.vel, grads, strict=True):
            v *= MOMENTUM
            v += g
            p -= LR * v
        return float(loss)

    def accuracy(self, x: Array, y: Array) -> float:
        return float((self.infer(x).argmax(axis=1) == y).mean())

    def infer(self, x: Array) -> Array:
        return np.asarray(self.logits(self.params, x))


# ----- hand-written numpy ---------------------------------------------------------------


class NumpyMLP:
    """Forward and backward written out in numpy: no tape, no closures, no bookkeeping."""

    def __init__(self, data: Data, params: list[Array]) -> None:
        self.params = [p.copy() for p in params]
        self.vel = [np.zeros_like(p) for p in params]
        self.x_tr, self.y_tr = data.x_tr, data.y_tr

    def logits(self, x: Array) -> tuple[Array, Array, Array, Array]:
        w1, b1, w2, b2, w3, b3 = self.params
        z1 = x @ w1
        z1 += b1
        h1 = np.maximum(z1, np.float32(0))
        z2 = h1 @ w2
        z2 += b2
        h2 = np.maximum(z2, np.float32(0))
        z3 = h2 @ w3
        z3 += b3
        return h1, h2, z3, z2

    def step(self, idx: Array) -> float:
        x, y = self.x_tr[idx], self.y_tr[idx]
        n = len(y)
        rows = np.arange(n)
        h1, h2, z3, _ = self.logits(x)
        _, _, w2, _, w3, _ = self.params
        z3 -= z3.max(axis=1, keepdims=True)
        e = np.exp(z3)
        s = e.sum(axis=1, keepdims=True)
        loss = float(np.log(s[:, 0]).sum() - z3[rows, y].sum()) / n
        d3 = e
        d3 /= s
        d3[rows, y] -= 1
        d3 *= np.float32(1.0 / n)
        gw3 = h2.T @ d3
        gb3 = d3.sum(axis=0)
        d2 = d3 @ w3.T
        d2 *= h2 > 0
        gw2 = h1.T @ d2
        gb2 = d2.sum(axis=0)
        d1 = d2 @ w2.T
        d1 *= h1 > 0
        gw1 = x.T @ d1
        gb1 = d1.sum(axis=0)
        for p, v, g in zip(self.params, self.vel, (gw1, gb1, gw2, gb2, gw3, gb3), strict=True):
            v *= MOMENTUM
            v += g
            p -= LR * v
        return loss

    def accuracy(self, x: Array, y: Array) -> float:
        return float((self.infer(x).argmax(axis=1) == y).mean())

    def infer(self, x: Array) -> Array:
        return self.logits(x)[2]


# ----- the workload ---------------------------------------------------------------------


def make_trainers(cfg: Config, data: Data, params: list[Array], res: WorkloadResult | None) -> dict[str, Trainer]:
    """Every installed implementation, each on its own copy of ``params``."""
    trainers: dict[str, Trainer] = {
        "gradtape": GradtapeMLP(data, params),
        "gradtape-torch": GradtapeTorchSpellingMLP(data, params),
    }
    torch = load_torch(cfg.threads)
    if torch is not None:
        trainers["torch"] = TorchMLP(torch, data, params)
    elif res is not None:
        res.note("torch: not installed, skipped")
    ag = load_autograd()
    if ag is not None:
        trainers["autograd"] = AutogradMLP(ag[0], ag[1], data, params)
    elif res is not None:
        res.note("autograd: not installed, skipped")
    trainers["numpy"] = NumpyMLP(data, params)
    return trainers


def run(cfg: Config) -> WorkloadResult:
    res = WorkloadResult(NAME, TITLE)
    data = load_data()
    if not data.real:
        res.note("scikit-learn not installed: random stand-in data, accuracy figures meaningless")
    params = init_params()
    epochs = QUICK_EPOCHS if cfg.quick else EPOCHS
    plan = epoch_batches(len(data.x_tr), epochs)
    steps = len(plan[0])

    # Epochs are interleaved across implementations (the machine's speed drifts), and each
    # timed epoch is preceded by a handover pause and two steps of a throwaway copy: numpy's
    # OpenBLAS and PyTorch's OpenMP threads both run these matmuls, and a pool still
    # spinning from the other library would slow the epoch (see common.handover).
    trainers = make_trainers(cfg, data, params, res)
    throwaway = make_trainers(cfg, data, params, None)
    per_step: dict[str, list[float]] = {name: [] for name in trainers}
    losses: dict[str, list[float]] = {name: [] for name in trainers}
    for name in trainers:
        for idx in plan[0][:5]:
            throwaway[name].step(idx)
    settle()
    for batches in plan:
        for name, t in trainers.items():
            handover()
            for idx in batches[:2]:
                throwaway[name].step(idx)
            gc.collect()
            total = 0.0
            t0 = time.perf_counter()
            for idx in batches:
                total += t.step(idx)
            per_step[name].append((time.perf_counter() - t0) / steps)
            losses[name].append(total / steps)
    acc = {name: t.accuracy(data.x_te, data.y_te) for name, t in trainers.items()}

    # Inference: the trained model's forward pass on one batch of test rows, nothing recorded
    # (gradtape: an untraced input; PyTorch: under no_grad), 100 passes per timed call.
    xb = np.ascontiguousarray(data.x_te[:BATCH])

    def passes(t: Trainer) -> Callable[[], object]:
        return lambda: [t.infer(xb) for _ in range(INFER_PASSES)]

    infer_fns = {name: passes(t) for name, t in trainers.items()}
    infer_times = blockwise(infer_fns, QUICK_INFER_REPEATS if cfg.quick else INFER_REPEATS)
    infer_us = {name: median(v) / INFER_PASSES * 1e6 for name, v in infer_times.items()}
    us = {name: median(v) * 1e6 for name, v in per_step.items()}
    res.details.update(
        {
            "epochs": epochs,
            "steps_per_epoch": steps,
            "batch": BATCH,
            "lr": LR,
            "momentum": MOMENTUM,
            "sizes": SIZES,
            "real_data": data.real,
            "us_per_step": {name: spread([s * 1e6 for s in v]) for name, v in per_step.items()},
            "us_per_inference": {name: spread([s / INFER_PASSES * 1e6 for s in v]) for name, v in infer_times.items()},
            "test_accuracy": acc,
            "train_loss_per_epoch": losses,
        }
    )
    peers = ("torch", "autograd", "numpy")
    res.rows.append(
        Row(
            NAME,
            "train step",
            "us/step",
            "lower",
            us["gradtape"],
            {p: us.get(p) for p in peers},
            Target("torch", "<=", 0.6),
        )
    )
    res.rows.append(
        Row(
            NAME,
            "train step, torch spelling (zero_grad/backward/.grad/step)",
            "us/step",
            "lower",
            us["gradtape-torch"],
            {"gradtape": us["gradtape"], "torch": us.get("torch")},
            Target("gradtape", "<=", 1.05),
        )
    )
    res.rows.append(
        Row(
            NAME,
            "inference forward (no_grad)",
            "us/pass",
            "lower",
            infer_us["gradtape"],
            {p: infer_us.get(p) for p in peers},
        )
    )
    res.rows.append(
        Row(
            NAME,
            f"test accuracy after {epochs} epochs",
            "%",
            "higher",
            acc["gradtape"] * 100,
            {p: (acc[p] * 100 if p in acc else None) for p in peers},
        )
    )
    return res
