"""``python -m gradtape.examples.seq``: the character-level transformer and the Mamba model
learn the text (beat the unigram baseline on held-out text), are causal, sample
deterministically, and reject bad flags."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from gradtape import Cpu, ShapeError, nn
from gradtape.examples import seq


@pytest.fixture(scope="module")
def short_run() -> seq.Result:
    """A short training run shared by the tests below (about two seconds)."""
    return seq.train(steps=120, batch_size=16, context=32, layers=1, seed=0, verbose=False, progress=False)


@pytest.fixture(scope="module")
def mamba_run() -> seq.Result:
    """A short ``--model mamba`` run (one block; about two seconds on an idle VM)."""
    return seq.train(
        steps=40,
        batch_size=16,
        context=32,
        layers=1,
        seed=0,
        verbose=False,
        progress=False,
        log_every=10,
        model="mamba",
    )


def test_short_run_beats_the_unigram_baseline(short_run: seq.Result) -> None:
    """After 120 steps the held-out loss is at least 0.5 bits/char below the unigram
    baseline (measured: 3.70 against 4.55 bits/char), and the logged training loss fell."""
    held_out_bits = short_run.held_out_loss / math.log(2.0)
    assert held_out_bits < short_run.unigram_bits - 0.5
    assert 4.0 < short_run.unigram_bits < 5.0  # English-like text over ~94 characters
    assert short_run.losses[-1] < short_run.losses[0] - 0.5


def test_short_mamba_run_beats_the_unigram_baseline(mamba_run: seq.Result) -> None:
    """After 40 steps the Mamba model's held-out loss is at least 0.5 bits/char below the
    unigram baseline (measured: 3.46 against 4.55 bits/char), and the training loss fell."""
    assert isinstance(mamba_run.model, seq.CharMamba)
    held_out_bits = mamba_run.held_out_loss / math.log(2.0)
    assert held_out_bits < mamba_run.unigram_bits - 0.5
    assert mamba_run.losses[-1] < mamba_run.losses[0] - 0.5


@pytest.mark.parametrize("run", ["short_run", "mamba_run"])
def test_model_is_causal(run: str, request: pytest.FixtureRequest) -> None:
    """Changing the codes after position i leaves the logits at positions <= i unchanged."""
    result: seq.Result = request.getfixturevalue(run)
    model, dev = result.model, Cpu()
    rng = np.random.default_rng(1)
    v = len(result.corpus.vocab)
    x = rng.integers(0, v, (2, 32))
    base = model(dev.tensor(x)).numpy()
    for i in (0, 7, 30):
        y = x.copy()
        y[:, i + 1 :] = rng.integers(0, v, (2, 32 - i - 1))
        out = model(dev.tensor(y)).numpy()
        np.testing.assert_allclose(out[:, : i + 1], base[:, : i + 1], rtol=1e-5, atol=1e-5)
        assert not np.allclose(out[:, i + 1 :], base[:, i + 1 :])


def test_generation_is_deterministic_for_a_seed(short_run: seq.Result) -> None:
    """Same seed, same sample; another seed, another sample; temperature 0 is arg-max and
    ignores the seed; codes stay in the vocabulary."""
    model, corpus, dev = short_run.model, short_run.corpus, Cpu()
    prompt = corpus.held_out[:20]
    a = seq.generate(model, dev, prompt, 40, 0.8, seed=3)
    b = seq.generate(model, dev, prompt, 40, 0.8, seed=3)
    c = seq.generate(model, dev, prompt, 40, 0.8, seed=4)
    assert a == b and a != c
    assert all(0 <= i < len(corpus.vocab) for i in a)
    assert seq.generate(model, dev, prompt, 10, 0.0, seed=1) == seq.generate(model, dev, prompt, 10, 0.0, seed=2)
    with pytest.raises(ValueError, match="prompt is empty"):
        seq.generate(model, dev, prompt[:0], 5)


def test_corpus_is_deterministic_printable_text() -> None:
    """The corpus is the same twice, printable ASCII, and splits 90/10."""
    text = seq.load_text()
    assert text == seq.load_text()
    assert len(text) > 50_000 and set(text) <= set(seq.PRINTABLE)
    assert text.startswith("Command-line parsing library")  # argparse's docstring comes first
    corpus = seq.Corpus.from_text(text)
    assert len(corpus.train) + len(corpus.held_out) == len(text)
    assert abs(len(corpus.held_out) / len(text) - 0.1) < 0.001
    assert corpus.decode(corpus.train[:28]) == "Command-line parsing library"


def test_unigram_bits_formula() -> None:
    """The baseline is the add-one-smoothed unigram cross-entropy in bits: for a uniform
    two-symbol text it is exactly one bit."""
    codes = np.array([0, 1] * 50)
    assert seq.unigram_bits(codes, codes, 2) == pytest.approx(1.0)


def test_causal_mask() -> None:
    """True above the diagonal (blocked), False on and below it."""
    m = seq.causal_mask(3)
    assert m.tolist() == [[False, True, True], [False, False, True], [False, False, False]]


def test_main_prints_losses_sample_and_saves(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The command prints the periodic training loss, the final losses next to the baseline
    and a sample of the asked length after the prompt, and writes a checkpoint that loads
    back into a fresh model; the same flags print the same sample again."""
    out_file = tmp_path / "seq.safetensors"
    argv = ["--steps", "20", "--context", "16", "--layers", "1", "--sample", "30", "--no-progress", "--seed", "2"]
    seq.main([*argv, "--out", str(out_file)])
    out = capsys.readouterr().out
    assert "step    20/20  train loss" in out
    assert re.search(r"held-out loss \d\.\d{4} nats/char = \d\.\d{3} bits/char", out)
    assert re.search(r"unigram baseline \(no context\): .* bits/char; held-out is -?\d\.\d{3} bits/char below it", out)
    head, _, sample = out.partition("--- sample (prompt from the held-out text, then the model) ---\n")
    assert len(sample) == 16 + 30 + 1  # prompt (the context), 30 characters, print's newline
    assert f"saved checkpoint to {out_file}" in head and out_file.exists()
    corpus = seq.Corpus.from_text(seq.load_text())
    fresh = seq.CharTransformer(len(corpus.vocab), 16, layers=1, dev=Cpu(seed=9))
    nn.load(fresh, out_file)
    seq.main(argv)
    assert capsys.readouterr().out.partition("--- sample")[2] == out.partition("--- sample")[2]


