"""Neural-network layers as fused ops: dropout, layer norm, RMS norm, embedding, embedding bags.

Each op computes its forward in one pass where it can (the norms in the row-wise numba
kernels of :mod:`gradtape.devices.kernels.norm`), saves what its backward needs (the
dropout mask; the norms' per-row mean and reciprocal standard deviation; the embedding
indices; the bags' entries) and records one backward closure.

Typing: ``dropout`` keeps the shape type; ``layer_norm`` (over the last axis) and
``rms_norm`` check that a ``weight`` / ``bias`` of type ``Rank1[N]`` matches the input's last
dim ``N``; ``embedding`` gives ``Rank2[int, D]`` for a list of indices and an untyped shape
(``Any``) for an index array of any shape. The output owns a tape if any input does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, TypeVarTuple, overload

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape._typing import A, B, S, T, typed_as
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import elementwise as _k
from gradtape.devices.kernels import norm as _norm
from gradtape.devices.kernels import scatter as _scatter
from gradtape.errors import ShapeError
from gradtape.ops._signatures import nn as _sig
from gradtape.ops._util import (
    SCALARS,
    channel_input,
    channel_param,
    float_data,
    group_count,
    int_indices,
    one_dim,
    record_unary,
    replayable,
    sum_to,
    tensor_arg,
    tensor_operand,
)
from gradtape.shapes import Rank1, Rank2, Rank3
from gradtape.tape import NONE_TAPE, NoneTape, OwnedTape, Tape, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["dropout", "embedding", "embedding_bag", "glu", "layer_norm", "prelu", "rms_norm"]

Array = np.ndarray[Any, Any]

N = TypeVar("N")
Ts = TypeVarTuple("Ts")


# ----- dropout ---------------------------------------------------------------------------


def dropout(
    a: Tensor[S, T], p: float = 0.5, rng: np.random.Generator | int | None = None, training: bool = True
) -> Tensor[S, T]:
    """Inverted dropout (Srivastava et al. 2014, "Dropout: A Simple Way to Prevent Neural
    Networks from Overfitting"; scaled as PyTorch's ``F.dropout``).

    Each element is kept with probability ``1 - p`` and scaled by ``1 / (1 - p)``, else
    zeroed: ``y = a * m`` with ``m = keep / (1 - p)``, so ``E[y] = a``. The mask ``m`` is
    saved; the gradient is ``grad_a += g * m`` (the fused ``addmul``).

    Args:
        a: float32/float64 tensor of any shape (the output has its shape and dtype).
        p: the probability of zeroing an element, ``0 <= p <= 1``.
        rng: a ``numpy.random.Generator``, or an int seed (a fresh ``default_rng(seed)``:
            the same seed gives the same mask), or ``None`` for the device's generator
            (``Cpu(seed=...).rng``, so a seeded device repeats its masks run after run).
        training: ``False`` makes dropout the identity.

    Returns:
        ``a`` itself when ``training`` is false or ``p == 0`` (nothing recorded); zeros (with
        a zero gradient) when ``p == 1``; else the masked, rescaled tensor.

    Raises:
        ValueError: ``p`` is not a number in ``[0, 1]``.
        TypeError: ``rng`` is neither a Generator, an int nor ``None``.
    """
    float_data("dropout", a, "a")  # a float op, as a function and as a method
    if isinstance(p, bool) or not isinstance(p, SCALARS) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p!r} (input shape {a.shape})")
    p = float(p)
    if not training or p == 0.0:
        return a
    x = a.data
    dt = x.dtype
    if p == 1.0:
        zeros = np.zeros(x.shape, dt)
        if _tp._recorder is not None:
            _tp._recorder.constant(zeros)
        return record_unary(a, zeros, _no_grad, diff=lambda g, r, o, i: g * 0.0)
    m = dropout_mask(x.shape, dt, p, _generator(rng, a))
    out = record_unary(a, np.multiply(x, m), _dropout_rule, m, diff=lambda g, rebuild, oid, aid: g * g._like(m))
    if _tp._recorder is not None:  # a replay draws a fresh mask from the same generator
        gen = functools.partial(_generator, rng, a)
        replayable("dropout", out.data, _dropout_into, (x, m, p, gen), (a,), out.tape, True, (m,))
    return out


def _dropout_into(y: Array, x: Array, m: Array, p: float, gen: Callable[[], np.random.Generator]) -> None:
    """:func:`dropout`'s forward again (for :func:`gradtape.capture`'s replays): a fresh mask
    into ``m`` from ``gen()`` (the device's generator, or a new one for an int seed, as the
    eager op draws), then ``y = x * m``."""
    dropout_mask(x.shape, x.dtype, p, gen(), out=m)
    np.multiply(x, m, out=y)


def dropout_mask(
    shape: tuple[int, ...], dtype: np.dtype[Any], p: float, gen: np.random.Generator, out: Array | None = None
) -> Array:
    """:func:`dropout`'s scaled keep mask ``m = keep / (1 - p)``, ``keep = U[0, 1) >= p``, drawn
    from ``gen`` (one ``gen.random(shape, dtype)`` call, so a layer drawing its masks with it
    consumes the generator as :func:`dropout` would). ``shape``, ``dtype`` (float32/float64):
    the mask's; ``0 <= p < 1`` (unchecked: :func:`dropout` checks it); ``out``: an array of
    that shape and dtype to write instead of a new one."""
    keep = _as_array(gen.random(shape, dtype=dtype)) >= dtype.type(p)
    m: Array = np.multiply(keep, dtype.type(1.0 / (1.0 - p)), dtype=dtype, out=out)
    return m


def _dropout_rule(grads: Gradients, i: int, g: Array, m: Array) -> None:
    """dropout's first rule: ``grad += m * g`` (the saved scaled mask) in one fused pass."""
    grads._fused(i, _k.addmul, np.multiply, m, g)


def _no_grad(grads: Gradients, i: int, g: Array) -> None:
    """The backward of an output that does not depend on its input (zero gradient)."""


def _generator(rng: np.random.Generator | int | None, a: Tensor[Any, Any]) -> np.random.Generator:
    if rng is None:
        dev_rng = getattr(a.device, "rng", None)
        return dev_rng if isinstance(dev_rng, np.random.Generator) else np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"dropout: rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}")


# ----- layer norm and RMS norm -----------------------------------------------------------


def _param(op: str, name: str, x: Tensor[Any, Any], p: object, nshape: tuple[int, ...]) -> Tensor[Any, Any] | None:
    if p is None:
        return None
    t = tensor_operand(op, x, p)
    if t.data.shape != nshape:
        raise ShapeError(
            f"{op}: {name} of shape {t.data.shape} does not match the normalised shape {nshape} (x {x.data.shape})"
        )
    return t


def _eps(op: str, eps: object) -> float:
    if isinstance(eps, bool) or not isinstance(eps, SCALARS) or not float(eps) >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative number, got {eps!r}")
    return float(eps)


def _norm_diff_terms(xt: Any, gy: Any, axes: tuple[int, ...], eps: float, centered: bool) -> tuple[Any, Any]:
    """The norms' second rule, in gradtape ops on ``x`` rebuilt (``xt``): ``(gx, xhat)``.

    With ``xhat = (x - mean) * rstd`` over ``axes`` and ``gy`` the gradient of ``xhat``
    (``g * weight``): ``gx = rstd (gy - mean(gy) - xhat mean(gy xhat))`` (no ``mean(gy)`` term
    when not ``centered``: RMS norm). Shared by layer norm, RMS norm and the grouped norms."""
    xc = xt - xt.mean(axis=axes, keepdims=True) if centered else xt
    rstd = ((xc * xc).mean(axis=axes, keepdims=True) + eps) ** -0.5
    xhat = xc * rstd
    inner = gy - xhat * (gy * xhat).mean(axis=axes, keepdims=True)
    if centered:
        inner = inner - gy.mean(axis=axes, keepdims=True)
    return inner * rstd, xhat


