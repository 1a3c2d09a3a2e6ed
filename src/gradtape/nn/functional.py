"""PyTorch's ``torch.nn.functional`` on gradtape: ``import gradtape.nn.functional as F`` where a
PyTorch program has ``import torch.nn.functional as F``.

Each name is gradtape's op or loss of that name (:mod:`gradtape.ops`, :mod:`gradtape.losses`),
whose arguments follow PyTorch's here (positional order, ``dim=``, the defaults), checked
against ``torch.nn.functional`` by tests/test_torch_namespace.py; :func:`dropout` and
:func:`rms_norm` are PyTorch's spelling of ops whose ``gradtape.ops`` arguments differ
(:mod:`gradtape._torch_ops`); :func:`embedding_bag` is :mod:`gradtape.ops.nn`'s op of that name,
PyTorch's signature and all (``nn.EmbeddingBag``'s forward), exported here only. Shapes, dtypes,
gradients and errors: see each op's docstring.

The functions defined here (PyTorch's that have no op of their own: :func:`bilinear`,
:func:`local_response_norm`, :func:`unfold` / :func:`fold`, :func:`channel_shuffle`,
:func:`gumbel_softmax`, :func:`rrelu`, the feature and alpha dropouts, :func:`lp_pool1d` /
:func:`lp_pool2d`, :func:`batch_norm`, the deprecated ``upsample*``) are composed of gradtape ops,
so their gradients, gradients of gradients and :func:`gradtape.capture` replays are those ops'.
Random ones draw from the input device's generator (``device.rand``, which
:func:`gradtape.manual_seed` seeds and a capture's replay draws again), never from PyTorch's.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
import warnings
from typing import Any, TypeVar, overload

import numpy as np

from gradtape._torch_ops import dropout, rms_norm
from gradtape._torch_stats import multilabel_margin_loss, pdist
from gradtape.errors import DTypeError, ShapeError
from gradtape.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from gradtape.ops import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    affine_grid,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    celu,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cosine_similarity,
    elu,
    embedding,
    gelu,
    glu,
    grid_sample,
    group_norm,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    instance_norm,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    logsigmoid,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    mish,
    normalize,
    one_hot,
    pad,
    pairwise_distance,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    relu,
    relu6,
    scaled_dot_product_attention,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
)
from gradtape.ops import index_add as _index_add
from gradtape.ops import index_select as _index_select
from gradtape.ops import interpolate as _interpolate
from gradtape.ops import sign as _sign
from gradtape.ops import where as _where
from gradtape.ops._util import is_int as _is_int
from gradtape.ops._util import spatial_size
from gradtape.ops._util import tensor_arg as _tensor
from gradtape.ops.nn import embedding_bag  # PyTorch's signature already: F-only, not in gradtape.ops
from gradtape.shapes import AnyShape, Rank3, Rank4
from gradtape.tape import Tape, recorded_call
from gradtape.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "affine_grid",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "ctc_loss",
    "dropout",
    "elu",
    "embedding",
    "embedding_bag",
    "gaussian_nll_loss",
    "gelu",
    "glu",
    "grid_sample",
    "group_norm",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hinge_embedding_loss",
    "huber_loss",
    "instance_norm",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "mish",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "prelu",
    "relu",
    "relu6",
    "rms_norm",
    "scaled_dot_product_attention",
    "selu",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "triplet_margin_loss",
]
N = TypeVar("N")
C = TypeVar("C")
H2 = TypeVar("H2")
W2 = TypeVar("W2")
T = TypeVar("T", bound=Tape)

__all__ += [
    "alpha_dropout",
    "batch_norm",
    "bilinear",
    "channel_shuffle",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
    "fold",
    "gumbel_softmax",
    "local_response_norm",
    "lp_pool1d",
    "lp_pool2d",
    "rrelu",
    "unfold",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


# ----- argument checks ------------------------------------------------------------------------


def _float(op: str, x: object, name: str = "input") -> Tensor[Any, Any]:
    """``x`` if it is a float32/float64 tensor.

    Raises:
        TypeError: it is not a tensor. DTypeError: its dtype is not a float one.
    """
    t = _tensor(op, x, name)
    if t.dtype.kind != "f":
        raise DTypeError(f"{op}: {name} must be float32 or float64, got dtype {t.dtype} (shape {tuple(t.shape)})")
    return t


def _same_dtype(op: str, first: Tensor[Any, Any], other: Tensor[Any, Any], names: tuple[str, str]) -> None:
    if other.dtype != first.dtype:
        raise DTypeError(
            f"{op}: {names[1]} has dtype {other.dtype} (shape {tuple(other.shape)}), {names[0]} {first.dtype} "
            f"(shape {tuple(first.shape)}); convert one with .to(dtype)"
        )


def _int(op: str, name: str, v: object, minimum: int) -> int:
    """``v`` as an int ``>= minimum``.

    Raises:
        TypeError: it is not an int (a bool included). ValueError: it is below ``minimum``.
    """
    if not _is_int(v):
        raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__} {v!r}")
    n: int = operator.index(v)  # type: ignore[arg-type]
    if n < minimum:
        raise ValueError(f"{op}: {name} must be at least {minimum}, got {n}")
    return n


def _pair(op: str, name: str, v: object, minimum: int) -> tuple[int, int]:
    """An int for both spatial dims, or a tuple/list of two (PyTorch's ``_pair``), each ``>= minimum``.

    Raises:
        TypeError: neither an int nor two ints. ValueError: a value below ``minimum``.
    """
    if _is_int(v):
        n = _int(op, name, v, minimum)
        return (n, n)
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(_is_int(e) for e in v):
        return (_int(op, name, v[0], minimum), _int(op, name, v[1], minimum))
    raise TypeError(f"{op}: {name} must be an int or a tuple of two ints, got {v!r}")


def _real(op: str, name: str, v: object) -> float:
    """``v`` as a float.

    Raises:
        TypeError: it is not a real number (a bool included).
    """
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {type(v).__name__} {v!r}")
    return float(v)


def _probability(op: str, p: object) -> float:
    """``p`` as a float in ``[0, 1]``.

    Raises:
        ValueError: it is not a number in ``[0, 1]`` (PyTorch's message).
    """
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p!r}")
    return float(p)


def _no_inplace(op: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"{op}: inplace=True is not supported (ops never overwrite their input); use the result")


# ----- bilinear -------------------------------------------------------------------------------


def bilinear(
    input1: Tensor[Any, Any], input2: Tensor[Any, Any], weight: Tensor[Any, Any], bias: Tensor[Any, Any] | None = None
) -> Tensor[Any, Any]:
    """PyTorch's ``F.bilinear(input1, input2, weight, bias=None)``: the bilinear form
    ``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Shapes: ``input1 (*, I1)``, ``input2 (*, I2)`` with the same leading dims ``*`` (none for a
    single pair; no broadcasting, as PyTorch), ``weight (O, I1, I2)``, ``bias (O,)``; the output is
    ``(*, O)``, all of one float dtype. Computed as one product ``input1 @ weight`` (``(B, I1)``
    by ``(I1, O * I2)``), then multiplied by ``input2`` and summed over ``I2``: gradtape ops, so
    every input gets its gradient (``dy/dinput1 = weight @ input2``, ``dy/dinput2 =
    input1 @ weight``, ``dy/dweight = input1 outer input2``) and second derivatives.

    Raises:
        TypeError: an argument is not a tensor. DTypeError: a non-float or mixed dtypes.
        ShapeError: ``weight`` not 3-D, an input 0-D, the inputs' leading dims differ, a last dim
            that does not match ``weight``, ``bias`` not ``(O,)`` (each names the shapes).
    """
    return _bilinear("bilinear", input1, input2, weight, bias)


def _bilinear(
    op: str,
    input1: Tensor[Any, Any],
    input2: Tensor[Any, Any],
    weight: Tensor[Any, Any],
    bias: Tensor[Any, Any] | None = None,
) -> Tensor[Any, Any]:
    """:func:`bilinear`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x1, x2, w = _float(op, input1, "input1"), _float(op, input2, "input2"), _float(op, weight, "weight")
    _same_dtype(op, x1, x2, ("input1", "input2"))
    _same_dtype(op, x1, w, ("input1", "weight"))
    if w.ndim != 3:
        raise ShapeError(f"{op}: weight must be 3-D (out_features, in1_features, in2_features), got {w.shape}")
    o, i1, i2 = w.shape
    if x1.ndim == 0 or x2.ndim == 0:
        raise ShapeError(f"{op}: inputs must have at least 1 dim, got input1 {x1.shape} and input2 {x2.shape}")
    if x1.shape[:-1] != x2.shape[:-1]:
        raise ShapeError(
            f"{op}: input batch dimensions do not match: input1 of shape {x1.shape}, input2 of shape {x2.shape}"
        )
    if x1.shape[-1] != i1 or x2.shape[-1] != i2:
        raise ShapeError(
            f"{op}: inputs of shapes {x1.shape} and {x2.shape} do not end in the weight's in-features "
            f"({i1}, {i2}) (weight of shape {w.shape})"
        )
    if bias is not None:
        b = _float(op, bias, "bias")
        _same_dtype(op, x1, b, ("input1", "bias"))
        if b.shape != (o,):
            raise ShapeError(f"{op}: bias of shape {b.shape} does not match the weight's out-features {o}")
    lead = tuple(x1.shape[:-1])
    a = x1.reshape(-1, i1)
    t = (a @ w.permute(1, 0, 2).reshape(i1, o * i2)).reshape(-1, o, i2)
    y = (t * x2.reshape(-1, 1, i2)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, o)


# ----- local response normalisation ----------------------------------------------------------


def local_response_norm(
    input: Tensor[Any, Any], size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor[Any, Any]:
    """PyTorch's ``F.local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0)``: local
    response normalisation across channels (Krizhevsky, Sutskever & Hinton 2012, "ImageNet
    Classification with Deep Convolutional Neural Networks", section 3.3), as PyTorch computes it:

    ``y[:, c] = x[:, c] / (k + alpha / size * sum_{c' in window(c)} x[:, c']**2) ** beta``

    with the window of ``size`` channels ``c - size // 2 .. c + (size - 1) // 2`` (zeros beyond the
    edges; the sum is divided by ``size`` however many channels are inside). Input ``(N, C, *)``
    (at least 3-D), any float dtype; the output has its shape and dtype. Composed of gradtape ops
    (square, constant pad along the channels, sums of shifted slices, pow, div).

    Raises:
        TypeError: ``input`` is not a tensor; ``size`` not an int; ``alpha``/``beta``/``k`` not numbers.
        DTypeError: a non-float input. ValueError: an input of fewer than 3 dims (PyTorch's
            error), ``size < 1``.
    """
    return _local_response_norm("local_response_norm", input, size, alpha, beta, k)


def _local_response_norm(
    op: str, input: Tensor[Any, Any], size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor[Any, Any]:
    """:func:`local_response_norm`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    n = _int(op, "size", size, 1)
    a, b, kk = _real(op, "alpha", alpha), _real(op, "beta", beta), _real(op, "k", k)
    if x.ndim < 3:
        raise ValueError(f"{op}: expected a 3-D or higher input (N, C, *), got shape {x.shape}")
    if x.data.size == 0:
        return x
    c = x.shape[1]
    sq = pad(x * x, (0, 0) * (x.ndim - 2) + (n // 2, (n - 1) // 2))
    acc = sq[:, 0:c]
    for t in range(1, n):
        acc = acc + sq[:, t : t + c]
    div = ((acc / float(n)) * a + kk) ** b
    return x / div


# ----- unfold / fold (im2col / col2im) ----------------------------------------------------


@functools.lru_cache(maxsize=256)
def _block_index(
    wp: int, k: tuple[int, int], d: tuple[int, int], s: tuple[int, int], out: tuple[int, int]
) -> np.ndarray[Any, Any]:
    """The flat positions, in a padded ``(Hp, Wp)`` plane, of every sliding block's elements in
    PyTorch's column order: ``idx[(a * KW + b) * L + i * OW + j] = (a*dh + i*sh) * Wp + b*dw + j*sw``
    (tap ``(a, b)``, block ``(i, j)``, ``L = OH * OW``). Read-only, cached."""
    a = np.arange(k[0]).reshape(-1, 1, 1, 1) * d[0]
    b = np.arange(k[1]).reshape(1, -1, 1, 1) * d[1]
    i = np.arange(out[0]).reshape(1, 1, -1, 1) * s[0]
    j = np.arange(out[1]).reshape(1, 1, 1, -1) * s[1]
    idx = ((a + i) * wp + (b + j)).reshape(-1).astype(np.intp)
    idx.setflags(write=False)
    return idx


def _blocks(
    op: str, hw: tuple[int, int], k: tuple[int, int], d: tuple[int, int], p: tuple[int, int], s: tuple[int, int]
) -> tuple[int, int]:
    """The number of sliding blocks along each spatial dim, ``(H + 2p - d (k - 1) - 1) // s + 1``.

    Raises:
        ShapeError: one is below 1 (PyTorch's check; names the sizes).
    """
    oh, ow = ((hw[t] + 2 * p[t] - d[t] * (k[t] - 1) - 1) // s[t] + 1 for t in (0, 1))
    if oh < 1 or ow < 1:
        raise ShapeError(
            f"{op}: given spatial size {hw}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, the array of "
            f"sliding blocks would be of shape ({oh}, {ow}), but its components must be at least one"
        )
    return oh, ow


def _geometry(
    op: str, kernel_size: object, dilation: object, padding: object, stride: object
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    return (
        _pair(op, "kernel_size", kernel_size, 1),
        _pair(op, "dilation", dilation, 1),
        _pair(op, "padding", padding, 0),
        _pair(op, "stride", stride, 1),
    )


def unfold(
    input: Tensor[Any, Any],
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Tensor[Any, Any]:
    """PyTorch's ``F.unfold`` (im2col): the sliding ``KH x KW`` blocks of a zero-padded image as
    columns, ``(N, C, H, W) -> (N, C * KH * KW, L)`` (or unbatched ``(C, H, W) -> (C * KH * KW, L)``),
    ``L = OH * OW`` blocks, ``OH = (H + 2 ph - dh (KH - 1) - 1) // sh + 1`` (``OW`` alike); row
    ``c * KH * KW + a * KW + b`` holds channel ``c`` at tap ``(a, b)``, as PyTorch orders it.

    ``kernel_size``, ``dilation``, ``padding`` (zeros on both sides) and ``stride`` are an int or a
    pair. Computed as :func:`gradtape.ops.pad` and one :func:`gradtape.ops.index_select` on the
    flattened planes, so the gradient scatters each column element back onto the pixel it
    read (summed where blocks overlap): :func:`fold`, its adjoint; the gradient's gradient is
    ``unfold`` again.

    Raises:
        TypeError: ``input`` not a tensor; a size neither an int nor two ints.
        DTypeError: a non-float input. ValueError: ``kernel_size``/``dilation``/``stride`` below 1,
            ``padding`` below 0. ShapeError: an input neither 3-D nor 4-D; no block fits.
    """
    return _unfold("unfold", input, kernel_size, dilation, padding, stride)


def _unfold(
    op: str,
    input: Tensor[Any, Any],
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Tensor[Any, Any]:
    """:func:`unfold`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    k, d, p, s = _geometry(op, kernel_size, dilation, padding, stride)
    if x.ndim not in (3, 4):
        raise ShapeError(f"{op}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape {x.shape}")
    xb = x if x.ndim == 4 else x.unsqueeze(0)
    n, c, h, w = xb.shape
    oh, ow = _blocks(op, (h, w), k, d, p, s)
    if p != (0, 0):
        xb = pad(xb, (p[1], p[1], p[0], p[0]))
    hp, wp = h + 2 * p[0], w + 2 * p[1]
    idx = xb.device.tensor(_block_index(wp, k, d, s, (oh, ow)))  # a tensor: a constant of a capture's plan
    cols = _index_select(xb.reshape(n, c, hp * wp), idx, 2).reshape(n, c * k[0] * k[1], oh * ow)
    return cols if x.ndim == 4 else cols.reshape(c * k[0] * k[1], oh * ow)


def fold(
    input: Tensor[Any, Any],
    output_size: int | tuple[int, int],
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Tensor[Any, Any]:
    """PyTorch's ``F.fold`` (col2im): columns of sliding blocks summed back into an image,
    ``(N, C * KH * KW, L) -> (N, C, H, W)`` (or unbatched ``(C * KH * KW, L) -> (C, H, W)``),
    ``(H, W) = output_size``. The adjoint of :func:`unfold` with the same arguments: each column
    element is added onto the pixel ``unfold`` would have read it from (overlapping blocks sum;
    elements that fall on the padding are dropped). ``fold(unfold(x))`` is ``x`` times the number
    of blocks covering each pixel.

    Computed as one :func:`gradtape.ops.index_add` into zeros of the padded planes, then the
    padding cropped: the gradient is :func:`unfold` of the output's gradient, and the gradient's
    gradient ``fold`` again.

    Raises:
        TypeError: ``input`` not a tensor; a size neither an int nor two ints.
        DTypeError: a non-float input. ValueError: ``output_size``/``kernel_size``/``dilation``/
            ``stride`` below 1, ``padding`` below 0. ShapeError: an input neither 2-D nor 3-D; its
            dim -2 not divisible by ``KH * KW``; its last dim not the number of blocks
            ``OH * OW`` that ``output_size`` gives (PyTorch's checks; each names the sizes).
    """
    return _fold("fold", input, output_size, kernel_size, dilation, padding, stride)


def _fold(
    op: str,
    input: Tensor[Any, Any],
    output_size: int | tuple[int, int],
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Tensor[Any, Any]:
    """:func:`fold`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    size = _pair(op, "output_size", output_size, 1)
    k, d, p, s = _geometry(op, kernel_size, dilation, padding, stride)
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: expected a 2-D (C * KH * KW, L) or 3-D (N, C * KH * KW, L) input, got shape {x.shape}")
    xb = x if x.ndim == 3 else x.unsqueeze(0)
    n, ck, length = xb.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise ShapeError(
            f"{op}: expected the input's dim {x.ndim - 2} to be divisible by the product of kernel_size {k}, "
            f"got input of shape {x.shape}"
        )
    oh, ow = _blocks(op, size, k, d, p, s)
    if length != oh * ow:
        raise ShapeError(
            f"{op}: given output_size={size}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, expected the "
            f"input's last dim to be the number of sliding blocks {oh} * {ow} = {oh * ow}, got input of shape {x.shape}"
        )
    c = ck // kk
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    idx = xb.device.tensor(_block_index(wp, k, d, s, (oh, ow)))  # a tensor: a constant of a capture's plan
    zeros = xb.device.zeros((n, c, hp * wp), xb.dtype)
    out = _index_add(zeros, 2, idx, xb.reshape(n, c, kk * length)).reshape(n, c, hp, wp)
    if p != (0, 0):
        out = out[:, :, p[0] : p[0] + size[0], p[1] : p[1] + size[1]]
    return out if x.ndim == 3 else out.reshape(c, *size)


# ----- channel shuffle ----------------------------------------------------------------------


def channel_shuffle(input: Tensor[Any, Any], groups: int) -> Tensor[Any, Any]:
    """PyTorch's ``F.channel_shuffle(input, groups)`` (ShuffleNet's channel shuffle; Zhang et al.
    2018, "ShuffleNet: An Extremely Efficient Convolutional Neural Network for Mobile Devices"):
    the ``C`` channels of ``(N, C, *)`` split into ``groups`` groups of ``C / groups`` and
    interleaved, output channel ``i * groups + g`` being input channel ``g * (C / groups) + i``.
    A reshape, a transpose and a reshape: any dtype, shape kept; the gradient is the inverse
    permutation.

    Raises:
        TypeError: ``input`` not a tensor, ``groups`` not an int. ValueError: ``groups < 1``.
        ShapeError: an input of fewer than 3 dims, or ``C`` not divisible by ``groups`` (PyTorch's
            checks).
    """
    return _channel_shuffle("channel_shuffle", input, groups)


def _channel_shuffle(op: str, input: Tensor[Any, Any], groups: int) -> Tensor[Any, Any]:
    """:func:`channel_shuffle`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _tensor(op, input)
    if not _is_int(groups):
        raise TypeError(f"{op}: groups must be an int, got {type(groups).__name__} {groups!r}")
    g = int(groups)
    if g < 1:
        raise ValueError(f"{op}: number of groups to divide channels in must be positive, got {g}")
    if x.ndim < 3:
        raise ShapeError(f"{op}: expects an input of more than 2 dims (N, C, *), got shape {x.shape}")
    n, c = x.shape[0], x.shape[1]
    if c % g:
        raise ShapeError(
            f"{op}: number of channels must be divisible by groups, got {c} channels and {g} groups "
            f"(input of shape {x.shape})"
        )
    rest = tuple(x.shape[2:])
    return x.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(n, c, *rest)


# ----- Gumbel-softmax -----------------------------------------------------------------------


def gumbel_softmax(
    logits: Tensor[Any, Any], tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor[Any, Any]:
    """PyTorch's ``F.gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1)``: a sample of
    the Gumbel-softmax (concrete) distribution (Jang, Gu & Poole 2017, "Categorical
    Reparameterization with Gumbel-Softmax"; Maddison, Mnih & Teh 2017),

    ``y = softmax((logits + g) / tau, dim)``, ``g = -log(E)``, ``E ~ Exp(1)`` i.i.d.

    (the noise ``E = -log(1 - U)`` from uniform draws of ``logits``' device generator, seeded by
    :func:`gradtape.manual_seed`; not PyTorch's numbers). ``hard=True`` returns the one-hot of
    ``y``'s argmax along ``dim`` (the first maximum) in the forward pass and ``y``'s gradient in
    the backward pass (the straight-through estimator, ``y_hard - y.detach() + y``), as PyTorch.
    Output: ``logits``' shape and float dtype. ``eps`` is deprecated and unused (a warning when
    changed, as PyTorch).

    Raises:
        TypeError: ``logits`` not a tensor; ``tau`` not a number. DTypeError: a non-float input.
        ValueError: ``tau <= 0`` (PyTorch does not check; it gives inf or NaN there).
        ShapeError: ``dim`` out of range.
    """
    op = "gumbel_softmax"
    x = _float(op, logits, "logits")
    t = _real(op, "tau", tau)
    if not t > 0.0:
        raise ValueError(f"gumbel_softmax: tau must be positive, got {tau!r} (logits of shape {x.shape})")
    if eps != 1e-10:
        warnings.warn("gumbel_softmax: `eps` parameter is deprecated and has no effect.", UserWarning, stacklevel=2)
    if not _is_int(dim) or not -max(x.ndim, 1) <= int(dim) < max(x.ndim, 1):
        raise ShapeError(f"gumbel_softmax: dim {dim!r} is out of range for logits of shape {x.shape}")
    if x.ndim == 0:  # one category: as a vector of one
        return gumbel_softmax(x.reshape(1), tau, hard, dim=0).reshape(())
    dt = x.dtype
    u = x.device.rand(tuple(x.shape), 0.0, 1.0, dt)
    e = (-((-u).log1p())).clamp(min=float(np.finfo(dt).tiny))  # Exp(1); U = 0 would give log(0)
    y = softmax((x - e.log()) / t, dim)
    if not hard:
        return y
    ax = int(dim) % x.ndim
    index = y.argmax(ax, keepdim=True)
    positions = np.arange(x.shape[ax]).reshape((-1,) + (1,) * (x.ndim - ax - 1))
    y_hard: Tensor[Any, Any] = (index == x.device.tensor(positions)).to(dt)  # the one-hot of the argmax
    return y_hard - y.detach() + y  # y_hard's values, y's gradient (straight through)


# ----- randomized leaky ReLU, alpha and feature dropouts ---------------------------------


def rrelu(
    input: Tensor[Any, Any],
    lower: float = 1.0 / 8.0,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    inplace: bool = False,
) -> Tensor[Any, Any]:
    """PyTorch's ``F.rrelu(input, lower=1/8, upper=1/3, training=False, inplace=False)``:
    randomized leaky ReLU (Xu et al. 2015, "Empirical Evaluation of Rectified Activations in
    Convolutional Network"). ``y = x`` where ``x > 0``, else ``a * x``: in training mode ``a``
    drawn per element from ``U(lower, upper)`` (the device's generator; the gradient is ``g * a``,
    the drawn slope), in eval mode ``a = (lower + upper) / 2``, :func:`gradtape.ops.leaky_relu`
    (gradient ``a`` at 0, as PyTorch). Shape and float dtype of ``input``.

    Raises:
        TypeError: ``input`` not a tensor; a bound not a number. DTypeError: a non-float input.
        ValueError: ``lower > upper``; ``inplace=True`` (the result is a new tensor).
    """
    return _rrelu("rrelu", input, lower, upper, training, inplace)


def _rrelu(
    op: str,
    input: Tensor[Any, Any],
    lower: float = 1.0 / 8.0,
    upper: float = 1.0 / 3.0,
    training: bool = False,
    inplace: bool = False,
) -> Tensor[Any, Any]:
    """:func:`rrelu`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    lo, hi = _real(op, "lower", lower), _real(op, "upper", upper)
    if lo > hi:
        raise ValueError(f"{op}: lower bound {lo} must be at most the upper bound {hi}")
    _no_inplace(op, inplace)
    if not training:
        return leaky_relu(x, (lo + hi) / 2.0)
    slopes = x.device.rand(tuple(x.shape), lo, hi, x.dtype)
    return x * _where(x <= 0.0, slopes, 1.0)


_SELU_ALPHA = 1.7580993408473766
"""``-selu'(-inf) = lambda * alpha`` of SELU (Klambauer et al. 2017): the value alpha dropout
sets dropped units to, negated (PyTorch's constant)."""


def _dropout_noise(x: Tensor[Any, Any], p: float, training: bool, feature: bool, alpha: bool) -> Tensor[Any, Any]:
    """PyTorch's ``_dropout_impl``: ``x`` itself when not training, ``p == 0`` or empty; zeros
    (``x * 0``) for ``p == 1``; else ``x * m`` with ``m = keep / (1 - p)`` (or, ``alpha``,
    ``x * keep * a + b``), ``keep`` Bernoulli(``1 - p``) of ``x``'s shape or, ``feature``, of
    ``(N, C, 1, ...)`` (one draw per channel), from ``x``'s device generator."""
    if not training or p == 0.0 or x.data.size == 0:
        return x
    if p == 1.0:
        return x * 0.0
    dt = x.dtype
    shape = (*x.shape[:2], *(1,) * (x.ndim - 2)) if feature else tuple(x.shape)
    keep = (x.device.rand(shape, 0.0, 1.0, dt) >= p).to(dt)
    if not alpha:
        return x * (keep / (1.0 - p))
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1.0) * (1.0 - p))
    b = (keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    return x * (keep * a) + b


def alpha_dropout(
    input: Tensor[Any, Any], p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor[Any, Any]:
    """PyTorch's ``F.alpha_dropout(input, p=0.5, training=False, inplace=False)``: alpha dropout
    (Klambauer et al. 2017, "Self-Normalizing Neural Networks"), which keeps SELU activations at
    zero mean and unit variance. In training mode each element is dropped with probability ``p``
    to the SELU's negative saturation ``-alpha'`` (``alpha' = 1.7581``) and the result
    affinely rescaled, ``y = a * (x * keep - alpha' * (1 - keep)) + alpha' * a * p`` with
    ``a = ((alpha'**2 p + 1)(1 - p))**-1/2``; the gradient is ``g * keep * a``. The identity in
    eval mode (``training=False``, the default here as in PyTorch). Masks from the device's
    generator. Shape and float dtype of ``input``.

    Raises:
        TypeError: ``input`` not a tensor. DTypeError: a non-float input.
        ValueError: ``p`` outside ``[0, 1]``; ``inplace=True``.
    """
    return _alpha_dropout("alpha_dropout", input, p, training, inplace)


def _alpha_dropout(
    op: str, input: Tensor[Any, Any], p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor[Any, Any]:
    """:func:`alpha_dropout`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    q = _probability(op, p)
    _no_inplace(op, inplace)
    return _dropout_noise(x, q, training, False, True)


def feature_alpha_dropout(
    input: Tensor[Any, Any], p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor[Any, Any]:
    """PyTorch's ``F.feature_alpha_dropout(input, p=0.5, training=False, inplace=False)``:
    :func:`alpha_dropout` of whole channels, one draw per ``(n, c)`` of an ``(N, C, *)`` input
    (dim 1 is the channel dim, whatever the rank).

    Raises:
        TypeError: ``input`` not a tensor. DTypeError: a non-float input.
        ValueError: ``p`` outside ``[0, 1]``; ``inplace=True``.
        ShapeError: (training) an input of fewer than 2 dims (PyTorch's "feature dropout
            requires at least 2 dimensions").
    """
    return _feature_alpha_dropout("feature_alpha_dropout", input, p, training, inplace)


def _feature_alpha_dropout(
    op: str, input: Tensor[Any, Any], p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor[Any, Any]:
    """:func:`feature_alpha_dropout`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    q = _probability(op, p)
    _no_inplace(op, inplace)
    if training and x.ndim < 2:
        raise ShapeError(f"{op}: needs at least 2 dims (N, C, *), got shape {x.shape}")
    return _dropout_noise(x, q, training, True, True)


def _channel_dropout(
    op: str, input: Tensor[Any, Any], p: float, training: bool, inplace: bool, rank: int
) -> Tensor[Any, Any]:
    """``dropout1d`` / ``2d`` / ``3d`` (``rank`` 3, 4, 5: the batched input's dims), as PyTorch's
    functions: whole channels of dim 1 dropped (``feature_dropout``). ``dropout1d`` takes
    ``(N, C, L)`` or unbatched ``(C, L)`` and refuses other ranks; ``dropout2d`` warns for ranks
    other than 3 and 4 and takes a 3-D input as batched ``(N, C, L)`` (with PyTorch's warning);
    ``dropout3d`` warns for ranks other than 4 and 5 and takes every rank but 5 as unbatched."""
    x = _float(op, input)
    q = _probability(op, p)
    _no_inplace(op, inplace)
    if rank == 3 and x.ndim not in (2, 3):
        raise ShapeError(f"{op}: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape {x.shape}")
    if rank > 3 and x.ndim not in (rank - 1, rank):
        warnings.warn(
            f"{op}: received a {x.ndim}-D input, which PyTorch deprecates (it expects {rank - 1}-D or {rank}-D "
            "inputs); use dropout for elementwise dropout",
            UserWarning,
            stacklevel=3,
        )
    if rank == 4 and x.ndim == 3:
        warnings.warn(
            "dropout2d: received a 3-D input and, as PyTorch, assuming that channel-wise 1-D dropout is desired: "
            "the input is taken as (N, C, L); use dropout1d for that",
            UserWarning,
            stacklevel=3,
        )
    batched = rank == 4 or x.ndim == rank
    xb = x if batched else x.unsqueeze(0)
    if training and 0.0 < q and xb.ndim < 2:
        raise ShapeError(f"{op}: feature dropout needs at least 2 dims (N, C, *), got shape {x.shape}")
    y = _dropout_noise(xb, q, training, True, False)
    if y is xb:
        return x
    return y if batched else y.reshape(*x.shape)


def dropout1d(
    input: Tensor[Any, Any], p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor[Any, Any]:
    """PyTorch's ``F.dropout1d(input, p=0.5, training=True, inplace=False)``: in training mode each
    channel ``x[n, c]`` of an ``(N, C, L)`` (or unbatched ``(C, L)``) input is zeroed as a whole with
    probability ``p`` and the others scaled by ``1 / (1 - p)``; the identity otherwise. The
    gradient is ``g`` times the same mask. Masks from the device's generator.

    Raises:
        TypeError: ``input`` not a tensor. DTypeError: a non-float input.
        ValueError: ``p`` outside ``[0, 1]``; ``inplace=True``. ShapeError: an input neither 2-D nor 3-D.
    """
    return _channel_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(
    input: Tensor[Any, Any], p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor[Any, Any]:
    """PyTorch's ``F.dropout2d(input, p=0.5, training=True, inplace=False)`` (Tompson et al. 2015):
    whole channels ``x[n, c]`` of ``(N, C, H, W)`` zeroed with probability ``p``, the others scaled
    by ``1 / (1 - p)``; the identity when not training. The gradient is ``g`` times the same mask.
    As PyTorch today, a 3-D input is taken as batched ``(N, C, L)`` (with PyTorch's warning; not
    as an unbatched ``(C, H, W)``), and other ranks warn and drop channels of dim 1.

    Raises:
        TypeError: ``input`` not a tensor. DTypeError: a non-float input.
        ValueError: ``p`` outside ``[0, 1]``; ``inplace=True``. ShapeError: a 0-D or 1-D input.
    """
    return _channel_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(
    input: Tensor[Any, Any], p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor[Any, Any]:
    """PyTorch's ``F.dropout3d(input, p=0.5, training=True, inplace=False)``: whole channels of
    ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) zeroed with probability ``p``, the others
    scaled by ``1 / (1 - p)``; the identity when not training. Other ranks warn (as PyTorch) and
    drop channels of dim 1.

    Raises:
        TypeError: ``input`` not a tensor. DTypeError: a non-float input.
        ValueError: ``p`` outside ``[0, 1]``; ``inplace=True``. ShapeError: a 0-D or 1-D input.
    """
    return _channel_dropout("dropout3d", input, p, training, inplace, 5)


# ----- power-average pooling --------------------------------------------------------------


def _window_mean(
    op: str, x: Tensor[Any, Any], k: tuple[int, int], s: tuple[int, int], ceil_mode: bool
) -> Tensor[Any, Any]:
    """Average pooling of the last two dims of ``(N, C, H, W)``, no padding, as PyTorch's
    ``avg_pool2d`` with ``ceil_mode`` (a last window that starts inside the input but reaches
    past it averages the elements it covers). Window sums by :func:`unfold`."""
    n, c, h, w = x.shape
    sizes = []
    for dim, size in enumerate((h, w)):
        if size < k[dim]:
            raise ShapeError(f"{op}: kernel_size {k} is larger than the input's spatial size {(h, w)}")
        o = (size - k[dim] + (s[dim] - 1 if ceil_mode else 0)) // s[dim] + 1
        if ceil_mode and (o - 1) * s[dim] >= size:
            o -= 1
        sizes.append(o)
    oh, ow = sizes
    extra_h, extra_w = (oh - 1) * s[0] + k[0] - h, (ow - 1) * s[1] + k[1] - w
    if extra_h > 0 or extra_w > 0:
        x = pad(x, (0, max(extra_w, 0), 0, max(extra_h, 0)))
    cols = unfold(x, k, stride=s).reshape(n, c, k[0] * k[1], oh * ow)
    total = cols.sum(2).reshape(n, c, oh, ow)
    if extra_h <= 0 and extra_w <= 0:
        return total / float(k[0] * k[1])
    rows = np.minimum(np.arange(oh) * s[0] + k[0], h) - np.arange(oh) * s[0]
    columns = np.minimum(np.arange(ow) * s[1] + k[1], w) - np.arange(ow) * s[1]
    count = np.multiply.outer(rows, columns).astype(x.dtype)
    return total / x.device.tensor(count, x.dtype)


def _lp_pool(
    op: str, x: Tensor[Any, Any], norm_type: float, k: tuple[int, int], s: tuple[int, int], ceil_mode: bool
) -> Tensor[Any, Any]:
    """PyTorch's ``lp_pool``: ``(sign(m) * relu(|m|) * KH * KW) ** (1 / p)`` with ``m`` the mean
    of ``x ** p`` over each window."""
    m = _window_mean(op, x**norm_type, k, s, ceil_mode)
    return (_sign(m) * relu(m.abs()) * float(k[0] * k[1])) ** (1.0 / norm_type)


def lp_pool2d(
    input: Tensor[Any, Any],
    norm_type: float,
    kernel_size: int | tuple[int, int],
    stride: int | tuple[int, int] | None = None,
    ceil_mode: bool = False,
) -> Tensor[Any, Any]:
    """PyTorch's ``F.lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False)``:
    power-average pooling, ``y = (sum over the window of x**p) ** (1/p)`` (``p = norm_type``;
    ``p = inf`` would be max pooling, ``p = 1`` sum pooling), of ``(N, C, H, W)`` or ``(C, H, W)``.
    ``stride`` defaults to ``kernel_size``; ``ceil_mode`` keeps a last, partial window (its mean
    over the elements it covers times the window size, as PyTorch). Computed as PyTorch does,
    ``(sign(m) * relu(|m|) * KH * KW) ** (1/p)`` with ``m`` the window mean of ``x ** p``, in
    gradtape ops (so the gradient, NaN included for negative inputs with fractional ``p``, is
    PyTorch's).

    Raises:
        TypeError: ``input`` not a tensor; sizes not ints; ``norm_type`` not a number.
        DTypeError: a non-float input. ValueError: sizes below 1; ``norm_type`` 0.
        ShapeError: an input neither 3-D nor 4-D, or smaller than the window.
    """
    return _lp_pool2d("lp_pool2d", input, norm_type, kernel_size, stride, ceil_mode)


def _lp_pool2d(
    op: str,
    input: Tensor[Any, Any],
    norm_type: float,
    kernel_size: int | tuple[int, int],
    stride: int | tuple[int, int] | None = None,
    ceil_mode: bool = False,
) -> Tensor[Any, Any]:
    """:func:`lp_pool2d`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    pw = _real(op, "norm_type", norm_type)
    if pw == 0.0:
        raise ValueError(f"{op}: norm_type must not be 0")
    k = _pair(op, "kernel_size", kernel_size, 1)
    s = k if stride is None else _pair(op, "stride", stride, 1)
    if x.ndim not in (3, 4):
        raise ShapeError(f"{op}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape {x.shape}")
    y = _lp_pool(op, x if x.ndim == 4 else x.unsqueeze(0), pw, k, s, bool(ceil_mode))
    return y if x.ndim == 4 else y.reshape(*y.shape[1:])


def lp_pool1d(
    input: Tensor[Any, Any], norm_type: float, kernel_size: int, stride: int | None = None, ceil_mode: bool = False
) -> Tensor[Any, Any]:
    """PyTorch's ``F.lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False)``:
    :func:`lp_pool2d` along the last dim of ``(N, C, L)`` or ``(C, L)``,
    ``y = (sum over the window of x**p) ** (1/p)``.

    Raises:
        TypeError: ``input`` not a tensor; sizes not ints; ``norm_type`` not a number.
        DTypeError: a non-float input. ValueError: sizes below 1; ``norm_type`` 0.
        ShapeError: an input neither 2-D nor 3-D, or shorter than the window.
    """
    return _lp_pool1d("lp_pool1d", input, norm_type, kernel_size, stride, ceil_mode)


def _lp_pool1d(
    op: str,
    input: Tensor[Any, Any],
    norm_type: float,
    kernel_size: int,
    stride: int | None = None,
    ceil_mode: bool = False,
) -> Tensor[Any, Any]:
    """:func:`lp_pool1d`, its errors naming ``op`` (the function, or the layer that calls it)."""
    x = _float(op, input)
    pw = _real(op, "norm_type", norm_type)
    if pw == 0.0:
        raise ValueError(f"{op}: norm_type must not be 0")
    k = _int(op, "kernel_size", kernel_size, 1)
    s = k if stride is None else _int(op, "stride", stride, 1)
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape {x.shape}")
    xb = x if x.ndim == 3 else x.unsqueeze(0)
    y = _lp_pool(op, xb.unsqueeze(2), pw, (1, k), (1, s), bool(ceil_mode))
    return y.reshape(*x.shape[:-1], y.shape[-1])


# ----- functional batch norm ----------------------------------------------------------------


@recorded_call  # gradtape.capture reruns it at each replay, on that replay's batch statistics
def _update_running_stats(
    mean_buf: np.ndarray[Any, Any] | None,
    var_buf: np.ndarray[Any, Any] | None,
    mean: np.ndarray[Any, Any],
    var: np.ndarray[Any, Any],
    momentum: float,
    n: int,
) -> None:
    """``running = (1 - momentum) * running + momentum * batch_stat`` in place for each buffer
    given, with the unbiased batch variance (times ``n / (n - 1)``) for the variance buffer
    (PyTorch's rule)."""
    if mean_buf is not None:
        mean_buf *= 1.0 - momentum
        mean_buf += momentum * mean.reshape(-1)
    if var_buf is not None:
        var_buf *= 1.0 - momentum
        var_buf += momentum * var.reshape(-1) * (n / max(n - 1, 1))


def batch_norm(
    input: Tensor[Any, Any],
    running_mean: Tensor[Any, Any] | None,
    running_var: Tensor[Any, Any] | None,
    weight: Tensor[Any, Any] | None = None,
    bias: Tensor[Any, Any] | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor[Any, Any]:
    """PyTorch's ``F.batch_norm(input, running_mean, running_var, weight=None, bias=None,
    training=False, momentum=0.1, eps=1e-5)`` (Ioffe & Szegedy 2015): each channel (dim 1) of
    ``(N, C, *)`` normalised, ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    ``training=True``: the batch's mean and biased variance over every dim but 1, differentiated
    through, and the running statistics that are given (``(C,)`` tensors, or ``None``) updated in
    place, ``running = (1 - momentum) * running + momentum * stat`` with the unbiased variance, as
    PyTorch (a :func:`gradtape.capture` replay updates them again). ``training=False``: the running
    statistics, as constants of the formula. ``weight`` and ``bias``: ``(C,)`` or ``None``.

    Raises:
        TypeError: an argument is not a tensor (or ``None``); ``momentum``/``eps`` not numbers.
        DTypeError: non-float or mixed dtypes. ShapeError: an input of fewer than 2 dims; a
            ``(C,)`` argument of another shape. ValueError: eval mode without running statistics;
            training with one value per channel (PyTorch's errors).
    """
    op = "batch_norm"
    x = _float(op, input)
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of at least 2 dims (N, C, *), got shape {x.shape}")
    c = x.shape[1]
    given: dict[str, Tensor[Any, Any] | None] = {}
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None:
            t = _float(op, t, name)
            _same_dtype(op, x, t, ("input", name))
            if t.shape != (c,):
                raise ShapeError(f"batch_norm: {name} of shape {t.shape} does not match the {c} channels of {x.shape}")
        given[name] = t
    m, e = _real(op, "momentum", momentum), _real(op, "eps", eps)
    axes = (0, *range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    rm, rv = given["running_mean"], given["running_var"]
    if training:
        count = x.data.size // max(c, 1)
        if count < 2:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when training, got input {x.shape}")
        mean = x.mean(axis=axes, keepdims=True)
        var = x.var(axis=axes, keepdims=True)
        if rm is not None or rv is not None:
            _update_running_stats(
                None if rm is None else rm.data, None if rv is None else rv.data, mean.data, var.data, m, count
            )
        y = (x - mean) / (var + e).sqrt()
    else:
        if rm is None or rv is None:
            raise ValueError(
                "batch_norm: running_mean and running_var must be given in evaluation mode (training=False)"
            )
        y = (x - rm.reshape(bshape)) / (rv.reshape(bshape) + e).sqrt()
    w, b = given["weight"], given["bias"]
    if w is not None:
        y = y * w.reshape(bshape)
    if b is not None:
        y = y + b.reshape(bshape)
    return y


# ----- interpolate: PyTorch's every mode -------------------------------------------------------


@overload
def interpolate(
    input: Tensor[AnyShape, T],
    size: int | tuple[int, ...] | None = None,
    scale_factor: float | tuple[float, ...] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor[Any, T]: ...
@overload
def interpolate(
    input: Tensor[Rank4[N, C, Any, Any], T],
    size: tuple[H2, W2],
    scale_factor: None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor[Rank4[N, C, H2, W2], T]: ...
@overload
def interpolate(
    input: Tensor[Rank4[N, C, Any, Any], T],
    size: int | None = None,
    scale_factor: float | tuple[float, float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor[Rank4[N, C, int, int], T]: ...
@overload
def interpolate(
    input: Tensor[Rank3[N, C, Any], T],
    size: int | tuple[int] | None = None,
    scale_factor: float | tuple[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor[Rank3[N, C, int], T]: ...
@overload
def interpolate(
    input: Tensor[Any, T],
    size: int | tuple[int, ...] | None = None,
    scale_factor: float | tuple[float, ...] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor[Any, T]: ...
def interpolate(
    input: Any,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Any:
    """PyTorch's ``F.interpolate(input, size=None, scale_factor=None, mode="nearest",
    align_corners=None, recompute_scale_factor=None, antialias=False)``: resampling of the spatial
    dims of ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)`` to ``size`` (an int or one per
    dim) or by ``scale_factor`` (output ``floor(n * scale_factor)``; the source coordinates use
    ``1 / scale_factor``, or ``n / n_out`` with ``size`` or ``recompute_scale_factor=True``).

    Modes (PyTorch's formulas): ``"nearest"`` (``src = min(floor(dst * scale), n - 1)`` in float32,
    3-D to 5-D), ``"nearest-exact"`` (``min(floor((dst + 0.5) * scale), n - 1)``, 3-D to 5-D),
    ``"linear"`` (3-D), ``"bilinear"`` (4-D), ``"trilinear"`` (5-D), ``"bicubic"`` (4-D; Keys'
    cubic convolution with ``A = -0.75``, taps clamped at the border, as PyTorch) and ``"area"``
    (3-D and 4-D: :func:`gradtape.ops.adaptive_avg_pool1d` / ``2d``); ``align_corners`` for the
    linear and cubic modes only (``None`` means ``False``). ``"nearest"``, ``"linear"`` and
    ``"bilinear"`` on 3-D/4-D inputs are :func:`gradtape.ops.interpolate` (fused kernels); the
    others are separable, one :func:`gradtape.ops.index_select` per tap and dim, weighted and
    summed. The gradient is the transposed resampling; gradtape ops throughout, so second
    derivatives too. Output: the input's dtype.

    Raises:
        TypeError: ``input`` not a tensor; ``size``/``scale_factor`` not ints/numbers.
        DTypeError: a non-float input. ShapeError: an input rank the mode does not take; an
            empty output. ValueError: an unknown mode; ``align_corners`` with a mode that has no
            corners; both or neither of ``size`` and ``scale_factor``; ``antialias=True`` (not
            supported).
    """
    return _resample("interpolate", input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)


_MODES: dict[str, tuple[int, ...]] = {
    "nearest": (3, 4, 5),
    "nearest-exact": (3, 4, 5),
    "linear": (3,),
    "bilinear": (4,),
    "trilinear": (5,),
    "bicubic": (4,),
    "area": (3, 4),
}


def _resample(
    op: str,
    input: Any,
    size: Any,
    scale_factor: Any,
    mode: str,
    align_corners: bool | None,
    recompute_scale_factor: bool | None,
    antialias: bool = False,
) -> Any:
    """:func:`interpolate`, its errors naming ``op``."""
    x = _float(op, input)
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    if x.ndim not in _MODES[mode]:
        want = " or ".join(f"{r}-D" for r in _MODES[mode])
        raise ShapeError(f"{op}: mode {mode!r} needs a {want} input (N, C, *spatial), got shape {x.shape}")
    if align_corners is not None and mode not in ("linear", "bilinear", "trilinear", "bicubic"):
        raise ValueError(
            f"{op}: align_corners can only be set with the interpolating modes linear, bilinear, bicubic and "
            f"trilinear, got mode {mode!r}"
        )
    if antialias:
        raise ValueError(f"{op}: antialias=True is not supported (input of shape {x.shape})")
    if mode in ("nearest", "linear", "bilinear") and x.ndim in (3, 4):
        return _interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor)
    in_size = tuple(int(v) for v in x.shape[2:])
    out_size, scales = spatial_size(op, in_size, size, scale_factor)
    if mode == "area":
        if x.ndim == 3:
            return adaptive_avg_pool1d(x, out_size[0])
        return adaptive_avg_pool2d(x, (out_size[0], out_size[1]))
    y = x
    for d, (n_in, n_out) in enumerate(zip(in_size, out_size, strict=True)):
        scale = None if scales is None or recompute_scale_factor else scales[d]
        idx, weights = _taps(mode, n_in, n_out, scale, bool(align_corners))
        axis = 2 + d
        bshape = (n_out,) + (1,) * (x.ndim - 1 - axis)
        total: Tensor[Any, Any] | None = None
        for k in range(idx.shape[1]):
            term = _index_select(y, y.device.tensor(idx[:, k]), axis)
            if weights is not None:
                term = term * y.device.tensor(weights[:, k].reshape(bshape).astype(x.dtype))
            total = term if total is None else total + term
        assert total is not None
        y = total
    return y


def _taps(
    mode: str, n_in: int, n_out: int, scale_factor: float | None, align_corners: bool
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]:
    """``(indices (n_out, K), weights (n_out, K) or None)``: output position ``j`` of one dim is
    ``sum_k weights[j, k] * input[indices[j, k]]`` (PyTorch's ``UpSample.h`` formulas)."""
    out = np.arange(n_out)
    if mode in ("nearest", "nearest-exact"):
        r = np.float32(1.0 / scale_factor) if scale_factor is not None else np.float32(n_in) / np.float32(n_out)
        pos = out.astype(np.float64) + (0.5 if mode == "nearest-exact" else 0.0)
        src = np.floor((pos * np.float64(r)).astype(np.float32)).astype(np.int64)
        return np.minimum(src, n_in - 1).reshape(-1, 1), None
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        real = scale * out
    else:
        scale = 1.0 / scale_factor if scale_factor is not None else n_in / n_out
        real = scale * (out + 0.5) - 0.5
    if mode == "trilinear":
        real = np.maximum(real, 0.0)
        i0 = real.astype(np.int64)
        i1 = i0 + (i0 < n_in - 1)
        lam1 = real - i0
        return np.stack([i0, i1], 1), np.stack([1.0 - lam1, lam1], 1)
    # bicubic: Keys' cubic convolution, A = -0.75, the taps clamped into [0, n_in)
    base = np.floor(real)
    t = real - base
    a = -0.75

    def near(v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        w: np.ndarray[Any, Any] = ((a + 2) * v - (a + 3)) * v * v + 1
        return w

    def far(v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        w: np.ndarray[Any, Any] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
        return w

    weights = np.stack([far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)], 1)
    idx = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], 0, n_in - 1)
    return idx, weights


# ----- deprecated resampling names ------------------------------------------------------------


def upsample(
    input: Tensor[Any, Any],
    size: int | tuple[int, ...] | None = None,
    scale_factor: float | tuple[float, ...] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor[Any, Any]:
    """PyTorch's deprecated ``F.upsample``: :func:`interpolate` with the same arguments (and
    PyTorch's deprecation warning). Shapes, gradient and errors as :func:`gradtape.ops.interpolate`."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(_tensor("upsample", input), size, scale_factor, mode, align_corners)


def upsample_nearest(
    input: Tensor[Any, Any], size: int | tuple[int, ...] | None = None, scale_factor: float | None = None
) -> Tensor[Any, Any]:
    """PyTorch's deprecated ``F.upsample_nearest``: :func:`interpolate` with ``mode="nearest"``
    (and PyTorch's deprecation warning). Errors as :func:`gradtape.ops.interpolate`."""
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2
    )
    return interpolate(_tensor("upsample_nearest", input), size, scale_factor, "nearest")


def upsample_bilinear(
    input: Tensor[Any, Any], size: int | tuple[int, int] | None = None, scale_factor: float | None = None
) -> Tensor[Any, Any]:
    """PyTorch's deprecated ``F.upsample_bilinear``: :func:`interpolate` with ``mode="bilinear"``
    and ``align_corners=True`` (and PyTorch's deprecation warning), of ``(N, C, H, W)``. Errors as
    :func:`gradtape.ops.interpolate`."""
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2
    )
    return interpolate(_tensor("upsample_bilinear", input), size, scale_factor, "bilinear", align_corners=True)
