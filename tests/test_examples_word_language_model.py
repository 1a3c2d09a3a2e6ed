"""``python -m gradtape.examples.word_language_model`` against pytorch/examples' original (issue 27).

The original's ``RNNModel`` and its training step (``repackage_hidden``, ``model.zero_grad()``,
forward, ``NLLLoss``, ``backward()``, ``clip_grad_norm_``, ``p.data.add_(p.grad, alpha=-lr)``)
are written below in PyTorch as the original writes them, in float64. The gradtape example's
model (float64) gives its weights to the torch model through ``state_dict``; both run three
steps on the same ``batchify`` / ``get_batch`` chunks, carrying the hidden state from step to
step, and every loss, the gradient norm, every parameter's (clipped) ``.grad``, the hidden
state and the updated parameters must agree to 1e-9. Dropout is 0: its random masks cannot
be matched between the libraries. ``evaluate`` is compared on a held-out chunk afterwards.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Tensor
from gradtape.examples import word_language_model as wlm

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn
F: Any = torch.nn.functional

RTOL, ATOL = 1e-9, 1e-12


class TorchRNNModel(tnn.Module):  # type: ignore[misc]
    """The original's ``model.py`` ``RNNModel`` (PyTorch)."""

    def __init__(
        self,
        rnn_type: str,
        ntoken: int,
        ninp: int,
        nhid: int,
        nlayers: int,
        dropout: float = 0.5,
        tie_weights: bool = False,
    ) -> None:
        super().__init__()
        self.ntoken = ntoken
        self.drop = tnn.Dropout(dropout)
        self.encoder = tnn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(tnn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = tnn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = tnn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self) -> None:
        initrange = 0.1
        tnn.init.uniform_(self.encoder.weight, -initrange, initrange)
        tnn.init.zeros_(self.decoder.bias)
        tnn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input: Any, hidden: Any) -> Any:
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int) -> Any:
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def torch_batchify(data: Any, bsz: int) -> Any:
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def torch_get_batch(source: Any, i: int, bptt: int) -> tuple[Any, Any]:
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].view(-1)


def torch_repackage_hidden(h: Any) -> Any:
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(torch_repackage_hidden(v) for v in h)


def _states(h: Any) -> list[np.ndarray[Any, Any]]:
    """A hidden state (a tensor or an ``(h, c)`` pair, either library) as numpy arrays."""
    parts = h if isinstance(h, tuple) else (h,)
    return [np.asarray(p.data) if isinstance(p, Tensor) else p.detach().numpy() for p in parts]


@pytest.mark.parametrize(("rnn_type", "tied"), [("LSTM", True), ("GRU", False), ("RNN_TANH", False)])
def test_three_training_steps_equal_the_torch_original(rnn_type: str, tied: bool) -> None:
    ntoken, emsize, nhid, nlayers, bsz, bptt, lr, clip = 23, 6, 6, 2, 3, 5, 20.0, 0.25
    model = wlm.RNNModel(rnn_type, ntoken, emsize, nhid, nlayers, 0.0, tied, dev=Cpu(seed=3), dtype=np.float64)
    ref = TorchRNNModel(rnn_type, ntoken, emsize, nhid, nlayers, 0.0, tied).double()
    ref.load_state_dict({k: torch.from_numpy(np.array(v.data)) for k, v in model.state_dict().items()}, strict=True)
    names = [n for n, _ in model.named_parameters()]
    assert names == [n for n, _ in ref.named_parameters()]  # tied: decoder.weight is encoder.weight

    words = np.random.default_rng(0).integers(0, ntoken, 70).astype(np.int64)
    dev = Cpu()
    train_data = wlm.batchify(dev.tensor(words[:55]), bsz)
    ttrain_data = torch_batchify(torch.from_numpy(words[:55]), bsz)
    np.testing.assert_array_equal(train_data.numpy(), ttrain_data.numpy())

    criterion = tnn.NLLLoss()
    hidden = model.init_hidden(bsz)
    thidden = ref.init_hidden(bsz)
    for step, i in enumerate(range(0, 3 * bptt, bptt)):
        # ---- gradtape: the example's step
        data, targets = wlm.get_batch(train_data, i, bptt)
        loss, hidden, norm = wlm.train_step(model, data, targets, hidden, lr, clip)
        # ---- PyTorch: the original's train() body
        tdata, ttargets = torch_get_batch(ttrain_data, i, bptt)
        thidden = torch_repackage_hidden(thidden)
        ref.zero_grad()
        output, thidden = ref(tdata, thidden)
        tloss = criterion(output, ttargets)
        tloss.backward()
        tnorm = torch.nn.utils.clip_grad_norm_(ref.parameters(), clip)
        for p in ref.parameters():
            p.data.add_(p.grad, alpha=-lr)

        np.testing.assert_allclose(loss, tloss.item(), rtol=RTOL, err_msg=f"loss at step {step}")
        np.testing.assert_allclose(norm, tnorm.item(), rtol=RTOL, err_msg=f"gradient norm at step {step}")
        assert norm > clip  # the clipping acted
        for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
            assert p.grad is not None, f"{name}.grad is None at step {step}"
            np.testing.assert_allclose(
                p.grad.numpy(), q.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name}.grad at step {step}"
            )
            np.testing.assert_allclose(
                p.numpy(), q.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name} after step {step}"
            )
        for a, b in zip(_states(hidden), _states(thidden), strict=True):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"hidden state after step {step}")

    # ---- evaluate(): eval mode, no_grad, the loss weighted by chunk length
    val = wlm.batchify(dev.tensor(words[55:]), 2)
    got = wlm.evaluate(model, val, bptt, 2)
    ref.eval()
    tval = torch_batchify(torch.from_numpy(words[55:]), 2)
    total, th = 0.0, ref.init_hidden(2)
    with torch.no_grad():
        for i in range(0, tval.size(0) - 1, bptt):
            tdata, ttargets = torch_get_batch(tval, i, bptt)
            output, th = ref(tdata, th)
            total += len(tdata) * criterion(output, ttargets).item()
    np.testing.assert_allclose(got, total / (len(tval) - 1), rtol=RTOL)