def _record_norm(
    x: Tensor[Any, Any],
    w: Tensor[Any, Any] | None,
    b: Tensor[Any, Any] | None,
    k: int,
    eps: float,
    centered: bool,
) -> Any:
    """Run the fused norm forward over ``x``'s last ``k`` dims and record its backward: one
    kernel pass (:func:`gradtape.devices.kernels.norm.norm_backward`) computing only the
    gradients the store wants (``grads.wants``) of ``x``, ``w`` and ``b``."""
    xd = src = x.data
    if not xd.flags.c_contiguous:  # one copy, used by the forward and saved for the backward
        xd = _arrays.contiguous(xd)
    wd = None if w is None else w.data
    bd = None if b is None else b.data
    y, mean, rstd = _norm.norm_forward(xd, k, wd, bd, eps, centered)
    tape = op_tape(x, *(t for t in (w, b) if t is not None))
    out = x._from_op(y, tape)
    if _tp._recorder is not None:
        writes = (mean, rstd) if xd is src else (mean, rstd, xd)
        args = (src, xd, k, wd, bd, eps, centered, mean, rstd)
        replayable("layer_norm" if centered else "rms_norm", y, _norm_into, args, (x, w, b), tape, True, writes)
    if tape is not NONE_TAPE:
        xid, x_leaf = x.id, x._leaf
        wid, w_leaf = (w.id, w._leaf) if w is not None else (0, True)
        bid, b_leaf = (b.id, b._leaf) if b is not None else (0, True)

        def norm_backward(grads: Gradients, g: Array) -> None:
            need_x = grads.wants(xid, x_leaf)
            need_w = wd is not None and grads.wants(wid, w_leaf)
            need_b = bd is not None and grads.wants(bid, b_leaf)
            if not (need_x or need_w or need_b):
                return
            dx, dw, db = _norm.norm_backward(g, xd, k, wd, mean, rstd, centered, need_x, need_w, need_b)
            if dx is not None:
                grads._accum(xid, dx)
            if dw is not None:
                grads._accum(wid, dw)
            if db is not None:
                grads._accum(bid, db)

        def norm_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            axes = tuple(range(xd.ndim - k, xd.ndim))
            gy = g * rebuild(wid, wd) if wd is not None else g
            gx, xhat = _norm_diff_terms(rebuild(xid, xd), gy, axes, eps, centered)
            out = [(xid, gx)]
            if wd is not None:
                out.append((wid, sum_to(g * xhat, wd.shape)))
            if bd is not None:
                out.append((bid, sum_to(g, bd.shape)))
            return out

        record(tape, out, norm_backward, norm_diff)
    return out


def _norm_into(
    y: Array,
    src: Array,
    xd: Array,
    k: int,
    wd: Array | None,
    bd: Array | None,
    eps: float,
    centered: bool,
    mean: Array,
    rstd: Array,
) -> None:
    """:func:`_record_norm`'s forward again (for :func:`gradtape.capture`'s replays): the
    contiguous copy ``xd`` of a strided input ``src`` refreshed, then ``y``, ``mean`` and
    ``rstd`` rewritten in place."""
    if xd is not src:
        np.copyto(xd, src)
    _norm.norm_forward(xd, k, wd, bd, eps, centered, out=(y, mean, rstd))


@typed_as(_sig.layer_norm)
def layer_norm(
    x: Any, normalized_shape: int | tuple[int, ...] | None = None, weight: Any = None, bias: Any = None, eps: Any = 1e-5
) -> Any:
    """Layer normalisation (Ba, Kiros & Hinton 2016, "Layer Normalization"; PyTorch's
    ``F.layer_norm``) over the trailing ``normalized_shape`` dims (default: the last axis).

    With ``N`` the number of normalised elements of a row (the product of the trailing dims):
    ``mu = mean(x)``, ``var = mean((x - mu)**2)`` (biased, as PyTorch),
    ``rstd = 1 / sqrt(var + eps)``, ``xhat = (x - mu) * rstd``, ``y = xhat * weight + bias``.

    Gradients (one fused kernel pass per row, from the saved ``mu`` and ``rstd``):
    ``dxhat = g * weight``, ``grad_x += rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))``,
    ``grad_weight += sum(g * xhat)``, ``grad_bias += sum(g)`` (sums over the leading dims).

    Args:
        x: float32/float64 tensor with at least ``len(normalized_shape)`` dims.
        normalized_shape: an int or a tuple equal to ``x``'s trailing dims; ``None`` for the
            last axis.
        weight, bias: tensors of shape ``normalized_shape`` and ``x``'s dtype, or ``None``.
        eps: added to the variance, ``>= 0``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        ShapeError: ``x`` is 0-D, ``normalized_shape`` is not ``x``'s trailing dims or holds
            no element, or ``weight`` / ``bias`` has another shape (names the shapes).
        DTypeError: the dtypes differ.
        ValueError: ``eps`` is negative or not a number.
    """
    xd = x.data
    if normalized_shape is None:
        nshape: tuple[int, ...] = xd.shape[-1:]
    elif isinstance(normalized_shape, (int, np.integer)):
        nshape = (int(normalized_shape),)
    else:
        nshape = tuple(int(n) for n in normalized_shape)
    k = len(nshape)
    if xd.ndim == 0 or k == 0 or k > xd.ndim or xd.shape[xd.ndim - k :] != nshape:
        raise ShapeError(f"layer_norm: normalized_shape {nshape} is not the trailing dims of x's shape {xd.shape}")
    if math.prod(nshape) == 0:
        raise ShapeError(f"layer_norm: cannot normalise over zero elements (x {xd.shape}, normalized_shape {nshape})")
    w = _param("layer_norm", "weight", x, weight, nshape)
    b = _param("layer_norm", "bias", x, bias, nshape)
    return _record_norm(x, w, b, k, _eps("layer_norm", eps), centered=True)


@overload
def rms_norm(
    x: Tensor[tuple[*Ts, N], T], weight: Tensor[Rank1[N], NoneTape] | None = None, eps: float | None = None
) -> Tensor[tuple[*Ts, N], T]: ...
@overload
def rms_norm(
    x: Tensor[tuple[*Ts, N], Tape], weight: Tensor[Rank1[N], OwnedTape], eps: float | None = None
) -> Tensor[tuple[*Ts, N], OwnedTape]: ...
@overload
def rms_norm(
    x: Tensor[tuple[*Ts, N], T], weight: Tensor[Rank1[N], T] | None = None, eps: float | None = None
) -> Tensor[tuple[*Ts, N], T]: ...
def rms_norm(x: Any, weight: Any = None, eps: Any = None) -> Any:
    """Root-mean-square layer normalisation over the last axis (Zhang & Sennrich 2019,
    "Root Mean Square Layer Normalization"; PyTorch's ``F.rms_norm``).

    With ``N`` the last dim: ``rstd = 1 / sqrt(mean(x**2) + eps)``, ``xhat = x * rstd``,
    ``y = xhat * weight``. No mean is subtracted and there is no bias.

    Gradients (one fused kernel pass per row, from the saved ``rstd``): ``dxhat = g * weight``,
    ``grad_x += rstd * (dxhat - xhat * mean(dxhat * xhat))``,
    ``grad_weight += sum(g * xhat)`` (over the leading dims).

    Args:
        x: float32/float64 tensor with at least one dim.
        weight: a tensor of shape ``(N,)`` and ``x``'s dtype, or ``None``.
        eps: added to the mean square, ``>= 0``; ``None`` (default, as PyTorch) is the
            machine epsilon of ``x``'s dtype (``np.finfo(dtype).eps``).

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        ShapeError: ``x`` is 0-D or its last dim is 0, or ``weight`` is not ``(N,)``.
        DTypeError: the dtypes differ.
        ValueError: ``eps`` is negative or not a number.
    """
    xd = x.data
    if xd.ndim == 0 or xd.shape[-1] == 0:
        raise ShapeError(f"rms_norm: needs a non-empty last axis, got x of shape {xd.shape}")
    w = _param("rms_norm", "weight", x, weight, xd.shape[-1:])
    e = float(np.finfo(xd.dtype).eps) if eps is None else _eps("rms_norm", eps)
    return _record_norm(x, w, None, 1, e, centered=False)


# ----- group norm and instance norm (issue 27) --------------------------------------------


def _record_group_norm(
    op: str, x: Tensor[Any, Any], groups: int, w: Tensor[Any, Any] | None, b: Tensor[Any, Any] | None, eps: float
) -> Any:
    """Normalise ``x`` ``(N, C, *)`` over each of ``groups`` groups of ``C / groups`` channels
    (and the spatial dims), then scale and shift each channel; record both rules.

    The forward is layer norm's row kernel on the ``(N, groups, -1)`` view (no weight, so it
    gives ``xhat``, ``mean`` and ``rstd`` per row), then the per-channel affine kernel
    (:func:`gradtape.devices.kernels.norm.channel_affine`). The first rule: ``dx`` from the
    row kernel's backward given ``g * weight`` (the affine's weight is per channel, the row
    kernel's per element: it is folded into the gradient first), ``dweight``/``dbias`` from
    :func:`~gradtape.devices.kernels.norm.channel_affine_backward`; each only if wanted."""
    xd = src = x.data
    if not xd.flags.c_contiguous:
        xd = _arrays.contiguous(xd)
    shape = xd.shape
    n, c = shape[0], shape[1]
    rows = (n, groups, (c // groups) * math.prod(shape[2:]))
    xg = xd.reshape(rows)
    wd = None if w is None else w.data
    bd = None if b is None else b.data
    y, mean, rstd = _norm.norm_forward(xg, 1, None, None, eps, True)
    y = y.reshape(shape)
    _norm.channel_affine(y, wd, bd)
    tape = op_tape(x, *(t for t in (w, b) if t is not None))
    out = x._from_op(y, tape)
    if _tp._recorder is not None:
        writes = (mean, rstd) if xd is src else (mean, rstd, xd)
        args = (src, xd, eps, wd, bd, mean, rstd)
        replayable(op, y, _group_norm_into, args, (x, w, b), tape, True, writes)
    if tape is not NONE_TAPE:
        xid, x_leaf = x.id, x._leaf
        wid, w_leaf = (w.id, w._leaf) if w is not None else (0, True)
        bid, b_leaf = (b.id, b._leaf) if b is not None else (0, True)
        bshape = (1, c) + (1,) * (len(shape) - 2)
        axes = (0, *range(2, len(shape)))

        def group_norm_backward(grads: Gradients, g: Array) -> None:
            if grads.wants(xid, x_leaf):
                gy = g if wd is None else g * wd.reshape(bshape)
                dx, _, _ = _norm.norm_backward(gy.reshape(rows), xg, 1, None, mean, rstd, True, True, False, False)
                grads._accum(xid, dx.reshape(shape))  # type: ignore[union-attr]
            need_w = wd is not None and grads.wants(wid, w_leaf)
            need_b = bd is not None and grads.wants(bid, b_leaf)
            if need_w or need_b:
                dw, db = _norm.channel_affine_backward(g, xd, mean, rstd, need_w, need_b)
                if dw is not None:
                    grads._accum(wid, dw)
                if db is not None:
                    grads._accum(bid, db)

        def group_norm_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            gy = g * rebuild(wid, wd).reshape(bshape) if wd is not None else g
            gx, xhat = _norm_diff_terms(rebuild(xid, xd).reshape(rows), gy.reshape(rows), (2,), eps, True)
            res = [(xid, gx.reshape(shape))]
            if wd is not None:
                res.append((wid, (g * xhat.reshape(shape)).sum(axis=axes)))
            if bd is not None:
                res.append((bid, g.sum(axis=axes)))
            return res

        record(tape, out, group_norm_backward, group_norm_diff)
    return out


def _group_norm_into(
    y: Array,
    src: Array,
    xd: Array,
    eps: float,
    wd: Array | None,
    bd: Array | None,
    mean: Array,
    rstd: Array,
) -> None:
    """:func:`_record_group_norm`'s forward again (for :func:`gradtape.capture`'s replays):
    the contiguous copy of a strided input refreshed, the rows normalised into ``y`` (``mean``
    and ``rstd`` rewritten), then the per-channel affine."""
    if xd is not src:
        np.copyto(xd, src)
    xg = xd.reshape((*mean.shape, -1))
    _norm.norm_forward(xg, 1, None, None, eps, True, out=(y.reshape(xg.shape), mean, rstd))
    _norm.channel_affine(y, wd, bd)


@overload
def group_norm(
    input: Tensor[S, T],
    num_groups: int,
    weight: Tensor[Rank1[Any], NoneTape] | None = None,
    bias: Tensor[Rank1[Any], NoneTape] | None = None,
    eps: float = 1e-5,
) -> Tensor[S, T]: ...
@overload
def group_norm(
    input: Tensor[S, Tape],
    num_groups: int,
    *,
    weight: Tensor[Rank1[Any], OwnedTape],
    bias: Tensor[Rank1[Any], Tape] | None = None,
    eps: float = 1e-5,
) -> Tensor[S, OwnedTape]: ...
@overload
def group_norm(
    input: Tensor[S, Tape],
    num_groups: int,
    *,
    weight: Tensor[Rank1[Any], Tape] | None = None,
    bias: Tensor[Rank1[Any], OwnedTape],
    eps: float = 1e-5,
) -> Tensor[S, OwnedTape]: ...
@overload
def group_norm(
    input: Tensor[S, T],
    num_groups: int,
    weight: Tensor[Rank1[Any], T] | None = None,
    bias: Tensor[Rank1[Any], T] | None = None,
    eps: float = 1e-5,
) -> Tensor[S, T]: ...
def group_norm(input: Any, num_groups: Any, weight: Any = None, bias: Any = None, eps: Any = 1e-5) -> Any:
    """Group normalisation (Wu & He 2018, "Group Normalization"; PyTorch's ``F.group_norm``).

    The ``C`` channels of ``input`` ``(N, C, *)`` are split into ``num_groups`` groups of
    ``C / num_groups`` consecutive channels; each sample's group is normalised over its
    channels and spatial dims: ``mu``, ``var`` (biased) over the group,
    ``xhat = (x - mu) / sqrt(var + eps)``, ``y = xhat * weight[c] + bias[c]``.

    Gradients (the row kernel of :func:`layer_norm` over the ``(N, G, -1)`` view, given
    ``gy = g * weight[c]``): ``grad_x += rstd (gy - mean(gy) - xhat mean(gy xhat))`` (means over
    the group), ``grad_weight[c] += sum(g * xhat)``, ``grad_bias[c] += sum(g)`` (over the batch
    and the spatial dims). Differentiable again (the second rule in gradtape ops).

    Args:
        input: float32/float64 ``(N, C, *)``, at least 2 dims.
        num_groups: a positive int dividing ``C``.
        weight, bias: ``(C,)`` tensors of ``input``'s dtype, or ``None``.
        eps: added to the variance, ``>= 0``.

    Returns:
        A tensor of ``input``'s shape and dtype.

    Raises:
        ShapeError: ``input`` has fewer than 2 dims, or ``weight``/``bias`` is not ``(C,)``.
        ValueError: ``num_groups`` does not divide ``C``; ``eps`` is negative.
        TypeError: ``num_groups`` is not an int. DTypeError: the dtypes differ or are not float.
    """
    op = "group_norm"
    xd = channel_input(op, input)
    groups = group_count(op, num_groups, xd.shape)
    w = channel_param(op, "weight", input, weight, xd.shape[1])
    b = channel_param(op, "bias", input, bias, xd.shape[1])
    return _record_group_norm(op, input, groups, w, b, _eps(op, eps))


@overload
def instance_norm(
    input: Tensor[S, T],
    running_mean: Tensor[Rank1[Any], NoneTape] | None = None,
    running_var: Tensor[Rank1[Any], NoneTape] | None = None,
    weight: Tensor[Rank1[Any], NoneTape] | None = None,
    bias: Tensor[Rank1[Any], NoneTape] | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor[S, T]: ...
@overload
def instance_norm(
    input: Tensor[S, Tape],
    running_mean: Tensor[Rank1[Any], NoneTape] | None = None,
    running_var: Tensor[Rank1[Any], NoneTape] | None = None,
    *,
    weight: Tensor[Rank1[Any], OwnedTape],
    bias: Tensor[Rank1[Any], Tape] | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor[S, OwnedTape]: ...
@overload
def instance_norm(
    input: Tensor[S, T],
    running_mean: Tensor[Rank1[Any], NoneTape] | None = None,
    running_var: Tensor[Rank1[Any], NoneTape] | None = None,
    weight: Tensor[Rank1[Any], T] | None = None,
    bias: Tensor[Rank1[Any], T] | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor[S, T]: ...
def instance_norm(
    input: Any,
    running_mean: Any = None,
    running_var: Any = None,
    weight: Any = None,
    bias: Any = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Any:
    """Instance normalisation (Ulyanov, Vedaldi & Lempitsky 2016, "Instance Normalization: The
    Missing Ingredient for Fast Stylization"; PyTorch's ``F.instance_norm``).

    ``use_input_stats=True`` (default): each sample's channel of ``input`` ``(N, C, *)`` is
    normalised over its spatial dims, ``y = (x - mu) / sqrt(var + eps) * weight[c] + bias[c]``
    (biased ``var``): :func:`group_norm` with ``C`` groups, same kernels and gradients. Given
    ``running_mean``/``running_var``, they are updated in place as PyTorch does:
    ``running = (1 - momentum) * running + momentum * stat``, ``stat`` the batch average of
    the instances' means and *unbiased* variances (not recorded: buffers).

    ``use_input_stats=False``: the running statistics normalise instead (both required),
    ``y = (x - running_mean) / sqrt(running_var + eps) * weight + bias``, composed from
    recorded ops.

    Args:
        input: float32/float64 ``(N, C, *)``; with ``use_input_stats`` more than one spatial
            element per channel.
        running_mean, running_var, weight, bias: ``(C,)`` tensors of ``input``'s dtype, or ``None``.
        use_input_stats, momentum, eps: as PyTorch (``eps >= 0``).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Raises:
        ShapeError: ``input`` has fewer than 2 dims, or a ``(C,)`` argument another shape.
        ValueError: one spatial element with ``use_input_stats`` (PyTorch's "more than 1
            spatial element"), ``use_input_stats=False`` without both running statistics,
            ``eps`` negative or ``momentum`` not a number.
        DTypeError: the dtypes differ or are not float.
    """
    op = "instance_norm"
    xd = channel_input(op, input)
    c = xd.shape[1]
    rm = channel_param(op, "running_mean", input, running_mean, c)
    rv = channel_param(op, "running_var", input, running_var, c)
    w = channel_param(op, "weight", input, weight, c)
    b = channel_param(op, "bias", input, bias, c)
    e = _eps(op, eps)
    if isinstance(momentum, bool) or not isinstance(momentum, SCALARS):
        raise ValueError(f"{op}: momentum must be a number, got {momentum!r}")
    bshape = (1, c) + (1,) * (xd.ndim - 2)
    if not use_input_stats:
        if rm is None or rv is None:
            raise ValueError(f"{op}: use_input_stats=False needs running_mean and running_var (input {xd.shape})")
        y = (input - rm.reshape(bshape)) * ((rv.reshape(bshape) + e) ** -0.5)
        if w is not None:
            y = y * w.reshape(bshape)
        return y + b.reshape(bshape) if b is not None else y
    m = math.prod(xd.shape[2:])
    if m <= 1:
        raise ValueError(f"{op}: expected more than 1 spatial element when training, got input of shape {xd.shape}")
    if rm is not None or rv is not None:
        x3 = xd.reshape(xd.shape[0], c, m)
        f = float(momentum)
        if rm is not None:
            rm.data[...] = (1 - f) * rm.data + f * x3.mean(axis=2).mean(axis=0)
        if rv is not None:
            rv.data[...] = (1 - f) * rv.data + f * x3.var(axis=2, ddof=1).mean(axis=0)
    return _record_group_norm(op, input, c, w, b, e)


# ----- embedding -------------------------------------------------------------------------


# No catch-all ``npt.ArrayLike`` row: mypy would fall back to it (an untyped result) when a
# list's row does not fit an annotated target, hiding the error the list's row reports.
@overload
def embedding(indices: int, weight: Tensor[Rank2[A, B], T]) -> Tensor[Rank1[B], T]: ...
@overload
def embedding(indices: list[int] | tuple[int, ...], weight: Tensor[Rank2[A, B], T]) -> Tensor[Rank2[int, B], T]: ...
@overload
def embedding(indices: Sequence[Sequence[int]], weight: Tensor[Rank2[A, B], T]) -> Tensor[Rank3[int, int, B], T]: ...
@overload
def embedding(
    indices: npt.NDArray[Any] | Sequence[Sequence[Sequence[int]]] | Tensor[Any, Any], weight: Tensor[Rank2[A, B], T]
) -> Tensor[Any, T]: ...
def embedding(indices: npt.ArrayLike, weight: Any) -> Any:
    """Look up rows of ``weight`` (PyTorch's ``F.embedding``): ``y[..., :] = weight[indices[...], :]``.

    Args:
        indices: integers in ``[0, num)`` of any shape (an int, a list, nested lists, an
            integer array or an integer tensor; floats and bools raise, see
            :func:`gradtape.ops._util.int_indices`). Typed: an int gives ``Rank1[dim]`` (a
            scalar index gives one row, shape ``(dim,)``), a list ``Rank2[int, dim]``, a list
            of lists ``Rank3[int, int, dim]``, an array or tensor an untyped result.
        weight: float32/float64 tensor of shape ``(num, dim)``.

    Returns:
        A tensor of shape ``indices.shape + (dim,)``, ``weight``'s dtype and tape.

    Gradient: ``grad_weight[indices[j]] += g[j]`` for every index position ``j``; repeated
    indices accumulate (a scatter-add kernel, :func:`gradtape.devices.kernels.scatter.scatter_add`).
    The gradient is dense, of ``weight``'s shape.

    Raises:
        ShapeError: ``weight`` is not 2-D.
        DTypeError: ``indices`` are not integers.
        ValueError: an index is outside ``[0, num)``.
    """
    wd = weight.data
    if wd.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num, dim), got shape {wd.shape}")
    idx = int_indices("embedding", indices, f"weight of shape {wd.shape}")
    _rows_in_range("embedding", idx, wd.shape)
    if not isinstance(indices, (list, tuple, int)):
        idx = idx.copy()  # a private copy: the caller may reuse its array
    y = np.take(wd, idx, axis=0)
    w_leaf, wshape, dt = weight._leaf, wd.shape, wd.dtype

    scatter_into, scatter_fresh = _rows_scatter(wshape, dt)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        if grads.wants(i, w_leaf):
            grads._fused(i, scatter_into, scatter_fresh, idx, g)

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:  # the rows scattered back, recorded
        from gradtape.ops.indexing import scatter_into as scatter_tensor

        return scatter_tensor(g.reshape((-1, wshape[1])), wshape, 0, idx.reshape(-1))

    out = record_unary(weight, y, rule, diff=diff)
    if _tp._recorder is not None:
        # the kernel refreshes its private copy of the indices from the tensor or array passed;
        # indices given as Python ints are a constant of the plan
        src_t: Any = indices if hasattr(indices, "tape") else None
        src = src_t.data if src_t is not None else indices if isinstance(indices, np.ndarray) else idx
        if src is idx:
            _tp._recorder.constant(idx)
        writes = () if src is idx else (idx,)
        replayable("embedding", y, _embedding_into, (wd, idx, src), (weight, src_t), out.tape, True, writes)
    return out


def _rows_scatter(
    wshape: tuple[int, ...], dt: Any
) -> tuple[Callable[[Array, Array, Array], None], Callable[[Array, Array], Array]]:
    """The two ways a table's gradient takes rows ``g`` at indices ``ix`` (repeats adding up),
    for ``Gradients._fused``: into the gradient already there, or into new zeros of
    ``wshape``/``dt`` (:func:`embedding`'s and :func:`embedding_bag`'s backward)."""

    def into(cur: Array, ix: Array, g: Array) -> None:
        _scatter.scatter_add(cur, 0, ix, g)

    def fresh(ix: Array, g: Array) -> Array:
        out = _arrays.zeros(wshape, dt, g)
        _scatter.scatter_add(out, 0, ix, g)
        return out

    return into, fresh


def _embedding_into(y: Array, wd: Array, idx: Array, src: Array) -> None:
    """:func:`embedding`'s forward again (for :func:`gradtape.capture`'s replays): the private
    copy of the indices refreshed from ``src``, then ``y = wd[idx]``."""
    if idx is not src:
        np.copyto(idx, src)
    _rows_in_range("embedding", idx, wd.shape)
    np.take(wd, idx, axis=0, out=y)


def _rows_in_range(op: str, idx: Array, wshape: tuple[int, ...]) -> None:
    """The one row check of the lookups (:func:`embedding`, its replays, :func:`embedding_bag`).

    Raises:
        ValueError: an index of ``idx`` is not a row of a ``(num, dim)`` weight (outside
            ``[0, num)``); the message names ``op``, the weight's shape and the extremes.
    """
    num = wshape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise ValueError(
            f"{op}: indices must lie in [0, {num}) for weight {wshape}, got min {idx.min()} and max {idx.max()}"
        )


# ----- embedding_bag ---------------------------------------------------------------------


_BAG_MODES = ("sum", "mean", "max")
_HOST = np.empty(0, np.intp)  # stands for host memory in _arrays.into_memory_of


def _host(a: Array) -> Array:
    """``a`` in host memory (a GPU array copied back; a host array as it is)."""
    return _arrays.into_memory_of(a, _HOST)


def _padding_row(op: str, padding_idx: object, num: int) -> int | None:
    """PyTorch's ``padding_idx`` for a table of ``num`` rows, as a row in ``[0, num)``
    (negative counts from the end: ``-1`` is row ``num - 1``), or ``None`` for none: the one
    check of :class:`~gradtape.nn.Embedding`, :class:`~gradtape.nn.EmbeddingBag` and
    :func:`embedding_bag`.

    Raises:
        TypeError: ``padding_idx`` is neither an int nor ``None`` (a bool, a float).
        ValueError: it is outside ``[-num, num)`` (PyTorch's check).
    """
    if padding_idx is None:
        return None
    if isinstance(padding_idx, (bool, np.bool_)) or not isinstance(padding_idx, (int, np.integer)):
        raise TypeError(f"{op}: padding_idx must be an int or None, got {type(padding_idx).__name__}")
    if not -num <= padding_idx < num:
        raise ValueError(f"{op}: padding_idx must be within num_embeddings ({num}), got {padding_idx}")
    return int(padding_idx) % num


def _renorm_args(op: str, max_norm: object, norm_type: object) -> tuple[float, float]:
    """``max_norm`` and ``norm_type`` of :func:`_renorm_rows` as floats.

    Raises:
        TypeError: either is not a real number (a bool, a string, a complex).
        ValueError: ``max_norm`` is negative or NaN, or ``norm_type`` is NaN.
    """
    vals = []
    for name, v in (("max_norm", max_norm), ("norm_type", norm_type)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, SCALARS):
            raise TypeError(f"{op}: {name} must be a real number, got {type(v).__name__} {v!r}")
        vals.append(float(v))
    mn, p = vals
    if not mn >= 0.0:
        raise ValueError(f"{op}: max_norm must be >= 0, got {mn}")
    if math.isnan(p):
        raise ValueError(f"{op}: norm_type must be a number, got {p}")
    return mn, p


def _renorm_rows(op: str, weight: Tensor[Any, Any], idx: Array, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``max_norm`` (``torch.embedding_renorm_``): every row of ``weight`` that ``idx``
    names (once, however often it is named) whose ``norm_type``-norm exceeds ``max_norm`` is
    scaled in place by ``max_norm / (norm + 1e-7)``, outside any tape (as PyTorch's
    ``no_grad`` renormalisation). The write is noted (:func:`gradtape.tape.note_writes`), so a
    backward that saved the table before it refuses to run, as PyTorch's version counter
    makes it; ``gradtape.capture`` does not replay it (a recorded call that renormalises runs
    eagerly).

    Raises:
        ValueError: ``weight``'s memory is read-only.
    """
    from gradtape.ops.distance import _norm_forward

    wd = weight.data
    rows = np.unique(idx)
    if rows.size == 0:
        return
    if not _arrays.writeable(wd):
        raise ValueError(f"{op}: max_norm renormalises weight in place, but its array (shape {wd.shape}) is read-only")
    sub = np.take(wd, rows, axis=0)
    norms = _norm_forward(sub, norm_type, (1,)).reshape(-1)
    over = norms > max_norm
    if not bool(over.any()):
        return
    scale = (max_norm / (norms[over].astype(np.float64) + 1e-7)).astype(wd.dtype)
    wd[rows[over]] = sub[over] * scale[:, None]
    _tp.note_writes(wd)


class _Bags(NamedTuple):
    """Which positions of the flattened input enter which bag (host arrays, :func:`_bags`)."""

    n_bags: int
    """``B``, the number of bags."""
    flat: Array
    """``(N,)``: every index of the input, flattened."""
    pos: Array
    """``(K,)``: the positions that enter a bag (not ``padding_idx``, not after the last
    bag's end), increasing."""
    bag: Array
    """``(K,)``: the bag of each of those positions, non-decreasing."""
    sizes: Array
    """``(B,)``: how many positions each bag holds."""
    shape: tuple[int, ...]
    """The input's shape, ``(B, L)`` or ``(N,)``."""


def _bags(
    op: str, input: object, offsets: object, include_last_offset: bool, pad: int | None, wshape: tuple[int, ...]
) -> _Bags:
    """The bags of :func:`embedding_bag` (and :class:`~gradtape.nn.EmbeddingBag`): a 2-D
    ``input`` of shape ``(B, L)`` is ``B`` bags of ``L`` indices; a 1-D one of shape ``(N,)``
    is cut by ``offsets``, the bags' starts (``include_last_offset``: and then the last bag's
    end). Positions holding ``pad`` enter no bag; neither do positions after the last bag's
    end (``include_last_offset`` with ``offsets[-1] < N``, as PyTorch documents it).

    Raises:
        DTypeError: ``input`` or ``offsets`` are not integers (floats, bools).
        ShapeError: ``input`` is neither 1-D nor 2-D; ``offsets`` given with a 2-D input, or not 1-D.
        ValueError: a 1-D input without offsets; ``offsets[0] != 0``; offsets that decrease or
            pass the input's end; no offsets for a non-empty input (or none at all with
            ``include_last_offset``); an index outside ``[0, num)``. Each message names the op
            and the shapes.
    """
    idx = _host(int_indices(op, input, f"weight of shape {wshape}", "input"))
    shape = idx.shape
    if idx.ndim == 2:
        if offsets is not None:
            raise ShapeError(
                f"{op}: offsets must be None for a 2-D input (shape {shape}: {shape[0]} bags of {shape[1]} "
                f"indices), got offsets of type {type(offsets).__name__}"
            )
        bounds = np.arange(shape[0] + 1, dtype=np.intp) * shape[1]
    elif idx.ndim == 1:
        n = shape[0]
        if offsets is None:
            raise ValueError(f"{op}: a 1-D input (shape {shape}) needs offsets, the bags' starts (1-D); got None")
        off = _host(int_indices(op, offsets, f"input of shape {shape}", "offsets"))
        if off.ndim != 1:
            raise ShapeError(f"{op}: offsets must be 1-D, got shape {off.shape} (input of shape {shape})")
        if include_last_offset and off.size == 0:
            raise ValueError(f"{op}: include_last_offset=True needs at least 1 offset (the last bag's end), got none")
        if not include_last_offset and off.size == 0 and n:
            raise ValueError(f"{op}: offsets of shape (0,) make no bag for the {n} indices of input of shape {shape}")
        if off.size and off[0] != 0:
            raise ValueError(f"{op}: offsets[0] must be 0 (the first bag starts at the first index), got {off[0]}")
        if off.size and off.max() > n:
            i = int(np.argmax(off > n))
            raise ValueError(f"{op}: offsets[{i}] = {off[i]} is past the end of the input (shape {shape})")
        steps = np.diff(off)
        if (steps < 0).any():
            i = int(np.argmax(steps < 0)) + 1
            raise ValueError(
                f"{op}: offsets must not decrease, got offsets[{i}] = {off[i]} after offsets[{i - 1}] = {off[i - 1]} "
                f"(offsets of shape {off.shape}, input of shape {shape})"
            )
        bounds = off.astype(np.intp) if include_last_offset else np.append(off, n).astype(np.intp)
    else:
        raise ShapeError(f"{op}: input must be 1-D (with offsets) or 2-D (B, L), got shape {shape}")
    flat = idx.reshape(-1)
    _rows_in_range(op, flat, wshape)
    count = bounds.size - 1
    bag = np.repeat(np.arange(count, dtype=np.intp), np.diff(bounds))
    pos = np.arange(bag.size, dtype=np.intp)
    if pad is not None:
        keep = flat[: bag.size] != pad
        pos, bag = pos[keep], bag[keep]
    return _Bags(count, flat, pos, bag, np.bincount(bag, minlength=count).astype(np.intp), shape)


def _bag_max(rows: Array, ids: Array, bags: _Bags, like: Array) -> tuple[Array, Array]:
    """PyTorch's ``max`` of each bag, elementwise over the ``D`` columns: the bag's first row,
    then each later row where it is strictly greater (so a tie goes to the first row, and a NaN
    stays only where it comes first). ``rows`` ``(K, D)`` are the bags' rows in order, ``ids``
    ``(K,)`` their row numbers in the table. Returns the maxima ``(B, D)`` (zeros for an empty
    bag) and the table row each came from (``-1`` for an empty bag).

    One vectorised step per position in the bags (the longest bag's length): step ``j`` takes
    the ``j``-th row of every bag that has one (the bags ordered longest first, so those are a
    prefix), in the memory of ``like`` (numpy or CuPy)."""
    count, (k, d) = bags.n_bags, rows.shape
    out = _arrays.zeros((count, d), rows.dtype, like)
    arg = _arrays.full((count, d), -1, np.intp, like)
    if k == 0:
        return out, arg
    sizes = bags.sizes
    order = np.argsort(-sizes, kind="stable")  # longest bags first
    rank = np.empty_like(order)
    rank[order] = np.arange(count)
    starts = np.cumsum(sizes) - sizes
    step = np.arange(k) - starts[bags.bag]  # each row's place in its bag
    active = np.bincount(step)  # how many bags have a j-th row
    ends = np.cumsum(active)
    by_step = _arrays.into_memory_of(np.argsort(step * count + rank[bags.bag], kind="stable"), like)
    rs, rid = np.take(rows, by_step, axis=0), np.take(ids, by_step)[:, None]
    for j, n in enumerate(active.tolist()):
        r, i = rs[ends[j] - n : ends[j]], rid[ends[j] - n : ends[j]]
        if j == 0:
            out[:n], arg[:n] = r, i
        else:
            take = r > out[:n]
            out[:n] = np.where(take, r, out[:n])
            arg[:n] = np.where(take, i, arg[:n])
    back = _arrays.into_memory_of(rank, like)  # the bags in their own order again
    return np.take(out, back, axis=0), np.take(arg, back, axis=0)


def embedding_bag(
    input: Tensor[Any, Any] | npt.NDArray[Any] | Sequence[Any],
    weight: Tensor[Rank2[A, B], T],
    offsets: Tensor[Any, Any] | npt.NDArray[Any] | Sequence[int] | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor[Any, Any] | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor[Rank2[int, B], T]:
    """Sums, means or maxima of bags of rows of ``weight`` (PyTorch's ``F.embedding_bag``, its
    arguments, defaults and semantics), without making the ``(N, D)`` lookup a tensor.

    Args:
        input: integer indices in ``[0, V)`` (a tensor, an array or a list): ``(B, L)``, ``B``
            bags of ``L`` indices; or ``(N,)``, the bags one after another, cut by ``offsets``.
        weight: float32/float64 tensor ``(V, D)``, the table.
        offsets: with a 1-D input, integers ``(B,)``: where each bag starts (``offsets[0] == 0``,
            non-decreasing; the last bag runs to the end); with ``include_last_offset``,
            ``(B + 1,)``, the last entry the last bag's end (indices after it enter no bag).
            ``None`` with a 2-D input.
        max_norm: if given, each row ``input`` names whose ``norm_type``-norm exceeds it is
            first scaled in place to norm ``max_norm`` (``w * max_norm / (norm + 1e-7)``,
            PyTorch's ``embedding_renorm_``; not recorded, so no gradient flows through it).
        norm_type: the norm's order for ``max_norm`` (``inf`` allowed).
        scale_grad_by_freq: divide each row's gradient by how often its index occurs in
            ``input`` (the forward is unchanged; not with ``"max"``).
        mode: ``"sum"``, ``"mean"`` or ``"max"``.
        sparse: PyTorch's sparse gradient; accepted (not with ``"max"``), and the gradient is
            dense here, of ``weight``'s shape, with zeros in the rows no bag names.
        per_sample_weights: float tensor of ``input``'s shape and ``weight``'s dtype: each
            row is scaled by its weight before the sum (``"sum"`` only, as PyTorch).
        include_last_offset: ``offsets`` has ``B + 1`` entries (ignored for a 2-D input).
        padding_idx: a row (negative counts from the end) whose occurrences enter no bag: they
            add nothing, do not count in a mean, and get no gradient.

    Returns:
        ``(B, D)``, ``weight``'s dtype and device; an empty bag (or one of padding only) gives
        zeros. The output owns a tape if ``weight``, ``per_sample_weights`` or an index
        tensor takes part (:func:`gradtape.tape.op_tape`).

    Formula, for bag ``b`` holding positions ``i`` (padding left out), ``n_b`` of them:
    ``sum``: ``y_b = sum_i p_i * W[x_i]`` (``p_i = per_sample_weights[i]``, else 1);
    ``mean``: ``y_b = sum_i W[x_i] / n_b``; ``max``: ``y_b[d] = max_i W[x_i, d]``, PyTorch's
    rule for ties (the first row wins) and NaN (kept only where it comes first).

    Gradients: ``dW[x_i] += p_i * g_b`` (``sum``), ``g_b / n_b`` (``mean``), repeated indices
    accumulating, each divided by the count of ``x_i`` in ``input`` with ``scale_grad_by_freq``
    (as ``F.embedding`` does; PyTorch 2.13's CPU ``embedding_bag`` divides some rows by another
    row's count, pytorch/pytorch#190063); ``max``: ``dW[r, d] += g_b[d]`` for the row ``r``
    that gave ``y_b[d]`` only. ``d per_sample_weights[i] = g_b . W[x_i]`` (0 at padding). Both
    rules are recorded, so the gradient differentiates again. Computed as one gather of the
    ``K`` rows in the bags and a scatter-add into the bags (``max``: one vectorised pass per
    position in the longest bag), on the CPU or a GPU.

    Raises:
        TypeError: ``weight`` or ``per_sample_weights`` is not a tensor; ``max_norm`` or
            ``norm_type`` not a real number, ``padding_idx`` not an int.
        DTypeError: ``weight`` not float32/float64, indices or offsets not integers,
            ``per_sample_weights`` of another dtype than ``weight``.
        ShapeError: ``weight`` not 2-D; ``input`` neither 1-D nor 2-D; offsets with a 2-D input
            or not 1-D; ``per_sample_weights`` not of ``input``'s shape.
        ValueError: an unknown ``mode``; ``"max"`` with ``scale_grad_by_freq`` or ``sparse``;
            a 1-D input without offsets; ``offsets[0] != 0``, decreasing offsets or one past the
            input's end; an index outside ``[0, V)``; ``padding_idx`` outside ``[-V, V)``;
            ``max_norm`` negative. Every message names the op and the shapes.
        NotImplementedError: ``per_sample_weights`` with a mode other than ``"sum"`` (PyTorch's).
    """
    out: Tensor[Rank2[int, B], T] = _embedding_bag(
        "embedding_bag",
        input,
        weight,
        offsets,
        max_norm,
        norm_type,
        scale_grad_by_freq,
        mode,
        sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )
    return out


def _bag_options(
    op: str, mode: object, scale_grad_by_freq: object, sparse: object, max_norm: object, norm_type: object
) -> tuple[float, float] | None:
    """The checks of :func:`embedding_bag`'s options (and of :class:`~gradtape.nn.EmbeddingBag`'s
    constructor): ``(max_norm, norm_type)`` as floats, or ``None`` without ``max_norm``.

    Raises:
        ValueError: ``mode`` is not ``"sum"``, ``"mean"`` or ``"max"``; ``"max"`` with
            ``scale_grad_by_freq`` or ``sparse`` (PyTorch's errors); ``max_norm`` negative or
            NaN, ``norm_type`` NaN.
        TypeError: ``max_norm`` or ``norm_type`` is not a real number.
    """
    if not isinstance(mode, str) or mode not in _BAG_MODES:
        raise ValueError(f"{op}: mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError(f"{op}: max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError(f"{op}: max mode does not support sparse weights")
    return None if max_norm is None else _renorm_args(op, max_norm, norm_type)


def _embedding_bag(
    op: str,
    input: Any,
    weight: Any,
    offsets: Any,
    max_norm: Any,
    norm_type: Any,
    scale_grad_by_freq: Any,
    mode: Any,
    sparse: Any,
    per_sample_weights: Any,
    include_last_offset: Any,
    padding_idx: Any,
) -> Any:
    """:func:`embedding_bag`, its errors naming ``op`` (the function, or the layer that calls it)."""
    tensor_cls = _tp._tensor_class()
    if not isinstance(weight, tensor_cls):
        raise TypeError(f"{op}: weight must be a Tensor, got {type(weight).__name__}")
    wd = float_data(op, weight, "weight")
    if wd.ndim != 2:
        raise ShapeError(f"{op}: weight must be 2-D (num_embeddings, embedding_dim), got shape {wd.shape}")
    renorm = _bag_options(op, mode, scale_grad_by_freq, sparse, max_norm, norm_type)
    (num, dim), dt = wd.shape, wd.dtype
    bags = _bags(op, input, offsets, bool(include_last_offset), _padding_row(op, padding_idx, num), wd.shape)
    psw: Tensor[Any, Any] | None = None
    if per_sample_weights is not None:
        psw = tensor_operand(op, weight, tensor_arg(op, per_sample_weights, "per_sample_weights"))
        if mode != "sum":
            raise NotImplementedError(
                f"{op}: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
                f"(got mode='{mode}')"
            )
        if psw.data.shape != bags.shape:
            raise ShapeError(
                f"{op}: per_sample_weights (shape {psw.data.shape}) must have the same shape as the input "
                f"(shape {bags.shape})"
            )
    if renorm is not None:
        _renorm_rows(op, weight, _arrays.into_memory_of(bags.flat, wd), *renorm)

    count, nk = bags.n_bags, bags.pos.size
    ik_h = bags.flat[bags.pos]
    ik, bk, pos = (_arrays.into_memory_of(a, wd) for a in (ik_h, bags.bag, bags.pos))
    rows = np.take(wd, ik, axis=0)  # (K, D)
    gpos = wpos = pk = None
    if mode == "max":
        y, arg = _bag_max(rows, ik, bags, wd)
        gpos = np.flatnonzero(arg.reshape(-1) >= 0)  # the outputs a row gave
        wpos = np.take(arg.reshape(-1), gpos) * dim + gpos % dim  # that row's element, flattened
    else:
        y = _arrays.zeros((count, dim), dt, wd)
        if psw is not None:
            pk = np.take(psw.data.reshape(-1), pos)
        if nk:
            _scatter.scatter_add(y, 0, bk, rows if pk is None else rows * pk[:, None])
        if mode == "mean":
            y /= _arrays.into_memory_of(np.maximum(bags.sizes, 1).astype(dt), wd)[:, None]
    tape = op_tape(weight, *(t for t in (input, offsets, psw) if isinstance(t, tensor_cls)))
    out = weight._from_op(y, tape)
    if tape is NONE_TAPE:
        return out

    # the weight's gradient per bag entry: g of its bag times p_i, 1 / n_b (mean) and
    # 1 / count(x_i) (scale_grad_by_freq); the constant factors here, p_i at backward
    const: Array | None = None
    if mode == "mean":
        const = 1.0 / np.maximum(bags.sizes, 1)[bags.bag]
    if scale_grad_by_freq:
        inv = 1.0 / np.bincount(bags.flat, minlength=num)[ik_h]
        const = inv if const is None else const * inv
    c = None if const is None else _arrays.into_memory_of(const.astype(dt), wd)
    wid, w_leaf, wshape, n_in = weight.id, weight._leaf, wd.shape, bags.flat.size
    pid, p_leaf, pd = (psw.id, psw._leaf, psw.data) if psw is not None else (-1, True, None)

    def into(cur: Array, ix: Array, v: Array) -> None:
        if cur.flags.c_contiguous:
            _scatter.scatter_add(cur.reshape(-1), 0, ix, v)
        else:
            _scatter.add_at(cur, (ix // dim, ix % dim), v)

    def fresh(ix: Array, v: Array) -> Array:
        gw = _arrays.zeros(wshape, dt, v)
        into(gw, ix, v)
        return gw

    rows_into, rows_fresh = _rows_scatter(wshape, dt)

    def backward(grads: Gradients, g: Array) -> None:
        if gpos is not None and wpos is not None:  # max: each output's gradient to the row it came from
            if grads.wants(wid, w_leaf):
                grads._fused(wid, into, fresh, wpos, np.take(g.reshape(-1), gpos))
            return
        gb = np.take(g, bk, axis=0)  # (K, D): each entry's bag's gradient
        if pk is not None and pd is not None and grads.wants(pid, p_leaf):
            gp = _arrays.zeros((n_in,), dt, g)
            gp[pos] = (gb * np.take(wd, ik, axis=0)).sum(axis=1)
            grads._accum(pid, gp.reshape(pd.shape))
        if grads.wants(wid, w_leaf):
            coef = pk if c is None else c if pk is None else pk * c
            grads._fused(wid, rows_into, rows_fresh, ik, gb if coef is None else gb * coef[:, None])

    def differentiable(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
        from gradtape.ops.indexing import _take, scatter_into

        if gpos is not None and wpos is not None:
            gv = _take("gather", g.reshape((-1,)), gpos, 0)
            return [(wid, scatter_into(gv, (num * dim,), 0, wpos).reshape(wshape))]
        gb = _take("gather", g, bk, 0)
        grads: list[tuple[int, Any]] = []
        coef = None
        if pd is not None:
            coef = _take("gather", rebuild(pid, pd).reshape((-1,)), pos, 0)
            gp = (gb * _take("gather", rebuild(wid, wd), ik, 0)).sum(axis=1)
            grads.append((pid, scatter_into(gp, (n_in,), 0, pos).reshape(pd.shape)))
        if c is not None:
            coef = g._like(c) if coef is None else coef * g._like(c)
        gw = gb if coef is None else gb * coef.reshape((-1, 1))
        grads.append((wid, scatter_into(gw, wshape, 0, ik)))
        return grads

    record(tape, out, backward, differentiable)
    return out


@overload
def prelu(x: Tensor[S, T], weight: Tensor[Rank1[Any], NoneTape]) -> Tensor[S, T]: ...
@overload
def prelu(x: Tensor[S, Tape], weight: Tensor[Rank1[Any], OwnedTape]) -> Tensor[S, OwnedTape]: ...
@overload
def prelu(x: Tensor[S, T], weight: Tensor[Rank1[Any], T]) -> Tensor[S, T]: ...
def prelu(x: Any, weight: Any) -> Any:
    """Parametric ReLU (He et al. 2015), PyTorch's ``F.prelu``: ``y = x`` where ``x > 0``,
    else ``weight * x``, with a learnable slope per channel (axis 1) or one shared slope.

    Args:
        x: float32/float64 tensor of any shape; with ``C > 1`` slopes it needs at least 2 dims
            and ``C`` channels on axis 1.
        weight: shape ``(C,)`` or ``(1,)``, ``x``'s dtype.

    Gradients: ``d/dx = 1`` where ``x > 0`` else ``weight``; ``d/dweight = x`` where
    ``x <= 0``, summed over every axis but the channel axis.

    Raises:
        ShapeError: ``weight`` is not 1-D, or its size is neither 1 nor ``x``'s channel count
            (the message names both shapes).
        DTypeError: the dtypes differ.
    """
    wt = tensor_operand("prelu", x, weight)
    xd, wd = x.data, wt.data
    if wd.ndim != 1:
        raise ShapeError(f"prelu: weight must be 1-D (C,), got shape {wd.shape} for input {xd.shape}")
    c = wd.shape[0]
    if c == 1:
        wb = wd.reshape(())
        axes: tuple[int, ...] = tuple(range(xd.ndim))
    else:
        if xd.ndim < 2 or xd.shape[1] != c:
            raise ShapeError(f"prelu: weight of shape {wd.shape} needs {c} channels on axis 1, got input {xd.shape}")
        wb = wd.reshape((1, c) + (1,) * (xd.ndim - 2))
        axes = (0, *range(2, xd.ndim))
    pos = xd > 0
    y = np.where(pos, xd, wb * xd)
    tape = op_tape(x, wt)
    out = x._from_op(y, tape)
    if _tp._recorder is not None:  # the backward reads pos, which a replay rewrites
        replayable("prelu", y, _prelu_into, (xd, wb, pos), (x, wt), tape, True, (pos,))
    if tape is not NONE_TAPE:
        xid, wid, w_leaf = x.id, wt.id, wt._leaf
        zero = xd.dtype.type(0)

        def prelu_backward(grads: Gradients, g: Array) -> None:
            if grads.wants(wid, w_leaf):
                grads._accum(wid, _as_array(np.where(pos, zero, xd * g).sum(axis=axes)).reshape(wd.shape))
            grads._accum(xid, np.where(pos, g, wb * g))

        def prelu_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            from gradtape.ops.compare import where

            w = rebuild(wid, wd).reshape(wb.shape)
            gw = where(pos, 0.0, rebuild(xid, xd) * g).sum(axis=axes).reshape(wd.shape)
            return [(xid, where(pos, g, g * w)), (wid, gw)]

        record(tape, out, prelu_backward, prelu_diff)
    return out


def _prelu_into(y: Array, xd: Array, wb: Array, pos: Array) -> None:
    """:func:`prelu`'s forward again (a capture's replay): the sign mask into ``pos``, the
    output into ``y``."""
    np.greater(xd, 0, out=pos)
    np.copyto(y, np.where(pos, xd, wb * xd))


def glu(input: Tensor[Any, T], dim: int = -1) -> Tensor[Any, T]:
    """``F.glu``, the gated linear unit (Dauphin et al. 2017): ``input`` split in halves ``a, b``
    along ``dim``, ``a * sigmoid(b)``; the output has half the size along ``dim``. Gradients:
    ``g * sigmoid(b)`` to ``a`` and ``g * a * sigmoid(b) * (1 - sigmoid(b))`` to ``b``.

    Raises:
        ShapeError: ``dim`` is out of range, or its size is odd.
        DTypeError: ``input`` is not a float tensor.
    """
    d = one_dim("glu", dim, input.data.shape)
    if input.data.ndim == 0 or input.data.shape[d] % 2:
        raise ShapeError(f"glu: halving dimension must be even, but dim {dim} of shape {input.data.shape} is odd")
    float_data("glu", input)
    a, b = input.chunk(2, d)
    return a * b.sigmoid()
