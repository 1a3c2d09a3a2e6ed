"""Learning-rate schedules: :class:`StepLR` and :class:`CosineAnnealingLR`, as PyTorch's.

A schedule sets its optimizer's rates when constructed (epoch 0: each parameter group's
``lr`` becomes that group's base rate) and on each :meth:`LRScheduler.step` (once per epoch,
after the epoch's optimizer steps), with PyTorch's recursive ("chainable") formulas applied
to every group's own rate.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from gradtape.optim._checks import check_nonneg, check_positive_int

__all__ = ["CosineAnnealingLR", "LRScheduler", "StepLR"]


class _HasLr(Protocol):
    lr: float


def _groups(optimizer: _HasLr) -> list[dict[str, Any]] | None:
    groups = getattr(optimizer, "param_groups", None)
    return groups if isinstance(groups, list) and groups else None


class LRScheduler:
    """Base class: keeps each parameter group's base rate (its ``lr`` at construction) and
    ``last_epoch``.

    Args:
        optimizer: a :mod:`gradtape.optim` optimizer (its ``param_groups`` each get the
            schedule applied to their own rate), or anything with a settable float ``lr``.
    """

    def __init__(self, optimizer: _HasLr) -> None:
        self.optimizer = optimizer
        groups = _groups(optimizer)
        self.base_lrs = [float(g["lr"]) for g in groups] if groups else [float(optimizer.lr)]
        self.base_lr = self.base_lrs[0]
        self.last_epoch = -1
        self._last_lrs = list(self.base_lrs)
        self.step()

    def _next_lr(self, lr: float, base_lr: float) -> float:
        raise NotImplementedError

    def step(self) -> None:
        """Advance one epoch and set each group's ``lr`` (or ``optimizer.lr``) to its new rate."""
        self.last_epoch += 1
        groups = _groups(self.optimizer)
        current = [float(g["lr"]) for g in groups] if groups else [float(self.optimizer.lr)]
        lrs = [
            max(base if self.last_epoch == 0 else self._next_lr(lr, base), 0.0)  # rounding must not make ~0 negative
            for lr, base in zip(current, self.base_lrs, strict=True)
        ]
        if groups:
            for g, lr in zip(groups, lrs, strict=True):
                g["lr"] = lr
        else:
            self.optimizer.lr = lrs[0]
        self._last_lrs = lrs

    def get_last_lr(self) -> list[float]:
        """The rates the last :meth:`step` set, one per parameter group (PyTorch's)."""
        return list(self._last_lrs)


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs (PyTorch's ``StepLR``).

    ``lr(epoch) = base_lr * gamma ** (epoch // step_size)`` (applied recursively: at each
    non-zero multiple of ``step_size`` the current rate is multiplied by ``gamma``).

    Raises:
        ValueError: ``step_size`` is not a positive int, or ``gamma`` is negative or not finite.
    """

    def __init__(self, optimizer: _HasLr, step_size: int, gamma: float = 0.1) -> None:
        self.step_size = check_positive_int("StepLR", "step_size", step_size)
        self.gamma = check_nonneg("StepLR", "gamma", gamma)
        super().__init__(optimizer)

    def _next_lr(self, lr: float, base_lr: float) -> float:
        return lr * self.gamma if self.last_epoch % self.step_size == 0 else lr


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_max`` epochs (SGDR without
    restarts, Loshchilov & Hutter 2017; PyTorch's ``CosineAnnealingLR``).

    Closed form: ``lr(t) = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``;
    computed with PyTorch's recursive update, which also continues past ``T_max`` (the rate
    rises again with period ``2 * T_max``).

    Raises:
        ValueError: ``T_max`` is not a positive int, or ``eta_min`` is negative or not finite.
    """

    def __init__(self, optimizer: _HasLr, T_max: int, eta_min: float = 0.0) -> None:
        self.T_max = check_positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = check_nonneg("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer)

    def _next_lr(self, lr: float, base_lr: float) -> float:
        t, T, eta = self.last_epoch, self.T_max, self.eta_min
        if (t - 1 - T) % (2 * T) == 0:
            return lr + (base_lr - eta) * (1 - math.cos(math.pi / T)) / 2
        return (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (lr - eta) + eta
