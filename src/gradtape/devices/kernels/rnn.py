"""Fused step kernels of the recurrent layers (LSTM, GRU, Elman RNN): forward and backward.

The ops (:mod:`gradtape.ops.rnn`) run a recurrence over a whole sequence in three parts: the
input projection ``x @ W_ih^T`` for every step as one matrix product, the time loop, and (in
the backward) the weight gradients as one product over every step. In the time loop each step
is one BLAS product ``h_{t-1} @ W_hh^T`` (forward) or ``dgates_t @ W_hh`` (backward), through
numpy's OpenBLAS, and one kernel of this
module, which fuses everything elementwise that the step does: adding the two projections,
the gate nonlinearities, the cell update and the outputs (forward), or the gates' gradients
and the carried cell/hidden gradient (backward). The forward kernels save what the backward
needs (the activated gates, the cell states and ``tanh`` of them, GRU's ``W_hn h + b_hn``):
the backward kernels are pure arithmetic.

:func:`lstm_forward`, :func:`lstm_backward`, :func:`gru_forward`, :func:`gru_backward`,
:func:`rnn_forward` and :func:`rnn_backward` run the loops; arrays in, arrays out.

Transcendentals: pip's llvmlite has no SVML (shared/KERNELS.md), so ``math.exp`` and
``math.tanh`` in a numba loop are scalar libm calls that also stop the loop from vectorizing.
For float32 the kernels use :func:`_expf` (Cephes' ``expf``: a degree-7 polynomial after
range reduction, at most 1.34 ulp, copied from ``kernels/scan.py`` since numba's disk cache
only sees a kernel's own module) for the sigmoid ``1 / (1 + exp(-v))``, and Cephes' ``tanhf``
for ``tanh`` (an odd polynomial below ``|v| = 0.625``, ``1 - 2 / (exp(2|v|) + 1)`` above):
inlined, both vectorize over a row. float64 keeps libm's ``exp`` and ``tanh``.

Work is split over the batch rows with ``numba.prange`` from :data:`PARALLEL_THRESHOLD` gate
elements per step on (each row is independent), serially below.

Threads: the time loop's products are small and each waits for the previous step, so they run
on one BLAS thread below :data:`LOOP_PARALLEL_MACS` multiply-adds per step (see there); the
products over every step (input projection, weight gradients) go through
:func:`~gradtape.devices.kernels.blas.matmul`'s usual rule.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from gradtape.devices.kernels import blas
from gradtape.devices.kernels._jit import serial_and_parallel

__all__ = [
    "PARALLEL_THRESHOLD",
    "gru_backward",
    "gru_forward",
    "lstm_backward",
    "lstm_forward",
    "rnn_backward",
    "rnn_forward",
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
products use every BLAS thread; below, one. Measured on the shared 2-core VM (load 5-7 from
other processes), the LSTM's 64-step forward loop at batch 32, hidden 256 (8.4M multiply-adds
a step, where :func:`~gradtape.devices.kernels.blas.matmul` would use two threads) took
185-215 ms on one thread and 620-1160 ms on two: a two-thread product waits for a second core
at every step. ``blas.SMALL_MACS``' notes give two threads 1.4-1.9x at 8.4M on an idle machine
and 1.6-2.0x from 67M on."""


