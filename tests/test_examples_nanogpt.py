"""``python -m gradtape.examples.nanogpt`` against nanoGPT itself (issue 27, "What it must show").

nanoGPT's ``model.py`` classes are written below in PyTorch as in the original (flash-attention
path; ``from_pretrained``, ``crop_block_size`` and ``estimate_mfu`` left out), in float64. The
gradtape port gets the PyTorch model's initial weights through ``load_state_dict`` (nanoGPT's
keys, the tied ``lm_head.weight`` / ``transformer.wte.weight`` under both names), and both run
three iterations of ``train.py``'s loop on the same batches: the lr of :func:`get_lr` set in
every group of ``configure_optimizers``' AdamW (decay / no-decay groups), two micro-batches of
gradient accumulation (some targets ``-1``, ignored), ``clip_grad_norm_`` (active: the norm
is above the threshold), ``step``, ``zero_grad(set_to_none=True)``. Every micro-batch's loss,
every parameter's gradient before each step and every parameter after it must agree (rtol
1e-9). Dropout is 0: its random masks cannot be matched between the libraries. ``generate``
is compared with ``top_k=1`` (deterministic: the one remaining code is drawn with
probability 1), past ``block_size`` so that the context is cropped.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu
from gradtape.examples import nanogpt

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn
F: Any = torch.nn.functional


# ----- nanoGPT's model.py, in PyTorch -----------------------------------------------------------


class TorchLayerNorm(tnn.Module):  # type: ignore[misc]
    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = tnn.Parameter(torch.ones(ndim))
        self.bias = tnn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input: Any) -> Any:
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class TorchCausalSelfAttention(tnn.Module):  # type: ignore[misc]
    def __init__(self, config: nanogpt.GPTConfig) -> None:
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = tnn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = tnn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = tnn.Dropout(config.dropout)
        self.resid_dropout = tnn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x: Any) -> Any:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class TorchMLP(tnn.Module):  # type: ignore[misc]
    def __init__(self, config: nanogpt.GPTConfig) -> None:
        super().__init__()
        self.c_fc = tnn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = tnn.GELU()
        self.c_proj = tnn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = tnn.Dropout(config.dropout)

    def forward(self, x: Any) -> Any:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class TorchBlock(tnn.Module):  # type: ignore[misc]
    def __init__(self, config: nanogpt.GPTConfig) -> None:
        super().__init__()
        self.ln_1 = TorchLayerNorm(config.n_embd, bias=config.bias)
        self.attn = TorchCausalSelfAttention(config)
        self.ln_2 = TorchLayerNorm(config.n_embd, bias=config.bias)
        self.mlp = TorchMLP(config)

    def forward(self, x: Any) -> Any:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class TorchGPT(tnn.Module):  # type: ignore[misc]
    def __init__(self, config: nanogpt.GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = tnn.ModuleDict(
            dict(
                wte=tnn.Embedding(config.vocab_size, config.n_embd),
                wpe=tnn.Embedding(config.block_size, config.n_embd),
                drop=tnn.Dropout(config.dropout),
                h=tnn.ModuleList([TorchBlock(config) for _ in range(config.n_layer)]),
                ln_f=TorchLayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = tnn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: Any) -> None:
        if isinstance(module, tnn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, tnn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: Any, targets: Any = None) -> Any:
        _b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay: float, learning_rate: float, betas: tuple[float, float]) -> Any:
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)

    @torch.no_grad()  # type: ignore[untyped-decorator]
    def generate(self, idx: Any, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None) -> Any:
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size :]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def torch_get_lr(it: int, c: nanogpt.TrainConfig) -> float:
    """train.py's get_lr, with its module-level settings read from ``c``."""
    if it < c.warmup_iters:
        return c.learning_rate * (it + 1) / (c.warmup_iters + 1)
    if it > c.lr_decay_iters:
        return c.min_lr
    decay_ratio = (it - c.warmup_iters) / (c.lr_decay_iters - c.warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return c.min_lr + coeff * (c.learning_rate - c.min_lr)


# ----- the comparison ---------------------------------------------------------------------------

RTOL, ATOL = 1e-9, 1e-12


def _pair(bias: bool) -> tuple[nanogpt.GPT, Any, nanogpt.GPTConfig]:
    config = nanogpt.GPTConfig(block_size=8, vocab_size=13, n_layer=2, n_head=2, n_embd=8, dropout=0.0, bias=bias)
    torch.manual_seed(0)
    ref = TorchGPT(config).double()
    ours = nanogpt.GPT(config, dev=Cpu(seed=0), verbose=False).double()
    assert list(ours.state_dict()) == list(ref.state_dict())  # nanoGPT's keys, tied weight under both
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    result = ours.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    assert ours.lm_head.weight is ours.transformer.wte.weight  # still tied after loading
    return ours, ref, config


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_three_iterations_of_train_py_equal_pytorch(bias: bool) -> None:
    ours, ref, config = _pair(bias)
    cfg = nanogpt.TrainConfig(learning_rate=3e-2, min_lr=3e-3, warmup_iters=1, lr_decay_iters=3, grad_clip=0.05)
    opt = ours.configure_optimizers(0.1, cfg.learning_rate, (0.9, 0.95))
    topt = ref.configure_optimizers(0.1, cfg.learning_rate, (0.9, 0.95))
    assert [len(g["params"]) for g in opt.param_groups] == [len(g["params"]) for g in topt.param_groups]
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]
    rng = np.random.default_rng(5)
    dev = Cpu()
    tnamed = dict(ref.named_parameters())
    compared: list[int] = []
    for it in range(3):
        lr = nanogpt.get_lr(it, cfg)
        assert lr == pytest.approx(torch_get_lr(it, cfg), rel=1e-15)
        micro = []
        for _ in range(2):  # gradient_accumulation_steps = 2
            x = rng.integers(0, config.vocab_size, (3, config.block_size))
            y = rng.integers(0, config.vocab_size, (3, config.block_size))
            y[0, :2] = -1  # ignored targets
            micro.append((x, y))

        # ---- PyTorch: train.py's loop body
        for param_group in topt.param_groups:
            param_group["lr"] = lr
        tlosses = []
        for x, y in micro:
            _, loss = ref(torch.from_numpy(x), torch.from_numpy(y))
            tlosses.append(loss.item())
            (loss / len(micro)).backward()
        tnorm = torch.nn.utils.clip_grad_norm_(ref.parameters(), cfg.grad_clip)
        assert tnorm.item() > cfg.grad_clip  # the clipping is active

        # ---- gradtape: the example's iteration, compared right before its optimizer step
        def compare_grads(it: int = it) -> None:
            compared.append(it)
            for name, p in ours.named_parameters():
                assert p.grad is not None, f"{name}.grad is None at iteration {it}"
                np.testing.assert_allclose(
                    p.grad.numpy(), tnamed[name].grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name} at {it}"
                )

        losses = nanogpt.train_step(
            ours, opt, [(dev.tensor(x), dev.tensor(y)) for x, y in micro], lr, cfg.grad_clip, compare_grads
        )
        np.testing.assert_allclose(losses, tlosses, rtol=RTOL, err_msg=f"losses at iteration {it}")
        topt.step()
        topt.zero_grad(set_to_none=True)
        assert all(p.grad is None for p in ours.parameters())  # zero_grad(set_to_none=True)
        for name, p in ours.named_parameters():
            np.testing.assert_allclose(
                p.numpy(), tnamed[name].detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name} after step {it}"
            )
    assert compared == [0, 1, 2]  # the gradients were compared before every step
    assert ours.lm_head.weight is ours.transformer.wte.weight


