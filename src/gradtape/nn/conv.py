"""Convolution and pooling layers: :class:`Conv1d`, :class:`Conv2d`, :class:`ConvTranspose2d`,
:class:`MaxPool2d`, :class:`AvgPool2d`, :class:`MinPool2d`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from gradtape.devices.cpu import Cpu
from gradtape.nn._init import kaiming_uniform
from gradtape.nn.module import Module
from gradtape.ops import avg_pool2d, conv1d, conv2d, conv_transpose2d, max_pool2d, min_pool2d
from gradtape.tape import NoneTape
from gradtape.tensor import Tensor

__all__ = ["AvgPool2d", "Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool2d", "MinPool2d"]

Int2 = int | tuple[int, int]


def _tuple(v: int | tuple[int, ...], n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


def _check(name: str, in_channels: int, out_channels: int, groups: int) -> None:
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise ValueError(
            f"{name}: groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}"
        )


class _ConvNd(Module):
    nd: int = 2
    transposed: bool = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        *,
        dev: Cpu,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        name = type(self).__name__
        _check(name, in_channels, out_channels, groups)
        k = _tuple(kernel_size, self.nd)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        # Any: the ops' typed signatures take per-rank tuples; the ops validate at run time
        self.stride: Any = stride
        self.padding: Any = padding
        self.dilation: Any = dilation
        self.groups = groups
        if self.transposed:
            wshape = (in_channels, out_channels // groups, *k)
            fan_in = out_channels // groups * math.prod(k)  # PyTorch: weight.size(1) * receptive field
        else:
            wshape = (out_channels, in_channels // groups, *k)
            fan_in = in_channels // groups * math.prod(k)
        self.weight: Tensor[Any, NoneTape] = kaiming_uniform(dev, wshape, fan_in, dtype)
        self.bias: Tensor[Any, NoneTape] | None = kaiming_uniform(dev, (out_channels,), fan_in, dtype) if bias else None

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, bias={self.bias is not None}"
        )


class Conv1d(_ConvNd):
    """1-D convolution layer (PyTorch's ``nn.Conv1d``): ``x (N, C_in, L) -> (N, C_out, L_out)``,
    ``L_out = floor((L + 2p - d(K-1) - 1)/s) + 1`` (:func:`gradtape.ops.conv1d`).

    Args:
        in_channels, out_channels: ``C_in``, ``C_out`` (both divisible by ``groups``).
        kernel_size, stride, padding, dilation, groups: as ``torch.nn.Conv1d``.
        bias: whether to learn a bias ``(C_out,)``.
        dev: the device whose seeded generator initialises the parameters.
        dtype: float32 (default) or float64.

    Parameters: ``weight (C_out, C_in/groups, K)`` and ``bias (C_out,)``, both
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = C_in/groups * K`` (PyTorch's init,
    Kaiming-uniform with ``a = sqrt(5)``; He et al. 2015).

    Raises:
        ValueError: ``groups`` does not divide the channel counts. Forward raises what
            :func:`gradtape.ops.conv1d` raises (ShapeError naming the shapes, DTypeError).
    """

    nd = 1

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``(N, C_in, L) -> (N, C_out, L_out)``."""
        return conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, groups=self.groups)


class Conv2d(_ConvNd):
    """2-D convolution layer (PyTorch's ``nn.Conv2d``): ``x (N, C_in, H, W) -> (N, C_out, H_out, W_out)``,
    ``H_out = floor((H + 2p - d(KH-1) - 1)/s) + 1`` (:func:`gradtape.ops.conv2d`).

    Args:
        in_channels, out_channels: ``C_in``, ``C_out`` (both divisible by ``groups``).
        kernel_size, stride, padding, dilation, groups: ints or pairs, as ``torch.nn.Conv2d``.
        bias: whether to learn a bias ``(C_out,)``.
        dev: the device whose seeded generator initialises the parameters.
        dtype: float32 (default) or float64.

    Parameters: ``weight (C_out, C_in/groups, KH, KW)`` and ``bias (C_out,)``, both
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in = C_in/groups * KH * KW`` (PyTorch's init).

    Raises:
        ValueError: ``groups`` does not divide the channel counts. Forward raises what
            :func:`gradtape.ops.conv2d` raises.
    """

    nd = 2

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``(N, C_in, H, W) -> (N, C_out, H_out, W_out)``."""
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, groups=self.groups)


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution layer (PyTorch's ``nn.ConvTranspose2d``):
    ``x (N, C_in, H, W) -> (N, C_out, H_out, W_out)``,
    ``H_out = (H - 1)s - 2p + d(KH - 1) + output_padding + 1`` (:func:`gradtape.ops.conv_transpose2d`).

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

    nd = 2
    transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        *,
        output_padding: int | tuple[int, ...] = 0,
        dev: Cpu,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, dev=dev, dtype=dtype
        )
        self.output_padding: Any = output_padding

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``(N, C_in, H, W) -> (N, C_out, H_out, W_out)``."""
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


class _Pool2d(Module):
    def __init__(self, kernel_size: Int2, stride: Int2 | None = None, padding: Int2 = 0) -> None:
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Max pooling over ``kernel_size`` windows (PyTorch's ``nn.MaxPool2d``; ``stride`` defaults
    to ``kernel_size``): ``(N, C, H, W) -> (N, C, floor((H + 2p - KH)/s) + 1, ...)``. No parameters.

    Raises (on forward): ShapeError / ValueError / TypeError from :func:`gradtape.ops.max_pool2d`.
    """

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Window maxima, ``(N, C, H_out, W_out)``."""
        return max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool2d(_Pool2d):
    """Average pooling (PyTorch's ``nn.AvgPool2d`` defaults: zero padding counted):
    ``y = sum(window) / (KH * KW)``. No parameters.

    Raises (on forward): as :func:`gradtape.ops.avg_pool2d`.
    """

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Window means, ``(N, C, H_out, W_out)``."""
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class MinPool2d(_Pool2d):
    """Min pooling (dfdx's ``MinPool2D``, ``-max_pool2d(-x)``). No parameters.

    Raises (on forward): as :func:`gradtape.ops.min_pool2d`.
    """

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Window minima, ``(N, C, H_out, W_out)``."""
        return min_pool2d(x, self.kernel_size, self.stride, self.padding)
