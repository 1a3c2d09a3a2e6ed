"""``einsum``: Einstein summation over gradtape tensors (``torch.einsum``, ``np.einsum``), with
the contraction order chosen by opt_einsum (Smith and Gray, "opt_einsum - A Python package for
optimizing contraction order for einsum-like expressions", JOSS 2018).

The derivative is itself an einsum, written once (:func:`_vjp`): operand ``i``'s gradient
contracts the output's gradient with the other operands into ``i``'s subscripts,
``grad_i = einsum("out,others->in_i", g, *others)``, broadcast along the subscripts that only
``i`` has (they were summed away). The first rule runs it on arrays (in opt_einsum's order,
each pair one batched BLAS product); the second rule runs the same function
with gradtape's ``einsum`` on tensors, so it differentiates to any order.

An ellipsis is expanded into letters of its own, the operands broadcast to the common sizes
first (gradtape's ``broadcast_to``, which sums the gradient back).
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import opt_einsum

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import blas as _blas
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._util import refill, replayable
from gradtape.ops.shape import broadcast_to, expand_dims
from gradtape.tape import NONE_TAPE, _tensor_class, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["einsum"]

Array = np.ndarray[Any, Any]
_LETTERS = string.ascii_letters


@functools.lru_cache(maxsize=512)
def _plan(equation: str, shapes: tuple[tuple[int, ...], ...]) -> tuple[tuple[str, ...], str, Mapping[str, int]]:
    """:func:`_parse` and :func:`_sizes`, cached (a training loop repeats its equations). The
    cached value is immutable (a tuple and a read-only mapping), so no caller can corrupt it."""
    subs, out = _parse(equation, shapes)
    return tuple(subs), out, MappingProxyType(_sizes(subs, shapes, equation))


def _parse(equation: str, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
    """The equation as explicit per-operand subscripts and output subscripts: spaces removed,
    ``...`` replaced by letters of its own (right-aligned, numpy's broadcasting), the implicit
    output (no ``->``) being the letters that appear once, sorted, after the ellipsis.

    Raises:
        ValueError: a wrong number of operands, a character that is not a letter, a subscript
            count that differs from an operand's rank, a letter in the output missing from the
            inputs or repeated there, a repeated letter within one operand (a diagonal).
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} has {len(ins)} operands, got {len(shapes)} tensors")
    used = set(eq) - {".", ",", "-", ">"}
    bad = [c for c in used if c not in _LETTERS]
    if bad:
        raise ValueError(f"einsum: subscripts must be letters, got {bad[0]!r} in {equation!r}")
    free = [c for c in _LETTERS if c not in used]
    n_ell = 0
    for s, shape in zip(ins, shapes, strict=True):
        explicit = len(s.replace("...", ""))
        if "..." in s:
            n_ell = max(n_ell, len(shape) - explicit)
        elif explicit != len(shape):
            raise ValueError(f"einsum: operand subscripts {s!r} name {explicit} dims, the tensor has shape {shape}")
    ell = "".join(free[:n_ell])
    subs = []
    for s, shape in zip(ins, shapes, strict=True):
        if "..." in s:
            k = len(shape) - len(s.replace("...", ""))
            if k < 0:
                raise ValueError(f"einsum: operand subscripts {s!r} name more dims than the tensor's shape {shape}")
            s = s.replace("...", ell[n_ell - k :])
        if len(set(s)) != len(s):
            raise ValueError(f"einsum: a letter repeated within one operand ({s!r}, a diagonal) is not supported")
        subs.append(s)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {c: sum(s.count(c) for s in subs) for c in set("".join(subs))}
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    if len(set(out)) != len(out) or any(c not in "".join(subs) for c in out):
        raise ValueError(f"einsum: output subscripts {rhs!r} repeat a letter or name one no operand has")
    return subs, out


def _sizes(subs: Sequence[str], shapes: Sequence[tuple[int, ...]], equation: str) -> dict[str, int]:
    """Each letter's size: the sizes one letter names must agree, or be 1 (broadcast).

    Raises:
        ShapeError: a letter with two sizes other than 1 (names the letter and the shapes).
    """
    sizes: dict[str, int] = {}
    for s, shape in zip(subs, shapes, strict=True):
        for c, n in zip(s, shape, strict=True):
            m = sizes.setdefault(c, n)
            if m == 1:
                sizes[c] = n  # a size-1 dim broadcasts (to 0 too, as numpy)
            elif n not in (m, 1):
                raise ShapeError(
                    f"einsum: subscript {c!r} has sizes {m} and {n} in {equation!r} for shapes "
                    f"{', '.join(map(str, shapes))}"
                )
    return sizes


