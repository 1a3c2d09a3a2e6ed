"""``nn.Parameter``: PyTorch's way to mark a tensor as a trainable leaf."""

from __future__ import annotations

from typing import TypeVar

from gradtape.tape import Tape
from gradtape.tensor import Tensor

__all__ = ["Parameter"]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)


def Parameter(data: Tensor[S, T], requires_grad: bool = True) -> Tensor[S, T]:
    """Mark ``data`` as a parameter and return it (PyTorch's ``nn.Parameter(data, requires_grad)``).

    gradtape has no tensor subclass for parameters: a parameter is a leaf tensor that requires
    grad (:meth:`Tensor.requires_grad_`), which is what :class:`gradtape.nn.Module` makes of every
    tensor assigned to one of its public attributes. As in PyTorch, this holds under
    ``no_grad()`` too (the "factory function exception" of seed 003). The tensor itself is
    marked and returned (no copy): ``isinstance(t, nn.Parameter)`` is not available; test
    ``t.requires_grad and t.is_leaf`` instead.

    Args:
        data: a float32/float64 leaf tensor of any shape.
        requires_grad: ``False`` makes a frozen parameter (it takes no part in recording).

    Raises:
        TypeError: ``data`` is not a gradtape ``Tensor``.
        TapeError: ``data`` is not a leaf, or is traced (see ``requires_grad_``).
        DTypeError: ``data`` is not float32/float64 and ``requires_grad`` is true.
    """
    if not isinstance(data, Tensor):
        raise TypeError(f"Parameter: data must be a gradtape Tensor, got {type(data).__name__}")
    return data.requires_grad_(requires_grad)
