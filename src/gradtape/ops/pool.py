"""Pooling and upscaling with PyTorch's semantics: max_pool2d, min_pool2d, avg_pool2d, upscale2d,
the 1-D pools on the 2-D kernels, and the 3-D pools (max_pool3d, avg_pool3d, adaptive_avg_pool3d,
adaptive_max_pool3d; see the section below).

All take ``x (N, C, H, W)`` (float32 or float64, any layout) and work on each of the
``N * C`` planes alone (numba kernels in :mod:`gradtape.devices.kernels.pool`).

Pooling: ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding`` are an int or
``(height, width)``; padding is at most half the kernel (PyTorch's rule, so every window
holds an input element). Output size, per dim::

    H_out = floor((H + 2*ph - KH) / sh) + 1

* ``max_pool2d`` / ``min_pool2d``: padded positions never win (``-inf``/``+inf`` padding).
  The forward saves each window's arg-max (arg-min); backward adds the output's gradient
  there: ``grad_x[argmax] += g``. Ties go to the first element of the window in row-major
  order (PyTorch's CPU kernel); a NaN wins (the last NaN of a window). ``min_pool2d``,
  which PyTorch lacks, is ``-max_pool2d(-x)`` with the same tie rule.
* ``avg_pool2d``: ``y = sum(window) / (KH * KW)`` with zeros for the padding counted
  (``count_include_pad=True``, PyTorch's default); backward spreads ``g / (KH * KW)`` evenly
  over each window's input elements.

``upscale2d`` resamples to ``size`` or by ``scale_factor``, as ``torch.nn.functional.interpolate``
(``recompute_scale_factor=None``): with ``scale_factor`` the output is
``floor(H * scale_factor)`` and source coordinates use ``1 / scale_factor``; with ``size``
they use ``H / H_out``.

* ``"nearest"``: ``src = min(floor(dst * scale), H - 1)`` computed in float32 as PyTorch
  (``dst // 2`` when the size exactly doubles, identity when it is equal); backward sums
  the output gradients of each source pixel.
* ``"bilinear"``: ``align_corners=False`` (default): ``src = max(scale * (dst + 0.5) - 0.5, 0)``;
  ``align_corners=True``: ``src = dst * (H - 1) / (H_out - 1)``. Taps ``floor(src)`` and the
  next one (clamped), weights ``1 - l`` and ``l = src - floor(src)``, computed in ``x``'s
  dtype; backward spreads each output gradient over its four taps with the same weights.

Typing: ``Tensor[Rank4[N, C, Any, Any], T] -> Tensor[Rank4[N, C, int, int], T]`` (the spatial
size is computed at run time; ``upscale2d(x, size=(h, w))`` types as ``Rank4[N, C, H2, W2]``
with ``h: H2``, ``w: W2``). The output keeps the input's tape.

3-D pooling of ``x (N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` reuses the 2-D kernels one
spatial dim at a time, with no loop over output positions: a box's max is the max over its depth
of the slices' ``(KH, KW)`` maxima (the first-maximum / last-NaN scan rule composes to PyTorch's
``(d, h, w)`` row-major rule, and the arg-max indices compose to flat ``d * H * W + h * W + w``),
a box's mean is the mean of the slices' means, the adaptive mean is three bin-averaging matrix
products, and the adaptive max gathers each bin's elements along one dim at a time and takes
their arg-max. Every argument check of a 3-D pool is in :func:`_pool3d_geometry` /
:func:`_adaptive3_geometry`.

Runtime errors: :class:`~gradtape.errors.ShapeError` (naming the op and the shapes) for an
input that is not 4-D, a window larger than the padded input, an empty output;
``ValueError`` for a kernel/stride/scale/size below 1 (or not positive), padding above half
the kernel, both or neither of ``size`` and ``scale_factor``, an unknown mode,
``align_corners`` with ``"nearest"``; ``TypeError`` for arguments that are not ints/floats.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias, TypeVar, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import T
from gradtape.devices import _arrays
from gradtape.devices.kernels import blas as _blas
from gradtape.devices.kernels import pool as _kp
from gradtape.errors import ShapeError
from gradtape.ops._function import Function, FunctionCtx
from gradtape.ops._util import float_data, positive_int, record_unary, replayable
from gradtape.ops.conv import _ints
from gradtape.shapes import AnyShape, Rank4, Rank5
from gradtape.tape import NONE_TAPE, op_tape

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "min_pool2d",
    "upscale2d",
]

Array = np.ndarray[Any, Any]
N = TypeVar("N")
C = TypeVar("C")
H2 = TypeVar("H2")
W2 = TypeVar("W2")

Int2: TypeAlias = int | tuple[int, int]
"""An int for both spatial dims, or ``(height, width)``."""


def _check4(op: str, xd: Array) -> None:
    if xd.ndim != 4:
        raise ShapeError(f"{op}: expects x of shape (N, C, H, W), got {xd.shape}")


def _pool_geometry(
    op: str, xd: Array, kernel_size: object, stride: object, padding: object
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """``(kernel, stride, padding, out_hw)`` after checking the arguments against ``x``."""
    _check4(op, xd)
    k = _ints(op, "kernel_size", kernel_size, 2, 1)
    s = k if stride is None else _ints(op, "stride", stride, 2, 1)
    p = _ints(op, "padding", padding, 2, 0)
    if any(pi > ki // 2 for pi, ki in zip(p, k, strict=True)):
        raise ValueError(f"{op}: padding {p} must be at most half the kernel size {k}")
    h, w = xd.shape[2], xd.shape[3]
    if h + 2 * p[0] < k[0] or w + 2 * p[1] < k[1]:
        raise ShapeError(
            f"{op}: kernel {k} is larger than the padded input ({h + 2 * p[0]}, {w + 2 * p[1]}): "
            f"x {xd.shape}, padding {p}"
        )
    out = ((h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1)
    return (k[0], k[1]), (s[0], s[1]), (p[0], p[1]), out


def _untraced(grads: Gradients, i: int, g: Array) -> None:
    raise AssertionError("max/min pooling recorded without its indices")  # pragma: no cover


def _maxmin(op: str, x: Any, kernel_size: object, stride: object, padding: object, is_min: bool) -> Any:
    xd = x.data
    k, s, p, out_hw = _pool_geometry(op, xd, kernel_size, stride, padding)
    n, c, h, w = xd.shape
    # untraced (inference): no gradient will need the arg-max indices
    x3 = xd.reshape(n * c, h, w)
    tape = op_tape(x)
    y, idx = _kp.pool_maxmin(x3, k, s, p, out_hw, is_min, tape is not NONE_TAPE)
    if _tp._recorder is not None:
        args = (x3, k, s, p, out_hw, is_min, idx)
        replayable(op, y, _maxmin_into, args, (x,), tape, train=True, writes=() if idx is None else (idx,))
    if idx is None:  # nothing records: the rules below never run
        return record_unary(x, y.reshape(n, c, *out_hw), _untraced)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        gx = _kp.scatter_add(g.reshape(n * c, *out_hw), idx, (h, w))
        grads._accum(i, gx.reshape(n, c, h, w))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        # the second rule: g added at the chosen sources (the selection of this forward,
        # piecewise constant), as a recorded scatter whose own backward gathers
        from gradtape.ops.indexing import scatter_into

        flat = (idx.reshape(n * c, -1) + (np.arange(n * c) * (h * w))[:, None]).reshape(-1)
        return scatter_into(g.reshape((-1,)), (n * c * h * w,), 0, flat).reshape((n, c, h, w))

    return record_unary(x, y.reshape(n, c, *out_hw), rule, diff=diff)


def _maxmin_into(out: Array, x3: Array, k: Any, s: Any, p: Any, hw: Any, is_min: bool, idx: Array | None) -> None:
    """:func:`_maxmin`'s forward into ``out`` (a replay of :func:`gradtape.capture`), and the
    arg-max indices its recorded backward reads into ``idx``."""
    y, fresh = _kp.pool_maxmin(x3, k, s, p, hw, is_min, idx is not None)
    np.copyto(out, y)
    if idx is not None:
        assert fresh is not None
        np.copyto(idx, fresh)


def _avg_into(out: Array, x3: Array, k: Any, s: Any, p: Any, hw: Any) -> None:
    """:func:`_avg`'s forward into ``out`` (a replay of :func:`gradtape.capture`)."""
    np.copyto(out, _kp.pool_avg(x3, k, s, p, hw))


