"""``nn.EmbeddingBag`` and ``F.embedding_bag`` as a PyTorch program uses them, against PyTorch.

Each check runs the same call twice, spelled ``torch`` / ``torch.nn.functional`` and
``gradtape`` / ``gradtape.nn.functional``, from identical float64 tables, and compares the
outputs and the gradients of ``sum(out * G)`` (``G`` fixed) with respect to the table and the
per-sample weights: every mode x input form (``(B, L)`` bags, 1-D indices with offsets, with
``include_last_offset``) x per-sample weights (``"sum"`` only) x ``padding_idx``, on inputs with
repeated indices, empty bags and bags of padding only; ties and NaN in ``"max"``; ``max_norm``'s
renormalisation in place; ``scale_grad_by_freq``; second derivatives; the layer (constructor,
``from_pretrained``, state dict) in a bag-of-words classifier trained with SGD step by step;
the three ways gradtape records (a traced index tensor, a ``GradientTape``, ``no_grad``); the
errors a user meets. The GPU side is the ``F.embedding_bag`` rows of
tests/test_torch_namespace.py, which tests/test_cuda.py runs on a GPU.

Two places where PyTorch 2.13's CPU kernel is wrong are checked against what PyTorch documents
(and its CUDA kernel computes) instead: ``scale_grad_by_freq`` divides some rows by another
row's count (pytorch/pytorch#190063), and ``include_last_offset`` with ``offsets[-1]`` before
the input's end puts the trailing indices in the last bag in some modes (#191965).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import gradtape
import gradtape.nn.functional as F
from gradtape import nn

torch: Any = pytest.importorskip("torch")
tF: Any = torch.nn.functional

Array = np.ndarray[Any, Any]
V, D = 7, 3
RTOL, ATOL = 1e-12, 1e-14

# every form holds repeated indices (1 and 6 twice in a bag, 1 in several bags), an empty bag
# (the 1-D forms) and a bag that is padding only with padding_idx=3
X2 = np.array([[1, 2, 1], [6, 0, 6], [3, 3, 3], [5, 1, 4]])
X1 = np.array([1, 2, 1, 6, 0, 3, 3, 5, 1, 4, 6])
OFFSETS = np.array([0, 3, 3, 5, 7])  # bags [1 2 1] [] [6 0] [3 3] [5 1 4 6]
FORMS: dict[str, tuple[Array, Array | None, bool]] = {
    "2d": (X2, None, False),
    "1d": (X1, OFFSETS, False),
    "1d-last-offset": (X1, np.append(OFFSETS, X1.size), True),
}


def _table(seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal((V, D))


def _run(lib: str, w: Array, x: Array, offsets: Array | None, psw: Array | None, g: Array | None, **kw: Any) -> Any:
    """``lib``'s ``F.embedding_bag(x, w, offsets, per_sample_weights=psw, **kw)``; with ``g``, the
    backward of ``sum(out * g)``. Returns (out, d/dw, d/dpsw, w after the call) as arrays."""
    if lib == "torch":
        tw = torch.tensor(w, requires_grad=True)
        tp = None if psw is None else torch.tensor(psw, requires_grad=True)
        off = None if offsets is None else torch.tensor(offsets)
        out = tF.embedding_bag(torch.tensor(x), tw, off, per_sample_weights=tp, **kw)
        if g is not None:
            (out * torch.tensor(g)).sum().backward()
        grads = [None if t is None or t.grad is None else t.grad.to_dense().numpy() for t in (tw, tp)]
        return out.detach().numpy(), *grads, tw.detach().numpy()
    gw = gradtape.tensor(w, requires_grad=True)
    gp = None if psw is None else gradtape.tensor(psw, requires_grad=True)
    goff = None if offsets is None else gradtape.tensor(offsets)
    out = F.embedding_bag(gradtape.tensor(x), gw, goff, per_sample_weights=gp, **kw)
    if g is not None:
        (out * gradtape.tensor(g)).sum().backward()
    grads = [None if t is None or t.grad is None else t.grad.numpy() for t in (gw, gp)]
    return out.numpy(), *grads, gw.numpy()


def _compare(w: Array, x: Array, offsets: Array | None, psw: Array | None = None, **kw: Any) -> Array:
    """Values and gradients of gradtape's call against torch's; returns gradtape's output."""
    want = _run("torch", w, x, offsets, psw, None, **kw)[0]
    g = np.random.default_rng(1).standard_normal(want.shape)
    t_out, t_gw, t_gp, t_w = _run("torch", w, x, offsets, psw, g, **kw)
    out, gw, gp, w_after = _run("gradtape", w, x, offsets, psw, g, **kw)
    assert out.shape == t_out.shape and out.dtype == t_out.dtype
    np.testing.assert_allclose(out, t_out, rtol=RTOL, atol=ATOL, err_msg="output")
    np.testing.assert_allclose(w_after, t_w, rtol=RTOL, atol=ATOL, err_msg="the table after the call")
    np.testing.assert_allclose(gw, t_gw, rtol=RTOL, atol=ATOL, err_msg="d/dweight")
    if psw is not None:
        np.testing.assert_allclose(gp, t_gp, rtol=RTOL, atol=ATOL, err_msg="d/dper_sample_weights")
    result: Array = out
    return result