@contextlib.contextmanager
def _loop_threads(macs: int) -> Iterator[None]:
    """numpy's OpenBLAS on one thread inside the block when a step's product has fewer than
    :data:`LOOP_PARALLEL_MACS` multiply-adds (no change with another BLAS)."""
    setter = blas._SET
    if setter is None or macs >= LOOP_PARALLEL_MACS:
        yield
        return
    setter(1)
    try:
        yield
    finally:
        setter(blas._THREADS)


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
    NaN kept."""
    f32 = np.float32
    xc = min(max(v, f32(-87.33654)), f32(88.72283))
    n = math.floor(xc * f32(1.44269504088896341) + f32(0.5))
    fn = f32(n)
    r = xc - fn * f32(0.693359375)
    r = r - fn * f32(-2.12194440e-4)
    p = f32(1.9875691500e-4)
    p = p * r + f32(1.3981999507e-3)
    p = p * r + f32(8.3334519073e-3)
    p = p * r + f32(4.1665795894e-2)
    p = p * r + f32(1.6666665459e-1)
    p = p * r + f32(5.0000001201e-1)
    p = p * (r * r) + r + f32(1.0)
    top = n > 127
    e = n - 1 if top else n
    res = p * _f32_from_bits(np.int32((e + 127) << 23))
    if top:
        res = res * f32(2.0)
    if v < f32(-87.33654):
        res = f32(0.0)
    if v > f32(88.72283):
        res = f32(np.inf)
    if v != v:
        res = v
    return res


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


# ----- the loops ------------------------------------------------------------------------------


def _steps(length: int, reverse: bool) -> range:
    return range(length - 1, -1, -1) if reverse else range(length)


def _pick(serial: Any, parallel: Any, batch: int, width: int) -> Any:
    return parallel if batch > 1 and batch * width >= PARALLEL_THRESHOLD else serial


def _prev_states(seq: Array, first: Array, reverse: bool) -> Array:
    """``(T, B, H)``: the state entering each step (``first`` for the first step run, else
    the neighbouring step's)."""
    prev = np.empty_like(seq)
    if reverse:
        prev[:-1] = seq[1:]
        prev[-1] = first
    else:
        prev[1:] = seq[:-1]
        prev[0] = first
    return prev


def _input_projection(x: Array, w_ih: Array, bias: Array | None) -> Array:
    """``x @ W_ih^T + bias`` for every step: ``(T, B, I) -> (T, B, G)``, one product."""
    nt, nb, ni = x.shape
    gx = blas.matmul(x.reshape(nt * nb, ni), w_ih.T)
    if bias is not None:
        gx += bias
    return gx.reshape(nt, nb, w_ih.shape[0])


def _weight_grads(dg: Array, x: Array, prev: Array, w_ih: Array, want_x: bool) -> tuple[Array | None, Array, Array]:
    """From gate gradients ``dg (T, B, G)``: ``(dx, dW_ih, dW_hh)``, each one product over
    every step (``prev (T, B, H)``: the state entering each step); ``dx`` is ``None`` unless
    ``want_x``."""
    nt, nb, ng = dg.shape
    d2 = dg.reshape(nt * nb, ng)
    dx = blas.matmul(d2, w_ih).reshape(x.shape) if want_x else None
    dw_ih = blas.matmul(d2.T, x.reshape(nt * nb, x.shape[2]))
    dw_hh = blas.matmul(d2.T, prev.reshape(nt * nb, prev.shape[2]))
    return dx, dw_ih, dw_hh


def _bias_grad(dg: Array) -> Array:
    """``dg (T, B, G)`` summed over steps and batch."""
    out: Array = dg.reshape(-1, dg.shape[2]).sum(axis=0)
    return out


def lstm_forward(
    x: Array, h0: Array, c0: Array, w_ih: Array, w_hh: Array, bias: Array | None, reverse: bool
) -> tuple[Array, Array, Array, Array]:
    """The LSTM recurrence over ``x (T, B, I)`` from ``h0, c0 (B, H)``: ``(out, acts, c, tc)``
    with ``out (T, B, H)`` the hidden states, ``acts (T, B, 4H)`` the activated gates
    ``i, f, g, o``, ``c (T, B, H)`` the cell states and ``tc = tanh(c)``. ``bias`` is
    ``b_ih + b_hh`` (``(4H,)``) or ``None``; ``reverse`` runs from the last step to the first.
    C-contiguous arrays of one float dtype; ``T >= 1``."""
    nt, nb, _ = x.shape
    nh = h0.shape[1]
    acts = _input_projection(x, w_ih, bias)
    out = np.empty((nt, nb, nh), x.dtype)
    c = np.empty_like(out)
    tc = np.empty_like(out)
    gh = np.empty((nb, 4 * nh), x.dtype)
    wt = np.ascontiguousarray(w_hh.T)  # a transposed view ran the step products 20% slower
    step = _pick(_lstm_fwd_step_serial, _lstm_fwd_step_parallel, nb, 4 * nh)
    h_prev, c_prev = h0, c0
    with _loop_threads(nb * 4 * nh * nh):
        for t in _steps(nt, reverse):
            np.matmul(h_prev, wt, out=gh)
            step(acts[t], gh, c_prev, c[t], tc[t], out[t])
            h_prev, c_prev = out[t], c[t]
    return out, acts, c, tc


def lstm_backward(
    saved: tuple[Array, Array, Array, Array],
    x: Array,
    h0: Array,
    c0: Array,
    w_ih: Array,
    w_hh: Array,
    g_out: Array | None,
    g_hn: Array | None,
    g_cn: Array | None,
    reverse: bool,
    want_x: bool,
) -> tuple[Array | None, Array, Array, Array, Array, Array]:
    """Gradients of the LSTM recurrence, given :func:`lstm_forward`'s ``saved`` results and the
    gradients of ``out``, ``h_n`` and ``c_n`` (each ``None`` for none): ``(dx, dh0, dc0,
    dW_ih, dW_hh, db)`` with ``db`` the gradient of either bias (they enter as a sum)."""
    out, acts, c, tc = saved
    nt, nb, nh = out.shape
    dt = x.dtype
    dg = np.empty_like(acts)
    rec = np.zeros((nb, nh), dt) if g_hn is None else np.array(g_hn, dt)
    dc = np.zeros((nb, nh), dt) if g_cn is None else np.array(g_cn, dt)
    zeros = np.zeros((nb, nh), dt) if g_out is None else None
    step = _pick(_lstm_bwd_step_serial, _lstm_bwd_step_parallel, nb, 4 * nh)
    order = _steps(nt, not reverse)
    last = order[-1]
    with _loop_threads(nb * 4 * nh * nh):
        for t in order:
            c_prev = c0 if t == last else (c[t + 1] if reverse else c[t - 1])
            gt = zeros if g_out is None else g_out[t]
            step(acts[t], c_prev, tc[t], gt, rec, dc, dg[t])
            np.matmul(dg[t], w_hh, out=rec)
    dx, dw_ih, dw_hh = _weight_grads(dg, x, _prev_states(out, h0, reverse), w_ih, want_x)
    return dx, rec, dc, dw_ih, dw_hh, _bias_grad(dg)


def gru_forward(
    x: Array, h0: Array, w_ih: Array, w_hh: Array, b_ih: Array | None, b_hh: Array, reverse: bool
) -> tuple[Array, Array, Array]:
    """The GRU recurrence over ``x (T, B, I)`` from ``h0 (B, H)``: ``(out, acts, hn)`` with
    ``acts (T, B, 3H)`` the gates ``r, z, n`` and ``hn (T, B, H)`` the saved ``W_hn h + b_hn``.
    ``b_hh`` is an array (zeros without biases)."""
    nt, nb, _ = x.shape
    nh = h0.shape[1]
    acts = _input_projection(x, w_ih, b_ih)
    out = np.empty((nt, nb, nh), x.dtype)
    hn = np.empty_like(out)
    gh = np.empty((nb, 3 * nh), x.dtype)
    wt = np.ascontiguousarray(w_hh.T)  # a transposed view ran the step products 20% slower
    step = _pick(_gru_fwd_step_serial, _gru_fwd_step_parallel, nb, 3 * nh)
    h_prev = h0
    with _loop_threads(nb * 3 * nh * nh):
        for t in _steps(nt, reverse):
            np.matmul(h_prev, wt, out=gh)
            step(acts[t], gh, b_hh, h_prev, hn[t], out[t])
            h_prev = out[t]
    return out, acts, hn


def gru_backward(
    saved: tuple[Array, Array, Array],
    x: Array,
    h0: Array,
    w_ih: Array,
    w_hh: Array,
    g_out: Array | None,
    g_hn: Array | None,
    reverse: bool,
    want_x: bool,
) -> tuple[Array | None, Array, Array, Array, Array, Array]:
    """Gradients of the GRU recurrence: ``(dx, dh0, dW_ih, dW_hh, db_ih, db_hh)``."""
    out, acts, hn = saved
    nt, nb, nh = out.shape
    dt = x.dtype
    dgx = np.empty_like(acts)
    dgh = np.empty_like(acts)
    rec = np.zeros((nb, nh), dt) if g_hn is None else np.array(g_hn, dt)
    carry = np.zeros((nb, nh), dt)
    zeros = np.zeros((nb, nh), dt) if g_out is None else None
    prev = _prev_states(out, h0, reverse)
    step = _pick(_gru_bwd_step_serial, _gru_bwd_step_parallel, nb, 3 * nh)
    with _loop_threads(nb * 3 * nh * nh):
        for t in _steps(nt, not reverse):
            gt = zeros if g_out is None else g_out[t]
            step(acts[t], hn[t], prev[t], gt, rec, carry, dgx[t], dgh[t])
            np.matmul(dgh[t], w_hh, out=rec)
    rec += carry
    nt3 = nt * nb
    dx = blas.matmul(dgx.reshape(nt3, 3 * nh), w_ih).reshape(x.shape) if want_x else None
    dw_ih = blas.matmul(dgx.reshape(nt3, 3 * nh).T, x.reshape(nt3, x.shape[2]))
    dw_hh = blas.matmul(dgh.reshape(nt3, 3 * nh).T, prev.reshape(nt3, nh))
    return dx, rec, dw_ih, dw_hh, _bias_grad(dgx), _bias_grad(dgh)


def rnn_forward(x: Array, h0: Array, w_ih: Array, w_hh: Array, bias: Array | None, relu: bool, reverse: bool) -> Array:
    """The Elman recurrence ``h_t = act(x_t W_ih^T + h_{t-1} W_hh^T + b)`` over ``x (T, B, I)``:
    ``out (T, B, H)`` (all the backward needs). ``bias`` is ``b_ih + b_hh`` or ``None``."""
    nt, nb, _ = x.shape
    nh = h0.shape[1]
    gx = _input_projection(x, w_ih, bias)
    out = np.empty((nt, nb, nh), x.dtype)
    gh = np.empty((nb, nh), x.dtype)
    wt = np.ascontiguousarray(w_hh.T)  # a transposed view ran the step products 20% slower
    step = _pick(_rnn_fwd_step_serial, _rnn_fwd_step_parallel, nb, nh)
    h_prev = h0
    with _loop_threads(nb * nh * nh):
        for t in _steps(nt, reverse):
            np.matmul(h_prev, wt, out=gh)
            step(gx[t], gh, out[t], relu)
            h_prev = out[t]
    return out


def rnn_backward(
    out: Array,
    x: Array,
    h0: Array,
    w_ih: Array,
    w_hh: Array,
    g_out: Array | None,
    g_hn: Array | None,
    relu: bool,
    reverse: bool,
    want_x: bool,
) -> tuple[Array | None, Array, Array, Array, Array]:
    """Gradients of the Elman recurrence: ``(dx, dh0, dW_ih, dW_hh, db)``."""
    nt, nb, nh = out.shape
    dt = x.dtype
    dg = np.empty_like(out)
    rec = np.zeros((nb, nh), dt) if g_hn is None else np.array(g_hn, dt)
    zeros = np.zeros((nb, nh), dt) if g_out is None else None
    step = _pick(_rnn_bwd_step_serial, _rnn_bwd_step_parallel, nb, nh)
    with _loop_threads(nb * nh * nh):
        for t in _steps(nt, not reverse):
            gt = zeros if g_out is None else g_out[t]
            step(out[t], gt, rec, dg[t], relu)
            np.matmul(dg[t], w_hh, out=rec)
    dx, dw_ih, dw_hh = _weight_grads(dg, x, _prev_states(out, h0, reverse), w_ih, want_x)
    return dx, rec, dw_ih, dw_hh, _bias_grad(dg)
