"""Loss functions (PyTorch's ``torch.nn.functional`` names, arguments and defaults).

Every loss takes ``reduction``: ``"mean"`` (the default: the mean over all elements, or
PyTorch's weighted mean for :func:`nll_loss` and :func:`cross_entropy`), ``"sum"``, or
``"none"`` (the unreduced per-element or per-sample losses); :func:`kl_div` also takes
``"batchmean"``. A reduced loss is a scalar tensor (``Tensor[Rank0, T]``, shape ``()``) of the
input's dtype. Each is one fused op: the forward in numpy, one backward closure computing the
inputs' gradients from arrays saved by the forward (the first rule), and the same derivative
in gradtape ops (the second rule, recorded with :func:`gradtape.tape.record`), so losses can
be differentiated twice.

Targets may be tensors of the input's dtype (traced or not; those a loss differentiates get a
gradient), integer or bool tensors (constants, converted to the input's dtype where the loss
wants floats; class indices for :func:`nll_loss` and :func:`cross_entropy`), or numpy arrays /
array-likes, which are converted. Shapes must match exactly (no broadcasting, unlike
PyTorch's warning-and-broadcast): a mismatch raises :class:`~gradtape.errors.ShapeError`
naming the loss and both shapes. Weights (``weight=``, ``pos_weight=``) are constants, as in
PyTorch (which does not differentiate them): a traced tensor is refused.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape._signatures import losses as _sig
from gradtape._typing import typed_as
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import softmax as _ks
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._util import check_same_device, int_indices, replayable
from gradtape.ops.ctc import ctc_loss
from gradtape.ops.softmax import log_softmax_array
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cross_entropy",
    "ctc_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mae_loss",
    "margin_ranking_loss",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
]

Array = np.ndarray[Any, Any]
Reduction: TypeAlias = Literal["mean", "sum"]
"""The reductions that give a scalar loss."""
AnyReduction: TypeAlias = Literal["none", "mean", "sum"]
"""Every reduction of the losses but :func:`kl_div`'s ``"batchmean"``."""
ArrayTarget: TypeAlias = npt.NDArray[Any]
"""A target given as a numpy array (at run time anything ``np.asarray`` takes)."""
Weight: TypeAlias = "Tensor[Any, Any] | npt.ArrayLike | None"
"""A constant weight: an untraced tensor, a numpy array or an array-like (or ``None``)."""
IndexTarget: TypeAlias = "Tensor[Any, Any] | npt.ArrayLike"
"""Class indices (an integer tensor, array or list) or class probabilities."""

_REDUCTIONS = ("mean", "sum", "none")

# rule(c, needs) -> one gradient array (or None) per differentiable operand, where ``c`` is the
# output's gradient times the reduction's scale (a numpy scalar of the input's dtype, or an
# array of the output's shape for reduction="none") and ``needs[k]`` says whether operand k's
# gradient is wanted.
_Rule = Callable[[Any, tuple[bool, ...]], Sequence[Array | None]]
# diff(g, rebuild) -> one gradient tensor (or None) per differentiable operand: the second rule.
_Diff = Callable[[Any, Any], Sequence[Any]]


# ----- shared plumbing ---------------------------------------------------------------------