GRID = [
    (mode, form, with_psw, pad)
    for mode in ("sum", "mean", "max")
    for form in FORMS
    for with_psw in ((False, True) if mode == "sum" else (False,))
    for pad in (None, 3, -1)
]


@pytest.mark.parametrize(("mode", "form", "with_psw", "padding_idx"), GRID)
def test_values_and_gradients_match_torch(mode: str, form: str, with_psw: bool, padding_idx: int | None) -> None:
    x, offsets, last = FORMS[form]
    psw = np.asarray(np.random.default_rng(2).standard_normal(x.shape)) if with_psw else None
    out = _compare(_table(), x, offsets, psw, mode=mode, include_last_offset=last, padding_idx=padding_idx)
    n_bags = x.shape[0] if x.ndim == 2 else OFFSETS.size
    assert out.shape == (n_bags, D)
    if x.ndim == 1:
        np.testing.assert_array_equal(out[1], np.zeros(D))  # the empty bag
    if padding_idx == 3:  # a bag of padding only: zeros, whatever the mode
        np.testing.assert_array_equal(out[2 if x.ndim == 2 else 3], np.zeros(D))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_the_layer_matches_torch_including_padding_and_offsets(mode: str) -> None:
    """``nn.EmbeddingBag`` built as PyTorch's, its table copied into torch's layer."""
    gradtape.manual_seed(0)
    bag = nn.EmbeddingBag(V, D, mode=mode, padding_idx=3, dtype=np.float64)
    ref = torch.nn.EmbeddingBag(V, D, mode=mode, padding_idx=3).double()
    np.testing.assert_array_equal(bag.weight.numpy()[3], np.zeros(D))  # the padding row starts at zero
    ref.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in bag.state_dict().items()})
    g = np.random.default_rng(3).standard_normal((OFFSETS.size, D))
    out = bag(gradtape.tensor(X1), gradtape.tensor(OFFSETS))
    (out * gradtape.tensor(g)).sum().backward()
    t_out = ref(torch.tensor(X1), torch.tensor(OFFSETS))
    (t_out * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=RTOL, atol=ATOL)
    assert bag.weight.grad is not None
    np.testing.assert_allclose(bag.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=RTOL, atol=ATOL)
    assert bag.weight.grad.numpy()[3].tolist() == [0.0] * D  # the padding row never trains
    # index arrays and lists work as tensors do (PyTorch's layer takes tensors only)
    np.testing.assert_array_equal(bag(X1, OFFSETS).numpy(), out.numpy())
    np.testing.assert_array_equal(bag(X1.tolist(), OFFSETS.tolist()).numpy(), out.numpy())
    assert repr(bag) == repr(ref)


def test_repeated_indices_accumulate_and_mean_counts_every_occurrence() -> None:
    w = _table()
    g = np.arange(2.0 * D).reshape(2, D)
    for mode, scale in (("sum", 3.0), ("mean", 1.0)):
        gw = gradtape.tensor(w, requires_grad=True)
        out = F.embedding_bag(gradtape.tensor([[2, 2, 2], [4, 2, 4]]), gw, mode=mode)
        (out * gradtape.tensor(g)).sum().backward()
        assert gw.grad is not None
        k = 1.0 / 3.0 if mode == "mean" else 1.0
        np.testing.assert_allclose(gw.grad.numpy()[2], scale * g[0] + k * g[1], rtol=RTOL)
        np.testing.assert_allclose(gw.grad.numpy()[4], 2 * k * g[1], rtol=RTOL)
    _compare(w, np.array([[2, 2, 2], [4, 2, 4]]), None, mode="mean")


