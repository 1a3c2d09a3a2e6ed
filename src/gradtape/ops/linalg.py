"""Linear algebra: the matrix product of 1-D to 4-D tensors (numpy's ``matmul`` semantics,
BLAS through numpy) and ``linear`` (PyTorch's ``F.linear``), with their backward passes.

Typing: ``Tensor[Rank2[M, K], ...] @ Tensor[Rank2[K, N], ...] -> Tensor[Rank2[M, N], ...]``;
mypy rejects mismatched inner dims ``K``. Overloads also type a vector operand
(``Rank1[K] @ Rank2[K, N] -> Rank1[N]``, ``Rank2[M, K] @ Rank1[K] -> Rank1[M]``,
``Rank1[K] @ Rank1[K] -> Rank0``) and batches carried through (``Rank3[D, M, K]`` times
``Rank3[D, K, N]`` or ``Rank2[K, N]``, and the same with ``Rank4[E, D, M, K]``). Batch dims
that broadcast (``1`` against ``D``) and other rank pairs run with untyped (``Any``) shapes.
The output owns a tape if any input does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import A, B, C, T, typed_as
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import activations as _ka
from gradtape.devices.kernels import blas as _blas
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import ShapeError
from gradtape.ops._signatures import linalg as _sig
from gradtape.ops._util import replayable, sum_to, tensor_operand
from gradtape.shapes import Rank0, Rank1, Rank2, Rank3, sum_to_shape
from gradtape.tape import NONE_TAPE, NoneTape, OwnedTape, Tape, op_tape, record, register_diff

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["bmm", "dot", "linear", "matmul", "mm"]

Array = np.ndarray[Any, Any]

# type variables of the overload tables (ops/_signatures/linalg.py)
D = TypeVar("D")
E = TypeVar("E")
I = TypeVar("I")
O = TypeVar("O")


@typed_as(_sig.matmul)
def matmul(a: Any, b: Any) -> Any:
    """Matrix product ``a @ b`` with numpy's ``matmul`` semantics, for 1-D to 4-D tensors.

    * 2-D ``(M, K) @ (K, N)`` gives ``(M, N)`` (the fast path: one BLAS call).
    * A 1-D ``a`` of ``(K,)`` acts as the row ``(1, K)``, a 1-D ``b`` as the column
      ``(K, 1)``; the added dim is removed from the result (``(K,) @ (K,)`` is a scalar).
    * Dims before the last two are batch dims and broadcast as in numpy:
      ``(2, 1, 3, 4) @ (5, 4, 2)`` gives ``(2, 5, 3, 2)``.

    Gradients (the standard matmul backward): ``grad_a += g @ b^T``, ``grad_b += a^T @ g``
    (``^T`` swapping the last two dims), each summed over the batch dims its operand was
    broadcast along and reshaped back to a 1-D operand's shape; a batch times a matrix
    (``(..., M, K) @ (K, N)``) runs as one ``(-1, K) @ (K, N)`` product in both passes. Each
    gradient is skipped for a leaf the gradient store does not keep (see ``Gradients.wants``).

    Dtypes: float32 or float64, both operands alike; the result has their dtype.

    Raises:
        ShapeError: an operand is 0-D or has more than 4 dims, the inner dims differ, or the
            batch dims do not broadcast (the message names both shapes).
        DTypeError: float32 meets float64.
    """
    bt = tensor_operand("matmul", a, b)
    ad, bd = a.data, bt.data
    if ad.ndim != 2 or bd.ndim != 2:
        return _matmul_nd(a, bt, ad, bd)
    if ad.shape[1] != bd.shape[0]:
        raise ShapeError(f"matmul: inner dims differ: {ad.shape} @ {bd.shape} ({ad.shape[1]} != {bd.shape[0]})")
    tape = op_tape(a, bt)
    out = a._from_op(_blas.matmul(ad, bd), tape)
    if tape is not NONE_TAPE:
        tape._record((out.id, _matmul_backward, a.id, bt.id, ad, bd, a._leaf, bt._leaf))
    if _tp._recorder is not None:
        replayable("matmul", out.data, _mm_into, (ad, bd), (a, bt), tape, True)
    return out


def _mm_into(y: Array, a: Array, b: Array) -> None:
    """A product again into ``y`` (for :func:`gradtape.capture`'s replays)."""
    _blas.matmul(a, b, out=y)


def _matmul_backward(grads: Gradients, g: Array, entry: tuple[Any, ...]) -> None:
    """2-D matmul's backward: ``grad_a += g @ b^T``, ``grad_b += a^T @ g``."""
    _, _, aid, bid, ad, bd, a_leaf, b_leaf = entry
    if grads.wants(aid, a_leaf):
        grads._accum(aid, _blas.matmul(g, bd.T))
    if grads.wants(bid, b_leaf):
        grads._accum(bid, _blas.matmul(ad.T, g))


def _d_matmul(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    """The second rule of :func:`_matmul_backward`, in gradtape ops."""
    _, _, aid, bid, ad, bd, _, _ = entry
    a, b = rebuild(aid, ad), rebuild(bid, bd)
    return [(aid, g @ b.T), (bid, a.T @ g)]


register_diff(_matmul_backward, _d_matmul)


def _matmul_nd(a: Tensor[Any, Any], b: Tensor[Any, Any], ad: Array, bd: Array) -> Any:
    """``matmul`` where an operand is not 2-D (see :func:`matmul`)."""
    an, bn = ad.ndim, bd.ndim
    if not (1 <= an <= 4 and 1 <= bn <= 4):
        raise ShapeError(f"matmul: expects 1-D to 4-D tensors, got shapes {ad.shape} and {bd.shape}")
    k = ad.shape[-1]
    kb = bd.shape[-2] if bn > 1 else bd.shape[0]
    if k != kb:
        raise ShapeError(f"matmul: inner dims differ: {ad.shape} @ {bd.shape} ({k} != {kb})")
    a2 = ad if an > 1 else ad.reshape(1, k)  # numpy's promotion of a vector operand
    b2 = bd if bn > 1 else bd.reshape(k, 1)
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"matmul: batch dims do not broadcast: {ad.shape} @ {bd.shape} ({a2.shape[:-2]} vs {b2.shape[:-2]})"
        ) from None
    m, n = a2.shape[-2], b2.shape[-1]
    full = (*batch, m, n)  # the result before removing the dims added to vectors
    stacked = bn == 2 and an > 2  # (..., M, K) @ (K, N): one (-1, K) @ (K, N) product
    lhs, rhs = (ad.reshape(-1, k), bd) if stacked and ad.flags.c_contiguous else (a2, b2)
    r = _blas.matmul(lhs, rhs)
    shape = batch + ((m,) if an > 1 else ()) + ((n,) if bn > 1 else ())  # the vectors' dims removed
    y = r.reshape(shape)
    tape = op_tape(a, b)
    out = a._from_op(y, tape)
    if _tp._recorder is not None:
        replayable("matmul", r, _mm_into, (lhs, rhs), (a, b), tape, True)
    if tape is not NONE_TAPE:
        aid, bid, a_leaf, b_leaf = a.id, b.id, a._leaf, b._leaf

        def matmul_nd_backward(grads: Gradients, g: Array) -> None:
            g2 = g.reshape(full)
            if grads.wants(aid, a_leaf):
                if stacked:  # grad_a = g @ b^T has a's shape: one product over all rows
                    ga = _blas.matmul(g2.reshape(-1, n), b2.T).reshape(a2.shape)
                else:
                    ga = sum_to_shape(_blas.matmul(g2, np.swapaxes(b2, -1, -2)), a2.shape)
                grads._accum(aid, ga.reshape(ad.shape))
            if grads.wants(bid, b_leaf):
                if stacked:  # grad_b = sum over the batch of a_i^T g_i = A^T G on stacked rows
                    gb = _blas.matmul(a2.reshape(-1, k).T, g2.reshape(-1, n))
                else:
                    gb = sum_to_shape(_blas.matmul(np.swapaxes(a2, -1, -2), g2), b2.shape)
                grads._accum(bid, gb.reshape(bd.shape))

        def matmul_nd_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            # the second rule: grad_a = g @ b^T, grad_b = a^T @ g on the batched views, summed
            # back over broadcast batch dims, in gradtape ops (matmul of the rebuilt tensors)
            g2 = g.reshape(full)
            at = rebuild(aid, ad).reshape(a2.shape)
            bt = rebuild(bid, bd).reshape(b2.shape)
            ga = sum_to(g2 @ _swap_last(bt), a2.shape).reshape(ad.shape)
            gb = sum_to(_swap_last(at) @ g2, b2.shape).reshape(bd.shape)
            return [(aid, ga), (bid, gb)]

        record(tape, out, matmul_nd_backward, matmul_nd_diff)
    return out


def _swap_last(t: Any) -> Any:
    """``t`` with its last two dims swapped (a recorded permute)."""
    perm = (*range(t.ndim - 2), t.ndim - 1, t.ndim - 2)
    return t.permute(perm)


@typed_as(_sig.linear)
def linear(x: Any, w: Any, b: Any = None) -> Any:
    """Affine map ``y = x @ w^T + b`` as one op (PyTorch's ``F.linear``).

    Args:
        x: ``(..., I)``: a vector, a batch ``(B, I)`` or any leading dims.
        w: ``(O, I)``, the weight as PyTorch stores it (``out_features x in_features``).
        b: ``(O,)`` or ``None``.

    Returns:
        ``(..., O)``, ``x``'s dtype; the output owns a tape if any input does.

    Forward: one BLAS product of ``x`` viewed as ``(-1, I)`` with ``w^T`` (a transposed view,
    no copy), then ``+= b`` in place (``kernels.elementwise.add_rows``: over both cores for
    large outputs). Backward, one closure, with ``g`` viewed as ``(-1, O)``:
    ``grad_x += g @ w``, ``grad_w += g^T @ x`` and ``grad_b += sum(g, batch dims)`` (the sums
    over the leading dims come with the products); a leaf the store does not keep gets no
    gradient (``Gradients.wants``).

    Raises:
        ShapeError: ``x`` is 0-D, ``w`` is not 2-D, ``x``'s last dim is not ``w``'s
            in-features, or ``b`` is not ``(O,)`` (the message names the shapes).
        DTypeError: the dtypes differ.
    """
    return _linear(x, w, b, False)


def _linear(x: Any, w: Any, b: Any, relu: bool) -> Any:
    """:func:`linear`, and with ``relu`` :func:`linear_relu`'s pass where nothing records (the
    caller's check): the bias added and the ReLU applied in one pass after the product."""
    wt = tensor_operand("linear", x, w)
    xd, wd = x.data, wt.data
    bt = None if b is None else tensor_operand("linear", x, b)
    if wd.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-D (out, in), got shape {wd.shape} (x {xd.shape})")
    o, i = wd.shape
    if xd.ndim == 0 or xd.shape[-1] != i:
        last = xd.shape[-1] if xd.ndim else None
        raise ShapeError(f"linear: in-features differ: x {xd.shape} and weight {wd.shape} ({last} != {i})")
    bd = None
    if bt is not None:
        bd = bt.data
        if bd.shape != (o,):
            raise ShapeError(f"linear: bias of shape {bd.shape} does not match weight {wd.shape} (wants ({o},))")
    x2 = xd if xd.ndim == 2 else xd.reshape(-1, i)
    y2 = y = _linear_into(None, x2, wd.T, bd, relu)
    if xd.ndim != 2:
        y = y.reshape((*xd.shape[:-1], o))
    tape = op_tape(x, wt) if bt is None else op_tape(x, wt, bt)
    out = x._from_op(y, tape)
    if _tp._recorder is not None:
        op = "linear_relu" if relu else "linear"
        replayable(op, y2, _linear_into, (x2, wd.T, bd, relu), (x, wt, bt), tape, train=True)
    if tape is not NONE_TAPE:
        bid, b_leaf = (bt.id, bt._leaf) if bt is not None else (-1, True)
        tape._record((out.id, _linear_backward, x.id, wt.id, bid, xd, wd, x._leaf, wt._leaf, b_leaf))
    return out


def _linear_into(out: Array | None, x2: Array, wt: Array, bd: Array | None, relu: bool) -> Array:
    """:func:`linear`'s forward ``x2 @ wt + bd`` (``relu``: then the ReLU, in the bias's pass),
    into ``out`` where given (a replay of :func:`gradtape.capture`), else a new array."""
    y: Array = _blas.matmul(x2, wt, out=out)
    if bd is not None:
        _k.add_rows(y, bd, relu)
    elif relu:
        _ka.relu(y, y)
    return y


def _linear_backward(grads: Gradients, g: Array, entry: tuple[Any, ...]) -> None:
    """linear's backward, with ``g`` viewed as ``(-1, O)``: ``grad_x += g @ w``,
    ``grad_w += g^T @ x``, ``grad_b += sum(g, batch dims)``."""
    _, _, xid, wid, bid, xd, wd, x_leaf, w_leaf, b_leaf = entry
    o, i = wd.shape
    g2 = g if g.ndim == 2 else g.reshape(-1, o)
    if grads.wants(xid, x_leaf):
        gx = _blas.matmul(g2, wd)
        grads._accum(xid, gx if gx.shape == xd.shape else gx.reshape(xd.shape))
    if grads.wants(wid, w_leaf):
        grads._accum(wid, _blas.matmul(g2.T, xd if xd.ndim == 2 else xd.reshape(-1, i)))
    if bid >= 0 and grads.wants(bid, b_leaf):
        grads._accum(bid, _k.sum_rows(g2))


def _d_linear(g: Any, entry: Any, rebuild: Any) -> list[tuple[int, Any]]:
    """The second rule of :func:`_linear_backward`, in gradtape ops."""
    _, _, xid, wid, bid, xd, wd, _, _, _ = entry
    o, i = wd.shape
    x, w = rebuild(xid, xd), rebuild(wid, wd)
    g2 = g if g.ndim == 2 else g.reshape((-1, o))
    x2 = x if x.ndim == 2 else x.reshape((-1, i))
    gx = g2 @ w
    out = [(xid, gx if gx.shape == xd.shape else gx.reshape(xd.shape)), (wid, g2.T @ x2)]
    if bid >= 0:
        out.append((bid, g2.sum(axis=0)))
    return out


register_diff(_linear_backward, _d_linear)


def linear_relu(x: Tensor[Any, Any], w: Tensor[Any, Any], b: Tensor[Any, Any] | None) -> Tensor[Any, Any]:
    """``relu(linear(x, w, b))`` (PyTorch's ``F.relu(F.linear(x, w, b))``), the feed-forward
    network's first half in :class:`gradtape.nn.TransformerEncoderLayer`.

    Args, returns and errors: as :func:`linear` (``b`` may be ``None``). Where the call records
    nothing (:func:`gradtape.tape.op_tape` of ``x``, ``w``, ``b`` is ``NONE_TAPE``: inference
    under ``no_grad``, or constant weights), the product is followed by one pass that adds the
    bias and applies the ReLU (``kernels.elementwise.add_rows(relu=True)``) instead of a bias
    pass and a ReLU pass over a new array: the same values bit for bit. Otherwise it is the two
    recorded ops, :func:`linear` then :func:`gradtape.ops.unary.relu`, with their gradients.
    """
    from gradtape.ops.unary import relu

    if (op_tape(x, w) if b is None else op_tape(x, w, b)) is not NONE_TAPE:
        out: Tensor[Any, Any] = relu(linear(x, w, b))
    else:
        out = _linear(x, w, b, True)
    return out


_trace.traceable(_linear_into)
_trace.traceable(_linear_backward)
_trace.traceable(_mm_into)
_trace.traceable(_matmul_backward)


# ----- PyTorch's fixed-rank products: mm, bmm, dot ----------------------------------------------


def _ranked_product(op: str, a: Tensor[Any, Any], b: object, rank: int) -> Any:
    """``matmul(a, b)`` after PyTorch's checks of ``op``: both operands of rank ``rank``, the
    inner dims equal (and for ``bmm`` the batch dims), no broadcasting.

    Raises:
        ShapeError: a rank or a dim does not fit; the message names the op and both shapes.
        TypeError: ``b`` is not a tensor.
    """
    bt = tensor_operand(op, a, b)
    x, y = a.data.shape, bt.data.shape
    what = {1: "1-D vectors", 2: "2-D matrices", 3: "3-D batches of matrices"}[rank]
    if len(x) != rank or len(y) != rank:
        raise ShapeError(f"{op}: takes two {what}, got shapes {x} and {y}")
    if (rank == 1 and x != y) or (rank > 1 and x[-1] != y[-2]) or (rank == 3 and x[0] != y[0]):
        raise ShapeError(f"{op}: shapes {x} and {y} cannot be multiplied")
    return matmul(a, bt)


@overload
def mm(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[B, C], NoneTape]) -> Tensor[Rank2[A, C], T]: ...
@overload
def mm(a: Tensor[Rank2[A, B], Tape], b: Tensor[Rank2[B, C], OwnedTape]) -> Tensor[Rank2[A, C], OwnedTape]: ...
@overload
def mm(a: Tensor[Rank2[A, B], T], b: Tensor[Rank2[B, C], T]) -> Tensor[Rank2[A, C], T]: ...
def mm(a: Any, b: Any) -> Any:
    """``torch.mm``: the product of two matrices ``(n, k) @ (k, m) -> (n, m)`` (no
    broadcasting; :func:`matmul` is the general product). Gradients as :func:`matmul`:
    ``g @ b.T`` and ``a.T @ g``.

    Raises:
        ShapeError: an operand is not 2-D, or the inner dims differ (naming both shapes).
        TypeError: ``b`` is not a tensor.
    """
    return _ranked_product("mm", a, b, 2)


