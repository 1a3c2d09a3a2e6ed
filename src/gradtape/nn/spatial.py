"""Spatial layers without parameters, PyTorch's names and arguments, on :mod:`gradtape.ops.spatial`:
padding (:class:`ZeroPad2d`, :class:`ConstantPad2d`, :class:`ReflectionPad2d`,
:class:`ReplicationPad2d`), resampling (:class:`Upsample`, :class:`UpsamplingNearest2d`,
:class:`UpsamplingBilinear2d`), adaptive pooling (:class:`AdaptiveAvgPool2d`,
:class:`AdaptiveMaxPool2d`) and :class:`PixelShuffle` / :class:`PixelUnshuffle`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast, overload

from gradtape.nn._typing import C, N, T
from gradtape.nn.module import Module
from gradtape.ops._util import is_int
from gradtape.ops.spatial import (  # unwrapped: Module.__call__ checked x
    OutSize,
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    interpolate,
    pad,
    pixel_shuffle,
    pixel_unshuffle,
)
from gradtape.shapes import AnyShape, Rank3, Rank4
from gradtape.tensor import Tensor

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "ConstantPad2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ReflectionPad2d",
    "ReplicationPad2d",
    "Upsample",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "ZeroPad2d",
]


def _padding4(layer: str, padding: object) -> tuple[int, int, int, int]:
    """An int for all four sides, or ``(left, right, top, bottom)``."""
    if is_int(padding):
        p = int(padding)  # type: ignore[call-overload]
        return (p, p, p, p)
    if isinstance(padding, (tuple, list)) and len(padding) == 4 and all(is_int(v) for v in padding):
        return (int(padding[0]), int(padding[1]), int(padding[2]), int(padding[3]))
    raise TypeError(f"{layer}: padding must be an int or a tuple (left, right, top, bottom) of ints, got {padding!r}")


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


class Upsample(Module):
    """Resampling (PyTorch's ``nn.Upsample(size, scale_factor, mode, align_corners,
    recompute_scale_factor)``): :func:`gradtape.ops.interpolate` with the layer's arguments, on
    ``(N, C, L)`` (``"nearest"``, ``"linear"``) or ``(N, C, H, W)`` (``"nearest"``,
    ``"bilinear"``). No parameters.

    Raises (on forward): the errors of :func:`gradtape.ops.interpolate`.
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
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor)

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
