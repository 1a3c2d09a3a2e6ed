"""Norms and distances (issue 27): ``norm``, ``normalize``, ``cosine_similarity``, ``cdist``.

PyTorch's semantics and defaults: ``torch.norm`` / ``torch.linalg.vector_norm`` (a vector norm
over ``dim``, all dims by default), ``F.normalize``, ``F.cosine_similarity`` (PyTorch 2's
formula: each input divided by its clamped norm, then the dot product), ``torch.cdist``.

``norm`` is an op of its own: its gradient at a zero norm is 0 as PyTorch gives it (``x / 0``
would be NaN), with both rules from one vector-Jacobian product written against an array
namespace (:data:`gradtape.ops.declare.NUMPY` on arrays, :func:`gradtape.ops.declare.tensors`
on tensors, as the declared ops). ``cdist`` with ``p=2`` on more than 25 rows takes PyTorch's
matrix-product expansion (``|a|^2 + |b|^2 - 2 a.b``, one product), an op with its own
rules; the other cases and ``normalize`` / ``cosine_similarity`` are built from recorded ops,
so both rules come from theirs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import S, T
from gradtape.devices._arrays import as_array as _as_array
from gradtape.errors import ShapeError
from gradtape.ops._util import (
    SCALARS,
    dim_or_axis,
    float_data,
    normalize_axes,
    one_dim,
    replayable,
    row_pair,
    tensor_operand,
    untraced,
)
from gradtape.ops.declare import NUMPY, tensors
from gradtape.shapes import broadcast_shapes
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["cdist", "cosine_similarity", "norm", "normalize", "pairwise_distance"]

Array = np.ndarray[Any, Any]

MM_ROWS = 25
"""``cdist`` with ``p=2`` takes the matrix-product expansion when either input has more rows
than this (PyTorch's ``use_mm_for_euclid_dist_if_necessary``), else the differences."""


def _order(op: str, p: object) -> float:
    """``p`` as a float (``'fro'`` is 2).

    Raises:
        ValueError: ``p`` is a string other than ``'fro'`` (``'nuc'``, a matrix norm, is not
            supported) or not a real number.
    """
    if p == "fro":
        return 2.0
    if isinstance(p, bool) or not isinstance(p, SCALARS) or math.isnan(float(p)):
        raise ValueError(f"{op}: p must be 'fro' or a real number (inf allowed), got {p!r}")
    return float(p)


def _norm_forward(x: Array, p: float, axes: tuple[int, ...]) -> Array:
    """The vector ``p``-norm of ``x`` over ``axes``, keepdims (numpy)."""
    ax = np.abs(x)
    if p == 2.0:
        return _as_array(np.sqrt(np.sum(x * x, axis=axes, keepdims=True)))
    if p == math.inf:
        return _as_array(np.max(ax, axis=axes, keepdims=True))
    if p == -math.inf:
        return _as_array(np.min(ax, axis=axes, keepdims=True))
    if p == 0.0:
        return _as_array(np.sum(x != 0, axis=axes, keepdims=True)).astype(x.dtype)
    if p == 1.0:
        return _as_array(np.sum(ax, axis=axes, keepdims=True))
    return _as_array(np.sum(ax**p, axis=axes, keepdims=True) ** (1.0 / p))


def _norm_into(yk: Array, x: Array, p: float, axes: tuple[int, ...]) -> None:
    """:func:`norm`'s forward again, into the keepdims result ``yk`` (a capture's replay)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.copyto(yk, _norm_forward(x, p, axes))


def _const(xp: Any, like: Any, a: Array) -> Any:
    """``a`` as the namespace's constant: the array itself, or a tensor without a tape."""
    return a if xp is NUMPY else like._like(a)


def _norm_vjp(xp: Any, g: Any, x: Any, y: Any, p: float, xd: Array, yd: Array, axes: tuple[int, ...]) -> Any:
    """``x``'s gradient of ``y = ||x||_p`` over ``axes`` (``g``, ``y`` keepdims-shaped), once
    for both rules (PyTorch's ``linalg_vector_norm_backward``):

    * ``p = 2``: ``x * g / y``; ``p = 1``: ``sign(x) g``; ``p = 0``: 0;
    * ``p = +-inf``: ``sign(x) g / k`` on the ``k`` elements where ``|x| = y`` (ties share);
    * otherwise ``sign(x) |x|^(p-1) g / y^(p-1)``;

    with 0 wherever ``y = 0`` (``xd``, ``yd``: the arrays, for the piecewise-constant masks)."""
    if p == 0.0:
        return x * 0.0
    if p == 1.0:
        return xp.sign(x) * g
    if math.isinf(p):
        peak = (np.abs(xd) == yd).astype(xd.dtype)
        share = np.sign(xd) * peak / np.sum(peak, axis=axes, keepdims=True)
        return g * _const(xp, x, share.astype(xd.dtype))
    zero = yd == 0
    safe = xp.where(zero, 1.0, y)
    if p == 2.0:
        return x * xp.where(zero, 0.0, g / safe)
    s = xp.sign(x)
    return s * (x * s) ** (p - 1.0) * xp.where(zero, 0.0, g / safe ** (p - 1.0))


def norm(
    input: Tensor[Any, T],
    p: float | str = "fro",
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool = False,
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
) -> Tensor[Any, T]:
    """The vector ``p``-norm over ``dim`` (PyTorch's ``torch.norm`` / ``Tensor.norm``, which
    for ``'fro'`` and numbers is ``torch.linalg.vector_norm``): ``(sum |x|^p)^(1/p)``; ``p=inf``
    the largest ``|x|``, ``-inf`` the smallest, ``0`` the count of non-zeros, ``'fro'`` (default) 2.

    Gradients (PyTorch's): ``x / ||x||`` for ``p=2``, ``sign(x)`` for ``p=1``, shared equally
    by the tied largest (smallest) elements for ``+-inf``,
    ``sign(x) |x|^(p-1) / ||x||^(p-1)`` otherwise, 0 for ``p=0``; **0 where the norm is 0**.
    Differentiable again (the same formula in gradtape ops).

    Args:
        input: float32/float64 tensor.
        p: ``'fro'`` or a real number (``math.inf`` allowed).
        dim: an int, a tuple of ints, or ``None`` (all dims, the flattened tensor); ``axis=``
            is gradtape's name for it.
        keepdim: keep the reduced dims as size 1 (``keepdims=`` too).

    Returns:
        The norms, of ``input``'s dtype: the shape without ``dim`` (or with 1s there).

    Raises:
        ValueError: ``p`` is neither ``'fro'`` nor a number (``'nuc'`` is not supported).
        ShapeError / TypeError: a bad ``dim`` (:func:`~gradtape.ops._util.normalize_axes`).
        DTypeError: ``input`` is not float32/float64.
    """
    op = "norm"
    xd = float_data(op, input)
    order = _order(op, p)
    d = dim_or_axis(op, dim, axis, None)
    axes = normalize_axes(op, d, xd.ndim)
    keep = bool(keepdim if keepdims is None else keepdims)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        yk = _norm_forward(xd, order, axes)
    out_shape = yk.shape if keep else tuple(n for i, n in enumerate(xd.shape) if i not in axes)
    y = yk.reshape(out_shape)
    tape = op_tape(input)
    out: Tensor[Any, T] = input._from_op(y, tape)
    if _tp._recorder is not None:  # the backward reads x's array and yk, which y views: a replay refills yk
        replayable(op, yk, _norm_into, (xd, order, axes), (input,), tape, train=True)
    if tape is not NONE_TAPE:
        xid, oid, kshape = input.id, out.id, yk.shape

        def norm_backward(grads: Gradients, g: Array) -> None:
            with np.errstate(divide="ignore", invalid="ignore"):
                gx = _norm_vjp(NUMPY, g.reshape(kshape), xd, yk, order, xd, yk, axes)
            grads._accum(xid, _as_array(gx, dtype=xd.dtype))  # x's shape: every term has a factor of x's

        def norm_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            xt, yt = rebuild(xid, xd), rebuild(oid, y).reshape(kshape)
            return [(xid, _norm_vjp(tensors(xd.dtype), g.reshape(kshape), xt, yt, order, xd, yk, axes))]

        record(tape, out, norm_backward, norm_diff)
    return out


def normalize(input: Tensor[S, T], p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor[S, T]:
    """``input / max(||input||_p, eps)`` along ``dim`` (PyTorch's ``F.normalize``; defaults
    ``p=2``, ``dim=1``, ``eps=1e-12``). Built from :func:`norm` and ``clamp``, so both rules
    are theirs; the clamped norm passes no gradient where it is below ``eps``.

    Args:
        input: float32/float64 tensor of any shape with at least one dim (``dim`` in range).
        p: the norm's order (a number, ``inf`` allowed). dim: an int. eps: a number ``>= 0``.

    Returns:
        A tensor of ``input``'s shape and dtype.

    Raises:
        ShapeError: ``dim`` is out of range (names the shape). TypeError: ``dim`` is not an int.
        ValueError: ``p`` is not a number, or ``eps`` is negative.
    """
    op = "normalize"
    xd = float_data(op, input)
    d = one_dim(op, dim, xd.shape)
    if isinstance(eps, bool) or not isinstance(eps, SCALARS) or not float(eps) >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative number, got {eps!r}")
    n = norm(input, _order(op, p), d, keepdim=True)
    return input / n.clamp(min=float(eps))


def _clamped_norm(x: Any, dim: int, eps: float) -> Any:
    """``||x||_2`` along ``dim`` (kept) with the value ``max(||x||, eps)`` but the gradient of
    the unclamped norm: PyTorch clamps it in place under ``no_grad``."""
    n = norm(x, 2.0, dim, keepdim=True)
    return n + untraced("cosine_similarity", n, (n,), _clamp_excess, n.data, n.data.dtype.type(eps))


def _clamp_excess(y: Array, eps: Any) -> Array:
    """``max(y, eps) - y``: what the clamp adds, a constant (no gradient)."""
    out: Array = np.maximum(y, eps) - y
    return out


def cosine_similarity(x1: Tensor[Any, T], x2: Tensor[Any, T], dim: int = 1, eps: float = 1e-8) -> Tensor[Any, T]:
    """Cosine similarity along ``dim`` (PyTorch 2's ``F.cosine_similarity``):
    ``sum((x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps)), dim)``, the inputs broadcast
    together first; the norms' gradients are the unclamped ones, as PyTorch (which clamps
    without recording). Built from recorded ops: differentiable again.

    Args:
        x1, x2: float32/float64 tensors of one dtype whose shapes broadcast.
        dim: the reduced dim of the broadcast shape (default 1). eps: ``>= 0``.

    Returns:
        The broadcast shape without ``dim``, the inputs' dtype.

    Raises:
        ShapeError: the shapes do not broadcast, or ``dim`` is out of range (names the shapes).
        DTypeError: the dtypes differ or are not float. ValueError: ``eps`` is negative.
    """
    op = "cosine_similarity"
    float_data(op, x1, "x1")
    b = tensor_operand(op, x1, x2)
    shape = broadcast_shapes(op, x1.shape, b.shape)
    d = one_dim(op, dim, shape)
    if isinstance(eps, bool) or not isinstance(eps, SCALARS) or not float(eps) >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative number, got {eps!r}")
    a1 = x1 if x1.shape == shape else x1.broadcast_to(shape)
    a2 = b if b.shape == shape else b.broadcast_to(shape)
    e = float(eps)
    out: Tensor[Any, T] = ((a1 / _clamped_norm(a1, d, e)) * (a2 / _clamped_norm(a2, d, e))).sum(axis=d)
    return out


def _mT(xp: Any, a: Any) -> Any:
    return np.swapaxes(a, -1, -2) if xp is NUMPY else a.transpose(-1, -2)


def _euclid_vjp(xp: Any, g: Any, x1: Any, x2: Any, d: Any, zero: Array) -> tuple[Any, Any]:
    """``(grad_x1, grad_x2)`` of ``d[i, j] = ||x1[i] - x2[j]||`` (PyTorch's
    ``_euclidean_dist_backward``): ``r = g / d`` (0 where ``d = 0``),
    ``grad_x1 = x1 * sum_j r - r @ x2``, ``grad_x2 = x2 * sum_i r - r^T @ x1``."""
    r = xp.where(zero, 0.0, g / xp.where(zero, 1.0, d))
    g1 = x1 * r.sum(axis=-1, keepdims=True) - r @ x2
    g2 = x2 * _mT(xp, r.sum(axis=-2, keepdims=True)) - _mT(xp, r) @ x1
    return g1, g2


def _euclid(x1: Tensor[Any, Any], x2: Tensor[Any, Any]) -> Any:
    """``cdist`` with ``p=2`` through one matrix product (PyTorch's ``_euclidean_dist``):
    ``[-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T``, clamped at 0, square-rooted."""
    a, b = x1.data, x2.data
    an = np.sum(a * a, axis=-1, keepdims=True)
    bn = np.sum(b * b, axis=-1, keepdims=True)
    left = np.concatenate([a * -2.0, an, np.ones_like(an)], axis=-1)
    right = np.concatenate([b, np.ones_like(bn), bn], axis=-1)
    d = np.sqrt(np.maximum(left @ np.swapaxes(right, -1, -2), 0.0))
    tape = op_tape(x1, x2)
    out = x1._from_op(d, tape)
    if tape is not NONE_TAPE:
        aid, bid, oid = x1.id, x2.id, out.id
        zero = d == 0

        def euclid_backward(grads: Gradients, g: Array) -> None:
            with np.errstate(divide="ignore", invalid="ignore"):
                g1, g2 = _euclid_vjp(NUMPY, g, a, b, d, zero)
            grads._accum(aid, _as_array(g1, dtype=a.dtype))
            grads._accum(bid, _as_array(g2, dtype=a.dtype))

        def euclid_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            g1, g2 = _euclid_vjp(tensors(a.dtype), g, rebuild(aid, a), rebuild(bid, b), rebuild(oid, d), zero)
            return [(aid, g1), (bid, g2)]

        record(tape, out, euclid_backward, euclid_diff)
    return out


def cdist(x1: Tensor[Any, T], x2: Tensor[Any, T], p: float = 2.0) -> Tensor[Any, T]:
    """Pairwise ``p``-norm distances between the rows of ``x1`` and ``x2`` (PyTorch's
    ``torch.cdist``): ``out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p``.

    ``p=2`` with more than :data:`MM_ROWS` (25) rows in either input goes through one matrix
    product, ``sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0))``, as PyTorch's default
    ``compute_mode`` does (faster, and the same values as PyTorch's; a distance near 0 loses
    digits to cancellation in both); otherwise the differences' :func:`norm`. Gradients are
    PyTorch's: ``(x1_i - x2_j) / d_ij`` for ``p=2`` (``sign * |.|^(p-1) / d^(p-1)`` for other
    ``p``), **0 where a distance is 0**; differentiable again.

    Args:
        x1: ``(P, M)`` or ``(B, P, M)``; x2: ``(R, M)`` or ``(B, R, M)`` (the same leading
            dims), float32/float64 of one dtype.
        p: the norm's order, ``>= 0`` (``inf`` allowed).

    Returns:
        ``(P, R)`` or ``(B, P, R)``.

    Raises:
        ShapeError: an input is not 2-D or 3-D, the feature dims or the batch dims differ
            (names the shapes). DTypeError: the dtypes differ or are not float.
        ValueError: ``p`` is negative or not a number.
    """
    op = "cdist"
    row_pair(op, x1, x2, "x1", "x2")
    order = _order(op, p)
    if order < 0:
        raise ValueError(f"{op}: p must be >= 0, got {p!r}")
    if order == 2.0 and (x1.shape[-2] > MM_ROWS or x2.shape[-2] > MM_ROWS):
        out: Tensor[Any, T] = _euclid(x1, x2)
        return out
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return norm(diff, order, -1)


def pairwise_distance(
    x1: Tensor[Any, T], x2: Tensor[Any, T], p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor[Any, T]:
    """``||x1 - x2 + eps||_p`` over the last dim (PyTorch's ``F.pairwise_distance``), the
    inputs broadcast together; built from :func:`norm` (gradient 0 at distance 0).

    Raises:
        ShapeError: the shapes do not broadcast. DTypeError: the dtypes differ or are not float.
        ValueError: ``p`` is not a number.
    """
    op = "pairwise_distance"
    float_data(op, x1, "x1")
    b = tensor_operand(op, x1, x2)
    shape = broadcast_shapes(op, x1.shape, b.shape)
    if not shape:
        raise ShapeError(f"{op}: needs inputs with at least one dim, got {x1.shape} and {b.shape}")
    return norm(x1 - b + float(eps), _order(op, p), -1, keepdim=keepdim)