def _check_reduction(op: str, reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> None:
    if reduction not in allowed:
        names = ", ".join(repr(r) for r in allowed)
        raise ValueError(f"{op}: reduction must be one of {names}, got {reduction!r}")


def _is_tensor(value: object, like: Tensor[Any, Any]) -> bool:
    return value.__class__ is like.__class__


def _source(value: object, like: Tensor[Any, Any]) -> Any:
    """``value`` if it is a tensor (a target, a label tensor made before a captured call: a
    capture's recorder reads and guards its array), else ``None``."""
    return value if _is_tensor(value, like) else None


def _weight_for_replay(
    weight: object, w: Array | None, like: Tensor[Any, Any]
) -> tuple[Any, Array | None, tuple[Array, ...]]:
    """Where a capture's replay reads a loss's constant weight ``w`` (:func:`_constant`'s array
    of ``weight``; ``None``: no weight, ``(None, None, ())``): ``(source, w_src, writes)``. A
    tensor's array is read where it lives (the
    tensor a source: guarded, as a parameter is), so is a numpy array (a constant of the plan),
    and a list's array, made in this call, is a constant the second recording checks. Where
    ``w`` is a converted copy (float64 weights for float32 inputs), ``writes`` holds it and the
    replay refills it from ``w_src`` (:func:`_refill_weight`), so a weight the caller changes
    in place between calls is read as an eager call reads it. Call it where a recorder runs."""
    if w is None:
        return None, None, ()
    tensor = _is_tensor(weight, like)
    src: Any = weight.data if tensor else weight  # type: ignore[attr-defined]
    if src.__class__ is not np.ndarray:  # a list or a number: the array made from it in this call
        src = w
    if not tensor:
        _tp._recorder.host_array(src)
    return (weight if tensor else None), src, (() if src is w else (w,))


def _refill_weight(w_src: Array | None, w: Array | None) -> None:
    """A replay's first step with a weight: ``w`` (a converted copy) refilled from ``w_src``
    (see :func:`_weight_for_replay`); nothing where they are one array."""
    if w is not None and w_src is not None and w_src is not w:
        np.copyto(w, w_src, casting="unsafe")


def _scale_box(scale: float, x: Array) -> Any:
    """A loss's gradient scale that depends on the targets (the mean's ``1 / sum(weight[t])``)
    as a 0-d array a capture's replay refreshes, where a recorder runs; else the float."""
    return _as_array(scale, dtype=x.dtype) if _tp._recorder is not None and x.__class__ is np.ndarray else scale


def _target(op: str, input: Tensor[Any, Any], target: object, what: str = "target") -> tuple[Array, Any]:
    """``(target's data, target tensor or None)``: a float tensor must have the input's dtype
    and may be traced (then it gets a gradient); an integer or bool tensor, like an
    array-like, is a constant converted to the input's dtype. Its shape must be the input's.

    Raises:
        DTypeError: a float tensor of another dtype, or a non-numeric target.
        ShapeError: the shapes differ (names both).
        DeviceError: a target tensor on another device (names both); a numpy target for a GPU
            input is copied to the GPU.
    """
    x = input.data
    if _is_tensor(target, input):
        check_same_device(op, input, target)
    if _is_tensor(target, input) and target.data.dtype.kind == "f":  # type: ignore[attr-defined]
        t: Array = target.data  # type: ignore[attr-defined]
        if t.dtype != x.dtype:
            raise DTypeError(
                f"{op}: {what} dtype {t.dtype} (shape {t.shape}) differs from input dtype {x.dtype} "
                f"(shape {x.shape}); convert one with dev.tensor(x, dtype=...)"
            )
        tensor: Any = target
    else:
        t = _as_array(target.data if _is_tensor(target, input) else target)  # type: ignore[attr-defined]
        if t.dtype.kind not in "biuf":
            raise DTypeError(f"{op}: {what} must be numeric, got dtype {t.dtype} (shape {t.shape})")
        t = _arrays.into_memory_of(t.astype(x.dtype, copy=False), x)
        tensor = None
    if t.shape != x.shape:
        raise ShapeError(f"{op}: {what} of shape {t.shape} does not match input of shape {x.shape}")
    return t, tensor


def _constant(op: str, value: object, what: str, x: Array, shape: tuple[int, ...] | None = None) -> Array:
    """A weight as an array of ``x``'s dtype: an untraced tensor, an array or an array-like;
    with ``shape``, it must broadcast to it (names both shapes).

    Raises:
        ValueError: a traced tensor (PyTorch does not differentiate weights either).
        DTypeError: a non-numeric weight.
        ShapeError: the weight does not broadcast to ``shape``.
    """
    if getattr(value, "tape", NONE_TAPE) is not NONE_TAPE:
        raise ValueError(f"{op}: {what} is a constant; pass an untraced tensor or an array")
    w = _arrays.into_memory_of(_as_array(getattr(value, "data", value)), x)  # a numpy weight goes to x's GPU
    if w.dtype.kind not in "biuf":
        raise DTypeError(f"{op}: {what} must be numeric, got dtype {w.dtype} (shape {w.shape})")
    w = w.astype(x.dtype, copy=False)
    if shape is not None:
        try:
            if np.broadcast_shapes(w.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ShapeError(f"{op}: {what} of shape {w.shape} does not broadcast to input of shape {shape}") from None
    return w


def _legacy_reduction(op: str, weight: Any, reduction: str) -> tuple[Any, str]:
    """``(weight, reduction)``: gradtape's earlier positional order put ``reduction`` third,
    where PyTorch has ``weight``; a string there (never a weight) is the reduction.

    Raises:
        TypeError: a string in ``weight``'s place and a ``reduction`` too.
    """
    if not isinstance(weight, str):
        return weight, reduction
    if reduction != "mean":
        raise TypeError(f"{op}: reduction given twice: {weight!r} in weight's place and reduction={reduction!r}")
    return None, weight


def _scale(op: str, x: Array, reduction: str) -> float:
    if reduction in ("sum", "none"):
        return 1.0
    n = (x.shape[0] if x.ndim else 1) if reduction == "batchmean" else x.size
    if n == 0:
        raise ShapeError(f"{op}: reduction={reduction!r} over an empty input (shape {x.shape}) is undefined")
    return 1.0 / n


def _total(elems: Array, reduction: str, scale: float) -> Any:
    if reduction == "none":
        return elems
    total = elems.sum()
    return total if reduction == "sum" else total * elems.dtype.type(scale)


def _record(operands: Sequence[Any], value: Any, scale: float | Array, rule: _Rule, diff: _Diff | None) -> Any:
    """Wrap ``value`` (the loss: a scalar, or an array for ``reduction="none"``) as the output
    of ``operands[0]``'s kind and record one op whose first rule is ``rule`` and second rule
    ``diff``. ``operands`` are the tensors that may get a gradient (``None`` for one given as
    a constant), in the order the rules return their gradients; a gradient the store does not
    keep is not computed (:meth:`~gradtape.gradients.Gradients.wants`)."""
    main = operands[0]
    x = main.data
    tape = op_tape(*(t for t in operands if t is not None))
    out = main._from_op(_as_array(value, dtype=x.dtype), tape)
    if tape is not NONE_TAPE:
        ids = [(t.id, t._leaf) if t is not None else (-1, True) for t in operands]
        s = scale if scale.__class__ is np.ndarray else x.dtype.type(scale)  # a 0-d array: a replay refreshes it
        if all(t is None for t in operands[1:]):  # one differentiable input: the common case
            xid, x_leaf = ids[0]
            only = (True,) + (False,) * (len(operands) - 1)

            def one_backward(grads: Gradients, g: Array) -> None:
                if grads.wants(xid, x_leaf):
                    gx = rule(np.multiply(g, s), only)[0]
                    if gx is not None:
                        grads._accum(xid, _as_array(gx))

            def one_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
                return [(xid, diff(g, rebuild)[0])]  # type: ignore[misc]  # recorded only when diff is given

            one_backward.traceable = getattr(rule, "traceable", False)  # type: ignore[attr-defined]
            record(tape, out, one_backward, one_diff if diff is not None else None)
            return out

        def loss_backward(grads: Gradients, g: Array) -> None:
            needs = tuple(i >= 0 and grads.wants(i, leaf) for i, leaf in ids)
            gs = rule(np.multiply(g, s), needs)
            for (i, _), need, gi in zip(ids, needs, gs, strict=True):
                if need and gi is not None:
                    grads._accum(i, _as_array(gi))

        def loss_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            gs = diff(g, rebuild)  # type: ignore[misc]  # recorded only when diff is given
            return [(i, gi) for (i, _), gi in zip(ids, gs, strict=True) if gi is not None and i >= 0]

        record(tape, out, loss_backward, loss_diff if diff is not None else None)
    return out


def _rebuilt(t: Any, data: Array, rebuild: Any, g: Any) -> Any:
    """The second rule's view of an operand: the traced tensor ``t`` rebuilt, or ``data`` as a
    constant when the operand was given untraced (``t`` is None)."""
    return rebuild(t.id, t.data) if t is not None else g._like(data)


def _elementwise_loss(
    input: Any,
    tt: Any,
    reduction: str,
    elems: Array,
    grad_x: Callable[[Any], Array],
    grad_t: Callable[[Any], Array],
    diff: _Diff,
    scale: float,
    replay: tuple[str, Callable[[Array, Array], tuple[Array, ...]], Array, tuple[Array, ...]] | None = None,
    weights: tuple[tuple[object, Array], ...] = (),
) -> Any:
    """Record a loss of ``input`` and a target of its shape: ``grad_x(c)`` / ``grad_t(c)`` give
    their gradients for the scaled output gradient ``c``. ``replay``: ``(op, parts, t, saved)``
    for :func:`gradtape.capture`'s replays, ``op`` the loss's name (for messages) and
    ``parts(x, t)`` returning ``(elems, *saved)``, ``saved`` the arrays the rules read: the
    loss's forward, written once. ``weights``: ``(weight, w)`` pairs, the caller's constant
    weights and the arrays ``parts`` reads (see :func:`_replay_loss`)."""

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array | None, Array | None]:
        return (grad_x(c) if needs[0] else None), (grad_t(c) if needs[1] else None)

    out = _record([input, tt], _total(_as_array(elems), reduction, scale), scale, rule, diff)
    if replay is not None:
        op, parts, t, saved = replay
        _replay_loss(op, out, parts, (input.data, t), (input, tt), reduction, scale, saved, weights)
    return out


def _replay_loss(
    op: str,
    out: Any,
    parts: Callable[..., tuple[Array, ...]],
    arrays: tuple[Array, ...],
    sources: tuple[Any, ...],
    reduction: str,
    scale: float,
    saved: tuple[Array, ...],
    weights: tuple[tuple[object, Array], ...] = (),
) -> None:
    """Tell :func:`gradtape.capture`'s recorder how the loss ``out`` is made again:
    ``parts(*arrays)`` gives ``(elements, *saved)`` from the inputs' arrays (the loss's
    forward, which the eager op ran too), ``saved`` the arrays its rules read. ``weights``:
    ``(weight, w)`` pairs, each read as it is at each replay (:func:`_weight_for_replay`)."""
    if _tp._recorder is not None:
        refills: list[tuple[Array | None, Array | None]] = []
        writes: list[Array] = []
        for weight, w in weights:
            wt, w_src, more = _weight_for_replay(weight, w, out)
            sources = (*sources, wt)
            refills.append((w_src, w))
            writes.extend(more)
        args = (parts, arrays, reduction, scale, saved, tuple(refills))
        replayable(op, out.data, _loss_into, args, sources, out.tape, True, (*saved, *writes))


def _loss_into(
    out: Array,
    parts: Callable[..., tuple[Array, ...]],
    arrays: tuple[Array, ...],
    reduction: str,
    scale: float,
    saved: tuple[Array, ...],
    refills: tuple[tuple[Array | None, Array | None], ...] = (),
) -> None:
    """A loss again (for :func:`gradtape.capture`'s replays): its weights as they are now
    (``refills``, see :func:`_refill_weight`), its parts from the new inputs, the reduced loss
    into ``out``, the saved arrays refreshed."""
    for w_src, w in refills:
        _refill_weight(w_src, w)
    new = parts(*arrays)
    np.copyto(out, _total(_as_array(new[0]), reduction, scale))
    for old, fresh in zip(saved, new[1:], strict=True):
        np.copyto(old, fresh)


# ----- regression losses -------------------------------------------------------------------


@typed_as(_sig.mse_loss)
def mse_loss(input: Any, target: Any, reduction: AnyReduction = "mean") -> Any:
    """Mean squared error ``mean((input - target)**2)`` (``"sum"``: the sum; ``"none"``: the
    elementwise ``(input - target)**2``), PyTorch's ``F.mse_loss``.

    Args:
        input: float32/float64 tensor of any shape.
        target: a tensor of the same shape and dtype (it gets a gradient too if traced), or an
            integer tensor or a numpy array of the same shape (a constant of the input's dtype).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Returns:
        A scalar (``"mean"``, ``"sum"``) or a tensor of the input's shape (``"none"``), of the
        input's dtype.

    Gradients: ``d/dinput = 2 (input - target) * scale``, ``d/dtarget = -d/dinput``
    (``scale`` is ``1/numel`` for ``"mean"``, ``1`` otherwise, times the output's gradient).

    Raises:
        ShapeError: the shapes differ (names both), or ``"mean"`` over an empty input.
        DTypeError: a float target tensor of another dtype.
        ValueError: an unknown ``reduction``.
    """
    _check_reduction("mse_loss", reduction)
    t, tt = _target("mse_loss", input, target)
    x = input.data
    scale = _scale("mse_loss", x, reduction)
    sq, d = _mse_parts(x, t)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # 2 (x - t) scale g
        gx = (rebuild(input.id, x) - _rebuilt(tt, t, rebuild, g)) * (2.0 * scale) * g
        return gx, -gx

    grad_x, grad_t = (lambda c: d * (c + c)), (lambda c: d * -(c + c))
    return _elementwise_loss(input, tt, reduction, sq, grad_x, grad_t, diff, scale, ("mse_loss", _mse_parts, t, (d,)))


def _mse_parts(x: Array, t: Array) -> tuple[Array, Array]:
    """``((x - t)**2, x - t)``: :func:`mse_loss`'s elements and what its rules read."""
    d = x - t
    return d * d, d


@typed_as(_sig.l1_loss)
def l1_loss(input: Any, target: Any, reduction: AnyReduction = "mean") -> Any:
    """Mean absolute error ``mean(|input - target|)`` (``"sum"``: the sum; ``"none"``: the
    elementwise ``|input - target|``), PyTorch's ``F.l1_loss``; also exported as
    :func:`mae_loss`.

    Gradients: ``d/dinput = sign(input - target) * scale`` (``0`` where they are equal, as
    PyTorch), ``d/dtarget = -d/dinput``.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`mse_loss`.
    """
    _check_reduction("l1_loss", reduction)
    t, tt = _target("l1_loss", input, target)
    x = input.data
    scale = _scale("l1_loss", x, reduction)
    ad, sd = _l1_parts(x, t)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # a constant slope: sign(d) scale g
        gx = g * g._like(sd * x.dtype.type(scale))
        return gx, -gx

    return _elementwise_loss(
        input, tt, reduction, ad, lambda c: sd * c, lambda c: sd * -c, diff, scale, ("l1_loss", _l1_parts, t, (sd,))
    )


def _l1_parts(x: Array, t: Array) -> tuple[Array, Array]:
    """``(|x - t|, sign(x - t))``: :func:`l1_loss`'s elements and its slope."""
    d = x - t
    return np.abs(d), np.sign(d)


mae_loss = l1_loss
"""Alias of :func:`l1_loss` (mean absolute error)."""


def _huber_like(op: str, input: Any, target: Any, reduction: str, delta: float, divide: bool) -> Any:
    """``huber_loss(delta)``, or ``huber_loss(delta) / delta`` (``smooth_l1_loss(beta=delta)``)
    when ``divide``; ``delta == 0`` with ``divide`` is the L1 loss."""
    _check_reduction(op, reduction)
    t, tt = _target(op, input, target)
    x = input.data
    scale = _scale(op, x, reduction)
    k = x.dtype.type(delta)
    parts = functools.partial(_huber_parts, k, divide)
    elems, slope, ad = parts(x, t)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:
        # d inside the band (d / beta for smooth L1), the constant clipped slope outside
        from gradtape.ops.compare import where

        if divide and delta == 0:
            sl = g._like(slope)
        else:
            dtt = rebuild(input.id, x) - _rebuilt(tt, t, rebuild, g)
            band = dtt * (1.0 / float(k)) if divide else dtt
            sl = where(ad < k, band, g._like(_as_array(slope, dtype=x.dtype)))
        gx = sl * float(scale) * g
        return gx, -gx

    grad_x, grad_t = (lambda c: slope * c), (lambda c: slope * -c)
    return _elementwise_loss(input, tt, reduction, elems, grad_x, grad_t, diff, scale, (op, parts, t, (slope, ad)))


def _huber_parts(k: Any, divide: bool, x: Array, t: Array) -> tuple[Array, Array, Array]:
    """``(elements, slope, |x - t|)`` of :func:`_huber_like` with ``delta = k`` (in ``x``'s
    dtype): smooth L1 (``divide``) ``0.5 d**2 / k`` inside the band, ``|d| - 0.5 k`` outside
    (L1 for ``k = 0``), Huber ``0.5 d**2`` inside, ``k (|d| - 0.5 k)`` outside."""
    d = x - t
    ad = np.abs(d)
    dt = x.dtype.type
    if divide and k == 0:
        return ad, np.sign(d), ad
    inner = ad < k
    half = dt(0.5)
    if divide:
        return np.where(inner, half * d * d / k, ad - half * k), np.clip(d / k, dt(-1), dt(1)), ad
    return np.where(inner, half * d * d, k * (ad - half * k)), np.clip(d, -k, k), ad


@typed_as(_sig.huber_loss)
def huber_loss(input: Any, target: Any, reduction: AnyReduction = "mean", delta: float = 1.0) -> Any:
    """Huber loss, PyTorch's ``F.huber_loss``: with ``d = input - target``, elementwise
    ``0.5 d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)``; then the mean
    (default), the sum, or none.

    Gradients: ``d/dinput = clip(d, -delta, delta) * scale``, ``d/dtarget = -d/dinput``.

    Raises:
        ValueError: ``delta <= 0`` (PyTorch's rule), or an unknown ``reduction``.
        ShapeError, DTypeError: as :func:`mse_loss`.
    """
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    return _huber_like("huber_loss", input, target, reduction, delta, divide=False)


@typed_as(_sig.smooth_l1_loss)
def smooth_l1_loss(input: Any, target: Any, reduction: AnyReduction = "mean", beta: float = 1.0) -> Any:
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


def _rows(a: Array) -> Array:
    """One row per sample, the classes along the row: ``(C,)`` -> ``(1, C)``, ``(N, C)`` as
    is, ``(N, C, d1, ...)`` -> ``(N * d1 * ..., C)``."""
    if a.ndim == 1:
        return a.reshape(1, -1)
    if a.ndim == 2:
        return a
    return np.moveaxis(a, 1, -1).reshape(-1, a.shape[1])


def _unrows(r: Array, shape: tuple[int, ...]) -> Array:
    """The inverse of :func:`_rows`: rows back to an array of ``shape`` (C-contiguous)."""
    if len(shape) <= 2:
        return r.reshape(shape)
    return _arrays.contiguous(np.moveaxis(r.reshape((shape[0], *shape[2:], shape[1])), -1, 1))


def _batch_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of the per-sample losses: ``()`` for ``(C,)``, ``(N, d1, ...)`` for
    ``(N, C, d1, ...)``."""
    return () if len(shape) == 1 else (shape[0], *shape[2:])


def _per_row(c: Any, batch: tuple[int, ...]) -> Array:
    """The scaled output gradient ``c`` (a scalar, or an array of the batch shape) as a column
    of one value per row."""
    return np.broadcast_to(_as_array(c), batch).reshape(-1, 1)


def _class_axis_grad(g: Any, ndim: int) -> Any:
    """The second rule's output gradient broadcast against the input: ``(N, d1, ...)`` gets
    the class axis back as size 1."""
    return g.unsqueeze(1) if ndim >= 2 and g.ndim >= 1 else g


def _class_target(op: str, input: Tensor[Any, Any], target: object, probs: bool) -> tuple[Array, Any, bool]:
    """``(target array, target tensor or None, is_probability)``: integer class indices of the
    batch shape (an ``intp`` array; any integer tensor, array or list), or, where ``probs``,
    float class probabilities of the input's shape (a float tensor must have its dtype; it
    gets a gradient when traced).

    Raises:
        ShapeError: a 0-d input, or targets of the wrong shape (names both shapes).
        DTypeError: float targets where indices are needed (or of neither shape), bool or
            other non-integer targets, a float target tensor of another dtype.
    """
    x = input.data
    if x.ndim == 0:
        raise ShapeError(f"{op}: input must have shape (C,), (N, C) or (N, C, d1, ...), got shape ()")
    is_tensor = _is_tensor(target, input)
    t: Array = target.data if is_tensor else _as_array(target)  # type: ignore[attr-defined]
    if is_tensor:
        check_same_device(op, input, target)
    else:  # numpy targets for GPU logits: copied there
        t = _arrays.into_memory_of(t, x)
    batch = _batch_shape(x.shape)
    if t.dtype.kind == "f" and t.size == 0 and not is_tensor and t.ndim == 1 and x.ndim <= 2:
        t = t.astype(np.intp)  # _as_array([]) is float64: no targets, as indices
    if t.dtype.kind == "f":
        if not probs:
            raise DTypeError(
                f"{op}: targets must be integer class indices of shape {batch} (input of shape {x.shape}); "
                f"got dtype {t.dtype} and shape {t.shape}"
            )
        if t.ndim != x.ndim:
            raise DTypeError(
                f"{op}: targets must be integer class indices of shape {batch} or class probabilities "
                f"of the logits' shape {x.shape}; got dtype {t.dtype} and shape {t.shape}"
            )
        if t.shape != x.shape:
            raise ShapeError(f"{op}: probability targets of shape {t.shape} do not match logits of shape {x.shape}")
        if is_tensor and t.dtype != x.dtype:
            raise DTypeError(f"{op}: target dtype {t.dtype} (shape {t.shape}) differs from logits dtype {x.dtype}")
        return t.astype(x.dtype, copy=False), (target if is_tensor else None), True
    if t.dtype.kind not in "iu":
        raise DTypeError(
            f"{op}: targets must be integer class indices, got dtype {t.dtype} (shape {t.shape}; "
            f"input of shape {x.shape})"
        )
    t = int_indices(op, t, f"input of shape {x.shape}", "targets")
    if t.shape != batch:
        raise ShapeError(
            f"{op}: class-index targets must have shape (N,) for 2-D (N, C) input, (N, d1, ...) for "
            f"(N, C, d1, ...) input and () for 1-D (C,) input; got targets of shape {t.shape} for input "
            f"of shape {x.shape}"
        )
    return t, None, False


def _class_weight(op: str, weight: object, x: Array, classes: int) -> Array | None:
    """``weight`` (one per class, a constant) as an array of ``x``'s dtype, or None.

    Raises:
        ShapeError: not of shape ``(C,)``.
        ValueError, DTypeError: as :func:`_constant`.
    """
    if weight is None:
        return None
    w = _constant(op, weight, "weight", x)
    if w.shape != (classes,):
        raise ShapeError(
            f"{op}: weight of shape {w.shape} must have one entry per class, ({classes},), for input of shape {x.shape}"
        )
    return w


def _index_rows(op: str, t: Array, classes: int, ignore_index: int, w: Array | None, x: Array) -> tuple[Array, Array]:
    """``(safe, wrow)``: the flat class indices (``0`` where ignored) and each row's weight
    ``weight[target]`` (``1`` without weights; ``0`` where the target is ``ignore_index``).

    Raises:
        ValueError: an index outside ``[0, C)`` that is not ``ignore_index`` (names the range).
    """
    flat = t.reshape(-1)
    keep = flat != ignore_index
    bad = keep & ((flat < 0) | (flat >= classes))
    if bad.any():
        wrong = flat[bad]
        raise ValueError(
            f"{op}: class indices must lie in [0, {classes}) or equal ignore_index={ignore_index}, got min "
            f"{wrong.min()} and max {wrong.max()} among them (targets of shape {t.shape}, input of shape {x.shape})"
        )
    safe = np.where(keep, flat, 0)
    wrow = (w[safe] if w is not None else _arrays.ones(flat.shape, x.dtype, x)) * keep
    return safe, wrow.astype(x.dtype, copy=False)


def _class_reduce(op: str, elems: Array, reduction: str, denom: Any, x: Array) -> tuple[Any, float]:
    """``(value, scale)`` of per-sample losses ``elems`` (the batch shape): ``"mean"`` divides
    by ``denom`` (PyTorch's: the summed weights of the kept targets, or the number of samples
    for probability targets). Every target ignored: ``nan`` with a zero gradient, as PyTorch.

    Raises:
        ShapeError: ``"mean"`` over an empty batch.
    """
    if reduction == "none":
        return elems, 1.0
    total = elems.sum()
    if reduction == "sum":
        return total, 1.0
    if elems.size == 0:
        raise ShapeError(f"{op}: empty batch (logits of shape {x.shape}): reduction='mean' is undefined")
    if denom == 0:
        return x.dtype.type(np.nan), 0.0
    return total / x.dtype.type(denom), 1.0 / float(denom)


@typed_as(_sig.nll_loss)
def nll_loss(
    input: Any, target: Any, weight: Weight = None, ignore_index: int = -100, reduction: AnyReduction = "mean"
) -> Any:
    """Negative log-likelihood of log-probabilities against class indices, PyTorch's
    ``F.nll_loss``: per sample ``l = -weight[t] * input[n, t]`` (``t`` the sample's target;
    ``0`` where ``t == ignore_index``); ``"mean"`` is PyTorch's weighted mean
    ``sum(l) / sum(weight[t])`` over the kept targets, ``"sum"`` the sum, ``"none"`` the
    per-sample losses of the target's shape.

    Args:
        input: log-probabilities, float32/float64, of shape ``(N, C)``, ``(C,)`` (one sample)
            or ``(N, C, d1, ...)`` (the classes along axis 1, e.g. per pixel).
        target: integer class indices in ``[0, C)`` of shape ``(N,)``, ``()`` or
            ``(N, d1, ...)``: an integer tensor (int64 as PyTorch's, or int32), array or list;
            never differentiated.
        weight: optional per-class weights of shape ``(C,)`` (a constant).
        ignore_index: a target value that contributes nothing (not even to the mean's
            denominator).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Returns:
        A scalar, or the per-sample losses (shape ``(N,)``/``(N, d1, ...)``), of the input's
        dtype. Every target ignored with ``"mean"``: ``nan`` (PyTorch's ``0 / 0``) with a zero
        gradient.

    Gradient: ``d/dinput[n, t] = -weight[t] * scale``, zero elsewhere (``scale`` is
    ``1 / sum(weight[t])`` for ``"mean"``, times the output's gradient).

    Raises:
        ShapeError: a 0-d input, targets of the wrong shape, a weight not of shape ``(C,)``, or
            ``"mean"`` over an empty batch (names the shapes).
        DTypeError: float (or bool) targets, a non-float input.
        ValueError: a class index outside ``[0, C)`` other than ``ignore_index``, a traced
            weight, an unknown ``reduction``.
    """
    op = "nll_loss"
    _check_reduction(op, reduction)
    t, _, _ = _class_target(op, input, target, probs=False)
    x = input.data
    classes = x.shape[0] if x.ndim == 1 else x.shape[1]
    w = _class_weight(op, weight, x, classes)
    rows = _rows(x)
    safe, wrow = _index_rows(op, t, classes, ignore_index, w, x)
    at = _arrays.arange(rows.shape[0], x)
    batch = _batch_shape(x.shape)
    value, scale = _class_reduce(op, (-(wrow * rows[at, safe])).reshape(batch), reduction, wrow.sum(), x)
    q = _arrays.zeros(rows.shape, x.dtype, x)  # the weighted one-hot rows: the gradient is -q * c
    q[at, safe] = wrow
    sbox = _scale_box(scale, x)  # the scale changes with the kept targets: a replay refreshes it

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array]:
        return (_unrows(q * -_per_row(c, batch), x.shape),)

    def diff(g: Any, rebuild: Any) -> tuple[Any]:  # a constant slope: -q scale g
        return (g._like(_unrows(q * x.dtype.type(-scale), x.shape)) * _class_axis_grad(g, x.ndim),)

    out = _record([input], value, sbox, rule, diff)
    if _tp._recorder is not None:
        wt, w_src, writes = _weight_for_replay(weight, w, input)
        args = (x, t, classes, ignore_index, reduction, q, sbox, w_src, w)
        sources = (input, _source(target, input), wt)
        replayable(op, out.data, _nll_into, args, sources, out.tape, True, (q, sbox, *writes))
    return out


def _nll_into(
    out: Array,
    x: Array,
    t: Array,
    classes: int,
    ignore_index: int,
    reduction: str,
    q: Array,
    sbox: Array,
    w_src: Array | None,
    w: Array | None,
) -> None:
    """:func:`nll_loss` again, for :func:`gradtape.capture`'s replays: the loss into ``out``,
    the weighted one-hot rows into ``q`` and the scale into ``sbox``, from the new targets ``t``
    and the class weights as they are now (``w`` refilled from ``w_src``)."""
    op = "nll_loss"
    _refill_weight(w_src, w)
    rows = _rows(x)
    safe, wrow = _index_rows(op, t, classes, ignore_index, w, x)
    at = _arrays.arange(rows.shape[0], x)
    value, scale = _class_reduce(
        op, (-(wrow * rows[at, safe])).reshape(_batch_shape(x.shape)), reduction, wrow.sum(), x
    )
    q.fill(0)
    q[at, safe] = wrow
    np.copyto(sbox, scale, casting="unsafe")
    np.copyto(out, value, casting="unsafe")


@typed_as(_sig.cross_entropy)
def cross_entropy(
    input: Any,
    target: Any,
    weight: Weight = None,
    ignore_index: int = -100,
    reduction: AnyReduction = "mean",
    label_smoothing: float = 0.0,
) -> Any:
    """Softmax cross-entropy of unnormalised logits against class indices or class
    probabilities, PyTorch's ``F.cross_entropy`` (which decides the same way, by the target's
    kind), with the classes along axis 1 (``(N, C)``, ``(N, C, d1, ...)``) or ``(C,)`` for one
    sample. With ``logp = log_softmax(input, 1)``, ``C`` classes and ``eps = label_smoothing``:

    - **integer** targets ``t`` of the batch shape (``(N,)``, ``(N, d1, ...)``, ``()``) are
      class indices: per sample ``l = -(1 - eps) weight[t] logp[t] - eps / C * sum_c
      weight[c] logp[c]`` (``0`` where ``t == ignore_index``); ``"mean"`` divides the sum by
      ``sum(weight[t])`` over the kept targets (their number without weights), PyTorch's
      weighted mean (also for the smoothing term);
    - **float** targets of the input's shape are probabilities (soft labels, a teacher's
      softmax): ``l = -sum_c weight[c] ((1 - eps) t[c] + eps / C) logp[c]``; ``"mean"``
      divides by the number of samples (``N * d1 * ...``); ``ignore_index`` does not apply.

    ``"sum"`` sums, ``"none"`` returns the per-sample losses (the batch shape).

    Args:
        input: float32/float64 logits of shape ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target: class indices in ``[0, C)`` (an integer tensor, int64 as PyTorch's or int32,
            an integer array or a list; never differentiated), or class probabilities of the
            input's shape (an array, or a tensor of its dtype, which gets a gradient when
            traced; rows need not be normalised, the formula is used as is).
        weight: optional per-class weights of shape ``(C,)`` (a constant). A string here is
            taken as ``reduction`` (gradtape's earlier positional order).
        ignore_index: a class-index target value that contributes nothing.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        label_smoothing: ``eps`` in ``[0, 1]``: mixes the target with the uniform
            distribution over the classes (Szegedy et al. 2016), as PyTorch.

    Returns:
        A scalar, or the per-sample losses, of the input's dtype; it owns a tape if the input
        or a float target tensor does. The static type takes the input's tape kind only: with
        untraced logits and a traced probability tensor the result owns a tape at run time
        but is typed ``NoneTape``. Every index target ignored with ``"mean"``: ``nan`` with a
        zero gradient, as PyTorch.

    Gradients: with ``q`` the sample's weighted target distribution above (so
    ``l = -sum_c q[c] logp[c]``), ``d/dinput = (softmax(input) * sum(q) - q) * scale``
    (``scale`` from the reduction, times the output's gradient); a traced probability target
    gets ``-(1 - eps) weight logp * scale``. The common case (``(N, C)`` logits, class
    indices, no weight, no smoothing, no ignored target, a reduced loss) runs the compiled
    kernels of :func:`gradtape.devices.kernels.softmax.cross_entropy_forward` (two kernel
    passes around numpy's ``exp``, the index check included; the backward one pass over the
    saved softmax), as PyTorch fuses ``log_softmax`` with ``nll_loss``.

    Raises:
        ShapeError: a 0-d input, targets of neither shape (names both shapes), a weight not of
            shape ``(C,)``, or ``"mean"`` over an empty batch.
        DTypeError: targets neither integer nor floating (bools), float targets not of the
            input's shape (e.g. ``(N,)`` floats), a float target tensor of another dtype.
        ValueError: a class index outside ``[0, C)`` other than ``ignore_index``,
            ``label_smoothing`` outside ``[0, 1]``, a traced weight, an unknown ``reduction``.
    """
    op = "cross_entropy"
    weight, red = _legacy_reduction(op, weight, reduction)
    _check_reduction(op, red)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must lie in [0, 1], got {label_smoothing}")
    t, t_tensor, probs = _class_target(op, input, target, probs=True)
    x = input.data
    classes = x.shape[0] if x.ndim == 1 else x.shape[1]
    w = _class_weight(op, weight, x, classes)
    eps = float(label_smoothing)
    if x.ndim == 2 and not probs and w is None and eps == 0.0 and red != "none" and x.shape[0] > 0:
        # the kernels refuse any index outside [0, C): an ignore_index outside it (PyTorch's
        # -100) needs no check first; a target equal to it goes the general way
        if not 0 <= ignore_index < classes:
            try:
                return _index_cross_entropy(input, t, red, target)
            except ValueError:
                pass  # an ignored target or a bad index: the general path tells which
        elif not (t == ignore_index).any():
            return _index_cross_entropy(input, t, red, target)
    dt = x.dtype.type
    parts = functools.partial(_ce_parts, probs, eps, classes, ignore_index, w, red)
    value, scale, logp, q, qsum = parts(x, t)
    batch = _batch_shape(x.shape)
    sbox = _scale_box(scale, x)  # the scale changes with the kept targets: a replay refreshes it
    ax = 0 if x.ndim == 1 else 1
    wb = None if w is None else w.reshape((classes,) + (1,) * max(x.ndim - 2, 0))  # broadcast along axis 1

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array | None, Array | None]:
        cr = _per_row(c, batch)
        gx = gt = None
        if needs[0]:
            p = np.exp(logp)
            p *= qsum
            p -= q
            p *= cr
            gx = _unrows(p, x.shape)
        if needs[1]:  # a traced probability target
            k = logp * dt(-(1.0 - eps))
            if w is not None:
                k *= w
            k *= cr
            gt = _unrows(k, x.shape)
        return gx, gt

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # softmax(x) sum(q) - q; -(1 - eps) w logp
        xt = rebuild(input.id, x)
        ge = _class_axis_grad(g, x.ndim) * scale
        if t_tensor is None:
            qc = _unrows(q, x.shape)
            return (xt.softmax(ax) * g._like(qc.sum(axis=ax, keepdims=True)) - g._like(qc)) * ge, None
        qv = rebuild(t_tensor.id, t_tensor.data)
        if eps:
            qv = qv * (1.0 - eps) + eps / classes
        if wb is not None:
            qv = qv * g._like(wb)
        gx = (xt.softmax(ax) * qv.sum(axis=ax, keepdims=True) - qv) * ge
        k = xt.log_softmax(ax) * -(1.0 - eps)
        if wb is not None:
            k = k * g._like(wb)
        return gx, k * ge

    out = _record([input, t_tensor], value, sbox, rule, diff)
    if _tp._recorder is not None:
        wt, w_src, writes = _weight_for_replay(weight, w, input)
        sources = (input, _source(target, input), wt)
        saved = (logp, q, qsum, sbox)
        replayable(op, out.data, _ce_into, (parts, x, t, saved, w_src, w), sources, out.tape, True, (*saved, *writes))
    return out


def _ce_parts(
    probs: bool,
    eps: float,
    classes: int,
    ignore_index: int,
    w: Array | None,
    reduction: str,
    x: Array,
    t: Array,
) -> tuple[Any, float, Array, Array, Array]:
    """:func:`cross_entropy`'s general path: ``(value, scale, logp, q, qsum)``, the loss (a
    scalar, or the per-sample losses), the scale of its gradient, the log-softmax rows, the
    rows of target weights ``q`` (smoothed, weighted, zero where ignored) and their sums."""
    op = "cross_entropy"
    dt = x.dtype.type
    rows = _rows(x)
    logp = log_softmax_array(rows, 1)
    if probs:
        q = _rows(t)
        if eps:
            q = q * dt(1.0 - eps) + dt(eps / classes)
        if w is not None:
            q = q * w
        denom: Any = rows.shape[0]
    else:
        safe, wrow = _index_rows(op, t, classes, ignore_index, w, x)
        q = _arrays.zeros(rows.shape, x.dtype, x)
        q[_arrays.arange(rows.shape[0], x), safe] = wrow * dt(1.0 - eps)
        if eps:
            q += (wrow != 0)[:, None] * (dt(eps / classes) if w is None else w * dt(eps / classes))
        denom = wrow.sum()
    value, scale = _class_reduce(op, (-(q * logp).sum(axis=1)).reshape(_batch_shape(x.shape)), reduction, denom, x)
    return value, scale, logp, q, q.sum(axis=1, keepdims=True)


def _ce_into(
    out: Array,
    parts: Callable[..., Any],
    x: Array,
    t: Array,
    saved: tuple[Array, ...],
    w_src: Array | None,
    w: Array | None,
) -> None:
    """:func:`cross_entropy`'s general path again (a capture's replay): the loss into ``out``,
    the arrays its rule reads and the scale (``saved``: ``logp, q, qsum, scale``) refreshed,
    with the class weights as they are now (``w``, which ``parts`` reads, refilled from
    ``w_src``)."""
    _refill_weight(w_src, w)
    value, scale, *arrays = parts(x, t)
    for old, new in zip(saved, (*arrays, scale), strict=True):
        np.copyto(old, new, casting="unsafe")
    np.copyto(out, value, casting="unsafe")


def _index_cross_entropy(logits: Tensor[Any, Any], t: Array, reduction: str, target: object = None) -> Any:
    """:func:`cross_entropy`'s common case on the compiled kernels: ``(N, C)`` logits (``N >
    0``), class indices, no weight, no smoothing, nothing ignored, a reduced loss. ``target``:
    the target tensor ``t`` came from, if any (a capture's replay reads its array)."""
    x = logits.data
    n = x.shape[0]
    total, p = _ks.cross_entropy_forward(x, t)  # raises ValueError for an index outside [0, C)
    scale = 1.0 / n if reduction == "mean" else 1.0
    fresh = [p]  # the softmax the backward kernel overwrites: its own the first time (and after each replay)

    def rule(cg: Any, needs: tuple[bool, ...]) -> tuple[Array | None]:
        # a pass run again (retain_graph) needs the softmax again: recompute it from x
        q = fresh.pop() if fresh else _ks.cross_entropy_forward(x, t)[1]
        return (_ks.cross_entropy_backward(q, t, float(cg)),)

    # its kernel notes itself; float(cg) is the loss's gradient, the seed's 1 when the loss is
    # the root (a compiled replay's check catches one that changes between steps)
    rule.traceable = True  # type: ignore[attr-defined]

    def diff(g: Any, rebuild: Any) -> tuple[Any]:  # (softmax(x) - onehot) scale g
        onehot = _arrays.zeros(x.shape, x.dtype, x)
        onehot[_arrays.arange(n, x), t] = 1
        return ((rebuild(logits.id, x).softmax(1) - g._like(onehot)) * scale * g,)

    out = _record([logits], total * scale, scale, rule, diff)
    if _tp._recorder is not None:
        args = (x, t, scale, p, fresh)
        sources = (logits, _source(target, logits))
        replayable("cross_entropy", out.data, _index_cross_entropy_into, args, sources, out.tape, True, (p,))
    return out


def _index_cross_entropy_into(out: Array, x: Array, t: Array, scale: float, p: Array, fresh: list[Array]) -> None:
    """:func:`_index_cross_entropy`'s loss into ``out`` and its softmax into ``p`` (a replay of
    :func:`gradtape.capture`), which is then fresh again: the replayed backward overwrites it
    with the gradient, as the eager pass does, instead of computing the softmax a second time
    (a pass run again without a forward still recomputes it from ``x``)."""
    total, q = _ks.cross_entropy_forward(x, t, p)  # the softmax straight into p
    out[()] = total * scale
    if q is not p:
        np.copyto(p, q)
    if not fresh:
        fresh.append(p)


@typed_as(_sig.binary_cross_entropy)
def binary_cross_entropy(input: Any, target: Any, weight: Weight = None, reduction: AnyReduction = "mean") -> Any:
    """Binary cross-entropy of probabilities, PyTorch's ``F.binary_cross_entropy``: with
    ``x = input`` and ``t = target`` in ``[0, 1]``, elementwise
    ``-weight * (t * max(log x, -100) + (1 - t) * max(log(1 - x), -100))`` (the logs clamped
    at ``-100`` as PyTorch, so ``x = 0`` or ``1`` gives a finite loss); then the mean
    (default), the sum, or none. Prefer :func:`binary_cross_entropy_with_logits` on logits.

    Args:
        input: probabilities, float32/float64 tensor of any shape (e.g. a sigmoid's output).
        target: probabilities of the same shape (a tensor, traced or not, an integer tensor,
            or an array).
        weight: optional constant rescaling each element, broadcast to the input's shape.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Gradients (PyTorch's): ``d/dx = weight (x - t) / max(x (1 - x), 1e-12) * scale``,
    ``d/dt = weight (log(1 - x) - log x) * scale``.

    Raises:
        ValueError: an input or target element outside ``[0, 1]`` (NaN included, as PyTorch),
            a traced weight, an unknown ``reduction``.
        ShapeError: the shapes differ, or ``weight`` does not broadcast (names the shapes).
        DTypeError: a float target tensor of another dtype.
    """
    op = "binary_cross_entropy"
    _check_reduction(op, reduction)
    t, tt = _target(op, input, target)
    x = input.data
    w = None if weight is None else _constant(op, weight, "weight", x, x.shape)
    scale = _scale(op, x, reduction)
    dt = x.dtype.type
    parts = functools.partial(_bce_parts, w)
    elems, slope_x, slope_t = parts(x, t)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # w (x - t) / max(x (1 - x), eps); w (log(1 - x) - log x)
        xt = rebuild(input.id, x)
        tv = _rebuilt(tt, t, rebuild, g)
        ge = g * float(scale) if w is None else g * g._like(w * dt(scale))
        gx = (xt - tv) / (xt * (1.0 - xt)).clamp(min=1e-12) * ge
        gt = ((1.0 - xt).log() - xt.log()) * ge if tt is not None else None
        return gx, gt

    replay = (op, parts, t, (slope_x, slope_t))
    weights = () if w is None else ((weight, w),)
    return _elementwise_loss(
        input, tt, reduction, elems, lambda c: slope_x * c, lambda c: slope_t * c, diff, scale, replay, weights
    )


def _bce_parts(w: Array | None, x: Array, t: Array) -> tuple[Array, Array, Array]:
    """``(elements, d/dx slope, d/dt slope)`` of :func:`binary_cross_entropy` (weighted by
    ``w`` where given), after its range check, which a capture's replay makes too.

    Raises:
        ValueError: an element of ``x`` or ``t`` outside ``[0, 1]`` (NaN included).
    """
    op = "binary_cross_entropy"
    for what, a in (("input", x), ("target", t)):
        if not ((a >= 0) & (a <= 1)).all():
            raise ValueError(
                f"{op}: all elements of {what} should be between 0 and 1 ({what} of shape {a.shape}: "
                f"min {np.nanmin(a) if a.size else None}, max {np.nanmax(a) if a.size else None})"
            )
    dt = x.dtype.type
    with np.errstate(divide="ignore"):
        lx, l1x = np.log(x), np.log1p(-x)
    elems = -(t * np.maximum(lx, dt(-100)) + (1 - t) * np.maximum(l1x, dt(-100)))
    if w is not None:
        elems = elems * w
    slope_x = (x - t) / np.maximum(x * (1 - x), dt(1e-12))
    with np.errstate(invalid="ignore"):
        slope_t = l1x - lx
    if w is not None:
        slope_x, slope_t = slope_x * w, slope_t * w
    return elems, slope_x, slope_t


@typed_as(_sig.binary_cross_entropy_with_logits)
def binary_cross_entropy_with_logits(
    input: Any,
    target: Any,
    weight: Weight = None,
    reduction: AnyReduction = "mean",
    pos_weight: Weight = None,
) -> Any:
    """Sigmoid + binary cross-entropy in one stable op, PyTorch's
    ``F.binary_cross_entropy_with_logits``: with logits ``x`` and targets ``t`` in ``[0, 1]``,
    elementwise ``-weight (t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))``, computed as
    ``weight ((1 - t) x + softplus(-x))`` with ``softplus(-x) = max(-x, 0) + log1p(exp(-|x|))``
    so that no ``exp`` overflows for any ``x``.

    Args:
        input: logits, float32/float64 tensor of any shape.
        target: probabilities of the same shape (a tensor, traced or not, an integer tensor,
            or an array).
        weight: optional constant rescaling each element, broadcast to the input's shape. A
            string here is taken as ``reduction`` (gradtape's earlier positional order).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        pos_weight: optional weight of the positive term, broadcast against the input (PyTorch:
            one weight per class along the last axis): elementwise
            ``weight ((1 - t) x + (1 + (pos_weight - 1) t) * softplus(-x))``. A constant: it
            gets no gradient (a traced tensor is rejected).

    Gradients: ``d/dx = weight (sigmoid(x) - t) * scale`` (with ``pos_weight``:
    ``weight ((1 - t) - (1 + (pw - 1) t) sigmoid(-x)) * scale``), ``d/dt = -weight x * scale``
    (with ``pos_weight``: ``weight (-x + (pw - 1) softplus(-x)) * scale``).

    Raises:
        ShapeError: the shapes differ, or ``weight`` or ``pos_weight`` does not broadcast to
            the input's shape (names both shapes).
        DTypeError: a float target tensor of another dtype.
        ValueError: an unknown ``reduction``, or a traced ``weight`` or ``pos_weight``.
    """
    op = "binary_cross_entropy_with_logits"
    weight, red = _legacy_reduction(op, weight, reduction)
    _check_reduction(op, red)
    t, tt = _target(op, input, target)
    x = input.data
    scale = _scale(op, x, red)
    dt = x.dtype.type
    w = None if weight is None else _constant(op, weight, "weight", x, x.shape)
    pw = None if pos_weight is None else _constant(op, pos_weight, "pos_weight", x, x.shape)
    parts = functools.partial(_bce_logits_parts, w, pw)
    elems, e, sp, *rest = parts(x, t)
    lw = rest[0] if rest else None

    def grad_x(c: Any) -> Array:
        neg_sig = np.where(x >= 0, e, dt(1)) / (dt(1) + e)  # sigmoid(-x), stable
        gx: Array = (1 - t) - (neg_sig if lw is None else lw * neg_sig)
        gx *= c if w is None else c * w
        return gx

    def grad_t(c: Any) -> Array:
        gt: Array = -x if pw is None else (pw - 1) * sp - x
        gt = gt * (c if w is None else c * w)
        return gt

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:  # (1 - t) - lw sigmoid(-x); the target's
        xt = rebuild(input.id, x)
        tv = _rebuilt(tt, t, rebuild, g)
        ge = g * float(scale) if w is None else g * g._like(_as_array(w * dt(scale)))
        neg_sig = (-xt).sigmoid()
        gx = ((1.0 - tv) - (neg_sig if pw is None else (tv * g._like(pw - 1) + 1.0) * neg_sig)) * ge
        if tt is None:
            return gx, None
        gt = -xt if pw is None else (-xt).softplus() * g._like(np.broadcast_to(pw - 1, x.shape).copy()) - xt
        return gx, gt * ge

    weights = tuple((given, c) for given, c in ((weight, w), (pos_weight, pw)) if c is not None)
    replay = (op, parts, t, (e, sp, *rest))
    return _elementwise_loss(input, tt, red, elems, grad_x, grad_t, diff, scale, replay, weights)


def _bce_logits_parts(w: Array | None, pw: Array | None, x: Array, t: Array) -> tuple[Array, ...]:
    """``(elements, e, sp)`` (and ``lw`` with ``pos_weight``) of
    :func:`binary_cross_entropy_with_logits`: ``e = exp(-|x|)`` (in ``(0, 1]``: never
    overflows), ``sp = softplus(-x) = log1p(e) + max(-x, 0)``, ``lw = 1 + (pw - 1) t``, and the
    elements ``((1 - t) x + lw sp) w``."""
    dt = x.dtype.type
    e = np.exp(-np.abs(x))
    sp = np.log1p(e) + np.maximum(-x, dt(0))
    lw = None if pw is None else 1 + (pw - 1) * t
    elems = (1 - t) * x + (sp if lw is None else lw * sp)
    if w is not None:
        elems = elems * w
    return (elems, e, sp) if lw is None else (elems, e, sp, lw)


# ----- distribution losses ------------------------------------------------------------------


@typed_as(_sig.kl_div)
def kl_div(
    input: Any,
    target: Any,
    reduction: Literal["mean", "sum", "batchmean", "none"] = "mean",
    log_target: bool = False,
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
            recommends; a 0-d input divides by 1); ``"sum"``; ``"none"``: the elementwise
            terms.
        log_target: whether ``target`` holds log-probabilities.

    Gradients: ``d/dinput = -p * scale``; ``d/dtarget = (log p + 1 - log q) * scale``
    (``-inf`` where ``p == 0``, the one-sided limit; PyTorch gives NaN there), or with
    ``log_target``: ``exp(log p) * (log p - log q + 1) * scale``.

    Raises:
        ShapeError: the shapes differ (names both), or a ``"mean"``/``"batchmean"`` over
            an empty input.
        DTypeError: a float target tensor of another dtype.
        ValueError: an unknown ``reduction``.
    """
    _check_reduction("kl_div", reduction, ("mean", "sum", "batchmean", "none"))
    t, tt = _target("kl_div", input, target)
    x = input.data
    scale = _scale("kl_div", x, reduction)
    parts = functools.partial(_kl_parts, bool(log_target))
    elems, made = parts(x, t)
    p, log_p = (made, t) if log_target else (t, made)  # made: exp(t), or log(t)

    def grad_t(c: Any) -> Array:
        with np.errstate(invalid="ignore"):
            return (p * (t - x + 1) if log_target else log_p + 1 - x) * c  # type: ignore[no-any-return]

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:
        xt = rebuild(input.id, x)
        tv = _rebuilt(tt, t, rebuild, g)
        pv = tv.exp() if log_target else tv
        gx = -(pv * g) * float(scale)
        if tt is None:
            return gx, None
        gt = (pv * (tv - xt + 1.0) if log_target else tv.log() + 1.0 - xt) * g * float(scale)
        return gx, gt

    replay = ("kl_div", parts, t, (made,))
    return _elementwise_loss(input, tt, reduction, elems, lambda c: p * -c, grad_t, diff, scale, replay)


def _kl_parts(log_target: bool, x: Array, t: Array) -> tuple[Array, Array]:
    """``(elements, exp(t))`` of :func:`kl_div` with ``log_target``, else ``(elements, log t)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p, log_p = (np.exp(t), t) if log_target else (t, np.log(t))
        xlogx = p * log_p if log_target else np.where(t == 0, x.dtype.type(0), t * log_p)
    return xlogx - p * x, (p if log_target else log_p)


def _same_inputs(op: str, names: Sequence[str], tensors: Sequence[Tensor[Any, Any]], ranks: tuple[int, ...]) -> None:
    """Inputs that must share shape and dtype (and have one of ``ranks``, if given).

    Raises:
        ShapeError: a shape differs from the first's, or a rank not in ``ranks`` (names them).
        DTypeError: a dtype differs from the first's.
    """
    first = tensors[0].data
    for name, t in zip(names[1:], tensors[1:], strict=True):
        if t.device is not tensors[0].device:
            check_same_device(op, tensors[0], t)
        if t.data.dtype != first.dtype:
            raise DTypeError(
                f"{op}: {name} dtype {t.data.dtype} (shape {t.data.shape}) differs from {names[0]} dtype "
                f"{first.dtype} (shape {first.shape})"
            )
        if t.data.shape != first.shape:
            raise ShapeError(f"{op}: {name} of shape {t.data.shape} does not match {names[0]} of shape {first.shape}")
    if ranks and first.ndim not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ShapeError(f"{op}: {names[0]} must be {want} (batch, features), got shape {first.shape}")


def _sample_target(op: str, target: object, like: Tensor[Any, Any], shape: tuple[int, ...]) -> Array:
    """A label target (``1`` / ``-1``, compared, never differentiated) of ``shape``, as an array.

    Raises:
        DTypeError: a non-numeric target.
        ShapeError: not of ``shape`` (names it and the input's).
    """
    if _is_tensor(target, like):
        check_same_device(op, like, target)
    y = _arrays.into_memory_of(_as_array(target.data if _is_tensor(target, like) else target), like.data)  # type: ignore[attr-defined]
    if y.dtype.kind not in "biuf":
        raise DTypeError(f"{op}: target must be numeric (1 or -1), got dtype {y.dtype} (shape {y.shape})")
    if y.shape != shape:
        raise ShapeError(f"{op}: target of shape {y.shape} does not match {shape} (input of shape {like.data.shape})")
    return y


# ----- embedding and ranking losses ---------------------------------------------------------


@typed_as(_sig.cosine_embedding_loss)
def cosine_embedding_loss(
    input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: AnyReduction = "mean"
) -> Any:
    """Cosine embedding loss, PyTorch's ``F.cosine_embedding_loss``: with
    ``cos = sum(a b) / sqrt((sum(a a) + 1e-12) (sum(b b) + 1e-12))`` along the last axis, per
    sample ``1 - cos`` where ``target == 1``, ``max(0, cos - margin)`` where ``target == -1``,
    ``0`` for any other target value; then the mean over samples (default), the sum or none.

    Args:
        input1, input2: float32/float64 tensors of shape ``(N, D)`` (or ``(D,)``: one pair),
            the same shape and dtype.
        target: labels ``1`` (similar) / ``-1`` (dissimilar) of shape ``(N,)`` (``()``): a
            tensor of any numeric dtype, or an array; never differentiated.
        margin: in ``[-1, 1]``, PyTorch suggests ``[0, 0.5]``.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (shape ``(N,)``).

    Gradients: ``d cos / d a = b / |a||b| - cos a / |a|**2`` (with the ``1e-12`` terms), times
    ``-1`` (similar pairs) or ``1`` (dissimilar pairs with ``cos >= margin``), times ``scale``.

    Raises:
        ShapeError: inputs of different shapes or not 1-D/2-D, a target not of shape ``(N,)``
            (names the shapes), ``"mean"`` over an empty batch.
        DTypeError: inputs of different dtypes, a non-numeric target.
        ValueError: an unknown ``reduction``.
    """
    op = "cosine_embedding_loss"
    _check_reduction(op, reduction)
    _same_inputs(op, ("input1", "input2"), (input1, input2), (1, 2))
    a, b = input1.data, input2.data
    y = _sample_target(op, target, input1, a.shape[:-1])
    dt = a.dtype.type
    parts = functools.partial(_cosine_embedding_parts, float(margin))
    elems, m1, m2, den, cos, coef = parts(a, b, y)
    scale = _scale(op, elems, reduction)

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array | None, Array | None]:
        k = (coef * c)[..., None]
        ga = (b / den[..., None] - (cos / m1)[..., None] * a) * k if needs[0] else None
        gb = (a / den[..., None] - (cos / m2)[..., None] * b) * k if needs[1] else None
        return ga, gb

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:
        at, bt = rebuild(input1.id, a), rebuild(input2.id, b)
        n1 = (at * at).sum(axis=-1, keepdims=True) + 1e-12
        n2 = (bt * bt).sum(axis=-1, keepdims=True) + 1e-12
        d = (n1 * n2).sqrt()
        cs = (at * bt).sum(axis=-1, keepdims=True) / d
        k = g._like(coef[..., None] * dt(scale)) * (g.unsqueeze(-1) if g.ndim else g)
        return (bt / d - cs * at / n1) * k, (at / d - cs * bt / n2) * k

    out = _record([input1, input2], _total(elems, reduction, scale), scale, rule, diff)
    sources = (input1, input2, _source(target, input1))
    _replay_loss(op, out, parts, (a, b, y), sources, reduction, scale, (m1, m2, den, cos, coef))
    return out


