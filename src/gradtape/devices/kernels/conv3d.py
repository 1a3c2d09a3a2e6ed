"""3-D convolution kernels on NCDHW arrays: chunked vol2col + BLAS (conv3d, conv_transpose3d).

Every entry point takes the *unpadded* input and the zero padding ``((front, back), (top,
bottom), (left, right))``; a window element outside the input reads zero (no ``np.pad`` copy).

* :func:`forward`: ``out = conv(pad(x), w)``. The batch is cut into chunks of
  :func:`chunk_samples` samples (columns plus output of about :data:`CHUNK_BYTES`); a numba
  pass (:func:`vol2col`, ``prange`` over column rows from :data:`PARALLEL_COPY` elements)
  writes a chunk's columns ``(C*KD*KH*KW, nb*OD*OH*OW)`` straight from ``x``, then one 2-D
  BLAS product per group, ``w_g (O/G, C/G*KD*KH*KW) @ cols_g``, computes the chunk, copied
  into the ``(N, O, OD, OH, OW)`` output with the bias added in the same pass.
* :func:`backward`: per chunk, the columns are rebuilt into one reused buffer (none are kept
  from the forward: 3-D columns are ``KD*KH*KW`` times the input) for the weight gradient
  ``gw += gT @ cols.T``; the input gradient is ``dcols = w.T @ gT`` and a fused numba col2vol
  (:func:`_col2vol`, one task per (sample, channel) plane, which it zeroes then accumulates)
  straight into the unpadded gradient.
* :func:`backward_input` (also conv_transpose3d's forward) and :func:`backward_weight`: one of
  the two gradients.

Grouped and depthwise convolutions run the same path (one product per group: simple, but
many small products for a depthwise conv; the 2-D kernels' direct loops would be faster there).

GPU arrays (CuPy's) run :func:`_xp_forward` / :func:`_xp_backward`: the same im2col + one
batched product written with array functions only (a padded copy, one strided slice per kernel
tap, ``matmul``), which CuPy dispatches to cuBLAS, as
:mod:`gradtape.devices.kernels.cuda`'s 2-D convolution does.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from gradtape.devices import _arrays
from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import blas as _blas
from gradtape.devices.kernels._jit import jit, serial_and_parallel

__all__ = ["CHUNK_BYTES", "backward", "backward_input", "backward_weight", "chunk_samples", "forward", "vol2col"]

Array = np.ndarray[Any, Any]
Triple = tuple[int, int, int]
Pads3 = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]
Geometry = tuple[int, ...]
"""vol2col's and col2vol's ``(D, H, W, KD, KH, KW, sd, sh, sw, dd, dh, dw, pf, pt, pl, OD, OH,
OW)``: the unpadded input volume, kernel, stride, dilation, front/top/left padding and output
volume (:func:`_geometry`)."""

CHUNK_BYTES = 16 << 20
"""Target size of one chunk: its columns plus its output (:func:`chunk_samples`), as the 2-D
kernels' :data:`gradtape.devices.kernels.conv.CHUNK_BYTES`."""

PARALLEL_COPY = 1 << 20
"""vol2col and col2vol run their ``prange`` variant from this many column elements (the 2-D
kernels' threshold for im2col/col2im)."""


