"""Shape types and runtime shape checks.

A tensor's shape is a ``tuple`` type: ``Tensor[tuple[L[3], L[4]], NoneTape]``
(written ``Tensor[Rank2[L[3], L[4]], NoneTape]``) is a 3x4 tensor. Each dim is

* ``Literal[n]`` (``L[n]``): known when the program is written, dfdx's ``Const<N>``;
* ``int``: known only at run time, dfdx's ``usize``;
* a user type naming an axis, for example ``Batch = NewType("Batch", int)``.

mypy checks that shapes agree where the types say they must (matmul's inner dims,
equal shapes of an elementwise op); the same checks run again at run time and raise
:class:`~gradtape.errors.ShapeError` naming the op and both shapes.
"""

from __future__ import annotations

from typing import Any, TypeAlias, TypeVar, final

import numpy as np

from gradtape.errors import ShapeError

__all__ = [
    "AnyShape",
    "Rank0",
    "Rank1",
    "Rank2",
    "Rank3",
    "Rank4",
    "Rank5",
    "Rank6",
    "Shape",
    "broadcast_shapes",
    "sum_to_shape",
]

A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
E = TypeVar("E")
F = TypeVar("F")

Shape: TypeAlias = tuple[int, ...]
"""A concrete run-time shape."""

Rank0: TypeAlias = tuple[()]
"""Shape type of a scalar tensor."""
Rank1: TypeAlias = tuple[A]
"""Shape type of a vector of ``A`` elements."""
Rank2: TypeAlias = tuple[A, B]
"""Shape type of an ``A x B`` matrix."""
Rank3: TypeAlias = tuple[A, B, C]
"""Shape type of a rank-3 tensor."""
Rank4: TypeAlias = tuple[A, B, C, D]
"""Shape type of a rank-4 tensor (for example ``Batch x Channels x Height x Width``)."""
Rank5: TypeAlias = tuple[A, B, C, D, E]
"""Shape type of a rank-5 tensor."""
Rank6: TypeAlias = tuple[A, B, C, D, E, F]
"""Shape type of a rank-6 tensor."""


@final
class AnyShape:
    """Overload marker, never instantiated: ``Tensor[AnyShape, T]`` is matched only by a
    tensor whose shape type is ``Any`` (what ``dev.tensor(...)`` returns).

    mypy picks the first overload a call matches, and a ``Tensor[Any, T]`` matches every
    rank-specific one; ops that compute their output's shape type therefore list an
    ``AnyShape`` overload first, so that an untyped tensor gets an untyped (``Any``) result
    instead of, say, the rank-2 overload's.
    """


def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Return the shape numpy broadcasting gives for operands of shapes ``a`` and ``b``.

    Raises:
        ShapeError: the shapes do not broadcast; the message names ``op`` and both shapes.
    """
    if a == b:
        return a
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ShapeError(f"{op}: shapes {a} and {b} do not broadcast") from None


def sum_to_shape(g: np.ndarray[Any, Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """Sum a broadcast gradient ``g`` back to ``shape``, the shape of the operand it belongs to.

    The rule every broadcasting op's backward needs (HIPS autograd's ``unbroadcast``):
    sum over the leading dims ``g`` has and ``shape`` lacks, then over the dims where
    ``shape`` has size 1. Returns ``g`` itself when the shapes are already equal, else a new
    array of dtype ``g.dtype``.
    """
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=axes).reshape(shape) if axes else g.reshape(shape)
