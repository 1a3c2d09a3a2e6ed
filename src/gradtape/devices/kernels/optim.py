"""Fused optimizer-update kernels: one pass over a parameter per step (:mod:`gradtape.optim`).

Each wrapper updates the parameter ``p`` and its state buffers in place from the gradient
``g`` with exactly PyTorch's single-tensor (``foreach=False``) update rule, reading every
element once. Serial below :data:`~gradtape.devices.kernels.elementwise.PARALLEL_THRESHOLD`
elements, ``numba.prange`` above it. Hyper-parameters are converted to the parameter's
dtype inside the kernels (float32 arithmetic for float32 parameters); scalars that depend
on the step count (Adam's bias corrections) are computed in Python, as PyTorch does.
Arrays numba cannot take as they are (a non-contiguous parameter or gradient) fall back to
the equivalent numpy expressions, which give the same result.

The only non-arithmetic operation is ``sqrt``, a single vectorizable instruction (no libm
call), so the kernels stay pure arithmetic as shared/KERNELS.md asks.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels._jit import serial_and_parallel
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD, _check_out, _fast_same, _flat
from gradtape.errors import DTypeError, ShapeError

__all__ = ["adam_step", "rmsprop_step", "sgd_step"]

Array = np.ndarray[Any, Any]


# ----- SGD (Sutskever et al. 2013 momentum / Nesterov, PyTorch's formulation) -------------


def _sgd(
    p: Array,
    g: Array,
    buf: Array,
    lr: float,
    wd: float,
    mom: float,
    damp: float,
    nesterov: bool,
    first: bool,
    use_buf: bool,
) -> None:
    t = p.dtype.type
    lr_, wd_, mom_, keep = t(lr), t(wd), t(mom), t(1) - t(damp)
    for i in numba.prange(p.shape[0]):
        d = g[i] + wd_ * p[i] if wd_ != 0 else g[i]  # no 0 * inf = nan without decay
        if use_buf:
            b = d if first else mom_ * buf[i] + keep * d
            buf[i] = b
            d = d + mom_ * b if nesterov else b
        p[i] -= lr_ * d


_sgd_serial, _sgd_parallel = serial_and_parallel(_sgd)


# ----- Adam / AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019) ---------------------------


def _adam(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    vmax: Array,
    step_size: float,
    b1: float,
    b2: float,
    eps: float,
    wd: float,
    decay: float,
    bc2_sqrt: float,
    amsgrad: bool,
) -> None:
    t = p.dtype.type
    one = t(1)
    a1, b2_, a2, eps_, wd_, decay_ = one - t(b1), t(b2), one - t(b2), t(eps), t(wd), t(decay)
    ss, bc = t(step_size), t(bc2_sqrt)
    for i in numba.prange(p.shape[0]):
        x = p[i] * decay_
        gi = g[i] + wd_ * x if wd_ != 0 else g[i]
        mi = m[i] + a1 * (gi - m[i])
        vi = b2_ * v[i] + a2 * gi * gi
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vi = max(vmax[i], vi)
            vmax[i] = vi
        p[i] = x - ss * (mi / (np.sqrt(vi) / bc + eps_))


_adam_serial, _adam_parallel = serial_and_parallel(_adam)


# ----- RMSprop (Hinton, Neural Networks for Machine Learning, lecture 6e) ----------------


def _rmsprop(
    p: Array,
    g: Array,
    sq: Array,
    gavg: Array,
    buf: Array,
    lr: float,
    alpha: float,
    eps: float,
    wd: float,
    mom: float,
    centered: bool,
    use_buf: bool,
) -> None:
    t = p.dtype.type
    al, a1, eps_, wd_, mom_, lr_ = t(alpha), t(1) - t(alpha), t(eps), t(wd), t(mom), t(lr)
    for i in numba.prange(p.shape[0]):
        gi = g[i] + wd_ * p[i] if wd_ != 0 else g[i]  # no 0 * inf = nan without decay
        s = al * sq[i] + a1 * gi * gi
        sq[i] = s
        if centered:
            ga = gavg[i] + a1 * (gi - gavg[i])
            gavg[i] = ga
            s = s - ga * ga
        q = gi / (np.sqrt(s) + eps_)
        if use_buf:
            q = mom_ * buf[i] + q
            buf[i] = q
        p[i] -= lr_ * q


_rmsprop_serial, _rmsprop_parallel = serial_and_parallel(_rmsprop)


# ----- validation ------------------------------------------------------------------------


def _check(op: str, p: Array, g: Array, states: dict[str, Array | None]) -> list[Array]:
    """Validate ``p`` (writable float32/float64), ``g`` and the state buffers; return the
    state buffers that are present. Every array must have ``p``'s shape and dtype."""
    _check_out(op, p)
    if not isinstance(g, np.ndarray):
        raise TypeError(f"{op}: gradient must be a numpy array, got {type(g).__name__}")
    if g.shape != p.shape:
        raise ShapeError(f"{op}: gradient shape {g.shape} != parameter shape {p.shape}")
    if g.dtype != p.dtype:
        raise DTypeError(f"{op}: gradient dtype {g.dtype} != parameter dtype {p.dtype}")
    present = []
    for name, s in states.items():
        if s is None:
            continue
        if not isinstance(s, np.ndarray) or s.shape != p.shape or s.dtype != p.dtype:
            desc = f"{s.shape} {s.dtype}" if isinstance(s, np.ndarray) else type(s).__name__
            raise ShapeError(f"{op}: state {name!r} is {desc}, expected {p.shape} {p.dtype}")
        if not s.flags.writeable:
            raise ValueError(f"{op}: state {name!r} (shape {s.shape}) is read-only")
        if s is p or np.may_share_memory(s, p) or np.may_share_memory(s, g):
            raise ValueError(f"{op}: state {name!r} shares memory with the parameter or gradient")
        present.append(s)
    return present


