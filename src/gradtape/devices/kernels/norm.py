"""Row-wise kernels of :mod:`gradtape.ops.nn`: layer norm and RMS norm, forward and backward.

The norms work on a C-contiguous ``(R, N)`` view of the input: ``R`` rows (the leading dims
flattened) of ``N`` normalised elements (the trailing dims flattened). Each kernel reads a
row from memory once; the row's later passes hit the L1/L2 cache. So the forward moves one
read of ``x`` and one write of ``y``, the backward one read of ``x`` and ``g`` and one write
of ``dx``: the traffic of copying 1 and 1.5 arrays (measured figures at the end).

Forward (per row, two passes over the cached row, then the output):

* ``mu = sum(x) / N`` (0 for RMS norm), ``var = sum((x - mu)**2) / N``: two-pass, not
  ``E[x**2] - mu**2``, so no cancellation when ``|mu| >> std``;
* ``rstd = 1 / sqrt(var + eps)``; ``mu`` and ``rstd`` are saved per row for the backward
  (``x_hat`` is not saved: the backward recomputes it from ``x``);
* ``y = (x - mu) * rstd * w + b``.

Backward (one fused pass per row):

* first (reads ``x`` and ``g`` from memory): ``s1 = sum(g * w)``,
  ``s2 = sum(g * w * x_hat)`` with ``x_hat = (x - mu) * rstd``;
* then (the cached row): ``dx = rstd * (g * w - s1 / N - x_hat * s2 / N)`` (without the
  ``s1`` term for RMS norm), and ``dw_c += g * x_hat``, ``db_c += g`` into the partial sums
  ``dw_c``, ``db_c`` of the row's chunk.

Rows are cut into ``C = min(R, CHUNKS)`` fixed chunks (:data:`CHUNKS` = 16), chunk ``c``
holding rows ``[c * R // C, (c + 1) * R // C)``; each chunk adds its rows' ``dw``/``db``
terms in row order into its own partial row, and the partial rows are then added in chunk
order in float64. The partition depends on ``R`` only, so the serial and the ``prange``
kernels, any thread count and any schedule (TBB hands out chunks dynamically) give bitwise
the same ``dw``/``db``. Gradients nobody wants are not computed: ``need_dx=False`` leaves
the row sums and ``dx`` out, ``need_dw``/``need_db`` false the accumulations.

Precision: sums run in ``x``'s dtype, vectorised (the row sums are compiled with the
``reassoc`` fast-math flag, :data:`_FAST`, so LLVM sums a row in several interleaved vector
lanes, each a fraction of the row long, then adds the lanes), except the final sum of the
chunks' ``dw``/``db``, in float64. Summing in float64 was measured (float32, 2-core VM,
interleaved medians): the forward 1.9x slower on cached rows (64x128) and 1.1x on
4096x256; float64 partial sums of ``dw``/``db`` 1.1-1.4x slower backward. The tests check
float32 results against float64 references (1e-5 relative) and a row with ``|mu| = 1e4``
``std``. Without fast-math a float sum is one chain of scalar adds: the previous kernels
were compute-bound at about half of copy bandwidth.

Threads: rows (forward, in blocks) and chunks (backward) run on ``numba.prange`` from
:data:`PARALLEL_THRESHOLD` elements, serially below it. Inputs the kernels do not take
directly (non-contiguous ``x``, ``g`` or parameters) are first copied to C order (one pass,
cheaper than any numpy expression here). Only ``sqrt`` (one per row, an instruction, not a
libm call) is not plain arithmetic.

Measured (issue 17; float32 layer norm with weight and bias, through these wrappers,
interleaved medians on the shared 2-core VM at load average 1.5; "old" is the previous
version of this module: row views per call, strict one-chain sums, numpy backward when
``dx`` was not wanted), forward / backward / backward without ``dx``, in us:
4096x256: old 246 / 308 / 664, new 104 / 141 / 88 (``np.copyto`` of x: 91);
4096x1024: old 1153 / 1625 / 6395, new 968 / 1070 / 692 (copy 665: the backward moves 3
arrays at 47 GB/s, 93% of a copy's 50; the forward includes the page faults of a fresh
16.8 MB ``y``); 64x128: old 11.4 / 16.9 / 11.6, new 3.9 / 7.0 / 6.2 (mostly call overhead:
the kernels alone take 1.7 / 3.1).
"""

