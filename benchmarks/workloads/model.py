"""Workload 9, model-scale training steps and inference against PyTorch and JAX-jit (issue 17).

Each row times one FULL step of a model: forward, loss, backward, optimizer update (and, for
the transformers, gradient clipping), or, for the inference rows, a forward pass with
nothing recorded. The same model is written three times, each as its library's users write
it, and all three start from IDENTICAL weights (the gradtape module's parameters, copied by
name into the others) and read the same batches:

- gradtape: ``gradtape.nn`` layers (the examples' own model classes where the row names
  one), the batch traced into the model's ``alloc_grads()`` store,
  ``gradtape.losses.cross_entropy``, a ``gradtape.optim`` optimizer, ``zero_grads``;
  inference: an untraced input in eval mode under ``no_grad`` (no tape);
- PyTorch (CPU, ``torch.set_num_threads`` = numba's thread count): ``torch.nn`` layers with
  the same parameter names (loaded with ``load_state_dict(strict=True)``),
  ``F.cross_entropy``, ``loss.backward()``, ``torch.optim``; inference under
  ``torch.inference_mode()`` in eval mode;
- JAX: the forward written in ``jax.numpy``/``jax.lax`` over a dict of the same arrays, and
  ONE ``jax.jit`` of the whole step (``jax.value_and_grad`` of the loss, the clipping and the
  optimizer update written out with PyTorch's formulas, parameters and optimizer state
  donated); inference: ``jax.jit`` of the forward. Compilation is excluded (it happens in
  the check step). XLA's CPU thread pool keeps its default size (every usable core).

Rows (sizes from the issue):

1. digits MLP 64-128-128-10, ReLU, batch 64, SGD momentum 0.9 lr 0.05 (the digits example's
   default optimizer; ``benchmarks.workloads.mlp.load_data``'s digits);
2. the digits example's CNN (``gradtape.examples.digits.CNN``), batch 64, same SGD;
3. MLP 784-1024-1024-10, ReLU, batch 256, Adam lr 1e-3 (random images);
4. conv block: conv 3->64 k3 pad 1, ReLU, conv 64->64 k3 pad 1, ReLU, max-pool 2, flatten,
   linear to 10; 32x32 images, batch 32, cross-entropy, SGD momentum 0.9 lr 0.01;
5. the seq example's char transformer (``gradtape.examples.seq.CharTransformer``) at its
   default size (width 64, 4 heads, 2 layers, context 64, batch 16) on its corpus, AdamW
   (betas 0.9/0.99, weight decay 0.01, lr 5e-3 held constant) and clipping to global norm 1,
   as ``seq.train`` steps;
6. the same transformer at width 256, 4 heads, context 128, batch 32, same optimizer;
7. inference: the transformer of row 6, batch 32, context 128;
8. inference: the digits CNN, batch 64.

Each row also times gradtape's step under ``gradtape.capture`` (issue 30: a replay of the
recorded kernels, backward pass and optimizer step; for inference, the model), as a fourth
implementation with its own row (target: at most its eager row), where capture replays it;
where it does not, a note says why.

Before timing, every implementation takes two steps on the same batches and the losses are
compared with gradtape's: the first (same weights; float32, at most 1e-5 relative) and the
second (after one optimizer update, at most 1e-4); inference rows compare the
cross-entropy of the logits and the logits themselves. A miss is reported as a WARNING note.

Timing: rounds of blocks, gradtape, PyTorch, JAX in turn (each block after a
:func:`~benchmarks.common.handover` pause and one untimed step; thread pools spin after
work), each block a few steps, its wall time per step (``perf_counter``) and its CPU time
(``process_time`` delta, which counts every thread of the process). Reported: median wall
ms per step, CPU ms per step (total CPU / steps) and the ratios gradtape / PyTorch and
gradtape / JAX. Drift: 50 consecutive gradtape steps of row 6 from fresh weights, median
of steps 1-10 against 41-50; a slowdown above 10% is flagged.

Targets (issue 17): every training step at most 0.8x PyTorch and at most 1.0x JAX-jit; the
conv block (row 4) within 1.3x PyTorch; inference at most 1.0x PyTorch.
"""

from __future__ import annotations

import gc
import itertools
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from benchmarks.common import (
    Config,
    Row,
    Target,
    WorkloadResult,
    handover,
    load_jax,
    load_torch,
    median,
    settle,
    spread,
)

NAME = "model"
TITLE = "9. Model-scale training steps (fwd+bwd+optimizer) and inference vs PyTorch and JAX-jit (float32)"

Array = np.ndarray[Any, Any]
Params = dict[str, Array]

SEED = 0
N_BATCHES = 4
"""Distinct batches each row cycles through."""
FIRST_RTOL = 1e-5
SECOND_RTOL = 1e-4
DRIFT_STEPS = 50
DRIFT_WINDOW = 10
DRIFT_LIMIT = 1.10
LIBS = ("gradtape", "torch", "jax")
CAPTURED = "gradtape-captured"
"""A row's second gradtape implementation: its step under ``gradtape.capture`` (compiled
replays, the default)."""
FLAT = "gradtape-flat"
"""A row's third: the step under ``gradtape.capture(compile=False)`` (item-by-item replays),
timed in the same run to show what compiling the runs of traced kernels gains."""


