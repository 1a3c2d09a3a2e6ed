"""Burn's ``AutodiffBackend`` conversions: a tensor off autodiff (``inner``) and back on (``from_inner``).

Burn makes autodiff a backend decorator: ``Autodiff<B>`` records every operation on a graph
and delegates the arithmetic to ``B``, its *inner backend*, which records nothing.
``AutodiffBackend::inner`` hands a tensor to the inner backend, ``from_inner`` brings an
inner tensor back as a leaf of the graph, and the gradient accessors give and take inner
tensors.

In gradtape the **autodiff backend is the tape layer** (:mod:`gradtape.tape`): a tensor takes
part in recording when it carries a tape (traced with ``trace``/``leaky_trace``, or the output
of a recorded op), when it is a module parameter (the ``PARAM`` marker) or when a
``GradientTape`` context watches it (``WATCHED``). The **inner backend is the untraced tensor**:
a :class:`~gradtape.tensor.Tensor` on ``NONE_TAPE``, over the numpy array it holds, on which
ops record nothing and check nothing. So:

==========================================  =========================================================
Burn (``B: AutodiffBackend``)               gradtape
==========================================  =========================================================
``B::inner(t)``                             :func:`inner` ``(t)``: same data, same id, ``NONE_TAPE``
``B::from_inner(t)``                        :func:`from_inner` ``(t)``: same data, a new id, a leaf
``B::int_inner`` / ``B::int_from_inner``    :func:`int_inner` / :func:`int_from_inner`
``B::bool_inner`` / ``B::bool_from_inner``  :func:`bool_inner` / :func:`bool_from_inner`
``B::grad`` / ``grad_remove``               :meth:`Gradients.grad <gradtape.gradients.Gradients.grad>` /
                                            :meth:`~gradtape.gradients.Gradients.grad_remove`
``B::grad_replace``                         :meth:`~gradtape.gradients.Gradients.grad_replace`
``B::backward(t)``                          ``t.backward()``
``B::q_inner`` / ``B::q_from_inner``        none: gradtape has no quantized tensors
==========================================  =========================================================

None of these copies data: the result shares the argument's array (``np.shares_memory``),
as Burn's conversions move the primitive. ``from_inner`` makes a leaf with no history, as
Burn's does: to get its gradient, trace it (``from_inner(t).trace(grads)``) or make it a
module parameter.

What gradtape has, by dtype:

- **float** (float32, float64): the tensors gradtape creates, computes and differentiates.
  :func:`inner` / :func:`from_inner` take these.
- **bool**: the comparison ops (``lt``, ``le``, ``gt``, ``ge``, ``eq``, ``ne`` and the operators)
  return untraced ``bool`` mask tensors, which :func:`gradtape.ops.where` consumes; no
  gradient flows through a mask. :func:`bool_inner` / :func:`bool_from_inner` take these.
- **int**: no device method creates integer tensors (``Cpu.tensor`` converts to float) and
  index arguments (``gather``, ``index_select``, ``embedding``, ``cross_entropy`` targets) are
  integer numpy arrays, but a ``Tensor`` may hold an integer array: the constructor stores its
  array as given (``Tensor(np.array([1, 2]), dev)``) and reducing a mask (``mask.sum()``) gives
  an int64 tensor. :func:`int_inner` / :func:`int_from_inner` take tensors and arrays of any
  signed or unsigned integer dtype. No gradient is ever computed for them.

Each function checks the dtype kind of its argument and raises
:class:`~gradtape.errors.DTypeError` naming the function and the dtype otherwise (an
``int_inner`` of a float tensor, a ``from_inner`` of a bool array).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

import numpy as np

from gradtape._typing import S
from gradtape.errors import DTypeError
from gradtape.tape import NONE_TAPE, NoneTape
from gradtape.tensor import Tensor

if TYPE_CHECKING:
    from gradtape.devices.base import Device

__all__ = ["bool_from_inner", "bool_inner", "from_inner", "int_from_inner", "int_inner", "inner"]

Array = np.ndarray[Any, Any]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _is_float(dt: np.dtype[Any]) -> bool:
    return dt in _FLOATS


def _is_int(dt: np.dtype[Any]) -> bool:
    return dt.kind in "iu"


def _is_bool(dt: np.dtype[Any]) -> bool:
    return dt.kind == "b"


_KINDS = {
    "float": (_is_float, "float32 or float64"),
    "int": (_is_int, "a signed or unsigned integer dtype"),
    "bool": (_is_bool, "bool"),
}
_USE = {"float": "inner / from_inner", "int": "int_inner / int_from_inner", "bool": "bool_inner / bool_from_inner"}


def _check(fn: str, kind: str, dt: np.dtype[Any], shape: tuple[int, ...], what: str) -> None:
    ok, want = _KINDS[kind]
    if not ok(dt):
        other = "float" if _is_float(dt) else "int" if _is_int(dt) else "bool" if _is_bool(dt) else None
        hint = f"; use {_USE[other]}" if other is not None else ""
        article = "an" if kind == "int" else "a"
        raise DTypeError(f"{fn}: expected {article} {kind} {what} ({want}), got dtype {dt} (shape {shape}){hint}")


def _inner(fn: str, kind: str, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}: expected a Tensor, got {type(t).__name__}")
    _check(fn, kind, t.dtype, t.shape, "tensor")
    out: Tensor[S, NoneTape] = t.retaped()  # same id and data, NONE_TAPE, is_leaf kept (split_tape()[0])
    return out


def _from_inner(fn: str, kind: str, t: Tensor[Any, Any] | Array, device: Device | None) -> Tensor[Any, NoneTape]:
    if isinstance(t, Tensor):
        if device is not None:
            raise TypeError(f"{fn}: device applies to numpy arrays only; a tensor keeps its own device ({t.device!r})")
        _check(fn, kind, t.dtype, t.shape, "tensor")
        return t.detach()  # same data, a new id, NONE_TAPE, a leaf
    if not isinstance(t, np.ndarray):
        raise TypeError(f"{fn}: expected a Tensor or a numpy array, got {type(t).__name__}")
    _check(fn, kind, t.dtype, t.shape, "array")
    data = t if t.flags.c_contiguous else np.ascontiguousarray(t)
    if device is None:
        from gradtape.devices.cpu import Cpu

        device = Cpu()
    return Tensor(data, device, NONE_TAPE)


# ----- float --------------------------------------------------------------------------------


def inner(t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """The tensor off autodiff (Burn's ``AutodiffBackend::inner``): the same tensor, untraced.

    Args:
        t: a float32 or float64 tensor of any shape, with any tape (traced, the output of a
            recorded op, a module parameter, a watched tensor, or untraced).

    Returns:
        A tensor of ``t``'s shape, dtype and device, holding ``t``'s very array (no copy:
        writing into one changes the other) and ``t``'s id, on ``NONE_TAPE``
        (``requires_grad`` is ``False``): an op whose tensor inputs are all inner tensors
        records nothing, even inside a traced pass or a ``GradientTape`` context. ``t``
        keeps its tape. This is ``t.split_tape()[0]`` without asking for the tape (which
        opens a new tape for a parameter).

    Burn's types keep inner and autodiff tensors out of one op; gradtape's do not. An op
    mixing ``inner(t)`` with a tensor that takes part in recording is recorded, and (as
    every operand of a recorded op gets its gradient) the inner operand's share lands on
    ``t``, whose id it has: ``(xt * inner(xt)).sum()`` gives ``x`` the gradient ``2 x``. To
    stop the gradient, use :func:`from_inner` (a new id): ``(xt * from_inner(xt)).sum()``
    gives ``x``.

    Raises:
        DTypeError: ``t`` is not float32/float64 (use :func:`int_inner` / :func:`bool_inner`).
        TypeError: ``t`` is not a tensor.
    """
    return _inner("inner", "float", t)


@overload
def from_inner(t: Tensor[S, Any]) -> Tensor[S, NoneTape]: ...
@overload
def from_inner(t: Array, *, device: Device | None = None) -> Tensor[Any, NoneTape]: ...
def from_inner(t: Tensor[Any, Any] | Array, *, device: Device | None = None) -> Tensor[Any, NoneTape]:
    """An inner tensor back on autodiff as a fresh leaf (Burn's ``AutodiffBackend::from_inner``).

    Args:
        t: a float32 or float64 tensor (any shape; its tape, if any, is not carried over),
            or a numpy array of those dtypes.
        device: for an array, the device of the new tensor (default a new ``Cpu()``); a
            tensor keeps its own device.

    Returns:
        An untraced leaf tensor (``NONE_TAPE``, ``is_leaf``) of ``t``'s shape and dtype with
        a **new id** and no recorded history: no gradient flows from it to ``t`` (as
        :meth:`Tensor.detach <gradtape.tensor.Tensor.detach>`). To get its gradient, trace it
        (``from_inner(t).trace(grads)``) or make it a module parameter. The data is not
        copied: it is ``t``'s array (``t.data`` for a tensor), except that a non-C-contiguous
        array is copied to C order, as ``Cpu.tensor`` stores it (``Cpu.tensor`` always copies;
        this does not).

    Raises:
        DTypeError: the dtype is not float32/float64 (names ``from_inner`` and the dtype).
        TypeError: ``t`` is neither a tensor nor a numpy array, or ``device`` is given with
            a tensor.
    """
    return _from_inner("from_inner", "float", t, device)


# ----- int ----------------------------------------------------------------------------------


def int_inner(t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """An integer tensor off autodiff (Burn's ``AutodiffBackend::int_inner``): :func:`inner` for
    tensors holding a signed or unsigned integer array.

    Returns:
        A tensor of ``t``'s shape, dtype, device, array (no copy) and id on ``NONE_TAPE``.

    Raises:
        DTypeError: ``t``'s dtype is not an integer dtype (names ``int_inner`` and the dtype).
        TypeError: ``t`` is not a tensor.
    """
    return _inner("int_inner", "int", t)


@overload
def int_from_inner(t: Tensor[S, Any]) -> Tensor[S, NoneTape]: ...
@overload
def int_from_inner(t: Array, *, device: Device | None = None) -> Tensor[Any, NoneTape]: ...
def int_from_inner(t: Tensor[Any, Any] | Array, *, device: Device | None = None) -> Tensor[Any, NoneTape]:
    """An integer tensor or array back on autodiff as a fresh leaf (Burn's
    ``AutodiffBackend::int_from_inner``): :func:`from_inner` for signed or unsigned integers.

    Returns:
        An untraced leaf of ``t``'s shape and dtype with a new id, sharing ``t``'s array (a
        non-C-contiguous array is copied to C order); an array goes on ``device`` (default a
        new ``Cpu()``).

    Raises:
        DTypeError: the dtype is not an integer dtype (names ``int_from_inner`` and the dtype).
        TypeError: ``t`` is neither a tensor nor a numpy array, or ``device`` is given with
            a tensor.
    """
    return _from_inner("int_from_inner", "int", t, device)


# ----- bool ---------------------------------------------------------------------------------


def bool_inner(t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
    """A bool tensor off autodiff (Burn's ``AutodiffBackend::bool_inner``): :func:`inner` for
    bool masks (what the comparison ops return; those are untraced already).

    Returns:
        A tensor of ``t``'s shape, device, array (no copy) and id, dtype ``bool``, on ``NONE_TAPE``.

    Raises:
        DTypeError: ``t``'s dtype is not ``bool`` (names ``bool_inner`` and the dtype).
        TypeError: ``t`` is not a tensor.
    """
    return _inner("bool_inner", "bool", t)


@overload
def bool_from_inner(t: Tensor[S, Any]) -> Tensor[S, NoneTape]: ...
@overload
def bool_from_inner(t: Array, *, device: Device | None = None) -> Tensor[Any, NoneTape]: ...
def bool_from_inner(t: Tensor[Any, Any] | Array, *, device: Device | None = None) -> Tensor[Any, NoneTape]:
    """A bool mask or array back on autodiff as a fresh leaf (Burn's
    ``AutodiffBackend::bool_from_inner``): :func:`from_inner` for ``bool``.

    Returns:
        An untraced leaf of ``t``'s shape, dtype ``bool``, with a new id, sharing ``t``'s array
        (a non-C-contiguous array is copied to C order); an array goes on ``device``
        (default a new ``Cpu()``). It can be a ``cond`` of :func:`gradtape.ops.where`.

    Raises:
        DTypeError: the dtype is not ``bool`` (names ``bool_from_inner`` and the dtype).
        TypeError: ``t`` is neither a tensor nor a numpy array, or ``device`` is given with
            a tensor.
    """
    return _from_inner("bool_from_inner", "bool", t, device)