from __future__ import annotations

import math
from typing import Any, Literal, overload

import numba
import numpy as np

from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels._jit import jit, serial_and_parallel
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD as ELEMENTWISE_THRESHOLD
from gradtape.errors import DTypeError, ShapeError

__all__ = [
    "CHUNKS",
    "PARALLEL_THRESHOLD",
    "channel_affine",
    "channel_affine_backward",
    "norm_backward",
    "norm_forward",
]

Array = np.ndarray[Any, Any]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

PARALLEL_THRESHOLD = ELEMENTWISE_THRESHOLD
"""Inputs with at least this many elements (and more than one row) run the ``prange``
kernels: the elementwise kernels' threshold (``1 << 20``). Measured on the shared 2-core VM
(float32, rows of 256 and 1024), time of the parallel kernel over the serial one, forward /
backward: each call right after a 256x256 BLAS product (as in a training step; OpenBLAS's
threads still hold the second core), 64k elements 1.29 / 1.12, 256k 1.08 / 1.04, 1M
0.92-1.02 / 0.94-0.99, 4M 1.02 / 0.97; called back to back on a quiet machine, 4M: 0.5 /
0.5 (the backward at 47 GB/s, a copy's bandwidth). Two threads never lose much from 1M."""

CHUNKS = 16
"""Number of fixed row chunks whose ``dw``/``db`` partial sums the backward adds (at most;
fewer rows make one chunk each). Independent of the thread count, so results are too."""

_FAST = frozenset({"reassoc", "nsz"})
"""Fast-math flags of the row sums: ``reassoc`` lets LLVM vectorise them. No ``contract``
(the sums stay products rounded, then added) and no ``nnan``/``ninf``: NaN and inf propagate."""


# ----- compiled kernels (kept in this module: numba's cache key covers a kernel's own
# ----- module only). The row helpers take the 2-D arrays and a row index: a row view
# ----- (``x[i]``) per call costs a reference count and about 25 ns, half the time of a
# ----- 128-wide row. Only the row sums are compiled with fast-math flags; the elementwise
# ----- loops are strict IEEE (vectorised all the same), so every variant of a loop (with or
# ----- without dw, db, dx) computes the same bits.


@jit(fastmath=_FAST)
def _row_moments(x: Array, i: int, inv_n: Any, centered: bool) -> tuple[Any, Any]:
    """``(mu, var)`` of row ``i`` in x's dtype: ``mu`` (0 if not ``centered``), then the
    variance about it, two vectorised passes over the (cached) row."""
    n = x.shape[1]
    mu = x.dtype.type(0)
    if centered:
        s = x.dtype.type(0)
        for j in range(n):
            s += x[i, j]
        mu = s * inv_n
    q = x.dtype.type(0)
    for j in range(n):
        d = x[i, j] - mu
        q += d * d
    return mu, q * inv_n


@jit(fastmath=_FAST)
def _row_dots(x: Array, g: Array, w: Array, i: int, mu: Any, r: Any) -> tuple[Any, Any]:
    """``(sum(g * w), sum(g * w * (x - mu) * r))`` over row ``i``, vectorised, in x's dtype."""
    a = x.dtype.type(0)
    c = x.dtype.type(0)
    for j in range(x.shape[1]):
        d = g[i, j] * w[j]
        a += d
        c += d * ((x[i, j] - mu) * r)
    return a, c


@jit()
def _forward_rows(
    y: Array,
    mean: Array,
    rstd: Array,
    x: Array,
    w: Array,
    b: Array,
    inv_n: Any,
    eps: Any,
    centered: bool,
    lo: int,
    hi: int,
) -> None:
    """Rows ``lo:hi``: ``mean``, ``rstd`` and ``y``, all in x's dtype."""
    n = x.shape[1]
    for i in range(lo, hi):
        mu, var = _row_moments(x, i, inv_n, centered)
        r = x.dtype.type(1) / np.sqrt(var + eps)
        for j in range(n):
            y[i, j] = (x[i, j] - mu) * r * w[j] + b[j]
        mean[i] = mu
        rstd[i] = r


