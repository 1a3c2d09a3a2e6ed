"""Every public op, loss and layer against every class of bad input (issue 15).

The ops and losses are listed from ``gradtape.ops.__all__`` and ``gradtape.losses.__all__``, the
layers from ``gradtape.nn.__all__``: a new one is covered without editing this file when its
only required argument is a tensor (it is called on a ``(2, 3)`` float32 tensor); one that
needs more gets a line in ``CALLS`` / ``LAYERS`` (the test says so).

For each (op, bad input) pair the op must either

- give the right result: for inputs that only change the layout or byte order (big-endian,
  Fortran-ordered, a strided view) the values *and gradients* equal those of the clean call;
  for the others any result is accepted as long as nothing crashes; or
- raise a gradtape error (``GradtapeError`` and subclasses, or a ``TypeError`` /
  ``ValueError`` / ``IndexError`` raised by gradtape) whose message names the op (or the
  layer, or ``Tensor`` for dtypes the constructor refuses),

and never a numba, numpy or ``AttributeError`` traceback.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, Tensor, losses, nn, ops
from gradtape.ops._util import _tensor_params

DEV = Cpu(seed=0)
Call = Callable[[Any], Any]
# log of a negative, 0/0: numpy's RuntimeWarnings for the NaN and int inputs are expected here
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _t(shape: tuple[int, ...], seed: int = 1) -> Tensor[Any, Any]:
    return DEV.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


# ----- how to call each op on a subject tensor ---------------------------------------------

ROW = _t((2, 3), 2)
SQUARE = _t((3, 3), 3)
W_CONV2 = _t((4, 3, 2, 2), 4)
W_CONV1 = _t((4, 3, 2), 5)
W_TCONV = _t((3, 4, 2, 2), 6)
TABLE = _t((5, 3), 7)


def _with(module: Any, name: str, other: Any) -> Call:
    """``module.name(subject, other)``."""
    fn = getattr(module, name)
    return lambda x: fn(x, other)


def _weights(x: Any) -> Any:
    """A tensor subject as non-negative weights (``multinomial``); anything else as it is."""
    return ops.abs(x) if isinstance(x, Tensor) and x.dtype.kind == "f" else x


def _classes(x: Any) -> Any:
    """A float subject as class indices 0 and 1 (``one_hot`` takes integers); anything else
    (the bad inputs) as it is."""
    if isinstance(x, Tensor) and x.dtype.kind == "f":
        return Tensor((np.nan_to_num(x.data) > 0).astype(np.int64), DEV)
    return x


def _pool(name: str) -> Callable[[], Any]:
    """``nn.<name>(2)``."""
    return lambda: getattr(nn, name)(2)


def _recurrence(name: str, gates: int) -> Call:
    """``ops.<name>(subject, states..., weights...)[0]`` for input ``(T, B, I) = (2, 3, 4)``,
    hidden size 5 and ``gates`` gates."""
    fn: Any = getattr(ops, name)
    shapes = [(3, 5)] * (2 if gates == 4 else 1) + [(5 * gates, 4), (5 * gates, 5), (5 * gates,), (5 * gates,)]
    rest = [_t(s, 30 + k) for k, s in enumerate(shapes)]
    return lambda x: fn(x, *rest)[0]


def _as_every_input(make: Callable[[], Any], n: int, first: bool = False) -> Callable[[], Call]:
    """A layer of ``n`` tensor inputs (attention's query/key/value, a decoder's target and
    memory) called with the subject as each; ``first``: its first output."""

    def build() -> Call:
        layer = make()
        return (lambda x: layer(*[x] * n)[0]) if first else (lambda x: layer(*[x] * n))

    return build


def _bag_weights(bag: nn.EmbeddingBag[int, int]) -> Call:
    """``bag(indices, None, subject)``: the subject as the per-sample weights of ``(2, 3)`` indices."""
    indices = np.array([[0, 4, 4], [1, 2, 0]])
    return lambda x: bag(indices, None, x)


def _first(make: Callable[[], Any]) -> Callable[[], Call]:
    """A recurrent layer (or cell) called on the subject, its first output."""

    def build() -> Call:
        layer = make()
        return lambda x: layer(x)[0]

    return build


CALLS: dict[str, tuple[tuple[int, ...], Call]] = {
    # name: (subject shape, call taking the subject)
    **{
        name: ((2, 3), _with(ops, name, ROW))
        for name in ("add", "sub", "mul", "div", "maximum", "minimum", "remainder", "fmod")
    },
    **{name: ((2, 3), _with(ops, name, ROW)) for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    "pow": ((2, 3), lambda x: ops.pow(x, 2.0)),
    "to_dtype": ((2, 3), lambda x: ops.to_dtype(x, np.float64)),
    "nans_to": ((2, 3), lambda x: ops.nans_to(x, 0.0)),
    "clamp": ((2, 3), lambda x: ops.clamp(x, -0.5, 0.5)),
    "clip": ((2, 3), lambda x: ops.clip(x, -0.5, 0.5)),
    # session 19: PyTorch's names of products, stacks and tests of values
    "clamp_min": ((2, 3), lambda x: ops.clamp_min(x, -0.5)),
    "clamp_max": ((2, 3), lambda x: ops.clamp_max(x, 0.5)),
    **{name: ((2, 3), _with(ops, name, ROW)) for name in ("logical_and", "logical_or", "logical_xor", "isclose")},
    "allclose": ((2, 3), lambda x: x.eq(x) if ops.allclose(x, ROW) else x.ne(x)),
    "equal": ((2, 3), lambda x: x.eq(x) if ops.equal(x, x) else x.ne(x)),
    "mm": ((2, 3), lambda x: ops.mm(x, SQUARE)),
    "bmm": ((2, 2, 3), lambda x: ops.bmm(x, ops.stack([SQUARE, SQUARE], axis=0))),
    "dot": ((3,), lambda x: ops.dot(x, ROW[0])),
    "hstack": ((2, 3), lambda x: ops.hstack([x, ROW])),
    "vstack": ((2, 3), lambda x: ops.vstack([x, ROW])),
    "movedim": ((2, 3), lambda x: ops.movedim(x, 0, 1)),
    "swapaxes": ((2, 3), lambda x: ops.swapaxes(x, 0, 1)),
    "unbind": ((2, 3), lambda x: ops.stack(list(ops.unbind(x, 1))[::-1], axis=0)),
    "threshold": ((2, 3), lambda x: ops.threshold(x, 0.1, 2.0)),
    "glu": ((2, 4), lambda x: ops.glu(x, 1)),
    **{name: ((2, 3, 6), _with(ops, name, 2)) for name in ("max_pool1d", "avg_pool1d")},
    **{name: ((2, 3, 6), _with(ops, name, 3)) for name in ("adaptive_avg_pool1d", "adaptive_max_pool1d")},
    "dropout": ((2, 3), lambda x: ops.dropout(x, 0.5, rng=0)),
    "where": ((2, 3), lambda x: ops.where(ROW.numpy() > 0, x, 0.0)),
    "broadcast_to": ((1, 3), lambda x: ops.broadcast_to(x, (2, 3))),
    "expand_dims": ((2, 3), lambda x: ops.expand_dims(x, 0)),
    "unsqueeze": ((2, 3), lambda x: ops.unsqueeze(x, 1)),
    "gather": ((2, 3), lambda x: ops.gather(x, [1, 0], axis=1)),
    "index_select": ((2, 3), lambda x: ops.index_select(x, [2, 0], axis=1)),
    "permute": ((2, 3), lambda x: ops.permute(x, (1, 0))),
    "transpose": ((2, 3), lambda x: ops.transpose(x, 0, 1)),
    "reshape": ((2, 3), lambda x: ops.reshape(x, (3, 2))),
    "roll": ((2, 3), lambda x: ops.roll(x, 1, axis=1)),
    "concat": ((2, 3), lambda x: ops.concat([x, ROW], axis=0)),
    "stack": ((2, 3), lambda x: ops.stack([x, ROW], axis=0)),
    "cat": ((2, 3), lambda x: ops.cat((x, ROW), 0)),  # issue 27, PyTorch's spelling
    "matmul": ((2, 3), lambda x: ops.matmul(x, SQUARE)),
    "linear": ((2, 3), lambda x: ops.linear(x, SQUARE, ROW[0])),
    "embedding": ((5, 3), lambda x: ops.embedding([4, 0], x)),
    "prelu": ((2, 3), lambda x: ops.prelu(x, _t((3,), 8))),
    "conv2d": ((2, 3, 5, 5), lambda x: ops.conv2d(x, W_CONV2, padding=1)),
    "conv1d": ((2, 3, 5), lambda x: ops.conv1d(x, W_CONV1)),
    "conv_transpose2d": ((2, 3, 4, 4), lambda x: ops.conv_transpose2d(x, W_TCONV, stride=2)),
    "conv_transpose1d": ((2, 3, 4), lambda x: ops.conv_transpose1d(x, W_TCONV[:, :, 0], stride=2)),
    "conv3d": ((2, 3, 4, 4, 4), lambda x: ops.conv3d(x, _t((4, 3, 3, 3, 3), 5), padding=1)),
    "conv_transpose3d": ((2, 3, 3, 3, 3), lambda x: ops.conv_transpose3d(x, _t((3, 4, 2, 2, 2), 6), stride=2)),
    "selective_scan": (
        (2, 3, 4),  # then dt, A, B, C, D, z
        lambda x: ops.selective_scan(
            x, *(_t(s, 12 + k) for k, s in enumerate([(2, 3, 4), (4, 2), (2, 3, 2), (2, 3, 2), (4,), (2, 3, 4)]))
        ),
    ),
    "scaled_dot_product_attention": (
        (2, 3, 4),  # q (B, L, E); k (B, 5, 4), v (B, 5, 3), causal
        lambda x: ops.scaled_dot_product_attention(x, _t((2, 5, 4), 20), _t((2, 5, 3), 21), is_causal=True),
    ),
    **{name: ((2, 3, 4, 4), _with(ops, name, 2)) for name in ("max_pool2d", "min_pool2d", "avg_pool2d")},
    "upscale2d": ((2, 3, 2, 2), lambda x: ops.upscale2d(x, scale_factor=2)),
    "cross_entropy": ((2, 3), lambda x: losses.cross_entropy(x, [2, 0])),
    "ctc_loss": ((4, 2, 3), lambda x: losses.ctc_loss(x, [[1], [2]], [4, 4], [1, 1])),
    **{
        name: ((2, 3), _with(losses, name, ROW))
        for name in ("mse_loss", "l1_loss", "mae_loss", "huber_loss", "smooth_l1_loss", "kl_div")
    },
    "binary_cross_entropy_with_logits": ((2, 3), lambda x: losses.binary_cross_entropy_with_logits(x, ROW.numpy() > 0)),
    # issue 27: ops by index and order (tuple results joined into one tensor)
    "topk": ((2, 3), lambda x: ops.topk(x, 2, dim=1).values),
    "sort": ((2, 3), lambda x: ops.sort(x, dim=1, descending=True).values),
    "split": ((2, 3), lambda x: ops.concat(list(ops.split(x, [2, 1], dim=1))[::-1], axis=1)),
    "chunk": ((2, 3), lambda x: ops.concat(list(ops.chunk(x, 2, dim=1))[::-1], axis=1)),
    "flip": ((2, 3), lambda x: ops.flip(x, 1)),
    "cumsum": ((2, 3), lambda x: ops.cumsum(x, 1)),
    "cumprod": ((2, 3), lambda x: ops.cumprod(x, 1)),
    "take_along_axis": ((2, 3), lambda x: ops.take_along_axis(x, [[2, 0], [1, 1]], 1)),
    "scatter_add": ((2, 3), lambda x: ops.scatter_add(x, 1, [[2, 2], [0, 1]], ROW)),
    "index_add": ((2, 3), lambda x: ops.index_add(x, 1, [2, 0, 2], ROW)),
    "masked_fill": ((2, 3), lambda x: ops.masked_fill(x, ROW.numpy() > 0, -1.0)),
    "one_hot": ((2, 3), lambda x: ops.one_hot(_classes(x), 3)),
    "repeat": ((2, 3), lambda x: ops.repeat(x, 2, 1)),
    "tile": ((2, 3), lambda x: ops.tile(x, (2,))),
    "einsum": ((2, 3), lambda x: ops.einsum("ij,kj->ik", x, ROW)),
    # a tensor subject's absolute values as weights; a fresh seeded generator per call
    "multinomial": ((2, 3), lambda x: ops.multinomial(_weights(x), 2, generator=np.random.default_rng(0))),
    # issue 27's losses
    "nll_loss": ((2, 3), lambda x: losses.nll_loss(x, [2, 0])),
    "binary_cross_entropy": ((2, 3), lambda x: losses.binary_cross_entropy(x, ROW.numpy() > 0)),
    "cosine_embedding_loss": ((2, 3), lambda x: losses.cosine_embedding_loss(x, ROW, [1, -1])),
    "margin_ranking_loss": ((2, 3), lambda x: losses.margin_ranking_loss(x, ROW, np.sign(ROW.numpy()))),
    "hinge_embedding_loss": ((2, 3), lambda x: losses.hinge_embedding_loss(x, np.sign(ROW.numpy()))),
    "triplet_margin_loss": ((2, 3), lambda x: losses.triplet_margin_loss(x, ROW, SQUARE[:2])),
    "gaussian_nll_loss": ((2, 3), lambda x: losses.gaussian_nll_loss(x, ROW, np.ones((2, 3), np.float32))),
    "poisson_nll_loss": ((2, 3), lambda x: losses.poisson_nll_loss(x, np.abs(ROW.numpy()))),
    "soft_margin_loss": ((2, 3), lambda x: losses.soft_margin_loss(x, np.sign(ROW.numpy()))),
    "multilabel_soft_margin_loss": ((2, 3), lambda x: losses.multilabel_soft_margin_loss(x, ROW.numpy() > 0)),
    "multi_margin_loss": ((2, 3), lambda x: losses.multi_margin_loss(x, [2, 0], p=2, weight=[0.5, 1.0, 2.0])),
    # the recurrences: input (T, B, I) = (2, 3, 4), hidden 5; their first output
    "lstm_layer": ((2, 3, 4), _recurrence("lstm_layer", 4)),
    "gru_layer": ((2, 3, 4), _recurrence("gru_layer", 3)),
    "rnn_layer": ((2, 3, 4), _recurrence("rnn_layer", 1)),
    # issue 27: spatial ops (ops/spatial.py)
    "pad": ((2, 3, 4, 4), lambda x: ops.pad(x, (1, 2, 2, 1), mode="reflect")),
    "interpolate": ((2, 3, 4, 4), lambda x: ops.interpolate(x, scale_factor=1.5, mode="bilinear")),
    "adaptive_avg_pool2d": ((2, 3, 5, 5), lambda x: ops.adaptive_avg_pool2d(x, (2, 3))),
    "adaptive_max_pool2d": ((2, 3, 5, 5), lambda x: ops.adaptive_max_pool2d(x, (3, 2))),
    **{name: ((2, 3, 4, 4, 4), _with(ops, name, 2)) for name in ("max_pool3d", "avg_pool3d")},
    "adaptive_avg_pool3d": ((2, 3, 5, 4, 5), lambda x: ops.adaptive_avg_pool3d(x, (2, 3, None))),
    "adaptive_max_pool3d": ((2, 3, 5, 4, 5), lambda x: ops.adaptive_max_pool3d(x, (3, 2, 2))),
    "pixel_shuffle": ((2, 4, 3, 3), lambda x: ops.pixel_shuffle(x, 2)),
    "pixel_unshuffle": ((2, 1, 4, 4), lambda x: ops.pixel_unshuffle(x, 2)),
    "grid_sample": ((2, 3, 4, 4), lambda x: ops.grid_sample(x, _t((2, 3, 5, 2), 9), align_corners=False)),
    "affine_grid": ((2, 2, 3), lambda x: ops.affine_grid(x, (2, 3, 4, 5), align_corners=False)),
    # issue 27: normalisations, distances, norms
    "group_norm": ((2, 4, 3), lambda x: ops.group_norm(x, 2, _t((4,), 40), _t((4,), 41))),
    "instance_norm": ((2, 3, 4), lambda x: ops.instance_norm(x, weight=ROW[0])),
    "cdist": ((2, 3), lambda x: ops.cdist(x, SQUARE)),
    "cosine_similarity": ((2, 3), lambda x: ops.cosine_similarity(x, ROW[0], dim=1)),
    "pairwise_distance": ((2, 3), lambda x: ops.pairwise_distance(x, ROW)),
    "atan2": ((2, 3), lambda x: ops.atan2(x, ROW)),
    # not differentiable (PyTorch's floor_divide has no derivative; backward raises TapeError):
    # its values on every layout
    "floor_divide": ((2, 3), lambda x: ops.floor_divide(x.detach() if isinstance(x, Tensor) else x, ROW)),
    "lerp": ((2, 3), lambda x: ops.lerp(x, ROW, 0.25)),
    "outer": ((3,), lambda x: ops.outer(x, ROW[0])),
}
DOMAINS: dict[str, Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]] = {
    # ops whose clean input has a domain (probabilities): the layout test's clean input is in it
    name: lambda a: 1 / (1 + np.exp(-a))
    for name in ("binary_cross_entropy", "BCELoss")
}


def _loss_layer(layer: Any, *rest: Any) -> Call:
    """``layer(subject, *rest)``: a loss layer's forward takes its target(s) after the input."""
    return lambda x: layer(x, *rest)


