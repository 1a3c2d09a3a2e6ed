"""The ops whose PyTorch spelling means something else than ``gradtape.ops``' of the same name,
written as PyTorch's: the package's top (``gradtape.max``, ``torch.max``'s place) and
:mod:`gradtape.nn.functional` (``F.dropout``) export these, ``gradtape.ops`` keeps its own.

A familiar name must not mean something else silently, so where ``gradtape.ops``' convention
(numpy's) differs from PyTorch's, the PyTorch-named export follows PyTorch:

- :func:`max` / :func:`min`: ``torch.max(x, 1)`` (a positional dim) is ``(values, indices)``
  and ``torch.max(x, y)`` (a tensor) is the elementwise maximum; ``ops.max(x, 1)`` is numpy's
  ``amax``.
- :func:`var` / :func:`std`: PyTorch's default ``correction=1`` (Bessel's); ``ops.var``
  keeps numpy's ``0``.
- :func:`dropout`: ``F.dropout(x, p, training)`` (the third argument is ``training``; in
  ``ops.dropout`` it is the generator).
- :func:`rms_norm`: ``F.rms_norm(x, normalized_shape, weight, eps)`` (``ops.rms_norm`` takes
  no ``normalized_shape``).

Every other op at the package's top is ``gradtape.ops``' own function (checked against
PyTorch's spelling by tests/test_torch_namespace.py).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast, overload

from gradtape import ops as _ops
from gradtape._typing import typed_as
from gradtape.errors import ShapeError
from gradtape.ops._signatures import reduce as _rsig
from gradtape.ops.select import ValuesIndices
from gradtape.shapes import Rank0
from gradtape.tape import Tape
from gradtape.tensor import Tensor

__all__ = ["dropout", "max", "min", "rms_norm", "std", "var"]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)


@overload
def max(input: Tensor[S, T]) -> Tensor[Rank0, T]: ...
@overload
def max(input: Tensor[Any, T], dim: int, keepdim: bool = False) -> ValuesIndices[Any, T]: ...
@overload
def max(input: Tensor[S, T], other: Tensor[S, Any], /) -> Tensor[S, Any]: ...
def max(input: Any, dim: Any = None, keepdim: bool = False) -> Any:  # torch.max
    """PyTorch's ``torch.max``: ``max(x)`` the largest element (a rank-0 tensor);
    ``max(x, dim, keepdim=False)`` the named tuple ``(values, indices)`` along ``dim``
    (``indices`` int64, the first maximum); ``max(x, other)`` with a tensor ``other`` the
    elementwise maximum (``torch.maximum``). Gradients as :func:`gradtape.ops.max` and
    :func:`gradtape.ops.maximum` (split evenly over ties).

    Raises:
        ShapeError: ``dim`` out of range; shapes that do not broadcast.
        TypeError: ``dim`` neither an int nor a tensor.
    """
    if dim is None:
        return _ops.max(input)
    if isinstance(dim, Tensor):
        return _ops.maximum(input, dim)
    return _ops.max(input, dim=dim, keepdim=keepdim)


@overload
def min(input: Tensor[S, T]) -> Tensor[Rank0, T]: ...
@overload
def min(input: Tensor[Any, T], dim: int, keepdim: bool = False) -> ValuesIndices[Any, T]: ...
@overload
def min(input: Tensor[S, T], other: Tensor[S, Any], /) -> Tensor[S, Any]: ...
def min(input: Any, dim: Any = None, keepdim: bool = False) -> Any:  # torch.min
    """PyTorch's ``torch.min``: as :func:`max`, with the smallest element, ``(values,
    indices)`` of the minima, or ``torch.minimum``.

    Raises:
        ShapeError: ``dim`` out of range; shapes that do not broadcast.
        TypeError: ``dim`` neither an int nor a tensor.
    """
    if dim is None:
        return _ops.min(input)
    if isinstance(dim, Tensor):
        return _ops.minimum(input, dim)
    return _ops.min(input, dim=dim, keepdim=keepdim)


def _correction(correction: float | None, ddof: float | None, unbiased: bool | None) -> float | None:
    """PyTorch's default correction (1) when none of the three spellings is given."""
    return 1.0 if correction is None and ddof is None and unbiased is None else correction


