"""pytorch/examples' ``word_language_model`` (RNN/LSTM/GRU word-level language model), ported to gradtape.

    python -m gradtape.examples.word_language_model [--model {LSTM,GRU,RNN_TANH,RNN_RELU}]
        [--emsize E] [--nhid H] [--nlayers N] [--lr LR] [--clip C] [--epochs K]
        [--batch_size B] [--bptt L] [--dropout P] [--tied] [--seed S] [--log-interval N]
        [--vocab V] [--save FILE] [--dry-run]

The program is pytorch/examples' ``word_language_model/model.py`` and ``main.py`` written the
way a PyTorch user ports it by renaming (``torch.nn`` -> ``gradtape.nn``, ``F.log_softmax`` ->
``gradtape.ops.log_softmax``): :class:`RNNModel` (an ``nn.Embedding`` encoder, ``nn.Dropout``,
an ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` and an ``nn.Linear`` decoder whose weight is the
encoder's with ``--tied``, Press and Wolf 2016; ``init_weights`` and ``init_hidden`` as the
original), :func:`batchify`, :func:`get_batch` (chunks of ``--bptt`` steps),
:func:`repackage_hidden` (the hidden state detached between batches, so backward stops at the
batch boundary), ``nn.utils.clip_grad_norm_``, the original's manual SGD update of every
parameter by ``-lr * p.grad``, the learning rate divided by 4 whenever the validation loss
does not improve, :func:`evaluate` under ``no_grad()`` in ``eval()`` mode, and the perplexity
printout. The best model (by validation loss) is kept and scored on the test split.

What differs from the original, and why:

- Data: Wikitext-2 needs a download, so the corpus is the docstrings of the standard-library
  modules :mod:`gradtape.examples.seq` reads (:func:`gradtape.examples.seq.load_text`, the same
  on every machine with the same Python), split into words at white space with ``<eos>`` at the
  end of each line as the original's ``data.Corpus``; its lines are cut 80/10/10 into
  train/valid/test in order. The vocabulary is the ``--vocab`` most frequent training words
  (ties in order of first appearance) plus ``<unk>`` (every other word, as Wikitext-2 and PTB
  have) and ``<eos>``.
- The default model and run are small enough for a CPU (the original: 200 units, 40 epochs
  on a GPU): 2 LSTM layers of 64 units over 64-wide embeddings, 20 epochs.
- ``p.data.add_(p.grad, alpha=-lr)``: gradtape's ``p.data`` is the numpy array itself, so the
  same in-place update is ``p.data -= lr * p.grad.data``.
- ``decoded.view(-1, ntoken)`` is ``reshape``.
- The checkpoint of the best model stays in memory (``state_dict`` / ``load_state_dict``);
  ``--save FILE`` also writes it as safetensors. No ONNX export, no Transformer model.

Measured on the shared 2-core VM with Python 3.11.7 (default flags, seed 1111; 195,818
parameters): validation perplexity 97.3 after the first epoch, 45.4 after the 20th (the lr
quartered after epochs 4 and 17), test perplexity 51.3 against the unigram baseline's 64.6;
33 s of training (25 s CPU) under other jobs' load. ``--epochs 40 --tied``: test perplexity 43.9.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gradtape import Cpu, Tensor, nn, no_grad, ops
from gradtape.examples._cli import nonnegative_float, nonnegative_int, positive_int

__all__ = [
    "Corpus",
    "Dictionary",
    "Result",
    "RNNModel",
    "batchify",
    "evaluate",
    "get_batch",
    "main",
    "repackage_hidden",
    "train",
    "train_step",
    "unigram_loss",
]

Array = np.ndarray[Any, Any]
Hidden = Tensor[Any, Any] | tuple[Tensor[Any, Any], Tensor[Any, Any]]
"""An RNN's state: ``h`` of shape ``(nlayers, batch, nhid)``, or the LSTM's ``(h, c)`` pair."""

RNN_TYPES = ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")


# ----- data (the original's data.py) ---------------------------------------------------------


class Dictionary:
    """Word <-> index (the original's ``data.Dictionary``): ``word2idx`` and ``idx2word``."""

    def __init__(self) -> None:
        self.word2idx: dict[str, int] = {}
        self.idx2word: list[str] = []

    def add_word(self, word: str) -> int:
        """The index of ``word``, added at the end if new."""
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self) -> int:
        return len(self.idx2word)