def _cosine_embedding_parts(margin: float, a: Array, b: Array, y: Array) -> tuple[Array, ...]:
    """``(elements, |a|^2, |b|^2, |a| |b|, cos, d loss / d cos)`` of
    :func:`cosine_embedding_loss` (the squared norms with ``1e-12`` added)."""
    dt = a.dtype.type
    tiny = dt(1e-12)
    m1, m2 = (a * a).sum(-1) + tiny, (b * b).sum(-1) + tiny
    den = np.sqrt(m1 * m2)
    cos = (a * b).sum(-1) / den
    pos, neg = y == 1, y == -1
    elems = np.where(pos, 1 - cos, dt(0)) + np.where(neg, np.maximum(cos - dt(margin), dt(0)), dt(0))
    coef = (neg & (cos - dt(margin) >= 0)).astype(a.dtype) - pos  # d loss / d cos
    return tuple(_as_array(v, dtype=a.dtype) for v in (elems, m1, m2, den, cos, coef))  # 1-D inputs: 0-d arrays


@typed_as(_sig.margin_ranking_loss)
def margin_ranking_loss(
    input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: AnyReduction = "mean"
) -> Any:
    """Margin ranking loss, PyTorch's ``F.margin_ranking_loss``: elementwise
    ``max(0, -target * (input1 - input2) + margin)``, with ``target`` ``1`` where ``input1``
    should rank higher and ``-1`` where ``input2`` should; then the mean (default), the sum or
    none.

    Args:
        input1, input2: float32/float64 tensors of one shape and dtype.
        target: of the same shape: a float tensor (traced or not; it gets a gradient as in
            PyTorch), an integer tensor or an array (constants).
        margin: the margin.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Gradients, where ``-target (input1 - input2) + margin >= 0`` (PyTorch's ``clamp_min``
    passes the boundary): ``d/dinput1 = -target * scale``, ``d/dinput2 = target * scale``,
    ``d/dtarget = -(input1 - input2) * scale``; zero elsewhere.

    Raises:
        ShapeError: shapes differ (names them), ``"mean"`` over an empty input.
        DTypeError: dtypes differ.
        ValueError: an unknown ``reduction``.
    """
    op = "margin_ranking_loss"
    _check_reduction(op, reduction)
    _same_inputs(op, ("input1", "input2"), (input1, input2), ())
    y, yt = _target(op, input1, target)
    a, b = input1.data, input2.data
    scale = _scale(op, a, reduction)
    parts = functools.partial(_margin_ranking_parts, float(margin))
    elems, d, active, ya = parts(a, b, y)

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array | None, ...]:
        return (
            ya * -c if needs[0] else None,
            ya * c if needs[1] else None,
            d * active * -c if needs[2] else None,
        )

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any, Any]:
        ge = g * g._like(active * a.dtype.type(scale))
        yv = _rebuilt(yt, y, rebuild, g)
        gy = -(rebuild(input1.id, a) - rebuild(input2.id, b)) * ge if yt is not None else None
        return -yv * ge, yv * ge, gy

    out = _record([input1, input2, yt], _total(elems, reduction, scale), scale, rule, diff)
    _replay_loss(op, out, parts, (a, b, y), (input1, input2, yt), reduction, scale, (d, active, ya))
    return out