def chunk_samples(n: int, rows: int, p: int, itemsize: int) -> int:
    """Samples per chunk: ``rows`` values (columns plus output channels) per output position,
    ``p`` output positions per sample, about :data:`CHUNK_BYTES` in all (at least one)."""
    per = max(1, rows * p * itemsize)
    return max(1, min(n, CHUNK_BYTES // per))


def _geometry(dhw: Triple, k: Triple, stride: Triple, pads: Pads3, dilation: Triple, out: Triple) -> Geometry:
    return (*dhw, *k, *stride, *dilation, pads[0][0], pads[1][0], pads[2][0], *out)


@jit()
def _vol2col_task(r: int, xf: Array, cols: Array, n0: int, nb: int, geo: Geometry) -> None:
    d, h, width, kd, kh, kw, sd, sh, sw, dd, dh, dw, pf, pt, pl, od, oh, ow = geo
    c = r // (kd * kh * kw)
    a = (r // (kh * kw)) % kd
    b = (r // kw) % kh
    e = r % kw
    zero = cols.dtype.type(0)
    row = cols[r]
    p = od * oh * ow
    hw = h * width
    # valid output columns j0 <= j < j1 (input column j*sw + e*dw - pl inside [0, width))
    lo_j = pl - e * dw
    j0 = 0 if lo_j <= 0 else (lo_j + sw - 1) // sw
    j1 = (width - 1 + lo_j) // sw + 1 if width - 1 + lo_j >= 0 else 0
    j1 = min(j1, ow)
    j0 = min(j0, j1)
    for m in range(nb):
        vol = xf[n0 + m, c]
        blk = row[m * p : (m + 1) * p]
        for i in range(od):
            z = i * sd + a * dd - pf
            for jj in range(oh):
                y = jj * sh + b * dh - pt
                dst = blk[(i * oh + jj) * ow : (i * oh + jj + 1) * ow]
                if z < 0 or z >= d or y < 0 or y >= h:
                    for t in range(ow):
                        dst[t] = zero
                    continue
                src = vol[z * hw + y * width : z * hw + (y + 1) * width]
                for t in range(j0):
                    dst[t] = zero
                for t in range(j1, ow):
                    dst[t] = zero
                if sw == 1:
                    dst[j0:j1] = src[j0 - lo_j : j1 - lo_j]
                else:
                    for t in range(j0, j1):
                        dst[t] = src[t * sw - lo_j]


def _vol2col(xf: Array, cols: Array, n0: int, nb: int, geo: Geometry) -> None:
    for r in numba.prange(cols.shape[0]):
        _vol2col_task(r, xf, cols, n0, nb, geo)


_vol2col_serial, _vol2col_parallel = serial_and_parallel(_vol2col)


@jit()
def _col2vol_task(q: int, dcols: Array, gx: Array, n0: int, geo: Geometry) -> None:
    d, h, width, kd, kh, kw, sd, sh, sw, dd, dh, dw, pf, pt, pl, od, oh, ow = geo
    cin = gx.shape[1]
    m = q // cin
    c = q % cin
    vol = gx[n0 + m, c]
    zero = gx.dtype.type(0)
    for t in range(vol.shape[0]):
        vol[t] = zero
    kk = kd * kh * kw
    p = od * oh * ow
    hw = h * width
    for k in range(kk):
        a = k // (kh * kw)
        b = (k // kw) % kh
        e = k % kw
        lo_j = pl - e * dw
        j0 = 0 if lo_j <= 0 else (lo_j + sw - 1) // sw
        j1 = (width - 1 + lo_j) // sw + 1 if width - 1 + lo_j >= 0 else 0
        j1 = min(j1, ow)
        j0 = min(j0, j1)
        row = dcols[c * kk + k]
        for i in range(od):
            z = i * sd + a * dd - pf
            if z < 0 or z >= d:
                continue
            for jj in range(oh):
                y = jj * sh + b * dh - pt
                if y < 0 or y >= h:
                    continue
                base = m * p + (i * oh + jj) * ow
                dst0 = z * hw + y * width - lo_j
                for t in range(j0, j1):
                    vol[dst0 + t * sw] += row[base + t]


def _col2vol(dcols: Array, gx: Array, n0: int, nb: int, geo: Geometry) -> None:
    for q in numba.prange(nb * gx.shape[1]):
        _col2vol_task(q, dcols, gx, n0, geo)


_col2vol_serial, _col2vol_parallel = serial_and_parallel(_col2vol)


def _c(a: Array) -> Array:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _grouped_matmul(a: Array, b: Array, out: Array) -> None:
    """``out[g] = a[g] @ b[g]`` for each group, one 2-D BLAS product each: a stacked
    ``matmul`` whose operands are transposed views leaves BLAS for numpy's own loops (the
    weight gradient ``gT @ cols.T`` ran 10x slower that way)."""
    for g in range(a.shape[0]):
        _blas.matmul(a[g], b[g], out=out[g])


def vol2col(
    x: Array, n0: int, nb: int, k: Triple, stride: Triple, pads: Pads3, dilation: Triple, out: Triple, buf: Array | None
) -> Array:
    """The columns ``(C*KD*KH*KW, nb*OD*OH*OW)`` of samples ``n0 .. n0+nb`` of the
    C-contiguous unpadded input ``x (N, C, D, H, W)``: ``cols[((c*KD + a)*KH + b)*KW + e,
    m*P + (i*OH + j)*OW + l] = xpad[n0 + m, c, i*sd + a*dd, j*sh + b*dh, l*sw + e*dw]``,
    written into the front of the 1-D scratch ``buf`` when given (else a new array)."""
    n, c, d, h, w = x.shape
    rows = c * k[0] * k[1] * k[2]
    size = rows * nb * out[0] * out[1] * out[2]
    cols = (np.empty(size, x.dtype) if buf is None else buf[:size]).reshape(rows, size // rows)
    kernel = _vol2col_parallel if size >= PARALLEL_COPY else _vol2col_serial
    kernel(x.reshape(n, c, d * h * w), cols, n0, nb, _geometry((d, h, w), k, stride, pads, dilation, out))
    return cols


def forward(
    x: Array,
    w: Array,
    stride: Triple,
    pads: Pads3,
    dilation: Triple,
    groups: int,
    out_sz: Triple,
    bias: Array | None = None,
) -> Array:
    """Cross-correlation of ``x (N, C, D, H, W)`` zero padded by ``pads`` with ``w (O, C/G,
    KD, KH, KW)``, plus ``bias (O,)`` when given: a new C-contiguous ``(N, O, OD, OH, OW)``
    array of ``x``'s dtype with ``out[n, o, i, j, l] = bias[o] + sum_{c, a, b, e} w[o, c, a,
    b, e] * xpad[n, g*C/G + c, i*sd + a*dd, j*sh + b*dh, l*sw + e*dw]`` (``g = o // (O/G)``)
    for ``i < OD``, ``j < OH``, ``l < OW`` (the caller checks that every window lies inside
    the padded input)."""
    if _on_gpu(x):
        return _xp_forward(x, w, stride, pads, dilation, groups, out_sz, bias)
    n, c = x.shape[:2]
    o, cg, kd, kh, kw = w.shape
    k = (kd, kh, kw)
    p = out_sz[0] * out_sz[1] * out_sz[2]
    rows, og, kg = c * kd * kh * kw, o // groups, cg * kd * kh * kw
    out = np.empty((n, o, *out_sz), x.dtype)
    if n == 0 or p == 0:
        return out
    x = _c(x)
    nb = chunk_samples(n, rows + o, p, x.itemsize)
    o3 = out.reshape(n, o, p)
    w3 = _c(w).reshape(groups, og, kg)
    buf = np.empty(rows * nb * p, x.dtype)
    tmp = np.empty(o * nb * p, x.dtype)
    b3 = None if bias is None else bias.reshape(1, o, 1)
    for n0 in range(0, n, nb):
        m = min(nb, n - n0)
        cols = vol2col(x, n0, m, k, stride, pads, dilation, out_sz, buf)
        t = tmp[: o * m * p].reshape(groups, og, m * p)
        _grouped_matmul(w3, cols.reshape(groups, kg, m * p), t)
        if b3 is None:
            o3[n0 : n0 + m] = t.reshape(o, m, p).transpose(1, 0, 2)
        else:
            np.add(t.reshape(o, m, p).transpose(1, 0, 2), b3, out=o3[n0 : n0 + m])
    return out


def backward(
    g: Array,
    x: Array,
    w: Array,
    stride: Triple,
    pads: Pads3,
    dilation: Triple,
    groups: int,
    want_x: bool = True,
    want_w: bool = True,
) -> tuple[Array | None, Array | None]:
    """The gradients ``(gx (N, C, D, H, W), gw (O, C/G, KD, KH, KW))`` of :func:`forward` (each
    new, or ``None`` when not wanted) given the output's gradient ``g (N, O, OD, OH, OW)``:
    ``gx`` scatters ``w[o, c, a, b, e] * g[n, o, i, j, l]`` back to where the forward read
    (terms landing in the padding dropped), ``gw[o, c, a, b, e] = sum_{n, i, j, l} g[n, o, i,
    j, l] * xpad[n, g*C/G + c, i*sd + a*dd, j*sh + b*dh, l*sw + e*dw]``. ``x`` is read only for
    ``gw`` (:func:`backward_input` passes a placeholder of its shape)."""
    if _on_gpu(g):
        return _xp_backward(g, x, w, stride, pads, dilation, groups, want_x, want_w)
    n, c = x.shape[:2]
    o, cg, kd, kh, kw = w.shape
    k = (kd, kh, kw)
    out_sz = (int(g.shape[2]), int(g.shape[3]), int(g.shape[4]))
    p = out_sz[0] * out_sz[1] * out_sz[2]
    rows, og, kg = c * kd * kh * kw, o // groups, cg * kd * kh * kw
    if n == 0 or p == 0:
        return (np.zeros(x.shape, g.dtype) if want_x else None), (np.zeros(w.shape, g.dtype) if want_w else None)
    nb = chunk_samples(n, rows + o, p, g.itemsize)
    g3 = g.reshape(n, o, p)
    buf = np.empty(rows * nb * p, g.dtype)
    gtbuf = np.empty(o * nb * p, g.dtype)
    gx = gw3 = tmpw = None
    if want_x:
        gx = np.empty(x.shape, g.dtype)
        w3t = _c(w).reshape(groups, og, kg).transpose(0, 2, 1)
    if want_w:
        xc = _c(x)
        gw3 = np.empty((groups, og, kg), g.dtype)
        tmpw = np.empty_like(gw3)
    for i, n0 in enumerate(range(0, n, nb)):
        m = min(nb, n - n0)
        gt = gtbuf[: o * m * p].reshape(o, m, p)
        np.copyto(gt, g3[n0 : n0 + m].transpose(1, 0, 2))
        gt3 = gt.reshape(groups, og, m * p)
        if want_w:
            assert gw3 is not None and tmpw is not None
            cl = vol2col(xc, n0, m, k, stride, pads, dilation, out_sz, buf)
            _grouped_matmul(gt3, cl.reshape(groups, kg, m * p).transpose(0, 2, 1), gw3 if i == 0 else tmpw)
            if i:
                gw3 += tmpw
        if want_x:
            assert gx is not None
            dc = buf[: rows * m * p].reshape(groups, kg, m * p)
            _grouped_matmul(w3t, gt3, dc)
            dcols = dc.reshape(rows, m * p)
            kernel = _col2vol_parallel if dcols.size >= PARALLEL_COPY else _col2vol_serial
            geo = _geometry(x.shape[2:], k, stride, pads, dilation, out_sz)
            kernel(dcols, gx.reshape(n, c, -1), n0, m, geo)
    return gx, (None if gw3 is None else gw3.reshape(w.shape))


def backward_input(
    g: Array, w: Array, x_shape: tuple[int, ...], stride: Triple, pads: Pads3, dilation: Triple, groups: int
) -> Array:
    """:func:`backward`'s input gradient alone (``x_shape``, new; also conv_transpose3d's
    forward), given the output gradient ``g`` and ``w``."""
    gx, _ = backward(g, _placeholder(g, x_shape), w, stride, pads, dilation, groups, True, False)
    assert gx is not None
    return gx


def _placeholder(like: Array, shape: tuple[int, ...]) -> Array:
    """A read-only array of ``shape`` (a broadcast zero, no memory) standing for an operand
    of :func:`backward` whose values are not read (only its shape)."""
    return np.broadcast_to(np.zeros((), like.dtype), shape)


def backward_weight(
    x: Array, g: Array, w_shape: tuple[int, ...], stride: Triple, pads: Pads3, dilation: Triple, groups: int
) -> Array:
    """:func:`backward`'s weight gradient alone (``w_shape``, new), given the unpadded input
    ``x`` and the output gradient ``g``."""
    _, gw = backward(g, x, _placeholder(g, w_shape), stride, pads, dilation, groups, False, True)
    assert gw is not None
    return gw


# ----- the array-function path (GPU arrays) ----------------------------------------------


def _taps(k: Triple, stride: Triple, dilation: Triple, out: Triple) -> Any:
    """For each tap ``(a, b, e)``: the slices of the padded input it reads."""
    for a in range(k[0]):
        for b in range(k[1]):
            for e in range(k[2]):
                yield (
                    (a, b, e),
                    tuple(
                        slice(t * di, t * di + si * (oi - 1) + 1, si)
                        for t, di, si, oi in zip((a, b, e), dilation, stride, out, strict=True)
                    ),
                )


def _xp_pad(x: Array, pads: Pads3) -> Array:
    if not any(sum(pads, ())):
        return x
    n, c, d, h, w = x.shape
    shape = (n, c, d + sum(pads[0]), h + sum(pads[1]), w + sum(pads[2]))
    xp = _arrays.zeros(shape, x.dtype, x)
    xp[:, :, pads[0][0] : pads[0][0] + d, pads[1][0] : pads[1][0] + h, pads[2][0] : pads[2][0] + w] = x
    return xp


def _xp_cols(x: Array, k: Triple, stride: Triple, pads: Pads3, dilation: Triple, out: Triple) -> Array:
    """The columns ``(N, C, KD, KH, KW, OD, OH, OW)`` of ``x``, one strided slice per tap."""
    n, c = x.shape[:2]
    xp = _xp_pad(x, pads)
    cols = _arrays.zeros((n, c, *k, *out), x.dtype, x)
    for (a, b, e), sl in _taps(k, stride, dilation, out):
        cols[:, :, a, b, e] = xp[(slice(None), slice(None), *sl)]
    return cols


def _xp_forward(
    x: Array, w: Array, stride: Triple, pads: Pads3, dilation: Triple, groups: int, out: Triple, bias: Array | None
) -> Array:
    """:func:`forward` with array functions only (GPU arrays; also runs on numpy arrays)."""
    n = x.shape[0]
    o, cg, kd, kh, kw = w.shape
    kg, p = cg * kd * kh * kw, out[0] * out[1] * out[2]
    cols = _xp_cols(x, (kd, kh, kw), stride, pads, dilation, out).reshape(n, groups, kg, p)
    y = np.matmul(w.reshape(groups, o // groups, kg), cols).reshape(n, o, *out)
    if bias is not None:
        y += bias.reshape(1, o, 1, 1, 1)
    return y  # type: ignore[no-any-return]


def _xp_backward(
    g: Array,
    x: Array,
    w: Array,
    stride: Triple,
    pads: Pads3,
    dilation: Triple,
    groups: int,
    want_x: bool,
    want_w: bool,
) -> tuple[Array | None, Array | None]:
    """:func:`backward` with array functions only (GPU arrays; also runs on numpy arrays)."""
    n, c, d, h, wd = x.shape
    o, cg, kd, kh, kw = w.shape
    k = (kd, kh, kw)
    out = (int(g.shape[2]), int(g.shape[3]), int(g.shape[4]))
    kg, og, p = cg * kd * kh * kw, o // groups, out[0] * out[1] * out[2]
    g4 = g.reshape(n, groups, og, p)
    gx = gw = None
    if want_w:
        cols = _xp_cols(x, k, stride, pads, dilation, out).reshape(n, groups, kg, p)
        gw = np.matmul(g4, cols.swapaxes(-1, -2)).sum(axis=0).reshape(w.shape)
    if want_x:
        dcols = np.matmul(w.reshape(groups, og, kg).swapaxes(-1, -2), g4).reshape(n, c, *k, *out)
        (pf, pb), (pt, pbo), (pl, pr) = pads
        gxp = _arrays.zeros((n, c, d + pf + pb, h + pt + pbo, wd + pl + pr), g.dtype, g)
        for (a, b, e), sl in _taps(k, stride, dilation, out):
            gxp[(slice(None), slice(None), *sl)] += dcols[:, :, a, b, e]
        gx = gxp[:, :, pf : pf + d, pt : pt + h, pl : pl + wd]
        gx = gx.copy() if any(sum(pads, ())) else gx
    return gx, gw