@overload
def bmm(a: Tensor[Rank3[D, A, B], T], b: Tensor[Rank3[D, B, C], NoneTape]) -> Tensor[Rank3[D, A, C], T]: ...
@overload
def bmm(a: Tensor[Rank3[D, A, B], Tape], b: Tensor[Rank3[D, B, C], OwnedTape]) -> Tensor[Rank3[D, A, C], OwnedTape]: ...
@overload
def bmm(a: Tensor[Rank3[D, A, B], T], b: Tensor[Rank3[D, B, C], T]) -> Tensor[Rank3[D, A, C], T]: ...
def bmm(a: Any, b: Any) -> Any:
    """``torch.bmm``: batched matrix products ``(b, n, k) @ (b, k, m) -> (b, n, m)``, one per
    batch element (no broadcasting). Gradients as :func:`matmul`.

    Raises:
        ShapeError: an operand is not 3-D, or the batch or inner dims differ (naming both shapes).
        TypeError: ``b`` is not a tensor.
    """
    return _ranked_product("bmm", a, b, 3)


@overload
def dot(a: Tensor[Rank1[A], T], b: Tensor[Rank1[A], NoneTape]) -> Tensor[Rank0, T]: ...
@overload
def dot(a: Tensor[Rank1[A], Tape], b: Tensor[Rank1[A], OwnedTape]) -> Tensor[Rank0, OwnedTape]: ...
@overload
def dot(a: Tensor[Rank1[A], T], b: Tensor[Rank1[A], T]) -> Tensor[Rank0, T]: ...
def dot(a: Any, b: Any) -> Any:
    """``torch.dot``: the inner product ``sum(a * b)`` of two vectors of one length, a rank-0
    tensor. Gradients: ``g * b`` and ``g * a``.

    Raises:
        ShapeError: an operand is not 1-D, or the lengths differ (naming both shapes).
        TypeError: ``b`` is not a tensor.
    """
    return _ranked_product("dot", a, b, 1)
