"""Convolution kernels on NCHW arrays: chunked im2col + BLAS, and direct numba loops.

float32 convolutions of at least :data:`ONEDNN_MIN_MACS` multiply-adds run on oneDNN instead
when its optional wheel is installed (:mod:`gradtape.devices.kernels.onednn`, ``impl="auto"``
or ``"onednn"``); everything below describes the numba + BLAS kernels, which run the rest.

Every entry point takes the *unpadded* input and the zero padding ``((top, bottom), (left,
right))``; a window element outside the input reads zero (no ``np.pad`` copy, no crop copy
on the im2col path). Three passes, each in two implementations (``impl="im2col"`` /
``"direct"``; ``"auto"`` picks per case, see :func:`pick`):

* :func:`forward`: ``out = conv(pad(x), w)``. im2col: the batch is cut into chunks of
  :func:`chunk_samples` samples (columns plus output of about :data:`CHUNK_BYTES`, so they stay
  in cache between the pass that writes them and the product that reads them); a numba pass
  (:func:`im2col`, ``prange`` over column rows above :data:`PARALLEL_WORK` elements; a
  stride-1 conv whose output is as wide as its input copies each tap as one contiguous run)
  writes a chunk's columns ``(C*KH*KW, nb*OH*OW)`` straight from ``x``, then ONE BLAS
  product ``w (O, C*KH*KW) @ cols`` (batched over groups for grouped convs) computes the
  chunk, written straight into the output when the chunk is one sample, else copied into
  the ``(N, O, OH, OW)`` output with the bias added in the same pass. Direct: numba loops
  over (sample, block of 4 output channels) on the padded input.
* :func:`backward` (and :func:`backward_input`, :func:`backward_weight`): the weight gradient
  of an ungrouped conv with columns of at least :data:`PER_SAMPLE_WEIGHT` values accumulates
  one product ``cols_m @ g_m.T`` per sample into ``gw.T``; otherwise one product
  ``gT @ cols.T`` per chunk (``gT (O, nb*OH*OW)`` the chunk's output gradient, a view for
  one-sample chunks, else one copy); the columns are kept by :func:`forward` or rebuilt for
  the chunk into one reused buffer. The bias gradient is :func:`bias_grad`. The input
  gradient of a stride-1 conv is itself a convolution, of the output gradient with the
  flipped kernel
  (:func:`_grad_x_as_conv`, :data:`GRAD_X_AS_CONV`): chunked im2col of ``g`` and one product
  per chunk straight into ``(N, C, H, W)``; a strided conv runs ``dcols = w.T @ gT`` (one
  product per chunk) and a fused numba col2im straight into the unpadded gradient. Direct:
  loops over (sample, block of 4 input channels) and (out channel, in channel).

Keep vs rebuild: :func:`forward` keeps the columns for the weight gradient only while the
whole batch's take at most :data:`COLS_MAX_BYTES`; larger ones are rebuilt chunk by chunk.

Small output planes (under :data:`SMALL_PLANE` values, the digits CNN's 8x8 and 4x4 maps)
lay the chunk out as rows ``R (nb*OH*OW, C*KH*KW)``, the columns transposed, copied through a
cached index table (:func:`_small_src_rows`, :func:`_small_forward`,
:func:`_small_backward`): the products ``R @ w.T``, ``R.T @ gR`` and ``gR @ w`` (one per
group) then have the long dimension first, which OpenBLAS runs about twice as fast on these
shapes.

The direct kernels still run grouped and depthwise convs, where im2col pays ``G`` small
products per chunk (nn.Mamba's depthwise conv1d, 160 channels, kernel 4, length 64, batch
16: direct 0.42 / 0.49 ms forward / backward, im2col 0.86 / 1.8 ms); a grouped weight
gradient with more than :data:`DIRECT_WEIGHT_MAX_TAPS` taps per output channel goes to im2col.
The previous implementation (per-sample products on a full column array, ``np.pad``, a col2im
into a padded gradient and a crop) is frozen in ``tests/conv_oracle.py``. Measured against it
and ``torch.nn.functional.conv2d``/``conv1d`` (float32, ops level with bias, parameters
untraced in a store that keeps only their gradients, so the first layers compute no input
gradient; ms, fwd / bwd / total). Two threads: wall time, one process per implementation,
three alternating rounds of 21 repeats, the median of the rounds' medians (a shared 2-vCPU
VM; single runs varied by up to 10x at load 6-10). One thread: CPU time, 41 repeats
interleaved in one process::

    2 threads                              previous             new                  PyTorch
    3 -> 64, k3 p1, (32, 3, 32, 32)        1.45 / 1.90 / 4.23   1.49 / 1.89 / 3.38   0.50 / 0.55 / 1.06
    64 -> 64, k3 p1, (32, 64, 32, 32)     18.8 / 35.4 / 54.4   13.0 / 26.1 / 39.2    5.16 / 11.0 / 16.2
    digits 1 -> 16, k3 p1, (64, 1, 8, 8)   0.09 / 0.07 / 0.16   0.07 / 0.07 / 0.14   0.05 / 0.09 / 0.13
    digits 16 -> 32, k3 p1, (64, 16, 4, 4) 0.30 / 0.40 / 0.70   0.19 / 0.38 / 0.57   0.07 / 0.21 / 0.28
    Mamba depthwise conv1d (16, 160, 64)   0.40 / 0.50 / 0.89   0.40 / 0.54 / 0.93   0.10 / 0.81 / 0.91

    1 thread (CPU time)
    3 -> 64                                1.91 / 2.41 / 4.32   2.00 / 2.68 / 4.71   1.25 / 1.37 / 2.62
    64 -> 64                              30.0 / 56.6 / 86.4   23.3 / 46.1 / 69.7   10.6 / 22.3 / 32.8
    digits 1 -> 16                         0.12 / 0.07 / 0.19   0.08 / 0.08 / 0.15   0.06 / 0.10 / 0.17
    digits 16 -> 32                        0.36 / 0.41 / 0.78   0.24 / 0.47 / 0.72   0.11 / 0.24 / 0.35
    Mamba depthwise conv1d                 0.45 / 0.51 / 0.96   0.41 / 0.55 / 0.97   0.13 / 0.83 / 0.96

The products dominate what is left. Those figures ran OpenBLAS's Haswell (AVX2) kernels,
which the VM's environment forces (``OPENBLAS_CORETYPE=Haswell``): 127 GFLOP/s on one thread
for the 64 -> 64 product, where oneDNN's direct convolution reaches about 210 (about 470 on
two threads). numpy's own choice on this AVX-512 CPU, ``SkylakeX``, gave 165-172.

Tried and not kept (session 8, SkylakeX kernels): Winograd F(2x2, 3x3) (Lavin & Gray 2016)
for 3x3 stride-1 convs with at least 16 channels in and out. Per 2x2 output tile it runs 16
products of ``(O, C) @ (C, tiles)`` instead of 36 multiply-adds per output channel pair and
tile, 2.25x fewer, with the transforms in numba (adds only) and the backward as the adjoint
of each stage (float64 results equal im2col's to 1e-15). On the 64 -> 64 layer alone it ran
8.7 against 10.5 ms forward and 16.2 against 18.8 ms for both gradients, one sample per
thread on two threads with one-thread products; but its products have ``C`` = 64 as their
inner dimension and ran at 200-260 GFLOP/s against im2col's 300-400, its transforms move 4
values per output, and the conv block's training step took 33.7 ms against im2col's 31-33 ms
(with OpenBLAS's spin shortened, :mod:`gradtape._openblas_env`; 53-59 against 38-44 ms with
it at the default). A direct convolution on one thread pool (oneDNN's approach) is what would
close the gap to PyTorch.

Earlier measurements of (unchunked) im2col vs the direct loops (ms; N, C_in -> C_out, HxW,
groups; fwd / grad_x / grad_w, im2col then direct)::

    64, 1 -> 8,    8x8,   1             0.21 /  0.11 /  0.07             0.21 /  0.36 /   0.19
    64, 8 -> 16,   8x8,   1             0.75 /  0.49 /  0.29             1.32 /  1.74 /   2.68
    32, 32 -> 64,  32x32, 1            23.0  / 30.5  / 21.5             39.3  / 70.0  / 102.0
    32, 32 -> 32,  32x32, 32 (dw)      12.9  / 30.2  /  2.90             6.70 /  6.50 /   1.86
    32, 32 -> 32,  16x16, 8             3.68 /  2.65 /  2.18             1.38 /  2.10 /   2.69
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal

import numba
import numpy as np

from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import blas as _blas
from gradtape.devices.kernels import onednn as _od
from gradtape.devices.kernels._jit import REASSOC, jit, serial_and_parallel

__all__ = [
    "CHUNK_BYTES",
    "COLS_MAX_BYTES",
    "DIRECT_WEIGHT_MAX_TAPS",
    "GRAD_X_AS_CONV",
    "ONEDNN_MIN_MACS",
    "Impl",
    "backward",
    "backward_input",
    "backward_weight",
    "chunk_samples",
    "forward",
    "im2col",
    "pick",
]

Array = np.ndarray[Any, Any]
Pair = tuple[int, int]
Pads = tuple[Pair, Pair]
Impl = Literal["auto", "im2col", "direct", "onednn"]
Geometry = tuple[int, ...]
"""im2col's and col2im's ``(H, W, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW)``: the unpadded input
plane, kernel, stride, dilation, top/left padding and output plane (:func:`_geometry`)."""
Rows = tuple[int, int, int, int, int]
"""The direct kernels' ``(R, L, rs_in, rs_out, sw)`` (:func:`_rows`, the comment above the kernels)."""