def _margin_ranking_parts(margin: float, a: Array, b: Array, y: Array) -> tuple[Array, Array, Array, Array]:
    """``(elements, a - b, active, y * active)`` of :func:`margin_ranking_loss`."""
    d = a - b
    v = -y * d + a.dtype.type(margin)
    active = _as_array((v >= 0).astype(a.dtype))
    return np.maximum(v, a.dtype.type(0)), _as_array(d), active, _as_array(y * active, dtype=a.dtype)


@typed_as(_sig.hinge_embedding_loss)
def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0, reduction: AnyReduction = "mean") -> Any:
    """Hinge embedding loss, PyTorch's ``F.hinge_embedding_loss``: elementwise ``x`` where
    ``target == 1``, ``max(0, margin - x)`` where ``target == -1`` (for other target values
    the sum of the terms whose label differs: PyTorch's ``(t != -1) x + (t != 1) max(0,
    margin - x)``); then the mean (default), the sum or none. ``input`` is usually a distance.

    Args:
        input: float32/float64 tensor of any shape.
        target: labels ``1`` / ``-1`` of the same shape (a tensor of any numeric dtype, or an
            array; never differentiated).
        margin: the margin (default ``1``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Gradient: ``d/dinput = ((t != -1) - (t != 1) (margin - x >= 0)) * scale``.

    Raises:
        ShapeError: the target's shape differs (names both), ``"mean"`` over an empty input.
        DTypeError: a non-numeric target.
        ValueError: an unknown ``reduction``.
    """
    op = "hinge_embedding_loss"
    _check_reduction(op, reduction)
    x = input.data
    y = _sample_target(op, target, input, x.shape)
    dt = x.dtype.type
    scale = _scale(op, x, reduction)
    parts = functools.partial(_hinge_parts, float(margin))
    elems, slope = parts(x, y)

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array]:
        return (slope * c,)

    def diff(g: Any, rebuild: Any) -> tuple[Any]:  # a constant slope
        return (g * g._like(slope * dt(scale)),)

    out = _record([input], _total(elems, reduction, scale), scale, rule, diff)
    _replay_loss(op, out, parts, (x, y), (input, _source(target, input)), reduction, scale, (slope,))
    return out


