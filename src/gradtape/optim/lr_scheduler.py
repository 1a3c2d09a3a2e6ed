"""Learning-rate schedules at PyTorch's path, ``gradtape.optim.lr_scheduler``, with PyTorch's
names, arguments, defaults, formulas and checkpoint behaviour.

The schedules: :class:`LambdaLR`, :class:`MultiplicativeLR`, :class:`StepLR`,
:class:`MultiStepLR`, :class:`ConstantLR`, :class:`LinearLR`, :class:`ExponentialLR`,
:class:`PolynomialLR`, :class:`CosineAnnealingLR`, :class:`CosineAnnealingWarmRestarts`,
:class:`CyclicLR`, :class:`OneCycleLR`, :class:`ReduceLROnPlateau`, and the combinations
:class:`SequentialLR` (one after another) and :class:`ChainedScheduler` (all together).

A schedule sets each parameter group's ``lr`` when constructed (epoch 0) and on each
:meth:`LRScheduler.step` (once per epoch, or per batch for :class:`OneCycleLR` and
:class:`CyclicLR`, after the optimizer's steps), keeping the group's base rate in the group
as ``"initial_lr"`` and its position in ``last_epoch``. :meth:`~LRScheduler.get_last_lr`
gives the rates it set. Chainable schedules (StepLR, MultiStepLR, ConstantLR, LinearLR,
ExponentialLR, PolynomialLR, CosineAnnealingLR, MultiplicativeLR) update the group's current
rate recursively, as PyTorch's do, so that a :class:`ChainedScheduler` composes them;
``step(epoch)`` (deprecated in PyTorch, as here) uses their closed form instead, where they
have one (MultiplicativeLR has none, as in PyTorch).

Resuming, as in PyTorch: save ``opt.state_dict()`` and ``sched.state_dict()``; to resume,
build the optimizer and the schedule as before and load both::

    opt = gradtape.optim.SGD(model.parameters(), lr=0.1)
    sched = gradtape.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
    opt.load_state_dict(ckpt["opt"])      # the decayed lr and the group's initial_lr
    sched.load_state_dict(ckpt["sched"])  # last_epoch, base_lrs, ...
    for epoch in range(start, 8):
        train_one_epoch(opt)
        sched.step()                      # continues the schedule exactly

One difference from PyTorch: a negative rate becomes 0, since gradtape's optimizers take no
negative rate (PyTorch sets one where the recursive cosine rounds 0 to ``-1e-18``, where
OneCycleLR's linear anneal is stepped once past its last phase, which a loop of ``total_steps``
``step()`` calls does after its last batch, and where a ``LambdaLR`` or ``MultiplicativeLR``
lambda or a ``CyclicLR`` custom ``scale_fn`` is negative).
"""

from __future__ import annotations

import copy
import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, SupportsFloat, TypedDict

from gradtape import tape as _tp
from gradtape.optim._checks import _real, check_nonneg, check_nonneg_int, check_positive_int
from gradtape.optim.optimizers import Optimizer

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]


class _Phase(TypedDict):
    """One phase of :class:`OneCycleLR` (PyTorch's keys): it ends at ``end_step`` and anneals
    between the group entries named by the other keys."""

    end_step: float
    start_lr: str
    end_lr: str
    start_momentum: str
    end_momentum: str


def _check_last_epoch(owner: str, last_epoch: int) -> int:
    if isinstance(last_epoch, bool) or not isinstance(last_epoch, int) or last_epoch < -1:
        raise ValueError(f"{owner}: last_epoch must be an int >= -1, got {last_epoch!r}")
    return last_epoch


