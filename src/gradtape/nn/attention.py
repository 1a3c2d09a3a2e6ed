"""Attention layers: :class:`MultiHeadAttention` and :class:`TransformerEncoderLayer`
(Vaswani et al. 2017, "Attention Is All You Need"), with PyTorch's parameter layout."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from gradtape.devices.cpu import Cpu
from gradtape.errors import ShapeError
from gradtape.nn.activation import Dropout
from gradtape.nn.linear import Linear
from gradtape.nn.module import Module
from gradtape.nn.norm import LayerNorm
from gradtape.ops import linear
from gradtape.tape import NoneTape
from gradtape.tensor import Tensor

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer"]


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention (Vaswani et al. 2017; PyTorch's
    ``nn.MultiheadAttention`` with ``batch_first=True``).

    For inputs ``q (B, Lq, E)``, ``k``, ``v (B, Lk, E)`` and ``H`` heads of size ``D = E / H``:
    ``[Q, K, V] = [q, k, v] @ in_proj_weight[i]^T + in_proj_bias[i]`` split into heads,
    ``A = softmax(Q K^T / sqrt(D) + mask)`` over the keys, dropout on ``A`` (training mode),
    ``y = concat_heads(A V) @ out_proj.weight^T + out_proj.bias``, shape ``(B, Lq, E)``.

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

    Raises:
        ValueError: ``num_heads`` does not divide ``embed_dim``. Forward: ShapeError when an
            input is not ``(B, L, E)`` or the batch sizes / key and value lengths differ.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        *,
        dev: Cpu,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        if num_heads < 1 or embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: num_heads={num_heads} must divide embed_dim={embed_dim}")
        e = embed_dim
        self.embed_dim, self.num_heads, self.head_dim = e, num_heads, e // num_heads
        bound = math.sqrt(6.0 / (e + 3 * e))
        self.in_proj_weight: Tensor[Any, NoneTape] = dev.rand((3 * e, e), -bound, bound, dtype)
        self.in_proj_bias: Tensor[Any, NoneTape] | None = dev.zeros((3 * e,), dtype) if bias else None
        self.out_proj = Linear(e, e, bias, dev=dev, dtype=dtype)
        if self.out_proj.bias is not None:
            self.out_proj.bias.data[...] = 0
        self.dropout = Dropout(dropout)

    def _heads(self, x: Tensor[Any, Any], which: tuple[int, ...]) -> list[Tensor[Any, Any]]:
        """Project ``x (B, L, E)`` with the full in-projection and return the heads
        ``(B, H, L, D)`` of the projections ``which`` (0: query, 1: key, 2: value). The full
        weight is used (then the output sliced) so the gradient reaches the parameter."""
        b, n, _ = x.shape
        y = linear(x, self.in_proj_weight, self.in_proj_bias).reshape((b, n, 3, self.num_heads, self.head_dim))
        return [y[:, :, i].permute((0, 2, 1, 3)) for i in which]

    def _check(self, name: str, t: Tensor[Any, Any]) -> None:
        if t.ndim != 3 or t.shape[2] != self.embed_dim:
            raise ShapeError(f"MultiHeadAttention: {name} must be (B, L, {self.embed_dim}), got shape {t.shape}")

    def forward(
        self,
        q: Tensor[Any, Any],
        k: Tensor[Any, Any] | None = None,
        v: Tensor[Any, Any] | None = None,
        attn_mask: npt.ArrayLike | None = None,
    ) -> Tensor[Any, Any]:
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
        scores = (qh @ kh.permute((0, 1, 3, 2))) * (1.0 / math.sqrt(self.head_dim))
        if attn_mask is not None:
            m = np.asarray(attn_mask)
            add = np.where(m, -np.inf, 0.0) if m.dtype == np.bool_ else m
            try:
                full = np.broadcast_to(add.astype(q.dtype), scores.shape)
            except ValueError:
                raise ShapeError(
                    f"MultiHeadAttention: attn_mask of shape {m.shape} does not broadcast to the "
                    f"scores (B, H, Lq, Lk) = {scores.shape}"
                ) from None
            scores = scores + q._like(full.copy())
        attn = self.dropout(scores.softmax(-1))
        out = (attn @ vh).permute((0, 2, 1, 3)).reshape((q.shape[0], q.shape[1], self.embed_dim))
        return self.out_proj(out)

    def __call__(
        self,
        q: Tensor[Any, Any],
        k: Tensor[Any, Any] | None = None,
        v: Tensor[Any, Any] | None = None,
        attn_mask: npt.ArrayLike | None = None,
    ) -> Tensor[Any, Any]:
        return self.forward(q, k, v, attn_mask)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


class TransformerEncoderLayer(Module):
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

    Raises:
        ValueError: ``nhead`` does not divide ``d_model``. Forward: ShapeError when ``x`` is
            not ``(B, L, E)``.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        layer_norm_eps: float = 1e-5,
        norm_first: bool = False,
        *,
        dev: Cpu,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout, dev=dev, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, dev=dev, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, dev=dev, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, dev=dev, dtype=dtype)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, dev=dev, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def _ff(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return self.dropout2(self.linear2(self.dropout(self.linear1(x).relu())))

    def forward(self, x: Tensor[Any, Any], attn_mask: npt.ArrayLike | None = None) -> Tensor[Any, Any]:
        """``(B, L, E) -> (B, L, E)``; ``attn_mask`` as :meth:`MultiHeadAttention.forward`."""
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.self_attn(h, h, h, attn_mask))
            out: Tensor[Any, Any] = x + self._ff(self.norm2(x))
            return out
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, attn_mask)))
        y: Tensor[Any, Any] = self.norm2(x + self._ff(x))
        return y

    def __call__(self, x: Tensor[Any, Any], attn_mask: npt.ArrayLike | None = None) -> Tensor[Any, Any]:
        return self.forward(x, attn_mask)