def _hinge_parts(margin: float, x: Array, y: Array) -> tuple[Array, Array]:
    """``(elements, slope)`` of :func:`hinge_embedding_loss`."""
    dt = x.dtype.type
    not_pos, not_neg = y != 1, y != -1
    inner = dt(margin) - x
    elems = np.where(not_pos, np.maximum(inner, dt(0)), dt(0)) + np.where(not_neg, x, dt(0))
    slope = _as_array(not_neg.astype(x.dtype) - (not_pos & (inner >= 0)), dtype=x.dtype)  # 0-d: an array
    return elems, slope


@typed_as(_sig.soft_margin_loss)
def soft_margin_loss(input: Any, target: Any, reduction: AnyReduction = "mean") -> Any:
    """Soft margin loss (a two-class logistic loss), PyTorch's ``F.soft_margin_loss``:
    elementwise ``log(1 + exp(-target * input))``, with ``target`` ``1`` or ``-1``; then the
    mean over all elements (default), the sum or none.

    Composed of gradtape ops: ``softplus(-target * input)`` with no threshold
    (``log1p(exp(-|z|)) + max(z, 0)``, which never overflows), so its gradients, second
    derivatives and replays come from :func:`gradtape.ops.softplus`.

    Args:
        input: float32/float64 tensor of any shape.
        target: labels ``1`` / ``-1`` of the same shape: a tensor of any numeric dtype, or an
            array; a constant (PyTorch does not differentiate it either).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the input's shape).

    Gradient: ``d/dinput = -target * sigmoid(-target * input) * scale``.

    Raises:
        ShapeError: the target's shape differs (names both), ``"mean"`` over an empty input.
        DTypeError: a non-numeric target.
        ValueError: an unknown ``reduction``.
    """
    op = "soft_margin_loss"
    _check_reduction(op, reduction)
    x = input.data
    y = _sample_target(op, target, input, x.shape).astype(x.dtype, copy=False)
    _scale(op, x, reduction)  # "mean" over an empty input: ShapeError naming the loss
    if _is_tensor(target, input) and target.data.dtype == x.dtype:
        yt = target.detach()  # read where it lives: a capture's replay reads it again
    else:  # an integer or bool tensor, an array: converted, a constant
        yt = input._like(y)
        if _tp._recorder is not None:
            _tp._recorder.host_tensor(yt)  # a constant of a capture's plan once a second recording agrees
    elems = (-(yt * input)).softplus(1.0, math.inf)
    return _reduce_composed(elems, reduction)


