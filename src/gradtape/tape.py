"""Tapes: where backward closures are recorded (dfdx's ``GradientTape`` / ``OwnedTape``).

A tensor carries a tape. :class:`NoneTape` records nothing and costs nothing, so
inference is tape-free. :class:`GradientTape` (also exported as ``OwnedTape``, dfdx's
name for the tape kind a tensor owns) stores backward closures ``op(grads) -> None``
added with :meth:`GradientTape.add_backward_op`, each stamped with a monotonically
increasing id (its time). :meth:`GradientTape.execute` sorts the closures by id, drops
duplicate ids, runs them newest first on the tape's :class:`~gradtape.gradients.Gradients`
and consumes the tape.

Python has no move semantics, so a traced tensor may be used many times and two
tensors may hold tapes that an op has merged. Tapes therefore form a union-find
forest: :meth:`GradientTape.append` moves ``other``'s closures and gradient buffers
into ``self`` and leaves ``other`` empty *and forwarding to* ``self``, so whichever of
the two tensors is used next, its closures land on the one merged tape.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from gradtape.errors import TapeError

if TYPE_CHECKING:
    from gradtape.gradients import Gradients

__all__ = ["BackwardOp", "GradientTape", "NoneTape", "OwnedTape", "Tape", "merge_tapes", "next_id"]

BackwardOp: TypeAlias = "Callable[[Gradients], None]"
"""A backward closure: reads the output's gradient from ``grads`` and accumulates the inputs'."""

_Entry: TypeAlias = "tuple[Any, ...]"
# A recorded op, ``(time, fn, *args)``: fn unpacks its own arguments from the entry, so
# running it is one plain call and recording it one tuple. Two kinds:
# - ``add_backward_op`` records a closure as ``(time, _run_closure, op)``, run as ``op(grads)``;
# - gradtape's hot ops record a module-level ``fn`` with its arguments instead of a closure,
#   with their output's id as the time, run as ``fn(grads, g, entry)`` where ``g`` is the
#   output's gradient, taken out of the store by :meth:`GradientTape.execute` itself (as
#   ``Gradients._release`` would) and skipped when there is none. One tuple per op rather than
#   a function object and a cell per captured variable: a long forward pass makes several
#   times fewer objects for the cyclic garbage collector to scan (measured on the 3,000-op
#   chain of benchmarks/workloads/tape.py: about 10% of its time), backward makes no argument
#   tuples, and releasing in the loop saves a call per op.


def _run_closure(grads: Gradients, entry: _Entry) -> None:
    """Marker of closure entries ``(time, _run_closure, op)`` (:meth:`GradientTape.execute`
    calls ``op(grads)`` for them); also runs one, for code that calls entries directly."""
    entry[2](grads)


next_id: Callable[[], int] = itertools.count(1).__next__
"""Return a fresh process-wide unique id; tensors and backward ops share this clock."""


class Tape:
    """Base of the two tape kinds a tensor may carry (``Tensor[S, T]``'s ``T``)."""

    __slots__ = ()

    #: Whether closures added to this tape are kept (dfdx's ``OWNS_TAPE``).
    OWNS_TAPE = False

    # Set on recording tapes only (see GradientTape); ops call it after checking that the
    # tape is not the NoneTape.
    _record: Callable[[_Entry], None]

    def add_backward_op(self, op: BackwardOp) -> None:
        """Record ``op`` to run during backward (see :meth:`GradientTape.add_backward_op`)."""
        raise NotImplementedError


class NoneTape(Tape):
    """The tape of an untraced tensor: records nothing, so forward passes cost no bookkeeping.

    ``add_backward_op`` ignores its closure; merging a ``NoneTape`` with any tape gives that
    tape. There is one instance: ``NoneTape()`` returns it, so ops test ``tape is NONE_TAPE``.
    """

    __slots__ = ()
    _instance: NoneTape | None = None

    def __new__(cls) -> NoneTape:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def add_backward_op(self, op: BackwardOp) -> None:
        """Discard ``op``: nothing is being traced."""

    def __repr__(self) -> str:
        return "NoneTape()"


NONE_TAPE = NoneTape()
"""The shared :class:`NoneTape` instance untraced tensors carry."""


class GradientTape(Tape):
    """Records backward closures and runs them, newest first, into a :class:`Gradients` store.

    Args:
        gradients: the store that :meth:`execute` fills and returns; defaults to
            ``Gradients.leaky()`` (keeps every gradient).

    ``OwnedTape`` is the same class under dfdx's name for "the tape a traced tensor owns".

    Example (dfdx's negate op, written by hand)::

        x, tape = t.split_tape()
        y = dev.tensor(-x.numpy())
        def backward(grads):
            gx, gy = grads.mut_and_ref(x, y)
            dev.axpy(gx, -1.0, gy)          # gx += -1 * gy
        tape.add_backward_op(backward)
        y = y.put_tape(tape)
    """

    __slots__ = ("_consumed", "_forward", "_gradients", "_merged", "_ops", "_record")

    OWNS_TAPE = True

    def __init__(self, gradients: Gradients | None = None) -> None:
        if gradients is None:
            from gradtape.gradients import Gradients

            gradients = Gradients.leaky()
        self._ops: list[_Entry] = []
        # Where ops put ``(id, fn, *args)``: this tape's list while it is live, the
        # root's recorder once merged into another tape, a raiser once executed. Ops call it
        # directly on their hot path, so recording costs one call and no checks.
        self._record: Callable[[_Entry], None] = self._ops.append
        self._forward: GradientTape | None = None
        self._consumed = False
        self._merged = False  # True once append() interleaved another tape's closures
        self._gradients: Gradients = gradients

    @property
    def gradients(self) -> Gradients:
        """The :class:`Gradients` store that :meth:`execute` fills (after a merge, the
        merged tape's store, whichever tape of the group is asked)."""
        return self._root()._gradients

    def _root(self) -> GradientTape:
        """Follow forward pointers to the tape that now holds this tape's closures."""
        root = self._forward
        if root is None:
            return self
        if root._forward is None:  # one hop: the common case after a merge
            return root
        root = self
        while root._forward is not None:
            root = root._forward
        node = self
        while node._forward is not None and node._forward is not root:  # path compression
            node._forward, node = root, node._forward
        return root

    def __len__(self) -> int:
        """Number of closures recorded and not yet run."""
        return len(self._root()._ops)

    @property
    def consumed(self) -> bool:
        """True once :meth:`execute` has run (the tape can then record nothing more)."""
        return self._root()._consumed

    def add_backward_op(self, op: BackwardOp) -> None:
        """Record ``op(grads) -> None`` to run during backward, stamped with a fresh id.

        The closure should capture tensor ids and the arrays its derivative needs, not the
        tensors themselves, so that memory is freed when it has run.

        Raises:
            TapeError: the tape was already consumed by :meth:`execute` / ``backward()``.
        """
        self._record((next_id(), _run_closure, op))

    def _push(self, entry: _Entry) -> None:
        """The recorder of a tape merged into this one: records on the group's root (found
        with path compression, so long merge chains cost no recursion)."""
        self._root()._record(entry)

    def append(self, other: GradientTape) -> None:
        """Move all of ``other``'s closures and gradient buffers into ``self``.

        ``other`` is left empty and forwards to ``self``: tensors still holding ``other``
        record onto ``self`` from now on. Appending a tape to itself (or to a tape it
        already forwards to) does nothing.

        Raises:
            TapeError: either tape was already consumed.
        """
        dst, src = self._root(), other._root()
        if dst is src:
            return
        if dst._consumed or src._consumed:
            raise TapeError("append: cannot merge a tape that was consumed by execute()/backward()")
        if len(src._ops) > len(dst._ops):
            dst._ops, src._ops = src._ops, dst._ops
            dst._record = dst._ops.append
        dst._ops.extend(src._ops)
        dst._merged = True
        src._ops = []
        src._record = dst._push
        if src._gradients is not dst._gradients:
            dst._gradients.merge_from(src._gradients)
        src._gradients = dst._gradients
        src._forward = dst

    def merge(self, other: GradientTape) -> GradientTape:
        """Append ``other`` into ``self`` and return the combined tape (dfdx's ``Merge``)."""
        self.append(other)
        return self._root()

    def execute(self) -> Gradients:
        """Run every recorded closure, newest first, and return the filled :class:`Gradients`.

        Closures are sorted by id (merged tapes interleave in time) and duplicate ids are
        run once. Each closure is released as soon as it has run, so the arrays it saved are
        freed during backward. The tape is consumed.

        Raises:
            TapeError: the tape was already executed.
        """
        tape = self._root()
        if tape._consumed:
            raise TapeError("execute: this tape was already executed (a tape runs once)")
        tape._consumed = True
        tape._record = _consumed_record
        ops, tape._ops = tape._ops, []
        grads = tape._gradients
        if tape._merged:
            ops.sort(key=_op_time)
        last = -1
        while ops:
            entry = ops.pop()
            time = entry[0]
            if time == last:
                continue
            last = time
            fn = entry[1]
            if fn is _run_closure:
                entry[2](grads)
                continue
            # an op entry: its time is its output's id; take that gradient (Gradients._release,
            # inlined: this loop runs once per op)
            leafs = grads._leafs
            if leafs is None or time in leafs:
                g = grads._data.get(time)
            else:
                g = grads._data.pop(time, None)
                if g is not None and grads._shared:
                    grads._shared.discard(time)
            if g is not None:
                fn(grads, g, entry)
                g = None  # free it now, not after the next entries (closures) have run
        return grads

    def __repr__(self) -> str:
        root = self._root()
        state = "consumed" if root._consumed else f"{len(root._ops)} ops"
        return f"GradientTape({state})"


OwnedTape: TypeAlias = GradientTape
"""dfdx's name for the tape a traced tensor owns: ``Tensor[S, OwnedTape]``."""


_op_time = operator.itemgetter(0)


def _consumed_record(entry: _Entry) -> None:
    raise TapeError(
        "add_backward_op: this tape was consumed by execute()/backward(); "
        "trace the inputs again (x.trace(grads) / x.leaky_trace()) to record a new pass"
    )


def merge_tapes(a: Tape, b: Tape) -> Tape:
    """Return the tape an op's output carries when its inputs carry ``a`` and ``b``.

    ``NoneTape`` merged with anything is the other tape; two owned tapes are merged with
    :meth:`GradientTape.append` (the result is their shared root).
    """
    if b is NONE_TAPE or b is a:
        return a
    if a is NONE_TAPE:
        return b
    if not isinstance(a, GradientTape) or not isinstance(b, GradientTape):
        return a if isinstance(a, GradientTape) else b
    ra, rb = a._root(), b._root()
    if ra is not rb:
        ra.append(rb)
    return ra