# ----- public wrappers -------------------------------------------------------------------


def sgd_step(
    p: Array,
    g: Array,
    buf: Array | None,
    *,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    first: bool = False,
) -> None:
    """One SGD step on ``p`` in place (PyTorch's ``torch.optim.SGD``, Sutskever et al. 2013).

    With ``d = g + weight_decay * p``:
    ``buf = d`` on the first step (``first``), else ``buf = momentum * buf + (1 - dampening) * d``;
    ``d = d + momentum * buf`` (Nesterov) or ``d = buf``; then ``p -= lr * d``.
    Without momentum (``buf`` is ``None``) simply ``p -= lr * d``.

    Args:
        p: float32/float64 parameter, updated in place.
        g: gradient of ``p``'s shape and dtype (may be read-only).
        buf: momentum buffer of ``p``'s shape and dtype, updated in place, or ``None``.

    Raises:
        ShapeError, DTypeError: an array's shape or dtype is not ``p``'s.
        ValueError: ``p`` or ``buf`` is read-only or ``buf`` overlaps ``p`` or ``g``.
    """
    _check("sgd_step", p, g, {"momentum_buffer": buf})
    _sgd_apply(
        p, g, buf, float(lr), float(momentum), float(dampening), float(weight_decay), bool(nesterov), bool(first)
    )


