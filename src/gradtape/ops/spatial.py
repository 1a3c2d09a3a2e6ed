"""Spatial ops with PyTorch's semantics: pad, interpolate, adaptive pooling, pixel (un)shuffle.

All are linear in the input (adaptive max pooling is linear for a fixed selection), so each
first rule is the transposed map on raw arrays and each second rule applies that transpose as
a recorded op whose own backward is the forward op again (:func:`gradtape.ops.pool._linear_vjp`),
which differentiates to any order.

* :func:`pad` (``torch.nn.functional.pad``): ``pad = (left, right, top, bottom, ...)`` pairs from
  the last dim backwards. ``"constant"`` on any number of dims (negative pads crop); index modes
  ``"reflect"``, ``"replicate"`` and ``"circular"`` on the last 1, 2 or 3 dims of a 2-D/3-D,
  3-D/4-D or 4-D/5-D input (PyTorch's rank rule). Each output position reads the source index
  ``s = j - before`` mapped into ``[0, n)``: reflect ``s < 0 -> -s``, ``s >= n -> 2(n - 1) - s``
  (pads ``< n``); replicate clamps; circular wraps (pads ``<= n``). Gradient: constant = the
  output's gradient cropped to the input (``pad`` with the negated pads); the index modes add
  each border column onto its source (a scatter-add of the border contributions, dim by dim).
* :func:`interpolate` on ``(N, C, L)`` or ``(N, C, H, W)``: ``"nearest"`` (PyTorch's legacy rule
  ``src = min(floor(dst * scale), n - 1)``, scale ``1 / scale_factor`` when given else
  ``n / n_out``, in float32), ``"linear"`` (3-D) and ``"bilinear"`` (4-D) with
  ``align_corners`` False (``src = max(scale * (dst + 0.5) - 0.5, 0)``) or True
  (``src = dst * (n - 1) / (n_out - 1)``); index and tap formulas of
  :mod:`gradtape.ops.pool` (shared with ``upscale2d``, numba kernels forward and backward).
* :func:`adaptive_avg_pool2d` / :func:`adaptive_max_pool2d`: output bin ``i`` of a dim of size
  ``n`` split into ``m`` covers ``[floor(i * n / m), ceil((i + 1) * n / m))``. The average is
  separable: ``y = A_h x A_w^T`` with ``A`` the ``(m, n)`` bin-averaging matrices (two matrix
  products; gradient ``A_h^T g A_w``). The maximum saves each bin's arg-max (first on ties,
  a NaN wins) and scatters ``g`` there.
* :func:`pixel_shuffle` / :func:`pixel_unshuffle`: a reshape and a permutation of gradtape ops.
* :func:`grid_sample` (``torch.nn.functional.grid_sample``) reads ``input (N, C, H, W)`` (or
  ``(N, C, D, H, W)``) at the points of ``grid (N, H_out, W_out, 2)`` (``(..., 3)``), PyTorch's
  CPU kernel's formulas (``GridSamplerKernel.cpp``): a grid value ``c`` in ``[-1, 1]`` is the
  pixel coordinate ``(c + 1) * (n - 1) / 2`` (``align_corners``) or ``(c + 1) * n / 2 - 0.5``;
  ``"border"`` clips it to ``[0, n - 1]``, ``"reflection"`` mirrors it at the borders
  (``-0.5`` and ``n - 0.5``, or ``0`` and ``n - 1`` with ``align_corners``) then clips;
  ``"bilinear"`` weights the taps ``floor(x)``, ``floor(x) + 1`` by ``1 - t``, ``t``
  (``t = x - floor(x)``), ``"nearest"`` takes ``rint(x)`` (half to even), ``"bicubic"`` weights
  ``floor(x) - 1 .. floor(x) + 2`` with Keys' cubic (``A = -0.75``), each tap padded. Taps
  outside the input read 0. Gradients: ``input``'s scatter-adds each output gradient times its
  tap's weight into the tap (repeated taps accumulate); ``grid``'s sums the values times the
  weights' derivatives, times ``dx/dc`` (0 where ``"border"`` clipped; 0 for ``"nearest"``).
  Linear in ``input`` but not in ``grid``: its second rule is those gradients in gradtape ops
  (recorded gathers and scatter-adds, the weights polynomials of the grid).
* :func:`affine_grid` (``torch.nn.functional.affine_grid``): ``theta (N, 2, 3)`` applied to
  every output pixel's ``(x, y, 1)``, ``x`` and ``y`` evenly spaced in ``[-1, 1]`` (scaled by
  ``(n - 1) / n`` without ``align_corners``): a matrix product of gradtape ops.
"""

from __future__ import annotations

import itertools
import warnings
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import T, typed_as
from gradtape.devices import _arrays
from gradtape.devices.kernels import blas as _blas
from gradtape.devices.kernels import pool as _kp
from gradtape.devices.kernels import scatter as _ks
from gradtape.errors import ShapeError
from gradtape.ops._signatures import spatial as _sig
from gradtape.ops._util import (
    affine_size,
    choice,
    float_data,
    grid_shapes,
    pad_pairs,
    positive_int,
    record_unary,
    record_zero_gradient,
    refill,
    refill_all,
    replayable,
    spatial_rank,
    spatial_size,
    tensor_operand,
)
from gradtape.ops.pool import _linear_taps, _linear_vjp, _nearest_index
from gradtape.shapes import AnyShape, Rank3, Rank4, Rank5
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "affine_grid",
    "grid_sample",
    "interpolate",
    "pad",
    "pixel_shuffle",
    "pixel_unshuffle",
]

Array = np.ndarray[Any, Any]
N = TypeVar("N")
C = TypeVar("C")
H2 = TypeVar("H2")
W2 = TypeVar("W2")
D2 = TypeVar("D2")

PadMode = Literal["constant", "reflect", "replicate", "circular"]


# ----- pad ---------------------------------------------------------------------------------


def _source_index(op: str, mode: str, n: int, lo: int, hi: int, shape: tuple[int, ...], pad: Any) -> Array:
    """The source index of each output position along one dim of size ``n`` padded by ``lo``/``hi``."""
    if mode == "reflect" and (lo >= n or hi >= n):
        raise ValueError(
            f"{op}: reflect padding must be less than the dim it pads: pad ({lo}, {hi}) on a dim of "
            f"size {n} (input shape {shape}, pad {pad})"
        )
    if mode == "circular" and (lo > n or hi > n):
        raise ValueError(
            f"{op}: circular padding must be at most the dim it pads: pad ({lo}, {hi}) on a dim of "
            f"size {n} (input shape {shape}, pad {pad})"
        )
    if n == 0 and n + lo + hi > 0:
        raise ShapeError(f"{op}: cannot {mode}-pad a dim of size 0 (input shape {shape}, pad {pad})")
    s = np.arange(n + lo + hi, dtype=np.int64) - lo
    if mode == "circular":  # PyTorch crops first, then wraps within what is left
        base, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
        if m <= 0 and s.size:
            raise ShapeError(f"{op}: circular pad ({lo}, {hi}) crops a dim of size {n} away (input shape {shape})")
        return base + (np.arange(s.size, dtype=np.int64) - max(lo, 0)) % max(m, 1)
    if mode == "reflect":
        s = np.abs(s)
        s = np.where(s >= n, 2 * (n - 1) - s, s)
    else:
        s = np.clip(s, 0, n - 1)
    return s


