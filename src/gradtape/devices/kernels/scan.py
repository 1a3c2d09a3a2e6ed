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

The decay ``exp(dt * A)`` costs one ``exp`` per state element in the forward and one in the
backward's recompute, and dominates the time. pip's llvmlite has no SVML (shared/KERNELS.md),
so ``math.exp`` in a numba loop is a scalar libm call that also stops the loop from
vectorizing. For float32 the kernels call :func:`_exp`, Cephes' ``expf`` (range reduction
``x = n ln2 + r``, ``|r| <= ln2 / 2``, a degree-7 polynomial for ``exp(r)``, then ``2^n`` built
from its exponent bits): inlined, it vectorizes over the state. Its error is at most 1.34 ulp
(libm's: 1 ulp), measured over 1M arguments spread over float32's range; arguments below
``-87.34`` give exactly 0, never a subnormal. float64 keeps libm's ``exp``. Measured on the
2-core VM, 1M float32 arguments: 0.33-0.38 ms against libm's 2.3-2.4 ms.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from gradtape.devices.kernels._jit import REASSOC, jit, serial_and_parallel

__all__ = ["CHUNK", "PARALLEL_THRESHOLD", "scan_backward", "scan_forward"]

Array = np.ndarray[Any, Any]
Inputs = tuple[Array, Array, Array, Array, Array, Array]
"""The work items' ``(x, dt, A^T, B, C, D)``: ``(batch, length, channels)`` twice,
``(state, channels)``, ``(batch, length, state)`` twice, ``(channels,)``."""
Grads = tuple[Array, Array, Array, Array, Array, Array]
"""The backward work items' outputs ``(gx, gdt, ga, gb, gc, gdd)`` (see :func:`_bwd_item`)."""

CHUNK = 64
"""Steps between stored hidden states (the backward recomputes within a chunk)."""
GROUP = 64
"""Most channels per work item (the backward's chunk buffers hold ``CHUNK * group * state``
values each); see :func:`_groups`."""
MIN_ITEMS = 16
"""Work items :func:`_groups` aims for (narrowing groups to 16 channels at least)."""
PARALLEL_THRESHOLD = 1 << 13
"""State elements (``batch * length * channels * state``) from which the ``prange`` kernels run.
Each element costs an ``exp`` and about ten flops, so the crossover sits far below the
elementwise kernels' (``elementwise.PARALLEL_THRESHOLD``, 1M): measured on the 2-core VM,
float32 forward, serial/parallel 29/21 us at 8k elements, 353/187 us at 131k, 2.95/1.50 ms at 1M."""


@intrinsic
def _f32_from_bits(typingctx: Any, bits: Any) -> Any:
    """Reinterpret an int32's bits as a float32 (LLVM ``bitcast``; vectorizes)."""
    if bits != types.int32:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


def _exp(v: float) -> float:
    """``exp(v)`` inside the kernels: Cephes' polynomial ``expf`` for float32 (vectorizes,
    at most 1.34 ulp, exactly 0 below -87.34), libm's ``exp`` for float64. See the module
    docstring."""
    return math.exp(v)


def _expf(v: Any) -> Any:
    """Cephes' ``expf`` (see the module docstring): exactly 0 below -87.34, inf above 88.72,
    NaN kept. Written so that LLVM vectorizes it over a row: the rounding stays in float32
    (``np.floor``, then a float32 -> int32 conversion; ``math.floor`` gave an int64, which
    AVX2 cannot convert in vectors, and left the loop scalar) and every branch is a select.
    The same code as ``rnn._expf``: numba's cache covers a kernel's own module only, so
    each module keeps its copy (tests/test_kernels.py checks that the two agree)."""
    f32 = np.float32
    i32 = np.int32
    xc = min(max(v, f32(-87.33654)), f32(88.72283))
    fn = np.floor(xc * f32(1.44269504088896341) + f32(0.5))
    r = xc - fn * f32(0.693359375)
    r = r - fn * f32(-2.12194440e-4)
    p = f32(1.9875691500e-4)
    p = p * r + f32(1.3981999507e-3)
    p = p * r + f32(8.3334519073e-3)
    p = p * r + f32(4.1665795894e-2)
    p = p * r + f32(1.6666665459e-1)
    p = p * r + f32(5.0000001201e-1)
    p = p * (r * r) + r + f32(1.0)
    n = i32(fn)
    top = n > i32(127)
    e = n - i32(1) if top else n
    res = p * _f32_from_bits(i32((e + i32(127)) << i32(23)))
    res = res * f32(2.0) if top else res
    res = f32(0.0) if v < f32(-87.33654) else res
    res = f32(np.inf) if v > f32(88.72283) else res
    return v if v != v else res


def _exp64(v: Any) -> Any:
    return math.exp(v)


@overload(_exp, inline="always")
def _exp_impl(v: Any) -> Any:
    if v == types.float32:
        return _expf
    return _exp64


@jit()
def _fwd_item(y: Array, hs: Array, ins: Inputs, bi: int, d0: int, d1: int, k: int) -> None:
    """Forward of batch element ``bi``, channels ``[d0, d1)``: writes ``y[bi, :, d0:d1]`` and
    the chunk-boundary states ``hs[bi, :, :, d0:d1]`` (the state entering each chunk).

    State-major: the innermost loops run over the group's channels (contiguous in ``x``,
    ``dt``, ``at`` and the state), so they vectorize without reductions; ``B_t[s]`` and
    ``C_t[s]`` are scalars there."""
    x, dt, at, b, c, dd = ins
    length = x.shape[1]
    n = at.shape[0]
    g = d1 - d0
    h = np.zeros((n, g), x.dtype)
    ag = np.ascontiguousarray(at[:, d0:d1])
    ddg = dd[d0:d1]
    u = np.empty(g, x.dtype)
    acc = np.empty(g, x.dtype)
    for t in range(length):
        if t % k == 0:
            hs[bi, t // k, :, d0:d1] = h
        xt = x[bi, t, d0:d1]
        dtt = dt[bi, t, d0:d1]
        bt = b[bi, t]
        ct = c[bi, t]
        for j in range(g):
            u[j] = dtt[j] * xt[j]
            acc[j] = ddg[j] * xt[j]
        for s in range(n):
            bs = bt[s]
            cs = ct[s]
            for j in range(g):
                hv = _exp(dtt[j] * ag[s, j]) * h[s, j] + u[j] * bs
                h[s, j] = hv
                acc[j] += cs * hv
        y[bi, t, d0:d1] = acc


def _scan_forward(
    y: Array, hs: Array, x: Array, dt: Array, at: Array, b: Array, c: Array, dd: Array, k: int, grp: int
) -> None:
    nb, nd = x.shape[0], x.shape[2]
    ng = (nd + grp - 1) // grp
    ins = (x, dt, at, b, c, dd)
    for w in numba.prange(nb * ng):
        bi, gi = w // ng, w % ng
        _fwd_item(y, hs, ins, bi, gi * grp, min(nd, gi * grp + grp), k)


_scan_forward_serial, _scan_forward_parallel = serial_and_parallel(_scan_forward)


@jit(fastmath=REASSOC)
def _bwd_item(grads: Grads, gy: Array, hs: Array, ins: Inputs, bi: int, gi: int, d0: int, d1: int, k: int) -> None:
    """Backward of batch element ``bi``, channels ``[d0, d1)`` (group ``gi``): writes
    ``gx, gdt[bi, :, d0:d1]`` and adds into ``ga[bi, :, d0:d1]``, ``gdd[bi, d0:d1]`` (per batch
    element) and ``gb, gc[gi, bi]`` (per group); the caller sums the leading axes.

    State-major like :func:`_fwd_item`. The sums over the group's channels that ``gb`` and
    ``gc`` need are the only reductions; ``REASSOC`` lets them vectorize (their order then
    depends on the vector width, never on the thread schedule). ``ga`` and ``gdd`` add up in
    the data's dtype within a chunk and in float64 across chunks."""
    gx, gdt, ga, gb, gc, gdd = grads
    x, dt, at, b, c, dd = ins
    length = x.shape[1]
    n = at.shape[0]
    g = d1 - d0
    z = x.dtype.type(0)
    nchunks = (length + k - 1) // k
    ag = np.ascontiguousarray(at[:, d0:d1])
    ddg = dd[d0:d1]
    lam = np.zeros((n, g), x.dtype)  # exp(dt_{t+1} A) * dL/dh_{t+1}: the adjoint carried back
    hbuf = np.empty((k + 1, n, g), x.dtype)  # hbuf[i + 1] = h_{t0 + i}, hbuf[0] = h_{t0 - 1}
    dbuf = np.empty((k, n, g), x.dtype)
    gal = np.empty((n, g), x.dtype)
    gddl = np.empty(g, x.dtype)
    sdt = np.empty(g, x.dtype)
    sx = np.empty(g, x.dtype)
    dx = np.empty(g, x.dtype)
    for ch in range(nchunks - 1, -1, -1):
        t0 = ch * k
        t1 = min(length, t0 + k)
        hbuf[0] = hs[bi, ch, :, d0:d1]
        for t in range(t0, t1):  # recompute the chunk's states and decays
            bt = b[bi, t]
            xt = x[bi, t, d0:d1]
            dtt = dt[bi, t, d0:d1]
            i = t - t0
            for s in range(n):
                bs = bt[s]
                for j in range(g):
                    dv = _exp(dtt[j] * ag[s, j])
                    dbuf[i, s, j] = dv
                    hbuf[i + 1, s, j] = dv * hbuf[i, s, j] + dtt[j] * xt[j] * bs
        gal[:, :] = z
        gddl[:] = z
        for t in range(t1 - 1, t0 - 1, -1):  # the adjoint recurrence, backwards
            bt = b[bi, t]
            ct = c[bi, t]
            gbt = gb[gi, bi, t]
            gct = gc[gi, bi, t]
            gv = gy[bi, t, d0:d1]
            xt = x[bi, t, d0:d1]
            dtt = dt[bi, t, d0:d1]
            i = t - t0
            for j in range(g):
                sdt[j] = z
                sx[j] = z
                dx[j] = dtt[j] * xt[j]
                gddl[j] += gv[j] * xt[j]
            for s in range(n):
                bs = bt[s]
                cs = ct[s]
                rc = z
                rb = z
                for j in range(g):
                    lv = gv[j] * cs + lam[s, j]  # dL/dh_t
                    dv = dbuf[i, s, j]
                    gdec = lv * hbuf[i, s, j] * dv  # dL/d(dt_t A_s)
                    sdt[j] += gdec * ag[s, j] + lv * xt[j] * bs
                    gal[s, j] += gdec * dtt[j]
                    sx[j] += lv * bs
                    lam[s, j] = dv * lv
                    rc += gv[j] * hbuf[i + 1, s, j]
                    rb += lv * dx[j]
                gct[s] += rc
                gbt[s] += rb
            for j in range(g):
                gx[bi, t, d0 + j] = sx[j] * dtt[j] + gv[j] * ddg[j]
                gdt[bi, t, d0 + j] = sdt[j]
        for s in range(n):
            for j in range(g):
                ga[bi, s, d0 + j] += gal[s, j]
        for j in range(g):
            gdd[bi, d0 + j] += gddl[j]


def _scan_backward(
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
    at: Array,
    b: Array,
    c: Array,
    dd: Array,
    k: int,
    grp: int,
) -> None:
    nb, nd = x.shape[0], x.shape[2]
    ng = (nd + grp - 1) // grp
    grads, ins = (gx, gdt, ga, gb, gc, gdd), (x, dt, at, b, c, dd)
    for w in numba.prange(nb * ng):
        bi, gi = w // ng, w % ng
        d0 = gi * grp
        _bwd_item(grads, gy, hs, ins, bi, gi, d0, min(nd, d0 + grp), k)


_scan_backward_serial, _scan_backward_parallel = serial_and_parallel(_scan_backward)


def _groups(nb: int, nd: int) -> tuple[int, int]:
    """``(channels per item, number of groups)``: up to :data:`GROUP` channels, fewer (down to
    16) while that leaves fewer than :data:`MIN_ITEMS` work items. Depends on the shapes only,
    so serial and parallel runs (and any thread count) give bitwise equal results."""
    grp = min(GROUP, max(nd, 1))
    while grp > 16 and nb * -(-nd // grp) < MIN_ITEMS:
        grp = max(16, grp // 2)
    return grp, (nd + grp - 1) // grp


def _parallel(x: Array, n: int) -> bool:
    nb, _, nd = x.shape
    return x.size * n >= PARALLEL_THRESHOLD and nb * _groups(nb, nd)[1] > 1


def scan_forward(
    x: Array, dt: Array, a: Array, b: Array, c: Array, dd: Array, out: tuple[Array, Array] | None = None
) -> tuple[Array, Array]:
    """``(y, hs)``: the scan's output ``y`` (``(batch, length, channels)``, without any gate)
    and the states entering each chunk ``hs`` (``(batch, n_chunks, state, channels)``).

    Takes C-contiguous arrays of one native float dtype (the op checks and converts):
    ``x, dt (batch, length, channels)``, ``a (channels, state)``, ``b, c (batch, length,
    state)``, ``dd (channels,)`` (zeros for no skip term); ``length >= 1``. ``out``: the
    ``(y, hs)`` of an earlier call on the same shapes, written instead of new arrays
    (:func:`gradtape.capture`'s replays).
    """
    nb, length, nd = x.shape
    n = a.shape[1]
    k = CHUNK
    if out is None:
        y = np.empty_like(x)
        hs = np.empty((nb, (length + k - 1) // k, n, nd), x.dtype)
    else:
        y, hs = out
    grp, _ = _groups(nb, nd)
    if nb and nd:
        run = _scan_forward_parallel if _parallel(x, n) else _scan_forward_serial
        run(y, hs, x, dt, np.ascontiguousarray(a.T), b, c, dd, k, grp)
    return y, hs


def scan_backward(
    gy: Array, hs: Array, x: Array, dt: Array, a: Array, b: Array, c: Array, dd: Array
) -> tuple[Array, Array, Array, Array, Array, Array]:
    """``(gx, gdt, ga, gb, gc, gdd)``: the gradients of ``sum(gy * y)`` for ``y`` of
    :func:`scan_forward` (same arrays, plus its ``hs``). ``ga`` and ``gdd`` sum over the batch
    in float64 before the cast back to ``x``'s dtype; ``gb, gc`` over the channel groups."""
    nb, length, nd = x.shape
    n = a.shape[1]
    grp, ng = _groups(nb, nd)
    gx = np.empty_like(x)
    gdt = np.empty_like(x)
    ga = np.zeros((nb, n, nd), np.float64)
    gdd = np.zeros((nb, nd), np.float64)
    gb = np.zeros((ng, nb, length, n), x.dtype)
    gc = np.zeros((ng, nb, length, n), x.dtype)
    if nb and nd:
        run = _scan_backward_parallel if _parallel(x, n) else _scan_backward_serial
        at = np.ascontiguousarray(a.T)
        run(gx, gdt, ga, gb, gc, gdd, np.ascontiguousarray(gy, x.dtype), hs, x, dt, at, b, c, dd, CHUNK, grp)
    dt_ = x.dtype
    return (
        gx,
        gdt,
        np.ascontiguousarray(ga.sum(axis=0).T).astype(dt_),
        gb.sum(axis=0) if ng != 1 else gb[0],
        gc.sum(axis=0) if ng != 1 else gc[0],
        gdd.sum(axis=0).astype(dt_),
    )
