"""Parameter-free layers: activations (:class:`ReLU`, :class:`GELU`, :class:`Tanh`,
:class:`Sigmoid`, :class:`SiLU`), :class:`Dropout` and :class:`Flatten`.

The activations keep the input's shape type and tape kind (``Tensor[S, T] -> Tensor[S, T]``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from gradtape.nn.module import Module
from gradtape.ops import dropout
from gradtape.tape import Tape
from gradtape.tensor import Tensor

__all__ = ["GELU", "Dropout", "Flatten", "ReLU", "SiLU", "Sigmoid", "Tanh"]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)


class ReLU(Module):
    """``y = max(x, 0)`` elementwise; gradient ``g * (x > 0)``."""

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Same shape and dtype as ``x``."""
        return x.relu()

    __call__ = forward


class GELU(Module):
    """Gaussian error linear unit ``y = x * Phi(x)`` (Hendrycks & Gimpel 2016), as
    :meth:`Tensor.gelu` (the exact erf form, PyTorch's default)."""

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Same shape and dtype as ``x``."""
        return x.gelu()

    __call__ = forward


class Tanh(Module):
    """``y = tanh(x)``; gradient ``g * (1 - y**2)``."""

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Same shape and dtype as ``x``."""
        return x.tanh()

    __call__ = forward


class Sigmoid(Module):
    """``y = 1 / (1 + exp(-x))``; gradient ``g * y * (1 - y)``."""

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Same shape and dtype as ``x``."""
        return x.sigmoid()

    __call__ = forward


class SiLU(Module):
    """``y = x * sigmoid(x)`` (swish; Elfwing et al. 2017)."""

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Same shape and dtype as ``x``."""
        return x.silu()

    __call__ = forward


class Dropout(Module):
    """Inverted dropout (Srivastava et al. 2014; PyTorch's ``nn.Dropout``): in training mode each
    element is zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``; in eval
    mode the identity. Masks come from the input device's seeded generator.

    Args:
        p: the drop probability, ``0 <= p <= 1``.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.
    """

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        self.p = p

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``x`` masked and rescaled (training) or ``x`` itself (eval)."""
        return dropout(x, self.p, training=self.training)

    __call__ = forward

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` into one (PyTorch's ``nn.Flatten``; default: all but
    the batch dim), ``(N, C, H, W) -> (N, C*H*W)``. A reshape: the gradient is reshaped back.

    Raises (on forward): ValueError when the dims are out of range for the input.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """``x`` reshaped with the flattened dims multiplied together."""
        nd = x.ndim
        s = self.start_dim + nd if self.start_dim < 0 else self.start_dim
        e = self.end_dim + nd if self.end_dim < 0 else self.end_dim
        if not 0 <= s <= e < nd:
            raise ValueError(f"Flatten: dims {self.start_dim}..{self.end_dim} out of range for shape {x.shape}")
        shape = x.shape
        n = 1
        for d in shape[s : e + 1]:
            n *= d
        return x.reshape((*shape[:s], n, *shape[e + 1 :]))

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
