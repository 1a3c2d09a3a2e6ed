"""2-D pooling and upscaling with PyTorch's semantics: max_pool2d, min_pool2d, avg_pool2d, upscale2d.

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

Runtime errors: :class:`~gradtape.errors.ShapeError` (naming the op and the shapes) for an
input that is not 4-D, a window larger than the padded input, an empty output;
``ValueError`` for a kernel/stride/scale/size below 1 (or not positive), padding above half
the kernel, both or neither of ``size`` and ``scale_factor``, an unknown mode,
``align_corners`` with ``"nearest"``; ``TypeError`` for arguments that are not ints/floats.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import T
from gradtape.devices.kernels import pool as _kp
from gradtape.errors import ShapeError
from gradtape.ops._function import Function, FunctionCtx
from gradtape.ops._util import record_unary, replayable
from gradtape.ops.conv import _ints
from gradtape.shapes import Rank4
from gradtape.tape import NONE_TAPE, op_tape

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d", "min_pool2d", "upscale2d"]

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
