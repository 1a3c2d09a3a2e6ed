"""Fused step kernels of the recurrent layers (LSTM, GRU, Elman RNN), and the loops that run
them: :class:`Recurrence` (one layer, one direction) and :class:`Stack` (PyTorch's stacked,
optionally bidirectional network, its layers overlapped on threads).

A recurrence runs over a whole sequence in three parts: the input projection ``x @ W_ih^T``
for every step as one matrix product, the time loop, and (in the backward) the weight
gradients as one product over every step. In the time loop each step is one BLAS product
``h_{t-1} @ W_hh^T`` (forward) or ``dgates_t @ W_hh`` (backward), through numpy's OpenBLAS,
and one kernel of this module, which fuses everything elementwise that the step does: adding
the two projections, the gate nonlinearities, the cell update and the outputs (forward), or
the gates' gradients and the carried cell/hidden gradient (backward). The forward kernels save
what the backward needs (the activated gates, the cell states and ``tanh`` of them, GRU's
``W_hn h + b_hn``): the backward kernels are pure arithmetic. The loop itself is Python, about
10 microseconds a step (two calls), under 3% of a 2-layer, hidden-256 LSTM step.

A stack of layers overlaps them on threads (:data:`PIPELINE_MACS`): the step products are too
small for two BLAS threads to split well (each step waits for the previous one), but layer
``l + 1``'s step ``t`` needs only layer ``l``'s step ``t``, so the layers run as a wavefront,
each on its own thread and one BLAS thread, a few steps apart (:data:`CHUNK`); the backward
runs the same wavefront from the top layer down. The two directions of a bidirectional layer
are independent and run side by side. The threads win only while other processes keep the
CPU busy (a two-thread BLAS product then waits for the busy core at every step); on an idle
machine the layers run one after the other, measured faster there (:data:`OTHERS_BUSY`).

Transcendentals: pip's llvmlite has no SVML (shared/KERNELS.md), so ``math.exp`` and
``math.tanh`` in a numba loop are scalar libm calls that also stop the loop from vectorizing.
For float32 the kernels use :func:`_expf` (Cephes' ``expf``: a degree-7 polynomial after
range reduction, at most 1.34 ulp, copied from ``kernels/scan.py`` since numba's disk cache
only sees a kernel's own module) for the sigmoid ``1 / (1 + exp(-v))``, and Cephes' ``tanhf``
for ``tanh`` (an odd polynomial below ``|v| = 0.625``, ``1 - 2 / (exp(2|v|) + 1)`` above):
inlined, both vectorize over a row. float64 keeps libm's ``exp`` and ``tanh``.

Work is split over the batch rows with ``numba.prange`` from :data:`PARALLEL_THRESHOLD` gate
elements per step on (each row is independent), serially below.

float32 LSTM and GRU stacks from :data:`ONEDNN_MIN_MACS` (:data:`ONEDNN_MIN_MACS_GRU`)
multiply-adds run instead on oneDNN's ``vanilla_lstm``/``lbr_gru`` primitives when its optional
wheel is installed (:class:`OneDNNStack`, over :class:`gradtape.devices.kernels.onednn.Rnn`): at
hidden 256 that took a 2-layer training step from 1.94x PyTorch's time to about 1.0x for the
LSTM (PyTorch runs its LSTM on oneDNN too) and from 0.93x to about 0.4x for the GRU. The Elman
RNN, float64, small layers and everything oneDNN is not available for run here.

Threads: the time loop's products are small and each waits for the previous step, so they run
on one BLAS thread below :data:`LOOP_PARALLEL_MACS` multiply-adds per step (see there); the
products over every step (input projection, weight gradients) go through
:func:`~gradtape.devices.kernels.blas.matmul`'s usual rule.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from gradtape.devices.kernels import blas
from gradtape.devices.kernels import onednn as _od
from gradtape.devices.kernels._jit import serial_and_parallel

__all__ = [
    "CHUNK",
    "GATES",
    "KINDS",
    "ONEDNN_GRU",
    "ONEDNN_MIN_MACS",
    "ONEDNN_MIN_MACS_GRU",
    "PARALLEL_THRESHOLD",
    "PIPELINE_MACS",
    "OneDNNStack",
    "Recurrence",
    "Stack",
    "bias_sum",
    "onednn_stack",
]

Array = np.ndarray[Any, Any]

PARALLEL_THRESHOLD = 1 << 17
"""Gate elements per step (``batch * gates * hidden``) from which a step kernel runs its rows
over threads. A step's kernel is short (tens of microseconds at batch 32, hidden 256) and sits
between two BLAS products that already use both cores where they are large: measured on the
2-core VM, interleaved with the step's product, the serial kernel was as fast as the parallel
one at 32k gate elements."""


LOOP_PARALLEL_MACS = 1 << 26
"""Multiply-adds per step (``batch * gates * hidden * hidden``) from which the time loop's
products use every BLAS thread; below, one, unless the machine is idle (:func:`_loop_threads`:
on the idle VM two threads ran the LSTM step in 140-186 ms against 145-198 on one, four
alternating medians twice). Measured on the shared 2-core VM (load 5-7 from
other processes), the LSTM's 64-step forward loop at batch 32, hidden 256 (8.4M multiply-adds
a step, where :func:`~gradtape.devices.kernels.blas.matmul` would use two threads) took
185-215 ms on one thread and 620-1160 ms on two: a two-thread product waits for a second core
at every step. ``blas.SMALL_MACS``' notes give two threads 1.4-1.9x at 8.4M on an idle machine
and 1.6-2.0x from 67M on."""


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy's OpenBLAS on one thread inside the block, gradtape's count (``blas._THREADS``)
    after; no change with another BLAS. The count is the process's, not the calling thread's:
    numpy's OpenBLAS (pthreads build) has one count for every thread that calls it, even
    through ``openblas_set_num_threads_local`` (measured: a count set in one thread is the one
    another thread reads back), so a stack sets it once around all of its threads."""
    setter = blas._SET
    if setter is None:
        yield
        return
    setter(1)
    try:
        yield
    finally:
        setter(blas._THREADS)


@contextlib.contextmanager
def _loop_threads(macs: int) -> Iterator[None]:
    """:func:`_one_blas_thread` when a step's product has fewer than
    :data:`LOOP_PARALLEL_MACS` multiply-adds, unless the machine is idle and the product is
    large enough for two BLAS threads to gain (``blas.SMALL_MACS``; other processes below
    :data:`OTHERS_BUSY` of a core, so no thread waits for a busy one); else nothing."""
    if macs >= LOOP_PARALLEL_MACS or (macs >= blas.SMALL_MACS and _others_busy() < OTHERS_BUSY):
        yield
        return
    with _one_blas_thread():
        yield


# ----- scalar helpers (inlined; float32 polynomials, float64 libm) ---------------------------


@intrinsic
def _f32_from_bits(typingctx: Any, bits: Any) -> Any:
    """Reinterpret an int32's bits as a float32 (LLVM ``bitcast``; vectorizes)."""
    if bits != types.int32:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