def test_inference_logits_and_generate_equal_pytorch() -> None:
    ours, ref, config = _pair(True)
    ours.eval()
    ref.eval()
    prompt = np.random.default_rng(1).integers(0, config.vocab_size, (2, 5))
    logits, loss = ours(Cpu().tensor(prompt))
    tlogits, tloss = ref(torch.from_numpy(prompt))
    assert loss is None and tloss is None and logits.shape == (2, 1, config.vocab_size)
    np.testing.assert_allclose(logits.numpy(), tlogits.detach().numpy(), rtol=RTOL, atol=ATOL)
    # top_k=1: one code keeps probability 1, so the draws are determined; 6 new codes crop the context
    out = ours.generate(Cpu().tensor(prompt), 6, temperature=0.7, top_k=1)
    tout = ref.generate(torch.from_numpy(prompt), 6, temperature=0.7, top_k=1)
    assert out.dtype == np.int64 and out.shape == (2, 11)
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    sampled = ours.generate(Cpu().tensor(prompt), 4, top_k=3, generator=np.random.default_rng(0))
    np.testing.assert_array_equal(sampled.numpy()[:, :5], prompt)
    with pytest.raises(ValueError, match="Cannot forward sequence of length 9, block size is only 8"):
        ours(Cpu().tensor(np.zeros((1, 9), np.int64)))