@functools.lru_cache(maxsize=256)
def _path(eq: str, shapes: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    """opt_einsum's pairwise contraction order for ``eq`` on ``shapes`` (cached: planning costs
    more than a small contraction)."""
    path, _ = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize="auto")
    return tuple(tuple(p) for p in path)


def _single(s: str, keep: str, x: Array) -> tuple[str, Array]:
    """Sum ``x`` (subscripts ``s``) over the letters not in ``keep``."""
    gone = tuple(k for k, c in enumerate(s) if c not in keep)
    if not gone:
        return s, x
    return "".join(c for c in s if c in keep), x.sum(axis=gone)


def _root(x: Array) -> object:
    """The object owning ``x``'s memory (the end of its chain of ``.base``)."""
    while x.base is not None:
        x = x.base
    return x


def _blasable(x: Array) -> Array:
    """``x``, or a contiguous copy where BLAS cannot read its matrices: numpy's ``matmul``
    falls back to its unblocked loops (10x slower here) for a matrix with no unit stride,
    such as the broadcast ones of ``sum()``'s gradient (strides 0)."""
    inner = x.strides[-2:]
    if x.itemsize in inner and 0 not in inner:
        return x
    return _arrays.contiguous(x)


class _PairPlan(NamedTuple):
    """How :func:`_pair` contracts two operands of given subscripts and shapes (cached)."""

    gone_a: tuple[int, ...]  # axes of ``a`` summed first (letters nobody else needs)
    gone_b: tuple[int, ...]
    swap: bool  # multiply ``b`` by ``a`` (after the sums)
    perm_a: tuple[int, ...]  # transposition of the left factor to (batch, left, summed)
    shape_a: tuple[int, ...]
    perm_b: tuple[int, ...]  # of the right factor to (batch, summed, right)
    shape_b: tuple[int, ...]
    out_shape: tuple[int, ...]
    letters: str  # the result's subscripts


@functools.lru_cache(maxsize=1024)
def _pair_plan(sa: str, shape_a: tuple[int, ...], sb: str, shape_b: tuple[int, ...], keep: str) -> _PairPlan:
    """The letter bookkeeping of :func:`_pair`, done once per equation and shapes (in a
    training loop it repeats every step, and costs more than a small product)."""
    gone_a = tuple(k for k, c in enumerate(sa) if c not in keep + sb)
    sa = "".join(c for c in sa if c in keep + sb)
    gone_b = tuple(k for k, c in enumerate(sb) if c not in keep + sa)
    sb = "".join(c for c in sb if c in keep + sa)
    size = dict(zip(sa, (n for k, n in enumerate(shape_a) if k not in gone_a), strict=True))
    size |= dict(zip(sb, (n for k, n in enumerate(shape_b) if k not in gone_b), strict=True))
    batch = "".join(c for c in sa if c in sb and c in keep)
    summed = "".join(c for c in sa if c in sb and c not in keep)
    left = "".join(c for c in sa if c not in sb)
    right = "".join(c for c in sb if c not in sa)

    def n(letters: str) -> int:
        return math.prod(size[c] for c in letters)

    # Swap the operands when that gives the letters in ``keep``'s order (for the last pair,
    # the output's): ``B^T A^T`` costs what ``A B`` costs, a transposed copy of the result
    # does not (``bik,bij->bjk``, a batched matmul's weight gradient, was 1.5x the matmul).
    swap = False
    if left and right:
        seen = dict.fromkeys(c for c in keep if c in size)
        if "".join(c for c in seen if c in batch + left + right) == batch + right + left:
            swap = True
            sa, sb, left, right = sb, sa, right, left
    nb = n(batch)
    lead = (nb,) if nb != 1 else ()  # without a batch, one 2-D product
    return _PairPlan(
        gone_a,
        gone_b,
        swap,
        tuple(sa.index(c) for c in batch + left + summed),
        (*lead, n(left), n(summed)),
        tuple(sb.index(c) for c in batch + summed + right),
        (*lead, n(summed), n(right)),
        tuple(size[c] for c in batch + left + right),
        batch + left + right,
    )


