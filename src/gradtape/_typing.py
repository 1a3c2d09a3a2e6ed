"""Type variables shared by gradtape's signatures (not public API)."""

from __future__ import annotations

from typing import TypeVar

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