def max_pool2d(
    x: Tensor[Rank4[N, C, Any, Any], T], kernel_size: Int2, stride: Int2 | None = None, padding: Int2 = 0
) -> Tensor[Rank4[N, C, int, int], T]:
    """Max over ``kernel_size`` windows of each plane of ``x (N, C, H, W)``, as
    ``torch.nn.functional.max_pool2d`` (no dilation, ``ceil_mode=False``).

    Returns ``(N, C, H_out, W_out)``, ``H_out = floor((H + 2*ph - KH) / sh) + 1``; ``stride``
    defaults to ``kernel_size``. Gradient: ``g`` routed to each window's arg-max (the first
    on ties; saved indices), accumulated where windows overlap.

    Raises:
        ShapeError: ``x`` is not 4-D, or the kernel is larger than the padded input.
        ValueError: kernel/stride < 1, padding < 0 or more than half the kernel.
        TypeError: arguments are not ints (or pairs of ints).
    """
    return _maxmin("max_pool2d", x, kernel_size, stride, padding, False)  # type: ignore[no-any-return]


def min_pool2d(
    x: Tensor[Rank4[N, C, Any, Any], T], kernel_size: Int2, stride: Int2 | None = None, padding: Int2 = 0
) -> Tensor[Rank4[N, C, int, int], T]:
    """Min over ``kernel_size`` windows of each plane of ``x (N, C, H, W)`` (dfdx's
    ``MinPool2D``; ``-max_pool2d(-x)``). Gradient: ``g`` routed to each window's arg-min
    (the first on ties).

    Raises:
        ShapeError, ValueError, TypeError: as :func:`max_pool2d`.
    """
    return _maxmin("min_pool2d", x, kernel_size, stride, padding, True)  # type: ignore[no-any-return]


def avg_pool2d(
    x: Tensor[Rank4[N, C, Any, Any], T], kernel_size: Int2, stride: Int2 | None = None, padding: Int2 = 0
) -> Tensor[Rank4[N, C, int, int], T]:
    """Mean over ``kernel_size`` windows of each plane of ``x (N, C, H, W)``, zero padding
    included in the count, as ``torch.nn.functional.avg_pool2d`` with its defaults
    (``ceil_mode=False``, ``count_include_pad=True``): ``y = sum(window) / (KH * KW)``.

    Returns ``(N, C, H_out, W_out)`` (size formula of :func:`max_pool2d`). Gradient:
    ``g / (KH * KW)`` added to every input element of the window.

    Raises:
        ShapeError, ValueError, TypeError: as :func:`max_pool2d`.
    """
    return _avg("avg_pool2d", x, kernel_size, stride, padding)  # type: ignore[no-any-return]


def _avg(op: str, x: Any, kernel_size: object, stride: object, padding: object) -> Any:
    """:func:`avg_pool2d` (``op`` names it in the errors)."""
    xd = x.data
    k, s, p, out_hw = _pool_geometry(op, xd, kernel_size, stride, padding)
    n, c, h, w = xd.shape
    x3 = xd.reshape(n * c, h, w)
    y = _kp.pool_avg(x3, k, s, p, out_hw)
    if _tp._recorder is not None:
        replayable(op, y, _avg_into, (x3, k, s, p, out_hw), (x,), op_tape(x), train=True)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        gx = _kp.pool_avg_backward(g.reshape(n * c, *out_hw), k, s, p, (h, w))
        grads._accum(i, gx.reshape(n, c, h, w))

    def adjoint(gd: Array) -> Array:
        return _kp.pool_avg_backward(gd.reshape(n * c, *out_hw), k, s, p, (h, w)).reshape(n, c, h, w)

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _linear_vjp(lambda a: _avg(op, a, kernel_size, stride, padding), adjoint, g)

    return record_unary(x, y.reshape(n, c, *out_hw), rule, diff=diff)


# ----- 1-D pooling: the 2-D kernels over (N, C, 1, L) ---------------------------------------------


def _pool1d(op: str, x: Any, kernel_size: object, stride: object, padding: object, is_avg: bool) -> Any:
    """``max_pool1d`` / ``avg_pool1d``: ``x (N, C, L)`` or ``(C, L)`` pooled as ``(N, C, 1, L)``
    with a ``(1, k)`` kernel.

    Raises:
        ShapeError: ``x`` is not 2-D or 3-D, or the kernel is larger than the padded input.
        ValueError, TypeError: as :func:`max_pool2d` (for the 1-D arguments).
    """
    xd = x.data
    if xd.ndim not in (2, 3):
        raise ShapeError(f"{op}: expects a 2-D (C, L) or 3-D (N, C, L) input, got shape {xd.shape}")
    for name, v in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding)):
        if v is not None and not (isinstance(v, (int, np.integer)) and not isinstance(v, bool)):
            if not (isinstance(v, (tuple, list)) and len(v) == 1):
                raise TypeError(f"{op}: {name} must be an int (or a 1-tuple), got {v!r}")
    one = [(v[0] if isinstance(v, (tuple, list)) else v) for v in (kernel_size, stride, padding)]
    k, s, p = one
    x4 = x.reshape((1, *xd.shape[:1], 1, xd.shape[-1]) if xd.ndim == 2 else (*xd.shape[:2], 1, xd.shape[-1]))
    s2 = None if s is None else (1, s)
    if is_avg:
        y = _avg(op, x4, (1, k), s2, (0, p))
    else:
        y = _maxmin(op, x4, (1, k), s2, (0, p), False)
    return y.reshape((*xd.shape[:-1], y.shape[-1]))


def max_pool1d(x: Tensor[Any, T], kernel_size: int, stride: int | None = None, padding: int = 0) -> Tensor[Any, T]:
    """Max over ``kernel_size`` windows along the last dim of ``x (N, C, L)`` or ``(C, L)``,
    as ``torch.nn.functional.max_pool1d`` (no dilation, ``ceil_mode=False``): ``L_out =
    floor((L + 2p - k) / s) + 1``, ``stride`` defaulting to ``kernel_size``. Gradient: routed to
    each window's arg-max (the first on ties). Runs :func:`max_pool2d`'s kernels on ``(N, C, 1, L)``.

    Raises:
        ShapeError: ``x`` is not 2-D or 3-D, or the kernel is larger than the padded input.
        ValueError: kernel/stride < 1, padding < 0 or more than half the kernel.
        TypeError: an argument is not an int.
    """
    return _pool1d("max_pool1d", x, kernel_size, stride, padding, False)  # type: ignore[no-any-return]


def avg_pool1d(x: Tensor[Any, T], kernel_size: int, stride: int | None = None, padding: int = 0) -> Tensor[Any, T]:
    """Mean over ``kernel_size`` windows along the last dim of ``x (N, C, L)`` or ``(C, L)``, as
    ``torch.nn.functional.avg_pool1d`` with its defaults (zero padding counted). Size formula
    and errors of :func:`max_pool1d`; gradient ``g / k`` to every element of each window.

    Raises:
        ShapeError, ValueError, TypeError: as :func:`max_pool1d`.
    """
    return _pool1d("avg_pool1d", x, kernel_size, stride, padding, True)  # type: ignore[no-any-return]


# ----- 3-D pooling: the 2-D kernels, one spatial dim at a time ------------------------------------

Int3: TypeAlias = int | tuple[int, int, int]
"""An int for the three spatial dims, or ``(depth, height, width)``."""
OutSize3: TypeAlias = int | tuple[int | None, int | None, int | None] | None
"""An adaptive 3-D pool's ``output_size``: an int (cube), or ``(od, oh, ow)``; ``None`` keeps that input size."""

Geometry3: TypeAlias = tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]
"""``(kernel, stride, padding, out_dhw)`` of a 3-D pool, each ``(depth, height, width)``."""


def _volumes(op: str, xd: Array) -> tuple[tuple[int, ...], int, tuple[int, int, int]]:
    """``(lead dims, P, (D, H, W))`` of a ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` input:
    its ``P = N * C`` volumes.

    Raises:
        ShapeError: ``x`` is neither 4-D nor 5-D.
    """
    if xd.ndim not in (4, 5):
        raise ShapeError(f"{op}: expects x of shape (N, C, D, H, W) or (C, D, H, W), got {xd.shape}")
    lead = tuple(int(v) for v in xd.shape[:-3])
    d, h, w = (int(v) for v in xd.shape[-3:])
    return lead, int(np.prod(lead, dtype=np.int64)), (d, h, w)


