"""Distance layers (issue 27): :class:`CosineSimilarity` and :class:`PairwiseDistance`,
PyTorch's ``nn`` wrappers of :func:`gradtape.ops.cosine_similarity` and
:func:`gradtape.ops.pairwise_distance`. No parameters; same results in training and eval."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradtape.nn._typing import T
from gradtape.nn.module import Module
from gradtape.ops.distance import cosine_similarity, pairwise_distance
from gradtape.tensor import Tensor

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along ``dim`` (PyTorch's ``nn.CosineSimilarity``):
    ``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps), dim)``, the inputs broadcast together.

    Args:
        dim: the reduced dim (default 1). eps: the norms' floor (default ``1e-8``).

    Raises (on forward): ShapeError when the shapes do not broadcast or ``dim`` is out of range.
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor[Any, T], x2: Tensor[Any, T]) -> Tensor[Any, T]:  # type: ignore[override]  # two inputs
        """The similarities: the broadcast shape without ``dim``."""
        return cosine_similarity(x1, x2, self.dim, self.eps)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dim (PyTorch's ``nn.PairwiseDistance``).

    Args:
        p: the norm's order (default 2). eps: added to the difference (default ``1e-6``).
        keepdim: keep the last dim as size 1.

    Raises (on forward): ShapeError when the shapes do not broadcast.
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor[Any, T], x2: Tensor[Any, T]) -> Tensor[Any, T]:  # type: ignore[override]  # two inputs
        """The distances: the broadcast shape without (or with a 1 for) the last dim."""
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"
