"""Attention layers: :class:`MultiHeadAttention` and :class:`TransformerEncoderLayer`
(Vaswani et al. 2017, "Attention Is All You Need"), with PyTorch's parameter layout."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Generic, cast, overload

import numpy as np
import numpy.typing as npt

from gradtape._typing import typed_as
from gradtape.devices.cpu import Cpu
from gradtape.errors import DTypeError, ShapeError
from gradtape.nn._signatures import attention as _sig
from gradtape.nn._typing import B, E, Lq, T, W
from gradtape.nn.activation import Dropout
from gradtape.nn.linear import Linear
from gradtape.nn.module import Module
from gradtape.nn.norm import LayerNorm
from gradtape.ops.attention import sdpa
from gradtape.ops.linalg import linear  # the unwrapped op: Module.__call__ checked the inputs
from gradtape.ops.shape import stack
from gradtape.shapes import AnyShape, Rank3
from gradtape.tape import NONE_TAPE, NoneTape, op_tape, record
from gradtape.tensor import Tensor

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer"]

Array = np.ndarray[Any, Any]

if TYPE_CHECKING:
    from gradtape.gradients import Gradients


def split_heads(y: Tensor[Any, Any], which: tuple[int, ...], num_heads: int) -> list[Tensor[Any, Any]]:
    """Split a packed in-projection ``y (B, L, 3E)`` into the heads ``(B, H, L, D)``
    (``D = E / H``) of its parts ``which`` (0: query, 1: key, 2: value): views of ``y``, as
    ``y.reshape(B, L, 3, H, D)[:, :, i].permute(0, 2, 1, 3)``.

    One recorded op for all the parts: its backward writes their gradients into one
    ``(B, L, 3, H, D)`` buffer (zeros in the parts without one), handed to ``y`` as its
    gradient; a slice op per part would allocate and add a zero buffer of ``y``'s full shape
    each. The second rule stacks the gradients in gradtape ops.

    Raises:
        ShapeError: ``y`` is not 3-D with a last dim divisible by ``3 * num_heads``.
    """
    yd = y.data
    if yd.ndim != 3 or yd.shape[2] % (3 * num_heads):
        raise ShapeError(f"MultiHeadAttention: packed projection {yd.shape} is not (B, L, 3 * {num_heads} * D)")
    b, n, e3 = yd.shape
    d = e3 // (3 * num_heads)
    y5 = yd.reshape(b, n, 3, num_heads, d)
    tape = op_tape(y)
    outs = [y._from_op(y5[:, :, i].transpose(0, 2, 1, 3), tape) for i in which]
    if tape is not NONE_TAPE:
        yid = y.id
        full = which == (0, 1, 2)

        def split_heads_backward(grads: Gradients, gs: list[Array | None]) -> None:
            buf = (np.empty if full and all(g is not None for g in gs) else np.zeros)(y5.shape, yd.dtype)
            for i, g in zip(which, gs, strict=True):
                if g is not None:
                    np.copyto(buf[:, :, i], g.transpose(0, 2, 1, 3))
            grads._accum(yid, buf.reshape(yd.shape))

        def split_heads_diff(gs: list[Any], rebuild: Any) -> list[tuple[int, Any]]:
            zero = gs[0]._like(np.zeros((b, num_heads, n, d), yd.dtype))
            parts = [zero, zero, zero]
            for i, g in zip(which, gs, strict=True):
                parts[i] = g
            g5 = stack([t.permute((0, 2, 1, 3)) for t in parts], axis=2)
            return [(yid, g5.reshape(yd.shape))]

        record(tape, list(outs), split_heads_backward, split_heads_diff)
    return outs


def _is_causal_block(keep: Array) -> bool:
    """Whether a boolean keep-mask (``True`` takes part) is the square causal one,
    ``tril(ones((L, L)))`` with only size-1 leading dims: then the attention runs with
    ``is_causal`` (same weights, exactly 0 above the diagonal), whose products skip the blocked
    upper half (``ops.attention``'s row blocks)."""
    if keep.dtype != np.bool_ or keep.ndim < 2 or keep.shape[-1] != keep.shape[-2] or keep.size != keep.shape[-1] ** 2:
        return False
    square = keep.reshape(keep.shape[-2:])
    return bool(np.array_equal(square, np.tri(square.shape[0], dtype=np.bool_)))


class MultiHeadAttention(Module, Generic[E]):
    """Multi-head scaled dot-product attention (Vaswani et al. 2017; PyTorch's
    ``nn.MultiheadAttention`` with ``batch_first=True``).

    For inputs ``q (B, Lq, E)``, ``k``, ``v (B, Lk, E)`` and ``H`` heads of size ``D = E / H``:
    ``[Q, K, V] = [q, k, v] @ in_proj_weight[i]^T + in_proj_bias[i]`` split into heads,
    ``A = softmax(Q K^T / sqrt(D) + mask)`` over the keys, dropout on ``A`` (training mode),
    ``y = concat_heads(A V) @ out_proj.weight^T + out_proj.bias``, shape ``(B, Lq, E)``.

    The heads are views of the packed projection (:func:`split_heads`, whose backward writes
    the three gradients into one ``(B, L, 3E)`` buffer), and the core
    ``dropout(softmax(...)) V`` is one fused op
    (:func:`gradtape.ops.attention.scaled_dot_product_attention`: BLAS products around one
    kernel pass for scale, mask and softmax, one for its backward).

    Args:
        embed_dim: ``E``.
        num_heads: ``H``, which must divide ``E``.
        dropout: drop probability on the attention weights (training mode only).
        bias: whether the projections have biases.
        dev: the device whose seeded generator initialises the parameters.
        dtype: float32 (default) or float64.

    Parameters (PyTorch's names and init): ``in_proj_weight (3E, E)``, Xavier-uniform
    (Glorot & Bengio 2010); ``in_proj_bias (3E,)`` zeros; ``out_proj`` a :class:`Linear`
    ``(E, E)`` with a zero bias.

    Typed ``MultiHeadAttention[E]``, ``E`` the width, inferred from ``embed_dim`` (annotate
    ``attn: MultiHeadAttention[L[64]] = MultiHeadAttention(64, 4, dev=dev)``; unannotated it
    is ``MultiHeadAttention[int]``): ``attn(q)`` (self-attention) maps
    ``Tensor[Rank3[B, Lq, E], T]`` to the same type; ``attn(q, k, v)`` takes ``k``, ``v`` of
    type ``Tensor[Rank3[B, Lk, E], T]`` (the same batch ``B`` and width ``E``, any length
    ``Lk``) and returns ``Tensor[Rank3[B, Lq, E], T]``, ``T`` the inputs' tape kind
    (``OwnedTape`` when any input owns a tape). An input of another static width than ``E`` is a type error;
    ``int`` (dynamic) widths are checked at run time instead: an input whose width is ``int``
    fits any layer, and a layer whose ``E`` is ``int`` takes any width, the output then
    having ``q``'s type. Untyped inputs give ``Tensor[Any, T]``.

    Raises:
        ValueError: ``num_heads`` does not divide ``embed_dim``. Forward: ShapeError when an
            input is not ``(B, L, E)`` or the batch sizes / key and value lengths differ.
    """

    def __init__(
        self,
        embed_dim: E,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        *,
        dev: Cpu,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        e = cast(int, embed_dim)  # E names the width at type level; an int at run time
        if num_heads < 1 or e % num_heads:
            raise ValueError(f"MultiHeadAttention: num_heads={num_heads} must divide embed_dim={embed_dim}")
        self.embed_dim, self.num_heads, self.head_dim = e, num_heads, e // num_heads
        bound = math.sqrt(6.0 / (e + 3 * e))
        self.in_proj_weight: Tensor[Any, NoneTape] = dev.rand((3 * e, e), -bound, bound, dtype)
        self.in_proj_bias: Tensor[Any, NoneTape] | None = dev.zeros((3 * e,), dtype) if bias else None
        self.out_proj: Linear[E, E] = Linear(embed_dim, embed_dim, bias, dev=dev, dtype=dtype)
        if self.out_proj.bias is not None:
            self.out_proj.bias.data[...] = 0
        self.dropout = Dropout(dropout)

    def _heads(self, x: Tensor[Any, Any], which: tuple[int, ...]) -> list[Tensor[Any, Any]]:
        """Project ``x (B, L, E)`` with the full in-projection and return the heads
        ``(B, H, L, D)`` of the projections ``which`` (0: query, 1: key, 2: value). The full
        weight is used (then the output split, :func:`split_heads`) so the gradient reaches
        the parameter."""
        y = linear(x, self.in_proj_weight, self.in_proj_bias)
        return split_heads(y, which, self.num_heads)

    def _check(self, name: str, t: Tensor[Any, Any]) -> None:
        if t.ndim != 3 or t.shape[2] != self.embed_dim:
            raise ShapeError(f"MultiHeadAttention: {name} must be (B, L, {self.embed_dim}), got shape {t.shape}")

    # The overloads (scripts/gen_shape_overloads.py, mha_forward_block): self- and
    # cross-attention for the typed width E, for inputs of a run-time int width and for a
    # MultiHeadAttention[int]; the output owns a tape when any input does.
    @typed_as(_sig.forward)
    def forward(self, q: Any, k: Any = None, v: Any = None, attn_mask: npt.ArrayLike | None = None) -> Any:
        """Attention of ``q`` over ``k``/``v`` (both default to ``q``: self-attention).

        Args:
            q: ``(B, Lq, E)``; k, v: ``(B, Lk, E)``.
            attn_mask: ``None``, a boolean array broadcastable to ``(B, H, Lq, Lk)`` where
                ``True`` *blocks* a position (PyTorch's convention), or a float array added
                to the scores. A blocked key gets attention weight exactly 0 and so no
                gradient through that query; a causal (autoregressive) mask is
                ``np.triu(np.ones((L, L), bool), k=1)`` (query ``i`` sees keys ``0..i``). A
                query whose keys are all blocked gets NaN, as in PyTorch.

        Returns:
            ``(B, Lq, E)``, the tape of the inputs.

        Raises:
            ShapeError: an input is not ``(B, L, E)``, the batch sizes or key and value
                lengths differ, or ``attn_mask`` does not broadcast to ``(B, H, Lq, Lk)``.
            DTypeError: ``attn_mask`` is neither bool nor float (an int or uint8 0/1 mask,
                which PyTorch also rejects: adding it would not mask anything).
        """
        k = q if k is None else k
        v = k if v is None else v
        for name, t in (("q", q), ("k", k), ("v", v)):
            self._check(name, t)
        if k.shape[:2] != v.shape[:2] or q.shape[0] != k.shape[0]:
            raise ShapeError(f"MultiHeadAttention: shapes q {q.shape}, k {k.shape}, v {v.shape} do not fit")
        if q is k and k is v:
            qh, kh, vh = self._heads(q, (0, 1, 2))
        elif k is v:
            (qh,) = self._heads(q, (0,))
            kh, vh = self._heads(k, (1, 2))
        else:
            qh, kh, vh = self._heads(q, (0,))[0], self._heads(k, (1,))[0], self._heads(v, (2,))[0]
        mask: Array | None = None
        if attn_mask is not None:
            m = np.asarray(attn_mask.data if isinstance(attn_mask, Tensor) else attn_mask)
            if m.dtype.kind not in "bf":  # a 0/1 int mask would be added, not applied
                raise DTypeError(
                    f"MultiHeadAttention: attn_mask must be bool (True blocks a key) or float (added to "
                    f"the scores), got dtype {m.dtype} of shape {m.shape}; for a 0/1 mask pass mask.astype(bool)"
                )
            full = (q.shape[0], self.num_heads, q.shape[1], k.shape[1])
            try:
                if np.broadcast_shapes(m.shape, full) != full:
                    raise ValueError
            except ValueError:
                raise ShapeError(
                    f"MultiHeadAttention: attn_mask of shape {m.shape} does not broadcast to the "
                    f"scores (B, H, Lq, Lk) = {full}"
                ) from None
            mask = ~m if m.dtype == np.bool_ else m  # SDPA's convention: True takes part
        causal = mask is not None and _is_causal_block(mask)
        if causal:  # the same weights; computed from indices, the products skip the upper half
            mask = None
        # scale, mask, softmax, dropout and the products in one fused op; a query whose keys
        # are all blocked gets NaN, as nn.MultiheadAttention (need_weights=True) gives
        p_drop = self.dropout.p if self.dropout.training else 0.0
        attn = sdpa(qh, kh, vh, mask, causal, p_drop, None, None, True, "MultiHeadAttention")
        out: Tensor[Any, Any] = attn.permute((0, 2, 1, 3)).reshape((q.shape[0], q.shape[1], self.embed_dim))
        return self.out_proj(out)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


class TransformerEncoderLayer(Module, Generic[E]):
    """A Transformer encoder block (Vaswani et al. 2017; PyTorch's
    ``nn.TransformerEncoderLayer`` with ``batch_first=True`` and ReLU).

    Post-norm (default): ``x = norm1(x + drop(attn(x)))``, ``x = norm2(x + drop(ff(x)))``;
    pre-norm (``norm_first=True``, Xiong et al. 2020): ``x = x + drop(attn(norm1(x)))``,
    ``x = x + drop(ff(norm2(x)))``; with ``ff(x) = linear2(drop(relu(linear1(x))))``.

    Args:
        d_model: ``E``; nhead: heads (divides ``E``); dim_feedforward: the hidden size.
        dropout: drop probability (attention weights and the three dropouts).
        layer_norm_eps: the norms' eps; norm_first: pre-norm instead of post-norm.
        dev: the device whose seeded generator initialises the parameters.
        dtype: float32 (default) or float64.

    Parameters are named as PyTorch's (``self_attn.in_proj_weight``, ``linear1.weight``,
    ``norm1.weight``, ...), so checkpoints map one to one.

    Typed ``TransformerEncoderLayer[E]``, ``E`` the width ``d_model`` (annotate
    ``block: TransformerEncoderLayer[L[64]] = TransformerEncoderLayer(64, 4, dev=dev)``;
    unannotated it is ``TransformerEncoderLayer[int]``): shape-preserving,
    ``Tensor[Rank3[B, L, E], T] -> Tensor[Rank3[B, L, E], T]`` with the input's tape kind; an
    input of another static width than ``E`` is a type error, an ``int`` (dynamic) width on
    either side is checked at run time; an untyped input gives ``Tensor[Any, T]``.

    Raises:
        ValueError: ``nhead`` does not divide ``d_model``. Forward: ShapeError when ``x`` is
            not ``(B, L, E)``.
    """

    def __init__(
        self,
        d_model: E,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        layer_norm_eps: float = 1e-5,
        norm_first: bool = False,
        *,
        dev: Cpu,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        self.self_attn: MultiHeadAttention[E] = MultiHeadAttention(d_model, nhead, dropout, dev=dev, dtype=dtype)
        self.linear1: Linear[E, int] = Linear(d_model, dim_feedforward, dev=dev, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2: Linear[int, E] = Linear(dim_feedforward, d_model, dev=dev, dtype=dtype)
        self.norm_first = norm_first
        self.norm1: LayerNorm[E] = LayerNorm(d_model, layer_norm_eps, dev=dev, dtype=dtype)
        self.norm2: LayerNorm[E] = LayerNorm(d_model, layer_norm_eps, dev=dev, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def _ff(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return self.dropout2(self.linear2(self.dropout(self.linear1(x).relu())))

    @overload
    def forward(self, x: AnyShape, attn_mask: npt.ArrayLike | None = None) -> Any: ...
    @overload
    def forward(
        self, x: Tensor[Rank3[B, Lq, E], T], attn_mask: npt.ArrayLike | None = None
    ) -> Tensor[Rank3[B, Lq, E], T]: ...
    @overload
    def forward(
        self, x: Tensor[Rank3[B, Lq, int], T], attn_mask: npt.ArrayLike | None = None
    ) -> Tensor[Rank3[B, Lq, int], T]: ...
    @overload
    def forward(
        self: TransformerEncoderLayer[int], x: Tensor[Rank3[B, Lq, W], T], attn_mask: npt.ArrayLike | None = None
    ) -> Tensor[Rank3[B, Lq, W], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T], attn_mask: npt.ArrayLike | None = None) -> Tensor[Any, T]: ...
    def forward(self, x: Any, attn_mask: npt.ArrayLike | None = None) -> Any:
        """``(B, L, E) -> (B, L, E)``; ``attn_mask`` as :meth:`MultiHeadAttention.forward`."""
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.self_attn(h, h, h, attn_mask))
            out: Tensor[Any, Any] = x + self._ff(self.norm2(x))
            return out
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, attn_mask)))
        y: Tensor[Any, Any] = self.norm2(x + self._ff(x))
        return y

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward
