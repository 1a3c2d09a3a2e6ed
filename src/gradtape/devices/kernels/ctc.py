"""CTC loss kernels: the alpha-beta recursions of Graves et al. 2006 in log space, one batch
element per ``prange`` iteration (each writes only its own rows), as PyTorch's CPU
``ctc_loss`` computes them.

Layout (PyTorch's): ``lp`` the log-probabilities ``(T, N, C)`` (float32 or float64,
C-contiguous); ``targets`` the labels of every batch element, int64, element ``b``'s ``L_b =
tl[b]`` labels starting at ``offsets[b]``; ``il`` / ``tl`` the input and target lengths (int64,
already checked by the op: ``0 <= il[b] <= T``, labels in ``[0, C)``). The extended target of
element ``b`` is ``l'(s) = blank`` for even ``s`` and ``labels[(s - 1) // 2]`` for odd ``s``,
``s < 2 L_b + 1``. The recursions accumulate in float64 whatever the input's dtype (log-sum-exp
with ``math.exp`` / ``math.log1p``: a scalar libm call per step, the recursion is sequential in
``t`` anyway).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from gradtape.devices.kernels import _jit

__all__ = ["ctc_backward", "ctc_forward"]

Array = np.ndarray[Any, Any]

PARALLEL_BATCH = 4
"""Batch sizes from which the kernels run over threads (one element's recursion is
``T * (2 L + 1)`` steps; a handful of them already outweighs the parallel region's cost)."""


@_jit.jit(inline=True)
def _lse2(a: float, b: float) -> float:
    """``log(exp(a) + exp(b))`` with ``-inf`` handled."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


def _ctc_forward(
    lp: Array, targets: Array, offsets: Array, il: Array, tl: Array, blank: int, nll: Array, alpha: Array
) -> None:
    """``nll[b]`` the negative log-likelihood of element ``b``; ``alpha[b, t, s]`` its log-alpha
    (``t < il[b]``, ``s < 2 tl[b] + 1``; the rest left as given), kept for the backward."""
    n = lp.shape[1]
    neg_inf = -np.inf
    for b in numba.prange(n):
        t_len = il[b]
        length = tl[b]
        off = offsets[b]
        width = 2 * length + 1
        if t_len == 0:
            nll[b] = 0.0 if length == 0 else np.inf
            continue
        for s in range(width):
            alpha[b, 0, s] = neg_inf
        alpha[b, 0, 0] = lp[0, b, blank]
        if length > 0:
            alpha[b, 0, 1] = lp[0, b, targets[off]]
        for t in range(1, t_len):
            for s in range(width):
                c = blank if s % 2 == 0 else targets[off + (s - 1) // 2]
                v = alpha[b, t - 1, s]
                if s >= 1:
                    v = _lse2(v, alpha[b, t - 1, s - 1])
                if s >= 2 and s % 2 == 1 and targets[off + (s - 3) // 2] != c:
                    v = _lse2(v, alpha[b, t - 1, s - 2])
                alpha[b, t, s] = v + lp[t, b, c] if v != neg_inf else neg_inf
        last = alpha[b, t_len - 1, width - 1]
        if length > 0:
            last = _lse2(last, alpha[b, t_len - 1, width - 2])
        nll[b] = -last


_ctc_forward_serial, _ctc_forward_parallel = _jit.serial_and_parallel(_ctc_forward)


def _ctc_backward(
    lp: Array,
    targets: Array,
    offsets: Array,
    il: Array,
    tl: Array,
    blank: int,
    nll: Array,
    alpha: Array,
    scale: Array,
    zero_infinity: bool,
    grad: Array,
) -> None:
    """``grad[t, b, c] = (exp(lp) - exp(log sum_{s: l'(s) = c} alpha beta + nll - lp)) *
    scale[b]`` for ``t < il[b]`` (PyTorch's CPU formula; ``beta`` includes the emission at ``t``,
    hence ``- lp``); rows ``t >= il[b]`` and, with ``zero_infinity``, elements of infinite loss
    are left as given (zeros)."""
    n = lp.shape[1]
    n_classes = lp.shape[2]
    neg_inf = -np.inf
    for b in numba.prange(n):
        t_len = il[b]
        length = tl[b]
        off = offsets[b]
        width = 2 * length + 1
        loss = nll[b]
        if t_len == 0 or (zero_infinity and loss == np.inf):
            continue
        gr = scale[b]
        beta = np.empty((t_len, width))
        lcab = np.empty(n_classes)
        for s in range(width):
            beta[t_len - 1, s] = neg_inf
        beta[t_len - 1, width - 1] = lp[t_len - 1, b, blank]
        if length > 0:
            beta[t_len - 1, width - 2] = lp[t_len - 1, b, targets[off + length - 1]]
        for t in range(t_len - 2, -1, -1):
            for s in range(width):
                c = blank if s % 2 == 0 else targets[off + (s - 1) // 2]
                v = beta[t + 1, s]
                if s + 1 < width:
                    v = _lse2(v, beta[t + 1, s + 1])
                if s % 2 == 1 and s + 2 < width and targets[off + (s + 1) // 2] != c:
                    v = _lse2(v, beta[t + 1, s + 2])
                beta[t, s] = v + lp[t, b, c] if v != neg_inf else neg_inf
        for t in range(t_len):
            for c in range(n_classes):
                lcab[c] = neg_inf
            for s in range(width):
                c = blank if s % 2 == 0 else targets[off + (s - 1) // 2]
                lcab[c] = _lse2(lcab[c], alpha[b, t, s] + beta[t, s])
            for c in range(n_classes):
                x = lp[t, b, c]
                grad[t, b, c] = (math.exp(x) - math.exp(lcab[c] + loss - x)) * gr


_ctc_backward_serial, _ctc_backward_parallel = _jit.serial_and_parallel(_ctc_backward)


def ctc_forward(lp: Array, targets: Array, offsets: Array, il: Array, tl: Array, blank: int) -> tuple[Array, Array]:
    """``(nll, log_alpha)``: the per-element negative log-likelihoods ``(N,)`` (float64) and the
    log-alphas ``(N, T, 2 max(tl) + 1)`` (float64) the backward reads. Inputs as the module
    docstring says, already checked."""
    n = lp.shape[1]
    width = 2 * (int(tl.max()) if n else 0) + 1
    nll = np.empty(n)
    alpha = np.full((n, lp.shape[0], width), -np.inf)
    kernel = _ctc_forward_parallel if n >= PARALLEL_BATCH else _ctc_forward_serial
    kernel(lp, targets, offsets, il, tl, blank, nll, alpha)
    return nll, alpha


def ctc_backward(
    lp: Array,
    targets: Array,
    offsets: Array,
    il: Array,
    tl: Array,
    blank: int,
    nll: Array,
    alpha: Array,
    scale: Array,
    zero_infinity: bool,
) -> Array:
    """The gradient with respect to ``lp`` (``lp``'s shape and dtype), each element's rows
    scaled by ``scale[b]`` (float64, the output's gradient times the reduction's factor)."""
    grad = np.zeros(lp.shape, lp.dtype)
    kernel = _ctc_backward_parallel if lp.shape[1] >= PARALLEL_BATCH else _ctc_backward_serial
    kernel(lp, targets, offsets, il, tl, blank, nll, alpha, scale, zero_infinity, grad)
    return grad
