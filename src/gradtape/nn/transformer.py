"""PyTorch's Transformer layers (Vaswani et al. 2017, "Attention Is All You Need"):
:class:`TransformerEncoderLayer`, :class:`TransformerEncoder`, :class:`TransformerDecoderLayer`,
:class:`TransformerDecoder` and :class:`Transformer`, with PyTorch's constructors, defaults
(``batch_first=False``: inputs ``(L, N, E)``), calls, parameter names and state-dict keys, so a
PyTorch program using them ports by renaming and its checkpoints load with
:meth:`Module.load_state_dict`. Their attention is :class:`~gradtape.nn.MultiheadAttention`
(the fused scaled-dot-product core: the blocks call it with ``need_weights=False``).

Differences from PyTorch: there is no nested-tensor / inference fast path (PyTorch's
``TransformerEncoder`` in inference with a key padding mask writes zeros at the padded
positions, gradtape the computed values; PyTorch's training path agrees with gradtape), and
``is_causal=True`` without a mask applies the causal mask (PyTorch raises).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias, cast, overload

import numpy as np
import numpy.typing as npt

from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.errors import ShapeError
from gradtape.nn._typing import W2, B, E, Lk, Lq, N, T, W, X
from gradtape.nn.activation import Dropout
from gradtape.nn.attention import MultiheadAttention
from gradtape.nn.container import ModuleList
from gradtape.nn.init import xavier_uniform_
from gradtape.nn.linear import Linear
from gradtape.nn.module import Module
from gradtape.nn.norm import LayerNorm
from gradtape.ops import gelu, relu
from gradtape.ops.linalg import linear_relu
from gradtape.shapes import AnyShape, Rank2, Rank3
from gradtape.tensor import Tensor

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]

Mask: TypeAlias = "npt.ArrayLike | Tensor[Any, Any] | None"
"""A mask argument: ``None``, a bool array or tensor (``True`` blocks), or a float one (added to
the attention scores), as PyTorch's."""

Activation: TypeAlias = "str | Callable[[Tensor[Any, Any]], Tensor[Any, Any]]"


def _activation(op: str, activation: Any) -> Callable[[Tensor[Any, Any]], Tensor[Any, Any]]:
    """``"relu"`` / ``"gelu"`` as the ops (exact GELU, PyTorch's ``F.gelu``), a callable as is.

    Raises:
        ValueError: another string (PyTorch: ``activation should be relu/gelu``).
        TypeError: neither a string nor callable.
    """
    if isinstance(activation, str):
        if activation == "relu":
            return relu
        if activation == "gelu":
            return gelu
        raise ValueError(f"{op}: activation should be 'relu' or 'gelu' (or a callable), not {activation!r}")
    if not callable(activation):
        raise TypeError(f"{op}: activation must be 'relu', 'gelu' or a callable, got {type(activation).__name__}")
    return cast(Callable[[Tensor[Any, Any]], Tensor[Any, Any]], activation)


