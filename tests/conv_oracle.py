"""The PREVIOUS convolution implementation, frozen as a test oracle (do not optimise).

A plain copy of ``gradtape.devices.kernels.conv`` and of the array code of
``gradtape.ops.conv`` as they were before the chunked-BLAS rewrite (issue 17): im2col with
numpy stride tricks and per-sample BLAS products, numba col2im, direct numba loops for
grouped convs. :func:`conv_ref` and :func:`conv_transpose2d_ref` return the forward value and
the gradients w.r.t. ``x``, ``w`` and ``b`` for a given output gradient, on plain arrays.
tests/test_ops_conv.py compares the current implementation against them.

Original kernel module docstring follows.
Convolution kernels on padded NCHW arrays: im2col + BLAS, and direct numba loops.

Three passes, each in two implementations (``impl="im2col"`` / ``"direct"``; ``"auto"`` picks
per case, see :func:`pick`):

* :func:`forward`: ``out = conv(xp, w)``. im2col: copy the receptive fields, a strided view
  ``(N, G, C/G, KH, KW, OH, OW)`` of ``xp``, into columns ``(N, G, C/G*KH*KW, OH*OW)`` and
  run one batched BLAS product ``w (G, O/G, C/G*KH*KW) @ cols``. Direct: numba loops over
  (sample, block of 4 output channels), the inner loop over a whole output row, or at
  stride 1 over the whole plane flattened with the padded width (a long loop that
  vectorizes on 8x8 images).
* :func:`backward_input`: im2col: ``w.T @ g`` to columns, then a numba col2im pass (4-6x
  faster than ``KH*KW`` strided numpy adds); direct: loops over (sample, block of 4 input
  channels).
* :func:`backward_weight`: im2col: ``g @ cols.T`` per sample, summed (the forward's columns
  reused when kept); direct: loops over (out channel, in channel) with a vector accumulator.

Measured with a throwaway script (not in the repository): float32, 3x3 kernels, padding 1,
stride 1, one process per cell running pad + forward (keeping columns), input backward
(+ crop), weight backward in a loop; medians over 15-400 iterations, then the median of 3
processes; ms. 2 vCPUs of a shared VM (numba's ``omp`` layer, OpenBLAS 0.3.31, 2 threads
each), numba 0.68, numpy 2.4. Runs varied by up to 2x (the 32x32 case) and parallel kernels
sometimes stalled for about 8 ms, so read these as ratios::

    N, C_in -> C_out, HxW, groups      im2col: fwd / grad_x / grad_w    direct: fwd / grad_x / grad_w
    64, 1 -> 8,    8x8,   1             0.21 /  0.11 /  0.07             0.21 /  0.36 /   0.19
    64, 8 -> 16,   8x8,   1             0.75 /  0.49 /  0.29             1.32 /  1.74 /   2.68
    32, 32 -> 64,  32x32, 1            23.0  / 30.5  / 21.5             39.3  / 70.0  / 102.0
    32, 32 -> 32,  32x32, 32 (dw)      12.9  / 30.2  /  2.90             6.70 /  6.50 /   1.86
    32, 32 -> 32,  16x16, 8             3.68 /  2.65 /  2.18             1.38 /  2.10 /   2.69

So im2col runs ``groups == 1`` (the small CNN and the large case alike: BLAS ties the loops
on the 1-channel forward and beats them by 1.7-9x everywhere else, most on the weight
gradient, which reuses the columns), and the direct kernels run grouped and depthwise
convs, where im2col pays ``N * G`` tiny BLAS calls; a grouped weight gradient with more
than :data:`DIRECT_WEIGHT_MAX_TAPS` taps per output channel goes back to im2col (its
columns rebuilt in backward).
"""

from __future__ import annotations

from typing import Any, Literal

import numba
import numpy as np
from numpy.lib.stride_tricks import as_strided

from gradtape.devices.kernels._jit import jit

__all__ = [
    "COLS_MAX_BYTES",
    "conv_ref",
    "conv_transpose2d_ref",
    "DIRECT_WEIGHT_MAX_TAPS",
    "Impl",
    "backward_input",
    "backward_weight",
    "forward",
    "im2col",
    "pick",
]