def _reduce_composed(elems: Any, reduction: str) -> Any:
    """A composed loss's elements reduced: as they are (``"none"``), summed or averaged."""
    if reduction == "none":
        return elems
    return elems.sum() if reduction == "sum" else elems.mean()


@typed_as(_sig.multilabel_soft_margin_loss)
def multilabel_soft_margin_loss(
    input: Any, target: Any, weight: Weight = None, reduction: AnyReduction = "mean"
) -> Any:
    """Multi-label one-versus-all logistic loss, PyTorch's ``F.multilabel_soft_margin_loss``:
    per sample ``-(1 / C) * sum_i weight[i] (t[i] log sigmoid(x[i]) + (1 - t[i]) log
    sigmoid(-x[i]))`` over the ``C`` classes of the last axis; then the mean over samples
    (default), the sum or none.

    Composed of gradtape ops: :func:`binary_cross_entropy_with_logits` with
    ``reduction="none"`` (the stable ``(1 - t) x + softplus(-x)``, equal to the formula), then
    the mean over the class axis, so its gradients (the target's too, as PyTorch's),
    second derivatives and replays come from those ops.

    Args:
        input: logits, float32/float64, of shape ``(N, C)`` (or ``(C,)``: one sample).
        target: of the same shape, ``1`` where a label applies and ``0`` where it does not
            (probabilities in ``[0, 1]`` work too): a float tensor of the input's dtype
            (traced or not: it gets a gradient), an integer tensor or an array.
        weight: optional constant per-class weights of shape ``(C,)`` (anything that broadcasts
            to the input's shape).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (shape ``(N,)``, ``()`` for a
            1-D input).

    Gradients: ``d/dinput = weight (sigmoid(x) - t) / C * scale``,
    ``d/dtarget = -weight x / C * scale``.

    Raises:
        ShapeError: the target's shape differs from the input's, a weight that does not
            broadcast to it (names both shapes), a 0-d input, ``"mean"`` over an empty batch.
        DTypeError: a float target tensor of another dtype, a non-numeric target or weight.
        ValueError: an unknown ``reduction``, a traced weight.
    """
    op = "multilabel_soft_margin_loss"
    _check_reduction(op, reduction)
    x = input.data
    if x.ndim == 0:
        raise ShapeError(f"{op}: input must have shape (N, C) or (C,), got shape ()")
    _target(op, input, target)  # the shape and dtype checks, naming this loss
    if weight is not None:
        _constant(op, weight, "weight", x, x.shape)
    if reduction == "mean" and x.ndim > 1 and math.prod(x.shape[:-1]) == 0:
        raise ShapeError(f"{op}: reduction='mean' over an empty batch (input of shape {x.shape}) is undefined")
    elems = binary_cross_entropy_with_logits(input, target, weight, reduction="none").mean(-1)
    return _reduce_composed(elems, reduction)