def _pool3d_geometry(op: str, xd: Array, kernel_size: object, stride: object, padding: object) -> Geometry3:
    """``(kernel, stride, padding, out_dhw)`` after checking the arguments against ``x``: the
    one check of every 3-D window pool (:func:`max_pool3d`, :func:`avg_pool3d` and their layers).

    Raises:
        ShapeError: ``x`` is not 4-D/5-D, or the kernel is larger than the padded input.
        ValueError: kernel/stride < 1, padding < 0 or more than half the kernel.
        TypeError: an argument is not an int or a triple of ints.
    """
    _, _, dhw = _volumes(op, xd)
    k = _ints(op, "kernel_size", kernel_size, 3, 1)
    s = k if stride is None else _ints(op, "stride", stride, 3, 1)
    p = _ints(op, "padding", padding, 3, 0)
    if any(pi > ki // 2 for pi, ki in zip(p, k, strict=True)):
        raise ValueError(f"{op}: padding {p} must be at most half the kernel size {k}")
    padded = tuple(n + 2 * pi for n, pi in zip(dhw, p, strict=True))
    if any(n < ki for n, ki in zip(padded, k, strict=True)):
        raise ShapeError(f"{op}: kernel {k} is larger than the padded input {padded}: x {xd.shape}, padding {p}")
    out = tuple((n - ki) // si + 1 for n, ki, si in zip(padded, k, s, strict=True))
    return (k[0], k[1], k[2]), (s[0], s[1], s[2]), (p[0], p[1], p[2]), (out[0], out[1], out[2])


def _max3_forward(x4: Array, geo: Geometry3, want_idx: bool) -> tuple[Array, Array | None]:
    """Max pooling of volumes ``x4 (P, D, H, W)``: ``(y (P, OD, OH * OW), idx)``, ``idx`` the int32
    flat index ``d * H * W + h * W + w`` of each maximum in its volume (``None`` unless
    ``want_idx``).

    The max over a box is the max over its depth of the maxima over its height and width, so
    this is the 2-D kernel twice: ``(KH, KW)`` windows over the ``P * D`` slices, then ``(KD, 1)``
    windows down the depth of the ``(P, D, OH * OW)`` result. The 2-D kernel's scan rule (first
    of equal maxima, last NaN) applied per stage gives the row-major rule over the box: the
    first depth whose slice holds the maximum, the first position in that slice (and the
    last NaN of the last slice that has one), as PyTorch's 3-D CPU kernel."""
    (kd, kh, kw), (sd, sh, sw), (pd, ph, pw), (od, oh, ow) = geo
    p, d, h, w = x4.shape
    m = oh * ow
    y1, i1 = _kp.pool_maxmin(x4.reshape(p * d, h, w), (kh, kw), (sh, sw), (ph, pw), (oh, ow), False, want_idx)
    y, i2 = _kp.pool_maxmin(y1.reshape(p, d, m), (kd, 1), (sd, 1), (pd, 0), (od, m), False, want_idx)
    if not want_idx:
        return y, None
    assert i1 is not None and i2 is not None
    depth = i2 // np.int32(m)  # the stage-2 index is depth * m + column, the column the output's own
    hw = np.take_along_axis(i1.reshape(p, d, m), depth, axis=1)
    return y, (depth * np.int32(h * w) + hw).astype(np.int32, copy=False)


def _max3_into(out: Array, x4: Array, geo: Geometry3, idx: Array | None) -> None:
    """:func:`max_pool3d`'s forward into ``out`` (a replay of :func:`gradtape.capture`), and the
    arg-max indices its recorded backward reads into ``idx``."""
    y, fresh = _max3_forward(x4, geo, idx is not None)
    np.copyto(out, y)
    if idx is not None:
        assert fresh is not None
        np.copyto(idx, fresh)


def _avg3_forward(x4: Array, geo: Geometry3) -> Array:
    """Average pooling of volumes ``x4 (P, D, H, W)``, zero padding counted: ``(P, OD, OH * OW)``.
    The mean over a box is separable: the 2-D kernel's ``(KH, KW)`` means of each slice, then
    ``(KD, 1)`` means down the depth (divisors ``KH * KW`` and ``KD``: ``KD * KH * KW`` in all)."""
    (kd, kh, kw), (sd, sh, sw), (pd, ph, pw), (od, oh, ow) = geo
    p, d, h, w = x4.shape
    y1 = _kp.pool_avg(x4.reshape(p * d, h, w), (kh, kw), (sh, sw), (ph, pw), (oh, ow))
    return _kp.pool_avg(y1.reshape(p, d, oh * ow), (kd, 1), (sd, 1), (pd, 0), (od, oh * ow))


def _avg3_adjoint(g: Array, geo: Geometry3, dhw: tuple[int, int, int]) -> Array:
    """The transpose of :func:`_avg3_forward`: ``(P, D, H, W)`` from ``g (P, OD, OH * OW)``, the
    two stages' backward kernels in reverse order."""
    (kd, kh, kw), (sd, sh, sw), (pd, ph, pw), (od, oh, ow) = geo
    d, h, w = dhw
    p = g.shape[0]
    g1 = _kp.pool_avg_backward(g.reshape(p, od, oh * ow), (kd, 1), (sd, 1), (pd, 0), (d, oh * ow))
    return _kp.pool_avg_backward(g1.reshape(p * d, oh, ow), (kh, kw), (sh, sw), (ph, pw), (h, w)).reshape(p, d, h, w)


def _avg3_into(out: Array, x4: Array, geo: Geometry3) -> None:
    """:func:`avg_pool3d`'s forward into ``out`` (a replay of :func:`gradtape.capture`)."""
    np.copyto(out, _avg3_forward(x4, geo))


def _scatter_diff(g: Any, idx: Array, p: int, size: int, shape: tuple[int, ...]) -> Any:
    """The second rule of a max pool: ``g`` added at the chosen sources ``idx (P, ...)`` (flat
    in volumes of ``size`` elements; this forward's selection, piecewise constant), as a
    recorded scatter whose own backward gathers."""
    from gradtape.ops.indexing import scatter_into

    flat = (
        idx.reshape(p, int(np.prod(idx.shape[1:]))).astype(np.int64) + (np.arange(p, dtype=np.int64) * size)[:, None]
    ).reshape(-1)
    return scatter_into(g.reshape((-1,)), (p * size,), 0, flat).reshape(shape)


def _max3(op: str, x: Any, kernel_size: object, stride: object, padding: object) -> Any:
    """:func:`max_pool3d` (``op`` names it in the errors)."""
    xd = float_data(op, x)
    geo = _pool3d_geometry(op, xd, kernel_size, stride, padding)
    lead, p, (d, h, w) = _volumes(op, xd)
    x4 = xd.reshape(p, d, h, w)
    tape = op_tape(x)
    y, idx = _max3_forward(x4, geo, tape is not NONE_TAPE)
    if _tp._recorder is not None:
        replayable(op, y, _max3_into, (x4, geo, idx), (x,), tape, train=True, writes=() if idx is None else (idx,))
    out = y.reshape(*lead, *geo[3])
    if idx is None:  # nothing records: the rules below never run
        return record_unary(x, out, _untraced)
    shape = tuple(xd.shape)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, _kp.scatter_add(g.reshape(p, idx.shape[1] * idx.shape[2]), idx, (d, h * w)).reshape(shape))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _scatter_diff(g, idx, p, d * h * w, shape)

    return record_unary(x, out, rule, diff=diff)


def _avg3(op: str, x: Any, kernel_size: object, stride: object, padding: object) -> Any:
    """:func:`avg_pool3d` (``op`` names it in the errors)."""
    xd = float_data(op, x)
    geo = _pool3d_geometry(op, xd, kernel_size, stride, padding)
    lead, p, dhw = _volumes(op, xd)
    x4 = xd.reshape(p, *dhw)
    y = _avg3_forward(x4, geo)
    if _tp._recorder is not None:
        replayable(op, y, _avg3_into, (x4, geo), (x,), op_tape(x), train=True)
    shape = tuple(xd.shape)

    def adjoint(gd: Array) -> Array:
        return _avg3_adjoint(gd.reshape(p, geo[3][0], geo[3][1] * geo[3][2]), geo, dhw).reshape(shape)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, adjoint(g))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _linear_vjp(lambda a: _avg3(op, a, kernel_size, stride, padding), adjoint, g)

    return record_unary(x, y.reshape(*lead, *geo[3]), rule, diff=diff)