def _expf(v: Any) -> Any:
    """Cephes' ``expf`` (see the module docstring): exactly 0 below -87.34, inf above 88.72,
    NaN kept. Written so that LLVM vectorizes it over a row: the rounding stays in float32
    (``np.floor``, then a float32 -> int32 conversion; ``math.floor`` gave an int64, which
    AVX2 cannot convert in vectors, and left the loop scalar) and every branch is a select.
    The same code as ``scan._expf``: numba's cache covers a kernel's own module only, so
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


def _exp(v: float) -> float:
    """``exp(v)`` inside the kernels: :func:`_expf` for float32, libm's for float64."""
    return math.exp(v)


def _exp64(v: Any) -> Any:
    return math.exp(v)


@overload(_exp, inline="always")
def _exp_impl(v: Any) -> Any:
    if v == types.float32:
        return _expf
    return _exp64


def _sigmoid(v: float) -> float:
    """``1 / (1 + exp(-v))`` inside the kernels (overloaded per dtype)."""
    return 1.0 / (1.0 + math.exp(-v))


def _sigmoidf(v: Any) -> Any:
    f32 = np.float32
    return f32(1.0) / (f32(1.0) + _exp(-v))


def _sigmoid64(v: Any) -> Any:
    return 1.0 / (1.0 + math.exp(-v))


@overload(_sigmoid, inline="always")
def _sigmoid_impl(v: Any) -> Any:
    if v == types.float32:
        return _sigmoidf
    return _sigmoid64


def _tanh(v: float) -> float:
    """``tanh(v)`` inside the kernels (overloaded per dtype)."""
    return math.tanh(v)


def _tanhf(v: Any) -> Any:
    """Cephes' ``tanhf``: relative error about 1e-7 below 0.625 (no cancellation near 0),
    ``1 - 2 / (exp(2|v|) + 1)`` above; exactly +-1 from ``|v|`` about 9, NaN kept."""
    f32 = np.float32
    a = abs(v)
    z = v * v
    p = f32(-5.70498872745e-3)
    p = p * z + f32(2.06390887954e-2)
    p = p * z + f32(-5.37397155531e-2)
    p = p * z + f32(1.33314422036e-1)
    p = p * z + f32(-3.33332819422e-1)
    small = p * z * v + v
    big = math.copysign(f32(1.0) - f32(2.0) / (_exp(f32(2.0) * a) + f32(1.0)), v)
    return small if a < f32(0.625) else big


def _tanh64(v: Any) -> Any:
    return math.tanh(v)


@overload(_tanh)
def _tanh_impl(v: Any) -> Any:
    if v == types.float32:
        return _tanhf
    return _tanh64


# ----- LSTM -----------------------------------------------------------------------------------


def _lstm_fwd_step(gx: Array, gh: Array, c_prev: Array, c: Array, tc: Array, h: Array) -> None:
    """One LSTM step. ``gx (B, 4H)``: the input projection with both biases, overwritten with
    the activated gates ``i, f, g, o``; ``gh (B, 4H)``: ``h_{t-1} @ W_hh^T``; ``c_prev (B, H)``;
    writes ``c = f c_prev + i g``, ``tc = tanh(c)`` and ``h = o tanh(c)``.

    Each row is cut into its gates' slices before the loop: indexing ``x[nh + j]`` instead
    makes numba wrap negative indices, and the loop then ran 5x slower (not vectorized)."""
    nh = c.shape[1]
    for b in numba.prange(c.shape[0]):
        x = gx[b]
        y = gh[b]
        xi, xf, xg, xo = x[:nh], x[nh : 2 * nh], x[2 * nh : 3 * nh], x[3 * nh :]
        yi, yf, yg, yo = y[:nh], y[nh : 2 * nh], y[2 * nh : 3 * nh], y[3 * nh :]
        cp = c_prev[b]
        cb = c[b]
        tb = tc[b]
        hb = h[b]
        for j in range(nh):
            i = _sigmoid(xi[j] + yi[j])
            f = _sigmoid(xf[j] + yf[j])
            g = _tanh(xg[j] + yg[j])
            o = _sigmoid(xo[j] + yo[j])
            xi[j] = i
            xf[j] = f
            xg[j] = g
            xo[j] = o
            cv = f * cp[j] + i * g
            t = _tanh(cv)
            cb[j] = cv
            tb[j] = t
            hb[j] = o * t


_lstm_fwd_step_serial, _lstm_fwd_step_parallel = serial_and_parallel(_lstm_fwd_step)


def _lstm_bwd_step(acts: Array, c_prev: Array, tc: Array, g: Array, rec: Array, dc: Array, dg: Array) -> None:
    """One LSTM step backwards: ``dh = g + rec`` (the output's gradient and ``dgates_{t+1} @
    W_hh``), ``dc`` (the cell gradient carried from step ``t+1``, updated in place to ``dc f``);
    writes the pre-activation gate gradients ``dg (B, 4H)``."""
    nh = dc.shape[1]
    one = acts.dtype.type(1)
    for b in numba.prange(dc.shape[0]):
        a = acts[b]
        ai, af, ag, ao = a[:nh], a[nh : 2 * nh], a[2 * nh : 3 * nh], a[3 * nh :]
        d = dg[b]
        di, df, dgg, do = d[:nh], d[nh : 2 * nh], d[2 * nh : 3 * nh], d[3 * nh :]
        cp = c_prev[b]
        tb = tc[b]
        gb = g[b]
        rb = rec[b]
        db = dc[b]
        for j in range(nh):
            i = ai[j]
            f = af[j]
            gg = ag[j]
            o = ao[j]
            t = tb[j]
            dh = gb[j] + rb[j]
            dcv = db[j] + dh * o * (one - t * t)
            di[j] = dcv * gg * i * (one - i)
            df[j] = dcv * cp[j] * f * (one - f)
            dgg[j] = dcv * i * (one - gg * gg)
            do[j] = dh * t * o * (one - o)
            db[j] = dcv * f


_lstm_bwd_step_serial, _lstm_bwd_step_parallel = serial_and_parallel(_lstm_bwd_step)


# ----- GRU ------------------------------------------------------------------------------------