@typed_as(_sig.multi_margin_loss)
def multi_margin_loss(
    input: Any,
    target: Any,
    p: int = 1,
    margin: float = 1.0,
    weight: Weight = None,
    reduction: AnyReduction = "mean",
) -> Any:
    """Multi-class hinge loss, PyTorch's ``F.multi_margin_loss``: per sample, with ``y`` its
    class index and ``C`` the number of classes,
    ``sum_{i != y} weight[y] * max(0, margin - x[y] + x[i])**p / C``; then the mean over
    samples (default), the sum or none. (PyTorch's docs write ``max(0, weight[y] (margin -
    x[y] + x[i]))**p``; its kernels, followed here, scale the power by ``weight[y]``: the
    same for ``p=1``.)

    Composed of gradtape ops (``take_along_axis`` of ``x[y]``, ``relu``, a product for
    ``p=2``, ``sum``): gradients, second derivatives and replays come from them. The ``i == y``
    term, ``weight[y] * max(0, margin)**p``, a constant, is subtracted from the sum over all
    classes.

    Args:
        input: scores, float32/float64, of shape ``(N, C)`` or ``(C,)`` (one sample).
        target: integer class indices in ``[0, C)`` of shape ``(N,)`` (``()`` or ``(1,)`` for a
            1-D input): an integer tensor, array or list; never differentiated.
        p: ``1`` (default) or ``2``.
        margin: the margin (default ``1``).
        weight: optional constant per-class weights of shape ``(C,)``.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the target's shape).

    Gradient, for each ``i != y`` with ``z = margin - x[y] + x[i] > 0``:
    ``d/dx[i] = weight[y] p z**(p - 1) / C * scale``, and ``d/dx[y]`` minus the sum of those.

    Raises:
        ShapeError: an input not 1-D or 2-D, targets not of shape ``(N,)``, a weight not of
            shape ``(C,)`` (names the shapes), ``"mean"`` over an empty batch.
        DTypeError: float (or bool) targets, a non-numeric weight.
        ValueError: ``p`` not 1 or 2, a class index outside ``[0, C)``, a traced weight, an
            unknown ``reduction``.
    """
    from gradtape.ops import relu, take_along_axis
    from gradtape.ops._util import index_tensor

    op = "multi_margin_loss"
    _check_reduction(op, reduction)
    if isinstance(p, bool) or p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 are supported, got p={p!r}")
    x = input.data
    if x.ndim not in (1, 2) or x.shape[-1] == 0:
        raise ShapeError(f"{op}: input must have shape (N, C) or (C,) with C > 0, got shape {x.shape}")
    classes = x.shape[-1]
    tensor_target = _is_tensor(target, input)
    if tensor_target:
        check_same_device(op, input, target)
    t: Array = target.data if tensor_target else _as_array(target)
    if t.dtype.kind == "f" and t.size == 0 and not tensor_target:
        t = t.astype(np.intp)  # _as_array([]) is float64: no targets, as indices
    if t.dtype.kind not in "iu":
        raise DTypeError(
            f"{op}: targets must be integer class indices, got dtype {t.dtype} (shape {t.shape}; "
            f"input of shape {x.shape})"
        )
    n = 1 if x.ndim == 1 else x.shape[0]
    if (x.ndim == 2 and t.shape != (n,)) or (x.ndim == 1 and t.shape not in ((), (1,))):
        want = f"({n},)" if x.ndim == 2 else "() or (1,)"
        raise ShapeError(f"{op}: targets must have shape {want} for input of shape {x.shape}, got shape {t.shape}")
    flat = t.reshape(-1)
    bad = (flat < 0) | (flat >= classes)
    if bad.any():
        wrong = flat[bad]
        raise ValueError(
            f"{op}: class indices must lie in [0, {classes}), got min {wrong.min()} and max {wrong.max()} "
            f"among them (targets of shape {t.shape}, input of shape {x.shape})"
        )
    w = _class_weight(op, weight, x, classes)
    if reduction == "mean" and n == 0:
        raise ShapeError(f"{op}: reduction='mean' over an empty batch (input of shape {x.shape}) is undefined")
    rows = input.reshape((n, classes))
    if tensor_target:
        idx = target.reshape((n, 1))
    else:
        idx = index_tensor(input, flat.reshape(n, 1))
    picked = take_along_axis(rows, idx, 1)  # x[y], (N, 1)
    h = relu(rows - picked + float(margin))
    if p == 2:
        h = h * h
    own = max(float(margin), 0.0) ** p  # the i == y term, left out
    per = h.sum(1) - own
    if w is not None:
        wt = input._like(w)
        if _tp._recorder is not None:
            _tp._recorder.host_tensor(wt)
        per = per * take_along_axis(wt, idx.reshape((n,)), 0)
    per = per * (1.0 / classes)
    if x.ndim == 1:
        per = per.reshape(t.shape)
    return _reduce_composed(per, reduction)


@typed_as(_sig.triplet_margin_loss)
def triplet_margin_loss(
    anchor: Any,
    positive: Any,
    negative: Any,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: AnyReduction = "mean",
) -> Any:
    """Triplet margin loss (Balntas et al. 2016), PyTorch's ``F.triplet_margin_loss`` with the
    Euclidean distance: with ``d(u, v) = |u - v + eps|_2`` along the last axis (PyTorch's
    ``pairwise_distance``), per sample ``max(0, margin + d(a, p) - d(a, n))``; with ``swap``,
    ``d(a, n)`` is replaced by ``min(d(a, n), d(p, n))`` (the distance swap). Then the mean over
    samples (default), the sum or none.

    Args:
        anchor, positive, negative: float32/float64 tensors of shape ``(N, D)`` (or ``(D,)``),
            one shape and dtype.
        margin: ``> 0`` (PyTorch's rule).
        p: the norm's degree; ``2`` only (other degrees raise).
        eps: added to the differences (keeps the distance's gradient finite).
        swap: use the distance swap.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (shape ``(N,)``).

    Gradients, for samples with ``margin + d(a, p) - d(a, n) >= 0``: with unit vectors
    ``u_ap = (a - p + eps) / d(a, p)`` (and ``u_an``, ``u_pn``), ``d/da = u_ap - u_an``,
    ``d/dp = -u_ap``, ``d/dn = u_an`` (with the swap taking ``d(p, n)``: ``d/dp = -u_ap -
    u_pn``, ``d/dn = u_pn``; a tie splits the gradient, as PyTorch's ``min``), times ``scale``.

    Raises:
        ShapeError: shapes differ or are not 1-D/2-D (names them), ``"mean"`` over an empty
            batch.
        DTypeError: dtypes differ.
        ValueError: ``margin <= 0``, ``p != 2``, an unknown ``reduction``.
    """
    op = "triplet_margin_loss"
    _check_reduction(op, reduction)
    if not margin > 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    if p != 2:
        raise ValueError(f"{op}: only the Euclidean distance p=2 is implemented, got p={p}")
    _same_inputs(op, ("anchor", "positive", "negative"), (anchor, positive, negative), (1, 2))
    a, pv, nv = anchor.data, positive.data, negative.data
    dt = a.dtype.type
    parts = functools.partial(_triplet_parts, float(margin), float(eps), bool(swap))
    elems, active, u_ap, u_an, u_pn, w_an, w_pn = parts(a, pv, nv)
    scale = _scale(op, active, reduction)

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array | None, ...]:
        k = (active * c)[..., None]
        return (
            (u_ap - w_an[..., None] * u_an) * k if needs[0] else None,
            -(u_ap + w_pn[..., None] * u_pn) * k if needs[1] else None,
            (w_an[..., None] * u_an + w_pn[..., None] * u_pn) * k if needs[2] else None,
        )

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any, Any]:
        at, pt, nt = rebuild(anchor.id, a), rebuild(positive.id, pv), rebuild(negative.id, nv)

        def unit(u: Any, w: Any) -> Any:
            d = u - w + eps
            return d / (d * d).sum(axis=-1, keepdims=True).sqrt()

        k = g._like((active * dt(scale))[..., None]) * (g.unsqueeze(-1) if g.ndim else g)
        uap, uan = unit(at, pt), unit(at, nt) * g._like(w_an[..., None])
        side = unit(pt, nt) * g._like(w_pn[..., None]) if swap else None
        ga = (uap - uan) * k
        gp = -(uap + side) * k if side is not None else -uap * k
        gn = (uan + side) * k if side is not None else uan * k
        return ga, gp, gn

    out = _record([anchor, positive, negative], _total(elems, reduction, scale), scale, rule, diff)
    saved = (active, u_ap, u_an, u_pn, w_an, w_pn)
    _replay_loss(op, out, parts, (a, pv, nv), (anchor, positive, negative), reduction, scale, saved)
    return out


