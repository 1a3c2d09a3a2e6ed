"""Convolution and pooling layers: :class:`Conv1d`, :class:`Conv2d`, :class:`ConvTranspose2d`,
:class:`Conv3d`, :class:`ConvTranspose3d`,
:class:`MaxPool2d`, :class:`AvgPool2d`, :class:`MinPool2d`, :class:`MaxPool3d`, :class:`AvgPool3d`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, cast, overload

import numpy as np
import numpy.typing as npt

from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.nn._init import kaiming_uniform
from gradtape.nn._typing import D1, C, H, J, K, N, O, T, W
from gradtape.nn.module import Module
from gradtape.ops.conv import (  # unwrapped: Module.__call__ checked x
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from gradtape.ops.pool import Int3, avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d, min_pool2d
from gradtape.ops.spatial import pad
from gradtape.shapes import AnyShape, Rank3, Rank4, Rank5
from gradtape.tape import NoneTape
from gradtape.tensor import Tensor

__all__ = [
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MinPool2d",
]

Int2 = int | tuple[int, int]


def _tuple(v: int | tuple[int, ...], n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


def _check(name: str, in_channels: int, out_channels: int, groups: int) -> None:
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise ValueError(
            f"{name}: groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}"
        )


class _ConvNd(Module, Generic[C, O]):
    nd: int = 2
    transposed: bool = False

    def __init__(
        self,
        in_channels: C,
        out_channels: O,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        name = type(self).__name__
        # C and O are type-level names of the channel counts, ints at run time
        ci, co = cast(int, in_channels), cast(int, out_channels)
        _check(name, ci, co, groups)
        k = _tuple(kernel_size, self.nd)
        self.in_channels, self.out_channels, self.kernel_size = ci, co, k
        # Any: the ops' typed signatures take per-rank tuples; the ops validate at run time
        self.stride: Any = stride
        self.padding: Any = padding
        self.dilation: Any = dilation
        self.groups = groups
        if self.transposed:
            wshape = (ci, co // groups, *k)
            fan_in = co // groups * math.prod(k)  # PyTorch: weight.size(1) * receptive field
        else:
            wshape = (co, ci // groups, *k)
            fan_in = ci // groups * math.prod(k)
        self.weight: Tensor[Any, NoneTape] = kaiming_uniform(dev, wshape, fan_in, dtype)
        self.bias: Tensor[Any, NoneTape] | None = kaiming_uniform(dev, (co,), fan_in, dtype) if bias else None

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, bias={self.bias is not None}"
        )


# Typing of the layers' forward (the AnyShape overload comes last, as in Linear): a layer typed
# ``Conv2d[L[3], L[16]]`` takes inputs whose channel dim is ``L[3]`` or a run-time ``int``
# (dynamic, checked at run time), not another static dim; a layer whose channels are run-time
# ints (``Conv2d(3, 16, 3, dev=dev)`` unannotated infers ``Conv2d[int, int]``) takes any channel
# dim type (checked at run time), as the self-typed overloads say. ``groups`` does not change
# the typing: ``in_channels`` is the channel count of the input whatever the grouping (each
# group's weight sees ``C_in / groups`` of them, which the op checks at run time).


class Conv1d(_ConvNd[C, O]):
    """1-D convolution layer (PyTorch's ``nn.Conv1d``): ``x (N, C_in, L) -> (N, C_out, L_out)``,
    ``L_out = floor((L + 2p - d(K-1) - 1)/s) + 1`` (:func:`gradtape.ops.conv1d`).

    Typed ``Conv1d[C, O]``: ``C`` the in-channels, ``O`` the out-channels, inferred from the
    constructor's arguments (annotate ``conv: Conv1d[L[2], L[8]] = Conv1d(2, 8, 3, dev=dev)``;
    unannotated, ``Conv1d(2, 8, 3, dev=dev)`` is ``Conv1d[int, int]``). ``conv(x)`` maps
    ``Tensor[Rank3[N, C, Any], T]`` to ``Tensor[Rank3[N, O, int], T]`` (the output length is
    computed at run time), keeping the input's tape kind ``T``; an input whose channel dim
    is another static dim than ``C`` is a type error. ``int`` (dynamic) channels are checked
    at run time instead: an input with an ``int`` channel dim fits any layer, and a layer
    whose ``C`` is ``int`` takes any channel dim. An untyped input (``Tensor[Any, T]``) gives
    ``Tensor[Any, T]``. ``groups`` does not change the typing (``C`` is the input's channel
    count for any grouping; the weight's ``C_in / groups`` is checked at run time).

    Args:
        in_channels, out_channels: ``C_in``, ``C_out`` (both divisible by ``groups``).
        kernel_size, stride, padding, dilation, groups: as ``torch.nn.Conv1d``.
        bias: whether to learn a bias ``(C_out,)``.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters: ``weight (C_out, C_in/groups, K)`` and ``bias (C_out,)``, both
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = C_in/groups * K`` (PyTorch's init,
    Kaiming-uniform with ``a = sqrt(5)``; He et al. 2015).

    Raises:
        ValueError: ``groups`` does not divide the channel counts. Forward raises what
            :func:`gradtape.ops.conv1d` raises (ShapeError naming the shapes, DTypeError).
    """

    nd = 1

    @overload
    def forward(self, x: Tensor[Rank3[N, C, W], T]) -> Tensor[Rank3[N, O, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[N, int, W], T]) -> Tensor[Rank3[N, O, int], T]: ...
    @overload
    def forward(self: Conv1d[int, O], x: Tensor[Rank3[N, J, W], T]) -> Tensor[Rank3[N, O, int], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``(N, C_in, L) -> (N, C_out, L_out)``, ``x``'s tape kind."""
        return conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, groups=self.groups)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class _TransposedConv(_ConvNd[C, O]):
    """The constructor of the transposed convolutions (:class:`ConvTranspose1d`,
    :class:`ConvTranspose2d`): :class:`_ConvNd`'s arguments and PyTorch's keyword
    ``output_padding``."""

    transposed = True

    def __init__(
        self,
        in_channels: C,
        out_channels: O,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        *,
        output_padding: int | tuple[int, ...] = 0,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            dev=dev,
            device=device,
            dtype=dtype,
        )
        self.output_padding: Any = output_padding