def test_max_ties_go_to_the_first_row_as_in_torch() -> None:
    """Rows 1 and 4 are equal, rows 1 and 2 tie in column 0, row 5 ties row 2 in column 2:
    PyTorch keeps the first row of a bag that reaches the maximum, and the gradient goes to
    that row only."""
    w = np.array(
        [
            [0.0, 0.0, 0.0],
            [2.0, -1.0, 0.5],
            [2.0, -3.0, 1.5],
            [-1.0, -1.0, -1.0],
            [2.0, -1.0, 0.5],
            [-5.0, 1.0, 1.5],
            [-2.0, -1.0, -2.0],
        ]
    )
    x = np.array([1, 4, 2, 4, 1, 2, 5, 2, 2, 6, 3, 6])
    offsets = np.array([0, 3, 6, 9])  # [1 4 2] [4 1 2] [5 2 2] [6 3 6]
    _compare(w, x, offsets, mode="max")
    gw = gradtape.tensor(w, requires_grad=True)
    F.embedding_bag(gradtape.tensor(x), gw, gradtape.tensor(offsets), mode="max").sum().backward()
    assert gw.grad is not None
    # bag 0: column 0 to row 1 (first of 1, 4, 2), column 1 to row 1, column 2 to row 2
    # bag 1: row 4 first (4 ties 1), column 2 to row 2; bag 2: columns 1, 2 to row 5
    # (2 ties it in column 2 later), column 0 to row 2 (the first of two 2s); bag 3: row 6 twice,
    # then row 3 in column 2 (-1 > -2) and columns 0 and 1 from row 3 (-1 > -2, -1 ties -1)
    want = np.zeros_like(w)
    want[1] = [1, 1, 0]
    want[2] = [0, 0, 1]
    want[4] = [1, 1, 0]
    want[2] += [0, 0, 1]
    want[5] = [0, 1, 1]
    want[2] += [1, 0, 0]
    want[3] = [1, 0, 1]
    want[6] = [0, 1, 0]
    np.testing.assert_array_equal(gw.grad.numpy(), want)


def test_max_keeps_a_nan_only_where_it_comes_first_as_torch() -> None:
    w = _table()
    w[2, 0] = np.nan
    x = np.array([2, 1, 1, 2, 5])
    out = _compare(w, x, np.array([0, 2]), mode="max")
    assert np.isnan(out[0, 0]) and not np.isnan(out[1]).any()


def test_empty_bags_and_empty_inputs_give_zeros() -> None:
    w = _table()
    # consecutive equal offsets: empty bags, also first and last
    _compare(w, np.array([4, 5, 4]), np.array([0, 0, 2, 3, 3]), mode="mean")
    _compare(w, np.array([4, 5, 4]), np.array([0, 0, 2, 3, 3]), mode="max")
    # an empty input: one empty bag per offset
    for mode in ("sum", "mean", "max"):
        out = _compare(w, np.array([], dtype=np.int64), np.array([0, 0]), mode=mode)
        np.testing.assert_array_equal(out, np.zeros((2, D)))
    # no bags at all
    _compare(w, np.zeros((0, 4), dtype=np.int64), None, mode="sum")
    # (B, 0): B empty bags (PyTorch raises "step must be nonzero" here)
    gw = gradtape.tensor(w, requires_grad=True)
    empty = F.embedding_bag(gradtape.tensor(np.zeros((3, 0), dtype=np.int64)), gw, mode="max")
    np.testing.assert_array_equal(empty.numpy(), np.zeros((3, D)))
    empty.sum().backward()
    assert gw.grad is not None and not gw.grad.numpy().any()