def _pair(sa: str, a: Array, sb: str, b: Array, keep: str) -> tuple[str, Array]:
    """Contract two operands into the letters of ``keep`` they have, as one batched BLAS
    product: ``(batch, left, summed) @ (batch, summed, right)``. Returns the result's
    subscripts (batch, then the left factor's, then the right factor's kept letters) and the
    array."""
    p = _pair_plan(sa, a.shape, sb, b.shape, keep)
    if p.gone_a:
        a = a.sum(axis=p.gone_a)
    if p.gone_b:
        b = b.sum(axis=p.gone_b)
    if p.swap:
        a, b = b, a
    am = _blasable(a.transpose(p.perm_a).reshape(p.shape_a))
    bm = _blasable(b.transpose(p.perm_b).reshape(p.shape_b))
    return p.letters, _blas.matmul(am, bm).reshape(p.out_shape)


def _contract_arrays(eq: str, *arrays: Array) -> Array:
    """``np.einsum(eq, *arrays)`` (explicit output, no repeated letter within an operand) in
    opt_einsum's pairwise order, each pair one batched BLAS product (:func:`_pair`): numpy's
    ``tensordot``, which opt_einsum would use, cannot take a batch letter (``bhqd,bhkd->bhqk``)
    and sends those to ``np.einsum``'s unblocked loops, 5x slower than ``matmul`` there."""
    lhs, out = eq.split("->")
    ops = list(zip(lhs.split(","), arrays, strict=True))
    if len(ops) > 1:
        for step in _path(eq, tuple(a.shape for a in arrays)):
            picked = [ops[k] for k in step]
            ops = [o for k, o in enumerate(ops) if k not in step]
            need = out + "".join(s for s, _ in ops)
            if len(picked) == 1:
                ops.append(_single(picked[0][0], need, picked[0][1]))
            else:
                (sa, a), (sb, b) = picked
                ops.append(_pair(sa, a, sb, b, need))
    s, x = _single(ops[0][0], out, ops[0][1])
    return _arrays.contiguous(x.transpose([s.index(c) for c in out])) if s != out else x


def _vjp(
    contract: Callable[..., Any],
    expand: Callable[[Any, tuple[int, ...], tuple[int, ...]], Any],
    g: Any,
    ops: Sequence[Any],
    subs: Sequence[str],
    out: str,
    sizes: Mapping[str, int],
    i: int,
) -> Any:
    """Operand ``i``'s gradient: ``contract("out,others->kept", g, *others)``, with ``kept``
    ``i``'s letters that the output or another operand has; ``expand(x, axes, shape)`` then
    inserts the others (summed away in forward) as broadcast axes at ``axes``."""
    others = [s for j, s in enumerate(subs) if j != i]
    elsewhere = set(out).union(*others)
    kept = "".join(c for c in subs[i] if c in elsewhere)
    eq = ",".join([out, *others]) + "->" + kept
    grad = contract(eq, g, *[o for j, o in enumerate(ops) if j != i])
    if kept == subs[i]:
        return grad
    axes = tuple(k for k, c in enumerate(subs[i]) if c not in elsewhere)
    return expand(grad, axes, tuple(sizes[c] for c in subs[i]))


def _expand_array(x: Array, axes: tuple[int, ...], shape: tuple[int, ...]) -> Array:
    return _arrays.contiguous(np.broadcast_to(np.expand_dims(x, axes), shape))


def _expand_tensor(x: Any, axes: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    for a in axes:
        x = expand_dims(x, a)
    return broadcast_to(x, shape)


def _contract_tensors(eq: str, *ts: Any) -> Any:
    return einsum(eq, *ts)


def einsum(equation: str, *operands: Any) -> Tensor[Any, Any]:
    """Einstein summation, ``torch.einsum(equation, *operands)``: ``"ij,jk->ik"`` is a matrix
    product, ``"bhqd,bhkd->bhqk"`` attention scores, ``"i,j->ij"`` an outer product, ``"ii"``
    is not supported (see Raises). ``operands`` may also be given as one list (PyTorch's
    second form).

    Shapes: each operand's subscripts name its dims (``...`` the leading ones, broadcast as
    numpy); the output has the ``->`` subscripts' sizes (without ``->``: the letters that
    appear once, in alphabetical order, after the ellipsis dims). dtype: the operands' common
    float dtype (all must be float32 or all float64).

    Contraction order: opt_einsum's (``optimize="auto"``); each pair is one batched BLAS
    product (batch letters first, the summed ones inside).
    Gradient of operand ``i``: ``einsum("out,others->i", g, *others)`` broadcast along the
    dims only ``i`` has; the second rule is the same einsum on tensors.

    Raises:
        ValueError: a malformed equation (operand count, non-letters, subscripts that do not
            match a rank, output letters missing or repeated, a repeated letter in one operand).
        ShapeError: one letter with two different sizes (names the letter and shapes).
        DTypeError: operands that are not all float32 or all float64.
        TypeError: an operand that is not a tensor.
    """
    tensor = _tensor_class()
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for k, t in enumerate(operands):
        if not isinstance(t, tensor):
            raise TypeError(f"einsum: operand {k} must be a Tensor, got {type(t).__name__}")
    ts: list[Tensor[Any, Any]] = list(operands)
    if not ts:
        raise ValueError("einsum: needs at least one operand")
    dtypes = {t.data.dtype for t in ts}
    if len(dtypes) != 1 or next(iter(dtypes)).kind != "f":
        raise DTypeError(f"einsum: operands must share one float dtype, got {', '.join(str(t.dtype) for t in ts)}")
    shapes = [t.data.shape for t in ts]
    subs, out, sizes = _plan(equation, tuple(shapes))
    fulls = [tuple(sizes[c] for c in s) for s in subs]
    ts = [t if t.data.shape == f else broadcast_to(t, f) for t, f in zip(ts, fulls, strict=True)]
    arrays = [t.data for t in ts]
    eq = ",".join(subs) + "->" + out
    tape = op_tape(*ts)
    if len(ts) > 2 and tape is not NONE_TAPE:
        return _pairwise(eq, subs, out, ts)
    y = _einsum_values(eq, tuple(arrays))
    res: Tensor[Any, Any] = ts[0]._from_op(y, tape)
    if _tp._recorder is not None:  # the backward reads the operands' arrays: a replay rewrites them
        replayable("einsum", y, refill, (_einsum_values, eq, tuple(arrays)), tuple(ts), tape, train=True)
    if tape is not NONE_TAPE:
        ids = [t.id for t in ts]
        roots = [_root(a) for a in arrays]

        def einsum_backward(grads: Gradients, g: Array) -> None:
            for i, tid in enumerate(ids):
                r = _as_array(_vjp(_contract_arrays, _expand_array, g, arrays, subs, out, sizes, i))
                # the store keeps ``r``: copy it only when it is (a view of) g or an input
                base = _root(r)
                grads._accum(tid, r.copy() if any(base is x for x in (_root(g), *roots)) else r)

        def einsum_diff(g: Any, rebuild: Callable[[int, Array], Any]) -> list[tuple[int, Any]]:
            xs = [rebuild(tid, a) for tid, a in zip(ids, arrays, strict=True)]
            return [
                (tid, _vjp(_contract_tensors, _expand_tensor, g, xs, subs, out, sizes, i)) for i, tid in enumerate(ids)
            ]

        record(tape, res, einsum_backward, einsum_diff)
    return res


def _einsum_values(eq: str, arrays: tuple[Array, ...]) -> Array:
    """The contraction ``eq`` of ``arrays`` (checked, of one float dtype), in their dtype."""
    return _as_array(_contract_arrays(eq, *arrays), dtype=arrays[0].dtype)


def _pairwise(eq: str, subs: Sequence[str], out: str, ts: list[Tensor[Any, Any]]) -> Tensor[Any, Any]:
    """A recorded einsum of three or more operands as opt_einsum's sequence of two-operand
    einsums, each its own tape entry: backward then reuses the intermediates, as the matmul
    chain it stands for does (``ij,jk,kl->il`` backward: 4 products, where one entry computing
    each operand's gradient separately takes 6, 2.6x the chain measured)."""
    ops: list[tuple[str, Tensor[Any, Any]]] = list(zip(subs, ts, strict=True))
    for step in _path(eq, tuple(t.data.shape for t in ts)):
        picked = [ops[k] for k in step]
        ops = [o for k, o in enumerate(ops) if k not in step]
        need = out + "".join(s for s, _ in ops)
        if len(picked) == 1:
            s, t = picked[0]
            keep = "".join(c for c in s if c in need)
            ops.append((keep, einsum(f"{s}->{keep}", t)))
        else:
            (sa, a), (sb, b) = picked
            keep = "".join(dict.fromkeys(c for c in sa + sb if c in need))
            ops.append((keep, einsum(f"{sa},{sb}->{keep}", a, b)))
    s, t = ops[0]
    return t if s == out else einsum(f"{s}->{out}", t)