def _check_input(op: str, name: str, x: Any, d_model: int, batch_first: bool) -> None:
    """``x`` is a tensor ``(L, N, E)`` / ``(N, L, E)`` or unbatched ``(L, E)`` of width ``d_model``.

    Raises:
        TypeError: not a Tensor. ShapeError: another rank or width.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")
    if x.ndim not in (2, 3) or x.shape[-1] != d_model:
        layout = "(N, L, E)" if batch_first else "(L, N, E)"
        raise ShapeError(
            f"{op}: {name} must be {layout} or unbatched (L, E) with E = d_model = {d_model}, got shape {x.shape}"
        )


class _TransformerLayer(Module, Generic[E]):
    """What :class:`TransformerEncoderLayer` and :class:`TransformerDecoderLayer` share: the
    constructor (PyTorch's signature; ``_attentions`` names the attentions, ``_branches`` counts
    the residual branches), the self-attention, the feed-forward network
    ``ff(x) = linear2(dropout(activation(linear1(x))))`` and the branch rule
    (post-norm ``norm(x + drop(f(x)))``, pre-norm ``x + drop(f(norm(x)))``).

    The modules are registered in PyTorch's order (the attentions, ``linear1``, ``dropout``,
    ``linear2``, ``norm1..n``, ``dropout1..n``), so parameter and state-dict orders are PyTorch's.
    """

    _op: ClassVar[str]
    _attentions: ClassVar[tuple[str, ...]]
    _branches: ClassVar[int]
    self_attn: MultiheadAttention[E]
    linear1: Linear[E, int]
    dropout: Dropout
    linear2: Linear[int, E]
    norm1: LayerNorm[E]
    norm2: LayerNorm[E]
    dropout1: Dropout
    dropout2: Dropout

    def __init__(
        self,
        d_model: E,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        for name in self._attentions:
            attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first, dev=dev, dtype=dtype)
            setattr(self, name, attn)
        self.linear1 = Linear(d_model, dim_feedforward, bias, dev=dev, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, dev=dev, dtype=dtype)
        self.norm_first = norm_first
        self.batch_first = batch_first
        for i in range(1, self._branches + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, layer_norm_eps, bias=bias, dev=dev, dtype=dtype))
        for i in range(1, self._branches + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(self._op, activation)

    def _branch(
        self, x: Tensor[Any, Any], norm: LayerNorm[E], drop: Dropout, f: Callable[..., Tensor[Any, Any]], *args: Any
    ) -> Tensor[Any, Any]:
        """One residual branch: ``x + drop(f(norm(x), *args))`` pre-norm, ``norm(x + drop(f(x, *args)))`` post-norm."""
        if self.norm_first:
            y: Tensor[Any, Any] = x + drop(f(norm(x), *args))
            return y
        out: Tensor[Any, Any] = norm(x + drop(f(x, *args)))
        return out

    def _sa(self, x: Tensor[Any, Any], mask: Mask, padding: Mask, is_causal: bool) -> Tensor[Any, Any]:
        """The self-attention of ``x`` (its weights not asked for)."""
        out, _ = self.self_attn(
            x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=False, is_causal=is_causal
        )
        return out

    def _ff(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """The feed-forward network ``linear2(dropout(activation(linear1(x))))``; with the ReLU
        and a plain ``Linear`` with bias as ``linear1``, its first half is
        :func:`gradtape.ops.linalg.linear_relu` (one pass for the bias and the ReLU where
        nothing records, the same values)."""
        lin1 = self.linear1
        if self.activation is relu and lin1.__class__ is Linear and lin1.bias is not None:
            h = linear_relu(x, lin1.weight, lin1.bias)
        else:
            h = self.activation(lin1(x))
        y: Tensor[Any, Any] = self.linear2(self.dropout(h))
        return y


class TransformerEncoderLayer(_TransformerLayer[E]):
    """PyTorch's ``nn.TransformerEncoderLayer``: self-attention and a feed-forward network,
    each in a residual branch with a LayerNorm (Vaswani et al. 2017).

    Post-norm (default): ``x = norm1(x + dropout1(sa(x)))``, ``x = norm2(x + dropout2(ff(x)))``;
    pre-norm (``norm_first=True``, Xiong et al. 2020): ``x = x + dropout1(sa(norm1(x)))``,
    ``x = x + dropout2(ff(norm2(x)))``; ``sa`` is ``self_attn`` (a :class:`MultiheadAttention`),
    ``ff(x) = linear2(dropout(activation(linear1(x))))``.

    Args (PyTorch's, in its order):
        d_model: ``E``; nhead: heads (divides ``E``); dim_feedforward: the hidden size (2048).
        dropout: drop probability of the attention weights and the three dropouts (0.1).
        activation: ``"relu"`` (default), ``"gelu"`` (exact) or a callable (``gradtape.ops.gelu``,
            an ``nn.GELU()``, ...).
        layer_norm_eps: the norms' eps. batch_first: inputs ``(N, L, E)``; the default
            ``False`` is PyTorch's ``(L, N, E)``. norm_first: pre-norm. bias: biases in the
            linear layers, the attention and the norms.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters are named as PyTorch's (``self_attn.in_proj_weight``, ``linear1.weight``,
    ``norm1.weight``, ...), so checkpoints map one to one.

    Typed ``TransformerEncoderLayer[E]``, ``E`` the width ``d_model`` (annotate
    ``block: TransformerEncoderLayer[L[64]] = TransformerEncoderLayer(64, 4, dev=dev)``;
    unannotated it is ``TransformerEncoderLayer[int]``): shape-preserving,
    ``Tensor[Rank3[A, B, E], T] -> Tensor[Rank3[A, B, E], T]`` with the input's tape kind (in
    either layout); an input of another static width than ``E`` is a type error, an ``int``
    (dynamic) width on either side is checked at run time; an untyped input gives ``Tensor[Any, T]``.

    Raises:
        ValueError: ``nhead`` does not divide ``d_model``; an unknown activation name.
        Forward: ShapeError when ``src`` is not ``(L, N, E)`` / ``(N, L, E)`` / ``(L, E)`` or a
        mask does not fit (see :meth:`MultiheadAttention.forward`).
    """

    _op = "TransformerEncoderLayer"
    _attentions = ("self_attn",)
    _branches = 2

    @overload
    def forward(
        self, src: AnyShape, src_mask: Mask = None, src_key_padding_mask: Mask = None, is_causal: bool = False
    ) -> Any: ...
    @overload
    def forward(
        self,
        src: Tensor[Rank3[B, Lq, E], T],
        src_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        is_causal: bool = False,
    ) -> Tensor[Rank3[B, Lq, E], T]: ...
    @overload
    def forward(
        self,
        src: Tensor[Rank3[B, Lq, int], T],
        src_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        is_causal: bool = False,
    ) -> Tensor[Rank3[B, Lq, int], T]: ...
    @overload
    def forward(
        self: TransformerEncoderLayer[int],
        src: Tensor[Rank3[B, Lq, W], T],
        src_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        is_causal: bool = False,
    ) -> Tensor[Rank3[B, Lq, W], T]: ...
    @overload
    def forward(
        self,
        src: Tensor[AnyShape, T],
        src_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        is_causal: bool = False,
    ) -> Tensor[Any, T]: ...
    def forward(
        self, src: Any, src_mask: Mask = None, src_key_padding_mask: Mask = None, is_causal: bool = False
    ) -> Any:
        """``src`` of shape ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``, ``(L, E)``
        unbatched) to the same shape.

        Args:
            src_mask: ``(L, L)`` or ``(N * nhead, L, L)``; src_key_padding_mask: ``(N, L)``;
            is_causal: a hint that ``src_mask`` is causal (see :meth:`MultiheadAttention.forward`).
        """
        _check_input("TransformerEncoderLayer", "src", src, self.self_attn.embed_dim, self.batch_first)
        x = self._branch(src, self.norm1, self.dropout1, self._sa, src_mask, src_key_padding_mask, is_causal)
        return self._branch(x, self.norm2, self.dropout2, self._ff)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class TransformerDecoderLayer(_TransformerLayer[E]):
    """PyTorch's ``nn.TransformerDecoderLayer``: self-attention over ``tgt``, cross-attention
    to ``memory`` (the encoder's output) and a feed-forward network, each in a residual branch
    with a LayerNorm (Vaswani et al. 2017).

    Post-norm (default): ``x = norm1(x + dropout1(sa(x)))``,
    ``x = norm2(x + dropout2(mha(x, memory)))``, ``x = norm3(x + dropout3(ff(x)))``; pre-norm
    (``norm_first=True``): ``x = x + dropout1(sa(norm1(x)))``,
    ``x = x + dropout2(mha(norm2(x), memory))``, ``x = x + dropout3(ff(norm3(x)))``;
    ``ff(x) = linear2(dropout(activation(linear1(x))))``.

    Args: as :class:`TransformerEncoderLayer` (PyTorch's order and defaults).

    Parameters (PyTorch's names): ``self_attn.*``, ``multihead_attn.*``, ``linear1``,
    ``linear2``, ``norm1``, ``norm2``, ``norm3``.

    Raises:
        ValueError: ``nhead`` does not divide ``d_model``; an unknown activation name.
        Forward: ShapeError for inputs or masks of other shapes.
    """

    _op = "TransformerDecoderLayer"
    _attentions = ("self_attn", "multihead_attn")
    _branches = 3
    multihead_attn: MultiheadAttention[E]
    norm3: LayerNorm[E]
    dropout3: Dropout

    def _mha(
        self, x: Tensor[Any, Any], mem: Tensor[Any, Any], mask: Mask, padding: Mask, is_causal: bool
    ) -> Tensor[Any, Any]:
        """The cross-attention of ``x`` to ``mem``."""
        out, _ = self.multihead_attn(
            x, mem, mem, attn_mask=mask, key_padding_mask=padding, need_weights=False, is_causal=is_causal
        )
        return out

    def forward(  # type: ignore[override]  # PyTorch's signature: tgt and memory
        self,
        tgt: Tensor[Any, Any],
        memory: Tensor[Any, Any],
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor[Any, Any]:
        """``tgt (T, N, E)`` attending to ``memory (S, N, E)`` (``(N, T, E)``, ``(N, S, E)``
        with ``batch_first``; unbatched without ``N``) to ``tgt``'s shape.

        Args:
            tgt_mask: ``(T, T)`` or ``(N * nhead, T, T)``, the self-attention's mask (the
                causal one for autoregressive decoding: :meth:`Transformer.generate_square_subsequent_mask`).
            memory_mask: ``(T, S)`` or ``(N * nhead, T, S)``, the cross-attention's mask.
            tgt_key_padding_mask: ``(N, T)``; memory_key_padding_mask: ``(N, S)``.
            tgt_is_causal, memory_is_causal: hints as :meth:`MultiheadAttention.forward`'s ``is_causal``.
        """
        op = "TransformerDecoderLayer"
        e = self.self_attn.embed_dim
        _check_input(op, "tgt", tgt, e, self.batch_first)
        _check_input(op, "memory", memory, e, self.batch_first)
        if tgt.ndim != memory.ndim:
            raise ShapeError(f"{op}: tgt {tgt.shape} and memory {memory.shape} must both be batched or unbatched")
        x = self._branch(tgt, self.norm1, self.dropout1, self._sa, tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        x = self._branch(
            x, self.norm2, self.dropout2, self._mha, memory, memory_mask, memory_key_padding_mask, memory_is_causal
        )
        return self._branch(x, self.norm3, self.dropout3, self._ff)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


def _clones(op: str, layer: Any, cls: type, num_layers: int) -> ModuleList:
    """``num_layers`` deep copies of ``layer`` (independent parameters, equal initial values).

    Raises:
        TypeError: ``layer`` is not a ``cls``; ValueError: ``num_layers`` is negative or not an int.
    """
    if not isinstance(layer, cls):
        raise TypeError(f"{op}: expects a {cls.__name__}, got {type(layer).__name__}")
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
        raise ValueError(f"{op}: num_layers must be a non-negative int, got {num_layers!r}")
    return ModuleList([cast(Module, copy.deepcopy(layer)) for _ in range(num_layers)])


class _TransformerStack(Module, Generic[E]):
    """What :class:`TransformerEncoder` and :class:`TransformerDecoder` share: the input
    through each of ``layers`` in turn, then ``norm`` if given."""

    layers: ModuleList
    norm: Module | None

    def _through(self, x: Tensor[Any, Any], *args: Any) -> Tensor[Any, Any]:
        """``norm(layer_n(... layer_1(x, *args) ..., *args))`` (without ``norm`` when ``None``)."""
        out = x
        for layer in self.layers:
            out = layer(out, *args)
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerEncoder(_TransformerStack[E]):
    """PyTorch's ``nn.TransformerEncoder``: ``num_layers`` deep copies of ``encoder_layer``
    (``layers.0.*``, ``layers.1.*``, ... in the state dict; the layer passed in is not itself
    registered), applied in turn, then ``norm`` if given (its keys ``norm.*``).

    Args:
        encoder_layer: a :class:`TransformerEncoderLayer`; num_layers: how many copies.
        norm: an optional final layer (a :class:`LayerNorm` in PyTorch's ``nn.Transformer``).
        enable_nested_tensor, mask_check: accepted for PyTorch's signature; gradtape has no
            nested-tensor fast path (see the module docstring).

    Typed ``TransformerEncoder[E]`` after its layer; shape-preserving.

    Raises:
        TypeError: ``encoder_layer`` is not a TransformerEncoderLayer. ValueError: a negative
        ``num_layers``. Forward: as :class:`TransformerEncoderLayer`.
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer[E],
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        self.layers = _clones("TransformerEncoder", encoder_layer, TransformerEncoderLayer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    @overload
    def forward(
        self, src: AnyShape, mask: Mask = None, src_key_padding_mask: Mask = None, is_causal: bool | None = None
    ) -> Any: ...
    @overload
    def forward(
        self,
        src: Tensor[AnyShape, T],
        mask: Mask = None,
        src_key_padding_mask: Mask = None,
        is_causal: bool | None = None,
    ) -> Tensor[Any, T]: ...
    def forward(
        self, src: Any, mask: Mask = None, src_key_padding_mask: Mask = None, is_causal: bool | None = None
    ) -> Any:
        """``src`` through every layer with ``src_mask=mask``, ``src_key_padding_mask`` and
        ``is_causal``, then ``norm``; the output has ``src``'s shape."""
        return self._through(src, mask, src_key_padding_mask, bool(is_causal))

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class TransformerDecoder(_TransformerStack[E]):
    """PyTorch's ``nn.TransformerDecoder``: ``num_layers`` deep copies of ``decoder_layer``
    (``layers.0.*``, ...), each attending to ``memory``, then ``norm`` if given.

    Raises:
        TypeError: ``decoder_layer`` is not a TransformerDecoderLayer. ValueError: a negative
        ``num_layers``. Forward: as :class:`TransformerDecoderLayer`.
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer[E], num_layers: int, norm: Module | None = None) -> None:
        self.layers = _clones("TransformerDecoder", decoder_layer, TransformerDecoderLayer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(  # type: ignore[override]  # PyTorch's signature: tgt and memory
        self,
        tgt: Tensor[Any, Any],
        memory: Tensor[Any, Any],
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Any, Any]:
        """``tgt`` through every layer (arguments as :meth:`TransformerDecoderLayer.forward`),
        then ``norm``; the output has ``tgt``'s shape."""
        return self._through(
            tgt,
            memory,
            tgt_mask,
            memory_mask,
            tgt_key_padding_mask,
            memory_key_padding_mask,
            bool(tgt_is_causal),
            memory_is_causal,
        )

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class Transformer(Module, Generic[E]):
    """PyTorch's ``nn.Transformer`` (Vaswani et al. 2017): a :class:`TransformerEncoder` of
    ``num_encoder_layers`` layers with a final LayerNorm (``encoder.*``) and a
    :class:`TransformerDecoder` of ``num_decoder_layers`` (``decoder.*``); every parameter with
    more than one dim is re-initialised Xavier-uniform, as PyTorch's ``_reset_parameters``.

    ``forward(src, tgt, ...)``: ``memory = encoder(src, src_mask, src_key_padding_mask)``,
    ``decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)``.

    Args: PyTorch's (``d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
    dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
    custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True``),
    plus ``dev`` and ``dtype``.

    Typed ``Transformer[E]``, ``E`` the width ``d_model`` (annotate ``tr: Transformer[L[64]] =
    Transformer(64, 4, dev=dev)``; built without ``d_model``, ``Transformer[int]``): ``src``
    ``(S, N, E)`` and ``tgt`` ``(T, N, E)`` (either layout, or unbatched rank 2) give
    ``tgt``'s shape type with ``tgt``'s tape kind; a ``src`` or ``tgt`` of another static width
    than ``E`` is a type error, an ``int`` width is checked at run time.

    Raises:
        Forward: ShapeError when ``src`` and ``tgt`` differ in batch size or width ``d_model``.
    """

    @overload
    def __init__(
        self,
        d_model: E,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: Transformer[int],
        *,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    def __init__(
        self,
        d_model: Any = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias)
        self.encoder: Module
        self.decoder: Module
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            enc_layer = TransformerEncoderLayer(*args, dev=dev, dtype=dtype)
            enc_norm: LayerNorm[int] = LayerNorm(d_model, layer_norm_eps, bias=bias, dev=dev, dtype=dtype)
            self.encoder = TransformerEncoder(enc_layer, num_encoder_layers, enc_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            dec_layer = TransformerDecoderLayer(*args, dev=dev, dtype=dtype)
            dec_norm: LayerNorm[int] = LayerNorm(d_model, layer_norm_eps, bias=bias, dev=dev, dtype=dtype)
            self.decoder = TransformerDecoder(dec_layer, num_decoder_layers, dec_norm)
        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    @overload  # type: ignore[override]  # PyTorch's signature: src and tgt
    def forward(
        self,
        src: AnyShape,
        tgt: Any,
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Any: ...
    @overload
    def forward(
        self,
        src: Tensor[Rank3[X, N, E], T],
        tgt: Tensor[Rank3[Lq, B, E], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank3[Lq, B, E], T]: ...
    @overload
    def forward(  # type: ignore[overload-overlap]  # E = int: the next row's result, the same
        self,
        src: Tensor[Rank3[X, N, int], T],
        tgt: Tensor[Rank3[Lq, B, E], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank3[Lq, B, E], T]: ...
    @overload
    def forward(
        self,
        src: Tensor[Rank3[X, N, E], T],
        tgt: Tensor[Rank3[Lq, B, int], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank3[Lq, B, int], T]: ...
    @overload
    def forward(
        self,
        src: Tensor[Rank3[X, N, int], T],
        tgt: Tensor[Rank3[Lq, B, int], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank3[Lq, B, int], T]: ...
    @overload
    def forward(
        self: Transformer[int],
        src: Tensor[Rank3[X, N, W2], T],
        tgt: Tensor[Rank3[Lq, B, W], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank3[Lq, B, W], T]: ...
    @overload
    def forward(
        self,
        src: Tensor[Rank2[Lk, E], T],
        tgt: Tensor[Rank2[Lq, E], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank2[Lq, E], T]: ...
    @overload
    def forward(
        self,
        src: Tensor[Rank2[Lk, int], T],
        tgt: Tensor[Rank2[Lq, int], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank2[Lq, int], T]: ...
    @overload
    def forward(
        self: Transformer[int],
        src: Tensor[Rank2[Lk, W2], T],
        tgt: Tensor[Rank2[Lq, W], T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Rank2[Lq, W], T]: ...
    @overload
    def forward(
        self,
        src: Tensor[AnyShape, T],
        tgt: Tensor[Any, T],
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Any, T]: ...
    def forward(
        self,
        src: Any,
        tgt: Any,
        src_mask: Mask = None,
        tgt_mask: Mask = None,
        memory_mask: Mask = None,
        src_key_padding_mask: Mask = None,
        tgt_key_padding_mask: Mask = None,
        memory_key_padding_mask: Mask = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor[Any, Any]:
        """``src (S, N, E)``, ``tgt (T, N, E)`` (``(N, S, E)``, ``(N, T, E)`` with
        ``batch_first``) to ``(T, N, E)``; masks as :meth:`TransformerDecoderLayer.forward`
        (``src_mask (S, S)``, ``src_key_padding_mask (N, S)``).

        Raises:
            ShapeError: ``src`` and ``tgt`` differ in batch size, or a width is not ``d_model``.
        """
        op = "Transformer"
        for name, t in (("src", src), ("tgt", tgt)):
            _check_input(op, name, t, self.d_model, self.batch_first)
        b = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[b] != tgt.shape[b]):
            raise ShapeError(f"{op}: the batch number of src {src.shape} and tgt {tgt.shape} must be equal")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        out: Tensor[Any, Any] = self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )
        return out

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    @staticmethod
    def generate_square_subsequent_mask(
        sz: int, device: DeviceSpec = None, dtype: npt.DTypeLike | None = None, *, dev: AnyDevice | None = None
    ) -> Tensor[Any, Any]:
        """PyTorch's causal mask: a float ``(sz, sz)`` tensor, ``-inf`` above the diagonal
        (query ``i`` must not see key ``j > i``) and ``0`` elsewhere, of ``dtype`` (float32 by
        default) on ``device`` / ``dev`` (default :func:`gradtape.get_default_device`).
        Attention layers recognise it and run causal attention.

        Raises:
            ValueError: ``sz`` is not a non-negative int.
        """
        if isinstance(sz, bool) or not isinstance(sz, (int, np.integer)) or sz < 0:
            raise ValueError(f"generate_square_subsequent_mask: sz must be a non-negative int, got {sz!r}")
        d = pick_device("generate_square_subsequent_mask", device, dev)
        dt = np.dtype(np.float32 if dtype is None else dtype)
        m = np.where(np.tri(int(sz), dtype=np.bool_), 0.0, -np.inf).astype(dt)
        return Tensor(m, d)