def _gru_fwd_step(gx: Array, gh: Array, bhh: Array, h_prev: Array, hn: Array, h: Array) -> None:
    """One GRU step (PyTorch's: ``n = tanh(x_n + r (W_hn h + b_hn))``). ``gx (B, 3H)``: the
    input projection with ``b_ih``, overwritten with ``r, z, n``; ``gh (B, 3H)``: ``h_{t-1} @
    W_hh^T`` (without ``b_hh``, added here); writes ``hn = W_hn h_{t-1} + b_hn`` (saved) and
    ``h = (1 - z) n + z h_{t-1}``."""
    nh = h.shape[1]
    one = gx.dtype.type(1)
    br, bz, bn = bhh[:nh], bhh[nh : 2 * nh], bhh[2 * nh :]
    for b in numba.prange(h.shape[0]):
        x = gx[b]
        y = gh[b]
        xr, xz, xn = x[:nh], x[nh : 2 * nh], x[2 * nh :]
        yr, yz, yn = y[:nh], y[nh : 2 * nh], y[2 * nh :]
        hp = h_prev[b]
        nb = hn[b]
        hb = h[b]
        for j in range(nh):
            r = _sigmoid(xr[j] + yr[j] + br[j])
            z = _sigmoid(xz[j] + yz[j] + bz[j])
            hv = yn[j] + bn[j]
            n = _tanh(xn[j] + r * hv)
            xr[j] = r
            xz[j] = z
            xn[j] = n
            nb[j] = hv
            hb[j] = (one - z) * n + z * hp[j]


_gru_fwd_step_serial, _gru_fwd_step_parallel = serial_and_parallel(_gru_fwd_step)


def _gru_bwd_step(
    acts: Array, hn: Array, h_prev: Array, g: Array, rec: Array, carry: Array, dgx: Array, dgh: Array
) -> None:
    """One GRU step backwards: ``dh = g + rec + carry`` (``rec = dgh_{t+1} @ W_hh``, ``carry =
    dh_{t+1} z_{t+1}``, updated in place to ``dh z``); writes the gradients of the input
    projection's gates ``dgx (B, 3H)`` and of the hidden projection's ``dgh (B, 3H)`` (they
    differ in the ``n`` gate, where the hidden part is scaled by ``r``)."""
    nh = hn.shape[1]
    one = acts.dtype.type(1)
    for b in numba.prange(hn.shape[0]):
        a = acts[b]
        ar, az, an = a[:nh], a[nh : 2 * nh], a[2 * nh :]
        ox = dgx[b]
        xr, xz, xn = ox[:nh], ox[nh : 2 * nh], ox[2 * nh :]
        oh = dgh[b]
        hr, hz, hn_ = oh[:nh], oh[nh : 2 * nh], oh[2 * nh :]
        nb = hn[b]
        hp = h_prev[b]
        gb = g[b]
        rb = rec[b]
        cb = carry[b]
        for j in range(nh):
            r = ar[j]
            z = az[j]
            n = an[j]
            dh = gb[j] + rb[j] + cb[j]
            dan = dh * (one - z) * (one - n * n)
            daz = dh * (hp[j] - n) * z * (one - z)
            dar = dan * nb[j] * r * (one - r)
            xr[j] = dar
            xz[j] = daz
            xn[j] = dan
            hr[j] = dar
            hz[j] = daz
            hn_[j] = dan * r
            cb[j] = dh * z


_gru_bwd_step_serial, _gru_bwd_step_parallel = serial_and_parallel(_gru_bwd_step)


# ----- Elman RNN ------------------------------------------------------------------------------


def _rnn_fwd_step(gx: Array, gh: Array, h: Array, relu: bool) -> None:
    """One Elman step: ``h = act(gx + gh)`` with ``act`` tanh or relu (``gx`` carries both
    biases)."""
    nh = h.shape[1]
    zero = gx.dtype.type(0)
    for b in numba.prange(h.shape[0]):
        x = gx[b]
        y = gh[b]
        hb = h[b]
        if relu:
            for j in range(nh):
                hb[j] = max(x[j] + y[j], zero)
        else:
            for j in range(nh):
                hb[j] = _tanh(x[j] + y[j])


_rnn_fwd_step_serial, _rnn_fwd_step_parallel = serial_and_parallel(_rnn_fwd_step)


def _rnn_bwd_step(h: Array, g: Array, rec: Array, dg: Array, relu: bool) -> None:
    """One Elman step backwards: ``dg = (g + rec) act'`` with ``act' = 1 - h^2`` (tanh) or
    ``h > 0`` (relu, PyTorch's: 0 at 0)."""
    nh = h.shape[1]
    one = h.dtype.type(1)
    zero = h.dtype.type(0)
    for b in numba.prange(h.shape[0]):
        hb = h[b]
        gb = g[b]
        rb = rec[b]
        out = dg[b]
        if relu:
            for j in range(nh):
                out[j] = gb[j] + rb[j] if hb[j] > zero else zero
        else:
            for j in range(nh):
                hv = hb[j]
                out[j] = (gb[j] + rb[j]) * (one - hv * hv)


_rnn_bwd_step_serial, _rnn_bwd_step_parallel = serial_and_parallel(_rnn_bwd_step)


# ----- one recurrence, run whole or in chunks of steps ----------------------------------------

KINDS = ("lstm", "gru", "rnn_tanh", "rnn_relu")
"""The recurrences :class:`Recurrence` runs."""

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
"""Gates per kind: the rows of ``W_ih``/``W_hh`` are ``gates * hidden``."""

_NONE = np.empty((0, 0, 0))  # the state arrays a kind does not use


def _steps(length: int, reverse: bool) -> range:
    return range(length - 1, -1, -1) if reverse else range(length)


def _pick(serial: Any, parallel: Any, batch: int, width: int, threads: bool) -> Any:
    if not threads:
        return serial
    return parallel if batch > 1 and batch * width >= PARALLEL_THRESHOLD else serial


def _mm(a: Array, b: Array, out: Array | None, threads: bool) -> Array:
    """``a @ b``: :func:`blas.matmul`'s thread rule (``threads``), or numpy's on the calling
    thread's BLAS setting (a pipelined worker's one thread)."""
    if threads:
        return blas.matmul(a, b, out)
    res: Array = np.matmul(a, b, out=out)
    return res


def bias_sum(b_ih: Array | None, b_hh: Array | None) -> Array | None:
    """``b_ih + b_hh`` (both enter every gate as a sum, except GRU's ``n`` gate), or the one
    given, or ``None``."""
    if b_ih is None:
        return b_hh
    if b_hh is None:
        return b_ih
    out: Array = b_ih + b_hh
    return out