@typed_as(_rsig.var)
def var(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    correction: float | None = None,
    ddof: float | None = None,
    unbiased: bool | None = None,
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool | None = None,
) -> Any:
    """PyTorch's ``torch.var``: the variance ``sum((x - mean)**2) / (n - correction)`` over
    ``dim`` (all by default) with PyTorch's default ``correction=1`` (Bessel's, the unbiased
    sample variance; ``unbiased=False`` or ``correction=0`` for the population variance).
    :func:`gradtape.ops.var` is the same op with numpy's default ``0``; gradient, shapes and
    errors as there.

    Raises:
        ShapeError, ValueError, TypeError, DTypeError: as :func:`gradtape.ops.var`.
    """
    c = _correction(correction, ddof, unbiased)
    return _ops.var(a, axis, keepdims, correction=c, ddof=ddof, unbiased=unbiased, dim=dim, keepdim=keepdim)


@typed_as(_rsig.std)
def std(
    a: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool | None = None,
    *,
    correction: float | None = None,
    ddof: float | None = None,
    unbiased: bool | None = None,
    dim: int | tuple[int, ...] | None = None,
    keepdim: bool | None = None,
) -> Any:
    """PyTorch's ``torch.std``: ``sqrt(var(x, correction))`` with PyTorch's default
    ``correction=1`` (see :func:`var`); :func:`gradtape.ops.std` keeps numpy's ``0``.

    Raises:
        ShapeError, ValueError, TypeError, DTypeError: as :func:`gradtape.ops.std`.
    """
    c = _correction(correction, ddof, unbiased)
    return _ops.std(a, axis, keepdims, correction=c, ddof=ddof, unbiased=unbiased, dim=dim, keepdim=keepdim)


def dropout(input: Tensor[S, T], p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor[S, T]:
    """PyTorch's ``F.dropout(input, p=0.5, training=True, inplace=False)`` (and
    ``torch.dropout(input, p, train)``): inverted dropout, each element zeroed with probability
    ``p`` and the others scaled by ``1 / (1 - p)``, masks from ``input``'s device generator
    (seeded by :func:`gradtape.manual_seed` for the default device); the identity when
    ``training`` is false. See :func:`gradtape.ops.dropout` for the gradient.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``, or ``inplace=True`` (gradtape's tensors are not
            written in place by ops; use the result).
        DTypeError: an integer or bool tensor.
    """
    if inplace:
        raise ValueError("dropout: inplace=True is not supported (ops never overwrite their input); use the result")
    return _ops.dropout(input, p, None, training)


def rms_norm(
    input: Tensor[S, T],
    normalized_shape: int | tuple[int, ...] | list[int],
    weight: Tensor[Any, Any] | None = None,
    eps: float | None = None,
) -> Tensor[S, T]:
    """PyTorch's ``F.rms_norm(input, normalized_shape, weight=None, eps=None)``: root-mean-
    square normalisation over the last dim (Zhang & Sennrich 2019), ``y = x / sqrt(mean(x**2)
    + eps) * weight``; ``eps`` defaults to the dtype's machine epsilon, as PyTorch's. Only the
    last dim may be normalised (``normalized_shape`` of length 1; see
    :func:`gradtape.ops.rms_norm` for the gradient).

    Raises:
        ShapeError: ``normalized_shape`` is not ``(N,)`` with ``N`` the input's last dim; a
            ``weight`` of another shape.
        DTypeError: a non-float input.
    """
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    last = tuple(input.shape[-1:])
    if ns != last:
        raise ShapeError(
            f"rms_norm: normalized_shape {ns} must be the input's last dim {last} (input shape {tuple(input.shape)}); "
            "gradtape normalises over the last dim only"
        )
    x: Any = input
    out: Any = _ops.rms_norm(x, weight, eps)  # (..., N) -> (..., N): input's shape
    return cast("Tensor[S, T]", out)
