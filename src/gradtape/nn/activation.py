"""Parameter-free layers: activations (:class:`ReLU`, :class:`GELU`, :class:`Tanh`,
:class:`Sigmoid`, :class:`SiLU`), :class:`Dropout` and :class:`Flatten`.

The activations keep the input's shape type and tape kind (``Tensor[S, T] -> Tensor[S, T]``);
:class:`Flatten` types ``(N, ...) -> (N, int)`` for inputs of rank 2 to 4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Literal, overload

from gradtape.nn._typing import D1, D2, D3, ED, SD, N, S, T
from gradtape.nn.module import Module
from gradtape.ops.nn import dropout  # the unwrapped ops: Module.__call__ checked x
from gradtape.ops.unary import gelu, relu, sigmoid, silu, tanh
from gradtape.shapes import AnyShape, Rank2, Rank3, Rank4
from gradtape.tensor import Tensor

__all__ = ["GELU", "Dropout", "Flatten", "ReLU", "SiLU", "Sigmoid", "Tanh"]


class _Activation(Module):
    """An elementwise activation layer: ``forward`` applies the class's ``_op``, one of the
    elementwise ops of :mod:`gradtape.ops.unary` (the function ``Tensor``'s method of that
    name is)."""

    _op: Callable[[Tensor[Any, Any]], Tensor[Any, Any]]

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Same shape and dtype as ``x``."""
        return self._op(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class ReLU(_Activation):
    """``y = max(x, 0)`` elementwise; gradient ``g * (x > 0)``."""

    _op = staticmethod(relu)


class GELU(_Activation):
    """Gaussian error linear unit ``y = x * Phi(x)`` (Hendrycks & Gimpel 2016), as
    :meth:`Tensor.gelu` (the exact erf form, PyTorch's default)."""

    _op = staticmethod(gelu)


class Tanh(_Activation):
    """``y = tanh(x)``; gradient ``g * (1 - y**2)``."""

    _op = staticmethod(tanh)


class Sigmoid(_Activation):
    """``y = 1 / (1 + exp(-x))``; gradient ``g * y * (1 - y)``."""

    _op = staticmethod(sigmoid)


class SiLU(_Activation):
    """``y = x * sigmoid(x)`` (swish; Elfwing et al. 2017)."""

    _op = staticmethod(silu)


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

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Flatten(Module, Generic[SD, ED]):
    """Flatten dims ``start_dim..end_dim`` into one (PyTorch's ``nn.Flatten``; default: all but
    the batch dim), ``(N, C, H, W) -> (N, C*H*W)``. A reshape: the gradient is reshaped back.

    Typed ``Flatten[SD, ED]``, the types of ``start_dim`` and ``end_dim``: ``Flatten()``
    (the defaults, ``Flatten[Literal[1], Literal[-1]]``) maps ``Tensor[Rank2[N, Any], T]``,
    ``Tensor[Rank3[N, Any, Any], T]`` and ``Tensor[Rank4[N, Any, Any, Any], T]`` to
    ``Tensor[Rank2[N, int], T]`` (the flattened size is computed at run time; the tape kind
    is kept). Any other rank, an untyped input, or a Flatten built with other dims
    (``Flatten[int, int]``, also what a bare ``Flatten`` annotation means) gives
    ``Tensor[Any, T]``.

    Raises (on forward): ValueError when the dims are out of range for the input.
    """

    @overload
    def __init__(
        self: Flatten[Literal[1], Literal[-1]], start_dim: Literal[1] = 1, end_dim: Literal[-1] = -1
    ) -> None: ...
    @overload
    def __init__(self: Flatten[int, int], start_dim: int = 1, end_dim: int = -1) -> None: ...
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = start_dim, end_dim

    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    @overload
    def forward(self: Flatten[Literal[1], Literal[-1]], x: Tensor[Rank2[N, D1], T]) -> Tensor[Rank2[N, int], T]: ...
    @overload
    def forward(self: Flatten[Literal[1], Literal[-1]], x: Tensor[Rank3[N, D1, D2], T]) -> Tensor[Rank2[N, int], T]: ...
    @overload
    def forward(
        self: Flatten[Literal[1], Literal[-1]], x: Tensor[Rank4[N, D1, D2, D3], T]
    ) -> Tensor[Rank2[N, int], T]: ...
    @overload
    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
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

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