PARALLEL_WORK = 1 << 17
"""Kernels with at least this many multiply-adds (or, for im2col/col2im, elements) run their
``prange`` variant."""

SMALL_PLANE = 256
"""Output planes (``OH * OW``) below this size run on rows copied through an index table
(:func:`_small_forward`, :func:`_small_backward`) instead of chunked im2col."""

PARALLEL_COPY = 1 << 20
"""im2col and col2im (copies, a load and a store per element) run their ``prange`` variant
from this many elements, the elementwise kernels' threshold. Measured on the digits CNN's
training step (147k-element columns), together with one-thread BLAS for its small products
(``blas.SMALL_MACS``): 2.2 ms wall and 4.2 CPU-ms with both parallel, 1.63 ms and 1.63 CPU-ms
with both serial (the VM's two vCPUs share a core, and spinning workers slow the other)."""

DIRECT_WEIGHT_MAX_TAPS = 36
"""``auto`` computes a grouped conv's weight gradient with the direct kernel while
``C/G * KH * KW`` is at most this (4 channels of 3x3 per group), with im2col above."""

CHUNK_BYTES = 16 << 20
"""Target size of one chunk: its columns plus its output (:func:`chunk_samples`). Measured with
two threads, medians of 15-25 interleaved repeats, forward + backward at the kernel level
(one run at load 3-5; ms; 8 / 16 / 32 MB): 64 -> 64 channels, 32x32, batch 32: 54.9 / 53.6 / 53.0 (4 MB: 62.0,
the previous code 65); 3 -> 64 channels: 2.5 / 2.8 / - (4 MB: 2.6, previous 2.7)."""

COLS_MAX_BYTES = 4 << 20
""":func:`forward` keeps im2col's columns for the weight gradient only up to this size in all;
larger ones are rebuilt chunk by chunk in backward, into one reused cache-sized buffer from
the (smaller) input. 64 -> 64 channels, 32x32, batch 32, two threads, forward + backward:
38.1 ms rebuilt vs 45.2 ms kept (writing the 75 MB of kept columns slowed the forward from
12.6 to 18.4 ms; one thread: 57 vs 61 ms for the weight gradient)."""

PER_SAMPLE_WEIGHT = 64
"""An ungrouped conv's weight gradient runs one product per sample, ``cols_m @ g_m.T`` (the
sample's gradient read transposed in place, no copy) into ``gw.T``, when a column holds at
least this many values (``C*KH*KW``): OpenBLAS runs that form faster than one product
``gT @ cols.T`` per chunk, which also needs the gradient copied into ``(O, nb*P)`` (64 -> 64
channels, 3x3, 32x32, chunks of 6 samples, two threads: 392 against 258 GFLOP/s). With
short columns (3 -> 64 channels: 27 values) the per-sample products are too small."""

GRAD_X_AS_CONV = True
"""im2col's input gradient of a stride-1 conv runs as a convolution of the output gradient
(:func:`_grad_x_as_conv`) rather than a product into column gradients and col2im (64 -> 64
channels, 32x32, batch 32, one thread of a loaded VM: 54 ms vs 57-68 ms; no column-gradient
buffer, and the product's inner dimension is ``O*KH*KW`` rather than ``O``). Not below
:data:`SMALL_PLANE` input values per plane: there the gradient's columns (``O*KH*KW`` rows,
twice the forward's in the digits CNN) cost more than col2im; the digits CNN's training
step took 1.65 ms that way and 1.26 ms with col2im."""


ONEDNN_MIN_MACS = 1 << 20
"""``auto`` runs a float32 convolution on oneDNN (:mod:`gradtape.devices.kernels.onednn`, when
installed) from this many multiply-adds of its forward (``N * O * OH * OW * C/G * KH * KW``);
smaller ones stay on the numba kernels, where the per-call cost of oneDNN's reorders and
ctypes calls (tens of microseconds) outweighs its faster loops."""


