"""Spatial layers without parameters, PyTorch's names and arguments, on :mod:`gradtape.ops.spatial`
and :mod:`gradtape.nn.functional`: padding (:class:`ZeroPad1d` / ``2d`` / ``3d``,
:class:`ConstantPad1d` / ``2d`` / ``3d``, :class:`ReflectionPad1d` / ``2d`` / ``3d``,
:class:`ReplicationPad1d` / ``2d`` / ``3d``, :class:`CircularPad1d` / ``2d`` / ``3d``), resampling
(:class:`Upsample`, :class:`UpsamplingNearest2d`, :class:`UpsamplingBilinear2d`), adaptive pooling
(:class:`AdaptiveAvgPool2d`, :class:`AdaptiveMaxPool2d`, :class:`AdaptiveAvgPool3d`,
:class:`AdaptiveMaxPool3d`), power-average pooling
(:class:`LPPool1d`, :class:`LPPool2d`), :class:`PixelShuffle` / :class:`PixelUnshuffle`,
:class:`ChannelShuffle`, and :class:`Unfold` / :class:`Fold` (im2col / col2im)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast, overload

from gradtape.nn._typing import C, N, S, T
from gradtape.nn.functional import (
    _channel_shuffle,
    _fold,
    _geometry,
    _int,
    _lp_pool1d,
    _lp_pool2d,
    _pair,
    _real,
    _resample,
    _unfold,
)
from gradtape.nn.module import Module
from gradtape.ops._util import is_int
from gradtape.ops.pool import OutSize3, adaptive_avg_pool3d, adaptive_max_pool3d
from gradtape.ops.spatial import (  # unwrapped: Module.__call__ checked x
    OutSize,
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    pad,
    pixel_shuffle,
    pixel_unshuffle,
)
from gradtape.shapes import AnyShape, Rank3, Rank4, Rank5
from gradtape.tensor import Tensor

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "ChannelShuffle",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "Fold",
    "LPPool1d",
    "LPPool2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "Unfold",
    "Upsample",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]


_SIDES = {1: "(left, right)", 2: "(left, right, top, bottom)", 3: "(left, right, top, bottom, front, back)"}


def _padding(layer: str, padding: object, dims: int) -> tuple[int, ...]:
    """An int for every side of the last ``dims`` dims, or one int per side (PyTorch's order:
    the last dim's two sides first).

    Raises:
        TypeError: neither an int nor ``2 * dims`` ints.
    """
    if is_int(padding):
        return (int(padding),) * (2 * dims)  # type: ignore[call-overload]
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * dims and all(is_int(v) for v in padding):
        return tuple(int(v) for v in padding)
    raise TypeError(f"{layer}: padding must be an int or a tuple {_SIDES[dims]} of ints, got {padding!r}")


def _padding4(layer: str, padding: object) -> tuple[int, int, int, int]:
    """An int for all four sides, or ``(left, right, top, bottom)``."""
    p = _padding(layer, padding, 2)
    return (p[0], p[1], p[2], p[3])


class _Pad2d(Module):
    """Pads the last two dims of ``(N, C, H, W)`` or ``(C, H, W)`` with :func:`gradtape.ops.pad`."""

    _mode = "constant"

    def __init__(self, padding: int | tuple[int, int, int, int], value: float = 0.0) -> None:
        self.padding = _padding4(type(self).__name__, padding)
        self.value = float(value)

    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[N, C, Any, Any], T]) -> Tensor[Rank4[N, C, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[C, Any, Any], T]) -> Tensor[Rank3[C, int, int], T]: ...
    def forward(self, x: Any) -> Any:
        """The padded input: height ``H + top + bottom``, width ``W + left + right``."""
        if self._mode == "constant":
            return pad(x, self.padding, "constant", self.value)
        return pad(x, self.padding, self._mode)  # type: ignore[arg-type]

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if type(self) is ConstantPad2d else "")


class ZeroPad2d(_Pad2d):
    """Zero padding of the last two dims (PyTorch's ``nn.ZeroPad2d(padding)``; ``padding`` an
    int or ``(left, right, top, bottom)``, negative crops). No parameters.

    Raises:
        TypeError: ``padding`` is not an int or four ints (on construction);
        on forward the errors of :func:`gradtape.ops.pad`.
    """

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding, 0.0)


class ConstantPad2d(_Pad2d):
    """Padding with ``value`` (PyTorch's ``nn.ConstantPad2d(padding, value)``). No parameters.

    Raises:
        TypeError: as :class:`ZeroPad2d`.
    """


class ReflectionPad2d(_Pad2d):
    """Reflection padding (PyTorch's ``nn.ReflectionPad2d(padding)``): the edge is not repeated;
    each pad must be smaller than the dim it pads. No parameters.

    Raises:
        TypeError: as :class:`ZeroPad2d`; on forward ValueError/ShapeError from
        :func:`gradtape.ops.pad` (pad too large, input not 3-D/4-D).
    """

    _mode = "reflect"

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding)


class ReplicationPad2d(_Pad2d):
    """Edge-replicating padding (PyTorch's ``nn.ReplicationPad2d(padding)``). No parameters.

    Raises:
        TypeError: as :class:`ZeroPad2d`; on forward ShapeError for an input not 3-D/4-D.
    """

    _mode = "replicate"

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding)


class _PadNd(Module):
    """Pads the last ``_dims`` dims (1, 2 or 3) with :func:`gradtape.ops.pad` in the class's mode:
    ``padding`` an int for every side or ``2 * _dims`` ints, the last dim's ``(left, right)``
    first. The index modes take an input of ``_dims + 1`` or ``_dims + 2`` dims (PyTorch's rule);
    constant padding any rank of at least ``_dims``. (The 2-D layers PyTorch had before
    ``CircularPad2d`` keep their typed :class:`_Pad2d`.)"""

    _mode = "constant"
    _dims = 1
    _constant = False  # the repr shows the value (PyTorch's ConstantPadNd)

    def __init__(self, padding: int | tuple[int, ...], value: float = 0.0) -> None:
        self.padding = _padding(type(self).__name__, padding, self._dims)
        self.value = _real(type(self).__name__, "value", value)

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The padded input (negative constant pads crop)."""
        if self._mode == "constant":
            return pad(x, self.padding, "constant", self.value)
        return pad(x, self.padding, self._mode)  # type: ignore[arg-type]

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self._constant else "")


class ZeroPad1d(_PadNd):
    """Zero padding of the last dim (PyTorch's ``nn.ZeroPad1d(padding)``; ``padding`` an int or
    ``(left, right)``, negative crops) of ``(C, W)`` or ``(N, C, W)``. No parameters.

    Raises:
        TypeError: ``padding`` is not an int or two ints; on forward the errors of :func:`gradtape.ops.pad`.
    """

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding, 0.0)


class ConstantPad1d(_PadNd):
    """Padding of the last dim with ``value`` (PyTorch's ``nn.ConstantPad1d(padding, value)``;
    ``padding`` an int or ``(left, right)``). No parameters.

    Raises:
        TypeError: ``padding`` is not an int or two ints, ``value`` not a number.
    """

    _constant = True

    def __init__(self, padding: int | tuple[int, int], value: float) -> None:
        super().__init__(padding, value)


class ReflectionPad1d(_PadNd):
    """Reflection padding of the last dim (PyTorch's ``nn.ReflectionPad1d(padding)``) of ``(C, W)``
    or ``(N, C, W)``: the edge is not repeated; each pad must be smaller than ``W``. No parameters.

    Raises:
        TypeError: as :class:`ZeroPad1d`; on forward ValueError/ShapeError from :func:`gradtape.ops.pad`.
    """

    _mode = "reflect"

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding)


class ReplicationPad1d(_PadNd):
    """Edge-replicating padding of the last dim (PyTorch's ``nn.ReplicationPad1d(padding)``) of
    ``(C, W)`` or ``(N, C, W)``. No parameters.

    Raises:
        TypeError: as :class:`ZeroPad1d`; on forward ShapeError for an input not 2-D/3-D.
    """

    _mode = "replicate"

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding)


class CircularPad1d(_PadNd):
    """Circular (wrap-around) padding of the last dim (PyTorch's ``nn.CircularPad1d(padding)``)
    of ``(C, W)`` or ``(N, C, W)``; each pad at most ``W``. No parameters.

    Raises:
        TypeError: as :class:`ZeroPad1d`; on forward ValueError/ShapeError from :func:`gradtape.ops.pad`.
    """

    _mode = "circular"

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding)


