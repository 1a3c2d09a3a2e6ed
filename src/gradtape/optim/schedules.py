"""Learning-rate schedules: :class:`StepLR` and :class:`CosineAnnealingLR`, as PyTorch's.

A schedule sets its optimizer's ``lr`` when constructed (epoch 0: the optimizer's ``lr``
becomes the base rate) and on each :meth:`LRScheduler.step` (once per epoch, after the
epoch's optimizer steps), with PyTorch's recursive ("chainable") formulas.
"""

from __future__ import annotations

import math
from typing import Protocol

__all__ = ["CosineAnnealingLR", "LRScheduler", "StepLR"]


class _HasLr(Protocol):
    lr: float


class LRScheduler:
    """Base class: keeps ``base_lr`` (the optimizer's ``lr`` at construction) and ``last_epoch``.

    Args:
        optimizer: anything with a settable float ``lr`` (a :mod:`gradtape.optim` optimizer).
    """

    def __init__(self, optimizer: _HasLr) -> None:
        self.optimizer = optimizer
        self.base_lr = float(optimizer.lr)
        self.last_epoch = -1
        self._last_lr = self.base_lr
        self.step()

    def _next_lr(self) -> float:
        raise NotImplementedError

    def step(self) -> None:
        """Advance one epoch and set ``optimizer.lr`` to the new rate."""
        self.last_epoch += 1
        lr = self.base_lr if self.last_epoch == 0 else self._next_lr()
        self.optimizer.lr = max(lr, 0.0)  # rounding must not make a rate of ~0 negative
        self._last_lr = float(self.optimizer.lr)

    def get_last_lr(self) -> list[float]:
        """The rate the last :meth:`step` set, as a one-element list (PyTorch returns one per
        parameter group; gradtape optimizers have one group)."""
        return [self._last_lr]


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs (PyTorch's ``StepLR``).

    ``lr(epoch) = base_lr * gamma ** (epoch // step_size)`` (applied recursively: at each
    non-zero multiple of ``step_size`` the current rate is multiplied by ``gamma``).

    Raises:
        ValueError: ``step_size`` is not a positive int, or ``gamma`` is negative or not finite.
    """

    def __init__(self, optimizer: _HasLr, step_size: int, gamma: float = 0.1) -> None:
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        gamma = float(gamma)
        if not gamma >= 0.0 or math.isinf(gamma):
            raise ValueError(f"StepLR: gamma must be a finite number >= 0, got {gamma}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer)

    def _next_lr(self) -> float:
        lr = float(self.optimizer.lr)
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
        if isinstance(T_max, bool) or not isinstance(T_max, int) or T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive int, got {T_max!r}")
        eta_min = float(eta_min)
        if not eta_min >= 0.0 or math.isinf(eta_min):
            raise ValueError(f"CosineAnnealingLR: eta_min must be a finite number >= 0, got {eta_min}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer)

    def _next_lr(self) -> float:
        t, T, lr, eta = self.last_epoch, self.T_max, float(self.optimizer.lr), self.eta_min
        if (t - 1 - T) % (2 * T) == 0:
            return lr + (self.base_lr - eta) * (1 - math.cos(math.pi / T)) / 2
        return (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (lr - eta) + eta
