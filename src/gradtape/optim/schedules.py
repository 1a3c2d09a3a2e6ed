"""The learning-rate schedules' former module: they live in :mod:`gradtape.optim.lr_scheduler`
(PyTorch's path), re-exported here so that ``gradtape.optim.schedules`` keeps working."""

from __future__ import annotations

from gradtape.optim.lr_scheduler import CosineAnnealingLR, LRScheduler, StepLR

__all__ = ["CosineAnnealingLR", "LRScheduler", "StepLR"]
