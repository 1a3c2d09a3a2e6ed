"""A character-level language model (transformer or Mamba) on text the machine already has.

    python -m gradtape.examples.seq [--model {transformer,mamba}] [--steps N] [--batch-size B]
        [--context L] [--lr LR] [--layers K] [--seed S] [--out FILE] [--sample N]
        [--temperature T] [--no-progress] [--checkpoint]

The text: the docstrings of a fixed list of Python standard-library modules and of their
public classes and functions (``argparse``, ``collections``, ``functools``, ``json``,
``pathlib``, ``textwrap``, ...), as ``inspect.getdoc`` returns them, concatenated in a fixed
order (:func:`load_text`). Nothing is downloaded; the text is the same on every machine
with the same Python version (145k characters, 94 distinct, on 3.11.7). Characters outside printable
ASCII become ``?``. The last 10% is held out.

Model (GPT-style, Radford et al. 2018, pre-norm as Xiong et al. 2020): token embedding +
learned position embedding, ``--layers`` :class:`~gradtape.nn.TransformerEncoderLayer`
blocks (4 heads, width 64, feed-forward 256, no dropout) under a causal mask (each position
attends to itself and earlier ones only), a final LayerNorm and a linear head over the
vocabulary. With ``--model mamba`` (:class:`CharMamba`; Gu and Dao 2023): token embedding,
``--layers`` :class:`~gradtape.nn.MambaBlock` (pre-norm residual blocks around the selective
scan, width 80 so that the parameter count is within 3% of the transformer's), a final
RMSNorm and the linear head; no position embedding and no mask (causal by construction).
Both are trained with AdamW (weight decay 0.01) on next-character cross-entropy over
random windows of the training text, with gradients clipped to global norm 1.

Prints the training loss every 50 steps, then the train and held-out loss in nats and
bits per character next to the unigram baseline (the cross-entropy of the held-out text
under the training text's character frequencies, the best a model without context can
do), then a sample continued from the start of the held-out text.

Measured on a 2-core VM with Python 3.11.7 (the transformer, default flags, seed 0: 600 steps of 16 windows
of 64 characters, AdamW at peak lr 5e-3): held-out 2.79 bits/char (1.93 nats/char) against
the unigram baseline's 4.55, i.e. 1.76 bits/char below it (train 2.68); 4.5 s of training
on an idle VM, up to a minute when other jobs load the two cores. ``--model mamba``: 2.43
held-out (train 1.76) in 11.8 s. The samples have words and docstring layout, not yet sense.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradtape import Cpu, ShapeError, Tensor, checkpoint, nn, no_grad, optim
from gradtape.examples._cli import nonnegative_float, nonnegative_int, positive_int
from gradtape.losses import cross_entropy

__all__ = [
    "CharMamba",
    "CharModel",
    "CharTransformer",
    "Corpus",
    "Result",
    "causal_mask",
    "evaluate",
    "generate",
    "load_text",
    "main",
    "train",
    "unigram_bits",
]

Array = np.ndarray[Any, Any]

MODULES = (
    "argparse",
    "collections",
    "contextlib",
    "csv",
    "dataclasses",
    "functools",
    "itertools",
    "json",
    "logging",
    "pathlib",
    "string",
    "textwrap",
    "typing",
    "unittest",
)
"""The standard-library modules whose docstrings make the corpus, in order."""

PRINTABLE = "".join(chr(c) for c in range(32, 127)) + "\n"


def load_text(modules: Sequence[str] = MODULES) -> str:
    """The corpus: each module's docstring followed by the docstrings of its public
    classes, functions and methods (``inspect.getdoc``, sorted by name, duplicates once),
    separated by blank lines; characters outside printable ASCII and newline become ``?``.

    Raises:
        ImportError: a module in ``modules`` does not exist.
    """
    seen: set[str] = set()
    parts: list[str] = []

    def add(doc: str | None) -> None:
        if doc and doc not in seen:
            seen.add(doc)
            parts.append(doc)

    for name in modules:
        mod = importlib.import_module(name)
        add(inspect.getdoc(mod))
        for attr in sorted(getattr(mod, "__all__", None) or [a for a in vars(mod) if not a.startswith("_")]):
            obj = getattr(mod, attr, None)
            if obj is None or inspect.ismodule(obj):
                continue
            if getattr(obj, "__module__", name) not in (name, None) and not inspect.isclass(obj):
                continue
            add(inspect.getdoc(obj))
            if inspect.isclass(obj):
                for meth in sorted(m for m in vars(obj) if not m.startswith("_")):
                    add(inspect.getdoc(getattr(obj, meth, None)))
    text = "\n\n".join(parts)
    return "".join(c if c in PRINTABLE else "?" for c in text)


@dataclass
class Corpus:
    """The text as integer codes: ``vocab`` (the sorted distinct characters), ``train`` and
    ``held_out`` (int64 arrays of indices into ``vocab``; the last 10% is held out)."""

    vocab: str
    train: Array
    held_out: Array

    @classmethod
    def from_text(cls, text: str, held_out: float = 0.1) -> Corpus:
        """Encode ``text`` and split it; raises ValueError for a text too short to split."""
        if len(text) < 100:
            raise ValueError(f"text of {len(text)} characters is too short")
        vocab = "".join(sorted(set(text)))
        lookup = {c: i for i, c in enumerate(vocab)}
        codes = np.fromiter((lookup[c] for c in text), np.int64, len(text))
        cut = int(len(codes) * (1.0 - held_out))
        return cls(vocab, codes[:cut], codes[cut:])

    def decode(self, codes: Sequence[int] | Array) -> str:
        """The characters of ``codes``."""
        return "".join(self.vocab[int(i)] for i in codes)


def unigram_bits(train: Array, held_out: Array, vocab_size: int) -> float:
    """Cross-entropy in bits/char of ``held_out`` under the character frequencies of
    ``train`` (add-one smoothed): the no-context baseline a language model must beat."""
    counts = np.bincount(train, minlength=vocab_size).astype(np.float64) + 1.0
    p = counts / counts.sum()
    return float(-np.log2(p[held_out]).mean())


def causal_mask(length: int) -> Array:
    """``(length, length)`` boolean mask, ``True`` above the diagonal: position ``i`` may not
    attend to ``j > i`` (PyTorch's ``nn.Transformer.generate_square_subsequent_mask`` as
    booleans, gradtape's and PyTorch's convention that ``True`` blocks)."""
    return np.triu(np.ones((length, length), dtype=np.bool_), k=1)


MAMBA_WIDTH = 80
""":class:`CharMamba`'s default ``d_model``: with 2 blocks (``d_inner`` 160, ``d_state`` 16)
its parameter count (113k on the default corpus) is within 3% of the default
:class:`CharTransformer`'s (116k)."""


