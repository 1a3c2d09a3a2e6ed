"""Loss functions (PyTorch's ``torch.nn.functional`` names, arguments and defaults).

Every loss returns a scalar tensor (``Tensor[Rank0, T]``, shape ``()``) of the input's dtype,
reduced with ``reduction="mean"`` (default: the mean over all elements, or over the batch for
:func:`cross_entropy`) or ``"sum"``; :func:`kl_div` also takes ``"batchmean"``. Each is one
fused op: the forward in numpy, and one backward closure computing the input's gradient (and
the target's, when the target is a traced tensor) from arrays saved by the forward.

Targets may be tensors of the input's dtype (traced or not) or numpy arrays / array-likes,
which are converted to the input's dtype. Shapes must match exactly (no broadcasting, unlike
PyTorch's warning-and-broadcast): a mismatch raises
:class:`~gradtape.errors.ShapeError` naming the loss and both shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from gradtape._signatures import losses as _sig
from gradtape._typing import A, B, T, typed_as
from gradtape.devices.kernels import softmax as _ks
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._util import int_indices
from gradtape.ops.softmax import log_softmax_array
from gradtape.shapes import Rank0, Rank2
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mae_loss",
    "mse_loss",
    "smooth_l1_loss",
]

Array = np.ndarray[Any, Any]
Reduction: TypeAlias = Literal["mean", "sum"]
ArrayTarget: TypeAlias = npt.NDArray[Any]
"""A target given as a numpy array (at run time anything ``np.asarray`` takes)."""

# (grads, c, need_input, need_target) -> (input's gradient, target's gradient), where ``c`` is
# the loss's gradient times the reduction's scale (a numpy scalar of the input's dtype).
_Rule = Callable[[Any, bool, bool], tuple[Array | None, Array | None]]


# ----- shared plumbing ---------------------------------------------------------------------


def _check_reduction(op: str, reduction: str, allowed: tuple[str, ...] = ("mean", "sum")) -> None:
    if reduction not in allowed:
        names = ", ".join(repr(r) for r in allowed)
        raise ValueError(f"{op}: reduction must be one of {names}, got {reduction!r}")


def _target(op: str, input: Tensor[Any, Any], target: object, what: str = "target") -> tuple[Array, Any]:
    """``(target's data, target tensor or None)``: a tensor must have the input's dtype; an
    array-like is converted to it. Its shape must be the input's.

    Raises:
        DTypeError: a tensor of another dtype, or an array of non-numeric dtype.
        ShapeError: the shapes differ (names both).
    """
    x = input.data
    if target.__class__ is input.__class__:
        t: Array = target.data
        if t.dtype != x.dtype:
            raise DTypeError(
                f"{op}: {what} dtype {t.dtype} (shape {t.shape}) differs from input dtype {x.dtype} "
                f"(shape {x.shape}); convert one with dev.tensor(x, dtype=...)"
            )
        tensor: Any = target
    else:
        t = np.asarray(target)
        if t.dtype.kind not in "biuf":
            raise DTypeError(f"{op}: {what} must be numeric, got dtype {t.dtype} (shape {t.shape})")
        t = t.astype(x.dtype, copy=False)
        tensor = None
    if t.shape != x.shape:
        raise ShapeError(f"{op}: {what} of shape {t.shape} does not match input of shape {x.shape}")
    return t, tensor


def _scale(op: str, x: Array, reduction: str) -> float:
    if reduction == "sum":
        return 1.0
    n = (x.shape[0] if x.ndim else 1) if reduction == "batchmean" else x.size
    if n == 0:
        raise ShapeError(f"{op}: reduction={reduction!r} over an empty input (shape {x.shape}) is undefined")
    return 1.0 / n


def _record_loss(
    input: Tensor[Any, Any],
    target: Any,
    value: Any,
    scale: float,
    rule: _Rule,
    diff: Callable[[Any, Any], tuple[Any, Any]] | None = None,
) -> Any:
    """Wrap the scalar ``value`` as the loss and record one backward closure that accumulates
    the input's (and a target tensor's) gradient as ``rule`` computes them; a gradient the
    store does not keep is not computed (:meth:`~gradtape.gradients.Gradients.wants`)."""
    x = input.data
    tape = op_tape(input) if target is None else op_tape(input, target)
    out = input._from_op(np.asarray(value, dtype=x.dtype), tape)
    if tape is not NONE_TAPE:
        xid, x_leaf = input.id, input._leaf
        tid, t_leaf = (target.id, target._leaf) if target is not None else (-1, True)
        dt = x.dtype.type

        def loss_backward(grads: Gradients, g: Array) -> None:
            need_x = grads.wants(xid, x_leaf)
            need_t = tid >= 0 and grads.wants(tid, t_leaf)
            gx, gt = rule(dt(g * dt(scale)), need_x, need_t)
            if need_x and gx is not None:
                grads._accum(xid, np.asarray(gx))
            if need_t and gt is not None:
                grads._accum(tid, np.asarray(gt))

        def loss_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            # the second rule: diff(g, rebuild) -> (input's, target's gradient)
            gx, gt = diff(g, rebuild)  # type: ignore[misc]  # recorded only when diff is given
            return [(i, gi) for i, gi in ((xid, gx), (tid, gt)) if gi is not None and i >= 0]

        record(tape, out, loss_backward, loss_diff if diff is not None else None)
    return out


def _total(elems: Array, reduction: str, scale: float) -> Any:
    total = elems.sum()
    return total if reduction == "sum" else total * elems.dtype.type(scale)


# ----- regression losses -------------------------------------------------------------------


@typed_as(_sig.mse_loss)
def mse_loss(input: Any, target: Any, reduction: Reduction = "mean") -> Any:
    """Mean squared error ``mean((input - target)**2)`` (``"sum"``: the sum), PyTorch's
    ``F.mse_loss``.

    Args:
        input: float32/float64 tensor of any shape.
        target: a tensor of the same shape and dtype (it gets a gradient too if traced), or a
            numpy array of the same shape (converted to the input's dtype).
        reduction: ``"mean"`` (default) or ``"sum"``.

    Gradients: ``d/dinput = 2 (input - target) * scale``, ``d/dtarget = -d/dinput``
    (``scale`` is ``1/numel`` for ``"mean"``, ``1`` for ``"sum"``).

    Raises:
        ShapeError: the shapes differ (names both), or ``"mean"`` over an empty input.
        DTypeError: a target tensor of another dtype.
        ValueError: an unknown ``reduction``.
    """
    _check_reduction("mse_loss", reduction)
    t, tt = _target("mse_loss", input, target)
    x = input.data
    scale = _scale("mse_loss", x, reduction)
    d = x - t

    def rule(c: Any, need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        gx = d * (c + c)
        return gx, (np.negative(gx) if need_t else None)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # 2 (x - t) scale g
        xt = rebuild(input.id, x)
        tt_ = rebuild(tt.id, tt.data) if tt is not None else g._like(t)
        gx = (xt - tt_) * (2.0 * scale) * g
        return gx, -gx

    return _record_loss(input, tt, _total(d * d, reduction, scale), scale, rule, diff)


@typed_as(_sig.l1_loss)
def l1_loss(input: Any, target: Any, reduction: Reduction = "mean") -> Any:
    """Mean absolute error ``mean(|input - target|)`` (``"sum"``: the sum), PyTorch's
    ``F.l1_loss``; also exported as :func:`mae_loss`.

    Gradients: ``d/dinput = sign(input - target) * scale`` (``0`` where they are equal, as
    PyTorch), ``d/dtarget = -d/dinput``.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`mse_loss`.
    """
    _check_reduction("l1_loss", reduction)
    t, tt = _target("l1_loss", input, target)
    x = input.data
    scale = _scale("l1_loss", x, reduction)
    d = x - t

    def rule(c: Any, need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        gx = np.sign(d) * c
        return gx, (np.negative(gx) if need_t else None)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # a constant slope: sign(d) scale g
        gx = g * g._like(np.sign(d) * x.dtype.type(scale))
        return gx, -gx

    return _record_loss(input, tt, _total(np.abs(d), reduction, scale), scale, rule, diff)


mae_loss = l1_loss
"""Alias of :func:`l1_loss` (mean absolute error)."""


def _huber_like(op: str, input: Any, target: Any, reduction: str, delta: float, divide: bool) -> Any:
    """``huber_loss(delta)``, or ``huber_loss(delta) / delta`` (``smooth_l1_loss(beta=delta)``)
    when ``divide``; ``delta == 0`` with ``divide`` is the L1 loss."""
    _check_reduction(op, reduction)
    t, tt = _target(op, input, target)
    x = input.data
    scale = _scale(op, x, reduction)
    d = x - t
    ad = np.abs(d)
    dt = x.dtype.type
    k = dt(delta)
    if divide and delta == 0:
        elems = ad
    else:
        inner = ad < k
        half = dt(0.5)
        if divide:  # smooth L1: 0.5 d**2 / beta inside, |d| - 0.5 beta outside
            elems = np.where(inner, half * d * d / k, ad - half * k)
        else:  # Huber: 0.5 d**2 inside, delta (|d| - 0.5 delta) outside
            elems = np.where(inner, half * d * d, k * (ad - half * k))

    def rule(c: Any, need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        if divide and delta == 0:
            gx = np.sign(d) * c
        elif divide:
            gx = np.clip(d / k, dt(-1), dt(1)) * c
        else:
            gx = np.clip(d, -k, k) * c
        return gx, (np.negative(gx) if need_t else None)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:
        # d inside the band (d / beta for smooth L1), the constant clipped slope outside
        from gradtape.ops.compare import where

        if divide and delta == 0:
            slope = g._like(np.sign(d))
        else:
            dtt = rebuild(input.id, x) - (rebuild(tt.id, tt.data) if tt is not None else g._like(t))
            band = dtt * (1.0 / float(k)) if divide else dtt
            outer = np.clip(d / k, dt(-1), dt(1)) if divide else np.clip(d, -k, k)
            slope = where(np.abs(d) < k, band, g._like(np.asarray(outer, dtype=x.dtype)))
        gx = slope * float(scale) * g
        return gx, -gx

    return _record_loss(input, tt, _total(np.asarray(elems), reduction, scale), scale, rule, diff)


@typed_as(_sig.huber_loss)
def huber_loss(input: Any, target: Any, reduction: Reduction = "mean", delta: float = 1.0) -> Any:
    """Huber loss, PyTorch's ``F.huber_loss``: with ``d = input - target``, elementwise
    ``0.5 d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)``; then the mean
    (default) or the sum.

    Gradients: ``d/dinput = clip(d, -delta, delta) * scale``, ``d/dtarget = -d/dinput``.

    Raises:
        ValueError: ``delta <= 0`` (PyTorch's rule), or an unknown ``reduction``.
        ShapeError, DTypeError: as :func:`mse_loss`.
    """
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    return _huber_like("huber_loss", input, target, reduction, delta, divide=False)


@typed_as(_sig.smooth_l1_loss)
def smooth_l1_loss(input: Any, target: Any, reduction: Reduction = "mean", beta: float = 1.0) -> Any:
    """Smooth L1 loss, PyTorch's ``F.smooth_l1_loss``: with ``d = input - target``,
    elementwise ``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (that is
    ``huber_loss(delta=beta) / beta``); ``beta=0`` is exactly :func:`l1_loss`.

    Gradients: ``d/dinput = clip(d / beta, -1, 1) * scale`` (``sign(d)`` for ``beta=0``),
    ``d/dtarget = -d/dinput``.

    Raises:
        ValueError: ``beta < 0`` (PyTorch's rule), or an unknown ``reduction``.
        ShapeError, DTypeError: as :func:`mse_loss`.
    """
    if not beta >= 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    return _huber_like("smooth_l1_loss", input, target, reduction, beta, divide=True)


# ----- classification losses ---------------------------------------------------------------


def cross_entropy(
    logits: Tensor[Rank2[A, B], T],
    targets: npt.ArrayLike,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[Rank0, T]:
    """Softmax cross-entropy of ``(N, C)`` logits against class indices or class probabilities
    (PyTorch's ``F.cross_entropy``, which decides the same way):

    - **integer** targets of shape ``(N,)`` are class indices:
      ``loss = -sum_n log_softmax(logits)[n, targets[n]]``;
    - **float** targets of shape ``(N, C)`` (a numpy array or a tensor of the logits' dtype)
      are probabilities (soft labels, e.g. label smoothing or a teacher's softmax):
      ``loss = -sum_n sum_c targets[n, c] * log_softmax(logits)[n, c]``.

    Either sum is divided by ``N`` when ``reduction="mean"``. Fused: the backward is
    ``grad_logits += (softmax(logits) * rowsum(targets) - targets) * g / N`` (with one-hot
    targets for indices; ``rowsum`` is 1 for proper distributions), and a traced target
    tensor gets ``-log_softmax(logits) * g / N``. With class indices both directions are
    compiled kernels (:func:`gradtape.devices.kernels.softmax.cross_entropy_forward`: two
    kernel passes around numpy's ``exp``, the index check included; the backward one pass over
    the saved softmax), as PyTorch fuses ``log_softmax`` with ``nll_loss``.

    Args:
        logits: float32/float64 tensor of shape ``(N, C)``, unnormalised scores.
        targets: integers in ``[0, C)`` of shape ``(N,)`` (a list, an integer array or an
            integer tensor such as ``dev.tensor(labels)``, never differentiated), or
            floats of shape ``(N, C)`` (converted to the logits' dtype; rows need not be
            normalised, the formula above is used as is).
        reduction: ``"mean"`` (default) or ``"sum"`` over the batch.

    Returns:
        A scalar tensor (shape ``()``) with ``logits``'s dtype; it owns a tape if the logits
        or a target tensor do. Its static type takes the logits' tape kind only (the
        signature predates tensor targets): with untraced logits and a traced target tensor
        the result owns a tape at run time but is typed ``NoneTape``.

    Raises:
        ShapeError: logits not 2-D, targets of neither shape (names both shapes), or ``N == 0``.
        DTypeError: targets neither integer nor floating (e.g. float targets of shape ``(N,)``,
            bools), or a target tensor of another dtype.
        ValueError: a class index is outside ``[0, C)``, or ``reduction`` is unknown.
    """
    x = logits.data
    if x.ndim != 2:
        raise ShapeError(f"cross_entropy: logits must be 2-D (N, C), got shape {x.shape}")
    n = x.shape[0]
    t_tensor: Any = targets if targets.__class__ is logits.__class__ else None
    t: Array = t_tensor.data if t_tensor is not None else np.asarray(targets)
    if t_tensor is not None and t.dtype.kind in "iu":  # class indices as an int64 tensor (torch's)
        t_tensor = None
    if t.dtype.kind == "f":
        if t.ndim != 2:
            raise DTypeError(
                f"cross_entropy: targets must be integer class indices of shape ({n},) or class probabilities "
                f"of the logits' shape {x.shape}; got dtype {t.dtype} and shape {t.shape}"
            )
        if t.shape != x.shape:
            raise ShapeError(
                f"cross_entropy: probability targets of shape {t.shape} do not match logits of shape {x.shape}"
            )
        if t_tensor is not None and t.dtype != x.dtype:
            raise DTypeError(
                f"cross_entropy: target dtype {t.dtype} (shape {t.shape}) differs from logits dtype {x.dtype}"
            )
        return _soft_cross_entropy(logits, t.astype(x.dtype, copy=False), t_tensor, reduction)  # type: ignore[no-any-return]
    if t_tensor is not None or t.dtype.kind not in "iu":
        raise DTypeError(f"cross_entropy: targets must be integer class indices, got dtype {t.dtype}")
    t = int_indices("cross_entropy", t, f"logits of shape {x.shape}", "targets")  # native intp
    if t.shape != (n,):
        raise ShapeError(f"cross_entropy: targets of shape {t.shape} do not match logits of shape {x.shape}")
    if n == 0:
        raise ShapeError(f"cross_entropy: empty batch (logits of shape {x.shape})")
    _check_reduction("cross_entropy", reduction)
    total, p = _ks.cross_entropy_forward(x, t)  # raises ValueError for an index outside [0, C)
    scale = 1.0 / n if reduction == "mean" else 1.0

    fresh = [p]  # the softmax the backward kernel overwrites: its own the first time

    def rule(cg: Any, need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        # a pass run again (retain_graph) needs the softmax again: recompute it from x
        q = fresh.pop() if fresh else _ks.cross_entropy_forward(x, t)[1]
        return _ks.cross_entropy_backward(q, t, float(cg)), None

    def diff(g: Any, rebuild: Any) -> tuple[Any, None]:  # (softmax(x) - onehot) scale g
        onehot = np.zeros(x.shape, x.dtype)
        onehot[np.arange(n), t] = 1
        return (rebuild(logits.id, x).softmax(1) - g._like(onehot)) * scale * g, None

    return _record_loss(logits, None, total * scale, scale, rule, diff)  # type: ignore[no-any-return]


def _soft_cross_entropy(logits: Tensor[Any, Any], t: Array, t_tensor: Any, reduction: str) -> Any:
    x = logits.data
    n = x.shape[0]
    if n == 0:
        raise ShapeError(f"cross_entropy: empty batch (logits of shape {x.shape})")
    _check_reduction("cross_entropy", reduction)
    logp = log_softmax_array(x, 1)
    scale = 1.0 / n if reduction == "mean" else 1.0
    loss = -(t * logp).sum() * x.dtype.type(scale)

    def rule(cg: Any, need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        gx = None
        if need_x:
            gx = np.exp(logp)
            gx *= t.sum(axis=1, keepdims=True)
            gx -= t
            gx *= cg
        return gx, (logp * -cg if need_t else None)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # softmax(x) sum(t) - t; -log_softmax(x)
        xt = rebuild(logits.id, x)
        tv = rebuild(t_tensor.id, t_tensor.data) if t_tensor is not None else g._like(t)
        gx = (xt.softmax(1) * tv.sum(axis=1, keepdims=True) - tv) * g * float(scale)
        gt = -xt.log_softmax(1) * g * float(scale) if t_tensor is not None else None
        return gx, gt

    return _record_loss(logits, t_tensor, loss, scale, rule, diff)


@typed_as(_sig.binary_cross_entropy_with_logits)
def binary_cross_entropy_with_logits(
    input: Any, target: Any, reduction: Reduction = "mean", pos_weight: npt.ArrayLike | None = None
) -> Any:
    """Sigmoid + binary cross-entropy in one stable op, PyTorch's
    ``F.binary_cross_entropy_with_logits``: with logits ``x`` and targets ``t`` in ``[0, 1]``,
    elementwise ``-(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))``, computed as
    ``max(x, 0) - x t + log1p(exp(-|x|))`` so that no ``exp`` overflows for any ``x``.

    Args:
        input: logits, float32/float64 tensor of any shape.
        target: probabilities of the same shape (a tensor, traced or not, or an array).
        reduction: ``"mean"`` (default) or ``"sum"``.
        pos_weight: optional weight of the positive term, broadcast against the input (PyTorch:
            one weight per class along the last axis): elementwise
            ``(1 - t) x + (1 + (pos_weight - 1) t) * softplus(-x)``. A constant: it gets no
            gradient (a traced tensor is rejected).

    Gradients: ``d/dx = (sigmoid(x) - t) * scale`` (with ``pos_weight``:
    ``((1 - t) - (1 + (pw - 1) t) sigmoid(-x)) * scale``), ``d/dt = -x * scale`` (with
    ``pos_weight``: ``(-x + (pw - 1) softplus(-x)) * scale``).

    Raises:
        ShapeError: the shapes differ, or ``pos_weight`` does not broadcast to the input's
            shape (names both shapes).
        DTypeError: a target tensor of another dtype.
        ValueError: an unknown ``reduction``, or a traced ``pos_weight``.
    """
    op = "binary_cross_entropy_with_logits"
    _check_reduction(op, reduction)
    t, tt = _target(op, input, target)
    x = input.data
    scale = _scale(op, x, reduction)
    dt = x.dtype.type
    e = np.exp(-np.abs(x))  # in (0, 1]: never overflows
    sp = np.log1p(e) + np.maximum(-x, dt(0))  # softplus(-x) = -log(sigmoid(x))
    if pos_weight is None:
        elems = (1 - t) * x + sp  # = max(x, 0) - x t + log1p(exp(-|x|))
        lw = None
    else:
        if getattr(pos_weight, "tape", NONE_TAPE) is not NONE_TAPE:
            raise ValueError(f"{op}: pos_weight is a constant; pass an untraced tensor or an array")
        pw = np.asarray(getattr(pos_weight, "data", pos_weight)).astype(x.dtype, copy=False)
        try:
            if np.broadcast_shapes(pw.shape, x.shape) != x.shape:
                raise ValueError
        except ValueError:
            raise ShapeError(
                f"{op}: pos_weight of shape {pw.shape} does not broadcast to input of shape {x.shape}"
            ) from None
        lw = 1 + (pw - 1) * t
        elems = (1 - t) * x + lw * sp

    def rule(c: Any, need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        gx = gt = None
        one = dt(1)
        if need_x:
            neg_sig = np.where(x >= 0, e, one) / (one + e)  # sigmoid(-x), stable
            gx = (1 - t) - neg_sig if lw is None else (1 - t) - lw * neg_sig
            gx *= c
        if need_t:
            gt = -x * c if lw is None else ((pw - 1) * sp - x) * c
        return gx, gt

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # (1 - t) - lw sigmoid(-x); the target's
        xt = rebuild(input.id, x)
        tv = rebuild(tt.id, tt.data) if tt is not None else g._like(t)
        neg_sig = (-xt).sigmoid()
        gx = ((1.0 - tv) - (neg_sig if lw is None else (tv * g._like(pw - 1) + 1.0) * neg_sig)) * g * float(scale)
        if tt is None:
            return gx, None
        gt = -xt if lw is None else (-xt).softplus() * g._like(np.broadcast_to(pw - 1, x.shape).copy()) - xt
        return gx, gt * g * float(scale)

    return _record_loss(input, tt, _total(np.asarray(elems), reduction, scale), scale, rule, diff)


# ----- distribution losses ------------------------------------------------------------------


@typed_as(_sig.kl_div)
def kl_div(
    input: Any, target: Any, reduction: Literal["mean", "sum", "batchmean"] = "mean", log_target: bool = False
) -> Any:
    """Kullback-Leibler divergence with PyTorch's ``F.kl_div`` semantics: ``input`` holds
    **log**-probabilities ``log q``, ``target`` probabilities ``p`` (or log-probabilities
    ``log p`` with ``log_target=True``); elementwise ``p * (log p - log q)``, ``0`` where
    ``p == 0`` (``xlogy``); with ``log_target``: ``exp(log p) * (log p - log q)``.

    Args:
        input: log-probabilities, float32/float64 tensor of any shape.
        target: probabilities (or log-probabilities) of the same shape: a tensor, traced or
            not, or an array.
        reduction: ``"mean"`` (default, PyTorch's): the mean over **all elements**, which is
            not the KL divergence of a batch of distributions; ``"batchmean"``: the sum divided
            by the batch size ``input.shape[0]`` (the true per-sample KL, as PyTorch
            recommends; a 0-d input divides by 1); ``"sum"``.
        log_target: whether ``target`` holds log-probabilities.

    Gradients: ``d/dinput = -p * scale``; ``d/dtarget = (log p + 1 - log q) * scale``
    (``-inf`` where ``p == 0``, the one-sided limit; PyTorch gives NaN there), or with
    ``log_target``: ``exp(log p) * (log p - log q + 1) * scale``.

    Raises:
        ShapeError: the shapes differ (names both), or a ``"mean"``/``"batchmean"`` over
            an empty input.
        DTypeError: a target tensor of another dtype.
        ValueError: an unknown ``reduction``.
    """
    _check_reduction("kl_div", reduction, ("mean", "sum", "batchmean"))
    t, tt = _target("kl_div", input, target)
    x = input.data
    scale = _scale("kl_div", x, reduction)
    with np.errstate(divide="ignore", invalid="ignore"):
        p, log_p = (np.exp(t), t) if log_target else (t, np.log(t))
        xlogx = p * log_p if log_target else np.where(t == 0, x.dtype.type(0), t * log_p)
    elems = xlogx - p * x

    def rule(c: Any, need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        gx = p * -c if need_x else None
        gt = None
        if need_t:
            with np.errstate(invalid="ignore"):
                gt = (p * (t - x + 1) if log_target else log_p + 1 - x) * c
        return gx, gt

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:
        xt = rebuild(input.id, x)
        tv = rebuild(tt.id, tt.data) if tt is not None else g._like(t)
        pv = tv.exp() if log_target else tv
        gx = -(pv * g) * float(scale)
        if tt is None:
            return gx, None
        gt = (pv * (tv - xt + 1.0) if log_target else tv.log() + 1.0 - xt) * g * float(scale)
        return gx, gt

    return _record_loss(input, tt, _total(np.asarray(elems), reduction, scale), scale, rule, diff)


# The public loss functions check their tensor arguments (ops._util.checked): a list or an
# array where a tensor belongs raises TypeError naming the loss and the argument.
if not TYPE_CHECKING:
    from gradtape.ops._util import check_exports as _check_exports

    _check_exports(globals(), __all__)
    del _check_exports
