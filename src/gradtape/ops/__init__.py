"""Tensor ops, one module per family; each keeps its typed signature, forward and backward
closure together. Most are also :class:`~gradtape.tensor.Tensor` methods; the ones taking
several tensors or a weight (``concat``, ``stack``, ``linear``, ``embedding``, ``conv2d``, ...)
are functions only."""

from gradtape.ops import binary as _binary
from gradtape.ops import unary as _unary
from gradtape.ops.attention import scaled_dot_product_attention
from gradtape.ops.binary import (
    add,
    atan2,
    div,
    floor_divide,
    fmod,
    lerp,
    maximum,
    minimum,
    mul,
    outer,
    pow,
    remainder,
    sub,
)
from gradtape.ops.compare import (
    allclose,
    eq,
    equal,
    ge,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    ne,
    where,
)
from gradtape.ops.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from gradtape.ops.distance import cdist, cosine_similarity, norm, normalize, pairwise_distance
from gradtape.ops.einsum import einsum
from gradtape.ops.indexing import gather, index_select
from gradtape.ops.linalg import bmm, dot, linear, matmul, mm
from gradtape.ops.nn import dropout, embedding, glu, group_norm, instance_norm, layer_norm, prelu, rms_norm  # issue 27
from gradtape.ops.pool import (
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    min_pool2d,
    upscale2d,
)
from gradtape.ops.reduce import all, amax, amin, any, cumprod, cumsum, logsumexp, max, mean, min, prod, std, sum, var
from gradtape.ops.rnn import gru_layer, lstm_layer, rnn_layer
from gradtape.ops.sampling import multinomial
from gradtape.ops.scan import selective_scan
from gradtape.ops.select import (
    argmax,
    argmin,
    argsort,
    chunk,
    flip,
    index_add,
    masked_fill,
    one_hot,
    repeat,
    scatter_add,
    sort,
    split,
    take_along_axis,
    tile,
    topk,
    unbind,
)
from gradtape.ops.shape import (
    broadcast_to,
    concat,
    expand_dims,
    hstack,
    movedim,
    permute,
    reshape,
    roll,
    squeeze,
    stack,
    swapaxes,
    transpose,
    tril,
    triu,
    unsqueeze,
    vstack,
)
from gradtape.ops.softmax import log_softmax, softmax, softmin
from gradtape.ops.spatial import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    affine_grid,
    grid_sample,
    interpolate,
    pad,
    pixel_shuffle,
    pixel_unshuffle,
)
from gradtape.ops.unary import (
    abs,
    acos,
    asin,
    atan,
    ceil,
    celu,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    cos,
    cosh,
    elu,
    erf,
    erfc,
    exp,
    exp2,
    expm1,
    fix,
    floor,
    gelu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log,
    log1p,
    log2,
    log10,
    logsigmoid,
    mish,
    nan_to_num,
    nans_to,
    neg,
    recip,
    reciprocal,
    relu,
    relu6,
    round,
    rsqrt,
    selu,
    sigmoid,
    sign,
    silu,
    sin,
    sinh,
    softplus,
    softshrink,
    softsign,
    sqrt,
    square,
    tan,
    tanh,
    tanhshrink,
    threshold,
    to_dtype,
    trunc,
)

# binary.pow takes a number exponent to unary.pow; unary imports binary, so the package wires it
_binary._scalar_pow = _unary.pow

__all__ = ["add", "div", "exp", "log", "log_softmax", "matmul", "mean", "mul", "neg", "relu", "sin", "sub", "sum"]
__all__ += ["abs", "clamp", "cos", "gelu", "leaky_relu", "nans_to", "pow", "recip", "sigmoid", "silu", "softplus"]
__all__ += ["sqrt", "square", "tanh", "to_dtype"]
__all__ += ["acos", "asin", "atan", "cosh", "elu", "erf", "erfc", "expm1", "hardsigmoid", "hardswish", "log1p"]
__all__ += ["logsigmoid", "mish", "selu", "sinh", "tan"]
__all__ += ["eq", "ge", "gt", "le", "logsumexp", "lt", "max", "maximum", "min", "minimum", "ne", "softmax", "std"]
__all__ += ["var", "where"]
__all__ += ["broadcast_to", "concat", "expand_dims", "gather", "index_select", "permute", "reshape", "roll"]
__all__ += ["squeeze", "stack", "transpose", "tril", "triu", "unsqueeze"]
__all__ += ["dropout", "embedding", "layer_norm", "linear", "prelu", "rms_norm"]
__all__ += ["avg_pool2d", "conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "min_pool2d", "upscale2d"]
__all__ += ["conv3d", "conv_transpose3d"]
__all__ += ["scaled_dot_product_attention", "selective_scan"]
__all__ += ["einsum", "multinomial"]
__all__ += ["argmax", "argmin", "argsort", "chunk", "cumprod", "cumsum", "flip", "index_add", "masked_fill"]
__all__ += ["one_hot", "prod", "repeat", "scatter_add", "sort", "split", "take_along_axis", "tile", "topk"]
__all__ += ["gru_layer", "lstm_layer", "rnn_layer"]
# issue 27: spatial ops (ops/spatial.py)
__all__ += ["adaptive_avg_pool2d", "adaptive_max_pool2d", "interpolate", "pad", "pixel_shuffle", "pixel_unshuffle"]
# issue 27: normalisations, distances, norms
__all__ += ["group_norm", "instance_norm"]
__all__ += ["cdist", "cosine_similarity", "norm", "normalize", "pairwise_distance"]
__all__ += ["atan2", "lerp", "outer"]
__all__ += ["floor_divide", "fmod", "remainder"]  # integer arithmetic, PyTorch's %, // and fmod
__all__ += ["ceil", "clip", "fix", "floor", "round", "sign", "trunc"]  # rounding: gradient exactly 0
# PyTorch's names for what its programs call most (issue 27)
__all__ += ["clamp_max", "clamp_min", "exp2", "log10", "log2", "nan_to_num", "reciprocal", "rsqrt"]
__all__ += ["allclose", "equal", "isclose", "isfinite", "isinf", "isnan", "logical_and", "logical_not"]
__all__ += ["logical_or", "logical_xor", "all", "amax", "amin", "any", "bmm", "dot", "mm", "unbind"]
__all__ += ["hstack", "movedim", "swapaxes", "vstack"]
__all__ += ["celu", "glu", "hardshrink", "hardtanh", "relu6", "softmin", "softshrink", "softsign", "tanhshrink"]
__all__ += ["threshold"]
__all__ += ["adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d", "max_pool1d", "conv_transpose1d"]
# issue 27: PyTorch's spellings of shape ops
from gradtape.ops.shape import cat, flatten  # noqa: E402

__all__ += ["cat", "flatten"]
__all__ += ["affine_grid", "grid_sample"]  # torch.nn.functional's sampling grids (ops/spatial.py)
__all__ += ["adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool3d", "max_pool3d"]  # 3-D pooling (ops/pool.py)

# The functional API checks its tensor arguments (a list or an array where a tensor belongs
# raises TypeError naming the op and the argument); the Tensor methods use the unwrapped ops.
# Static types come from the imports above: mypy and pyright never see the wrappers.
from typing import TYPE_CHECKING as _TYPE_CHECKING  # noqa: E402

if not _TYPE_CHECKING:
    from gradtape.ops._util import check_exports as _check_exports

    _check_exports(globals(), __all__)
    del _check_exports
