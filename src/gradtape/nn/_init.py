"""Parameter initialisers shared by the layers (not public API)."""

from __future__ import annotations

import math
from typing import Any

import numpy.typing as npt

from gradtape.devices.cpu import Cpu
from gradtape.tape import NoneTape
from gradtape.tensor import Tensor


def kaiming_uniform(dev: Cpu, shape: tuple[int, ...], fan_in: int, dtype: npt.DTypeLike) -> Tensor[Any, NoneTape]:
    """``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``: PyTorch's default for ``nn.Linear`` and
    ``nn.Conv*`` weights (``kaiming_uniform_(a=sqrt(5))``, He et al. 2015, "Delving Deep into
    Rectifiers") and biases. ``fan_in = 0`` gives zeros."""
    if fan_in <= 0:
        return dev.zeros(shape, dtype)
    bound = 1.0 / math.sqrt(fan_in)
    return dev.rand(shape, -bound, bound, dtype)
