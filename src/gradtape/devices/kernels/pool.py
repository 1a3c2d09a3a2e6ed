"""Pooling and resampling kernels on planes: max/min/avg pooling and nearest/bilinear upscaling.

Every kernel takes C-contiguous arrays whose leading axis is the plane ``p = n * C + c`` of an
NCHW tensor, so one loop over planes is the parallel axis (``prange`` from
:data:`PARALLEL_WORK` element visits, a serial loop below). Padded positions are never read:
windows are clipped to the input, as PyTorch's CPU kernels do.

* ``pool_maxmin``: each output is the max (min) of its clipped window, and its flat index
  ``h * W + w`` in the plane is saved. Ties keep the first position in row-major window
  order, a NaN wins over any number and a later NaN over an earlier one (PyTorch's
  ``val > max || isnan(val)`` scan).
* ``pool_avg``: sum of the clipped window divided by ``KH * KW`` (``count_include_pad=True``).
* ``scatter_add``: ``gx[p, idx[p, i]] += g[p, i]``, the backward of max/min pooling.
* ``bilinear`` / ``bilinear_backward``: two taps per axis, ``y = lh0 * (lw0 * x00 + lw1 * x01)
  + lh1 * (lw0 * x10 + lw1 * x11)`` in PyTorch's order; ``nearest_backward`` sums each output
  gradient into its source pixel.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels._jit import jit, serial_and_parallel

__all__ = [
    "PARALLEL_WORK",
    "bilinear",
    "bilinear_backward",
    "nearest_backward",
    "pool_avg",
    "pool_avg_backward",
    "pool_maxmin",
    "scatter_add",
]

Array = np.ndarray[Any, Any]
Taps = tuple[Array, Array, Array, Array]
"""``(i0, i1, l0, l1)`` along one axis: source indices (int64) and their weights."""

PARALLEL_WORK = 1 << 17
"""Element visits from which a kernel runs its two-thread ``prange`` variant."""


# ----- max / min pooling -----------------------------------------------------------------


@jit(inline=True)
def _window(o: int, stride: int, pad: int, k: int, n: int) -> tuple[int, int]:
    """``(start, end)``: the window of output position ``o`` along one axis of ``n`` input
    positions, clipped to the input."""
    start = o * stride - pad
    return max(start, 0), min(start + k, n)


@jit()
def _maxmin_plane(
    p: int, x: Array, out: Array, idx: Array, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, is_min: bool
) -> None:
    h_n, w_n = x.shape[1], x.shape[2]
    xp = x[p]
    for oh in range(out.shape[1]):
        hs, he = _window(oh, sh, ph, kh, h_n)
        for ow in range(out.shape[2]):
            ws, we = _window(ow, sw, pw, kw, w_n)
            best = xp[hs, ws]
            bi = hs * w_n + ws
            for h in range(hs, he):
                for w in range(ws, we):
                    v = xp[h, w]
                    if is_min:
                        if v < best or v != v:
                            best = v
                            bi = h * w_n + w
                    elif v > best or v != v:
                        best = v
                        bi = h * w_n + w
            out[p, oh, ow] = best
            idx[p, oh, ow] = bi


@jit()
def _max2x2_plane(p: int, x: Array, out: Array, idx: Array, sign: Any) -> None:
    """The common 2x2, stride-2, unpadded window over plane ``p``, with ``sign`` -1 for min
    pooling (the max of ``-x``). Same rule as :func:`_maxmin_plane`: scan order (0,0), (0,1),
    (1,0), (1,1), a strictly larger value or any NaN replaces the best (so the last NaN wins,
    as in PyTorch's kernel). Written as selects over whole rows, which vectorize."""
    # int32 index arithmetic: with int64 lanes beside float32 ones the loop ran 3x slower
    w_n = np.int32(x.shape[2])
    one = np.int32(1)
    for oh in range(out.shape[1]):
        r0 = x[p, 2 * oh]
        r1 = x[p, 2 * oh + 1]
        o = out[p, oh]
        ix = idx[p, oh]
        base = np.int32(2 * oh) * w_n
        for ow in range(out.shape[2]):
            w = 2 * ow
            w32 = np.int32(w)
            best = sign * r0[w]
            bi = base + w32
            v = sign * r0[w + 1]
            take = v > best or v != v
            best = v if take else best
            bi = base + w32 + one if take else bi
            v = sign * r1[w]
            take = v > best or v != v
            best = v if take else best
            bi = base + w_n + w32 if take else bi
            v = sign * r1[w + 1]
            take = v > best or v != v
            best = v if take else best
            bi = base + w_n + w32 + one if take else bi
            o[ow] = sign * best
            ix[ow] = bi


def _max2x2(x: Array, out: Array, idx: Array, sign: Any) -> None:
    """:func:`_max2x2_plane` over every plane in one compiled loop: 8x8 planes cost more in
    Python calls and loop set-up than in comparisons. The parallel variant splits the planes
    over threads (a conv block's (32, 64, 32, 32) activations: 2.4 ms through the general
    kernel)."""
    for p in numba.prange(x.shape[0]):
        _max2x2_plane(p, x, out, idx, sign)


_max2x2_serial, _max2x2_parallel = serial_and_parallel(_max2x2)


@jit()
def _max2x2_values_plane(p: int, x: Array, out: Array, sign: Any) -> None:
    """:func:`_max2x2_plane` without the indices (inference: nothing will route a gradient),
    as selects over whole rows, which vectorize. NaN wins as there."""
    for oh in range(out.shape[1]):
        r0 = x[p, 2 * oh]
        r1 = x[p, 2 * oh + 1]
        o = out[p, oh]
        for ow in range(out.shape[2]):
            best = sign * r0[2 * ow]
            v = sign * r0[2 * ow + 1]
            best = v if (v > best or v != v) else best
            v = sign * r1[2 * ow]
            best = v if (v > best or v != v) else best
            v = sign * r1[2 * ow + 1]
            best = v if (v > best or v != v) else best
            o[ow] = sign * best


def _max2x2_values(x: Array, out: Array, sign: Any) -> None:
    for p in numba.prange(x.shape[0]):
        _max2x2_values_plane(p, x, out, sign)


_max2x2_values_serial, _max2x2_values_parallel = serial_and_parallel(_max2x2_values)


@jit(inline=True)
def _window4(a: Any, b: Any, c: Any, d: Any, w: int, w_n: int) -> tuple[Any, int]:
    """The max of a 2x2 window ``a b / c d`` (top-left at column ``w`` of rows ``w_n`` wide)
    and its offset from the window's row pair: the first max in reading order, or the last
    NaN where there is one (the order :func:`_maxmin_plane` scans in). Without NaN (the sum
    tells: it is NaN when an input is, and for ``inf - inf``, which the exact path handles
    the same) as a tournament of two pairs, whose selects LLVM writes without branches: the
    sequential scan's NaN tests made the digits CNN's 8x8 planes 2.5x slower (1,024 planes
    of 8x8, float32: 165-200 -> 60-90 us on the AVX2 Zen 3). Ties keep the earlier element
    in both paths, so the two agree on every input without NaN."""
    s = a + b + c + d
    if s == s:
        t1 = b > a
        m1 = b if t1 else a
        i1 = w + 1 if t1 else w
        t2 = d > c
        m2 = d if t2 else c
        i2 = w + w_n + 1 if t2 else w + w_n
        if m2 > m1:
            return m2, i2
        return m1, i1
    best, bi = a, w
    if b > best or b != b:
        best, bi = b, w + 1
    if c > best or c != c:
        best, bi = c, w + w_n
    if d > best or d != d:
        best, bi = d, w + w_n + 1
    return best, bi


@jit()
def _max2x2_pairs(x: Array, out: Array, idx: Array, sign: Any, oh_n: int) -> None:
    """:func:`_max2x2` for even-height planes, on all planes' row pairs at once: ``x (P*OH, 2,
    W)``, ``out`` and ``idx`` ``(P*OH, OW)``, ``oh_n = OH`` (for the in-plane index). One loop
    over row pairs with direct indexing, no row views: on the digits CNN's 4x4 planes the
    per-plane kernel spent more on views and loop set-up than on comparisons (46 -> 30 us
    for 2,048 planes; 8x8: 27 -> 17 us). Each window: :func:`_window4`."""
    w_n = x.shape[2]
    for r in range(out.shape[0]):
        base = 2 * (r % oh_n) * w_n
        for ow in range(out.shape[1]):
            w = 2 * ow
            best, bi = _window4(
                sign * x[r, 0, w], sign * x[r, 0, w + 1], sign * x[r, 1, w], sign * x[r, 1, w + 1], w, w_n
            )
            out[r, ow] = sign * best
            idx[r, ow] = base + bi


@jit()
def _max2x2_values_pairs(x: Array, out: Array, sign: Any) -> None:
    """:func:`_max2x2_pairs` without the indices."""
    w_n = x.shape[2]
    for r in range(out.shape[0]):
        for ow in range(out.shape[1]):
            w = 2 * ow
            best, _ = _window4(
                sign * x[r, 0, w], sign * x[r, 0, w + 1], sign * x[r, 1, w], sign * x[r, 1, w + 1], w, w_n
            )
            out[r, ow] = sign * best


def _maxmin(
    x: Array, out: Array, idx: Array, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, is_min: bool
) -> None:
    for p in numba.prange(x.shape[0]):
        _maxmin_plane(p, x, out, idx, kh, kw, sh, sw, ph, pw, is_min)


_maxmin_serial, _maxmin_parallel = serial_and_parallel(_maxmin)


def _scatter(gx: Array, g: Array, idx: Array) -> None:
    for p in numba.prange(gx.shape[0]):
        for i in range(g.shape[1]):
            gx[p, idx[p, i]] += g[p, i]


_scatter_serial, _scatter_parallel = serial_and_parallel(_scatter)


# ----- average pooling -------------------------------------------------------------------


@jit()
def _avg_plane(
    p: int, x: Array, out: Array, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, backward: bool
) -> None:
    """Forward: ``out[p] = window sums / (kh*kw)``; backward (``x`` is the gradient buffer to
    update, ``out`` the output's gradient): ``x[window] += out / (kh*kw)``."""
    h_n, w_n = x.shape[1], x.shape[2]
    div = x.dtype.type(kh * kw)
    zero = x.dtype.type(0)
    xp = x[p]
    for oh in range(out.shape[1]):
        hs, he = _window(oh, sh, ph, kh, h_n)
        for ow in range(out.shape[2]):
            ws, we = _window(ow, sw, pw, kw, w_n)
            if backward:
                d = out[p, oh, ow] / div
                for h in range(hs, he):
                    for w in range(ws, we):
                        xp[h, w] += d
            else:
                s = zero
                for h in range(hs, he):
                    for w in range(ws, we):
                        s += xp[h, w]
                out[p, oh, ow] = s / div


def _avg(x: Array, out: Array, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int, backward: bool) -> None:
    for p in numba.prange(x.shape[0]):
        _avg_plane(p, x, out, kh, kw, sh, sw, ph, pw, backward)


_avg_serial, _avg_parallel = serial_and_parallel(_avg)


# ----- nearest / bilinear resampling -------------------------------------------------------


@jit()
def _bilinear_plane(p: int, x: Array, y: Array, th: Taps, tw: Taps, backward: bool) -> None:
    """Forward: ``y[p] = interpolate(x[p])``; backward (``x`` is the gradient buffer, ``y``
    the output's gradient): each output gradient spread over its four taps."""
    h0, h1, lh0, lh1 = th
    w0, w1, lw0, lw1 = tw
    xp = x[p]
    yp = y[p]
    for oh in range(y.shape[1]):
        a0, a1, la0, la1 = h0[oh], h1[oh], lh0[oh], lh1[oh]
        for ow in range(y.shape[2]):
            b0, b1, lb0, lb1 = w0[ow], w1[ow], lw0[ow], lw1[ow]
            if backward:
                g = yp[oh, ow]
                xp[a0, b0] += la0 * lb0 * g
                xp[a0, b1] += la0 * lb1 * g
                xp[a1, b0] += la1 * lb0 * g
                xp[a1, b1] += la1 * lb1 * g
            else:
                yp[oh, ow] = la0 * (lb0 * xp[a0, b0] + lb1 * xp[a0, b1]) + la1 * (lb0 * xp[a1, b0] + lb1 * xp[a1, b1])


def _bilinear(x: Array, y: Array, th: Taps, tw: Taps, backward: bool) -> None:
    for p in numba.prange(x.shape[0]):
        _bilinear_plane(p, x, y, th, tw, backward)


_bilinear_serial, _bilinear_parallel = serial_and_parallel(_bilinear)


def _nearest(gx: Array, g: Array, ih: Array, iw: Array) -> None:
    for p in numba.prange(gx.shape[0]):
        for oh in range(g.shape[1]):
            for ow in range(g.shape[2]):
                gx[p, ih[oh], iw[ow]] += g[p, oh, ow]


_nearest_serial, _nearest_parallel = serial_and_parallel(_nearest)


# ----- wrappers (arrays are (P, H, W) planes; callers reshape NCHW tensors) -----------------


def _gpu() -> Any:
    from gradtape.devices.kernels import cuda

    return cuda


def _c(a: Array) -> Array:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


Pair = tuple[int, int]


def pool_maxmin(
    x: Array, k: Pair, stride: Pair, padding: Pair, out_hw: Pair, is_min: bool, want_idx: bool = True
) -> tuple[Array, Array | None]:
    """Max (or min) pooling of planes ``x (P, H, W)``: returns ``(out (P, OH, OW), idx)``,
    ``idx`` the int32 flat index ``h * W + w`` of each output's source in its plane (``None``
    when not ``want_idx`` and the window is the common 2x2, stride-2, unpadded one)."""
    if _on_gpu(x):
        return _gpu().pool_maxmin(x, k, stride, padding, out_hw, is_min)  # type: ignore[no-any-return]
    p = x.shape[0]
    out = np.empty((p, *out_hw), x.dtype)
    big = out.size * k[0] * k[1] >= PARALLEL_WORK
    two = k == (2, 2) and stride == (2, 2) and padding == (0, 0)
    sign = x.dtype.type(-1 if is_min else 1)
    pairs = two and not big and x.shape[1] % 2 == 0  # serial, even height: one loop over row pairs
    if pairs:
        x3 = _c(x).reshape(p * out_hw[0], 2, x.shape[2])
        out2 = out.reshape(p * out_hw[0], out_hw[1])
    if not want_idx and two:
        if pairs:
            _max2x2_values_pairs(x3, out2, sign)
        else:
            (_max2x2_values_parallel if big else _max2x2_values_serial)(_c(x), out, sign)
        return out, None
    idx = np.empty((p, *out_hw), np.int32)
    if pairs:
        _max2x2_pairs(x3, out2, idx.reshape(p * out_hw[0], out_hw[1]), sign, out_hw[0])
        return out, idx
    if two:
        (_max2x2_parallel if big else _max2x2_serial)(_c(x), out, idx, sign)
        return out, idx
    kernel = _maxmin_parallel if big else _maxmin_serial
    kernel(_c(x), out, idx, k[0], k[1], stride[0], stride[1], padding[0], padding[1], is_min)
    return out, idx


def scatter_add(g: Array, idx: Array, in_hw: Pair) -> Array:
    """A new ``(P, H, W)`` array of zeros with ``g[p, i]`` added at flat index ``idx[p, i]``."""
    if _on_gpu(g):
        return _gpu().pool_scatter_add(g, idx, in_hw)  # type: ignore[no-any-return]
    p = g.shape[0]
    gx = np.zeros((p, in_hw[0] * in_hw[1]), g.dtype)
    if p == 0:  # no planes (an empty batch): nothing to add
        return gx.reshape(p, *in_hw)
    kernel = _scatter_parallel if g.size >= PARALLEL_WORK else _scatter_serial
    kernel(gx, _c(g).reshape(p, -1), idx.reshape(p, -1))
    return gx.reshape(p, *in_hw)


def pool_avg(x: Array, k: Pair, stride: Pair, padding: Pair, out_hw: Pair) -> Array:
    """Average pooling of planes ``x (P, H, W)`` with zero padding counted: a new ``(P, OH, OW)``."""
    if _on_gpu(x):
        return _gpu().pool_avg(x, k, stride, padding, out_hw)  # type: ignore[no-any-return]
    out = np.empty((x.shape[0], *out_hw), x.dtype)
    kernel = _avg_parallel if out.size * k[0] * k[1] >= PARALLEL_WORK else _avg_serial
    kernel(_c(x), out, k[0], k[1], stride[0], stride[1], padding[0], padding[1], False)
    return out


def pool_avg_backward(g: Array, k: Pair, stride: Pair, padding: Pair, in_hw: Pair) -> Array:
    """The gradient ``(P, H, W)`` of :func:`pool_avg` given the output's gradient ``g``."""
    if _on_gpu(g):
        return _gpu().pool_avg_backward(g, k, stride, padding, in_hw)  # type: ignore[no-any-return]
    gx = np.zeros((g.shape[0], *in_hw), g.dtype)
    kernel = _avg_parallel if g.size * k[0] * k[1] >= PARALLEL_WORK else _avg_serial
    kernel(gx, _c(g), k[0], k[1], stride[0], stride[1], padding[0], padding[1], True)
    return gx


def bilinear(x: Array, th: Taps, tw: Taps) -> Array:
    """Bilinear resampling of planes ``x (P, H, W)`` to ``(P, len(th[0]), len(tw[0]))``."""
    if _on_gpu(x):
        return _gpu().bilinear(x, th, tw)  # type: ignore[no-any-return]
    y = np.empty((x.shape[0], th[0].shape[0], tw[0].shape[0]), x.dtype)
    kernel = _bilinear_parallel if y.size >= PARALLEL_WORK else _bilinear_serial
    kernel(_c(x), y, th, tw, False)
    return y


def bilinear_backward(g: Array, th: Taps, tw: Taps, in_hw: Pair) -> Array:
    """The gradient ``(P, H, W)`` of :func:`bilinear` given the output's gradient ``g``."""
    if _on_gpu(g):
        return _gpu().bilinear_backward(g, th, tw, in_hw)  # type: ignore[no-any-return]
    gx = np.zeros((g.shape[0], *in_hw), g.dtype)
    kernel = _bilinear_parallel if g.size >= PARALLEL_WORK else _bilinear_serial
    kernel(gx, _c(g), th, tw, True)
    return gx


def nearest_backward(g: Array, ih: Array, iw: Array, in_hw: Pair) -> Array:
    """The gradient ``(P, H, W)`` of ``x[:, ih[:, None], iw]`` given the output's gradient ``g``."""
    if _on_gpu(g):
        return _gpu().nearest_backward(g, ih, iw, in_hw)  # type: ignore[no-any-return]
    gx = np.zeros((g.shape[0], *in_hw), g.dtype)
    kernel = _nearest_parallel if g.size >= PARALLEL_WORK else _nearest_serial
    kernel(gx, _c(g), ih, iw)
    return gx
