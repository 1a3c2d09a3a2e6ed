"""PyTorch's packed sequences (``torch.nn.utils.rnn``) on gradtape: a batch of sequences of
different lengths through ``nn.LSTM``/``GRU``/``RNN``, written as a PyTorch program writes it
(``pack_padded_sequence`` -> the layer -> ``pad_packed_sequence``), compared with PyTorch in
float64 from the same weights: the padded outputs, the lengths, ``h_n``/``c_n`` (each
sequence's state after its own last step, the reverse direction started there), and the
gradients of the input, the initial states and every weight."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import Tensor, nn
from gradtape.nn.utils import rnn as gt_rnn
from gradtape.ops.rnn import recurrent_stack

torch: Any = pytest.importorskip("torch")
import test_nn_rnn as tr  # noqa: E402  (the layer pairs and the comparison, after torch)

Array = np.ndarray[Any, Any]

CASES = [
    pytest.param(
        kind, layers, bf, bidir, sort, hx, id=f"{kind}-L{layers}-bf{int(bf)}-bi{int(bidir)}-s{int(sort)}-hx{int(hx)}"
    )
    for kind, layers, bf, bidir, sort, hx in itertools.product(
        tr.KINDS, (1, 2), (False, True), (False, True), (False, True), (False, True)
    )
    if kind in ("LSTM", "GRU") or (bf == bidir and sort == hx)
]


@pytest.mark.parametrize(("kind", "layers", "batch_first", "bidirectional", "enforce_sorted", "with_hx"), CASES)
def test_packed_batch_through_a_recurrent_layer_equals_torch(
    kind: str, layers: int, batch_first: bool, bidirectional: bool, enforce_sorted: bool, with_hx: bool
) -> None:
    ours, ref = tr._pair(kind, 3, 4, num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
    lengths = [6, 4, 4, 1] if enforce_sorted else [3, 6, 1, 4]
    nb, nt = len(lengths), max(lengths)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((nb, nt, 3) if batch_first else (nt, nb, 3))
    nk = layers * (2 if bidirectional else 1)
    hx = [rng.standard_normal((nk, nb, 4)) for _ in range(2 if kind == "LSTM" else 1)] if with_hx else None
    lstm = kind == "LSTM"
    tu = torch.nn.utils.rnn

    # PyTorch
    xt = torch.tensor(x, requires_grad=True)
    hts = [torch.tensor(a, requires_grad=True) for a in hx] if hx is not None else None
    packed = tu.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    t_out, t_state = ref(packed, None if hts is None else (tuple(hts) if lstm else hts[0]))
    t_pad, t_lens = tu.pad_packed_sequence(t_out, batch_first=batch_first, padding_value=0.5, total_length=nt + 1)
    t_states = list(t_state) if lstm else [t_state]
    ws = [rng.standard_normal(tuple(t.shape)) for t in (t_pad, *t_states)]
    sum((t * torch.tensor(w)).sum() for t, w in zip((t_pad, *t_states), ws, strict=True)).backward()

    # gradtape, the same program
    xg = gt.tensor(x, requires_grad=True)
    hgs = [gt.tensor(a, requires_grad=True) for a in hx] if hx is not None else None
    g_packed = gt_rnn.pack_padded_sequence(xg, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(g_packed.batch_sizes.numpy(), packed.batch_sizes.numpy())
    np.testing.assert_array_equal(g_packed.data.detach().numpy(), packed.data.detach().numpy())
    out, state = ours(g_packed, None if hgs is None else (tuple(hgs) if lstm else hgs[0]))
    assert isinstance(out, gt_rnn.PackedSequence)
    pad, lens = gt_rnn.pad_packed_sequence(out, batch_first=batch_first, padding_value=0.5, total_length=nt + 1)
    states = list(state) if lstm else [state]
    loss: Any = None
    for t, w in zip((pad, *states), ws, strict=True):
        term = (t * gt.tensor(w)).sum()
        loss = term if loss is None else loss + term
    loss.backward()

    np.testing.assert_array_equal(lens.numpy(), t_lens.numpy())
    tr._close(pad, t_pad, "padded output")
    for k, (s, ts) in enumerate(zip(states, t_states, strict=True)):
        tr._close(s, ts, "h_n" if k == 0 else "c_n")
    assert xg.grad is not None
    tr._close(xg.grad, xt.grad, "input.grad")
    for hg, ht in zip(hgs or [], hts or [], strict=True):
        assert hg.grad is not None
        tr._close(hg.grad, ht.grad, "h_0.grad")
    theirs = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None, name
        tr._close(p.grad, theirs[name].grad, f"{name}.grad")


def test_pack_sequence_and_unpack_round_trip_as_torch() -> None:
    """``pack_sequence`` of a list, ``unpack_sequence``/``unpad_sequence`` back: the packed data,
    batch sizes and indices as PyTorch's, each sequence back as it went in, and gradients of a
    packed loss land on each input sequence's own rows."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 2)) for n in (2, 5, 3)]
    seqs = [gt.tensor(a, requires_grad=True) for a in arrays]
    packed = gt_rnn.pack_sequence(seqs, enforce_sorted=False)
    ref = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=False)
    np.testing.assert_array_equal(packed.data.detach().numpy(), ref.data.numpy())
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), ref.batch_sizes.numpy())
    assert packed.sorted_indices is not None and packed.unsorted_indices is not None
    np.testing.assert_array_equal(packed.sorted_indices.numpy(), ref.sorted_indices.numpy())
    np.testing.assert_array_equal(packed.unsorted_indices.numpy(), ref.unsorted_indices.numpy())
    for got, a in zip(gt_rnn.unpack_sequence(packed), arrays, strict=True):
        np.testing.assert_array_equal(got.detach().numpy(), a)
    (packed.data * packed.data).sum().backward()
    for s, a in zip(seqs, arrays, strict=True):
        assert s.grad is not None
        np.testing.assert_array_equal(s.grad.numpy(), 2 * a)
    padded = gt_rnn.pad_sequence(seqs, batch_first=True)
    for got, a in zip(gt_rnn.unpad_sequence(padded, [2, 5, 3], batch_first=True), arrays, strict=True):
        np.testing.assert_array_equal(got.detach().numpy(), a)


