"""Shape types and runtime shape checks.

A tensor's shape is a ``tuple`` type: ``Tensor[tuple[L[3], L[4]], NoneTape]``
(written ``Tensor[Rank2[L[3], L[4]], NoneTape]``) is a 3x4 tensor. Each dim is

* ``Literal[n]`` (``L[n]``): known when the program is written, dfdx's ``Const<N>``;
* ``int``: known only at run time, dfdx's ``usize``;
* a user type naming an axis, for example ``Batch = NewType("Batch", int)``.

mypy checks that shapes agree where the types say they must (matmul's inner dims,
equal shapes of an elementwise op); the same checks run again at run time and raise
:class:`~gradtape.errors.ShapeError` naming the op and both shapes.

:func:`realize` (also the method ``Tensor.realize``, dfdx's ``realize``) is where the two
kinds of dims meet: it checks a tensor's run-time shape against a shape type and returns
the same tensor under that type, e.g. ``x.realize(tuple[Batch, L[64]])``.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, final, overload

import numpy as np

from gradtape.errors import ShapeError

if TYPE_CHECKING:
    from gradtape.tape import Tape
    from gradtape.tensor import Tensor

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
    "check_realize",
    "realize",
    "sum_to_shape",
]

A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
E = TypeVar("E")
F = TypeVar("F")
S2 = TypeVar("S2", bound=tuple[Any, ...])
T = TypeVar("T", bound="Tape")

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


def _dim_name(dim: object) -> str:
    if typing.get_origin(dim) is Literal:
        return str(typing.get_args(dim)[0])
    return getattr(dim, "__name__", repr(dim))


def check_realize(shape: object, actual: tuple[int, ...]) -> None:
    """Check a run-time shape ``actual`` against a shape type such as
    ``tuple[Literal[4], int]`` (``Rank2[L[4], int]``), for :meth:`Tensor.realize`.

    The type must be a ``tuple[...]`` with one entry per dim: ``Literal[n]`` requires the
    dim to be ``n``; ``int``, a ``NewType`` of ``int`` (a named axis such as ``Batch``) or a
    subclass of ``int`` accepts any size. ``tuple[()]`` (``Rank0``) is a scalar;
    ``tuple[int, ...]`` accepts any shape.

    Raises:
        ShapeError: the rank differs or a ``Literal`` dim does not match (the message gives
            both shapes).
        TypeError: ``shape`` is not a tuple type of such dims.
    """
    if typing.get_origin(shape) is not tuple:
        raise TypeError(f"realize: expected a shape type such as Rank2[L[4], int], got {shape!r}")
    dims = typing.get_args(shape)
    if dims == ((),):  # tuple[()] on some Python versions
        dims = ()
    if len(dims) == 2 and dims[1] is Ellipsis:  # tuple[int, ...]: any rank
        if dims[0] is not int:
            raise TypeError(f"realize: only tuple[int, ...] may use '...', got {shape!r}")
        return
    want = "(" + ", ".join(_dim_name(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
    if len(dims) != len(actual):
        raise ShapeError(f"realize: tensor of shape {actual} (rank {len(actual)}) is not {want} (rank {len(dims)})")
    for i, (dim, n) in enumerate(zip(dims, actual, strict=True)):
        if typing.get_origin(dim) is Literal:
            (value,) = typing.get_args(dim)
            if value != n:
                raise ShapeError(f"realize: dim {i} of shape {actual} is {n}, the type {want} wants {value}")
            continue
        supertype = getattr(dim, "__supertype__", None)  # NewType("Batch", int)
        if not ((isinstance(dim, type) and issubclass(dim, int)) or supertype is int):
            raise TypeError(f"realize: dim {i} of {want} is {dim!r}; dims are Literal[n], int or NewType(..., int)")


R0 = TypeVar("R0", bound=tuple[()])
R1 = TypeVar("R1", bound=tuple[Any])
R2 = TypeVar("R2", bound=tuple[Any, Any])
R3 = TypeVar("R3", bound=tuple[Any, Any, Any])
R4 = TypeVar("R4", bound=tuple[Any, Any, Any, Any])
R5 = TypeVar("R5", bound=tuple[Any, Any, Any, Any, Any])
R6 = TypeVar("R6", bound=tuple[Any, Any, Any, Any, Any, Any])


# One overload per rank: the requested shape type must have the tensor's rank (each ``Rn`` is
# bounded by a tuple of ``n`` dims), so a rank mismatch is a type error, not a run-time one.
@overload
def realize(t: Tensor[AnyShape, T], shape: type[S2]) -> Tensor[S2, T]: ...
@overload
def realize(t: Tensor[tuple[int, ...], T], shape: type[S2]) -> Tensor[S2, T]: ...
@overload
def realize(t: Tensor[tuple[()], T], shape: type[R0]) -> Tensor[R0, T]: ...
@overload
def realize(t: Tensor[tuple[Any], T], shape: type[R1]) -> Tensor[R1, T]: ...
@overload  # mypy reads the value expression tuple[L[4]] as tuple[L[4], ...]
def realize(t: Tensor[tuple[Any], T], shape: type[tuple[A, ...]]) -> Tensor[tuple[A], T]: ...
@overload
def realize(t: Tensor[tuple[Any, Any], T], shape: type[R2]) -> Tensor[R2, T]: ...
@overload
def realize(t: Tensor[tuple[Any, Any, Any], T], shape: type[R3]) -> Tensor[R3, T]: ...
@overload
def realize(t: Tensor[tuple[Any, Any, Any, Any], T], shape: type[R4]) -> Tensor[R4, T]: ...
@overload
def realize(t: Tensor[tuple[Any, Any, Any, Any, Any], T], shape: type[R5]) -> Tensor[R5, T]: ...
@overload
def realize(t: Tensor[tuple[Any, Any, Any, Any, Any, Any], T], shape: type[R6]) -> Tensor[R6, T]: ...
def realize(t: Tensor[Any, T], shape: Any) -> Any:
    """``t`` under the shape type ``shape``, checked at run time (dfdx's ``realize``): where
    dynamic code (``int`` dims) meets static code (``Literal`` dims). Bound as the method
    ``Tensor.realize``: ``x.realize(shape)`` is ``realize(x, shape)``.

    Returns ``t`` itself, the same object with the same id, data, dtype and tape (no copy, no
    op recorded, gradients flow through it as through ``t``), typed ``Tensor[shape, T]``
    after checking that ``t``'s shape fits ``shape``: the rank must match, each
    ``Literal[n]`` dim must be ``n``, and ``int`` or a named axis (``NewType("Batch", int)``)
    accepts any size. Any dtype and either tape kind (``NoneTape`` or ``OwnedTape``, kept as
    it is). Statically, the requested shape type must have the rank of ``t``'s shape type
    (one overload per rank, up to 6): realizing a ``Rank3`` tensor as ``tuple[L[64], L[10]]``
    is a type error. A tensor whose shape type is unknown (``Any``, from ``dev.tensor``) or
    ``tuple[int, ...]`` may be realized to any rank, and ``tuple[int, ...]`` as the target
    forgets the shape of such a tensor; to forget a known shape, assign the tensor to a
    ``Tensor[Any, T]`` variable::

        Batch = NewType("Batch", int)

        def load() -> Tensor[Rank2[int, int], NoneTape]: ...

        w = load().realize(tuple[L[64], L[10]])     # Tensor[Rank2[L[64], L[10]], NoneTape]
        x = realize(dev.randn((32, 64)), tuple[Batch, L[64]])
        y = x.matmul(w)                             # Tensor[Rank2[Batch, L[10]], NoneTape]
        load().realize(tuple[L[64], L[3]])          # ShapeError: dim 1 of shape (64, 10) is 10, ...

    Write the shape as ``tuple[...]``: mypy accepts a tuple type as a value, but not an
    application of the ``Rank2`` alias (``Rank2[L[64], L[10]]`` works at run time only).

    Raises:
        ShapeError: the rank or a ``Literal`` dim differs; the message gives the tensor's
            shape and the requested one.
        TypeError: ``shape`` is not a tuple type of ``Literal[n]`` / ``int`` / named-axis dims.
    """
    check_realize(shape, t.data.shape)
    return t  # a type-level change only, as in dfdx
