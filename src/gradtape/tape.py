"""Tapes and the recording model: where backward closures are recorded, and when.

A tensor carries a tape. :class:`NoneTape` records nothing and costs nothing, so
inference is tape-free. :class:`GradientTape` (also exported as ``OwnedTape``, dfdx's
name for the tape kind a tensor owns) stores backward closures ``op(grads) -> None``
added with :meth:`GradientTape.add_backward_op`, each stamped with a monotonically
increasing id (its time). :meth:`GradientTape.execute` sorts the closures by id, drops
duplicate ids, runs them newest first on the tape's :class:`~gradtape.gradients.Gradients`
and consumes the tape. The same class is TensorFlow's context tape
(``with GradientTape() as tape: ...; tape.gradient(loss, sources)``).

This module is the core: it records, and imports no layer above it. It holds the tape kinds
and their record/append/merge, the entry format (``_Entry``), :func:`record` and the second
rules (:func:`register_diff`), grad-mode state and the recording rule (:func:`op_tape`).
Running a tape is the backward engine's (:func:`gradtape.engine.backprop`, which ``execute``
reaches through the slot ``_execute``); the TensorFlow methods of :class:`GradientTape`
(``__enter__``, ``watch``, ``gradient``, ...) keep their signatures and documentation here
and are implemented in :mod:`gradtape.context_tape` (slots ``_tf_*``). Those modules fill the
slots when they are imported, and importing gradtape imports them all.

Python has no move semantics, so a traced tensor may be used many times and two
tensors may hold tapes that an op has merged. Tapes therefore form a union-find
forest: :meth:`GradientTape.append` moves ``other``'s closures into ``self`` and leaves
``other`` empty *and forwarding to* ``self``, so whichever of the two tensors is used
next, its closures land on the one merged tape.

The recording model (one rule for every front end; CONTRIBUTING.md has the long form)
--------------------------------------------------------------------------------------
A tensor *takes part* in recording (requires grad) when it carries a tape (it was traced,
or an op recorded it), when it is a leaf that requires grad (a module parameter, or a tensor
made with ``requires_grad=True`` / ``requires_grad_()``: its tape is the :data:`PARAM` marker),
or when a context tape watches it (:data:`WATCHED`). Both markers are ``NoneTape`` instances:
they record nothing themselves. :func:`op_tape` gives the tape an op records on from its
inputs:

- no input takes part: ``NONE_TAPE``; the op records nothing and checks nothing else, so
  untraced inference pays for no bookkeeping;
- grad mode is off in this thread (:func:`gradtape.no_grad`): ``NONE_TAPE``;
- the tapes the inputs carry, merged (dfdx's rule), plus every active ``GradientTape``
  context that watches an input (contexts watch parameters automatically, as TensorFlow's
  tapes watch trainable variables); the output then carries a :class:`TapeSet`;
- an op whose only taking-part inputs are ``PARAM`` leaves: a fresh tape (PyTorch's rule:
  a tensor that requires grad records whenever grad mode is on), which joins a traced tape
  as soon as the output meets traced data. So a parameter that goes through any op before
  it meets the traced input (BatchNorm's reshaped weight, an encoder output computed before
  the decoder's input is traced, ``self.scale.exp()`` in a user's module) gets its full
  gradient, with no ``retaped`` in any layer. The tape notes each ``PARAM`` leaf it meets
  (``_leaves``), so ``Tensor.backward`` adds its gradient into ``.grad``.

The invariant: a tensor either gets its full gradient through every path to the loss, or
asking for its gradient raises. Backward computes a gradient for every tensor operand of a
recorded op (stores that do not keep one let backward skip the work,
:meth:`Gradients.wants`), but ``Gradients.get`` refuses it for a plain leaf that took no part
(it may have gone through ops that recorded nothing before it met recorded data).
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeAlias, TypeVar

import numpy as np

from gradtape.errors import TapeError

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "PARAM",
    "WATCHED",
    "BackwardOp",
    "GradientTape",
    "NoneTape",
    "OwnedTape",
    "ParamTape",
    "Tape",
    "TapeSet",
    "WatchedTape",
    "is_grad_enabled",
    "merge_tapes",
    "next_id",
    "op_tape",
    "owned_tape",
    "record",
]

BackwardOp: TypeAlias = "Callable[[Gradients], None]"
"""A backward closure: reads the output's gradient from ``grads`` and accumulates the inputs'."""

Array: TypeAlias = "np.ndarray[Any, Any]"
_Entry: TypeAlias = "tuple[Any, ...]"
# A recorded op, ``(time, fn, *args)``: fn unpacks its own arguments from the entry, so
# running it is one plain call and recording it one tuple. Two kinds:
# - ``add_backward_op`` records a closure as ``(time, _run_closure, op)``, run as ``op(grads)``;
# - gradtape's hot ops record a module-level ``fn`` with its arguments instead of a closure,
#   with their output's id as the time, run as ``fn(grads, g, entry)`` where ``g`` is the
#   output's gradient, taken out of the store by the backward loop itself (gradtape.engine, as
#   ``Gradients._release`` would) and skipped when there is none. One tuple per op rather than
#   a function object and a cell per captured variable: a long forward pass makes several
#   times fewer objects for the cyclic garbage collector to scan (measured on the 3,000-op
#   chain of benchmarks/workloads/tape.py: about 10% of its time), backward makes no argument
#   tuples, and releasing in the loop saves a call per op.


def _run_closure(grads: Gradients, entry: _Entry) -> None:
    """Marker of closure entries ``(time, _run_closure, op)`` (the backward loop calls
    ``op(grads)`` for them); also runs one, for code that calls entries directly."""
    entry[2](grads)


next_id: Callable[[], int] = itertools.count(1).__next__
"""Return a fresh process-wide unique id; tensors and backward ops share this clock."""


# ----- in-place writes, for backward's check (gradtape.engine) ---------------------------------

_writes: list[tuple[int, weakref.ref[Any]]] = []
"""``(time, buffer)`` of the latest in-place writes into tensors' memory (``__setitem__``,
``fill_``, ``zero_``, ``copy_``, optimizer steps): the buffer is the written array's root (the
array owning the memory), held weakly; ``time`` is from :func:`next_id`, the clock of the
recorded entries. Backward compares them with what its entries saved
(``gradtape.engine``). The most recent :data:`WRITES_KEPT` are kept."""

WRITES_KEPT = 4096
"""How many in-place writes :data:`_writes` remembers (a tape that lives across more writes
than this may miss the oldest)."""


def _buffer(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The array owning ``arr``'s memory (``arr`` itself, or the root of its chain of bases),
    a numpy or a GPU (CuPy) array."""
    while True:
        base = arr.base
        if base is None or not (isinstance(base, np.ndarray) or hasattr(base, "__cuda_array_interface__")):
            return arr
        arr = base