def _onednn_plan(
    impl: Impl, dtype: Any, x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_hw: Pair,
    stride: Pair, pads: Pads, dilation: Pair, groups: int,
) -> _od.Conv2d | None:  # fmt: skip
    """oneDNN's plan for this convolution when ``impl`` asks for it (``"onednn"``: always,
    raising when oneDNN cannot run it; ``"auto"``: float32 from :data:`ONEDNN_MIN_MACS`
    multiply-adds, when :func:`~gradtape.devices.kernels.onednn.available`), else ``None``."""
    if impl not in ("auto", "onednn") or x_shape[0] == 0:
        return None
    n, o, (oh, ow) = x_shape[0], w_shape[0], out_hw
    if impl == "auto" and (
        dtype != np.float32 or n * o * oh * ow * w_shape[1] * w_shape[2] * w_shape[3] < ONEDNN_MIN_MACS
    ):
        return None
    plan = None
    if dtype == np.float32:
        (pt, pb), (pl, pr) = pads  # plain ints: the plan cache's key and oneDNN's dims
        pads = ((int(pt), int(pb)), (int(pl), int(pr)))
        plan = _od.conv2d_plan(tuple(x_shape), tuple(w_shape), stride, pads, dilation, groups)
    if plan is None and impl == "onednn":
        raise _od.OneDNNError(
            f"conv2d: oneDNN cannot run x {x_shape}, w {w_shape} ({np.dtype(dtype).name}): {_od.info()}"
        )
    return plan


def pick(
    impl: Impl, pass_: Literal["forward", "input", "weight"], groups: int, taps: int
) -> Literal["im2col", "direct"]:
    """Resolve ``impl`` for one pass (``taps = C/G * KH * KW``, the length of a column).

    ``"auto"`` (once :func:`_onednn_plan` passed on it): im2col for ``groups == 1`` (one BLAS
    product per chunk beats the loops); the direct kernels for grouped and depthwise convs
    (im2col would run ``G`` tiny products per chunk), except the weight gradient of groups
    with more than :data:`DIRECT_WEIGHT_MAX_TAPS` taps.
    """
    if impl == "im2col" or impl == "direct":
        return impl
    if groups == 1 or (pass_ == "weight" and taps > DIRECT_WEIGHT_MAX_TAPS):
        return "im2col"
    return "direct"


