"""Comparisons and selection: lt, le, gt, ge, eq, ne (boolean masks) and ``where``.

A comparison returns an **untraced** tensor (``NoneTape``) whose data is a numpy ``bool``
array of the broadcast shape: a mask is piecewise constant, so no gradient flows through it
(as in PyTorch, where comparison results never require grad). The comparison's inputs keep
their tapes; only the mask carries none. Masks feed :func:`where` (or multiply a tensor after
conversion by the caller).

Typing: both operands have the same shape type ``S`` (or the right one is a Python number),
or a ``Rank2[A, B]`` matrix meets a ``Rank1[B]`` row; other broadcasts type as ``Any``.

Runtime errors: :class:`~gradtape.errors.ShapeError` when the shapes do not broadcast (names
the op and both shapes), :class:`~gradtape.errors.DTypeError` when the dtypes differ,
``TypeError`` for an operand that is neither a tensor nor a number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape._typing import S, T, typed_as
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops._signatures import compare as _sig
from gradtape.ops._util import SCALARS, check_same_device, refill, replayable, sum_to, tensor_operand, untraced
from gradtape.shapes import broadcast_shapes, sum_to_shape
from gradtape.tape import NONE_TAPE, NoneTape, OwnedTape, Tape, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["eq", "ge", "gt", "le", "lt", "ne", "tensor_where", "where"]
__all__ += ["allclose", "equal", "isclose", "isfinite", "isinf", "isnan", "logical_and", "logical_not", "logical_or"]
__all__ += ["logical_xor"]

Array = np.ndarray[Any, Any]


def _compare(op: str, ufunc: Callable[[Any, Any], Any], a: Tensor[Any, Any], b: object) -> Any:
    x = a.data
    bt = None
    if isinstance(b, SCALARS):
        other: Any = _weak(b)
    else:
        bt = tensor_operand(op, a, b)
        other = bt.data
        if other.shape != x.shape:
            broadcast_shapes(op, x.shape, other.shape)
    out = a._like(_as_array(ufunc(x, other)))
    if _tp._recorder is not None:
        replayable(op, out.data, refill, (ufunc, x, other), (a, bt), NONE_TAPE)
    return out


# One overload set for all six comparisons (the output is always an untraced mask).


@typed_as(_sig.lt)
def lt(a: Any, b: Any) -> Any:
    """``a < b`` elementwise as a ``bool`` mask (untraced, no gradient), with numpy broadcasting;
    ``b`` may be a Python number. NaN compares false.

    Raises:
        ShapeError: the shapes do not broadcast. DTypeError: the dtypes differ.
        TypeError: ``b`` is neither a tensor nor a number.
    """
    return _compare("lt", np.less, a, b)


@typed_as(_sig.le)
def le(a: Any, b: Any) -> Any:
    """``a <= b`` elementwise as a ``bool`` mask (untraced, no gradient); see :func:`lt`."""
    return _compare("le", np.less_equal, a, b)


@typed_as(_sig.gt)
def gt(a: Any, b: Any) -> Any:
    """``a > b`` elementwise as a ``bool`` mask (untraced, no gradient); see :func:`lt`."""
    return _compare("gt", np.greater, a, b)


@typed_as(_sig.ge)
def ge(a: Any, b: Any) -> Any:
    """``a >= b`` elementwise as a ``bool`` mask (untraced, no gradient); see :func:`lt`."""
    return _compare("ge", np.greater_equal, a, b)


@typed_as(_sig.eq)
def eq(a: Any, b: Any) -> Any:
    """``a == b`` elementwise as a ``bool`` mask (untraced, no gradient); see :func:`lt`.

    As ``Tensor.__eq__`` an operand that is neither a tensor nor a number gives
    ``NotImplemented`` (so ``t == None`` is ``False``); tensors stay hashable by identity.
    """
    return _compare("eq", np.equal, a, b)


@typed_as(_sig.ne)
def ne(a: Any, b: Any) -> Any:
    """``a != b`` elementwise as a ``bool`` mask (untraced, no gradient; NaN != NaN); see :func:`eq`."""
    return _compare("ne", np.not_equal, a, b)


def _is_operand(b: object) -> bool:
    return isinstance(b, SCALARS) or hasattr(b, "tape")


def eq_operator(a: Any, b: Any) -> Any:
    """``Tensor.__eq__``: :func:`eq`, or ``NotImplemented`` for a foreign right operand."""
    return _compare("eq", np.equal, a, b) if _is_operand(b) else NotImplemented


def ne_operator(a: Any, b: Any) -> Any:
    """``Tensor.__ne__``: :func:`ne`, or ``NotImplemented`` for a foreign right operand."""
    return _compare("ne", np.not_equal, a, b) if _is_operand(b) else NotImplemented


def truth(a: Tensor[Any, Any]) -> bool:
    """``bool(t)``: the truth value of a one-element tensor (``if (x > 0).item()`` style).

    Raises:
        ValueError: the tensor does not have exactly one element (ambiguous, as in numpy and
            PyTorch), so ``if t1 == t2:`` on whole tensors fails loudly instead of testing
            whether the mask is non-empty.
    """
    x = a.data
    if x.size != 1:
        raise ValueError(
            f"bool: the truth value of a tensor of shape {x.shape} ({x.size} elements) is ambiguous; "
            "reduce it first (e.g. (a == b).numpy().all())"
        )
    return bool(x.reshape(-1)[0])


# ----- where -------------------------------------------------------------------------------


def _mask(cond: object) -> Array:
    c = _as_array(cond.data if hasattr(cond, "tape") else cond)  # type: ignore[attr-defined]
    if c.dtype != np.bool_:
        raise DTypeError(
            f"where: cond must be a bool mask (a comparison's result or a bool array), got dtype {c.dtype} "
            f"and shape {c.shape}"
        )
    return c


@overload
def where(cond: Tensor[Any, Any] | npt.NDArray[np.bool_], a: Tensor[S, T], b: float) -> Tensor[S, T]: ...
@overload
def where(cond: Tensor[Any, Any] | npt.NDArray[np.bool_], a: float, b: Tensor[S, T]) -> Tensor[S, T]: ...
@overload
def where(cond: Tensor[Any, Any] | npt.NDArray[np.bool_], a: Tensor[S, T], b: Tensor[S, NoneTape]) -> Tensor[S, T]: ...
@overload
def where(
    cond: Tensor[Any, Any] | npt.NDArray[np.bool_], a: Tensor[S, Tape], b: Tensor[S, OwnedTape]
) -> Tensor[S, OwnedTape]: ...
@overload
def where(cond: Tensor[Any, Any] | npt.NDArray[np.bool_], a: Tensor[S, T], b: Tensor[S, T]) -> Tensor[S, T]: ...
def where(cond: Any, a: Any, b: Any) -> Any:
    """Select elementwise: ``a`` where ``cond`` is true, ``b`` elsewhere (``np.where``), with
    numpy broadcasting of all three; ``a`` or ``b`` may be a Python number, not both.

    Args:
        cond: a ``bool`` mask: a comparison's result (:func:`lt` ...) or a numpy bool array
            (array-likes of bools are accepted too). It gets no gradient.
        a, b: tensors of one dtype, or one of them a Python number.

    Returns:
        A tensor of the broadcast shape and the tensors' dtype; it owns a tape if ``a`` or ``b``
        does. The typed output shape is ``a``'s (or ``b``'s) shape type: a mask that broadcasts
        the output to a larger shape is a run-time-only broadcast.

    Gradients: ``grad_a += where(cond, g, 0)``, ``grad_b += where(cond, 0, g)``, each summed back
    over the dims that broadcasting added to that operand.

    Raises:
        DTypeError: ``cond`` is not boolean, or ``a`` and ``b`` have different dtypes.
        ShapeError: the three shapes do not broadcast (names all three).
        TypeError: neither ``a`` nor ``b`` is a tensor, or one is neither a tensor nor a number.
    """
    c = _mask(cond)
    a_is_t, b_is_t = not isinstance(a, SCALARS), not isinstance(b, SCALARS)
    if a_is_t and b_is_t:
        tensor_operand("where", _tensor("where", a), b)
    elif a_is_t:
        _tensor("where", a)
    elif b_is_t:
        _tensor("where", b)
    else:
        raise TypeError(f"where: a or b must be a tensor, got two numbers ({a!r}, {b!r})")
    ad = a.data if a_is_t else _weak(a)
    bd = b.data if b_is_t else _weak(b)
    operand = a if a_is_t else b
    if hasattr(cond, "tape"):  # a mask tensor must be on the operands' device
        check_same_device("where", operand, cond)
    else:  # a numpy mask for GPU operands is copied to their GPU
        c = _arrays.into_memory_of(c, operand.data)
    shapes = (c.shape, np.shape(ad), np.shape(bd))
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"where: shapes {shapes[0]} (cond), {shapes[1]} (a) and {shapes[2]} (b) do not broadcast"
        ) from None
    operands = [(x, sel) for x, sel, is_t in ((a, True, a_is_t), (b, False, b_is_t)) if is_t]
    tape = op_tape(*(x for x, _ in operands))
    out = (a if a_is_t else b)._from_op(_as_array(np.where(c, ad, bd)), tape)
    if _tp._recorder is not None:  # the mask is a comparison's output, an argument or a constant
        srcs = (cond if hasattr(cond, "tape") else None, *(x for x, _ in operands))
        replayable("where", out.data, refill, (np.where, c, ad, bd), srcs, tape, True)
    if tape is not NONE_TAPE:
        # (id, shape, leaf?, take where cond holds?) of each tensor operand: every one gets its
        # gradient, traced or not, as in every other binary op
        wanted = [(x.id, x.data.shape, x._leaf, sel) for x, sel in operands]

        def where_backward(grads: Gradients, g: Array) -> None:
            zero = g.dtype.type(0)
            for i, shape, leaf, sel in wanted:
                if not grads.wants(i, leaf):
                    continue
                gi = np.where(c, g, zero) if sel else np.where(c, zero, g)
                grads._accum(i, sum_to_shape(gi, shape))

        def where_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            return [(i, sum_to(where(c, g, 0.0) if sel else where(c, 0.0, g), shape)) for i, shape, _, sel in wanted]

        record(tape, out, where_backward, where_diff)
    return out


def _tensor(op: str, x: object) -> Any:
    if not (hasattr(x, "tape") and hasattr(x, "data")):
        raise TypeError(f"{op}: expected a Tensor or a Python number, got {type(x).__name__}")
    return x


def _weak(x: Any) -> Any:
    """A number as a Python scalar, which numpy treats as "weak" (NEP 50): it keeps a float32
    tensor float32, where a ``np.float64`` scalar would promote it."""
    return x.item() if isinstance(x, np.generic) else x


@overload
def tensor_where(self: Tensor[S, T], cond: Tensor[Any, Any] | npt.NDArray[np.bool_], other: float) -> Tensor[S, T]: ...
@overload
def tensor_where(
    self: Tensor[S, T], cond: Tensor[Any, Any] | npt.NDArray[np.bool_], other: Tensor[S, NoneTape]
) -> Tensor[S, T]: ...
@overload
def tensor_where(
    self: Tensor[S, Tape], cond: Tensor[Any, Any] | npt.NDArray[np.bool_], other: Tensor[S, OwnedTape]
) -> Tensor[S, OwnedTape]: ...
@overload
def tensor_where(
    self: Tensor[S, T], cond: Tensor[Any, Any] | npt.NDArray[np.bool_], other: Tensor[S, T]
) -> Tensor[S, T]: ...
def tensor_where(self: Any, cond: Any, other: Any) -> Any:
    """``Tensor.where(cond, other)``: ``where(cond, self, other)`` (PyTorch's ``Tensor.where``
    argument order: keep ``self`` where ``cond`` holds, take ``other`` elsewhere)."""
    return where(cond, self, other)


# ----- tests of values and logical ops (PyTorch's names): untraced masks ----------------------


def _values(op: str, a: object) -> Array:
    """``a``'s data for a value test: any tensor (an integer or bool one has no NaN or
    infinity), checked to be a tensor.

    Raises:
        TypeError: ``a`` is not a tensor.
    """
    if not (hasattr(a, "data") and hasattr(a, "tape")):
        raise TypeError(f"{op}: input must be a Tensor, got {type(a).__name__} (wrap arrays with dev.tensor(...))")
    data: Array = a.data
    return data


def _mask_of(a: Tensor[Any, Any], x: Array, ufunc: Any) -> Any:
    """``ufunc(x)`` (``isnan``, ``isinf``, ``isfinite``) as an untraced mask: all False
    (``isfinite``: True) for integer or bool data."""
    out = a._like(_as_array(_mask_array(ufunc, x)))
    if _tp._recorder is not None:
        replayable(ufunc.__name__, out.data, refill, (_mask_array, ufunc, x), (a,), NONE_TAPE)
    return out


def _mask_array(ufunc: Any, x: Array) -> Array:
    if x.dtype.kind in "fc":
        m: Array = ufunc(x)
        return m
    fill = _arrays.ones if ufunc is np.isfinite else _arrays.zeros
    return fill(x.shape, bool, x)


def isnan(a: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.isnan``: a bool mask of ``a``'s shape, True where an element is NaN (never for
    an integer or bool tensor). Untraced, as every mask.

    Raises:
        TypeError: ``a`` is not a tensor.
    """
    x = _values("isnan", a)
    return _mask_of(a, x, np.isnan)  # type: ignore[no-any-return]