class Recurrence:
    """One recurrent layer in one direction over a time-major sequence: its weights, the states
    its forward saves and the gradients its backward computes (arrays in, arrays out).

    ``kind`` is one of :data:`KINDS`; ``x (T, B, I)`` the input, which may still be being
    written when the recurrence is made (a stacked layer's input: :class:`Stack` fills it chunk
    by chunk before each :meth:`project`); ``h0, c0 (B, H)`` (``c0`` for the LSTM only);
    ``w_ih (G H, I)``, ``w_hh (G H, H)``, ``b_ih``, ``b_hh (G H,)`` or ``None``, in PyTorch's
    layout and gate order; ``reverse`` runs from the last step to the first. C-contiguous
    arrays of one float dtype, ``T >= 1``.

    The whole-sequence calls are :meth:`forward` and :meth:`backward`. The chunked ones, for a
    stack that overlaps its layers on threads, are :meth:`project` and :meth:`run` (forward),
    then :meth:`start_backward`, :meth:`run_backward`, :meth:`input_grad` and :meth:`finish`.
    After the forward, ``out (T, B, H)`` holds the hidden state of every step, ``acts (T, B,
    G H)`` the activated gates, and for the LSTM ``c`` and ``tc = tanh(c)`` the cell states,
    for the GRU ``hn = W_hn h_{t-1} + b_hn``.
    """

    def __init__(
        self,
        kind: str,
        x: Array,
        h0: Array,
        c0: Array | None,
        w_ih: Array,
        w_hh: Array,
        b_ih: Array | None,
        b_hh: Array | None,
        reverse: bool,
    ) -> None:
        nt, nb, ni = x.shape
        ng, nh = w_hh.shape
        dt = w_hh.dtype
        self.kind = kind
        self.shape = (nt, nb, ni, nh, ng)
        """``(T, B, I, H, G H)``."""
        self.x = x
        self.h0 = h0
        self.c0 = c0 if c0 is not None else h0
        self.w_ih = w_ih
        self.w_hh = w_hh
        self.wt = np.ascontiguousarray(w_hh.T)  # a transposed view ran the step products 20% slower
        self.reverse = reverse
        self.order = _steps(nt, reverse)
        self.given_bias = (b_ih is not None, b_hh is not None)
        self.bias_x = b_ih if kind == "gru" else bias_sum(b_ih, b_hh)
        self.b_hh = b_hh if b_hh is not None else np.zeros(ng, dt)  # the GRU's, in its n gate
        self.out = np.empty((nt, nb, nh), dt)
        self.acts = np.empty((nt, nb, ng), dt)
        lstm = kind == "lstm"
        self.c = np.empty_like(self.out) if lstm else _NONE
        self.tc = np.empty_like(self.out) if lstm else _NONE
        self.hn = np.empty_like(self.out) if kind == "gru" else _NONE
        self._gh = np.empty((nb, ng), dt)
        self._h = h0
        self._c = self.c0
        self.macs = nb * ng * nh
        """Multiply-adds of one step's recurrent product."""

    # -- forward

    def project(self, lo: int, hi: int, threads: bool) -> None:
        """``acts[lo:hi] = x[lo:hi] @ W_ih^T + bias`` for time indices ``lo <= t < hi``, one
        product (``threads``: :func:`blas.matmul`'s thread rule, else the caller's)."""
        _, _, ni, _, ng = self.shape
        a = self.acts[lo:hi].reshape(-1, ng)
        _mm(self.x[lo:hi].reshape(-1, ni), self.w_ih.T, a, threads)
        if self.bias_x is not None:
            a += self.bias_x

    def run(self, first: int, stop: int, threads: bool) -> None:
        """Run the steps at positions ``first <= k < stop`` of the run order (time ``k``, or
        ``T - 1 - k`` in reverse), after their :meth:`project`: each step one product ``h_{t-1}
        @ W_hh^T`` and one fused kernel. ``threads``: the kernels may split rows over threads
        (:data:`PARALLEL_THRESHOLD`), else serial."""
        _, nb, _, _, ng = self.shape
        gh, wt, acts, out = self._gh, self.wt, self.acts, self.out
        h = self._h
        if self.kind == "lstm":
            step = _pick(_lstm_fwd_step_serial, _lstm_fwd_step_parallel, nb, ng, threads)
            c, tc = self.c, self.tc
            cp = self._c
            for t in self.order[first:stop]:
                np.matmul(h, wt, out=gh)
                step(acts[t], gh, cp, c[t], tc[t], out[t])
                h, cp = out[t], c[t]
            self._c = cp
        elif self.kind == "gru":
            step = _pick(_gru_fwd_step_serial, _gru_fwd_step_parallel, nb, ng, threads)
            hn, b_hh = self.hn, self.b_hh
            for t in self.order[first:stop]:
                np.matmul(h, wt, out=gh)
                step(acts[t], gh, b_hh, h, hn[t], out[t])
                h = out[t]
        else:
            step = _pick(_rnn_fwd_step_serial, _rnn_fwd_step_parallel, nb, ng, threads)
            relu = self.kind == "rnn_relu"
            for t in self.order[first:stop]:
                np.matmul(h, wt, out=gh)
                step(acts[t], gh, out[t], relu)
                h = out[t]
        self._h = h

    def forward(self, threads: bool = True) -> None:
        """The whole forward: one input projection, then every step (the step products on one
        BLAS thread below :data:`LOOP_PARALLEL_MACS` when ``threads``; with ``threads=False``
        everything stays on the caller's thread setting)."""
        nt = self.shape[0]
        self.project(0, nt, threads)
        if not threads:
            self.run(0, nt, False)
            return
        with _loop_threads(self.macs):
            self.run(0, nt, True)

    def last_states(self) -> tuple[Array, Array | None]:
        """``(h_n, c_n)`` after the forward: the states after the last step run (``c_n`` for
        the LSTM only), copies."""
        last = 0 if self.reverse else self.shape[0] - 1
        return self.out[last].copy(), (self.c[last].copy() if self.kind == "lstm" else None)

    # -- backward

    def start_backward(self, g_hn: Array | None, g_cn: Array | None) -> None:
        """Set up the backward from the gradients of ``h_n`` and ``c_n`` (``None``: zero)."""
        _, nb, _, nh, _ = self.shape
        dt = self.out.dtype
        self.rec = np.zeros((nb, nh), dt) if g_hn is None else np.array(g_hn, dt)
        self.dc = np.zeros((nb, nh), dt) if g_cn is None else np.array(g_cn, dt)
        self.carry = np.zeros((nb, nh), dt)
        self.zeros = np.zeros((nb, nh), dt)
        self.dg = np.empty_like(self.acts)
        self.dgh = np.empty_like(self.acts) if self.kind == "gru" else self.dg

    def run_backward(self, g_out: Array | None, first: int, stop: int, threads: bool) -> None:
        """Backward through the steps at positions ``first <= k < stop`` of the reversed run
        order (the last step run first), given the output's gradient ``g_out (T, B, H)`` (rows
        of the steps run must be final) or ``None``; writes the gate gradients ``dg`` of those
        steps (and the GRU's hidden-side ``dgh``) and carries the state gradients."""
        nt, nb, _, _, ng = self.shape
        acts, out, rec, dg, w_hh = self.acts, self.out, self.rec, self.dg, self.w_hh
        first_run = self.order[0]
        back = -1 if self.reverse else 1  # the previous step's index is t - back
        for t in _steps(nt, not self.reverse)[first:stop]:
            gt = self.zeros if g_out is None else g_out[t]
            if self.kind == "lstm":
                c_prev = self.c0 if t == first_run else self.c[t - back]
                step = _pick(_lstm_bwd_step_serial, _lstm_bwd_step_parallel, nb, ng, threads)
                step(acts[t], c_prev, self.tc[t], gt, rec, self.dc, dg[t])
                np.matmul(dg[t], w_hh, out=rec)
            elif self.kind == "gru":
                h_prev = self.h0 if t == first_run else out[t - back]
                step = _pick(_gru_bwd_step_serial, _gru_bwd_step_parallel, nb, ng, threads)
                step(acts[t], self.hn[t], h_prev, gt, rec, self.carry, dg[t], self.dgh[t])
                np.matmul(self.dgh[t], w_hh, out=rec)
            else:
                step = _pick(_rnn_bwd_step_serial, _rnn_bwd_step_parallel, nb, ng, threads)
                step(out[t], gt, rec, dg[t], self.kind == "rnn_relu")
                np.matmul(dg[t], w_hh, out=rec)

    def input_grad(self, lo: int, hi: int, threads: bool, out: Array | None = None) -> Array:
        """The input's gradient for time indices ``lo <= t < hi``, ``dg[lo:hi] @ W_ih`` ``(hi -
        lo, B, I)``, once those steps' :meth:`run_backward` is done (into ``out`` if given)."""
        _, nb, ni, _, ng = self.shape
        o = None if out is None else out.reshape(-1, ni)
        return _mm(self.dg[lo:hi].reshape(-1, ng), self.w_ih, o, threads).reshape(hi - lo, nb, ni)

    def finish(self, threads: bool) -> dict[str, Array]:
        """The gradients after every step's :meth:`run_backward`: ``h0`` (and ``c0``),
        ``weight_ih = sum_t dg_t^T x_t``, ``weight_hh = sum_t dgh_t^T h_{t-1}`` (one product
        each over every step) and the given biases' (sums of the gate gradients)."""
        nt, nb, ni, nh, ng = self.shape
        prev = np.empty_like(self.out)  # the state entering each step
        if self.reverse:
            prev[:-1] = self.out[1:]
            prev[-1] = self.h0
        else:
            prev[1:] = self.out[:-1]
            prev[0] = self.h0
        dx2 = self.dg.reshape(nt * nb, ng)
        dh2 = self.dgh.reshape(nt * nb, ng)
        res = {
            "h0": self.rec + self.carry if self.kind == "gru" else self.rec,
            "weight_ih": _mm(dx2.T, self.x.reshape(nt * nb, ni), None, threads),
            "weight_hh": _mm(dh2.T, prev.reshape(nt * nb, nh), None, threads),
        }
        if self.kind == "lstm":
            res["c0"] = self.dc
        if self.given_bias[0]:
            res["bias_ih"] = dx2.sum(axis=0)
        if self.given_bias[1]:
            res["bias_hh"] = dh2.sum(axis=0) if self.kind == "gru" or not self.given_bias[0] else res["bias_ih"].copy()
        return res

    def backward(
        self, g_out: Array | None, g_hn: Array | None, g_cn: Array | None, want_x: bool, threads: bool = True
    ) -> dict[str, Array]:
        """The whole backward: :meth:`finish`'s gradients, and ``input`` (the input's) when
        ``want_x``. ``threads`` as in :meth:`forward`."""
        nt = self.shape[0]
        self.start_backward(g_hn, g_cn)
        if threads:
            with _loop_threads(self.macs):
                self.run_backward(g_out, 0, nt, True)
        else:
            self.run_backward(g_out, 0, nt, False)
        res = self.finish(threads)
        if want_x:
            res["input"] = self.input_grad(0, nt, threads)
        self.release()
        return res

    def release(self) -> None:
        """Drop the backward's work arrays (the gate gradients); the forward's saved states stay
        for another backward."""
        self.dg = self.dgh = _NONE


