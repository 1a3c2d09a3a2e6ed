"""karpathy/nanoGPT (``model.py`` and ``train.py``'s loop) ported to gradtape by renaming.

    python -m gradtape.examples.nanogpt [--max_iters=N] [--batch_size=B] [--block_size=T]
        [--n_layer=L] [--n_head=H] [--n_embd=C] [--dropout=P] [--bias=True|False]
        [--learning_rate=LR] [--gradient_accumulation_steps=K] [--grad_clip=G] [--seed=S]
        [--max_new_tokens=N] [--temperature=T] [--top_k=K] ... (every :class:`TrainConfig` field)

The model is nanoGPT's ``model.py`` (https://github.com/karpathy/nanoGPT), structure and names
kept, so its ``state_dict`` has nanoGPT's keys: :class:`GPTConfig`; :class:`LayerNorm` with an
optional bias; :class:`CausalSelfAttention` (one ``c_attn`` projection split into q, k, v,
``scaled_dot_product_attention(..., is_causal=True)``); :class:`MLP` with GELU; pre-norm
:class:`Block`; :class:`GPT` with the token embedding tied to ``lm_head``, ``_init_weights``
applied with ``self.apply``, GPT-2's scaled init of the ``c_proj`` weights,
``configure_optimizers`` (AdamW, 2-D tensors decayed, the others not) and ``generate``
(temperature, ``topk`` cut-off, ``multinomial`` sampling). The training loop is
``train.py``'s: warm-up then cosine learning rate (:func:`get_lr`), gradient accumulation
(the loss divided by the number of micro-steps, ``backward()`` adding into ``.grad``),
``clip_grad_norm_``, ``optimizer.zero_grad(set_to_none=True)`` after the step, and the loss
estimate of ``estimate_loss`` on both splits every ``eval_interval`` iterations.

What changes in the port (each also marked in the code):

- ``dev=`` is passed to the layers (gradtape's layers take their device and generator);
  ``torch.arange`` / ``torch.randint`` are numpy's, made tensors with ``dev.tensor``.
- PyTorch's spellings throughout (``x.view(B, T, C)``, ``.contiguous()``, ``x.size()``,
  ``p.numel()``, ``p.dim()``, ``F.cat(..., dim=1)``, and the in-place
  ``logits[logits < v[:, [-1]]] = -inf`` of ``generate``, allowed there because it runs under
  ``no_grad()``: see issue 27).
- Two keyword extras: ``GPT(..., verbose=False)`` silences nanoGPT's prints, and
  ``generate(..., generator=rng)`` draws from a numpy Generator (``torch.multinomial``'s
  ``generator=``; default the device's).
- Left out: the slow-attention fallback for PyTorch < 2.0, ``from_pretrained`` (GPT-2
  weights need a download), ``crop_block_size``, ``estimate_mfu`` (an A100's peak),
  DDP, autocast/GradScaler (float32 on the CPU), ``torch.compile``, wandb and checkpoint
  files. ``configure_optimizers``'s fused AdamW is CUDA's; gradtape's AdamW is one fused
  numba pass per parameter anyway.
- The data: no download. The character-level text of :mod:`gradtape.examples.seq`
  (:func:`~gradtape.examples.seq.load_text`, the standard library's docstrings; the last
  10% is the validation split), as nanoGPT's ``shakespeare_char`` is characters.
- The defaults: a tiny model (2 layers, 4 heads, width 64, block 32, no bias, dropout 0;
  0.1M parameters) trained 1,000 iterations of 2 micro-batches of 12 windows, AdamW (lr 2e-3
  warmed up over 100 iterations, cosine to 2e-4, betas 0.9/0.99 and weight decay 0.1 as
  nanoGPT's ``train_shakespeare_char`` config), seed 1337 as ``train.py``'s
  ``torch.manual_seed``.

Measured on the shared 2-vCPU test VM (defaults, Python 3.11.7): val loss 2.064 nats/char
at iteration 1000 (train 1.947; 4.534 at iteration 0; the text's unigram baseline is 3.15
nats/char), 51 s of training with the VM loaded by other jobs (about 22 ms an iteration).
tests/test_examples_nanogpt.py runs the same model and loop in PyTorch (float64, identical
weights) and compares every loss and gradient.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

import gradtape
from gradtape import Cpu, Tensor, nn, optim
from gradtape import ops as F
from gradtape.examples.seq import Corpus, load_text
from gradtape.losses import cross_entropy

__all__ = [
    "GPT",
    "MLP",
    "Block",
    "CausalSelfAttention",
    "GPTConfig",
    "LayerNorm",
    "Result",
    "TrainConfig",
    "get_lr",
    "main",
    "train",
    "train_step",
]

Array = np.ndarray[Any, Any]


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's: PyTorch's ``nn.LayerNorm`` had no
    ``bias=False``): ``(..., ndim) -> (..., ndim)``, ``F.layer_norm`` over the last axis with
    eps 1e-5, weight initialised to ones and bias (if any) to zeros, in ``dtype``."""

    def __init__(self, ndim: int, bias: bool, *, dev: Cpu, dtype: Any = np.float32) -> None:
        super().__init__()
        self.weight = nn.Parameter(dev.ones((ndim,), dtype))
        self.bias = nn.Parameter(dev.zeros((ndim,), dtype)) if bias else None

    def forward(self, input: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """The normalised ``input`` (same shape)."""
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


@dataclass
class GPTConfig:
    """nanoGPT's model configuration (its defaults are GPT-2 small's; :func:`train` builds a
    tiny one). ``bias``: biases in the Linears and LayerNorms, like GPT-2."""

    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: ``(B, T, C) -> (B, T, C)``, ``C = n_embd`` split
    into ``n_head`` heads; query ``t`` attends to keys ``0..t``. Attention-weight dropout
    (``config.dropout`` in training) and a residual dropout after ``c_proj``.

    Raises:
        ValueError: ``n_embd`` is not a multiple of ``n_head`` (nanoGPT asserts it).
    """

    def __init__(self, config: GPTConfig, *, dev: Cpu) -> None:
        super().__init__()
        if config.n_embd % config.n_head != 0:
            raise ValueError(f"CausalSelfAttention: n_embd {config.n_embd} is not a multiple of n_head {config.n_head}")
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias, dev=dev)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias, dev=dev)
        # regularization
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``x (B, T, C)`` -> ``(B, T, C)``."""
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        # query, key, values for all heads in batch, head moved forward to be a batch dim
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        # causal self-attention, fused (nanoGPT's "flash" path)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side
        # output projection
        out: Tensor[Any, Any] = self.resid_dropout(self.c_proj(y))
        return out


class MLP(nn.Module):
    """The feed-forward block: ``c_fc`` (C -> 4C), GELU (exact, erf), ``c_proj`` (4C -> C),
    dropout: ``(B, T, C) -> (B, T, C)``."""

    def __init__(self, config: GPTConfig, *, dev: Cpu) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias, dev=dev)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias, dev=dev)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``x (B, T, C)`` -> ``(B, T, C)``."""
        x = self.c_fc(x)
        x = self.gelu(x)
        x = self.c_proj(x)
        x = self.dropout(x)
        return x


class Block(nn.Module):
    """A pre-norm transformer block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, config: GPTConfig, *, dev: Cpu) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias, dev=dev)
        self.attn = CausalSelfAttention(config, dev=dev)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias, dev=dev)
        self.mlp = MLP(config, dev=dev)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``x (B, T, C)`` -> ``(B, T, C)``."""
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    """nanoGPT's GPT: token and position embeddings, ``n_layer`` :class:`Block`, a final
    :class:`LayerNorm` and ``lm_head``, whose weight is the token embedding's (tied).

    Initialisation (drawn from ``dev``'s generator): every Linear weight and embedding
    N(0, 0.02), biases zero (``_init_weights`` through ``self.apply``), then the residual
    projections' weights (``c_proj.weight``) N(0, 0.02 / sqrt(2 n_layer)), GPT-2's scaled init.
    Built in float32; ``.double()`` converts it (the tie is kept: one tensor).

    Raises:
        ValueError: ``vocab_size`` or ``block_size`` is None (nanoGPT asserts them), or as
            :class:`CausalSelfAttention`.
    """

    def __init__(self, config: GPTConfig, *, dev: Cpu, verbose: bool = True) -> None:
        super().__init__()
        if config.vocab_size is None or config.block_size is None:
            raise ValueError("GPT: config.vocab_size and config.block_size must be set")
        self.config = config
        self._verbose = verbose  # print as nanoGPT does (its counts, the optimizer's groups)

        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd, dev=dev),
                wpe=nn.Embedding(config.block_size, config.n_embd, dev=dev),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config, dev=dev) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias, dev=dev),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False, dev=dev)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

        # init all weights
        self.apply(self._init_weights)
        # apply special scaled init to the residual projections, per GPT-2 paper
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        if verbose:  # report number of parameters
            print(f"number of parameters: {self.get_num_params() / 1e6:.2f}M")

    def get_num_params(self, non_embedding: bool = True) -> int:
        """The number of parameters (the tied embedding once); with ``non_embedding`` the
        position embedding is not counted (the token embedding is: it is ``lm_head``'s weight)."""
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return int(n_params)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(
        self, idx: Tensor[Any, Any], targets: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Any, Any], Tensor[Any, Any] | None]:
        """``(logits, loss)`` for int64 codes ``idx (b, t)``, ``t <= block_size``: with
        ``targets (b, t)`` the logits of every position ``(b, t, vocab)`` and their mean
        cross-entropy (targets ``-1`` ignored); without, the last position's logits
        ``(b, 1, vocab)`` and ``None``.

        Raises:
            ValueError: ``t > block_size`` (nanoGPT asserts it).
        """
        _b, t = idx.size()
        if t > self.config.block_size:
            raise ValueError(f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}")
        pos = idx.device.tensor(np.arange(0, t, dtype=np.int64))  # shape (t), torch.arange

        # forward the GPT model itself
        tok_emb = self.transformer.wte(idx)  # token embeddings of shape (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos)  # position embeddings of shape (t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)

        loss: Tensor[Any, Any] | None
        if targets is not None:
            # if we are given some desired targets also calculate the loss
            logits = self.lm_head(x)
            loss = cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            # inference-time mini-optimization: only forward the lm_head on the very last position
            logits = self.lm_head(x[:, [-1], :])  # note: using list [-1] to preserve the time dim
            loss = None
        return logits, loss

    def configure_optimizers(
        self, weight_decay: float, learning_rate: float, betas: tuple[float, float], device_type: str = "cpu"
    ) -> optim.AdamW:
        """AdamW over two parameter groups: every parameter of 2 or more dims (matmul weights,
        embeddings) with ``weight_decay``, the others (biases, LayerNorm weights) without.
        ``device_type`` is kept for nanoGPT's signature (its fused AdamW is CUDA's)."""
        del device_type
        # start with all of the candidate parameters
        param_dict = {pn: p for pn, p in self.named_parameters()}
        # filter out those that do not require grad
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        # create optim groups. Any parameter that is 2D will be weight decayed, otherwise no.
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        if self._verbose:
            print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
            print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
        return optim.AdamW(optim_groups, lr=learning_rate, betas=betas)

    @gradtape.no_grad()
    def generate(
        self,
        idx: Tensor[Any, Any],
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: np.random.Generator | None = None,
    ) -> Tensor[Any, Any]:
        """``idx (b, t)`` (int64 codes) followed by ``max_new_tokens`` sampled codes, each
        drawn (``multinomial``) from the softmax of the last position's logits divided by
        ``temperature``, only among the ``top_k`` largest if given, the model seeing the last
        ``block_size`` codes. Call ``model.eval()`` first (dropout). ``generator``: a numpy
        Generator for the draws (default the device's)."""
        for _ in range(max_new_tokens):
            # if the sequence context is growing too long we must crop it at block_size
            idx_cond = idx if idx.shape[1] <= self.config.block_size else idx[:, -self.config.block_size :]
            # forward the model to get the logits for the index in the sequence
            logits, _ = self(idx_cond)
            # pluck the logits at the final step and scale by desired temperature
            logits = logits[:, -1, :] / temperature
            # optionally crop the logits to only the top k options
            if top_k is not None:
                v, _ = F.topk(logits, min(top_k, logits.shape[-1]))
                logits[logits < v[:, [-1]]] = -float("Inf")
            # apply softmax to convert logits to (normalized) probabilities
            probs = F.softmax(logits, dim=-1)
            # sample from the distribution
            idx_next = F.multinomial(probs, num_samples=1, generator=generator)
            # append sampled index to the running sequence and continue
            idx = F.cat((idx, idx_next), dim=1)
        return idx


# ----- train.py ------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """``train.py``'s configuration, each field a command-line flag ``--name=value`` as
    nanoGPT's configurator reads them; the defaults are this example's tiny run (see the
    module docstring), nanoGPT's names and meanings."""

    eval_interval: int = 250
    log_interval: int = 100
    eval_iters: int = 20
    gradient_accumulation_steps: int = 2
    batch_size: int = 12
    block_size: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0
    bias: bool = False
    learning_rate: float = 2e-3
    max_iters: int = 1000
    weight_decay: float = 1e-1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    decay_lr: bool = True
    warmup_iters: int = 100
    lr_decay_iters: int = 1000
    min_lr: float = 2e-4
    seed: int = 1337
    max_new_tokens: int = 200
    temperature: float = 0.8
    top_k: int = 200


def get_lr(it: int, cfg: TrainConfig) -> float:
    """``train.py``'s learning rate at iteration ``it``: linear warm-up
    ``learning_rate * (it + 1) / (warmup_iters + 1)`` for ``it < warmup_iters``, ``min_lr``
    after ``lr_decay_iters``, and in between a cosine from ``learning_rate`` down to ``min_lr``:
    ``min_lr + 0.5 (1 + cos(pi r)) (learning_rate - min_lr)``,
    ``r = (it - warmup_iters) / (lr_decay_iters - warmup_iters)``."""
    # 1) linear warmup for warmup_iters steps
    if it < cfg.warmup_iters:
        return cfg.learning_rate * (it + 1) / (cfg.warmup_iters + 1)
    # 2) if it > lr_decay_iters, return min learning rate
    if it > cfg.lr_decay_iters:
        return cfg.min_lr
    # 3) in between, use cosine decay down to min learning rate
    decay_ratio = (it - cfg.warmup_iters) / max(1, cfg.lr_decay_iters - cfg.warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff ranges 0..1
    return cfg.min_lr + coeff * (cfg.learning_rate - cfg.min_lr)


def train_step(
    model: GPT,
    optimizer: optim.Optimizer,
    micro_batches: Sequence[tuple[Tensor[Any, Any], Tensor[Any, Any]]],
    lr: float,
    grad_clip: float,
    before_step: Callable[[], None] | None = None,
) -> list[float]:
    """One iteration of ``train.py``'s loop: set ``lr`` in every parameter group, then for
    each ``(X, Y)`` micro-batch forward, divide the loss by the number of micro-batches and
    ``backward()`` (the gradients add up in ``.grad``), clip the gradients to global norm
    ``grad_clip`` (0: no clipping), ``optimizer.step()`` and
    ``optimizer.zero_grad(set_to_none=True)``. ``before_step`` is called right before the
    step (the gradients are final there). Returns each micro-batch's (unscaled) loss."""
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    accumulation_steps = len(micro_batches)
    losses = []
    for X, Y in micro_batches:
        _, loss = model(X, Y)
        assert loss is not None
        losses.append(loss.item())
        loss = loss / accumulation_steps  # scale the loss to account for gradient accumulation
        loss.backward()
    # clip the gradient
    if grad_clip != 0.0:
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    if before_step is not None:
        before_step()
    optimizer.step()
    # flush the gradients as soon as we can, no need for this memory anymore
    optimizer.zero_grad(set_to_none=True)
    return losses


@dataclass
class Result:
    """What :func:`train` returns: the model, its corpus, the ``(iter, train loss, val loss)``
    of every evaluation (nats/char), the logged training losses ``(iter, loss)``, and the
    training time in seconds (evaluations included)."""

    model: GPT
    corpus: Corpus
    evals: list[tuple[int, float, float]]
    losses: list[tuple[int, float]]
    seconds: float


def train(cfg: TrainConfig | None = None, text: str | None = None, verbose: bool = True) -> Result:
    """Run ``train.py``'s loop with ``cfg`` (default :class:`TrainConfig`) on ``text``
    (default :func:`~gradtape.examples.seq.load_text`; the last 10% is the validation split).

    Iterations ``0 .. max_iters`` (``max_iters + 1`` steps, as nanoGPT's ``while True`` loop
    with its ``iter_num > max_iters`` exit), the loss estimate first at each multiple of
    ``eval_interval``. Batches: ``batch_size`` windows of ``block_size`` characters at random
    offsets (a numpy generator seeded with ``seed``, as ``torch.randint`` after
    ``torch.manual_seed``); the model's initialisation is drawn from ``Cpu(seed=seed)``.

    Raises:
        ValueError: a count below 1 (``batch_size``, ``block_size``, ``n_layer``, ``n_head``,
            ``n_embd``, ``eval_iters``, ``eval_interval``, ``log_interval``,
            ``gradient_accumulation_steps``), ``max_iters`` below 0, or a text too short.
    """
    cfg = TrainConfig() if cfg is None else cfg
    for name in ("batch_size", "block_size", "n_layer", "n_head", "n_embd", "eval_iters", "eval_interval"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    if cfg.log_interval < 1 or cfg.gradient_accumulation_steps < 1 or cfg.max_iters < 0:
        raise ValueError("log_interval and gradient_accumulation_steps must be >= 1, max_iters >= 0")
    corpus = Corpus.from_text(load_text() if text is None else text)
    splits = {"train": corpus.train, "val": corpus.held_out}
    if min(len(d) for d in splits.values()) <= cfg.block_size + 1:
        raise ValueError(f"text too short for windows of {cfg.block_size} characters")
    say: Callable[..., None] = print if verbose else lambda *a, **k: None
    tokens_per_iter = cfg.gradient_accumulation_steps * cfg.batch_size * cfg.block_size
    say(f"tokens per iteration will be: {tokens_per_iter:,}")
    dev = Cpu(seed=cfg.seed)
    rng = np.random.default_rng(cfg.seed)

    # poor man's data loader
    def get_batch(split: str) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
        data = splits[split]
        ix = rng.integers(len(data) - cfg.block_size, size=cfg.batch_size)  # torch.randint
        x = np.stack([data[i : i + cfg.block_size] for i in ix])
        y = np.stack([data[i + 1 : i + 1 + cfg.block_size] for i in ix])
        return dev.tensor(x), dev.tensor(y)

    say(f"found vocab_size = {len(corpus.vocab)} (characters of the standard library's docstrings)")
    gptconf = GPTConfig(
        block_size=cfg.block_size,
        vocab_size=len(corpus.vocab),
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_embd=cfg.n_embd,
        dropout=cfg.dropout,
        bias=cfg.bias,
    )
    model = GPT(gptconf, dev=dev, verbose=verbose)
    optimizer = model.configure_optimizers(cfg.weight_decay, cfg.learning_rate, (cfg.beta1, cfg.beta2), "cpu")

    # helps estimate an arbitrarily accurate loss over either split using many batches
    @gradtape.no_grad()
    def estimate_loss() -> dict[str, float]:
        out = {}
        model.eval()
        for split in ["train", "val"]:
            losses = np.zeros(cfg.eval_iters)
            for k in range(cfg.eval_iters):
                X, Y = get_batch(split)
                _, loss = model(X, Y)
                assert loss is not None
                losses[k] = loss.item()
            out[split] = float(losses.mean())
        model.train()
        return out

    evals: list[tuple[int, float, float]] = []
    logged: list[tuple[int, float]] = []
    started = t0 = time.perf_counter()
    for iter_num in range(cfg.max_iters + 1):
        # determine and set the learning rate for this iteration
        lr = get_lr(iter_num, cfg) if cfg.decay_lr else cfg.learning_rate
        # evaluate the loss on train/val sets
        if iter_num % cfg.eval_interval == 0:
            est = estimate_loss()
            evals.append((iter_num, est["train"], est["val"]))
            say(f"step {iter_num}: train loss {est['train']:.4f}, val loss {est['val']:.4f}")
        # forward backward update, with gradient accumulation to simulate a larger batch
        micro = [get_batch("train") for _ in range(cfg.gradient_accumulation_steps)]
        losses = train_step(model, optimizer, micro, lr, cfg.grad_clip)
        # timing and logging
        t1 = time.perf_counter()
        dt, t0 = t1 - t0, t1
        if iter_num % cfg.log_interval == 0:
            lossf = losses[-1]  # the last micro-step's loss, as nanoGPT prints
            logged.append((iter_num, lossf))
            say(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms")
    seconds = time.perf_counter() - started
    return Result(model, corpus, evals, logged, seconds)


def _bool(text: str) -> bool:
    """``True``/``False`` (nanoGPT's configurator's spelling; also 1/0, true/false)."""
    low = text.lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {text!r}")


def main(argv: Sequence[str] | None = None) -> Result:
    """Command-line entry point: train (see the module docstring), print the final losses and
    a sample continued from the start of the validation text. Returns :func:`train`'s result.

    Every :class:`TrainConfig` field is a flag, ``--name=value`` or ``--name value``.
    """
    ap = argparse.ArgumentParser(prog="python -m gradtape.examples.nanogpt", description=__doc__.split("\n")[0])
    defaults = TrainConfig()
    for f in fields(TrainConfig):
        value = getattr(defaults, f.name)
        kind: Callable[[str], Any] = _bool if isinstance(value, bool) else type(value)
        ap.add_argument(f"--{f.name}", type=kind, default=value, help=f"(default: {value})")
    args = ap.parse_args(argv)
    for name in ("batch_size", "block_size", "n_layer", "n_head", "n_embd", "eval_iters", "eval_interval"):
        if getattr(args, name) < 1:
            ap.error(f"argument --{name}: must be >= 1, got {getattr(args, name)}")
    for name in ("log_interval", "gradient_accumulation_steps", "top_k"):
        if getattr(args, name) < 1:
            ap.error(f"argument --{name}: must be >= 1, got {getattr(args, name)}")
    if args.n_embd % args.n_head:
        ap.error(f"argument --n_embd: {args.n_embd} is not a multiple of --n_head {args.n_head}")
    for name in ("max_iters", "max_new_tokens", "dropout", "learning_rate", "min_lr", "grad_clip", "weight_decay"):
        if not getattr(args, name) >= 0:
            ap.error(f"argument --{name}: must be >= 0, got {getattr(args, name)}")
    if not args.temperature > 0:
        ap.error(f"argument --temperature: must be > 0, got {args.temperature}")
    cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig)})
    res = train(cfg)
    it, _train_loss, val_loss = res.evals[-1]
    print(f"trained {cfg.max_iters + 1} iterations in {res.seconds:.1f} s; at step {it}: val loss {val_loss:.4f}")
    if cfg.max_new_tokens:
        model, dev = res.model, Cpu(seed=cfg.seed)
        model.eval()
        prompt = res.corpus.held_out[: min(cfg.block_size, 40)]
        x = dev.tensor(prompt[None, :])
        y = model.generate(x, cfg.max_new_tokens, temperature=cfg.temperature, top_k=cfg.top_k, generator=dev.rng)
        print("--- sample (prompt from the validation text, then the model) ---")
        print(res.corpus.decode(y.numpy()[0]))
    return res


if __name__ == "__main__":
    main()