def _pair_loss_layer(name: str) -> Callable[[], Call]:
    """``nn.<name>()`` called on the subject and ``ROW``."""
    return lambda: _loss_layer(getattr(nn, name)(), ROW)


LAYERS: dict[str, tuple[tuple[int, ...], Callable[[], Any]]] = {
    # name: (input shape, constructor)
    "Linear": ((2, 3), lambda: nn.Linear(3, 4, dev=DEV)),
    "Conv1d": ((2, 3, 5), lambda: nn.Conv1d(3, 4, 2, dev=DEV)),
    "Conv2d": ((2, 3, 5, 5), lambda: nn.Conv2d(3, 4, 3, padding=1, dev=DEV)),
    "ConvTranspose2d": ((2, 3, 4, 4), lambda: nn.ConvTranspose2d(3, 4, 2, stride=2, dev=DEV)),
    "Conv3d": ((2, 3, 4, 4, 4), lambda: nn.Conv3d(3, 4, 3, padding=1, dev=DEV)),
    "ConvTranspose3d": ((2, 3, 3, 3, 3), lambda: nn.ConvTranspose3d(3, 4, 2, stride=2, dev=DEV)),
    "ConvTranspose1d": ((2, 3, 4), lambda: nn.ConvTranspose1d(3, 4, 2, stride=2, dev=DEV)),
    "BatchNorm1d": ((4, 3), lambda: nn.BatchNorm1d(3, dev=DEV)),
    "BatchNorm2d": ((2, 3, 4, 4), lambda: nn.BatchNorm2d(3, dev=DEV)),
    "LayerNorm": ((2, 3), lambda: nn.LayerNorm(3, dev=DEV)),
    "RMSNorm": ((2, 3), lambda: nn.RMSNorm(3, dev=DEV)),
    "MultiHeadAttention": ((2, 3, 4), lambda: nn.MultiHeadAttention(4, 2, dev=DEV)),
    "TransformerEncoderLayer": ((2, 3, 4), lambda: nn.TransformerEncoderLayer(4, 2, 8, dev=DEV).eval()),
    "Mamba": ((2, 3, 4), lambda: nn.Mamba(4, d_state=3, dev=DEV)),
    "MambaBlock": ((2, 3, 4), lambda: nn.MambaBlock(4, d_state=3, dev=DEV)),
    "Dropout": ((2, 3), lambda: nn.Dropout(0.5).eval()),  # eval: the layout test compares two calls
    "Dropout2d": ((2, 3, 4, 4), lambda: nn.Dropout2d(0.5).eval()),
    # the subject as the per-sample weights of two bags of three indices
    "EmbeddingBag": ((2, 3), lambda: _bag_weights(nn.EmbeddingBag(5, 4, mode="sum", dev=DEV))),
    "Softmax": ((2, 3), lambda: nn.Softmax(dim=1)),
    "Softmin": ((2, 3), lambda: nn.Softmin(dim=1)),
    "Threshold": ((2, 3), lambda: nn.Threshold(0.1, 2.0)),
    "GLU": ((2, 4), lambda: nn.GLU()),
    "PReLU": ((2, 3), lambda: nn.PReLU(3, dev=DEV)),
    "Softmax2d": ((2, 3, 2, 2), lambda: nn.Softmax2d()),
    "MaxPool1d": ((2, 3, 6), lambda: nn.MaxPool1d(2)),
    "AvgPool1d": ((2, 3, 6), lambda: nn.AvgPool1d(2)),
    "AdaptiveAvgPool1d": ((2, 3, 6), lambda: nn.AdaptiveAvgPool1d(3)),
    "AdaptiveMaxPool1d": ((2, 3, 6), lambda: nn.AdaptiveMaxPool1d(3)),
    "LogSoftmax": ((2, 3), lambda: nn.LogSoftmax(dim=-1)),
    "Unflatten": ((2, 6), lambda: nn.Unflatten(1, (2, 3))),
    **{name: ((2, 3, 4, 4), _pool(name)) for name in ("MaxPool2d", "AvgPool2d", "MinPool2d")},
    "Residual": ((2, 3), lambda: nn.Residual(nn.Tanh())),
    "Sequential": ((2, 3), lambda: nn.Sequential(nn.Linear(3, 4, dev=DEV), nn.ReLU())),
    "Rearrange": ((2, 3), lambda: nn.Rearrange("b c -> c b")),
    "Reduce": ((2, 3), lambda: nn.Reduce("b c -> b", "mean")),
    # the loss layers (issue 27): the subject is the input, the targets fixed
    **{
        name: ((2, 3), _pair_loss_layer(name))
        for name in ("L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "BCEWithLogitsLoss")
    },
    "BCELoss": ((2, 3), lambda: _loss_layer(nn.BCELoss(), ROW.numpy() > 0)),
    "NLLLoss": ((2, 3), lambda: _loss_layer(nn.NLLLoss(), [2, 0])),
    "CrossEntropyLoss": ((2, 3), lambda: _loss_layer(nn.CrossEntropyLoss(label_smoothing=0.1), [2, 0])),
    "CTCLoss": ((4, 2, 3), lambda: _loss_layer(nn.CTCLoss(), [[1], [2]], [4, 4], [1, 1])),
    "CosineEmbeddingLoss": ((2, 3), lambda: _loss_layer(nn.CosineEmbeddingLoss(), ROW, [1, -1])),
    "MarginRankingLoss": ((2, 3), lambda: _loss_layer(nn.MarginRankingLoss(), ROW, np.sign(ROW.numpy()))),
    "HingeEmbeddingLoss": ((2, 3), lambda: _loss_layer(nn.HingeEmbeddingLoss(), np.sign(ROW.numpy()))),
    "TripletMarginLoss": ((2, 3), lambda: _loss_layer(nn.TripletMarginLoss(), ROW, SQUARE[:2])),
    "GaussianNLLLoss": ((2, 3), lambda: _loss_layer(nn.GaussianNLLLoss(), ROW, np.ones((2, 3), np.float32))),
    "PoissonNLLLoss": ((2, 3), lambda: _loss_layer(nn.PoissonNLLLoss(), np.abs(ROW.numpy()))),
    "SoftMarginLoss": ((2, 3), lambda: _loss_layer(nn.SoftMarginLoss(), np.sign(ROW.numpy()))),
    "MultiLabelSoftMarginLoss": ((2, 3), lambda: _loss_layer(nn.MultiLabelSoftMarginLoss(), ROW.numpy() > 0)),
    "MultiMarginLoss": ((2, 3), lambda: _loss_layer(nn.MultiMarginLoss(), [2, 0])),
    "MultiLabelMarginLoss": (
        (2, 3),
        lambda: _loss_layer(nn.MultiLabelMarginLoss(), DEV.tensor(np.array([[2, -1, 0], [0, 1, -1]]))),
    ),
    "LSTM": ((2, 3, 4), _first(lambda: nn.LSTM(4, 5, dev=DEV))),
    "GRU": ((2, 3, 4), _first(lambda: nn.GRU(4, 5, dev=DEV))),
    "RNN": ((2, 3, 4), _first(lambda: nn.RNN(4, 5, dev=DEV))),
    "LSTMCell": ((3, 4), _first(lambda: nn.LSTMCell(4, 5, dev=DEV))),
    "GRUCell": ((3, 4), lambda: nn.GRUCell(4, 5, dev=DEV)),
    "RNNCell": ((3, 4), lambda: nn.RNNCell(4, 5, dev=DEV)),
    # issue 27: spatial layers (nn/spatial.py)
    "ZeroPad2d": ((2, 3, 4, 4), lambda: nn.ZeroPad2d((1, 0, 2, 1))),
    "ConstantPad2d": ((2, 3, 4, 4), lambda: nn.ConstantPad2d(1, 0.5)),
    "ReflectionPad2d": ((2, 3, 4, 4), lambda: nn.ReflectionPad2d(2)),
    "ReplicationPad2d": ((2, 3, 4, 4), lambda: nn.ReplicationPad2d((2, 1, 0, 3))),
    "Upsample": ((2, 3, 4, 4), lambda: nn.Upsample(scale_factor=2, mode="bilinear")),
    "UpsamplingNearest2d": ((2, 3, 4, 4), lambda: nn.UpsamplingNearest2d(size=(5, 7))),
    "UpsamplingBilinear2d": ((2, 3, 4, 4), lambda: nn.UpsamplingBilinear2d(scale_factor=1.5)),
    "AdaptiveAvgPool2d": ((2, 3, 5, 5), lambda: nn.AdaptiveAvgPool2d(2)),
    "AdaptiveMaxPool2d": ((2, 3, 5, 5), lambda: nn.AdaptiveMaxPool2d((3, None))),
    "PixelShuffle": ((2, 4, 3, 3), lambda: nn.PixelShuffle(2)),
    "PixelUnshuffle": ((2, 1, 4, 4), lambda: nn.PixelUnshuffle(2)),
    # session 24: PyTorch's layers that were missing
    "Bilinear": ((2, 3), lambda: _loss_layer(nn.Bilinear(3, 3, 4, dev=DEV), ROW)),
    "LocalResponseNorm": ((2, 3, 4), lambda: nn.LocalResponseNorm(2)),
    "Unfold": ((2, 3, 4, 4), lambda: nn.Unfold(2)),
    "Fold": ((2, 12, 9), lambda: nn.Fold(4, 2)),
    "ChannelShuffle": ((2, 4, 3), lambda: nn.ChannelShuffle(2)),
    "LPPool1d": ((2, 3, 4), lambda: nn.LPPool1d(2, 2)),
    "LPPool2d": ((2, 3, 4, 4), lambda: nn.LPPool2d(2, 2)),
    "RReLU": ((2, 3), lambda: nn.RReLU().eval()),  # eval: the layout test compares two calls
    "AlphaDropout": ((2, 3), lambda: nn.AlphaDropout(0.5).eval()),
    "FeatureAlphaDropout": ((2, 3, 4), lambda: nn.FeatureAlphaDropout(0.5).eval()),
    "Dropout1d": ((2, 3, 4), lambda: nn.Dropout1d(0.5).eval()),
    "Dropout3d": ((2, 3, 2, 2, 2), lambda: nn.Dropout3d(0.5).eval()),
    "ZeroPad1d": ((2, 3, 4), lambda: nn.ZeroPad1d((1, 2))),
    "ConstantPad1d": ((2, 3, 4), lambda: nn.ConstantPad1d(1, 0.5)),
    "ReflectionPad1d": ((2, 3, 4), lambda: nn.ReflectionPad1d(2)),
    "ReplicationPad1d": ((2, 3, 4), lambda: nn.ReplicationPad1d((2, 1))),
    "CircularPad1d": ((2, 3, 4), lambda: nn.CircularPad1d(1)),
    "CircularPad2d": ((2, 3, 4, 4), lambda: nn.CircularPad2d((1, 0, 2, 1))),
    "ZeroPad3d": ((2, 2, 3, 3, 3), lambda: nn.ZeroPad3d(1)),
    "ConstantPad3d": ((2, 2, 3, 3, 3), lambda: nn.ConstantPad3d((1, 0, 0, 1, 1, 0), 0.5)),
    "ReflectionPad3d": ((2, 2, 3, 3, 3), lambda: nn.ReflectionPad3d(1)),
    "ReplicationPad3d": ((2, 2, 3, 3, 3), lambda: nn.ReplicationPad3d(1)),
    "CircularPad3d": ((2, 2, 3, 3, 3), lambda: nn.CircularPad3d(1)),
    # issue 27 (transformer layers)
    "MultiheadAttention": ((2, 3, 4), _as_every_input(lambda: nn.MultiheadAttention(4, 2, dev=DEV), 3, first=True)),
    "TransformerEncoder": (
        (2, 3, 4),
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, dev=DEV), 2).eval(),
    ),
    "TransformerDecoderLayer": (
        (2, 3, 4),
        _as_every_input(lambda: nn.TransformerDecoderLayer(4, 2, 8, dev=DEV).eval(), 2),
    ),
    "TransformerDecoder": (
        (2, 3, 4),
        _as_every_input(lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, dev=DEV), 2).eval(), 2),
    ),
    "Transformer": ((2, 3, 4), _as_every_input(lambda: nn.Transformer(4, 2, 1, 1, 8, dev=DEV).eval(), 2)),
    # issue 27: normalisations
    "GroupNorm": ((2, 4, 3), lambda: nn.GroupNorm(2, 4, dev=DEV)),
    "InstanceNorm1d": ((2, 3, 4), lambda: nn.InstanceNorm1d(3, affine=True, dev=DEV)),
    "InstanceNorm2d": ((2, 3, 4, 4), lambda: nn.InstanceNorm2d(3, dev=DEV)),
    "BatchNorm3d": ((2, 3, 3, 2, 2), lambda: nn.BatchNorm3d(3, dev=DEV)),
    "InstanceNorm3d": ((2, 3, 3, 2, 2), lambda: nn.InstanceNorm3d(3, affine=True, dev=DEV)),
    "MaxPool3d": ((2, 3, 4, 4, 4), lambda: nn.MaxPool3d(2)),
    "AvgPool3d": ((2, 3, 4, 4, 4), lambda: nn.AvgPool3d((2, 2, 1), padding=(1, 0, 0))),
    "AdaptiveAvgPool3d": ((2, 3, 5, 4, 5), lambda: nn.AdaptiveAvgPool3d(2)),
    "AdaptiveMaxPool3d": ((2, 3, 5, 4, 5), lambda: nn.AdaptiveMaxPool3d((3, None, 2))),
    "CosineSimilarity": ((2, 3), lambda: _loss_layer(nn.CosineSimilarity(), ROW)),
    "PairwiseDistance": ((2, 3), lambda: _loss_layer(nn.PairwiseDistance(), ROW)),
}
# Embedding takes indices (CALLS["embedding"]); ModuleList/ModuleDict hold layers and have no
# forward of their own; Parameter marks a tensor (tests/test_seed_pytorch.py); utils and init are modules
NOT_LAYERS = {
    *("Module", "load", "save", "state_dict", "Embedding", "ModuleDict", "ModuleList", "Parameter", "utils"),
    *("ParameterList", "ParameterDict"),  # containers of parameters, no forward
    "init",  # a module of initialisers (tests/test_nn_torch_port.py)
}


