"""Attention layers: :class:`MultiHeadAttention` and :class:`TransformerEncoderLayer`
(Vaswani et al. 2017, "Attention Is All You Need"), with PyTorch's parameter layout."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Generic, cast

import numpy as np
import numpy.typing as npt

from gradtape._typing import typed_as
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.devices.kernels import attention as _ka
from gradtape.errors import DTypeError, ShapeError
from gradtape.nn._signatures import attention as _sig
from gradtape.nn._typing import E
from gradtape.nn.activation import Dropout
from gradtape.nn.linear import Linear
from gradtape.nn.module import Module
from gradtape.ops.attention import packed_self_attention, sdpa
from gradtape.ops.linalg import linear  # the unwrapped op: Module.__call__ checked the inputs
from gradtape.ops.nn import dropout
from gradtape.ops.shape import stack
from gradtape.tape import NONE_TAPE, NoneTape, op_tape, record
from gradtape.tensor import Tensor

__all__ = ["MultiHeadAttention", "MultiheadAttention"]

Array = np.ndarray[Any, Any]

if TYPE_CHECKING:
    from gradtape.gradients import Gradients


def split_heads(
    y: Tensor[Any, Any],
    which: tuple[int, ...],
    num_heads: int,
    parts: int = 3,
    batch_first: bool = True,
    op: str = "MultiHeadAttention",
) -> list[Tensor[Any, Any]]:
    """Split a packed in-projection ``y`` into the heads ``(B, H, L, D)`` (``D = E / H``) of
    its parts ``which`` (of ``parts``; for the packed ``3E`` projection 0: query, 1: key,
    2: value): views of ``y``. ``y`` is ``(B, L, parts * E)`` (``batch_first``), part ``i``
    the heads ``y.reshape(B, L, parts, H, D)[:, :, i].permute(0, 2, 1, 3)``; or
    ``(L, B, parts * E)``, part ``i`` ``y.reshape(L, B, parts, H, D)[:, :, i].permute(1, 2, 0, 3)``
    (PyTorch's sequence-first layout, split without a copy of the input).

    One recorded op for all the parts: its backward writes their gradients into one
    ``(.., .., parts, H, D)`` buffer (zeros in the parts without one), handed to ``y`` as its
    gradient; a slice op per part would allocate and add a zero buffer of ``y``'s full shape
    each. The second rule stacks the gradients in gradtape ops.

    Raises:
        ShapeError: ``y`` is not 3-D with a last dim divisible by ``parts * num_heads`` (the
            message starts with ``op``).
    """
    yd = y.data
    if yd.ndim != 3 or yd.shape[2] % (parts * num_heads):
        raise ShapeError(f"{op}: packed projection {yd.shape} is not (B, L, {parts} * {num_heads} * D)")
    n0, n1, width = yd.shape
    d = width // (parts * num_heads)
    y5 = yd.reshape(n0, n1, parts, num_heads, d)
    perm, inv = ((0, 2, 1, 3), (0, 2, 1, 3)) if batch_first else ((1, 2, 0, 3), (2, 0, 1, 3))
    tape = op_tape(y)
    outs = [y._from_op(y5[:, :, i].transpose(perm), tape) for i in which]
    if tape is not NONE_TAPE:
        yid = y.id
        full = len(which) == parts

        def split_heads_backward(grads: Gradients, gs: list[Array | None]) -> None:
            alloc = _arrays.empty if full and all(g is not None for g in gs) else _arrays.zeros
            buf = alloc(y5.shape, yd.dtype, yd)
            for i, g in zip(which, gs, strict=True):
                if g is not None:
                    np.copyto(buf[:, :, i], g.transpose(inv))
            grads._accum(yid, buf.reshape(yd.shape))

        def split_heads_diff(gs: list[Any], rebuild: Any) -> list[tuple[int, Any]]:
            zero = gs[0]._like(_arrays.zeros(outs[0].shape, yd.dtype, yd))
            pieces = [zero] * parts
            for i, g in zip(which, gs, strict=True):
                pieces[i] = g
            g5 = stack([t.permute(inv) for t in pieces], axis=2)
            return [(yid, g5.reshape(yd.shape))]

        record(tape, list(outs), split_heads_backward, split_heads_diff)
    return outs


def _is_causal_block(mask: Array) -> bool:
    """Whether a mask in SDPA's convention is the square causal one with only size-1 leading
    dims: the boolean keep-mask ``tril(ones((L, L)))`` (``True`` takes part) or the float
    ``0 / -inf`` one (PyTorch's ``generate_square_subsequent_mask``). Then the attention runs
    with ``is_causal`` (same weights, exactly 0 above the diagonal), whose products skip the
    blocked upper half (``ops.attention``'s row blocks)."""
    if mask.dtype.kind not in "bf" or mask.ndim < 2 or mask.shape[-1] != mask.shape[-2]:
        return False
    if mask.size != mask.shape[-1] ** 2:
        return False
    square = mask.reshape(mask.shape[-2:])
    tri = np.tri(square.shape[0], dtype=np.bool_)
    if mask.dtype == np.bool_:
        return bool(np.array_equal(square, tri))
    return bool(np.array_equal(square, np.where(tri, 0.0, -np.inf)))


def _fused_self_attention(
    op: str, y: Tensor[Any, Any], heads: int, batch_first: bool, mask: Array | None, p_drop: float, nan_rows: bool
) -> Tensor[Any, Any] | None:
    """Self-attention's merged heads from the packed projection ``y`` through
    :func:`gradtape.ops.attention.packed_self_attention` (no copy into or out of the heads), or
    ``None`` where it does not run: dropout, a mask (SDPA's convention) other than the square
    causal one, or an array its kernels do not take (a GPU array, a machine whose products run
    on oneDNN: :func:`gradtape.devices.kernels.attention.packed_attention_runs`)."""
    if p_drop > 0.0 or (mask is not None and not _is_causal_block(mask)):
        return None
    if not _ka.packed_attention_runs(y.data):
        return None
    out: Tensor[Any, Any] = packed_self_attention(y, heads, batch_first, mask is not None, nan_rows, op)
    return out


def _attend(
    op: str,
    qh: Tensor[Any, Any],
    kh: Tensor[Any, Any],
    vh: Tensor[Any, Any],
    mask: Array | None,
    p_drop: float,
    need_weights: bool,
    nan_rows: bool,
) -> tuple[Tensor[Any, Any], Tensor[Any, Any] | None]:
    """The attention core of both attention layers, on heads ``qh (B, H, Lq, D)``,
    ``kh (B, H, Lk, D)``, ``vh (B, H, Lk, Dv)``: ``A = softmax(Q K^T / sqrt(D) + mask)``,
    dropout ``p_drop`` on ``A``, returns ``(A_d V (B, H, Lq, Dv), A_d or None)``.

    ``mask`` is in SDPA's convention (bool: ``True`` takes part; float: added), broadcastable
    to ``(B, H, Lq, Lk)``; the square causal mask runs as ``is_causal`` (:func:`_is_causal_block`).
    Without ``need_weights`` this is the fused
    :func:`gradtape.ops.attention.scaled_dot_product_attention` (fully masked rows: NaN with
    ``nan_rows``, else 0); with it, the same formula in recorded gradtape ops
    (``matmul``, ``softmax``, ``dropout``), so the weights are a differentiable output
    (fully masked rows: NaN, as PyTorch's ``need_weights=True`` path).
    """
    causal = mask is not None and _is_causal_block(mask)
    if causal:  # the same weights; computed from indices, the products skip the upper half
        mask = None
    if not need_weights:
        out: Tensor[Any, Any] = sdpa(qh, kh, vh, mask, causal, p_drop, None, None, nan_rows, op)
        return out, None
    if qh.dtype != kh.dtype or qh.dtype != vh.dtype:
        raise DTypeError(f"{op}: query, key and value must share a dtype, got {qh.dtype}, {kh.dtype}, {vh.dtype}")
    dt = qh.dtype
    lq, lk = qh.shape[-2], kh.shape[-2]
    scores = (qh @ kh.permute((0, 1, 3, 2))) * (1.0 / math.sqrt(qh.shape[-1]) if qh.shape[-1] else 1.0)
    add: Array | None = None
    if causal:
        add = np.where(np.tri(lq, lk, dtype=np.bool_), dt.type(0), dt.type(-np.inf))
    elif mask is not None:
        add = np.where(mask, dt.type(0), dt.type(-np.inf)) if mask.dtype == np.bool_ else mask.astype(dt)
    if add is not None:
        scores = scores + qh._like(np.ascontiguousarray(add))
    weights = scores.softmax(-1)
    if p_drop > 0.0:
        weights = dropout(weights, p_drop)
    return weights @ vh, weights


class MultiHeadAttention(Module, Generic[E]):
    """Multi-head scaled dot-product attention (Vaswani et al. 2017), dfdx-style: batch-first,
    returns one tensor.

    How it differs from :class:`MultiheadAttention` (PyTorch's ``nn.MultiheadAttention``,
    lower-case h), which shares its machinery: inputs are always ``(B, L, E)`` (PyTorch's
    default is ``(L, B, E)``); ``k`` and ``v`` default to ``q``; the result is the output
    tensor alone, never ``(output, weights)``; ``attn_mask`` may be anything broadcastable to
    ``(B, H, Lq, Lk)`` (PyTorch: ``(Lq, Lk)`` or ``(B * H, Lq, Lk)``), and there is no
    ``key_padding_mask`` (fold it into ``attn_mask``), no ``kdim``/``vdim``, no weights; a
    query whose keys are all blocked gives NaN. The parameters and their names are the same.

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
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
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
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
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

    def _mask(self, attn_mask: Any, q: Tensor[Any, Any], k: Tensor[Any, Any]) -> Array | None:
        """``attn_mask`` (``True`` blocks a key) checked and turned into SDPA's convention
        (``True`` takes part); float masks as they are; ``None`` stays ``None``.

        Raises:
            DTypeError: a mask neither bool nor float (a 0/1 int mask would be added, not applied).
            ShapeError: it does not broadcast to the scores ``(B, H, Lq, Lk)``.
        """
        if attn_mask is None:
            return None
        m = _as_array(attn_mask.data if isinstance(attn_mask, Tensor) else attn_mask)
        if m.dtype.kind not in "bf":
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
        return ~m if m.dtype == np.bool_ else m

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
        mask = self._mask(attn_mask, q, k)
        p_drop = self.dropout.p if self.dropout.training else 0.0
        if q is k and k is v:
            y = linear(q, self.in_proj_weight, self.in_proj_bias)
            fused = _fused_self_attention("MultiHeadAttention", y, self.num_heads, True, mask, p_drop, True)
            if fused is not None:
                return self.out_proj(fused)
            qh, kh, vh = split_heads(y, (0, 1, 2), self.num_heads)
        elif k is v:
            (qh,) = self._heads(q, (0,))
            kh, vh = self._heads(k, (1, 2))
        else:
            qh, kh, vh = self._heads(q, (0,))[0], self._heads(k, (1,))[0], self._heads(v, (2,))[0]
        # scale, mask, softmax, dropout and the products in one fused op; a query whose keys
        # are all blocked gets NaN, as nn.MultiheadAttention (need_weights=True) gives
        attn, _ = _attend("MultiHeadAttention", qh, kh, vh, mask, p_drop, False, True)
        out: Tensor[Any, Any] = attn.permute((0, 2, 1, 3)).reshape((q.shape[0], q.shape[1], self.embed_dim))
        return self.out_proj(out)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


def _mask_data(op: str, name: str, m: Any) -> Array:
    """A user's mask (numpy array, array-like or Tensor) as an array; bool or float only.

    Raises:
        DTypeError: another dtype (an int or uint8 0/1 mask, which PyTorch rejects too).
    """
    a = _as_array(m.data if isinstance(m, Tensor) else m)
    if a.dtype.kind not in "bf":
        raise DTypeError(
            f"{op}: {name} must be bool (True blocks a key) or float (added to the scores), got dtype "
            f"{a.dtype} of shape {a.shape}; for a 0/1 mask pass mask.astype(bool)"
        )
    return a


def _pytorch_masks(
    op: str,
    attn_mask: Any,
    key_padding_mask: Any,
    n: int,
    h: int,
    lq: int,
    lk: int,
    unbatched: bool,
    dt: np.dtype[Any],
) -> Array | None:
    """PyTorch's ``attn_mask`` (``(Lq, Lk)`` or ``(N * H, Lq, Lk)``; unbatched ``(H, Lq, Lk)``)
    and ``key_padding_mask`` (``(N, Lk)``; unbatched ``(Lk,)``), ``True`` blocking or float
    added, merged into one mask in SDPA's convention broadcastable to ``(N, H, Lq, Lk)``: both
    bool gives the keep-mask ``~(attn_mask | key_padding_mask)``, else the sum of the two as
    floats (a bool one as ``0 / -inf``), as PyTorch merges them.

    Raises:
        ShapeError: a mask of another shape (the message names the expected one).
        DTypeError: a mask neither bool nor float.
    """
    masks: list[Array] = []
    if attn_mask is not None:
        a = _mask_data(op, "attn_mask", attn_mask)
        if a.shape == (lq, lk):
            masks.append(a[None, None])
        elif a.ndim == 3 and a.shape == (n * h, lq, lk):
            masks.append(a.reshape(n, h, lq, lk))
        else:
            lead = f"{h}" if unbatched else f"{n} * {h}"
            raise ShapeError(
                f"{op}: attn_mask of shape {a.shape} should be (L, S) = ({lq}, {lk}) or "
                f"(N * num_heads, L, S) = ({lead}, {lq}, {lk})"
            )
    if key_padding_mask is not None:
        kp = _mask_data(op, "key_padding_mask", key_padding_mask)
        want_kp = (lk,) if unbatched else (n, lk)
        if kp.shape != want_kp:
            raise ShapeError(f"{op}: key_padding_mask of shape {kp.shape} should be (N, S) = {want_kp}")
        masks.append(kp.reshape(n, 1, 1, lk))
    if not masks:
        return None
    if all(m.dtype == np.bool_ for m in masks):
        blocked = masks[0] if len(masks) == 1 else masks[0] | masks[1]
        return ~blocked
    add = [np.where(m, dt.type(-np.inf), dt.type(0)) if m.dtype == np.bool_ else m.astype(dt) for m in masks]
    return add[0] if len(add) == 1 else add[0] + add[1]


class MultiheadAttention(Module, Generic[E]):
    """PyTorch's ``nn.MultiheadAttention``: its constructor, call, results, parameter names
    and state-dict keys (Vaswani et al. 2017, "Attention Is All You Need").

    For ``query (L, N, E)``, ``key (S, N, kdim)``, ``value (S, N, vdim)`` (``(N, L, E)`` ...
    with ``batch_first=True``; ``(L, E)`` ... unbatched) and ``H`` heads of size ``D = E / H``:
    ``Q = query W_q^T + b_q``, ``K = key W_k^T + b_k``, ``V = value W_v^T + b_v`` split into
    heads, ``A = softmax(Q K^T / sqrt(D) + mask)`` over the keys, dropout on ``A`` (training
    mode only), ``attn_output = concat_heads(A V) @ out_proj.weight^T + out_proj.bias``, of
    ``query``'s shape; ``attn_weights`` is ``A`` (after dropout, as PyTorch), ``(N, L, S)``
    averaged over the heads or ``(N, H, L, S)``.

    Parameters (PyTorch's names, order and init): ``in_proj_weight (3E, E)`` (Xavier-uniform,
    Glorot & Bengio 2010) holding ``W_q, W_k, W_v`` when ``kdim == vdim == E``, else
    ``q_proj_weight (E, E)``, ``k_proj_weight (E, kdim)``, ``v_proj_weight (E, vdim)`` (each
    Xavier-uniform) and ``in_proj_weight`` None; ``in_proj_bias (3E,)`` zeros (None without
    ``bias``); ``out_proj``, a :class:`Linear` ``(E, E)`` with PyTorch's Linear init and a
    zero bias. A PyTorch ``state_dict`` loads with :meth:`Module.load_state_dict`.

    Implementation: it shares :class:`MultiHeadAttention`'s machinery: the packed projection
    is split into heads without a copy (:func:`split_heads`, in either layout) and, with
    ``need_weights=False``, the core is the fused
    :func:`gradtape.ops.attention.scaled_dot_product_attention`. With ``need_weights=True``
    (PyTorch's default) the weights are an output, so the core runs as separate recorded ops
    (matmul, softmax, dropout): pass ``need_weights=False`` when the weights are not used, as
    PyTorch's documentation advises for its fast path too.

    Args:
        embed_dim: ``E``. num_heads: ``H``, which must divide ``E``.
        dropout: drop probability on the attention weights (training mode only).
        bias: whether the in- and out-projections have biases.
        add_bias_kv, add_zero_attn: PyTorch's extra key/value rows; only ``False`` is
            supported (``NotImplementedError`` otherwise).
        kdim, vdim: the key's and value's widths (default ``E``).
        batch_first: inputs ``(N, L, E)`` instead of PyTorch's default ``(L, N, E)``.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Typed ``MultiheadAttention[E]``, ``E`` the width inferred from ``embed_dim``; the call is
    typed simply (tensors in, ``tuple[Tensor, Tensor | None]`` out), its shapes are checked at
    run time.

    Raises:
        ValueError: ``num_heads`` does not divide ``embed_dim``, or a width is not positive.
        NotImplementedError: ``add_bias_kv`` or ``add_zero_attn``.
        Forward: see :meth:`forward`.
    """

    def __init__(
        self,
        embed_dim: E,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        e = cast(int, embed_dim)  # E names the width at type level; an int at run time
        kd = e if kdim is None else kdim
        vd = e if vdim is None else vdim
        if min(e, kd, vd) < 1:
            raise ValueError(f"MultiheadAttention: embed_dim={e}, kdim={kd}, vdim={vd} must be positive")
        if num_heads < 1 or e % num_heads:
            raise ValueError(f"MultiheadAttention: num_heads={num_heads} must divide embed_dim={embed_dim}")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError(
                "MultiheadAttention: add_bias_kv=True and add_zero_attn=True are not supported "
                f"(got add_bias_kv={add_bias_kv}, add_zero_attn={add_zero_attn})"
            )
        if isinstance(dropout, bool) or not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be a probability in [0, 1], got {dropout!r}")
        self.embed_dim, self.kdim, self.vdim = e, kd, vd
        self.num_heads, self.head_dim = num_heads, e // num_heads
        self.dropout = float(dropout)
        self.batch_first = batch_first
        self._qkv_same_embed_dim = kd == e and vd == e
        self.in_proj_weight: Tensor[Any, NoneTape] | None
        self.q_proj_weight: Tensor[Any, NoneTape] | None
        self.k_proj_weight: Tensor[Any, NoneTape] | None
        self.v_proj_weight: Tensor[Any, NoneTape] | None
        if self._qkv_same_embed_dim:
            bound = math.sqrt(6.0 / (e + 3 * e))
            self.in_proj_weight = dev.rand((3 * e, e), -bound, bound, dtype)
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.q_proj_weight = dev.rand((e, e), -math.sqrt(3.0 / e), math.sqrt(3.0 / e), dtype)
            self.k_proj_weight = dev.rand((e, kd), -math.sqrt(6.0 / (e + kd)), math.sqrt(6.0 / (e + kd)), dtype)
            self.v_proj_weight = dev.rand((e, vd), -math.sqrt(6.0 / (e + vd)), math.sqrt(6.0 / (e + vd)), dtype)
            self.in_proj_weight = None
        self.in_proj_bias: Tensor[Any, NoneTape] | None = dev.zeros((3 * e,), dtype) if bias else None
        self.out_proj: Linear[E, E] = Linear(embed_dim, embed_dim, bias, dev=dev, dtype=dtype)
        if self.out_proj.bias is not None:
            self.out_proj.bias.data[...] = 0
        self.bias_k: Tensor[Any, NoneTape] | None = None
        self.bias_v: Tensor[Any, NoneTape] | None = None
        self.add_zero_attn = False

    def _check(self, query: Tensor[Any, Any], key: Tensor[Any, Any], value: Tensor[Any, Any]) -> bool:
        """Check the shapes; returns whether the call is unbatched (2-D inputs)."""
        shapes = f"query {query.shape}, key {key.shape}, value {value.shape}"
        unbatched = query.ndim == 2
        rank = 2 if unbatched else 3
        if query.ndim not in (2, 3) or key.ndim != rank or value.ndim != rank:
            raise ShapeError(
                f"MultiheadAttention: query, key and value must all be 3-D "
                f"({'(N, L, E)' if self.batch_first else '(L, N, E)'}) or all 2-D (L, E) (unbatched), got {shapes}"
            )
        for name, t, want in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.shape[-1] != want:
                raise ShapeError(f"MultiheadAttention: {name} must have {want} features (last dim), got {shapes}")
        if key.shape[:-1] != value.shape[:-1]:
            raise ShapeError(f"MultiheadAttention: key and value must have the same length and batch, got {shapes}")
        if not unbatched:
            b = 0 if self.batch_first else 1
            if query.shape[b] != key.shape[b]:
                raise ShapeError(
                    f"MultiheadAttention: query and key must have the same batch size (dim {b}), got {shapes}"
                )
        return unbatched

    def _project(
        self, query: Tensor[Any, Any], key: Tensor[Any, Any], value: Tensor[Any, Any], batch_first: bool
    ) -> list[Tensor[Any, Any]]:
        """The heads ``(N, H, L, D)`` of the three projections (inputs 3-D in the layout
        ``batch_first``): the packed weight once for self-attention (one product), once for
        ``query`` and once for ``key``/``value`` when those are one tensor."""
        h = self.num_heads
        if self.in_proj_weight is not None:
            w, b = self.in_proj_weight, self.in_proj_bias
            op = "MultiheadAttention"

            def heads(x: Tensor[Any, Any], which: tuple[int, ...]) -> list[Tensor[Any, Any]]:
                return split_heads(linear(x, w, b), which, h, 3, batch_first, op)

            if query is key and key is value:
                return heads(query, (0, 1, 2))
            if key is value:
                return heads(query, (0,)) + heads(key, (1, 2))
            return heads(query, (0,)) + heads(key, (1,)) + heads(value, (2,))
        e = self.embed_dim
        bias = self.in_proj_bias
        out = []
        for i, (x, w1) in enumerate(
            ((query, self.q_proj_weight), (key, self.k_proj_weight), (value, self.v_proj_weight))
        ):
            assert w1 is not None
            b1 = None if bias is None else bias[i * e : (i + 1) * e]
            out += split_heads(linear(x, w1, b1), (0,), h, 1, batch_first, "MultiheadAttention")
        return out

    def forward(  # type: ignore[override]  # PyTorch's signature: query, key, value
        self,
        query: Tensor[Any, Any],
        key: Tensor[Any, Any],
        value: Tensor[Any, Any],
        key_padding_mask: npt.ArrayLike | Tensor[Any, Any] | None = None,
        need_weights: bool = True,
        attn_mask: npt.ArrayLike | Tensor[Any, Any] | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor[Any, Any], Tensor[Any, Any] | None]:
        """``(attn_output, attn_weights)``, as PyTorch's ``MultiheadAttention.forward``.

        Args:
            query: ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``; ``(L, E)`` unbatched).
            key: ``(S, N, kdim)``; value: ``(S, N, vdim)`` (likewise).
            key_padding_mask: ``(N, S)`` (unbatched ``(S,)``), bool (``True``: the key is
                padding, ignored) or float (added to the scores).
            need_weights: also return the attention weights (then the core runs unfused).
            attn_mask: ``(L, S)`` or ``(N * num_heads, L, S)``, bool (``True`` blocks) or
                float (added). Both masks bool: merged with ``or``; else added as floats.
                Masks are constants (no gradient).
            average_attn_weights: weights averaged over the heads ``(N, L, S)``, else per head
                ``(N, num_heads, L, S)`` (unbatched: without ``N``).
            is_causal: a hint that ``attn_mask`` is the causal mask; with ``attn_mask=None``
                the causal mask is applied (PyTorch raises there instead). The square causal
                mask, bool or float (:meth:`Transformer.generate_square_subsequent_mask`), is
                recognised and run as causal attention in any case.

        Returns:
            ``attn_output`` of ``query``'s shape and dtype, and ``attn_weights`` (or ``None``
            without ``need_weights``). A query whose keys are all blocked gives NaN with
            ``need_weights`` and 0 without, as PyTorch 2.13 (outside its inference fast path).

        Raises:
            ShapeError: inputs of other ranks or widths, different key/value lengths or
                batch sizes, masks of other shapes (the messages name the shapes).
            DTypeError: a mask neither bool nor float; inputs of different dtypes.
        """
        unbatched = self._check(query, key, value)
        bf = self.batch_first or unbatched
        if unbatched:
            same_kv = key is value
            self_attn = query is key and same_kv
            query = query.reshape((1, *query.shape))
            key = query if self_attn else key.reshape((1, *key.shape))
            value = key if same_kv else value.reshape((1, *value.shape))
        n, lq, lk = (
            (query.shape[0], query.shape[1], key.shape[1]) if bf else (query.shape[1], query.shape[0], key.shape[0])
        )
        mask = _pytorch_masks(
            "MultiheadAttention", attn_mask, key_padding_mask, n, self.num_heads, lq, lk, unbatched, query.data.dtype
        )
        if is_causal and mask is None:
            mask = np.tri(lq, lk, dtype=np.bool_)
        p_drop = self.dropout if self.training else 0.0
        merged: Tensor[Any, Any] | None = None
        weights: Tensor[Any, Any] | None = None
        if not need_weights and self.in_proj_weight is not None and query is key and key is value:
            op = "MultiheadAttention"
            y = linear(query, self.in_proj_weight, self.in_proj_bias)
            merged = _fused_self_attention(op, y, self.num_heads, bf, mask, p_drop, False)
            if merged is None:
                qh, kh, vh = split_heads(y, (0, 1, 2), self.num_heads, 3, bf, op)
        else:
            qh, kh, vh = self._project(query, key, value, bf)
        if merged is None:
            attn, weights = _attend("MultiheadAttention", qh, kh, vh, mask, p_drop, need_weights, False)
            e = self.embed_dim
            if bf:
                merged = attn.permute((0, 2, 1, 3)).reshape((n, lq, e))
            else:
                merged = attn.permute((2, 0, 1, 3)).reshape((lq, n, e))
        out: Tensor[Any, Any] = self.out_proj(merged)
        if weights is not None and average_attn_weights:
            weights = weights.mean(axis=1)
        if unbatched:
            out = out.reshape(out.shape[1:])
            weights = None if weights is None else weights.reshape(weights.shape[1:])
        return out, weights

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"
