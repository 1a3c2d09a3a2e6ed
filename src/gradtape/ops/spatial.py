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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import T
from gradtape.devices import _arrays
from gradtape.devices.kernels import blas as _blas
from gradtape.devices.kernels import pool as _kp
from gradtape.errors import ShapeError
from gradtape.ops._util import (
    float_data,
    pad_pairs,
    positive_int,
    record_unary,
    refill_all,
    replayable,
    spatial_rank,
    spatial_size,
)
from gradtape.ops.pool import _linear_taps, _linear_vjp, _nearest_index
from gradtape.shapes import AnyShape, Rank3, Rank4

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
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