def _exported() -> list[tuple[str, Call, tuple[int, ...]]]:
    """Every public op, loss and layer with the call that runs it on a subject tensor."""
    out: list[tuple[str, Call, tuple[int, ...]]] = []
    for module in (ops, losses):
        for name in module.__all__:
            if name in CALLS:
                shape, call = CALLS[name]
            else:
                fn = inspect.unwrap(getattr(module, name))
                params = inspect.signature(fn).parameters.values()
                required = [p.name for p in params if p.default is inspect.Parameter.empty]
                tensors = {n for _, n, _ in _tensor_params(fn)}
                assert len(required) == 1 and required[0] in tensors, (
                    f"{name} needs arguments besides one tensor: add it to CALLS in {__file__}"
                )
                shape, call = (2, 3), getattr(module, name)
            out.append((name, call, shape))
    for name in nn.__all__:
        cls = getattr(nn, name)
        if name in NOT_LAYERS or not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            continue
        if name in LAYERS:
            shape, make = LAYERS[name]
            layer = make()
        else:
            shape, layer = (2, 3), cls()  # activations, Dropout, Flatten
        out.append((name, layer, shape))
    return out


OPS = _exported()


# ----- the bad inputs ----------------------------------------------------------------------


def _clean(shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    return np.random.default_rng(11).standard_normal(shape).astype(np.float32)


def _tensor(a: np.ndarray[Any, Any]) -> Tensor[Any, Any]:
    return Tensor(a, DEV)


BAD: dict[str, Callable[[tuple[int, ...]], Any]] = {
    "list": lambda s: _clean(s).tolist(),
    "raw array": lambda s: _clean(s),
    "int64": lambda s: _tensor(np.round(_clean(s) * 3).astype(np.int64)),
    "bool": lambda s: _tensor(_clean(s) > 0),
    "float16": lambda s: _tensor(_clean(s).astype(np.float16)),
    "complex64": lambda s: _tensor(_clean(s).astype(np.complex64)),
    "NaN": lambda s: _tensor(np.where(np.arange(np.prod(s)).reshape(s) == 1, np.float32(np.nan), _clean(s))),
    "empty": lambda s: _tensor(np.zeros((0, *s[1:]), np.float32)),
    "0-d": lambda s: _tensor(np.array(0.5, np.float32)),
    "wrong rank": lambda s: _tensor(_clean((2, *s))),
    "rank 1": lambda s: _tensor(_clean((s[-1],))),
}
SAME: dict[str, Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]] = {
    # inputs that only change the memory layout: values and gradients must equal the clean call's
    "big-endian": lambda a: a.astype(">f4"),
    "Fortran order": lambda a: np.asfortranarray(a),
    "strided view": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],
}