@overload
def max_pool3d(
    x: Tensor[Rank5[N, C, Any, Any, Any], T], kernel_size: Int3, stride: Int3 | None = None, padding: Int3 = 0
) -> Tensor[Rank5[N, C, int, int, int], T]: ...
@overload
def max_pool3d(
    x: Tensor[Rank4[C, Any, Any, Any], T], kernel_size: Int3, stride: Int3 | None = None, padding: Int3 = 0
) -> Tensor[Rank4[C, int, int, int], T]: ...
@overload
def max_pool3d(
    x: Tensor[AnyShape, T], kernel_size: Int3, stride: Int3 | None = None, padding: Int3 = 0
) -> Tensor[Any, T]: ...
def max_pool3d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    """Max over ``kernel_size`` windows of each volume of ``x (N, C, D, H, W)`` or unbatched
    ``(C, D, H, W)`` (float32 or float64), as ``torch.nn.functional.max_pool3d`` (no dilation,
    ``ceil_mode=False``, no ``return_indices``: the arguments :func:`max_pool2d` takes).

    ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding`` are an int or
    ``(depth, height, width)``; padding is at most half the kernel and never wins (``-inf``).
    Returns ``(N, C, D_out, H_out, W_out)`` (or unbatched), per dim
    ``D_out = floor((D + 2*pd - KD) / sd) + 1``, in ``x``'s dtype.

    Gradient: ``g`` added at each window's arg-max (saved indices), accumulated where windows
    overlap. Ties go to the first element of the window in ``(d, h, w)`` row-major order, a
    NaN wins (the last NaN), as PyTorch's CPU kernel. Differentiable again (the second rule is
    a recorded scatter of ``g`` to the same arg-max positions). Computed by the 2-D kernels:
    ``(KH, KW)`` maxima of each depth slice, then ``(KD, 1)`` maxima down the depth (the max of
    a box is the max of its slices' maxima, with the same tie and NaN rule).

    Raises:
        ShapeError: ``x`` is not 4-D or 5-D, or the kernel is larger than the padded input.
        ValueError: kernel/stride < 1, padding < 0 or more than half the kernel.
        TypeError: arguments are not ints (or triples of ints).
        DTypeError: ``x`` is an integer or bool tensor.
    """
    return _max3("max_pool3d", x, kernel_size, stride, padding)


@overload
def avg_pool3d(
    x: Tensor[Rank5[N, C, Any, Any, Any], T], kernel_size: Int3, stride: Int3 | None = None, padding: Int3 = 0
) -> Tensor[Rank5[N, C, int, int, int], T]: ...
@overload
def avg_pool3d(
    x: Tensor[Rank4[C, Any, Any, Any], T], kernel_size: Int3, stride: Int3 | None = None, padding: Int3 = 0
) -> Tensor[Rank4[C, int, int, int], T]: ...
@overload
def avg_pool3d(
    x: Tensor[AnyShape, T], kernel_size: Int3, stride: Int3 | None = None, padding: Int3 = 0
) -> Tensor[Any, T]: ...
def avg_pool3d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Any:
    """Mean over ``kernel_size`` windows of each volume of ``x (N, C, D, H, W)`` or unbatched
    ``(C, D, H, W)``, zero padding included in the count, as ``torch.nn.functional.avg_pool3d``
    with its defaults (``ceil_mode=False``, ``count_include_pad=True``, no ``divisor_override``:
    the arguments :func:`avg_pool2d` takes): ``y = sum(window) / (KD * KH * KW)``.

    Sizes, arguments and dtypes as :func:`max_pool3d`. Gradient: ``g / (KD * KH * KW)`` added to
    every input element of the window; differentiable to any order (the op is linear: its
    second rule applies the transpose as a recorded op). Computed separably by the 2-D kernel
    (each slice's ``(KH, KW)`` means, then ``(KD, 1)`` means down the depth), so float32 sums
    may differ from PyTorch's in the last bits.

    Raises:
        ShapeError, ValueError, TypeError, DTypeError: as :func:`max_pool3d`.
    """
    return _avg3("avg_pool3d", x, kernel_size, stride, padding)


# ----- adaptive 3-D pooling ---------------------------------------------------------------------


def _adaptive3_geometry(op: str, xd: Array, output_size: object) -> tuple[int, int, int]:
    """``(od, oh, ow)`` after checking ``x`` and ``output_size`` (``None`` keeps that size): the
    one check of the adaptive 3-D pools.

    Raises:
        ShapeError: ``x`` is not 4-D/5-D or has a zero depth, height or width.
        TypeError: ``output_size`` is not an int, ``None`` or a triple of them. ValueError: a size < 1.
    """
    _, _, dhw = _volumes(op, xd)
    if 0 in dhw:
        raise ShapeError(f"{op}: the input's depth, height and width must be non-zero, got shape {xd.shape}")
    sizes = (output_size,) * 3 if output_size is None or isinstance(output_size, (int, np.integer)) else output_size
    if not isinstance(sizes, (tuple, list)) or len(sizes) != 3:
        raise TypeError(f"{op}: output_size must be an int, None or a triple of them, got {output_size!r}")
    od, oh, ow = (n if s is None else positive_int(op, "output_size", s) for n, s in zip(dhw, sizes, strict=True))
    return od, oh, ow


def _adaptive_bins(n: int, m: int) -> tuple[Array, Array]:
    """PyTorch's adaptive bins ``[floor(i n / m), ceil((i + 1) n / m))``, ``i < m``: ``(starts, ends)``."""
    i = np.arange(m, dtype=np.int64)
    return (i * n) // m, -((-(i + 1) * n) // m)


