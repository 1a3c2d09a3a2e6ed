"""Type variables of the layers' typed signatures (not public API).

The widths a layer class is generic in (``Linear[I, O]``, ``Conv2d[C, O]``, ``LayerNorm[D]``,
``MultiHeadAttention[E]``, ``Flatten[SD, ED]``, ...) carry a PEP 696 default of ``int``
(typing_extensions' ``TypeVar``, for the checkers only; plain ``typing.TypeVar`` at run time):
a bare ``Linear`` annotation means ``Linear[int, int]``, a layer whose widths are known at run
time, which is also what the constructor infers without an annotated target. The other
variables name the dims and the tape kind in the layers' ``forward`` overloads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple

from gradtape._typing import B, S, T

if TYPE_CHECKING:
    from typing_extensions import TypeVar as _Width
else:

    def _Width(name: str, *, covariant: bool = False, default: Any = None) -> Any:
        return TypeVar(name, covariant=covariant)


__all__ = [
    "ED",
    "SD",
    "B",
    "C",
    "D",
    "D1",
    "D2",
    "D3",
    "E",
    "H",
    "HS",
    "I",
    "J",
    "K",
    "Lk",
    "Lq",
    "N",
    "O",
    "S",
    "T",
    "V",
    "W",
    "W2",
    "X",
    "Y",
    "Z",
    "Ts",
]

# ----- class parameters: widths, default int ------------------------------------------------

C = _Width("C", default=int)
"""A convolution's in-channels."""
O = _Width("O", default=int)
"""Out-features (``Linear``) or out-channels (convolutions)."""
I = _Width("I", default=int)
"""``Linear``'s in-features."""
D = _Width("D", default=int)
"""A normalisation layer's width: the last dim (``LayerNorm``, ``RMSNorm``) or the channels."""
E = _Width("E", default=int)
"""An embedding width: ``Embedding``'s row size, the model width of attention and Mamba."""
HS = _Width("HS", default=int)
"""A recurrent layer's (or cell's) hidden size."""
V = _Width("V", default=int)
"""``Embedding``'s number of rows."""
SD = _Width("SD", covariant=True, default=int)
"""``Flatten``'s ``start_dim``."""
ED = _Width("ED", covariant=True, default=int)
"""``Flatten``'s ``end_dim``."""

# ----- dims in forward's overloads (``B`` the batch, ``S`` a whole shape, ``T`` the tape kind) --

N = TypeVar("N")
"""A leading (batch) dim."""
Lq = TypeVar("Lq")
"""A sequence length (attention's queries)."""
Lk = TypeVar("Lk")
"""Attention's key and value length."""
H = TypeVar("H")
W = TypeVar("W")
"""Spatial dims (height, width); ``W`` also a width a self-typed ``[int]`` layer passes through."""
W2 = TypeVar("W2")
"""A second such width (attention's keys and values)."""
K = TypeVar("K")
J = TypeVar("J")
Z = TypeVar("Z")
"""A dim that a run-time-width (``[int]``) layer takes of any type."""
X = TypeVar("X")
Y = TypeVar("Y")
D1 = TypeVar("D1")
D2 = TypeVar("D2")
D3 = TypeVar("D3")
Ts = TypeVarTuple("Ts")
"""Leading dims of any number."""
