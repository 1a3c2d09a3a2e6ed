"""Containers: :class:`Sequential` and :class:`Residual`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gradtape.nn.module import Module

__all__ = ["Residual", "Sequential"]


class Sequential(Module):
    """Apply modules in order, ``y = f_n(...f_2(f_1(x)))`` (PyTorch's ``nn.Sequential``,
    dfdx's tuples of modules). Parameters are named ``<index>.<name>``, e.g. ``"0.weight"``.
    Indexing (``seq[0]``) and ``len`` work as on the list of modules. Untyped (``Any``).

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

    Raises (on forward): ShapeError when ``f(x)`` does not broadcast with ``x``.
    """

    def __init__(self, f: Module) -> None:
        self.f = f

    def forward(self, x: Any) -> Any:
        """``x + f(x)``."""
        return x + self.f(x)
