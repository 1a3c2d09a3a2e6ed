"""Fused softmax backward: ``out += y * (g - sum(g * y, axis))`` along the last axis, and the
fused softmax cross-entropy with class-index targets (forward and backward).

One pass per row reads ``g`` and ``y`` twice (once for the row's dot product, once for the
update) and writes ``out`` once, where numpy needs four full-size temporaries. Rows run
serially below :data:`~gradtape.devices.kernels.elementwise.PARALLEL_THRESHOLD` elements and
as a ``numba.prange`` over rows above it. Pure arithmetic: the ``exp`` ran in the forward
(numpy's SIMD ufunc), whose output ``y`` the backward reads. The kernels of attention's
scaled, masked softmax backward (:func:`~gradtape.devices.kernels.attention.attention_softmax_backward`)
are here too: both compute a row's dot with :func:`_dot8`.

The kernels take C-contiguous 2-D arrays ``(rows, n)``; the wrapper reshapes a C-contiguous
array reduced along its last axis to that form (a view) and sends anything else (another
axis, strided views, broadcast operands) to the numpy expression, which gives the same result.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels._jit import jit, serial_and_parallel
from gradtape.devices.kernels.elementwise import _F32, _F64, PARALLEL_THRESHOLD, _check_out, _fallback_shape, _fast
from gradtape.errors import DTypeError, ShapeError

__all__ = ["cross_entropy_backward", "cross_entropy_forward", "softmax_backward"]

Array = np.ndarray[Any, Any]


@jit(inline=True)
def _dot8(a: Array, b: Array, n: int) -> Any:
    """``sum(a[:n] * b[:n])`` in ``a``'s dtype, in 8 independent partial sums: a strict
    floating-point reduction does not vectorize (no fastmath), 8 chains run in parallel in the
    pipeline, about 1.5-2x faster than one chain, and each chain is 8x shorter, so the float32
    sum is more accurate."""
    z = a.dtype.type(0)
    m = n - n % 8
    d0 = d1 = d2 = d3 = d4 = d5 = d6 = d7 = z
    for j in range(0, m, 8):
        d0 += a[j] * b[j]
        d1 += a[j + 1] * b[j + 1]
        d2 += a[j + 2] * b[j + 2]
        d3 += a[j + 3] * b[j + 3]
        d4 += a[j + 4] * b[j + 4]
        d5 += a[j + 5] * b[j + 5]
        d6 += a[j + 6] * b[j + 6]
        d7 += a[j + 7] * b[j + 7]
    d = ((d0 + d1) + (d2 + d3)) + ((d4 + d5) + (d6 + d7))
    for j in range(m, n):
        d += a[j] * b[j]
    return d


@jit()
def _row_backward(outr: Array, yr: Array, gr: Array) -> None:
    """One row: ``outr += yr * (gr - dot(gr, yr))`` (the dot by :func:`_dot8`)."""
    n = yr.shape[0]
    dot = _dot8(gr, yr, n)
    for j in range(n):
        outr[j] += yr[j] * (gr[j] - dot)


def _softmax_backward(out: Array, y: Array, g: Array) -> None:
    for r in numba.prange(out.shape[0]):
        _row_backward(out[r], y[r], g[r])


_softmax_backward_serial, _softmax_backward_parallel = serial_and_parallel(_softmax_backward)


# ----- attention's softmax backward (the kernels of attention.attention_softmax_backward,
# ----- kept here with the row dot they share: numba's cache key covers a kernel's own module)


@jit()
def _attention_row_backward(dr: Array, pr: Array, mr: Array, use_m: bool, lim: int, scale: Any, tiny: Any) -> None:
    """One row: ``dr = scale * pr * (dr*mr - dot(dr*mr, pr))`` over ``[0, lim)``, 0 after;
    results below ``tiny`` in magnitude are written as 0."""
    n = dr.shape[0]
    zero = dr.dtype.type(0)
    if use_m:
        for j in range(lim):
            dr[j] *= mr[j]
    d = _dot8(dr, pr, lim)
    for j in range(lim):
        v = pr[j] * (dr[j] - d) * scale
        dr[j] = v if abs(v) >= tiny else zero
    for j in range(lim, n):
        dr[j] = zero


@jit()
def _attention_backward_serial(d: Array, p: Array, m: Array, use_m: bool, causal: bool, scale: Any, tiny: Any) -> None:
    """:func:`_attention_row_backward` over the rows of ``d, p, m (B, L, S)`` (``m`` read
    only with ``use_m``); ``causal`` rows ``i`` stop at key ``i``."""
    ln, n = d.shape[1], d.shape[2]
    for b in range(d.shape[0]):
        for i in range(ln):
            lim = min(i + 1, n) if causal else n
            _attention_row_backward(d[b, i], p[b, i], m[b, i], use_m, lim, scale, tiny)


@jit(parallel=True)
def _attention_backward_parallel(
    d: Array, p: Array, m: Array, use_m: bool, causal: bool, scale: Any, tiny: Any
) -> None:
    """:func:`_attention_backward_serial` as one ``prange`` over the ``B * L`` rows."""
    ln, n = d.shape[1], d.shape[2]
    for r in numba.prange(d.shape[0] * ln):
        b = r // ln
        i = r - b * ln
        lim = min(i + 1, n) if causal else n
        _attention_row_backward(d[b, i], p[b, i], m[b, i], use_m, lim, scale, tiny)


def softmax_backward(out: Array, y: Array, g: Array, axis: int = -1) -> None:
    """``out += y * (g - sum(g * y, axis, keepdims=True))`` in place: the backward of
    ``y = softmax(x, axis)`` given the output's gradient ``g``.

    Args:
        out: float32 or float64 array, the input's gradient, updated in place.
        y: the softmax output, of ``out``'s shape and dtype.
        g: the output's gradient, of ``out``'s shape and dtype.
        axis: the softmax axis (negative counts from the end).

    The compiled row kernel runs when ``axis`` is the last axis and all three arrays are
    C-contiguous with ``out``'s shape (any rank >= 1, viewed as ``(rows, n)``); otherwise numpy
    computes the same expression.

    Raises:
        ShapeError: ``y`` or ``g`` does not have ``out``'s shape, or ``axis`` is out of range
            (a 0-d ``out`` has no axis).
        DTypeError: the dtypes differ or are not float32/float64.
        ValueError: ``out`` is read-only.
    """
    _check_out("softmax_backward", out)
    if y.shape != out.shape or g.shape != out.shape:
        raise ShapeError(f"softmax_backward: y {y.shape} and g {g.shape} must have out's shape {out.shape}")
    if not -out.ndim <= axis < out.ndim:
        raise ShapeError(f"softmax_backward: axis {axis} is out of range for out of shape {out.shape}")
    ax = axis % out.ndim
    if ax == out.ndim - 1 and _fast(out, y, g) and out.size > 0:
        if out.flags.c_contiguous and y.flags.c_contiguous and g.flags.c_contiguous:
            n = out.shape[-1]
            o2, y2, g2 = out.reshape(-1, n), y.reshape(-1, n), g.reshape(-1, n)
            parallel = out.size >= PARALLEL_THRESHOLD and o2.shape[0] > 1
            (_softmax_backward_parallel if parallel else _softmax_backward_serial)(o2, y2, g2)
            return
    _fallback_shape("softmax_backward", out, y, g)
    out += y * (g - (g * y).sum(axis=ax, keepdims=True))


# ----- softmax cross-entropy with class indices -------------------------------------------


@jit()
def _ce_shift(z: Array, x: Array, t: Array) -> tuple[int, float]:
    """Rows ``z[n] = x[n] - max(x[n])``; returns ``(first row whose target is outside
    [0, C), or -1; sum over rows of z[n, t[n]])``."""
    c = x.shape[1]
    picked = 0.0
    for n in range(x.shape[0]):
        k = t[n]
        if k < 0 or k >= c:
            return n, 0.0
        xr, zr = x[n], z[n]
        m = xr[0]
        for j in range(1, c):
            m = xr[j] if xr[j] > m else m
        for j in range(c):
            zr[j] = xr[j] - m
        picked += zr[k]
    return -1, picked


@jit()
def _ce_normalize(p: Array) -> float:
    """Rows ``p[n] /= sum(p[n])`` in place (``p`` holds ``exp(z)``); returns the sum over rows
    of ``log(sum(p[n]))``. Row sums accumulate in float64."""
    total = 0.0
    for n in range(p.shape[0]):
        pr = p[n]
        s = 0.0
        for j in range(pr.shape[0]):
            s += pr[j]
        inv = pr.dtype.type(1.0 / s)
        for j in range(pr.shape[0]):
            pr[j] *= inv
        total += math.log(s)
    return total


@jit()
def _ce_backward(p: Array, t: Array, k: float) -> int:
    """Rows ``p[n] = (p[n] - onehot(t[n])) * k`` in place; returns the first row whose target
    lies outside ``[0, C)`` (before writing anything), or -1."""
    c = p.shape[1]
    for n in range(p.shape[0]):
        if t[n] < 0 or t[n] >= c:
            return n
    kk = p.dtype.type(k)
    for n in range(p.shape[0]):
        pr = p[n]
        for j in range(pr.shape[0]):
            pr[j] *= kk
        pr[t[n]] -= kk
    return -1


def cross_entropy_forward(x: Array, t: Array, out: Array | None = None) -> tuple[float, Array]:
    """Softmax cross-entropy of logits ``x`` (``(N, C)``) against class indices ``t``
    (``(N,)``, any integer dtype): ``(sum_n -log_softmax(x)[n, t[n]], softmax(x))``.

    Three passes: ``z = x - rowmax(x)`` (and the picked ``z[n, t[n]]``) in a kernel,
    ``exp(z)`` in numpy's SIMD ufunc, in place, then one kernel pass that divides each row by
    its sum and adds up ``log(sum)``: ``loss = sum_n log(sum_j exp(z[n, j])) - z[n, t[n]]``.
    The loss is a Python float (float64 accumulation); the softmax is a new C-contiguous
    array of ``x``'s dtype, which :func:`cross_entropy_backward` overwrites, or ``out`` where
    given (a C-contiguous array of ``x``'s shape and dtype, not overlapping it: a capture's
    replay refills the softmax it keeps).

    Raises:
        ShapeError: ``x`` is not 2-D, or ``t`` is not of shape ``(N,)`` (names both shapes).
        DTypeError: ``x`` is not float32/float64, or ``t`` not integers.
        ValueError: a class index lies outside ``[0, C)`` (names the range and the extremes).
    """
    _check_ce("cross_entropy_forward", x, t)
    if _on_gpu(x):  # the loss a 0-d GPU array, not a float (no wait for the GPU)
        from gradtape.devices.kernels import cuda

        if bool(((t < 0) | (t >= x.shape[1])).any()):
            raise _bad_index(t, x.shape[1])
        return cuda.cross_entropy_forward(x, t)
    if _trace.active is not None:
        _trace.refuse("cross_entropy's forward runs numpy's exp")
    x = np.ascontiguousarray(x)
    if (
        out is None
        or out.shape != x.shape
        or out.dtype != x.dtype
        or not out.flags.c_contiguous
        or np.may_share_memory(out, x)
    ):
        p = np.empty_like(x)
    else:
        p = out
    bad, picked = _ce_shift(p, x, t)
    if bad >= 0:
        raise _bad_index(t, x.shape[1])
    np.exp(p, out=p)
    return _ce_normalize(p) - picked, p


def _check_ce(op: str, x: Array, t: Array) -> None:
    """The kernels index rows of ``x`` by ``t`` without bounds checks: shapes and dtypes first."""
    if not (x.__class__ is np.ndarray or _on_gpu(x)) or x.ndim != 2:
        raise ShapeError(f"{op}: logits must be a 2-D array (N, C), got shape {getattr(x, 'shape', None)}")
    if x.dtype != _F32 and x.dtype != _F64:
        raise DTypeError(f"{op}: logits have dtype {x.dtype} (shape {x.shape}); kernels take float32 or float64")
    if not (t.__class__ is np.ndarray or _on_gpu(t)) or t.dtype.kind not in "iu":
        raise DTypeError(f"{op}: targets must be an integer array, got {getattr(t, 'dtype', type(t).__name__)}")
    if t.shape != (x.shape[0],):
        raise ShapeError(f"{op}: targets of shape {t.shape} do not match logits of shape {x.shape}")


def _bad_index(t: Array, c: int) -> ValueError:
    return ValueError(f"cross_entropy: class indices must lie in [0, {c}), got min {t.min()} and max {t.max()}")


def cross_entropy_backward(p: Array, t: Array, k: float) -> Array:
    """``(softmax - onehot(t)) * k``, written over the softmax ``p`` of
    :func:`cross_entropy_forward` (``(N, C)``) and returned: the logits' gradient of ``k``
    times the summed cross-entropy, in one pass.

    Raises:
        ShapeError, DTypeError: as :func:`cross_entropy_forward`.
        ValueError: a class index lies outside ``[0, C)``; ``p`` is then left unchanged.
    """
    _check_ce("cross_entropy_backward", p, t)
    if _on_gpu(p):
        from gradtape.devices.kernels import cuda

        res: Array = cuda.cross_entropy_backward(p, t, k)
        return res
    if not p.flags.c_contiguous or not p.flags.writeable:
        raise ValueError(f"cross_entropy_backward: p (shape {p.shape}) must be a writable C-contiguous array")
    if _ce_backward(p, t, k) >= 0:
        raise _bad_index(t, p.shape[1])
    if _trace.active is not None:
        _trace.note(_ce_backward, p, t, k, failure=lambda: _bad_index(t, p.shape[1]), ok=-1)
    return p