Array = np.ndarray[Any, Any]
Pair = tuple[int, int]
Impl = Literal["auto", "im2col", "direct"]

PARALLEL_WORK = 1 << 17
"""Kernels with at least this many multiply-adds (or, for col2im, elements) run their
``prange`` variant."""

DIRECT_WEIGHT_MAX_TAPS = 36
"""``auto`` computes a grouped conv's weight gradient with the direct kernel while
``C/G * KH * KW`` is at most this (4 channels of 3x3 per group), with im2col above."""

COLS_MAX_BYTES = 64 << 20
""":func:`forward` keeps im2col's columns for the weight gradient only up to this size; larger
ones are rebuilt in backward."""


def pick(
    impl: Impl, pass_: Literal["forward", "input", "weight"], groups: int, taps: int
) -> Literal["im2col", "direct"]:
    """Resolve ``impl`` for one pass (``taps = C/G * KH * KW``, the length of a column).

    ``"auto"``: im2col for ``groups == 1`` (one BLAS product per sample beats the loops); the
    direct kernels for grouped and depthwise convs (im2col would run ``N * G`` tiny products),
    except the weight gradient of groups with more than :data:`DIRECT_WEIGHT_MAX_TAPS` taps.
    """
    if impl != "auto":
        return impl
    if groups == 1 or (pass_ == "weight" and taps > DIRECT_WEIGHT_MAX_TAPS):
        return "im2col"
    return "direct"


# ----- im2col: numpy stride tricks and BLAS ----------------------------------------------


def _windows(xp: Array, k: Pair, stride: Pair, dilation: Pair, out_hw: Pair, groups: int) -> Array:
    """Read-only view ``(N, G, C/G, KH, KW, OH, OW)`` of the padded input's receptive fields."""
    n, c, _, _ = xp.shape
    s_n, s_c, s_h, s_w = xp.strides
    cg = c // groups
    shape = (n, groups, cg, k[0], k[1], out_hw[0], out_hw[1])
    strides = (s_n, cg * s_c, s_c, dilation[0] * s_h, dilation[1] * s_w, stride[0] * s_h, stride[1] * s_w)
    return as_strided(xp, shape, strides, writeable=False)


def im2col(xp: Array, k: Pair, stride: Pair, dilation: Pair, out_hw: Pair, groups: int) -> Array:
    """The columns ``(N, G, C/G * KH * KW, OH * OW)`` (a new C-contiguous array) of ``xp``."""
    v = _windows(xp, k, stride, dilation, out_hw, groups)
    n, g, cg = v.shape[:3]
    return np.ascontiguousarray(v).reshape(n, g, cg * k[0] * k[1], out_hw[0] * out_hw[1])


def _col2im(dcols: Array, xp_shape: tuple[int, ...], k: Pair, stride: Pair, dilation: Pair, out_hw: Pair) -> Array:
    """Scatter-add columns ``(N, G, C/G * KH * KW, OH * OW)`` into a new zero padded input
    ``xp_shape`` (one numba pass, parallel over the ``N * C`` planes when large)."""
    n, c, hp, wp = xp_shape
    gxf = np.zeros((n, c, hp * wp), dcols.dtype)
    nr, ln, rs_in, rs_out, sw = _rows(stride, out_hw, wp, False)
    kernel = _col2im_parallel if dcols.size >= PARALLEL_WORK else _col2im_serial
    kernel(dcols, gxf, _offsets(k, dilation, wp), nr, ln, rs_in, rs_out, sw)
    return gxf.reshape(xp_shape)


# ----- direct numba kernels --------------------------------------------------------------
#
# Planes are flattened: ``xf (N, C, Hp*Wp)``. A kernel tap ``k = (a, b)`` reads the input at
# the flat offset ``offs[k] = a*dh*Wp + b*dw``. Output "rows" ``r < R`` of ``L`` elements start
# at ``r*rs_in`` in the input plane and ``r*rs_out`` in the output plane; element ``i`` reads
# input ``r*rs_in + offs[k] + i*sw``. Row mode: ``R = OH, L = OW, rs_in = sh*Wp, rs_out = OW``.
# Flat mode (stride 1): one row of ``L = (OH-1)*Wp + OW`` elements over an output laid out
# with the padded width ``Wp`` (columns ``>= OW`` are garbage and dropped), so the inner loop
# is long enough to vectorize on small images.