def _sgd_apply(
    p: Array,
    g: Array,
    buf: Array | None,
    lr: float,
    momentum: float,
    dampening: float,
    weight_decay: float,
    nesterov: bool,
    first: bool,
) -> None:
    """:func:`sgd_step` without the validation, for callers that own ``buf`` and checked
    ``p`` and ``g`` (:class:`gradtape.optim.SGD`). GPU arrays go to the ``Cuda`` device's
    kernel (:func:`gradtape.devices.kernels.cuda.sgd_step`, the same formula)."""
    if _on_gpu(p):
        from gradtape.devices.kernels import cuda as _cuda

        _cuda.sgd_step(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, first)
        return
    use_buf = buf is not None
    if _fast_same(p, g, *([buf] if buf is not None else [])):
        pf = _flat(p)
        kernel = _sgd_parallel if pf.shape[0] >= PARALLEL_THRESHOLD else _sgd_serial
        b = _flat(buf) if buf is not None else pf
        gf = _flat(g)
        kernel(pf, gf, b, lr, weight_decay, momentum, dampening, nesterov, first, use_buf)
        if _trace.active is not None:
            _trace.note(kernel, pf, gf, b, lr, weight_decay, momentum, dampening, nesterov, first, use_buf)
        return
    if _trace.active is not None:
        _trace.refuse(f"an SGD step of a strided parameter or gradient {p.shape} runs in numpy")
    t = p.dtype.type
    d = g + t(weight_decay) * p if weight_decay else g
    if buf is not None:
        if first:
            buf[...] = d
        else:
            buf *= t(momentum)
            buf += (t(1) - t(dampening)) * d
        d = d + t(momentum) * buf if nesterov else buf
    p -= t(lr) * d


def adam_step(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    vmax: Array | None,
    *,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    weight_decay: float = 0.0,
    decoupled: bool = False,
) -> None:
    """One Adam/AdamW step on ``p`` in place (PyTorch's ``torch.optim.Adam``/``AdamW``).

    Kingma & Ba 2015 (AMSGrad: Reddi et al. 2018; decoupled decay: Loshchilov & Hutter 2019).
    With ``t = step`` (counted from 1): ``p *= 1 - lr * weight_decay`` if ``decoupled``, else
    ``g = g + weight_decay * p``; ``m += (1 - beta1) * (g - m)``;
    ``v = beta2 * v + (1 - beta2) * g**2``; with AMSGrad ``vmax = max(vmax, v)`` replaces ``v``
    below; ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``.

    Args:
        p: float32/float64 parameter, updated in place.
        g: gradient of ``p``'s shape and dtype.
        m, v: first and second moment buffers (``p``'s shape and dtype), updated in place.
        vmax: AMSGrad's running maximum of ``v``, or ``None`` for plain Adam.
        step: the step number, 1 on the first step.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`sgd_step`; ValueError also for ``step < 1``.
    """
    _check("adam_step", p, g, {"exp_avg": m, "exp_avg_sq": v, "max_exp_avg_sq": vmax})
    if step < 1:
        raise ValueError(f"adam_step: step must be >= 1, got {step}")
    _adam_apply(
        p, g, m, v, vmax, float(lr), float(beta1), float(beta2), float(eps), step, float(weight_decay), decoupled
    )


def adam_scalars(
    lr: float, beta1: float, beta2: float, step: int, weight_decay: float, decoupled: bool
) -> tuple[float, float, float, float]:
    """The per-step scalars of the Adam/AdamW update at step ``t = step``, shared by the CPU
    and GPU kernels: ``(step_size, bc2_sqrt, decay, wd)`` with ``step_size = lr / (1 -
    beta1**t)``, ``bc2_sqrt = sqrt(1 - beta2**t)``, and the weight decay either decoupled
    (AdamW: ``decay = 1 - lr * weight_decay``, ``wd = 0``) or added to the gradient (Adam:
    ``decay = 1``, ``wd = weight_decay``)."""
    step_size = lr / (1.0 - beta1**step)
    bc2_sqrt = (1.0 - beta2**step) ** 0.5
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    wd = 0.0 if decoupled else weight_decay
    return step_size, bc2_sqrt, decay, wd


