"""Neural-network layers on gradtape's ops (dfdx's ``nn`` / PyTorch's ``torch.nn``).

:class:`Module` finds parameters automatically (``Tensor`` attributes, sub-modules, lists
and dicts of modules, :class:`ModuleList` / :class:`ModuleDict`), switches train/eval mode
and allocates gradient stores that keep only the parameters' gradients
(:meth:`Module.alloc_grads`). Layers are initialised from a seeded ``Cpu`` device as
PyTorch initialises them. :func:`save` / :func:`load` write and read
safetensors checkpoints.
"""

from gradtape.nn import utils as utils
from gradtape.nn.activation import GELU, Dropout, Flatten, ReLU, Sigmoid, SiLU, Tanh
from gradtape.nn.attention import MultiHeadAttention, TransformerEncoderLayer
from gradtape.nn.checkpoint import load, save, state_dict
from gradtape.nn.container import ModuleDict, ModuleList, Residual, Sequential
from gradtape.nn.conv import AvgPool2d, Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, MinPool2d
from gradtape.nn.linear import Embedding, Linear
from gradtape.nn.mamba import Mamba, MambaBlock
from gradtape.nn.module import Module
from gradtape.nn.norm import BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm
from gradtape.nn.parameter import Parameter
from gradtape.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

__all__ = [
    "GELU",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "LayerNorm",
    "Linear",
    "Mamba",
    "MambaBlock",
    "MaxPool2d",
    "MinPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "MultiHeadAttention",
    "RMSNorm",
    "ReLU",
    "Residual",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Tanh",
    "TransformerEncoderLayer",
    "load",
    "save",
    "state_dict",
]
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]
