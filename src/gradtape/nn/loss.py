"""Loss layers: PyTorch's ``nn.*Loss`` modules over :mod:`gradtape.losses`.

Each class takes PyTorch's constructor arguments (``reduction``, the loss's options, and the
deprecated ``size_average`` / ``reduce`` where PyTorch still takes them, mapped as PyTorch
maps them) and its ``forward`` calls the functional loss of the same name::

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    loss = criterion(model(x), y)          # y: an int64 tensor of class indices
    loss.backward()

A ``weight`` / ``pos_weight`` tensor given to a constructor is a buffer (saved, never
trained), as PyTorch registers it. The layers have no parameters; the output keeps the
input's tape kind in its static type (``Tensor[Any, T]``: its shape depends on
``reduction``, chosen at run time).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar, cast

from gradtape import _torch_stats, losses
from gradtape.errors import ShapeError
from gradtape.nn._typing import S, T
from gradtape.nn.module import Module

if TYPE_CHECKING:
    from gradtape.tensor import Tensor

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "NLLLoss",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "TripletMarginLoss",
]

_REDUCTIONS = ("none", "mean", "sum")
_F: Any = losses
"""The functional losses, called with the reduction chosen at run time (a ``str``): their
typed tables want a literal, and each ``forward`` states its result's type."""