def _adam_apply(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    vmax: Array | None,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    weight_decay: float,
    decoupled: bool,
    dyn: tuple[Array, int] | None = None,
) -> None:
    """:func:`adam_step` without the validation, for callers that own the state buffers and
    checked ``p``, ``g`` and ``step`` (:class:`gradtape.optim.Adam`). GPU arrays go to the
    ``Cuda`` device's kernel (:func:`gradtape.devices.kernels.cuda.adam_step`, the same
    formula). ``dyn``: where a kernel trace is active, ``(array, i)`` whose elements ``i`` and
    ``i + 1`` a compiled replay fills with the step size and ``sqrt(1 - beta2**t)`` of each
    call (:class:`gradtape.devices.kernels._trace.Dyn`); without it the trace is refused."""
    step_size, bc2_sqrt, decay, wd = adam_scalars(lr, beta1, beta2, step, weight_decay, decoupled)
    if _on_gpu(p):
        from gradtape.devices.kernels import cuda as _cuda

        _cuda.adam_step(p, g, m, v, vmax, step_size, beta1, beta2, eps, wd, decay, bc2_sqrt)
        return
    amsgrad = vmax is not None
    ins = [g, m, v] + ([vmax] if vmax is not None else [])
    if _fast_same(p, *ins):
        pf = _flat(p)
        kernel = _adam_parallel if pf.shape[0] >= PARALLEL_THRESHOLD else _adam_serial
        vm = _flat(vmax) if vmax is not None else _flat(v)
        gf, mf, vf = _flat(g), _flat(m), _flat(v)
        kernel(pf, gf, mf, vf, vm, step_size, beta1, beta2, eps, wd, decay, bc2_sqrt, amsgrad)
        if _trace.active is not None:
            if dyn is None:
                _trace.refuse("an Adam step whose step size changes at every step (no slot for it)")
            else:
                size, root = _trace.Dyn(dyn[0], dyn[1]), _trace.Dyn(dyn[0], dyn[1] + 1)
                _trace.note(kernel, pf, gf, mf, vf, vm, size, beta1, beta2, eps, wd, decay, root, amsgrad)
        return
    if _trace.active is not None:
        _trace.refuse(f"an Adam step of a strided parameter or gradient {p.shape} runs in numpy")
    t = p.dtype.type
    if decoupled:
        p *= t(decay)
    gg = g + t(wd) * p if wd else g
    m += (t(1) - t(beta1)) * (gg - m)
    v *= t(beta2)
    v += (t(1) - t(beta2)) * gg * gg
    vv = v
    if vmax is not None:
        np.maximum(vmax, v, out=vmax)
        vv = vmax
    p -= t(step_size) * (m / (np.sqrt(vv) / t(bc2_sqrt) + t(eps)))


def rmsprop_step(
    p: Array,
    g: Array,
    square_avg: Array,
    grad_avg: Array | None,
    buf: Array | None,
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float = 0.0,
    momentum: float = 0.0,
) -> None:
    """One RMSprop step on ``p`` in place (PyTorch's ``torch.optim.RMSprop``; Hinton's lecture 6e).

    ``g = g + weight_decay * p``; ``s = alpha * s + (1 - alpha) * g**2``; centered
    (``grad_avg`` given, Graves 2013): ``ga += (1 - alpha) * (g - ga)`` and the denominator
    uses ``s - ga**2``; ``q = g / (sqrt(...) + eps)``; with momentum (``buf`` given)
    ``buf = momentum * buf + q`` and ``p -= lr * buf``, else ``p -= lr * q``.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`sgd_step`.
    """
    _check("rmsprop_step", p, g, {"square_avg": square_avg, "grad_avg": grad_avg, "momentum_buffer": buf})
    _rmsprop_apply(
        p, g, square_avg, grad_avg, buf, float(lr), float(alpha), float(eps), float(weight_decay), float(momentum)
    )


