"""einops' layers as gradtape modules: :class:`Rearrange` and :class:`Reduce` (the classes
``einops.layers.torch`` gives PyTorch), for ``nn.Sequential`` models written with einops, such
as vit-pytorch's ``Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=16, p2=16)``.

einops parses the pattern and plans the operations (its ``RearrangeMixin``/``ReduceMixin``);
they run through gradtape's einops backend (:mod:`gradtape._einops`), so they record and
differentiate like any gradtape op.
"""

from __future__ import annotations

from typing import Any

from einops.layers import RearrangeMixin, ReduceMixin

from gradtape.errors import DTypeError, ShapeError
from gradtape.nn.module import Module
from gradtape.tensor import Tensor


def _check(layer: Any, x: Any) -> None:
    """Refuse what einops would answer with a bare ``KeyError`` or ``NotImplementedError``.

    Raises:
        TypeError: ``x`` is not a tensor. ShapeError: its rank does not fit the pattern.
        DTypeError: a ``mean`` of an integer or bool tensor.
    """
    who = f"{type(layer).__name__}: {layer!r}"
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: expected a Tensor, got {type(x).__name__}")
    if x.ndim not in layer._multirecipe:
        ranks = ", ".join(map(str, sorted(layer._multirecipe)))
        raise ShapeError(f"{who}: input of shape {x.shape} has rank {x.ndim}; the pattern takes rank {ranks}")
    if getattr(layer, "reduction", None) == "mean" and x.dtype.kind != "f":
        raise DTypeError(f"{who}: a mean needs a float tensor, got dtype {x.dtype}")


__all__ = ["Rearrange", "Reduce"]


class Rearrange(RearrangeMixin, Module):
    """``einops.rearrange(x, pattern, **axes_lengths)`` as a layer (no parameters).

    Shapes: as the pattern says; the same dtype and tape kind as ``x``.

    Raises:
        einops.EinopsError: a malformed pattern (when built) or an input whose sizes do not fit
            it (when called), with einops' message. ShapeError: an input of a rank the pattern
            does not take. TypeError: an input that is not a tensor.
    """

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """The rearranged ``x``."""
        _check(self, x)
        out: Tensor[Any, Any] = self._apply_recipe(x)  # type: ignore[no-untyped-call]
        return out


class Reduce(ReduceMixin, Module):
    """``einops.reduce(x, pattern, reduction, **axes_lengths)`` as a layer (no parameters);
    ``reduction`` is ``'sum'``, ``'mean'``, ``'max'`` or ``'min'``.

    Raises:
        einops.EinopsError, ShapeError, TypeError: as :class:`Rearrange`. DTypeError: a
            ``'mean'`` of an integer tensor. NotImplementedError: a reduction gradtape lacks
            (``'any'``, ``'all'``).
    """

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """The reduced ``x``."""
        _check(self, x)
        out: Tensor[Any, Any] = self._apply_recipe(x)  # type: ignore[no-untyped-call]
        return out