# ----- what a row is ------------------------------------------------------------------------


@dataclass(frozen=True)
class Opt:
    """An optimizer recipe, applied with PyTorch's formulas by all three libraries.

    ``kind``: ``"sgd"`` (``buf = momentum * buf + g``, ``p -= lr * buf``), ``"adam"`` or
    ``"adamw"`` (Kingma & Ba 2015 with bias correction, ``eps`` added to the corrected
    ``sqrt(v)``; AdamW first multiplies ``p`` by ``1 - lr * weight_decay``, Loshchilov &
    Hutter 2019). ``clip``: clip the gradients to this global 2-norm first
    (``torch.nn.utils.clip_grad_norm_``), or ``None``.
    """

    kind: Literal["sgd", "adam", "adamw"]
    lr: float
    momentum: float = 0.9
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    clip: float | None = None


ADAM = Opt("adam", 1e-3)
"""Row 3's optimizer (the large MLP); workload 13 trains its GPU MLP with it too."""
CONV_SGD = Opt("sgd", 0.01, momentum=0.9)
"""Row 4's optimizer (the conv block); workload 13's GPU conv block too."""
ADAMW = Opt("adamw", 5e-3, betas=(0.9, 0.99), weight_decay=0.01, clip=1.0)
"""The transformers' optimizer (rows 5 and 6), with gradient clipping; workload 13's too."""


def make_optimizer(optim: Any, params: Any, opt: Opt) -> Any:
    """``opt``'s optimizer over ``params`` from ``optim``: ``gradtape.optim`` or
    ``torch.optim``, whose SGD, Adam and AdamW take the same arguments."""
    if opt.kind == "sgd":
        return optim.SGD(params, lr=opt.lr, momentum=opt.momentum, weight_decay=opt.weight_decay)
    cls = optim.Adam if opt.kind == "adam" else optim.AdamW
    return cls(params, lr=opt.lr, betas=opt.betas, eps=opt.eps, weight_decay=opt.weight_decay)


@dataclass(frozen=True)
class Case:
    """One row: a model in three libraries, its batches and its optimizer (``None``: inference).

    ``batches`` are ``(x, y)`` numpy pairs: ``x`` float32 inputs, or int64 character codes
    (``codes``; gradtape reads them as a float32 tensor, as its ``Embedding`` takes, PyTorch
    as int64, JAX as int32); ``y`` int64 class indices with one entry per logit row.
    ``build`` makes the gradtape module from a seeded device; ``torch_build`` a PyTorch module
    whose ``state_dict`` names equal the gradtape module's parameter names; ``torch_fwd`` and
    ``jax_fwd`` compute the logits (``(N, C)``, or ``(B, L, C)`` flattened by the step).
    """

    key: str
    label: str
    build: Callable[[Any], Any]
    torch_build: Callable[[Any], Any]
    torch_fwd: Callable[[Any, Any, Any], Any]
    jax_fwd: Callable[[Any, Any, dict[str, Any], Any], Any]
    batches: list[tuple[Array, Array]]
    opt: Opt | None
    torch_target: float
    jax_target: float | None
    codes: bool = False

    @property
    def train(self) -> bool:
        """Whether the row times training steps (else forward-only inference)."""
        return self.opt is not None


class Impl(Protocol):
    """One library's implementation of a row."""

    def step(self) -> Any:
        """One timed step on the next batch: the loss (a float) when training, the logits
        (computed, synchronised) for inference."""
        ...

    def value(self, out: Any) -> float:
        """The loss of a :meth:`step`'s result (for inference: the cross-entropy of its logits
        against the batch's labels, in float64)."""
        ...


def _ce64(logits: Array, y: Array) -> float:
    """Mean softmax cross-entropy of ``logits`` (any leading dims, classes last) against the
    flat int labels ``y``, in float64."""
    z = np.asarray(logits, np.float64).reshape(len(y), -1)
    z = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    return float((lse - z[np.arange(len(y)), y]).mean())


# ----- gradtape -----------------------------------------------------------------------------


class GradtapeImpl:
    """The row in gradtape, as its examples train: traced batch, ``alloc_grads`` store,
    ``loss.backward()``, optional ``clip_grad_norm_``, ``opt.step(grads)``, ``zero_grads``."""

    def __init__(self, case: Case, model: Any, dev: Any) -> None:
        from gradtape import optim

        self.case, self.model, self.dev = case, model, dev
        self.params = model.parameters()
        self.grads = model.alloc_grads()
        self.xs = [x if case.codes else x.astype(np.float32) for x, _ in case.batches]  # codes: int indices
        self.ys = [y.reshape(-1) for _, y in case.batches]
        self.i = 0
        self.opt: Any = None
        if case.opt is None:
            model.eval()
        else:
            self.opt = make_optimizer(optim, self.params, case.opt)

    def train_step(self, x: Any, y: Array) -> Any:
        """One training step on the tensor ``x`` and labels ``y``; returns the loss tensor."""
        from gradtape import optim
        from gradtape.losses import cross_entropy

        logits = self.model(x.trace(self.grads))
        if logits.ndim == 3:
            logits = logits.reshape((-1, logits.shape[-1]))
        loss = cross_entropy(logits, y)
        grads = loss.backward()  # the store x was traced into
        assert self.case.opt is not None
        if self.case.opt.clip is not None:
            optim.clip_grad_norm_(self.params, grads, self.case.opt.clip)
        self.opt.step(grads)
        self.model.zero_grads(grads)
        return loss

    def step(self) -> Any:
        k = self.i % len(self.xs)
        self.i += 1
        x = self.dev.tensor(self.xs[k])
        if self.opt is None:
            from gradtape import no_grad

            with no_grad():  # parameters require grad: inference records nothing only under no_grad
                return self.model(x).numpy()
        return self.train_step(x, self.ys[k]).item()

    def value(self, out: Any) -> float:
        return float(out) if self.case.train else _ce64(out, self.ys[(self.i - 1) % len(self.ys)])