def isinf(a: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.isinf``: True where an element is ``inf`` or ``-inf`` (bool mask, untraced).

    Raises:
        TypeError: ``a`` is not a tensor.
    """
    x = _values("isinf", a)
    return _mask_of(a, x, np.isinf)  # type: ignore[no-any-return]


def isfinite(a: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.isfinite``: True where an element is neither NaN nor infinite (always for an
    integer or bool tensor); bool mask, untraced.

    Raises:
        TypeError: ``a`` is not a tensor.
    """
    x = _values("isfinite", a)
    return _mask_of(a, x, np.isfinite)  # type: ignore[no-any-return]


def logical_not(a: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.logical_not``: True where an element is zero (False, 0, 0.0); bool mask,
    untraced.

    Raises:
        TypeError: ``a`` is not a tensor.
    """
    return untraced("logical_not", a, (a,), np.logical_not, _values("logical_not", a))  # type: ignore[no-any-return]


def _logical(op: str, ufunc: Callable[[Any, Any], Any], a: Tensor[Any, Any], b: object) -> Any:
    x = _values(op, a)
    y = _values(op, b)
    check_same_device(op, a, b)
    if x.shape != y.shape:
        broadcast_shapes(op, x.shape, y.shape)
    return untraced(op, a, (a, b), ufunc, x, y)  # b: a tensor (_values checked it)


def logical_and(a: Tensor[S, Any], b: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.logical_and``: True where both elements are nonzero; any dtypes, numpy
    broadcasting; bool mask, untraced.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: the shapes do not broadcast.
        DeviceError: the tensors are on different devices.
    """
    return _logical("logical_and", np.logical_and, a, b)  # type: ignore[no-any-return]


def logical_or(a: Tensor[S, Any], b: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.logical_or``: True where either element is nonzero (see :func:`logical_and`).

    Raises:
        TypeError, ShapeError, DeviceError: as :func:`logical_and`.
    """
    return _logical("logical_or", np.logical_or, a, b)  # type: ignore[no-any-return]


def logical_xor(a: Tensor[S, Any], b: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """``torch.logical_xor``: True where exactly one element is nonzero (see
    :func:`logical_and`).

    Raises:
        TypeError, ShapeError, DeviceError: as :func:`logical_and`.
    """
    return _logical("logical_xor", np.logical_xor, a, b)  # type: ignore[no-any-return]


def isclose(
    a: Tensor[S, Any], b: Tensor[S, Any], rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor[S, NoneTape]:
    """``torch.isclose``: True where ``|a - b| <= atol + rtol * |b|`` (numpy's and PyTorch's
    formula; equal infinities are close, NaN is close to NaN only with ``equal_nan``); numpy
    broadcasting; bool mask, untraced.

    Raises:
        TypeError: an operand is not a tensor. ShapeError: the shapes do not broadcast.
        DeviceError: the tensors are on different devices.
    """
    return _isclose("isclose", a, b, rtol, atol, equal_nan)  # type: ignore[no-any-return]


def _isclose(op: str, a: Tensor[Any, Any], b: object, rtol: float, atol: float, equal_nan: bool) -> Any:
    return _logical(op, lambda x, y: np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), a, b)


def allclose(
    a: Tensor[Any, Any], b: Tensor[Any, Any], rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """``torch.allclose``: whether :func:`isclose` holds for every element (a Python bool).

    Raises:
        TypeError, ShapeError, DeviceError: as :func:`isclose`.
    """
    return bool(_isclose("allclose", a, b, rtol, atol, equal_nan).data.all())


def equal(a: Tensor[Any, Any], b: Tensor[Any, Any]) -> bool:
    """``torch.equal``: whether ``a`` and ``b`` have the same shape and the same elements (a
    Python bool; NaN is never equal, as PyTorch).

    Raises:
        TypeError: an operand is not a tensor. DeviceError: the tensors are on different devices.
    """
    x, y = _values("equal", a), _values("equal", b)
    check_same_device("equal", a, b)
    return x.shape == y.shape and bool((x == y).all())