# ----- stacks: layers overlapped on threads ---------------------------------------------------

PIPELINE_MACS = 1 << 20
"""Multiply-adds per step of one layer's recurrent product (``batch * gates * hidden * hidden``)
from which :class:`Stack` may run its layers on threads (on a machine with two or more cores,
while other processes keep at least :data:`OTHERS_BUSY` of a core busy: see there):
a unidirectional stack as a wavefront (layer ``l`` runs chunk ``k`` of the steps while layer
``l + 1`` runs chunk ``k - 1``; the backward the same from the top layer down), a
bidirectional layer's two directions side by side. numpy's BLAS runs on one thread meanwhile
(each of the stack's threads does its products itself), so no thread waits inside BLAS for a
busy core. Measured on the 2-core VM (2-layer LSTM, hidden 256, batch 32, sequence 64,
float32; 8.4M multiply-adds a step): see :data:`OTHERS_BUSY`. Below about 1M the per-chunk
handoffs (tens of microseconds) cost more than they overlap."""

CHUNK = 4
"""Steps per chunk of the wavefront: the lag between two layers, and the rows (``CHUNK *
batch``) of the per-chunk input projections and input gradients. 4, 8 and 16 measured
88, 95 and 98 ms for the forward above (4 fills the pipeline soonest)."""

_POOL: dict[int, ThreadPoolExecutor] = {}


def _pool() -> ThreadPoolExecutor:
    """The worker threads of the stacks, shared by every stack: made on first use in each
    process (a forked child has none of its parent's threads, and an executor copied from the
    parent would count them as idle and never run a task)."""
    pid = os.getpid()
    pool = _POOL.get(pid)
    if pool is None:
        _POOL.clear()
        pool = _POOL[pid] = ThreadPoolExecutor(max_workers=8, thread_name_prefix="gradtape-rnn")
    return pool


OTHERS_BUSY = 0.5
"""Cores' worth of CPU time other processes used over the last sample (:func:`_others_busy`)
from which a :class:`Stack` runs its layers on threads. Measured on the 2-vCPU VM, 2-layer
LSTM training step (hidden 256, batch 32, sequence 64, float32), threads against one after
the other, four alternating medians each: idle, 187-209 ms against 155-176 (the threads lose:
each step's Python handoffs and the per-chunk input products, 2x slower per multiply-add than
one whole-sequence product, cost more than the overlap gains while two-thread BLAS has both
cores); with a busy loop in another process, 194-236 ms against 255-322 (the threads win: each
does its small products on one BLAS thread, where a two-thread product waits for the busy core
at every step)."""

_LOAD = [0.0, 0.0, 0.0, 0.0]  # last sample: monotonic time, all CPUs' busy seconds, ours, others' rate
_LOAD_PERIOD = 0.5


def _others_busy() -> float:
    """Cores' worth of CPU time other processes used since the previous sample: the busy time of
    every CPU (Linux's ``/proc/stat``, steal included) less this process's (``os.times``), per
    second of wall time. Sampled at most every 0.5 s (the last value in between); 0.0 on the
    first call and where ``/proc/stat`` is missing."""
    now = time.monotonic()
    last = _LOAD
    if now - last[0] < _LOAD_PERIOD:
        return last[3]
    try:
        with open("/proc/stat", "rb") as fh:
            ticks = [int(v) for v in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    busy = (sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)) / os.sysconf("SC_CLK_TCK")
    t = os.times()
    ours = t.user + t.system
    if last[0]:
        last[3] = max(0.0, ((busy - last[1]) - (ours - last[2])) / (now - last[0]))
    last[0], last[1], last[2] = now, busy, ours
    return last[3]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Aborted(Exception):
    """Another thread of the same stack failed (its error is the one raised)."""