def test_include_last_offset_ends_the_last_bag_there() -> None:
    """Indices after ``offsets[-1]`` enter no bag, in every mode (PyTorch's documentation; its
    CPU kernel counts them in some modes and not in others, pytorch/pytorch#191965)."""
    w = _table()
    x, offsets = np.array([1, 2, 3, 4, 5, 0, 1]), np.array([0, 2, 5])
    cut = np.array([1, 2, 3, 4, 5])
    for mode in ("sum", "mean", "max"):
        g = np.random.default_rng(4).standard_normal((2, D))
        got = _run("gradtape", w, x, offsets, None, g, mode=mode, include_last_offset=True)
        want = _run("gradtape", w, cut, offsets[:-1], None, g, mode=mode)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    # the 2-D form ignores it, as PyTorch's
    _compare(w, X2, None, mode="sum", include_last_offset=True)


def test_per_sample_weights_weigh_each_row_and_get_their_gradient() -> None:
    w = _table()
    psw = np.array([0.5, -2.0, 3.0, 1.0, 0.25, 4.0])
    x, offsets = np.array([1, 1, 6, 0, 6, 2]), np.array([0, 2, 2])
    out = _compare(w, x, offsets, psw, mode="sum", padding_idx=6)
    np.testing.assert_allclose(out[0], 0.5 * w[1] - 2.0 * w[1], rtol=RTOL)
    np.testing.assert_allclose(out[2], 1.0 * w[0] + 4.0 * w[2], rtol=RTOL)  # 6 is padding
    _compare(w, x.reshape(2, 3), None, psw.reshape(2, 3), mode="sum")