_recorder: Any = None
"""While :func:`gradtape.capture` records a call (its ``_Recorder``), else ``None``. Ops that
can be replayed hand it a kernel to rerun (:func:`gradtape.ops._util.replayable`); the
in-place writes below, backward and a tensor's host reads tell it the call cannot be replayed.
The core only holds it: one ``is not None`` test per replayable op when nothing is recorded."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def recorded_call(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator of the stateful calls a training step makes besides its ops (an optimizer's
    ``step`` and ``zero_grad``, a module's ``zero_grad`` and ``zero_grads``, a learning-rate
    scheduler's ``step``): while :func:`gradtape.capture` records a call, the call is recorded
    to run again, with the same arguments, at each replay (its Python reruns: it reads the
    gradients the replay left), and runs now. Otherwise it is ``fn`` itself, one test dearer."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        rec = _recorder
        if rec is not None and not rec.calling:
            result: _R = rec.call(functools.partial(fn, *args, **kwargs))
            return result
        return fn(*args, **kwargs)

    return wrapper


def note_writes(*arrays: np.ndarray[Any, Any]) -> None:
    """Log an in-place write into each of ``arrays`` (now, on the tensors' clock), so that a
    backward whose recorded entries saved one of those buffers before the write refuses to
    run instead of computing the gradient from the new values (PyTorch's version-counter
    check). Called by the in-place tensor methods and the optimizers' ``step``."""
    now = next_id()
    if _recorder is not None:  # (an optimizer step the recorder replays is not refused: see capturing)
        _recorder.refuse(
            "writes a tensor in place (a tensor's __setitem__, fill_, zero_, copy_, add_, ..., or an optimizer step)"
        )
    for arr in arrays:
        _writes.append((now, weakref.ref(_buffer(arr))))
    if len(_writes) > WRITES_KEPT:
        del _writes[: len(_writes) - WRITES_KEPT // 2]


# ----- per-thread recording state ------------------------------------------------------


class _State:
    """One thread's recording state: grad mode and the active context tapes (outermost first)."""

    __slots__ = ("__weakref__", "contexts", "grad_enabled")

    def __init__(self) -> None:
        self.grad_enabled = True
        self.contexts: list[GradientTape] = []

    def __del__(self) -> None:  # the thread ended: it no longer holds modes
        try:
            if not self.grad_enabled:
                _add_modes(-1)
            if self.contexts:
                _add_modes(-len(self.contexts))
        except Exception:
            pass


_tls = threading.local()
_lock = threading.Lock()  # guards _modes; nothing inside allocates containers

direct = True
"""True while no thread has grad mode off and no ``GradientTape`` context is active: a
tape a tensor carries is then the tape its ops record on, with nothing else to consult
(the first-order training path). Ops read it as ``gradtape.tape.direct``."""

_modes = 0  # threads with grad mode off + active contexts, over all threads

# What the recording rule needs of hooks and anomaly mode (gradtape.hooks; the hook registries
# and the checking backward loop live in gradtape.engine): two flags and one note. op_tape notes
# in _first_use when a forward pass first reads a parameter of _post_hooked (the ids with a
# post-accumulate hook), so that the hook fires when that parameter's gradient is final; with
# _anomaly on, _resolve checks every recorded op's inputs (_anomaly_forward).
_post_hooked: Collection[int] = frozenset()  # set by gradtape.engine: its post-hook registry
_first_use: dict[int, int] = {}  # parameter with a post hook -> the clock when a pass first read it
_anomaly = False  # anomaly mode (set by gradtape.hooks.set_detect_anomaly)

# ----- what the layers above hand down ------------------------------------------------------
# This module is the bottom of the core: gradtape.gradients, gradtape.engine, gradtape.hooks,
# gradtape.tensor and gradtape.context_tape import it, so it imports none of them
# (tests/test_layering.py). Each hands the tape what it needs when it is imported, into the
# slots below; importing any gradtape module imports the package first, and the package
# imports every layer. Reading a slot is one global read.
_Gradients: type[Gradients] | None = None  # set by gradtape.gradients
_Tensor: type[Tensor[Any, Any]] | None = None  # set by gradtape.tensor


def _not_loaded(module: str) -> RuntimeError:
    return RuntimeError(f"gradtape.tape: {module} is not loaded yet; import gradtape (it loads every layer)")


def _slot(module: str) -> Callable[..., Any]:
    """The placeholder of a slot ``module`` fills: raises until it is loaded."""

    def not_loaded(*args: Any) -> Any:
        raise _not_loaded(module)

    return not_loaded


# set by gradtape.hooks: anomaly mode's check of each recorded op's inputs
_anomaly_forward: Callable[[tuple[Tensor[Any, Any], ...]], None] = _slot("gradtape.hooks")
# set by gradtape.engine: GradientTape.execute() (gradtape.engine.backprop)
_execute: Callable[[GradientTape], Gradients] = _slot("gradtape.engine")
# set by gradtape.context_tape: TensorFlow's front end, the bodies of GradientTape's
# __enter__, __exit__, persistent, watch, watched_variables and gradient
_tf_enter: Callable[[GradientTape], None] = _slot("gradtape.context_tape")
_tf_exit: Callable[[GradientTape], None] = _slot("gradtape.context_tape")
_tf_persistent: Callable[[GradientTape], bool] = _slot("gradtape.context_tape")
_tf_watch: Callable[[GradientTape, Any], None] = _slot("gradtape.context_tape")
_tf_watched_variables: Callable[[GradientTape], tuple[Tensor[Any, Any], ...]] = _slot("gradtape.context_tape")
_tf_gradient: Callable[[GradientTape, Any, Any, Any, str], Any] = _slot("gradtape.context_tape")


def _new_gradients(leaky: bool = False) -> Gradients:
    """A fresh :class:`~gradtape.gradients.Gradients` store (``Gradients.leaky()`` if ``leaky``)."""
    cls = _Gradients
    if cls is None:
        raise _not_loaded("gradtape.gradients")
    return cls.leaky() if leaky else cls()


def _tensor_class() -> type[Tensor[Any, Any]]:
    """:class:`gradtape.tensor.Tensor`, for the layers below it (isinstance checks)."""
    cls = _Tensor
    if cls is None:
        raise _not_loaded("gradtape.tensor")
    return cls


def _state() -> _State:
    try:
        st: _State = _tls.state
    except AttributeError:
        st = _tls.state = _State()
    return st


def _add_modes(n: int) -> None:
    global _modes, direct
    with _lock:
        _modes += n
        direct = _modes == 0


def is_grad_enabled() -> bool:
    """Whether ops record in this thread (PyTorch's ``torch.is_grad_enabled``): ``False`` inside
    :class:`gradtape.no_grad` or ``set_grad_enabled(False)``. Thread-local."""
    return _state().grad_enabled


def _set_grad_enabled(mode: bool) -> bool:
    """Set this thread's grad mode; return the previous one (see :mod:`gradtape.grad_mode`)."""
    st = _state()
    prev = st.grad_enabled
    mode = bool(mode)
    if mode != prev:
        st.grad_enabled = mode
        _add_modes(-1 if mode else 1)
    return prev


# ----- tapes -------------------------------------------------------------------------------


class Tape:
    """Base of the tape kinds a tensor may carry (``Tensor[S, T]``'s ``T``)."""

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
    Two subclasses mark untraced tensors that still take part in recording: :class:`ParamTape`
    (module parameters) and :class:`WatchedTape` (tensors a context tape watches).
    """

    __slots__ = ()
    _instance: NoneTape | None = None

    def __new__(cls) -> NoneTape:
        inst: NoneTape | None = cls.__dict__.get("_instance")
        if inst is None:
            inst = super().__new__(cls)
            cls._instance = inst
        return inst

    def add_backward_op(self, op: BackwardOp) -> None:
        """Discard ``op``: nothing is being traced."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


NONE_TAPE = NoneTape()
"""The shared :class:`NoneTape` instance untraced tensors carry."""


class ParamTape(NoneTape):
    """The marker tape of a module parameter (TensorFlow's trainable variable, PyTorch's
    ``requires_grad`` leaf): untraced, so a parameter is a ``Tensor[S, NoneTape]``, but ops on it
    record whenever grad mode is on (see the module docstring): active ``GradientTape``
    contexts watch it automatically, and an op on such leaves alone records on a new tape.
    :class:`gradtape.nn.Module` puts it on every tensor attribute that is not a buffer, and
    ``requires_grad_()`` on any float leaf. One instance, :data:`PARAM`."""

    __slots__ = ()
    _instance: NoneTape | None = None


class WatchedTape(NoneTape):
    """The marker tape of a tensor given to :meth:`GradientTape.watch` (untraced, and recorded
    by the context tapes that watch its id). One instance, :data:`WATCHED`."""

    __slots__ = ()
    _instance: NoneTape | None = None


PARAM = ParamTape()
"""The tape of module parameters (see :class:`ParamTape`)."""
WATCHED = WatchedTape()
"""The tape of watched tensors (see :class:`WatchedTape`)."""


_NO_STORE: Any = None


class _Ctx:
    """What a :class:`GradientTape` used as TensorFlow's context tape holds."""

    __slots__ = ("persistent", "recording", "ref", "state", "watch_accessed", "watched", "watched_tensors")

    def __init__(self, persistent: bool, watch_accessed: bool) -> None:
        self.persistent = persistent
        self.watch_accessed = watch_accessed
        self.recording = False  # inside its ``with`` block
        self.state: _State | None = None  # the thread whose context stack holds it
        self.ref: weakref.ref[GradientTape] | None = None  # what TapeSets hold
        self.watched: set[int] = set()  # ids given to watch()
        self.watched_tensors: dict[int, Tensor[Any, Any]] = {}  # watched and accessed, in order


class GradientTape(Tape):
    """Records backward closures and runs them, newest first, into a :class:`Gradients` store.

    Two front ends share it (and its stores and tensor ids):

    - **dfdx's**: ``x.trace(grads)`` puts a new tape on ``x``; every op merges its inputs'
      tapes into its output's; ``loss.backward()`` (or :meth:`execute`) runs the closures.
      Hand-written ops take the tape with ``split_tape``, :meth:`add_backward_op` a closure
      and hand the tape on with ``put_tape``.
    - **TensorFlow's** (seed 004): ``with GradientTape() as tape:`` records every op on
      watched tensors inside the block; :meth:`watch` marks tensors, module parameters are
      watched automatically (``watch_accessed_variables=False`` turns that off), and
      :meth:`gradient` returns the gradients of a target w.r.t. a structure of sources.
      Tapes nest: an op records on every active tape that watches one of its inputs.

    Args:
        gradients: the store that :meth:`execute` fills and returns (dfdx); defaults to
            ``Gradients.leaky()`` (keeps every gradient).
        persistent: (context tapes) allow several :meth:`gradient` calls; the recorded ops
            are then kept until the tape is garbage collected.
        watch_accessed_variables: (context tapes) watch module parameters automatically
            when an op inside the block reads them.

    ``OwnedTape`` is the same class under dfdx's name for "the tape a traced tensor owns".

    Raises:
        TypeError: ``gradients`` is a bool (``GradientTape(True)``: write ``persistent=True``).

    Example (dfdx's negate op, written by hand)::

        x, tape = t.split_tape()
        y = dev.tensor(-x.numpy())
        def backward(grads):
            gx, gy = grads.mut_and_ref(x, y)
            dev.axpy(gx, -1.0, gy)          # gx += -1 * gy
        tape.add_backward_op(backward)
        y = y.put_tape(tape)

    Example (TensorFlow's)::

        with GradientTape() as tape:
            tape.watch(x)
            y = x * x
        tape.gradient(y, x)                  # 2 x
    """

    __slots__ = (
        "__weakref__",
        "_consumed",
        "_ctx",
        "_forward",
        "_gradients",
        "_leaky",
        "_leaves",
        "_lenient",
        "_merged",
        "_ops",
        "_record",
        "_retained",
        "_stores",
    )

    OWNS_TAPE = True
    _ctx: _Ctx | None

    def __init__(
        self,
        gradients: Gradients | None = None,
        *,
        persistent: bool = False,
        watch_accessed_variables: bool = True,
    ) -> None:
        if isinstance(gradients, bool):
            raise TypeError(
                "GradientTape: the first argument is the Gradients store; write GradientTape(persistent=True)"
            )
        if gradients is None:
            gradients = _new_gradients(leaky=True)
        self._init(gradients)
        if persistent or not watch_accessed_variables:
            self._ctx = _Ctx(bool(persistent), bool(watch_accessed_variables))

    @classmethod
    def _traced(cls, gradients: Gradients | None, tid: int | None = None) -> GradientTape:
        """The tape ``Tensor.trace`` makes for the tensor of id ``tid``: ``GradientTape(gradients)``
        without the argument checks, ``_init`` inlined (once per training step, on the MLP
        step's path). ``gradients=None`` (``leaky_trace``): the store is made when first asked
        for or at backward, a leaky one, so that merging many traced tapes makes no stores."""
        t: GradientTape = object.__new__(cls)
        ops: list[_Entry] = []
        t._ops = ops
        t._record = ops.append
        t._forward = t._stores = t._ctx = None
        t._consumed = t._merged = t._retained = t._lenient = False
        t._gradients = gradients
        t._leaky = gradients is None
        t._leaves = {} if tid is None else {tid: None}
        return t

    def _init(self, gradients: Gradients | None) -> None:
        self._ops: list[_Entry] = []
        # Where ops put ``(id, fn, *args)``: this tape's list while it is live, the
        # root's recorder once merged into another tape, a raiser once executed. Ops call it
        # directly on their hot path, so recording costs one call and no checks.
        self._record: Callable[[_Entry], None] = self._ops.append
        self._forward: GradientTape | None = None
        self._consumed = False
        # PyTorch's pass (see _pending): once run, ops on its tensors still compute (logging
        # ``output.mean().item()`` after ``backward()``) and record nothing; backward through
        # them raises, as PyTorch's freed graph does.
        self._lenient = False
        self._merged = False  # True once append() interleaved another tape's closures
        self._retained = False  # True once run with retain_graph (see gradtape.engine.backprop)
        self._gradients: Gradients | None = gradients
        # other stores merged in (see execute), by id(): merging stays O(1) however many
        self._stores: dict[int, Gradients] | None = None
        self._ctx = None  # set once used as a context (TensorFlow's front end)
        self._leaky = False  # a leaky_trace() tape: its store, made late, keeps every gradient
        # The leaves that take part in this tape's pass: module parameters and tensors made
        # with requires_grad (id -> the tensor, whose .grad backward fills) and traced tensors
        # (id -> None). Their gradients are complete (every op on them recorded); a plain
        # leaf's is not asked for (see Gradients.get).
        self._leaves: dict[int, Tensor[Any, Any] | None] = {}

    @classmethod
    def _pending(cls) -> GradientTape:
        """A tape for ops whose only taking-part inputs are leaves that require grad (module
        parameters, ``requires_grad=True`` tensors): no store of its own (it takes the store of
        a traced tape it is merged into; PyTorch's ``loss.backward()`` makes one that keeps the
        leaves' gradients)."""
        t = object.__new__(cls)
        t._init(_NO_STORE)
        t._lenient = True
        return t

    @property
    def gradients(self) -> Gradients:
        """The :class:`Gradients` store that :meth:`execute` fills (after a merge, the
        merged tape's store, whichever tape of the group is asked)."""
        root = self._root()
        if root._gradients is None:
            root._gradients = _new_gradients(leaky=True)
            root._leaky = False
        return root._gradients

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
        """True once :meth:`execute` (or a non-persistent :meth:`gradient`) has run (the tape
        can then record nothing more)."""
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
        """Move all of ``other``'s closures into ``self``.

        ``other`` is left empty and forwards to ``self``: tensors still holding ``other``
        record onto ``self`` from now on. Each tape keeps its own :class:`Gradients` store:
        when the merged tape runs, every store receives the gradients it keeps (so a model's
        ``alloc_grads()`` store and a ``leaky_trace()`` store both get theirs). Appending a
        tape to itself (or to a tape it already forwards to) does nothing.

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
        if len(src._leaves) > len(dst._leaves):
            dst._leaves, src._leaves = src._leaves, dst._leaves
        dst._leaves.update(src._leaves)
        src._leaves = {}
        dst._leaky = dst._leaky or src._leaky
        if src._gradients is not None or src._stores:
            for store in (src._gradients, *(src._stores.values() if src._stores else ())):
                if store is None or store is dst._gradients:
                    continue
                if dst._gradients is None:
                    dst._gradients = store
                    continue
                if dst._stores is None:
                    dst._stores = {}
                dst._stores[id(store)] = store
        src._gradients, src._stores = None, None
        src._forward = dst

    def merge(self, other: GradientTape) -> GradientTape:
        """Append ``other`` into ``self`` and return the combined tape (dfdx's ``Merge``)."""
        self.append(other)
        return self._root()

    def execute(self) -> Gradients:
        """Run every recorded closure, newest first, and return the filled :class:`Gradients`.

        Closures are sorted by id (merged tapes interleave in time) and duplicate ids are
        run once. Each closure is released as soon as it has run, so the arrays it saved are
        freed during backward. The tape is consumed. When tapes with different stores were
        merged, each store receives the gradients it keeps, and the first tape's is returned.

        Raises:
            TapeError: the tape was already executed.
        """
        return _execute(self)  # gradtape.engine.backprop(self, op="execute")

    def _consume(self) -> None:
        self._consumed = True
        self._record = _dropped_record if self._lenient else _consumed_record

    # ----- TensorFlow's front end (implemented in gradtape.context_tape) -----------------------

    def __enter__(self) -> GradientTape:
        """Start recording every op on watched tensors in this thread (TensorFlow's tape).

        Raises:
            TapeError: the tape is already recording, or was consumed.
        """
        _tf_enter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop recording (the recorded ops stay until :meth:`gradient` or garbage collection)."""
        _tf_exit(self)

    @property
    def persistent(self) -> bool:
        """Whether :meth:`gradient` may be called more than once."""
        return _tf_persistent(self)

    def watch(self, tensor: Any) -> None:
        """Ensure ``tensor`` is recorded: ops on it inside the block record on this tape and on
        every other active tape of the thread (so an outer tape records what an inner one
        watches, as in seed 004's nested example).

        Args:
            tensor: a :class:`~gradtape.tensor.Tensor`, or a list, tuple or dict of them
                (nested). An untraced tensor's tape becomes :data:`WATCHED` (still a
                ``NoneTape``); a traced one keeps its tape.

        Raises:
            TapeError: the tape is not recording (call ``watch`` inside its ``with`` block).
            TypeError: an element is not a tensor (the message names its type and place).
        """
        _tf_watch(self, tensor)

    def watched_variables(self) -> tuple[Tensor[Any, Any], ...]:
        """The tensors this tape watches: those given to :meth:`watch` and the module
        parameters ops read inside the block (with ``watch_accessed_variables``), in the order
        first watched."""
        return _tf_watched_variables(self)

    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: Literal["none", "zero"] = "none",
    ) -> Any:
        """Gradients of ``target`` w.r.t. ``sources`` from the ops recorded on this tape
        (TensorFlow's ``GradientTape.gradient``).

        Args:
            target: a tensor, or a list/tuple of tensors (their gradients add up); a
                non-scalar target is seeded with ones (the gradient of its sum) unless
                ``output_gradients`` says otherwise.
            sources: a tensor or a nested list/tuple/dict of tensors.
            output_gradients: ``None``, or the gradient seeding each target: one array or
                tensor of the target's shape (a list of them for a list of targets).
            unconnected_gradients: ``"none"`` (default) gives ``None`` for a source the target
                does not depend on through recorded ops, or a leaf this tape does not watch
                (neither given to :meth:`watch` nor a parameter an op read inside the block);
                ``"zero"`` gives zeros.

        Returns:
            ``sources``' structure with an untraced tensor (of the source's shape and dtype)
            or ``None`` in place of each source; inside other recording tapes, recorded
            tensors they can differentiate again.

        Raises:
            TapeError: a non-persistent tape is asked a second time, or from inside its own
                ``with`` block (TensorFlow's RuntimeError cases); the tape was executed.
            TypeError: ``target``, a source or an output gradient is not a tensor.
            ShapeError: an output gradient's shape is not its target's.
            ValueError: ``unconnected_gradients`` is neither ``"none"`` nor ``"zero"``.
        """
        return _tf_gradient(self, target, sources, output_gradients, unconnected_gradients)

    def __repr__(self) -> str:
        root = self._root()
        state = "consumed" if root._consumed else f"{len(root._ops)} ops"
        if self._ctx is not None and self._ctx.recording:
            state += ", recording"
        return f"GradientTape({state})"


OwnedTape: TypeAlias = GradientTape
"""dfdx's name for the tape a traced tensor owns: ``Tensor[S, OwnedTape]``."""


def _consumed_record(entry: _Entry) -> None:
    raise TapeError(
        f"{_user_call()}: an input's tape was consumed by execute()/backward() (its pass has run); "
        "trace the inputs again (x.trace(grads) / x.leaky_trace()) to record a new pass, or call "
        "backward(retain_graph=True) to keep using it"
    )


def _dropped_record(entry: _Entry) -> None:
    """The recorder of a PyTorch-style pass that has run: the op's value is computed, nothing
    is recorded, and the result keeps the consumed tape, so a ``backward()`` through it raises
    (PyTorch: "Trying to backward through the graph a second time") instead of giving a
    partial gradient."""


def _user_call() -> str:
    """The gradtape function the user called that tried to record (``mul``, ``linear``, a
    layer's ``forward``): the outermost gradtape frame on the stack, for error messages."""
    import sys

    frame = sys._getframe(1)
    name = "add_backward_op"
    package = __name__.rsplit(".", 1)[0]
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        code = frame.f_code.co_name
        if module.startswith(package) and module != __name__ and not module.endswith("._util"):
            if code == "forward" and "self" in frame.f_locals:  # a layer: name its class
                name = type(frame.f_locals["self"]).__name__
            elif code not in ("_call_forward", "wrapper"):
                name = code
        elif not module.startswith(package):
            break
        frame = frame.f_back  # type: ignore[assignment]
    return name


# ----- recording an op: its first and second rules (the engine runs them) ----------------------

DiffRule: TypeAlias = (
    "Callable[[Tensor[Any, Any], Any, Callable[[int, Array], Tensor[Any, Any]]], list[tuple[int, Tensor[Any, Any]]]]"
)
"""``rule(g, entry, rebuild) -> [(input id, gradient tensor), ...]``: an op's backward written
in gradtape's own ops, so that it records (and can be differentiated again). ``g`` is the
output's gradient as a tensor, ``entry`` the op's recorded entry, ``rebuild(id, array)`` the
tensor an array the forward saved stands for (same id, on the tape being differentiated)."""

_DIFF: dict[Any, DiffRule] = {}


Rebuild: TypeAlias = "Callable[[int, Array], Tensor[Any, Any]]"
"""``rebuild(id, array) -> tensor``: an array the forward saved, as the tensor it stands for on
the tape being differentiated (same id), so a second rule can differentiate through it
(:func:`gradtape.engine.rebuilder` makes them)."""


def record(
    tape: Tape,
    outputs: Tensor[Any, Any] | Sequence[Tensor[Any, Any]],
    backward: Callable[[Gradients, Any], None],
    differentiable: Callable[[Any, Rebuild], list[tuple[int, Any]]] | None,
) -> None:
    """Record an op on ``tape``: the one way a gradtape op that is not declared
    (:mod:`gradtape.ops.declare`) records its backward, first rule and second rule together.

    One output ``out`` (a tensor): ``backward(grads, g)`` accumulates the inputs' gradients
    from ``g``, the output's gradient as an array (taken out of the store by the backward loop;
    the rule does not run when the output got none). ``differentiable(g, rebuild)`` is the same
    derivative in gradtape ops: from ``g``, the output's gradient as a tensor, it returns
    ``[(input id, gradient tensor), ...]``; ``rebuild(id, array)`` turns an array the forward
    saved back into the tensor it stands for, so the result can be differentiated again.

    Several outputs (a sequence of tensors, as ``split_heads``, ``autograd.Function``):
    ``backward(grads, gs)`` gets one array or ``None`` per output and runs when any got one;
    ``differentiable(gs, rebuild)`` gets one gradient tensor per output (zeros for an output
    that got none).

    ``differentiable=None`` records an op with a first rule only: backward runs, and
    differentiating it again (``create_graph=True``) raises :class:`~gradtape.errors.TapeError`
    naming the op, never a silently missing term.

    The entry (see ``_Entry``): one output, ``(out.id, _op_backward, backward, differentiable)``;
    several, ``(time, _run_closure, run, (outputs' (id, shape, dtype), differentiable))``. The
    hot ops record their own entries with module-level rules instead of closures (the same
    format; their second rules registered with :func:`register_diff`).
    """
    if isinstance(outputs, (list, tuple)):
        metas = [(o.id, o.shape, o.data.dtype) for o in outputs]

        def run(grads: Gradients) -> None:
            gs = [grads._release(i) for i, _, _ in metas]
            if any(g is not None for g in gs):
                backward(grads, gs)

        run.__qualname__ = getattr(backward, "__qualname__", "run")
        tape._record((next_id(), _run_closure, run, (metas, differentiable)))
    else:
        out: Any = outputs
        tape._record((out.id, _op_backward, backward, differentiable))


def _op_backward(grads: Gradients, g: Array, entry: _Entry) -> None:
    """The first rule of a :func:`record` entry ``(out.id, _op_backward, backward, differentiable)``."""
    entry[2](grads, g)


def _d_op(g: Tensor[Any, Any], entry: _Entry, rebuild: Rebuild) -> list[tuple[int, Tensor[Any, Any]]]:
    second = entry[3]  # never None here: the loop refuses those entries, naming the op
    result: list[tuple[int, Tensor[Any, Any]]] = second(g, rebuild)
    return result


def register_diff(first_order: Any, rule: DiffRule) -> None:
    """Register the differentiable backward of the op whose entries run ``first_order`` (its
    module-level backward function): used only when gradients are themselves recorded
    (``grad(..., create_graph=True)``, a tape's ``gradient`` inside another recording tape)."""
    _DIFF[first_order] = rule


register_diff(_op_backward, _d_op)


class TapeSet(Tape):
    """The tape of a tensor that context tapes recorded: records each op on the active
    ``GradientTape`` contexts among ``contexts`` (held weakly: a tape nobody holds is freed,
    as in TensorFlow) and on ``owned``, the dfdx tape the tensor also carries, if any.

    Made by :func:`op_tape`; users meet it only as ``t.tape``. It supports what a hand-written
    op needs: ``add_backward_op`` (one closure, one time stamp, on every member).
    """

    __slots__ = ("contexts", "owned")

    OWNS_TAPE = True

    def __init__(self, owned: GradientTape | None, contexts: tuple[weakref.ref[GradientTape], ...]) -> None:
        self.owned = owned
        self.contexts = contexts

    def _record(self, entry: _Entry) -> None:
        if self.owned is not None:
            self.owned._record(entry)
        for r in self.contexts:
            c = r()
            if c is not None and c._ctx.recording:  # type: ignore[union-attr]
                c._record(entry)

    def add_backward_op(self, op: BackwardOp) -> None:
        """Record ``op(grads) -> None`` on every member tape, with one time stamp."""
        self._record((next_id(), _run_closure, op))

    def active(self) -> list[GradientTape]:
        """The member context tapes that are recording now."""
        return [c for r in self.contexts if (c := r()) is not None and c._ctx.recording]  # type: ignore[union-attr]

    def __repr__(self) -> str:
        return f"TapeSet(owned={self.owned!r}, contexts={len(self.active())} recording)"


def _merge_owned(a: Tape, b: GradientTape) -> GradientTape:
    """Union of two dfdx tapes (``a`` may be ``NONE_TAPE``): their shared root."""
    if a is NONE_TAPE or a is b:
        return b
    assert isinstance(a, GradientTape)
    ra, rb = a._root(), b._root()
    if ra is not rb:
        # a PyTorch-style pass that has run absorbs what meets it: the result computes, and a
        # backward through it raises (never a gradient that silently skips the run pass)
        if ra._consumed and ra._lenient:
            return ra
        if rb._consumed and rb._lenient:
            return rb
        ra.append(rb)
    return ra


def owned_tape(t: Tensor[Any, Any], op: str) -> GradientTape:
    """The tape that backward runs for a tensor: its own ``GradientTape`` (the owned tape of
    a :class:`TapeSet`).

    Raises:
        TapeError: the tensor has no tape (``op`` names the call), or only ``GradientTape``
            contexts recorded it (use ``tape.gradient``).
    """
    tape = t.tape
    if tape.__class__ is TapeSet:
        owned = tape.owned
        if owned is None:
            raise TapeError(
                f"{op}: tensor of shape {t.shape} was recorded only by GradientTape contexts; "
                "call tape.gradient(loss, sources) on the tape of the with block"
            )
        tape = owned
    if not isinstance(tape, GradientTape):
        raise TapeError(
            f"{op}: tensor of shape {t.shape} has no tape ({tape!r}): nothing recorded it; trace an input "
            "with x.trace(grads) or x.leaky_trace() (or use a module's parameters) before the forward pass"
        )
    return tape


def op_tape(*ts: Tensor[Any, Any]) -> Tape:
    """The tape an op whose tensor inputs are ``ts`` records on (see the module docstring):
    ``NONE_TAPE`` (record nothing), a ``GradientTape`` or a :class:`TapeSet`.

    The one recording rule of gradtape: every op (and ``split_tape``, for hand-written ops)
    asks it, so parameters, watched tensors, traced inputs, grad modes and nested context
    tapes behave the same in every op and every layer.
    """
    owned: Tape = NONE_TAPE
    params: list[Tensor[Any, Any]] | None = None
    for t in ts:
        tp = t.tape
        if tp is NONE_TAPE:
            continue
        if not direct:  # a grad mode or a context tape somewhere
            return _resolve(ts)
        if tp is PARAM:
            if params is None:
                params = [t]
            else:
                params.append(t)
            if _post_hooked and t.id in _post_hooked:
                _first_use.setdefault(t.id, next_id())
        elif tp.__class__ is GradientTape:
            if owned is not tp:
                owned = tp if owned is NONE_TAPE else _merge_owned(owned, tp)
        else:  # WATCHED, a TapeSet, a user's tape class
            return _resolve(ts)
    if params is not None:  # leaves that require grad: they record, on a new tape if none
        return _with_leaves(owned, params)
    return owned


def _with_leaves(owned: Tape, params: list[Tensor[Any, Any]]) -> GradientTape:
    """``owned`` (a new tape if ``NONE_TAPE``) noting ``params`` as leaves of its pass, whose
    ``.grad`` backward fills."""
    tape = GradientTape._pending() if owned is NONE_TAPE else owned._root()  # type: ignore[attr-defined]
    leaves = tape._leaves
    for p in params:
        leaves[p.id] = p
    return tape


def _resolve(ts: tuple[Tensor[Any, Any], ...]) -> Tape:
    """:func:`op_tape` when grad modes or context tapes are in play somewhere."""
    st = _state()
    if not st.grad_enabled:
        return NONE_TAPE
    owned: Tape = NONE_TAPE
    ctx: list[GradientTape] = []
    param = False
    for t in ts:
        tp = t.tape
        if tp is NONE_TAPE:
            continue
        if tp.__class__ is TapeSet:
            if tp.owned is not None:
                owned = _merge_owned(owned, tp.owned)
            for c in tp.active():
                if not any(c is x for x in ctx):
                    ctx.append(c)
        elif tp is PARAM:
            param = True
            if _post_hooked and t.id in _post_hooked:
                _first_use.setdefault(t.id, next_id())
        elif isinstance(tp, GradientTape):
            owned = _merge_owned(owned, tp)
    for c in st.contexts:
        cc = c._ctx
        if cc is None or not cc.recording or any(c is x for x in ctx):
            continue
        w = cc.watched
        if any(t.id in w or (param and cc.watch_accessed and t.tape is PARAM) for t in ts):
            ctx.append(c)
    if param:  # the parameters read by ops a context tape records are its watched variables
        for c in ctx:
            cc = c._ctx
            if cc is not None and cc.watch_accessed:
                for t in ts:
                    if t.tape is PARAM:
                        cc.watched_tensors.setdefault(t.id, t)
    if param:
        owned = _with_leaves(owned, [t for t in ts if t.tape is PARAM])
    if _anomaly and (ctx or owned is not NONE_TAPE):
        _anomaly_forward(ts)
    if ctx:
        refs = [c._ctx.ref for c in ctx if c._ctx is not None]
        return TapeSet(owned if isinstance(owned, GradientTape) else None, tuple(r for r in refs if r is not None))
    return owned


def merge_tapes(a: Tape, b: Tape) -> Tape:
    """Return the tape an output carries when its inputs carry ``a`` and ``b``, ignoring
    grad modes, context tapes and parameters (those need the tensors: :func:`op_tape`).

    ``NoneTape`` (and the marker tapes) merged with anything is the other tape; two owned
    tapes are merged with :meth:`GradientTape.append` (the result is their shared root).
    """
    if b is a or not b.OWNS_TAPE:
        return a
    if not a.OWNS_TAPE:
        return b
    if isinstance(a, GradientTape) and isinstance(b, GradientTape):
        return _merge_owned(a, b)
    return a if isinstance(a, GradientTape) else b