def _bin_averaging(n: int, m: int, dtype: np.dtype[Any]) -> Array:
    """The ``(m, n)`` matrix averaging each adaptive bin."""
    s, e = _adaptive_bins(n, m)
    j = np.arange(n)[None, :]
    inside = (j >= s[:, None]) & (j < e[:, None])
    a: Array = np.where(inside, dtype.type(1) / (e - s)[:, None].astype(dtype), dtype.type(0)).astype(dtype)
    return a


def _adaptive_avg3_forward(x4: Array, mats: tuple[Array, Array, Array]) -> Array:
    """``(P, OD, OH * OW)``: the bin means of volumes ``x4 (P, D, H, W)``, one matrix product per
    dim (the mean over a box of bins is separable): width, then height, then depth."""
    ad, ah, aw = mats
    p, d, h, w = x4.shape
    t = _blas.matmul(x4.reshape(p * d * h, w), aw.T)
    t = _blas.matmul(ah, t.reshape(p * d, h, aw.shape[0]))
    y: Array = _blas.matmul(ad, t.reshape(p, d, ah.shape[0] * aw.shape[0]))
    return y


def _adaptive_avg3_into(out: Array, x4: Array, mats: tuple[Array, Array, Array]) -> None:
    """:func:`adaptive_avg_pool3d`'s forward into ``out`` (a replay of :func:`gradtape.capture`)."""
    np.copyto(out, _adaptive_avg3_forward(x4, mats))


@overload
def adaptive_avg_pool3d(
    input: Tensor[Rank5[N, C, Any, Any, Any], T], output_size: OutSize3
) -> Tensor[Rank5[N, C, int, int, int], T]: ...
@overload
def adaptive_avg_pool3d(
    input: Tensor[Rank4[C, Any, Any, Any], T], output_size: OutSize3
) -> Tensor[Rank4[C, int, int, int], T]: ...
@overload
def adaptive_avg_pool3d(input: Tensor[AnyShape, T], output_size: OutSize3) -> Tensor[Any, T]: ...
def adaptive_avg_pool3d(input: Any, output_size: Any) -> Any:
    """Average each of ``output_size`` adaptive bins of the last three dims of ``input``
    ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` (float32 or float64), as
    ``torch.nn.functional.adaptive_avg_pool3d``.

    ``output_size``: an int (cube), or ``(od, oh, ow)`` where ``None`` keeps that input size.
    Bin ``i`` of ``m`` over ``n`` covers ``[floor(i n / m), ceil((i + 1) n / m))`` (bins overlap
    when ``n`` is not a multiple of ``m``). Computed as three matrix products with the
    bin-averaging matrices ``A_d``, ``A_h``, ``A_w`` (``y = x x_w A_w^T x_h A_h x_d A_d``);
    gradient the transposes in reverse order, differentiable to any order. Returns
    ``(..., od, oh, ow)`` in ``input``'s dtype.

    Raises:
        ShapeError: input not 4-D/5-D or with a zero depth, height or width.
        TypeError / ValueError: ``output_size`` not ints/None (or a triple of them), or below 1.
        DTypeError: an integer or bool input.
    """
    op = "adaptive_avg_pool3d"
    xd = float_data(op, input)
    out_dhw = _adaptive3_geometry(op, xd, output_size)
    lead, p, dhw = _volumes(op, xd)
    mats = tuple(_arrays.into_memory_of(_bin_averaging(n, m, xd.dtype), xd) for n, m in zip(dhw, out_dhw, strict=True))
    ad, ah, aw = mats
    x4 = xd.reshape(p, *dhw)
    y = _arrays.contiguous(_adaptive_avg3_forward(x4, (ad, ah, aw)))
    shape = tuple(xd.shape)
    od, oh, ow = out_dhw
    d, h, _ = dhw

    def adjoint(gd: Array) -> Array:
        t = _blas.matmul(ad.T, _arrays.contiguous(gd).reshape(p, od, oh * ow))
        t = _blas.matmul(ah.T, t.reshape(p * d, oh, ow))
        return _blas.matmul(t.reshape(p * d * h, ow), aw).reshape(shape)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, adjoint(g))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _linear_vjp(lambda a: adaptive_avg_pool3d(a, output_size), adjoint, g)

    result = record_unary(input, y.reshape(*lead, *out_dhw), rule, diff=diff)
    if _tp._recorder is not None:
        for a in mats:
            _tp._recorder.constant(a)
        replayable(op, y, _adaptive_avg3_into, (x4, (ad, ah, aw)), (input,), result.tape, True)
    return result


class PoolIndices(NamedTuple):
    """``adaptive_max_pool3d(..., return_indices=True)``: the maxima and their int64 flat indices
    ``d * H * W + h * W + w`` in each volume (the pair PyTorch returns)."""

    values: Any
    indices: Any


def _first_max(win: Array) -> Array:
    """PyTorch's arg-max along the last axis: the first of equal maxima, or the last NaN if there
    is one (its scan ``val > best || isnan(val)``); numpy's ``argmax`` alone takes the first NaN."""
    nan = np.isnan(win)
    last_nan = win.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
    found: Array = np.where(nan.any(axis=-1), last_nan, win.argmax(axis=-1))
    return found


def _bin_taps(n: int, m: int) -> Array:
    """``(m, L)`` source indices of each adaptive bin, ``L`` the longest bin; shorter bins repeat
    their last element (which moves neither the first maximum nor the last NaN)."""
    s, e = _adaptive_bins(n, m)
    taps: Array = np.minimum(s[:, None] + np.arange(int((e - s).max()))[None, :], e[:, None] - 1)
    return taps