def chunk_samples(n: int, rows: int, out_hw: Pair, itemsize: int) -> int:
    """Samples per im2col chunk: as many as keep ``rows`` rows of ``nb*OH*OW`` elements (the
    columns plus the chunk's output or output gradient, ``C*KH*KW + O`` rows) within
    :data:`CHUNK_BYTES` (at least 1, at most ``n``). Chunks that outgrow the cache cost: 3 -> 64
    channels, 32x32, batch 32 in one chunk (11 MB) ran its forward in 5.0 ms, in chunks of 4-11
    samples in 1.8-1.9 ms (one thread)."""
    per = max(1, rows * out_hw[0] * out_hw[1] * itemsize)
    return max(1, min(n, CHUNK_BYTES // per))


# ----- chunked im2col / col2im (numba) ----------------------------------------------------
#
# Columns of a chunk of ``nb`` samples starting at ``n0``: ``cols[r, m*P + i*OW + j]`` with row
# ``r = c*KH*KW + a*KW + b`` and ``P = OH*OW`` holds ``x[n0 + m, c, y, z]`` at
# ``y = i*sh + a*dh - pt``, ``z = j*sw + b*dw - pl`` (zero where that is outside ``x``). The
# kernels take the sizes as one :data:`Geometry` tuple.


def _geometry(hw: Pair, k: Pair, stride: Pair, pads: Pads, dilation: Pair, out_hw: Pair) -> Geometry:
    """The :data:`Geometry` of im2col/col2im on an unpadded ``hw`` plane."""
    return (*hw, *k, *stride, *dilation, pads[0][0], pads[1][0], *out_hw)


@jit()
def _jrange(r: int, kw: int, dw: int, sw: int, pl: int, width: int, ow: int) -> tuple[int, int, int]:
    """``(off, j0, j1)``: input column ``j*sw + off`` lies inside ``[0, width)`` for ``j0 <= j < j1``."""
    off = (r % kw) * dw - pl
    j0 = 0 if off >= 0 else (-off + sw - 1) // sw
    j1 = (width - 1 - off) // sw + 1 if width - 1 - off >= 0 else 0
    j1 = min(j1, ow)
    j0 = min(j0, j1)
    return off, j0, j1


@jit()
def _im2col_task(r: int, xf: Array, cols: Array, n0: int, nb: int, geo: Geometry) -> None:
    h, width, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = geo
    c = r // (kh * kw)
    a = (r // kw) % kh
    off, j0, j1 = _jrange(r, kw, dw, sw, pl, width, ow)
    zero = cols.dtype.type(0)
    row = cols[r]
    p = oh * ow
    # valid output rows i0 <= i < i1 (input row i*sh + a*dh - pt inside [0, h))
    lo_i = pt - a * dh
    i0 = 0 if lo_i <= 0 else (lo_i + sh - 1) // sh
    i1 = (h - 1 + lo_i) // sh + 1 if h - 1 + lo_i >= 0 else 0
    i1 = min(i1, oh)
    i0 = min(i0, i1)
    block = sh == 1 and sw == 1 and ow == width
    for m in range(nb):
        plane = xf[n0 + m, c]
        blk = row[m * p : (m + 1) * p]
        for t in range(i0 * ow):
            blk[t] = zero
        for t in range(i1 * ow, p):
            blk[t] = zero
        if i1 == i0:
            continue
        if block:
            # same-width stride-1 rows are one contiguous run of the input plane, shifted by
            # ``off``: copy it at once, then zero the columns that wrapped into the next row
            start = (i0 - lo_i) * width + off
            length = (i1 - i0) * ow
            lo = max(0, -start)
            hi = max(lo, min(length, h * width - start))
            d = blk[i0 * ow : i1 * ow]
            for t in range(lo):
                d[t] = zero
            for t in range(hi, length):
                d[t] = zero
            s1 = plane[start + lo : start + hi]
            d1 = d[lo:hi]
            for t in range(hi - lo):
                d1[t] = s1[t]
            if j0 > 0 or j1 < ow:
                for i in range(i1 - i0):
                    base = i * ow
                    for j in range(j0):
                        d[base + j] = zero
                    for j in range(j1, ow):
                        d[base + j] = zero
            continue
        for i in range(i0, i1):
            dst = blk[i * ow : (i + 1) * ow]
            y = i * sh - lo_i
            for j in range(j0):
                dst[j] = zero
            for j in range(j1, ow):
                dst[j] = zero
            src = plane[y * width : (y + 1) * width]
            if sw == 1:
                s1 = src[j0 + off : j1 + off]
                d1 = dst[j0:j1]
                for j in range(j1 - j0):
                    d1[j] = s1[j]
            else:
                for j in range(j0, j1):
                    dst[j] = src[j * sw + off]


def _im2col(xf: Array, cols: Array, n0: int, nb: int, geo: Geometry) -> None:
    for r in numba.prange(cols.shape[0]):
        _im2col_task(r, xf, cols, n0, nb, geo)


_im2col_serial, _im2col_parallel = serial_and_parallel(_im2col)


@jit()
def _col2im_task(p: int, dcols: Array, gx: Array, n0: int, geo: Geometry) -> None:
    h, width, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = geo
    cin = gx.shape[1]
    m = p // cin
    c = p % cin
    plane = gx[n0 + m, c]
    zero = gx.dtype.type(0)
    for y in range(h):
        for z in range(width):
            plane[y, z] = zero
    kk = kh * kw
    for k in range(kk):
        a = k // kw
        off, j0, j1 = _jrange(k, kw, dw, sw, pl, width, ow)
        row = dcols[c * kk + k]
        for i in range(oh):
            y = i * sh + a * dh - pt
            if y < 0 or y >= h:
                continue
            src = row[(m * oh + i) * ow : (m * oh + i + 1) * ow]
            dst = plane[y]
            if sw == 1:
                s1 = src[j0:j1]
                d1 = dst[j0 + off : j1 + off]
                for j in range(j1 - j0):
                    d1[j] += s1[j]
            else:
                for j in range(j0, j1):
                    dst[j * sw + off] += src[j]


def _col2im(dcols: Array, gx: Array, n0: int, nb: int, geo: Geometry) -> None:
    for p in numba.prange(nb * gx.shape[1]):
        _col2im_task(p, dcols, gx, n0, geo)


_col2im_serial, _col2im_parallel = serial_and_parallel(_col2im)


# ----- direct numba kernels --------------------------------------------------------------
#
# Planes are flattened: ``xf (N, C, Hp*Wp)``. A kernel tap ``k = (a, b)`` reads the input at
# the flat offset ``offs[k] = a*dh*Wp + b*dw``. Output "rows" ``r < R`` of ``L`` elements start
# at ``r*rs_in`` in the input plane and ``r*rs_out`` in the output plane; element ``i`` reads
# input ``r*rs_in + offs[k] + i*sw``. Row mode: ``R = OH, L = OW, rs_in = sh*Wp, rs_out = OW``.
# Flat mode (stride 1): one row of ``L = (OH-1)*Wp + OW`` elements over an output laid out
# with the padded width ``Wp`` (columns ``>= OW`` are garbage and dropped), so the inner loop
# is long enough to vectorize on small images. The kernels take ``(R, L, rs_in, rs_out, sw)`` as
# one :data:`Rows` tuple.


@jit(inline=True)
def _blocks(channels: int) -> int:
    """Blocks of (up to) 4 channels in ``channels``."""
    return (channels + 3) // 4


@jit(inline=True)
def _block(t: int, groups: int, per_group: int) -> tuple[int, int, int, int]:
    """``(n, grp, k0, k1)``: work item ``t`` of ``N * groups * _blocks(per_group)``, over
    (sample ``n``, group ``grp``, block of channels ``k0 .. k1`` of the group's ``per_group``,
    counted within the group)."""
    nb = _blocks(per_group)
    rem = t % (groups * nb)
    k0 = (rem % nb) * 4
    return t // (groups * nb), rem // nb, k0, min(k0 + 4, per_group)


@jit(inline=True)
def _madd4(d0: Array, d1: Array, d2: Array, d3: Array, i: int, w0: Any, w1: Any, w2: Any, w3: Any, v: Any) -> None:
    """``dk[i] += wk * v`` for ``k < 4``: the update of a block of 4 channels."""
    d0[i] += w0 * v
    d1[i] += w1 * v
    d2[i] += w2 * v
    d3[i] += w3 * v


@jit()
def _fwd_task(t: int, xf: Array, w2: Array, acc: Array, offs: Array, rows: Rows, groups: int) -> None:
    nr, ln, rs_in, rs_out, sw = rows
    og = acc.shape[1] // groups
    n, grp, j0, j1 = _block(t, groups, og)
    o0, o1 = grp * og + j0, grp * og + j1
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
                            _madd4(b0, b1, b2, b3, i, w0, w1, w2_, w3, xs[i])
                    else:
                        for i in range(ln):
                            _madd4(b0, b1, b2, b3, i, w0, w1, w2_, w3, xs[i * sw])
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


def _fwd(xf: Array, w2: Array, acc: Array, offs: Array, rows: Rows, groups: int) -> None:
    for t in numba.prange(acc.shape[0] * groups * _blocks(acc.shape[1] // groups)):
        _fwd_task(t, xf, w2, acc, offs, rows, groups)


_fwd_serial, _fwd_parallel = serial_and_parallel(_fwd)


@jit()
def _bwd_input_task(t: int, gf: Array, w2: Array, gxf: Array, offs: Array, rows: Rows, groups: int) -> None:
    nr, ln, rs_in, rs_out, sw = rows
    cg, kk = w2.shape[1], w2.shape[2]
    og = gf.shape[1] // groups
    n, grp, c0, c1 = _block(t, groups, cg)
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
                            _madd4(y0, y1, y2, y3, i, w0, w1, w2_, w3, gs[i])
                    else:
                        for i in range(ln):
                            _madd4(y0, y1, y2, y3, i * sw, w0, w1, w2_, w3, gs[i])
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


def _bwd_input(gf: Array, w2: Array, gxf: Array, offs: Array, rows: Rows, groups: int) -> None:
    for t in numba.prange(gxf.shape[0] * groups * _blocks(w2.shape[1])):
        _bwd_input_task(t, gf, w2, gxf, offs, rows, groups)


_bwd_input_serial, _bwd_input_parallel = serial_and_parallel(_bwd_input)


@jit()
def _bwd_weight_task(p: int, xf: Array, gf: Array, gw2: Array, offs: Array, rows: Rows, groups: int) -> None:
    nr, ln, rs_in, rs_out, sw = rows
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


def _bwd_weight(xf: Array, gf: Array, gw2: Array, offs: Array, rows: Rows, groups: int) -> None:
    for p in numba.prange(gw2.shape[0] * gw2.shape[1]):
        _bwd_weight_task(p, xf, gf, gw2, offs, rows, groups)


_bwd_weight_serial, _bwd_weight_parallel = serial_and_parallel(_bwd_weight)


# ----- public entry points ---------------------------------------------------------------


def _c(a: Array) -> Array:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _work(g_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> int:
    n, o, oh, ow = g_shape
    return n * o * oh * ow * w_shape[1] * w_shape[2] * w_shape[3]


def _offsets(k: Pair, dilation: Pair, wp: int) -> Array:
    return np.array([a * dilation[0] * wp + b * dilation[1] for a in range(k[0]) for b in range(k[1])], np.int64)


def _rows(stride: Pair, out_hw: Pair, wp: int, flat: bool) -> Rows:
    """``(R, L, rs_in, rs_out, sw)`` of the direct kernels (see the comment above them)."""
    oh, ow = out_hw
    if flat:
        return 1, (oh - 1) * wp + ow, 0, 0, 1
    return oh, ow, stride[0] * wp, ow, stride[1]


def _gpu() -> Any:
    from gradtape.devices.kernels import cuda

    return cuda


def _pad(x: Array, pads: Pads) -> Array:
    """``x`` zero padded by ``pads`` (``x`` itself without padding): the direct kernels' input."""
    if any(pads[0] + pads[1]):
        return np.pad(x, [(0, 0), (0, 0), pads[0], pads[1]])
    return x


def _index_dtype(bound: int) -> type[np.signedinteger[Any]]:
    """int32 for the cached index tables whose entries stay below ``bound`` (all real
    geometries), int64 beyond: half the memory of int64 tables (a 14x14 map of 512 channels
    takes 3.6 MB rather than 7.2), at the same speed."""
    return np.int32 if bound < 2**31 else np.int64


# ----- small planes: rows ("im2row") instead of columns -----------------------------------
#
# Rows of a chunk: ``R[m*P + q, r]`` = ``cols[r, m*P + q]`` (the columns transposed; group
# ``g``'s columns are ``r`` in ``[g*C/G*KH*KW, (g+1)*C/G*KH*KW)``). The products then have the
# chunk's ``nb*P`` positions as their long first dimension, which OpenBLAS's kernels run
# much faster than a short ``O``-row product over long columns (float32, one thread, the
# digits CNN's 16 -> 32 conv: 45 against 90 us forward, 53 against 97 us weight gradient,
# 44 against 72 us column gradient).


@functools.lru_cache(maxsize=64)
def _small_src_rows(
    chw: tuple[int, int, int], k: Pair, stride: Pair, dilation: Pair, pads: Pair, out_hw: Pair
) -> Array:
    """For small planes, the source of every row element: ``src[q, r]``, the flat index
    ``c*H*W + y*W + z`` into one sample of ``x`` that output position ``q = i*OW + j`` reads for
    column ``r = c*KH*KW + a*KW + b`` (``y = i*sh + a*dh - pt``, ``z = j*sw + b*dw - pl``), or
    ``C*H*W`` (one past a sample's values) where it reads the zero padding.
    ``(OH*OW, C*KH*KW)`` of :func:`_index_dtype`, C-contiguous, read-only, cached per geometry."""
    (c, h, w), (kh, kw), (sh, sw), (dh, dw), (pt, pl), (oh, ow) = chw, k, stride, dilation, pads, out_hw
    r = np.arange(c * kh * kw)
    ch, a, b = r // (kh * kw), (r // kw) % kh, r % kw
    y = np.arange(oh)[:, None, None] * sh + (a * dh - pt)[None, None, :]
    z = np.arange(ow)[None, :, None] * sw + (b * dw - pl)[None, None, :]
    inside = (y >= 0) & (y < h) & (z >= 0) & (z < w)
    src = np.where(inside, ch[None, None, :] * (h * w) + y * w + z, c * h * w).reshape(oh * ow, len(r))
    src = src.astype(_index_dtype(c * h * w + 1))
    src.setflags(write=False)
    return src


@jit()
def _im2row_small(xf: Array, src: Array, rws: Array, n0: int, nb: int) -> None:
    """The rows ``R (nb*P, C*KH*KW)`` of samples ``n0 .. n0+nb`` of ``xf (N, C*H*W)``, through the
    table :func:`_small_src_rows`: each sample is copied into a buffer with a zero after its
    values, where the padding entries point, so the gather needs no select (the digits CNN's
    16 -> 32 conv: 50 -> 34 us)."""
    p, k = src.shape
    size = xf.shape[1]
    xe = np.empty(size + 1, xf.dtype)
    xe[size] = 0
    for m in range(nb):
        xs = xf[n0 + m]
        for i in range(size):
            xe[i] = xs[i]
        for q in range(p):
            sq = src[q]
            dst = rws[m * p + q]
            for r in range(k):
                dst[r] = xe[sq[r]]


@jit()
def _rows_to_planes(y: Array, out: Array, n0: int, nb: int, bias: Array, has_bias: bool) -> None:
    """``out[n0 + m, o, q] = y[m*P + q, o] (+ bias[o])``: a chunk's ``(nb*P, O)`` product into
    the ``(N, O, P)`` output."""
    o_n, p = out.shape[1], out.shape[2]
    for m in range(nb):
        for o in range(o_n):
            b = bias[o] if has_bias else y.dtype.type(0)
            dst = out[n0 + m, o]
            for q in range(p):
                dst[q] = y[m * p + q, o] + b


@jit()
def _planes_to_rows(g: Array, gr: Array, n0: int, nb: int) -> None:
    """``gr[m*P + q, o] = g[n0 + m, o, q]``: an output gradient ``(N, O, P)`` as a chunk's rows."""
    o_n, p = g.shape[1], g.shape[2]
    for m in range(nb):
        for q in range(p):
            dst = gr[m * p + q]
            for o in range(o_n):
                dst[o] = g[n0 + m, o, q]


@jit()
def _row2im_small(dr: Array, src: Array, gx: Array, n0: int, nb: int) -> None:
    """The input gradient ``gx (N, C*H*W)`` of samples ``n0 .. n0+nb`` from the chunk's rows
    gradient ``dr (nb*P, C*KH*KW)``: each sample's values zeroed, then every element of ``dr``
    added where :func:`_im2row_small` read it (table :func:`_small_src_rows`, padding
    dropped), reading ``dr`` in memory order. A gathered sum per input value over its taps
    took 88 us on the digits CNN's 16 -> 32 conv, this 35."""
    p, k = src.shape
    size = gx.shape[1]
    zero = gx.dtype.type(0)
    for m in range(nb):
        g = gx[n0 + m]
        for s in range(size):
            g[s] = zero
        for q in range(p):
            row = dr[m * p + q]
            sq = src[q]
            for r in range(k):
                s = sq[r]
                if s < size:
                    g[s] += row[r]


def _small_forward(
    x: Array,
    w: Array,
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    groups: int,
    out_hw: Pair,
    keep: bool,
    bias: Array | None,
) -> tuple[Array, list[Array] | None]:
    """:func:`forward` for small output planes: rows, then per chunk one product
    ``R_g @ w_g.T`` per group into the chunk's ``(nb*P, O)`` result, then into the output
    (bias added there)."""
    x = _c(x)
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    k, p, kg, og = c * kh * kw, out_hw[0] * out_hw[1], cg * kh * kw, o // groups
    src = _small_src_rows(x.shape[1:], (kh, kw), stride, dilation, (pads[0][0], pads[1][0]), out_hw)
    nb = chunk_samples(n, k + o, out_hw, x.itemsize)
    keep = keep and n * k * p * x.itemsize <= COLS_MAX_BYTES
    wt = np.ascontiguousarray(w.reshape(groups, og, kg).transpose(0, 2, 1))
    xf = x.reshape(n, c * x.shape[2] * x.shape[3])
    out = np.empty((n, o, p), x.dtype)
    buf = None if keep else np.empty((nb * p, k), x.dtype)
    y = np.empty((nb * p, o), x.dtype)
    has_bias = bias is not None
    b = bias if bias is not None else np.empty(0, x.dtype)
    kept: list[Array] = []
    for n0 in range(0, n, nb):
        m = min(nb, n - n0)
        rws = np.empty((m * p, k), x.dtype) if buf is None else buf[: m * p]
        _im2row_small(xf, src, rws, n0, m)
        for gi in range(groups):
            _blas.matmul(rws[:, gi * kg : (gi + 1) * kg], wt[gi], out=y[: m * p, gi * og : (gi + 1) * og])
        _rows_to_planes(y, out, n0, m, b, has_bias)
        if keep:
            kept.append(rws)
    return out.reshape(n, o, *out_hw), (kept if keep else None)


def _small_backward(
    g: Array,
    x: Array,
    w: Array,
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    groups: int,
    want_x: bool,
    want_w: bool,
    rws_kept: list[Array] | None,
) -> tuple[Array | None, Array | None]:
    """:func:`backward`'s im2col passes for small output planes, on rows: per chunk and
    group, ``gw_g += (R_g.T @ gR_g).T`` and ``dR_g = gR_g @ w_g``, the input gradient added up
    from ``dR`` (:func:`_row2im_small`)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    k, p, kg, og = c * kh * kw, oh * ow, cg * kh * kw, o // groups
    geo = ((c, h, wd), (kh, kw), stride, dilation, (pads[0][0], pads[1][0]), (oh, ow))
    nb = rws_kept[0].shape[0] // p if rws_kept else chunk_samples(n, k + o, (oh, ow), g.itemsize)
    g3 = _c(g).reshape(n, o, p)
    gr = np.empty((nb * p, o), g.dtype)
    gx = gwt = None
    src = _small_src_rows(*geo)
    if want_x:
        gxf = gx = np.empty((n, c * h * wd), g.dtype)
        w3 = _c(w).reshape(groups, og, kg)
        dr = np.empty((nb * p, k), g.dtype)
    if want_w:
        acc = gwt = np.empty((groups, kg, og), g.dtype)
        tmp = np.empty_like(acc)
        if rws_kept is None:
            xf = _c(x).reshape(n, c * h * wd)
            rbuf = np.empty((nb * p, k), g.dtype)
    for i, n0 in enumerate(range(0, n, nb)):
        m = min(nb, n - n0)
        grc = gr[: m * p]
        _planes_to_rows(g3, grc, n0, m)
        if want_w:
            if rws_kept is not None:
                rws = rws_kept[i]
            else:
                rws = rbuf[: m * p]
                _im2row_small(xf, src, rws, n0, m)
            for gi in range(groups):
                gsl, osl = slice(gi * kg, (gi + 1) * kg), slice(gi * og, (gi + 1) * og)
                _blas.matmul(rws[:, gsl].T, grc[:, osl], out=acc[gi] if i == 0 else tmp[gi])
            if i:
                acc += tmp
        if want_x:
            drc = dr[: m * p]
            for gi in range(groups):
                gsl, osl = slice(gi * kg, (gi + 1) * kg), slice(gi * og, (gi + 1) * og)
                _blas.matmul(grc[:, osl], w3[gi], out=drc[:, gsl])
            _row2im_small(drc, src, gxf, n0, m)
    gw = None if gwt is None else np.ascontiguousarray(gwt.transpose(0, 2, 1)).reshape(w.shape)
    return (None if gx is None else gx.reshape(n, c, h, wd)), gw


@jit(fastmath=REASSOC)
def _bias_grad_task(o: int, g: Array) -> float:
    acc = 0.0  # float64 partial sums, whatever g's dtype
    for m in range(g.shape[0]):
        row = g[m, o]
        for q in range(row.shape[0]):
            acc += row[q]
    return acc


def _bias_grad(g: Array, out: Array) -> None:
    for o in numba.prange(g.shape[1]):
        out[o] = _bias_grad_task(o, g)


_bias_grad_serial, _bias_grad_parallel = serial_and_parallel(_bias_grad)


def bias_grad(g: Array) -> Array:
    """A convolution bias's gradient: ``g (N, O, ...)`` summed over every axis but 1, a new
    ``(O,)`` array of ``g``'s dtype. Each channel's sum runs in float64 partial sums in a fixed
    order (one thread per channel in the parallel variant), so results do not vary from run
    to run. numpy's ``g.sum(axis=(0, 2, 3))`` took 22-31 us on the digits CNN's small maps and
    270 us on the conv block's (32, 64, 32, 32)."""
    if _on_gpu(g):
        return _gpu().bias_grad(g)  # type: ignore[no-any-return]
    g3 = _c(g).reshape(g.shape[0], g.shape[1], math.prod(g.shape[2:]))
    out = np.empty(g.shape[1], g.dtype)
    (_bias_grad_parallel if g3.size >= PARALLEL_COPY else _bias_grad_serial)(g3, out)
    return out


def im2col(
    x: Array,
    n0: int,
    nb: int,
    k: Pair,
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    out_hw: Pair,
    buf: Array | None = None,
) -> Array:
    """The columns ``(C*KH*KW, nb*OH*OW)`` of samples ``n0 .. n0+nb`` of the C-contiguous
    unpadded input ``x (N, C, H, W)`` (layout in the comment above the kernels), written into
    the front of the 1-D scratch ``buf`` when given (else a new array)."""
    rows = x.shape[1] * k[0] * k[1]
    size = rows * nb * out_hw[0] * out_hw[1]
    cols = (np.empty(size, x.dtype) if buf is None else buf[:size]).reshape(rows, size // rows)
    kernel = _im2col_parallel if size >= PARALLEL_COPY else _im2col_serial
    n, c, h, w = x.shape
    kernel(x.reshape(n, c, h * w), cols, n0, nb, _geometry((h, w), k, stride, pads, dilation, out_hw))
    return cols


def _col2im_chunk(
    dcols: Array, gx: Array, n0: int, nb: int, k: Pair, stride: Pair, pads: Pads, dilation: Pair, out_hw: Pair
) -> None:
    """Write samples ``n0 .. n0+nb`` of the input gradient ``gx (N, C, H, W)`` (C-contiguous,
    unpadded) from the chunk's column gradient ``dcols (C*KH*KW, nb*OH*OW)``: each plane is
    zeroed, then every column element added where :func:`im2col` read it (padding dropped)."""
    kernel = _col2im_parallel if dcols.size >= PARALLEL_COPY else _col2im_serial
    kernel(dcols, gx, n0, nb, _geometry((gx.shape[2], gx.shape[3]), k, stride, pads, dilation, out_hw))


def forward(
    x: Array,
    w: Array,
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    groups: int,
    out_hw: Pair,
    impl: Impl = "auto",
    keep_cols: bool = False,
    bias: Array | None = None,
    out: Array | None = None,
) -> tuple[Array, list[Array] | None]:
    """Cross-correlation of ``x (N, C, H, W)`` zero padded by ``pads`` with ``w (O, C/G, KH, KW)``,
    plus ``bias (O,)`` when given.

    ``out[n, o, i, j] = bias[o] + sum_{c, a, b} w[o, c, a, b] * xpad[n, g*C/G + c, i*sh + a*dh,
    j*sw + b*dw]`` with ``g = o // (O/G)``, for ``i < OH``, ``j < OW`` (the caller checks that
    every window lies inside the padded input). Returns ``(out, cols)``: a new C-contiguous
    ``(N, O, OH, OW)`` array of ``x``'s dtype, and the im2col chunks' columns when
    ``keep_cols`` asked for them, im2col ran and they take at most :data:`COLS_MAX_BYTES`
    (else ``None``); pass them on to :func:`backward`. ``out`` (a C-contiguous float32 array of
    the output's shape) is written in place and returned where oneDNN runs the convolution (a
    replay of :func:`gradtape.capture`); the other paths ignore it. GPU arrays go to
    :func:`gradtape.devices.kernels.cuda.conv_forward`.
    """
    if _on_gpu(x):
        return _gpu().conv_forward(x, w, stride, pads, dilation, groups, out_hw, bias), None
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    oh, ow = out_hw
    plan = _onednn_plan(impl, x.dtype, x.shape, w.shape, out_hw, stride, pads, dilation, groups)
    if plan is not None:
        into = out is not None and out.flags.c_contiguous and out.dtype == np.float32
        return plan.forward(x, w, bias, out if into else None), None
    if pick(impl, "forward", groups, cg * kh * kw) == "direct":
        out = _direct_forward(_pad(x, pads), w, stride, dilation, groups, out_hw)
        if bias is not None:
            out += bias.reshape(1, o, 1, 1)
        return out, None
    if oh * ow < SMALL_PLANE:
        return _small_forward(x, w, stride, pads, dilation, groups, out_hw, keep_cols, bias)
    x = _c(x)
    rows, p, og, kg = c * kh * kw, oh * ow, o // groups, cg * kh * kw
    nb = chunk_samples(n, rows + o, out_hw, x.itemsize)
    keep = keep_cols and n * rows * p * x.itemsize <= COLS_MAX_BYTES
    out = np.empty((n, o, oh, ow), x.dtype)
    o3 = out.reshape(n, o, p)
    w3 = _c(w).reshape(groups, og, kg)
    buf = None if keep else np.empty(rows * nb * p, x.dtype)
    tmp = np.empty(o * nb * p if nb > 1 else 0, x.dtype)
    kept: list[Array] = []
    b3 = None if bias is None else bias.reshape(1, o, 1)
    for n0 in range(0, n, nb):
        m = min(nb, n - n0)
        cols = im2col(x, n0, m, (kh, kw), stride, pads, dilation, out_hw, buf)
        # one sample per chunk: the product lands in the output directly (no transposing copy)
        t = o3[n0].reshape(groups, og, p) if m == 1 else tmp[: o * m * p].reshape(groups, og, m * p)
        if groups == 1:
            _blas.matmul(w3[0], cols, out=t[0])
        else:
            _blas.matmul(w3, cols.reshape(groups, kg, m * p), out=t)
        if m == 1:
            if b3 is not None:
                o3[n0] += b3[0]
        elif b3 is None:
            o3[n0 : n0 + m] = t.reshape(o, m, p).transpose(1, 0, 2)
        else:
            np.add(t.reshape(o, m, p).transpose(1, 0, 2), b3, out=o3[n0 : n0 + m])
        if keep:
            kept.append(cols)
    return out, (kept if keep else None)


def backward(
    g: Array,
    x: Array,
    w: Array,
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    groups: int,
    want_x: bool = True,
    want_w: bool = True,
    impl: Impl = "auto",
    cols: list[Array] | None = None,
) -> tuple[Array | None, Array | None]:
    """The gradients ``(gx (N, C, H, W), gw (O, C/G, KH, KW))`` of :func:`forward` (each new, or
    ``None`` when not wanted) given the output's gradient ``g (N, O, OH, OW)``:

    ``gx[n, g*C/G + c, i*sh + a*dh - pt, j*sw + b*dw - pl] += w[o, c, a, b] * g[n, o, i, j]``
    (terms landing in the padding dropped) and ``gw[o, c, a, b] = sum_{n, i, j} g[n, o, i, j]
    * xpad[n, g*C/G + c, i*sh + a*dh, j*sw + b*dw]``. ``cols``: :func:`forward`'s kept columns
    (else rebuilt per chunk when the weight gradient runs im2col). GPU arrays go to
    :func:`gradtape.devices.kernels.cuda.conv_backward`.
    """
    if _on_gpu(g):
        gx_, gw_ = _gpu().conv_backward(g, x, w, stride, pads, dilation, groups, want_x, want_w)
        return gx_, gw_
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    if n == 0:  # an empty batch: no products, and zero (not uninitialised) gradients
        return (np.zeros(x.shape, g.dtype) if want_x else None), (np.zeros(w.shape, g.dtype) if want_w else None)
    plan = _onednn_plan(impl, g.dtype, x.shape, w.shape, (oh, ow), stride, pads, dilation, groups)
    if plan is not None:
        return (plan.backward_data(g, w) if want_x else None), (plan.backward_weights(g, x) if want_w else None)
    taps = cg * kh * kw
    x_im = want_x and pick(impl, "input", groups, taps) == "im2col"
    w_im = want_w and (cols is not None or pick(impl, "weight", groups, taps) == "im2col")
    gx = gw = None
    if want_x and not x_im:
        gx = _direct_input(g, w, x.shape, stride, pads, dilation, groups)
    if want_w and not w_im:
        gw = _direct_weight(_pad(x, pads), g, w.shape, stride, dilation, groups)
    if oh * ow < SMALL_PLANE and (x_im or w_im):
        sx, sw_ = _small_backward(g, x, w, stride, pads, dilation, groups, x_im, w_im, cols)
        return (sx if x_im else gx), (sw_ if w_im else gw)
    if x_im and stride == (1, 1) and GRAD_X_AS_CONV and h * wd >= SMALL_PLANE:
        gx = _grad_x_as_conv(g, w, (h, wd), pads, dilation, groups)
        x_im = False
    if not (x_im or w_im):
        return gx, gw
    rows, p, og, kg = c * kh * kw, oh * ow, o // groups, taps
    nb = cols[0].shape[1] // p if cols else chunk_samples(n, rows + o, (oh, ow), g.itemsize)
    g3 = g.reshape(n, o, p)
    w3 = _c(w).reshape(groups, og, kg)
    # an ungrouped weight gradient: one product per sample, cols_m @ g_m.T into gw.T (see
    # PER_SAMPLE_WEIGHT); the chunk's gradient gT (O, nb*P) is then only built for col2im
    per_sample = w_im and groups == 1 and kg >= PER_SAMPLE_WEIGHT
    need_gt = x_im or (w_im and not per_sample)
    gtbuf = np.empty(o * nb * p if nb > 1 and need_gt else 0, g.dtype)
    if x_im:
        gx = np.empty((n, c, h, wd), g.dtype)
        dbuf = np.empty(rows * nb * p, g.dtype)
        w3t = w3.transpose(0, 2, 1)
    if w_im:
        xc = _c(x)
        cbuf = np.empty(rows * nb * p, g.dtype) if cols is None else None
        if per_sample:
            gwt, tmpt = np.empty((kg, o), g.dtype), np.empty((kg, o), g.dtype)
        else:
            gw3 = np.empty((groups, og, kg), g.dtype)
            tmpw = np.empty_like(gw3)
    for i, n0 in enumerate(range(0, n, nb)):
        m = min(nb, n - n0)
        if w_im:  # the chunk's columns: kept by forward, or rebuilt into the reused buffer
            cl = cols[i] if cols is not None else im2col(xc, n0, m, (kh, kw), stride, pads, dilation, (oh, ow), cbuf)
        if per_sample:
            for j in range(m):
                first = i == 0 and j == 0
                _blas.matmul(cl[:, j * p : (j + 1) * p], g3[n0 + j].T, out=gwt if first else tmpt)
                if not first:
                    gwt += tmpt
            if not need_gt:
                continue
        if m == 1:  # one sample per chunk: its gradient is already laid out (O, OH*OW)
            gt3 = _c(g3[n0]).reshape(groups, og, p)
        else:
            gt = gtbuf[: o * m * p].reshape(o, m, p)
            np.copyto(gt, g3[n0 : n0 + m].transpose(1, 0, 2))
            gt3 = gt.reshape(groups, og, m * p)
        if w_im and not per_sample:
            _blas.matmul(gt3, cl.reshape(groups, kg, m * p).transpose(0, 2, 1), out=gw3 if i == 0 else tmpw)
            if i:
                gw3 += tmpw
        if x_im:
            dc = dbuf[: rows * m * p].reshape(groups, kg, m * p)
            if groups == 1:
                _blas.matmul(w3t[0], gt3[0], out=dc[0])
            else:
                _blas.matmul(w3t, gt3, out=dc)
            _col2im_chunk(dc.reshape(rows, m * p), gx, n0, m, (kh, kw), stride, pads, dilation, (oh, ow))  # type: ignore[arg-type]
    if w_im:
        gw = np.ascontiguousarray(gwt.T).reshape(w.shape) if per_sample else gw3.reshape(w.shape)
    return gx, gw


def _grad_x_as_conv(g: Array, w: Array, hw: Pair, pads: Pads, dilation: Pair, groups: int) -> Array:
    """The input gradient of a stride-1 convolution as a convolution of ``g`` (chunked im2col
    and one product per chunk, straight into ``(N, C, H, W)``): ``gx = conv(g, w')`` with
    ``w'[g*C/G + c, o, a, b] = w[g*O/G + o, c, KH-1-a, KW-1-b]`` (each group's kernel flipped,
    in and out channels swapped), padding ``d*(K-1) - p`` before (negative: rows skipped) and
    the same dilation."""
    o, cg, kh, kw = w.shape
    og = o // groups
    wt = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 1, 3, 4)[:, :, :, ::-1, ::-1]
    wt = np.ascontiguousarray(wt).reshape(groups * cg, og, kh, kw)
    (pt, _), (pl, _) = pads
    oh, ow = g.shape[2], g.shape[3]
    tp, lp = dilation[0] * (kh - 1) - pt, dilation[1] * (kw - 1) - pl
    pads_t = ((tp, hw[0] + dilation[0] * (kh - 1) - oh - tp), (lp, hw[1] + dilation[1] * (kw - 1) - ow - lp))
    return forward(g, wt, (1, 1), pads_t, dilation, groups, hw, "im2col")[0]


def backward_input(
    g: Array,
    w: Array,
    x_shape: tuple[int, ...],
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    groups: int,
    impl: Impl = "auto",
) -> Array:
    """:func:`backward`'s input gradient alone (``(N, C, H, W)``, new; also conv_transpose2d's
    forward), given the output gradient ``g`` and ``w``."""
    gx, _ = backward(g, np.empty(x_shape, g.dtype), w, stride, pads, dilation, groups, True, False, impl)
    assert gx is not None
    return gx


def backward_weight(
    x: Array,
    g: Array,
    w_shape: tuple[int, ...],
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    groups: int,
    impl: Impl = "auto",
    cols: list[Array] | None = None,
) -> Array:
    """:func:`backward`'s weight gradient alone (``w_shape``, new), given the unpadded input
    ``x`` (or :func:`forward`'s kept ``cols``) and the output gradient ``g``."""
    w = np.empty(w_shape, g.dtype)
    _, gw = backward(g, x, w, stride, pads, dilation, groups, False, True, impl, cols)
    assert gw is not None
    return gw


# ----- the direct kernels' drivers (on a padded input) -------------------------------------


def _direct_forward(xp: Array, w: Array, stride: Pair, dilation: Pair, groups: int, out_hw: Pair) -> Array:
    n, c, hp, wp = xp.shape
    o, cg, kh, kw = w.shape
    shape = (n, o, out_hw[0], out_hw[1])
    flat = stride == (1, 1)
    acc = np.zeros((n, o, out_hw[0] * (wp if flat else out_hw[1])), xp.dtype)
    kernel = _fwd_parallel if _work(shape, w.shape) >= PARALLEL_WORK else _fwd_serial
    xf, rows = _c(xp).reshape(n, c, hp * wp), _rows(stride, out_hw, wp, flat)
    kernel(xf, _c(w).reshape(o, cg, kh * kw), acc, _offsets((kh, kw), dilation, wp), rows, groups)
    if flat:
        return np.ascontiguousarray(acc.reshape(n, o, out_hw[0], wp)[:, :, :, : out_hw[1]])
    return acc.reshape(shape)


def _direct_input(
    g: Array, w: Array, x_shape: tuple[int, ...], stride: Pair, pads: Pads, dilation: Pair, groups: int
) -> Array:
    n, c, h, wd = x_shape
    (pt, pb), (pl, pr) = pads
    hp, wp = h + pt + pb, wd + pl + pr
    o, cg, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    # Flat mode would add 0 * w at the garbage columns: an infinite weight would turn a
    # finite gradient into nan, so the backward keeps to rows.
    rows = _rows(stride, (oh, ow), wp, False)
    gxp = np.zeros((n, c, hp * wp), g.dtype)
    kernel = _bwd_input_parallel if _work(g.shape, w.shape) >= PARALLEL_WORK else _bwd_input_serial
    gf = _c(g).reshape(n, o, oh * ow)
    kernel(gf, _c(w).reshape(o, cg, kh * kw), gxp, _offsets((kh, kw), dilation, wp), rows, groups)
    gx4 = gxp.reshape(n, c, hp, wp)
    if (hp, wp) != (h, wd):
        gx4 = np.ascontiguousarray(gx4[:, :, pt : pt + h, pl : pl + wd])
    return gx4


def _direct_weight(xp: Array, g: Array, w_shape: tuple[int, ...], stride: Pair, dilation: Pair, groups: int) -> Array:
    n, c, hp, wp = xp.shape
    o, cg, kh, kw = w_shape
    oh, ow = g.shape[2], g.shape[3]
    rows = _rows(stride, (oh, ow), wp, False)
    gw = np.empty((o, cg, kh * kw), g.dtype)
    kernel = _bwd_weight_parallel if _work(g.shape, w_shape) >= PARALLEL_WORK else _bwd_weight_serial
    xf = _c(xp).reshape(n, c, hp * wp)
    kernel(xf, _c(g).reshape(n, o, oh * ow), gw, _offsets((kh, kw), dilation, wp), rows, groups)
    return gw.reshape(w_shape)