def _index_adjoint(g: Array, maps: list[Array], pairs: list[tuple[int, int]], sizes: tuple[int, ...]) -> Array:
    """The transpose of ``x[..., ix_(*maps)]``: each trailing dim of ``g`` folded back onto the
    ``sizes`` of the input, the interior (source = position - before) copied and each border
    position added onto its source."""
    k = len(maps)
    for j, (src, (lo, _), n) in enumerate(zip(maps, pairs, sizes, strict=True)):
        ax = g.ndim - k + j
        gm = np.moveaxis(g, ax, 0)
        out = _arrays.zeros((n, *gm.shape[1:]), g.dtype, g)
        a, b = max(lo, 0), min(lo + n, src.size)  # the interior run of the output
        if b > a:
            out[a - lo : b - lo] = gm[a:b]
        for q in (*range(min(a, src.size)), *range(max(b, a), src.size)):
            out[src[q]] += gm[q]
        g = np.moveaxis(out, 0, ax)
    return g


def pad(input: Tensor[Any, T], pad: tuple[int, ...], mode: PadMode = "constant", value: float = 0.0) -> Tensor[Any, T]:
    """Pad (or crop) the trailing dims of ``input``, as ``torch.nn.functional.pad``.

    ``pad = (left, right, top, bottom, front, back)`` (any even length up to ``2 * ndim`` for
    ``"constant"``): the first pair pads the last dim, the next the one before, and so on; a dim
    of size ``n`` becomes ``n + before + after``.

    Modes:
        ``"constant"``: new positions hold ``value``; a negative pad crops that side.
        ``"reflect"``: mirror without repeating the edge (``[2, 1 | 0 1 2 3 | 2]``), pads ``< n``.
        ``"replicate"``: repeat the edge value. ``"circular"``: wrap around, pads ``<= n``.
        The index modes pad the last 1, 2 or 3 dims (``len(pad)`` 2, 4 or 6) of an input of
        rank ``len(pad)/2 + 1`` or ``len(pad)/2 + 2`` (PyTorch's rule, batch dim optional).

    Returns a tensor of ``input``'s dtype; gradient: constant mode crops ``g`` back to the
    input, the index modes add each output gradient onto its source position.

    Raises:
        TypeError: ``pad`` is not a tuple of ints, ``value`` not a number.
        ValueError: odd ``len(pad)``, more pairs than dims, an unknown ``mode``, ``value``
            with an index mode, reflect pad ``>= n`` (circular ``> n``).
        ShapeError: an index mode on an input of the wrong rank, a crop below size 0.
    """
    op = "pad"
    xd = float_data(op, input)
    shape = tuple(xd.shape)
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"{op}: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: value must be a number, got {value!r}")
    pairs = pad_pairs(op, pad, shape)
    k = len(pairs)
    lead = len(shape) - k
    out_trail = tuple(n + lo + hi for n, (lo, hi) in zip(shape[lead:], pairs, strict=True))
    if mode == "constant":
        out = _arrays.full(shape[:lead] + out_trail, value, xd.dtype, xd)
        spans = [(max(-lo, 0), n - max(-hi, 0), max(lo, 0)) for n, (lo, hi) in zip(shape[lead:], pairs, strict=True)]
        src: Any = (Ellipsis, *(slice(a, b) for a, b, _ in spans))
        dst: Any = (Ellipsis, *(slice(d, d + b - a) for a, b, d in spans))
        overlap = all(b > a for a, b, _ in spans)  # else the crop removed every input element
        if overlap:
            out[dst] = xd[src]
        neg = tuple(-int(v) for v in pad)

        def constant_rule(grads: Gradients, i: int, g: Array) -> None:
            gx = _arrays.zeros(shape, g.dtype, g)
            if overlap:
                gx[src] = g[dst]
            grads._accum(i, gx)

        def constant_diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
            return _pad(g, neg)  # the adjoint of a pad: the negated pads, zeros outside

        result = record_unary(input, out, constant_rule, diff=constant_diff)
        if _tp._recorder is not None and overlap:  # the padding keeps its value: the kernel copies x
            replayable(op, out, _copy_into, (dst, xd, src), (input,), result.tape, True)
        return result
    if value != 0.0:
        raise ValueError(f"{op}: value is for mode='constant' only, got value={value!r} with mode={mode!r}")
    if k not in (1, 2, 3) or len(shape) not in (k + 1, k + 2):
        raise ShapeError(
            f"{op}: mode {mode!r} pads the last 1, 2 or 3 dims of an input with one or two leading "
            f"dims (len(pad) 2: 2-D/3-D, 4: 3-D/4-D, 6: 4-D/5-D), got pad {tuple(pad)} and input "
            f"of shape {shape}"
        )
    maps = [
        _source_index(op, mode, n, lo, hi, shape, tuple(pad)) for n, (lo, hi) in zip(shape[lead:], pairs, strict=True)
    ]
    maps = [_arrays.into_memory_of(m, xd) for m in maps]  # the index maps go where x is
    where: Any = (Ellipsis, *np.ix_(*maps))
    y = xd[where]
    sizes = shape[lead:]

    def adjoint(gd: Array) -> Array:
        return _arrays.contiguous(_index_adjoint(gd, maps, pairs, sizes))

    def index_rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, adjoint(g))

    def index_diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _linear_vjp(lambda a: _pad(a, pad, mode), adjoint, g)

    y = _arrays.contiguous(y)
    result = record_unary(input, y, index_rule, diff=index_diff)
    if _tp._recorder is not None:
        _constants(*maps)
        replayable(op, y, _gather_into, (xd, where, xd.shape), (input,), result.tape, True)
    return result


_pad = pad  # for the rules above: inside pad, the name is its argument


# ----- replays (gradtape.capture): the forwards above again, into the recorded outputs --------


def _constants(*arrays: Array) -> None:
    """Arrays made from shapes alone (index maps, interpolation taps, averaging matrices):
    constants of a plan being recorded."""
    for a in arrays:
        if isinstance(a, np.ndarray):
            _tp._recorder.constant(a)


def _copy_into(out: Array, dst: Any, xd: Array, src: Any) -> None:
    """A constant pad again: ``x``'s kept part copied into the padded output (the padding
    keeps its value)."""
    out[dst] = xd[src]


def _gather_into(y: Array, xd: Array, where: Any, shape: tuple[int, ...]) -> None:
    """An index-mode pad or a nearest interpolation again: ``x`` (viewed as ``shape``) read at
    the recorded index maps, into ``y``."""
    np.copyto(y, xd.reshape(shape)[where])


def _bilinear_into(y: Array, xd: Array, shape: tuple[int, ...], th: Any, tw: Any) -> None:
    """A (bi)linear interpolation again into ``y``."""
    np.copyto(y, _kp.bilinear(xd.reshape(shape), th, tw))


def _averaged_into(y: Array, xd: Array, shape: tuple[int, ...], ah: Array, aw: Array) -> None:
    """An adaptive average pooling again: ``ah @ planes @ aw^T`` into ``y``."""
    np.copyto(y, _blas.matmul(ah, _blas.matmul(xd.reshape(shape), aw.T)))


# ----- interpolate -------------------------------------------------------------------------


def _nearest_1d(n_in: int, n_out: int, scale: float | None) -> Array:
    """``min(floor(dst * scale), n_in - 1)`` in float32, PyTorch's ``upsample_nearest1d``."""
    r = np.float32(1.0 / scale) if scale is not None else np.float32(n_in) / np.float32(n_out)
    src: Array = np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * r).astype(np.int64), n_in - 1)
    return src