class _Chunks:
    """Completion flags of one layer's chunks, which the next layer in the wavefront waits on."""

    def __init__(self, n: int) -> None:
        self.events = [threading.Event() for _ in range(n)]
        self.failed = False

    def done(self, k: int) -> None:
        self.events[k].set()

    def fail(self) -> None:
        self.failed = True
        for e in self.events:
            e.set()

    def wait(self, k: int) -> None:
        self.events[k].wait()
        if self.failed:
            raise _Aborted


def _together(tasks: list[Callable[[], None]], links: list[_Chunks]) -> None:
    """Run ``tasks[0]`` on this thread and the others on the pool's threads, all at once; a
    failure in one fails every link (so that no task waits forever) and is raised here after
    every task has stopped."""

    def guarded(task: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                task()
            except BaseException:
                for link in links:
                    link.fail()
                raise

        return run

    futures = [_pool().submit(guarded(t)) for t in tasks[1:]]
    errors: list[BaseException] = []
    try:
        guarded(tasks[0])()
    except BaseException as e:
        errors.append(e)
    for f in futures:
        try:
            f.result()
        except BaseException as e:
            errors.append(e)
    if errors:
        real = [e for e in errors if not isinstance(e, _Aborted)]
        raise (real or errors)[0]


class Stack:
    """PyTorch's stacked, optionally bidirectional recurrent network (``torch.nn.LSTM``/
    ``GRU``/``RNN``) as :class:`Recurrence` s: layer ``l + 1`` reads layer ``l``'s outputs
    (both directions' concatenated on the feature axis), times ``masks[l]`` (dropout's scaled
    keep mask ``(T, B, D H)``, or ``None``).

    Args:
        kind: one of :data:`KINDS`.
        x: ``(T, B, I)``; ``h0s``, ``c0s``: one ``(B, H)`` state per layer and direction
            (``k = layer * D + direction``; ``c0s`` for the LSTM, else ``None``).
        weights: ``(w_ih, w_hh, b_ih, b_hh)`` per ``k``.
        ndir: ``D``, 1 or 2.
        masks: one per layer but the last.

    Threads: when the step product is at least :data:`PIPELINE_MACS`, the machine has two or
    more cores and other processes keep at least :data:`OTHERS_BUSY` of a core busy (sampled
    when the stack is made), :meth:`forward` and :meth:`backward` overlap the layers (see there);
    otherwise every recurrence runs whole, one after the other. The two give the same values
    up to float rounding (the pipelined input projections and input gradients are per chunk).
    """

    def __init__(
        self,
        kind: str,
        x: Array,
        h0s: list[Array],
        c0s: list[Array] | None,
        weights: list[tuple[Array, Array, Array | None, Array | None]],
        ndir: int,
        masks: list[Array | None],
    ) -> None:
        nt, nb, _ = x.shape
        nl = len(weights) // ndir
        self.kind = kind
        self.ndir = ndir
        self.masks = masks
        self.layers: list[list[Recurrence]] = []
        self.inputs: list[Array] = []
        inp = x
        for layer in range(nl):
            runs = []
            for d in range(ndir):
                k = layer * ndir + d
                c0 = None if c0s is None else c0s[k]
                runs.append(Recurrence(kind, inp, h0s[k], c0, *weights[k], reverse=d == 1))
            self.layers.append(runs)
            self.inputs.append(inp)
            if layer < nl - 1:
                nh = runs[0].shape[3]
                inp = runs[0].out if ndir == 1 and masks[layer] is None else np.empty((nt, nb, ndir * nh), x.dtype)
        self.threaded = (
            (nl > 1 or ndir == 2)
            and self.layers[0][0].macs >= PIPELINE_MACS
            and _cores() > 1
            and _others_busy() >= OTHERS_BUSY
        )

    def _feed(self, layer: int, lo: int, hi: int) -> None:
        """Write layer ``layer + 1``'s input for time indices ``lo <= t < hi`` from layer
        ``layer``'s outputs (concatenated, masked); nothing when it reads the output itself."""
        runs, dst, m = self.layers[layer], self.inputs[layer + 1], self.masks[layer]
        if dst is runs[0].out:
            return
        nh = runs[0].shape[3]
        for d, r in enumerate(runs):
            part = dst[lo:hi, :, d * nh : (d + 1) * nh]
            if m is None:
                part[...] = r.out[lo:hi]
            else:
                np.multiply(r.out[lo:hi], m[lo:hi, :, d * nh : (d + 1) * nh], out=part)

    def forward(self) -> tuple[Array, list[Array], list[Array]]:
        """Run every layer: ``(output (T, B, D H), h_n per k, c_n per k)`` (``c_n`` empty but
        for the LSTM). Pipelined (unidirectional, threaded): this thread runs layer 0 (its
        input projection whole, then its steps chunk by chunk), a pool thread each layer above,
        which projects and runs chunk ``k`` once the layer below has finished it."""
        nl, nt = len(self.layers), self.layers[0][0].shape[0]
        if self.threaded and self.ndir == 1:
            links = [_Chunks(-(-nt // CHUNK)) for _ in range(nl - 1)]

            def layer_task(layer: int) -> Callable[[], None]:
                r = self.layers[layer][0]

                def task() -> None:
                    for k, lo in enumerate(range(0, nt, CHUNK)):
                        hi = min(lo + CHUNK, nt)
                        if layer > 0:
                            links[layer - 1].wait(k)
                            r.project(lo, hi, False)
                        r.run(lo, hi, False)
                        if layer < nl - 1:
                            self._feed(layer, lo, hi)
                            links[layer].done(k)

                return task

            self.layers[0][0].project(0, nt, True)  # the first layer's input is all there: every BLAS thread
            with _one_blas_thread():
                _together([layer_task(i) for i in range(nl)], links)
        else:
            for layer, runs in enumerate(self.layers):
                if self.threaded:
                    with _one_blas_thread():
                        _together([_call(r.forward, False) for r in runs], [])
                else:
                    for r in runs:
                        r.forward(True)
                if layer < nl - 1:
                    self._feed(layer, 0, nt)
        top = self.layers[-1]
        output = top[0].out if self.ndir == 1 else np.concatenate([r.out for r in top], axis=2)
        states = [r.last_states() for runs in self.layers for r in runs]
        hs = [h for h, _ in states]
        cs = [c for _, c in states if c is not None]
        return output, hs, cs

    def backward(
        self, g_out: Array | None, g_hn: Array | None, g_cn: Array | None, want_x: bool
    ) -> tuple[Array | None, list[dict[str, Array]]]:
        """Gradients from those of ``output (T, B, D H)``, ``h_n`` and ``c_n`` (``(L D, B, H)``;
        each ``None`` for none): ``(dx, per k`` :meth:`Recurrence.finish` ``'s dict)``, ``dx``
        ``None`` unless ``want_x``. Pipelined: a pool thread per layer from the top down runs
        its steps backwards chunk by chunk and hands the layer below that chunk's output
        gradient; this thread runs layer 0, then its weight gradients on every BLAS thread."""
        nl, nd = len(self.layers), self.ndir
        nt, nb, _, nh, _ = self.layers[0][0].shape
        dt = self.layers[0][0].out.dtype
        res: dict[int, dict[str, Array]] = {}

        def states(k: int) -> tuple[Array | None, Array | None]:
            return (None if g_hn is None else g_hn[k]), (None if g_cn is None else g_cn[k])

        def split(g: Array | None) -> list[Array | None]:
            if g is None or nd == 1:
                return [g] * nd
            return [np.ascontiguousarray(g[:, :, d * nh : (d + 1) * nh]) for d in range(nd)]

        dx: Array | None = None
        if self.threaded and nd == 1:
            links = [_Chunks(-(-nt // CHUNK)) for _ in range(nl - 1)]
            g_in = [np.empty((nt, nb, nh), dt) for _ in range(nl - 1)]  # each lower layer's output gradient
            bounds = [(max(hi - CHUNK, 0), hi) for hi in range(nt, 0, -CHUNK)]

            def layer_task(layer: int) -> Callable[[], None]:
                r = self.layers[layer][0]
                g = g_out if layer == nl - 1 else g_in[layer]

                def task() -> None:
                    r.start_backward(*states(layer))
                    for k, (lo, hi) in enumerate(bounds):
                        if layer < nl - 1:
                            links[layer].wait(k)
                        r.run_backward(g, nt - hi, nt - lo, False)
                        if layer > 0:
                            below = g_in[layer - 1][lo:hi]
                            r.input_grad(lo, hi, False, below)
                            m = self.masks[layer - 1]
                            if m is not None:
                                below *= m[lo:hi]
                            links[layer - 1].done(k)
                    if layer > 0:
                        res[layer] = r.finish(False)

                return task

            with _one_blas_thread():
                _together([layer_task(0), *(layer_task(i) for i in range(nl - 1, 0, -1))], links)
            res[0] = self.layers[0][0].finish(True)  # the last to run: every BLAS thread
            if want_x:
                dx = self.layers[0][0].input_grad(0, nt, True)
            for runs in self.layers:
                runs[0].release()
            return dx, [res[i] for i in range(nl)]
        g: list[Array | None] = split(g_out)
        for layer in range(nl - 1, -1, -1):
            runs = self.layers[layer]
            wants = want_x or layer > 0
            outs: list[dict[str, Array]] = [{} for _ in runs]

            tasks = [_Back(outs, d, r, g[d], *states(layer * nd + d), wants) for d, r in enumerate(runs)]
            if self.threaded:
                with _one_blas_thread():
                    _together([_call(t.run, False) for t in tasks], [])
            else:
                for t in tasks:
                    t.run(True)
            for d in range(nd):
                res[layer * nd + d] = outs[d]
            if layer > 0:
                total = outs[0].pop("input")
                for o in outs[1:]:
                    total += o.pop("input")
                m = self.masks[layer - 1]
                if m is not None:
                    total *= m
                g = split(total)
            elif want_x:
                dx = outs[0].pop("input")
                for o in outs[1:]:
                    dx += o.pop("input")
        return dx, [res[k] for k in range(nl * nd)]


class _Back:
    """One recurrence's whole backward, its result stored at ``outs[d]`` (a task)."""

    def __init__(
        self,
        outs: list[dict[str, Array]],
        d: int,
        r: Recurrence,
        g: Array | None,
        g_hn: Array | None,
        g_cn: Array | None,
        want_x: bool,
    ) -> None:
        self.outs, self.d, self.r, self.g, self.g_hn, self.g_cn, self.want_x = outs, d, r, g, g_hn, g_cn, want_x

    def run(self, threads: bool) -> None:
        self.outs[self.d] = self.r.backward(self.g, self.g_hn, self.g_cn, self.want_x, threads)


def _call(fn: Callable[..., None], *args: Any) -> Callable[[], None]:
    """``fn(*args)`` as a task of :func:`_together`."""

    def task() -> None:
        fn(*args)

    return task


# ----- float32 LSTM and GRU stacks on oneDNN --------------------------------------------------

ONEDNN_MIN_MACS = 1 << 21
"""Multiply-adds of the first layer's products over the whole sequence (``T * B * 4H * (I +
H)``) from which a float32 LSTM stack runs on oneDNN (:func:`onednn_stack`), when available.
oneDNN costs about 0.1-0.15 ms a call whatever the size, the numba path some microseconds a
step. Measured on the 2-core AVX-512 VM, a 2-layer training step (forward and backward), oneDNN
over numba: 1.17x at T=8, B=16, H=I=32 (1M), 1.03x at T=64, B=4, H=16 (0.5M), 0.75x at T=64,
B=8, H=32 (4M), 0.61x at T=8, B=32, H=64 (8M), 0.44-0.48x from 67M on (1.94x -> ~1.0x torch at
the benchmark's T=64, B=32, H=I=256)."""


ONEDNN_MIN_MACS_GRU = 1 << 22
""":data:`ONEDNN_MIN_MACS` for the GRU (``T * B * 3H * (I + H)``): oneDNN's ``lbr_gru`` over
numba, same 2-layer step: 1.41x at T=8, B=16, H=I=32 (0.8M), 0.94x at T=64, B=8, H=32 (3M),
0.82x at T=64, B=16, H=32 (6M), 0.48-0.59x at H=128, B=32."""

ONEDNN_GRU = True
"""Whether float32 GRU stacks run on oneDNN's ``lbr_gru`` primitive too (PyTorch runs its GRU
on its own kernels, not oneDNN)."""


class OneDNNStack:
    """A float32 stacked, optionally bidirectional LSTM or GRU (``torch.nn.LSTM``/``GRU``) on
    oneDNN's ``vanilla_lstm``/``lbr_gru`` primitive (:class:`gradtape.devices.kernels.onednn.Rnn`,
    one primitive per layer, both directions in one), with :class:`Stack`'s interface and values
    (up to float rounding): layer ``l + 1`` reads layer ``l``'s output ``(T, B, D H)`` times
    ``masks[l]``.

    Made by :func:`onednn_stack`, which decides whether oneDNN runs the stack. ``training``:
    the forward keeps oneDNN's workspace for :meth:`backward` (any number of backwards);
    otherwise an inference primitive runs and :meth:`backward` raises.
    """

    def __init__(
        self,
        plans: list[_od.Rnn],
        x: Array,
        h0s: list[Array],
        c0s: list[Array] | None,
        weights: list[tuple[Array, Array, Array | None, Array | None]],
        ndir: int,
        masks: list[Array | None],
    ) -> None:
        nd = ndir
        self.plans, self.x, self.ndir, self.masks = plans, x, nd, masks
        self.lstm = plans[0].cell == "lstm"
        self.given_bias = [(w[2] is not None, w[3] is not None) for w in weights]
        nh = weights[0][1].shape[1]

        def per_layer(arrays: list[Array], layer: int) -> Array:
            part = arrays[layer * nd : (layer + 1) * nd]
            return part[0][None] if nd == 1 else np.stack(part)

        self.args: list[tuple[Array, Array | None, Array, Array, Array]] = []
        for layer in range(len(plans)):
            ws = weights[layer * nd : (layer + 1) * nd]
            b = [self._bias(b_ih, b_hh, nh) for _, _, b_ih, b_hh in ws]
            c0 = None if c0s is None else per_layer(c0s, layer)
            wx, wh = per_layer([w[0] for w in ws], 0), per_layer([w[1] for w in ws], 0)
            self.args.append((per_layer(h0s, layer), c0, wx, wh, per_layer(b, 0)))
        self.runs: list[_od.RnnRun] = []

    def _bias(self, b_ih: Array | None, b_hh: Array | None, nh: int) -> Array:
        """oneDNN's bias ``(4H,)`` from PyTorch's two (``None``: zeros): the LSTM's ``b_ih +
        b_hh``; the GRU's ``[b_iz + b_hz, b_ir + b_hr, b_in, b_hn]`` (``lbr_gru``)."""
        if self.lstm:
            b = bias_sum(b_ih, b_hh)
            return np.zeros(4 * nh, np.float32) if b is None else b
        out = np.zeros((4, nh), np.float32)
        for given in (b_ih, b_hh):
            if given is not None:
                r, z, _ = given.reshape(3, nh)
                out[0] += z
                out[1] += r
        if b_ih is not None:
            out[2] = b_ih[2 * nh :]
        if b_hh is not None:
            out[3] = b_hh[2 * nh :]
        return out.reshape(4 * nh)

    def forward(self) -> tuple[Array, list[Array], list[Array]]:
        """Run every layer: ``(output (T, B, D H), h_n per k, c_n per k)`` as :meth:`Stack.forward`
        (``c_n`` empty for the GRU)."""
        inp = self.x
        self.runs = []
        for layer, plan in enumerate(self.plans):
            run = plan.forward(inp, *self.args[layer])
            self.runs.append(run)
            m = self.masks[layer] if layer < len(self.plans) - 1 else None
            inp = run.y if m is None else run.y * m
        hs = [r.hn[d] for r in self.runs for d in range(self.ndir)]
        cs = [r.cn[d] for r in self.runs if r.cn is not None for d in range(self.ndir)]
        return self.runs[-1].y, hs, cs

    def backward(
        self, g_out: Array | None, g_hn: Array | None, g_cn: Array | None, want_x: bool
    ) -> tuple[Array | None, list[dict[str, Array]]]:
        """Gradients as :meth:`Stack.backward`: ``(dx or None, per k`` a dict of ``h0``, (``c0``),
        ``weight_ih``, ``weight_hh`` and the given biases' gradients ``)``; a gradient given as
        ``None`` is zero. oneDNN's bias gradients are PyTorch's: the LSTM's one is both
        ``bias_ih``'s and ``bias_hh``'s; the GRU's ``[du, dr, do, du']`` give ``bias_ih = [dr, du,
        do]`` and ``bias_hh = [dr, du, du']``."""
        nl, nd = len(self.plans), self.ndir
        nt, nb, _ = self.x.shape
        nh = self.args[0][0].shape[2]
        zero = np.zeros((nd, nb, nh), np.float32)
        g = np.zeros((nt, nb, nd * nh), np.float32) if g_out is None else g_out
        res: dict[int, dict[str, Array]] = {}
        dx: Array | None = None
        for layer in range(nl - 1, -1, -1):
            part = slice(layer * nd, (layer + 1) * nd)
            ghn = zero if g_hn is None else g_hn[part]
            gcn = None if not self.lstm else zero if g_cn is None else g_cn[part]
            dxl, dh0, dc0, dwih, dwhh, db = self.plans[layer].backward(self.runs[layer], g, ghn, gcn)
            assert dxl is not None and dh0 is not None and dwih is not None and dwhh is not None and db is not None
            for d in range(nd):
                k = layer * nd + d
                one = {"h0": dh0[d], "weight_ih": dwih[d], "weight_hh": dwhh[d]}
                if dc0 is not None:
                    one["c0"] = dc0[d]
                b_ih, b_hh = self._bias_grads(db[d], nh)
                if self.given_bias[k][0]:
                    one["bias_ih"] = b_ih
                if self.given_bias[k][1]:
                    one["bias_hh"] = b_hh
                res[k] = one
            if layer > 0:
                m = self.masks[layer - 1]
                g = dxl if m is None else dxl * m
            elif want_x:
                dx = dxl
        return dx, [res[k] for k in range(nl * nd)]

    def _bias_grads(self, db: Array, nh: int) -> tuple[Array, Array]:
        """``(bias_ih, bias_hh)``'s gradients from oneDNN's bias's ``db (4H,)`` (see :meth:`_bias`)."""
        if self.lstm:
            return db, db.copy()
        du, dr, do, du2 = db.reshape(4, nh)
        return np.concatenate([dr, du, do]), np.concatenate([dr, du, du2])


def onednn_stack(
    kind: str,
    x: Array,
    h0s: list[Array],
    c0s: list[Array] | None,
    weights: list[tuple[Array, Array, Array | None, Array | None]],
    ndir: int,
    masks: list[Array | None],
    training: bool,
) -> OneDNNStack | None:
    """A :class:`OneDNNStack` for :class:`Stack`'s arguments (checked by the caller: C-contiguous
    arrays of one dtype) when oneDNN runs it: an LSTM, or a GRU while :data:`ONEDNN_GRU`,
    float32, a first layer of at least :data:`ONEDNN_MIN_MACS` (:data:`ONEDNN_MIN_MACS_GRU`)
    multiply-adds over the sequence,
    oneDNN available in this process (installed, not turned off by ``GRADTAPE_ONEDNN=0``, not a
    forked child) and accepting the shapes; else ``None`` (the caller runs :class:`Stack`).
    ``training``: plans whose forward keeps what the backward needs."""
    nt, nb, ni = x.shape
    nh = weights[0][1].shape[1]
    cells = ("lstm", "gru") if ONEDNN_GRU else ("lstm",)
    if kind not in cells or (kind == "lstm") != (c0s is not None) or x.dtype != np.float32:
        return None
    if nt * nb * GATES[kind] * nh * (ni + nh) < (ONEDNN_MIN_MACS if kind == "lstm" else ONEDNN_MIN_MACS_GRU):
        return None
    plans = []
    for layer in range(len(weights) // ndir):
        plan = _od.rnn_plan(kind, nt, nb, ni if layer == 0 else ndir * nh, nh, ndir, training)
        if plan is None:
            return None
        plans.append(plan)
    return OneDNNStack(plans, x, h0s, c0s, weights, ndir, masks)