class CircularPad2d(_PadNd):
    """Circular (wrap-around) padding of the last two dims (PyTorch's ``nn.CircularPad2d(padding)``;
    ``padding`` an int or ``(left, right, top, bottom)``) of ``(C, H, W)`` or ``(N, C, H, W)``; each
    pad at most the dim it pads. No parameters.

    Raises:
        TypeError: ``padding`` is not an int or four ints; on forward ValueError/ShapeError from
        :func:`gradtape.ops.pad`.
    """

    _mode = "circular"
    _dims = 2

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding)


class ZeroPad3d(_PadNd):
    """Zero padding of the last three dims (PyTorch's ``nn.ZeroPad3d(padding)``; ``padding`` an int
    or ``(left, right, top, bottom, front, back)``, negative crops). No parameters.

    Raises:
        TypeError: ``padding`` is not an int or six ints; on forward the errors of :func:`gradtape.ops.pad`.
    """

    _dims = 3

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding, 0.0)


class ConstantPad3d(_PadNd):
    """Padding of the last three dims with ``value`` (PyTorch's ``nn.ConstantPad3d(padding, value)``).
    No parameters.

    Raises:
        TypeError: ``padding`` is not an int or six ints, ``value`` not a number.
    """

    _dims = 3
    _constant = True

    def __init__(self, padding: int | tuple[int, int, int, int, int, int], value: float) -> None:
        super().__init__(padding, value)


