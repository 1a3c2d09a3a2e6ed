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

from gradtape.nn.module import Module
from gradtape.tensor import Tensor

__all__ = ["Rearrange", "Reduce"]


class Rearrange(RearrangeMixin, Module):
    """``einops.rearrange(x, pattern, **axes_lengths)`` as a layer (no parameters).

    Shapes: as the pattern says; the same dtype and tape kind as ``x``.

    Raises:
        einops.EinopsError: a malformed pattern (when built) or an input whose shape does not
            fit it (when called), with einops' message.
    """

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """The rearranged ``x``."""
        out: Tensor[Any, Any] = self._apply_recipe(x)  # type: ignore[no-untyped-call]
        return out


class Reduce(ReduceMixin, Module):
    """``einops.reduce(x, pattern, reduction, **axes_lengths)`` as a layer (no parameters);
    ``reduction`` is ``'sum'``, ``'mean'``, ``'max'`` or ``'min'``.

    Raises:
        einops.EinopsError: as :class:`Rearrange`. NotImplementedError: a reduction gradtape
            lacks (``'any'``, ``'all'``).
    """

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """The reduced ``x``."""
        out: Tensor[Any, Any] = self._apply_recipe(x)  # type: ignore[no-untyped-call]
        return out