def _rmsprop_apply(
    p: Array,
    g: Array,
    square_avg: Array,
    grad_avg: Array | None,
    buf: Array | None,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
) -> None:
    """:func:`rmsprop_step` without the validation, for callers that own the state buffers
    and checked ``p`` and ``g`` (:class:`gradtape.optim.RMSprop`)."""
    centered, use_buf = grad_avg is not None, buf is not None
    ins = [g, square_avg] + [x for x in (grad_avg, buf) if x is not None]
    if _fast_same(p, *ins):
        pf = _flat(p)
        kernel = _rmsprop_parallel if pf.shape[0] >= PARALLEL_THRESHOLD else _rmsprop_serial
        sq = _flat(square_avg)
        ga = _flat(grad_avg) if grad_avg is not None else sq
        bf = _flat(buf) if buf is not None else sq
        kernel(
            pf,
            _flat(g),
            sq,
            ga,
            bf,
            lr,
            alpha,
            eps,
            weight_decay,
            momentum,
            centered,
            use_buf,
        )
        return
    t = p.dtype.type
    a1 = t(1) - t(alpha)
    gg = g + t(weight_decay) * p if weight_decay else g
    square_avg *= t(alpha)
    square_avg += a1 * gg * gg
    s = square_avg
    if grad_avg is not None:
        grad_avg += a1 * (gg - grad_avg)
        s = square_avg - grad_avg * grad_avg
    q = gg / (np.sqrt(s) + t(eps))
    if buf is not None:
        buf *= t(momentum)
        buf += q
        q = buf
    p -= t(lr) * q


# ----- Adadelta, Adagrad, Adamax, NAdam, RAdam (PyTorch's single-tensor rules) -------------
#
# Each kernel below is the fused form of the numpy function after it (the fallback for arrays
# numba cannot take as they are); both update ``p`` and the state buffers in place. Scalars
# that depend on the step count are computed by the caller (gradtape.optim), as PyTorch does.


def _adadelta(p: Array, g: Array, sq: Array, acc: Array, lr: float, rho: float, eps: float, wd: float) -> None:
    t = p.dtype.type
    rho_, a1, eps_, wd_, lr_ = t(rho), t(1) - t(rho), t(eps), t(wd), t(lr)
    for i in numba.prange(p.shape[0]):
        gi = g[i] + wd_ * p[i] if wd_ != 0 else g[i]
        s = rho_ * sq[i] + a1 * gi * gi
        sq[i] = s
        delta = np.sqrt(acc[i] + eps_) / np.sqrt(s + eps_) * gi
        acc[i] = rho_ * acc[i] + a1 * delta * delta
        p[i] -= lr_ * delta


_adadelta_serial, _adadelta_parallel = serial_and_parallel(_adadelta)


def _adadelta_numpy(p: Array, g: Array, sq: Array, acc: Array, lr: float, rho: float, eps: float, wd: float) -> None:
    t = p.dtype.type
    gg = g + t(wd) * p if wd else g
    sq *= t(rho)
    sq += (t(1) - t(rho)) * gg * gg
    delta = np.sqrt(acc + t(eps)) / np.sqrt(sq + t(eps)) * gg
    acc *= t(rho)
    acc += (t(1) - t(rho)) * delta * delta
    p -= t(lr) * delta


def _adagrad(p: Array, g: Array, s: Array, clr: float, eps: float, wd: float) -> None:
    t = p.dtype.type
    clr_, eps_, wd_ = t(clr), t(eps), t(wd)
    for i in numba.prange(p.shape[0]):
        gi = g[i] + wd_ * p[i] if wd_ != 0 else g[i]
        si = s[i] + gi * gi
        s[i] = si
        p[i] -= clr_ * (gi / (np.sqrt(si) + eps_))


_adagrad_serial, _adagrad_parallel = serial_and_parallel(_adagrad)


def _adagrad_numpy(p: Array, g: Array, s: Array, clr: float, eps: float, wd: float) -> None:
    t = p.dtype.type
    gg = g + t(wd) * p if wd else g
    s += gg * gg
    p -= t(clr) * (gg / (np.sqrt(s) + t(eps)))


def _adamax(p: Array, g: Array, m: Array, u: Array, clr: float, b1: float, b2: float, eps: float, wd: float) -> None:
    t = p.dtype.type
    a1, b2_, eps_, wd_, clr_ = t(1) - t(b1), t(b2), t(eps), t(wd), t(clr)
    for i in numba.prange(p.shape[0]):
        gi = g[i] + wd_ * p[i] if wd_ != 0 else g[i]
        mi = m[i] + a1 * (gi - m[i])
        m[i] = mi
        ui = max(b2_ * u[i], abs(gi) + eps_)
        u[i] = ui
        p[i] -= clr_ * (mi / ui)


