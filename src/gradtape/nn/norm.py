"""Normalisation layers: :class:`LayerNorm`, :class:`RMSNorm`, :class:`BatchNorm1d`, :class:`BatchNorm2d`."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gradtape.errors import ShapeError
from gradtape.nn.module import Module
from gradtape.ops import layer_norm, rms_norm
from gradtape.tape import NONE_TAPE, NoneTape
from gradtape.tensor import Tensor

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "RMSNorm"]


def _ones(shape: tuple[int, ...], dtype: npt.DTypeLike, dev: Any) -> Tensor[Any, NoneTape]:
    return Tensor(np.ones(shape, dtype), dev, NONE_TAPE)


def _zeros(shape: tuple[int, ...], dtype: npt.DTypeLike, dev: Any) -> Tensor[Any, NoneTape]:
    return Tensor(np.zeros(shape, dtype), dev, NONE_TAPE)


def _device(dev: Any) -> Any:
    if dev is None:
        from gradtape.devices.cpu import Cpu

        return Cpu()
    return dev


class LayerNorm(Module):
    """Layer normalisation over the trailing ``normalized_shape`` dims (Ba, Kiros & Hinton 2016;
    PyTorch's ``nn.LayerNorm``): ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the
    biased variance of each row (:func:`gradtape.ops.layer_norm`, one fused kernel).

    Args:
        normalized_shape: an int ``N`` (the last dim) or a tuple of trailing dims.
        eps: added to the variance (default ``1e-5``).
        elementwise_affine: whether to learn ``weight`` (ones) and ``bias`` (zeros).
        bias: whether to learn ``bias`` (with ``elementwise_affine``).
        dev: the device the parameters live on (default a new ``Cpu()``; no randomness).
        dtype: float32 (default) or float64.

    Raises (on forward): ShapeError when ``x``'s trailing dims are not ``normalized_shape``.
    """

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        dev: Any = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        dev = _device(dev)
        self.weight = _ones(shape, dtype, dev) if elementwise_affine else None
        self.bias = _zeros(shape, dtype, dev) if elementwise_affine and bias else None

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Normalised ``x``, same shape and dtype."""
        return layer_norm(x, self.normalized_shape, weight=self.weight, bias=self.bias, eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class RMSNorm(Module):
    """Root-mean-square normalisation over the last dim (Zhang & Sennrich 2019; PyTorch's
    ``nn.RMSNorm``): ``y = x / sqrt(mean(x**2) + eps) * weight`` (:func:`gradtape.ops.rms_norm`).

    Args:
        dim: the last dim ``N``.
        eps: added to the mean square; ``None`` (default, as PyTorch) is the machine epsilon
            of the input's dtype.
        elementwise_affine: whether to learn ``weight (N,)`` (ones).
        dev, dtype: as :class:`LayerNorm`.

    Raises (on forward): ShapeError when ``x``'s last dim is not ``dim``.
    """

    def __init__(
        self,
        dim: int,
        eps: float | None = None,
        elementwise_affine: bool = True,
        *,
        dev: Any = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        self.dim, self.eps = dim, eps
        self.weight = _ones((dim,), dtype, _device(dev)) if elementwise_affine else None

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Normalised ``x``, same shape and dtype."""
        if x.shape[-1:] != (self.dim,):
            raise ShapeError(f"RMSNorm: input of shape {x.shape} does not end in dim {self.dim}")
        return rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}"


class _BatchNorm(Module):
    rank: int = 2
    buffer_names = ("running_mean", "running_var")

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        dev: Any = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{type(self).__name__}: momentum must be in [0, 1], got {momentum}")
        dev = _device(dev)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.track_running_stats = track_running_stats
        self.weight = _ones((num_features,), dtype, dev) if affine else None
        self.bias = _zeros((num_features,), dtype, dev) if affine else None
        self.running_mean = _zeros((num_features,), dtype, dev)
        self.running_var = _ones((num_features,), dtype, dev)

    def _axes(self, x: Tensor[Any, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        name = type(self).__name__
        ranks = (2, 3) if self.rank == 2 else (4,)
        if x.ndim not in ranks or x.shape[1] != self.num_features:
            want = " or ".join(f"{r}-D" for r in ranks)
            raise ShapeError(
                f"{name}: expected a {want} input with {self.num_features} channels in dim 1, got shape {x.shape}"
            )
        axes = (0, *range(2, x.ndim))
        bshape = (1, self.num_features) + (1,) * (x.ndim - 2)
        return axes, bshape

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Normalise each channel (dim 1) over the batch (and spatial) dims; same shape and dtype.

        Training mode (or ``track_running_stats=False``): batch statistics, differentiated
        through (``mean``/``var`` ops), and the running statistics updated in place:
        ``running = (1 - momentum) * running + momentum * batch_stat`` with the *unbiased*
        batch variance for ``running_var`` (as PyTorch). Eval mode: the running statistics,
        as constants.

        Raises:
            ShapeError: wrong rank, or dim 1 is not ``num_features``.
            ValueError: training with a single value per channel (the variance is undefined).
        """
        axes, bshape = self._axes(x)
        if self.training or not self.track_running_stats:
            n = x.size // self.num_features
            if n < 2 and self.training:
                raise ValueError(
                    f"{type(self).__name__}: expected more than 1 value per channel when training, got shape {x.shape}"
                )
            mean = x.mean(axis=axes, keepdims=True)
            var = x.var(axis=axes, keepdims=True)
            if self.training and self.track_running_stats:
                m = self.momentum
                rm, rv = self.running_mean.data, self.running_var.data
                rm *= 1 - m
                rm += m * mean.data.reshape(-1)
                rv *= 1 - m
                rv += m * var.data.reshape(-1) * (n / max(n - 1, 1))
            y = (x - mean) / (var + self.eps).sqrt()
        else:
            rm_t = self.running_mean.reshape(bshape)
            rstd = x._like(1.0 / np.sqrt(self.running_var.data.reshape(bshape) + self.eps))
            y = (x - rm_t) * rstd
        if self.weight is not None and self.bias is not None:
            y = y * self.weight.reshape(bshape) + self.bias.reshape(bshape)
        return y

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` inputs per channel ``C`` (Ioffe &
    Szegedy 2015, "Batch Normalization: Accelerating Deep Network Training by Reducing Internal
    Covariate Shift"; PyTorch's ``nn.BatchNorm1d``).

    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with, in training mode, the mean and
    biased variance over the batch (and length) dims, and in eval mode the running estimates.
    Composed from gradtape ops (``mean``, ``var``, broadcasting), so the gradient flows
    through the batch statistics.

    Args:
        num_features: ``C``.
        eps: added to the variance (default ``1e-5``).
        momentum: running-statistics update factor (default ``0.1``, as PyTorch).
        affine: whether to learn ``weight`` (ones) and ``bias`` (zeros), shape ``(C,)``.
        track_running_stats: keep ``running_mean`` (zeros) / ``running_var`` (ones) buffers,
            saved in checkpoints; without them eval mode also uses batch statistics.
        dev: the device the tensors live on (default a new ``Cpu()``).
        dtype: float32 (default) or float64.

    Raises:
        ValueError: ``momentum`` outside ``[0, 1]``. Forward: see :meth:`forward`.
    """

    rank = 2


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` inputs per channel ``C`` (Ioffe & Szegedy 2015;
    PyTorch's ``nn.BatchNorm2d``); statistics over ``N``, ``H`` and ``W``. Arguments, buffers
    and errors as :class:`BatchNorm1d`.
    """

    rank = 4
