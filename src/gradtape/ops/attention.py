"""Scaled dot-product attention, fused (PyTorch's ``F.scaled_dot_product_attention``).

Typing: ``q Tensor[Rank4[B, H, L, E]]``, ``k Tensor[Rank4[B, H, S, E]]``,
``v Tensor[Rank4[B, H, S, Ev]]`` give ``Tensor[Rank4[B, H, L, Ev]]`` (and the same with
``Rank3[B, L, E]``); the output owns a tape if any input does.

Measured on the shared 2-core VM (load average 8-10 from other processes, so medians are
noisy; one thread each via OPENBLAS/NUMBA_NUM_THREADS=1 and ``torch.set_num_threads(1)``,
medians of 25 interleaved repeats), the attention core at batch 32, 4 heads, L = S = 128,
head dim 64, float32, causal, forward + backward: the separate ops ``nn.MultiHeadAttention``
ran before (matmul, scale, a materialised mask added, softmax, matmul) 78 ms, this op 54 ms
(1.43x), PyTorch's ``F.scaled_dot_product_attention`` 64 ms. From 256 query rows the causal
products run in row blocks (:func:`_blocks`) that skip the scores above the diagonal (with two
BLAS threads, shorter sequences run faster as one product: see :data:`_CAUSAL_BLOCK_ROWS`); the
fused softmax pass takes about 2 ms of the total.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import typed_as
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import attention as _ka
from gradtape.devices.kernels import blas as _blas
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._signatures import attention as _sig
from gradtape.ops._util import SCALARS, replayable
from gradtape.ops.nn import _generator, dropout_mask
from gradtape.ops.shape import stack
from gradtape.tape import NONE_TAPE, _tensor_class, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients

__all__ = ["packed_self_attention", "scaled_dot_product_attention"]

Array = np.ndarray[Any, Any]

# type variables of the overload table (ops/_signatures/attention.py)
B = TypeVar("B")
H = TypeVar("H")
L = TypeVar("L")
S = TypeVar("S")
E = TypeVar("E")
Ev = TypeVar("Ev")

_OP = "scaled_dot_product_attention"


@typed_as(_sig.scaled_dot_product_attention)
def scaled_dot_product_attention(
    q: Any,
    k: Any,
    v: Any,
    attn_mask: Any = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    *,
    rng: np.random.Generator | int | None = None,
) -> Any:
    """Scaled dot-product attention (Vaswani et al. 2017, "Attention Is All You Need"), with
    the name and semantics of PyTorch's ``torch.nn.functional.scaled_dot_product_attention``.

    ``A = softmax(scale * q @ k^T + mask)`` over the keys, dropout on ``A``, ``y = A @ v``:

    * ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)`` give ``y (..., L, Ev)``; ``...``
      is one or two batch dims (rank 3 or 4), the same for the three inputs (no broadcasting
      between them).
    * ``attn_mask``: ``None``; a bool array or tensor, ``True`` where a key *takes part*
      (PyTorch's SDPA convention; ``nn.MultiheadAttention`` uses the opposite one); or a float
      one, added to the scores. It broadcasts to ``(..., L, S)`` and is read through
      broadcasting strides, never copied to that shape. It is a constant: no gradient flows
      to a float mask (PyTorch would give one).
    * ``is_causal``: the top-left lower-triangular mask (query ``i`` sees keys ``j <= i``, as
      ``torch.ones(L, S).tril()``), computed from the indices.
    * ``scale``: default ``1 / sqrt(E)``.
    * ``dropout_p``: the drop probability of the attention weights (inverted dropout, kept
      weights scaled by ``1 / (1 - p)``), applied whenever ``dropout_p > 0`` as PyTorch does
      (pass 0 outside training). The mask is drawn as :func:`gradtape.ops.dropout` draws it,
      ``rng.random(A.shape, dtype) >= p``, from ``rng`` (a Generator, an int seed, or
      ``None``: ``q``'s device generator).
    * A query whose keys are all masked gets weights 0, so output 0 and no gradient: what
      PyTorch 2.13's SDPA gives on CPU (``nn.MultiheadAttention`` with ``need_weights=True``
      gives NaN instead). A row holding NaN or a ``+inf`` score gives NaN.
    * Probabilities (and the scores' gradients) below ``np.finfo(dtype).tiny`` are written as
      exact zeros: subnormals slow BLAS about 4x. Values change by less than ``tiny``
      (``1.2e-38`` in float32) in absolute terms.

    Implementation: ``q @ k^T`` and ``A @ v`` in BLAS (numpy ``matmul``); scale, mask and
    softmax in one fused kernel pass over the scores
    (:func:`gradtape.devices.kernels.attention.attention_softmax`). Backward:
    ``dv = A_d^T @ g``, ``dA = g @ v^T`` (BLAS), then one kernel pass
    ``dS = scale * A * (dA' - rowsum(dA' * A))`` (``dA' = dA`` times the dropout mask), then
    ``dq = dS @ k``, ``dk = dS^T @ q`` (BLAS); gradients of leaves the store does not keep
    are skipped (``Gradients.wants``). With ``is_causal`` and ``L >= 256`` the six products run
    in row blocks that skip the scores above the diagonal (:func:`_blocks`). float32 rows
    use a vectorized polynomial ``exp`` (within 1 ulp; see the kernel module). The second
    rule (higher-order derivatives) repeats the computation in gradtape ops (``matmul``,
    ``softmax``) on the rebuilt inputs.

    Args:
        q, k, v: float32/float64 tensors of one dtype, rank 3 or 4.
        attn_mask: see above; ``None`` with ``is_causal``.
        is_causal: apply the causal mask.
        dropout_p: in ``[0, 1]``.
        scale: a positive or negative number, or ``None``.
        rng: the dropout generator (keyword only; gradtape's addition).

    Returns:
        ``(..., L, Ev)`` of the inputs' dtype; the output owns a tape if any input does.

    Raises:
        ShapeError: ranks other than 3 or 4 or unequal; batch dims differ; ``q`` and ``k``
            differ in ``E``, ``k`` and ``v`` in ``S``; the mask does not broadcast to
            ``(..., L, S)`` (the message names the shapes).
        DTypeError: the inputs' dtypes differ; the mask is neither bool nor float.
        ValueError: both ``attn_mask`` and ``is_causal`` (PyTorch's documented error; its 2.13
            CPU kernel combines them instead), ``dropout_p`` outside ``[0, 1]``, a
            non-numeric ``scale``.
    """
    return sdpa(q, k, v, attn_mask, is_causal, dropout_p, scale, rng, False, _OP)


def _check_inputs(op: str, qd: Array, kd: Array, vd: Array) -> None:
    shapes = f"q {qd.shape}, k {kd.shape}, v {vd.shape}"
    if not (qd.ndim == kd.ndim == vd.ndim) or qd.ndim not in (3, 4):
        raise ShapeError(f"{op}: q, k, v must all be 3-D (B, L, E) or all 4-D (B, H, L, E), got {shapes}")
    if qd.dtype != kd.dtype or qd.dtype != vd.dtype:
        raise DTypeError(f"{op}: q, k, v must share a dtype, got {qd.dtype}, {kd.dtype}, {vd.dtype} ({shapes})")
    if qd.shape[:-2] != kd.shape[:-2] or qd.shape[:-2] != vd.shape[:-2]:
        raise ShapeError(f"{op}: the batch dims of q, k, v differ: {shapes}")
    if qd.shape[-1] != kd.shape[-1]:
        raise ShapeError(f"{op}: q and k differ in the embedding dim E: {shapes}")
    if kd.shape[-2] != vd.shape[-2]:
        raise ShapeError(f"{op}: k and v differ in the number of keys S: {shapes}")


def _mask_array(op: str, attn_mask: Any, dt: np.dtype[Any], full: tuple[int, ...]) -> Array:
    """The mask as a bool or ``dt`` array viewed (zero strides) at the scores' shape ``full``."""
    m = _as_array(attn_mask.data if isinstance(attn_mask, _tensor_class()) else attn_mask)
    if m.dtype.kind not in "bf":
        raise DTypeError(
            f"{op}: attn_mask must be bool (True takes part) or float (added to the scores), got dtype "
            f"{m.dtype} of shape {m.shape}"
        )
    if m.dtype.kind == "f":
        m = m.astype(dt, copy=False)
    try:
        if np.broadcast_shapes(m.shape, full) != full:
            raise ValueError
    except ValueError:
        raise ShapeError(f"{op}: attn_mask of shape {m.shape} does not broadcast to the scores {full}") from None
    return np.broadcast_to(m, full)


def sdpa(
    q: Any,
    k: Any,
    v: Any,
    attn_mask: Any,
    is_causal: bool,
    dropout_p: float,
    scale: float | None,
    rng: np.random.Generator | int | None,
    nan_rows: bool,
    op: str,
) -> Any:
    """:func:`scaled_dot_product_attention` for gradtape's layers: ``nan_rows`` makes fully
    masked rows NaN (``nn.MultiheadAttention``'s values), ``op`` names the caller in errors."""
    qd, kd, vd = q.data, k.data, v.data
    _check_inputs(op, qd, kd, vd)
    if qd.dtype != np.float32 and qd.dtype != np.float64:
        raise DTypeError(f"{op}: q, k, v must be float32 or float64, got {qd.dtype}")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, SCALARS) or not 0.0 <= float(dropout_p) <= 1.0:
        raise ValueError(f"{op}: dropout_p must be a probability in [0, 1], got {dropout_p!r}")
    if scale is None:
        sc = 1.0 / math.sqrt(qd.shape[-1]) if qd.shape[-1] else 1.0
    elif isinstance(scale, bool) or not isinstance(scale, SCALARS):
        raise ValueError(f"{op}: scale must be a number or None, got {scale!r}")
    else:
        sc = float(scale)
    causal = bool(is_causal)
    if causal and attn_mask is not None:
        raise ValueError(f"{op}: pass either attn_mask or is_causal=True, not both (as PyTorch documents)")
    batch = qd.shape[:-2]
    ln, sn = qd.shape[-2], kd.shape[-2]
    dt = qd.dtype
    mask = None if attn_mask is None else _mask_array(op, attn_mask, dt, (*batch, ln, sn))
    rank3 = qd.ndim == 3
    q4, k4, v4 = (qd[None], kd[None], vd[None]) if rank3 else (qd, kd, vd)
    m4 = None if mask is None else (mask[None] if rank3 else mask)

    blocks = _blocks(ln, sn, causal)
    p = _mm_rows(q4, np.swapaxes(k4, -1, -2), blocks, keys_of_a=False)  # a new C-contiguous (B0, B1, L, S)
    _ka.attention_softmax(p, m4, causal, sc, nan_rows)
    drop: Array | None = None
    pd = p
    pf = float(dropout_p)
    if pf > 0.0:
        if pf == 1.0:
            drop = _arrays.zeros(p.shape, dt, p)
        else:
            drop = dropout_mask(p.shape, dt, pf, _generator(rng, q))
        pd = p * drop
    y = _mm_rows(pd, v4, blocks, keys_of_a=True)
    out_shape = (*batch, ln, vd.shape[-1])
    tape = op_tape(q, k, v)
    out = q._from_op(y.reshape(out_shape), tape)
    if _tp._recorder is not None:
        gen = None if drop is None or pf == 1.0 else functools.partial(_generator, rng, q)
        args = (q4, k4, v4, p, m4, causal, sc, nan_rows, blocks, drop, pf, gen)
        writes = (p,) if drop is None or gen is None else (p, drop)
        replayable(op, y, _sdpa_into, args, (q, k, v), tape, True, writes)
    if tape is not NONE_TAPE:
        qid, kid, vid = q.id, k.id, v.id
        q_leaf, k_leaf, v_leaf = q._leaf, k._leaf, v._leaf

        def scaled_dot_product_attention_backward(grads: Gradients, g: Array) -> None:
            g4 = g.reshape(y.shape)
            if grads.wants(vid, v_leaf):
                pa = p if drop is None else p * drop
                grads._accum(vid, _mm_keys(pa, g4, blocks).reshape(vd.shape))
            want_q, want_k = grads.wants(qid, q_leaf), grads.wants(kid, k_leaf)
            if not (want_q or want_k):
                return
            ds = _mm_rows(g4, np.swapaxes(v4, -1, -2), blocks, keys_of_a=False)
            _ka.attention_softmax_backward(ds, p, drop, causal, sc)
            if want_q:
                grads._accum(qid, _mm_rows(ds, k4, blocks, keys_of_a=True).reshape(qd.shape))
            if want_k:
                grads._accum(kid, _mm_keys(ds, q4, blocks).reshape(kd.shape))

        def sdpa_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            return _second_rule(
                g,
                rebuild(qid, qd),
                rebuild(kid, kd),
                rebuild(vid, vd),
                mask,
                causal,
                sc,
                drop,
                p,
                nan_rows,
                (qid, kid, vid),
            )

        record(tape, out, scaled_dot_product_attention_backward, sdpa_diff)
    return out


def _sdpa_into(
    y: Array,
    q4: Array,
    k4: Array,
    v4: Array,
    p: Array,
    m4: Array | None,
    causal: bool,
    sc: float,
    nan_rows: bool,
    blocks: list[tuple[int, int, int]],
    drop: Array | None,
    pf: float,
    gen: Callable[[], np.random.Generator] | None,
) -> None:
    """:func:`sdpa`'s forward again (for :func:`gradtape.capture`'s replays), into the
    recorded arrays: the weights ``p`` (which the backward reads), a fresh dropout mask into
    ``drop`` drawn from the generator ``gen()`` gives (the device's, at this point of the
    sequence of draws), and the output ``y``."""
    _mm_rows(q4, np.swapaxes(k4, -1, -2), blocks, keys_of_a=False, out=p)
    _ka.attention_softmax(p, m4, causal, sc, nan_rows)
    pd = p
    if drop is not None:
        if gen is not None:
            dropout_mask(p.shape, p.dtype, pf, gen(), out=drop)
        pd = p * drop
    _mm_rows(pd, v4, blocks, keys_of_a=True, out=y)


# ----- causal block products -------------------------------------------------------------
# A causal mask leaves the scores above the diagonal unused: query rows [r0, r1) see keys
# [0, min(r1, S)). Splitting the rows into blocks skips the products of those (never read,
# never written by the kernels beyond zeros) parts: every one of the six products runs on
# the L x S matrix, so 4 blocks do 5/8 of the flops (2 blocks 3/4).

_CAUSAL_BLOCK_ROWS = 128
"""The smallest row block worth a separate BLAS call (smaller ones lose more in BLAS
efficiency than the skipped flops give). Measured on the 2-vCPU AMD EPYC (float32, the six
products of one forward and backward, 2 BLAS threads, medians; session 21): batch x heads x
L x D 64x64x16 took 221 us in 2 blocks of 32 rows against 111 in one, 64x128x16 536 us in 4
blocks against 315, 128x128x64 1846 in 4, 1657 in 2, 1683 in one; from 256 rows blocks win
(32x256x32: 758 in 2 blocks against 957; 16x512x64: 2477 in 4 against 3391). The earlier
bound (32 rows, measured on one thread) made the small transformers' attention slower."""


def _blocks(ln: int, sn: int, causal: bool) -> list[tuple[int, int, int]]:
    """``(r0, r1, c)``: query rows ``[r0, r1)`` and the keys ``[0, c)`` they see; one block
    (all rows, all keys) unless causal with at least two blocks of
    :data:`_CAUSAL_BLOCK_ROWS` rows (at most 4 blocks)."""
    nb = min(4, ln // _CAUSAL_BLOCK_ROWS) if causal and sn > 0 else 1
    if nb <= 1:
        return [(0, ln, sn)]
    step = -(-ln // nb)
    return [(r0, min(r0 + step, ln), min(r0 + step, ln, sn)) for r0 in range(0, ln, step)]


def _mm_rows(
    a: Array, b: Array, blocks: list[tuple[int, int, int]], keys_of_a: bool, out: Array | None = None
) -> Array:
    """``a @ b`` by row blocks: with ``keys_of_a`` the inner dim of the product is the keys
    (``P @ v``, ``dS @ k``: rows ``[r0, r1)`` of ``a`` times its first ``c`` columns and
    ``b``'s first ``c`` rows), else the output's columns are the keys (``q @ k^T``,
    ``g @ v^T``: only the first ``c`` columns of the row block are computed; the rest of the
    output is left uninitialised, for the kernels, which never read it, to overwrite). Into
    ``out`` where given (an earlier result of the same shapes)."""
    if len(blocks) == 1:
        full: Array = _blas.matmul(a, b, out=out)
        return full
    if out is None:
        out = _arrays.empty((*a.shape[:-1], b.shape[-1]), np.result_type(a, b), a)
    for r0, r1, c in blocks:
        if keys_of_a:
            _blas.matmul(a[..., r0:r1, :c], b[..., :c, :], out=out[..., r0:r1, :])
        else:
            _blas.matmul(a[..., r0:r1, :], b[..., :c], out=out[..., r0:r1, :c])
    return out


def _mm_keys(a: Array, b: Array, blocks: list[tuple[int, int, int]]) -> Array:
    """``a^T @ b`` (``a`` of shape ``(..., L, S)``, ``b`` ``(..., L, n)``): the key side
    gradients ``dv = P^T g``, ``dk = dS^T q``. With causal blocks, by key blocks: keys
    ``[k0, c)`` (``k0 = min(r0, c)``) are seen only by the rows ``[r0, L)``, so each key block
    is one product written in place (no accumulation); keys no row sees get 0."""
    if len(blocks) == 1:
        full: Array = _blas.matmul(np.swapaxes(a, -1, -2), b)
        return full
    out = _arrays.empty((*a.shape[:-2], a.shape[-1], b.shape[-1]), np.result_type(a, b), a)
    for r0, _, c in blocks:
        k0 = min(r0, c)
        if k0 < c:
            _blas.matmul(np.swapaxes(a[..., r0:, k0:c], -1, -2), b[..., r0:, :], out=out[..., k0:c, :])
    out[..., blocks[-1][2] :, :] = 0
    return out


def _second_rule(
    g: Any,
    qt: Any,
    kt: Any,
    vt: Any,
    mask: Array | None,
    causal: bool,
    sc: float,
    drop: Array | None,
    p: Array,
    nan_rows: bool,
    ids: tuple[int, int, int],
) -> list[tuple[int, Any]]:
    """The gradients of ``q``, ``k``, ``v`` in gradtape ops (recorded, so they can be
    differentiated again): the attention weights are recomputed from the rebuilt inputs as
    ``softmax(scale * q k^T + add) * valid`` (``add`` the mask as ``0 / -inf`` terms,
    ``valid`` 0 on fully masked rows, NaN with ``nan_rows``), then ``dv = A_d^T g``,
    ``dA = (g v^T) * drop``, ``dS = scale * A * (dA - rowsum(dA * A))``, ``dq = dS k``,
    ``dk = dS^T q``. ``p`` (the forward's weights) only tells which rows are fully masked."""
    dt = p.dtype
    full = (*qt.shape[:-2], qt.shape[-2], kt.shape[-2])
    add: Array | None = None
    if causal:
        ln, sn = full[-2:]
        add = np.where(np.tri(ln, sn, dtype=np.bool_), dt.type(0), dt.type(-np.inf))
    elif mask is not None:
        add = np.where(mask, dt.type(0), dt.type(-np.inf)).astype(dt) if mask.dtype == np.bool_ else np.array(mask)
    valid: Array | None = None
    if add is not None:
        addf = np.broadcast_to(add, full)
        dead = np.all(addf == -np.inf, axis=-1, keepdims=True)  # fully masked rows
        if dead.any():
            addf = np.where(dead, dt.type(0), addf)
            valid = np.where(dead, dt.type(np.nan) if nan_rows else dt.type(0), dt.type(1))
        add = _arrays.contiguous(addf, dtype=dt)
    s = (qt @ _swap(kt)) * sc
    if add is not None:
        s = s + qt._like(add)
    a = s.softmax(-1)
    if valid is not None:
        a = a * qt._like(valid)
    ad = a if drop is None else a * qt._like(drop.reshape(full))
    gv = _swap(ad) @ g
    da = g @ _swap(vt)
    if drop is not None:
        da = da * qt._like(drop.reshape(full))
    ds = a * (da - (da * a).sum(axis=-1, keepdims=True)) * sc
    qid, kid, vid = ids
    return [(qid, ds @ kt), (kid, _swap(ds) @ qt), (vid, gv)]


def packed_self_attention(y: Any, num_heads: int, batch_first: bool, causal: bool, nan_rows: bool, op: str) -> Any:
    """Multi-head self-attention from the packed in-projection ``y``, heads merged: the core
    of ``nn.MultiheadAttention`` and ``nn.MultiHeadAttention`` when query, key and value are
    one tensor, without dropout and without a mask other than the causal one (Vaswani et al.
    2017). :func:`gradtape.devices.kernels.attention.packed_attention_runs` of ``y.data``
    must hold: the layers test it and run :func:`scaled_dot_product_attention`'s path
    otherwise.

    ``y`` is ``(B, L, 3E)`` (``batch_first``) or ``(L, B, 3E)``: ``[Q, K, V]`` along its last
    dim, each ``num_heads`` heads of ``D = E / num_heads`` columns. The result is
    ``(B, L, E)`` (or ``(L, B, E)``) with head ``h``'s columns
    ``softmax(Q_h K_h^T / sqrt(D) + mask) V_h`` (``mask``: ``-inf`` above the diagonal with
    ``causal``): the values of ``split_heads`` + :func:`scaled_dot_product_attention` +
    merging the heads, with no copy into or out of the heads
    (:func:`gradtape.devices.kernels.attention.packed_attention`: one (batch, head) per
    thread). The weights' formulas are :func:`scaled_dot_product_attention`'s, whose row
    kernels these reuse; with ``causal`` and ``L > 64`` the products run in row blocks, so
    the last bits can differ from the unfused op's. ``nan_rows``: as there (no row is fully
    masked here unless a score is NaN).

    Backward: one pass gives ``y``'s gradient, ``dq, dk, dv`` per head written into their
    columns. The second rule (higher-order derivatives) is the unfused op's
    (:func:`_second_rule`) on the heads of the rebuilt ``y``, packed back with ``stack``.

    Raises:
        ShapeError: ``y``'s last dim is not ``3 * num_heads * D`` (the message starts with ``op``).
    """
    yd = y.data
    n0, n1, w = yd.shape
    if num_heads < 1 or w % (3 * num_heads):
        raise ShapeError(f"{op}: packed projection {yd.shape} is not (.., .., 3 * {num_heads} * D)")
    d = w // (3 * num_heads)
    sc = 1.0 / math.sqrt(d) if d else 1.0
    out_d, p = _ka.packed_attention(yd, num_heads, batch_first, causal, sc, nan_rows)
    tape = op_tape(y)
    out = y._from_op(out_d, tape)
    if _tp._recorder is not None:
        args = (yd, p, num_heads, batch_first, causal, sc, nan_rows)
        replayable(op, out_d, _packed_into, args, (y,), tape, True, (p,))
    if tape is not NONE_TAPE:
        yid, y_leaf = y.id, y._leaf

        def packed_self_attention_backward(grads: Gradients, g: Array) -> None:
            if grads.wants(yid, y_leaf):
                grads._accum(yid, _ka.packed_attention_backward(yd, p, g, num_heads, batch_first, causal, sc))

        def packed_self_attention_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            yt = rebuild(yid, yd)
            y5 = yt.reshape((n0, n1, 3, num_heads, d))
            perm, inv = ((0, 2, 1, 3), (0, 2, 1, 3)) if batch_first else ((1, 2, 0, 3), (2, 0, 1, 3))
            qh, kh, vh = (y5[:, :, i].permute(perm) for i in range(3))
            g4 = g.reshape((n0, n1, num_heads, d)).permute(perm)
            parts = _second_rule(g4, qh, kh, vh, None, causal, sc, None, p, nan_rows, (0, 1, 2))
            return [(yid, stack([t.permute(inv) for _, t in parts], axis=2).reshape((n0, n1, w)))]

        record(tape, out, packed_self_attention_backward, packed_self_attention_diff)
    return out


def _packed_into(
    out: Array, yd: Array, p: Array, num_heads: int, batch_first: bool, causal: bool, sc: float, nan_rows: bool
) -> None:
    """:func:`packed_self_attention`'s forward again (for :func:`gradtape.capture`'s replays),
    into the recorded weights ``p`` (which the backward reads) and output ``out``."""
    _ka.packed_attention(yd, num_heads, batch_first, causal, sc, nan_rows, p, out)


_trace.traceable(_packed_into)  # its arithmetic is one noted kernel


def _swap(t: Any) -> Any:
    """``t`` with its last two dims swapped (a recorded permute)."""
    return t.permute((*range(t.ndim - 2), t.ndim - 1, t.ndim - 2))