_adamax_serial, _adamax_parallel = serial_and_parallel(_adamax)


def _adamax_numpy(
    p: Array, g: Array, m: Array, u: Array, clr: float, b1: float, b2: float, eps: float, wd: float
) -> None:
    t = p.dtype.type
    gg = g + t(wd) * p if wd else g
    m += (t(1) - t(b1)) * (gg - m)
    u *= t(b2)
    np.maximum(u, np.abs(gg) + t(eps), out=u)
    p -= t(clr) * (m / u)


def _nadam(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    decay: float,
    wd: float,
    b1: float,
    b2: float,
    bc2: float,
    eps: float,
    c_grad: float,
    c_avg: float,
) -> None:
    t = p.dtype.type
    decay_, wd_, a1, b2_, a2 = t(decay), t(wd), t(1) - t(b1), t(b2), t(1) - t(b2)
    bc2_, eps_, cg, ca = t(bc2), t(eps), t(c_grad), t(c_avg)
    for i in numba.prange(p.shape[0]):
        x = p[i] * decay_
        gi = g[i] + wd_ * x if wd_ != 0 else g[i]
        mi = m[i] + a1 * (gi - m[i])
        vi = b2_ * v[i] + a2 * gi * gi
        m[i] = mi
        v[i] = vi
        denom = np.sqrt(vi / bc2_) + eps_
        p[i] = x - cg * (gi / denom) - ca * (mi / denom)


_nadam_serial, _nadam_parallel = serial_and_parallel(_nadam)


def _nadam_numpy(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    decay: float,
    wd: float,
    b1: float,
    b2: float,
    bc2: float,
    eps: float,
    c_grad: float,
    c_avg: float,
) -> None:
    t = p.dtype.type
    if decay != 1.0:
        p *= t(decay)
    gg = g + t(wd) * p if wd else g
    m += (t(1) - t(b1)) * (gg - m)
    v *= t(b2)
    v += (t(1) - t(b2)) * gg * gg
    denom = np.sqrt(v / t(bc2)) + t(eps)
    p -= t(c_grad) * (gg / denom)
    p -= t(c_avg) * (m / denom)


def _radam(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    decay: float,
    wd: float,
    b1: float,
    b2: float,
    c: float,
    eps: float,
    rectified: bool,
) -> None:
    t = p.dtype.type
    decay_, wd_, a1, b2_, a2, c_, eps_ = t(decay), t(wd), t(1) - t(b1), t(b2), t(1) - t(b2), t(c), t(eps)
    for i in numba.prange(p.shape[0]):
        x = p[i] * decay_
        gi = g[i] + wd_ * x if wd_ != 0 else g[i]
        mi = m[i] + a1 * (gi - m[i])
        vi = b2_ * v[i] + a2 * gi * gi
        m[i] = mi
        v[i] = vi
        p[i] = x - c_ * mi / (np.sqrt(vi) + eps_) if rectified else x - c_ * mi


_radam_serial, _radam_parallel = serial_and_parallel(_radam)


def _radam_numpy(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    decay: float,
    wd: float,
    b1: float,
    b2: float,
    c: float,
    eps: float,
    rectified: bool,
) -> None:
    t = p.dtype.type
    if decay != 1.0:
        p *= t(decay)
    gg = g + t(wd) * p if wd else g
    m += (t(1) - t(b1)) * (gg - m)
    v *= t(b2)
    v += (t(1) - t(b2)) * gg * gg
    if rectified:
        p -= t(c) * m / (np.sqrt(v) + t(eps))
    else:
        p -= t(c) * m


# ----- Rprop (Riedmiller & Braun 1993) and ASGD (Polyak & Juditsky 1992), PyTorch's rules ----