def _named_error(e: BaseException, name: str) -> bool:
    """A gradtape error (or a builtin one gradtape raised) naming the op, the layer, or the
    ``Tensor`` constructor."""
    module = type(e).__module__
    if module.startswith(("numba", "numpy", "llvmlite")) or isinstance(e, AttributeError):
        return False
    if not (module.startswith("gradtape") or type(e) in (TypeError, ValueError, IndexError)):
        return False
    head = str(e).split(":", 1)[0]
    return head in {name, "Tensor", *ALIASES.get(name, ())} or (name in LAYER_NAMES and head in GRADTAPE_NAMES)


ALIASES = {"mae_loss": ("l1_loss",), "unsqueeze": ("expand_dims",)}
"""Exports that are another op under a second name (its errors carry the first name)."""
LAYER_NAMES = {n for n in nn.__all__ if isinstance(getattr(nn, n), type)}
GRADTAPE_NAMES = set(ops.__all__) | set(losses.__all__) | LAYER_NAMES
GRADTAPE_NAMES |= {"batch_norm", "getitem", "multilabel_margin_loss"}  # F-only functions layers call
"""A layer's error may come from the op or layer it calls (``max_pool2d: expects x of shape
(N, C, H, W)`` from ``MaxPool2d``), which names what was wrong just as well."""