def _freq_reference(w: Array, x: Array, offsets: Array, mode: str, g: Array) -> Array:
    """The table's gradient with ``scale_grad_by_freq`` as PyTorch defines it (and its
    ``F.embedding`` computes it): ``F.embedding(..., scale_grad_by_freq=True)`` summed into the
    bags."""
    tw = torch.tensor(w, requires_grad=True)
    rows = tF.embedding(torch.tensor(x), tw, scale_grad_by_freq=True)
    bag_of = torch.tensor(np.repeat(np.arange(offsets.size), np.diff(np.append(offsets, x.size))))
    out = torch.zeros(offsets.size, w.shape[1], dtype=torch.float64).index_add(0, bag_of, rows)
    if mode == "mean":
        out = out / torch.bincount(bag_of, minlength=offsets.size).clamp(min=1)[:, None]
    (out * torch.tensor(g)).sum().backward()
    grad: Array = tw.grad.numpy()
    return grad


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_divides_by_each_index_count(mode: str) -> None:
    w = _table()
    x, offsets = np.array([1, 1, 3, 2, 2, 2, 5]), np.array([0, 2, 4])
    g = np.random.default_rng(5).standard_normal((3, D))
    out, gw, _, _ = _run("gradtape", w, x, offsets, None, g, mode=mode, scale_grad_by_freq=True)
    np.testing.assert_allclose(gw, _freq_reference(w, x, offsets, mode, g), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(out, _run("torch", w, x, offsets, None, None, mode=mode)[0], rtol=RTOL)
    # where every index occurs equally often PyTorch's CPU kernel is right too
    _compare(w, np.array([4, 1, 1, 4, 0, 0]), np.array([0, 3]), mode=mode, scale_grad_by_freq=True)


@pytest.mark.parametrize(("norm_type", "mode"), [(2.0, "mean"), (1.0, "sum"), (np.inf, "max"), (3.0, "sum")])
def test_max_norm_renormalises_the_looked_up_rows_in_place(norm_type: float, mode: str) -> None:
    """Each row the input names (padding and repeated ones too, once) whose norm exceeds
    ``max_norm`` is scaled to it before the lookup, in the table itself, as PyTorch does."""
    w = _table(6) * 3.0
    x, offsets = np.array([1, 4, 1, 0, 6, 6]), np.array([0, 3])
    _compare(w, x, offsets, mode=mode, max_norm=1.5, norm_type=norm_type, padding_idx=6)
    gw = gradtape.tensor(w.copy())
    F.embedding_bag(gradtape.tensor(x), gw, gradtape.tensor(offsets), max_norm=1.5, norm_type=norm_type)
    norms = np.linalg.norm(gw.numpy(), ord=norm_type, axis=1)
    assert np.all(norms[[0, 1, 4, 6]] <= 1.5 + 1e-12)
    np.testing.assert_array_equal(gw.numpy()[[2, 3, 5]], w[[2, 3, 5]])  # rows not named stay


def test_max_norm_after_the_table_was_saved_makes_backward_refuse() -> None:
    """The renormalisation writes into the table: a backward that read the old values (a
    product with the table recorded before) refuses, as PyTorch's version counter makes it."""
    gw = gradtape.tensor(_table() * 3.0, requires_grad=True)
    before = (gw * gw).sum()
    after = F.embedding_bag(gradtape.tensor([[1, 2]]), gw, max_norm=1.0).sum()
    with pytest.raises(gradtape.TapeError, match=r"written in place after the op ran"):
        (before + after).backward()


def test_sparse_is_accepted_and_the_gradient_is_dense() -> None:
    w = _table()
    _compare(w, X1, OFFSETS, mode="sum", sparse=True)
    _compare(w, X2, None, mode="mean", sparse=True, padding_idx=1)


# ----- second derivatives -------------------------------------------------------------------


def _torch_bags(w: Any, x: Array, offsets: Array, mode: str, psw: Any = None, pad: int | None = None) -> Any:
    """A reference torch can differentiate twice (its ``embedding_bag`` has no double
    backward): the rows gathered, weighted and summed into the bags, or padded with -inf and
    maxed (``torch.max`` along a dim gives the first maximum's index, PyTorch's tie rule)."""
    ends = np.append(offsets[1:], x.size)
    bags = [[i for i in range(s, e) if x[i] != pad] for s, e in zip(offsets, ends, strict=True)]
    out = []
    for b in bags:
        if not b:
            out.append(torch.zeros(w.shape[1], dtype=torch.float64))
            continue
        rows = w[torch.tensor(x[b])]
        if psw is not None:
            rows = rows * psw[torch.tensor(b)][:, None]
        out.append(rows.sum(0) if mode == "sum" else rows.mean(0) if mode == "mean" else rows.max(0).values)
    return torch.stack(out)


@pytest.mark.parametrize(
    ("mode", "with_psw", "pad"), [("sum", True, 6), ("sum", False, None), ("mean", False, 6), ("max", False, 6)]
)
def test_second_derivatives_match_torch(mode: str, with_psw: bool, pad: int | None) -> None:
    """The gradient is recorded (the op's second rule): Hessians of ``sum(tanh(out) * G)``
    with respect to the table and the per-sample weights, against torch's of the reference."""
    w = _table(7)
    x, offsets = np.array([1, 4, 1, 6, 0, 2, 2, 6]), np.array([0, 3, 3, 5])
    psw = np.random.default_rng(8).standard_normal(x.size) if with_psw else None
    g = np.random.default_rng(9).standard_normal((offsets.size, D))

    def ours(*ts: Any) -> Any:
        p = ts[1] if with_psw else None
        out = F.embedding_bag(
            gradtape.tensor(x), ts[0], gradtape.tensor(offsets), mode=mode, per_sample_weights=p, padding_idx=pad
        )
        return (out.tanh() * gradtape.tensor(g)).sum()

    def theirs(*ts: Any) -> Any:
        return (_torch_bags(ts[0], x, offsets, mode, ts[1] if with_psw else None, pad).tanh() * torch.tensor(g)).sum()

    inputs = (w,) if psw is None else (w, psw)
    got = gradtape.autograd.functional.hessian(ours, tuple(gradtape.tensor(a) for a in inputs))
    want = torch.autograd.functional.hessian(theirs, tuple(torch.tensor(a) for a in inputs))
    flat_got = [h for row in got for h in row]  # H[i][j] for the inputs i, j
    flat_want = [h for row in want for h in row]
    assert len(flat_got) == len(inputs) ** 2
    for a, b in zip(flat_got, flat_want, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


# ----- the layer ----------------------------------------------------------------------------


def test_constructor_from_pretrained_and_state_dict_as_torch() -> None:
    w = _table()
    bag = nn.EmbeddingBag.from_pretrained(gradtape.tensor(w), mode="max", padding_idx=2)
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="max", padding_idx=2)
    assert not bag.weight.requires_grad and not ref.weight.requires_grad
    assert list(bag.state_dict()) == list(ref.state_dict()) == ["weight"]
    np.testing.assert_array_equal(bag.weight.numpy()[2], w[2])  # from_pretrained keeps the padding row
    np.testing.assert_allclose(bag(X2).numpy(), ref(torch.tensor(X2)).detach().numpy(), rtol=RTOL)
    assert repr(bag) == repr(ref)
    trainable = nn.EmbeddingBag.from_pretrained(gradtape.tensor(w), freeze=False)
    assert trainable.weight.requires_grad and trainable.mode == "mean"
    # _weight: PyTorch's constructor argument, its memory shared
    table = gradtape.tensor(w.copy())
    shared = nn.EmbeddingBag(V, D, _weight=table, max_norm=0.5)
    shared(gradtape.tensor([[0, 1]]))
    assert np.linalg.norm(table.numpy()[0]) <= 0.5 + 1e-12
    # the defaults and the keywords PyTorch code passes through (factory_kwargs)
    layer = nn.EmbeddingBag(10, 4, device="cpu", dtype=None)
    assert layer.weight.dtype == np.float32 and layer.weight.shape == (10, 4) and layer.weight.requires_grad
    assert layer.mode == "mean" and layer.padding_idx is None and not layer.include_last_offset
    assert nn.EmbeddingBag(10, 4, padding_idx=-1).padding_idx == 9
    assert repr(nn.EmbeddingBag(10, 4, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode="sum")) == repr(
        torch.nn.EmbeddingBag(10, 4, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode="sum")
    )


class BagOfWords(nn.Module):
    """A bag-of-words text classifier, as PyTorch's tutorials write it."""

    def __init__(self, vocab: int, dim: int, classes: int, mode: str) -> None:
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab, dim, mode=mode, padding_idx=0, dtype=np.float64)
        self.fc = nn.Linear(dim, classes, dtype=np.float64)

    def forward(self, text: Any, offsets: Any, weights: Any = None) -> Any:  # type: ignore[override]  # PyTorch's
        return self.fc(self.embedding(text, offsets, weights))