def test_packing_errors_name_what_is_wrong() -> None:
    x = gt.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match=r"sorted in decreasing order .*enforce_sorted=False"):
        gt_rnn.pack_padded_sequence(x, [2, 4, 3])
    with pytest.raises(ValueError, match=r"pack_padded_sequence: every length must be in \[1, 4\]"):
        gt_rnn.pack_padded_sequence(x, [4, 2, 0])
    with pytest.raises(ValueError, match=r"every length must be in \[1, 4\]"):
        gt_rnn.pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(gt.ShapeError, match="expected 3 lengths"):
        gt_rnn.pack_padded_sequence(x, [4, 2])
    with pytest.raises(TypeError, match="lengths must be a 1-D sequence of ints"):
        gt_rnn.pack_padded_sequence(x, [4.0, 2.0, 1.0])
    packed = gt_rnn.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match=r"total_length to be at least .*\(4\), got total_length=3"):
        gt_rnn.pad_packed_sequence(packed, total_length=3)
    with pytest.raises(gt.ShapeError, match="LSTM"):
        nn.LSTM(5, 3)(packed)  # the packed features are 2, not 5
    with pytest.raises(ValueError, match=r"lengths must be 3 ints in \[1, 4\]"):
        recurrent_stack("GRU", x, None, None, [list(nn.GRU(2, 3).all_weights[0])], lengths=[4, 0, 1])


def test_a_packed_batch_trains_in_pytorch_spelling() -> None:
    """A variable-length sequence classifier as PyTorch tutorials write it: embed, pack, LSTM,
    classify from ``h_n``; the loss falls."""
    gt.manual_seed(0)
    emb, lstm, head = nn.Embedding(20, 8), nn.LSTM(8, 16, batch_first=True), nn.Linear(16, 2)
    params = [*emb.parameters(), *lstm.parameters(), *head.parameters()]
    opt = gt.optim.Adam(params, lr=0.05)
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 9, 16)
    tokens = rng.integers(1, 20, (16, 8)) * (np.arange(8)[None, :] < lengths[:, None])
    labels = (tokens[:, 0] % 2).astype(np.int64)  # the class is in the first token
    losses = []
    for _ in range(30):
        opt.zero_grad()
        packed = gt_rnn.pack_padded_sequence(emb(gt.tensor(tokens)), lengths, batch_first=True, enforce_sorted=False)
        _, (h_n, _) = lstm(packed)
        loss = nn.functional.cross_entropy(head(h_n[-1]), gt.tensor(labels))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert isinstance(h_n, Tensor)