class _CharLM(nn.Module):
    """What both language models share: ``context``, the token embedding ``tok`` (GPT-2 style
    small init), and the run through ``blocks`` (each under :func:`gradtape.checkpoint` when
    built with ``checkpoint=True``), ``norm`` and ``head``, which each model builds after
    ``tok`` (the seeded generator draws the parameters in that order)."""

    blocks: list[Any]
    norm: Any
    head: nn.Linear[int, int]

    def __init__(self, vocab_size: int, context: int, width: int, dev: Cpu, checkpoint: bool) -> None:
        self.context = context
        self.use_checkpoint = checkpoint
        self.tok = nn.Embedding(vocab_size, width, dev=dev)
        self.tok.weight.data *= self.tok.weight.dtype.type(0.1)

    def _blocks_norm_head(self, h: Tensor[Any, Any], *extra: Any) -> Tensor[Any, Any]:
        """``head(norm(...))`` of ``h`` through every block, each called as ``block(h, *extra)``."""
        for block in self.blocks:
            h = checkpoint(block, h, *extra) if self.use_checkpoint else block(h, *extra)
        logits: Tensor[Any, Any] = self.head(self.norm(h))
        return logits


class CharTransformer(_CharLM):
    """Decoder-only transformer over characters: ``(B, L)`` codes -> ``(B, L, V)`` logits of
    the next character at each position (position ``i`` sees codes ``0..i`` only).

    Args:
        vocab_size: ``V``. context: the longest sequence ``L`` (position table size).
        width: ``E``; heads: attention heads (divides ``E``); layers: encoder blocks.
        dev: the device whose seeded generator initialises the parameters.
        checkpoint: run each block under :func:`gradtape.checkpoint` (activation
            checkpointing): its activations are recomputed in backward instead of kept, one
            extra block forward per step for memory that no longer grows with the blocks'
            intermediates; gradients are bitwise the same.

    Raises:
        ShapeError: (forward) codes not of shape ``(B, L)``, or ``L`` longer than ``context``.
    """

    def __init__(
        self,
        vocab_size: int,
        context: int,
        *,
        width: int = 64,
        heads: int = 4,
        layers: int = 2,
        dev: Cpu,
        checkpoint: bool = False,
    ) -> None:
        super().__init__(vocab_size, context, width, dev, checkpoint)
        self.pos = nn.Embedding(context, width, dev=dev)
        self.pos.weight.data *= self.pos.weight.dtype.type(0.1)  # GPT-2 style small init, as tok
        self.blocks = [
            nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True, dev=dev)
            for _ in range(layers)
        ]
        self.norm = nn.LayerNorm(width, dev=dev)
        self.head = nn.Linear(width, vocab_size, dev=dev)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Logits ``(B, L, V)`` for codes ``x (B, L)`` (an int64 tensor, as PyTorch's
        ``nn.Embedding`` takes; the embedding tables require grad, so the pass records)."""
        if x.ndim != 2:
            raise ShapeError(f"CharTransformer: expected codes of shape (B, L), got {x.shape}")
        length = x.shape[1]
        if length > self.context:
            raise ShapeError(
                f"CharTransformer: codes of shape {x.shape}: sequence length {length} > context {self.context}"
            )
        h = self.tok(x)
        h = h + self.pos(x.device.tensor(np.arange(length)))
        return self._blocks_norm_head(h, causal_mask(length))

    __call__ = forward


class CharMamba(_CharLM):
    """Mamba language model over characters (Gu and Dao 2023; the reference's
    ``MambaLMHeadModel`` without weight tying): ``(B, L)`` codes -> ``(B, L, V)`` logits of the
    next character at each position. Token embedding, ``layers`` :class:`~gradtape.nn.MambaBlock`
    (pre-norm residual blocks, RMSNorm), a final RMSNorm and a linear head; no position
    embedding (the scan and the causal convolution see the order), causal by construction.

    Args:
        vocab_size: ``V``. context: the window :func:`generate` feeds (the model itself takes
            any length). width: ``d_model``; d_state: the SSM state size; layers: blocks.
        dev: the device whose seeded generator initialises the parameters.
        checkpoint: run each block under :func:`gradtape.checkpoint`, as :class:`CharTransformer`.

    Raises:
        ShapeError: (forward) codes not of shape ``(B, L)`` with ``L >= 1``.
    """

    def __init__(
        self,
        vocab_size: int,
        context: int,
        *,
        width: int = MAMBA_WIDTH,
        d_state: int = 16,
        layers: int = 2,
        dev: Cpu,
        checkpoint: bool = False,
    ) -> None:
        super().__init__(vocab_size, context, width, dev, checkpoint)
        self.blocks = [nn.MambaBlock(width, d_state, dev=dev) for _ in range(layers)]
        self.norm = nn.RMSNorm(width, 1e-5, dev=dev)
        self.head = nn.Linear(width, vocab_size, dev=dev)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Logits ``(B, L, V)`` for codes ``x (B, L)`` (a tensor holding integers)."""
        if x.ndim != 2 or x.shape[1] == 0:
            raise ShapeError(f"CharMamba: expected codes of shape (B, L) with L >= 1, got {x.shape}")
        return self._blocks_norm_head(self.tok(x))

    __call__ = forward


