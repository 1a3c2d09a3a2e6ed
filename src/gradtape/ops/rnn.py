"""Recurrent layers' recurrences as ops: :func:`lstm_layer`, :func:`gru_layer`, :func:`rnn_layer`.

Each op runs one layer in one direction over a whole time-major sequence, PyTorch's equations
and weight layout (``torch.nn.LSTM``/``GRU``/``RNN``, gate order ``i, f, g, o`` and ``r, z,
n``), and records one entry with both rules (CONTRIBUTING "The second rule"):

- forward: the input projection ``x @ W_ih^T`` of every step as one matrix product, then the
  time loop, each step one BLAS product ``h_{t-1} @ W_hh^T`` and one fused numba kernel for
  the gates (:mod:`gradtape.devices.kernels.rnn`), which saves the activated gates;
- first rule: the time loop reversed, each step one fused kernel for the gate gradients and
  one product ``dgates_t @ W_hh``; then the gradients of ``x``, ``W_ih``, ``W_hh`` and the
  biases as single products (sums) over every step;
- second rule: the same derivative written in gradtape ops (a Python loop over time, some 30
  recorded ops per step): slow, for gradients of gradients on small cases.

The layers of :mod:`gradtape.nn.rnn` stack these ops over layers and directions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape.devices.kernels import rnn as _kr
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._util import float_data
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["gru_layer", "lstm_layer", "rnn_layer"]

Array = np.ndarray[Any, Any]

_GATES = {"lstm_layer": 4, "gru_layer": 3, "rnn_layer": 1}
_ARGS = ("input", "h0", "c0", "weight_ih", "weight_hh", "bias_ih", "bias_hh")


def lstm_layer(
    input: Tensor[Any, Any],
    h0: Tensor[Any, Any],
    c0: Tensor[Any, Any],
    weight_ih: Tensor[Any, Any],
    weight_hh: Tensor[Any, Any],
    bias_ih: Tensor[Any, Any] | None = None,
    bias_hh: Tensor[Any, Any] | None = None,
    reverse: bool = False,
) -> tuple[Tensor[Any, Any], Tensor[Any, Any], Tensor[Any, Any]]:
    """One LSTM layer in one direction over a time-major sequence (Hochreiter and Schmidhuber
    1997, with forget gate; PyTorch's ``torch.nn.LSTM`` equations). For each step ``t``::

        i, f, g, o = split(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh, 4)   # (B, H) each
        i, f, o = sigmoid(i), sigmoid(f), sigmoid(o);  g = tanh(g)
        c_t = f c_{t-1} + i g;  h_t = o tanh(c_t)

    Args:
        input: ``(T, B, I)``, float32 or float64, ``T >= 1``.
        h0, c0: ``(B, H)``, the initial hidden and cell states.
        weight_ih: ``(4H, I)``; weight_hh: ``(4H, H)`` (rows in gate order ``i, f, g, o``).
        bias_ih, bias_hh: ``(4H,)`` or ``None``.
        reverse: run from the last step to the first (the backward direction of a
            bidirectional layer); ``output[t]`` is still the state after reading ``input[t]``.

    Returns:
        ``(output, h_n, c_n)``: ``output (T, B, H)`` the hidden states of every step, ``h_n,
        c_n (B, H)`` those after the last step run. All of the input's dtype; they own a tape
        if any input takes part.

    Gradients (first rule), with ``dh_t`` the output's gradient plus ``dgates_{t+1} W_hh``::

        dc_t = dc_{t+1} f_{t+1} + dh_t o_t (1 - tanh(c_t)^2)
        dgates_t = [dc_t g_t i_t(1-i_t), dc_t c_{t-1} f_t(1-f_t), dc_t i_t (1-g_t^2),
                    dh_t tanh(c_t) o_t(1-o_t)]
        grad_input = dgates W_ih;  grad_W_ih = sum_t dgates_t^T x_t;
        grad_W_hh = sum_t dgates_t^T h_{t-1};  grad_b_ih = grad_b_hh = sum_t,b dgates_t

    Raises:
        ShapeError: a tensor of the wrong rank or shape (the message names ``lstm_layer``, the
            argument and every shape), or ``T == 0``.
        DTypeError: a tensor that is not float32/float64, or dtypes that differ.
    """
    outs = _run("lstm_layer", input, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh, reverse, False)
    return outs[0], outs[1], outs[2]


def gru_layer(
    input: Tensor[Any, Any],
    h0: Tensor[Any, Any],
    weight_ih: Tensor[Any, Any],
    weight_hh: Tensor[Any, Any],
    bias_ih: Tensor[Any, Any] | None = None,
    bias_hh: Tensor[Any, Any] | None = None,
    reverse: bool = False,
) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
    """One GRU layer in one direction over a time-major sequence (Cho et al. 2014; PyTorch's
    ``torch.nn.GRU`` equations, where ``r`` scales the hidden projection *with* its bias)::

        r = sigmoid(x_t W_ir^T + b_ir + h_{t-1} W_hr^T + b_hr)
        z = sigmoid(x_t W_iz^T + b_iz + h_{t-1} W_hz^T + b_hz)
        n = tanh(x_t W_in^T + b_in + r (h_{t-1} W_hn^T + b_hn))
        h_t = (1 - z) n + z h_{t-1}

    Args:
        input: ``(T, B, I)``, float32 or float64, ``T >= 1``; h0: ``(B, H)``.
        weight_ih: ``(3H, I)``; weight_hh: ``(3H, H)`` (rows in gate order ``r, z, n``).
        bias_ih, bias_hh: ``(3H,)`` or ``None``.
        reverse: run from the last step to the first.

    Returns:
        ``(output (T, B, H), h_n (B, H))``.

    Gradients: with ``dh_t`` the total gradient of ``h_t``, ``an = dh (1-z)(1-n^2)``, ``az = dh
    (h_{t-1} - n) z(1-z)``, ``ar = an (W_hn h_{t-1} + b_hn) r(1-r)``: the input projection's
    gate gradients are ``[ar, az, an]``, the hidden projection's ``[ar, az, an r]``, and
    ``dh_{t-1} = dh_t z + [ar, az, an r] W_hh``; the weight and bias gradients are sums over
    steps of those against ``x_t`` and ``h_{t-1}``, as for :func:`lstm_layer`.

    Raises:
        ShapeError, DTypeError: as :func:`lstm_layer`, naming ``gru_layer``.
    """
    outs = _run("gru_layer", input, h0, None, weight_ih, weight_hh, bias_ih, bias_hh, reverse, False)
    return outs[0], outs[1]


def rnn_layer(
    input: Tensor[Any, Any],
    h0: Tensor[Any, Any],
    weight_ih: Tensor[Any, Any],
    weight_hh: Tensor[Any, Any],
    bias_ih: Tensor[Any, Any] | None = None,
    bias_hh: Tensor[Any, Any] | None = None,
    nonlinearity: str = "tanh",
    reverse: bool = False,
) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
    """One Elman RNN layer in one direction over a time-major sequence (Elman 1990; PyTorch's
    ``torch.nn.RNN``): ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with ``act``
    ``tanh`` or ``relu``.

    Args:
        input: ``(T, B, I)``, float32 or float64, ``T >= 1``; h0: ``(B, H)``.
        weight_ih: ``(H, I)``; weight_hh: ``(H, H)``; bias_ih, bias_hh: ``(H,)`` or ``None``.
        nonlinearity: ``"tanh"`` or ``"relu"``.
        reverse: run from the last step to the first.

    Returns:
        ``(output (T, B, H), h_n (B, H))``.

    Gradients: ``da_t = (g_t + da_{t+1} W_hh) act'`` with ``act' = 1 - h_t^2`` (tanh) or
    ``h_t > 0`` (relu; 0 at 0 as PyTorch); weight and bias gradients as :func:`lstm_layer`.

    Raises:
        ValueError: ``nonlinearity`` is neither ``"tanh"`` nor ``"relu"``.
        ShapeError, DTypeError: as :func:`lstm_layer`, naming ``rnn_layer``.
    """
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"rnn_layer: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
    outs = _run("rnn_layer", input, h0, None, weight_ih, weight_hh, bias_ih, bias_hh, reverse, nonlinearity == "relu")
    return outs[0], outs[1]


def _check(op: str, given: dict[str, Array]) -> np.dtype[Any]:
    """The common float dtype, after the rank and shape checks (before any kernel runs)."""
    desc = ", ".join(f"{nm} {d.shape}" for nm, d in given.items())
    kinds = {d.dtype for d in given.values()}
    if len(kinds) != 1 or any(d.dtype.itemsize not in (4, 8) for d in given.values()):
        dts = ", ".join(f"{nm} {d.dtype}" for nm, d in given.items())
        raise DTypeError(f"{op}: all tensors must be float32, or all float64; got {dts}")
    x, w_hh = given["input"], given["weight_hh"]
    if x.ndim != 3:
        raise ShapeError(f"{op}: input must be (T, B, input_size), got shape {x.shape}; shapes: {desc}")
    if w_hh.ndim != 2:
        raise ShapeError(f"{op}: weight_hh must be (gates * hidden, hidden), got shape {w_hh.shape}; shapes: {desc}")
    nt, nb, ni = x.shape
    nh = w_hh.shape[1]
    ng = _GATES[op] * nh
    want = {
        "h0": (nb, nh),
        "c0": (nb, nh),
        "weight_ih": (ng, ni),
        "weight_hh": (ng, nh),
        "bias_ih": (ng,),
        "bias_hh": (ng,),
    }
    for nm, d in given.items():
        if nm != "input" and d.shape != want[nm]:
            raise ShapeError(
                f"{op}: {nm} must have shape {want[nm]} (from input {x.shape} and hidden size {nh} of weight_hh), "
                f"got {d.shape}; shapes: {desc}"
            )
    if nt == 0:
        raise ShapeError(f"{op}: input {x.shape} has length 0: the recurrence needs at least one step")
    return np.dtype(f"f{x.dtype.itemsize}")


def _run(
    op: str,
    x: Tensor[Any, Any],
    h0: Tensor[Any, Any],
    c0: Tensor[Any, Any] | None,
    w_ih: Tensor[Any, Any],
    w_hh: Tensor[Any, Any],
    b_ih: Tensor[Any, Any] | None,
    b_hh: Tensor[Any, Any] | None,
    reverse: bool,
    relu: bool,
) -> list[Tensor[Any, Any]]:
    """Forward of the three ops (``op`` names which) and the recording of both rules."""
    tensors = dict(zip(_ARGS, (x, h0, c0, w_ih, w_hh, b_ih, b_hh), strict=True))
    given = {nm: t for nm, t in tensors.items() if t is not None}
    datas = {nm: float_data(op, t, nm) for nm, t in given.items()}
    dt = _check(op, datas)
    a = {nm: np.ascontiguousarray(d, dt) for nm, d in datas.items()}
    xd, h0d, wi, wh = a["input"], a["h0"], a["weight_ih"], a["weight_hh"]
    bi, bh = a.get("bias_ih"), a.get("bias_hh")
    last = 0 if reverse else xd.shape[0] - 1
    if op == "lstm_layer":
        saved: Any = _kr.lstm_forward(xd, h0d, a["c0"], wi, wh, _bias_sum(bi, bh), reverse)
        out_d = saved[0]
        arrays = [out_d, out_d[last].copy(), saved[2][last].copy()]
    elif op == "gru_layer":
        bh_ = bh if bh is not None else np.zeros(wh.shape[0], dt)
        saved = _kr.gru_forward(xd, h0d, wi, wh, bi, bh_, reverse)
        out_d = saved[0]
        arrays = [out_d, out_d[last].copy()]
    else:
        out_d = saved = _kr.rnn_forward(xd, h0d, wi, wh, _bias_sum(bi, bh), relu, reverse)
        arrays = [out_d, out_d[last].copy()]
    tape = op_tape(*given.values())
    outs: list[Tensor[Any, Any]] = [x._from_op(arr, tape) for arr in arrays]
    if tape is NONE_TAPE:
        return outs
    ids = {nm: (t.id, t._leaf) for nm, t in given.items()}

    def rnn_backward(grads: Gradients, gs: list[Array | None]) -> None:
        g = [None if v is None else np.ascontiguousarray(v, dt) for v in gs]
        want_x = grads.wants(*ids["input"])
        res: dict[str, Array | None]
        if op == "lstm_layer":
            r6 = _kr.lstm_backward(saved, xd, h0d, a["c0"], wi, wh, g[0], g[1], g[2], reverse, want_x)
            dx, dh0, dc0, dwi, dwh, db = r6
            res = {"input": dx, "h0": dh0, "c0": dc0, "weight_ih": dwi, "weight_hh": dwh}
            res["bias_ih"], res["bias_hh"] = db, db.copy()
        elif op == "gru_layer":
            dx, dh0, dwi, dwh, dbi, dbh = _kr.gru_backward(saved, xd, h0d, wi, wh, g[0], g[1], reverse, want_x)
            res = {"input": dx, "h0": dh0, "weight_ih": dwi, "weight_hh": dwh, "bias_ih": dbi, "bias_hh": dbh}
        else:
            dx, dh0, dwi, dwh, db = _kr.rnn_backward(out_d, xd, h0d, wi, wh, g[0], g[1], relu, reverse, want_x)
            res = {"input": dx, "h0": dh0, "weight_ih": dwi, "weight_hh": dwh, "bias_ih": db, "bias_hh": db.copy()}
        for nm, (i, leaf) in ids.items():
            gr = res[nm]
            if gr is not None and grads.wants(i, leaf):
                grads._accum(i, gr)

    def rnn_diff(gs: list[Any], rebuild: Any) -> list[tuple[int, Any]]:
        ts = {nm: rebuild(ids[nm][0], datas[nm]) for nm in given}
        grads_ = _vjp_ops(op, gs, ts, reverse, relu)
        return [(ids[nm][0], grads_[nm]) for nm in given]

    record(tape, outs, rnn_backward, rnn_diff)
    return outs


def _bias_sum(b_ih: Array | None, b_hh: Array | None) -> Array | None:
    """``b_ih + b_hh`` (both enter every gate as a sum, except GRU's ``n`` gate), or the one
    given, or ``None``."""
    if b_ih is None:
        return b_hh
    if b_hh is None:
        return b_ih
    out: Array = b_ih + b_hh
    return out


def _vjp_ops(op: str, gs: list[Any], ts: dict[str, Any], reverse: bool, relu: bool) -> dict[str, Any]:
    """The op's gradients for every given input (``ts``: the rebuilt input tensors by argument
    name), from the outputs' gradients ``gs`` (tensors), in gradtape ops, so that they are
    recorded and can be differentiated again: the forward recurrence recomputed, then the
    adjoint recurrence, each a Python loop over time."""
    from gradtape.ops.compare import where
    from gradtape.ops.shape import concat, stack

    x, h, w_ih, w_hh = ts["input"], ts["h0"], ts["weight_ih"], ts["weight_hh"]
    b_ih, b_hh = ts.get("bias_ih"), ts.get("bias_hh")
    nt, nb, ni = x.shape
    nh = w_hh.shape[1]
    ng = w_hh.shape[0]
    order = list(range(nt - 1, -1, -1) if reverse else range(nt))
    xp = x @ w_ih.transpose(0, 1)  # (T, B, G)
    if b_ih is not None:
        xp = xp + b_ih
    w_t = w_hh.transpose(0, 1)
    c = ts.get("c0")
    prev: dict[int, Any] = {}
    keep: dict[int, tuple[Any, ...]] = {}
    for t in order:  # the forward, keeping what the adjoint needs
        prev[t] = h
        hp = h @ w_t
        if op == "gru_layer":
            hp = hp + b_hh if b_hh is not None else hp
            r = (xp[t][:, :nh] + hp[:, :nh]).sigmoid()
            z = (xp[t][:, nh : 2 * nh] + hp[:, nh : 2 * nh]).sigmoid()
            hn = hp[:, 2 * nh :]
            n = (xp[t][:, 2 * nh :] + r * hn).tanh()
            keep[t] = (r, z, n, hn)
            h = (1.0 - z) * n + z * h
            continue
        pre = xp[t] + hp if b_hh is None else xp[t] + hp + b_hh
        if op == "lstm_layer":
            i = pre[:, :nh].sigmoid()
            f = pre[:, nh : 2 * nh].sigmoid()
            g = pre[:, 2 * nh : 3 * nh].tanh()
            o = pre[:, 3 * nh :].sigmoid()
            keep[t] = (i, f, g, o, c)
            c = f * c + i * g
            tc = c.tanh()
            keep[t] = (*keep[t], tc)
            h = o * tc
        else:
            h = pre.relu() if relu else pre.tanh()
            keep[t] = (h,)
    g_out = gs[0]
    rec = gs[1]
    dc = gs[2] if op == "lstm_layer" else None
    dgx: dict[int, Any] = {}
    dgh: dict[int, Any] = {}
    for t in reversed(order):  # the adjoint
        dh = g_out[t] + rec
        if op == "lstm_layer":
            i, f, g, o, c_prev, tc = keep[t]
            dcv = dc + dh * o * (1.0 - tc * tc)
            gate = concat(
                [
                    dcv * g * i * (1.0 - i),
                    dcv * c_prev * f * (1.0 - f),
                    dcv * i * (1.0 - g * g),
                    dh * tc * o * (1.0 - o),
                ],
                axis=1,
            )
            dc = dcv * f
            dgx[t] = dgh[t] = gate
            rec = gate @ w_hh
        elif op == "gru_layer":
            r, z, n, hn = keep[t]
            dan = dh * (1.0 - z) * (1.0 - n * n)
            daz = dh * (prev[t] - n) * z * (1.0 - z)
            dar = dan * hn * r * (1.0 - r)
            dgx[t] = concat([dar, daz, dan], axis=1)
            dgh[t] = concat([dar, daz, dan * r], axis=1)
            rec = dh * z + dgh[t] @ w_hh
        else:
            (hv,) = keep[t]
            da = where(hv > 0.0, dh, 0.0) if relu else dh * (1.0 - hv * hv)
            dgx[t] = dgh[t] = da
            rec = da @ w_hh
    gx_all = stack([dgx[t] for t in range(nt)], axis=0).reshape((nt * nb, ng))
    gh_all = stack([dgh[t] for t in range(nt)], axis=0).reshape((nt * nb, ng))
    h_prev = stack([prev[t] for t in range(nt)], axis=0).reshape((nt * nb, nh))
    res: dict[str, Any] = {
        "input": (gx_all @ w_ih).reshape((nt, nb, ni)),
        "h0": rec,
        "weight_ih": gx_all.transpose(0, 1) @ x.reshape((nt * nb, ni)),
        "weight_hh": gh_all.transpose(0, 1) @ h_prev,
        "bias_ih": gx_all.sum(axis=0),
        "bias_hh": gh_all.sum(axis=0),
    }
    if dc is not None:
        res["c0"] = dc
    return res