class Corpus:
    """The text as three int64 tensors of word indices, ``train``, ``valid`` and ``test`` (the
    original's ``data.Corpus``, from a string instead of three files).

    Each line becomes its white-space separated words followed by ``<eos>``; the lines are cut
    80/10/10 in order. The dictionary holds ``<unk>``, ``<eos>`` and the ``vocab`` most
    frequent words of the training lines (ties in order of first appearance); every other
    word reads as ``<unk>``.

    Raises:
        ValueError: ``vocab`` < 1, or a text with fewer than 10 non-empty lines.
    """

    def __init__(self, text: str, vocab: int, dev: Cpu) -> None:
        if vocab < 1:
            raise ValueError(f"Corpus: vocab must be >= 1, got {vocab}")
        lines = [line for line in text.split("\n") if line.strip()]
        if len(lines) < 10:
            raise ValueError(f"Corpus: the text has {len(lines)} non-empty lines, at least 10 are needed")
        a, b = int(len(lines) * 0.8), int(len(lines) * 0.9)
        counts = collections.Counter(w for line in lines[:a] for w in line.split())
        self.dictionary = Dictionary()
        for word in ("<unk>", "<eos>"):
            self.dictionary.add_word(word)
        for word, _ in counts.most_common(vocab):  # most_common keeps first-seen order among ties
            self.dictionary.add_word(word)
        self.train = self.tokenize(lines[:a], dev)
        self.valid = self.tokenize(lines[a:b], dev)
        self.test = self.tokenize(lines[b:], dev)

    def tokenize(self, lines: Sequence[str], dev: Cpu) -> Tensor[Any, Any]:
        """The word indices of ``lines`` (``<eos>`` after each), one int64 tensor."""
        unk = self.dictionary.word2idx["<unk>"]
        ids = [self.dictionary.word2idx.get(w, unk) for line in lines for w in [*line.split(), "<eos>"]]
        return dev.tensor(np.asarray(ids, dtype=np.int64))


# ----- the model (the original's model.py) ---------------------------------------------------


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder (the original's
    ``RNNModel``): ``(L, B)`` word indices and a state -> ``(L * B, ntoken)`` log-probabilities of
    the next word and the new state.

    ``emb = drop(encoder(input))``, ``output, hidden = rnn(emb, hidden)``,
    ``log_softmax(decoder(drop(output)))``. Weights as the original's ``init_weights``: the
    embedding and the decoder weight ``U(-0.1, 0.1)``, the decoder bias 0, the recurrent layer
    PyTorch's default ``U(-1/sqrt(nhid), 1/sqrt(nhid))``.

    Args:
        rnn_type: ``"LSTM"``, ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``.
        ntoken: vocabulary size; ninp: embedding width; nhid: hidden units per layer; nlayers:
            recurrent layers; dropout: dropout probability (on the embeddings, between
            recurrent layers and on the output).
        tie_weights: the decoder uses the encoder's weight (needs ``nhid == ninp``).
        dev, dtype: the device whose generator draws the weights, and their dtype.

    Raises:
        ValueError: an unknown ``rnn_type``, or ``tie_weights`` with ``nhid != ninp``.
    """

    def __init__(
        self,
        rnn_type: str,
        ntoken: int,
        ninp: int,
        nhid: int,
        nlayers: int,
        dropout: float = 0.5,
        tie_weights: bool = False,
        *,
        dev: Cpu,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp, dev=dev, dtype=dtype)
        self.rnn: nn.LSTM | nn.GRU | nn.RNN
        if rnn_type == "LSTM":
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, dev=dev, dtype=dtype)
        elif rnn_type == "GRU":
            self.rnn = nn.GRU(ninp, nhid, nlayers, dropout=dropout, dev=dev, dtype=dtype)
        else:
            try:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            except KeyError as e:
                raise ValueError(
                    f"RNNModel: an invalid rnn_type {rnn_type!r}; options are {', '.join(RNN_TYPES)}"
                ) from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout, dev=dev, dtype=dtype)
        self.decoder = nn.Linear(nhid, ntoken, dev=dev, dtype=dtype)
        # Optionally tie weights as in "Using the Output Embedding to Improve Language Models"
        # (Press & Wolf 2016) and Inan et al. 2016.
        if tie_weights:
            if nhid != ninp:
                raise ValueError("RNNModel: when using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self) -> None:
        """The original's initialisation: encoder and decoder weights ``U(-0.1, 0.1)``, decoder bias 0."""
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        assert self.decoder.bias is not None
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input: Tensor[Any, Any], hidden: Hidden) -> tuple[Tensor[Any, Any], Hidden]:  # type: ignore[override]  # takes the state too
        """``(log-probabilities (L * B, ntoken), new hidden)`` for word indices ``input (L, B)``
        (an int64 tensor) and the state ``hidden`` (:meth:`init_hidden`'s shapes)."""
        emb = self.drop(self.encoder(input))
        rnn: Any = self.rnn  # LSTM takes (h, c), GRU and RNN take h
        output, hidden = rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.reshape((-1, self.ntoken))  # PyTorch: decoded.view(-1, self.ntoken)
        return ops.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int) -> Hidden:
        """Zero state for a batch of ``bsz``: ``(h, c)`` for the LSTM, ``h`` otherwise, each
        ``(nlayers, bsz, nhid)`` in the parameters' dtype."""
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