class TorchBagOfWords(torch.nn.Module):  # type: ignore[misc]
    def __init__(self, vocab: int, dim: int, classes: int, mode: str) -> None:
        super().__init__()
        self.embedding = torch.nn.EmbeddingBag(vocab, dim, mode=mode, padding_idx=0)
        self.fc = torch.nn.Linear(dim, classes)

    def forward(self, text: Any, offsets: Any, weights: Any = None) -> Any:
        return self.fc(self.embedding(text, offsets, weights))


def _batches(rng: np.random.Generator, vocab: int, classes: int, steps: int) -> list[tuple[Array, Array, Array, Array]]:
    """Variable-length documents (some empty, some with padding 0), concatenated, with offsets."""
    out = []
    for _ in range(steps):
        lengths = rng.integers(0, 6, 5)
        text = rng.integers(0, vocab, int(lengths.sum()))
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        out.append((text, offsets, rng.uniform(0.5, 2.0, text.size), rng.integers(0, classes, 5)))
    return out


@pytest.mark.parametrize("mode", ["mean", "sum", "max"])
def test_bag_of_words_classifier_trains_as_torch_step_by_step(mode: str) -> None:
    vocab, dim, classes = 12, 4, 3
    gradtape.manual_seed(1)
    model = BagOfWords(vocab, dim, classes, mode)
    ref = TorchBagOfWords(vocab, dim, classes, mode).double()
    ref.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    opt = gradtape.optim.SGD(model.parameters(), lr=0.5)
    t_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    for text, offsets, weights, label in _batches(np.random.default_rng(2), vocab, classes, 6):
        psw = weights if mode == "sum" else None
        opt.zero_grad()
        loss = F.cross_entropy(
            model(gradtape.tensor(text), gradtape.tensor(offsets), None if psw is None else gradtape.tensor(psw)),
            gradtape.tensor(label),
        )
        loss.backward()
        opt.step()
        t_opt.zero_grad()
        t_loss = tF.cross_entropy(
            ref(torch.tensor(text), torch.tensor(offsets), None if psw is None else torch.tensor(psw)),
            torch.tensor(label),
        )
        t_loss.backward()
        t_opt.step()
        np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-12)
        for (name, p), (_, q) in zip(model.state_dict().items(), ref.state_dict().items(), strict=True):
            np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-11, atol=1e-13, err_msg=name)