def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """PyTorch's mapping of the deprecated ``size_average`` / ``reduce`` flags: when either is
    given it overrides ``reduction`` (``reduce=False``: ``"none"``; else ``size_average=False``:
    ``"sum"``; else ``"mean"``), with PyTorch's warning."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction instead (as PyTorch)",
        UserWarning,
        stacklevel=3,
    )
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


class _Loss(Module):
    """A loss layer: ``reduction`` checked at construction (PyTorch checks at the call; an
    unknown one is refused earlier here)."""

    _allowed: ClassVar[tuple[str, ...]] = _REDUCTIONS

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
        if reduction not in self._allowed:
            names = ", ".join(repr(r) for r in self._allowed)
            raise ValueError(f"{type(self).__name__}: reduction must be one of {names}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        """``reduction='mean'`` (what ``repr`` shows)."""
        return f"reduction={self.reduction!r}"


class _WeightedLoss(_Loss):
    """A loss layer with a ``weight`` buffer (a constant tensor or ``None``)."""

    buffer_names: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(
        self,
        weight: Tensor[Any, Any] | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.weight = weight


class _MarginLoss(_Loss):
    """A loss layer with a ``margin``: PyTorch's ``(margin, size_average, reduce, reduction)``
    constructor, and ``forward`` calls the functional loss named ``_fn`` as
    ``_fn(*inputs, *self._options(), reduction=self.reduction)`` (the options: ``(margin,)``)."""

    _fn: ClassVar[str]

    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def _options(self) -> tuple[Any, ...]:
        """The functional loss's arguments after the inputs."""
        return (self.margin,)

    def _loss(self, *inputs: Any) -> Any:
        """``_fn(*inputs, *options, reduction=reduction)``."""
        return getattr(_F, self._fn)(*inputs, *self._options(), reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error, PyTorch's ``nn.L1Loss``: :func:`gradtape.losses.l1_loss`.

    Args:
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``l1_loss(input, target, reduction)``: a scalar, or the input's shape for ``"none"``."""
        return cast("Tensor[Any, T]", _F.l1_loss(input, target, reduction=self.reduction))

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class MSELoss(_Loss):
    """Mean squared error, PyTorch's ``nn.MSELoss``: :func:`gradtape.losses.mse_loss`.

    Args:
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``mse_loss(input, target, reduction)``."""
        return cast("Tensor[Any, T]", _F.mse_loss(input, target, reduction=self.reduction))

    if TYPE_CHECKING:
        __call__ = forward


class SmoothL1Loss(_Loss):
    """Smooth L1 loss, PyTorch's ``nn.SmoothL1Loss``: :func:`gradtape.losses.smooth_l1_loss`.

    Args:
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        beta: the threshold between the quadratic and the linear part (``>= 0``).

    Raises:
        ValueError: an unknown ``reduction``, ``beta < 0``.
    """

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if not beta >= 0:
            raise ValueError(f"SmoothL1Loss: beta must be non-negative, got {beta}")
        self.beta = beta

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``smooth_l1_loss(input, target, reduction, beta)``."""
        return cast("Tensor[Any, T]", _F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta))

    if TYPE_CHECKING:
        __call__ = forward


class HuberLoss(_Loss):
    """Huber loss, PyTorch's ``nn.HuberLoss``: :func:`gradtape.losses.huber_loss`.

    Args:
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        delta: the threshold between the quadratic and the linear part (``> 0``).

    Raises:
        ValueError: an unknown ``reduction``, ``delta <= 0``.
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(None, None, reduction)
        if not delta > 0:
            raise ValueError(f"HuberLoss: delta must be positive, got {delta}")
        self.delta = delta

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``huber_loss(input, target, reduction, delta)``."""
        return cast("Tensor[Any, T]", _F.huber_loss(input, target, reduction=self.reduction, delta=self.delta))

    if TYPE_CHECKING:
        __call__ = forward


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence, PyTorch's ``nn.KLDivLoss``: :func:`gradtape.losses.kl_div`
    (``input`` holds log-probabilities).

    Args:
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default: over all elements, as PyTorch), ``"batchmean"``
            (the true KL of a batch), ``"sum"`` or ``"none"``.
        log_target: whether the target holds log-probabilities.

    Raises:
        ValueError: an unknown ``reduction``.
    """

    _allowed = ("none", "mean", "sum", "batchmean")

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``kl_div(input, target, reduction, log_target)``."""
        return cast("Tensor[Any, T]", _F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target))

    if TYPE_CHECKING:
        __call__ = forward


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities, PyTorch's ``nn.NLLLoss``:
    :func:`gradtape.losses.nll_loss` (classes on axis 1; PyTorch's weighted mean).

    Args:
        weight: optional per-class weights ``(C,)``, a buffer.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        ignore_index: a target value that contributes nothing.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def __init__(
        self,
        weight: Tensor[Any, Any] | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``nll_loss(input, target, weight, ignore_index, reduction)``."""
        return cast(
            "Tensor[Any, T]", _F.nll_loss(input, target, self.weight, self.ignore_index, reduction=self.reduction)
        )

    if TYPE_CHECKING:
        __call__ = forward


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy, PyTorch's ``nn.CrossEntropyLoss``:
    :func:`gradtape.losses.cross_entropy` (logits with the classes on axis 1, targets as
    class indices or probabilities).

    Args:
        weight: optional per-class weights ``(C,)``, a buffer.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        ignore_index: a class-index target value that contributes nothing.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        label_smoothing: in ``[0, 1]``.

    Raises:
        ValueError: an unknown ``reduction``, ``label_smoothing`` outside ``[0, 1]``.
    """

    def __init__(
        self,
        weight: Tensor[Any, Any] | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must lie in [0, 1], got {label_smoothing}")
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)``."""
        return cast(
            "Tensor[Any, T]",
            _F.cross_entropy(
                input,
                target,
                self.weight,
                self.ignore_index,
                reduction=self.reduction,
                label_smoothing=self.label_smoothing,
            ),
        )

    if TYPE_CHECKING:
        __call__ = forward


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities, PyTorch's ``nn.BCELoss``:
    :func:`gradtape.losses.binary_cross_entropy` (logs clamped at ``-100``).

    Args:
        weight: optional weight broadcast to the input, a buffer.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``binary_cross_entropy(input, target, weight, reduction)``."""
        return cast("Tensor[Any, T]", _F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction))

    if TYPE_CHECKING:
        __call__ = forward


class BCEWithLogitsLoss(_WeightedLoss):
    """Sigmoid + binary cross-entropy, PyTorch's ``nn.BCEWithLogitsLoss``:
    :func:`gradtape.losses.binary_cross_entropy_with_logits`.

    Args:
        weight: optional weight broadcast to the input, a buffer.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        pos_weight: optional weight of the positive term (one per class, last axis), a buffer.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    buffer_names = ("weight", "pos_weight")

    def __init__(
        self,
        weight: Tensor[Any, Any] | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor[Any, Any] | None = None,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.pos_weight = pos_weight

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight)``."""
        return cast(
            "Tensor[Any, T]",
            _F.binary_cross_entropy_with_logits(
                input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
            ),
        )

    if TYPE_CHECKING:
        __call__ = forward


class CosineEmbeddingLoss(_MarginLoss):
    """Cosine embedding loss, PyTorch's ``nn.CosineEmbeddingLoss``:
    :func:`gradtape.losses.cosine_embedding_loss`.

    Args:
        margin: the margin of dissimilar pairs.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    _fn = "cosine_embedding_loss"

    def forward(self, input1: Tensor[S, T], input2: Tensor[S, Any], target: Any) -> Tensor[Any, Any]:  # type: ignore[override]  # a loss takes its target(s) too
        """``cosine_embedding_loss(input1, input2, target, margin, reduction)``."""
        return cast("Tensor[Any, Any]", self._loss(input1, input2, target))

    if TYPE_CHECKING:
        __call__ = forward


class MarginRankingLoss(_MarginLoss):
    """Margin ranking loss, PyTorch's ``nn.MarginRankingLoss``:
    :func:`gradtape.losses.margin_ranking_loss`.

    Args:
        margin: the margin.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    _fn = "margin_ranking_loss"

    def forward(self, input1: Tensor[S, T], input2: Tensor[S, Any], target: Any) -> Tensor[Any, Any]:  # type: ignore[override]  # a loss takes its target(s) too
        """``margin_ranking_loss(input1, input2, target, margin, reduction)``."""
        return cast("Tensor[Any, Any]", self._loss(input1, input2, target))

    if TYPE_CHECKING:
        __call__ = forward


class HingeEmbeddingLoss(_MarginLoss):
    """Hinge embedding loss, PyTorch's ``nn.HingeEmbeddingLoss``:
    :func:`gradtape.losses.hinge_embedding_loss`.

    Args:
        margin: the margin (default ``1``).
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    _fn = "hinge_embedding_loss"

    def __init__(
        self, margin: float = 1.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``hinge_embedding_loss(input, target, margin, reduction)``."""
        return cast("Tensor[Any, T]", self._loss(input, target))

    if TYPE_CHECKING:
        __call__ = forward


class TripletMarginLoss(_MarginLoss):
    """Triplet margin loss with the Euclidean distance, PyTorch's ``nn.TripletMarginLoss``:
    :func:`gradtape.losses.triplet_margin_loss`.

    Args:
        margin: ``> 0``.
        p: the norm's degree, ``2`` only.
        eps: added to the differences.
        swap: use the distance swap.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``, ``margin <= 0``, ``p != 2``.
    """

    _fn = "triplet_margin_loss"

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(margin, size_average, reduce, reduction)
        if not margin > 0:
            raise ValueError(f"TripletMarginLoss: margin must be greater than 0, got {margin}")
        if p != 2:
            raise ValueError(f"TripletMarginLoss: only the Euclidean distance p=2 is implemented, got p={p}")
        self.p, self.eps, self.swap = p, eps, swap

    def _options(self) -> tuple[Any, ...]:
        """``(margin, p, eps, swap)``."""
        return (self.margin, self.p, self.eps, self.swap)

    def forward(self, anchor: Tensor[S, T], positive: Tensor[S, Any], negative: Tensor[S, Any]) -> Tensor[Any, Any]:  # type: ignore[override]  # a loss takes its target(s) too
        """``triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)``."""
        return cast("Tensor[Any, Any]", self._loss(anchor, positive, negative))

    if TYPE_CHECKING:
        __call__ = forward


class SoftMarginLoss(_Loss):
    """Soft margin loss, PyTorch's ``nn.SoftMarginLoss``: :func:`gradtape.losses.soft_margin_loss`
    (elementwise ``log(1 + exp(-target * input))``, targets ``1`` / ``-1``).

    Args:
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``soft_margin_loss(input, target, reduction)``."""
        return cast("Tensor[Any, T]", _F.soft_margin_loss(input, target, reduction=self.reduction))

    if TYPE_CHECKING:
        __call__ = forward


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss, PyTorch's ``nn.MultiLabelMarginLoss``:
    :func:`gradtape.nn.functional.multilabel_margin_loss` (per sample ``sum_{j in J} sum_{i not
    in J} max(0, 1 - (x[j] - x[i])) / C`` over its target classes ``J``, the entries of
    ``target`` before the first ``-1``).

    Args:
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Shapes: ``input`` ``(N, C)`` or ``(C,)`` float; ``target`` an integer tensor of the same
    shape; the result 0-d (``(N,)`` or ``()`` with ``"none"``).

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``multilabel_margin_loss(input, target, reduction)``."""
        return cast("Tensor[Any, T]", _torch_stats.multilabel_margin_loss(input, target, reduction=self.reduction))

    if TYPE_CHECKING:
        __call__ = forward


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss, PyTorch's ``nn.MultiLabelSoftMarginLoss``:
    :func:`gradtape.losses.multilabel_soft_margin_loss`.

    Args:
        weight: optional per-class weights of shape ``(C,)``, a buffer.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``multilabel_soft_margin_loss(input, target, weight, reduction)``."""
        return cast(
            "Tensor[Any, T]", _F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)
        )

    if TYPE_CHECKING:
        __call__ = forward


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss, PyTorch's ``nn.MultiMarginLoss``:
    :func:`gradtape.losses.multi_margin_loss`.

    Args:
        p: ``1`` (default) or ``2``.
        margin: the margin (default ``1``).
        weight: optional per-class weights of shape ``(C,)``, a buffer.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``, ``p`` not 1 or 2; on forward, as the functional
            loss.
        ShapeError: a weight that is not 1-D.
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor[Any, Any] | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if isinstance(p, bool) or p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got p={p!r}")
        if weight is not None and getattr(weight, "ndim", 1) != 1:
            raise ShapeError(f"MultiMarginLoss: weight must be 1-D (one per class), got shape {tuple(weight.shape)}")
        self.p, self.margin = p, margin

    def forward(self, input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``multi_margin_loss(input, target, p, margin, weight, reduction)``."""
        return cast(
            "Tensor[Any, T]",
            _F.multi_margin_loss(input, target, self.p, self.margin, self.weight, reduction=self.reduction),
        )

    def extra_repr(self) -> str:
        """``p=1, margin=1.0, reduction='mean'``."""
        return f"p={self.p}, margin={self.margin}, reduction={self.reduction!r}"

    if TYPE_CHECKING:
        __call__ = forward


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood, PyTorch's ``nn.GaussianNLLLoss``:
    :func:`gradtape.losses.gaussian_nll_loss`; ``forward(input, target, var)``.

    Args:
        full: add the constant ``0.5 log(2 pi)``.
        eps: the clamp's lower bound on the variance.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor[S, T], target: Any, var: Any) -> Tensor[Any, Any]:  # type: ignore[override]  # a loss takes its target(s) too
        """``gaussian_nll_loss(input, target, var, full, eps, reduction)``."""
        return cast(
            "Tensor[Any, Any]",
            _F.gaussian_nll_loss(input, target, var, self.full, self.eps, reduction=self.reduction),
        )

    if TYPE_CHECKING:
        __call__ = forward


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood, PyTorch's ``nn.PoissonNLLLoss``:
    :func:`gradtape.losses.poisson_nll_loss`; ``forward(log_input, target)``.

    Args:
        log_input: the input holds log-rates (default) or rates.
        full: add Stirling's approximation term.
        size_average, reduce: deprecated (PyTorch's mapping onto ``reduction``).
        eps: added to rates before the log (``log_input=False``).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor[S, T], target: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``poisson_nll_loss(log_input, target, log_input, full, eps, reduction)``."""
        return cast(
            "Tensor[Any, T]",
            _F.poisson_nll_loss(log_input, target, self.log_input, self.full, self.eps, reduction=self.reduction),
        )

    if TYPE_CHECKING:
        __call__ = forward


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (Graves et al. 2006), PyTorch's
    ``nn.CTCLoss``: :func:`gradtape.losses.ctc_loss`; ``forward(log_probs, targets,
    input_lengths, target_lengths)`` with ``log_probs`` ``(T, N, C)`` (or unbatched ``(T, C)``)
    log-probabilities, targets padded ``(N, S)`` or concatenated ``(sum(target_lengths),)``.

    Args:
        blank: the blank label, in ``[0, C)`` (checked on forward).
        reduction: ``"mean"`` (default: each loss divided by its target length, then averaged
            over the batch), ``"sum"`` or ``"none"``.
        zero_infinity: replace infinite losses (impossible alignments) and their gradients by
            zeros.

    Raises:
        ValueError: an unknown ``reduction``; on forward, as the functional loss.
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor[S, T], targets: Any, input_lengths: Any, target_lengths: Any) -> Tensor[Any, T]:  # type: ignore[override]  # a loss takes its target(s) too
        """``ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)``."""
        return cast(
            "Tensor[Any, T]",
            _F.ctc_loss(
                log_probs,
                targets,
                input_lengths,
                target_lengths,
                self.blank,
                reduction=self.reduction,
                zero_infinity=self.zero_infinity,
            ),
        )

    if TYPE_CHECKING:
        __call__ = forward
