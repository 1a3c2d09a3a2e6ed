"""The gradient store that backward fills (dfdx's ``Gradients``, with Burn's accessors).

Gradients are numpy arrays keyed by tensor id. ``x.trace(grads)`` shares ``x``'s id,
so ``grads.get(x)`` finds the gradient of the original ``x``. Buffers are allocated
lazily, the first time a backward closure asks for one.

Buffers may be shared: a backward closure may store the very array that is the
output's gradient as an input's gradient (``add``'s backward does), instead of a copy.
Shared buffers are copied before anyone writes into them (copy-on-write), so an
in-place update through :meth:`Gradients.get_or_alloc_mut` or :meth:`Gradients.mut_and_ref`
never changes another tensor's gradient.

Burn's ``AutodiffBackend`` accessors take and give tensors: :meth:`Gradients.grad` (a copy,
or ``None`` when there is no gradient, where :meth:`Gradients.get` gives zeros),
:meth:`Gradients.grad_remove` (pops it) and :meth:`Gradients.grad_replace` (sets it from a
tensor or an array). Burn's ``inner`` / ``from_inner`` are in :mod:`gradtape.autodiff`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.tape import NONE_TAPE, _tensor_class

if TYPE_CHECKING:
    from gradtape.tape import NoneTape
    from gradtape.tensor import Tensor

__all__ = ["Gradients", "Tensorlike"]

Array = np.ndarray[Any, Any]
_np_add, _np_mul = np.add, np.multiply  # module globals: no attribute lookup on the hot paths
S = TypeVar("S")


class Tensorlike(Protocol):
    """What the store needs of a tensor: its id, shape and dtype."""

    @property
    def id(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...


def _check_taking_part(op: str, t: Tensor[Any, Any], parts: set[int]) -> None:
    """Raise for a gradient asked of a plain leaf that took no part in recording (not traced
    into the store, ``parts``, nor requiring grad)."""
    if t.tape is not NONE_TAPE or not t._leaf or t.id in parts:
        return
    raise TapeError(
        f"{op}: tensor of shape {t.shape} (id {t.id}) does not require grad (requires_grad is False: it was "
        "not made with requires_grad=True, is not a module parameter and was not traced into this store), so "
        "ops on it recorded nothing and its gradient would miss every path through them; gradtape gives "
        "no partial gradient. Mark it before the forward pass: t.requires_grad_() (PyTorch), or trace it "
        "with t.trace(grads) / t.leaky_trace() (dfdx)"
    )


def _readonly(a: Array) -> Array:
    if a.__class__ is not np.ndarray and hasattr(a, "__cuda_array_interface__"):
        return a  # CuPy arrays have no read-only flag
    v = a.view()
    v.flags.writeable = False
    return v


def _untraced(what: str = "a gradient sum (a gradient with several contributions, or a shared buffer)") -> None:
    """Where a kernel trace is active (``gradtape.capture``'s compiled replays): ``what`` is
    computed in numpy, which the trace cannot take (by default a gradient sum of this store)."""
    if _trace.active is not None:
        _trace.refuse(f"computes in numpy: {what}")


class Gradients:
    """Gradients keyed by tensor id, filled by backward closures.

    Create one with :meth:`leaky` (keeps every gradient, including intermediates') and
    optionally mark the tensors whose gradients matter with :meth:`retain_leafs`; after
    ``backward()`` every other gradient is dropped (:meth:`drop_non_leafs`).

    Gradient arrays have the tensor's shape and dtype. A gradient that was never written
    (the tensor is not connected to the loss) is zero.
    """

    __slots__ = ("_data", "_graph", "_leafs", "_parts", "_shared", "_transient")

    def __init__(self) -> None:
        self._data: dict[int, Array] = {}
        self._shared: set[int] = set()
        self._leafs: set[int] | None = None
        # Gradients this store holds for one pass only: those another store merged into its
        # tape keeps (see GradientTape.execute); dropped when the store's next pass starts.
        self._transient: set[int] | None = None
        # gradients recorded as tensors by ``backward(create_graph=True)``, differentiable again
        self._graph: dict[int, Tensor[Any, Any]] | None = None
        # Ids of the untraced leaves that took part in a pass into this store (traced into
        # it, or noted by the tape): their gradients are complete, so asking for one is fine
        # even through the untraced original (``grads.get(x)`` after ``x.trace(grads)``).
        self._parts: set[int] = set()

    def _flags(self) -> tuple[Any, ...]:
        """Everything this store holds besides its arrays and recorded gradients, as copies:
        ``(shared, leafs, parts, transient)`` (``gradtape.capture``'s compiled replays keep a
        traced pass's and set it again with :meth:`_restore`)."""
        return (
            set(self._shared),
            None if self._leafs is None else set(self._leafs),
            set(self._parts),
            None if self._transient is None else set(self._transient),
        )

    def _restore(self, data: dict[int, Array], flags: tuple[Any, ...]) -> None:
        """Hold ``data`` (copied as a dict, the arrays themselves) with ``flags`` (from
        :meth:`_flags`) and no recorded gradients: the store as a first-order pass left it."""
        shared, leafs, parts, transient = flags
        self._data = dict(data)
        self._shared = set(shared)
        self._leafs = None if leafs is None else set(leafs)
        self._parts = set(parts)
        self._transient = None if transient is None else set(transient)
        self._graph = None

    def _renew(self, leafs: set[int] | None) -> None:
        """Empty this store as :meth:`__init__` left it, keeping ``leafs`` (a replay of
        :func:`gradtape.capture` refills the store a recorded pass made)."""
        self._data = {}
        self._shared = set()
        self._leafs = None if leafs is None else set(leafs)
        self._transient = None
        self._graph = None
        self._parts = set()

    @classmethod
    def leaky(cls) -> Gradients:
        """A store that keeps every gradient, intermediates' included, until dropped.

        "Leaky" as in dfdx: used for several passes it accumulates into the same buffers.
        """
        return cls()

    # ----- public accessors ---------------------------------------------------------------

    def __contains__(self, t: Tensorlike | int) -> bool:
        return (t if isinstance(t, int) else t.id) in self._data

    def __len__(self) -> int:
        return len(self._data)

    def ids(self) -> Iterator[int]:
        """Iterate over the ids of the tensors that have a gradient."""
        return iter(list(self._data))

    def get(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape]:
        """Return a copy of ``t``'s gradient as an untraced tensor of ``t``'s shape and dtype.

        A tensor with no gradient (not connected to what ``backward`` was called on) gets
        zeros, as in JAX; use :meth:`get_ref_checked` to tell the two apart. After
        ``backward(create_graph=True)`` it is the recorded gradient tensor itself (PyTorch's
        ``x.grad`` with a ``grad_fn``), which can be differentiated again; typed as untraced.
        """
        if self._graph is not None:
            recorded = self._graph.get(t.id)
            if recorded is not None:
                return recorded
        _check_taking_part("Gradients.get", t, self._parts)
        g = self._data.get(t.id)
        data = _arrays.zeros(t.shape, t.dtype, t.data) if g is None else _arrays.copy(g)
        out: Tensor[S, NoneTape] = t._like(data)
        return out

    def get_ref_checked(self, t: Tensorlike) -> Array | None:
        """Return a read-only view of ``t``'s gradient, or ``None`` if it has none."""
        g = self._data.get(t.id)
        return None if g is None else _readonly(g)

    def get_or_alloc_mut(self, t: Tensorlike) -> Array:
        """Return ``t``'s gradient buffer to update in place, allocating zeros if absent.

        Returns an array of ``t.shape`` and ``t.dtype``; a buffer shared with another
        gradient is copied first. ``t``'s gradient is then yours: :meth:`get` gives it for
        ``t`` even when ``t`` does not require grad.
        """
        self._parts.add(t.id)
        return self._mut(t.id, t.shape, t.dtype, getattr(t, "data", None))

    def mut_and_ref(self, l: Tensorlike, r: Tensorlike) -> tuple[Array, Array]:
        """Return ``(l's gradient to update in place, r's gradient read-only)``.

        ``l`` is the input whose gradient a backward closure accumulates, ``r`` the output
        whose gradient it reads. ``r``'s gradient is zeros if nothing wrote it.

        Raises:
            ValueError: ``l`` and ``r`` are the same tensor (a gradient cannot be updated
                from itself), as in dfdx.
        """
        if l.id == r.id:
            raise ValueError(f"mut_and_ref: l and r are the same tensor (id {l.id})")
        return self._mut(l.id, l.shape, l.dtype, getattr(l, "data", None)), self._ref(r)

    def muts_and_ref(self, l1: Tensorlike, l2: Tensorlike, r: Tensorlike) -> tuple[Array, Array, Array]:
        """Return ``(l1's gradient, l2's gradient, r's gradient read-only)`` (binary ops).

        Raises:
            ValueError: any two of ``l1``, ``l2``, ``r`` are the same tensor.
        """
        ids = (l1.id, l2.id, r.id)
        if len(set(ids)) != 3:
            raise ValueError(f"muts_and_ref: tensors must be distinct, got ids {ids}")
        return (
            self._mut(l1.id, l1.shape, l1.dtype, getattr(l1, "data", None)),
            self._mut(l2.id, l2.shape, l2.dtype, getattr(l2, "data", None)),
            self._ref(r),
        )

    def many_and_ref(self, ls: Iterable[Tensorlike], r: Tensorlike) -> tuple[list[Array], Array]:
        """Return ``([each l's gradient], r's gradient read-only)`` (ops with many inputs).

        Raises:
            ValueError: two of the tensors are the same tensor.
        """
        ls = list(ls)
        ids = [t.id for t in ls] + [r.id]
        if len(set(ids)) != len(ids):
            raise ValueError(f"many_and_ref: tensors must be distinct, got ids {ids}")
        return [self._mut(t.id, t.shape, t.dtype, getattr(t, "data", None)) for t in ls], self._ref(r)

    # ----- Burn's AutodiffBackend accessors (tensors in, tensors out) ------------------------

    def grad(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape] | None:
        """Return a copy of ``t``'s gradient as an untraced tensor, or ``None`` if the store has
        none (Burn's ``AutodiffBackend::grad``).

        Unlike :meth:`get`, which gives zeros for a tensor with no gradient, this tells "no
        gradient" apart from a zero gradient.

        Args:
            t: any tensor (traced or not); its gradient is looked up by ``t.id``, so the
                gradient of ``x`` is found through ``x.trace(grads)`` too.

        Returns:
            ``None``, or a new ``NoneTape`` leaf tensor (fresh id, ``t``'s device) of ``t``'s
            shape and dtype holding a copy of the gradient: writing into it does not change
            the store.
        """
        _check_taking_part("Gradients.grad", t, self._parts)
        g = self._data.get(t.id)
        if g is None:
            return None
        out: Tensor[S, NoneTape] = t._like(_arrays.copy(g))
        return out

    def _drop(self, i: int) -> None:
        """Forget tensor ``i``'s gradient (``grad_remove`` without building the result:
        ``Module.zero_grads`` calls it for every parameter, every step)."""
        if self._data.pop(i, None) is not None and self._shared:
            self._shared.discard(i)
        if self._graph is not None:
            self._graph.pop(i, None)

    def grad_remove(self, t: Tensor[S, Any]) -> Tensor[S, NoneTape] | None:
        """Remove ``t``'s gradient from the store and return it, or ``None`` if it had none
        (Burn's ``AutodiffBackend::grad_remove``: pops the gradient).

        Afterwards :meth:`grad` gives ``None`` and :meth:`get` zeros for ``t``, and the next
        backward pass starts ``t``'s gradient from zero (:meth:`gradtape.nn.Module.zero_grads`
        does the same for every parameter, every step).

        Returns:
            ``None``, or a new ``NoneTape`` leaf tensor (fresh id, ``t``'s device) of ``t``'s
            shape and dtype. Cheap: it holds the store's own buffer, not a copy (the store no
            longer holds it), except when the buffer was shared (copy-on-write: it may alias
            another stored gradient, or an array given to :meth:`grad_replace`); then it
            holds a copy, so writing into the result never changes another gradient.
        """
        i = t.id
        g = self._data.pop(i, None)
        if g is None:
            return None
        shared = self._shared
        if i in shared:
            shared.discard(i)
            g = _arrays.copy(g)
        out: Tensor[S, NoneTape] = t._like(g)
        return out

    def grad_replace(self, t: Tensor[S, Any], grad: Tensor[S, Any] | Array) -> None:
        """Set ``t``'s gradient to ``grad``, registering it if ``t`` had none (Burn's
        ``AutodiffBackend::grad_replace``).

        Args:
            t: the tensor whose gradient is set (looked up by ``t.id``).
            grad: a tensor (any tape: only its values are used) or a numpy array, of ``t``'s
                shape and dtype. It is not copied: the store copies it the first time anyone
                writes into it through this store (a backward pass accumulating onto it, an
                optimizer's in-place clip), so the caller's tensor or array is never changed.
                Writing into it yourself afterwards changes the stored gradient.

        Raises:
            ShapeError: ``grad``'s shape is not ``t``'s (the message names ``grad_replace`` and
                both shapes).
            DTypeError: ``grad``'s dtype is not ``t``'s (names ``grad_replace`` and both dtypes).
        """
        if isinstance(grad, _tensor_class()):
            arr: Array = grad.data
            what = "gradient tensor"
        else:
            arr = _arrays.as_array(grad)
            what = "gradient"
        if arr.shape != t.shape:
            raise ShapeError(f"grad_replace: {what} shape {arr.shape} != tensor shape {t.shape}")
        if arr.dtype != t.dtype:
            raise DTypeError(
                f"grad_replace: {what} dtype {arr.dtype} != tensor dtype {t.dtype} (tensor shape {t.shape})"
            )
        self._data[t.id] = arr
        self._shared.add(t.id)
        self._parts.add(t.id)

    def retain_leafs(self, ts: Iterable[Tensorlike | int]) -> None:
        """Mark ``ts`` (tensors or ids) as leafs and drop every other gradient now and after
        each ``backward()`` (dfdx's ``retain_leafs``)."""
        leafs = self._leafs if self._leafs is not None else set()
        leafs.update(t if isinstance(t, int) else t.id for t in ts)
        self._leafs = leafs
        self.drop_non_leafs()

    def retain_current_grads_as_leafs(self) -> None:
        """Mark every tensor that has a gradient now as a leaf."""
        self._leafs = set(self._data)

    def drop_non_leafs(self) -> None:
        """Drop the gradients of tensors not marked by :meth:`retain_leafs` (no-op if none were)."""
        leafs = self._leafs
        if leafs is not None:
            keep = self._transient or ()
            for k in [k for k in self._data if k not in leafs and k not in keep]:
                del self._data[k]
                self._shared.discard(k)

    def _end_transient(self) -> None:
        """Drop the gradients held for the previous pass only (a new pass starts)."""
        for k in self._transient or ():
            self._data.pop(k, None)
            self._shared.discard(k)
        self._transient = None

    def merge_from(self, other: Gradients) -> None:
        """Move ``other``'s buffers and leaf marks into ``self`` and empty ``other``.

        Where both hold a gradient for the same tensor, they are added.
        """
        for k, v in other._data.items():
            if k in self._data:
                self._data[k] = self._data[k] + v
                self._shared.discard(k)
            else:
                self._data[k] = v
                if k in other._shared:
                    self._shared.add(k)
        if other._leafs is not None:
            self._leafs = (self._leafs or set()) | other._leafs
        self._parts |= other._parts
        other._data, other._shared = {}, set()

    def __repr__(self) -> str:
        leafs = "all" if self._leafs is None else len(self._leafs)
        return f"Gradients({len(self._data)} buffers, leafs={leafs})"

    # ----- the fast paths built-in backward closures use ----------------------------------

    def _release(self, oid: int) -> Array | None:
        """The gradient of op output ``oid``, read by the op that produced it (its only reader,
        and the last: every consumer of ``oid`` ran before it). Unless the store keeps it (a
        leaky store, or ``oid`` retained as a leaf) the buffer leaves the store here, so
        backward frees intermediate gradients as it goes instead of all at the end."""
        leafs = self._leafs
        if leafs is None or oid in leafs:
            return self._data.get(oid)
        g = self._data.pop(oid, None)
        if g is not None and self._shared:
            self._shared.discard(oid)
        return g

    def wants(self, t_id: int, is_leaf: bool) -> bool:
        """Whether backward must compute the gradient of tensor ``t_id``: always for an op's
        output, and for a leaf unless leafs were marked (:meth:`retain_leafs`) without it.

        Backward closures of expensive ops (matmul) call this to skip, say, the gradient of
        a traced input batch that no one asked for."""
        leafs = self._leafs
        return not is_leaf or leafs is None or t_id in leafs

    def _ref(self, r: Tensorlike) -> Array:
        g = self._data.get(r.id)
        return _readonly(_arrays.zeros(r.shape, r.dtype, getattr(r, "data", None)) if g is None else g)

    def _mut(self, i: int, shape: tuple[int, ...], dtype: np.dtype[Any], like: Any = None) -> Array:
        """Gradient ``i``'s buffer to write, allocated as zeros in ``like``'s memory (the
        tensor's array: numpy or CuPy; ``None`` for the CPU) if absent, copied if shared."""
        g = self._data.get(i)
        if g is None:
            _untraced()
            g = self._data[i] = _arrays.zeros(shape, dtype, like)
        elif i in self._shared:
            _untraced()
            g = self._data[i] = _arrays.copy(g)
            self._shared.discard(i)
        return g

    def _accum(self, i: int, value: Array) -> None:
        """Add ``value`` (a fresh array this store may own) into ``i``'s gradient."""
        if value.__class__ is not np.ndarray:  # a numpy scalar from a 0-d computation, or a GPU array
            value = _arrays.as_array(value)
        data = self._data
        cur = data.get(i)
        if cur is None:
            data[i] = value
        elif i in self._shared:
            _untraced()
            _np_add(value, cur, value)
            data[i] = value
            self._shared.discard(i)
        else:
            _untraced()
            _np_add(cur, value, cur)

    def _take(self, i: int, value: Array, shared: bool) -> None:
        """Add ``value`` into ``i``'s gradient, storing the array itself when there is none
        (marked shared, copy-on-write, when ``shared``: another store or id holds it too)."""
        data = self._data
        cur = data.get(i)
        if cur is None:
            data[i] = value
            if shared:
                self._shared.add(i)
        elif i in self._shared:
            _untraced()
            data[i] = _arrays.as_array(cur + value)
            self._shared.discard(i)
        else:
            _untraced()
            _np_add(cur, value, cur)

    def _accum_alias(self, i: int, value: Array, src: int) -> None:
        """Add ``value``, which is (or views) gradient ``src``'s buffer, into ``i``'s gradient.

        Both ids are marked shared (copy before writing) while the store holds the buffer
        under both; ``src`` is not marked when it has already left the store (released by
        backward), so the shared set only ever names stored gradients.

        :meth:`_take`'s rule written out: add's and reshape's backward run this twice per op,
        and the call through ``_take`` cost 0.13 us per add on the 64-float tape chain."""
        data = self._data
        cur = data.get(i)
        if cur is None:
            data[i] = value
            self._shared.add(i)
            if src in data:
                self._shared.add(src)
        elif i in self._shared:
            _untraced()
            data[i] = _arrays.as_array(cur + value)
            self._shared.discard(i)
        else:
            _untraced()
            _np_add(cur, value, cur)

    def _fused(
        self,
        i: int,
        kernel: Callable[[Array, Array, Array], None],
        ufunc: Callable[[Array, Array], Array],
        a: Array,
        b: Array,
    ) -> None:
        """``grad[i] += ufunc(a, b)``, run as the fused in-place ``kernel(grad, a, b)`` when the
        buffer exists and is owned (``ufunc(a, b)`` must have the gradient's shape)."""
        cur = self._data.get(i)
        if cur is not None and i not in self._shared:
            kernel(cur, a, b)
        else:
            _untraced()
            self._take(i, _arrays.as_array(ufunc(a, b)), False)

    def _fused_args(
        self,
        i: int,
        kernel: Callable[..., None],
        fresh: Callable[..., Array] | None,
        s: Array,
        g: Array,
        args: tuple[Any, ...],
    ) -> None:
        """``grad[i] += f(s, g, *args)`` (``g``'s shape) for a declared elementwise op: the
        fused in-place ``kernel(grad, s, g, *args)`` on an owned buffer, else on a new one (or
        ``fresh(s, g, *args)`` where the op gives that one-pass form)."""
        data = self._data
        cur = data.get(i)
        if cur is not None and i not in self._shared:
            kernel(cur, s, g, *args)
            return
        if fresh is not None:
            value = fresh(s, g, *args)
        else:
            _untraced()
            value = _arrays.zeros(g.shape, g.dtype, g)
            kernel(value, s, g, *args)
        if cur is None:
            data[i] = value
        else:  # a shared buffer: copy-on-write
            _untraced()
            _np_add(value, cur, value)
            data[i] = value
            self._shared.discard(i)

    def _addmul_scratch(self, i: int, scratch: Array, b: Array) -> None:
        """``grad[i] += scratch * b`` where ``scratch`` is a temporary this call may overwrite
        (and keep as the gradient), saving an allocation when the gradient is absent."""
        data = self._data
        cur = data.get(i)
        if scratch.__class__ is not np.ndarray or scratch.shape != b.shape:
            self._accum(i, scratch * b)
        elif cur is None:
            _untraced()
            data[i] = _np_mul(scratch, b, scratch)
        elif i in self._shared:
            _untraced()
            _np_mul(scratch, b, scratch)
            data[i] = cur + scratch
            self._shared.discard(i)
        else:
            _untraced()
            _k.addmul(cur, scratch, b)

    def _accum_bcast(self, i: int, g: Array, shape: tuple[int, ...]) -> None:
        """``grad[i] += g`` broadcast to ``shape`` (the backward of a reduction)."""
        data = self._data
        cur = data.get(i)
        if cur is None:
            _untraced()
            data[i] = np.broadcast_to(g, shape).copy()
        elif i in self._shared:
            _untraced()
            data[i] = _arrays.as_array(cur + g)
            self._shared.discard(i)
        else:
            _untraced()
            _np_add(cur, g, cur)

    def _axpy(self, i: int, alpha: float, x: Array, alpha_c: Any = None) -> None:
        """``grad[i] += alpha * x`` (``x`` has the gradient's shape). ``alpha_c``, if given,
        is ``alpha`` as a 0-d array of the gradient's dtype (faster through numpy)."""
        data = self._data
        cur = data.get(i)
        if cur is None:
            _untraced()
            r = _np_mul(x, alpha if alpha_c is None else alpha_c)
            data[i] = r if r.__class__ is np.ndarray else _arrays.as_array(r)
        elif i in self._shared:
            _untraced()
            data[i] = _arrays.as_array(cur + _np_mul(x, alpha if alpha_c is None else alpha_c))
            self._shared.discard(i)
        else:
            _untraced()
            _k.axpy(cur, alpha, x)


_tp._Gradients = Gradients  # the store class the tape layer makes (gradtape.tape cannot import this module)