def _triplet_parts(margin: float, eps: float, swap: bool, a: Array, pv: Array, nv: Array) -> tuple[Array, ...]:
    """``(elements, active, u_ap, u_an, u_pn, w_an, w_pn)`` of :func:`triplet_margin_loss`:
    the unit difference vectors of the three distances, which negative distance each sample
    uses (``w_an``, ``w_pn = 1 - w_an``; ties share) and where the hinge is active."""
    dt = a.dtype.type

    def dist(u: Array, v: Array) -> tuple[Array, Array]:
        d = u - v + dt(eps)
        n = np.sqrt((d * d).sum(-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            unit = np.where(n[..., None] > 0, d / n[..., None], dt(0))
        return n, unit

    n_ap, u_ap = dist(a, pv)
    n_an, u_an = dist(a, nv)
    if swap:
        n_pn, u_pn = dist(pv, nv)
        w_an = np.where(n_an < n_pn, dt(1), np.where(n_an == n_pn, dt(0.5), dt(0)))
        n_neg = np.minimum(n_an, n_pn)
    else:
        u_pn, w_an, n_neg = u_an.copy(), np.ones_like(n_an), n_an
    v = dt(margin) + n_ap - n_neg
    active = (v >= 0).astype(a.dtype)
    arrays = (np.maximum(v, dt(0)), active, u_ap, u_an, u_pn, w_an, 1 - w_an)
    return tuple(_as_array(x, dtype=a.dtype) for x in arrays)  # 1-D inputs: 0-d arrays


# ----- likelihood losses --------------------------------------------------------------------


@typed_as(_sig.gaussian_nll_loss)
def gaussian_nll_loss(
    input: Any,
    target: Any,
    var: Any,
    full: bool = False,
    eps: float = 1e-6,
    reduction: AnyReduction = "mean",
) -> Any:
    """Gaussian negative log-likelihood, PyTorch's ``F.gaussian_nll_loss``: the target is a
    sample of a normal distribution with mean ``input`` and variance ``var``; elementwise
    ``0.5 (log(max(var, eps)) + (input - target)**2 / max(var, eps))`` (plus
    ``0.5 log(2 pi)`` with ``full``); then the mean (default), the sum or none. The clamp is
    PyTorch's: it changes the value, not the gradient's path (``var`` gets the gradient at the
    clamped value).

    Args:
        input: the predicted means, float32/float64 tensor of any shape.
        target: samples of the same shape (a tensor, traced or not, or an array).
        var: the predicted variances (``>= 0``): a tensor of the input's dtype (it gets a
            gradient when traced) or an array, of the input's shape, of the input's shape
            without its last axis (one variance per sample), or with one axis of size 1 (a
            shared variance along it); or a Python float (one variance for all).
        full: add the constant ``0.5 log(2 pi)``.
        eps: the clamp's lower bound on ``var``.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the input's shape).

    Gradients, with ``v = max(var, eps)``: ``d/dinput = (input - target) / v * scale``,
    ``d/dtarget = -d/dinput``, ``d/dvar = 0.5 (1 / v - (input - target)**2 / v**2) * scale``
    (summed over the axis ``var`` is broadcast along).

    Raises:
        ShapeError: the target's shape differs from the input's, or ``var``'s fits none of the
            forms above (names the shapes).
        DTypeError: a float tensor of another dtype.
        ValueError: a negative variance, an unknown ``reduction``.
    """
    op = "gaussian_nll_loss"
    _check_reduction(op, reduction)
    t, tt = _target(op, input, target)
    x = input.data
    dt = x.dtype.type
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        vd: Array = _arrays.full(x.shape, var, x.dtype, x)
        vt = None
    elif _is_tensor(var, input) and var.data.dtype.kind == "f":
        vd, vt = var.data, var
        if vd.dtype != x.dtype:
            raise DTypeError(f"{op}: var dtype {vd.dtype} (shape {vd.shape}) differs from input dtype {x.dtype}")
    else:
        vd, vt = _constant(op, var, "var", x), None
    vshape = vd.shape
    if vshape != x.shape:
        if x.ndim >= 1 and vshape == x.shape[:-1]:
            vd = vd[..., None]
        elif not (
            vd.ndim == x.ndim
            and [i for i, (m, n) in enumerate(zip(x.shape, vshape, strict=True)) if m != n]
            and all(n == 1 for m, n in zip(x.shape, vshape, strict=True) if m != n)
            and sum(m != n for m, n in zip(x.shape, vshape, strict=True)) == 1
        ):
            raise ShapeError(
                f"{op}: var of shape {vshape} is of incorrect size for input of shape {x.shape}: it must be the "
                "input's shape, the input's shape without its last axis, or have one axis of size 1"
            )
    scale = _scale(op, x, reduction)
    if vt is None and _tp._recorder is not None:  # a var made on the host: a constant checked by a second recording
        _tp._recorder.host_array(vd)
    parts = functools.partial(_gaussian_nll_parts, float(eps), bool(full))
    elems, v, d = parts(x, t, vd)
    axes = tuple(i for i, (m, n) in enumerate(zip(x.shape, vd.shape, strict=True)) if m != n)

    def rule(c: Any, needs: tuple[bool, ...]) -> tuple[Array | None, ...]:
        gx = d / v * c if needs[0] or needs[1] else None
        gv = None
        if needs[2]:
            gv = dt(0.5) * (1 / v - d * d / (v * v)) * c
            gv = gv.sum(axis=axes, keepdims=True).reshape(vshape)
        return gx if needs[0] else None, -gx if needs[1] and gx is not None else None, gv

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any, Any]:
        xt = rebuild(input.id, x)
        dd = xt - _rebuilt(tt, t, rebuild, g)
        ge = g * float(scale)
        if vt is None:
            vv = g._like(v)
        else:  # the clamp shifts the value, the derivative stays 1 (PyTorch clamps under no_grad)
            vv = rebuild(vt.id, vt.data).reshape(vd.shape) + g._like(v - vd)
        gx = dd / vv * ge
        gv = None
        if vt is not None:
            gv = ((1.0 / vv) - dd * dd / (vv * vv)) * 0.5 * ge
            if axes:
                gv = gv.sum(axis=axes, keepdims=True)
            gv = gv.reshape(vshape)
        return gx, -gx, gv

    out = _record([input, tt, vt], _total(elems, reduction, scale), scale, rule, diff)
    _replay_loss(op, out, parts, (x, t, vd), (input, tt, vt), reduction, scale, (v, d))
    return out


def _gaussian_nll_parts(eps: float, full: bool, x: Array, t: Array, vd: Array) -> tuple[Array, Array, Array]:
    """``(elements, clamped var, x - t)`` of :func:`gaussian_nll_loss`, after its check of the
    var (which a capture's replay makes too).

    Raises:
        ValueError: ``vd`` has negative entries.
    """
    if (vd < 0).any():
        raise ValueError(f"gaussian_nll_loss: var has negative entries (var of shape {vd.shape})")
    dt = x.dtype.type
    v = _as_array(np.maximum(vd, dt(eps)))
    d = _as_array(x - t)
    elems = dt(0.5) * (np.log(v) + d * d / v)
    if full:
        elems = elems + dt(0.5 * math.log(2 * math.pi))
    return elems, v, d


@typed_as(_sig.poisson_nll_loss)
def poisson_nll_loss(
    input: Any,
    target: Any,
    log_input: bool = True,
    full: bool = False,
    eps: float = 1e-8,
    reduction: AnyReduction = "mean",
) -> Any:
    """Poisson negative log-likelihood, PyTorch's ``F.poisson_nll_loss``: the target is a
    count drawn from a Poisson distribution of rate ``exp(input)`` (``log_input=True``,
    elementwise ``exp(input) - target * input``) or ``input`` (``input - target *
    log(input + eps)``); with ``full``, Stirling's term ``target log target - target +
    0.5 log(2 pi target)`` is added where ``target > 1``. Then the mean (default), the sum or
    none.

    Args:
        input: float32/float64 tensor of any shape (log-rates, or rates).
        target: counts of the same shape (a tensor, traced or not, an integer tensor, or an
            array).
        log_input, full, eps: as above.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Gradients: ``d/dinput = (exp(input) - target) * scale`` (``log_input``) or
    ``(1 - target / (input + eps)) * scale``; ``d/dtarget = -input * scale`` or
    ``-log(input + eps) * scale``, plus ``(log target + 0.5 / target) * scale`` where
    ``target > 1`` with ``full``.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`mse_loss`.
    """
    op = "poisson_nll_loss"
    _check_reduction(op, reduction)
    t, tt = _target(op, input, target)
    x = input.data
    scale = _scale(op, x, reduction)
    parts = functools.partial(_poisson_parts, bool(log_input), bool(full), float(eps))
    elems, slope_x, slope_t, big = parts(x, t)

    def diff(g: Any, rebuild: Any) -> tuple[Any, Any]:
        from gradtape.ops.compare import where

        xt = rebuild(input.id, x)
        tv = _rebuilt(tt, t, rebuild, g)
        ge = g * float(scale)
        if log_input:
            gx, gt = (xt.exp() - tv) * ge, -xt * ge
        else:
            gx, gt = (1.0 - tv / (xt + eps)) * ge, -(xt + eps).log() * ge
        if tt is None:
            return gx, None
        if full:
            tsafe = where(big, tv, 2.0)
            gt = gt + (tsafe.log() + 0.5 / tsafe) * g._like(big.astype(x.dtype)) * ge
        return gx, gt

    replay = (op, parts, t, (slope_x, slope_t, big))
    return _elementwise_loss(
        input, tt, reduction, elems, lambda c: slope_x * c, lambda c: slope_t * c, diff, scale, replay
    )


def _poisson_parts(log_input: bool, full: bool, eps: float, x: Array, t: Array) -> tuple[Array, Array, Array, Array]:
    """``(elements, d/dx slope, d/dt slope, t > 1)`` of :func:`poisson_nll_loss`."""
    dt = x.dtype.type
    if log_input:
        ex = np.exp(x)
        elems = ex - t * x
        slope_x, slope_t = ex - t, -x
    else:
        xe = x + dt(eps)
        with np.errstate(divide="ignore", invalid="ignore"):
            lx = np.log(xe)
            slope_x = 1 - t / xe
        elems = x - t * lx
        slope_t = -lx
    big = t > 1
    if full:
        ts = np.where(big, t, dt(2))  # a safe stand-in where the term is masked
        elems = elems + np.where(big, ts * np.log(ts) - ts + dt(0.5) * np.log(dt(2 * math.pi) * ts), dt(0))
        slope_t = slope_t + np.where(big, np.log(ts) + dt(0.5) / ts, dt(0))
    return elems, slope_x, slope_t, big


# The public loss functions check their tensor arguments (ops._util.checked): a list or an
# array where a tensor belongs raises TypeError naming the loss and the argument.
if not TYPE_CHECKING:
    from gradtape.ops._util import check_exports as _check_exports

    _check_exports(globals(), __all__)
    del _check_exports