class _Conv2dBase(_ConvNd[C, O]):
    """The typed ``forward`` of :class:`Conv2d` and :class:`ConvTranspose2d` (the same
    typing: ``(N, C, H, W) -> (N, O, H_out, W_out)``), which implement ``_conv``."""

    nd = 2

    @overload
    def forward(self, x: Tensor[Rank4[N, C, H, W], T]) -> Tensor[Rank4[N, O, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[N, int, H, W], T]) -> Tensor[Rank4[N, O, int, int], T]: ...
    @overload
    def forward(self: _Conv2dBase[int, O], x: Tensor[Rank4[N, J, H, W], T]) -> Tensor[Rank4[N, O, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``(N, C_in, H, W) -> (N, C_out, H_out, W_out)``, ``x``'s tape kind."""
        return self._conv(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def _conv(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        raise NotImplementedError


class Conv2d(_Conv2dBase[C, O]):
    """2-D convolution layer (PyTorch's ``nn.Conv2d``): ``x (N, C_in, H, W) -> (N, C_out, H_out, W_out)``,
    ``H_out = floor((H + 2p - d(KH-1) - 1)/s) + 1`` (:func:`gradtape.ops.conv2d`).

    Typed ``Conv2d[C, O]``: ``C`` the in-channels, ``O`` the out-channels, inferred from the
    constructor's arguments (annotate ``conv: Conv2d[L[3], L[16]] = Conv2d(3, 16, 3, dev=dev)``;
    unannotated, ``Conv2d(3, 16, 3, dev=dev)`` is ``Conv2d[int, int]``). ``conv(x)`` maps
    ``Tensor[Rank4[N, C, Any, Any], T]`` to ``Tensor[Rank4[N, O, int, int], T]`` (the output
    height and width are computed at run time), keeping the input's tape kind ``T``; an input
    whose channel dim is another static dim than ``C`` is a type error. ``int`` (dynamic)
    channels are checked at run time instead: an input with an ``int`` channel dim fits any
    layer, and a layer whose ``C`` is ``int`` takes any channel dim. An untyped input
    (``Tensor[Any, T]``) gives ``Tensor[Any, T]``. ``groups`` does not change the typing (``C``
    is the input's channel count for any grouping; the weight's ``C_in / groups`` is checked at
    run time).

    Args:
        in_channels, out_channels: ``C_in``, ``C_out`` (both divisible by ``groups``).
        kernel_size, stride, padding, dilation, groups: ints or pairs, as ``torch.nn.Conv2d``.
        bias: whether to learn a bias ``(C_out,)``.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters: ``weight (C_out, C_in/groups, KH, KW)`` and ``bias (C_out,)``, both
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in = C_in/groups * KH * KW`` (PyTorch's init).

    Raises:
        ValueError: ``groups`` does not divide the channel counts. Forward raises what
            :func:`gradtape.ops.conv2d` raises.
    """

    def _conv(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, groups=self.groups)


class ConvTranspose2d(_TransposedConv[C, O], _Conv2dBase[C, O]):
    """2-D transposed convolution layer (PyTorch's ``nn.ConvTranspose2d``):
    ``x (N, C_in, H, W) -> (N, C_out, H_out, W_out)``,
    ``H_out = (H - 1)s - 2p + d(KH - 1) + output_padding + 1`` (:func:`gradtape.ops.conv_transpose2d`).

    Typed ``ConvTranspose2d[C, O]`` (in- and out-channels, inferred from the constructor's
    arguments) exactly as :class:`Conv2d`: ``Tensor[Rank4[N, C, Any, Any], T]`` to
    ``Tensor[Rank4[N, O, int, int], T]``; another static channel dim is a type error, an
    ``int`` one (on either side) is checked at run time; ``groups`` does not change the typing.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups: as
            ``torch.nn.ConvTranspose2d``; ``output_padding`` (keyword) as well.
        bias: whether to learn a bias ``(C_out,)``.
        dev, dtype: as :class:`Conv2d`.

    Parameters: ``weight (C_in, C_out/groups, KH, KW)`` and ``bias (C_out,)``, both
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with PyTorch's ``fan_in = C_out/groups * KH * KW``
    (``weight.size(1)`` times the receptive field).

    Raises:
        ValueError: ``groups`` does not divide the channel counts. Forward raises what
            :func:`gradtape.ops.conv_transpose2d` raises.
    """

    def _conv(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return conv_transpose2d(
            x,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.output_padding,
            groups=self.groups,
            dilation=self.dilation,
        )


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _Conv3dBase(_ConvNd[C, O]):
    """The typed ``forward`` of :class:`Conv3d` and :class:`ConvTranspose3d` (``(N, C, D, H, W)
    -> (N, O, D_out, H_out, W_out)``), which implement ``_conv``; and ``padding_mode``."""

    nd = 3
    padding_mode: str = "zeros"

    @overload
    def forward(self, x: Tensor[Rank5[N, C, D1, H, W], T]) -> Tensor[Rank5[N, O, int, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank5[N, int, D1, H, W], T]) -> Tensor[Rank5[N, O, int, int, int], T]: ...
    @overload
    def forward(
        self: _Conv3dBase[int, O], x: Tensor[Rank5[N, J, D1, H, W], T]
    ) -> Tensor[Rank5[N, O, int, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``(N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)``, ``x``'s tape kind."""
        return self._conv(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def _conv(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        raise NotImplementedError


class Conv3d(_Conv3dBase[C, O]):
    """3-D convolution layer (PyTorch's ``nn.Conv3d``): ``x (N, C_in, D, H, W) -> (N, C_out,
    D_out, H_out, W_out)``, ``D_out = floor((D + 2p - d(KD-1) - 1)/s) + 1`` (likewise ``H_out``,
    ``W_out``; :func:`gradtape.ops.conv3d`), float32 or float64 (the layer's dtype).

    Typed ``Conv3d[C, O]`` as :class:`Conv2d`: ``Tensor[Rank5[N, C, Any, Any, Any], T]`` to
    ``Tensor[Rank5[N, O, int, int, int], T]``; another static channel dim is a type error, an
    ``int`` one (on either side) is checked at run time; ``groups`` does not change the typing.

    Args:
        in_channels, out_channels: ``C_in``, ``C_out`` (both divisible by ``groups``).
        kernel_size, stride, padding, dilation, groups: ints or triples, as ``torch.nn.Conv3d``
            (``padding`` also ``"valid"`` or ``"same"``, the latter with stride 1 only).
        bias: whether to learn a bias ``(C_out,)``.
        padding_mode: ``"zeros"`` (default), ``"reflect"``, ``"replicate"`` or ``"circular"``:
            as PyTorch, the other modes pad the input with :func:`gradtape.ops.pad` first and
            convolve without padding.
        dev, device, dtype: as :class:`Conv2d`.

    Parameters (PyTorch's names and init): ``weight (C_out, C_in/groups, KD, KH, KW)`` and
    ``bias (C_out,)``, both ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in = C_in/groups * KD
    * KH * KW``.

    Raises:
        ValueError: ``groups`` does not divide the channel counts; an unknown ``padding_mode``;
            ``padding="same"`` with a stride. Forward raises what :func:`gradtape.ops.conv3d`
            raises (ShapeError naming the op and the shapes, DTypeError).
    """

    def __init__(
        self,
        in_channels: C,
        out_channels: O,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            dev=dev,
            device=device,
            dtype=dtype,
        )
        name = type(self).__name__
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        if padding == "same" and _tuple(stride, 3) != (1, 1, 1):
            raise ValueError(f"{name}: padding='same' needs stride 1, got stride {stride}")
        self.padding_mode = padding_mode

    def _pad_amounts(self) -> tuple[int, ...]:
        """PyTorch's ``_reversed_padding_repeated_twice``: ``(left, right, top, bottom, front,
        back)`` for :func:`gradtape.ops.pad`."""
        k, d = self.kernel_size, _tuple(self.dilation, 3)
        if self.padding == "valid":
            per = [(0, 0)] * 3
        elif self.padding == "same":
            per = [(dd * (kk - 1) // 2, dd * (kk - 1) - dd * (kk - 1) // 2) for dd, kk in zip(d, k, strict=True)]
        else:
            per = [(p, p) for p in _tuple(self.padding, 3)]
        return tuple(v for lo_hi in reversed(per) for v in lo_hi)

    def _conv(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        if self.padding_mode != "zeros":
            xp = pad(x, self._pad_amounts(), mode=cast(Any, self.padding_mode))
            return conv3d(xp, self.weight, self.bias, self.stride, 0, self.dilation, groups=self.groups)
        return conv3d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, groups=self.groups)

    def extra_repr(self) -> str:
        mode = "" if self.padding_mode == "zeros" else f", padding_mode={self.padding_mode}"
        return super().extra_repr() + mode


class ConvTranspose3d(_TransposedConv[C, O], _Conv3dBase[C, O]):
    """3-D transposed convolution layer (PyTorch's ``nn.ConvTranspose3d``): ``x (N, C_in, D, H,
    W) -> (N, C_out, D_out, H_out, W_out)``, ``D_out = (D - 1)s - 2p + d(KD - 1) +
    output_padding + 1`` (likewise ``H_out``, ``W_out``; :func:`gradtape.ops.conv_transpose3d`).

    Typed ``ConvTranspose3d[C, O]`` exactly as :class:`Conv3d`.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups: ints or
            triples, as ``torch.nn.ConvTranspose3d``; ``output_padding`` (keyword) as well.
        bias: whether to learn a bias ``(C_out,)``.
        padding_mode: ``"zeros"`` only (as PyTorch's transposed convolutions).
        dev, device, dtype: as :class:`Conv2d`.

    Parameters: ``weight (C_in, C_out/groups, KD, KH, KW)`` and ``bias (C_out,)``, both
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with PyTorch's ``fan_in = C_out/groups * KD * KH *
    KW`` (``weight.size(1)`` times the receptive field).

    Raises:
        ValueError: ``groups`` does not divide the channel counts; ``padding_mode`` other than
            ``"zeros"``. Forward raises what :func:`gradtape.ops.conv_transpose3d` raises.
    """

    def __init__(
        self,
        in_channels: C,
        out_channels: O,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        *,
        output_padding: int | tuple[int, ...] = 0,
        padding_mode: str = "zeros",
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            output_padding=output_padding,
            dev=dev,
            device=device,
            dtype=dtype,
        )
        if padding_mode != "zeros":
            raise ValueError(f"ConvTranspose3d: only padding_mode='zeros' is supported, got {padding_mode!r}")

    def _conv(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return conv_transpose3d(
            x,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.output_padding,
            groups=self.groups,
            dilation=self.dilation,
        )


# The pools keep the batch and channel dims and the tape kind: ``Tensor[Rank4[N, C, Any,
# Any], T] -> Tensor[Rank4[N, C, int, int], T]`` (the window count is computed at run time);
# an untyped input gives an untyped result (``Tensor[Any, T]``, or a rank-4 tensor of ``Any``
# dims when the input's type is only ``Any``). The spatial dims of the parameters are type
# variables, not ``Any``: nested in another layer's call (``flatten(pool(x))``), an ``Any``
# there would be solved from the outer call's expected type and make pyright's result Any.


class _Pool2d(Module):
    """A pooling layer: ``forward`` applies the class's ``_pool`` (an op of
    :mod:`gradtape.ops.pool`) with the layer's ``kernel_size``, ``stride`` and ``padding``."""

    _pool: Callable[..., Tensor[Any, Any]]

    def __init__(self, kernel_size: Int2, stride: Int2 | None = None, padding: Int2 = 0) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    @overload
    def forward(self, x: Tensor[Rank4[N, K, H, W], T]) -> Tensor[Rank4[N, K, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """The pooled windows (maxima, means or minima, as the class says), ``(N, C, H_out, W_out)``."""
        return self._pool(x, self.kernel_size, self.stride, self.padding)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Max pooling over ``kernel_size`` windows (PyTorch's ``nn.MaxPool2d``; ``stride`` defaults
    to ``kernel_size``): ``(N, C, H, W) -> (N, C, floor((H + 2p - KH)/s) + 1, ...)``. No parameters.

    Typed: ``Tensor[Rank4[N, C, Any, Any], T] -> Tensor[Rank4[N, C, int, int], T]`` (the
    output's height and width are computed at run time; tape kind kept); an untyped input
    gives an untyped result. Not generic: the layer has no width.

    Raises (on forward): ShapeError / ValueError / TypeError from :func:`gradtape.ops.max_pool2d`.
    """

    _pool = staticmethod(max_pool2d)


class AvgPool2d(_Pool2d):
    """Average pooling (PyTorch's ``nn.AvgPool2d`` defaults: zero padding counted):
    ``y = sum(window) / (KH * KW)``. No parameters.

    Typed as :class:`MaxPool2d`: ``Tensor[Rank4[N, C, Any, Any], T] -> Tensor[Rank4[N, C, int, int], T]``.

    Raises (on forward): as :func:`gradtape.ops.avg_pool2d`.
    """

    _pool = staticmethod(avg_pool2d)


class MinPool2d(_Pool2d):
    """Min pooling (dfdx's ``MinPool2D``, ``-max_pool2d(-x)``). No parameters.

    Typed as :class:`MaxPool2d`: ``Tensor[Rank4[N, C, Any, Any], T] -> Tensor[Rank4[N, C, int, int], T]``.

    Raises (on forward): as :func:`gradtape.ops.min_pool2d`.
    """

    _pool = staticmethod(min_pool2d)


class _Pool1d(Module):
    """A 1-D pooling layer: ``forward`` applies the class's ``_pool`` (``max_pool1d`` or
    ``avg_pool1d`` of :mod:`gradtape.ops.pool`) with the layer's ``kernel_size``, ``stride``
    and ``padding``."""

    _pool: Callable[..., Tensor[Any, Any]]

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """The pooled windows of ``x (N, C, L)`` or ``(C, L)``, ``(..., L_out)``."""
        return self._pool(x, self.kernel_size, self.stride, self.padding)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1d(_Pool1d):
    """Max pooling along the last dim (PyTorch's ``nn.MaxPool1d``; ``stride`` defaults to
    ``kernel_size``): ``(N, C, L) -> (N, C, floor((L + 2p - k)/s) + 1)``. No parameters.

    Raises (on forward): ShapeError / ValueError / TypeError from :func:`gradtape.ops.max_pool1d`.
    """

    _pool = staticmethod(max_pool1d)


class AvgPool1d(_Pool1d):
    """Average pooling along the last dim (PyTorch's ``nn.AvgPool1d`` defaults: zero padding
    counted). No parameters.

    Raises (on forward): as :func:`gradtape.ops.avg_pool1d`.
    """

    _pool = staticmethod(avg_pool1d)


class _Pool3d(Module):
    """A 3-D pooling layer: ``forward`` applies the class's ``_pool`` (``max_pool3d`` or
    ``avg_pool3d`` of :mod:`gradtape.ops.pool`) with the layer's ``kernel_size``, ``stride`` and
    ``padding`` to ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``."""

    _pool: Callable[..., Tensor[Any, Any]]

    def __init__(self, kernel_size: Int3, stride: Int3 | None = None, padding: Int3 = 0) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    @overload
    def forward(self, x: Tensor[Rank5[N, K, D1, H, W], T]) -> Tensor[Rank5[N, K, int, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[K, D1, H, W], T]) -> Tensor[Rank4[K, int, int, int], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """The pooled windows (maxima or means, as the class says), ``(N, C, D_out, H_out, W_out)``."""
        return self._pool(x, self.kernel_size, self.stride, self.padding)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(_Pool3d):
    """Max pooling over ``kernel_size`` windows of ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``
    (PyTorch's ``nn.MaxPool3d(kernel_size, stride=None, padding=0)``; ``stride`` defaults to
    ``kernel_size``; no dilation, ``ceil_mode`` or ``return_indices``, as :class:`MaxPool2d`):
    per dim ``D_out = floor((D + 2p - KD)/s) + 1``. No parameters. Gradient and tie rule of
    :func:`gradtape.ops.max_pool3d`.

    Typed: ``Tensor[Rank5[N, C, D, H, W], T] -> Tensor[Rank5[N, C, int, int, int], T]`` (the
    output's spatial dims computed at run time; tape kind kept), the unbatched rank-4 likewise.

    Raises (on forward): ShapeError / ValueError / TypeError from :func:`gradtape.ops.max_pool3d`.
    """

    _pool = staticmethod(max_pool3d)


class AvgPool3d(_Pool3d):
    """Average pooling of ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` (PyTorch's
    ``nn.AvgPool3d(kernel_size, stride=None, padding=0)`` with its defaults: zero padding
    counted, as :class:`AvgPool2d`): ``y = sum(window) / (KD * KH * KW)``. No parameters.

    Typed as :class:`MaxPool3d`.

    Raises (on forward): as :func:`gradtape.ops.avg_pool3d`.
    """

    _pool = staticmethod(avg_pool3d)


class ConvTranspose1d(_TransposedConv[C, O]):
    """1-D transposed convolution layer (PyTorch's ``nn.ConvTranspose1d``):
    ``x (N, C_in, L) -> (N, C_out, L_out)``, ``L_out = (L - 1)s - 2p + d(K - 1) +
    output_padding + 1`` (:func:`gradtape.ops.conv_transpose1d`).

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups: as
            ``torch.nn.ConvTranspose1d``; ``output_padding`` (keyword) as well.
        bias: whether to learn a bias ``(C_out,)``.
        dev, dtype: as :class:`Conv1d`.

    Parameters: ``weight (C_in, C_out/groups, K)`` and ``bias (C_out,)``, both
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with PyTorch's ``fan_in = C_out/groups * K``.

    Raises:
        ValueError: ``groups`` does not divide the channel counts. Forward raises what
            :func:`gradtape.ops.conv_transpose1d` raises.
    """

    nd = 1

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, Any]:
        """``(N, C_in, L) -> (N, C_out, L_out)``."""
        return conv_transpose1d(
            x, self.weight, self.bias, self.stride, self.padding, self.output_padding, self.groups, self.dilation
        )

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward
