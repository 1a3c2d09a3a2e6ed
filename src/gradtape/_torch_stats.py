"""PyTorch's order statistics, integrals, pairwise distances, the multi-label margin loss and
``torch.compile``, written from gradtape ops under PyTorch's names and arguments (the package's
top exports them as ``torch.*``, ``gradtape.nn.functional`` the functional ones as ``F.*``).

Every value a gradient flows through is a recorded op (``sort``, ``take_along_axis``,
``where``, ``pow``, ``cumsum``, ...), so each function has both rules (first order and
``create_graph``) by construction; the positions and masks are computed on the host as
constants, as PyTorch computes its ranks and indices.

- order statistics: :func:`quantile`, :func:`nanquantile`, :func:`mode`;
- integrals: :func:`trapezoid` (and its alias :func:`trapz`), :func:`cumulative_trapezoid`;
- distances: :func:`pdist`;
- losses: :func:`multilabel_margin_loss`;
- :func:`compile`, PyTorch's ``torch.compile``: returns the model or function itself.

Checked against PyTorch's values and gradients in float64 by tests/test_port_gaps_more.py and
the rows of tests/test_torch_namespace.py.
"""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from gradtape import ops as _ops
from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._util import index_tensor, one_dim
from gradtape.ops._util import tensor_arg as _tensor
from gradtape.ops.select import ValuesIndices
from gradtape.tape import Tape
from gradtape.tensor import Tensor

Array = np.ndarray[Any, Any]

__all__ = [
    "compile",
    "cumulative_trapezoid",
    "mode",
    "multilabel_margin_loss",
    "nanquantile",
    "pdist",
    "quantile",
    "trapezoid",
    "trapz",
]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)
F = TypeVar("F")

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _host(op: str, x: Tensor[Any, Any]) -> Array:
    """``x``'s values as a host numpy array (a GPU tensor's copied over). Inside a call
    :func:`gradtape.capture` records, the capture is refused, naming ``op``: what the function
    computes from them (ranks, masks, positions) a replay would not compute again."""
    if _tp._recorder is not None:
        _tp._recorder.refuse(
            f"calls {op}, which reads tensor values on the host (positions and masks a replay would "
            "not compute again); call it outside the captured function"
        )
    out: Array = _arrays.into_memory_of(x.data, None)
    return out


def _constant(like: Tensor[Any, Any], a: Array) -> Tensor[Any, Any]:
    """A host array as an untraced tensor on ``like``'s device (a mask, weights)."""
    t: Tensor[Any, Any] = like.device.tensor(np.ascontiguousarray(a))
    return t


def _float_input(op: str, x: Tensor[Any, Any]) -> None:
    if x.dtype.kind != "f":
        raise DTypeError(f"{op}: input must be a float tensor (float32 or float64), got dtype {x.dtype}")


# ----- quantiles ------------------------------------------------------------------------------


def _q_values(op: str, x: Tensor[Any, Any], q: object) -> tuple[Array, Tensor[Any, Any] | None, bool]:
    """``q`` as a 1-D host array, the tensor it came from (which may take part), and whether it
    was a scalar (the output then has no ``q`` dim)."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise ShapeError(f"{op}: q must be a scalar or 1-D tensor, got shape {q.shape}")
        if q.dtype != x.dtype:
            raise DTypeError(f"{op}: q must have the input's dtype {x.dtype}, got dtype {q.dtype}")
        qa = _host(op, q).reshape(-1)
        scalar = q.ndim == 0
        qt: Tensor[Any, Any] | None = q.reshape((-1,))
    elif isinstance(q, (int, float, np.integer, np.floating)) and not isinstance(q, bool):
        qa, scalar, qt = np.array([float(q)], dtype=x.dtype), True, None
    else:
        raise TypeError(f"{op}: q must be a number or a tensor, got {type(q).__name__}")
    bad = qa[~((qa >= 0) & (qa <= 1))]
    if bad.size:
        raise ValueError(f"{op}: q must be in the range [0, 1] but got {bad[0]}")
    return qa, qt, scalar


def _quantile(
    op: str, input: Tensor[Any, T], q: object, dim: int | None, keepdim: bool, interpolation: str, ignore_nan: bool
) -> Tensor[Any, T]:
    x = _tensor(op, input)
    _float_input(op, x)
    if not isinstance(interpolation, str) or interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"{op}: interpolation must be one of linear, lower, higher, midpoint or nearest, but got {interpolation!r}"
        )
    qa, qt, scalar = _q_values(op, x, q)
    if x.size == 0:
        raise ShapeError(f"{op}: the input tensor must be non-empty, got shape {x.shape}")
    ndim = x.ndim
    if dim is None:
        flat = x.reshape((-1,))
        d_out = None
    else:
        d_out = one_dim(op, dim, x.shape)
        flat = _ops.movedim(x, d_out, -1) if ndim else x.reshape((1,))
    srt: Tensor[Any, T] = _ops.sort(flat, dim=-1).values  # NaN sorts last, as PyTorch's
    n = srt.shape[-1]
    data = _host(op, srt)
    nan = np.isnan(data)
    lead = srt.shape[:-1]
    # ranks of shape (*lead, Q): q (n - 1), or over the non-NaN count for nanquantile
    if ignore_nan:
        count = (n - nan.sum(axis=-1, keepdims=True)).astype(x.dtype)
        scale = count - 1
        scale_c = np.where(scale < 0, 0, scale)
    else:
        scale_c = np.full((*lead, 1), n - 1, dtype=x.dtype)
    ranks = qa.astype(x.dtype) * scale_c
    last_nan = None if ignore_nan else np.broadcast_to(nan.any(axis=-1, keepdims=True), ranks.shape)
    if last_nan is not None:
        ranks = np.where(last_nan, n - 1, ranks)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as PyTorch's round
    below = ranks.astype(np.int64)
    values = _ops.take_along_axis(srt, index_tensor(srt, below), -1)
    if interpolation in ("linear", "midpoint"):
        above = np.ceil(ranks).astype(np.int64)
        upper = _ops.take_along_axis(srt, index_tensor(srt, above), -1)
        if interpolation == "midpoint":
            w_c = np.full(ranks.shape, 0.5, dtype=x.dtype)
            weight: Any = 0.5
        else:
            w_c = (ranks - below).astype(x.dtype)
            weight = _constant(srt, w_c)
            if qt is not None and qt.requires_grad:  # PyTorch differentiates q too: d/dq = (above - below) scale
                w_t = qt * _constant(srt, scale_c) - _constant(srt, below.astype(x.dtype))
                if last_nan is not None:
                    w_t = _ops.where(_constant(srt, last_nan), 0.0, w_t)
                weight = w_t
        # PyTorch's lerp: below + w (above - below) for w < 0.5, else above - (above - below)(1 - w)
        diff = upper - values
        low = _constant(srt, w_c < 0.5)
        values = _ops.where(low, values + weight * diff, upper - diff * (1.0 - weight))
    out: Tensor[Any, T] = _ops.movedim(values, -1, 0)  # (Q, *lead)
    if keepdim:
        if d_out is None:
            out = out.reshape((out.shape[0],) + (1,) * ndim)
        elif ndim:
            out = out.unsqueeze(1 + d_out)
    if scalar:
        out = out.reshape(out.shape[1:])
    return out


def quantile(
    input: Tensor[Any, T],
    q: float | Tensor[Any, Any],
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor[Any, T]:
    """``torch.quantile``: the ``q``-th quantiles of ``input`` along ``dim`` (of all elements,
    flattened, when ``dim`` is None).

    Each slice is sorted; with ``n`` its length the rank is ``r = q (n - 1)`` and the result
    ``sorted[floor(r)] + (r - floor(r)) (sorted[ceil(r)] - sorted[floor(r)])``
    (``interpolation='linear'``), or ``sorted[floor(r)]`` (``'lower'``), ``sorted[ceil(r)]``
    (``'higher'``), the mean of the two (``'midpoint'``) or ``sorted[round(r)]`` with halves
    to even (``'nearest'``). A slice holding a NaN gives NaN.

    Shapes and dtypes: ``input`` float32/float64 of any shape; ``q`` a number in ``[0, 1]`` or
    a 0-d or 1-D tensor of ``input``'s dtype; the result is the reduced shape (``dim`` kept as
    size 1 with ``keepdim``; all dims kept as 1 with ``dim=None, keepdim=True``), with a first
    dim of ``len(q)`` for a 1-D ``q`` (PyTorch's layout), ``input``'s dtype.

    Gradient: as PyTorch's (through the sort): ``g (1 - w)`` to the element at ``floor(r)``
    and ``g w`` to the one at ``ceil(r)`` (``w = r - floor(r)``, ``1/2`` for ``'midpoint'``);
    all of ``g`` to the chosen element for the other modes; a ``q`` tensor that requires grad
    gets ``g (sorted[ceil(r)] - sorted[floor(r)]) (n - 1)`` (``'linear'``). Differentiable
    again.

    Raises:
        TypeError: ``input`` is not a tensor, ``q`` not a number or tensor, ``dim`` not an int.
        DTypeError: ``input`` is not float, or a ``q`` tensor has another dtype.
        ShapeError: ``input`` is empty, ``q`` has more than 1 dim, ``dim`` is out of range.
        ValueError: a ``q`` outside ``[0, 1]``, an unknown ``interpolation``.
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(
    input: Tensor[Any, T],
    q: float | Tensor[Any, Any],
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor[Any, T]:
    """``torch.nanquantile``: :func:`quantile` ignoring NaNs: the rank of each slice is
    ``q (k - 1)`` over its ``k`` non-NaN elements (a slice of NaNs only gives NaN). Shapes,
    dtypes, gradients and errors as :func:`quantile`'s (NaN elements get no gradient).

    Raises:
        TypeError, DTypeError, ShapeError, ValueError: as :func:`quantile`.
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


# ----- mode -----------------------------------------------------------------------------------


def _introsort_keys(v: list[Any]) -> list[int]:
    """The positions of ``v`` in the order libstdc++'s ``std::sort`` leaves them when it sorts
    ``(value, position)`` pairs by value alone (PyTorch's CPU ``mode`` kernel): introsort with
    median-of-three pivots, a heap sort past depth ``2 floor(log2 n)``, then insertion sort of
    the runs under 16. Equal values end up in an order that depends on the algorithm, and
    PyTorch reports the position of the last of the mode's run: reproduced step by step."""
    a = list(range(len(v)))  # positions; compare by v[pos]

    def less(i: int, j: int) -> bool:
        return bool(v[a[i]] < v[a[j]])

    def swap(i: int, j: int) -> None:
        a[i], a[j] = a[j], a[i]

    def adjust_heap(first: int, hole: int, length: int, value: int) -> None:
        top, child = hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if v[a[first + child]] < v[a[first + child - 1]]:
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if length & 1 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and v[a[first + parent]] < v[value]:
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = value

    def heap_sort(first: int, last: int) -> None:
        length = last - first
        if length >= 2:
            parent = (length - 2) // 2
            while True:
                adjust_heap(first, parent, length, a[first + parent])
                if parent == 0:
                    break
                parent -= 1
        while last - first > 1:
            last -= 1
            value = a[last]
            a[last] = a[first]
            adjust_heap(first, 0, last - first, value)

    def partition_pivot(first: int, last: int) -> int:
        mid = first + (last - first) // 2
        x, y, z = first + 1, mid, last - 1
        if less(x, y):
            if less(y, z):
                swap(first, y)
            elif less(x, z):
                swap(first, z)
            else:
                swap(first, x)
        elif less(x, z):
            swap(first, x)
        elif less(y, z):
            swap(first, z)
        else:
            swap(first, y)
        lo, hi = first + 1, last
        while True:
            while less(lo, first):
                lo += 1
            hi -= 1
            while less(first, hi):
                hi -= 1
            if not lo < hi:
                return lo
            swap(lo, hi)
            lo += 1

    def introsort(first: int, last: int, depth: int) -> None:
        while last - first > 16:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            cut = partition_pivot(first, last)
            introsort(cut, last, depth)
            last = cut

    def linear_insert(last: int) -> None:
        value = a[last]
        nxt = last - 1
        while v[value] < v[a[nxt]]:
            a[last] = a[nxt]
            last = nxt
            nxt -= 1
        a[last] = value

    def insertion_sort(first: int, last: int) -> None:
        for i in range(first + 1, last):
            if v[a[i]] < v[a[first]]:
                value = a[i]
                a[first + 1 : i + 1] = a[first:i]
                a[first] = value
            else:
                linear_insert(i)

    n = len(a)
    if n:
        introsort(0, n, 2 * (n.bit_length() - 1))
        if n > 16:
            insertion_sort(0, 16)
            for i in range(16, n):
                linear_insert(i)
        else:
            insertion_sort(0, n)
    return a


def _mode_index(row: Array) -> int:
    """PyTorch's CPU ``mode`` of one slice: the position it reports for the smallest of the most
    frequent values (the last of that value's run in ``std::sort``'s order)."""
    n = row.shape[0]
    if n <= 16:  # insertion sort only: stable, so the last occurrence
        vals, counts = np.unique(row, return_counts=True)
        best = vals[int(np.argmax(counts))] if vals.size else row[0]
        hits = np.flatnonzero(row == best)
        return int(hits[-1]) if hits.size else 0
    v = row.tolist()
    order = _introsort_keys(v)
    best_i, best_f, run = 0, 0, 0
    for i in range(n):
        run += 1
        if i == n - 1 or v[order[i]] != v[order[i + 1]]:
            if run > best_f:
                best_i, best_f = order[i], run
            run = 0
    return best_i


def mode(input: Tensor[Any, T], dim: int = -1, keepdim: bool = False) -> Any:
    """``torch.mode``: ``(values, indices)``, the most frequent value along ``dim`` (the
    smallest of them on a tie of counts) and a position where it occurs.

    The position is PyTorch 2's CPU choice: its kernel sorts each slice's ``(value, position)``
    pairs with ``std::sort`` by value alone and reports the last pair of the mode's run, which
    for slices of up to 16 elements is the last occurrence and for longer ones depends on the
    introsort's swaps; this reproduces libstdc++'s algorithm step by step (a Python loop per
    slice of more than 16 elements: slow on large inputs). NaN slices are not matched to
    PyTorch's (it compares NaNs as distinct).

    Shapes and dtypes: ``input`` of any shape and dtype (int, bool and float); ``values`` of
    ``input``'s dtype and ``indices`` int64, both of the reduced shape (``dim`` kept as size 1
    with ``keepdim``); a 0-d input gives itself and index 0.

    Gradient: ``g`` to the element at the reported position (as PyTorch's), differentiable
    again.

    Raises:
        TypeError: ``input`` is not a tensor, ``dim`` is not an int. ShapeError: ``dim`` is out
            of range or has size 0.
    """
    x = _tensor("mode", input)
    d = one_dim("mode", dim, x.shape)
    if x.ndim == 0:
        return ValuesIndices(x.clone(), index_tensor(x, np.zeros((), np.int64)))
    if x.shape[d] == 0:
        raise ShapeError(f"mode: expected reduction dim {d} to have non-zero size, got shape {x.shape}")
    data = np.moveaxis(_host("mode", x), d, -1)
    rows = data.reshape(-1, data.shape[-1])
    idx = np.array([_mode_index(r) for r in rows], dtype=np.int64).reshape(data.shape[:-1])
    idx_k = np.expand_dims(idx, d)
    values = _ops.take_along_axis(x, index_tensor(x, idx_k), d)
    indices = index_tensor(x, idx_k if keepdim else idx)
    if not keepdim:
        values = values.squeeze(d)
    return ValuesIndices(values, indices)


# ----- integrals ------------------------------------------------------------------------------


def _spacing(op: str, y: Tensor[Any, Any], x: object, dx: object, d: int) -> tuple[Any, bool]:
    """The spacings along ``d``: a tensor of differences broadcasting against ``y``'s pairs, or
    a number; and whether it is a number."""
    if x is not None and dx is not None:
        raise TypeError(f"{op}: give x or dx, not both")
    if x is None:
        if dx is None:
            return 1.0, True
        if isinstance(dx, bool) or not isinstance(dx, (int, float, np.integer, np.floating)):
            raise TypeError(f"{op}: dx must be a number, got {type(dx).__name__}")
        return float(dx), True
    xs = _tensor(op, x, "x")
    if xs.dtype.kind not in "fiub":
        raise DTypeError(f"{op}: x must be a real tensor, got dtype {xs.dtype}")
    if xs.dtype != y.dtype:
        xs = xs.to(y.dtype)
    if xs.ndim == 1:
        if xs.shape[0] != y.shape[d]:
            raise ShapeError(
                f"{op}: a 1-D x must have y's size {y.shape[d]} along dim {d}, got x of shape {xs.shape}"
                f" and y of shape {y.shape}"
            )
        xs = xs.reshape((-1,) + (1,) * (y.ndim - 1 - d))
        xd = d - y.ndim
    else:
        if xs.ndim < 1:
            raise ShapeError(f"{op}: x must have at least 1 dim, got shape {xs.shape}")
        xd = d - y.ndim
        if -xd > xs.ndim:
            raise ShapeError(f"{op}: x of shape {xs.shape} has no dim {d} of y of shape {y.shape}")
    m = xs.shape[xd]
    dxs = _narrow(xs, xd, 1, m - 1) - _narrow(xs, xd, 0, m - 1) if m > 0 else _narrow(xs, xd, 0, 0)
    try:
        np.broadcast_shapes(dxs.shape, (*y.shape[:d], builtins.max(y.shape[d] - 1, 0), *y.shape[d + 1 :]))
    except ValueError:
        raise ShapeError(f"{op}: x of shape {tuple(xs.shape)} does not broadcast with y of shape {y.shape}") from None
    return dxs, False


def _narrow(t: Tensor[Any, T], d: int, start: int, length: int) -> Tensor[Any, T]:
    d = d % t.ndim
    idx = (slice(None),) * d + (slice(start, start + length),)
    out: Tensor[Any, T] = t[idx]
    return out


def _pairs(op: str, y: object, dim: int) -> tuple[Tensor[Any, Any], int]:
    ys = _tensor(op, y, "y")
    if ys.ndim == 0:
        raise ShapeError(f"{op}: y must have at least 1 dim, got shape ()")
    if ys.dtype.kind != "f":
        raise DTypeError(f"{op}: y must be a float tensor (float32 or float64), got dtype {ys.dtype}")
    return ys, one_dim(op, dim, ys.shape)


def trapezoid(
    y: Tensor[Any, T], x: Tensor[Any, Any] | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor[Any, T]:
    """``torch.trapezoid``: the trapezoidal rule along ``dim``:
    ``sum_i (x[i+1] - x[i]) (y[i] + y[i+1]) / 2``, with the sample points ``x`` (1-D of ``y``'s
    size along ``dim``, or a tensor broadcasting with ``y``) or a constant spacing ``dx``
    (default 1: ``(sum(y) - (y[0] + y[-1]) / 2) dx``). A dim of size 0 or 1 gives 0.

    Shapes and dtypes: ``y`` float32/float64 of at least 1 dim; ``x`` real (cast to ``y``'s
    dtype); the result has ``y``'s shape without ``dim`` and its dtype.

    Gradient: ``g dx_i / 2`` to each end of each interval (``y``), and ``g (y[i] + y[i+1]) / 2``
    with signs to ``x``; differentiable again.

    Raises:
        TypeError: ``y``/``x`` not tensors, both ``x`` and ``dx`` given, ``dx`` not a number.
        DTypeError: ``y`` is not float, ``x`` is not real.
        ShapeError: ``y`` is 0-d, ``dim`` out of range, ``x`` of another size or not broadcasting.
    """
    out: Tensor[Any, T] = _trapezoid("trapezoid", y, x, dx, dim)
    return out


def _trapezoid(op: str, y: Any, x: Any, dx: Any, dim: int) -> Any:
    ys, d = _pairs(op, y, dim)
    n = ys.shape[d]
    spacing, number = _spacing(op, ys, x, dx, d)
    if n == 0:
        return _ops.sum(ys, axis=d)
    if number:
        ends = _narrow(ys, d, 0, 1) + _narrow(ys, d, n - 1, 1)
        return (_ops.sum(ys, axis=d) - ends.squeeze(d) * 0.5) * spacing
    left, right = _narrow(ys, d, 0, n - 1), _narrow(ys, d, 1, n - 1)
    return _ops.sum(spacing * (left + right), axis=d) / 2.0


def trapz(
    y: Tensor[Any, T], x: Tensor[Any, Any] | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor[Any, T]:
    """``torch.trapz``: PyTorch's older name of :func:`trapezoid` (the same arguments, values,
    gradients and errors).

    Raises:
        TypeError, DTypeError, ShapeError: as :func:`trapezoid`.
    """
    out: Tensor[Any, T] = _trapezoid("trapz", y, x, dx, dim)
    return out


def cumulative_trapezoid(
    y: Tensor[Any, T], x: Tensor[Any, Any] | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor[Any, T]:
    """``torch.cumulative_trapezoid``: the running trapezoidal rule along ``dim``:
    ``out[k] = sum_{i <= k} (x[i+1] - x[i]) (y[i] + y[i+1]) / 2`` (spacing ``dx``, default 1,
    when ``x`` is not given), one shorter than ``y`` along ``dim``.

    Shapes and dtypes: as :func:`trapezoid`, the result of ``y``'s shape with ``dim`` of size
    ``max(n - 1, 0)``, ``y``'s dtype. Gradient: through the differences and ``cumsum``;
    differentiable again.

    Raises:
        TypeError, DTypeError, ShapeError: as :func:`trapezoid`.
    """
    op = "cumulative_trapezoid"
    ys, d = _pairs(op, y, dim)
    n = ys.shape[d]
    spacing, number = _spacing(op, ys, x, dx, d)
    left, right = _narrow(ys, d, 0, builtins.max(n - 1, 0)), _narrow(ys, d, 1, builtins.max(n - 1, 0))
    if number:
        out: Tensor[Any, T] = _ops.cumsum(left + right, d) * (spacing / 2.0)
        return out
    out = _ops.cumsum(spacing * (left + right) / 2.0, d)
    return out


# ----- pdist ----------------------------------------------------------------------------------


def pdist(input: Tensor[Any, T], p: float = 2) -> Tensor[Any, T]:
    """``torch.pdist`` / ``F.pdist``: the ``p``-norm distances between the rows of an ``(N, M)``
    input, each pair once: ``out[k] = ||x[i] - x[j]||_p`` for the pairs ``i < j`` in row-major
    order (``np.triu_indices(N, 1)``), of shape ``(N (N - 1) / 2,)``; ``p=0`` counts the
    differing coordinates, ``p=inf`` takes the largest ``|x[i] - x[j]|``.

    Shapes and dtypes: ``input`` float32/float64 of shape ``(N, M)``; the result is 1-D of its
    dtype (empty for ``N < 2``).

    Gradient: PyTorch's: ``sign(d) |d|^(p-1) g / dist^(p-1)`` for ``d = x[i] - x[j]``, ``0`` where
    the distance is 0 and, for ``p < 1``, where ``d = 0``; ``p=2`` is ``d g / dist``; ``p=inf``
    gives ``sign(d) g`` to every coordinate attaining the largest ``|d|`` (ties each get all of
    it, as PyTorch); ``p=0`` gives 0. Differentiable again (composed of recorded ops).

    Raises:
        TypeError: ``input`` is not a tensor, ``p`` not a number. DTypeError: not float.
        ShapeError: ``input`` is not 2-D. ValueError: ``p < 0`` or NaN.
    """
    op = "pdist"
    x = _tensor(op, input)
    if x.ndim != 2:
        raise ShapeError(f"{op}: only supports 2-D tensors (N, M), got shape {x.shape}")
    _float_input(op, x)
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: p must be a number, got {type(p).__name__}")
    p = float(p)
    if not p >= 0:
        raise ValueError(f"{op}: only supports non-negative p values, got p={p}")
    i, j = np.triu_indices(x.shape[0], 1)
    diff = _ops.index_select(x, 0, index_tensor(x, i)) - _ops.index_select(x, 0, index_tensor(x, j))
    a = _ops.abs(diff)
    if p == 0:
        out: Tensor[Any, T] = _ops.sum(_ops.sign(a), axis=-1)
        return out
    if p == 1:
        return _ops.sum(a, axis=-1)
    dd = _host(op, diff)
    if math.isinf(p):
        ad = np.abs(dd)
        top = ad.max(axis=-1, initial=0.0) if ad.size else np.zeros(ad.shape[:-1], ad.dtype)
        hit = _constant(x, ad == top[:, None])
        return _constant(x, top) + _ops.sum(_ops.where(hit, a - a.detach(), 0.0), axis=-1)
    zero_d = _constant(x, dd == 0)
    if p == 2:
        s = _ops.sum(diff * diff, axis=-1)
    else:
        s = _ops.sum(_ops.where(zero_d, 0.0, _ops.pow(_ops.where(zero_d, 1.0, a), p)), axis=-1)
    zero = _constant(x, _host(op, s) == 0)
    safe = _ops.where(zero, 1.0, s)
    root = _ops.sqrt(safe) if p == 2 else _ops.pow(safe, 1.0 / p)
    return _ops.where(zero, 0.0, root)


# ----- multilabel_margin_loss -----------------------------------------------------------------


def multilabel_margin_loss(
    input: Tensor[Any, T],
    target: Tensor[Any, Any],
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor[Any, T]:
    """``F.multilabel_margin_loss``: the multi-class multi-label hinge loss. Per sample, with
    ``J`` its target classes (``target``'s entries up to the first ``-1``) and ``C`` classes,
    ``loss = sum_{j in J} sum_{i not in J} max(0, 1 - (x[j] - x[i])) / C``; then the mean over
    samples (default), the sum, or none.

    Shapes and dtypes: ``input`` float32/float64 of shape ``(N, C)`` or ``(C,)``; ``target`` an
    integer tensor of the same shape, class indices in ``[0, C)`` followed by ``-1`` (the rest
    is ignored); the result is 0-d, or ``(N,)`` (``()`` for a 1-D input) with
    ``reduction='none'``, of the input's dtype.

    Gradient: PyTorch's: ``-g / C`` to ``x[j]`` and ``+g / C`` to ``x[i]`` for each pair whose
    hinge is positive (0 at the hinge's kink), scaled by the reduction; differentiable again.

    Raises:
        TypeError: an argument is not a tensor. DTypeError: ``input`` not float or ``target``
            not integer. ShapeError: ``input`` not 1-D/2-D, ``target`` of another shape (both
            named). ValueError: an unknown ``reduction``, a target index outside ``[-1, C)``.
    """
    op = "multilabel_margin_loss"
    x = _tensor(op, input)
    t = _tensor(op, target, "target")
    if size_average is not None or reduce is not None:  # PyTorch's deprecated mapping
        keep = True if reduce is None else reduce
        reduction = ("mean" if size_average is None or size_average else "sum") if keep else "none"
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    _float_input(op, x)
    if x.ndim not in (1, 2):
        raise ShapeError(f"{op}: input must have shape (N, C) or (C,), got shape {x.shape}")
    if t.dtype.kind not in "iu":
        raise DTypeError(f"{op}: target must be an integer tensor (class indices), got dtype {t.dtype}")
    if t.shape != x.shape:
        raise ShapeError(f"{op}: target of shape {t.shape} must have the input's shape {x.shape}")
    x2 = x.reshape((-1, x.shape[-1]))
    c = x2.shape[-1]
    td = _host(op, t).reshape(x2.shape).astype(np.int64)
    if td.size and (td.min() < -1 or td.max() >= c):
        bad = td[(td < -1) | (td >= c)][0]
        raise ValueError(f"{op}: target index {bad} is out of range for {c} classes")
    pos = np.arange(c)
    ends = np.where((td == -1).any(axis=1), (td == -1).argmax(axis=1), c)
    valid = pos[None, :] < ends[:, None]  # (N, C): target slots in use
    classes = np.where(valid, td, 0)
    is_target = np.zeros(x2.shape, bool)
    rows = np.broadcast_to(np.arange(x2.shape[0])[:, None], classes.shape)
    is_target[rows[valid], classes[valid]] = True
    xt = _ops.take_along_axis(x2, index_tensor(x2, classes), 1)  # (N, C): x at each target slot
    hinge = _ops.relu(1.0 - (xt.unsqueeze(2) - x2.unsqueeze(1)))  # (N, slot, class)
    pairs = _constant(x2, valid[:, :, None] & ~is_target[:, None, :])
    elems = _ops.sum(_ops.where(pairs, hinge, 0.0), axis=(1, 2)) / float(c)
    if reduction == "none":
        out: Tensor[Any, T] = elems.reshape(x.shape[:-1])
        return out
    return elems.sum() if reduction == "sum" else elems.mean()


# ----- compile --------------------------------------------------------------------------------

_COMPILE_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_BACKENDS = frozenset(
    {
        *("inductor", "eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner"),
        *("cudagraphs", "openxla", "openxla_eval", "tvm", "ts", "aot_ts", "pre_dispatch_eager", "eager_debug"),
    }
)
"""PyTorch 2's registered backend names (``torch._dynamo.list_backends(None)``, without its
testing-only ones): any of them is accepted (and has no effect), another string is refused."""


def compile(
    model: F | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable[..., Any] = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
) -> Any:
    """``torch.compile``: returns ``model`` itself (a module or a function), unchanged, so a
    PyTorch program's ``model = torch.compile(model)`` runs and trains as before; called
    without a model (``@torch.compile(mode=...)``) it returns a decorator doing the same.

    Why not :func:`gradtape.capture`: a capture's replay returns untraced copies of its
    outputs, so standing behind a module's forward it would cut the gradient from the loss to
    the parameters (``loss.backward()`` and the optimizer would then see nothing); it replays
    whole training steps instead (forward, backward and optimizer step in one captured
    function). Returning the model keeps every number equal to the uncompiled run's, as
    PyTorch's ``backend='eager'`` does, and keeps ``isinstance(m, nn.Module)``,
    ``state_dict``, ``parameters()`` and ``train()``/``eval()`` as they were.

    Args:
        model: an ``nn.Module`` or a callable (or None: a decorator is returned).
        fullgraph, dynamic, backend, mode, options, disable: PyTorch's, validated and then
            without effect. ``mode`` is one of None, ``'default'``, ``'lite'``,
            ``'reduce-overhead'``, ``'max-autotune-no-cudagraphs'``, ``'max-autotune'``;
            ``backend`` a callable or one of PyTorch's backend names (``'inductor'``,
            ``'eager'``, ``'aot_eager'``, ``'cudagraphs'``, ...).

    Raises:
        TypeError: ``model`` is not callable, ``options`` not a dict, ``backend`` neither a
            string nor a callable, ``fullgraph``/``disable`` not bools.
        RuntimeError: both ``mode`` and ``options`` are given, an unknown ``mode`` or backend
            name (as PyTorch's).
    """
    for name, flag in (("fullgraph", fullgraph), ("disable", disable)):
        if not isinstance(flag, (bool, int, np.integer)):
            raise TypeError(f"compile: {name} must be a bool, got {flag!r}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"compile: dynamic must be a bool or None, got {dynamic!r}")
    if not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"compile: backend must be a string or a callable, got {type(backend).__name__}")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise RuntimeError(f"compile: invalid backend {backend!r}, expected one of {', '.join(sorted(_BACKENDS))}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"compile: options must be a dict, got {type(options).__name__}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _COMPILE_MODES:
        modes = ", ".join(str(m) for m in _COMPILE_MODES[1:])
        raise RuntimeError(f"compile: unrecognized mode={mode}, should be one of: {modes}")
    if model is None:

        def decorate(fn: F) -> F:
            out: F = compile(
                fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options, disable=disable
            )
            return out

        return decorate
    if not callable(model):
        raise TypeError(f"compile: model must be a callable (an nn.Module or a function), got {type(model).__name__}")
    return model


sys.modules[Tensor.__module__]._stats = sys.modules[__name__]  # type: ignore[attr-defined]
