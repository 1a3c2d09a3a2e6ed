"""Fused passes of scaled dot-product attention (``gradtape.ops.scaled_dot_product_attention``).

The products (``q @ k^T``, ``P @ v`` and the backward's) run in BLAS through numpy; what lies
between them is one kernel pass per direction over the ``(..., L, S)`` score array:

* forward, :func:`attention_softmax`: ``s = scale * scores``, the mask applied (a causal
  mask computed from the indices, a boolean or additive float mask read through broadcasting
  strides, never copied to the full shape), then the row softmax (max, ``exp``, sum,
  normalise), written over ``scores`` in place. Probabilities below the smallest normal
  float (``np.finfo(dtype).tiny``) are written as exact zeros: subnormals slow BLAS and numpy
  ~4x (shared/KERNELS.md), and the change is below ``1e-38`` (float32) absolute.
* backward, :func:`attention_softmax_backward`: given ``dP = g @ v^T`` and the saved ``P``,
  ``dS = scale * P * (dP' - rowsum(dP' * P))`` with ``dP' = dP * m`` (``m`` the saved scaled
  dropout mask, if any), written over ``dP``; values below ``tiny`` in magnitude are flushed
  to zero as in the forward. Its kernels live in :mod:`.softmax`, beside the plain softmax
  backward whose 8-chain row dot they share (numba's cache key covers a kernel's own module).

The ``exp``: pip's llvmlite has no SVML, so ``math.exp`` in a loop is a scalar libm call
(3.3 ms for 2M float32 here, numpy's SIMD ``np.exp`` 0.6 ms). float32 rows use
:func:`_exp32`, a Cody-Waite reduction and Cephes' polynomial that LLVM vectorizes (1.1 ms
for 2M, within 1 ulp); float64 rows keep ``math.exp`` (float64 is the accuracy path). With
it the fused pass beat numpy's scale + mask + softmax expression (3.3 ms) on
``(32, 4, 128, 128)`` float32: 2.7 ms causal, 3.0 ms unmasked (best of 61, one thread),
and a causal mask skips the ``exp`` of the masked half. Rows run serially below
:data:`PARALLEL_ROWS_THRESHOLD` score elements and as a ``numba.prange`` over rows above it.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from gradtape.devices import _arrays
from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import blas as _blas
from gradtape.devices.kernels._jit import jit
from gradtape.devices.kernels.blas import _cblas_gemm, _set_threads
from gradtape.devices.kernels.softmax import (
    _attention_backward_parallel,
    _attention_backward_serial,
    _attention_row_backward,
)
from gradtape.errors import DTypeError, ShapeError

__all__ = [
    "PACKED_BLOCK_ROWS",
    "PARALLEL_ROWS_THRESHOLD",
    "attention_softmax",
    "attention_softmax_backward",
    "packed_attention",
    "packed_attention_backward",
    "packed_attention_runs",
]

Array = np.ndarray[Any, Any]

PARALLEL_ROWS_THRESHOLD = 1 << 15
"""Score elements (``prod(batch) * L * S``) from which the passes run in parallel over rows
(``numba.prange``). Measured on the 2-core VM, each call interleaved with a 256x256 BLAS
product (41 repeats, OMP_WAIT_POLICY passive): with the second core free (best times) the
parallel forward wins from 8k-16k elements (32k: 49 vs 63 us; 512k: 318 vs 710 us), the
backward from 16k; with the cores shared by four other busy processes (medians) neither
wins below 256k. 32k is the compromise; the elementwise kernels' threshold (1M) is far
higher because their elements cost one multiply-add, these an ``exp`` and five passes."""

KIND_NONE, KIND_BOOL, KIND_FLOAT = 0, 1, 2


@jit()
def _exp32(v: Any) -> Any:
    """``exp(v)`` for float32 ``v <= 0`` in arithmetic LLVM vectorizes (pip's llvmlite has no
    SVML, and libm's ``expf`` is a scalar call): ``v = k ln2 + r`` (Cody-Waite, |r| <= ln2/2),
    Cephes' degree-7 ``expf`` polynomial for ``exp(r)``, times ``2**k`` built from its bits.
    Within 1 ulp of ``exp`` for results >= ``tiny``; below ``-87.3`` (where ``exp`` falls under
    ``tiny``) the result is below ``tiny`` or exactly 0 (``k < -126``), and ``-inf`` gives 0."""
    f32 = np.float32
    w = max(v, f32(-104.0))
    # np.floor keeps k a float32 (math.floor's int64 made numba compute r in float64 and AVX2
    # cannot convert int64 in vectors: the loops calling this ran scalar, 3x slower)
    k = np.floor(w * f32(1.44269504088896341) + f32(0.5))
    r = w - k * f32(0.693359375) - k * f32(-2.12194440e-4)
    p = (
        (
            (
                (
                    ((f32(1.9875691500e-4) * r + f32(1.3981999507e-3)) * r + f32(8.3334519073e-3)) * r
                    + f32(4.1665795894e-2)
                )
                * r
                + f32(1.6666665459e-1)
            )
            * r
            + f32(5.0000001201e-1)
        )
        * (r * r)
        + r
        + f32(1.0)
    )
    bits = np.int32(np.int32(max(k, f32(-127.0))) + np.int32(127)) << np.int32(23)
    return p * np.int32(bits).view(np.float32)


@jit()
def _fwd_row(
    pr: Array,
    i: int,
    mb: Array,
    mf: Array,
    kind: int,
    causal: bool,
    scale: Any,
    tiny: Any,
    nan_rows: bool,
    poly: bool,
) -> None:
    """Softmax of one score row ``pr`` (query ``i``) in place; see :func:`attention_softmax`.
    Separate loops (scale and mask; max; exp; sum; normalise) so that each vectorizes; the
    reductions run in 8 independent partial results (a strict float reduction does not
    vectorize)."""
    n = pr.shape[0]
    dt = pr.dtype.type
    zero = dt(0)
    lim = min(i + 1, n) if causal else n
    ninf = dt(-np.inf)
    if kind == 1:
        for j in range(lim):
            pr[j] = pr[j] * scale if mb[j] else ninf
    elif kind == 2:
        for j in range(lim):
            pr[j] = pr[j] * scale + mf[j]
    else:
        for j in range(lim):
            pr[j] = pr[j] * scale
    m8 = lim - lim % 8
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = ninf
    for j in range(0, m8, 8):
        a0 = max(a0, pr[j])
        a1 = max(a1, pr[j + 1])
        a2 = max(a2, pr[j + 2])
        a3 = max(a3, pr[j + 3])
        a4 = max(a4, pr[j + 4])
        a5 = max(a5, pr[j + 5])
        a6 = max(a6, pr[j + 6])
        a7 = max(a7, pr[j + 7])
    m = max(max(max(a0, a1), max(a2, a3)), max(max(a4, a5), max(a6, a7)))
    for j in range(m8, lim):
        m = max(m, pr[j])
    if m == ninf:  # every key masked (or no key): 0, or NaN as nn.MultiheadAttention
        fill = dt(np.nan) if nan_rows else zero
        for j in range(n):
            pr[j] = fill
        return
    if poly:
        for j in range(lim):
            pr[j] = _exp32(pr[j] - m)
    else:
        for j in range(lim):
            pr[j] = math.exp(pr[j] - m)
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = zero
    for j in range(0, m8, 8):
        a0 += pr[j]
        a1 += pr[j + 1]
        a2 += pr[j + 2]
        a3 += pr[j + 3]
        a4 += pr[j + 4]
        a5 += pr[j + 5]
        a6 += pr[j + 6]
        a7 += pr[j + 7]
    s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    for j in range(m8, lim):
        s += pr[j]
    # a NaN score, or +inf (inf - inf), makes the sum NaN: the row is NaN, as PyTorch's
    if s != s or m == -ninf:
        for j in range(n):
            pr[j] = dt(np.nan)
        return
    inv = dt(1) / s
    for j in range(lim):
        p = pr[j] * inv
        pr[j] = p if p >= tiny else zero
    for j in range(lim, n):
        pr[j] = zero


@jit()
def _fwd_serial(
    p: Array, mb: Array, mf: Array, kind: int, causal: bool, scale: Any, tiny: Any, nan_rows: bool, poly: bool
) -> None:
    b0n, b1n, ln = p.shape[0], p.shape[1], p.shape[2]
    for b0 in range(b0n):
        for b1 in range(b1n):
            for i in range(ln):
                _fwd_row(p[b0, b1, i], i, mb[b0, b1, i], mf[b0, b1, i], kind, causal, scale, tiny, nan_rows, poly)


@jit(parallel=True)
def _fwd_parallel(
    p: Array, mb: Array, mf: Array, kind: int, causal: bool, scale: Any, tiny: Any, nan_rows: bool, poly: bool
) -> None:
    b1n, ln = p.shape[1], p.shape[2]
    rows = p.shape[0] * b1n * ln
    for r in numba.prange(rows):
        b0 = r // (b1n * ln)
        rem = r - b0 * (b1n * ln)
        b1 = rem // ln
        i = rem - b1 * ln
        _fwd_row(p[b0, b1, i], i, mb[b0, b1, i], mf[b0, b1, i], kind, causal, scale, tiny, nan_rows, poly)


def _check(op: str, p: Array) -> None:
    """The scores every device's kernel takes: a writable, C-contiguous 4-D float array (a
    numpy array, or a GPU array of the ``Cuda`` device)."""
    if not (isinstance(p, np.ndarray) or _on_gpu(p)) or p.ndim != 4:
        raise ShapeError(f"{op}: expects a 4-D score array (B0, B1, L, S), got shape {getattr(p, 'shape', None)}")
    if p.dtype != np.float32 and p.dtype != np.float64:
        raise DTypeError(f"{op}: scores have dtype {p.dtype} (shape {p.shape}); kernels take float32 or float64")
    if not (p.flags.c_contiguous and _arrays.writeable(p)):
        raise ValueError(f"{op}: scores (shape {p.shape}) must be a writable C-contiguous array")


def attention_softmax(
    p: Array, mask: Array | None, causal: bool, scale: float, nan_rows: bool = False, parallel: bool | None = None
) -> Array:
    """Scale, mask and softmax the raw scores ``p = q @ k^T`` along the last axis, in place.

    ``P[..., i, j] = softmax_j(scale * p[..., i, j] + mask[..., i, j])`` where a boolean mask
    adds ``-inf`` where it is ``False`` (``True`` takes part, PyTorch's SDPA convention), a
    float mask is added as is, and ``causal`` blocks keys ``j > i`` (top-left aligned, as
    ``torch.ones(L, S).tril()``), computed from the indices. Probabilities below
    ``np.finfo(dtype).tiny`` are written as 0.

    Rows whose keys are all masked (max ``-inf``) become 0 (PyTorch 2.13's SDPA on CPU), or
    NaN with ``nan_rows`` (``nn.MultiheadAttention``'s default path). A row holding NaN or a
    ``+inf`` score becomes NaN.

    Args:
        p: float32/float64 C-contiguous writable array ``(B0, B1, L, S)``.
        mask: ``None``, or a bool or ``p``-dtype array viewed at ``p``'s shape (zero strides
            along broadcast dims, as ``np.broadcast_to`` gives: it is read, never copied).
        causal: apply the causal mask (``mask`` must then be ``None``).
        scale: multiplies the scores.
        nan_rows: fully masked rows become NaN instead of 0.
        parallel: force the serial (``False``) or the row-parallel (``True``) kernel;
            ``None`` picks by :data:`PARALLEL_ROWS_THRESHOLD`.

    Returns:
        ``p``, overwritten with the probabilities.

    Raises:
        ShapeError: ``p`` is not 4-D, or ``mask`` does not have ``p``'s shape.
        DTypeError: ``p`` is not float32/float64, or a float ``mask`` has another dtype.
        ValueError: ``p`` is not writable and C-contiguous.
    """
    _check("attention_softmax", p)
    if mask is None:
        kind = KIND_NONE
        mb = mf = None
    else:
        if mask.shape != p.shape:
            raise ShapeError(f"attention_softmax: mask of shape {mask.shape} must be viewed at the scores' {p.shape}")
        if mask.dtype == np.bool_:
            kind, mb, mf = KIND_BOOL, mask, None
        elif mask.dtype == p.dtype:
            kind, mb, mf = KIND_FLOAT, None, mask
        else:
            raise DTypeError(f"attention_softmax: mask dtype {mask.dtype} is neither bool nor the scores' {p.dtype}")
    if _on_gpu(p):
        from gradtape.devices.kernels import cuda

        res: Array = cuda.attention_softmax(p, mask, causal, scale, nan_rows)
        return res
    if mb is None:  # unused operands: zero-stride views at p's shape (one signature per dtype)
        mb = np.broadcast_to(np.zeros((), np.bool_), p.shape)
    if mf is None:
        mf = np.broadcast_to(np.zeros((), p.dtype), p.shape)
    if p.size == 0:
        return p
    big = p.size >= PARALLEL_ROWS_THRESHOLD and p.shape[0] * p.shape[1] * p.shape[2] > 1
    fn = _fwd_parallel if (big if parallel is None else parallel) else _fwd_serial
    t = p.dtype.type
    fn(p, mb, mf, kind, bool(causal), t(scale), t(np.finfo(p.dtype).tiny), bool(nan_rows), p.dtype == np.float32)
    return p


def attention_softmax_backward(
    d: Array, p: Array, drop: Array | None, causal: bool, scale: float, parallel: bool | None = None
) -> Array:
    """The scores' gradient from ``d = dP`` (``g @ v^T``) and the saved probabilities ``p``,
    in place: ``d = scale * p * (d' - rowsum(d' * p))`` with ``d' = d * drop`` (``drop`` the
    saved scaled dropout mask, or ``None``). Values below ``np.finfo(dtype).tiny`` in
    magnitude are written as 0; with ``causal`` the keys ``j > i`` are written as 0 without
    being read (their ``p`` is 0).

    Args:
        d: float32/float64 C-contiguous writable array ``(B0, B1, L, S)``, overwritten.
        p: the forward's probabilities, ``d``'s shape and dtype, C-contiguous.
        drop: ``None`` or the scaled keep mask, ``d``'s shape and dtype, C-contiguous.
        causal, scale: as in :func:`attention_softmax`.
        parallel: as in :func:`attention_softmax`.

    Returns:
        ``d``.

    Raises:
        ShapeError: the shapes differ or are not 4-D. DTypeError: dtypes differ or are not
        float32/float64. ValueError: ``d`` is not writable and C-contiguous.
    """
    _check("attention_softmax_backward", d)
    for name, a in (("p", p), ("drop", drop)):
        if a is None:
            continue
        if a.shape != d.shape:
            raise ShapeError(f"attention_softmax_backward: {name} {a.shape} must have d's shape {d.shape}")
        if a.dtype != d.dtype:
            raise DTypeError(f"attention_softmax_backward: {name} has dtype {a.dtype}, d has {d.dtype}")
    if _on_gpu(d):
        from gradtape.devices.kernels import cuda

        res: Array = cuda.attention_softmax_backward(d, p, drop, causal, scale)
        return res
    if d.size == 0:
        return d
    n = d.shape[-1]
    d3 = d.reshape(-1, d.shape[2], n)
    p3 = np.ascontiguousarray(p).reshape(d3.shape)
    m3 = p3 if drop is None else np.ascontiguousarray(drop).reshape(d3.shape)
    big = d.size >= PARALLEL_ROWS_THRESHOLD and d3.shape[0] * d3.shape[1] > 1
    fn = _attention_backward_parallel if (big if parallel is None else parallel) else _attention_backward_serial
    t = d.dtype.type
    fn(d3, p3, m3, drop is not None, bool(causal), t(scale), t(np.finfo(d.dtype).tiny))
    return d


# ----- self-attention from the packed projection, one (batch, head) per thread ---------------
#
# Self-attention's heads are column blocks of one packed projection ``y = x W_in^T + b_in``:
# query ``h`` is ``y[b, :, h*D:(h+1)*D]``, its key ``E`` columns further, its value ``2E``
# further, each a matrix BLAS reads in place (row stride ``3E``). The kernels below run one
# ``(batch, head)`` pair per numba thread, with the same one-thread ``cblas_?gemm`` numpy's
# OpenBLAS runs (blas._gemm_parallel's intrinsics) and the row passes of the unfused op
# (:func:`_fwd_row`, ``softmax._attention_row_backward``) between them: a head's scores stay
# in the core's cache from product to softmax to product, the output lands in the merged
# ``(.., L, E)`` layout the out-projection reads, and the backward writes ``dq, dk, dv``
# straight into the packed gradient ``(.., L, 3E)``, so neither the split into heads nor the
# merge copies anything. With a causal mask the rows run in blocks of
# :data:`PACKED_BLOCK_ROWS`, whose products skip the keys above the diagonal block.

PACKED_BLOCK_ROWS = 64
"""Query rows per block of a causal head in :func:`packed_attention` (longer heads run in
several blocks, the last one shorter). Measured on the 2-vCPU AVX2 AMD EPYC (Zen 3; numpy's OpenBLAS 0.3.31,
Haswell kernels; float32, forward and backward of one layer's attention core from the packed
projection to its gradient, medians of 4 x 15): batch 32, 4 heads, L = 128, D = 64: 24.4 ms
split into heads + the unfused op + merge; 18.6 ms fused in one block (the same bits); 15.4 ms
in blocks of 64 rows, 17.9 in blocks of 32. Batch 16, 4 heads, L = 64, D = 16 (one block):
2.2 -> 1.3 ms. Batch 32, L = 256, D = 64: 81 -> 54 ms."""


@jit(parallel=True)
def _packed_fwd(
    gemm: int,
    setn: int,
    nb: int,
    ln: int,
    e: int,
    heads: int,
    y: Array,
    ysb: int,
    ysl: int,
    p: Array,
    out: Array,
    osb: int,
    osl: int,
    causal: bool,
    scale: Any,
    tiny: Any,
    nan_rows: bool,
    poly: bool,
    blk: int,
) -> int:
    """:func:`packed_attention`'s forward: for each ``(b, h)`` (one per thread), ``S = q k^T``
    into ``p[b, h]``, :func:`_fwd_row` on each row, ``out_h = P v``. ``ysb, ysl`` (``osb,
    osl``): the element strides of a batch entry and of a position in ``y`` (``out``)."""
    d = e // heads
    isz = y.itemsize
    prev = _set_threads(setn, 1)
    py, pp, po = y.ctypes.data, p.ctypes.data, out.ctypes.data
    nblk = (ln + blk - 1) // blk if causal else 1
    mb = np.zeros(1, np.bool_)  # the mask rows _fwd_row never reads without a mask (KIND_NONE)
    mf = np.zeros(1, y.dtype)
    for bh in numba.prange(nb * heads):
        b = bh // heads
        h = bh - b * heads
        q = py + (b * ysb + h * d) * isz
        k = q + e * isz
        v = k + e * isz
        pb = pp + bh * ln * ln * isz
        o = po + (b * osb + h * d) * isz
        for ib in range(nblk):
            r0 = ib * blk
            r1 = min(ln, r0 + blk) if causal else ln
            _cblas_gemm(gemm, _NT, _T, r1 - r0, r1 if causal else ln, d, q + r0 * ysl * isz, ysl, k, ysl,
                        pb + r0 * ln * isz, ln, y)  # fmt: skip
        for i in range(ln):
            _fwd_row(p[b, h, i], i, mb, mf, KIND_NONE, causal, scale, tiny, nan_rows, poly)
        for ib in range(nblk):
            r0 = ib * blk
            r1 = min(ln, r0 + blk) if causal else ln
            _cblas_gemm(gemm, _NT, _NT, r1 - r0, d, r1 if causal else ln, pb + r0 * ln * isz, ln, v, ysl,
                        o + r0 * osl * isz, osl, y)  # fmt: skip
    _set_threads(setn, prev)
    return 0


@jit(parallel=True)
def _packed_bwd(
    gemm: int,
    setn: int,
    nb: int,
    ln: int,
    e: int,
    heads: int,
    y: Array,
    ysb: int,
    ysl: int,
    p: Array,
    g: Array,
    gsb: int,
    gsl: int,
    ds: Array,
    dy: Array,
    causal: bool,
    scale: Any,
    tiny: Any,
    blk: int,
) -> int:
    """:func:`packed_attention_backward`: for each ``(b, h)`` (one per thread), ``dP = g_h v^T``
    into ``ds[b, h]``, ``dv = P^T g_h``, the softmax backward on each row of ``dP`` (giving
    ``dS``), ``dq = dS k``, ``dk = dS^T q``; ``dq, dk, dv`` written into ``dy`` (``y``'s
    strides). With causal blocks, key block ``[r0, r1)`` is seen by the rows ``[r0, L)`` only."""
    d = e // heads
    isz = y.itemsize
    prev = _set_threads(setn, 1)
    py, pp, pg, pd, pdy = y.ctypes.data, p.ctypes.data, g.ctypes.data, ds.ctypes.data, dy.ctypes.data
    nblk = (ln + blk - 1) // blk if causal else 1
    for bh in numba.prange(nb * heads):
        b = bh // heads
        h = bh - b * heads
        off = (b * ysb + h * d) * isz
        q = py + off
        k = q + e * isz
        v = k + e * isz
        dq = pdy + off
        dk = dq + e * isz
        dv = dk + e * isz
        pb = pp + bh * ln * ln * isz
        sb = pd + bh * ln * ln * isz
        gb = pg + (b * gsb + h * d) * isz
        for ib in range(nblk):  # dP = g v^T (the rows' seen keys)
            r0 = ib * blk
            r1 = min(ln, r0 + blk) if causal else ln
            _cblas_gemm(gemm, _NT, _T, r1 - r0, r1 if causal else ln, d, gb + r0 * gsl * isz, gsl, v, ysl,
                        sb + r0 * ln * isz, ln, y)  # fmt: skip
        for ib in range(nblk):  # dv = P^T g, key block [k0, r1) from the rows [k0, L)
            r0 = ib * blk
            r1 = min(ln, r0 + blk) if causal else ln
            k0 = r0 if causal else 0
            _cblas_gemm(gemm, _T, _NT, r1 - k0, d, ln - k0, pb + (k0 * ln + k0) * isz, ln, gb + k0 * gsl * isz,
                        gsl, dv + k0 * ysl * isz, ysl, y)  # fmt: skip
        for i in range(ln):
            lim = min(i + 1, ln) if causal else ln
            _attention_row_backward(ds[b, h, i], p[b, h, i], p[b, h, i], False, lim, scale, tiny)
        for ib in range(nblk):  # dq = dS k
            r0 = ib * blk
            r1 = min(ln, r0 + blk) if causal else ln
            _cblas_gemm(gemm, _NT, _NT, r1 - r0, d, r1 if causal else ln, sb + r0 * ln * isz, ln, k, ysl,
                        dq + r0 * ysl * isz, ysl, y)  # fmt: skip
        for ib in range(nblk):  # dk = dS^T q
            r0 = ib * blk
            r1 = min(ln, r0 + blk) if causal else ln
            k0 = r0 if causal else 0
            _cblas_gemm(gemm, _T, _NT, r1 - k0, d, ln - k0, sb + (k0 * ln + k0) * isz, ln, q + k0 * ysl * isz,
                        ysl, dk + k0 * ysl * isz, ysl, y)  # fmt: skip
    _set_threads(setn, prev)
    return 0


_NT, _T = _blas._CBLAS_NO_TRANS, _blas._CBLAS_TRANS


def packed_attention_runs(y: Any) -> bool:
    """Whether :func:`packed_attention` takes the packed projection ``y``: a C-contiguous 3-D
    float32/float64 numpy array, on a machine whose products stay on numpy's OpenBLAS
    (:func:`gradtape.devices.kernels.blas.matmul_choice`; where oneDNN takes the large products
    the unfused op runs, so that its products go there too)."""
    return (
        y.__class__ is np.ndarray
        and y.ndim == 3
        and (y.dtype == np.float32 or y.dtype == np.float64)
        and y.flags.c_contiguous
        and _blas._GEMM.get(y.dtype, 0) != 0
        and _blas._SET_ADDRESS != 0
        and not _blas.matmul_choice()[0]
    )


def _layout(shape: tuple[int, ...], batch_first: bool) -> tuple[int, int, int, int]:
    """``(batches, length, batch stride, position stride)`` in elements of a C-contiguous
    ``(B, L, w)`` (``batch_first``) or ``(L, B, w)`` array."""
    n0, n1, w = shape
    return (n0, n1, n1 * w, w) if batch_first else (n1, n0, w, n1 * w)


def packed_attention(
    y: Array,
    heads: int,
    batch_first: bool,
    causal: bool,
    scale: float,
    nan_rows: bool,
    p: Array | None = None,
    out: Array | None = None,
) -> tuple[Array, Array]:
    """Multi-head self-attention from the packed projection ``y`` (:func:`packed_attention_runs`
    must hold): ``(out, p)``, ``out`` the merged heads ``softmax(scale q_h k_h^T) v_h``, of
    ``y``'s layout with ``E`` columns, ``p (B, H, L, L)`` the weights (0 above the diagonal
    with ``causal``).

    ``y`` is ``(B, L, 3E)`` (``batch_first``) or ``(L, B, 3E)``; head ``h`` of the query is
    its columns ``[h D, (h + 1) D)``, of the key ``E`` further, of the value ``2E`` further
    (``D = E / heads``). Row softmax as :func:`attention_softmax` computes it (the same
    :func:`_fwd_row`: float32 through the polynomial ``exp``, weights below ``tiny`` written
    as 0; a row with a NaN or ``+inf`` score NaN). ``p``, ``out``: arrays of those shapes to
    write (a replay's), else new ones.

    Raises:
        ShapeError: ``y``'s last dim is not ``3 * heads * D``.
    """
    n0, n1, w = y.shape
    if heads < 1 or w % (3 * heads):
        raise ShapeError(f"packed_attention: packed projection {y.shape} is not (.., .., 3 * {heads} * D)")
    e = w // 3
    nb, ln, ysb, ysl = _layout(y.shape, batch_first)
    _, _, osb, osl = _layout((n0, n1, e), batch_first)
    if p is None:
        p = np.empty((nb, heads, ln, ln), y.dtype)
    if out is None:
        out = np.empty((n0, n1, e), y.dtype)
    if y.size == 0 or e == 0:
        out[...] = 0
        return out, p
    t = y.dtype.type
    args = (
        _blas._GEMM[y.dtype], _blas._SET_ADDRESS, nb, ln, e, heads, y, ysb, ysl, p, out, osb, osl,
        bool(causal), t(scale), t(np.finfo(y.dtype).tiny), bool(nan_rows), y.dtype == np.float32, PACKED_BLOCK_ROWS,
    )  # fmt: skip
    _packed_fwd(*args)
    if _trace.active is not None:
        _trace.note(_packed_fwd, *args)
    return out, p


def packed_attention_backward(
    y: Array, p: Array, g: Array, heads: int, batch_first: bool, causal: bool, scale: float
) -> Array:
    """The gradient of ``y`` (a new array of its shape) from ``g``, the gradient of
    :func:`packed_attention`'s output, and its weights ``p``: per head ``dv = P^T g_h``,
    ``dS = scale P (dP - rowsum(dP P))`` with ``dP = g_h v^T`` (the row pass of
    :func:`attention_softmax_backward`), ``dq = dS k``, ``dk = dS^T q``, packed as ``y``."""
    n0, n1, w = y.shape
    e = w // 3
    if g.shape != (n0, n1, e):
        raise ShapeError(f"packed_attention_backward: gradient {g.shape} for an output of shape {(n0, n1, e)}")
    dy = np.empty(y.shape, y.dtype)
    if y.size == 0 or e == 0:
        dy[...] = 0
        return dy
    g = np.ascontiguousarray(g, dtype=y.dtype)
    nb, ln, ysb, ysl = _layout(y.shape, batch_first)
    _, _, gsb, gsl = _layout(g.shape, batch_first)
    ds = np.empty(p.shape, p.dtype)
    t = y.dtype.type
    args = (
        _blas._GEMM[y.dtype], _blas._SET_ADDRESS, nb, ln, e, heads, y, ysb, ysl, p, g, gsb, gsl, ds, dy,
        bool(causal), t(scale), t(np.finfo(y.dtype).tiny), PACKED_BLOCK_ROWS,
    )  # fmt: skip
    _packed_bwd(*args)
    if _trace.active is not None:
        _trace.note(_packed_bwd, *args)
    return dy