class CapturedImpl(GradtapeImpl):
    """A row in gradtape under :func:`gradtape.capture` (issue 30): :class:`GradtapeImpl`'s
    ``train_step`` (for inference, the model under ``no_grad``) as a captured function of the
    batch, which is made a tensor outside the captured call; the first two calls (the loss
    check) run eagerly and record, the timed ones replay. ``predict.reason`` says why a row's
    step cannot be replayed (it then runs eagerly and is not timed)."""

    def __init__(self, case: Case, model: Any, dev: Any, compile: bool = True) -> None:
        import gradtape

        super().__init__(case, model, dev)
        self.predict: Any = gradtape.capture(model if case.opt is None else self.train_step, compile=compile)

    def step(self) -> Any:
        from gradtape import no_grad

        k = self.i % len(self.xs)
        self.i += 1
        x = self.dev.tensor(self.xs[k])
        if self.opt is not None:
            return self.predict(x, self.ys[k]).item()
        with no_grad():
            return self.predict(x).numpy()


# ----- PyTorch ------------------------------------------------------------------------------


class TorchImpl:
    """The row in PyTorch: ``zero_grad``, forward, ``F.cross_entropy``, ``backward``,
    optional ``clip_grad_norm_``, ``opt.step()``; inference under ``inference_mode``."""

    def __init__(self, torch: Any, case: Case, params: Params) -> None:
        self.torch, self.case = torch, case
        self.model = case.torch_build(torch)
        self.model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in params.items()}, strict=True)
        self.xs = [torch.from_numpy(x if case.codes else x.astype(np.float32)) for x, _ in case.batches]
        self.ys = [torch.from_numpy(y.reshape(-1)) for _, y in case.batches]
        self.ys_np = [y.reshape(-1) for _, y in case.batches]
        self.i = 0
        self.opt: Any = None
        if case.opt is None:
            self.model.eval()
        else:
            self.opt = make_optimizer(torch.optim, list(self.model.parameters()), case.opt)

    def step(self) -> Any:
        torch = self.torch
        k = self.i % len(self.xs)
        self.i += 1
        if self.opt is None:
            with torch.inference_mode():
                return self.case.torch_fwd(torch, self.model, self.xs[k])
        self.opt.zero_grad(set_to_none=True)
        logits = self.case.torch_fwd(torch, self.model, self.xs[k])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), self.ys[k])
        loss.backward()
        assert self.case.opt is not None
        if self.case.opt.clip is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.case.opt.clip)
        self.opt.step()
        return float(loss.item())

    def value(self, out: Any) -> float:
        return float(out) if self.case.train else _ce64(out.numpy(), self.ys_np[(self.i - 1) % len(self.ys_np)])


# ----- JAX ----------------------------------------------------------------------------------


def jax_cross_entropy(jax: Any, jnp: Any, logits: Any, y: Any) -> Any:
    """Mean softmax cross-entropy of ``logits (N, C)`` against int labels ``y (N,)``."""
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, y[:, None], axis=-1)[:, 0]
    return jnp.mean(lse - picked)


def jax_opt_init(jnp: Any, opt: Opt, params: dict[str, Any]) -> dict[str, Any]:
    """The optimizer state of :func:`jax_opt_update`: zero buffers (and a step count)."""
    if opt.kind == "sgd":
        return {"buf": {k: jnp.zeros_like(p) for k, p in params.items()}}
    return {
        "t": jnp.zeros((), jnp.float32),
        "m": {k: jnp.zeros_like(p) for k, p in params.items()},
        "v": {k: jnp.zeros_like(p) for k, p in params.items()},
    }


def jax_opt_update(
    jnp: Any, opt: Opt, params: dict[str, Any], state: dict[str, Any], grads: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(params, state)`` after one step of ``opt`` (PyTorch's formulas, see :class:`Opt`)."""
    if opt.clip is not None:
        total = jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values()))
        coef = jnp.minimum(1.0, opt.clip / (total + 1e-6))
        grads = {k: g * coef for k, g in grads.items()}
    if opt.kind == "sgd":
        buf = {k: opt.momentum * state["buf"][k] + grads[k] + opt.weight_decay * params[k] for k in params}
        return {k: params[k] - opt.lr * buf[k] for k in params}, {"buf": buf}
    b1, b2 = opt.betas
    t = state["t"] + 1.0
    c1, c2 = 1.0 - b1**t, jnp.sqrt(1.0 - b2**t)
    if opt.kind == "adam" and opt.weight_decay:
        grads = {k: g + opt.weight_decay * params[k] for k, g in grads.items()}
    m = {k: b1 * state["m"][k] + (1.0 - b1) * grads[k] for k in params}
    v = {k: b2 * state["v"][k] + (1.0 - b2) * grads[k] * grads[k] for k in params}
    new = {}
    for k, p in params.items():
        if opt.kind == "adamw":
            p = p * (1.0 - opt.lr * opt.weight_decay)
        new[k] = p - (opt.lr / c1) * m[k] / (jnp.sqrt(v[k]) / c2 + opt.eps)
    return new, {"t": t, "m": m, "v": v}


