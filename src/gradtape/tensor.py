"""``Tensor[S, T]``: an array, a unique id, a device and a tape.

``S`` is the shape as a tuple type (see :mod:`gradtape.shapes`), ``T`` the tape kind:
``NoneTape`` (untraced, inference) or ``OwnedTape`` (recording backward closures).
Ops live in :mod:`gradtape.ops`, one module per family, each keeping its typed
signature, forward and backward closure together; this class binds them as methods
and operators.
"""

from __future__ import annotations

import builtins
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np

from gradtape import engine as _engine
from gradtape import hooks as _hooks
from gradtape import tape as _tape_mod
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.ops import _util as _ops_util
from gradtape.ops import binary as _binary
from gradtape.ops import compare as _compare
from gradtape.ops import distance as _distance
from gradtape.ops import indexing as _indexing
from gradtape.ops import linalg as _linalg
from gradtape.ops import nn as _nn
from gradtape.ops import reduce as _reduce
from gradtape.ops import sampling as _sampling
from gradtape.ops import select as _select
from gradtape.ops import shape as _shape
from gradtape.ops import transfer as _transfer
from gradtape.ops import unary as _unary
from gradtape.ops.softmax import log_softmax as _log_softmax
from gradtape.ops.softmax import softmax as _softmax_op
from gradtape.shapes import realize as _realize
from gradtape.tape import (
    NONE_TAPE,
    PARAM,
    WATCHED,
    GradientTape,
    NoneTape,
    OwnedTape,
    Tape,
    next_id,
    op_tape,
    owned_tape,
)

if TYPE_CHECKING:
    from typing_extensions import CapsuleType

    from gradtape.devices.base import Device
    from gradtape.gradients import Gradients
    from gradtape.hooks import RemovableHandle

__all__ = ["Size", "Tensor"]

S = TypeVar("S")
T_co = TypeVar("T_co", bound=Tape, covariant=True)
T2 = TypeVar("T2", bound=Tape)
S2 = TypeVar("S2")
SI = TypeVar("SI", bound=tuple[int, ...])
Array = np.ndarray[Any, Any]

_new = object.__new__


class Size(int):
    """:attr:`Tensor.size`: the number of elements (an ``int``, numpy's ``size``, what gradtape
    has always given) that can also be called as PyTorch's ``Tensor.size``: ``x.size()`` is
    the shape (a tuple of ints, ``x.shape``) and ``x.size(d)`` the length of dim ``d``
    (negatives count from the end). Arithmetic on it gives plain ints.

    Raises:
        IndexError: (``x.size(d)``) ``d`` is out of range; names the tensor's shape.
        TypeError: (``x.size(d)``) ``d`` is not an int.
    """

    _shape: tuple[int, ...]

    def __new__(cls, shape: tuple[int, ...]) -> Size:
        n = 1
        for d in shape:
            n *= d
        obj = super().__new__(cls, n)
        obj._shape = tuple(shape)
        return obj

    @overload
    def __call__(self) -> tuple[int, ...]: ...
    @overload
    def __call__(self, dim: int) -> int: ...
    def __call__(self, dim: int | None = None) -> int | tuple[int, ...]:
        shape = self._shape
        if dim is None:
            return shape
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"size: dim must be an int, got {dim!r} (tensor of shape {shape})")
        n = len(shape)
        if not -n <= dim < n:
            raise IndexError(f"size: dim {dim} is out of range for a tensor of shape {shape} (valid: {-n} to {n - 1})")
        return shape[dim]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Size, (self._shape,))