@jit()
def _backward_rows(
    dx: Array,
    dw: Array,
    db: Array,
    x: Array,
    g: Array,
    w: Array,
    mean: Array,
    rstd: Array,
    inv_n: Any,
    centered: bool,
    lo: int,
    hi: int,
) -> None:
    """Rows ``lo:hi``: ``dx`` (if ``dx`` has ``N`` columns) and the rows' terms added in row
    order into the partial sums ``dw``, ``db`` (1-D, length ``N``, or 0 if not wanted)."""
    n = x.shape[1]
    want_dx = dx.shape[1] != 0
    want_dw = dw.shape[0] != 0
    want_db = db.shape[0] != 0
    zero = x.dtype.type(0)
    for i in range(lo, hi):
        mu = mean[i]
        r = rstd[i]
        if want_dx:
            a, c = _row_dots(x, g, w, i, mu, r)
            m1 = a * inv_n if centered else zero
            m2 = c * inv_n
            if want_dw and want_db:
                for j in range(n):
                    xh = (x[i, j] - mu) * r
                    dx[i, j] = r * (g[i, j] * w[j] - m1 - xh * m2)
                    dw[j] += g[i, j] * xh
                    db[j] += g[i, j]
            elif want_dw:
                for j in range(n):
                    xh = (x[i, j] - mu) * r
                    dx[i, j] = r * (g[i, j] * w[j] - m1 - xh * m2)
                    dw[j] += g[i, j] * xh
            else:
                for j in range(n):
                    xh = (x[i, j] - mu) * r
                    dx[i, j] = r * (g[i, j] * w[j] - m1 - xh * m2)
                if want_db:
                    for j in range(n):
                        db[j] += g[i, j]
        else:
            if want_dw:
                for j in range(n):
                    xh = (x[i, j] - mu) * r
                    dw[j] += g[i, j] * xh
            if want_db:
                for j in range(n):
                    db[j] += g[i, j]


@jit()
def _norm_forward_serial(
    y: Array, mean: Array, rstd: Array, x: Array, w: Array, b: Array, inv_n: Any, eps: Any, centered: bool
) -> None:
    """Forward over the rows of the ``(R, N)`` arrays: ``y``, and ``mean``/``rstd`` per row."""
    _forward_rows(y, mean, rstd, x, w, b, inv_n, eps, centered, 0, x.shape[0])