CharModel = CharTransformer | CharMamba
"""Either language model: what :func:`train` builds, :func:`evaluate` and :func:`generate` take."""

MODELS = ("transformer", "mamba")


def _windows(codes: Array, starts: Array, length: int) -> tuple[Array, Array]:
    """Inputs ``codes[s : s+length]`` and next-character targets ``codes[s+1 : s+length+1]``
    for each start ``s``: two ``(len(starts), length)`` int64 arrays."""
    offsets = starts[:, None] + np.arange(length)[None, :]
    return codes[offsets], codes[offsets + 1]


@no_grad()
def evaluate(model: CharModel, dev: Cpu, codes: Array, context: int, max_windows: int = 64) -> float:
    """Mean next-character cross-entropy (nats) of ``model`` on ``codes``, over up to
    ``max_windows`` evenly spaced, non-overlapping windows of length ``context`` (untraced)."""
    n = (len(codes) - 1) // context
    starts = np.linspace(0, (n - 1) * context, min(n, max_windows)).astype(np.int64)
    x, y = _windows(codes, starts, context)
    total = 0.0
    for lo in range(0, len(starts), 16):
        logits = model(dev.tensor(x[lo : lo + 16]))
        v = logits.shape[-1]
        total += cross_entropy(logits.reshape((-1, v)), y[lo : lo + 16].reshape(-1), reduction="sum").item()
    return total / y.size


