"""Row-wise kernels of :mod:`gradtape.ops.nn`: layer norm and RMS norm, forward and backward.

The norms work on a C-contiguous ``(R, N)`` view of the input: ``R`` rows (the leading dims
flattened) of ``N`` normalised elements (the trailing dims flattened). One row is read from
memory once and stays in cache for the row's next passes, so a forward costs about one
memory pass where numpy's expression makes six. Measured on 4096x1024 float32 with 2 threads:
forward 2.8 ms (numpy expression 18 ms, PyTorch 2.5 ms), backward 3.8 ms (numpy 38 ms,
PyTorch about 4.3 ms). Row sums use eight independent accumulators: without
``fastmath`` LLVM may not reorder one running sum, and eight chains run about as fast as
numpy's pairwise SIMD sum (measured: 1.2 ms vs 3.7 ms with one chain for 4096x1024 float32).

Below :data:`~gradtape.devices.kernels.elementwise.PARALLEL_THRESHOLD` elements the serial
kernels run; above it ``numba.prange`` runs rows (forward) or chunks of rows (backward, each
chunk summing its own partial weight and bias gradients, added afterwards) on every core.
Inputs the kernels do not take (non-contiguous views, weights of another layout) go to the
numpy expression, which computes the same values.

Formulas (per row, ``N`` elements; ``centered`` selects layer norm, else RMS norm):

* forward: ``mu = mean(x)`` (0 for RMS norm), ``rstd = 1 / sqrt(mean((x - mu)**2) + eps)``,
  ``xhat = (x - mu) * rstd``, ``y = xhat * w + b``;
* backward: ``dxhat = g * w``,
  ``dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))`` (without the
  ``mean(dxhat)`` term for RMS norm), ``dw = sum_rows(g * xhat)``, ``db = sum_rows(g)``.

Only ``sqrt`` (one per row, an instruction, not a libm call) is not plain arithmetic.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from gradtape.devices.kernels._jit import jit
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD
from gradtape.errors import DTypeError, ShapeError

__all__ = ["norm_backward", "norm_forward"]

Array = np.ndarray[Any, Any]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ----- compiled row helpers (kept in this module: numba's cache key covers a kernel's own
# ----- module only) -----------------------------------------------------------------------


@jit()
def _row_sum(x: Array) -> Any:
    n = x.shape[0]
    z = x.dtype.type(0)
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = z
    n8 = n - n % 8
    for j in range(0, n8, 8):
        s0 += x[j]
        s1 += x[j + 1]
        s2 += x[j + 2]
        s3 += x[j + 3]
        s4 += x[j + 4]
        s5 += x[j + 5]
        s6 += x[j + 6]
        s7 += x[j + 7]
    for j in range(n8, n):
        s0 += x[j]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@jit()
def _row_sq_dev(x: Array, mu: Any) -> Any:
    """``sum((x - mu)**2)`` over one row."""
    n = x.shape[0]
    z = x.dtype.type(0)
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = z
    n8 = n - n % 8
    for j in range(0, n8, 8):
        d0 = x[j] - mu
        d1 = x[j + 1] - mu
        d2 = x[j + 2] - mu
        d3 = x[j + 3] - mu
        d4 = x[j + 4] - mu
        d5 = x[j + 5] - mu
        d6 = x[j + 6] - mu
        d7 = x[j + 7] - mu
        s0 += d0 * d0
        s1 += d1 * d1
        s2 += d2 * d2
        s3 += d3 * d3
        s4 += d4 * d4
        s5 += d5 * d5
        s6 += d6 * d6
        s7 += d7 * d7
    for j in range(n8, n):
        d = x[j] - mu
        s0 += d * d
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@jit()
def _row_dots(x: Array, g: Array, w: Array, mu: Any, r: Any) -> Any:
    """``(sum(g * w), sum(g * w * (x - mu) * r))`` over one row."""
    n = x.shape[0]
    z = x.dtype.type(0)
    a0 = a1 = a2 = a3 = z
    b0 = b1 = b2 = b3 = z
    n4 = n - n % 4
    for j in range(0, n4, 4):
        d0 = g[j] * w[j]
        d1 = g[j + 1] * w[j + 1]
        d2 = g[j + 2] * w[j + 2]
        d3 = g[j + 3] * w[j + 3]
        a0 += d0
        a1 += d1
        a2 += d2
        a3 += d3
        b0 += d0 * ((x[j] - mu) * r)
        b1 += d1 * ((x[j + 1] - mu) * r)
        b2 += d2 * ((x[j + 2] - mu) * r)
        b3 += d3 * ((x[j + 3] - mu) * r)
    for j in range(n4, n):
        d = g[j] * w[j]
        a0 += d
        b0 += d * ((x[j] - mu) * r)
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


@jit()
def _forward_row(y: Array, x: Array, w: Array, b: Array, inv_n: Any, eps: Any, centered: bool) -> Any:
    mu = _row_sum(x) * inv_n if centered else x.dtype.type(0)
    var = _row_sq_dev(x, mu) * inv_n
    r = x.dtype.type(1) / np.sqrt(var + eps)
    for j in range(x.shape[0]):
        y[j] = (x[j] - mu) * r * w[j] + b[j]
    return mu, r


@jit()
def _backward_row(
    dx: Array, dw: Array, db: Array, x: Array, g: Array, w: Array, mu: Any, r: Any, inv_n: Any, centered: bool
) -> None:
    s1, s2 = _row_dots(x, g, w, mu, r)
    m1 = s1 * inv_n if centered else x.dtype.type(0)
    m2 = s2 * inv_n
    for j in range(x.shape[0]):
        xh = (x[j] - mu) * r
        dx[j] = r * (g[j] * w[j] - m1 - xh * m2)
        dw[j] += g[j] * xh
        db[j] += g[j]


# ----- kernels ---------------------------------------------------------------------------


@jit()
def _norm_forward_serial(
    y: Array, mean: Array, rstd: Array, x: Array, w: Array, b: Array, inv_n: Any, eps: Any, centered: bool
) -> None:
    for i in range(x.shape[0]):
        mean[i], rstd[i] = _forward_row(y[i], x[i], w, b, inv_n, eps, centered)


@jit(parallel=True)
def _norm_forward_parallel(
    y: Array, mean: Array, rstd: Array, x: Array, w: Array, b: Array, inv_n: Any, eps: Any, centered: bool
) -> None:
    for i in numba.prange(x.shape[0]):
        mean[i], rstd[i] = _forward_row(y[i], x[i], w, b, inv_n, eps, centered)


@jit()
def _norm_backward_serial(
    dx: Array, dw: Array, db: Array, x: Array, g: Array, w: Array, mean: Array, rstd: Array, inv_n: Any, centered: bool
) -> None:
    for i in range(x.shape[0]):
        _backward_row(dx[i], dw[0], db[0], x[i], g[i], w, mean[i], rstd[i], inv_n, centered)


@jit(parallel=True)
def _norm_backward_parallel(
    dx: Array, dw: Array, db: Array, x: Array, g: Array, w: Array, mean: Array, rstd: Array, inv_n: Any, centered: bool
) -> None:
    # dw, db: (chunks, N) partial sums, one row per chunk of rows, so no two threads write
    # the same element.
    rows = x.shape[0]
    chunks = dw.shape[0]
    for c in numba.prange(chunks):
        lo = c * rows // chunks
        hi = (c + 1) * rows // chunks
        for i in range(lo, hi):
            _backward_row(dx[i], dw[c], db[c], x[i], g[i], w, mean[i], rstd[i], inv_n, centered)


# ----- numpy fallbacks -------------------------------------------------------------------


def _np_forward(
    x: Array, k: int, w: Array | None, b: Array | None, eps: Any, centered: bool
) -> tuple[Array, Array, Array]:
    axes = tuple(range(x.ndim - k, x.ndim))
    if centered:
        mu = x.mean(axis=axes, keepdims=True)
        xc = x - mu
    else:
        mu = np.zeros(x.shape[: x.ndim - k] + (1,) * k, x.dtype)
        xc = x
    var = np.mean(xc * xc, axis=axes, keepdims=True)
    r = np.divide(x.dtype.type(1), np.sqrt(var + eps))
    y = np.multiply(xc, r)
    if w is not None:
        y *= w
    if b is not None:
        y += b
    lead = x.shape[: x.ndim - k]
    return y, mu.reshape(lead), r.reshape(lead)


def _np_backward(
    g: Array,
    x: Array,
    k: int,
    w: Array | None,
    mean: Array,
    rstd: Array,
    centered: bool,
    need_dx: bool,
) -> tuple[Array | None, Array, Array]:
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    kept = mean.shape + (1,) * k
    r = rstd.reshape(kept)
    xh = (x - mean.reshape(kept)) * r
    dw = np.asarray((g * xh).sum(axis=lead))
    db = np.asarray(g.sum(axis=lead))
    dx = None
    if need_dx:
        dxh = g * w if w is not None else g
        inner = dxh - xh * np.mean(dxh * xh, axis=axes, keepdims=True)
        if centered:
            inner -= np.mean(dxh, axis=axes, keepdims=True)
        dx = np.multiply(inner, r)
    return dx, dw, db


# ----- public wrappers -------------------------------------------------------------------


def _check(op: str, x: Array, k: int, *params: Array | None) -> int:
    if x.dtype not in _FLOATS:
        raise DTypeError(f"{op}: x has dtype {x.dtype}; kernels take float32 or float64")
    if not 1 <= k <= x.ndim:
        raise ShapeError(f"{op}: cannot normalise the last {k} dims of an array of shape {x.shape}")
    nshape = x.shape[x.ndim - k :]
    for p in params:
        if p is not None:
            if p.shape != nshape:
                raise ShapeError(f"{op}: parameter of shape {p.shape} does not match normalised dims {nshape}")
            if p.dtype != x.dtype:
                raise DTypeError(f"{op}: parameter dtype {p.dtype} mixed with x's {x.dtype}")
    return int(np.prod(nshape))


def _vec(p: Array | None, n: int, dtype: np.dtype[Any], fill: float) -> Array | None:
    """``p`` as a contiguous ``(n,)`` array (a ``fill`` vector if ``None``), or ``None`` if
    it cannot be one without a copy."""
    if p is None:
        return np.full(n, fill, dtype)
    if not p.flags.c_contiguous:
        return None
    return p.reshape(n)


def norm_forward(
    x: Array, k: int, w: Array | None, b: Array | None, eps: float, centered: bool
) -> tuple[Array, Array, Array]:
    """Normalise ``x`` over its last ``k`` dims: ``(y, mean, rstd)``.

    Args:
        x: float32/float64 array with at least ``k`` dims.
        k: number of trailing dims normalised together (``N`` = their product).
        w, b: scale and shift of the trailing dims' shape (``x``'s dtype), or ``None``.
        eps: added to the variance (converted to ``x``'s dtype).
        centered: ``True`` for layer norm (subtract the mean), ``False`` for RMS norm
            (``mean`` is then zeros).

    Returns:
        ``y`` of ``x``'s shape, and ``mean`` and ``rstd`` of shape ``x.shape[:-k]``.

    Raises:
        ShapeError: ``k`` is out of range, or ``w``/``b`` do not have the trailing shape.
        DTypeError: a dtype is not ``x``'s, or not float32/float64.
    """
    n = _check("norm_forward", x, k, w, b)
    dt = x.dtype
    wv, bv = _vec(w, n, dt, 1.0), _vec(b, n, dt, 0.0)
    if not x.flags.c_contiguous or wv is None or bv is None or n == 0:
        return _np_forward(x, k, w, b, dt.type(eps), centered)
    lead = x.shape[: x.ndim - k]
    x2 = x.reshape(-1, n)
    rows = x2.shape[0]
    y = np.empty(x.shape, dt)
    mean, rstd = np.empty(rows, dt), np.empty(rows, dt)
    parallel = x2.size >= PARALLEL_THRESHOLD and rows > 1
    kernel = _norm_forward_parallel if parallel else _norm_forward_serial
    kernel(y.reshape(-1, n), mean, rstd, x2, wv, bv, dt.type(1.0 / n), dt.type(eps), centered)
    return y, mean.reshape(lead), rstd.reshape(lead)


def norm_backward(
    g: Array,
    x: Array,
    k: int,
    w: Array | None,
    mean: Array,
    rstd: Array,
    centered: bool,
    need_dx: bool = True,
) -> tuple[Array | None, Array, Array]:
    """Gradients of :func:`norm_forward` given the output's gradient ``g``: ``(dx, dw, db)``.

    Args:
        g: gradient of ``y``, of ``x``'s shape and dtype.
        x, k, w, centered: as given to :func:`norm_forward`.
        mean, rstd: as returned by :func:`norm_forward`.
        need_dx: compute ``dx`` (else ``None`` is returned in its place and only ``dw``,
            ``db`` are computed, with numpy).

    Returns:
        ``dx`` (``x``'s shape, fresh), ``dw = sum(g * xhat)`` and ``db = sum(g)`` over the
        leading dims (the trailing shape, fresh), whether or not ``w`` was given.

    Raises:
        ShapeError, DTypeError: as :func:`norm_forward`, or ``g`` differs from ``x`` in
            shape or dtype.
    """
    n = _check("norm_backward", x, k, w)
    if g.shape != x.shape or g.dtype != x.dtype:
        raise ShapeError(f"norm_backward: gradient {g.shape} {g.dtype} does not match x {x.shape} {x.dtype}")
    dt = x.dtype
    wv = _vec(w, n, dt, 1.0)
    simple = x.flags.c_contiguous and g.flags.c_contiguous and mean.flags.c_contiguous and rstd.flags.c_contiguous
    if not need_dx or not simple or wv is None or n == 0 or x.size == 0:
        return _np_backward(g, x, k, w, mean, rstd, centered, need_dx)
    nshape = x.shape[x.ndim - k :]
    x2, g2 = x.reshape(-1, n), g.reshape(-1, n)
    rows = x2.shape[0]
    dx = np.empty(x.shape, dt)
    m1, r1 = mean.reshape(rows), rstd.reshape(rows)
    inv_n = dt.type(1.0 / n)
    if x2.size >= PARALLEL_THRESHOLD and rows > 1:
        chunks = min(rows, 4 * numba.get_num_threads())
        dw, db = np.zeros((chunks, n), dt), np.zeros((chunks, n), dt)
        _norm_backward_parallel(dx.reshape(-1, n), dw, db, x2, g2, wv, m1, r1, inv_n, centered)
        return dx, dw.sum(axis=0).reshape(nshape), db.sum(axis=0).reshape(nshape)
    dw, db = np.zeros((1, n), dt), np.zeros((1, n), dt)
    _norm_backward_serial(dx.reshape(-1, n), dw, db, x2, g2, wv, m1, r1, inv_n, centered)
    return dx, dw.reshape(nshape), db.reshape(nshape)
