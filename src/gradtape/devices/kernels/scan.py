"""Fused selective-scan kernels (Mamba's S6 recurrence, Gu and Dao 2023): forward and backward.

For batch element ``b`` and channel ``d`` with state size ``N``::

    h_t = exp(dt_t * A[d]) * h_{t-1} + dt_t * x_t * B_t      (h_{-1} = 0, vectors of N)
    y_t = C_t . h_t + D[d] * x_t

Work items are ``(batch element, group of channels)``: an item runs the whole recurrence of its
channels (time outer, channels middle, state inner, so ``B_t`` and ``C_t`` are read once per
step for the group) and owns its share of every reduction, which later sums in a fixed order:
results are bitwise reproducible whatever the thread schedule (TBB hands out ``prange`` items
dynamically, see ``_jit.py``). Items run as a ``numba.prange`` from :data:`PARALLEL_THRESHOLD`
elements of state (``batch * length * channels * state``) on, serially below it.

Memory: the forward keeps the hidden state only at chunk boundaries (every :data:`CHUNK`
steps), ``(batch, n_chunks, channels, state)``; the backward recomputes each chunk's states
(and decays ``exp(dt * A)``) from its boundary state into a per-item buffer of
``CHUNK * group * state`` values, then runs the adjoint recurrence backwards through the chunk.
Nothing of size ``(batch, length, channels, state)`` is ever allocated.

The ``exp`` is a scalar libm call inside the kernels (pip's llvmlite has no SVML; see
shared/KERNELS.md): one per state element in the forward and one in the backward's recompute.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from gradtape.devices.kernels._jit import jit

__all__ = ["CHUNK", "PARALLEL_THRESHOLD", "scan_backward", "scan_forward"]

Array = np.ndarray[Any, Any]

CHUNK = 64
"""Steps between stored hidden states (the backward recomputes within a chunk)."""
GROUP = 16
PARALLEL_THRESHOLD = 1 << 13
"""State elements (``batch * length * channels * state``) from which the ``prange`` kernels run.
Each element costs an ``exp`` and about ten flops, so the crossover sits far below the
elementwise kernels' (``elementwise.PARALLEL_THRESHOLD``, 1M): measured on the 2-core VM,
float32 forward, serial/parallel 29/21 us at 8k elements, 353/187 us at 131k, 2.95/1.50 ms at 1M."""
"""Channels per work item (bounds the backward's chunk buffer to ``CHUNK * GROUP * state``)."""


@jit()
def _fwd_item(
    y: Array, hs: Array, x: Array, dt: Array, a: Array, b: Array, c: Array, dd: Array, bi: int, d0: int, d1: int, k: int
) -> None:
    """Forward of batch element ``bi``, channels ``[d0, d1)``: writes ``y[bi, :, d0:d1]`` and
    the chunk-boundary states ``hs[bi, :, d0:d1, :]`` (the state entering each chunk)."""
    length = x.shape[1]
    n = a.shape[1]
    g = d1 - d0
    h = np.zeros((g, n), x.dtype)
    dec = np.empty(n, x.dtype)
    for t in range(length):
        if t % k == 0:
            hs[bi, t // k, d0:d1, :] = h
        bt = b[bi, t]
        ct = c[bi, t]
        for j in range(g):
            d = d0 + j
            delta = dt[bi, t, d]
            xv = x[bi, t, d]
            u = delta * xv
            ad = a[d]
            for s in range(n):
                dec[s] = math.exp(delta * ad[s])
            hj = h[j]
            acc = dd[d] * xv
            for s in range(n):
                hv = dec[s] * hj[s] + u * bt[s]
                hj[s] = hv
                acc += ct[s] * hv
            y[bi, t, d] = acc


@jit()
def _scan_forward_serial(
    y: Array, hs: Array, x: Array, dt: Array, a: Array, b: Array, c: Array, dd: Array, k: int, grp: int
) -> None:
    nb, nd = x.shape[0], x.shape[2]
    ng = (nd + grp - 1) // grp
    for w in range(nb * ng):
        bi, gi = w // ng, w % ng
        _fwd_item(y, hs, x, dt, a, b, c, dd, bi, gi * grp, min(nd, gi * grp + grp), k)


@jit(parallel=True)
def _scan_forward_parallel(
    y: Array, hs: Array, x: Array, dt: Array, a: Array, b: Array, c: Array, dd: Array, k: int, grp: int
) -> None:
    nb, nd = x.shape[0], x.shape[2]
    ng = (nd + grp - 1) // grp
    for w in numba.prange(nb * ng):
        bi, gi = w // ng, w % ng
        _fwd_item(y, hs, x, dt, a, b, c, dd, bi, gi * grp, min(nd, gi * grp + grp), k)


@jit()
def _bwd_item(
    gx: Array,
    gdt: Array,
    ga: Array,
    gb: Array,
    gc: Array,
    gdd: Array,
    gy: Array,
    hs: Array,
    x: Array,
    dt: Array,
    a: Array,
    b: Array,
    c: Array,
    dd: Array,
    bi: int,
    gi: int,
    d0: int,
    d1: int,
    k: int,
) -> None:
    """Backward of batch element ``bi``, channels ``[d0, d1)`` (group ``gi``): writes
    ``gx, gdt[bi, :, d0:d1]`` and adds into ``ga[bi, d0:d1]``, ``gdd[bi, d0:d1]`` (per batch
    element) and ``gb, gc[gi, bi]`` (per group); the caller sums the leading axes."""
    length = x.shape[1]
    n = a.shape[1]
    g = d1 - d0
    z = x.dtype.type(0)
    nchunks = (length + k - 1) // k
    lam = np.zeros((g, n), x.dtype)  # exp(dt_{t+1} A) * dL/dh_{t+1}: the adjoint carried back
    hbuf = np.empty((k, g, n), x.dtype)
    dbuf = np.empty((k, g, n), x.dtype)
    h = np.empty((g, n), x.dtype)
    for ch in range(nchunks - 1, -1, -1):
        t0 = ch * k
        t1 = min(length, t0 + k)
        h[:, :] = hs[bi, ch, d0:d1, :]
        for t in range(t0, t1):  # recompute the chunk's states and decays
            bt = b[bi, t]
            for j in range(g):
                d = d0 + j
                delta = dt[bi, t, d]
                u = delta * x[bi, t, d]
                ad = a[d]
                dj = dbuf[t - t0, j]
                hj = h[j]
                hb = hbuf[t - t0, j]
                for s in range(n):
                    dj[s] = math.exp(delta * ad[s])
                for s in range(n):
                    hv = dj[s] * hj[s] + u * bt[s]
                    hj[s] = hv
                    hb[s] = hv
        for t in range(t1 - 1, t0 - 1, -1):  # the adjoint recurrence, backwards
            bt = b[bi, t]
            ct = c[bi, t]
            gbt = gb[gi, bi, t]
            gct = gc[gi, bi, t]
            for j in range(g):
                d = d0 + j
                gv = gy[bi, t, d]
                delta = dt[bi, t, d]
                xv = x[bi, t, d]
                ad = a[d]
                gad = ga[bi, d]
                hprev = hbuf[t - t0 - 1, j] if t > t0 else hs[bi, ch, d, :]
                ht = hbuf[t - t0, j]
                dj = dbuf[t - t0, j]
                lj = lam[j]
                sdt = z
                sx = z
                dx = delta * xv
                for s in range(n):
                    lv = gv * ct[s] + lj[s]  # dL/dh_t
                    gct[s] += gv * ht[s]
                    gdec = lv * hprev[s] * dj[s]  # dL/d(dt_t A_s)
                    sdt += gdec * ad[s] + lv * xv * bt[s]
                    gad[s] += gdec * delta
                    sx += lv * bt[s]
                    gbt[s] += lv * dx
                    lj[s] = dj[s] * lv
                gx[bi, t, d] = sx * delta + gv * dd[d]
                gdt[bi, t, d] = sdt
                gdd[bi, d] += gv * xv


@jit()
def _scan_backward_serial(
    gx: Array,
    gdt: Array,
    ga: Array,
    gb: Array,
    gc: Array,
    gdd: Array,
    gy: Array,
    hs: Array,
    x: Array,
    dt: Array,
    a: Array,
    b: Array,
    c: Array,
    dd: Array,
    k: int,
    grp: int,
) -> None:
    nb, nd = x.shape[0], x.shape[2]
    ng = (nd + grp - 1) // grp
    for w in range(nb * ng):
        bi, gi = w // ng, w % ng
        d0 = gi * grp
        _bwd_item(gx, gdt, ga, gb, gc, gdd, gy, hs, x, dt, a, b, c, dd, bi, gi, d0, min(nd, d0 + grp), k)


@jit(parallel=True)
def _scan_backward_parallel(
    gx: Array,
    gdt: Array,
    ga: Array,
    gb: Array,
    gc: Array,
    gdd: Array,
    gy: Array,
    hs: Array,
    x: Array,
    dt: Array,
    a: Array,
    b: Array,
    c: Array,
    dd: Array,
    k: int,
    grp: int,
) -> None:
    nb, nd = x.shape[0], x.shape[2]
    ng = (nd + grp - 1) // grp
    for w in numba.prange(nb * ng):
        bi, gi = w // ng, w % ng
        d0 = gi * grp
        _bwd_item(gx, gdt, ga, gb, gc, gdd, gy, hs, x, dt, a, b, c, dd, bi, gi, d0, min(nd, d0 + grp), k)


def _groups(nd: int) -> tuple[int, int]:
    """``(channels per item, number of groups)``."""
    grp = min(GROUP, max(nd, 1))
    return grp, (nd + grp - 1) // grp


def _parallel(x: Array, n: int) -> bool:
    nb, _, nd = x.shape
    return x.size * n >= PARALLEL_THRESHOLD and nb * _groups(nd)[1] > 1


def scan_forward(x: Array, dt: Array, a: Array, b: Array, c: Array, dd: Array) -> tuple[Array, Array]:
    """``(y, hs)``: the scan's output ``y`` (``(batch, length, channels)``, without any gate)
    and the states entering each chunk ``hs`` (``(batch, n_chunks, channels, state)``).

    Takes C-contiguous arrays of one native float dtype (the op checks and converts):
    ``x, dt (batch, length, channels)``, ``a (channels, state)``, ``b, c (batch, length,
    state)``, ``dd (channels,)`` (zeros for no skip term); ``length >= 1``.
    """
    nb, length, nd = x.shape
    n = a.shape[1]
    k = CHUNK
    y = np.empty_like(x)
    hs = np.empty((nb, (length + k - 1) // k, nd, n), x.dtype)
    grp, _ = _groups(nd)
    if nb and nd:
        run = _scan_forward_parallel if _parallel(x, n) else _scan_forward_serial
        run(y, hs, x, dt, a, b, c, dd, k, grp)
    return y, hs


def scan_backward(
    gy: Array, hs: Array, x: Array, dt: Array, a: Array, b: Array, c: Array, dd: Array
) -> tuple[Array, Array, Array, Array, Array, Array]:
    """``(gx, gdt, ga, gb, gc, gdd)``: the gradients of ``sum(gy * y)`` for ``y`` of
    :func:`scan_forward` (same arrays, plus its ``hs``). ``ga`` and ``gdd`` sum over the batch
    in float64 before the cast back to ``x``'s dtype; ``gb, gc`` over the channel groups."""
    nb, length, nd = x.shape
    n = a.shape[1]
    grp, ng = _groups(nd)
    gx = np.empty_like(x)
    gdt = np.empty_like(x)
    ga = np.zeros((nb, nd, n), np.float64)
    gdd = np.zeros((nb, nd), np.float64)
    gb = np.zeros((ng, nb, length, n), x.dtype)
    gc = np.zeros((ng, nb, length, n), x.dtype)
    if nb and nd:
        run = _scan_backward_parallel if _parallel(x, n) else _scan_backward_serial
        run(gx, gdt, ga, gb, gc, gdd, np.ascontiguousarray(gy, x.dtype), hs, x, dt, a, b, c, dd, CHUNK, grp)
    dt_ = x.dtype
    return (
        gx,
        gdt,
        ga.sum(axis=0).astype(dt_),
        gb.sum(axis=0) if ng != 1 else gb[0],
        gc.sum(axis=0) if ng != 1 else gc[0],
        gdd.sum(axis=0).astype(dt_),
    )