class JaxImpl:
    """The row in JAX: one ``jax.jit`` of loss, ``value_and_grad``, clipping and optimizer
    update, parameters and state donated; inference: ``jax.jit`` of the forward."""

    def __init__(self, jax: Any, jnp: Any, case: Case, params: Params) -> None:
        self.case = case
        self.params = {k: jnp.asarray(v) for k, v in params.items()}
        self.xs = [jnp.asarray(x.astype(np.int32) if case.codes else x.astype(np.float32)) for x, _ in case.batches]
        self.ys = [jnp.asarray(y.reshape(-1).astype(np.int32)) for _, y in case.batches]
        self.ys_np = [y.reshape(-1) for _, y in case.batches]
        self.i = 0
        fwd = case.jax_fwd
        opt = case.opt
        if opt is None:
            self.forward: Any = jax.jit(lambda p, x: fwd(jax, jnp, p, x))
            return
        self.state = jax_opt_init(jnp, opt, self.params)

        def loss_fn(p: dict[str, Any], x: Any, y: Any) -> Any:
            logits = fwd(jax, jnp, p, x)
            return jax_cross_entropy(jax, jnp, logits.reshape(-1, logits.shape[-1]), y)

        def train_step(p: dict[str, Any], s: dict[str, Any], x: Any, y: Any) -> Any:
            loss, g = jax.value_and_grad(loss_fn)(p, x, y)
            p, s = jax_opt_update(jnp, opt, p, s, g)
            return p, s, loss

        self.train_step: Any = jax.jit(train_step, donate_argnums=(0, 1))

    def step(self) -> Any:
        k = self.i % len(self.xs)
        self.i += 1
        if self.case.opt is None:
            return self.forward(self.params, self.xs[k]).block_until_ready()
        self.params, self.state, loss = self.train_step(self.params, self.state, self.xs[k], self.ys[k])
        return float(loss)

    def value(self, out: Any) -> float:
        return float(out) if self.case.train else _ce64(np.asarray(out), self.ys_np[(self.i - 1) % len(self.ys_np)])


# ----- the models: PyTorch modules with gradtape's names, JAX forwards ----------------------


def _jax_linear(p: dict[str, Any], name: str, x: Any) -> Any:
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def _jax_conv(jax: Any, p: dict[str, Any], name: str, x: Any) -> Any:
    """``x (B, C, H, W)`` convolved with ``weight (O, C, 3, 3)``, stride 1, padding 1, + bias."""
    y = jax.lax.conv_general_dilated(
        x, p[f"{name}.weight"], (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
    )
    return y + p[f"{name}.bias"][None, :, None, None]


def _jax_maxpool2(jax: Any, jnp: Any, x: Any) -> Any:
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def mlp_case(key: str, label: str, sizes: tuple[int, ...], batches: list[tuple[Array, Array]], opt: Opt) -> Case:
    """A ReLU MLP ``nn.Sequential(Linear, ReLU, ..., Linear)`` (names ``0.weight``, ``2.weight``, ...)."""
    pairs = list(itertools.pairwise(sizes))

    def build(dev: Any) -> Any:
        from gradtape import nn

        layers: list[Any] = []
        for i, (a, b) in enumerate(pairs):
            layers.append(nn.Linear(a, b, dev=dev))
            if i + 1 < len(pairs):
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    def torch_build(torch: Any) -> Any:
        layers: list[Any] = []
        for i, (a, b) in enumerate(pairs):
            layers.append(torch.nn.Linear(a, b))
            if i + 1 < len(pairs):
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers)

    def jax_fwd(jax: Any, jnp: Any, p: dict[str, Any], x: Any) -> Any:
        for i in range(len(pairs)):
            x = _jax_linear(p, str(2 * i), x)
            if i + 1 < len(pairs):
                x = jax.nn.relu(x)
        return x

    return Case(key, label, build, torch_build, lambda torch, m, x: m(x), jax_fwd, batches, opt, 0.8, 1.0)


def digits_cnn_case(key: str, label: str, batches: list[tuple[Array, Array]], opt: Opt | None) -> Case:
    """``gradtape.examples.digits.CNN`` (``features.0``/``features.3`` convs, ``head``)."""

    def build(dev: Any) -> Any:
        from gradtape.examples.digits import CNN

        return CNN(dev)

    def torch_build(torch: Any) -> Any:
        nn = torch.nn
        features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        return nn.ModuleDict({"features": features, "head": nn.Linear(128, 10)})

    def torch_fwd(torch: Any, m: Any, x: Any) -> Any:
        return m["head"](m["features"](x.reshape(x.shape[0], 1, 8, 8)))

    def jax_fwd(jax: Any, jnp: Any, p: dict[str, Any], x: Any) -> Any:
        h = x.reshape(x.shape[0], 1, 8, 8)
        h = _jax_maxpool2(jax, jnp, jax.nn.relu(_jax_conv(jax, p, "features.0", h)))
        h = _jax_maxpool2(jax, jnp, jax.nn.relu(_jax_conv(jax, p, "features.3", h)))
        return _jax_linear(p, "head", h.reshape(h.shape[0], -1))

    train = opt is not None
    return Case(
        key, label, build, torch_build, torch_fwd, jax_fwd, batches, opt, 0.8 if train else 1.0, 1.0 if train else None
    )