def _per_group(owner: str, name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """``value`` once per parameter group: a list or tuple of that length, or one value repeated."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(
                f"{owner}: {name} must have the same length as optimizer.param_groups: "
                f"{name} has {len(value)} values, param_groups has {n}"
            )
        return list(value)
    return [value] * n


def _number(owner: str, name: str, value: Any) -> float:
    """``float(value)``, as PyTorch converts ``CyclicLR``'s step sizes: ``TypeError`` or
    ``ValueError`` (a string that is not a number) as ``float`` raises them, naming ``owner``
    and ``name``."""
    try:
        return float(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{owner}: {name} must be a number, got {type(value).__name__} {value!r}") from None


def _momentum_key(owner: str, optimizer: Optimizer) -> bool:
    """Whether ``cycle_momentum`` cycles ``betas[0]`` (Adam-like optimizers) rather than
    ``momentum`` (SGD, RMSprop), PyTorch's rule: by the optimizer's defaults.

    Raises:
        ValueError: the optimizer has neither.
    """
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(
            f"{owner}: optimizer must support momentum or beta1 with `cycle_momentum` option enabled "
            f"({type(optimizer).__name__} has neither)"
        )
    return "betas" in optimizer.defaults


def _set_momentum(group: dict[str, Any], use_beta1: bool, value: float) -> None:
    """Set a group's cycled momentum: ``betas[0]`` or ``momentum``."""
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _init_momentum(
    owner: str, optimizer: Optimizer, base_momentum: Any, max_momentum: Any, last_epoch: int
) -> tuple[bool, list[float], list[float]]:
    """``cycle_momentum``'s set-up, shared by :class:`OneCycleLR` and :class:`CyclicLR` (as in
    PyTorch): which key is cycled, and the per-group base and max momentums; when starting
    (``last_epoch == -1``), each group's momentum is set to its max and the group carries
    ``max_momentum`` and ``base_momentum``.

    Raises:
        ValueError: the optimizer has neither ``momentum`` nor ``betas``, or a per-group list
            of the wrong length.
        TypeError: a momentum is not a real number.
    """
    use_beta1 = _momentum_key(owner, optimizer)
    bases = [_real(owner, "base_momentum", v) for v in _per_group(owner, "base_momentum", optimizer, base_momentum)]
    maxes = [_real(owner, "max_momentum", v) for v in _per_group(owner, "max_momentum", optimizer, max_momentum)]
    if last_epoch == -1:
        for hi, lo, group in zip(maxes, bases, optimizer.param_groups, strict=True):
            _set_momentum(group, use_beta1, hi)
            group["max_momentum"] = hi
            group["base_momentum"] = lo
    return use_beta1, bases, maxes


class LRScheduler:
    """Base class of the schedules: PyTorch's ``torch.optim.lr_scheduler.LRScheduler``.

    Args:
        optimizer: a :mod:`gradtape.optim` optimizer; every parameter group gets the schedule
            applied to its own rate.
        last_epoch: ``-1`` (default) to start: each group's ``initial_lr`` is set to its
            ``lr`` where not set yet. ``k >= 0`` to resume after epoch ``k`` (PyTorch's older
            way; every group must carry ``initial_lr``, e.g. from a loaded optimizer
            ``state_dict``); loading the schedule's :meth:`state_dict` is the usual way.

    Attributes:
        base_lrs: each group's ``initial_lr``.
        last_epoch: the epoch of the rates set last (0 after construction).

    Raises:
        TypeError: ``optimizer`` is not a gradtape optimizer.
        KeyError: ``last_epoch >= 0`` and a group has no ``initial_lr``.
        ValueError: ``last_epoch < -1``.
    """

    optimizer: Optimizer
    base_lrs: list[float]
    last_epoch: int
    _last_lr: list[float]
    _step_count: int
    _is_initial: bool

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        name = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
        last_epoch = _check_last_epoch(name, last_epoch)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{name}: param 'initial_lr' is not specified in param_groups[{i}] when resuming with "
                        f"last_epoch={last_epoch}; load the optimizer's state_dict first, or start with last_epoch=-1"
                    )
        self.base_lrs = [float(group["initial_lr"]) for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """The step of construction: epoch ``last_epoch + 1``, in the "initial" mode where
        chainable schedules keep the group's current rate."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rates for ``last_epoch`` from the groups' current rates (the chainable form);
        :meth:`step` calls it. Read the rates in use with :meth:`get_last_lr`."""
        raise NotImplementedError

    def _closed_form(self) -> list[float] | None:
        """The rates for ``last_epoch`` from ``base_lrs`` alone, or ``None`` where the schedule
        has no closed form (``step(epoch)`` then uses :meth:`get_lr`)."""
        return None

    @_tp.recorded_call
    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch and set each group's ``lr``: PyTorch's ``scheduler.step()``.

        Args:
            epoch: deprecated (as in PyTorch, with a ``UserWarning``): jump to this epoch,
                using the closed form where the schedule has one.
        """
        self._step_count += 1
        if epoch is not None:
            warnings.warn(
                f"{type(self).__name__}.step(epoch): the epoch argument is deprecated, as in PyTorch; "
                "call step() once per epoch (the closed form is used for an explicit epoch)",
                UserWarning,
                stacklevel=2,
            )
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = self._closed_form()
            values = closed if closed is not None else self.get_lr()
        self._set_lrs(values)

    def _set_lrs(self, values: Sequence[float]) -> None:
        groups = self.optimizer.param_groups
        for group, lr in zip(groups, values, strict=True):
            group["lr"] = max(float(lr), 0.0)  # gradtape's optimizers take no negative rate
        self._last_lr = [float(g["lr"]) for g in groups]

    def get_last_lr(self) -> list[float]:
        """The rates the last :meth:`step` (or the constructor) set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (``last_epoch``, ``base_lrs``, the arguments, ...),
        copied: PyTorch's ``scheduler.state_dict()``."""
        return {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved (copied); the optimizer's own state (the rates
        in its groups) comes from the optimizer's ``load_state_dict``.

        Raises:
            TypeError: ``state_dict`` is not a dict.
            ValueError: it holds ``base_lrs`` for another number of parameter groups.
        """
        name = type(self).__name__
        if not isinstance(state_dict, dict):
            raise TypeError(f"{name}.load_state_dict: expected a dict, got {type(state_dict).__name__}")
        base = state_dict.get("base_lrs")
        if base is not None and len(base) != len(self.optimizer.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: the saved schedule has {len(base)} base rates, "
                f"the optimizer has {len(self.optimizer.param_groups)} parameter groups"
            )
        self.__dict__.update({k: copy.deepcopy(v) for k, v in state_dict.items() if k != "optimizer"})

    def _group_lrs(self) -> list[float]:
        return [float(g["lr"]) for g in self.optimizer.param_groups]


class _LambdaSchedule(LRScheduler):
    """The part :class:`LambdaLR` and :class:`MultiplicativeLR` share: one lambda per
    parameter group, and their :meth:`state_dict` rule (PyTorch's): for each lambda that is a
    callable object rather than a function, its ``__dict__``; ``None`` for a function."""

    lr_lambdas: list[Callable[[int], float]]

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        name = type(self).__name__
        if isinstance(optimizer, Optimizer):
            lambdas = _per_group(name, "lr_lambda", optimizer, lr_lambda)
            for fn in lambdas:
                if not callable(fn):
                    raise TypeError(f"{name}: lr_lambda should be a function, got {type(fn).__name__}")
            self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """As :meth:`LRScheduler.state_dict`, with ``lr_lambdas``: ``None`` for a function, the
        ``__dict__`` of a callable object."""
        out = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        out["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else copy.deepcopy(fn.__dict__) for fn in self.lr_lambdas
        ]
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """As :meth:`LRScheduler.load_state_dict`; each saved ``__dict__`` updates its lambda."""
        saved = dict(state_dict)
        lambdas = saved.pop("lr_lambdas", None)
        super().load_state_dict(saved)
        for fn, d in zip(self.lr_lambdas, lambdas or [], strict=False):
            if d is not None:
                fn.__dict__.update(copy.deepcopy(d))


class LambdaLR(_LambdaSchedule):
    """``lr = initial_lr * lr_lambda(epoch)`` (PyTorch's ``LambdaLR``), e.g. a warm-up.

    Args:
        lr_lambda: a function of the epoch (an int), or one per parameter group.

    :meth:`state_dict` saves, for each lambda that is a callable object rather than a
    function, its ``__dict__`` (PyTorch's rule); functions are not saved.

    Raises:
        TypeError: a lambda is not callable.
        ValueError: a list of lambdas whose length is not the number of groups.
    """

    def get_lr(self) -> list[float]:
        """``base_lr * lr_lambda(last_epoch)`` per group."""
        return [base * float(fn(self.last_epoch)) for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_LambdaSchedule):
    """Multiply each group's rate by ``lr_lambda(epoch)`` every epoch (PyTorch's
    ``MultiplicativeLR``): ``lr(epoch) = lr(epoch - 1) * lr_lambda(epoch)`` for ``epoch >= 1``,
    ``lr(0) = initial_lr``; so ``lr(epoch) = initial_lr * lr_lambda(1) * ... * lr_lambda(epoch)``.
    There is no closed form (as in PyTorch): ``step(epoch)`` multiplies the current rate by
    ``lr_lambda(epoch)`` once.

    Args:
        lr_lambda: a function of the epoch (an int) giving the factor, or one per parameter
            group.
        last_epoch: as :class:`LRScheduler`.

    :meth:`state_dict` saves, for each lambda that is a callable object rather than a
    function, its ``__dict__`` (PyTorch's rule, as :class:`LambdaLR`); functions are not saved.

    Raises:
        TypeError: ``optimizer`` is not a gradtape optimizer, or a lambda is not callable.
        ValueError: a list of lambdas whose length is not the number of groups, or
            ``last_epoch < -1``.
        KeyError: ``last_epoch >= 0`` and a group has no ``initial_lr``.
    """

    def get_lr(self) -> list[float]:
        """The current rates times ``lr_lambda(last_epoch)`` (kept as they are by the constructor)."""
        if self._is_initial:
            return self._group_lrs()
        return [lr * float(fn(self.last_epoch)) for fn, lr in zip(self.lr_lambdas, self._group_lrs(), strict=True)]


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs (PyTorch's ``StepLR``):
    ``lr(epoch) = initial_lr * gamma ** (epoch // step_size)``, applied recursively.

    Raises:
        ValueError: ``step_size`` is not a positive int, or ``gamma`` is negative or not finite.
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = check_positive_int("StepLR", "step_size", step_size)
        self.gamma = check_nonneg("StepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates, times ``gamma`` at each non-zero multiple of ``step_size``."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _closed_form(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each milestone epoch (PyTorch's ``MultiStepLR``):
    ``lr(epoch) = initial_lr * gamma ** (number of milestones <= epoch)``; a milestone given
    twice counts twice.

    Raises:
        ValueError: a milestone is not an int >= 0, or ``gamma`` is negative or not finite.
    """

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        ms = list(milestones)
        for m in ms:
            check_nonneg_int("MultiStepLR", "milestones", m)
        self.milestones: Counter[int] = Counter(ms)
        self.gamma = check_nonneg("MultiStepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates, times ``gamma ** count`` at a milestone."""
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._group_lrs()]

    def _closed_form(self) -> list[float]:
        ms = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(ms, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the rate by ``factor`` for the first ``total_iters`` epochs, then restore it
    (PyTorch's ``ConstantLR``, a constant warm-up): ``lr(epoch) = initial_lr * factor`` for
    ``epoch < total_iters``, ``initial_lr`` from then on. Applied recursively, as PyTorch does:
    times ``factor`` at epoch 0 and times ``1 / factor`` at epoch ``total_iters``, so it
    composes with other schedules (:class:`ChainedScheduler`).

    Args:
        factor: the factor, in ``(0, 1]`` (default ``1/3``).
        total_iters: the number of epochs it applies to, a positive int (default 5).
        last_epoch: as :class:`LRScheduler`.

    Raises:
        TypeError: ``optimizer`` is not a gradtape optimizer, or ``factor`` is not a real
            number.
        ValueError: ``factor`` outside ``(0, 1]`` (PyTorch refuses it outside ``[0, 1]`` and
            divides by a zero factor at epoch ``total_iters``), ``total_iters`` not a positive
            int, or ``last_epoch < -1``.
        KeyError: ``last_epoch >= 0`` and a group has no ``initial_lr``.
    """

    def __init__(
        self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1
    ) -> None:
        value = _real("ConstantLR", "factor", factor)
        if not 0.0 < value <= 1.0:
            raise ValueError(f"ConstantLR: factor (the constant multiplicative factor) must be in (0, 1], got {factor}")
        self.factor = value
        self.total_iters = check_positive_int("ConstantLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates times ``factor`` at epoch 0, times ``1 / factor`` at epoch
        ``total_iters``, else as they are."""
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _closed_form(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [base * (self.factor + done * (1 - self.factor)) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch (PyTorch's ``ExponentialLR``):
    ``lr(epoch) = initial_lr * gamma ** epoch``.

    Raises:
        ValueError: ``gamma`` is negative or not finite.
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = check_nonneg("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates times ``gamma`` (kept as they are by the constructor)."""
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _closed_form(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the rate by a factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs, then hold it (PyTorch's ``LinearLR``, a warm-up):
    ``lr(epoch) = initial_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)``.

    Raises:
        ValueError: ``start_factor`` outside ``(0, 1]``, ``end_factor`` outside ``[0, 1]``,
            or ``total_iters`` not a positive int.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        start = _real("LinearLR", "start_factor", start_factor)
        end = _real("LinearLR", "end_factor", end_factor)
        if not 0.0 < start <= 1.0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0.0 <= end <= 1.0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor, self.end_factor = start, end
        self.total_iters = check_positive_int("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates times ``start_factor`` at epoch 0, then times the ratio of
        consecutive factors up to ``total_iters``."""
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in self._group_lrs()]

    def _closed_form(self) -> list[float]:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * frac) for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``initial_lr`` to ``eta_min`` over ``T_max`` epochs (SGDR without
    restarts, Loshchilov & Hutter 2017; PyTorch's ``CosineAnnealingLR``).

    Closed form: ``lr(t) = eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``;
    stepped with PyTorch's recursive update, which also continues past ``T_max`` (the rate
    rises again with period ``2 * T_max``).

    Raises:
        ValueError: ``T_max`` is not a positive int, or ``eta_min`` is negative or not finite.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = check_positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = check_nonneg("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """PyTorch's recursive cosine step from the groups' current rates."""
        t, T, eta = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:
            return self._closed_form()
        if (t - 1 - T) % (2 * T) == 0:
            return [
                lr + (base - eta) * (1 - math.cos(math.pi / T)) / 2
                for lr, base in zip(self._group_lrs(), self.base_lrs, strict=True)
            ]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - eta) + eta for lr in self._group_lrs()]

    def _closed_form(self) -> list[float]:
        t, T, eta = self.last_epoch, self.T_max, self.eta_min
        return [eta + (base - eta) * (1 + math.cos(math.pi * t / T)) / 2 for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the rate polynomially to 0 over ``total_iters`` epochs, then hold it (PyTorch's
    ``PolynomialLR``): ``lr(epoch) = initial_lr * (1 - min(epoch, total_iters) / total_iters)
    ** power``. Applied recursively, as PyTorch does: epoch ``t <= total_iters`` multiplies
    the current rate by ``((1 - t / total_iters) / (1 - (t - 1) / total_iters)) ** power``.

    Args:
        total_iters: the number of epochs of the decay, a positive int (default 5).
        power: the power of the polynomial, a finite number >= 0 (default 1.0: linear).
        last_epoch: as :class:`LRScheduler`.

    Raises:
        TypeError: ``optimizer`` is not a gradtape optimizer, or ``power`` is not a real number.
        ValueError: ``total_iters`` not a positive int (PyTorch divides by zero), ``power``
            negative or not finite (PyTorch raises 0 to the negative power at epoch
            ``total_iters``), or ``last_epoch < -1``.
        KeyError: ``last_epoch >= 0`` and a group has no ``initial_lr``.
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = check_positive_int("PolynomialLR", "total_iters", total_iters)
        self.power = check_nonneg("PolynomialLR", "power", power)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates times the ratio of consecutive decay factors up to ``total_iters``
        (kept as they are by the constructor and after ``total_iters``)."""
        t, n = self.last_epoch, self.total_iters
        if self._is_initial or t > n:
            return self._group_lrs()
        decay = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * decay for lr in self._group_lrs()]

    def _closed_form(self) -> list[float]:
        n = self.total_iters
        return [base * (1.0 - min(n, self.last_epoch) / n) ** self.power for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing with warm restarts (SGDR, Loshchilov & Hutter 2017; PyTorch's
    ``CosineAnnealingWarmRestarts``): ``lr = eta_min + (initial_lr - eta_min) *
    (1 + cos(pi * T_cur / T_i)) / 2``, where ``T_cur`` counts epochs since the last restart
    and the period ``T_i`` starts at ``T_0`` and is multiplied by ``T_mult`` at each restart.

    :meth:`step` takes an optional epoch, which may be fractional (``sched.step(epoch + i /
    iters)`` per batch, PyTorch's documented use; no warning here).

    Raises:
        ValueError: ``T_0`` not a positive int, ``T_mult`` not an int >= 1, ``eta_min``
            negative or not finite, or a negative ``epoch`` given to :meth:`step`.
    """

    T_cur: float
    T_i: int

    def __init__(
        self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_0 = check_positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        self.T_i = self.T_0
        self.T_mult = check_positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        self.eta_min = check_nonneg("CosineAnnealingWarmRestarts", "eta_min", eta_min)
        self.T_cur = _check_last_epoch("CosineAnnealingWarmRestarts", last_epoch)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The cosine of the current period at ``T_cur``."""
        cos = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cos / 2 for base in self.base_lrs]

    @_tp.recorded_call
    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (a float allowed), and set the rates."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            epoch = _real("CosineAnnealingWarmRestarts", "epoch", epoch)
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts.step: expected a non-negative epoch, got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin 2018, "Super-Convergence"; PyTorch's ``OneCycleLR``),
    stepped once per batch: the rate rises from ``max_lr / div_factor`` to ``max_lr`` over the
    first ``pct_start`` of ``total_steps``, then falls to ``max_lr / div_factor /
    final_div_factor`` (``three_phase``: back to the start first, then to the minimum);
    ``anneal_strategy`` ``"cos"`` or ``"linear"`` between the ends of each phase.

    With ``cycle_momentum`` (default) the momentum moves the other way, between
    ``max_momentum`` and ``base_momentum``: SGD's or RMSprop's ``momentum``, or ``beta1`` of
    Adam-like optimizers' ``betas`` (as PyTorch). The groups carry ``initial_lr``, ``max_lr``,
    ``min_lr``, ``max_momentum`` and ``base_momentum``.

    Args:
        max_lr: the peak rate, or one per group.
        total_steps: the number of steps, or give ``epochs`` and ``steps_per_epoch``.

    Raises:
        ValueError: neither ``total_steps`` nor ``epochs`` and ``steps_per_epoch`` as positive
            ints; ``pct_start`` outside ``[0, 1]`` or a phase of no steps; an unknown
            ``anneal_strategy``; ``div_factor``/``final_div_factor`` not positive;
            ``cycle_momentum`` on an optimizer with neither ``momentum`` nor ``betas``; a
            per-group list of the wrong length; :meth:`step` past ``total_steps``.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | Sequence[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.85,
        max_momentum: float | Sequence[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        name = "OneCycleLR"
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
        if total_steps is not None:
            self.total_steps = check_positive_int(name, "total_steps", total_steps)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = check_positive_int(name, "epochs", epochs) * check_positive_int(
                name, "steps_per_epoch", steps_per_epoch
            )
        else:
            raise ValueError(f"{name}: you must define either total_steps OR (epochs AND steps_per_epoch)")
        pct = _real(name, "pct_start", pct_start)
        if not 0.0 <= pct <= 1.0:
            raise ValueError(f"{name}: pct_start must be a number in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{name}: anneal_strategy must be one of 'cos' or 'linear', got {anneal_strategy!r}")
        for arg, v in (("div_factor", div_factor), ("final_div_factor", final_div_factor)):
            if not check_nonneg(name, arg, v) > 0.0:
                raise ValueError(f"{name}: {arg} must be > 0, got {v}")
        n = self.total_steps
        if three_phase:
            phases = [
                (float(pct * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            phases = [
                (float(pct * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self._schedule_phases: list[_Phase] = [
            {"end_step": float(e), "start_lr": a, "end_lr": b, "start_momentum": c, "end_momentum": d}
            for e, a, b, c, d in phases
        ]
        start = 0.0
        for i, ph in enumerate(self._schedule_phases):  # PyTorch divides by zero in these
            if ph["end_step"] == start:
                raise ValueError(
                    f"{name}: phase {i} of the schedule has no steps (pct_start={pct_start}, total_steps={n})"
                )
            start = ph["end_step"]
        self._anneal_func_type = anneal_strategy
        max_lrs = [check_nonneg(name, "max_lr", v) for v in _per_group(name, "max_lr", optimizer, max_lr)]
        if last_epoch == -1:
            for lr, group in zip(max_lrs, optimizer.param_groups, strict=True):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            self.use_beta1 = _init_momentum(name, optimizer, base_momentum, max_momentum, last_epoch)[0]
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        """The rate of each group at step ``last_epoch`` (and, with ``cycle_momentum``, its
        momentum or beta1 set in the group)."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"OneCycleLR: tried to step {step} times; the specified number of total steps is {self.total_steps}"
            )
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if step <= end or i == last:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[ph["start_lr"]], group[ph["end_lr"]], pct)
                    if self.cycle_momentum:
                        m = self._anneal(group[ph["start_momentum"]], group[ph["end_momentum"]], pct)
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, self.use_beta1, m)
        return lrs


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017, "Cyclical Learning Rates for Training Neural
    Networks"; PyTorch's ``CyclicLR``), stepped once per batch: the rate of each group goes
    from ``base_lr`` up to ``max_lr`` in ``step_size_up`` steps and back down in
    ``step_size_down`` steps, the amplitude scaled by a policy. At step ``t``, with
    ``T = step_size_up + step_size_down`` and ``r = step_size_up / T``::

        cycle = floor(1 + t / T)                  # 1, 2, ...
        x = 1 + t / T - cycle                     # the position in the cycle, in [0, 1)
        s = x / r if x <= r else (x - 1) / (r - 1)  # 0 -> 1 -> 0
        lr = base_lr + (max_lr - base_lr) * s * scale_fn(cycle or t)

    The policies (``mode``): ``"triangular"`` (``scale_fn = 1``), ``"triangular2"`` (the
    amplitude halved each cycle: ``1 / 2 ** (cycle - 1)``), ``"exp_range"`` (``gamma ** t``,
    of the step); or a custom ``scale_fn`` of one argument with values in ``[0, 1]``, given the
    cycle number (``scale_mode="cycle"``) or the step (``"iterations"``); ``mode`` is then
    ignored.

    With ``cycle_momentum`` (default) the momentum moves the other way, ``momentum =
    max_momentum - (max_momentum - base_momentum) * s * scale_fn(...)``: SGD's or RMSprop's
    ``momentum``, or ``beta1`` of Adam-like optimizers' ``betas`` (as PyTorch; as
    :class:`OneCycleLR`). The groups then carry ``max_momentum`` and ``base_momentum``.

    Args:
        base_lr: the lower rate, or one per group; when starting (``last_epoch=-1``) each
            group's ``lr`` is set to it. (As in PyTorch, the rate of step 0 is computed from
            the group's ``initial_lr``, which is ``base_lr`` unless an earlier schedule on the
            optimizer set it; later steps use ``base_lr``.)
        max_lr: the upper rate, or one per group (the amplitude is ``max_lr - base_lr``).
        step_size_up: the steps of the rising half of a cycle, a number > 0 (default 2000).
        step_size_down: the steps of the falling half, a number >= 0; ``None`` (default):
            ``step_size_up``.
        mode: ``"triangular"`` (default), ``"triangular2"`` or ``"exp_range"``.
        gamma: ``exp_range``'s base, a finite number >= 0 (default 1.0).
        scale_fn: a custom policy, or ``None`` (default) for ``mode``'s.
        scale_mode: ``"cycle"`` (default) or ``"iterations"``: the argument of a custom
            ``scale_fn`` (the built-in modes set their own).
        cycle_momentum: cycle the momentum (default ``True``).
        base_momentum: the lower momentum, or one per group (default 0.8).
        max_momentum: the upper momentum, or one per group (default 0.9).
        last_epoch: the index of the last batch (not epoch), ``-1`` to start; as
            :class:`LRScheduler`.

    :meth:`state_dict` saves a custom ``scale_fn``'s ``__dict__`` where it is a callable object
    rather than a function (PyTorch's rule, as :class:`LambdaLR`).

    Raises:
        TypeError: ``optimizer`` is not a gradtape optimizer, ``scale_fn`` is not callable, a
            rate, momentum or ``gamma`` is not a real number, or a step size is not a number
            (``float`` refuses it with a ``TypeError``).
        ValueError: a step size is a string that is not a number (``float``'s error, as in
            PyTorch); a per-group list (``base_lr``, ``max_lr``, ``base_momentum``,
            ``max_momentum``) of the wrong length; ``base_lr``/``max_lr`` negative or not
            finite; ``step_size_up`` not > 0 or ``step_size_down`` not >= 0 (or either not
            finite; PyTorch divides by zero at ``step_size_up=0``); an unknown ``mode`` with no
            ``scale_fn``; an unknown ``scale_mode``; ``gamma`` negative or not finite;
            ``cycle_momentum`` on an optimizer with neither ``momentum`` nor ``betas``;
            ``last_epoch < -1``.
        KeyError: ``last_epoch >= 0`` and a group has no ``initial_lr``.
    """

    max_lrs: list[float]
    base_momentums: list[float]
    max_momentums: list[float]
    use_beta1: bool

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | Sequence[float],
        max_lr: float | Sequence[float],
        step_size_up: float = 2000,
        step_size_down: float | None = None,
        mode: Literal["triangular", "triangular2", "exp_range"] = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: Literal["cycle", "iterations"] = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.8,
        max_momentum: float | Sequence[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        name = "CyclicLR"
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
        last_epoch = _check_last_epoch(name, last_epoch)
        base_lrs = [check_nonneg(name, "base_lr", v) for v in _per_group(name, "base_lr", optimizer, base_lr)]
        self.max_lrs = [check_nonneg(name, "max_lr", v) for v in _per_group(name, "max_lr", optimizer, max_lr)]
        up = _number(name, "step_size_up", step_size_up)
        if not 0.0 < up < math.inf:
            raise ValueError(f"{name}: step_size_up must be a finite number > 0, got {step_size_up!r}")
        down = up if step_size_down is None else _number(name, "step_size_down", step_size_down)
        if not 0.0 <= down < math.inf:
            raise ValueError(f"{name}: step_size_down must be a finite number >= 0 or None, got {step_size_down!r}")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(
                f"{name}: mode {mode!r} is invalid and scale_fn is None "
                "(use 'triangular', 'triangular2' or 'exp_range', or give a scale_fn)"
            )
        if scale_fn is not None and not callable(scale_fn):
            raise TypeError(f"{name}: scale_fn should be a function, got {type(scale_fn).__name__}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"{name}: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.mode = mode
        self.gamma = check_nonneg(name, "gamma", gamma)
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            self.use_beta1, self.base_momentums, self.max_momentums = _init_momentum(
                name, optimizer, base_momentum, max_momentum, last_epoch
            )
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                group["lr"] = lr
        super().__init__(optimizer, last_epoch)  # (its first step reads the groups' initial_lr, as PyTorch's)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        """The built-in modes' ``scale_mode`` (PyTorch's): per cycle, or per step for ``exp_range``."""
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at ``x`` (the cycle number or the step): the custom
        ``scale_fn``, or ``mode``'s."""
        if self._scale_fn_custom is not None:
            return float(self._scale_fn_custom(x))
        if self.mode == "triangular2":
            return 1 / float(2.0 ** (x - 1))
        if self.mode == "exp_range":
            return float(self.gamma**x)
        return 1.0

    def get_lr(self) -> list[float]:
        """The rate of each group at step ``last_epoch`` (and, with ``cycle_momentum``, its
        momentum or beta1 set in the group)."""
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = []
        for base_lr, max_lr in zip(self.base_lrs, self.max_lrs, strict=True):
            base_height = (max_lr - base_lr) * scale_factor
            lrs.append(base_lr + base_height * self.scale_fn(at))
        if self.cycle_momentum:
            momentums = []
            for base_m, max_m in zip(self.base_momentums, self.max_momentums, strict=True):
                base_height = (max_m - base_m) * scale_factor
                momentums.append(max_m - base_height * self.scale_fn(at))
            for group, m in zip(self.optimizer.param_groups, momentums, strict=True):
                _set_momentum(group, self.use_beta1, m)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """As :meth:`LRScheduler.state_dict`, with ``_scale_fn_custom``: ``None`` for none or a
        function, the ``__dict__`` of a callable object."""
        out = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k not in ("optimizer", "_scale_fn_custom")}
        fn = self._scale_fn_custom
        out["_scale_fn_custom"] = (
            None if fn is None or isinstance(fn, types.FunctionType) else copy.deepcopy(fn.__dict__)
        )
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """As :meth:`LRScheduler.load_state_dict`; a saved ``__dict__`` updates the custom
        ``scale_fn`` (the function itself is this schedule's, as constructed)."""
        saved = dict(state_dict)
        fn = saved.pop("_scale_fn_custom", None)
        super().load_state_dict(saved)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(copy.deepcopy(fn))
        self._init_scale_fn()


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when a metric has stopped improving for more than
    ``patience`` epochs (PyTorch's ``ReduceLROnPlateau``); ``step(metric)`` once per epoch.

    Improvement: ``mode="min"`` with ``threshold_mode="rel"`` needs ``metric < best * (1 -
    threshold)``, ``"abs"`` ``metric < best - threshold`` (``"max"``: above ``best * (1 +
    threshold)`` or ``best + threshold``). After a reduction, ``cooldown`` epochs pass before
    bad epochs count again. A rate goes no lower than ``min_lr`` (one, or one per group), and
    a change smaller than ``eps`` is skipped.

    Raises:
        ValueError: ``factor >= 1`` or negative, an unknown ``mode`` or ``threshold_mode``,
            ``patience``/``cooldown`` not an int >= 0, ``threshold``/``eps``/``min_lr``
            negative, or ``min_lr`` a list of the wrong length.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: Literal["min", "max"] = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: Literal["rel", "abs"] = "rel",
        cooldown: int = 0,
        min_lr: float | Sequence[float] = 0.0,
        eps: float = 1e-8,
    ) -> None:
        name = "ReduceLROnPlateau"
        factor = check_nonneg(name, "factor", factor)
        if factor >= 1.0:
            raise ValueError(f"{name}: factor should be < 1.0, got {factor}")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            self.default_min_lr: float | None = None
            self.min_lrs = [check_nonneg(name, "min_lr", v) for v in _per_group(name, "min_lr", optimizer, min_lr)]
        else:
            one: Any = min_lr  # a number (a list or tuple went above)
            self.default_min_lr = check_nonneg(name, "min_lr", one)
            self.min_lrs = [self.default_min_lr] * len(optimizer.param_groups)
        self.patience = check_nonneg_int(name, "patience", patience)
        self.cooldown = check_nonneg_int(name, "cooldown", cooldown)
        self.eps = check_nonneg(name, "eps", eps)
        if mode not in ("min", "max"):
            raise ValueError(f"{name}: mode {mode!r} is unknown (use 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"{name}: threshold mode {threshold_mode!r} is unknown (use 'rel' or 'abs')")
        self.mode, self.threshold_mode = mode, threshold_mode
        self.threshold = check_nonneg(name, "threshold", threshold)
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = self._group_lrs()
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether reductions are paused after the last one."""
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" else a > best + self.threshold

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record one epoch's ``metrics`` (a number or a scalar tensor) and reduce the rates
        if it has not improved for more than ``patience`` epochs."""
        if _tp._recorder is not None:
            _tp._recorder.refuse("steps ReduceLROnPlateau on a metric: call it outside the captured step")
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(
                "ReduceLROnPlateau.step(metrics, epoch): the epoch argument is deprecated, as in PyTorch",
                UserWarning,
                stacklevel=2,
            )
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._group_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups, min_lr gave {len(self.min_lrs)}"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs, strict=True):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                group["lr"] = new


def _check_members(name: str, schedulers: Sequence[Any], optimizer: Optimizer) -> None:
    """The schedules of a :class:`SequentialLR` or :class:`ChainedScheduler`, each in turn: an
    :class:`LRScheduler`, not a :class:`ReduceLROnPlateau`, on ``optimizer``.

    Raises:
        TypeError: one is not an LRScheduler. ValueError: one is a ReduceLROnPlateau or runs
            another optimizer (the messages name the composite and the position).
    """
    for i, s in enumerate(schedulers):
        if not isinstance(s, LRScheduler):
            raise TypeError(f"{name}: schedulers[{i}] is a {type(s).__name__}, not an LRScheduler")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{name} does not support ReduceLROnPlateau (schedulers[{i}]): its step needs a metric")
        if s.optimizer is not optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but schedulers[{i}] "
                f"({type(s).__name__}) has another"
            )


class _OfSchedules(LRScheduler):
    """A schedule made of schedules (:class:`SequentialLR`, :class:`ChainedScheduler`): their
    state dicts are saved and restored with its own."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        """Its own state (``last_epoch``, ``_last_lr``, ...) and its schedules' under ``"_schedulers"``."""
        out = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore its state and each schedule's.

        Raises:
            TypeError: ``state_dict`` is not a dict.
            ValueError: the saved state holds another number of schedules.
        """
        name = type(self).__name__
        if not isinstance(state_dict, dict):
            raise TypeError(f"{name}.load_state_dict: expected a dict, got {type(state_dict).__name__}")
        saved = dict(state_dict)
        subs = saved.pop("_schedulers", None)
        if subs is not None and len(subs) != len(self._schedulers):
            raise ValueError(
                f"{name}.load_state_dict: the saved state has {len(subs)} schedulers, this one {len(self._schedulers)}"
            )
        super().load_state_dict(saved)
        for s, sd in zip(self._schedulers, subs or [], strict=False):
            s.load_state_dict(sd)


class SequentialLR(_OfSchedules):
    """Run ``schedulers`` one after another, switching at the ``milestones`` epochs (PyTorch's
    ``SequentialLR``, e.g. ``LinearLR`` warm-up then ``CosineAnnealingLR``). At a milestone the
    next schedule starts from its epoch 0 (its closed form where it has one).

    :meth:`state_dict` holds each schedule's own state dict under ``"_schedulers"``.

    Raises:
        ValueError: no schedulers, one on another optimizer or a :class:`ReduceLROnPlateau`,
            or ``len(milestones) != len(schedulers) - 1``.
        TypeError: ``optimizer`` is not a gradtape optimizer or a schedule is not an
            :class:`LRScheduler`.
    """

    def __init__(
        self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int], last_epoch: int = -1
    ) -> None:
        name = "SequentialLR"
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler")
        _check_members(name, schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"{name} expects one milestone fewer than schedulers, got {len(schedulers)} schedulers and "
                f"{len(milestones)} milestones"
            )
        for m in milestones:
            check_nonneg_int(name, "milestones", m)
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = _check_last_epoch(name, last_epoch) + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # back to the base rates: the schedules' constructors moved them
            group["lr"] = group["initial_lr"]
        _undo(self)  # undo each constructor's step ...
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()  # ... and take the first schedule's again
        self._last_lr = first.get_last_lr()

    @_tp.recorded_call
    def step(self) -> None:  # type: ignore[override]
        """Advance one epoch with the schedule in charge of it."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_OfSchedules):
    """Step several schedules together (PyTorch's ``ChainedScheduler``): each :meth:`step`
    steps every schedule in ``schedulers``, in order, so that chainable schedules' factors
    multiply (e.g. :class:`ConstantLR` and :class:`ExponentialLR`: ``initial_lr * factor *
    gamma ** epoch`` until ``total_iters``, then ``initial_lr * gamma ** epoch``). It takes
    the schedules as constructed (each has already set its epoch 0) and has no epoch of its
    own (no ``last_epoch``, as in PyTorch).

    Args:
        schedulers: the schedules, on one optimizer.
        optimizer: their optimizer; ``None`` (default): the first schedule's.

    :meth:`state_dict` holds each schedule's own state dict under ``"_schedulers"`` (as
    :class:`SequentialLR`).

    It can be the first schedule of a :class:`SequentialLR` (not a later one: it has no closed
    form to start from at a milestone, and raises ``NotImplementedError`` there, as PyTorch's).

    Raises:
        ValueError: no schedulers, a :class:`ReduceLROnPlateau` (its step needs a metric), or
            a schedule on another optimizer than ``optimizer``.
        TypeError: a schedule is not an :class:`LRScheduler`.
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        name = "ChainedScheduler"
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no scheduler")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler):
                raise TypeError(f"{name}: schedulers[{i}] is a {type(s).__name__}, not an LRScheduler")
        if optimizer is None:
            optimizer = schedulers[0].optimizer
        _check_members(name, schedulers, optimizer)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._group_lrs()

    def get_lr(self) -> list[float]:
        """Not available (as in PyTorch): the rates are its schedules'.

        Raises:
            NotImplementedError: always; e.g. where a :class:`SequentialLR` starts a
                ChainedScheduler at a milestone other than 0 (PyTorch's SequentialLR fails there
                too, with the same exception).
        """
        raise NotImplementedError(
            "ChainedScheduler has no rates of its own (get_lr, or a closed form for step(epoch) or a SequentialLR "
            "milestone): step() steps its schedules; read the rates with get_last_lr()"
        )

    @_tp.recorded_call
    def step(self) -> None:  # type: ignore[override]
        """Step every schedule, in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = self._group_lrs()


def _undo(sched: LRScheduler) -> None:
    """Take back one epoch from each schedule in ``sched`` (nested SequentialLRs and
    ChainedSchedulers: their leaves, as PyTorch's ``recursive_undo``)."""
    if isinstance(sched, (SequentialLR, ChainedScheduler)):
        for s in sched._schedulers:
            _undo(s)
    else:
        sched.last_epoch -= 1