def test_the_three_ways_gradtape_records() -> None:
    """A traced index tensor carries its store to the table's gradient (dfdx's usage); a
    ``GradientTape`` watches the layer's parameters (TensorFlow's); ``no_grad`` records nothing."""
    w = _table()
    bag = nn.EmbeddingBag.from_pretrained(gradtape.tensor(w), freeze=False, mode="sum")
    g = np.random.default_rng(6).standard_normal((OFFSETS.size, D))
    want = _run("torch", w, X1, OFFSETS, None, g, mode="sum")[1]

    grads = bag.alloc_grads()
    x = gradtape.tensor(X1).trace(grads)
    store = (bag(x, gradtape.tensor(OFFSETS)) * gradtape.tensor(g)).sum().backward()
    np.testing.assert_allclose(store.get(bag.weight).numpy(), want, rtol=RTOL)
    np.testing.assert_allclose(grads.get(bag.weight).numpy(), want, rtol=RTOL)

    with gradtape.GradientTape() as tape:
        loss = (bag(X1, OFFSETS) * gradtape.tensor(g)).sum()
    np.testing.assert_allclose(tape.gradient(loss, bag.weight).numpy(), want, rtol=RTOL)

    with gradtape.no_grad():
        out = bag(X1, OFFSETS)
    assert not out.requires_grad


def test_float32_stays_float32() -> None:
    w = _table().astype(np.float32)
    for mode in ("sum", "mean", "max"):
        gw = gradtape.tensor(w, requires_grad=True)
        out = F.embedding_bag(gradtape.tensor(X2), gw, mode=mode)
        out.sum().backward()
        assert out.dtype == np.float32 and gw.grad is not None and gw.grad.dtype == np.float32
        want = tF.embedding_bag(torch.tensor(X2), torch.tensor(w), mode=mode).numpy()
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


# ----- errors --------------------------------------------------------------------------------


def _raises(err: type[Exception], message: str, **kw: Any) -> None:
    args: dict[str, Any] = {"input": gradtape.tensor(X1), "weight": gradtape.tensor(_table()), "offsets": None}
    args["offsets"] = gradtape.tensor(OFFSETS)
    args.update(kw)
    with pytest.raises(err, match=message):
        F.embedding_bag(**args)