def conv_block_case(
    key: str, label: str, channels: int, side: int, batches: list[tuple[Array, Array]], opt: Opt
) -> Case:
    """conv 3->C k3 pad 1, ReLU, conv C->C k3 pad 1, ReLU, max-pool 2, flatten, linear to 10
    on ``side x side`` images (``nn.Sequential``: names ``0.``, ``2.``, ``6.``)."""
    flat = channels * (side // 2) ** 2

    def build(dev: Any) -> Any:
        from gradtape import nn

        return nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1, dev=dev),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1, dev=dev),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(flat, 10, dev=dev),
        )

    def torch_build(torch: Any) -> Any:
        nn = torch.nn
        return nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(flat, 10),
        )

    def jax_fwd(jax: Any, jnp: Any, p: dict[str, Any], x: Any) -> Any:
        h = jax.nn.relu(_jax_conv(jax, p, "0", x))
        h = _jax_maxpool2(jax, jnp, jax.nn.relu(_jax_conv(jax, p, "2", h)))
        return _jax_linear(p, "6", h.reshape(h.shape[0], -1))

    return Case(key, label, build, torch_build, lambda torch, m, x: m(x), jax_fwd, batches, opt, 1.3, 1.0)


def _jax_layer_norm(jnp: Any, p: dict[str, Any], name: str, x: Any, eps: float = 1e-5) -> Any:
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + eps) * p[f"{name}.weight"] + p[f"{name}.bias"]