# ----- the training program (the original's main.py) -----------------------------------------


def batchify(data: Tensor[Any, Any], bsz: int) -> Tensor[Any, Any]:
    """Arrange the word indices into ``bsz`` columns: ``(len(data) // bsz, bsz)``; the
    remainder is dropped. Column ``j`` holds the ``j``-th slice of the text, so the model
    learns nothing across columns but runs ``bsz`` sequences in one batch."""
    nbatch = data.shape[0] // bsz
    data = data[: nbatch * bsz]  # PyTorch: data.narrow(0, 0, nbatch * bsz)
    return data.reshape((bsz, -1)).T  # PyTorch: data.view(bsz, -1).t().contiguous()


def get_batch(source: Tensor[Any, Any], i: int, bptt: int) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
    """Rows ``i .. i + seq_len`` of ``source`` (``seq_len = min(bptt, len(source) - 1 - i)``) as
    the input ``(seq_len, B)`` and the rows one later, flattened, as the targets ``(seq_len * B,)``."""
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


def repackage_hidden(h: Hidden) -> Hidden:
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, Tensor):
        return h.detach()
    return (h[0].detach(), h[1].detach())


def unigram_loss(train: Array, test: Array, ntokens: int) -> float:
    """Negative log-likelihood per word (nats) of ``test`` under the word frequencies of
    ``train`` (add-one smoothed over ``ntokens`` words): the no-context baseline."""
    counts = np.bincount(train, minlength=ntokens).astype(np.float64) + 1.0
    return float(-np.log(counts[test] / counts.sum()).mean())


@no_grad()
def evaluate(model: RNNModel, data_source: Tensor[Any, Any], bptt: int, eval_batch_size: int) -> float:
    """Mean negative log-likelihood per word (nats) of ``model`` over the batchified
    ``data_source``, in ``eval()`` mode (no dropout) and recording nothing."""
    model.eval()
    criterion = nn.NLLLoss()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    for i in range(0, data_source.shape[0] - 1, bptt):
        data, targets = get_batch(data_source, i, bptt)
        output, hidden = model(data, hidden)
        hidden = repackage_hidden(hidden)
        total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train_step(
    model: RNNModel,
    data: Tensor[Any, Any],
    targets: Tensor[Any, Any],
    hidden: Hidden,
    lr: float,
    clip: float,
) -> tuple[float, Hidden, float]:
    """One batch of the original's ``train()``: detach the state, zero the gradients, forward,
    NLL loss, ``backward()``, ``clip_grad_norm_(clip)``, then ``p -= lr * p.grad`` for every
    parameter. Returns ``(loss, new hidden, gradient norm before clipping)``; every
    parameter's ``.grad`` holds its clipped gradient afterwards."""
    criterion = nn.NLLLoss()
    # Starting each batch, we detach the hidden state from how it was previously produced.
    # If we didn't, the model would try backpropagating all the way to start of the dataset.
    hidden = repackage_hidden(hidden)
    model.zero_grad()
    output, hidden = model(data, hidden)
    loss = criterion(output, targets)
    loss.backward()
    # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
    norm = nn.utils.clip_grad_norm_(model.parameters(), clip)
    for p in model.parameters():
        assert p.grad is not None
        p.data -= lr * p.grad.data  # PyTorch: p.data.add_(p.grad, alpha=-lr)
    return loss.item(), hidden, norm.item()