class ReflectionPad3d(_PadNd):
    """Reflection padding of the last three dims (PyTorch's ``nn.ReflectionPad3d(padding)``) of
    ``(C, D, H, W)`` or ``(N, C, D, H, W)``; each pad smaller than the dim it pads. No parameters.

    Raises:
        TypeError: as :class:`ZeroPad3d`; on forward ValueError/ShapeError from :func:`gradtape.ops.pad`.
    """

    _mode = "reflect"
    _dims = 3

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding)


class ReplicationPad3d(_PadNd):
    """Edge-replicating padding of the last three dims (PyTorch's ``nn.ReplicationPad3d(padding)``)
    of ``(C, D, H, W)`` or ``(N, C, D, H, W)``. No parameters.

    Raises:
        TypeError: as :class:`ZeroPad3d`; on forward ShapeError for an input not 4-D/5-D.
    """

    _mode = "replicate"
    _dims = 3

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding)


class CircularPad3d(_PadNd):
    """Circular padding of the last three dims (PyTorch's ``nn.CircularPad3d(padding)``) of
    ``(C, D, H, W)`` or ``(N, C, D, H, W)``; each pad at most the dim it pads. No parameters.

    Raises:
        TypeError: as :class:`ZeroPad3d`; on forward ValueError/ShapeError from :func:`gradtape.ops.pad`.
    """

    _mode = "circular"
    _dims = 3

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding)