@jit()
def _fwd_task(
    t: int,
    xf: Array,
    w2: Array,
    acc: Array,
    offs: Array,
    nr: int,
    ln: int,
    rs_in: int,
    rs_out: int,
    sw: int,
    groups: int,
) -> None:
    nout = acc.shape[1]
    og = nout // groups
    nb = (og + 3) // 4
    n = t // (groups * nb)
    rem = t % (groups * nb)
    grp = rem // nb
    o0 = grp * og + (rem % nb) * 4
    o1 = min(o0 + 4, (grp + 1) * og)
    cg, kk = w2.shape[1], w2.shape[2]
    c0 = grp * cg
    if o1 - o0 == 4:
        a0, a1, a2, a3 = acc[n, o0], acc[n, o0 + 1], acc[n, o0 + 2], acc[n, o0 + 3]
        for c in range(cg):
            x = xf[n, c0 + c]
            for k in range(kk):
                w0, w1, w2_, w3 = w2[o0, c, k], w2[o0 + 1, c, k], w2[o0 + 2, c, k], w2[o0 + 3, c, k]
                for r in range(nr):
                    xs = x[r * rs_in + offs[k] :]
                    b0, b1, b2, b3 = a0[r * rs_out :], a1[r * rs_out :], a2[r * rs_out :], a3[r * rs_out :]
                    if sw == 1:
                        for i in range(ln):
                            v = xs[i]
                            b0[i] += w0 * v
                            b1[i] += w1 * v
                            b2[i] += w2_ * v
                            b3[i] += w3 * v
                    else:
                        for i in range(ln):
                            v = xs[i * sw]
                            b0[i] += w0 * v
                            b1[i] += w1 * v
                            b2[i] += w2_ * v
                            b3[i] += w3 * v
    else:
        for o in range(o0, o1):
            a = acc[n, o]
            for c in range(cg):
                x = xf[n, c0 + c]
                for k in range(kk):
                    wv = w2[o, c, k]
                    for r in range(nr):
                        xs = x[r * rs_in + offs[k] :]
                        b = a[r * rs_out :]
                        for i in range(ln):
                            b[i] += wv * xs[i * sw]