def _adaptive_max3_forward(x4: Array, out_dhw: tuple[int, int, int]) -> tuple[Array, Array, Array]:
    """``(values (P, OD, OH, OW), int64 flat arg-max indices, the same as int32)`` of volumes
    ``x4 (P, D, H, W)``, one dim at a time as :func:`_max3_forward` (whole-array gathers of each
    bin's elements and an arg-max over them, no loop over bins): the bin maxima along the
    width, then the height, then the depth, each stage's choice carried back to its source."""
    _, d, h, w = x4.shape
    od, oh, ow = out_dhw
    tw, th, td = (_arrays.into_memory_of(_bin_taps(n, m), x4) for n, m in ((w, ow), (h, oh), (d, od)))
    win = x4[..., tw]  # (P, D, H, ow, Lw)
    k = _first_max(win)
    v = np.take_along_axis(win, k[..., None], axis=-1)[..., 0]  # (P, D, H, ow)
    src_w = tw[_arrays.arange(ow, x4), k]
    win = np.moveaxis(v[:, :, th, :], 3, -1)  # (P, D, oh, ow, Lh)
    k = _first_max(win)
    v = np.take_along_axis(win, k[..., None], axis=-1)[..., 0]  # (P, D, oh, ow)
    src_h = th[_arrays.arange(oh, x4)[:, None], k]
    src_w = np.take_along_axis(src_w, src_h, axis=2)
    win = np.moveaxis(v[:, td], 2, -1)  # (P, od, oh, ow, Ld)
    k = _first_max(win)
    v = np.take_along_axis(win, k[..., None], axis=-1)[..., 0]  # (P, od, oh, ow)
    src_d = td[_arrays.arange(od, x4)[:, None, None], k]
    src_h = np.take_along_axis(src_h, src_d, axis=1)
    src_w = np.take_along_axis(src_w, src_d, axis=1)
    idx = (src_d * h + src_h) * w + src_w
    return _arrays.contiguous(v), idx, idx.astype(np.int32)


def _adaptive_max3_into(out: Array, x4: Array, out_dhw: tuple[int, int, int], idx: Array, idx32: Array) -> None:
    """:func:`adaptive_max_pool3d`'s forward into ``out`` and its indices into ``idx``/``idx32``
    (a replay of :func:`gradtape.capture`)."""
    y, i64, i32 = _adaptive_max3_forward(x4, out_dhw)
    np.copyto(out, y)
    np.copyto(idx, i64)
    np.copyto(idx32, i32)