class Upsample(Module):
    """Resampling (PyTorch's ``nn.Upsample(size, scale_factor, mode, align_corners,
    recompute_scale_factor)``): :func:`gradtape.nn.functional.interpolate` with the layer's
    arguments, every PyTorch mode: ``"nearest"`` and ``"nearest-exact"`` on ``(N, C, L)``,
    ``(N, C, H, W)`` or ``(N, C, D, H, W)``, ``"linear"`` (3-D), ``"bilinear"`` and ``"bicubic"``
    (4-D), ``"trilinear"`` (5-D), ``"area"`` (3-D, 4-D). No parameters.

    Raises (on forward): the errors of :func:`gradtape.nn.functional.interpolate`, naming ``Upsample``.
    """

    def __init__(
        self,
        size: int | tuple[int, ...] | None = None,
        scale_factor: float | tuple[float, ...] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[N, C, Any, Any], T]) -> Tensor[Rank4[N, C, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[N, C, Any], T]) -> Tensor[Rank3[N, C, int], T]: ...
    def forward(self, x: Any) -> Any:
        """The resampled input."""
        name = type(self).__name__
        return _resample(
            name, x, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor
        )

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest upsampling of ``(N, C, H, W)`` (PyTorch's ``nn.UpsamplingNearest2d(size,
    scale_factor)``). No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.interpolate`.
    """

    def __init__(self, size: int | tuple[int, int] | None = None, scale_factor: float | None = None) -> None:
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of ``(N, C, H, W)`` with ``align_corners=True`` (PyTorch's
    ``nn.UpsamplingBilinear2d(size, scale_factor)``). No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.interpolate`.
    """

    def __init__(self, size: int | tuple[int, int] | None = None, scale_factor: float | None = None) -> None:
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


class AdaptiveAvgPool2d(Module):
    """Adaptive average pooling to ``output_size`` (PyTorch's ``nn.AdaptiveAvgPool2d``; an int,
    or ``(oh, ow)`` with ``None`` keeping that input size) of ``(N, C, H, W)`` or ``(C, H, W)``.
    No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.adaptive_avg_pool2d`.
    """

    def __init__(self, output_size: OutSize) -> None:
        self.output_size = output_size

    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[N, C, Any, Any], T]) -> Tensor[Rank4[N, C, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[C, Any, Any], T]) -> Tensor[Rank3[C, int, int], T]: ...
    def forward(self, x: Any) -> Any:
        """The bin averages, ``(..., oh, ow)``."""
        return adaptive_avg_pool2d(x, self.output_size)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """Adaptive max pooling to ``output_size`` (PyTorch's ``nn.AdaptiveMaxPool2d``); with
    ``return_indices=True`` the forward returns ``(values, indices)`` as
    :func:`gradtape.ops.adaptive_max_pool2d`. No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.adaptive_max_pool2d`.
    """

    def __init__(self, output_size: OutSize, return_indices: bool = False) -> None:
        self.output_size, self.return_indices = output_size, bool(return_indices)

    def forward(self, x: Tensor[Any, T]) -> Any:
        """The bin maxima ``(..., oh, ow)`` (and their indices with ``return_indices``)."""
        if self.return_indices:
            return adaptive_max_pool2d(x, self.output_size, True)
        return adaptive_max_pool2d(x, self.output_size)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool3d(Module):
    """Adaptive average pooling to ``output_size`` (PyTorch's ``nn.AdaptiveAvgPool3d``; an int,
    or ``(od, oh, ow)`` with ``None`` keeping that input size) of ``(N, C, D, H, W)`` or unbatched
    ``(C, D, H, W)`` (float32 or float64): bin ``i`` of ``m`` over ``n`` covers
    ``[floor(i n / m), ceil((i + 1) n / m))`` along each dim, averaged. No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.adaptive_avg_pool3d` (ShapeError for
    another rank or an empty spatial dim, TypeError / ValueError for a bad ``output_size``).
    """

    def __init__(self, output_size: OutSize3) -> None:
        self.output_size = output_size

    @overload
    def forward(self, x: Tensor[Rank5[N, C, Any, Any, Any], T]) -> Tensor[Rank5[N, C, int, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[C, Any, Any, Any], T]) -> Tensor[Rank4[C, int, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """The bin averages, ``(..., od, oh, ow)``."""
        return adaptive_avg_pool3d(x, self.output_size)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool3d(Module):
    """Adaptive max pooling to ``output_size`` (PyTorch's ``nn.AdaptiveMaxPool3d``, the bins of
    :class:`AdaptiveAvgPool3d`) of ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``; with
    ``return_indices=True`` the forward returns ``(values, indices)`` (int64 flat indices
    ``d * H * W + h * W + w`` in each volume) as :func:`gradtape.ops.adaptive_max_pool3d`. Ties
    go to the first element of the bin, a NaN wins. No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.adaptive_max_pool3d`.
    """

    def __init__(self, output_size: OutSize3, return_indices: bool = False) -> None:
        self.output_size, self.return_indices = output_size, bool(return_indices)

    def forward(self, x: Tensor[Any, T]) -> Any:
        """The bin maxima ``(..., od, oh, ow)`` (and their indices with ``return_indices``)."""
        if self.return_indices:
            return adaptive_max_pool3d(x, self.output_size, True)
        return adaptive_max_pool3d(x, self.output_size)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _Shuffle(Module):
    """A pixel (un)shuffle layer: ``forward(x)`` is ``_fn(x, factor)``, the factor stored under
    the attribute named ``_factor`` (PyTorch's ``upscale_factor`` / ``downscale_factor``)."""

    _factor: ClassVar[str]
    _fn: ClassVar[Callable[[Tensor[Any, Any], int], Tensor[Any, Any]]]

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The (un)shuffled input."""
        return cast("Tensor[Any, T]", type(self)._fn(x, getattr(self, self._factor)))

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self._factor}={getattr(self, self._factor)}"


class PixelShuffle(_Shuffle):
    """``(*, C * r**2, H, W) -> (*, C, H * r, W * r)`` (PyTorch's ``nn.PixelShuffle(upscale_factor)``,
    :func:`gradtape.ops.pixel_shuffle`). No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.pixel_shuffle`.
    """

    _factor = "upscale_factor"
    _fn = pixel_shuffle

    def __init__(self, upscale_factor: int) -> None:
        self.upscale_factor = upscale_factor


class PixelUnshuffle(_Shuffle):
    """``(*, C, H * r, W * r) -> (*, C * r**2, H, W)`` (PyTorch's ``nn.PixelUnshuffle(downscale_factor)``,
    :func:`gradtape.ops.pixel_unshuffle`). No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.pixel_unshuffle`.
    """

    _factor = "downscale_factor"
    _fn = pixel_unshuffle

    def __init__(self, downscale_factor: int) -> None:
        self.downscale_factor = downscale_factor


class AdaptiveAvgPool1d(Module):
    """Adaptive average pooling of the last dim to ``output_size`` bins (PyTorch's
    ``nn.AdaptiveAvgPool1d``) of ``(N, C, L)`` or ``(C, L)``. No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.adaptive_avg_pool1d`.
    """

    def __init__(self, output_size: int) -> None:
        self.output_size = output_size

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The bin averages, ``(..., output_size)``."""
        return adaptive_avg_pool1d(x, self.output_size)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Adaptive max pooling of the last dim to ``output_size`` bins (PyTorch's
    ``nn.AdaptiveMaxPool1d``, its values) of ``(N, C, L)`` or ``(C, L)``. No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.adaptive_max_pool1d`.
    """

    def __init__(self, output_size: int) -> None:
        self.output_size = output_size

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The bin maxima, ``(..., output_size)``."""
        return adaptive_max_pool1d(x, self.output_size)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class ChannelShuffle(Module):
    """ShuffleNet's channel shuffle (Zhang et al. 2018; PyTorch's ``nn.ChannelShuffle(groups)``,
    :func:`gradtape.nn.functional.channel_shuffle`): the ``C`` channels of ``(N, C, *)`` split
    into ``groups`` groups and interleaved. No parameters; shape, dtype and tape kind kept.

    Raises:
        TypeError: ``groups`` not an int. ValueError: ``groups < 1``. (On forward) ShapeError for an
            input of fewer than 3 dims or ``C`` not divisible by ``groups``.
    """

    def __init__(self, groups: int) -> None:
        self.groups = _int("ChannelShuffle", "groups", groups, 1)

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """The input with its channels shuffled."""
        out: Tensor[S, T] = _channel_shuffle("ChannelShuffle", x, self.groups)
        return out

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Unfold(Module):
    """Sliding blocks of an image as columns, im2col (PyTorch's ``nn.Unfold(kernel_size,
    dilation=1, padding=0, stride=1)``, :func:`gradtape.nn.functional.unfold`):
    ``(N, C, H, W) -> (N, C * KH * KW, L)`` (or unbatched ``(C, H, W) -> (C * KH * KW, L)``), ``L``
    the number of blocks. Each argument an int or a pair. No parameters. The gradient is
    :class:`Fold` of the output's gradient.

    Raises:
        TypeError: an argument neither an int nor two ints. ValueError: ``kernel_size``,
            ``dilation`` or ``stride`` below 1, ``padding`` below 0. (On forward) the errors of
            :func:`gradtape.nn.functional.unfold`.
    """

    def __init__(
        self,
        kernel_size: int | tuple[int, int],
        dilation: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        stride: int | tuple[int, int] = 1,
    ) -> None:
        _geometry("Unfold", kernel_size, dilation, padding, stride)
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The columns ``(N, C * KH * KW, L)``."""
        out: Tensor[Any, T] = _unfold("Unfold", x, self.kernel_size, self.dilation, self.padding, self.stride)
        return out

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class Fold(Module):
    """Columns of sliding blocks summed back into an image, col2im (PyTorch's
    ``nn.Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)``,
    :func:`gradtape.nn.functional.fold`): ``(N, C * KH * KW, L) -> (N, C, H, W)`` (or unbatched
    ``(C * KH * KW, L) -> (C, H, W)``), ``(H, W) = output_size``, overlapping blocks summed. The
    adjoint of :class:`Unfold`; no parameters.

    Raises:
        TypeError: an argument neither an int nor two ints. ValueError: ``output_size``,
            ``kernel_size``, ``dilation`` or ``stride`` below 1, ``padding`` below 0. (On forward)
            the errors of :func:`gradtape.nn.functional.fold`.
    """

    def __init__(
        self,
        output_size: int | tuple[int, int],
        kernel_size: int | tuple[int, int],
        dilation: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        stride: int | tuple[int, int] = 1,
    ) -> None:
        _pair("Fold", "output_size", output_size, 1)
        _geometry("Fold", kernel_size, dilation, padding, stride)
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The image ``(N, C, H, W)``."""
        out: Tensor[Any, T] = _fold(
            "Fold", x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )
        return out

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class _LPPool(Module):
    """PyTorch's ``_LPPoolNd``: ``norm_type``, ``kernel_size``, ``stride`` (default: the kernel
    size) and ``ceil_mode``, checked at construction."""

    def __init__(
        self,
        norm_type: float,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] | None = None,
        ceil_mode: bool = False,
    ) -> None:
        name = type(self).__name__
        self.norm_type = _real(name, "norm_type", norm_type)
        if self.norm_type == 0.0:
            raise ValueError(f"{name}: norm_type must not be 0")
        self.kernel_size, self.stride, self.ceil_mode = kernel_size, stride, bool(ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPool):
    """Power-average pooling along the last dim (PyTorch's ``nn.LPPool1d(norm_type, kernel_size,
    stride=None, ceil_mode=False)``, :func:`gradtape.nn.functional.lp_pool1d`) of ``(N, C, L)`` or
    ``(C, L)``: ``y = (sum over the window of x**p) ** (1/p)``. No parameters.

    Raises:
        TypeError: ``kernel_size``/``stride`` not ints, ``norm_type`` not a number. ValueError: a
            size below 1, ``norm_type`` 0. (On forward) the errors of ``lp_pool1d``.
    """

    def __init__(self, norm_type: float, kernel_size: int, stride: int | None = None, ceil_mode: bool = False) -> None:
        super().__init__(norm_type, kernel_size, stride, ceil_mode)
        _int("LPPool1d", "kernel_size", kernel_size, 1)
        if stride is not None:
            _int("LPPool1d", "stride", stride, 1)

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The pooled input ``(..., L_out)``."""
        k = cast(int, self.kernel_size)
        out: Tensor[Any, T] = _lp_pool1d(
            "LPPool1d", x, self.norm_type, k, cast("int | None", self.stride), self.ceil_mode
        )
        return out

    if TYPE_CHECKING:
        __call__ = forward


class LPPool2d(_LPPool):
    """Power-average pooling of the last two dims (PyTorch's ``nn.LPPool2d(norm_type, kernel_size,
    stride=None, ceil_mode=False)``, :func:`gradtape.nn.functional.lp_pool2d`) of ``(N, C, H, W)``
    or ``(C, H, W)``: ``y = (sum over the window of x**p) ** (1/p)``. No parameters.

    Raises:
        TypeError: ``kernel_size``/``stride`` not an int or two ints, ``norm_type`` not a number.
            ValueError: a size below 1, ``norm_type`` 0. (On forward) the errors of ``lp_pool2d``.
    """

    def __init__(
        self,
        norm_type: float,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] | None = None,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(norm_type, kernel_size, stride, ceil_mode)
        _pair("LPPool2d", "kernel_size", kernel_size, 1)
        if stride is not None:
            _pair("LPPool2d", "stride", stride, 1)

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The pooled input ``(..., H_out, W_out)``."""
        out: Tensor[Any, T] = _lp_pool2d("LPPool2d", x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)
        return out

    if TYPE_CHECKING:
        __call__ = forward
