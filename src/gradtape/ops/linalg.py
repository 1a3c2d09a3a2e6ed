"""Linear algebra: the matrix product of 2-D tensors (BLAS through numpy), with its backward.

Typing: ``Tensor[Rank2[M, K], ...] @ Tensor[Rank2[K, N], ...] -> Tensor[Rank2[M, N], ...]``;
mypy rejects mismatched inner dims ``K``. The output owns a tape if either input does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

import numpy as np

from gradtape._typing import A, B, C, T
from gradtape.errors import ShapeError
from gradtape.ops._util import tensor_operand
from gradtape.shapes import Rank2
from gradtape.tape import NONE_TAPE, NoneTape, OwnedTape, Tape, merge_tapes

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["matmul"]


@overload
def matmul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank2[A, C], T]: ...
@overload
def matmul(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[B, C], OwnedTape]) -> Tensor[Rank2[A, C], OwnedTape]: ...
@overload
def matmul(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank2[A, C], T]: ...
def matmul(a: Any, b: Any) -> Any:
    """Matrix product ``a @ b`` of an ``(M, K)`` and a ``(K, N)`` tensor: an ``(M, N)`` tensor.

    Gradients (the standard matmul backward): ``grad_a += g @ b.T``, ``grad_b += a.T @ g``,
    each skipped for a leaf the gradient store does not keep (see ``Gradients.wants``).

    Raises:
        ShapeError: an operand is not 2-D, or the inner dims differ (names both shapes).
        DTypeError: float32 meets float64.
    """
    bt = tensor_operand("matmul", a, b)
    ad, bd = a.data, bt.data
    if ad.ndim != 2 or bd.ndim != 2:
        raise ShapeError(f"matmul: expects 2-D tensors, got shapes {ad.shape} and {bd.shape}")
    if ad.shape[1] != bd.shape[0]:
        raise ShapeError(f"matmul: inner dims differ: {ad.shape} @ {bd.shape} ({ad.shape[1]} != {bd.shape[0]})")
    tape = merge_tapes(a.tape, bt.tape)
    out = a._from_op(np.matmul(ad, bd), tape)
    if tape is not NONE_TAPE:
        aid, bid, oid, a_leaf, b_leaf = a.id, bt.id, out.id, a._leaf, bt._leaf

        def matmul_backward(grads: Gradients) -> None:
            g = grads._data.get(oid)
            if g is None:
                return
            if grads.wants(aid, a_leaf):
                grads._accum(aid, np.matmul(g, bd.T))
            if grads.wants(bid, b_leaf):
                grads._accum(bid, np.matmul(ad.T, g))

        tape.add_backward_op(matmul_backward)
    return out