@overload
def adaptive_max_pool3d(
    input: Tensor[Rank5[N, C, Any, Any, Any], T], output_size: OutSize3, return_indices: Literal[False] = False
) -> Tensor[Rank5[N, C, int, int, int], T]: ...
@overload
def adaptive_max_pool3d(
    input: Tensor[Rank4[C, Any, Any, Any], T], output_size: OutSize3, return_indices: Literal[False] = False
) -> Tensor[Rank4[C, int, int, int], T]: ...
@overload
def adaptive_max_pool3d(
    input: Tensor[AnyShape, T], output_size: OutSize3, return_indices: Literal[False] = False
) -> Tensor[Any, T]: ...
@overload
def adaptive_max_pool3d(input: Tensor[Any, T], output_size: OutSize3, return_indices: Literal[True]) -> PoolIndices: ...
def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Maximum of each of ``output_size`` adaptive bins (the bins of :func:`adaptive_avg_pool3d`)
    of ``input (N, C, D, H, W)`` or unbatched ``(C, D, H, W)``, as
    ``torch.nn.functional.adaptive_max_pool3d``.

    With ``return_indices=True`` returns ``(values, indices)``, ``indices`` an int64 tensor of
    flat positions ``d * H * W + h * W + w`` in each volume (no gradient). Ties go to the first
    element of the bin in ``(d, h, w)`` row-major order; a NaN wins (the last NaN), as
    PyTorch's CPU kernel. Gradient: ``g`` added at each bin's arg-max; differentiable again (a
    recorded scatter to the same positions).

    Raises:
        ShapeError, TypeError, ValueError, DTypeError: as :func:`adaptive_avg_pool3d`.
    """
    op = "adaptive_max_pool3d"
    xd = float_data(op, input)
    out_dhw = _adaptive3_geometry(op, xd, output_size)
    lead, p, (d, h, w) = _volumes(op, xd)
    x4 = xd.reshape(p, d, h, w)
    y, idx, idx32 = _adaptive_max3_forward(x4, out_dhw)
    shape = tuple(xd.shape)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, _kp.scatter_add(g.reshape(p, idx32[0].size if p else 0), idx32, (d, h * w)).reshape(shape))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _scatter_diff(g, idx, p, d * h * w, shape)

    values = record_unary(input, y.reshape(*lead, *out_dhw), rule, diff=diff)
    if _tp._recorder is not None:  # the rules read the arg-max positions: a replay refreshes them
        replayable(op, y, _adaptive_max3_into, (x4, out_dhw, idx, idx32), (input,), values.tape, True, (idx, idx32))
    if return_indices:
        return PoolIndices(values, input._like(idx.reshape(*lead, *out_dhw)))
    return values


# ----- upscale2d ---------------------------------------------------------------------------


def _out_size(
    op: str, in_hw: tuple[int, int], size: object, scale_factor: object
) -> tuple[tuple[int, int], tuple[float, float] | None]:
    """``(output size, scale factors or None)`` from exactly one of ``size`` / ``scale_factor``."""
    if (size is None) == (scale_factor is None):
        raise ValueError(
            f"{op}: give exactly one of size and scale_factor (got size={size!r}, scale_factor={scale_factor!r})"
        )
    if size is not None:
        hw = _ints(op, "size", size, 2, 1)
        return (hw[0], hw[1]), None
    sf = (scale_factor, scale_factor) if isinstance(scale_factor, (int, float, np.number)) else scale_factor
    if (
        not isinstance(sf, (tuple, list))
        or len(sf) != 2
        or not all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in sf)
    ):
        raise TypeError(f"{op}: scale_factor must be a number or a pair of numbers, got {scale_factor!r}")
    if not all(math.isfinite(v) and v > 0 for v in sf):
        raise ValueError(f"{op}: scale_factor must be positive and finite, got {scale_factor!r}")
    out = (math.floor(in_hw[0] * float(sf[0])), math.floor(in_hw[1] * float(sf[1])))
    if out[0] < 1 or out[1] < 1:
        raise ShapeError(f"{op}: scale_factor {scale_factor!r} gives an empty output {out} for input size {in_hw}")
    return out, (float(sf[0]), float(sf[1]))


def _ratio(dtype: np.dtype[Any], n_in: int, n_out: int, scale: float | None) -> Any:
    """PyTorch's ``compute_scales_value``: ``1 / scale`` if a scale factor was given, else
    ``n_in / n_out``, in ``dtype``."""
    if scale is not None and scale > 0:
        return dtype.type(1.0 / scale)
    return dtype.type(n_in) / dtype.type(n_out)


def _nearest_index(n_in: int, n_out: int, scale: float | None) -> Array:
    dst = np.arange(n_out, dtype=np.int64)
    if n_out == n_in:
        return dst
    if n_out == 2 * n_in:
        return dst >> 1
    r = _ratio(np.dtype(np.float32), n_in, n_out, scale)
    src: Array = np.floor(dst.astype(np.float32) * r).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _linear_taps(dtype: np.dtype[Any], n_in: int, n_out: int, scale: float | None, align_corners: bool) -> _kp.Taps:
    """PyTorch's ``compute_source_index_and_lambda`` along one axis, in ``dtype``."""
    dst = np.arange(n_out, dtype=np.int64)
    one = dtype.type(1)
    if n_out == n_in:
        return dst, dst.copy(), np.ones(n_out, dtype), np.zeros(n_out, dtype)
    if align_corners:
        r = dtype.type(n_in - 1) / dtype.type(n_out - 1) if n_out > 1 else dtype.type(0)
        src = r * dst.astype(dtype)
    else:
        r = _ratio(dtype, n_in, n_out, scale)
        src = r * (dst.astype(dtype) + dtype.type(0.5)) - dtype.type(0.5)
        src = np.maximum(src, dtype.type(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    l1 = np.clip(src - i0.astype(dtype), dtype.type(0), one).astype(dtype)
    i1 = i0 + (i0 < n_in - 1)
    return i0, i1, (one - l1).astype(dtype), l1


@overload
def upscale2d(
    x: Tensor[Rank4[N, C, Any, Any], T],
    size: tuple[H2, W2],
    scale_factor: None = None,
    mode: Literal["nearest", "bilinear"] = "nearest",
    align_corners: bool | None = None,
) -> Tensor[Rank4[N, C, H2, W2], T]: ...
@overload
def upscale2d(
    x: Tensor[Rank4[N, C, Any, Any], T],
    size: int | None = None,
    scale_factor: float | tuple[float, float] | None = None,
    mode: Literal["nearest", "bilinear"] = "nearest",
    align_corners: bool | None = None,
) -> Tensor[Rank4[N, C, int, int], T]: ...
def upscale2d(
    x: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool | None = None
) -> Any:
    """Resample each plane of ``x (N, C, H, W)`` to ``size`` ``(H_out, W_out)`` (or an int for
    both) or by ``scale_factor`` (a number or a pair: ``H_out = floor(H * scale)``), as
    ``torch.nn.functional.interpolate`` with ``mode="nearest"`` or ``"bilinear"``; any size,
    also smaller than the input. Index and weight formulas in the module docstring.

    Args:
        align_corners: bilinear only; ``None`` means ``False`` (PyTorch's default).

    Gradient: the transpose of the resampling (each output gradient added to its source
    pixel, or spread over the four bilinear taps with their weights).

    Raises:
        ShapeError: ``x`` is not 4-D; ``scale_factor`` gives an empty output.
        ValueError: both or neither of ``size`` and ``scale_factor``; a size < 1 or a scale
            that is not positive; an unknown ``mode``; ``align_corners`` with ``"nearest"``.
        TypeError: ``size`` is not ints, ``scale_factor`` not numbers.
    """
    op = "upscale2d"
    xd = x.data
    _check4(op, xd)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"{op}: mode must be 'nearest' or 'bilinear', got {mode!r}")
    if mode == "nearest" and align_corners is not None:
        raise ValueError(f"{op}: align_corners can only be set with mode='bilinear'")
    n, c, h, w = xd.shape
    (oh, ow), sf = _out_size(op, (h, w), size, scale_factor)
    sh, sw = (None, None) if sf is None else sf
    planes = xd.reshape(n * c, h, w)
    if mode == "nearest":
        ih, iw = _nearest_index(h, oh, sh), _nearest_index(w, ow, sw)
        y = planes[:, ih[:, None], iw[None, :]]

        def nearest_adjoint(gd: Array) -> Array:
            return _kp.nearest_backward(gd.reshape(n * c, oh, ow), ih, iw, (h, w)).reshape(n, c, h, w)

        def nearest_rule(grads: Gradients, i: int, g: Array) -> None:
            grads._accum(i, nearest_adjoint(g))

        def nearest_diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
            return _linear_vjp(lambda a: upscale2d(a, size, scale_factor, "nearest"), nearest_adjoint, g)

        return record_unary(x, y.reshape(n, c, oh, ow), nearest_rule, diff=nearest_diff)
    dt = xd.dtype
    th = _linear_taps(dt, h, oh, sh, bool(align_corners))
    tw = _linear_taps(dt, w, ow, sw, bool(align_corners))
    y = _kp.bilinear(planes, th, tw)

    def bilinear_adjoint(gd: Array) -> Array:
        return _kp.bilinear_backward(gd.reshape(n * c, oh, ow), th, tw, (h, w)).reshape(n, c, h, w)

    def bilinear_rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, bilinear_adjoint(g))

    def bilinear_diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _linear_vjp(lambda a: upscale2d(a, size, scale_factor, "bilinear", align_corners), bilinear_adjoint, g)

    return record_unary(x, y.reshape(n, c, oh, ow), bilinear_rule, diff=bilinear_diff)


def _linear_vjp(f: Callable[[Any], Any], adjoint: Callable[[Array], Array], g: Any) -> Any:
    """The second rule of a linear op ``f`` (average pooling, upscaling): ``f^T g`` as a recorded
    op whose forward is the first rule's ``adjoint`` and whose backward is ``f`` itself (the
    adjoint of the adjoint), so it differentiates to any order."""

    class LinearVJP(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, t: Any) -> Any:
            return t._like(np.ascontiguousarray(adjoint(t.data)))

        @staticmethod
        def backward(ctx: FunctionCtx, a: Any) -> Any:
            return f(a)

    return LinearVJP.apply(g)