def test_init_statistics_and_parameter_count_are_nanogpts() -> None:
    """_init_weights (N(0, 0.02), zero biases), the scaled c_proj init, the count without
    the position embedding."""
    config = nanogpt.GPTConfig(block_size=16, vocab_size=50, n_layer=4, n_head=4, n_embd=64)
    model = nanogpt.GPT(config, dev=Cpu(seed=3), verbose=False)
    named = dict(model.named_parameters())
    fc = np.concatenate([named[f"transformer.h.{i}.mlp.c_fc.weight"].numpy().ravel() for i in range(4)])
    proj = np.concatenate([named[f"transformer.h.{i}.mlp.c_proj.weight"].numpy().ravel() for i in range(4)])
    assert abs(fc.std() - 0.02) < 0.001 and abs(proj.std() - 0.02 / math.sqrt(8)) < 0.0005
    assert not named["transformer.h.0.attn.c_attn.bias"].numpy().any()
    assert np.all(named["transformer.ln_f.weight"].numpy() == 1.0)
    total = sum(p.size for p in model.parameters())
    assert model.get_num_params() == total - 16 * 64
    assert model.get_num_params(non_embedding=False) == total


def test_main_trains_prints_nanogpts_lines_and_samples(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--max_iters=4",
        "--eval_interval=2",
        "--eval_iters=2",
        "--log_interval=2",
        "--batch_size=4",
        "--block_size=8",
        "--n_layer=1",
        "--n_embd=16",
        "--max_new_tokens=12",
        "--bias=True",
        "--dropout=0.1",
    ]
    res = nanogpt.main(argv)
    out = capsys.readouterr().out
    assert "tokens per iteration will be: 64" in out  # 2 micro-batches x 4 x 8
    assert re.search(r"num decayed parameter tensors: \d+, with [\d,]+ parameters", out)
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("step ")] == [
        "step 0",
        "step 2",
        "step 4",
    ]
    assert re.search(r"iter 4: loss \d\.\d{4}, time \d+\.\d\dms", out)
    assert [e[0] for e in res.evals] == [0, 2, 4] and res.model.config.bias and res.model.config.dropout == 0.1
    sample = out.partition("--- sample (prompt from the validation text, then the model) ---\n")[2]
    assert len(sample) == 8 + 12 + 1  # the prompt (a block), the new characters, print's newline
    assert sample.startswith(res.corpus.decode(res.corpus.held_out[:8]))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n_embd=30", "--n_head=4"], "argument --n_embd: 30 is not a multiple of --n_head 4"),
        (["--batch_size=0"], "argument --batch_size: must be >= 1, got 0"),
        (["--bias=maybe"], "argument --bias: expected True or False, got 'maybe'"),
        (["--temperature=0"], "argument --temperature: must be > 0, got 0.0"),
    ],
)
def test_bad_flags_exit_with_a_message(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        nanogpt.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
