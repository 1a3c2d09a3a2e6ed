"""Reductions: sum, mean, max, min, var, std, logsumexp and prod over all axes or a set of
axes, with ``keepdims``; and the cumulative ``cumsum`` / ``cumprod`` along one dim.

Typing: a full reduction gives ``Tensor[Rank0, T]``; ``axis=0`` / ``axis=1`` of a
``Rank2[A, B]`` gives ``Rank1[B]`` / ``Rank1[A]``; other axis sets type as ``Any``.
Backward broadcasts the output's gradient back over the reduced axes.

PyTorch's spelling: every reduction also takes ``dim=`` and ``keepdim=`` (keyword) for
``axis=`` / ``keepdims=`` (:func:`gradtape.ops._util.reduce_args`; both spellings of one
argument: ``TypeError``). ``max`` / ``min`` with ``dim=`` return ``(values, indices)``.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import S, T, typed_as
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import ShapeError
from gradtape.ops._signatures import reduce as _sig
from gradtape.ops._util import (
    SCALARS,
    dim_or_axis,
    float_data,
    normalize_axes,
    one_dim,
    record_unary,
    reduce_args,
    refill,
    refill_all,
    replayable,
    untraced,
)
from gradtape.ops.compare import where
from gradtape.ops.select import ValuesIndices, argmax, argmin, take_along_axis
from gradtape.ops.shape import concat
from gradtape.shapes import Rank0
from gradtape.tape import NONE_TAPE, NoneTape, op_tape, record, register_diff

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["cumprod", "cumsum", "logsumexp", "max", "mean", "min", "prod", "std", "sum", "var"]
__all__ += ["all", "amax", "amin", "any"]

Array = np.ndarray[Any, Any]


def _reduce(op: str, a: Tensor[Any, Any], axis: int | tuple[int, ...] | None, keepdims: bool, scale: bool) -> Any:
    x = a.data
    if scale and x.dtype.kind != "f":  # mean is a float op (sum is exact on integers)
        float_data(op, a, "a")
    axes = normalize_axes(op, axis, x.ndim)
    n = math.prod(x.shape[ax] for ax in axes)
    if scale and n == 0:
        raise ShapeError(f"{op}: mean over {n} elements (shape {x.shape}, axes {axes}) is undefined")
    factor = x.dtype.type(1.0 / n) if scale else None
    y = _sum_scaled(x, axes, keepdims, factor)
    tape = op_tape(a)
    out = a._from_op(y, tape)
    if tape is not NONE_TAPE:
        shape = x.shape
        kept = tuple(1 if i in axes else n_ for i, n_ in enumerate(shape))
        tape._record((out.id, _reduce_backward, a.id, kept, factor, shape))
    if _tp._recorder is not None:
        replayable(op, out.data, _reduce_into, (x, axes, keepdims, factor), (a,), tape, True)
    return out


def _sum_scaled(x: Array, axes: tuple[int, ...], keepdims: bool, factor: Any) -> Array:
    """``sum(x, axes)``, times ``factor`` (mean's ``1 / n`` in ``x``'s dtype) unless ``None``."""
    y = _as_array(np.sum(x, axis=axes, keepdims=keepdims))
    if factor is not None:
        y = np.multiply(y, factor, out=y) if y.ndim else _as_array(y * factor)
    return y


def _reduce_into(out: Array, x: Array, axes: tuple[int, ...], keepdims: bool, factor: Any) -> None:
    """:func:`_reduce`'s forward into ``out`` (a replay of :func:`gradtape.capture`)."""
    np.copyto(out, _sum_scaled(x, axes, keepdims, factor))


def _reduce_backward(grads: Gradients, g: Array, entry: tuple[int, Any, int, tuple[int, ...], Any, Any]) -> None:
    """sum's and mean's backward: ``g`` (times ``1 / n`` for mean) broadcast back to the input."""
    _, _, aid, kept, factor, shape = entry
    g = g.reshape(kept)
    if factor is not None:
        g = g * factor
    grads._accum_bcast(aid, g, shape)