class Tensor(Generic[S, T_co]):
    """An n-dimensional float32/float64 array that may record its backward on a tape.

    Args:
        data: the values, a numpy array used as is, not copied (unless its byte order is not
            the machine's: a big-endian array is converted). float32 and float64 for the
            tensors gradtape computes and differentiates; bool and integer arrays are accepted
            for masks and indices (:mod:`gradtape.autodiff`), which float ops refuse.
        device: the device that made it (``Cpu``).
        tape: ``NoneTape`` (default) or a ``GradientTape``.
        id: the tensor's id; a fresh one by default. Tensors sharing an id share a gradient.

    Create tensors with a device (``dev.tensor``, ``dev.zeros``, ``dev.randn``) rather than
    with this constructor. ``Tensor[Rank2[L[3], L[4]], NoneTape]`` is the type of an
    untraced 3x4 tensor.

    ``t.data`` is the numpy array itself (PyTorch's ``.data`` is a tensor): ``p.data.add_(...)``
    fails loudly (numpy has no ``add_``). A ported in-place update is ``with no_grad():
    p.copy_(new)`` (:meth:`copy_`, :meth:`fill_`, :meth:`zero_`, ``p[i] = v``) or numpy's own
    ``p.data[...] = new`` / ``p.data -= lr * g``. ``detach()`` of a recorded tensor is
    read-only (:meth:`detach`).

    Raises:
        TypeError: ``data`` is not a numpy array (a list, a scalar: use ``dev.tensor``).
        DTypeError: the dtype is none of the above (float16, complex, object, strings).
    """

    __slots__ = ("__weakref__", "_grad", "_leaf", "data", "device", "id", "tape")

    # numpy defers to Tensor's reflected operators (``np.float64(2) * t`` is ``t.__rmul__``)
    # instead of converting the tensor to an array and silently dropping its tape.
    __array_ufunc__ = None

    data: Array
    device: Device
    id: int
    tape: Tape
    _leaf: bool
    _grad: Tensor[Any, Any] | None  # unset until backward() or an assignment: read with getattr

    def __init__(self, data: Array, device: Device, tape: Tape = NONE_TAPE, id: int | None = None) -> None:
        if data.__class__ is not np.ndarray:
            data = _check_array(data)
        kind = data.dtype.kind
        if kind == "f":
            if data.dtype.itemsize < 4 or data.dtype.itemsize > 8:
                raise DTypeError(
                    f"Tensor: float tensors are float32 or float64, got {data.dtype} of shape {data.shape}; "
                    "convert with dev.tensor(x, dtype=np.float32)"
                )
        elif kind not in "biu":
            raise DTypeError(
                f"Tensor: dtype {data.dtype} (shape {data.shape}) is not supported: float32/float64 tensors, "
                "and bool or integer ones for masks and indices (gradtape.autodiff); convert with dev.tensor(x)"
            )
        if not data.dtype.isnative:  # a big-endian file: numba kernels need native byte order
            data = data.astype(data.dtype.newbyteorder("="))
        self.data = data
        self.device = device
        self.tape = tape
        self.id = next_id() if id is None else id
        self._leaf = True
        if _tape_mod._recorder is not None:  # gradtape.capture: a constant made inside the captured call
            _tape_mod._recorder.host_tensor(self)

    # ----- construction helpers used by ops -----------------------------------------------

    def _from_op(self, data: Array, tape: Tape) -> Any:
        """A new tensor (fresh id, this tensor's device) holding an op's output."""
        t = _new(Tensor)
        # numpy returns scalars, not 0-d arrays, from ufuncs on 0-d arrays
        t.data = data if data.__class__ is np.ndarray else _as_array(data)
        t.device = self.device
        t.tape = tape
        t.id = next_id()
        t._leaf = False
        return t

    def _like(self, data: Array) -> Any:
        """A new untraced leaf tensor on this tensor's device."""
        t = self._from_op(data, NONE_TAPE)
        t._leaf = True
        return t

    @property
    def is_leaf(self) -> bool:
        """True unless an op (or ``put_tape`` with an owned tape) produced this tensor.

        With a store that keeps only some leafs (``Gradients.retain_leafs``), backward skips
        the gradients of leafs that were not retained (for example a traced input batch),
        as PyTorch skips tensors that do not require grad.
        """
        return self._leaf

    # ----- array facts --------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The run-time shape, a tuple of ints."""
        return self.data.shape  # type: ignore[no-any-return]

    @property
    def dtype(self) -> np.dtype[Any]:
        """``np.dtype(float32)`` or ``np.dtype(float64)``."""
        dtype: np.dtype[Any] = self.data.dtype
        return dtype

    @property
    def ndim(self) -> int:
        """Number of dims (the rank)."""
        return self.data.ndim

    @property
    def size(self) -> Size:
        """Number of elements, an ``int`` (numpy's ``size``) that is also callable as PyTorch's
        ``size()``: ``x.size()`` is the shape tuple and ``x.size(d)`` dim ``d``'s length
        (negatives count from the end). See :class:`Size`.

        Raises:
            IndexError: (``x.size(d)``) ``d`` is out of range; names the shape.
        """
        return Size(self.data.shape)

    def numpy(self) -> Array:
        """The tensor's values as a numpy array (the tensor's own buffer; copy before mutating).

        Raises:
            TypeError: the tensor is on a GPU (PyTorch's rule): copy it to the host first with
                ``t.cpu().numpy()``.
        """
        data = self.data
        if _tape_mod._recorder is not None:
            _tape_mod._recorder.host_read(self, "numpy()")
        if _arrays.on_gpu(data):
            raise TypeError(
                f"numpy: the tensor (shape {self.shape}) is on {self.device}; "
                "copy it to the host first: t.cpu().numpy()"
            )
        return data

    def item(self) -> float:
        """The value of a one-element tensor as a Python float.

        Raises:
            ShapeError: the tensor has more than one element.
        """
        if self.data.size != 1:
            raise ShapeError(f"item: tensor of shape {self.shape} has {self.data.size} elements, not 1")
        if _tape_mod._recorder is not None:
            _tape_mod._recorder.host_read(self, "item()")
        return float(self.data.reshape(-1)[0])

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Array:
        self.numpy()  # refuses a GPU tensor: no silent copy to the host
        if dtype is not None and np.dtype(dtype) != self.data.dtype:
            return self.data.astype(dtype)
        return self.data.copy() if copy else self.data

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """Export the tensor's values as a DLPack capsule (the Python array API's ``__dlpack__``),
        so ``torch.from_dlpack(t)``, ``np.from_dlpack(t)`` and ``jax.numpy.from_dlpack(t)``
        read the tensor's own buffer without copying it.

        The export is numpy's (``self.data.__dlpack__``): shape, strides and dtype (float32,
        float64, bool or integer) are those of ``self.data``, and the device is the CPU. The
        consumer shares the buffer: writing through it changes this tensor's values (and any
        tensor sharing them), which gradtape's backward closures may still read. A read-only
        buffer (a ``broadcast_to`` output, a gradient) is exported read-only to consumers that
        speak DLPack 1.0 (numpy >= 2.1 gives a read-only array); the older protocol cannot
        mark it read-only, so numpy refuses it with ``BufferError``. JAX shares only a buffer
        aligned to 64 bytes and copies others.

        A tensor on a live tape (traced, or a recorded op's output) can be exported too, as
        gradtape's data is immutable by convention: the result is a plain array of the values
        and no gradient flows through anything computed from it (as PyTorch's
        ``t.detach()`` before export).

        Args:
            stream: must be ``None`` (CPU memory has no streams).
            max_version: the highest DLPack version the consumer supports, e.g. ``(1, 0)``;
                ``None`` for the legacy (pre-1.0) capsule.
            dl_device: ``None`` or ``(1, 0)`` (``kDLCPU``): gradtape holds CPU memory only.
            copy: ``True`` to export a copy, ``False`` to require sharing, ``None`` (default)
                to share.

        Raises:
            BufferError: the buffer cannot be exported as asked (a read-only buffer to a
                legacy consumer, a ``dl_device`` other than the CPU).
            RuntimeError: ``stream`` is not ``None``.
        """
        return self.data.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)``: DLPack's ``(kDLCPU, device id 0)``, the device of the tensor's buffer
        (the Python array API's ``__dlpack_device__``)."""
        device: tuple[int, int] = self.data.__dlpack_device__()
        return device

    def __len__(self) -> int:
        if not self.data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return int(self.data.shape[0])

    def __iter__(self) -> Iterator[Tensor[Any, T_co]]:
        """The sub-tensors along the first dim (``t[0]``, ``t[1]``, ...), each recorded like
        ``t[i]``, as PyTorch and numpy iterate.

        Raises:
            TypeError: the tensor is 0-d (``list(dev.ones(()))``; numpy and PyTorch raise too).
        """
        if not self.data.ndim:
            raise TypeError(f"iteration over a 0-d tensor (shape {self.shape}); use .item()")
        return (self[i] for i in range(self.data.shape[0]))

    def __float__(self) -> float:
        """``float(t)`` of a one-element tensor (:meth:`item`); raises ``ShapeError`` otherwise."""
        return self.item()

    def __int__(self) -> int:
        """``int(t)`` of a one-element tensor, truncated toward zero like ``int(float)``.

        Raises:
            ShapeError: the tensor has more than one element.
            ValueError: the value is NaN or infinite (as ``int(float("nan"))``).
        """
        return int(self.item())

    # ----- copies: a copy is a new tensor with a new id (its gradients are its own) ---------

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor[S, T_co]:
        """``copy.deepcopy(t)``: a new tensor with a copy of the data, the same device, dtype and
        tape kind (a parameter stays a parameter) and a **new id**, so gradients recorded
        through the copy are the copy's own (an EMA model or target network built with
        ``copy.deepcopy(model)`` does not share gradients with ``model``).

        Raises:
            TapeError: the tensor records on a live tape (a traced input or an op's output);
                copy ``t.detach()`` instead (PyTorch refuses such copies too).
        """
        if self.tape.OWNS_TAPE:
            raise TapeError(
                f"deepcopy: tensor of shape {self.shape} (id {self.id}) records on a live tape; "
                "copy t.detach() instead, or copy the model before tracing"
            )
        t = _new(Tensor)
        t.data, t.device, t.tape, t.id, t._leaf = self.data.copy(), self.device, self.tape, next_id(), self._leaf
        memo[id(self)] = t
        return t

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling keeps the data, device, dtype and tape kind; an unpickled tensor gets a new
        id (ids are per process, so an old one could collide with a live tensor's).

        Raises:
            TapeError: the tensor records on a live tape (see :meth:`__deepcopy__`).
        """
        if self.tape.OWNS_TAPE:
            raise TapeError(f"pickle: tensor of shape {self.shape} (id {self.id}) records on a live tape; detach() it")
        return (_unpickle, (self.data, self.device, self.tape is PARAM, self._leaf))

    def __repr__(self) -> str:
        tape = self.tape
        kind = (
            "OwnedTape"
            if tape.OWNS_TAPE
            else "NoneTape, requires_grad"
            if tape is PARAM
            else "NoneTape, watched"
            if tape is WATCHED
            else "NoneTape"
        )
        data = self.data
        on = ""
        if _arrays.on_gpu(data):
            data, on = data.get(), f", device='{self.device}'"  # type: ignore[attr-defined]  # a CuPy array
        body = np.array2string(data, precision=4, separator=", ", threshold=20)
        return f"Tensor({body}, shape={self.shape}, dtype={self.dtype}{on}, {kind}, id={self.id})"

    # ----- tapes (dfdx's trace / split_tape / put_tape / retaped / backward) ---------------

    def trace(self, gradients: Gradients) -> Tensor[S, OwnedTape]:
        """Start recording: the same tensor (same id and data) on a new tape filling ``gradients``.

        ``gradients.get(x)`` then finds the gradient of the original ``x``. Tracing a tensor
        that already has a tape starts a new, separate tape.

        Without an argument, PyTorch's ``x.trace()``: the sum of a 2-D tensor's main diagonal
        (:func:`gradtape.trace`), for ported programs at run time; the type checkers know only
        dfdx's form, so typed code spells it ``gradtape.trace(x)``.
        """
        t = _new(Tensor)
        t.data, t.device, t.id = self.data, self.device, self.id
        t.tape = GradientTape._traced(gradients, self.id)
        t._leaf = True
        gradients._parts.add(self.id)
        return t

    if not TYPE_CHECKING:  # PyTorch's x.trace() at run time (typed as dfdx's only: see the docstring)
        _dfdx_trace = trace

        def trace(self, gradients=None):
            if gradients is None:
                return _composed.trace(self)
            return self._dfdx_trace(gradients)

        trace.__doc__ = _dfdx_trace.__doc__

    realize = _realize  # dfdx's realize: a run-time checked change of the shape type (shapes.py)

    def leaky_trace(self) -> Tensor[S, OwnedTape]:
        """:meth:`trace` into a fresh ``Gradients.leaky()`` (keeps every gradient), made when
        backward runs or ``t.tape.gradients`` is first read: tracing and merging many such
        tensors make no stores (O(1) each)."""
        t = _new(Tensor)
        t.data, t.device, t.id = self.data, self.device, self.id
        t.tape = GradientTape._traced(None, self.id)
        t._leaf = True
        return t

    def split_tape(self) -> tuple[Tensor[S, NoneTape], T_co]:
        """Return ``(this tensor without a tape, the tape an op on it records on)``; the tensor
        keeps its id and data.

        With :meth:`put_tape` this is how a hand-written op takes the tape from its input,
        records its backward closure and hands the tape on to its output. The tape is the
        one gradtape's own ops would record on (:func:`gradtape.tape.op_tape`): the tensor's
        own tape for a traced tensor; for a leaf that requires grad (a module parameter), a
        new tape or the context tapes that watch it; ``NoneTape`` when nothing records (a
        plain tensor, ``no_grad``), so the closure is then dropped.
        """
        t = _new(Tensor)
        t.data, t.device, t.id, t.tape = self.data, self.device, self.id, NONE_TAPE
        t._leaf = self._leaf
        return t, op_tape(self)  # type: ignore[return-value]

    def put_tape(self, tape: T2) -> Tensor[S, T2]:
        """The same tensor (same id and data) carrying ``tape``."""
        if not isinstance(tape, Tape):
            raise TypeError(f"put_tape: expected a NoneTape or GradientTape, got {type(tape).__name__}")
        t = _new(Tensor)
        t.data, t.device, t.id, t.tape = self.data, self.device, self.id, tape
        # A tensor handed a live tape is an op's output: its gradient is always computed.
        t._leaf = self._leaf and not tape.OWNS_TAPE
        return t

    @overload
    def retaped(self) -> Tensor[S, NoneTape]: ...
    @overload
    def retaped(self, tape: T2) -> Tensor[S, T2]: ...
    def retaped(self, tape: Tape | None = None) -> Tensor[S, Any]:
        """The same tensor (same id, shared data) with ``tape`` (default ``NoneTape``),
        leaving this tensor's tape untouched (dfdx's ``retaped``).

        Not :meth:`detach`: the retaped tensor keeps the id, so gradients recorded through
        it still land on this tensor. gradtape's layers need no ``retaped``: parameters take
        part in recording on their own (:func:`gradtape.tape.op_tape`)."""
        return self.put_tape(NONE_TAPE if tape is None else tape)

    def register_hook(self, fn: Callable[[Tensor[S, NoneTape]], Any]) -> RemovableHandle:
        """Call ``fn(grad)`` with the gradient flowing into this tensor, once it is complete in a
        backward pass, before it flows on (PyTorch's ``Tensor.register_hook``).

        ``grad`` is a read-only untraced tensor of this tensor's shape and dtype; if ``fn``
        returns a tensor or an array (of that shape), it replaces the gradient: what flows on
        to the inputs of the op that produced this tensor and what a store keeps. On a leaf
        (a parameter, a traced input) the hook fires in every backward pass that reaches it;
        on an op's output, in the pass of its graph (it is then dropped). For a hand-written
        op the hook of its output fires before the op's closure when the closure is recorded
        right after the output is made, as ``split_tape``/``put_tape`` ops do.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Raises:
            TypeError: ``fn`` is not callable.
            ShapeError: (in backward) ``fn`` returned a gradient of another shape.
        """
        return _hooks.register_hook(self, fn)

    def register_post_accumulate_grad_hook(self, fn: Callable[[Tensor[S, Any], Gradients], None]) -> RemovableHandle:
        """Call ``fn(tensor, grads)`` once per backward pass when this tensor's gradient in
        ``grads`` is final (PyTorch's ``register_post_accumulate_grad_hook``, for parameters).

        For a module parameter the hook fires as soon as every op of the pass that read it has
        run its backward: the parameters the forward pass used last fire first (newest first),
        so data-parallel training can start reducing a layer's gradients while backward goes on
        through earlier layers, and an optimizer can update a parameter inside backward. For
        other tensors it fires at the end of the pass. ``grads`` is the store being filled;
        read the gradient with ``grads.get(tensor)``, update it in place with
        ``grads.get_or_alloc_mut(tensor)`` or replace it with ``grads.grad_replace``.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Raises:
            TypeError: ``fn`` is not callable.
        """
        return _hooks.register_post_accumulate_grad_hook(self, fn)

    def detach(self) -> Tensor[S, NoneTape]:
        """A new tensor sharing this one's data (no copy) with a new id and no tape: no
        gradient flows through it to this tensor (PyTorch's / JAX's ``stop_gradient``).

        Unlike :meth:`retaped` (same id: gradients through it still reach this tensor) and
        :meth:`split_tape`, the result is a different tensor as far as any store is concerned.

        Detaching a tensor that records on a tape (a traced input, an op's output) gives a
        **read-only** view of its array: that tape's backward closures may still read the
        buffer, so an in-place write through the detached tensor (``z[0] = 5``, ``fill_``,
        ``copy_``, ``zero_``) would silently change the gradient (PyTorch catches the same write
        with its version counter). Such writes raise ``ValueError`` naming the cause; write into
        ``detach().clone()`` instead. Detaching an untraced tensor or a parameter shares its
        writeable array: writing into it changes this tensor's values too.
        """
        data = self.data
        if self.tape.OWNS_TAPE and data.__class__ is np.ndarray:  # (a GPU array has no read-only flag)
            data = data.view()
            data.flags.writeable = False
            _SHARED_WITH_TAPE[id(data)] = data
        t = _new(Tensor)
        t.data, t.device, t.tape, t.id, t._leaf = data, self.device, NONE_TAPE, next_id(), True
        if _tape_mod._recorder is not None:  # gradtape.capture: a parameter's array, read where it lives
            _tape_mod._recorder.read(self)
        return t

    def clone(self) -> Tensor[S, T_co]:
        """A copy of this tensor's data in a new buffer (PyTorch's ``clone``), differentiable:
        recorded as an identity when this tensor requires grad (the copy's gradient flows back
        unchanged, to any order), so it is not a leaf then; an untraced tensor gives an
        untraced leaf. Same shape, dtype and device; the copy is always writeable (clone a
        read-only ``detach()`` or ``expand`` view before writing into it).
        """
        if self.data.dtype.kind == "f":
            out: Tensor[S, T_co] = _unary.to_dtype(self, self.data.dtype)  # same dtype: a recorded copy
            return out
        return self._like(self.data.copy())  # type: ignore[no-any-return]

    @property
    def grad(self) -> Tensor[S, NoneTape] | None:
        """The gradient ``backward()`` accumulated into this tensor (PyTorch's ``.grad``):
        ``None`` until the first ``backward()`` that reaches it, then an untraced tensor of this
        tensor's shape and dtype that each later ``backward()`` adds to (in place), until
        ``opt.zero_grad()`` / ``model.zero_grad()`` (or ``t.grad = None``) clears it.

        Filled for the leaves that require grad: tensors made with ``requires_grad=True`` or
        :meth:`requires_grad_`, and module parameters. A non-leaf (an op's output) keeps
        ``None``, as in PyTorch, and reading it warns (``UserWarning``); read its gradient from
        the store ``backward()`` returns, or with :meth:`register_hook`. Assignable: a tensor (or
        numpy array) of this tensor's shape and dtype, or ``None``.

        Raises:
            ShapeError, DTypeError: (on assignment) the value's shape or dtype is not this tensor's.
            TypeError: (on assignment) the value is neither a tensor, an array nor ``None``.
        """
        try:
            g: Tensor[S, NoneTape] | None = self._grad
        except AttributeError:
            g = None
        if g is None and not self._leaf and self.tape.OWNS_TAPE:
            import warnings

            warnings.warn(
                f"grad: tensor of shape {self.shape} is not a leaf (an op made it), so backward() does not fill "
                "its .grad; read its gradient from the store backward() returns (grads.get(t)) or with "
                "t.register_hook(fn)",
                UserWarning,
                stacklevel=2,
            )
        return g

    @grad.setter
    def grad(self, value: Tensor[S, Any] | Array | None) -> None:
        _engine.clear_grad(self)
        if value is None:
            return
        if isinstance(value, np.ndarray):
            value = self._like(value)
        if not isinstance(value, Tensor):
            raise TypeError(f"grad: assigned value must be a Tensor, an array or None, got {type(value).__name__}")
        if value.shape != self.shape:
            raise ShapeError(f"grad: assigned gradient has shape {value.shape}, the tensor has shape {self.shape}")
        if value.dtype != self.dtype:
            raise DTypeError(f"grad: assigned gradient has dtype {value.dtype}, the tensor has dtype {self.dtype}")
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow into this tensor (PyTorch's ``requires_grad``): it carries a
        tape (traced, or the output of a recorded op), or it is a leaf that requires grad (a
        module parameter, a tensor made with ``requires_grad=True`` or :meth:`requires_grad_`)
        or a watched tensor. An op on tensors that all have ``requires_grad == False`` records
        nothing; an op with one input that has it records (while grad mode is on)."""
        tape = self.tape
        return tape is not NONE_TAPE and (tape.OWNS_TAPE or tape is PARAM or tape is WATCHED)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor[S, T_co]:
        """Set whether this leaf requires grad, in place, and return it (PyTorch's
        ``Tensor.requires_grad_``).

        ``True``: every op on it records while grad mode is on (its tape becomes the marker
        :data:`gradtape.tape.PARAM`, the tape module parameters carry), and ``backward()``
        accumulates its gradient into :attr:`grad`. ``False``: it takes no part from now on (a
        frozen parameter: optimizers skip it, as its ``.grad`` stays ``None``).

        Raises:
            TapeError: the tensor is the output of a recorded op (use ``detach()``, as PyTorch
                says), or it is traced (its tape records already; make the untraced tensor
                require grad instead). The result of an op that recorded nothing is a leaf here,
                as in PyTorch.
            DTypeError: ``True`` for a tensor that is not float32/float64 (PyTorch: "only
                Tensors of floating point dtype can require gradients").
        """
        tape = self.tape
        if tape.OWNS_TAPE:
            if not self._leaf:
                raise TapeError(
                    f"requires_grad_: tensor of shape {self.shape} is not a leaf (a recorded op made it); only "
                    "leaves' requires_grad can be changed; use t.detach().requires_grad_() for a new leaf"
                )
            raise TapeError(
                f"requires_grad_: tensor of shape {self.shape} is traced (it carries a tape); set requires_grad "
                "on the tensor before tracing it"
            )
        if requires_grad:
            if self.data.dtype.kind != "f":
                raise DTypeError(
                    f"requires_grad_: only float tensors can require gradients; this one has dtype "
                    f"{self.dtype} (shape {self.shape})"
                )
            if tape is NONE_TAPE or tape is WATCHED:
                self.tape = PARAM
                self._leaf = True  # an untraced op's result is a leaf once it requires grad (PyTorch's)
        elif tape is PARAM or tape is WATCHED:
            self.tape = NONE_TAPE
        return self

    @overload
    def backward(
        self: Tensor[tuple[()], Tape],
        gradient: None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> Gradients: ...
    @overload
    def backward(
        self: Tensor[S2, Tape], gradient: Tensor[S2, Tape], retain_graph: bool = False, create_graph: bool = False
    ) -> Gradients: ...
    @overload
    def backward(
        self: Tensor[Any, Tape], gradient: Array, retain_graph: bool = False, create_graph: bool = False
    ) -> Gradients: ...
    def backward(self, gradient: Any = None, retain_graph: bool = False, create_graph: bool = False) -> Gradients:
        """Run backpropagation from this tensor and return the filled :class:`Gradients`.

        Seeds d(self)/d(self) with ones (a scalar) or with ``gradient`` (PyTorch's
        ``backward(gradient)``, the Mamba crate's ``backward(loss_grad, ...)``: a vector-Jacobian
        product for a non-scalar output), runs the tape's closures newest first and consumes
        the tape; gradients of tensors not marked with ``retain_leafs`` are then dropped (none
        are, for a ``Gradients.leaky()`` store).

        Args:
            gradient: ``None`` for a scalar (shape ``()``); otherwise the seed, a tensor or
                array of exactly this tensor's shape (typed: a tensor of the same shape type),
                converted to its dtype.
            retain_graph: keep the recorded closures, so the same forward pass can be
                differentiated again (``backward`` or :func:`gradtape.autograd.grad`).
            create_graph: compute the gradients with the ops' differentiable rules, recorded on
                this tensor's tape (kept: implies ``retain_graph``); the store's ``get`` then
                returns the recorded gradient tensors, which can be differentiated again
                (PyTorch's ``backward(create_graph=True)``). The store's own buffers get their
                values too (accumulated, as always), and a leaf's ``.grad`` becomes the
                recorded gradient (added to a ``.grad`` it had), as in PyTorch.

        Raises:
            TapeError: the tensor does not require grad (nothing recorded it: no input of the
                ops that made it required grad, or grad mode was off), has more than one
                element and no ``gradient`` is given, its tape was already run (a second
                backward without ``retain_graph=True``), only ``GradientTape`` contexts
                recorded it (use ``tape.gradient``), or (with ``create_graph``) an op on the
                path has no differentiable backward.
            ShapeError: ``gradient``'s shape is not this tensor's.
            DTypeError: ``gradient`` is not numeric.

        Every leaf of the pass that requires grad (module parameters, tensors made with
        ``requires_grad=True``) also gets its gradient added into its :attr:`grad` (PyTorch's
        accumulation; ``opt.zero_grad()`` clears it); the returned store is dfdx's spelling of
        the same numbers.
        """
        tape = self.tape
        if tape is NONE_TAPE or tape is PARAM or tape is WATCHED:
            raise TapeError(
                f"backward: tensor of shape {self.shape} does not require grad and has no grad_fn: nothing "
                f"recorded it{' (it is a leaf: backward starts at a result)' if tape is not NONE_TAPE else ''}. "
                "Make an input require grad (dev.tensor(x, requires_grad=True), t.requires_grad_(), or a module "
                "parameter), or trace one (x.trace(grads) / x.leaky_trace()), and run the forward pass outside "
                "no_grad()"
            )
        tape = owned_tape(self, "backward")
        if create_graph:
            return _backward_create_graph(self, tape, gradient)
        if _tape_mod._anomaly:
            _hooks.check_loss(self)
        if gradient is None:
            if self.data.size != 1:
                raise TapeError(
                    f"backward: grad can be implicitly created only for one-element outputs; got shape "
                    f"{self.shape} and no gradient; reduce with .sum() or .mean(), or pass gradient= of that shape"
                )
            seed = np.ones_like(self.data)
        else:
            seed = _engine.seed_array("backward", self, gradient, "gradient")
        grads = _engine.backprop(tape, ((self, seed),), op="backward", retain=retain_graph, to_grad=True)
        grads.drop_non_leafs()
        return grads

    # ----- ops (each defined, typed and differentiated in gradtape.ops) ---------------------

    __add__ = _binary.add
    __radd__ = _binary.radd
    __sub__ = _binary.sub
    __rsub__ = _binary.rsub
    __mul__ = _binary.mul
    __rmul__ = _binary.rmul
    __truediv__ = _binary.div
    __rtruediv__ = _binary.rdiv
    __mod__ = _binary.remainder
    __rmod__ = _binary.rremainder
    __floordiv__ = _binary.floor_divide
    __rfloordiv__ = _binary.rfloor_divide
    __neg__ = _unary.neg
    add = _binary.add
    sub = _binary.sub
    mul = _binary.mul
    div = _binary.div
    remainder = _binary.remainder
    fmod = _binary.fmod
    floor_divide = _binary.floor_divide
    neg = _unary.neg
    exp = _unary.exp
    log = _unary.log
    relu = _unary.relu
    sin = _unary.sin
    abs = _unary.abs
    __abs__ = _unary.abs
    sqrt = _unary.sqrt
    square = _unary.square
    pow = _binary.pow  # a number or a tensor exponent
    __pow__ = _binary.pow
    __rpow__ = _binary.rpow  # 2.0 ** t
    cos = _unary.cos
    tanh = _unary.tanh
    sigmoid = _unary.sigmoid
    leaky_relu = _unary.leaky_relu
    gelu = _unary.gelu
    silu = _unary.silu
    softplus = _unary.softplus
    clamp = _unary.clamp
    clamp_min = _unary.clamp_min
    clamp_max = _unary.clamp_max
    rsqrt = _unary.rsqrt
    reciprocal = _unary.reciprocal
    exp2 = _unary.exp2
    log2 = _unary.log2
    log10 = _unary.log10
    nan_to_num = _unary.nan_to_num
    isnan = _compare.isnan
    isinf = _compare.isinf
    isfinite = _compare.isfinite
    logical_not = _compare.logical_not
    logical_and = _compare.logical_and
    logical_or = _compare.logical_or
    logical_xor = _compare.logical_xor
    isclose = _compare.isclose
    allclose = _compare.allclose
    equal = _compare.equal
    any = _reduce.any
    all = _reduce.all
    amax = _reduce.amax
    amin = _reduce.amin
    mm = _linalg.mm
    bmm = _linalg.bmm
    dot = _linalg.dot
    unbind = _select.unbind
    movedim = _shape.movedim
    swapaxes = _shape.swapaxes
    clip = _unary.clamp
    floor = _unary.floor
    ceil = _unary.ceil
    trunc = _unary.trunc
    fix = _unary.trunc
    round = _unary.round
    sign = _unary.sign
    nans_to = _unary.nans_to
    recip = _unary.recip
    to_dtype = _unary.to_dtype
    acos = _unary.acos
    asin = _unary.asin
    atan = _unary.atan
    cosh = _unary.cosh
    elu = _unary.elu
    erf = _unary.erf
    erfc = _unary.erfc
    expm1 = _unary.expm1
    hardsigmoid = _unary.hardsigmoid
    hardswish = _unary.hardswish
    log1p = _unary.log1p
    logsigmoid = _unary.logsigmoid
    mish = _unary.mish
    selu = _unary.selu
    sinh = _unary.sinh
    tan = _unary.tan
    sum = _reduce.sum
    mean = _reduce.mean
    max = _reduce.max
    min = _reduce.min
    var = _reduce.var
    std = _reduce.std
    logsumexp = _reduce.logsumexp
    maximum = _binary.maximum
    minimum = _binary.minimum
    lt = _compare.lt
    le = _compare.le
    gt = _compare.gt
    ge = _compare.ge
    eq = _compare.eq
    ne = _compare.ne
    __lt__ = _compare.lt
    __le__ = _compare.le
    __gt__ = _compare.gt
    __ge__ = _compare.ge
    __eq__ = _compare.eq_operator  # returns a mask tensor, so hash by identity explicitly:
    __ne__ = _compare.ne_operator
    __hash__ = object.__hash__
    __bool__ = _compare.truth  # one-element tensors only: `if t1 == t2` must not test len()
    where = _compare.tensor_where
    matmul = _linalg.matmul
    __matmul__ = _linalg.matmul
    dropout = _nn.dropout
    prelu = _nn.prelu
    layer_norm = _nn.layer_norm
    rms_norm = _nn.rms_norm
    reshape = _shape.reshape
    permute = _shape.permute
    transpose = _shape.transpose
    T = _shape.TProperty()  # 2-D transpose, typed Rank2[A, B] -> Rank2[B, A]
    broadcast_to = _shape.broadcast_to
    expand_dims = _shape.expand_dims
    unsqueeze = _shape.expand_dims
    squeeze = _shape.squeeze
    roll = _shape.roll
    tril = _shape.tril
    triu = _shape.triu
    __getitem__ = _indexing.getitem
    gather = _indexing.gather
    index_select = _indexing.index_select
    multinomial = _sampling.multinomial
    log_softmax = _log_softmax
    softmax = _softmax_op  # from the submodule: gradtape.ops.softmax is the function
    # issue 27, PyTorch's spelling (``gather`` above is numpy's take; PyTorch's gather is take_along_axis)
    argmax = _select.argmax
    argmin = _select.argmin
    argsort = _select.argsort
    sort = _select.sort
    topk = _select.topk
    take_along_axis = _select.take_along_axis
    scatter_add = _select.scatter_add
    index_add = _select.index_add
    masked_fill = _select.masked_fill
    split = _select.split
    chunk = _select.chunk
    flip = _select.flip
    repeat = _select.repeat
    tile = _select.tile
    cumsum = _reduce.cumsum
    cumprod = _reduce.cumprod
    prod = _reduce.prod
    norm = _distance.norm  # issue 27: norms and small elementwise ops
    atan2 = _binary.atan2
    lerp = _binary.lerp
    outer = _binary.outer

    # ----- issue 27: PyTorch's spellings of shape, dtype and in-place methods ---------------
    # (reductions take dim=/keepdim= in gradtape.ops.reduce; concat/stack/cat dim= in ops.shape)

    @overload
    def view(self, shape: SI, /) -> Tensor[SI, T_co]: ...
    @overload
    def view(self, *shape: int) -> Tensor[Any, T_co]: ...
    def view(self, *shape: Any) -> Any:
        """PyTorch's ``x.view(2, -1)`` (or ``x.view((2, -1))``): :func:`gradtape.ops.reshape`.

        A view here is a reshape: the output's data is a numpy view of this tensor's where
        numpy gives one (a contiguous input), else a copy (where PyTorch's ``view`` refuses a
        non-contiguous input, this one copies). For autograd it never aliases: the output is
        a new tensor whose gradient is reshaped back to this one, as ``reshape``'s; writing
        into one of them (``__setitem__``, allowed only off the tape) may change the other's
        values when numpy shared the buffer, as in PyTorch.

        Raises:
            ShapeError, TypeError: as :func:`gradtape.ops.reshape`.
        """
        return _shape.reshape(self, *shape)

    flatten = _shape.flatten

    def contiguous(self) -> Tensor[S, T_co]:
        """PyTorch's ``contiguous()``: this tensor itself (gradtape's ops take any memory
        layout, so there is nothing to do)."""
        return self

    def dim(self) -> builtins.int:
        """PyTorch's ``dim()``: the number of dims, :attr:`ndim`."""
        return self.data.ndim

    def numel(self) -> builtins.int:
        """PyTorch's ``numel()``: the number of elements, :attr:`size`."""
        return builtins.int(self.data.size)

    def expand(self, *sizes: Any) -> Tensor[Any, T_co]:
        """PyTorch's ``expand(*sizes)`` (or a tuple): :func:`gradtape.ops.broadcast_to` with
        ``-1`` keeping a dim's size; new dims go in front (and may not be ``-1``). Gradient:
        summed back over the expanded dims.

        Raises:
            ShapeError: fewer sizes than dims, a ``-1`` for a new dim, or a dim that does not
                broadcast (names both shapes).
        """
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        shape = self.data.shape
        new = len(sizes) - len(shape)
        if new < 0:
            raise ShapeError(
                f"expand: {len(sizes)} sizes {tuple(sizes)} for a tensor of shape {shape} ({len(shape)} dims)"
            )
        target = []
        for k, n in enumerate(sizes):
            if n == -1:
                if k < new:
                    raise ShapeError(f"expand: -1 for the new leading dim {k} in sizes {tuple(sizes)} (shape {shape})")
                n = shape[k - new]
            target.append(n)
        return _shape.broadcast_to(self, tuple(target))

    def t(self) -> Tensor[Any, T_co]:
        """PyTorch's ``t()``: a 2-D tensor transposed; a 0-D or 1-D tensor as it is (a new
        tensor). Gradient: transposed back.

        Raises:
            ShapeError: the tensor has more than 2 dims (use ``transpose(d0, d1)``).
        """
        shape = self.data.shape
        if len(shape) > 2:
            raise ShapeError(f"t: expects a tensor of at most 2 dims, got shape {shape}; use transpose(d0, d1)")
        if len(shape) == 2:
            return _shape.permute(self, (1, 0))
        return _shape.reshape(self, shape)

    def float(self) -> Tensor[S, T_co]:
        """PyTorch's ``float()``: float32. A float tensor goes through
        :func:`gradtape.ops.to_dtype` (differentiable: the gradient flows back in this
        tensor's dtype); an integer or bool tensor (a mask, labels) gives a new float32 tensor
        without a tape (nothing to differentiate), as PyTorch's."""
        return self._cast(np.float32)

    def double(self) -> Tensor[S, T_co]:
        """PyTorch's ``double()``: float64, as :meth:`float`."""
        return self._cast(np.float64)

    def long(self) -> Tensor[S, NoneTape]:
        """PyTorch's ``long()``: int64 (a float is truncated toward 0), a new tensor without a
        tape: integers have no gradient."""
        return self._like(self.data.astype(np.int64))  # type: ignore[no-any-return]

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False) -> Tensor[S, Any]:
        """PyTorch's ``to``: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
        ``to(other_tensor)`` (its device and dtype) and the keywords ``dtype=``/``device=``.

        A dtype is numpy's or its name (``np.float64``, ``"float32"``, ``np.int64``):
        float32/float64 as :meth:`float` / :meth:`double`, an integer or bool dtype as
        :meth:`long` (no tape). A device is a ``Cpu`` or ``Cuda`` object or PyTorch's string
        (``"cpu"``, ``"cuda"``, ``"cuda:1"``): a differentiable copy to that device
        (:func:`gradtape.ops.to_device`; the gradient flows back to this tensor's device),
        or this tensor itself when it is there already, as PyTorch's.

        Raises:
            TypeError: an argument is neither a dtype nor a device.
            ValueError: a device string gradtape does not know. RuntimeError: ``"cuda"``
                without CuPy or a GPU (:class:`gradtape.devices.cuda.Cuda`).
        """
        del non_blocking
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif _arrays.is_device_spec(a):
                device = a
            else:
                dtype = a
        out: Tensor[S, Any] = self
        if device is not None:
            out = _transfer.to_device(out, _arrays.resolve_device("to", device))
        if dtype is not None:
            out = out._to_dtype(dtype)
        return out

    def cuda(self, device: Any = None) -> Tensor[S, T_co]:
        """PyTorch's ``cuda()``: this tensor on a GPU (``device``: an index, ``"cuda:1"`` or a
        ``Cuda``; GPU 0 by default), a differentiable copy (:meth:`to`).

        Raises:
            RuntimeError: CuPy, numba-cuda or a GPU is missing (the message says which).
        """
        spec = f"cuda:{device}" if isinstance(device, int) else ("cuda" if device is None else device)
        return self.to(spec)

    def cpu(self) -> Tensor[S, T_co]:
        """PyTorch's ``cpu()``: this tensor in host memory, a differentiable copy from a GPU
        (:meth:`to`); a CPU tensor is returned as it is."""
        return self.to("cpu")

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a GPU (PyTorch's ``is_cuda``)."""
        return getattr(self.device, "type", "cpu") == "cuda"

    def _to_dtype(self, dtype: Any) -> Tensor[S, Any]:
        try:
            target = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"to: expects a dtype (np.float32, np.int64, ...) or a device, got {dtype!r}") from None
        if target.kind == "f":
            return self._cast(target)
        if target.kind in "biu":
            return _ops_util.cast_untraced(self, target)  # a capture's replay casts again
        raise TypeError(f"to: dtype {target} is not supported (tensor {self.dtype} {self.shape})")

    def _cast(self, dtype: Any) -> Tensor[Any, Any]:
        if self.data.dtype.kind == "f":
            out: Tensor[Any, Any] = _unary.to_dtype(self, dtype)
            return out
        return _ops_util.cast_untraced(self, np.dtype(dtype))  # integers carry no gradient

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[key] = value`` (``logits[mask] = float("-inf")``, ``x[:, 0] = 0``): writes into
        this tensor's array, numpy's indexing rules (a tensor in ``key`` or as ``value`` is
        read as its array). Allowed on a tensor that takes no part in autograd (no tape, not
        requiring grad), and under ``no_grad()`` on a leaf that requires grad (a parameter, as
        PyTorch's ``with torch.no_grad(): w[0] = 0``); the write is not recorded, and it
        changes every tensor sharing the buffer (a reshape view, ``detach()`` of an untraced
        tensor or a parameter).

        Raises:
            TapeError: (a ``RuntimeError``) the tensor is recorded on a tape, or requires grad
                while grad mode is on; use the out-of-place ``masked_fill`` / ``where`` instead.
            ValueError: the array is read-only: a ``detach()`` of a recorded tensor (it shares
                memory with a tensor whose backward may read it; ``clone()`` it first), a
                ``broadcast_to`` / ``expand`` view, or a read-only imported buffer.
        """
        if self.tape is not NONE_TAPE:
            self._check_inplace(
                "__setitem__", "use x = x.masked_fill(mask, value) or ops.where(mask, value, x) instead"
            )
        if isinstance(key, Tensor):
            key = key.data
        elif isinstance(key, tuple):
            key = tuple(k.data if isinstance(k, Tensor) else k for k in key)
        if isinstance(value, Tensor):
            value = value.data
        try:
            self.data[key] = value
        except ValueError as e:
            if not _arrays.writeable(self.data):
                raise self._read_only("__setitem__") from e
            raise
        _tape_mod.note_writes(self.data)

    def _check_inplace(self, op: str, instead: str) -> None:
        """The rule of every in-place write (``__setitem__``, ``fill_``, ``zero_``, ``copy_``) on a
        tensor with a tape: refused on a recorded tensor (its tape's closures read its buffer),
        and on a leaf that requires grad unless grad mode is off (``no_grad()``, PyTorch's rule
        for parameters)."""
        tape = self.tape
        if tape is NONE_TAPE:
            return
        if not tape.OWNS_TAPE and (tape is PARAM or tape is WATCHED) and not _tape_mod.is_grad_enabled():
            return
        what = "is recorded on a tape" if tape.OWNS_TAPE else "requires grad (outside no_grad())"
        raise TapeError(
            f"{op}: in-place write into a tensor of shape {self.shape} that {what} would corrupt its gradient; "
            f"{instead} (PyTorch refuses in-place writes into a leaf that requires grad; write into a parameter "
            "under no_grad())"
        )

    def _read_only(self, op: str) -> ValueError:
        """The error of an in-place write into a read-only array, naming why it is read-only."""
        data = self.data
        if _SHARED_WITH_TAPE.get(id(data)) is data:
            return ValueError(
                f"{op}: tensor of shape {self.shape} is a detach() of a tensor recorded on a tape and shares its "
                "memory, which that tape's backward may read: the write would silently change the gradient; write "
                "into a copy, t.detach().clone()"
            )
        return ValueError(
            f"{op}: tensor of shape {self.shape} is read-only: a broadcast_to / expand view, a view of a detach() "
            "of a recorded tensor (whose backward may read the shared memory), or a read-only imported buffer; "
            "write into a copy, t.clone()"
        )

    # ----- issue 27: PyTorch's new_* constructors and in-place fills --------------------------

    def new_zeros(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor[Any, Any]:
        """PyTorch's ``x.new_zeros(size)``: zeros of shape ``size`` (a tuple or list, or the ints
        as arguments: ``x.new_zeros(2, 3)``), in ``dtype`` (default this tensor's: float32,
        float64, bool or an integer dtype) on this tensor's device, an untraced leaf (that
        requires grad with ``requires_grad=True``).

        Raises:
            TypeError: a size is not an int, or ``dtype`` is not a dtype.
            ValueError: a size is negative.
            DTypeError: ``dtype`` is not a tensor dtype (float16, complex).
        """
        return self._new("new_zeros", size, dtype, requires_grad, np.zeros)

    def new_ones(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor[Any, Any]:
        """PyTorch's ``x.new_ones(size)``: ones, as :meth:`new_zeros`."""
        return self._new("new_ones", size, dtype, requires_grad, np.ones)

    def new_empty(self, *size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor[Any, Any]:
        """PyTorch's ``x.new_empty(size)``: an uninitialised tensor (``np.empty``: arbitrary
        values, fill it before reading), as :meth:`new_zeros`."""
        return self._new("new_empty", size, dtype, requires_grad, np.empty)

    def new_full(
        self, size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False
    ) -> Tensor[Any, Any]:
        """PyTorch's ``x.new_full(size, fill_value)``: ``fill_value`` everywhere, shape ``size`` (a
        tuple or list), in ``dtype`` (default this tensor's; the value is cast to it) on this
        tensor's device, an untraced leaf; as :meth:`new_zeros`.

        Raises:
            TypeError, ValueError, DTypeError: as :meth:`new_zeros`; ``fill_value`` is not a
                number (``TypeError``).
        """
        if isinstance(fill_value, Tensor):
            fill_value = fill_value.item()
        if not isinstance(fill_value, (builtins.int, builtins.float, bool, np.number, np.bool_)):
            raise TypeError(f"new_full: fill_value must be a number, got {type(fill_value).__name__}")
        return self._new("new_full", (size,), dtype, requires_grad, lambda s, dtype: np.full(s, fill_value, dtype))

    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor[Any, Any]:
        """PyTorch's ``x.new_tensor(data)``: a copy of ``data`` (a number, nested lists, a numpy
        array or a tensor, whose values only are taken: the result never records) in ``dtype``
        (default this tensor's, as PyTorch's, whatever ``data``'s own dtype; a float cast to an
        integer dtype is truncated toward zero) on this tensor's device, an untraced leaf.

        Raises:
            TypeError: ``dtype`` is not a dtype; ``data`` is not numeric.
            DTypeError: ``dtype`` is not a tensor dtype.
        """
        target = self._new_dtype("new_tensor", dtype)
        if isinstance(data, Tensor):
            data = data.data
        try:
            arr = _arrays.copy(data, target)
        except (TypeError, ValueError) as e:
            raise TypeError(f"new_tensor: data must be numeric (a number, lists, an array or a tensor): {e}") from e
        return self._new_leaf(arr, requires_grad)

    def _new(self, op: str, size: tuple[Any, ...], dtype: Any, requires_grad: bool, make: Any) -> Tensor[Any, Any]:
        """The ``new_*`` constructors: parse PyTorch's ``size`` (varargs or one sequence)."""
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        for n in size:
            if isinstance(n, bool) or not isinstance(n, (builtins.int, np.integer)):
                raise TypeError(f"{op}: sizes must be ints, got {tuple(size)!r} (tensor of shape {self.shape})")
            if n < 0:
                raise ValueError(f"{op}: negative size in {tuple(size)} (tensor of shape {self.shape})")
        target = self._new_dtype(op, dtype)
        return self._new_leaf(make(tuple(builtins.int(n) for n in size), dtype=target), requires_grad)

    def _new_dtype(self, op: str, dtype: Any) -> np.dtype[Any]:
        if dtype is None:
            own: np.dtype[Any] = self.data.dtype
            return own
        try:
            target: np.dtype[Any] = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"{op}: dtype must be a numpy dtype (np.float32, np.int64, ...), got {dtype!r}") from None
        if not (target.kind == "f" and target.itemsize in (4, 8)) and target.kind not in "biu":
            raise DTypeError(
                f"{op}: dtype {target} is not supported (float32/float64, bool or integers; tensor {self.dtype} "
                f"{self.shape})"
            )
        return target

    def _new_leaf(self, arr: Array, requires_grad: bool) -> Tensor[Any, Any]:
        t: Tensor[Any, Any] = self._like(arr)
        if requires_grad:
            t.requires_grad_()
        return t

    def fill_(self, value: Any) -> Tensor[S, T_co]:
        """PyTorch's ``x.fill_(value)``: every element set to ``value`` (a number or a 0-d tensor,
        cast to this tensor's dtype), in place; returns this tensor. Not recorded.

        Allowed on a tensor without a tape, and under ``no_grad()`` on a leaf that requires grad
        (a parameter), as :meth:`__setitem__`.

        Raises:
            TapeError: the tensor is recorded on a tape, or requires grad outside ``no_grad()``
                (use ``x.new_full(x.shape, value)`` or ``ops.where`` instead).
            ValueError: the tensor is read-only (``detach()`` of a recorded tensor: ``clone()``
                it first; an ``expand`` view).
            TypeError: ``value`` is a tensor with more than one dim, or not a number.
        """
        self._check_inplace("fill_", "use x.new_full(x.shape, value) (out of place) instead")
        if isinstance(value, Tensor):
            if value.data.ndim:
                raise TypeError(
                    f"fill_: value must be a number or a 0-d tensor, got a tensor of shape {value.shape} "
                    f"(filling a tensor of shape {self.shape})"
                )
            value = value.data[()]
        if not isinstance(value, (builtins.int, builtins.float, bool, np.number, np.bool_)):
            raise TypeError(f"fill_: value must be a number, got {type(value).__name__} (tensor of shape {self.shape})")
        if not _arrays.writeable(self.data):
            raise self._read_only("fill_")
        self.data.fill(value)
        _tape_mod.note_writes(self.data)
        return self

    def zero_(self) -> Tensor[S, T_co]:
        """PyTorch's ``x.zero_()``: ``fill_(0)``, in place; returns this tensor.

        Raises:
            TapeError, ValueError: as :meth:`fill_`.
        """
        self._check_inplace("zero_", "use x.new_zeros(x.shape) (out of place) instead")
        if not _arrays.writeable(self.data):
            raise self._read_only("zero_")
        self.data.fill(0)
        _tape_mod.note_writes(self.data)
        return self

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor[S, T_co]:
        """PyTorch's ``x.copy_(src)``: this tensor's values set to ``src``'s (a tensor or a numpy
        array, broadcast to this tensor's shape and cast to its dtype), in place; returns this
        tensor. Not recorded: no gradient flows to ``src`` (PyTorch would record one, so a
        ``src`` that requires grad is refused while grad mode is on; use ``no_grad()`` or
        ``src.detach()``). ``non_blocking`` is accepted and ignored (one device).

        Allowed on a tensor without a tape, and under ``no_grad()`` on a leaf that requires grad
        (``with no_grad(): p.copy_(new_value)``, an EMA or a weight load).

        Raises:
            TapeError: this tensor is recorded on a tape, or requires grad outside ``no_grad()``;
                or ``src`` requires grad while grad mode is on.
            ShapeError: ``src``'s shape does not broadcast to this tensor's (names both).
            ValueError: this tensor is read-only (``detach()`` of a recorded tensor: ``clone()``
                it first; an ``expand`` view).
            TypeError: ``src`` is neither a tensor nor a numpy array.
        """
        self._check_inplace("copy_", "use the out-of-place result itself (or clone()) instead")
        if isinstance(src, Tensor):
            if src.requires_grad and _tape_mod.is_grad_enabled():
                raise TapeError(
                    f"copy_: src of shape {src.shape} requires grad, and the copy into a tensor of shape {self.shape} "
                    "would not carry its gradient; copy under no_grad() or copy src.detach()"
                )
            arr = src.data
        elif isinstance(src, np.ndarray):
            arr = src
        else:
            raise TypeError(
                f"copy_: src must be a Tensor or a numpy array, got {type(src).__name__} (tensor of shape {self.shape})"
            )
        try:
            arr = np.broadcast_to(arr, self.data.shape)
        except ValueError:
            raise ShapeError(
                f"copy_: src of shape {arr.shape} does not broadcast to the tensor's shape {self.shape}"
            ) from None
        if not _arrays.writeable(self.data):
            raise self._read_only("copy_")
        np.copyto(self.data, arr, casting="unsafe")
        _tape_mod.note_writes(self.data)
        return self

    # ----- PyTorch's in-place arithmetic: out of place, then written into this tensor ---------

    def _write_result(self, op: str, compute: Callable[[Tensor[Any, Any]], Any], instead: str) -> Tensor[S, T_co]:
        """``self.data[...] = compute(self.detach()).data``: the rule of :meth:`_check_inplace`
        (so under ``no_grad()`` on a parameter, or on a tensor without a tape), the result's
        shape must be this tensor's (PyTorch's "output with shape ... doesn't match the
        broadcast shape"), an integer tensor keeps integer results only, and the write is noted
        for backward's check."""
        self._check_inplace(op, instead)
        if not _arrays.writeable(self.data):
            raise self._read_only(op)
        from gradtape.grad_mode import no_grad

        with no_grad():
            result = compute(self.detach())
        data = result.data if isinstance(result, Tensor) else _as_array(result)
        if data.shape != self.data.shape:
            raise ShapeError(
                f"{op}: the result has shape {data.shape}, which does not fit the tensor's shape {self.shape} "
                "(an in-place op cannot change the shape)"
            )
        if self.data.dtype.kind in "iub" and data.dtype.kind == "f":
            raise DTypeError(f"{op}: a float result cannot be written into a {self.dtype} tensor in place")
        self.data[...] = data
        _tape_mod.note_writes(self.data)
        return self

    def add_(self, other: Any, *, alpha: builtins.float = 1) -> Tensor[S, T_co]:
        """PyTorch's ``x.add_(other, alpha=1)``: ``x += alpha * other`` in place (broadcast to
        ``x``'s shape); returns ``x``. Not recorded (see :meth:`fill_` for where it is allowed).

        Raises:
            TapeError: as :meth:`fill_`. ShapeError: the result's shape is not ``x``'s.
            DTypeError: a float result into an integer tensor.
        """
        return self._write_result("add_", lambda t: t + (other * alpha if alpha != 1 else other), "use x + other")

    def sub_(self, other: Any, *, alpha: builtins.float = 1) -> Tensor[S, T_co]:
        """PyTorch's ``x.sub_(other, alpha=1)``: ``x -= alpha * other`` in place; returns ``x``.

        Raises:
            TapeError, ShapeError, DTypeError: as :meth:`add_`.
        """
        return self._write_result("sub_", lambda t: t - (other * alpha if alpha != 1 else other), "use x - other")

    def mul_(self, other: Any) -> Tensor[S, T_co]:
        """PyTorch's ``x.mul_(other)``: ``x *= other`` in place; returns ``x``.

        Raises:
            TapeError, ShapeError, DTypeError: as :meth:`add_`.
        """
        return self._write_result("mul_", lambda t: t * other, "use x * other")

    def div_(self, other: Any, *, rounding_mode: builtins.str | None = None) -> Tensor[S, T_co]:
        """PyTorch's ``x.div_(other, rounding_mode=None)``: ``x /= other`` in place; returns ``x``
        (an integer tensor only with a ``rounding_mode``, as PyTorch).

        Raises:
            TapeError, ShapeError, DTypeError: as :meth:`add_`.
        """
        return self._write_result("div_", lambda t: _binary.div(t, other, rounding_mode=rounding_mode), "use x / other")

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor[S, T_co]:
        """PyTorch's ``x.clamp_(min, max)``: :func:`gradtape.ops.clamp` in place; returns ``x``.

        Raises:
            TapeError, ShapeError, DTypeError: as :meth:`add_`; ValueError: as ``clamp``.
        """
        return self._write_result("clamp_", lambda t: _unary.clamp(t, min, max), "use x.clamp(min, max)")

    def masked_fill_(self, mask: Any, value: Any) -> Tensor[S, T_co]:
        """PyTorch's ``x.masked_fill_(mask, value)``: ``value`` where the bool ``mask`` (broadcast
        to ``x``) is True, in place; returns ``x``.

        Raises:
            TapeError, ShapeError, DTypeError: as :meth:`add_`; the errors of
            :func:`gradtape.ops.masked_fill`.
        """
        return self._write_result(
            "masked_fill_", lambda t: _select.masked_fill(t, mask, value), "use x.masked_fill(mask, value)"
        )

    def uniform_(self, a: builtins.float = 0.0, b: builtins.float = 1.0) -> Tensor[S, T_co]:
        """PyTorch's ``x.uniform_(a, b)``: samples of ``U[a, b)`` from the device's generator, in
        place (weight initialisation); returns ``x``.

        Raises:
            TapeError: as :meth:`fill_`. DTypeError: ``x`` is not a float tensor.
        """
        if self.data.dtype.kind != "f":
            raise DTypeError(f"uniform_: needs a float tensor, got {self.dtype}")
        return self._write_result("uniform_", lambda t: t.device.rand(t.shape, a, b, t.dtype), "use gradtape.rand")

    def normal_(self, mean: builtins.float = 0.0, std: builtins.float = 1.0) -> Tensor[S, T_co]:
        """PyTorch's ``x.normal_(mean, std)``: samples of ``N(mean, std**2)`` from the device's
        generator, in place; returns ``x``.

        Raises:
            TapeError: as :meth:`fill_`. DTypeError: ``x`` is not a float tensor.
        """
        if self.data.dtype.kind != "f":
            raise DTypeError(f"normal_: needs a float tensor, got {self.dtype}")
        return self._write_result(
            "normal_", lambda t: t.device.randn(t.shape, t.dtype) * std + mean, "use gradtape.randn"
        )

    # ----- PyTorch's conversions and shape helpers ------------------------------------------

    def type_as(self, other: Tensor[Any, Any]) -> Tensor[S, T_co]:
        """PyTorch's ``x.type_as(other)``: ``x`` in ``other``'s dtype (:meth:`to`); ``x`` itself
        when the dtypes agree."""
        out: Tensor[S, T_co] = self if self.dtype == other.dtype else self.to(other.dtype)
        return out

    def view_as(self, other: Tensor[Any, Any]) -> Tensor[Any, T_co]:
        """PyTorch's ``x.view_as(other)``: ``x`` reshaped to ``other``'s shape.

        Raises:
            ShapeError: the element counts differ.
        """
        return _shape.reshape(self, other.shape)

    reshape_as = view_as

    def expand_as(self, other: Tensor[Any, Any]) -> Tensor[Any, T_co]:
        """PyTorch's ``x.expand_as(other)``: ``x`` broadcast to ``other``'s shape.

        Raises:
            ShapeError: the shapes do not broadcast.
        """
        return _shape.broadcast_to(self, other.shape)

    def tolist(self) -> Any:
        """PyTorch's ``x.tolist()``: the values as (nested) Python lists of numbers (a number for
        a 0-d tensor); a GPU tensor's are copied to the host."""
        if _tape_mod._recorder is not None:
            _tape_mod._recorder.host_read(self, "tolist()")
        return _arrays.into_memory_of(self.data, None).tolist()

    def is_contiguous(self) -> builtins.bool:
        """PyTorch's ``x.is_contiguous()``: whether the data is C-contiguous."""
        return builtins.bool(self.data.flags.c_contiguous)

    @property
    def mT(self) -> Tensor[Any, T_co]:
        """PyTorch's ``x.mT``: the last two dims swapped (a batch of matrices transposed).

        Raises:
            ShapeError: ``x`` has fewer than 2 dims.
        """
        if self.ndim < 2:
            raise ShapeError(f"mT: needs at least 2 dims, got shape {self.shape}")
        return _shape.transpose(self, -2, -1)

    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor[Any, T_co]:
        """PyTorch's ``x.narrow(dim, start, length)`` (:func:`gradtape.ops.select.narrow`)."""
        return _select.narrow(self, dim, start, length)

    def select(self, dim: builtins.int, index: builtins.int) -> Tensor[Any, T_co]:
        """PyTorch's ``x.select(dim, index)``: the slice at ``index`` of ``dim``, without that
        dim. Gradient: scattered back into the slice.

        Raises:
            ShapeError: ``dim`` out of range. IndexError: ``index`` out of range.
        """
        nd = builtins.max(self.ndim, 1)
        if not -nd <= dim < nd:
            raise ShapeError(f"select: dim {dim} is out of range for shape {self.shape}")
        key = (slice(None),) * (dim % nd) + (index,)
        out: Tensor[Any, T_co] = self[key]
        return out

    def masked_select(self, mask: Tensor[Any, Any]) -> Tensor[Any, T_co]:
        """PyTorch's ``x.masked_select(mask)`` (:func:`gradtape.ops.select.masked_select`)."""
        return _select.masked_select(self, mask)

    def nonzero(self, *, as_tuple: builtins.bool = False) -> Any:
        """PyTorch's ``x.nonzero()`` (:func:`gradtape.ops.select.nonzero`)."""
        return _select.nonzero(self, as_tuple=as_tuple)

    def unflatten(self, dim: builtins.int, sizes: tuple[builtins.int, ...]) -> Tensor[Any, T_co]:
        """PyTorch's ``x.unflatten(dim, sizes)``: dim ``dim`` split into ``sizes`` (one may be
        ``-1``).

        Raises:
            ShapeError: ``dim`` is out of range, or ``sizes`` do not multiply to its size.
        """
        nd = builtins.max(self.ndim, 1)
        if not -nd <= dim < nd:
            raise ShapeError(f"unflatten: dim {dim} is out of range for shape {self.shape}")
        d = dim % nd
        shape = self.shape
        known = int(np.prod([n for n in sizes if n != -1], dtype=np.int64))
        full = [shape[d] // known if n == -1 and known else n for n in sizes]
        if int(np.prod(full, dtype=np.int64)) != shape[d]:
            raise ShapeError(f"unflatten: sizes {sizes} do not multiply to dim {dim}'s size {shape[d]} (shape {shape})")
        return _shape.reshape(self, (*shape[:d], *full, *shape[d + 1 :]))

    # ----- PyTorch's functions composed of gradtape ops (gradtape._torch_more), as methods ------

    def addmm(
        self, mat1: Tensor[Any, Any], mat2: Tensor[Any, Any], *, beta: Any = 1, alpha: Any = 1
    ) -> Tensor[Any, Any]:
        """PyTorch's ``x.addmm(mat1, mat2, *, beta=1, alpha=1)`` (:func:`gradtape.addmm`)."""
        out: Tensor[Any, Any] = _composed.addmm(self, mat1, mat2, beta=beta, alpha=alpha)
        return out

    def addmv(self, mat: Tensor[Any, Any], vec: Tensor[Any, Any], *, beta: Any = 1, alpha: Any = 1) -> Tensor[Any, Any]:
        """PyTorch's ``x.addmv(mat, vec, *, beta=1, alpha=1)`` (:func:`gradtape.addmv`)."""
        out: Tensor[Any, Any] = _composed.addmv(self, mat, vec, beta=beta, alpha=alpha)
        return out

    def addr(
        self, vec1: Tensor[Any, Any], vec2: Tensor[Any, Any], *, beta: Any = 1, alpha: Any = 1
    ) -> Tensor[Any, Any]:
        """PyTorch's ``x.addr(vec1, vec2, *, beta=1, alpha=1)`` (:func:`gradtape.addr`)."""
        out: Tensor[Any, Any] = _composed.addr(self, vec1, vec2, beta=beta, alpha=alpha)
        return out

    def baddbmm(
        self, batch1: Tensor[Any, Any], batch2: Tensor[Any, Any], *, beta: Any = 1, alpha: Any = 1
    ) -> Tensor[Any, Any]:
        """PyTorch's ``x.baddbmm(batch1, batch2, *, beta=1, alpha=1)`` (:func:`gradtape.baddbmm`)."""
        out: Tensor[Any, Any] = _composed.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)
        return out

    def addbmm(
        self, batch1: Tensor[Any, Any], batch2: Tensor[Any, Any], *, beta: Any = 1, alpha: Any = 1
    ) -> Tensor[Any, Any]:
        """PyTorch's ``x.addbmm(batch1, batch2, *, beta=1, alpha=1)`` (:func:`gradtape.addbmm`)."""
        out: Tensor[Any, Any] = _composed.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)
        return out

    def kron(self, other: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """PyTorch's ``x.kron(other)``: the Kronecker product (:func:`gradtape.kron`)."""
        out: Tensor[Any, Any] = _composed.kron(self, other)
        return out

    def inner(self, other: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """PyTorch's ``x.inner(other)``: products summed over the last dims (:func:`gradtape.inner`)."""
        out: Tensor[Any, Any] = _composed.inner(self, other)
        return out

    def vdot(self, other: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """PyTorch's ``x.vdot(other)``: the dot product of two real vectors (:func:`gradtape.vdot`)."""
        out: Tensor[Any, Any] = _composed.vdot(self, other)
        return out

    def scatter(
        self,
        dim: builtins.int,
        index: Tensor[Any, Any],
        src: Any = None,
        *,
        value: Any = None,
        reduce: builtins.str | None = None,
    ) -> Tensor[S, Any]:
        """PyTorch's ``x.scatter(dim, index, src)`` / ``x.scatter(dim, index, value=v)``: a copy
        with ``src``'s elements (or ``v``) written at ``index`` along ``dim``
        (:func:`gradtape.scatter`)."""
        out: Tensor[S, Any] = _composed.scatter(self, dim, index, src, value=value, reduce=reduce)
        return out

    def bincount(self, weights: Tensor[Any, Any] | None = None, minlength: builtins.int = 0) -> Tensor[Any, Any]:
        """PyTorch's ``x.bincount(weights=None, minlength=0)`` (:func:`gradtape.bincount`; no gradient)."""
        out: Tensor[Any, Any] = _composed.bincount(self, weights, minlength)
        return out

    def histc(
        self, bins: builtins.int = 100, min: builtins.float = 0, max: builtins.float = 0
    ) -> Tensor[Any, NoneTape]:
        """PyTorch's ``x.histc(bins=100, min=0, max=0)`` (:func:`gradtape.histc`; no gradient)."""
        out: Tensor[Any, NoneTape] = _composed.histc(self, bins, min, max)
        return out

    def quantile(
        self,
        q: builtins.float | Tensor[Any, Any],
        dim: builtins.int | None = None,
        keepdim: builtins.bool = False,
        *,
        interpolation: builtins.str = "linear",
    ) -> Tensor[Any, T_co]:
        """PyTorch's ``x.quantile(q, dim=None, keepdim=False, *, interpolation='linear')``
        (:func:`gradtape.quantile`)."""
        out: Tensor[Any, T_co] = _stats.quantile(self, q, dim, keepdim, interpolation=interpolation)
        return out

    def nanquantile(
        self,
        q: builtins.float | Tensor[Any, Any],
        dim: builtins.int | None = None,
        keepdim: builtins.bool = False,
        *,
        interpolation: builtins.str = "linear",
    ) -> Tensor[Any, T_co]:
        """PyTorch's ``x.nanquantile(q, dim=None, keepdim=False, *, interpolation='linear')``
        (:func:`gradtape.nanquantile`)."""
        out: Tensor[Any, T_co] = _stats.nanquantile(self, q, dim, keepdim, interpolation=interpolation)
        return out

    def mode(self, dim: builtins.int = -1, keepdim: builtins.bool = False) -> Any:
        """PyTorch's ``x.mode(dim=-1, keepdim=False)``: ``(values, indices)`` (:func:`gradtape.mode`)."""
        return _stats.mode(self, dim, keepdim)


_composed: Any = None
"""``gradtape._torch_more``, PyTorch's functions composed of gradtape ops, which the methods
above call (``x.addmm``, ``x.scatter``, ``x.trace()``, ...): a higher layer, so it registers
itself here when it loads (tests/test_layering.py)."""

_stats: Any = None
"""``gradtape._torch_stats`` (``x.quantile``, ``x.nanquantile``, ``x.mode``), registered the
same way."""

_SHARED_WITH_TAPE: weakref.WeakValueDictionary[int, Array] = weakref.WeakValueDictionary()
"""The read-only arrays :meth:`Tensor.detach` made from recorded tensors, by ``id``: read only
to word the error of a write into one."""

_tape_mod._Tensor = Tensor  # for the layers below, which cannot import this module (gradtape.tape)


def _unpickle(data: Array, device: Device, param: bool, leaf: bool) -> Tensor[Any, NoneTape]:
    """Rebuild a pickled tensor under a fresh id (:meth:`Tensor.__reduce__`)."""
    t: Tensor[Any, NoneTape] = Tensor(data, device, PARAM if param else NONE_TAPE)
    t._leaf = leaf
    return t


def _check_array(data: object) -> Array:
    """The constructor's argument when it is not exactly an ``np.ndarray``: an ndarray subclass
    (a memmap, say) is viewed as a plain array; anything else is refused."""
    if isinstance(data, np.ndarray):
        return data.view(np.ndarray)
    if hasattr(data, "__cuda_array_interface__") and hasattr(data, "dtype"):  # a CuPy array (the Cuda device)
        return data  # type: ignore[return-value]
    raise TypeError(
        f"Tensor: data must be a numpy array, got {type(data).__name__}; create tensors with dev.tensor(...)"
    )


class _Everything:
    """A set of every id (a leaky store keeps every gradient)."""

    def __contains__(self, item: object) -> bool:
        return True


def _backward_create_graph(loss: Tensor[Any, Any], tape: GradientTape, gradient: Any) -> Gradients:
    """``loss.backward(create_graph=True)``: run the second rules on the loss's own tape (kept),
    put the values into the tape's store and keep the recorded tensors for ``get``."""
    grads = tape.gradients
    if loss.data.shape != () and gradient is None:
        raise TapeError(f"backward: needs a scalar or a gradient= seed of shape {loss.shape}, got shape {loss.shape}")
    seed = np.ones_like(loss.data) if gradient is None else _engine.seed_array("backward", loss, gradient, "gradient")
    root = tape._root()
    keep: Any = grads._leafs if grads._leafs is not None else _Everything()
    found: dict[int, Any] = _engine.backprop(
        tape, ((loss, seed),), op="backward", retain=True, create_graph=True, keep=keep
    )
    if grads._graph is None:
        grads._graph = {}
    for i, g in found.items():
        if i in keep:
            prev = grads._graph.get(i)
            grads._graph[i] = g if prev is None else prev + g
            grads._accum(i, _arrays.copy(g.data))
    for i, leaf in root._leaves.items():  # PyTorch's .grad: the recorded gradient, differentiable again
        g = found.get(i)
        if leaf is None or g is None:
            continue
        cur = getattr(leaf, "_grad", None)
        leaf._grad = g if cur is None else cur + g
    return grads