PAIRS = [(name, bad) for name, _, _ in OPS for bad in BAD]


@pytest.mark.parametrize(("name", "bad"), PAIRS, ids=[f"{n}-{b}" for n, b in PAIRS])
def test_bad_input_gives_a_result_or_a_named_error(name: str, bad: str) -> None:
    call, shape = next((c, s) for n, c, s in OPS if n == name)
    try:
        x = BAD[bad](shape)
    except Exception as e:  # the constructor refused the dtype: that is where it must say so
        assert _named_error(e, "Tensor"), f"Tensor({bad}): {type(e).__module__}.{type(e).__name__}: {e}"
        return
    try:
        out = call(x)
    except Exception as e:
        assert _named_error(e, name), f"{name}({bad}): {type(e).__module__}.{type(e).__name__}: {e}"
        return
    assert out is not None


SAME_PAIRS = [(name, how) for name, _, _ in OPS for how in SAME]


@pytest.mark.parametrize(("name", "how"), SAME_PAIRS, ids=[f"{n}-{h}" for n, h in SAME_PAIRS])
def test_layout_and_byte_order_do_not_change_values_or_gradients(name: str, how: str) -> None:
    call, shape = next((c, s) for n, c, s in OPS if n == name)
    clean = DOMAINS.get(name, np.asarray)(_clean(shape))

    def run(a: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]:
        x = _tensor(a)
        store = Gradients.leaky()
        out = call(x.trace(store))
        values = np.asarray(out.numpy(), dtype=np.float64)
        if not out.requires_grad or out.dtype.kind != "f":
            return values, None
        weights = np.linspace(0.5, 1.5, out.size).astype(out.dtype).reshape(out.shape)
        g = (out * _tensor(weights)).sum().backward()
        return values, np.asarray(g.get(x).numpy(), dtype=np.float64)

    want, want_grad = run(clean)
    got, got_grad = run(SAME[how](clean))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{name} values with {how} input")
    if want_grad is not None:
        assert got_grad is not None
        # float32 sums in another order (a Fortran-ordered input): a few ulps apart
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-5, err_msg=f"{name} gradient with {how}")