@jit()
def _fwd_serial(
    xf: Array, w2: Array, acc: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int, groups: int
) -> None:
    og = acc.shape[1] // groups
    for t in range(acc.shape[0] * groups * ((og + 3) // 4)):
        _fwd_task(t, xf, w2, acc, offs, nr, ln, rs_in, rs_out, sw, groups)


@jit(parallel=True)
def _fwd_parallel(
    xf: Array, w2: Array, acc: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int, groups: int
) -> None:
    og = acc.shape[1] // groups
    for t in numba.prange(acc.shape[0] * groups * ((og + 3) // 4)):
        _fwd_task(t, xf, w2, acc, offs, nr, ln, rs_in, rs_out, sw, groups)


@jit()
def _bwd_input_task(
    t: int,
    gf: Array,
    w2: Array,
    gxf: Array,
    offs: Array,
    nr: int,
    ln: int,
    rs_in: int,
    rs_out: int,
    sw: int,
    groups: int,
) -> None:
    cg, kk = w2.shape[1], w2.shape[2]
    og = gf.shape[1] // groups
    nb = (cg + 3) // 4
    n = t // (groups * nb)
    rem = t % (groups * nb)
    grp = rem // nb
    c0 = (rem % nb) * 4
    c1 = min(c0 + 4, cg)
    base = grp * cg
    if c1 - c0 == 4:
        x0, x1, x2, x3 = gxf[n, base + c0], gxf[n, base + c0 + 1], gxf[n, base + c0 + 2], gxf[n, base + c0 + 3]
        for o in range(grp * og, (grp + 1) * og):
            gp = gf[n, o]
            for k in range(kk):
                w0, w1, w2_, w3 = w2[o, c0, k], w2[o, c0 + 1, k], w2[o, c0 + 2, k], w2[o, c0 + 3, k]
                for r in range(nr):
                    gs = gp[r * rs_out :]
                    s = r * rs_in + offs[k]
                    y0, y1, y2, y3 = x0[s:], x1[s:], x2[s:], x3[s:]
                    if sw == 1:
                        for i in range(ln):
                            v = gs[i]
                            y0[i] += w0 * v
                            y1[i] += w1 * v
                            y2[i] += w2_ * v
                            y3[i] += w3 * v
                    else:
                        for i in range(ln):
                            v = gs[i]
                            y0[i * sw] += w0 * v
                            y1[i * sw] += w1 * v
                            y2[i * sw] += w2_ * v
                            y3[i * sw] += w3 * v
    else:
        for c in range(c0, c1):
            xp_ = gxf[n, base + c]
            for o in range(grp * og, (grp + 1) * og):
                gp = gf[n, o]
                for k in range(kk):
                    wv = w2[o, c, k]
                    for r in range(nr):
                        gs = gp[r * rs_out :]
                        y = xp_[r * rs_in + offs[k] :]
                        for i in range(ln):
                            y[i * sw] += wv * gs[i]


@jit()
def _bwd_input_serial(
    gf: Array, w2: Array, gxf: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int, groups: int
) -> None:
    cg = w2.shape[1]
    for t in range(gxf.shape[0] * groups * ((cg + 3) // 4)):
        _bwd_input_task(t, gf, w2, gxf, offs, nr, ln, rs_in, rs_out, sw, groups)


@jit(parallel=True)
def _bwd_input_parallel(
    gf: Array, w2: Array, gxf: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int, groups: int
) -> None:
    cg = w2.shape[1]
    for t in numba.prange(gxf.shape[0] * groups * ((cg + 3) // 4)):
        _bwd_input_task(t, gf, w2, gxf, offs, nr, ln, rs_in, rs_out, sw, groups)


@jit()
def _bwd_weight_task(
    p: int,
    xf: Array,
    gf: Array,
    gw2: Array,
    offs: Array,
    nr: int,
    ln: int,
    rs_in: int,
    rs_out: int,
    sw: int,
    groups: int,
) -> None:
    nout, cg, kk = gw2.shape
    o = p // cg
    c = p % cg
    ci = (o // (nout // groups)) * cg + c
    tmp = np.zeros((kk, ln), gw2.dtype)
    for n in range(gf.shape[0]):
        x = xf[n, ci]
        gp = gf[n, o]
        for k in range(kk):
            t = tmp[k]
            for r in range(nr):
                gs = gp[r * rs_out :]
                xs = x[r * rs_in + offs[k] :]
                if sw == 1:
                    for i in range(ln):
                        t[i] += gs[i] * xs[i]
                else:
                    for i in range(ln):
                        t[i] += gs[i] * xs[i * sw]
    for k in range(kk):
        gw2[o, c, k] = tmp[k].sum()


@jit()
def _bwd_weight_serial(
    xf: Array, gf: Array, gw2: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int, groups: int
) -> None:
    for p in range(gw2.shape[0] * gw2.shape[1]):
        _bwd_weight_task(p, xf, gf, gw2, offs, nr, ln, rs_in, rs_out, sw, groups)


@jit(parallel=True)
def _bwd_weight_parallel(
    xf: Array, gf: Array, gw2: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int, groups: int
) -> None:
    for p in numba.prange(gw2.shape[0] * gw2.shape[1]):
        _bwd_weight_task(p, xf, gf, gw2, offs, nr, ln, rs_in, rs_out, sw, groups)


@jit()
def _col2im_task(
    p: int, dcols: Array, gxf: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int
) -> None:
    cin = gxf.shape[1]
    cg = cin // dcols.shape[1]
    kk = offs.shape[0]
    n = p // cin
    ci = p % cin
    plane = gxf[n, ci]
    src = dcols[n, ci // cg]
    for k in range(kk):
        d = src[(ci % cg) * kk + k]
        for r in range(nr):
            ds = d[r * rs_out :]
            y = plane[r * rs_in + offs[k] :]
            if sw == 1:
                for i in range(ln):
                    y[i] += ds[i]
            else:
                for i in range(ln):
                    y[i * sw] += ds[i]


@jit()
def _col2im_serial(dcols: Array, gxf: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int) -> None:
    for p in range(gxf.shape[0] * gxf.shape[1]):
        _col2im_task(p, dcols, gxf, offs, nr, ln, rs_in, rs_out, sw)


@jit(parallel=True)
def _col2im_parallel(dcols: Array, gxf: Array, offs: Array, nr: int, ln: int, rs_in: int, rs_out: int, sw: int) -> None:
    for p in numba.prange(gxf.shape[0] * gxf.shape[1]):
        _col2im_task(p, dcols, gxf, offs, nr, ln, rs_in, rs_out, sw)


# ----- public entry points ---------------------------------------------------------------


def _c(a: Array) -> Array:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _work(g_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> int:
    n, o, oh, ow = g_shape
    return n * o * oh * ow * w_shape[1] * w_shape[2] * w_shape[3]


def _offsets(k: Pair, dilation: Pair, wp: int) -> Array:
    return np.array([a * dilation[0] * wp + b * dilation[1] for a in range(k[0]) for b in range(k[1])], np.int64)


def _rows(stride: Pair, out_hw: Pair, wp: int, flat: bool) -> tuple[int, int, int, int, int]:
    """``(R, L, rs_in, rs_out, sw)`` of the direct kernels (see the comment above them)."""
    oh, ow = out_hw
    if flat:
        return 1, (oh - 1) * wp + ow, 0, 0, 1
    return oh, ow, stride[0] * wp, ow, stride[1]


def forward(
    xp: Array,
    w: Array,
    stride: Pair,
    dilation: Pair,
    groups: int,
    out_hw: Pair,
    impl: Impl = "auto",
    keep_cols: bool = False,
) -> tuple[Array, Array | None]:
    """Cross-correlation of the padded input ``xp (N, C, Hp, Wp)`` with ``w (O, C/G, KH, KW)``.

    ``out[n, o, i, j] = sum_{c, a, b} w[o, c, a, b] * xp[n, g*C/G + c, i*sh + a*dh, j*sw + b*dw]``
    with ``g = o // (O/G)``, for ``i < OH``, ``j < OW`` (the caller checks that every window
    lies inside ``xp``). Returns ``(out, cols)``: a new C-contiguous ``(N, O, OH, OW)`` array,
    and im2col's columns when ``keep_cols`` asked for them, im2col ran and they take at most
    :data:`COLS_MAX_BYTES` (else ``None``); pass them on to :func:`backward_weight`.
    """
    n, c, hp, wp = xp.shape
    o, cg, kh, kw = w.shape
    shape = (n, o, out_hw[0], out_hw[1])
    if pick(impl, "forward", groups, cg * kh * kw) == "im2col":
        cols = im2col(xp, (kh, kw), stride, dilation, out_hw, groups)
        out = np.matmul(w.reshape(groups, o // groups, cg * kh * kw), cols).reshape(shape)
        return out, (cols if keep_cols and cols.nbytes <= COLS_MAX_BYTES else None)
    flat = stride == (1, 1)
    nr, ln, rs_in, rs_out, sw = _rows(stride, out_hw, wp, flat)
    acc = np.zeros((n, o, out_hw[0] * (wp if flat else out_hw[1])), xp.dtype)
    kernel = _fwd_parallel if _work(shape, w.shape) >= PARALLEL_WORK else _fwd_serial
    xf = _c(xp).reshape(n, c, hp * wp)
    kernel(xf, _c(w).reshape(o, cg, kh * kw), acc, _offsets((kh, kw), dilation, wp), nr, ln, rs_in, rs_out, sw, groups)
    if flat:
        return np.ascontiguousarray(acc.reshape(n, o, out_hw[0], wp)[:, :, :, : out_hw[1]]), None
    return acc.reshape(shape), None


def backward_input(
    g: Array, w: Array, xp_shape: tuple[int, ...], stride: Pair, dilation: Pair, groups: int, impl: Impl = "auto"
) -> Array:
    """The gradient ``(N, C, Hp, Wp)`` of :func:`forward` w.r.t. the padded input, given the
    output's gradient ``g (N, O, OH, OW)``: a new array (also conv_transpose2d's forward).

    ``gxp[n, g*C/G + c, i*sh + a*dh, j*sw + b*dw] += w[o, c, a, b] * g[n, o, i, j]``.
    """
    n, c, hp, wp = xp_shape
    o, cg, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    if pick(impl, "input", groups, cg * kh * kw) == "im2col":
        wg = w.reshape(groups, o // groups, cg * kh * kw)
        dcols = np.matmul(wg.transpose(0, 2, 1), g.reshape(n, groups, o // groups, oh * ow))
        return _col2im(dcols, xp_shape, (kh, kw), stride, dilation, (oh, ow))
    # Flat mode would add 0 * w at the garbage columns: an infinite weight would turn a
    # finite gradient into nan, so the backward keeps to rows.
    nr, ln, rs_in, rs_out, sw = _rows(stride, (oh, ow), wp, False)
    gxp = np.zeros((n, c, hp * wp), g.dtype)
    kernel = _bwd_input_parallel if _work(g.shape, w.shape) >= PARALLEL_WORK else _bwd_input_serial
    gf = _c(g).reshape(n, o, oh * ow)
    kernel(gf, _c(w).reshape(o, cg, kh * kw), gxp, _offsets((kh, kw), dilation, wp), nr, ln, rs_in, rs_out, sw, groups)
    return gxp.reshape(xp_shape)


def backward_weight(
    xp: Array,
    g: Array,
    w_shape: tuple[int, ...],
    stride: Pair,
    dilation: Pair,
    groups: int,
    impl: Impl = "auto",
    cols: Array | None = None,
) -> Array:
    """The gradient ``(O, C/G, KH, KW)`` of :func:`forward` w.r.t. ``w``, given the padded
    input ``xp`` (or its columns ``cols`` from :func:`forward`) and the output's gradient ``g``:
    ``gw[o, c, a, b] = sum_{n, i, j} g[n, o, i, j] * xp[n, g*C/G + c, i*sh + a*dh, j*sw + b*dw]``."""
    n, c, hp, wp = xp.shape
    o, cg, kh, kw = w_shape
    oh, ow = g.shape[2], g.shape[3]
    if cols is not None or pick(impl, "weight", groups, cg * kh * kw) == "im2col":
        if cols is None:
            cols = im2col(xp, (kh, kw), stride, dilation, (oh, ow), groups)
        gg = g.reshape(n, groups, o // groups, oh * ow)
        gw_: Array = np.matmul(gg, cols.transpose(0, 1, 3, 2)).sum(axis=0)
        return gw_.reshape(w_shape)
    nr, ln, rs_in, rs_out, sw = _rows(stride, (oh, ow), wp, False)
    gw = np.empty((o, cg, kh * kw), g.dtype)
    kernel = _bwd_weight_parallel if _work(g.shape, w_shape) >= PARALLEL_WORK else _bwd_weight_serial
    xf = _c(xp).reshape(n, c, hp * wp)
    kernel(xf, _c(g).reshape(n, o, oh * ow), gw, _offsets((kh, kw), dilation, wp), nr, ln, rs_in, rs_out, sw, groups)
    return gw.reshape(w_shape)


# ----- the previous ops-level drivers (gradtape.ops.conv, array code only) ---------------

Grads = tuple[Array, Array, Array, Array]


def _pads(padding: object, k: tuple[int, ...], dilation: tuple[int, ...]) -> list[tuple[int, int]]:
    nd = len(k)
    if padding == "valid":
        return [(0, 0)] * nd
    if padding == "same":
        total = [d * (kk - 1) for d, kk in zip(dilation, k, strict=True)]
        return [(t // 2, t - t // 2) for t in total]
    p = (padding,) * nd if isinstance(padding, int) else tuple(padding)  # type: ignore[arg-type]
    return [(int(i), int(i)) for i in p]


def _tup(v: object, nd: int) -> tuple[int, ...]:
    return (int(v),) * nd if isinstance(v, int) else tuple(int(i) for i in v)  # type: ignore[attr-defined]


def conv_ref(
    x: Array, w: Array, b: Array | None, g: Array | None, stride: object, padding: object, dilation: object, groups: int
) -> Grads:
    """``(y, gx, gw, gb)`` of the previous conv1d/conv2d (``x.ndim`` 3 or 4) with output
    gradient ``g`` (ones when ``None``); ``gb`` is ``g.sum`` over all but the channel axis."""
    nd = x.ndim - 2
    s, d = _tup(stride, nd), _tup(dilation, nd)
    k = tuple(int(i) for i in w.shape[2:])
    pads = _pads(padding, k, d)
    padded = tuple(n_ + lo + hi for n_, (lo, hi) in zip(x.shape[2:], pads, strict=True))
    eff = tuple(di * (ki - 1) + 1 for di, ki in zip(d, k, strict=True))
    out_sz = tuple((p_ - e) // si + 1 for p_, e, si in zip(padded, eff, s, strict=True))
    n, o = x.shape[0], w.shape[0]
    if nd == 1:
        x4, w4 = x[:, :, None, :], w[:, :, None, :]
        s2, d2, pads2, out_hw = (1, s[0]), (1, d[0]), [(0, 0), pads[0]], (1, out_sz[0])
    else:
        x4, w4, s2, d2, pads2, out_hw = x, w, (s[0], s[1]), (d[0], d[1]), pads, (out_sz[0], out_sz[1])
    xp = np.pad(x4, [(0, 0), (0, 0), *pads2]) if any(pads2[0] + pads2[1]) else x4
    out4, cols = forward(xp, w4, s2, d2, groups, out_hw, keep_cols=True)
    if b is not None:
        out4 = out4 + b.reshape(1, o, 1, 1)
    y = out4.reshape((n, o, *out_sz))
    gy = np.ones_like(y) if g is None else g
    g4 = gy.reshape(n, o, *out_hw)
    (top, _), (left, _) = pads2
    h, wid = x4.shape[2], x4.shape[3]
    gxp = backward_input(g4, w4, xp.shape, s2, d2, groups)
    gx = np.ascontiguousarray(gxp[:, :, top : top + h, left : left + wid]).reshape(x.shape)
    gw = backward_weight(xp, g4, w4.shape, s2, d2, groups, cols=cols).reshape(w.shape)
    return y, gx, gw, np.asarray(g4.sum(axis=(0, 2, 3)))


def conv_transpose2d_ref(
    x: Array,
    w: Array,
    b: Array | None,
    g: Array | None,
    stride: object,
    padding: object,
    output_padding: object,
    groups: int,
    dilation: object,
) -> Grads:
    """``(y, gx, gw, gb)`` of the previous conv_transpose2d with output gradient ``g``."""
    s, d, p, opad = _tup(stride, 2), _tup(dilation, 2), _tup(padding, 2), _tup(output_padding, 2)
    n, _, h, wid = x.shape
    k = (int(w.shape[2]), int(w.shape[3]))
    c_out = w.shape[1] * groups
    out_hw = tuple(
        (i - 1) * si - 2 * pi + di * (ki - 1) + oi + 1
        for i, si, pi, di, ki, oi in zip((h, wid), s, p, d, k, opad, strict=True)
    )
    s2, d2 = (s[0], s[1]), (d[0], d[1])
    full = (n, c_out, out_hw[0] + 2 * p[0], out_hw[1] + 2 * p[1])
    out = backward_input(x, w, full, s2, d2, groups)
    out = np.ascontiguousarray(out[:, :, p[0] : p[0] + out_hw[0], p[1] : p[1] + out_hw[1]])
    if b is not None:
        out = out + b.reshape(1, c_out, 1, 1)
    gy = np.ones_like(out) if g is None else g
    gp = np.pad(gy, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])]) if p != (0, 0) else gy
    gx = forward(gp, w, s2, d2, groups, (h, wid))[0]
    gw = backward_weight(gp, x, w.shape, s2, d2, groups)
    return out, gx, gw, np.asarray(gy.sum(axis=(0, 2, 3)))