def test_main_mamba_prints_and_saves(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--model mamba`` prints the same lines and writes a checkpoint that loads back into a
    fresh :class:`~gradtape.examples.seq.CharMamba` (whose logits then differ from those of
    the same fresh model unloaded); codes of the wrong rank raise ShapeError."""
    out_file = tmp_path / "mamba.safetensors"
    argv = ["--model", "mamba", "--steps", "3", "--context", "8", "--layers", "1", "--sample", "5", "--no-progress"]
    seq.main([*argv, "--out", str(out_file)])
    out = capsys.readouterr().out
    assert "step     3/3  train loss" in out
    assert re.search(r"trained [\d,]+ parameters on", out)
    assert re.search(r"held-out loss \d\.\d{4} nats/char = \d\.\d{3} bits/char", out)
    assert "--- sample (prompt from the held-out text, then the model) ---" in out
    corpus = seq.Corpus.from_text(seq.load_text())
    fresh = seq.CharMamba(len(corpus.vocab), 8, layers=1, dev=Cpu(seed=9))
    nn.load(fresh, out_file)
    codes = Cpu().tensor(corpus.held_out[None, :8])
    other = seq.CharMamba(len(corpus.vocab), 8, layers=1, dev=Cpu(seed=9))
    assert not np.allclose(fresh(codes).numpy(), other(codes).numpy())  # the weights came from the file
    with pytest.raises(ShapeError, match=r"CharMamba: expected codes of shape \(B, L\) with L >= 1, got \(8,\)"):
        fresh(Cpu().tensor(np.zeros(8, np.int64)))


def test_mamba_width_matches_the_transformer_parameter_count() -> None:
    """The default CharMamba has within 5% of the default CharTransformer's parameters."""
    v = len(seq.Corpus.from_text(seq.load_text()).vocab)
    mamba = seq.CharMamba(v, 64, dev=Cpu()).num_parameters()
    transformer = seq.CharTransformer(v, 64, dev=Cpu()).num_parameters()
    assert abs(mamba - transformer) < 0.05 * transformer


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--steps", "0"], "argument --steps: must be >= 1, got 0"),
        (["--context", "-1"], "argument --context: must be >= 1, got -1"),
        (["--lr", "nan"], "argument --lr: must be a finite number >= 0, got nan"),
        (["--sample", "-5"], "argument --sample: must be >= 0, got -5"),
        (["--seed", "-1"], "argument --seed: must be >= 0, got -1"),
        (["--batch-size", "two"], "argument --batch-size: invalid positive_int value: 'two'"),
        (["--out", "/nonexistent-dir/x.safetensors"], "argument --out: cannot write a file at"),
        (["--temperature", "-0.5"], "argument --temperature: must be a finite number >= 0, got -0.5"),
        (["--model", "rnn"], "argument --model: invalid choice: 'rnn'"),
    ],
)
def test_bad_flags_exit_with_a_message(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse rejects bad flags with exit status 2 and a message naming the flag."""
    with pytest.raises(SystemExit) as exc:
        seq.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_model_rejects_bad_code_shapes(short_run: seq.Result) -> None:
    """Codes that are not (B, L), or longer than the context, raise ShapeError with the shape."""
    dev = Cpu()
    with pytest.raises(ShapeError, match=r"expected codes of shape \(B, L\), got \(32,\)"):
        short_run.model(dev.tensor(np.zeros(32, np.float32)))
    with pytest.raises(ShapeError, match=r"codes of shape \(1, 33\): sequence length 33 > context 32"):
        short_run.model(dev.tensor(np.zeros((1, 33), np.float32)))


@pytest.mark.parametrize("model", seq.MODELS)
def test_checkpointed_blocks_train_bitwise_the_same(model: str) -> None:
    """--checkpoint recomputes each block in backward: the same losses and parameters, bit
    for bit, as the run that keeps the activations (transformer and Mamba blocks)."""
    text = seq.load_text()[:20_000]
    runs = [
        seq.train(
            steps=3, batch_size=4, context=32, text=text, verbose=False, progress=False, checkpoint=ck, model=model
        )
        for ck in (False, True)
    ]
    assert runs[0].losses == runs[1].losses
    for p, q in zip(runs[0].model.parameters(), runs[1].model.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_param_groups_exempt_mamba_a_log_and_d_from_weight_decay() -> None:
    """As the reference marks them (``_no_weight_decay``): AdamW decays every parameter but
    ``A_log`` and ``D``; the transformer keeps a single group."""
    mamba = seq.CharMamba(20, 16, layers=2, dev=Cpu(seed=1))
    groups = seq.param_groups(mamba)
    names = {p.id: n for n, p in mamba.named_parameters()}
    assert len(groups) == 2 and groups[1]["weight_decay"] == 0.0 and "weight_decay" not in groups[0]
    exempt = sorted(names[p.id] for p in groups[1]["params"])
    assert len(exempt) == 4 and all(n.endswith(("mixer.A_log", "mixer.D")) for n in exempt)
    assert len(groups[0]["params"]) + 4 == len(mamba.parameters())
    assert nn.Mamba.no_weight_decay <= {n for n, _ in nn.Mamba(8, dev=Cpu()).named_parameters()}
    transformer = seq.CharTransformer(20, 16, layers=1, dev=Cpu(seed=1))
    assert [len(g["params"]) for g in seq.param_groups(transformer)] == [len(transformer.parameters())]