def test_bad_input_raises_naming_the_op_and_the_shapes() -> None:
    t = gradtape.tensor
    _raises(gradtape.ShapeError, r"^embedding_bag: offsets must be None for a 2-D input \(shape \(4, 3\)", input=t(X2))
    _raises(ValueError, r"^embedding_bag: a 1-D input \(shape \(11,\)\) needs offsets", offsets=None)
    _raises(gradtape.ShapeError, r"^embedding_bag: offsets must be 1-D, got shape \(1, 5\)", offsets=t(OFFSETS[None]))
    _raises(ValueError, r"^embedding_bag: offsets\[0\] must be 0 .* got 1", offsets=t([1, 3]))
    _raises(
        ValueError,
        re.escape("embedding_bag: offsets must not decrease, got offsets[2] = 2 after offsets[1] = 5"),
        offsets=t([0, 5, 2]),
    )
    _raises(
        ValueError,
        r"^embedding_bag: offsets\[2\] = 12 is past the end of the input \(shape \(11,\)\)",
        offsets=t([0, 3, 12]),
    )
    _raises(
        ValueError,
        r"^embedding_bag: offsets of shape \(0,\) make no bag for the 11 indices",
        offsets=t(np.zeros(0, np.int64)),
    )
    _raises(
        ValueError,
        r"include_last_offset=True needs at least 1 offset",
        offsets=t(np.zeros(0, np.int64)),
        include_last_offset=True,
    )
    _raises(
        ValueError,
        re.escape("embedding_bag: indices must lie in [0, 7) for weight (7, 3), got min 0 and max 9"),
        input=t([0, 9]),
        offsets=t([0]),
    )
    _raises(ValueError, r"^embedding_bag: indices must lie in \[0, 7\) .* got min -1", input=t([-1]), offsets=t([0]))
    _raises(
        gradtape.DTypeError,
        r"^embedding_bag: input must be integers, got dtype float32 of shape \(2,\)",
        input=t([1.0, 2.0]),
        offsets=t([0]),
    )
    _raises(gradtape.DTypeError, r"^embedding_bag: offsets must be integers", offsets=t([0.0, 2.0]))
    _raises(
        gradtape.ShapeError,
        r"^embedding_bag: input must be 1-D \(with offsets\) or 2-D \(B, L\), got shape \(1, 1, 2\)",
        input=t([[[1, 2]]]),
        offsets=None,
    )
    _raises(ValueError, r"^embedding_bag: mode has to be one of sum, mean or max, got 'min'", mode="min")
    _raises(
        ValueError,
        r"^embedding_bag: max mode does not support scaling the gradient",
        mode="max",
        scale_grad_by_freq=True,
    )
    _raises(ValueError, r"^embedding_bag: max mode does not support sparse weights", mode="max", sparse=True)
    psw = t(np.ones(X1.size))
    _raises(
        NotImplementedError,
        r"^embedding_bag: per_sample_weights .* only supported for mode='sum' \(got mode='mean'\)",
        per_sample_weights=psw,
    )
    _raises(
        gradtape.ShapeError,
        re.escape(
            "embedding_bag: per_sample_weights (shape (10,)) must have the same shape as the input (shape (11,))"
        ),
        per_sample_weights=t(np.ones(10)),
        mode="sum",
    )
    _raises(
        gradtape.DTypeError,
        r"^embedding_bag: dtypes differ: float64 \(7, 3\) and float32 \(11,\)",
        per_sample_weights=t(np.ones(11, np.float32)),
        mode="sum",
    )
    _raises(
        TypeError, r"^embedding_bag: per_sample_weights must be a Tensor", per_sample_weights=np.ones(11), mode="sum"
    )
    _raises(gradtape.ShapeError, r"^embedding_bag: weight must be 2-D .* got shape \(7,\)", weight=t(np.ones(7)))
    _raises(gradtape.DTypeError, r"^embedding_bag: weight has dtype int64", weight=t(np.ones((7, 3), np.int64)))
    _raises(TypeError, r"^embedding_bag: weight must be a Tensor, got ndarray", weight=np.ones((7, 3)))
    _raises(ValueError, r"^embedding_bag: padding_idx must be within num_embeddings \(7\), got 7", padding_idx=7)
    _raises(TypeError, r"^embedding_bag: padding_idx must be an int or None, got float", padding_idx=1.0)
    _raises(ValueError, r"^embedding_bag: max_norm must be >= 0, got -1.0", max_norm=-1.0)
    _raises(TypeError, r"^embedding_bag: norm_type must be a real number", max_norm=1.0, norm_type="fro")


def test_the_layer_names_itself_in_its_errors() -> None:
    bag = nn.EmbeddingBag(5, 2)
    with pytest.raises(ValueError, match=r"^EmbeddingBag: indices must lie in \[0, 5\)"):
        bag(gradtape.tensor([[0, 5]]))
    with pytest.raises(ValueError, match=r"^EmbeddingBag: a 1-D input \(shape \(2,\)\) needs offsets"):
        bag(gradtape.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"^EmbeddingBag: mode has to be one of sum, mean or max, got 'median'"):
        nn.EmbeddingBag(5, 2, mode="median")
    with pytest.raises(ValueError, match=r"^EmbeddingBag: max mode does not support scaling the gradient"):
        nn.EmbeddingBag(5, 2, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match=r"^EmbeddingBag: padding_idx must be within num_embeddings \(5\), got -6"):
        nn.EmbeddingBag(5, 2, padding_idx=-6)
    with pytest.raises(gradtape.ShapeError, match=r"^EmbeddingBag: _weight of shape \(5, 3\) does not match"):
        nn.EmbeddingBag(5, 2, _weight=gradtape.tensor(np.ones((5, 3))))
    with pytest.raises(gradtape.ShapeError, match=r"^EmbeddingBag.from_pretrained: embeddings must be 2-D"):
        nn.EmbeddingBag.from_pretrained(gradtape.tensor(np.ones(5)))
    with pytest.raises(TypeError, match=r"^EmbeddingBag: pass dev= or device=, not both"):
        nn.EmbeddingBag(5, 2, dev=gradtape.Cpu(), device="cpu")
