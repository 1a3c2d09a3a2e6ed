"""Containers: :class:`Sequential` and :class:`Residual`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar, overload

from gradtape.nn.module import Module
from gradtape.shapes import AnyShape
from gradtape.tape import Tape
from gradtape.tensor import Tensor

__all__ = ["Residual", "Sequential"]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)


class Sequential(Module):
    """Apply modules in order, ``y = f_n(...f_2(f_1(x)))`` (PyTorch's ``nn.Sequential``,
    dfdx's tuples of modules). Parameters are named ``<index>.<name>``, e.g. ``"0.weight"``.
    Indexing (``seq[0]``) and ``len`` work as on the list of modules.

    Untyped: ``seq(x)`` is ``Any`` (no false alarm, no check), and so is ``seq[i]``'s call.
    Typing the chain (overloads of ``__init__`` for 1..n layers taking ``Callable[[X], A]``,
    ``Callable[[A], B]``, ...) does not work with gradtape's layers, whose calls are
    overloaded and generic in the batch dim and tape kind: mypy cannot infer the
    intermediate types ("Cannot infer value of type parameter"), and pyright picks one
    overload per layer and fixes its type variables, so that a valid input is then rejected.
    For a typed model, write a :class:`Module` subclass whose ``forward`` calls the layers
    (annotated, e.g. ``self.fc1: Linear[L[64], L[128]] = Linear(64, 128, dev=dev)``) and
    annotate ``forward``'s input and output: each layer call is then checked.

    Raises:
        TypeError: an argument is not a :class:`Module`.
    """

    def __init__(self, *modules: Module) -> None:
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: argument {i} is a {type(m).__name__}, not a Module")
        self.layers: list[Module] = list(modules)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(str(index), module)`` for each module."""
        for i, m in enumerate(self.layers):
            yield str(i), m

    def forward(self, x: Any) -> Any:
        """Each module applied in turn."""
        for m in self.layers:
            x = m(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.layers)


class Residual(Module):
    """A residual connection ``y = x + f(x)`` (He et al. 2016, "Deep Residual Learning";
    dfdx's ``Residual``). ``f`` must keep the input's shape; its parameters are named
    ``f.<name>``.

    Typed as its contract: ``Tensor[S, T] -> Tensor[S, T]`` (``x``'s shape type and tape
    kind; an ``Any`` input gives ``Any``). ``f`` itself is not checked against ``x``'s type
    (it is held as a :class:`Module`); a typed ``f`` is checked where a model's ``forward``
    calls it.

    Raises (on forward): ShapeError when ``f(x)`` does not broadcast with ``x``.
    """

    def __init__(self, f: Module) -> None:
        self.f = f

    @overload
    def forward(self, x: AnyShape) -> Any: ...
    @overload
    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]: ...
    def forward(self, x: Any) -> Any:
        """``x + f(x)``, ``x``'s shape and tape kind."""
        return x + self.f(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward
