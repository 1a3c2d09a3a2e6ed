"""Normalisation layers: :class:`LayerNorm`, :class:`RMSNorm`, :class:`BatchNorm1d`, :class:`BatchNorm2d`,
:class:`BatchNorm3d`, :class:`GroupNorm`, :class:`InstanceNorm1d`, :class:`InstanceNorm2d`,
:class:`InstanceNorm3d`, :class:`LocalResponseNorm`.

All keep the input's shape type and tape kind (``Tensor[S, T] -> Tensor[S, T]``). Each is
generic over its width, inferred from the constructor (``LayerNorm[D]``, ``RMSNorm[D]``: the
last dim; ``BatchNorm1d[C]``, ``BatchNorm2d[C]``: the channel dim 1), so that a layer typed
``LayerNorm[L[64]]`` rejects an input whose last dim is another static dim (``L[32]``, a
named axis). ``int`` (dynamic) dims are checked at run time instead: an input whose dim is
``int`` fits any layer, and a layer whose width is a run-time ``int`` (the constructor
called without an annotated target, or a bare ``LayerNorm`` annotation) takes any dim type.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Generic, cast, overload

import numpy as np
import numpy.typing as npt

from gradtape.devices.cpu import Cpu
from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.errors import ShapeError
from gradtape.nn._typing import D, N, S, T, Ts, X, Y, Z
from gradtape.nn.functional import _local_response_norm
from gradtape.nn.module import Module
from gradtape.ops.nn import (
    group_norm,
    instance_norm,
    layer_norm,
    rms_norm,
)  # the unwrapped ops: Module.__call__ checked x
from gradtape.shapes import AnyShape, Rank2, Rank3, Rank4, Rank5
from gradtape.tape import NONE_TAPE, NoneTape, recorded_call
from gradtape.tensor import Tensor

Array = np.ndarray[Any, Any]

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "LocalResponseNorm",
    "RMSNorm",
]


def _ones(shape: tuple[int, ...], dtype: npt.DTypeLike, dev: Any) -> Tensor[Any, NoneTape]:
    return Tensor(np.ones(shape, dtype), dev, NONE_TAPE)


def _zeros(shape: tuple[int, ...], dtype: npt.DTypeLike, dev: Any) -> Tensor[Any, NoneTape]:
    return Tensor(np.zeros(shape, dtype), dev, NONE_TAPE)


# Order of the forward overloads: a run-time-width layer (``self: LayerNorm[int]``) first, then
# the typed-width one, then the untyped input (AnyShape). The first keeps an untyped input
# untyped under pyright too (which otherwise solves a rank-specific overload against it);
# a typed-width layer skips it, so mypy reports a wrong width against the typed overload
# ("expected Tensor[tuple[..., Literal[64]], T]"). The first two overlap only where they
# agree (an int width), hence the ignored overload-overlap.


class _LastDimNorm(Module, Generic[D]):
    """A normalisation over the last dim ``D`` (and, for :class:`LayerNorm`, trailing dims
    before it): the typed ``forward`` of :class:`LayerNorm` and :class:`RMSNorm`, which
    implement ``_normalize``."""

    @overload
    def forward(self: _LastDimNorm[int], x: Tensor[S, T]) -> Tensor[S, T]: ...  # type: ignore[overload-overlap]
    @overload
    def forward(self, x: Tensor[tuple[*Ts, D], T]) -> Tensor[tuple[*Ts, D], T]: ...
    @overload
    def forward(self, x: Tensor[tuple[*Ts, int], T]) -> Tensor[tuple[*Ts, int], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """Normalised ``x``, same shape, dtype and tape kind."""
        return self._normalize(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def _normalize(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        raise NotImplementedError


class LayerNorm(_LastDimNorm[D]):
    """Layer normalisation over the trailing ``normalized_shape`` dims (Ba, Kiros & Hinton 2016;
    PyTorch's ``nn.LayerNorm``): ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the
    biased variance of each row (:func:`gradtape.ops.layer_norm`, one fused kernel).

    Typed ``LayerNorm[D]``, ``D`` the last dim: ``LayerNorm(64)`` under an annotated target
    ``norm: LayerNorm[L[64]]`` maps ``Tensor[tuple[..., L[64]], T]`` to the same type (shape
    and tape kind kept) and rejects another static last dim (an ``int`` one is checked at
    run time). Unannotated (``LayerNorm[int]``), or built from a tuple of trailing dims, it
    takes any shape type (checked at run time). An untyped input gives ``Tensor[Any, T]``.

    Args:
        normalized_shape: an int ``N`` (the last dim) or a tuple of trailing dims.
        eps: added to the variance (default ``1e-5``).
        elementwise_affine: whether to learn ``weight`` (ones) and ``bias`` (zeros).
        bias: whether to learn ``bias`` (with ``elementwise_affine``).
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            the parameters live on (default :func:`gradtape.get_default_device`;
            no randomness).
        dtype: float32 (default) or float64.

    Raises (on forward): ShapeError when ``x``'s trailing dims are not ``normalized_shape``.
    """

    @overload
    def __init__(
        self: LayerNorm[int],
        normalized_shape: tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self,
        normalized_shape: D,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    def __init__(
        self,
        normalized_shape: Any,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        self.weight = _ones(shape, dtype, dev) if elementwise_affine else None
        self.bias = _zeros(shape, dtype, dev) if elementwise_affine and bias else None

    def _normalize(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return layer_norm(x, self.normalized_shape, weight=self.weight, bias=self.bias, eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class RMSNorm(_LastDimNorm[D]):
    """Root-mean-square normalisation over the last dim (Zhang & Sennrich 2019; PyTorch's
    ``nn.RMSNorm``): ``y = x / sqrt(mean(x**2) + eps) * weight`` (:func:`gradtape.ops.rms_norm`).

    Typed ``RMSNorm[D]``, ``D`` the last dim, as :class:`LayerNorm`: a layer typed
    ``RMSNorm[L[64]]`` keeps ``Tensor[tuple[..., L[64]], T]`` and rejects another static last dim;
    ``RMSNorm[int]`` (unannotated) takes any shape type (checked at run time).

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
        dim: D,
        eps: float | None = None,
        elementwise_affine: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        d = cast(int, dim)  # D names the width at type level; an int at run time
        self.dim, self.eps = d, eps
        dev_ = pick_device(type(self).__name__, device, dev)
        self.weight = _ones((d,), pick_dtype(dtype), dev_) if elementwise_affine else None

    def _normalize(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        if x.shape[-1:] != (self.dim,):
            raise ShapeError(f"RMSNorm: input of shape {x.shape} does not end in dim {self.dim}")
        return rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}"


class _RunningNorm(Module):
    """What BatchNorm and InstanceNorm share: the affine parameters ``weight`` (ones) and
    ``bias`` (zeros) of shape ``(num_features,)``, the running-statistics buffers (PyTorch's
    ``None`` buffers without ``track_running_stats``) and the ``repr``."""

    _optional_state = ("num_batches_tracked",)

    running_mean: Tensor[Any, NoneTape] | None
    running_var: Tensor[Any, NoneTape] | None
    num_batches_tracked: Tensor[tuple[()], NoneTape] | None

    def _setup(
        self,
        num_features: int,
        eps: float,
        momentum: float | None,
        affine: bool,
        track_running_stats: bool,
        bias: bool,
        dev: Cpu,
        dtype: npt.DTypeLike,
    ) -> None:
        """Stores the options and creates the parameters (``bias`` only with ``affine`` and
        ``bias``) and buffers on ``dev``."""
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = _ones((num_features,), dtype, dev) if affine else None
        self.bias = _zeros((num_features,), dtype, dev) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", _zeros((num_features,), dtype, dev))
            self.register_buffer("running_var", _ones((num_features,), dtype, dev))
            self.register_buffer("num_batches_tracked", Tensor(np.zeros((), np.int64), dev, NONE_TAPE))
        else:  # PyTorch's None buffers: no running statistics, none in the state dict
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_RunningNorm, Generic[D]):
    rank: int = 2

    def __init__(
        self,
        num_features: D,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        name = type(self).__name__
        if momentum is not None and (
            isinstance(momentum, bool) or not isinstance(momentum, numbers.Real) or not 0.0 <= momentum <= 1.0
        ):
            raise ValueError(f"{name}: momentum must be in [0, 1] or None (a cumulative average), got {momentum!r}")
        # D names the width at type level; an int at run time
        dev = pick_device(name, device, dev)
        dtype = pick_dtype(dtype)
        self._setup(cast(int, num_features), eps, momentum, affine, track_running_stats, True, dev, dtype)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, ``num_batches_tracked`` 0 (PyTorch's), in place."""
        if self.running_mean is not None and self.running_var is not None and self.num_batches_tracked is not None:
            self.running_mean.data[...] = 0
            self.running_var.data[...] = 1
            self.num_batches_tracked.data[...] = 0

    def _axes(self, x: Tensor[Any, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        name = type(self).__name__
        ranks = (2, 3) if self.rank == 2 else (self.rank,)
        if x.ndim not in ranks or x.shape[1] != self.num_features:
            want = " or ".join(f"{r}-D" for r in ranks)
            raise ShapeError(
                f"{name}: expected a {want} input with {self.num_features} channels in dim 1, got shape {x.shape}"
            )
        axes = (0, *range(2, x.ndim))
        bshape = (1, self.num_features) + (1,) * (x.ndim - 2)
        return axes, bshape

    def forward(self, x: Any) -> Any:
        """Normalise each channel (dim 1) over the batch (and spatial) dims; same shape and dtype.

        Training mode (or ``track_running_stats=False``): batch statistics, differentiated
        through (``mean``/``var`` ops), and (with ``track_running_stats``) the running
        statistics updated in place: ``num_batches_tracked += 1``, then
        ``running = (1 - f) * running + f * batch_stat`` with the *unbiased* batch variance for
        ``running_var`` and ``f = momentum``, or ``f = 1 / num_batches_tracked`` (the
        cumulative average) with ``momentum=None``, as PyTorch. Eval mode: the running
        statistics, as constants.

        Raises:
            ShapeError: wrong rank, or dim 1 is not ``num_features``.
            ValueError: training with a single value per channel (the variance is undefined).
        """
        axes, bshape = self._axes(x)
        rm_b, rv_b, count = self.running_mean, self.running_var, self.num_batches_tracked
        if self.training or rm_b is None or rv_b is None:
            n = x.size // self.num_features
            if n < 2 and self.training:
                raise ValueError(
                    f"{type(self).__name__}: expected more than 1 value per channel when training, got shape {x.shape}"
                )
            mean = x.mean(axis=axes, keepdims=True)
            var = x.var(axis=axes, keepdims=True)
            if self.training and rm_b is not None and rv_b is not None and count is not None:
                _update_running(count.data, rm_b.data, rv_b.data, mean.data, var.data, self.momentum, n)
            y = (x - mean) / (var + self.eps).sqrt()
        else:  # in gradtape ops: a captured eval forward reads the running statistics at each replay
            y = (x - rm_b.reshape(bshape)) / (rv_b.reshape(bshape) + self.eps).sqrt()
        if self.weight is not None and self.bias is not None:
            y = y * self.weight.reshape(bshape) + self.bias.reshape(bshape)
        return y


@recorded_call  # gradtape.capture reruns it at each replay, on that replay's batch statistics
def _update_running(
    count: Array, rm: Array, rv: Array, mean: Array, var: Array, momentum: float | None, n: int
) -> None:
    """Batch norm's running statistics updated in place (PyTorch's rule): ``count += 1``, then
    ``running = (1 - f) * running + f * batch_stat`` with ``f = momentum`` (or
    ``1 / count``, the cumulative average, for ``None``) and the unbiased batch variance
    (times ``n / (n - 1)``, ``n`` values per channel) for ``running_var``."""
    count[...] += 1
    m = 1.0 / float(count) if momentum is None else momentum
    rm *= 1 - m
    rm += m * mean.reshape(-1)
    rv *= 1 - m
    rv += m * var.reshape(-1) * (n / max(n - 1, 1))


class BatchNorm1d(_BatchNorm[D]):
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
        momentum: running-statistics update factor (default ``0.1``, as PyTorch), or ``None``
            for the cumulative average (factor ``1 / num_batches_tracked``).
        affine: whether to learn ``weight`` (ones) and ``bias`` (zeros), shape ``(C,)``.
        track_running_stats: keep the buffers ``running_mean`` (zeros), ``running_var``
            (ones) and ``num_batches_tracked`` (a 0-d int64 count of training batches), saved
            in checkpoints under PyTorch's names, so a PyTorch checkpoint loads strictly;
            ``False``: the three are ``None`` (none in the state dict, as PyTorch) and eval
            mode also uses batch statistics.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            the tensors live on (default :func:`gradtape.get_default_device`).
        dtype: float32 (default) or float64.

    Typed ``BatchNorm1d[C]``, ``C`` the channel count ``num_features``: a layer typed
    ``BatchNorm1d[L[16]]`` maps ``Tensor[Rank2[N, L[16]], T]`` and
    ``Tensor[Rank3[N, L[16], L_], T]`` to the same type (shape and tape kind kept) and
    rejects another static channel dim (an ``int`` one is checked at run time);
    ``BatchNorm1d[int]`` (unannotated, or a bare annotation) takes any shape type (channels
    and rank checked at run time). An untyped input gives ``Tensor[Any, T]``.

    Raises:
        ValueError: ``momentum`` neither ``None`` nor in ``[0, 1]``. Forward: see :meth:`forward`.
    """

    rank = 2

    @overload
    def forward(self: BatchNorm1d[int], x: Tensor[S, T]) -> Tensor[S, T]: ...  # type: ignore[overload-overlap]
    @overload
    def forward(self, x: Tensor[Rank2[N, D], T]) -> Tensor[Rank2[N, D], T]: ...
    @overload
    def forward(self, x: Tensor[Rank2[N, int], T]) -> Tensor[Rank2[N, int], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[N, D, X], T]) -> Tensor[Rank3[N, D, X], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[N, int, X], T]) -> Tensor[Rank3[N, int, X], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``(N, C)`` or ``(N, C, L)`` normalised per channel; same shape, dtype and tape kind.

        Training mode (or ``track_running_stats=False``): batch statistics, differentiated
        through, and the running statistics updated in place (``momentum``; the unbiased
        batch variance for ``running_var``, as PyTorch). Eval mode: the running statistics.

        Raises:
            ShapeError: ``x`` is not 2-D or 3-D, or dim 1 is not ``num_features``.
            ValueError: training with a single value per channel.
        """
        return super().forward(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class BatchNorm2d(_BatchNorm[D]):
    """Batch normalisation of ``(N, C, H, W)`` inputs per channel ``C`` (Ioffe & Szegedy 2015;
    PyTorch's ``nn.BatchNorm2d``); statistics over ``N``, ``H`` and ``W``. Arguments, buffers
    and errors as :class:`BatchNorm1d`.

    Typed ``BatchNorm2d[C]``, ``C`` the channel count: a layer typed ``BatchNorm2d[L[16]]`` maps
    ``Tensor[Rank4[N, L[16], H, W], T]`` to the same type and rejects another static channel dim
    (an ``int`` one is checked at run time); ``BatchNorm2d[int]`` (unannotated) takes any shape
    type (checked at run time).
    """

    rank = 4

    @overload
    def forward(self: BatchNorm2d[int], x: Tensor[S, T]) -> Tensor[S, T]: ...  # type: ignore[overload-overlap]
    @overload
    def forward(self, x: Tensor[Rank4[N, D, X, Y], T]) -> Tensor[Rank4[N, D, X, Y], T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[N, int, X, Y], T]) -> Tensor[Rank4[N, int, X, Y], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``(N, C, H, W)`` normalised per channel; same shape, dtype and tape kind. Training
        and eval mode as :meth:`BatchNorm1d.forward`.

        Raises:
            ShapeError: ``x`` is not 4-D, or dim 1 is not ``num_features``.
            ValueError: training with a single value per channel.
        """
        return super().forward(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class BatchNorm3d(_BatchNorm[D]):
    """Batch normalisation of ``(N, C, D, H, W)`` inputs per channel ``C`` (Ioffe & Szegedy 2015;
    PyTorch's ``nn.BatchNorm3d``): ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the
    mean and biased variance over ``N``, ``D``, ``H`` and ``W`` in training mode (the running
    estimates in eval mode). Arguments (``num_features, eps=1e-5, momentum=0.1, affine=True,
    track_running_stats=True``, ``dev=``/``device=``/``dtype=``), buffers (``running_mean``,
    ``running_var``, ``num_batches_tracked``: PyTorch's state-dict names), dtypes (float32 or
    float64) and errors as :class:`BatchNorm1d`.

    Typed ``BatchNorm3d[C]``, ``C`` the channel count: a layer typed ``BatchNorm3d[L[16]]`` maps
    ``Tensor[Rank5[N, L[16], Z, H, W], T]`` to the same type and rejects another static channel
    dim (an ``int`` one is checked at run time); ``BatchNorm3d[int]`` (unannotated) takes any
    shape type (checked at run time).

    Raises:
        ValueError: ``momentum`` neither ``None`` nor in ``[0, 1]``. Forward: see :meth:`forward`.
    """

    rank = 5

    @overload
    def forward(self: BatchNorm3d[int], x: Tensor[S, T]) -> Tensor[S, T]: ...  # type: ignore[overload-overlap]
    @overload
    def forward(self, x: Tensor[Rank5[N, D, Z, X, Y], T]) -> Tensor[Rank5[N, D, Z, X, Y], T]: ...
    @overload
    def forward(self, x: Tensor[Rank5[N, int, Z, X, Y], T]) -> Tensor[Rank5[N, int, Z, X, Y], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``(N, C, D, H, W)`` normalised per channel; same shape, dtype and tape kind. Training
        and eval mode as :meth:`BatchNorm1d.forward` (batch statistics differentiated through and
        the running statistics updated in place with the unbiased batch variance; eval: the
        running statistics).

        Raises:
            ShapeError: ``x`` is not 5-D, or dim 1 is not ``num_features``.
            ValueError: training with a single value per channel.
        """
        return super().forward(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


# ----- group norm and instance norm (issue 27) ---------------------------------------------


class GroupNorm(Module, Generic[D]):
    """Group normalisation (Wu & He 2018; PyTorch's ``nn.GroupNorm``) of ``(N, C, *)`` inputs:
    the ``C`` channels split into ``num_groups`` groups, each sample's group normalised over its
    channels and spatial dims, then ``* weight[c] + bias[c]`` (:func:`gradtape.ops.group_norm`,
    fused kernels). The same in training and eval mode.

    Typed ``GroupNorm[C]``, ``C`` the channel count (``num_channels``): a layer typed
    ``GroupNorm[L[32]]`` maps ``Tensor[Rank2[N, L[32]], T]``, ``Rank3[N, L[32], X]`` and
    ``Rank4[N, L[32], X, Y]`` to the same type and rejects another static channel dim (an
    ``int`` one is checked at run time); ``GroupNorm[int]`` (unannotated) takes any shape type.
    With gradtape's mypy plugin an unannotated ``GroupNorm(8, 32)`` remembers its 32, as the
    other layers do.

    Args:
        num_groups: groups; must divide ``num_channels``.
        num_channels: ``C``.
        eps: added to the variance (default ``1e-5``).
        affine: whether to learn ``weight`` (ones) and ``bias`` (zeros), shape ``(C,)``.
        bias: whether to learn ``bias`` (with ``affine``; PyTorch 2's keyword).
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            the parameters live on (default :func:`gradtape.get_default_device`);
            dtype: float32 (default) or float64.

    Raises:
        ValueError: ``num_groups`` does not divide ``num_channels`` (as PyTorch, at construction).
        Forward: ShapeError when dim 1 of the input is not ``num_channels``.
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: D,
        eps: float = 1e-5,
        affine: bool = True,
        *,
        bias: bool = True,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        nc = cast(int, num_channels)  # D names the width at type level; an int at run time
        if num_groups <= 0 or nc % num_groups:
            raise ValueError(f"GroupNorm: num_channels={nc} must be divisible by num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, nc, eps, affine
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        self.weight = _ones((nc,), dtype, dev) if affine else None
        self.bias = _zeros((nc,), dtype, dev) if affine and bias else None

    @overload
    def forward(self: GroupNorm[int], x: Tensor[S, T]) -> Tensor[S, T]: ...  # type: ignore[overload-overlap]
    @overload
    def forward(self, x: Tensor[Rank2[N, D], T]) -> Tensor[Rank2[N, D], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[N, D, X], T]) -> Tensor[Rank3[N, D, X], T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[N, D, X, Y], T]) -> Tensor[Rank4[N, D, X, Y], T]: ...
    @overload
    def forward(self, x: Tensor[Rank4[N, int, X, Y], T]) -> Tensor[Rank4[N, int, X, Y], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``x`` ``(N, C, *)`` normalised per group; same shape, dtype and tape kind.

        Raises:
            ShapeError: ``x`` has fewer than 2 dims or dim 1 is not ``num_channels``.
        """
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ShapeError(f"GroupNorm: expected an input (N, {self.num_channels}, *), got shape {x.shape}")
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(_RunningNorm):
    rank: int = 3

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        *,
        bias: bool = True,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        self._setup(num_features, eps, momentum, affine, track_running_stats, bias, dev, dtype)

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Each sample's channel normalised over its spatial dims (training mode, or without
        running statistics; with them, training mode also updates them in place, as
        PyTorch: ``momentum``, unbiased variances, ``num_batches_tracked`` left alone), or by
        the running statistics (eval mode with ``track_running_stats``). An unbatched input
        (one dim fewer) is normalised as a batch of one. Same shape, dtype and tape kind.

        Raises:
            ShapeError: the input's rank is neither ``rank`` nor ``rank - 1``, or its channel
                dim is not ``num_features`` (with ``affine`` or running statistics, which need it).
            ValueError: one spatial element per channel in training.
        """
        name = type(self).__name__
        if x.ndim not in (self.rank, self.rank - 1):
            raise ShapeError(f"{name}: expected a {self.rank - 1}-D or {self.rank}-D input, got shape {x.shape}")
        unbatched = x.ndim == self.rank - 1
        xb: Tensor[Any, Any] = x.unsqueeze(0) if unbatched else x
        if xb.shape[1] != self.num_features and (self.affine or self.track_running_stats):
            raise ShapeError(f"{name}: expected {self.num_features} channels in input of shape {x.shape}")
        y = instance_norm(
            xb,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        out: Tensor[S, T] = y.squeeze(0) if unbatched else y
        return out

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation (Ulyanov et al. 2016; PyTorch's ``nn.InstanceNorm1d``) of
    ``(N, C, L)`` or unbatched ``(C, L)`` inputs: each sample's channel over its length,
    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` (:func:`gradtape.ops.instance_norm`).

    Args:
        num_features: ``C``.
        eps: added to the variance (default ``1e-5``).
        momentum: running-statistics factor (default ``0.1``; ``None`` counts as 0, as PyTorch).
        affine: learn ``weight`` (ones) and ``bias`` (zeros), ``(C,)`` (default ``False``).
        track_running_stats: keep ``running_mean``/``running_var``/``num_batches_tracked``
            buffers (PyTorch's state-dict keys) and use them in eval mode (default ``False``).
        bias: learn ``bias`` (with ``affine``). dev, dtype: as :class:`GroupNorm`.

    Raises (on forward): see :meth:`_InstanceNorm.forward`.
    """

    rank = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of ``(N, C, H, W)`` or unbatched ``(C, H, W)`` inputs (PyTorch's
    ``nn.InstanceNorm2d``): each sample's channel over ``H`` and ``W``. Arguments, buffers and
    errors as :class:`InstanceNorm1d`."""

    rank = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` inputs (Ulyanov
    et al. 2016; PyTorch's ``nn.InstanceNorm3d``): each sample's channel normalised over ``D``,
    ``H`` and ``W``, ``y = (x - mean) / sqrt(var + eps) * weight + bias`` (biased variance;
    :func:`gradtape.ops.instance_norm`). Arguments (``num_features, eps=1e-5, momentum=0.1,
    affine=False, track_running_stats=False``, ``bias=``, ``dev=``/``device=``/``dtype=``),
    buffers, dtypes (float32 or float64) and errors as :class:`InstanceNorm1d`.

    Raises (on forward): ShapeError for an input neither 4-D nor 5-D, or with another channel
    count (with ``affine`` or running statistics); ValueError for one element per channel in
    training (see :meth:`_InstanceNorm.forward`).
    """

    rank = 5


class LocalResponseNorm(Module):
    """Local response normalisation across channels (Krizhevsky, Sutskever & Hinton 2012, AlexNet;
    PyTorch's ``nn.LocalResponseNorm``) of ``(N, C, *)`` inputs (at least 3-D):
    ``y[:, c] = x[:, c] / (k + alpha / size * sum of x[:, c']**2 over the size channels
    c - size // 2 .. c + (size - 1) // 2) ** beta`` (:func:`gradtape.nn.functional.local_response_norm`).
    No parameters. Same shape, dtype and tape kind as the input.

    Args:
        size: the number of neighbouring channels summed (``>= 1``).
        alpha: the scale (default ``1e-4``). beta: the exponent (default ``0.75``).
        k: the additive constant (default ``1.0``).

    Raises:
        TypeError: ``size`` not an int, ``alpha``/``beta``/``k`` not numbers. ValueError: ``size < 1``.
        (On forward) ValueError for an input of fewer than 3 dims, DTypeError for a non-float one.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"LocalResponseNorm: size must be an int, got {type(size).__name__} {size!r}")
        if size < 1:
            raise ValueError(f"LocalResponseNorm: size must be at least 1, got {size}")
        for name, v in (("alpha", alpha), ("beta", beta), ("k", k)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"LocalResponseNorm: {name} must be a real number, got {type(v).__name__} {v!r}")
        self.size, self.alpha, self.beta, self.k = int(size), float(alpha), float(beta), float(k)

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``x`` normalised across channels; same shape, dtype and tape kind."""
        out: Tensor[S, T] = _local_response_norm("LocalResponseNorm", x, self.size, self.alpha, self.beta, self.k)
        return out

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
