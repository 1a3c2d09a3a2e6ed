"""``selective_scan``: Mamba's selective state-space recurrence (S6) with fused kernels.

Gu and Dao (2023), "Mamba: Linear-Time Sequence Modeling with Selective State Spaces", and the
reference implementation (state-spaces/mamba, ``selective_scan_ref``), with ``delta_softplus``
left to the caller (pass ``dt`` already positive) and real ``A``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import typed_as
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import scan as _ks
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._signatures import scan as _sig
from gradtape.ops._util import check_same_device, float_data, replayable
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients

__all__ = ["selective_scan"]

Array = np.ndarray[Any, Any]

# type variables of the overload table (ops/_signatures/scan.py)
Bt = TypeVar("Bt")
"""The batch dim."""
L = TypeVar("L")
"""The length (time) dim."""
Ch = TypeVar("Ch")
"""The channel dim."""
N = TypeVar("N")
"""The state dim."""

_OP = "selective_scan"


@typed_as(_sig.selective_scan)
def selective_scan(x: Any, dt: Any, A: Any, B: Any, C: Any, D: Any = None, z: Any = None) -> Any:
    """Mamba's selective scan (S6; Gu and Dao 2023). For batch element ``b``, channel ``d``::

        h_t = exp(dt_t * A[d, :]) * h_{t-1} + dt_t * x_t * B[b, t, :]     (h_{-1} = 0)
        y_t = C[b, t, :] . h_t + D[d] * x_t                                (D optional)
        out_t = y_t * silu(z_t)                                            (z optional)

    with ``x_t, dt_t, z_t`` the entries ``[b, t, d]``. Shapes: ``x, dt, z (batch, length,
    channels)``, ``A (channels, state)``, ``B, C (batch, length, state)``, ``D (channels,)``;
    returns ``(batch, length, channels)`` of ``x``'s dtype (float32 or float64, all the same).
    ``dt`` is used as given (Mamba passes ``softplus(dt_proj(...))``: positive). The output owns
    a tape if any input does.

    Gradients for every input (only those backward asks for are accumulated), with ``g`` the
    output's gradient, ``gy = g * silu(z)``, ``lam_t = dL/dh_t = gy_t C_t + exp(dt_{t+1} A) lam_{t+1}``
    and ``e_t = lam_t * h_{t-1} * exp(dt_t A)``::

        grad_x_t  = dt_t sum(lam_t B_t) + D gy_t        grad_dt_t = sum(e_t A) + x_t sum(lam_t B_t)
        grad_A    = sum_{b,t} e_t dt_t                  grad_B_t  = sum_d lam_t dt_t x_t
        grad_C_t  = sum_d gy_t h_t                      grad_D    = sum_{b,t} gy_t x_t
        grad_z_t  = g_t y_t sigmoid(z_t) (1 + z_t (1 - sigmoid(z_t)))

    Kernels (:mod:`gradtape.devices.kernels.scan`): one fused numba pass for the forward and one
    for the backward, parallel over (batch element, group of 16 channels) with ``prange``, time
    running inside the kernel. Stored for the backward: the pre-gate output ``y`` and
    ``sigmoid(z)`` (``(batch, length, channels)`` each) and the hidden state at every
    64th step, ``(batch, ceil(length / 64), channels, state)``. Recomputed in the backward: the
    hidden states and decays ``exp(dt * A)`` inside each 64-step chunk, from the chunk's stored
    state (a ``64 * 16 * state`` buffer per work item). Nothing of size ``(batch, length,
    channels, state)`` is kept.

    Second rule (higher-order derivatives): the same adjoint recurrence written in gradtape
    ops, a Python loop over time (about 30 recorded ops per step): far slower than the kernels,
    meant for small cases (gradients of gradients, Hessian checks).

    Stability: the decay ``exp(dt * A)`` must stay below 1, i.e. ``A < 0`` (Mamba stores
    ``A = -exp(A_log)``). A positive ``A`` makes ``h`` grow like ``exp(dt * A * t)``: the output
    overflows to ``inf``/``nan`` on long sequences. Nothing checks this (it would cost a pass);
    under :func:`gradtape.autograd.detect_anomaly` the first op that reads the non-finite output
    raises ``NumericalInstabilityError`` naming ``selective_scan`` as the op that produced it.

    Raises:
        ShapeError: an input of the wrong rank; ``dt``/``z`` not of ``x``'s shape; ``A`` not
            ``(channels, state)``; ``B``/``C`` not ``(batch, length, state)``; ``D`` not
            ``(channels,)``; length 0 (an empty sequence has no recurrence to run). The message
            names the op and the shapes. Length 1 works (``h_0 = dt_0 x_0 B_0``).
        DTypeError: an input is not float32/float64 (ints, bools, float16), or the dtypes differ.
    """
    names = ("x", "dt", "A", "B", "C", "D", "z")
    given = [(nm, t) for nm, t in zip(names, (x, dt, A, B, C, D, z), strict=True) if t is not None]
    datas = {nm: float_data(_OP, t, nm) for nm, t in given}
    dtypes = {d.dtype.itemsize for d in datas.values()}
    if any(d.dtype.itemsize not in (4, 8) for d in datas.values()) or len(dtypes) != 1:
        desc = ", ".join(f"{nm} {d.dtype} {d.shape}" for nm, d in datas.items())
        raise DTypeError(f"{_OP}: all inputs must be float32, or all float64; got {desc}")
    dtype = np.dtype(f"f{dtypes.pop()}")  # native byte order
    _check_shapes({nm: d.shape for nm, d in datas.items()})
    if _on_gpu(datas["x"]):  # the Cuda device: the recurrence in recorded gradtape ops (slow, correct)
        from gradtape.ops.shape import stack

        check_same_device(_OP, *(t for _, t in given))
        y_t = stack(_scan_forward_ops(x, dt, A, B, C, D)[2], axis=1)
        return y_t * z * z.sigmoid() if z is not None else y_t
    xd, dtd, ad, bd, cd = (np.ascontiguousarray(datas[nm], dtype) for nm in ("x", "dt", "A", "B", "C"))
    nch = xd.shape[2]
    dd = np.ascontiguousarray(datas["D"], dtype) if D is not None else np.zeros(nch, dtype)
    y, hs = _ks.scan_forward(xd, dtd, ad, bd, cd, dd)
    zd = sig = None
    if z is not None:
        zd = np.ascontiguousarray(datas["z"], dtype)
        sig = _sigmoid(zd)
        out_data = y * zd * sig
    else:
        out_data = y
    tensors = [t for _, t in given]
    tape = op_tape(*tensors)
    out = x._from_op(out_data, tape)
    if _tp._recorder is not None:
        srcs = tuple(datas[nm] if nm in datas else None for nm in names)
        copies = (xd, dtd, ad, bd, cd, dd, zd)
        if D is None:
            _tp._recorder.constant(dd)
        made = tuple(
            c for c, src in zip(copies, srcs, strict=True) if c is not None and c is not src and src is not None
        )
        writes = (y, hs, *made) if sig is None else (y, hs, sig, *made)
        replayable(_OP, out_data, _scan_into, (srcs, copies, y, hs, sig), tuple(tensors), tape, True, writes)
    if tape is NONE_TAPE:
        return out
    ids = [(t.id, t._leaf) for t in (x, dt, A, B, C)]
    did, d_leaf = (D.id, D._leaf) if D is not None else (-1, True)
    zid, z_leaf = (z.id, z._leaf) if z is not None else (-1, True)

    def scan_backward(grads: Gradients, g: Array) -> None:
        g = _as_array(g, dtype)
        if zd is not None and sig is not None:
            gy = g * zd * sig
            if grads.wants(zid, z_leaf):
                grads._accum(zid, g * y * sig * (1 + zd * (1 - sig)))
        else:
            gy = g
        want = [grads.wants(i, leaf) for i, leaf in ids]
        want_d = did >= 0 and grads.wants(did, d_leaf)
        if not (any(want) or want_d):
            return
        gx, gdt, ga, gb, gc, gdd = _ks.scan_backward(gy, hs, xd, dtd, ad, bd, cd, dd)
        for (i, _), w, gr in zip(ids, want, (gx, gdt, ga, gb, gc), strict=True):
            if w:
                grads._accum(i, gr)
        if want_d:
            grads._accum(did, gdd)

    def scan_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
        ts = [rebuild(i, datas[nm]) for (i, _), nm in zip(ids, ("x", "dt", "A", "B", "C"), strict=True)]
        dt_ = rebuild(did, datas["D"]) if D is not None else None
        zt = rebuild(zid, datas["z"]) if z is not None else None
        grads_ = _scan_vjp_ops(g, ts[0], ts[1], ts[2], ts[3], ts[4], dt_, zt)
        res = [(i, gr) for (i, _), gr in zip(ids, grads_[:5], strict=True)]
        if D is not None:
            res.append((did, grads_[5]))
        if z is not None:
            res.append((zid, grads_[6]))
        return res

    record(tape, out, scan_backward, scan_diff)
    return out


def _scan_into(
    out: Array,
    srcs: tuple[Array | None, ...],
    copies: tuple[Array | None, ...],
    y: Array,
    hs: Array,
    sig: Array | None,
) -> None:
    """:func:`selective_scan`'s forward again (for :func:`gradtape.capture`'s replays): the
    contiguous copies of strided inputs refreshed from their sources, the scan into ``y`` and
    ``hs``, and the gate ``out = y * z * sigmoid(z)`` (``sig`` refreshed; without ``z``,
    ``out`` is ``y``)."""
    for src, c in zip(srcs, copies, strict=True):
        if src is not None and c is not None and c is not src:
            np.copyto(c, src)
    xd, dtd, ad, bd, cd, dd, zd = copies
    assert xd is not None and dtd is not None and ad is not None and bd is not None and cd is not None
    assert dd is not None
    _ks.scan_forward(xd, dtd, ad, bd, cd, dd, out=(y, hs))
    if zd is not None and sig is not None:
        np.copyto(sig, _sigmoid(zd))
        np.multiply(y * zd, sig, out=out)


def _sigmoid(z: Array) -> Array:
    with np.errstate(over="ignore"):
        s: Array = np.exp(-z)
    s += 1
    np.reciprocal(s, out=s)
    return s


def _check_shapes(shapes: dict[str, tuple[int, ...]]) -> None:
    """Ranks and matching dims, before any kernel runs."""
    desc = ", ".join(f"{nm} {s}" for nm, s in shapes.items())
    ranks = {"x": 3, "dt": 3, "A": 2, "B": 3, "C": 3, "D": 1, "z": 3}
    for nm, s in shapes.items():
        if len(s) != ranks[nm]:
            raise ShapeError(
                f"{_OP}: {nm} must have {ranks[nm]} dims, got shape {s} (expects x, dt, z (batch, length, channels), "
                f"A (channels, state), B, C (batch, length, state), D (channels,); got {desc})"
            )
    nb, length, nch = shapes["x"]
    nst = shapes["A"][1]
    want = {
        "dt": (nb, length, nch),
        "z": (nb, length, nch),
        "A": (nch, nst),
        "B": (nb, length, nst),
        "C": (nb, length, nst),
        "D": (nch,),
    }
    for nm, s in shapes.items():
        if nm != "x" and s != want[nm]:
            raise ShapeError(
                f"{_OP}: {nm} must have shape {want[nm]} (from x {shapes['x']} and A {shapes['A']}), got {s}; "
                f"shapes: {desc}"
            )
    if length == 0:
        raise ShapeError(f"{_OP}: length 0 (x {shapes['x']}): the scan needs at least one step")


def _scan_forward_ops(
    x: Any, dt: Any, A: Any, B: Any, C: Any, D: Any, outputs: bool = True
) -> tuple[list[Any], list[Any], list[Any]]:
    """The scan's forward recurrence in gradtape ops (recorded; a Python loop over time):
    ``(hs, decays, ys)``, each step's state ``h_t`` ``(batch, channels, state)``, decay
    ``exp(dt_t A)`` and (with ``outputs``) pre-gate output ``y_t = C_t . h_t + D x_t``
    ``(batch, channels)``. The second rule builds on it, and so does the ``Cuda`` device's
    forward (whose backward the tape then runs)."""
    nb, length, nch = x.shape
    nst = A.shape[1]
    h = x._like(_arrays.zeros((nb, nch, nst), x.dtype, x.data))
    hs, decays, ys = [], [], []
    for t in range(length):
        dtt, xt = dt[:, t, :], x[:, t, :]
        a_t = (dtt.reshape((nb, nch, 1)) * A).exp()
        h = a_t * h + (dtt * xt).reshape((nb, nch, 1)) * B[:, t, :].reshape((nb, 1, nst))
        hs.append(h)
        decays.append(a_t)
        if outputs:
            yt = (h * C[:, t, :].reshape((nb, 1, nst))).sum(axis=-1)
            ys.append(yt + D * xt if D is not None else yt)
    return hs, decays, ys


def _scan_vjp_ops(
    g: Any, x: Any, dt: Any, A: Any, B: Any, C: Any, D: Any, z: Any
) -> tuple[Any, Any, Any, Any, Any, Any, Any]:
    """The scan's gradients ``(gx, gdt, gA, gB, gC, gD, gz)`` given the output's gradient ``g``,
    computed with gradtape ops (so they are recorded and can be differentiated again): the
    forward recurrence, then the adjoint recurrence, each a Python loop over time. ``gD``/``gz``
    are ``None`` without ``D``/``z``."""
    from gradtape.ops.shape import stack

    nb, length, nch = x.shape
    nst = A.shape[1]
    zeros = g._like(_arrays.zeros((nb, nch, nst), g.dtype, g.data))
    hs, decays, ys = _scan_forward_ops(x, dt, A, B, C, D, outputs=z is not None)
    gz = None
    if z is not None:
        sig = z.sigmoid()
        y = stack(ys, axis=1)
        gz = g * y * sig * (1.0 + z * (1.0 - sig))
        gy = g * z * sig
    else:
        gy = g
    gxs, gdts, gbs, gcs = [], [], [], []
    carry = zeros
    ga = None
    for t in range(length - 1, -1, -1):
        gv, dtt, xt = gy[:, t, :], dt[:, t, :], x[:, t, :]
        bt = B[:, t, :].reshape((nb, 1, nst))
        lam = gv.reshape((nb, nch, 1)) * C[:, t, :].reshape((nb, 1, nst)) + carry
        gcs.append((gv.reshape((nb, nch, 1)) * hs[t]).sum(axis=1))
        lb = (lam * bt).sum(axis=-1)
        gx = lb * dtt
        gxs.append(gx + gv * D if D is not None else gx)
        gbs.append((lam * (dtt * xt).reshape((nb, nch, 1))).sum(axis=1))
        if t > 0:
            e = lam * hs[t - 1] * decays[t]
            gdts.append((e * A).sum(axis=-1) + lb * xt)
            ga_t = (e * dtt.reshape((nb, nch, 1))).sum(axis=0)
            ga = ga_t if ga is None else ga + ga_t
        else:  # h_{-1} = 0: no decay term
            gdts.append(lb * xt)
        carry = decays[t] * lam
    if ga is None:
        ga = A * 0.0
    gd = (gy * x).sum(axis=(0, 1)) if D is not None else None
    gxs.reverse()
    gdts.reverse()
    gbs.reverse()
    gcs.reverse()
    return stack(gxs, axis=1), stack(gdts, axis=1), ga, stack(gbs, axis=1), stack(gcs, axis=1), gd, gz