def test_repackage_hidden_cuts_the_history() -> None:
    """The state carried into the next batch is a new leaf: it no longer requires grad."""
    model = wlm.RNNModel("LSTM", 11, 4, 4, 1, 0.0, dev=Cpu(seed=0), dtype=np.float64)
    data = Cpu().tensor(np.arange(6, dtype=np.int64).reshape(3, 2) % 11)
    _, hidden = model(data, model.init_hidden(2))
    assert isinstance(hidden, tuple) and hidden[0].requires_grad
    h, c = wlm.repackage_hidden(hidden)
    assert not h.requires_grad and not c.requires_grad
    np.testing.assert_array_equal(h.numpy(), hidden[0].numpy())


def test_model_argument_errors() -> None:
    with pytest.raises(ValueError, match="nhid must be equal to emsize"):
        wlm.RNNModel("LSTM", 10, 4, 6, 1, 0.0, tie_weights=True, dev=Cpu())
    with pytest.raises(ValueError, match="invalid rnn_type 'LSTMX'"):
        wlm.RNNModel("LSTMX", 10, 4, 4, 1, 0.0, dev=Cpu())


def test_main_trains_below_the_unigram_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    """Four epochs of a small model (about 3 s): the validation loss falls every epoch, from
    about log(vocabulary) = 5.3 untrained to below 3.0 (measured 3.03, 2.97, 2.90, 2.85), and
    the printed test loss (2.94) beats the no-context unigram baseline's (3.03)."""
    argv = ["--epochs", "4", "--emsize", "32", "--nhid", "32", "--nlayers", "1", "--dropout", "0"]
    wlm.main([*argv, "--vocab", "200", "--lr", "5"])
    out = capsys.readouterr().out
    val = [float(v) for v in re.findall(r"valid loss +([\d.]+)", out)]
    assert len(val) == 4 and all(b < a for a, b in itertools.pairwise(val)) and val[-1] < math.log(202) - 2, out
    m = re.search(r"test loss +([\d.]+) \| test ppl +([\d.]+)", out)
    u = re.search(r"unigram baseline \(no context\): test loss ([\d.]+)", out)
    assert m is not None and u is not None, out
    assert math.isclose(math.exp(float(m.group(1))), float(m.group(2)), rel_tol=0.02)
    assert float(m.group(1)) < float(u.group(1))


def test_cli_rejects_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--model", "TRANSFORMER"], ["--tied", "--nhid", "8", "--emsize", "4"], ["--dropout", "1.5"]):
        with pytest.raises(SystemExit):
            wlm.main(argv)
    assert "nhid must be equal to emsize" in capsys.readouterr().err