@no_grad()
def generate(model: CharModel, dev: Cpu, prompt: Array, n: int, temperature: float = 0.8, seed: int = 0) -> list[int]:
    """``n`` codes sampled after ``prompt`` (int codes, at least one): each from the softmax of
    the last position's logits divided by ``temperature`` (0: arg-max), the model seeing the
    last ``context`` codes. Deterministic for a ``seed``.

    Raises:
        ValueError: an empty prompt or a negative temperature.
    """
    if len(prompt) == 0:
        raise ValueError("generate: the prompt is empty")
    if temperature < 0:
        raise ValueError(f"generate: temperature must be >= 0, got {temperature}")
    rng = np.random.default_rng(seed)
    codes = [int(c) for c in prompt]
    out: list[int] = []
    for _ in range(n):
        window = np.asarray(codes[-model.context :], np.int64)[None, :]
        logits = model(dev.tensor(window)).cpu().numpy()[0, -1].astype(np.float64)
        if temperature == 0:
            nxt = int(logits.argmax())
        else:
            z = logits / temperature
            p = np.exp(z - z.max())
            nxt = int(rng.choice(len(p), p=p / p.sum()))
        codes.append(nxt)
        out.append(nxt)
    return out


@dataclass
class Result:
    """What :func:`train` returns: the model, its corpus, the loss every ``log_every``
    steps (nats/char), the final train and held-out losses (nats/char), the unigram
    baseline (bits/char) and the training time (seconds)."""

    model: CharModel
    corpus: Corpus
    losses: list[float]
    train_loss: float
    held_out_loss: float
    unigram_bits: float
    seconds: float


def param_groups(net: nn.Module) -> list[dict[str, Any]]:
    """AdamW parameter groups for ``net``: every parameter, except those a submodule lists in
    its ``no_weight_decay`` (``nn.Mamba``'s ``A_log`` and ``D``, as the reference marks
    them), which get a second group with ``weight_decay=0``. Empty groups are left out."""
    exempt: set[int] = set()
    for m in net.modules():
        for name in getattr(m, "no_weight_decay", ()):
            exempt.add(getattr(m, name).id)
    params = net.parameters()
    decay = [p for p in params if p.id not in exempt]
    rest = [p for p in params if p.id in exempt]
    groups: list[dict[str, Any]] = [{"params": decay}] if decay else []
    return groups + ([{"params": rest, "weight_decay": 0.0}] if rest else [])