@dataclass
class Result:
    """What :func:`train` returns: the (best) model, the corpus, the validation loss of every
    epoch, the learning rate of every epoch, the test loss of the best model (nats/word), the
    unigram baseline's test loss (:func:`unigram_loss`) and the training time (seconds,
    evaluation included)."""

    model: RNNModel
    corpus: Corpus
    val_losses: list[float]
    lrs: list[float]
    test_loss: float
    unigram_loss: float
    seconds: float


def train(
    model_type: str = "LSTM",
    emsize: int = 64,
    nhid: int = 64,
    nlayers: int = 2,
    lr: float = 20.0,
    clip: float = 0.25,
    epochs: int = 20,
    batch_size: int = 20,
    bptt: int = 35,
    dropout: float = 0.2,
    tied: bool = False,
    seed: int = 1111,
    log_interval: int = 10,
    vocab: int = 1000,
    text: str | None = None,
    dry_run: bool = False,
    verbose: bool = True,
) -> Result:
    """The original ``main.py``: build the corpus (:class:`Corpus` of ``text``, default the
    standard library's docstrings) and an :class:`RNNModel`, train ``epochs`` epochs with
    :func:`train_step` over :func:`get_batch` chunks, evaluate on the validation split after
    each, divide ``lr`` by 4 when the validation loss did not improve, keep the best model's
    state, and score it on the test split. ``dry_run``: one batch per epoch and one epoch.

    Raises:
        ValueError: an unknown ``model_type``; ``tied`` with ``nhid != emsize``; a split too
            short for ``batch_size`` (or the evaluation batch of 10) columns of 2 words.
    """
    from gradtape.examples.seq import load_text

    if model_type not in RNN_TYPES:
        raise ValueError(f"model must be one of {', '.join(RNN_TYPES)}; got {model_type!r}")
    dev = Cpu(seed=seed)  # the original: torch.manual_seed(args.seed)
    corpus = Corpus(load_text() if text is None else text, vocab, dev)
    eval_batch_size = 10
    train_data = batchify(corpus.train, batch_size)
    val_data = batchify(corpus.valid, eval_batch_size)
    test_data = batchify(corpus.test, eval_batch_size)
    for name, split in (("train", train_data), ("valid", val_data), ("test", test_data)):
        if split.shape[0] < 2:
            raise ValueError(f"the {name} split is too short for batches of {split.shape[1]} columns")
    ntokens = len(corpus.dictionary)
    model = RNNModel(model_type, ntokens, emsize, nhid, nlayers, dropout, tied, dev=dev)
    if dry_run:
        epochs = 1
    say = print if verbose else (lambda *a, **k: None)
    best_val_loss: float | None = None
    best_state: dict[str, Array] = {}
    val_losses: list[float] = []
    lrs: list[float] = []
    started = time.perf_counter()
    for epoch in range(1, epochs + 1):
        epoch_start_time = time.perf_counter()
        # ---- the original's train(): turn on training mode which enables dropout.
        model.train()
        total_loss = 0.0
        start_time = time.perf_counter()
        hidden = model.init_hidden(batch_size)
        nbatches = len(train_data) // bptt
        for batch, i in enumerate(range(0, train_data.shape[0] - 1, bptt)):
            data, targets = get_batch(train_data, i, bptt)
            loss, hidden, _ = train_step(model, data, targets, hidden, lr, clip)
            total_loss += loss
            if batch % log_interval == 0 and batch > 0:
                cur_loss = total_loss / log_interval
                elapsed = time.perf_counter() - start_time
                say(
                    f"| epoch {epoch:3d} | {batch:5d}/{nbatches:5d} batches | lr {lr:02.2f} | "
                    f"ms/batch {elapsed * 1000 / log_interval:5.2f} | loss {cur_loss:5.2f} | "
                    f"ppl {math.exp(cur_loss):8.2f}"
                )
                total_loss = 0.0
                start_time = time.perf_counter()
            if dry_run:
                break
        lrs.append(lr)
        val_loss = evaluate(model, val_data, bptt, eval_batch_size)
        val_losses.append(val_loss)
        say("-" * 89)
        say(
            f"| end of epoch {epoch:3d} | time: {time.perf_counter() - epoch_start_time:5.2f}s | "
            f"valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}"
        )
        say("-" * 89)
        # Save the model if the validation loss is the best we've seen so far.
        if best_val_loss is None or val_loss < best_val_loss:
            best_state = {k: v.numpy().copy() for k, v in model.state_dict().items()}
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation dataset.
            lr /= 4.0
    seconds = time.perf_counter() - started
    # Load the best saved model.
    model.load_state_dict(best_state)
    test_loss = evaluate(model, test_data, bptt, eval_batch_size)
    base = unigram_loss(corpus.train.numpy(), corpus.test.numpy(), ntokens)
    return Result(model, corpus, val_losses, lrs, test_loss, base, seconds)


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (see the module docstring; the original's flags)."""
    ap = argparse.ArgumentParser(
        prog="python -m gradtape.examples.word_language_model", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--model", choices=RNN_TYPES, default="LSTM", help="type of network (default: LSTM)")
    ap.add_argument("--emsize", type=positive_int, default=64, help="size of word embeddings (default: 64)")
    ap.add_argument("--nhid", type=positive_int, default=64, help="number of hidden units per layer (default: 64)")
    ap.add_argument("--nlayers", type=positive_int, default=2, help="number of layers (default: 2)")
    ap.add_argument("--lr", type=nonnegative_float, default=20.0, help="initial learning rate (default: 20)")
    ap.add_argument("--clip", type=nonnegative_float, default=0.25, help="gradient clipping (default: 0.25)")
    ap.add_argument("--epochs", type=positive_int, default=20, help="upper epoch limit (default: 20)")
    ap.add_argument("--batch_size", type=positive_int, default=20, metavar="N", help="batch size (default: 20)")
    ap.add_argument("--bptt", type=positive_int, default=35, help="sequence length (default: 35)")
    ap.add_argument("--dropout", type=float, default=0.2, help="dropout applied to layers (0 = no dropout)")
    ap.add_argument("--tied", action="store_true", help="tie the word embedding and softmax weights")
    ap.add_argument("--seed", type=nonnegative_int, default=1111, help="random seed (default: 1111)")
    ap.add_argument("--log-interval", type=positive_int, default=10, metavar="N", help="report interval (default: 10)")
    ap.add_argument("--vocab", type=positive_int, default=1000, help="most frequent words kept (default: 1000)")
    ap.add_argument("--save", default="", help="path to save the final model (safetensors; default: none)")
    ap.add_argument("--dry-run", action="store_true", help="verify the code and the model")
    args = ap.parse_args(argv)
    if not 0.0 <= args.dropout < 1.0:
        ap.error(f"argument --dropout: must be in [0, 1), got {args.dropout}")
    if args.tied and args.nhid != args.emsize:
        ap.error("--tied: nhid must be equal to emsize")
    if args.save:
        parent = os.path.dirname(os.path.abspath(args.save))
        if os.path.isdir(args.save) or not os.path.isdir(parent):
            ap.error(f"argument --save: cannot write a file at {args.save!r}")
    res = train(
        args.model,
        args.emsize,
        args.nhid,
        args.nlayers,
        args.lr,
        args.clip,
        args.epochs,
        args.batch_size,
        args.bptt,
        args.dropout,
        args.tied,
        args.seed,
        args.log_interval,
        args.vocab,
        dry_run=args.dry_run,
    )
    c = res.corpus
    print(
        f"trained {res.model.num_parameters():,} parameters on {len(c.train):,} words "
        f"(vocabulary {len(c.dictionary)}) in {res.seconds:.1f} s"
    )
    if args.save:
        nn.save(res.model, args.save)
        print(f"saved the best model to {args.save}")
    print("=" * 89)
    print(f"| End of training | test loss {res.test_loss:5.2f} | test ppl {math.exp(res.test_loss):8.2f}")
    print("=" * 89)
    print(f"unigram baseline (no context): test loss {res.unigram_loss:.2f}, test ppl {math.exp(res.unigram_loss):.2f}")


if __name__ == "__main__":
    main()
