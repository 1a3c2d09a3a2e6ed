"""Neural-network layers on gradtape's ops (dfdx's ``nn`` / PyTorch's ``torch.nn``).

:class:`Module` finds parameters automatically (``Tensor`` attributes, sub-modules, lists
and dicts of modules, :class:`ModuleList` / :class:`ModuleDict`), switches train/eval mode
and allocates gradient stores that keep only the parameters' gradients
(:meth:`Module.alloc_grads`). Layers are initialised from a seeded ``Cpu`` device as
PyTorch initialises them. :func:`save` / :func:`load` write and read
safetensors checkpoints; :meth:`Module.state_dict` / :meth:`Module.load_state_dict` exchange
state dicts with PyTorch (its keys, its order, BatchNorm's ``num_batches_tracked``).
:mod:`gradtape.nn.init` holds PyTorch's initialisers and :mod:`gradtape.nn.utils` its
gradient clipping and parameter-vector helpers.

Unlike PyTorch, which ignores modules in a plain ``list`` or ``dict`` attribute (they need an
``nn.ModuleList`` / ``nn.ModuleDict`` there), gradtape discovers them, under the names
PyTorch's containers would give (``heads.cls.weight``): such a model trains and saves as the
PyTorch user meant, and its state dict loads into the PyTorch model built with the containers.
"""

from gradtape.nn import functional as functional
from gradtape.nn import init as init
from gradtape.nn import utils as utils
from gradtape.nn.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
    Flatten,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    Identity,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
    Unflatten,
)
from gradtape.nn.attention import MultiHeadAttention, MultiheadAttention
from gradtape.nn.checkpoint import load, save, state_dict
from gradtape.nn.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Residual, Sequential
from gradtape.nn.conv import (
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MinPool2d,
)
from gradtape.nn.distance import CosineSimilarity, PairwiseDistance  # issue 27
from gradtape.nn.linear import Bilinear, Embedding, EmbeddingBag, Linear
from gradtape.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from gradtape.nn.mamba import Mamba, MambaBlock
from gradtape.nn.module import Module
from gradtape.nn.norm import (  # issue 27
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)
from gradtape.nn.parameter import Parameter
from gradtape.nn.rearrange import Rearrange, Reduce
from gradtape.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from gradtape.nn.spatial import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    ChannelShuffle,
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    Fold,
    LPPool1d,
    LPPool2d,
    PixelShuffle,
    PixelUnshuffle,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from gradtape.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveMaxPool1d",
    "AvgPool1d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "CELU",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "Dropout",
    "Dropout2d",
    "ELU",
    "Embedding",
    "EmbeddingBag",
    "Flatten",
    "GELU",
    "GLU",
    "GaussianNLLLoss",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "HingeEmbeddingLoss",
    "HuberLoss",
    "Identity",
    "KLDivLoss",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSigmoid",
    "LogSoftmax",
    "MSELoss",
    "Mamba",
    "MambaBlock",
    "MarginRankingLoss",
    "MaxPool1d",
    "MaxPool2d",
    "MinPool2d",
    "Mish",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiHeadAttention",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "NLLLoss",
    "PReLU",
    "Parameter",
    "ParameterDict",
    "ParameterList",
    "PoissonNLLLoss",
    "RMSNorm",
    "ReLU",
    "ReLU6",
    "Rearrange",
    "Reduce",
    "Residual",
    "SELU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softmax2d",
    "SoftMarginLoss",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
    "TransformerEncoderLayer",
    "TripletMarginLoss",
    "Unflatten",
    "init",
    "load",
    "save",
    "state_dict",
]
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]
# issue 27: spatial layers (nn/spatial.py)
__all__ += ["AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "ConstantPad2d", "PixelShuffle", "PixelUnshuffle"]
__all__ += ["ReflectionPad2d", "ReplicationPad2d", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
__all__ += ["ZeroPad2d"]
__all__ += ["MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder"]
__all__ += ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d"]  # issue 27: normalisations
__all__ += ["CosineSimilarity", "PairwiseDistance"]  # issue 27: distances
# PyTorch's remaining common layers (nn/linear.py, nn/norm.py, nn/spatial.py, nn/activation.py)
__all__ += ["Bilinear", "LocalResponseNorm", "Unfold", "Fold", "ChannelShuffle", "LPPool1d", "LPPool2d"]
__all__ += ["RReLU", "AlphaDropout", "FeatureAlphaDropout", "Dropout1d", "Dropout3d"]
__all__ += ["ZeroPad1d", "ZeroPad3d", "ConstantPad1d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad3d"]
__all__ += ["ReplicationPad1d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]
__all__ += ["AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "BatchNorm3d", "InstanceNorm3d", "MaxPool3d"]  # 3-D