def transformer_case(
    key: str,
    label: str,
    vocab: int,
    context: int,
    width: int,
    heads: int,
    layers: int,
    batches: list[tuple[Array, Array]],
    opt: Opt | None,
) -> Case:
    """``gradtape.examples.seq.CharTransformer`` (pre-norm encoder blocks under a causal mask,
    feed-forward ``4 * width``, no dropout); PyTorch: ``nn.TransformerEncoderLayer``
    (``batch_first``, ``norm_first``) in a ``ModuleDict`` with the same names; JAX: the block
    written out (Vaswani et al. 2017, pre-norm as Xiong et al. 2020)."""
    head_dim = width // heads

    def build(dev: Any) -> Any:
        from gradtape.examples.seq import CharTransformer

        return CharTransformer(vocab, context, width=width, heads=heads, layers=layers, dev=dev)

    def torch_build(torch: Any) -> Any:
        nn = torch.nn
        blocks = [
            nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
            for _ in range(layers)
        ]
        return nn.ModuleDict(
            {
                "tok": nn.Embedding(vocab, width),
                "pos": nn.Embedding(context, width),
                "blocks": nn.ModuleList(blocks),
                "norm": nn.LayerNorm(width),
                "head": nn.Linear(width, vocab),
            }
        )

    def torch_fwd(torch: Any, m: Any, x: Any) -> Any:
        length = x.shape[1]
        h = m["tok"](x) + m["pos"](torch.arange(length))
        mask = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        for block in m["blocks"]:
            h = block(h, src_mask=mask, is_causal=True)
        return m["head"](m["norm"](h))

    def jax_fwd(jax: Any, jnp: Any, p: dict[str, Any], x: Any) -> Any:
        b, length = x.shape
        h = p["tok.weight"][x] + p["pos.weight"][:length]
        blocked = jnp.triu(jnp.ones((length, length), dtype=bool), k=1)
        for i in range(layers):
            pre = f"blocks.{i}."
            a = _jax_layer_norm(jnp, p, pre + "norm1", h)
            qkv = a @ p[pre + "self_attn.in_proj_weight"].T + p[pre + "self_attn.in_proj_bias"]
            qkv = qkv.reshape(b, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            scores = qkv[0] @ qkv[1].transpose(0, 1, 3, 2) * (1.0 / math.sqrt(head_dim))
            attn = jax.nn.softmax(jnp.where(blocked, -jnp.inf, scores), axis=-1)
            o = (attn @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, length, width)
            h = h + _jax_linear(p, pre + "self_attn.out_proj", o)
            f = _jax_layer_norm(jnp, p, pre + "norm2", h)
            h = h + _jax_linear(p, pre + "linear2", jax.nn.relu(_jax_linear(p, pre + "linear1", f)))
        return _jax_linear(p, "head", _jax_layer_norm(jnp, p, "norm", h))

    train = opt is not None
    return Case(
        key,
        label,
        build,
        torch_build,
        torch_fwd,
        jax_fwd,
        batches,
        opt,
        0.8 if train else 1.0,
        1.0 if train else None,
        codes=True,
    )


# ----- the rows -----------------------------------------------------------------------------


def _image_batches(rng: np.random.Generator, shape: tuple[int, ...], classes: int = 10) -> list[tuple[Array, Array]]:
    return [
        (rng.standard_normal(shape, dtype=np.float32), rng.integers(0, classes, shape[0]).astype(np.int64))
        for _ in range(N_BATCHES)
    ]


def _digits_batches(batch: int, tiny: bool) -> list[tuple[Array, Array]]:
    """Batches of the digits training split (random stand-ins when scikit-learn is missing
    or ``tiny``)."""
    if tiny:
        return _image_batches(np.random.default_rng(SEED), (batch, 64))
    from benchmarks.workloads.mlp import load_data

    data = load_data()
    order = np.random.default_rng(SEED + 1).permutation(len(data.x_tr))
    return [
        (data.x_tr[order[k * batch : (k + 1) * batch]], data.y_tr[order[k * batch : (k + 1) * batch]])
        for k in range(N_BATCHES)
    ]


def _char_batches(codes: Array, batch: int, context: int, seed: int) -> list[tuple[Array, Array]]:
    """Random windows of ``codes`` and their next-character targets, as ``seq.train`` draws them."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N_BATCHES):
        starts = rng.integers(0, len(codes) - context - 1, batch)
        offsets = starts[:, None] + np.arange(context)[None, :]
        out.append((codes[offsets], codes[offsets + 1]))
    return out


def make_cases(tiny: bool = False) -> list[Case]:
    """The eight rows at the issue's sizes, or (``tiny``) at toy sizes with random data for
    the smoke test (same structure, each step milliseconds)."""
    rng = np.random.default_rng(SEED)
    sgd = Opt("sgd", 0.05, momentum=0.9)
    if tiny:
        codes = rng.integers(0, 20, 4000).astype(np.int64)
        vocab, seq_default, seq_big = 20, (8, 16, 4, 2), (8, 16, 4, 2)  # context, width, heads, batch
        digits_b, big_mlp, big_b, conv_c, conv_side, conv_b = 8, (784, 32, 32, 10), 8, 8, 8, 2
    else:
        from gradtape.examples.seq import Corpus, load_text

        corpus = Corpus.from_text(load_text())
        codes, vocab = corpus.train, len(corpus.vocab)
        seq_default, seq_big = (64, 64, 4, 16), (128, 256, 4, 32)
        digits_b, big_mlp, big_b, conv_c, conv_side, conv_b = 64, (784, 1024, 1024, 10), 256, 64, 32, 32
    digits = _digits_batches(digits_b, tiny)
    (ctx5, w5, h5, b5), (ctx6, w6, h6, b6) = seq_default, seq_big
    seq5 = _char_batches(codes, b5, ctx5, SEED)
    seq6 = _char_batches(codes, b6, ctx6, SEED + 1)
    sz = "-".join(map(str, big_mlp))
    return [
        mlp_case("digits_mlp", f"1 digits MLP 64-128-128-10 b{digits_b} SGD", (64, 128, 128, 10), digits, sgd),
        digits_cnn_case("digits_cnn", f"2 digits CNN b{digits_b} SGD", digits, sgd),
        mlp_case("mlp_784", f"3 MLP {sz} b{big_b} Adam", big_mlp, _image_batches(rng, (big_b, 784)), ADAM),
        conv_block_case(
            "conv_block",
            f"4 conv block 3-{conv_c}-{conv_c} {conv_side}x{conv_side} b{conv_b} SGD",
            conv_c,
            conv_side,
            _image_batches(rng, (conv_b, 3, conv_side, conv_side)),
            CONV_SGD,
        ),
        transformer_case(
            "seq_default", f"5 char transformer d{w5} L{ctx5} b{b5} AdamW", vocab, ctx5, w5, h5, 2, seq5, ADAMW
        ),
        transformer_case(
            "seq_256", f"6 char transformer d{w6} L{ctx6} b{b6} AdamW", vocab, ctx6, w6, h6, 2, seq6, ADAMW
        ),
        transformer_case(
            "infer_seq_256", f"7 inference: transformer d{w6} L{ctx6} b{b6}", vocab, ctx6, w6, h6, 2, seq6, None
        ),
        digits_cnn_case("infer_digits_cnn", f"8 inference: digits CNN b{digits_b}", digits, None),
    ]


# ----- running a row ------------------------------------------------------------------------


def make_impls(case: Case, cfg: Config, use_jax: bool = True) -> tuple[dict[str, Impl], list[str]]:
    """Every installed library's implementation of ``case`` from the same initial weights
    (gradtape's, seed :data:`SEED`), and the notes on peers skipped."""
    from gradtape import Cpu

    dev = Cpu(seed=SEED)
    model = case.build(dev)
    params: Params = {name: np.array(t.data, copy=True) for name, t in model.named_parameters()}
    impls: dict[str, Impl] = {"gradtape": GradtapeImpl(case, model, dev)}
    notes: list[str] = []
    # the same step under gradtape.capture, on its own copy of the model (training moves the
    # weights: the loss check compares both from the initial ones)
    cmodel = case.build(Cpu(seed=SEED))
    captured = CapturedImpl(case, cmodel, dev)
    reason = _capture_reason(captured)
    if reason is None:
        impls[CAPTURED] = CapturedImpl(case, case.build(Cpu(seed=SEED)), dev)
        impls[FLAT] = CapturedImpl(case, case.build(Cpu(seed=SEED)), dev, compile=False)
    else:
        notes.append(f"{case.label}: gradtape.capture runs it eagerly (not timed): it {reason}")
    torch = load_torch(cfg.threads)
    if torch is None:
        notes.append("torch: not installed, skipped")
    else:
        impls["torch"] = TorchImpl(torch, case, params)
    jx = load_jax() if use_jax else None
    if jx is None:
        notes.append("jax: not installed, skipped" if use_jax else "jax: disabled")
    else:
        impls["jax"] = JaxImpl(jx[0], jx[1], case, params)
    return impls, notes


def _capture_reason(captured: CapturedImpl) -> str | None:
    """Why ``captured``'s step cannot be replayed (four calls: eager, recorded, recorded
    again where the step makes constants from host data, replayed), or ``None`` where it can."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the refusal is reported as a note
        for _ in range(4):
            captured.step()
    reason: str | None = captured.predict.reason
    return reason


def check_losses(impls: dict[str, Impl], steps: int = 2) -> dict[str, list[float]]:
    """The first ``steps`` losses of each implementation (training rows: consecutive steps
    from the shared initial weights; inference: the logits' cross-entropy on the first
    batches). The first call also compiles (numba, JAX)."""
    out: dict[str, list[float]] = {}
    for name, impl in impls.items():
        out[name] = [impl.value(impl.step()) for _ in range(steps)]
    return out


def loss_gaps(losses: dict[str, list[float]]) -> dict[str, list[float]]:
    """``|loss_peer - loss_gradtape| / |loss_gradtape|`` for each peer and step."""
    ref = losses["gradtape"]
    return {
        name: [abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ls, ref, strict=True)]
        for name, ls in losses.items()
        if name != "gradtape"
    }


@dataclass
class Timing:
    """Wall seconds of each timed step and CPU seconds (``process_time``) of each block."""

    wall: list[float]
    cpu: list[float]
    steps: int

    def wall_ms(self) -> float:
        """Median wall milliseconds per step."""
        return median(self.wall) * 1e3

    def cpu_ms(self) -> float:
        """CPU milliseconds per step: all the blocks' CPU time over all their steps."""
        return sum(self.cpu) / self.steps * 1e3


def time_impls(
    impls: dict[str, Impl], rounds: int, budget: float, pause: bool = True, fixed: int | None = None
) -> dict[str, Timing]:
    """Rounds of blocks (gradtape, torch, jax in turn), each after a handover pause (unless
    not ``pause``) and one untimed step, of ``budget / (a step's time)`` steps (2 to 50; a
    step's time: the median of three steps before the rounds), or ``fixed`` steps."""
    wait = handover if pause else (lambda: None)
    per_block: dict[str, int] = dict.fromkeys(impls, fixed or 0)
    for name, impl in impls.items():
        if fixed is not None:
            continue
        wait()
        impl.step()
        probe = []
        for _ in range(3):
            t0 = time.perf_counter()
            impl.step()
            probe.append(time.perf_counter() - t0)
        per_block[name] = min(50, max(2, round(budget / max(median(probe), 1e-6))))
    out = {name: Timing([], [], 0) for name in impls}
    for _ in range(rounds):
        for name, impl in impls.items():
            wait()
            impl.step()
            gc.collect()
            rec = out[name]
            c0 = time.process_time()
            for _ in range(per_block[name]):
                t0 = time.perf_counter()
                impl.step()
                rec.wall.append(time.perf_counter() - t0)
            rec.cpu.append(time.process_time() - c0)
            rec.steps += per_block[name]
    return out


def drift(case: Case, cfg: Config, steps: int, window: int) -> tuple[list[float], float, float]:
    """``steps`` consecutive gradtape training steps of ``case`` from fresh weights: the wall
    seconds of each, and the median of the first and of the last ``window`` steps."""
    impls, _ = make_impls(case, cfg, use_jax=False)
    impl = impls["gradtape"]
    handover()
    gc.collect()
    wall = []
    for _ in range(steps):
        t0 = time.perf_counter()
        impl.step()
        wall.append(time.perf_counter() - t0)
    return wall, median(wall[:window]), median(wall[-window:])


def run(cfg: Config, tiny: bool = False, use_jax: bool = True) -> WorkloadResult:
    """Time every row (see the module docstring). ``tiny``: toy sizes, one round of two steps,
    no handover pauses, a 6-step drift check (the smoke test); ``use_jax=False`` runs as if JAX were not installed."""
    res = WorkloadResult(NAME, TITLE)
    rounds = 1 if tiny else cfg.reps(5, 2)
    budget = 0.02 if tiny else (0.25 if cfg.quick else 0.6)
    jx = load_jax() if use_jax else None
    res.details["jax"] = None if jx is None else str(jx[0].__version__)
    res.details["rounds"] = rounds
    skipped: set[str] = set()
    cases = make_cases(tiny)
    loads: list[float] = []
    for case in cases:
        load_before = _load()
        impls, notes = make_impls(case, cfg, use_jax)
        for n in notes:
            if n not in skipped:
                skipped.add(n)
                res.note(n)
        losses = check_losses(impls)
        gaps = loss_gaps(losses)
        for peer, (g1, g2) in gaps.items():
            if g1 > FIRST_RTOL or g2 > SECOND_RTOL:
                res.note(
                    f"WARNING {case.label}: {peer}'s losses {losses[peer]} differ from gradtape's "
                    f"{losses['gradtape']} (relative {g1:.2g}, {g2:.2g}; limits {FIRST_RTOL:g}, {SECOND_RTOL:g})"
                )
        settle()
        times = time_impls(impls, rounds, budget, pause=not tiny, fixed=2 if tiny else None)
        del impls
        gc.collect()
        wall = {name: t.wall_ms() for name, t in times.items()}
        cpu = {name: t.cpu_ms() for name, t in times.items()}
        res.details[case.key] = {
            "label": case.label,
            "train": case.train,
            "losses_first_two_steps": losses,
            "loss_rel_gap_vs_gradtape": gaps,
            "ms_per_step": {name: spread([w * 1e3 for w in t.wall]) for name, t in times.items()},
            "cpu_ms_per_step": cpu,
            "steps_timed": {name: t.steps for name, t in times.items()},
            "load_average_1min_before_after": [load_before, _load()],
        }
        loads += [load_before, _load()]
        what = "train step" if case.train else "forward"
        gt = wall["gradtape"]
        res.rows.append(
            Row(
                NAME,
                f"{case.label} {what}",
                "ms",
                "lower",
                gt,
                {"torch": wall.get("torch")},
                Target("torch", "<=", case.torch_target),
            )
        )
        res.rows.append(
            Row(
                NAME,
                f"{case.label} {what}",
                "ms",
                "lower",
                gt,
                {"jax": wall.get("jax")},
                None if case.jax_target is None else Target("jax", "<=", case.jax_target),
            )
        )
        if CAPTURED in wall:
            res.rows.append(
                Row(
                    NAME,
                    f"{case.label} {what}, gradtape.capture",
                    "ms",
                    "lower",
                    wall[CAPTURED],
                    {"gradtape": gt, "flat": wall.get(FLAT), "torch": wall.get("torch"), "jax": wall.get("jax")},
                    Target("gradtape", "<=", 1.0),
                )
            )
        res.rows.append(
            Row(
                NAME,
                f"{case.label} CPU time",
                "CPU ms",
                "lower",
                cpu["gradtape"],
                {p: cpu.get(p) for p in ("torch", "jax")},
            )
        )
        res.note(_summary(case, times))

    seq6 = next(c for c in cases if c.key == "seq_256")
    steps, window = (6, 2) if tiny else (DRIFT_STEPS, DRIFT_WINDOW)
    wall6, first, last = drift(seq6, cfg, steps, window)
    slowdown = last / first
    res.details["drift"] = {
        "case": seq6.label,
        "ms_per_step": [w * 1e3 for w in wall6],
        f"median_ms_steps_1_{window}": first * 1e3,
        f"median_ms_steps_{steps - window + 1}_{steps}": last * 1e3,
        "ratio": slowdown,
        "flagged": slowdown > DRIFT_LIMIT,
    }
    res.rows.append(
        Row(
            NAME,
            f"drift row 6 gradtape: median steps {steps - window + 1}-{steps} / 1-{window}",
            "x",
            "lower",
            slowdown,
        )
    )
    flag = f"SLOWDOWN > {DRIFT_LIMIT - 1:.0%} FLAGGED" if slowdown > DRIFT_LIMIT else "ok"
    res.note(
        f"drift ({seq6.label}, {steps} gradtape steps): median steps 1-{window} {first * 1e3:.1f} ms, "
        f"steps {steps - window + 1}-{steps} {last * 1e3:.1f} ms, ratio {slowdown:.3f} ({flag})"
    )
    if jx is not None:
        res.note("JAX: XLA's CPU thread pool at its default size (every usable core); compile time excluded")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if loads and max(loads) > cpus:
        res.note(
            f"machine shared: 1-minute load average {min(loads):.1f}-{max(loads):.1f} on {cpus} CPUs during the "
            "rows; the multi-threaded libraries (gradtape's numba/OpenBLAS pools, PyTorch's OpenMP) slow down "
            "far more than their CPU time under such load, so the wall figures are noisy"
        )
    return res


def _load() -> float:
    """The 1-minute load average (other processes' jobs compete for the cores), or -1."""
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return -1.0


def _summary(case: Case, times: dict[str, Timing]) -> str:
    """One line per row: for each library the median wall ms per step, the fastest step (the
    figure least disturbed by other jobs on a shared machine) and the CPU ms per step; then
    the ratios of the medians."""
    wall = {n: t.wall_ms() for n, t in times.items()}
    parts = [
        f"{n} {wall[n]:.2f} ms (min {min(times[n].wall) * 1e3:.2f}, CPU {times[n].cpu_ms():.2f})"
        for n in (*LIBS, CAPTURED, FLAT)
        if n in wall
    ]
    ratios = [f"gradtape/{n} {wall['gradtape'] / wall[n]:.2f}x" for n in LIBS[1:] if n in wall]
    return f"{case.label}: " + ", ".join(parts) + ("; " + ", ".join(ratios) if ratios else "")
