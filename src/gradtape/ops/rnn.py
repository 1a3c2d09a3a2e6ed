"""Recurrent layers' recurrences as ops: :func:`lstm_layer`, :func:`gru_layer`, :func:`rnn_layer`.

Each op runs one layer in one direction over a whole time-major sequence, PyTorch's equations
and weight layout (``torch.nn.LSTM``/``GRU``/``RNN``, gate order ``i, f, g, o`` and ``r, z,
n``), and records one entry with both rules (CONTRIBUTING "The second rule"):

- forward: the input projection ``x @ W_ih^T`` of every step as one matrix product, then the
  time loop, each step one BLAS product ``h_{t-1} @ W_hh^T`` and one fused numba kernel for
  the gates (:class:`gradtape.devices.kernels.rnn.Recurrence`), which saves the activated
  gates;
- first rule: the time loop reversed, each step one fused kernel for the gate gradients and
  one product ``dgates_t @ W_hh``; then the gradients of ``x``, ``W_ih``, ``W_hh`` and the
  biases as single products (sums) over every step;
- second rule: the same derivative written in gradtape ops (a Python loop over time, some 30
  recorded ops per step): slow, for gradients of gradients on small cases.

:func:`recurrent_stack` is a whole stacked, optionally bidirectional network as one op (the
layers of :mod:`gradtape.nn.rnn` call it), so that its kernels can overlap the layers on
threads (:class:`gradtape.devices.kernels.rnn.Stack`); its rules chain the per-layer ones. A
float32 LSTM or GRU stack runs its forward and first rule on oneDNN's LSTM/GRU primitive
instead, when available and large enough (:func:`gradtape.devices.kernels.rnn.onednn_stack`); its second rule
is the same gradtape-ops rule either way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import rnn as _kr
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._util import check_same_device, float_data, replayable
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["gru_layer", "lstm_layer", "recurrent_stack", "rnn_layer"]

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


_MODES = {"LSTM": ("lstm", "lstm_layer"), "GRU": ("gru", "gru_layer"), "RNN_TANH": ("rnn_tanh", "rnn_layer")}
_MODES["RNN_RELU"] = ("rnn_relu", "rnn_layer")


def recurrent_stack(
    mode: str,
    input: Tensor[Any, Any],
    h0: Tensor[Any, Any] | None,
    c0: Tensor[Any, Any] | None,
    weights: Sequence[Sequence[Tensor[Any, Any] | None]],
    num_directions: int = 1,
    dropout_masks: Sequence[Array | None] | None = None,
    lengths: Sequence[int] | Array | None = None,
) -> tuple[Tensor[Any, Any], Tensor[Any, Any], Tensor[Any, Any] | None]:
    """A stacked, optionally bidirectional recurrent network over a time-major sequence, as
    one op (PyTorch's ``torch.nn.LSTM``/``GRU``/``RNN`` forward; :mod:`gradtape.nn.rnn`'s
    layers call it): layer ``l``, direction ``d`` is :func:`lstm_layer` / :func:`gru_layer` /
    :func:`rnn_layer` (``reverse = d == 1``) with the weights ``weights[l * D + d]``; layer
    ``l + 1`` reads layer ``l``'s outputs, both directions' concatenated on the feature axis,
    times ``dropout_masks[l]``.

    One op, so that the kernels may overlap the layers on threads (see
    :class:`gradtape.devices.kernels.rnn.Stack`: a unidirectional stack runs as a wavefront,
    layer ``l + 1`` one chunk of steps behind layer ``l``, forward and backward; a
    bidirectional layer runs its two directions side by side). The values are the per-layer
    ops' up to float rounding. A float32 LSTM or GRU from
    :data:`gradtape.devices.kernels.rnn.ONEDNN_MIN_MACS` (``ONEDNN_MIN_MACS_GRU``) multiply-adds
    runs on oneDNN's ``vanilla_lstm``/``lbr_gru`` primitive (forward, and the first rule from its
    workspace; an inference primitive when nothing is recorded) when oneDNN is available in the
    process.

    Args:
        mode: ``"LSTM"``, ``"GRU"``, ``"RNN_TANH"`` or ``"RNN_RELU"``.
        input: ``(T, B, I)``, float32 or float64, ``T >= 1``.
        h0, c0: ``(L D, B, H)`` initial states, or ``None`` for zeros (``c0`` for the LSTM).
        weights: ``L D`` sequences ``(weight_ih, weight_hh, bias_ih, bias_hh)`` (biases may
            be ``None``), with ``weight_ih`` ``(G H, I)`` for layer 0 and ``(G H, D H)`` above,
            ``G`` the gates (4, 3 or 1).
        num_directions: ``D``, 1 or 2.
        dropout_masks: ``L - 1`` arrays ``(T, B, D H)`` of the input's dtype (dropout's scaled
            keep mask, ``keep / (1 - p)``) or ``None`` entries; ``None`` for none.
        lengths: ``B`` ints in ``[1, T]``, each batch column's number of valid steps (PyTorch's
            packed sequences, :func:`gradtape.nn.utils.rnn.pack_padded_sequence`), or ``None``
            (every step valid). A column's steps from its length on leave its states as they
            were and output zeros, so ``h_n``/``c_n`` are those after its last valid step and
            the reverse direction starts there. This runs as recorded per-step ops (a Python
            loop over time; the fused kernels take no lengths).

    Returns:
        ``(output (T, B, D H), h_n (L D, B, H), c_n (L D, B, H) or None)``: the last layer's
        hidden states, and every layer's and direction's final states (``c_n`` for the LSTM).

    Gradients: those of the per-layer ops, chained through the layers (a lower layer's output
    gradient is the sum over directions of the upper layer's input gradient, times the mask).
    The second rule recomputes the forward with the per-layer ops and chains their second
    rules' adjoint (a Python loop over time: for gradients of gradients on small cases).

    Raises:
        ValueError: an unknown ``mode``, ``num_directions`` not 1 or 2, a number of weight
            tuples that is not a multiple of it, masks of the wrong count or shape, or
            ``lengths`` not ``B`` ints in ``[1, T]``.
        ShapeError, DTypeError: as the per-layer ops (the message names ``lstm_layer``,
            ``gru_layer`` or ``rnn_layer``, the argument and every shape).
    """
    if mode not in _MODES:
        raise ValueError(f"recurrent_stack: mode must be one of {sorted(_MODES)}, got {mode!r}")
    kind, op = _MODES[mode]
    nd = num_directions
    if nd not in (1, 2) or not weights or len(weights) % nd:
        raise ValueError(
            f"recurrent_stack: num_directions must be 1 or 2 and divide the {len(weights)} weight tuples, got {nd!r}"
        )
    nk = len(weights)
    nl = nk // nd
    xd = float_data(op, input, "input")
    dt = xd.dtype
    masks = list(dropout_masks) if dropout_masks is not None else [None] * (nl - 1)
    given: dict[Any, Tensor[Any, Any]] = {"input": input}
    datas: dict[Any, Array] = {"input": xd}
    for nm, t in (("h0", h0), ("c0", c0)):
        if t is not None:
            given[nm] = t
            datas[nm] = float_data(op, t, nm)
    width = xd.shape[2] if xd.ndim == 3 else 0
    for k, ws in enumerate(weights):
        if len(ws) != 4:
            raise ValueError(f"recurrent_stack: weights[{k}] must be (weight_ih, weight_hh, bias_ih, bias_hh)")
        for j, w in enumerate(ws):
            if w is not None:
                given[(k, j)] = w
                datas[(k, j)] = float_data(op, w, _ARGS[3 + j])
    h0s: list[Array] = []
    c0s: list[Array] = []
    for k in range(nk):
        layer_x = xd if k < nd else np.broadcast_to(np.empty(1, dt), (*xd.shape[:2], width))
        one = {"input": layer_x}
        for nm in ("h0", "c0"):
            if nm in datas:
                d = datas[nm]
                one[nm] = d[k] if d.ndim == 3 and k < d.shape[0] else d
        for j in range(4):
            if (k, j) in datas:
                one[_ARGS[3 + j]] = datas[(k, j)]
        dt = _check(op, one)
        if k == nd - 1:
            width = nd * datas[(k, 1)].shape[1]
    nt, nb = xd.shape[:2]
    nh = datas[(0, 1)].shape[1]
    for nm in ("h0", "c0"):
        if nm in datas and datas[nm].shape != (nk, nb, nh):
            raise ShapeError(
                f"{op}: {nm} must have shape {(nk, nb, nh)} (layers * directions, batch, hidden), got {datas[nm].shape}"
            )
    if len(masks) != nl - 1 or any(m is not None and m.shape != (nt, nb, nd * nh) for m in masks):
        shapes = [None if m is None else m.shape for m in masks]
        raise ValueError(
            f"recurrent_stack: dropout_masks must be {nl - 1} arrays of shape {(nt, nb, nd * nh)} or None, got {shapes}"
        )
    if lengths is not None:
        lengths = np.asarray(lengths)
        fits = lengths.shape == (nb,) and lengths.dtype.kind in "iu"
        if not fits or (nb and not 1 <= lengths.min() <= lengths.max() <= nt):
            got = lengths.tolist()
            raise ValueError(
                f"recurrent_stack: lengths must be {nb} ints in [1, {nt}] (one per batch column), got {got}"
            )
    if lengths is not None or _on_gpu(xd):  # packed sequences, or the Cuda device: recorded gradtape ops
        check_same_device(op, *given.values())
        return _stack_ops(op, kind, input, h0, c0, weights, nd, nl, masks, lengths)
    a = {key: np.ascontiguousarray(d, dt) for key, d in datas.items()}
    zero = np.zeros((nb, nh), dt)
    for k in range(nk):
        h0s.append(a["h0"][k] if "h0" in a else zero)
        c0s.append(a["c0"][k] if "c0" in a else zero)
    ws_a = [(a[(k, 0)], a[(k, 1)], a.get((k, 2)), a.get((k, 3))) for k in range(nk)]
    m_a = [None if m is None else np.ascontiguousarray(m, dt) for m in masks]
    tape = op_tape(*given.values())
    c0s_ = c0s if kind == "lstm" else None
    make = functools.partial(_make_stack, kind, a["input"], h0s, c0s_, ws_a, nd, m_a, tape is not NONE_TAPE)
    stack_ = make()
    box = [stack_]  # the stack the backward runs: a replay of gradtape.capture makes a new one
    output, hs, cs = stack_.forward()
    arrays = [output, np.stack(hs)] + ([np.stack(cs)] if cs else [])
    outs: list[Tensor[Any, Any]] = [input._from_op(arr, tape) for arr in arrays]
    result = (outs[0], outs[1], outs[2] if len(outs) > 2 else None)
    if _tp._recorder is not None:  # the dropout masks must be ones a replay draws again (nn.LSTM's)
        _tp._recorder.constant(zero)
        copies = tuple((datas[key], a[key]) for key in a if a[key] is not datas[key])
        writes = (*arrays[1:], *(c for _, c in copies))
        args = (tuple(arrays[1:]), copies, make, box, tuple(m for m in m_a if m is not None))
        replayable(op, output, _stack_into, args, tuple(given.values()), tape, True, writes, rebuilds=(box,))
    if tape is NONE_TAPE:
        return result
    ids = {key: (t.id, t._leaf) for key, t in given.items()}
    names = {0: "weight_ih", 1: "weight_hh", 2: "bias_ih", 3: "bias_hh"}

    def stack_backward(grads: Gradients, gs: list[Array | None]) -> None:
        g = [None if v is None else np.ascontiguousarray(v, dt) for v in gs]
        dx, res = box[0].backward(g[0], g[1], g[2] if len(g) > 2 else None, grads.wants(*ids["input"]))
        for key, (i, leaf) in ids.items():
            if not grads.wants(i, leaf):
                continue
            if key == "input":
                gr = dx
            elif key in ("h0", "c0"):
                gr = np.stack([r[key] for r in res])
            else:
                gr = res[key[0]][names[key[1]]]
            if gr is not None:
                grads._accum(i, gr)

    def stack_diff(gs: list[Any], rebuild: Any) -> list[tuple[int, Any]]:
        ts = {key: rebuild(ids[key][0], datas[key]) for key in given}
        return _stack_vjp_ops(op, kind, gs, ts, nd, nl, m_a, zero, ids)

    record(tape, list(outs), stack_backward, stack_diff)
    return result


def _make_stack(
    kind: str,
    x: Array,
    h0s: list[Array],
    c0s: list[Array] | None,
    ws: list[tuple[Array, Array, Array | None, Array | None]],
    nd: int,
    masks: list[Array | None],
    keep: bool,
) -> _kr.Stack | _kr.OneDNNStack:
    """The kernels' stack for :func:`recurrent_stack`: oneDNN's where it is available and the
    product large enough (``keep``: the backward will run), else gradtape's."""
    made = _kr.onednn_stack(kind, x, h0s, c0s, ws, nd, masks, keep)
    return made if made is not None else _kr.Stack(kind, x, h0s, c0s, ws, nd, masks)


def _stack_into(
    output: Array,
    states: tuple[Array, ...],
    copies: tuple[tuple[Array, Array], ...],
    make: Callable[[], _kr.Stack | _kr.OneDNNStack],
    box: list[Any],
    masks: tuple[Array, ...],
) -> None:
    """:func:`recurrent_stack`'s forward again (for :func:`gradtape.capture`'s replays): the
    contiguous copies of strided inputs refreshed, a new stack made (it copies the transposed
    weights as they are now) and run, its output and last states copied into the recorded
    arrays, and the stack left in ``box`` for the recorded backward. ``masks``: the dropout
    masks the stack reads (drawn again before this kernel runs), listed for the recorder's
    check."""
    for src, dst in copies:
        np.copyto(dst, src)
    stack_ = make()
    out, hs, cs = stack_.forward()
    np.copyto(output, out)
    np.copyto(states[0], np.stack(hs))
    if cs:
        np.copyto(states[1], np.stack(cs))
    box[0] = stack_


def _stack_ops(
    op: str,
    kind: str,
    input: Tensor[Any, Any],
    h0: Tensor[Any, Any] | None,
    c0: Tensor[Any, Any] | None,
    weights: Sequence[Sequence[Tensor[Any, Any] | None]],
    nd: int,
    nl: int,
    masks: Sequence[Array | None],
    lengths: Array | None = None,
) -> tuple[Tensor[Any, Any], Tensor[Any, Any], Tensor[Any, Any] | None]:
    """:func:`recurrent_stack` as recorded gradtape ops: on the ``Cuda`` device, and for
    packed sequences (``lengths``, each batch column's valid steps) on either. Each layer and
    direction is :func:`_forward_ops` (the per-layer equations, whose backward the tape then
    runs: a Python loop over time, correct but slower than the fused recurrences),
    directions concatenated on the feature axis, dropout's masks applied between layers. Same
    outputs as the CPU path."""
    from gradtape.ops.shape import concat, stack

    xd = input.data
    nb = xd.shape[1]
    lstm = kind == "lstm"
    relu = kind == "rnn_relu"
    valid = None
    if lengths is not None:
        steps = np.arange(xd.shape[0])[:, None, None] < np.asarray(lengths)[None, :, None]  # (T, B, 1)
        valid = [input._like(_arrays.into_memory_of(v, xd)) for v in steps]
    layer_in = input
    hs: list[Tensor[Any, Any]] = []
    cs: list[Tensor[Any, Any]] = []
    for layer in range(nl):
        outs = []
        for d in range(nd):
            k = layer * nd + d
            w_ih, w_hh, b_ih, b_hh = weights[k]
            assert w_ih is not None and w_hh is not None
            nh = w_hh.shape[1]
            zero = input._like(_arrays.zeros((nb, nh), xd.dtype, xd))
            ts: dict[str, Any] = {
                "input": layer_in,
                "h0": h0[k] if h0 is not None else zero,
                "weight_ih": w_ih,
                "weight_hh": w_hh,
            }
            if lstm:
                ts["c0"] = c0[k] if c0 is not None else zero
            if b_ih is not None:
                ts["bias_ih"] = b_ih
            if b_hh is not None:
                ts["bias_hh"] = b_hh
            order, outs_t, last, _, _ = _forward_ops(op, ts, d == 1, relu, valid)
            outs.append(stack([outs_t[t] for t in range(len(order))], axis=0))
            hs.append(last["h"])
            if lstm:
                cs.append(last["c"])
        layer_in = outs[0] if nd == 1 else concat(outs, axis=2)
        mask = masks[layer] if layer < nl - 1 else None
        if mask is not None:
            layer_in = layer_in * input._like(_arrays.into_memory_of(mask.astype(xd.dtype, copy=False), xd))
    return layer_in, stack(hs, axis=0), stack(cs, axis=0) if lstm else None


def _stack_vjp_ops(
    op: str,
    kind: str,
    gs: list[Any],
    ts: dict[Any, Any],
    nd: int,
    nl: int,
    masks: list[Array | None],
    zero: Array,
    ids: dict[Any, tuple[int, bool]],
) -> list[tuple[int, Any]]:
    """:func:`recurrent_stack`'s second rule: the forward recomputed with the per-layer ops
    (each layer's input kept), then each layer's :func:`_vjp_ops` from the top down."""
    from gradtape.ops.shape import concat, stack

    relu = kind == "rnn_relu"
    x = ts["input"]
    z = x._like(zero)
    nh = zero.shape[1]

    def layer_args(k: int) -> dict[str, Any]:
        one: dict[str, Any] = {"h0": ts["h0"][k] if "h0" in ts else z}
        if kind == "lstm":
            one["c0"] = ts["c0"][k] if "c0" in ts else z
        for j, nm in enumerate(("weight_ih", "weight_hh", "bias_ih", "bias_hh")):
            if (k, j) in ts:
                one[nm] = ts[(k, j)]
        return one

    inputs = []
    layer_in = x
    for layer in range(nl):
        inputs.append(layer_in)
        outs = []
        for d in range(nd):
            one = layer_args(layer * nd + d)
            bias = (one.get("bias_ih"), one.get("bias_hh"))
            w = (one["weight_ih"], one["weight_hh"])
            if kind == "lstm":
                outs.append(lstm_layer(layer_in, one["h0"], one["c0"], *w, *bias, reverse=d == 1)[0])
            elif kind == "gru":
                outs.append(gru_layer(layer_in, one["h0"], *w, *bias, reverse=d == 1)[0])
            else:
                outs.append(rnn_layer(layer_in, one["h0"], *w, *bias, "relu" if relu else "tanh", d == 1)[0])
        layer_in = concat(outs, axis=2) if nd == 2 else outs[0]
        m = masks[layer] if layer < nl - 1 else None
        if m is not None:
            layer_in = layer_in * layer_in._like(m)
    per_k: dict[int, dict[str, Any]] = {}
    g_layer = gs[0]
    for layer in range(nl - 1, -1, -1):
        total: Any = None
        for d in range(nd):
            k = layer * nd + d
            g_d = g_layer if nd == 1 else g_layer[:, :, d * nh : (d + 1) * nh]
            one = layer_args(k)
            one["input"] = inputs[layer]
            g_states = [g_d, gs[1][k]] + ([gs[2][k]] if kind == "lstm" else [])
            per_k[k] = _vjp_ops(op, g_states, one, d == 1, relu)
            total = per_k[k]["input"] if total is None else total + per_k[k]["input"]
        if layer > 0:
            m = masks[layer - 1]
            g_layer = total if m is None else total * total._like(m)
        else:
            g_layer = total
    out: list[tuple[int, Any]] = []
    for key, (i, _) in ids.items():
        if key == "input":
            out.append((i, g_layer))
        elif key in ("h0", "c0"):
            out.append((i, stack([per_k[k][key] for k in range(nl * nd)], axis=0)))
        else:
            nm = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")[key[1]]
            out.append((i, per_k[key[0]][nm]))
    return out


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


_KINDS = {"lstm_layer": "lstm", "gru_layer": "gru", "rnn_layer": "rnn_tanh"}


def _kind(op: str, relu: bool) -> str:
    return "rnn_relu" if relu else _KINDS[op]


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
    if _on_gpu(x.data):  # the Cuda device: the recurrence in recorded gradtape ops
        check_same_device(op, *given.values())
        from gradtape.ops.shape import stack

        order, outs_t, last, _, _ = _forward_ops(op, given, reverse, relu)
        out = stack([outs_t[t] for t in range(len(order))], axis=0)
        return [out, last["h"]] if c0 is None else [out, last["h"], last["c"]]
    a = {nm: np.ascontiguousarray(d, dt) for nm, d in datas.items()}
    run = _kr.Recurrence(
        _kind(op, relu),
        a["input"],
        a["h0"],
        a.get("c0"),
        a["weight_ih"],
        a["weight_hh"],
        a.get("bias_ih"),
        a.get("bias_hh"),
        reverse,
    )
    run.forward()
    h_n, c_n = run.last_states()
    arrays = [run.out, h_n] if c_n is None else [run.out, h_n, c_n]
    tape = op_tape(*given.values())
    outs: list[Tensor[Any, Any]] = [x._from_op(arr, tape) for arr in arrays]
    if tape is NONE_TAPE:
        return outs
    ids = {nm: (t.id, t._leaf) for nm, t in given.items()}

    def rnn_backward(grads: Gradients, gs: list[Array | None]) -> None:
        g = [None if v is None else np.ascontiguousarray(v, dt) for v in gs]
        res = run.backward(g[0], g[1], g[2] if len(g) > 2 else None, grads.wants(*ids["input"]))
        for nm, (i, leaf) in ids.items():
            gr = res.get(nm)
            if gr is not None and grads.wants(i, leaf):
                grads._accum(i, gr)

    def rnn_diff(gs: list[Any], rebuild: Any) -> list[tuple[int, Any]]:
        ts = {nm: rebuild(ids[nm][0], datas[nm]) for nm in given}
        grads_ = _vjp_ops(op, gs, ts, reverse, relu)
        return [(ids[nm][0], grads_[nm]) for nm in given]

    record(tape, outs, rnn_backward, rnn_diff)
    return outs


def _forward_ops(
    op: str, ts: dict[str, Any], reverse: bool, relu: bool, valid: list[Any] | None = None
) -> tuple[list[int], dict[int, Any], dict[str, Any], dict[int, Any], dict[int, tuple[Any, ...]]]:
    """The op's forward recurrence in gradtape ops (recorded, so differentiable to any order;
    a Python loop over time): ``(order, outs, last, prev, keep)``, the steps in the order run,
    each step's hidden state ``outs[t]``, the final states ``last["h"]`` (and ``last["c"]``
    for the LSTM), each step's previous hidden state and what the adjoint needs. The second
    rules build on it, and so does the ``Cuda`` device's forward (whose backward is then the
    recorded ops').

    ``valid`` (packed sequences, :func:`recurrent_stack`'s ``lengths``): per step a bool
    tensor ``(B, 1)``, false for the batch columns whose sequence has ended; there a step
    leaves the states as they were and outputs zeros, so each column's final states are those
    of its last valid step, in either direction (PyTorch's packed recurrence)."""
    from gradtape.ops.compare import where

    x, h, w_ih, w_hh = ts["input"], ts["h0"], ts["weight_ih"], ts["weight_hh"]
    b_ih, b_hh = ts.get("bias_ih"), ts.get("bias_hh")
    nt = x.shape[0]
    nh = w_hh.shape[1]
    order = list(range(nt - 1, -1, -1) if reverse else range(nt))
    xp = x @ w_ih.transpose(0, 1)  # (T, B, G)
    outs: dict[int, Any] = {}
    if b_ih is not None:
        xp = xp + b_ih
    w_t = w_hh.transpose(0, 1)
    c = ts.get("c0")
    prev: dict[int, Any] = {}
    keep: dict[int, tuple[Any, ...]] = {}
    for t in order:  # the forward, keeping what the adjoint needs
        prev[t] = h
        hp = h @ w_t
        c_prev = c
        if op == "gru_layer":
            hp = hp + b_hh if b_hh is not None else hp
            r = (xp[t][:, :nh] + hp[:, :nh]).sigmoid()
            z = (xp[t][:, nh : 2 * nh] + hp[:, nh : 2 * nh]).sigmoid()
            hn = hp[:, 2 * nh :]
            n = (xp[t][:, 2 * nh :] + r * hn).tanh()
            keep[t] = (r, z, n, hn)
            h_new = (1.0 - z) * n + z * h
        else:
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
                h_new = o * tc
            else:
                h_new = pre.relu() if relu else pre.tanh()
                keep[t] = (h_new,)
        if valid is None:
            h = outs[t] = h_new
        else:  # an ended sequence's column keeps its states and outputs zeros
            outs[t] = where(valid[t], h_new, 0.0)
            h = where(valid[t], h_new, h)
            if c is not None and c_prev is not None and c is not c_prev:
                c = where(valid[t], c, c_prev)
    last = {"h": h, "c": c}
    return order, outs, last, prev, keep


def _vjp_ops(op: str, gs: list[Any], ts: dict[str, Any], reverse: bool, relu: bool) -> dict[str, Any]:
    """The op's gradients for every given input (``ts``: the rebuilt input tensors by argument
    name), from the outputs' gradients ``gs`` (tensors), in gradtape ops, so that they are
    recorded and can be differentiated again: the forward recurrence recomputed, then the
    adjoint recurrence, each a Python loop over time."""
    from gradtape.ops.compare import where
    from gradtape.ops.shape import concat, stack

    x, w_ih, w_hh = ts["input"], ts["weight_ih"], ts["weight_hh"]
    nt, nb, ni = x.shape
    ng, nh = w_hh.shape
    order, _, _, prev, keep = _forward_ops(op, ts, reverse, relu)
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