@overload
def interpolate(
    input: Tensor[AnyShape, T],
    size: int | tuple[int, ...] | None = None,
    scale_factor: float | tuple[float, ...] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> Tensor[Any, T]: ...
@overload
def interpolate(
    input: Tensor[Rank4[N, C, Any, Any], T],
    size: tuple[H2, W2],
    scale_factor: None = None,
    mode: Literal["nearest", "bilinear"] = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> Tensor[Rank4[N, C, H2, W2], T]: ...
@overload
def interpolate(
    input: Tensor[Rank4[N, C, Any, Any], T],
    size: int | None = None,
    scale_factor: float | tuple[float, float] | None = None,
    mode: Literal["nearest", "bilinear"] = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> Tensor[Rank4[N, C, int, int], T]: ...
@overload
def interpolate(
    input: Tensor[Rank3[N, C, Any], T],
    size: int | tuple[int] | None = None,
    scale_factor: float | tuple[float] | None = None,
    mode: Literal["nearest", "linear"] = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> Tensor[Rank3[N, C, int], T]: ...
def interpolate(
    input: Any,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> Any:
    """Resample ``input (N, C, L)`` or ``(N, C, H, W)`` to ``size`` or by ``scale_factor``, as
    ``torch.nn.functional.interpolate``.

    Args:
        size: an int for every spatial dim or a tuple of one per dim.
        scale_factor: a number or a tuple; the output is ``floor(n * scale_factor)`` and the
            source coordinates use ``1 / scale_factor`` (``n / n_out`` with ``size``, or with
            ``recompute_scale_factor=True``).
        mode: ``"nearest"`` (3-D or 4-D), ``"linear"`` (3-D), ``"bilinear"`` (4-D).
        align_corners: linear modes only; ``None`` means ``False`` (PyTorch's default).

    Formulas in the module docstring (PyTorch's, in the input's dtype; nearest in float32).
    Gradient: the transposed resampling (each output gradient added to its nearest source, or
    spread over the linear taps with their weights).

    Raises:
        ShapeError: input not 3-D/4-D, or the mode needs the other rank; an empty output.
        ValueError: both or neither of ``size``/``scale_factor``; an unknown mode;
            ``align_corners`` with ``"nearest"``; sizes < 1, scales not positive.
        TypeError: ``size`` not ints, ``scale_factor`` not numbers, tuples of the wrong length.
    """
    op = "interpolate"
    xd = float_data(op, input)
    spatial_rank(op, xd, (3, 4), "(N, C, L) or (N, C, H, W)")
    modes = {"nearest": (3, 4), "linear": (3,), "bilinear": (4,)}
    if mode not in modes:
        raise ValueError(f"{op}: mode must be 'nearest', 'linear' or 'bilinear', got {mode!r}")
    if xd.ndim not in modes[mode]:
        want = " or ".join(f"{r}-D" for r in modes[mode])
        raise ShapeError(f"{op}: mode {mode!r} needs {want} input, got shape {xd.shape} ({xd.ndim}-D)")
    if mode == "nearest" and align_corners is not None:
        raise ValueError(f"{op}: align_corners can only be set with mode='linear' or 'bilinear', got mode='nearest'")
    n, c = xd.shape[:2]
    in_size = tuple(int(v) for v in xd.shape[2:])
    out_size, scales = spatial_size(op, in_size, size, scale_factor)
    if recompute_scale_factor:
        scales = None
    # both ranks as planes (P, H, W): a 3-D input is one row per plane (H = 1, identity taps)
    h, w = (1, in_size[0]) if xd.ndim == 3 else in_size
    oh, ow = (1, out_size[0]) if xd.ndim == 3 else out_size
    sh, sw = (None, None if scales is None else scales[0]) if xd.ndim == 3 else (scales or (None, None))
    planes = xd.reshape(n * c, h, w)
    out_shape = (n, c, *out_size)
    if mode == "nearest":
        ih = _nearest_index(h, oh, sh)
        # PyTorch's 1-D kernel has no shortcut for equal or doubled sizes: floor(dst * scale) always
        iw = _nearest_index(w, ow, sw) if xd.ndim == 4 else _nearest_1d(w, ow, sw)
        ih, iw = _arrays.into_memory_of(ih, xd), _arrays.into_memory_of(iw, xd)  # where x is
        at: Any = (slice(None), ih[:, None], iw[None, :])
        y = planes[at]
        again: tuple[Any, ...] = (_gather_into, (xd, at, (n * c, h, w)), (ih, iw))

        def nearest_adjoint(gd: Array) -> Array:
            return _kp.nearest_backward(gd.reshape(n * c, oh, ow), ih, iw, (h, w)).reshape(xd.shape)

        adjoint = nearest_adjoint
    else:
        corners = bool(align_corners)
        th = _linear_taps(xd.dtype, h, oh, sh, corners)
        tw = _linear_taps(xd.dtype, w, ow, sw, corners)
        y = _kp.bilinear(planes, th, tw)
        again = (_bilinear_into, (xd, (n * c, h, w), th, tw), (*th, *tw))

        def linear_adjoint(gd: Array) -> Array:
            return _kp.bilinear_backward(gd.reshape(n * c, oh, ow), th, tw, (h, w)).reshape(xd.shape)

        adjoint = linear_adjoint

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, adjoint(g))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _linear_vjp(
            lambda a: interpolate(a, size, scale_factor, mode, align_corners, recompute_scale_factor), adjoint, g
        )

    y = _arrays.contiguous(y)
    result = record_unary(input, y.reshape(out_shape), rule, diff=diff)
    if _tp._recorder is not None:
        kernel, args, consts = again
        _constants(*consts)
        replayable(op, y, kernel, args, (input,), result.tape, True)
    return result


# ----- adaptive pooling --------------------------------------------------------------------

OutSize = int | None | tuple[int | None, int | None]
"""An adaptive pool's ``output_size``: an int (square), or ``(oh, ow)``; ``None`` keeps that input size."""
_SomeNone = int | None | tuple[None, int] | tuple[int, None] | tuple[None, None]
"""The ``output_size`` spellings whose output size is computed at run time (typed ``int``)."""


def _adaptive_geometry(op: str, xd: Array, output_size: object) -> tuple[int, int, int, int, int]:
    """``(planes, H, W, oh, ow)`` after checking ``input`` and ``output_size`` (None: keep)."""
    spatial_rank(op, xd, (3, 4), "(N, C, H, W) or (C, H, W)")
    h, w = int(xd.shape[-2]), int(xd.shape[-1])
    if h == 0 or w == 0:
        raise ShapeError(f"{op}: the input's height and width must be non-zero, got shape {xd.shape}")
    sizes = (
        (output_size, output_size) if output_size is None or isinstance(output_size, (int, np.integer)) else output_size
    )
    if not isinstance(sizes, (tuple, list)) or len(sizes) != 2:
        raise TypeError(f"{op}: output_size must be an int, None or a pair of them, got {output_size!r}")
    oh, ow = (h if s is None else positive_int(op, "output_size", s) for s in sizes)
    return int(np.prod(xd.shape[:-2], dtype=np.int64)), h, w, oh, ow


def _bins(n: int, m: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive bins: ``[floor(i n / m), ceil((i + 1) n / m))`` for ``i < m``."""
    return [((i * n) // m, -((-(i + 1) * n) // m)) for i in range(m)]


def _averaging(n: int, m: int, dtype: np.dtype[Any]) -> Array:
    """The ``(m, n)`` matrix averaging each adaptive bin."""
    a = np.zeros((m, n), dtype)
    for i, (s, e) in enumerate(_bins(n, m)):
        a[i, s:e] = 1.0 / (e - s)
    return a


@overload
def adaptive_avg_pool2d(input: Tensor[AnyShape, T], output_size: OutSize) -> Tensor[Any, T]: ...
@overload
def adaptive_avg_pool2d(
    input: Tensor[Rank4[N, C, Any, Any], T], output_size: _SomeNone
) -> Tensor[Rank4[N, C, int, int], T]: ...
@overload
def adaptive_avg_pool2d(
    input: Tensor[Rank4[N, C, Any, Any], T], output_size: tuple[H2, W2]
) -> Tensor[Rank4[N, C, H2, W2], T]: ...
@overload
def adaptive_avg_pool2d(
    input: Tensor[Rank3[C, Any, Any], T], output_size: _SomeNone
) -> Tensor[Rank3[C, int, int], T]: ...
@overload
def adaptive_avg_pool2d(
    input: Tensor[Rank3[C, Any, Any], T], output_size: tuple[H2, W2]
) -> Tensor[Rank3[C, H2, W2], T]: ...
def adaptive_avg_pool2d(input: Any, output_size: Any) -> Any:
    """Average each of ``output_size`` adaptive bins of the last two dims of ``input``
    ``(N, C, H, W)`` or ``(C, H, W)``, as ``torch.nn.functional.adaptive_avg_pool2d``.

    ``output_size``: an int (square), or ``(oh, ow)`` where ``None`` keeps that input size.
    Bin ``i`` of ``m`` over ``n`` covers ``[floor(i n / m), ceil((i + 1) n / m))`` (bins overlap
    when ``n`` is not a multiple of ``m``). Computed as ``A_h x A_w^T`` with the bin-averaging
    matrices; gradient ``A_h^T g A_w``.

    Raises:
        ShapeError: input not 3-D/4-D or with zero height or width.
        TypeError / ValueError: ``output_size`` not ints/None, or below 1.
    """
    op = "adaptive_avg_pool2d"
    xd = float_data(op, input)
    p, h, w, oh, ow = _adaptive_geometry(op, xd, output_size)
    ah, aw = (_arrays.into_memory_of(_averaging(n, m, xd.dtype), xd) for n, m in ((h, oh), (w, ow)))
    lead = xd.shape[:-2]
    planes = xd.reshape(p, h, w)
    y = _blas.matmul(ah, _blas.matmul(planes, aw.T))

    def adjoint(gd: Array) -> Array:
        g3 = gd.reshape(p, oh, ow)
        return _blas.matmul(ah.T, _blas.matmul(g3, aw)).reshape(xd.shape)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, adjoint(g))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        return _linear_vjp(lambda a: adaptive_avg_pool2d(a, output_size), adjoint, g)

    y = _arrays.contiguous(y)
    result = record_unary(input, y.reshape(*lead, oh, ow), rule, diff=diff)
    if _tp._recorder is not None:
        _constants(ah, aw)
        replayable(op, y, _averaged_into, (xd, (p, h, w), ah, aw), (input,), result.tape, True)
    return result


class MaxIndices(NamedTuple):
    """``adaptive_max_pool2d(..., return_indices=True)``: the maxima and their int64 flat
    indices ``h * W + w`` in each plane (PyTorch returns the same pair)."""

    values: Any
    indices: Any


@overload
def adaptive_max_pool2d(
    input: Tensor[AnyShape, T], output_size: OutSize, return_indices: Literal[False] = False
) -> Tensor[Any, T]: ...
@overload
def adaptive_max_pool2d(
    input: Tensor[Rank4[N, C, Any, Any], T], output_size: _SomeNone, return_indices: Literal[False] = False
) -> Tensor[Rank4[N, C, int, int], T]: ...
@overload
def adaptive_max_pool2d(
    input: Tensor[Rank4[N, C, Any, Any], T], output_size: tuple[H2, W2], return_indices: Literal[False] = False
) -> Tensor[Rank4[N, C, H2, W2], T]: ...
@overload
def adaptive_max_pool2d(
    input: Tensor[Rank3[C, Any, Any], T], output_size: _SomeNone, return_indices: Literal[False] = False
) -> Tensor[Rank3[C, int, int], T]: ...
@overload
def adaptive_max_pool2d(
    input: Tensor[Rank3[C, Any, Any], T], output_size: tuple[H2, W2], return_indices: Literal[False] = False
) -> Tensor[Rank3[C, H2, W2], T]: ...
@overload
def adaptive_max_pool2d(input: Tensor[Any, T], output_size: OutSize, return_indices: Literal[True]) -> MaxIndices: ...
def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """Maximum of each of ``output_size`` adaptive bins (the bins of
    :func:`adaptive_avg_pool2d`) of ``input (N, C, H, W)`` or ``(C, H, W)``, as
    ``torch.nn.functional.adaptive_max_pool2d``.

    With ``return_indices=True`` returns ``(values, indices)``, ``indices`` an int64 tensor of
    flat positions ``h * W + w`` in each plane (no gradient). Ties go to the first element of
    the bin in row-major order; a NaN wins. Gradient: ``g`` added at each bin's arg-max.

    Raises:
        ShapeError, TypeError, ValueError: as :func:`adaptive_avg_pool2d`.
    """
    op = "adaptive_max_pool2d"
    xd = float_data(op, input)
    p, h, w, oh, ow = _adaptive_geometry(op, xd, output_size)
    lead = xd.shape[:-2]
    geometry = (p, h, w, oh, ow)
    y, idx, idx32 = _adaptive_max_forward(xd, geometry)

    def rule(grads: Gradients, i: int, g: Array) -> None:
        grads._accum(i, _kp.scatter_add(g.reshape(p, oh, ow), idx32, (h, w)).reshape(xd.shape))

    def diff(g: Any, rebuild: Any, oid: int, aid: int) -> Any:
        # g added at the chosen sources (this forward's selection: piecewise constant), as a
        # recorded scatter whose own backward gathers
        from gradtape.ops.indexing import scatter_into

        flat = (idx.reshape(p, -1) + (_arrays.arange(p, idx) * (h * w))[:, None]).reshape(-1)
        return scatter_into(g.reshape((-1,)), (p * h * w,), 0, flat).reshape(xd.shape)

    values = record_unary(input, y.reshape(*lead, oh, ow), rule, diff=diff)
    if _tp._recorder is not None:  # the rules read the arg-max positions: a replay refreshes them
        again = ((idx, idx32), _adaptive_max_forward, (xd, geometry))
        replayable(op, y, refill_all, again, (input,), values.tape, True, (idx, idx32))
    if return_indices:
        return MaxIndices(values, input._like(idx.reshape(*lead, oh, ow)))
    return values


def _adaptive_max_forward(xd: Array, geometry: tuple[int, int, int, int, int]) -> tuple[Array, Array, Array]:
    """:func:`adaptive_max_pool2d`'s ``(values, arg-max positions, the same as int32)`` over
    ``p`` planes of ``h x w`` in ``oh x ow`` bins (the first element of a bin wins a tie, a
    NaN wins)."""
    p, h, w, oh, ow = geometry
    planes = xd.reshape(p, h, w)
    y = _arrays.empty((p, oh, ow), xd.dtype, xd)
    idx = _arrays.empty((p, oh, ow), np.int64, xd)
    rows = _arrays.arange(p, xd)
    for i, (hs, he) in enumerate(_bins(h, oh)):
        for j, (ws, we) in enumerate(_bins(w, ow)):
            win = planes[:, hs:he, ws:we].reshape(p, (he - hs) * (we - ws))
            nan = np.isnan(win)
            k = np.where(nan.any(axis=1), nan.argmax(axis=1), win.argmax(axis=1)) if win.size else 0
            y[:, i, j] = win[rows, k] if win.size else 0
            idx[:, i, j] = (hs + k // (we - ws)) * w + ws + k % (we - ws)
    return y, idx, idx.astype(np.int32)


# ----- pixel shuffle -----------------------------------------------------------------------


def _shuffle_input(
    op: str, name: str, factor: Any, input: Tensor[Any, Any], layout: str
) -> tuple[int, tuple[int, ...]]:
    """``(r, shape)`` of a pixel (un)shuffle: the factor ``name`` checked a positive int, the
    input's shape checked to have at least 3 dims (``layout`` names the expected one).

    Raises:
        TypeError / ValueError: the factor is not an int, or below 1. ShapeError: fewer than 3 dims.
    """
    r = positive_int(op, name, factor)
    shape = tuple(input.data.shape)
    if len(shape) < 3:
        raise ShapeError(f"{op}: expects input of shape {layout}, got shape {shape}")
    return r, shape


def _rearrange(
    input: Tensor[Any, T], split: tuple[int, ...], perm: tuple[int, ...], out: tuple[int, ...]
) -> Tensor[Any, T]:
    """``input`` reshaped to ``split``, permuted by ``perm`` and reshaped to ``out`` (recorded ops)."""
    from gradtape.ops.shape import permute, reshape

    return reshape(permute(reshape(input, split), perm), out)


def pixel_shuffle(input: Tensor[Any, T], upscale_factor: int) -> Tensor[Any, T]:
    """Rearrange ``(*, C * r**2, H, W)`` into ``(*, C, H * r, W * r)`` (``r = upscale_factor``),
    as ``torch.nn.functional.pixel_shuffle``: ``y[..., c, h*r + i, w*r + j] =
    x[..., c*r*r + i*r + j, h, w]``. A reshape and a permutation (differentiable to any order).

    Raises:
        ShapeError: fewer than 3 dims, or channels not divisible by ``r**2`` (shape named).
        TypeError / ValueError: ``upscale_factor`` not an int, or below 1.
    """
    op = "pixel_shuffle"
    r, shape = _shuffle_input(op, "upscale_factor", upscale_factor, input, "(*, C * r**2, H, W)")
    *lead, cin, h, w = shape
    if cin % (r * r):
        raise ShapeError(
            f"{op}: the channels {cin} of input shape {shape} must be divisible by upscale_factor**2 = {r * r}"
        )
    c, k = cin // (r * r), len(lead)
    perm = (*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return _rearrange(input, (*lead, c, r, r, h, w), perm, (*lead, c, h * r, w * r))


def pixel_unshuffle(input: Tensor[Any, T], downscale_factor: int) -> Tensor[Any, T]:
    """The inverse of :func:`pixel_shuffle`: ``(*, C, H * r, W * r) -> (*, C * r**2, H, W)``,
    as ``torch.nn.functional.pixel_unshuffle``. A reshape and a permutation.

    Raises:
        ShapeError: fewer than 3 dims, or height or width not divisible by ``r`` (shape named).
        TypeError / ValueError: ``downscale_factor`` not an int, or below 1.
    """
    op = "pixel_unshuffle"
    r, shape = _shuffle_input(op, "downscale_factor", downscale_factor, input, "(*, C, H * r, W * r)")
    *lead, c, hr, wr = shape
    if hr % r or wr % r:
        raise ShapeError(f"{op}: the height {hr} and width {wr} of input shape {shape} must be divisible by {r}")
    h, w, k = hr // r, wr // r, len(lead)
    perm = (*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return _rearrange(input, (*lead, c, h, r, w, r), perm, (*lead, c * r * r, h, w))


# ----- 1-D adaptive pooling: the 2-D ops over (N, C, 1, L) ----------------------------------------


def _adaptive1d(op: str, input: Any, output_size: object, two_d: Any) -> Any:
    """``two_d`` (the 2-D adaptive pool) of ``input (N, C, L)`` or ``(C, L)`` seen as ``(.., 1, L)``
    with ``(1, output_size)`` bins; its errors name ``op``.

    Raises:
        ShapeError: ``input`` is not 2-D or 3-D (or as the 2-D op). TypeError, ValueError:
            ``output_size`` is not an int >= 1 (or a 1-tuple of one).
    """
    xd = input.data
    if xd.ndim not in (2, 3):
        raise ShapeError(f"{op}: expects a 2-D (C, L) or 3-D (N, C, L) input, got shape {xd.shape}")
    size = output_size[0] if isinstance(output_size, (tuple, list)) and len(output_size) == 1 else output_size
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"{op}: output_size must be an int, got {output_size!r}")
    try:
        y = two_d(input.reshape((*xd.shape[:-1], 1, xd.shape[-1])), (1, int(size)))
    except (ShapeError, TypeError, ValueError) as e:
        raise type(e)(f"{op}: {str(e).split(': ', 1)[-1]}") from None
    return y.reshape((*xd.shape[:-1], int(size)))


def adaptive_avg_pool1d(input: Tensor[Any, T], output_size: int) -> Tensor[Any, T]:
    """Average each of ``output_size`` adaptive bins of the last dim of ``input (N, C, L)`` or
    ``(C, L)``, as ``torch.nn.functional.adaptive_avg_pool1d`` (the bins of
    :func:`adaptive_avg_pool2d`: bin ``i`` covers ``[floor(i L / m), ceil((i + 1) L / m))``).
    Gradient: each bin's gradient spread evenly over its elements.

    Raises:
        ShapeError: ``input`` is not 2-D or 3-D, or has length 0.
        TypeError, ValueError: ``output_size`` is not an int >= 1.
    """
    return _adaptive1d("adaptive_avg_pool1d", input, output_size, adaptive_avg_pool2d)  # type: ignore[no-any-return]


def adaptive_max_pool1d(input: Tensor[Any, T], output_size: int) -> Tensor[Any, T]:
    """Maximum of each of ``output_size`` adaptive bins of the last dim of ``input (N, C, L)``
    or ``(C, L)``, as ``torch.nn.functional.adaptive_max_pool1d`` (the values; ties go to the
    first element, a NaN wins). Gradient: added at each bin's arg-max.

    Raises:
        ShapeError, TypeError, ValueError: as :func:`adaptive_avg_pool1d`.
    """
    return _adaptive1d("adaptive_max_pool1d", input, output_size, adaptive_max_pool2d)  # type: ignore[no-any-return]


# ----- grid_sample, affine_grid ------------------------------------------------------------

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
    "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for details."
)
_CUBIC_A = -0.75
"""Keys' cubic convolution constant of PyTorch's bicubic modes."""
_LONG = np.dtype(np.longdouble) if np.finfo(np.longdouble).nmant >= 63 else None
"""A float type wide enough to hold ``float64 * (n / 2)`` exactly (x87's extended precision)."""


def _corners(align_corners: bool | None) -> bool:
    """``align_corners`` as a bool: ``None`` means ``False``, with PyTorch's warning."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=4)
        return False
    return bool(align_corners)


class _Axis(NamedTuple):
    """The taps of one spatial dim of a grid sample: ``(N, P)`` arrays over the batch and the
    ``P`` sample points."""

    pos: list[Array]
    """Each tap's position along the dim (int64; 0 where the tap is outside)."""
    inside: list[Array]
    """Whether each tap lies in the input (bool)."""
    frac: Array | None
    """``t = x - floor(x)`` of the source coordinate ``x`` (``None`` for ``"nearest"``)."""
    mult: Any
    """``dx/dc``: the source coordinate's derivative in the grid value (an array or a float)."""
    w: list[Array]
    """The taps' weights (none for ``"nearest"``: one tap, weight 1)."""
    dw: list[Any]
    """The weights' derivatives in ``x`` (arrays, or numbers for ``"bilinear"``)."""


def _unnormalize(c: Array, n: int, corners: bool) -> tuple[Array, float]:
    """The pixel coordinate of grid value ``c`` along a dim of size ``n`` and its derivative
    ``s``: ``(c + 1) * s`` with ``s = (n - 1) / 2`` (``align_corners``), else
    ``(c + 1) * s - 0.5`` with ``s = n / 2`` (PyTorch's vectorised CPU kernel), the last
    product and difference rounded once, as the fused multiply-add PyTorch's compiled kernels
    use (a point on a half pixel then rounds as PyTorch's in ``"nearest"``)."""
    if corners:
        s = (n - 1) / 2
        return (c + 1.0) * s, s
    s = n / 2
    a = c + 1.0
    if a.dtype.itemsize == 4:
        wide: np.dtype[Any] = np.dtype(np.float64)  # the product is exact in float64
    elif _LONG is not None and not _arrays.on_gpu(a):
        wide = _LONG  # x87's 64-bit significand: exact for sizes up to 2048
    else:  # float64 on a GPU, or no wider type: two roundings
        return a * s - 0.5, s
    return (a.astype(wide) * s - 0.5).astype(a.dtype), s


def _clip(x: Array, n: int) -> tuple[Array, Array]:
    """``x`` clipped to ``[0, n - 1]`` (a NaN to 0, as PyTorch's kernel) and where its
    derivative is 1 (strictly inside; the borders count as outside, as PyTorch's)."""
    dt = x.dtype.type
    lo = x > 0
    y = np.where(lo, x, dt(0))
    hi = y < n - 1
    return np.where(hi, y, dt(n - 1)), lo & hi


def _reflect(x: Array, n: int, corners: bool) -> tuple[Array, Array]:
    """``x`` reflected at ``0`` and ``n - 1`` (``align_corners``) or at ``-0.5`` and
    ``n - 0.5`` until it lies between them, and its derivative (``+1`` or ``-1``): PyTorch's
    ``reflect_coordinates`` (an empty span, ``n = 1`` with ``align_corners``, gives 0)."""
    dt = x.dtype.type
    if corners and n <= 1:
        z = np.zeros_like(x)
        return z, z
    low, twice = (0.0, 2.0 * (n - 1)) if corners else (-0.5, 2.0 * n)
    d = x - low
    a = np.abs(d)
    extra = a - np.trunc(a / twice) * twice
    other = twice - extra
    more = extra > other
    return np.where(more, other, extra) + low, np.where(more ^ (d < 0), dt(-1), dt(1))


def _source(c: Array, n: int, padding: str, corners: bool) -> tuple[Array, Any]:
    """The source coordinate of grid value ``c`` after ``padding`` (``"border"`` clips,
    ``"reflection"`` reflects then clips) and its derivative in ``c``."""
    x, s = _unnormalize(c, n, corners)
    if padding == "zeros":
        return x, s
    dt = x.dtype.type
    sign: Any = dt(1)
    if padding == "reflection":
        x, sign = _reflect(x, n, corners)
    x, inside = _clip(x, n)
    return x, np.where(inside, sign * dt(s), dt(0))


def _pad_taps(q: Array, n: int, padding: str, corners: bool) -> Array:
    """Bicubic tap coordinates ``q`` moved into the input by ``padding`` (PyTorch's
    ``compute_coordinates``)."""
    if padding == "reflection":
        q = _reflect(q, n, corners)[0]
    return _clip(q, n)[0]


def _weights(mode: str, t: Any) -> list[Any]:
    """The taps' weights at fraction ``t`` (an array, or a tensor in the second rule):
    ``"bilinear"`` ``1 - t, t``; ``"bicubic"`` Keys' cubic convolution with ``A = -0.75`` at
    distances ``t + 1, t, 1 - t, 2 - t`` (PyTorch's ``get_cubic_coefficients``)."""
    if mode == "bilinear":
        return [1.0 - t, t]
    a = _CUBIC_A
    x0, x2, x3 = t + 1.0, 1.0 - t, 2.0 - t
    return [
        ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1.0,
        ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1.0,
        ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a,
    ]


def _slopes(mode: str, t: Any) -> list[Any]:
    """The derivatives of :func:`_weights` in ``t``."""
    if mode == "bilinear":
        return [-1.0, 1.0]
    a = _CUBIC_A
    x0, x2, x3 = t + 1.0, 1.0 - t, 2.0 - t
    return [
        (3 * a * x0 - 10 * a) * x0 + 8 * a,
        (3 * (a + 2) * t - 2 * (a + 3)) * t,
        -((3 * (a + 2) * x2 - 2 * (a + 3)) * x2),
        -((3 * a * x3 - 10 * a) * x3 + 8 * a),
    ]


def _axis(c: Array, n: int, mode: str, padding: str, corners: bool) -> _Axis:
    """The taps along a dim of size ``n`` of the sample points with grid values ``c``."""
    if mode == "bicubic":  # the point is only unnormalized; each of its taps is padded
        x, mult = _unnormalize(c, n, corners)
    else:
        x, mult = _source(c, n, padding, corners)
    dt = x.dtype.type
    frac: Array | None = None
    if mode == "nearest":
        taps = [np.rint(x)]  # half to even, as PyTorch's nearbyint
    else:
        base = np.floor(x)
        frac = x - base
        taps = [base + o for o in ((0.0, 1.0) if mode == "bilinear" else (-1.0, 0.0, 1.0, 2.0))]
        if mode == "bicubic" and padding != "zeros":
            taps = [_pad_taps(q, n, padding, corners) for q in taps]
    inside = [(q >= 0) & (q <= n - 1) for q in taps]  # a NaN is outside
    pos = [np.where(ok, q, dt(0)).astype(np.int64) for q, ok in zip(taps, inside, strict=True)]
    w, dw = ([], []) if frac is None else (_weights(mode, frac), _slopes(mode, frac))
    return _Axis(pos, inside, frac, mult, w, dw)


def _axes(gd: Array, sizes: tuple[int, ...], mode: str, padding: str, corners: bool) -> list[_Axis]:
    """The taps of every spatial dim (``D``, ``H``, ``W`` order: the grid's last entries
    reversed, ``x`` is the width's)."""
    k = len(sizes)
    flat = gd.reshape(gd.shape[0], -1, k)
    with np.errstate(invalid="ignore", over="ignore"):  # infinite or NaN points: PyTorch's values, no warning
        return [_axis(flat[:, :, k - 1 - d], sizes[d], mode, padding, corners) for d in range(k)]


def _corners_of(axes: list[_Axis], sizes: tuple[int, ...]) -> Any:
    """Each corner (one tap per dim): ``(taps, position in the spatial plane, inside)``,
    the last two ``(N, P)`` arrays."""
    strides = [int(np.prod(sizes[d + 1 :], dtype=np.int64)) for d in range(len(sizes))]
    for taps in itertools.product(*(range(len(a.pos)) for a in axes)):
        lin = axes[0].pos[taps[0]] * strides[0]
        inside = axes[0].inside[taps[0]]
        for d in range(1, len(axes)):
            lin = lin + axes[d].pos[taps[d]] * strides[d]
            inside = inside & axes[d].inside[taps[d]]
        yield taps, lin, inside


def _weight(axes: list[_Axis], taps: tuple[int, ...], skip: int = -1) -> Any:
    """The product of the corner's weights along every dim but ``skip`` (``None`` for
    ``"nearest"``)."""
    out = None
    for d, (a, i) in enumerate(zip(axes, taps, strict=True)):
        if d != skip and a.w:
            out = a.w[i] if out is None else out * a.w[i]
    return out


def _channels_last(a: Array, n: int, c: int, s: int) -> Array:
    """``a`` ``(N, C, *spatial)`` as ``(N * S, C)`` rows (one per pixel, contiguous)."""
    return _arrays.contiguous(a.reshape(n, c, s).transpose(0, 2, 1)).reshape(n * s, c)


def _grid_geometry(xd: Array, gd: Array) -> tuple[int, int, tuple[int, ...], tuple[int, ...], int, int]:
    """``(N, C, input's spatial sizes, output's spatial sizes, P, S)`` of a grid sample."""
    sizes = tuple(int(v) for v in xd.shape[2:])
    out_sp = tuple(int(v) for v in gd.shape[1:-1])
    p, s = int(np.prod(out_sp, dtype=np.int64)), int(np.prod(sizes, dtype=np.int64))
    return int(xd.shape[0]), int(xd.shape[1]), sizes, out_sp, p, s


def _grid_sample_forward(xd: Array, gd: Array, mode: str, padding: str, corners: bool) -> Array:
    """:func:`grid_sample`'s output array: each corner's values (0 outside the input) times
    its weight, summed (PyTorch's order of the corners)."""
    n, c, sizes, out_sp, p, s = _grid_geometry(xd, gd)
    axes = _axes(gd, sizes, mode, padding, corners)
    table = _channels_last(xd, n, c, s)
    rows = (_arrays.arange(n, gd, np.int64) * s)[:, None]
    zero = xd.dtype.type(0)
    out: Any = None
    for taps, lin, inside in _corners_of(axes, sizes):
        term = np.where(inside.reshape(-1, 1), table[(rows + lin).reshape(-1)], zero)
        w = _weight(axes, taps)
        if w is not None:
            term = term * w.reshape(-1, 1)
        if out is None:
            out = term
        else:
            out += term
    return _arrays.contiguous(out.reshape(n, p, c).transpose(0, 2, 1)).reshape(n, c, *out_sp)


def _grid_sample_backward(
    g: Array, xd: Array, gd: Array, mode: str, padding: str, corners: bool, want_input: bool, want_grid: bool
) -> tuple[Array | None, Array | None]:
    """:func:`grid_sample`'s first rule: ``(input's gradient, grid's gradient)`` from the
    output's gradient ``g`` (``None`` for the one not wanted). The input's is each output
    gradient times its corner's weight added into the corner (a scatter-add: corners shared
    by several points accumulate); the grid's is, per dim, the gradient times the values
    times the weights' derivative along that dim, times ``dx/dc``."""
    n, c, sizes, _, p, s = _grid_geometry(xd, gd)
    k = len(sizes)
    axes = _axes(gd, sizes, mode, padding, corners)
    gl = _channels_last(g, n, c, p)
    rows = (_arrays.arange(n, gd, np.int64) * s)[:, None]
    zero = xd.dtype.type(0)
    gx = _arrays.zeros((n * s, c), xd.dtype, xd) if want_input else None
    table = _channels_last(xd, n, c, s) if want_grid and mode != "nearest" else None
    gc: list[Any] = [None] * k
    for taps, lin, inside in _corners_of(axes, sizes):
        flat = (rows + lin).reshape(-1)
        ok = inside.reshape(-1, 1)
        if gx is not None:
            w = _weight(axes, taps)
            _ks.scatter_add(gx, 0, flat, np.where(ok, gl if w is None else gl * w.reshape(-1, 1), zero))
        if table is not None:
            gv = np.sum(np.where(ok, table[flat], zero) * gl, axis=1).reshape(n, p)
            for d, a in enumerate(axes):
                term = gv * (a.dw[taps[d]] * _weight(axes, taps, skip=d))
                gc[d] = term if gc[d] is None else gc[d] + term
    grid_grad = None
    if want_grid:
        if table is None:  # "nearest": piecewise constant in the grid, PyTorch's zeros
            grid_grad = _arrays.zeros(gd.shape, gd.dtype, gd)
        else:
            parts = [gc[k - 1 - j] * axes[k - 1 - j].mult for j in range(k)]
            grid_grad = _arrays.contiguous(np.stack(parts, axis=-1).reshape(gd.shape), gd.dtype)
    if gx is not None:
        gx = _arrays.contiguous(gx.reshape(n, s, c).transpose(0, 2, 1)).reshape(xd.shape)
    return gx, grid_grad


def _grid_sample_vjp(g: Any, x: Any, grid: Any, gd: Array, mode: str, padding: str, corners: bool) -> tuple[Any, Any]:
    """:func:`grid_sample`'s second rule: the gradients of :func:`_grid_sample_backward` as
    gradtape ops on the output's gradient ``g``, ``input`` (``x``) and ``grid``: the corners'
    reads and scatter-adds as recorded gathers, each weight a polynomial of its fraction
    ``t = frac + (grid - grid_now) * dx/dc`` (the tap positions are constants of this grid),
    so it differentiates to any order."""
    from gradtape.ops.compare import where
    from gradtape.ops.reduce import sum as total
    from gradtape.ops.select import _put_lin, _take_lin
    from gradtape.ops.shape import stack

    n, c, sizes, _, p, s = _grid_geometry(x.data, gd)
    k = len(sizes)
    axes = _axes(gd, sizes, mode, padding, corners)
    g3 = g.reshape((n, c, p))
    planes = (_arrays.arange(n * c, gd, np.int64) * s).reshape(n, c, 1)
    coords = grid.reshape((n, p, k))
    now = gd.reshape(n, p, k)
    weights: list[list[Any]] = []
    slopes: list[list[Any]] = []
    mults: list[Any] = []
    for d, a in enumerate(axes):
        m = a.mult if isinstance(a.mult, float) else grid._like(a.mult)
        mults.append(m)
        if a.frac is None:
            weights.append([])
            slopes.append([])
            continue
        j = k - 1 - d
        t = (coords[:, :, j] - grid._like(_arrays.contiguous(now[:, :, j]))) * m + grid._like(a.frac)
        weights.append(_weights(mode, t))
        slopes.append(_slopes(mode, t))
    gx: Any = None
    gc: list[Any] = [None] * k
    for taps, lin, inside in _corners_of(axes, sizes):
        full = planes + lin[:, None, :]
        ok = grid._like(inside[:, None, :])
        w: Any = None
        for d in range(k):
            if weights[d]:
                w = weights[d][taps[d]] if w is None else w * weights[d][taps[d]]
        spread = g3 if w is None else g3 * w.reshape((n, 1, p))
        term = _put_lin(where(ok, spread, 0.0), full, tuple(int(v) for v in x.shape))
        gx = term if gx is None else gx + term
        if mode == "nearest":
            continue
        gv = total(where(ok, _take_lin(x, full), 0.0) * g3, axis=1)
        for d in range(k):
            deriv: Any = slopes[d][taps[d]]
            for e in range(k):
                if e != d:
                    deriv = deriv * weights[e][taps[e]]
            part = gv * deriv
            gc[d] = part if gc[d] is None else gc[d] + part
    if mode == "nearest":  # piecewise constant in the grid: a zero gradient that depends on it, as PyTorch's
        return gx, record_zero_gradient(grid._from_op(_arrays.zeros(gd.shape, gd.dtype, gd), op_tape(grid)), grid)
    return gx, stack([gc[k - 1 - j] * mults[k - 1 - j] for j in range(k)], axis=-1).reshape(tuple(gd.shape))


@typed_as(_sig.grid_sample)
def grid_sample(
    input: Any,
    grid: Any,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Any:
    """Sample ``input`` at the points of ``grid``, as ``torch.nn.functional.grid_sample``.

    Shapes: ``input (N, C, H_in, W_in)`` and ``grid (N, H_out, W_out, 2)`` give
    ``(N, C, H_out, W_out)``; ``input (N, C, D_in, H_in, W_in)`` and
    ``grid (N, D_out, H_out, W_out, 3)`` give ``(N, C, D_out, H_out, W_out)``. ``grid[n, h, w]``
    is ``(x, y)`` (``(x, y, z)``): ``x`` indexes the width, ``y`` the height, ``z`` the depth,
    ``-1`` and ``1`` the input's edges (``align_corners=False``: the outer edges of the corner
    pixels) or the centres of its corner pixels (``True``). float32 or float64, ``grid`` of
    ``input``'s dtype; the output has it too.

    Formula (PyTorch's CPU kernel): a grid value ``c`` on a dim of size ``n`` is the pixel
    coordinate ``x = (c + 1) * (n - 1) / 2`` (``align_corners``) or ``(c + 1) * n / 2 - 0.5``.
    ``padding_mode``: ``"zeros"`` reads 0 outside the input; ``"border"`` clips ``x`` to
    ``[0, n - 1]``; ``"reflection"`` mirrors ``x`` at the borders (``-0.5`` and ``n - 0.5``,
    with ``align_corners`` ``0`` and ``n - 1``) until it is between them, then clips. ``mode``:
    ``"bilinear"`` (trilinear on 5-D) weights the taps ``floor(x)``, ``floor(x) + 1`` of each dim
    by ``1 - t`` and ``t`` (``t = x - floor(x)``); ``"nearest"`` reads ``rint(x)`` (half to
    even); ``"bicubic"`` (4-D only) weights ``floor(x) - 1 .. floor(x) + 2`` with Keys' cubic
    convolution, ``A = -0.75`` (each tap padded, the point itself only unnormalized). The
    output is the sum over the corners of value times the product of the dims' weights.

    Gradients: ``input``'s is ``g`` times each corner's weight, scatter-added into the corner
    (points sharing a corner accumulate); ``grid``'s is the sum over the corners and channels of
    ``g`` times the value times the weights' derivative along that dim, times ``dx/dc``
    (``(n - 1) / 2`` or ``n / 2``; 0 where ``"border"`` or ``"reflection"`` clipped, at the
    borders included; the reflection's sign), 0 for ``"nearest"``. A second rule in gradtape
    ops, so gradients of gradients too.

    Args:
        align_corners: ``None`` means ``False`` (PyTorch's default), with PyTorch's warning.

    Raises:
        TypeError: ``input`` or ``grid`` is not a tensor. DTypeError: a non-float input, or
            ``grid``'s dtype is not ``input``'s. ShapeError: ``input`` not 4-D or 5-D, ``grid``
            of another rank, other batch size, last dim not 2 (3 for 5-D), an empty spatial
            dim of ``input`` (the message names both shapes). ValueError: an unknown ``mode``
            or ``padding_mode``; ``"bicubic"`` on a 5-D input.
    """
    op = "grid_sample"
    xd = float_data(op, input)
    grid = tensor_operand(op, input, grid)
    gd = grid.data
    choice(op, "mode", mode, ("bilinear", "nearest", "bicubic"))
    choice(op, "padding_mode", padding_mode, ("zeros", "border", "reflection"))
    k = grid_shapes(op, xd, gd)
    if mode == "bicubic" and k == 3:
        raise ValueError(
            f"{op}: mode 'bicubic' samples 4-D inputs only, got input of shape {tuple(xd.shape)} and grid of "
            f"shape {tuple(gd.shape)}"
        )
    settings = (mode, padding_mode, _corners(align_corners))
    tape = op_tape(input, grid)
    out = input._from_op(_grid_sample_forward(xd, gd, *settings), tape)
    if _tp._recorder is not None:  # the rules read only the inputs' arrays
        replayable(op, out.data, refill, (_grid_sample_forward, xd, gd, *settings), (input, grid), tape, True)
    if tape is not NONE_TAPE:
        xid, gid, x_leaf, g_leaf = input.id, grid.id, input._leaf, grid._leaf

        def grid_sample_backward(grads: Gradients, g: Array) -> None:
            gx, gg = _grid_sample_backward(g, xd, gd, *settings, grads.wants(xid, x_leaf), grads.wants(gid, g_leaf))
            if gx is not None:
                grads._accum(xid, gx)
            if gg is not None:
                grads._accum(gid, gg)

        def grid_sample_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            gx, gg = _grid_sample_vjp(g, rebuild(xid, xd), rebuild(gid, gd), gd, *settings)
            return [(xid, gx), (gid, gg)]

        record(tape, out, grid_sample_backward, grid_sample_diff)
    return out


def _linspace(m: int, corners: bool, dtype: np.dtype[Any]) -> Array:
    """PyTorch's ``linspace_from_neg_one``: ``m`` points evenly spaced over ``[-1, 1]``
    (``torch.linspace``'s two halves, in ``dtype``), times ``(m - 1) / m`` without
    ``align_corners``; ``[0]`` for ``m = 1``."""
    if m <= 1:
        return np.zeros(1, dtype)
    dt = dtype.type
    step = dt(2) / dt(m - 1)
    i = np.arange(m)
    v = np.where(i < m // 2, dt(-1) + step * i.astype(dtype), dt(1) - step * (m - 1 - i).astype(dtype))
    if not corners:
        v = v * dt(m - 1) / dt(m)
    return np.asarray(v, dtype)


def _base_grid(spatial: tuple[int, ...], corners: bool, dtype: np.dtype[Any]) -> Array:
    """``(P, k + 1)``: each output pixel's ``(x, y, [z,] 1)``, the width's coordinate first."""
    k = len(spatial)
    mesh = np.meshgrid(*(_linspace(m, corners, dtype) for m in spatial), indexing="ij")
    cols = [mesh[k - 1 - j] for j in range(k)] + [np.ones(mesh[0].shape, dtype)]
    return np.ascontiguousarray(np.stack(cols, axis=-1).reshape(-1, k + 1))


@overload
def affine_grid(
    theta: Tensor[Rank3[N, Any, Any], T], size: tuple[int, int, H2, W2], align_corners: bool | None = None
) -> Tensor[Rank4[N, H2, W2, Literal[2]], T]: ...
@overload
def affine_grid(
    theta: Tensor[Rank3[N, Any, Any], T], size: tuple[int, int, D2, H2, W2], align_corners: bool | None = None
) -> Tensor[Rank5[N, D2, H2, W2, Literal[3]], T]: ...
@overload
def affine_grid(
    theta: Tensor[Any, T], size: tuple[int, ...] | list[int], align_corners: bool | None = None
) -> Tensor[Any, T]: ...
def affine_grid(theta: Any, size: Any, align_corners: bool | None = None) -> Any:
    """The sampling grid of the affine maps ``theta``, as ``torch.nn.functional.affine_grid``
    (for :func:`grid_sample`, as in a spatial transformer network).

    Shapes: ``theta (N, 2, 3)`` and ``size = (N, C, H, W)`` give ``(N, H, W, 2)``;
    ``theta (N, 3, 4)`` and ``size = (N, C, D, H, W)`` give ``(N, D, H, W, 3)``. float32 or
    float64; the output has ``theta``'s dtype.

    Formula: ``grid[n, h, w] = theta[n] @ (x_w, y_h, 1)`` where ``x_w`` (``y_h``) are ``W``
    (``H``) points evenly spaced over ``[-1, 1]`` (PyTorch's ``linspace``), times
    ``(W - 1) / W`` without ``align_corners``; a size-1 dim has the point 0. Computed as one
    matrix product of gradtape ops, so its gradient ``dtheta[n] = sum_hw g[n, h, w] (x_w, y_h,
    1)^T`` and gradients of gradients are the product's.

    Args:
        align_corners: ``None`` means ``False`` (PyTorch's default), with PyTorch's warning; use
            the same value in :func:`grid_sample`.

    Raises:
        TypeError: ``theta`` is not a tensor; ``size`` not a tuple or list of ints.
        DTypeError: a non-float ``theta``. ValueError: ``size`` of neither 4 nor 5 entries, or an
            entry below 1. ShapeError: ``theta``'s shape is not ``(N, 2, 3)`` (``(N, 3, 4)``) with
            ``size``'s ``N`` (both named).
    """
    from gradtape.ops.linalg import matmul
    from gradtape.ops.shape import transpose

    op = "affine_grid"
    td = float_data(op, theta, "theta")
    dims = affine_size(op, td, size)
    corners = _corners(align_corners)
    if corners and min(dims[2:]) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
            "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.",
            UserWarning,
            stacklevel=3,
        )
    k = len(dims) - 2
    base = _arrays.into_memory_of(_base_grid(dims[2:], corners, td.dtype), td)
    if _tp._recorder is not None:
        _constants(base)
    grid = matmul(theta._like(base), transpose(theta, 1, 2))
    return grid.reshape((dims[0], *dims[2:], k))