@jit(parallel=True)
def _norm_forward_parallel(
    y: Array, mean: Array, rstd: Array, x: Array, w: Array, b: Array, inv_n: Any, eps: Any, centered: bool
) -> None:
    """:func:`_norm_forward_serial` with blocks of rows on ``numba.prange`` (rows are
    independent: any partition gives the same values)."""
    rows = x.shape[0]
    blocks = min(rows, 4 * CHUNKS)
    for c in numba.prange(blocks):
        _forward_rows(y, mean, rstd, x, w, b, inv_n, eps, centered, c * rows // blocks, (c + 1) * rows // blocks)


@jit()
def _norm_backward_serial(
    dx: Array, dw: Array, db: Array, x: Array, g: Array, w: Array, mean: Array, rstd: Array, inv_n: Any, centered: bool
) -> None:
    """Backward over the ``(R, N)`` rows: ``dx`` (unless ``dx`` is ``(R, 0)``) and the partial
    sums ``dw``/``db`` of shape ``(C, N)`` for ``C`` fixed chunks of rows (``(C, 0)``: not
    wanted), chunk ``c`` holding rows ``[c * R // C, (c + 1) * R // C)``. The partial rows
    are overwritten."""
    rows = x.shape[0]
    chunks = dw.shape[0]
    dw[:] = 0
    db[:] = 0
    for c in range(chunks):
        _backward_rows(
            dx, dw[c], db[c], x, g, w, mean, rstd, inv_n, centered, c * rows // chunks, (c + 1) * rows // chunks
        )


@jit(parallel=True)
def _norm_backward_parallel(
    dx: Array, dw: Array, db: Array, x: Array, g: Array, w: Array, mean: Array, rstd: Array, inv_n: Any, centered: bool
) -> None:
    """:func:`_norm_backward_serial` with the chunks on ``numba.prange`` (each chunk writes
    only its own partial rows and its rows of ``dx``: the same values, whatever the schedule)."""
    rows = x.shape[0]
    chunks = dw.shape[0]
    for c in numba.prange(chunks):
        dwc = dw[c]
        dbc = db[c]
        dwc[:] = 0
        dbc[:] = 0
        _backward_rows(dx, dwc, dbc, x, g, w, mean, rstd, inv_n, centered, c * rows // chunks, (c + 1) * rows // chunks)


@jit()
def _sum_chunks(dw: Array, db: Array, dw_parts: Array, db_parts: Array) -> None:
    """``dw[j] = sum_c dw_parts[c, j]`` and the same for ``db``, each added in chunk order in
    float64 and rounded once (one call for both: a numba call costs about 0.4 us)."""
    for out, parts in ((dw, dw_parts), (db, db_parts)):
        n = parts.shape[1]
        acc = np.zeros(n)
        for c in range(parts.shape[0]):
            for j in range(n):
                acc[j] += parts[c, j]
        for j in range(n):
            out[j] = acc[j]


# ----- public wrappers -------------------------------------------------------------------


def _check(op: str, x: Array, k: int, *params: Array | None) -> int:
    dt = x.dtype
    if dt is not _FLOATS[0] and dt is not _FLOATS[1] and dt not in _FLOATS:
        raise DTypeError(f"{op}: x has dtype {x.dtype}; kernels take float32 or float64")
    if not 1 <= k <= x.ndim:
        raise ShapeError(f"{op}: cannot normalise the last {k} dims of an array of shape {x.shape}")
    nshape = x.shape[x.ndim - k :]
    for p in params:
        if p is not None:
            if p.shape != nshape:
                raise ShapeError(f"{op}: parameter of shape {p.shape} does not match normalised dims {nshape}")
            if p.dtype is not dt and p.dtype != dt:
                raise DTypeError(f"{op}: parameter dtype {p.dtype} mixed with x's {x.dtype}")
    return math.prod(nshape)


_CONST: dict[tuple[int, np.dtype[Any], float], Array] = {}


def _vec(p: Array | None, n: int, dtype: np.dtype[Any], fill: float) -> Array:
    """``p`` as a C-contiguous ``(n,)`` array (copied if it is not one); a cached read-only
    ``fill`` vector if ``p`` is ``None``."""
    if p is None:
        key = (n, dtype, fill)
        v = _CONST.get(key)
        if v is None:
            if len(_CONST) > 64:
                _CONST.clear()
            v = _CONST[key] = np.full(n, fill, dtype)
            v.flags.writeable = False
        return v
    if p.ndim == 1 and p.flags.c_contiguous:
        return p
    return np.ascontiguousarray(p).reshape(n)


def _parallel(rows: int, size: int) -> bool:
    return size >= PARALLEL_THRESHOLD and rows > 1


def norm_forward(
    x: Array,
    k: int,
    w: Array | None,
    b: Array | None,
    eps: float,
    centered: bool,
    out: tuple[Array, Array, Array] | None = None,
) -> tuple[Array, Array, Array]:
    """Normalise ``x`` over its last ``k`` dims: ``(y, mean, rstd)``.

    ``mu = mean(x)`` (0 if not ``centered``), ``rstd = 1 / sqrt(mean((x - mu)**2) + eps)``,
    ``y = (x - mu) * rstd * w + b``, per row of ``N`` (the product of the last ``k`` dims)
    elements (precision: module docstring).

    Args:
        x: float32/float64 array with at least ``k`` dims (any layout; a non-contiguous ``x``
            is copied to C order first).
        k: number of trailing dims normalised together (``N`` = their product).
        w, b: scale and shift of the trailing dims' shape (``x``'s dtype), or ``None``.
        eps: added to the variance (rounded to ``x``'s dtype).
        centered: ``True`` for layer norm (subtract the mean), ``False`` for RMS norm
            (``mean`` is then zeros).
        out: ``(y, mean, rstd)`` arrays of an earlier call with the same shapes (CPU, C
            order) to write instead of new ones (:func:`gradtape.capture`'s replays).

    Returns:
        ``y`` of ``x``'s shape (C order), and ``mean`` and ``rstd`` of shape ``x.shape[:-k]``
        in ``x``'s dtype.

    Raises:
        ShapeError: ``k`` is out of range, or ``w``/``b`` do not have the trailing shape.
        DTypeError: a dtype is not ``x``'s, or not float32/float64.
    """
    n = _check("norm_forward", x, k, w, b)
    if _on_gpu(x):
        from gradtape.devices.kernels import cuda

        y_, mean_, rstd_ = cuda.norm_forward(x, k, w, b, eps, centered)
        return y_, mean_, rstd_
    dt = x.dtype
    lead = x.shape[: x.ndim - k]
    rows = math.prod(lead)
    if out is None:
        y, mean, rstd = np.empty(x.shape, dt), np.empty(rows, dt), np.empty(rows, dt)
    else:
        y, mean, rstd = out[0], out[1].reshape(rows), out[2].reshape(rows)
    if n == 0 or rows == 0:  # nothing to normalise: mean 0, variance taken as 0
        mean.fill(0.0)
        rstd.fill(1.0 / np.sqrt(eps) if eps > 0 else np.inf)
        return y, mean.reshape(lead), rstd.reshape(lead)
    wv, bv = _vec(w, n, dt, 1.0), _vec(b, n, dt, 0.0)
    x2 = np.ascontiguousarray(x).reshape(rows, n)
    kernel = _norm_forward_parallel if _parallel(rows, x.size) else _norm_forward_serial
    kernel(y.reshape(rows, n), mean, rstd, x2, wv, bv, dt.type(1.0 / n), dt.type(eps), centered)
    return y, mean.reshape(lead), rstd.reshape(lead)


@overload
def norm_backward(
    g: Array,
    x: Array,
    k: int,
    w: Array | None,
    mean: Array,
    rstd: Array,
    centered: bool,
    need_dx: bool = True,
    need_dw: Literal[True] = True,
    need_db: Literal[True] = True,
) -> tuple[Array | None, Array, Array]: ...
@overload
def norm_backward(
    g: Array,
    x: Array,
    k: int,
    w: Array | None,
    mean: Array,
    rstd: Array,
    centered: bool,
    need_dx: bool = True,
    need_dw: bool = True,
    need_db: bool = True,
) -> tuple[Array | None, Array | None, Array | None]: ...
def norm_backward(
    g: Array,
    x: Array,
    k: int,
    w: Array | None,
    mean: Array,
    rstd: Array,
    centered: bool,
    need_dx: bool = True,
    need_dw: bool = True,
    need_db: bool = True,
) -> tuple[Array | None, Array | None, Array | None]:
    """Gradients of :func:`norm_forward` given the output's gradient ``g``: ``(dx, dw, db)``.

    ``x_hat = (x - mean) * rstd``, ``gw = g * w``;
    ``dx = rstd * (gw - mean(gw) - x_hat * mean(gw * x_hat))`` (no ``mean(gw)`` term if not
    ``centered``), ``dw = sum(g * x_hat)``, ``db = sum(g)`` (sums over the leading dims, by
    fixed chunks of rows then in float64: bitwise reproducible, module docstring).

    Args:
        g: gradient of ``y``, of ``x``'s shape and dtype (any layout).
        x, k, w, centered: as given to :func:`norm_forward`.
        mean, rstd: as returned by :func:`norm_forward`.
        need_dx, need_dw, need_db: which gradients to compute; the others come back as
            ``None`` and cost nothing.

    Returns:
        ``dx`` (``x``'s shape, fresh), ``dw`` and ``db`` (the trailing shape, fresh, in
        ``x``'s dtype, whether or not ``w`` was given), each ``None`` where not needed.

    Raises:
        ShapeError, DTypeError: as :func:`norm_forward`, or ``g`` differs from ``x`` in
            shape or dtype, or ``mean``/``rstd`` do not have the leading shape.
    """
    n = _check("norm_backward", x, k, w)
    if g.shape != x.shape or g.dtype != x.dtype:
        raise ShapeError(f"norm_backward: gradient {g.shape} {g.dtype} does not match x {x.shape} {x.dtype}")
    dt = x.dtype
    lead = x.shape[: x.ndim - k]
    nshape = x.shape[x.ndim - k :]
    if mean.shape != lead or rstd.shape != lead:
        raise ShapeError(f"norm_backward: mean {mean.shape} / rstd {rstd.shape} must have x's leading shape {lead}")
    if _on_gpu(x):
        from gradtape.devices.kernels import cuda

        gpu: tuple[Array | None, Array | None, Array | None] = cuda.norm_backward(
            g, x, k, w, mean, rstd, centered, need_dx, need_dw, need_db
        )
        return gpu
    rows = math.prod(lead)
    if n == 0 or rows == 0:
        return (
            np.zeros(x.shape, dt) if need_dx else None,
            np.zeros(nshape, dt) if need_dw else None,
            np.zeros(nshape, dt) if need_db else None,
        )
    if not (need_dx or need_dw or need_db):
        return None, None, None
    wv = _vec(w, n, dt, 1.0)
    x2 = (x if x.flags.c_contiguous else np.ascontiguousarray(x)).reshape(rows, n)
    g2 = (g if g.flags.c_contiguous else np.ascontiguousarray(g)).reshape(rows, n)
    m1 = np.ascontiguousarray(mean, dt).reshape(rows)
    r1 = np.ascontiguousarray(rstd, dt).reshape(rows)
    dx = np.empty(x.shape, dt) if need_dx else None
    dx2 = dx.reshape(rows, n) if dx is not None else np.empty((rows, 0), dt)
    chunks = min(rows, CHUNKS)
    dw_parts = np.empty((chunks, n if need_dw else 0), dt)
    db_parts = np.empty((chunks, n if need_db else 0), dt)
    kernel = _norm_backward_parallel if _parallel(rows, x.size) else _norm_backward_serial
    kernel(dx2, dw_parts, db_parts, x2, g2, wv, m1, r1, dt.type(1.0 / n), centered)
    dw = np.empty(dw_parts.shape[1], dt)
    db = np.empty(db_parts.shape[1], dt)
    _sum_chunks(dw, db, dw_parts, db_parts)
    return dx, dw.reshape(nshape) if need_dw else None, db.reshape(nshape) if need_db else None


# ----- per-channel affine of the grouped norms (group norm, instance norm) -----------------
# Group norm normalises rows of ``(N * G, C / G * M)`` with the kernels above (no weight:
# ``y = x_hat``) and then scales each channel: its weight is per channel, not per element of a
# row, so the affine and its parameter gradients run here, on the ``(N, C, M)`` view.


def _channel_affine(y: Array, w: Array, b: Array) -> None:
    """``y[n, c, :] = y[n, c, :] * w[c] + b[c]`` in place, one ``(n, c)`` row per iteration."""
    rows = y.shape[0] * y.shape[1]
    c_count = y.shape[1]
    for r in numba.prange(rows):
        n = r // c_count
        c = r - n * c_count
        wc = w[c]
        bc = b[c]
        for j in range(y.shape[2]):
            y[n, c, j] = y[n, c, j] * wc + bc


_channel_affine_serial, _channel_affine_parallel = serial_and_parallel(_channel_affine)


def _channel_sums(dw: Array, db: Array, x: Array, g: Array, mean: Array, rstd: Array) -> None:
    """``dw[c] = sum_{n, j} g * (x - mean[n, k]) * rstd[n, k]`` and ``db[c] = sum_{n, j} g``
    (``k = c // (C / G)`` the channel's group; ``dw``/``db`` of length 0: not wanted): one
    channel per iteration, its rows summed in ``x``'s dtype (vectorised) and added over ``n``
    in float64, the same order whatever the schedule."""
    c_count = x.shape[1]
    per = c_count // mean.shape[1]
    want_dw = dw.shape[0] != 0
    want_db = db.shape[0] != 0
    for c in numba.prange(c_count):
        k = c // per
        aw = 0.0
        ab = 0.0
        for n in range(x.shape[0]):
            mu = mean[n, k]
            r = rstd[n, k]
            sw = x.dtype.type(0)
            sb = x.dtype.type(0)
            for j in range(x.shape[2]):
                sw += g[n, c, j] * ((x[n, c, j] - mu) * r)
                sb += g[n, c, j]
            aw += sw
            ab += sb
        if want_dw:
            dw[c] = aw
        if want_db:
            db[c] = ab


_channel_sums_serial, _channel_sums_parallel = serial_and_parallel(_channel_sums, fastmath=_FAST)


def channel_affine(y: Array, w: Array | None, b: Array | None) -> None:
    """Scale and shift the channels of ``y`` in place: ``y[n, c, ...] = y[n, c, ...] * w[c] + b[c]``.

    Args:
        y: a C-contiguous float32/float64 array ``(N, C, *)`` (the normalised ``x_hat``).
        w, b: ``(C,)`` arrays of ``y``'s dtype, or ``None`` (1 and 0).

    Raises:
        ShapeError, DTypeError: ``y`` is not C-contiguous with at least 2 dims, or ``w``/``b``
            is not ``(C,)`` of ``y``'s dtype.
    """
    if w is None and b is None:
        return
    if _on_gpu(y):
        from gradtape.devices.kernels import cuda

        cuda.channel_affine(y, w, b)
        return
    if y.ndim < 2 or not y.flags.c_contiguous:
        raise ShapeError(f"channel_affine: needs a C-contiguous (N, C, *) array, got shape {y.shape}")
    c = y.shape[1]
    for p in (w, b):
        if p is not None and (p.shape != (c,) or p.dtype != y.dtype):
            raise DTypeError(f"channel_affine: parameter {p.shape} {p.dtype} does not fit y {y.shape} {y.dtype}")
    y3 = y.reshape(y.shape[0], c, math.prod(y.shape[2:]))
    kernel = _channel_affine_parallel if _parallel(y3.shape[0] * c, y.size) else _channel_affine_serial
    kernel(y3, _vec(w, c, y.dtype, 1.0), _vec(b, c, y.dtype, 0.0))


def channel_affine_backward(
    g: Array, x: Array, mean: Array, rstd: Array, need_dw: bool, need_db: bool
) -> tuple[Array | None, Array | None]:
    """The parameter gradients of a grouped norm's per-channel affine: ``(dw, db)``.

    With ``G`` groups of ``C / G`` channels, ``x_hat[n, c] = (x[n, c] - mean[n, c // (C / G)]) *
    rstd[n, c // (C / G)]``: ``dw[c] = sum(g[:, c] * x_hat[:, c])``, ``db[c] = sum(g[:, c])``
    (over the batch and the spatial dims; each channel summed in ``x``'s dtype over its row,
    then over the batch in float64: reproducible, whatever the threads).

    Args:
        g, x: ``(N, C, *)`` arrays of one float dtype and shape (any layout).
        mean, rstd: ``(N, G)`` as :func:`norm_forward` gives them for the ``(N, G, -1)`` view.
        need_dw, need_db: which to compute; the other comes back ``None``.

    Raises:
        ShapeError: the shapes do not fit (``g`` is not ``x``'s shape, ``G`` does not divide ``C``).
    """
    if g.shape != x.shape or g.dtype != x.dtype or x.ndim < 2:
        raise ShapeError(f"channel_affine_backward: gradient {g.shape} {g.dtype} does not match x {x.shape} {x.dtype}")
    n, c = x.shape[:2]
    if mean.shape != rstd.shape or mean.ndim != 2 or mean.shape[0] != n or mean.shape[1] == 0 or c % mean.shape[1]:
        raise ShapeError(f"channel_affine_backward: mean {mean.shape} / rstd {rstd.shape} do not fit x {x.shape}")
    dt = x.dtype
    if not (need_dw or need_db):
        return None, None
    if _on_gpu(x):
        from gradtape.devices.kernels import cuda

        gpu: tuple[Array | None, Array | None] = cuda.channel_affine_backward(g, x, mean, rstd, need_dw, need_db)
        return gpu
    dw = np.empty(c if need_dw else 0, dt)
    db = np.empty(c if need_db else 0, dt)
    m = math.prod(x.shape[2:])
    x3 = np.ascontiguousarray(x).reshape(n, c, m)
    g3 = np.ascontiguousarray(g).reshape(n, c, m)
    kernel = _channel_sums_parallel if _parallel(c, x.size) else _channel_sums_serial
    kernel(dw, db, x3, g3, np.ascontiguousarray(mean, dt), np.ascontiguousarray(rstd, dt))
    return (dw if need_dw else None), (db if need_db else None)