def train(
    steps: int = 600,
    batch_size: int = 16,
    context: int = 64,
    lr: float = 5e-3,
    layers: int = 2,
    seed: int = 0,
    text: str | None = None,
    verbose: bool = True,
    progress: bool | None = None,
    log_every: int = 50,
    checkpoint: bool = False,
    model: str = "transformer",
    device: str = "cpu",
) -> Result:
    """Train a :class:`CharTransformer` (``model="transformer"``) or a :class:`CharMamba`
    (``model="mamba"``) with ``layers`` blocks on ``text`` (default :func:`load_text`).

    AdamW (betas 0.9/0.99, weight decay 0.01, none on the parameters a layer's
    ``no_weight_decay`` names: :func:`param_groups`) with the learning rate warmed up linearly over
    the first 10% of steps then cosine-annealed to 10% of ``lr``; gradients clipped to
    global norm 1 (:func:`gradtape.optim.clip_grad_norm_`). ``checkpoint``: activation
    checkpointing of each block (:class:`CharTransformer`). ``device``: ``"cpu"``, or ``"cuda"``
    to train on a GPU (the model is built on the CPU from ``seed`` and moved with
    ``model.to(device)``, the batches copied there; the transformer only: the Mamba scan has no
    GPU kernel yet).

    Raises:
        ValueError: ``steps``, ``batch_size``, ``context`` or ``layers`` < 1, a text too
            short for one window of ``context`` characters, or an unknown ``model``.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {model!r}")
    for name, count in (("steps", steps), ("batch_size", batch_size), ("context", context), ("layers", layers)):
        if count < 1:
            raise ValueError(f"{name} must be >= 1, got {count}")
    from tqdm import tqdm

    corpus = Corpus.from_text(load_text() if text is None else text)
    if len(corpus.held_out) <= context + 1 or len(corpus.train) <= context + 1:
        raise ValueError(f"text too short for windows of {context} characters")
    dev = Cpu(seed=seed)
    net: CharModel
    if model == "mamba":
        net = CharMamba(len(corpus.vocab), context, layers=layers, dev=dev, checkpoint=checkpoint)
    else:
        net = CharTransformer(len(corpus.vocab), context, layers=layers, dev=dev, checkpoint=checkpoint)
    if device != "cpu":
        from gradtape.devices.default import as_device

        dev = as_device("seq", device)
        net.to(dev)
    params = net.parameters()
    opt = optim.AdamW(param_groups(net), lr=lr, betas=(0.9, 0.99), weight_decay=0.01)
    rng = np.random.default_rng(seed)
    warmup = max(1, steps // 10)
    losses: list[float] = []
    running = 0.0
    started = time.perf_counter()
    bar = tqdm(range(steps), file=sys.stderr, leave=False, disable=None if progress is None else not progress)
    for step in bar:
        if step < warmup:
            opt.lr = lr * (step + 1) / warmup
        else:
            frac = (step - warmup) / max(1, steps - warmup)
            opt.lr = lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * frac)))
        starts = rng.integers(0, len(corpus.train) - context - 1, batch_size)
        x, y = _windows(corpus.train, starts, context)
        opt.zero_grad()
        logits = net(dev.tensor(x))  # int64 codes, as torch.tensor gives
        loss = cross_entropy(logits.reshape((-1, len(corpus.vocab))), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        running += loss.item()
        if (step + 1) % log_every == 0 or step + 1 == steps:
            done = (step % log_every) + 1
            losses.append(running / done)
            running = 0.0
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
            if verbose:
                print(f"step {step + 1:5d}/{steps}  train loss {losses[-1]:.4f} nats/char", flush=True)
    seconds = time.perf_counter() - started
    train_loss = evaluate(net, dev, corpus.train, context)
    held_out_loss = evaluate(net, dev, corpus.held_out, context)
    base = unigram_bits(corpus.train, corpus.held_out, len(corpus.vocab))
    return Result(net, corpus, losses, train_loss, held_out_loss, base, seconds)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m gradtape.examples.seq", description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=positive_int, default=600, help="optimiser steps (default: 600)")
    ap.add_argument("--batch-size", type=positive_int, default=16, help="windows per step (default: 16)")
    ap.add_argument("--context", type=positive_int, default=64, help="sequence length L (default: 64)")
    ap.add_argument("--lr", type=nonnegative_float, default=5e-3, help="peak learning rate (default: 5e-3)")
    ap.add_argument("--layers", type=positive_int, default=2, help="transformer or Mamba blocks (default: 2)")
    ap.add_argument("--seed", type=nonnegative_int, default=0, help="seeds init, batches and sampling (default: 0)")
    ap.add_argument("--out", help="save the model's parameters to this safetensors file")
    ap.add_argument("--sample", type=nonnegative_int, default=200, metavar="N", help="characters to generate (0: none)")
    ap.add_argument("--temperature", type=nonnegative_float, default=0.8, help="sampling temperature (0: greedy)")
    ap.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    ap.add_argument(
        "--checkpoint", action="store_true", help="activation checkpointing of each block (less memory, slower)"
    )
    ap.add_argument("--device", default="cpu", help="cpu (default), or cuda / cuda:N (the transformer)")
    ap.add_argument("--model", choices=MODELS, default="transformer", help="the architecture (default: transformer)")
    args = ap.parse_args(argv)
    if args.out is not None:
        parent = os.path.dirname(os.path.abspath(args.out))
        if os.path.isdir(args.out) or not os.path.isdir(parent):
            ap.error(f"argument --out: cannot write a file at {args.out!r} (is a directory or its folder is missing)")
    res = train(
        args.steps,
        args.batch_size,
        args.context,
        args.lr,
        args.layers,
        args.seed,
        progress=False if args.no_progress else None,
        checkpoint=args.checkpoint,
        model=args.model,
        device=args.device,
    )
    bits_per_nat = 1.0 / math.log(2.0)
    held_bits = res.held_out_loss * bits_per_nat
    print(
        f"trained {res.model.num_parameters():,} parameters on {len(res.corpus.train):,} characters "
        f"(vocabulary {len(res.corpus.vocab)}) in {res.seconds:.1f} s"
    )
    print(f"train loss    {res.train_loss:.4f} nats/char = {res.train_loss * bits_per_nat:.3f} bits/char")
    print(f"held-out loss {res.held_out_loss:.4f} nats/char = {held_bits:.3f} bits/char")
    print(
        f"unigram baseline (no context): {res.unigram_bits / bits_per_nat:.4f} nats/char = "
        f"{res.unigram_bits:.3f} bits/char; held-out is {res.unigram_bits - held_bits:.3f} bits/char below it"
    )
    if args.out:
        nn.save(res.model, args.out)
        print(f"saved checkpoint to {os.fspath(args.out)}")
    if args.sample:
        prompt = res.corpus.held_out[: min(args.context, 40)]
        dev: Any = res.model.parameters()[0].device  # the model's device (a Cpu or a Cuda)
        sample = generate(res.model, dev, prompt, args.sample, args.temperature, args.seed)
        print("--- sample (prompt from the held-out text, then the model) ---")
        print(res.corpus.decode(prompt) + res.corpus.decode(sample))


if __name__ == "__main__":
    main()
