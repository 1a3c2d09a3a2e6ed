"""Reductions: sum and mean over all axes or a set of axes, with ``keepdims``.

Typing: a full reduction gives ``Tensor[Rank0, T]``; ``axis=0`` / ``axis=1`` of a
``Rank2[A, B]`` gives ``Rank1[B]`` / ``Rank1[A]``; other axis sets type as ``Any``.
Backward broadcasts the output's gradient back over the reduced axes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from gradtape._typing import A, B, S, T
from gradtape.ops._util import normalize_axes
from gradtape.shapes import Rank0, Rank1, Rank2
from gradtape.tape import NONE_TAPE

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["mean", "sum"]

Array = np.ndarray[Any, Any]


def _reduce(op: str, a: Tensor[Any, Any], axis: int | tuple[int, ...] | None, keepdims: bool, scale: bool) -> Any:
    x = a.data
    axes = normalize_axes(op, axis, x.ndim)
    n = math.prod(x.shape[ax] for ax in axes)
    y = np.asarray(np.sum(x, axis=axes, keepdims=keepdims))
    if scale:
        if n == 0:
            from gradtape.errors import ShapeError

            raise ShapeError(f"{op}: mean over {n} elements (shape {x.shape}, axes {axes}) is undefined")
        y = np.multiply(y, x.dtype.type(1.0 / n), out=y) if y.ndim else np.asarray(y * x.dtype.type(1.0 / n))
    tape = a.tape
    out = a._from_op(y, tape)
    if tape is not NONE_TAPE:
        aid, oid, shape, dtype = a.id, out.id, x.shape, x.dtype
        kept = tuple(1 if i in axes else n_ for i, n_ in enumerate(shape))

        def reduce_backward(grads: Gradients) -> None:
            g = grads._data.get(oid)
            if g is None:
                return
            g = g.reshape(kept)
            if scale:
                g = g * dtype.type(1.0 / n)
            grads._accum_bcast(aid, g, shape)

        tape.add_backward_op(reduce_backward)
    return out


@overload
def sum(a: Tensor[S, T], axis: None = None) -> Tensor[Rank0, T]: ...
@overload
def sum(a: Tensor[Rank1[A], T], axis: Literal[0, -1]) -> Tensor[Rank0, T]: ...
@overload
def sum(a: Tensor[Rank2[A, B], T], axis: Literal[0, -2]) -> Tensor[Rank1[B], T]: ...
@overload
def sum(a: Tensor[Rank2[A, B], T], axis: Literal[1, -1]) -> Tensor[Rank1[A], T]: ...
@overload
def sum(a: Tensor[Any, T], axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor[Any, T]: ...
def sum(a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Sum of the elements over ``axis`` (None: all; an int or a tuple of ints).

    Args:
        axis: axes to reduce; negative axes count from the end.
        keepdims: keep reduced axes as size-1 dims.

    Gradient: ``1`` for every element (the output's gradient broadcast back).

    Raises:
        ShapeError: an axis is out of range or repeated.
    """
    return _reduce("sum", a, axis, keepdims, scale=False)


@overload
def mean(a: Tensor[S, T], axis: None = None) -> Tensor[Rank0, T]: ...
@overload
def mean(a: Tensor[Rank1[A], T], axis: Literal[0, -1]) -> Tensor[Rank0, T]: ...
@overload
def mean(a: Tensor[Rank2[A, B], T], axis: Literal[0, -2]) -> Tensor[Rank1[B], T]: ...
@overload
def mean(a: Tensor[Rank2[A, B], T], axis: Literal[1, -1]) -> Tensor[Rank1[A], T]: ...
@overload
def mean(a: Tensor[Any, T], axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor[Any, T]: ...
def mean(a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Arithmetic mean over ``axis`` (None: all; an int or a tuple of ints).

    Gradient: ``1 / n`` for every element, ``n`` the number of elements averaged.

    Raises:
        ShapeError: an axis is out of range or repeated, or the mean is over zero elements.
    """
    return _reduce("mean", a, axis, keepdims, scale=True)