def _rprop(p: Array, g: Array, prev: Array, ss: Array, etaminus: float, etaplus: float, lo: float, hi: float) -> None:
    t = p.dtype.type
    em, ep, lo_, hi_, one, zero = t(etaminus), t(etaplus), t(lo), t(hi), t(1), t(0)
    for i in numba.prange(p.shape[0]):
        gi = g[i]
        s = gi * prev[i]
        f = ep if s > 0 else (em if s < 0 else one)  # PyTorch's sign(nan) is 0: factor 1
        si = ss[i] * f
        if si < lo_:  # clamp(lo, hi) as PyTorch's: hi when lo > hi, nan stays nan
            si = lo_
        if si > hi_:
            si = hi_
        ss[i] = si
        if f == em:  # PyTorch masks where the factor is etaminus
            gi = zero
        prev[i] = gi
        sg = one if gi > 0 else (-one if gi < 0 else zero)
        p[i] -= sg * si


_rprop_serial, _rprop_parallel = serial_and_parallel(_rprop)


def _rprop_numpy(
    p: Array, g: Array, prev: Array, ss: Array, etaminus: float, etaplus: float, lo: float, hi: float
) -> None:
    t = p.dtype.type
    s = g * prev
    f = np.ones_like(s)
    f[s > 0] = t(etaplus)
    f[s < 0] = t(etaminus)
    ss *= f
    np.maximum(ss, t(lo), out=ss)
    np.minimum(ss, t(hi), out=ss)
    gm = np.where(f == t(etaminus), t(0), g)
    prev[...] = gm
    sg = (gm > 0).astype(p.dtype) - (gm < 0).astype(p.dtype)  # PyTorch's sign: 0 for nan
    p -= sg * ss


def _asgd(p: Array, g: Array, ax: Array, decay: float, eta: float, wd: float, mu: float, average: bool) -> None:
    t = p.dtype.type
    decay_, eta_, wd_, mu_ = t(decay), t(eta), t(wd), t(mu)
    for i in numba.prange(p.shape[0]):
        gi = g[i] + wd_ * p[i] if wd_ != 0 else g[i]
        x = p[i] * decay_ - eta_ * gi
        p[i] = x
        ax[i] = ax[i] + (x - ax[i]) * mu_ if average else x


_asgd_serial, _asgd_parallel = serial_and_parallel(_asgd)


def _asgd_numpy(p: Array, g: Array, ax: Array, decay: float, eta: float, wd: float, mu: float, average: bool) -> None:
    t = p.dtype.type
    gg = g + t(wd) * p if wd else g
    p *= t(decay)
    p -= t(eta) * gg
    if average:
        ax += (p - ax) * t(mu)
    else:
        ax[...] = p


def _run(kernels: tuple[Any, Any, Any], p: Array, ins: list[Array], *scalars: Any) -> None:
    """Run the serial or parallel kernel on flat views when every array can go as it is, else
    the numpy form; ``kernels`` is ``(serial, parallel, numpy)``, ``ins`` the gradient and the
    state buffers (each of ``p``'s shape and dtype)."""
    if _fast_same(p, *ins):
        pf = _flat(p)
        kernel = kernels[1] if pf.shape[0] >= PARALLEL_THRESHOLD else kernels[0]
        kernel(pf, *[_flat(x) for x in ins], *scalars)
        return
    kernels[2](p, *ins, *scalars)


ADADELTA = (_adadelta_serial, _adadelta_parallel, _adadelta_numpy)
ADAGRAD = (_adagrad_serial, _adagrad_parallel, _adagrad_numpy)
ADAMAX = (_adamax_serial, _adamax_parallel, _adamax_numpy)
NADAM = (_nadam_serial, _nadam_parallel, _nadam_numpy)
RADAM = (_radam_serial, _radam_parallel, _radam_numpy)
RPROP = (_rprop_serial, _rprop_parallel, _rprop_numpy)
ASGD = (_asgd_serial, _asgd_parallel, _asgd_numpy)
