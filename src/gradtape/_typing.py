"""Type variables shared by gradtape's signatures, and :func:`typed_as`, which gives an op its
generated overload table (not public API)."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

from gradtape.tape import Tape

S = TypeVar("S")
"""A tensor's shape type (a ``tuple`` of dims)."""
T = TypeVar("T", bound=Tape)
"""A tensor's tape kind (``NoneTape`` or ``OwnedTape``)."""
T2 = TypeVar("T2", bound=Tape)
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
SI = TypeVar("SI", bound=tuple[int, ...])
"""A concrete shape given as a tuple of ints (creation functions)."""
F = TypeVar("F", bound=Callable[..., Any])

Count: TypeAlias = Any
"""The number of tensors in a list: a dim only the run time knows (``stack`` of a
``Sequence``). It is ``Any``: a list's length is not in its type, so any annotation of that
dim is accepted (``y: Tensor[Rank2[L[5], L[3]], NoneTape] = stack(xs)``; the other dims are
still checked), and without one the dim stays ``Any``. (A type variable with the default
``int``, solved from the expected type, was accepted by mypy and pyright but not by pyrefly
1.4, which takes the default there.) Such an annotation is trusted, not checked; to have it
checked at run time, write ``stack(xs).realize(tuple[L[5], L[3]])``; gradtape's mypy plugin
checks a list display's length against it."""


def typed_as(table: F) -> Callable[[Callable[..., Any]], F]:
    """Decorator giving an op the typed signature ``table``: the function of the same name in
    a module of overload tables that ``scripts/gen_shape_overloads.py`` writes
    (``ops/_signatures/binary.py`` for ``ops/binary.py``, ``_signatures/losses.py`` for
    ``losses.py``)::

        @typed_as(_sig.add)
        def add(a: Any, b: Any) -> Any: ...

    Type checkers (mypy, pyright) see ``table``'s ``@overload`` signatures as the op's, and
    still check the op's body against its own annotations. At run time the op itself is
    returned (no wrapper: no cost per call), once ``table``'s overloads are registered as its
    own (``typing.get_overloads(op)`` lists them, as if they were written above it: what
    ``ops._util.checked`` reads to find the tensor parameters).

    Raises:
        TypeError: ``table`` is the table of another function (a name that differs), or has
            no overloads.
    """

    def bind(fn: Callable[..., Any]) -> Any:
        if table.__name__ != fn.__name__:
            raise TypeError(f"typed_as: {fn.__qualname__} is given the overload table of {table.__qualname__}")
        stubs = typing.get_overloads(table)
        if not stubs:
            raise TypeError(f"typed_as: {table.__qualname__} has no @overload signatures")
        for stub in stubs:
            stub.__module__, stub.__qualname__ = fn.__module__, fn.__qualname__
            typing.overload(stub)
        return fn

    return bind