AXIS_OPS = [
    name
    for name, call, _ in OPS
    if name in ops.__all__ and "axis" in inspect.signature(inspect.unwrap(getattr(ops, name))).parameters
]


@pytest.mark.parametrize("name", AXIS_OPS)
@pytest.mark.parametrize("axis", [1.5, "0", True, (0, 1.0)])
def test_axis_of_the_wrong_type_is_a_type_error_naming_the_op(name: str, axis: object) -> None:
    fn = getattr(ops, name)
    shape, _ = CALLS.get(name, ((2, 3), fn))
    with pytest.raises(TypeError) as info:
        if name in CALLS:  # ops whose call needs more: pass the bad axis by keyword on top
            fn(*_args_for(name, _tensor(_clean(shape))), axis=axis)
        else:
            fn(_tensor(_clean(shape)), axis=axis)
    assert _named_error(info.value, name), f"{name}(axis={axis!r}): {type(info.value).__name__}: {info.value}"


def _args_for(name: str, x: Tensor[Any, Any]) -> tuple[Any, ...]:
    return {
        "gather": (x, [1, 0]),
        "index_select": (x, [1, 0]),
        "roll": (x, 1),
        "expand_dims": (x,),
        "unsqueeze": (x,),
        "concat": ([x, x],),
        "stack": ([x, x],),
        "cat": ([x, x],),
        "topk": (x, 2),
        "take_along_axis": (x, [[0]]),
        "split": (x, 1),
        "chunk": (x, 2),
    }.get(name, (x,))


def test_the_registry_covers_every_export_and_counts_its_pairs() -> None:
    """Every exported op, loss and layer is in the registry; the count goes in the issue's note."""
    names = {n for n, _, _ in OPS}
    assert set(ops.__all__) | set(losses.__all__) <= names
    assert {n for n in nn.__all__ if n not in NOT_LAYERS} <= names
    assert len(PAIRS) + len(SAME_PAIRS) + len(AXIS_OPS) * 4 >= 1000