def _d_reduce(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    """The differentiable rule of :func:`_reduce_backward` (higher-order derivatives)."""
    _, _, aid, kept, factor, shape = entry
    gk = g.reshape(kept)
    if factor is not None:
        gk = gk * float(factor)
    return [(aid, gk.broadcast_to(shape))]


register_diff(_reduce_backward, _d_reduce)


@typed_as(_sig.sum)
def sum(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool | None = None,
) -> Any:
    """Sum of the elements over ``axis`` (None: all; an int or a tuple of ints).

    Args:
        axis: axes to reduce; negative axes count from the end.
        keepdims: keep reduced axes as size-1 dims.

    Gradient: ``1`` for every element (the output's gradient broadcast back).

    Raises:
        ShapeError: an axis is out of range or repeated.
    """
    return _reduce("sum", a, *reduce_args("sum", axis, keepdims, dim, keepdim), scale=False)


@typed_as(_sig.mean)
def mean(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool | None = None,
) -> Any:
    """Arithmetic mean over ``axis`` (None: all; an int or a tuple of ints).

    Gradient: ``1 / n`` for every element, ``n`` the number of elements averaged.

    Raises:
        ShapeError: an axis is out of range or repeated, or the mean is over zero elements.
        DTypeError: ``a`` is an integer or bool tensor (PyTorch refuses them too; convert
            with ``dev.tensor(x, dtype=np.float32)``).
    """
    return _reduce("mean", a, *reduce_args("mean", axis, keepdims, dim, keepdim), scale=True)


# ----- shared plumbing of the reductions below --------------------------------------------


def _plan(op: str, x: Array, axis: int | tuple[int, ...] | None) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
    """``(axes, n, kept)``: the sorted reduced axes, the number of elements each output element
    reduces, and the output's shape with the reduced axes kept as size 1."""
    axes = normalize_axes(op, axis, x.ndim)
    n = math.prod(x.shape[ax] for ax in axes)
    kept = tuple(1 if i in axes else n_ for i, n_ in enumerate(x.shape))
    return axes, n, kept


def _out(yk: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
    """The reduction's result from its keepdims form ``yk``."""
    if keepdims:
        return yk
    return yk.reshape(tuple(n for i, n in enumerate(yk.shape) if i not in axes))


def _record_reduction(
    a: Tensor[Any, Any],
    y: Array,
    kept: tuple[int, ...],
    grad: Any,
    diff: Any = None,
    replay: tuple[str, tuple[Array, ...], Callable[..., tuple[Array, ...]], tuple[Any, ...]] | None = None,
) -> Any:
    """Wrap ``y`` as the reduction's output; backward calls ``grad(grads, aid, gk)`` with the
    output's gradient ``gk`` reshaped to ``kept`` (the keepdims shape). ``diff(gk, x)``, if
    given, is the second rule: ``a``'s gradient from the gradient tensor ``gk`` (keepdims
    shape) and ``a`` rebuilt as a tensor ``x``, in gradtape ops. ``replay``: ``(op, arrays,
    forward, args)``, the forward as a function whose results ``forward(*args)`` are
    ``arrays`` (the keepdims output first, then what the backward reads), for
    :func:`gradtape.capture`'s replays."""
    tape = op_tape(a)
    out = a._from_op(y, tape)
    if replay is not None and _tp._recorder is not None:
        op, arrays, forward, args = replay
        replayable(op, arrays[0], refill_all, (arrays[1:], forward, args), (a,), tape, True, arrays[1:])
    if tape is not NONE_TAPE:
        aid, xd = a.id, a.data

        def reduction_backward(grads: Gradients, g: Array) -> None:
            grad(grads, aid, g.reshape(kept))

        def reduction_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            return [(aid, diff(g.reshape(kept), rebuild(aid, xd)))]

        record(tape, out, reduction_backward, reduction_diff if diff is not None else None)
    return out


# ----- max / min ---------------------------------------------------------------------------


def _extremum(op: str, a: Tensor[Any, Any], axis: int | tuple[int, ...] | None, keepdims: bool) -> Any:
    x = a.data
    axes, n, kept = _plan(op, x, axis)
    if n == 0:
        what = op.removeprefix("a")
        raise ShapeError(f"{op}: reduction over 0 elements (shape {x.shape}, axes {axes}) has no {what}imum")
    fn = np.max if op in ("max", "amax") else np.min
    (yk,) = _extremum_forward(fn, x, axes)
    y = _out(yk, axes, keepdims)

    def grad(grads: Gradients, aid: int, gk: Array) -> None:
        mask = x == yk
        count = np.sum(mask, axis=axes, keepdims=True, dtype=x.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):  # a NaN slice: count 0, NaN gradient
            share = gk / count  # one value per output element
            grads._accum(aid, np.multiply(mask, share))

    def diff(gk: Any, xt: Any) -> Any:  # the mask is piecewise constant
        mask = x == yk
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = mask / np.sum(mask, axis=axes, keepdims=True, dtype=x.dtype)
        return gk * gk._like(weight.astype(x.dtype))

    return _record_reduction(a, y, kept, grad, diff, (op, (yk,), _extremum_forward, (fn, x, axes)))


def _extremum_forward(fn: Any, x: Array, axes: tuple[int, ...]) -> tuple[Array]:
    """``(fn(x, axes, keepdims=True),)``: :func:`_extremum`'s forward (``fn`` ``np.max`` or
    ``np.min``)."""
    return (_as_array(fn(x, axis=axes, keepdims=True)),)


def _extremum_or_pair(
    op: str, a: Tensor[Any, Any], axis: Any, keepdims: bool | None, dim: Any, keepdim: bool | None
) -> Any:
    """``max`` / ``min``: gradtape's ``axis=`` gives the values (``amax`` / ``amin``); PyTorch's
    ``dim=`` gives ``(values, indices)`` as ``torch.max(x, dim)``."""
    axis, keep = reduce_args(op, axis, keepdims, dim, keepdim)
    if dim is None:
        return _extremum(op, a, axis, keep)
    x = a.data
    d = one_dim(op, dim, x.shape)
    if x.ndim and x.shape[d] == 0:
        raise ShapeError(f"{op}: dim {dim} of the input of shape {x.shape} has size 0; there is no {op}imum")
    if not x.ndim:  # PyTorch: a 0-d input is its own maximum, at index 0
        return ValuesIndices(_extremum(op, a, None, False), a._like(_arrays.zeros((), np.int64, a.data)))
    idx = (argmax if op == "max" else argmin)(a, d, keepdim=True)
    values = take_along_axis(a, idx, d)  # the gradient goes to the index found, as PyTorch's
    if not keep:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return ValuesIndices(values, idx)


@typed_as(_sig.max)
def max(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    dim: int | None = None,
    keepdim: bool | None = None,
) -> Any:
    """Largest element over ``axis`` (None: all; an int or a tuple of ints), as ``np.max`` /
    ``torch.amax``: a NaN in a slice makes that slice's maximum NaN.

    Gradient (dfdx's ``max_to``, PyTorch's ``amax``): the output's gradient is split evenly
    among the elements equal to the maximum, ``g / k`` to each of ``k`` tied maxima, ``0``
    elsewhere; a slice whose maximum is NaN gets NaN gradients.

    PyTorch's ``dim=`` (an int) gives what ``torch.max(x, dim)`` gives: a named tuple
    ``(values, indices)`` (:class:`~gradtape.ops.select.ValuesIndices`), ``indices`` the int64
    position of the first maximum along ``dim`` (a NaN counts as the largest), ``values`` the
    elements there; the gradient goes to that one element (PyTorch's rule, not split among
    ties). ``keepdim=True`` keeps ``dim`` as size 1 in both. ``axis=`` keeps returning the
    values alone (``torch.amax``); ``keepdim=`` is a synonym of ``keepdims=``.

    Raises:
        ShapeError: an axis is out of range or repeated, or a reduced axis has size 0.
        TypeError: both ``dim`` and ``axis`` (or ``keepdim`` and ``keepdims``) are given, or
            ``dim`` is not an int.
    """
    return _extremum_or_pair("max", a, axis, keepdims, dim, keepdim)


@typed_as(_sig.min)
def min(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    dim: int | None = None,
    keepdim: bool | None = None,
) -> Any:
    """Smallest element over ``axis``, as ``np.min`` / ``torch.amin``. Gradient split evenly
    over tied minima (see :func:`max`). With PyTorch's ``dim=``: the named tuple ``(values,
    indices)`` of ``torch.min(x, dim)`` (see :func:`max`).

    Raises:
        ShapeError: an axis is out of range or repeated, or a reduced axis has size 0.
        TypeError: both ``dim`` and ``axis`` (or ``keepdim`` and ``keepdims``) are given, or
            ``dim`` is not an int.
    """
    return _extremum_or_pair("min", a, axis, keepdims, dim, keepdim)


# ----- var / std ---------------------------------------------------------------------------


def _correction(op: str, correction: float | None, ddof: float | None, unbiased: bool | None = None) -> float:
    for name, v in (("correction", correction), ("ddof", ddof)):
        if v is not None and not isinstance(v, SCALARS):  # a complex, a string
            raise TypeError(f"{op}: {name} must be a real number, got {type(v).__name__} {v!r}")
    if unbiased is not None:
        if not isinstance(unbiased, (bool, np.bool_)):
            raise TypeError(f"{op}: unbiased must be a bool, got {type(unbiased).__name__} {unbiased!r}")
        if correction is not None or ddof is not None:
            raise ValueError(f"{op}: got unbiased={unbiased} and correction/ddof; pass one of them")
        return 1.0 if unbiased else 0.0
    if correction is None:
        correction = 0
    if ddof is not None:
        if correction != 0 and correction != ddof:
            raise ValueError(f"{op}: got correction={correction} and ddof={ddof}; pass one of them")
        correction = ddof
    if not math.isfinite(correction):
        raise ValueError(f"{op}: correction must be a finite number, got {correction}")
    return float(correction)


def _moment(
    op: str,
    a: Tensor[Any, Any],
    axis: int | tuple[int, ...] | None,
    keepdims: bool,
    correction: float | None,
    ddof: float | None,
    unbiased: bool | None,
) -> Any:
    x = float_data(op, a, "a")
    c = _correction(op, correction, ddof, unbiased)
    axes, n, kept = _plan(op, x, axis)
    if n == 0:
        raise ShapeError(f"{op}: reduction over 0 elements (shape {x.shape}, axes {axes}) is undefined")
    dt = x.dtype.type
    # Two passes, accumulated in float64 (as accurate as PyTorch's CPU var and std):
    # the mean, then the squares of the deviations d = x - mean. A float32 sum along a strided
    # axis adds one row at a time (numpy pairs only contiguous runs), and its error in the
    # mean (about n * eps * |mean|) enters the squares: var(1e4 + randn) was off by 1e-4.
    # sum(d)**2 / n removes what is left of the rounded mean's error (Chan, Golub & LeVeque's
    # corrected two-pass formula).
    dof = dt(builtins.max(n - c, 0.0))  # numpy's max(n - ddof, 0): 0 gives inf / nan
    yk, d = _moment_forward(x, axes, n, dof, op == "std")
    with np.errstate(divide="ignore", invalid="ignore"):
        if op == "var":

            def grad(grads: Gradients, aid: int, gk: Array) -> None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    grads._fused(aid, _k.addmul, np.multiply, d, gk * (dt(2) / dof))

        else:

            def grad(grads: Gradients, aid: int, gk: Array) -> None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    scale = np.where(yk == 0, dt(0), gk / (dof * yk))  # PyTorch: 0 where std == 0
                grads._fused(aid, _k.addmul, np.multiply, d, scale)

    def diff(gk: Any, xt: Any) -> Any:  # var: 2 (x - mean) / dof; std: (x - mean) / (dof std)
        xc = xt - xt.mean(axis=axes, keepdims=True)
        if op == "var":
            return xc * (2.0 / float(dof)) * gk
        return xc * gk / ((xc * xc).sum(axis=axes, keepdims=True) * (1.0 / float(dof))).sqrt() * (1.0 / float(dof))

    replay = (op, (yk, d), _moment_forward, (x, axes, n, dof, op == "std"))
    return _record_reduction(a, _out(yk, axes, keepdims), kept, grad, diff, replay)


def _moment_forward(x: Array, axes: tuple[int, ...], n: int, dof: Any, root: bool) -> tuple[Array, Array]:
    """``(var or std (keepdims), x - mean)`` of ``x`` over ``axes`` (``n`` elements each,
    ``dof`` the divisor; ``root``: the std). Two passes, accumulated in float64 (as accurate
    as PyTorch's CPU var and std): the mean, then the squares of the deviations
    ``d = x - mean``. A float32 sum along a strided axis adds one row at a time (numpy pairs
    only contiguous runs), and its error in the mean (about ``n * eps * |mean|``) enters the
    squares: ``var(1e4 + randn)`` was off by ``1e-4``. ``sum(d)**2 / n`` removes what is left
    of the rounded mean's error (Chan, Golub & LeVeque's corrected two-pass formula)."""
    mu = (np.sum(x, axis=axes, keepdims=True, dtype=np.float64) / n).astype(x.dtype)
    d = x - mu
    s1 = np.sum(d, axis=axes, keepdims=True, dtype=np.float64)
    ss = np.sum(np.square(d), axis=axes, keepdims=True, dtype=np.float64)
    m2 = np.maximum(ss - s1 * s1 / n, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        v64 = _as_array(m2 / float(dof))
        yk = np.sqrt(v64).astype(x.dtype) if root else v64.astype(x.dtype)  # one rounding to x's dtype
    return _as_array(yk), d


@typed_as(_sig.var)
def var(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    correction: float | None = None,
    ddof: float | None = None,
    unbiased: bool | None = None,
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool | None = None,
) -> Any:
    """Variance over ``axis``: ``sum((a - mean(a))**2) / (n - correction)``, ``n`` the number of
    elements reduced.

    Args:
        axis: axes to reduce (None: all); negative axes count from the end.
        keepdims: keep reduced axes as size-1 dims.
        correction: PyTorch's name for numpy's ``ddof``. The default (None, meaning ``0``) is
            numpy's (population variance, ``np.var``), kept for existing callers; PyTorch's
            ``torch.var`` defaults to ``1`` (Bessel's correction): pass ``correction=1`` (or
            ``unbiased=True``) for the unbiased sample variance, as ``torch.var(x)`` gives.
        ddof: numpy's name for ``correction``; give one of the two.
        unbiased: PyTorch's older flag: ``True`` is ``correction=1``, ``False`` is
            ``correction=0``; give it or ``correction``/``ddof``, not both.

    Where ``n - correction <= 0`` the divisor is 0, as in numpy: the result is ``inf`` (or
    ``nan`` for a constant slice) and so is the gradient.

    Forward in two passes accumulated in float64 (the mean, then the squared deviations,
    with the corrected two-pass formula ``(sum(d**2) - sum(d)**2 / n)``, ``d = a - mean``):
    a float32 result is within a few float32 roundings of the exact variance even for data
    far from 0 (``1e4 + randn``), as PyTorch's.

    Gradient: ``2 * (a - mean(a)) / (n - correction)`` (fused ``grad += d * scale``).

    Raises:
        ShapeError: an axis is out of range or repeated, or the reduction is over 0 elements.
        ValueError: ``correction`` and ``ddof`` disagree, ``unbiased`` is given with one of
            them, or ``correction`` is not finite.
        TypeError: ``correction`` or ``ddof`` is not a real number (a complex, a string), or
            ``unbiased`` is not a bool.
        DTypeError: ``a`` is an integer or bool tensor (PyTorch refuses them too).
    """
    return _moment("var", a, *reduce_args("var", axis, keepdims, dim, keepdim), correction, ddof, unbiased)


@typed_as(_sig.std)
def std(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    correction: float | None = None,
    ddof: float | None = None,
    unbiased: bool | None = None,
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool | None = None,
) -> Any:
    """Standard deviation over ``axis``: ``sqrt(var(a, axis, correction=correction))``; the
    default ``correction=0`` is numpy's (``np.std``), PyTorch's ``torch.std`` uses ``1``: pass
    ``correction=1`` or ``unbiased=True`` for PyTorch's default (see :func:`var`). Computed
    from :func:`var`'s float64-accumulated two-pass forward.

    Gradient: ``(a - mean(a)) / ((n - correction) * std)``, and ``0`` where ``std == 0`` (a
    constant slice, where the derivative does not exist; PyTorch's convention).

    Raises:
        ShapeError, ValueError, TypeError, DTypeError: as :func:`var`.
    """
    return _moment("std", a, *reduce_args("std", axis, keepdims, dim, keepdim), correction, ddof, unbiased)


# ----- logsumexp ---------------------------------------------------------------------------


@typed_as(_sig.logsumexp)
def logsumexp(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool | None = None,
) -> Any:
    """``log(sum(exp(a), axis))``, computed stably as ``m + log(sum(exp(a - m)))`` with ``m``
    the maximum over ``axis`` (scipy's ``logsumexp``, ``torch.logsumexp``): no ``exp``
    overflows and no ``log(0)`` is taken unless every element of a slice is ``-inf``.

    Edge cases: a slice of all ``-inf`` gives ``-inf`` with gradient ``0`` (PyTorch gives
    NaN); a slice holding ``+inf`` gives ``+inf``; a reduction over 0 elements gives ``-inf``
    (the log of an empty sum), as PyTorch.

    Gradient: ``softmax(a, axis) = exp(a - m) / sum(exp(a - m))``, saved from the forward
    (fused ``grad += exp(a - m) * (g / sum)``, no ``exp`` in the backward).

    Raises:
        ShapeError: an axis is out of range or repeated.
        DTypeError: ``a`` is an integer or bool tensor.
    """
    axis, keepdims = reduce_args("logsumexp", axis, keepdims, dim, keepdim)
    x = float_data("logsumexp", a, "a")
    axes, n, kept = _plan("logsumexp", x, axis)
    if n == 0:
        yk = _arrays.full(kept, -np.inf, x.dtype, x)
        return _record_reduction(a, _out(yk, axes, keepdims), kept, lambda grads, aid, gk: None)
    yk, e, s = _logsumexp_forward(x, axes)

    def grad(grads: Gradients, aid: int, gk: Array) -> None:
        nonzero = s != 0
        if x.__class__ is np.ndarray:
            scale = np.zeros(kept, x.dtype)
            np.divide(gk, s, out=scale, where=nonzero)  # an all -inf slice (s == 0) gets 0
        else:  # CuPy's ufuncs take no where=
            scale = np.where(nonzero, gk / np.where(nonzero, s, x.dtype.type(1)), x.dtype.type(0))
        with np.errstate(invalid="ignore"):  # inf * 0 in a slice holding +inf: NaN, as PyTorch
            grads._fused(aid, _k.addmul, np.multiply, e, scale)

    def diff(gk: Any, xt: Any) -> Any:  # softmax over the axes
        return (xt - xt.logsumexp(axis=axes, keepdims=True)).exp() * gk

    replay = ("logsumexp", (yk, e, s), _logsumexp_forward, (x, axes))
    return _record_reduction(a, _out(yk, axes, keepdims), kept, grad, diff, replay)


def _logsumexp_forward(x: Array, axes: tuple[int, ...]) -> tuple[Array, Array, Array]:
    """``(logsumexp (keepdims), e, s)``: ``m + log(s)`` with ``m`` the maximum over ``axes``
    (0 where it is not finite), ``e = exp(x - m)`` and ``s = sum(e)``."""
    m = np.max(x, axis=axes, keepdims=True)
    if not np.isfinite(m).all():
        m = np.where(np.isfinite(m), m, x.dtype.type(0))
    e = np.exp(x - m)
    s = _as_array(np.sum(e, axis=axes, keepdims=True))
    with np.errstate(divide="ignore"):
        yk = _as_array(np.log(s) + m)
    return yk, e, s


# ----- prod / cumsum / cumprod (issue 27) --------------------------------------------------


def _cum_dim(op: str, x: Array, dim: Any, axis: Any) -> int:
    """The one dim a cumulative op runs along (``dim`` or ``axis``, required)."""
    d = dim_or_axis(op, dim, axis, None)
    if d is None:
        raise TypeError(f"{op}: dim is required (input of shape {x.shape})")
    return one_dim(op, d, x.shape)


def _rcumsum(v: Array, d: int) -> Array:
    """Reversed cumulative sum along ``d``: ``out[k] = sum(v[k:])``."""
    return _arrays.contiguous(np.flip(np.cumsum(np.flip(v, d), axis=d), d))


def cumsum(input: Tensor[S, T], dim: int | None = None, *, axis: int | None = None) -> Tensor[S, T]:
    """Cumulative sum along ``dim`` (``torch.cumsum``): ``out[k] = sum(input[:k + 1])``; the
    shape is ``input``'s, float32 stays float32 and integer or bool tensors give int64 (as
    numpy and PyTorch).

    Gradient: the reversed cumulative sum of the output's gradient,
    ``grad[k] = sum(g[k:])``.

    Raises:
        TypeError: ``dim`` is missing or not an int, or both ``dim`` and ``axis`` are given.
        ShapeError: ``dim`` is out of range.
    """
    x = input.data
    d = _cum_dim("cumsum", x, dim, axis)
    x1 = x.reshape(1) if x.ndim == 0 else x
    shape1, shape = x1.shape, x.shape

    def rule(grads: Gradients, aid: int, g: Array) -> None:
        grads._accum(aid, _rcumsum(g.reshape(shape1), d).reshape(shape))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return g.flip(d).cumsum(d).flip(d)

    y1 = np.cumsum(x1, axis=d)
    out = record_unary(input, y1.reshape(shape), rule, diff=diff)
    if _tp._recorder is not None:
        replayable("cumsum", y1, refill, (np.cumsum, x1, d), (input,), out.tape, True)
    return out


def _cumprod_grad(x: Array, y: Array, g: Array, d: int) -> Array:
    """cumprod's vector-Jacobian product, ``grad[k] = sum_{i >= k} g[i] prod_{j <= i, j != k} x[j]``
    in O(n): ``rcumsum(g * y) / x`` before a slice's first zero ``z``, the same sum with
    ``x[z]`` taken as 1 at ``z``, and 0 after it (every product there holds ``x[z] = 0``)."""
    w = _rcumsum(g * y, d)
    zero = x == 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if not zero.any():
            return _as_array(w / x)
        one = x.dtype.type(1)
        seen = np.cumsum(zero, axis=d)
        before = seen == 0
        first = zero & (seen == 1)
        out = np.where(before, w / np.where(before, x, one), x.dtype.type(0))
        y_first = np.cumprod(np.where(first, one, x), axis=d)
        return _as_array(np.where(first, _rcumsum(g * y_first, d), out))


def _cumprod_diff(xt: Any, g: Any, d: int) -> Any:
    """cumprod's vector-Jacobian product in gradtape ops (the second rule): ``rcumsum(g * y) / x``
    without zeros in ``x``; with zeros, the division-free O(n**2) form (as PyTorch's, whose
    derivative is right at the zeros too): row ``k`` of an ``(n, n)`` block is ``x`` with
    ``x[k]`` set to 1, its cumulative product along the row, kept from column ``k`` on, gives
    ``prod_{j <= i, j != k} x[j]``, summed against ``g``."""
    x = xt.data
    if x.ndim == 0:
        return g
    if not (x == 0).any():
        return (g * xt.cumprod(d)).flip(d).cumsum(d).flip(d) / xt
    last = x.ndim - 1
    xm, gm = (xt, g) if d == last else (xt.transpose(d, last), g.transpose(d, last))
    n = x.shape[d]
    rows = where(np.eye(n, dtype=bool), 1.0, xm.unsqueeze(-2))  # (..., k, i)
    upper = xt._like(np.triu(_arrays.ones((n, n), x.dtype, x)))  # i >= k
    gk = (rows.cumprod(-1) * upper * gm.unsqueeze(-2)).sum(axis=-1)
    return gk if d == last else gk.transpose(d, last)


def cumprod(input: Tensor[S, T], dim: int | None = None, *, axis: int | None = None) -> Tensor[S, T]:
    """Cumulative product along ``dim`` (``torch.cumprod``): ``out[k] = prod(input[:k + 1])``;
    the shape is ``input``'s, float32 stays float32, integer or bool tensors give int64.

    Gradient: ``grad[k] = sum_{i >= k} g[i] * prod_{j <= i, j != k} input[j]``, exact with
    zeros in ``input`` (PyTorch's ``cumprod_backward``): ``rcumsum(g * out) / input`` before
    a slice's first zero, the product with that zero left out at it, and 0 after it; O(n).
    The second rule is ``rcumsum(g * out) / input`` without zeros and an O(n**2) form with
    zeros (as PyTorch's double backward).

    Raises:
        TypeError: ``dim`` is missing or not an int, or both ``dim`` and ``axis`` are given.
        ShapeError: ``dim`` is out of range.
    """
    x = input.data
    d = _cum_dim("cumprod", x, dim, axis)
    x1 = x.reshape(1) if x.ndim == 0 else x
    y1 = np.cumprod(x1, axis=d)
    shape = x.shape

    def rule(grads: Gradients, aid: int, g: Array) -> None:
        grads._accum(aid, _cumprod_grad(x1, y1, g.reshape(y1.shape), d).reshape(shape))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _cumprod_diff(rebuild(aid, x), g, d)

    out = record_unary(input, y1.reshape(shape), rule, diff=diff)
    if _tp._recorder is not None:  # the backward reads x1 and y1
        replayable("cumprod", y1, refill, (np.cumprod, x1, d), (input,), out.tape, True)
    return out


def _others(x: Array, axes: tuple[int, ...]) -> Array:
    """For each element, the product of the other elements of its slice over ``axes``:
    ``prod_{j < k} x[j] * prod_{j > k} x[j]`` along the flattened axes (no division, so exact
    with zeros)."""
    if x.size == 0:
        return np.zeros_like(x)
    rest = [k for k in range(x.ndim) if k not in axes]
    perm = rest + list(axes)
    moved = x.transpose(perm)
    n = math.prod(x.shape[k] for k in axes)
    xs = moved.reshape((*moved.shape[: len(rest)], n))
    pre = np.ones_like(xs)
    np.cumprod(xs[..., :-1], axis=-1, out=pre[..., 1:])
    suf = np.ones_like(xs)
    np.cumprod(xs[..., :0:-1], axis=-1, out=suf[..., -2::-1])
    return np.multiply(pre, suf).reshape(moved.shape).transpose(tuple(int(k) for k in np.argsort(perm)))


def _others_t(xt: Any, axes: tuple[int, ...]) -> Any:
    """:func:`_others` in gradtape ops (prod's second rule; ``cumprod`` keeps it exact at zeros)."""
    x = xt.data
    if x.size == 0:
        return xt._like(_arrays.zeros(x.shape, x.dtype, x))
    rest = [k for k in range(x.ndim) if k not in axes]
    perm = rest + list(axes)
    moved_shape = tuple(x.shape[k] for k in perm)
    n = math.prod(x.shape[k] for k in axes)
    xs = xt.permute(tuple(perm)).reshape((*moved_shape[: len(rest)], n))
    ones = xt._like(_arrays.ones((*moved_shape[: len(rest)], 1), x.dtype, x))
    pre = concat([ones, xs[..., :-1].cumprod(-1)], axis=-1)
    suf = concat([xs[..., 1:].flip(-1).cumprod(-1).flip(-1), ones], axis=-1)
    return (pre * suf).reshape(moved_shape).permute(tuple(int(k) for k in np.argsort(perm)))


@overload
def prod(
    input: Tensor[S, T],
    dim: None = None,
    keepdim: Literal[False] = False,
    *,
    axis: None = None,
    keepdims: Literal[False] | None = None,
) -> Tensor[Rank0, T]: ...
@overload
def prod(
    input: Tensor[Any, T],
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool = False,
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
) -> Tensor[Any, T]: ...
def prod(
    input: Any, dim: Any = None, keepdim: bool | None = None, *, axis: Any = None, keepdims: bool | None = None
) -> Any:
    """Product of the elements over ``dim`` (``torch.prod``; None: all, an int, or a tuple of
    ints as the other reductions take; ``axis=``/``keepdims=`` are gradtape's names). The
    product of no elements is 1; integer or bool tensors give int64 (as numpy and PyTorch).

    Gradient: ``g * prod_{j != k} input[j]`` for each element ``k`` of a slice, computed as the
    product of the elements before it times the product of those after it (no division:
    exact with zeros, one zero or several, as PyTorch's); the second rule is the same in
    gradtape ops through :func:`cumprod`, so it is exact at zeros too.

    Raises:
        ShapeError: a dim is out of range or repeated.
        TypeError: a dim is not an int, or both ``dim`` and ``axis`` (or both ``keepdim`` and
            ``keepdims``) are given.
    """
    x = input.data
    ax, keep = reduce_args("prod", axis, keepdims, dim, keepdim)
    if x.ndim == 0 and ax is not None:  # PyTorch takes dim 0 or -1 of a 0-d tensor
        for k in ax if isinstance(ax, (tuple, list)) else (ax,):
            one_dim("prod", k, x.shape)
        ax = None
    axes, _, kept = _plan("prod", x, ax)
    (yk,) = _prod_forward(x, axes)

    def grad(grads: Gradients, aid: int, gk: Array) -> None:
        grads._accum(aid, _as_array(gk * _others(x, axes)))

    def diff(gk: Any, xt: Any) -> Any:
        return gk * _others_t(xt, axes)

    return _record_reduction(input, _out(yk, axes, keep), kept, grad, diff, ("prod", (yk,), _prod_forward, (x, axes)))


def _prod_forward(x: Array, axes: tuple[int, ...]) -> tuple[Array]:
    """``(prod(x, axes, keepdims=True),)``: :func:`prod`'s forward (its rules read ``x``)."""
    return (_as_array(np.prod(x, axis=axes, keepdims=True)),)


# ----- PyTorch's amax / amin and the logical reductions -----------------------------------------


def amax(a: Tensor[Any, T], dim: int | tuple[int, ...] = (), keepdim: bool = False) -> Tensor[Any, T]:
    """``torch.amax``: the largest element over ``dim`` (an int or a tuple of ints; ``()``, the
    default, reduces every dim), ``keepdim`` keeping the reduced dims as size 1. NaN
    propagates. Gradient (PyTorch's): split evenly among the elements equal to the maximum, as
    :func:`max` with ``axis=`` (which is this op in gradtape's spelling).

    Raises:
        ShapeError: a dim is out of range or repeated, or a reduced dim has size 0.
    """
    return _extremum("amax", a, None if dim == () else dim, bool(keepdim))  # type: ignore[no-any-return]


def amin(a: Tensor[Any, T], dim: int | tuple[int, ...] = (), keepdim: bool = False) -> Tensor[Any, T]:
    """``torch.amin``: the smallest element over ``dim`` (see :func:`amax`; gradient split
    evenly among ties).

    Raises:
        ShapeError: as :func:`amax`.
    """
    return _extremum("amin", a, None if dim == () else dim, bool(keepdim))  # type: ignore[no-any-return]


def _logical_reduce(op: str, a: Tensor[Any, Any], dim: Any, keepdim: bool) -> Any:
    x = a.data
    axes = normalize_axes(op, dim, x.ndim) if dim is not None else None
    return untraced(op, a, (a,), _logical_reduced, np.any if op == "any" else np.all, x, axes, bool(keepdim))


def _logical_reduced(reduce: Any, x: Array, axes: Any, keepdims: bool) -> Array:
    """``reduce(x, axis=axes, keepdims=keepdims)`` (``np.any``/``np.all``), positionally."""
    y: Array = reduce(x, axis=axes, keepdims=keepdims)
    return y


@overload
def any(a: Tensor[Any, Any], dim: None = None, keepdim: Literal[False] = False) -> Tensor[Rank0, NoneTape]: ...
@overload
def any(
    a: Tensor[Any, Any], dim: int | tuple[int, ...] | None = None, keepdim: bool = False
) -> Tensor[Any, NoneTape]: ...
def any(a: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """``torch.any``: whether any element over ``dim`` (None: all; an int or a tuple of ints)
    is nonzero, as a bool tensor (untraced; rank 0 over all dims). Any dtype.

    Raises:
        ShapeError: a dim is out of range or repeated.
    """
    return _logical_reduce("any", a, dim, keepdim)


@overload
def all(a: Tensor[Any, Any], dim: None = None, keepdim: Literal[False] = False) -> Tensor[Rank0, NoneTape]: ...
@overload
def all(
    a: Tensor[Any, Any], dim: int | tuple[int, ...] | None = None, keepdim: bool = False
) -> Tensor[Any, NoneTape]: ...
def all(a: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """``torch.all``: whether every element over ``dim`` is nonzero (see :func:`any`).

    Raises:
        ShapeError: a dim is out of range or repeated.
    """
    return _logical_reduce("all", a, dim, keepdim)
