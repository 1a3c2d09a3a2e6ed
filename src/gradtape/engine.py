"""The backward engine: one entry point, :func:`backprop`, runs a tape's recorded entries.

The core (:mod:`gradtape.tape`) records; this module differentiates. Every front end calls
:func:`backprop`: dfdx's ``tape.execute()`` (through the slot ``gradtape.tape._execute``, which
this module fills when it is imported), PyTorch's ``Tensor.backward`` and
``gradtape.autograd.grad``, TensorFlow's ``GradientTape.gradient``
(:mod:`gradtape.context_tape`) and activation checkpointing (:mod:`gradtape.checkpointing`).

Two passes behind the one entry point:

- **first order** (``create_graph=False``): gradients are arrays in a
  :class:`~gradtape.gradients.Gradients` store. :func:`_run_entries` runs the entries newest
  first, each once, releasing each op's output gradient as it goes; it is the hot loop of
  training. When tapes with different stores were merged, or a retained pass runs again, the
  pass runs into a working store whose results each store then takes (:func:`_run_into_stores`);
  ``to_grad`` also adds each parameter's gradient into its ``.grad`` (:func:`_deposit`).
- **differentiable** (``create_graph=True``): each entry's second rule (``gradtape.tape.record``,
  :func:`gradtape.tape.register_diff`) computes the gradients with gradtape ops, so they are
  recorded and can be differentiated again (:func:`_run_entries_diff`). A saved array becomes the
  tensor it stands for through one :func:`rebuilder`: on the tape being differentiated
  (PyTorch's ``create_graph``) or on the context tapes recording around the pass (TensorFlow's
  nested tapes).

Hooks and anomaly mode plug in from above (:mod:`gradtape.hooks`): their registries live here
(:data:`_tensor_hooks`, :data:`_post_hooks`) and the checking loop they need goes into the slot
:data:`_run_entries_checked`; the engine takes it only while a hook is registered or anomaly
mode is on, so the plain loop does no per-entry work for them.

The stores' side of ``.grad``: :func:`grad_array_mut` and :func:`clear_grad` (for optimizers and
``zero_grad``, which must not write into an array a store also holds).
"""

from __future__ import annotations

import contextlib
import functools
import operator
import types
from collections.abc import Callable, Container, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import _trace
from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.gradients import Gradients, _untraced
from gradtape.tape import (
    _DIFF,
    NONE_TAPE,
    WATCHED,
    GradientTape,
    Rebuild,
    Tape,
    TapeSet,
    _Entry,
    _op_backward,
    _run_closure,
    _tensor_class,
    next_id,
)

if TYPE_CHECKING:
    from gradtape.tensor import Tensor

__all__ = [
    "backprop",
    "clear_grad",
    "entry_op",
    "grad_array_mut",
    "rebuilder",
    "replay_first_order",
    "saved_arrays",
    "seed_array",
]

Array = np.ndarray[Any, Any]
Runner = Callable[[list[_Entry], Gradients, bool], None]
"""A backward loop: ``run(entries, store, keep)`` (see :func:`_run_entries`)."""

# ----- what gradtape.hooks plugs in ---------------------------------------------------------------
# The hook registries, keyed by tensor id (gradtape.hooks fills them); backward takes the checking
# loop only while one is non-empty or anomaly mode (gradtape.tape._anomaly) is on.
_tensor_hooks: dict[int, dict[int, Any]] = {}
_post_hooks: dict[int, dict[int, Any]] = {}
# the recording rule notes when a pass first reads a parameter with a post hook: the core reads
# this registry's keys (it cannot import this module)
_tp._post_hooked = _post_hooks

# set by gradtape.hooks: the backward loop that fires hooks and checks for anomalies, and the
# store a pass runs into in anomaly mode
_run_entries_checked: Runner = _tp._slot("gradtape.hooks")
_working_store: Callable[[], Gradients] = _tp._slot("gradtape.hooks")

_op_time = operator.itemgetter(0)


# ----- the entry point ------------------------------------------------------------------------------


@overload
def backprop(
    tape: GradientTape,
    seeds: Sequence[tuple[Tensor[Any, Any], Any]] = (),
    *,
    op: str,
    retain: bool = False,
    into: Gradients | None = None,
    to_grad: bool = False,
    fire_hooks: bool = True,
    create_graph: Literal[False] = False,
) -> Gradients: ...
@overload
def backprop(
    tape: GradientTape,
    seeds: Sequence[tuple[Tensor[Any, Any], Any]],
    *,
    op: str,
    retain: bool = False,
    create_graph: Literal[True],
    keep: Container[int],
    record_on: Sequence[GradientTape] | None = None,
) -> dict[int, Tensor[Any, Any]]: ...
def backprop(
    tape: GradientTape,
    seeds: Sequence[tuple[Tensor[Any, Any], Any]] = (),
    *,
    op: str,
    retain: bool = False,
    into: Gradients | None = None,
    to_grad: bool = False,
    fire_hooks: bool = True,
    create_graph: bool = False,
    keep: Container[int] | None = None,
    record_on: Sequence[GradientTape] | None = None,
) -> Gradients | dict[int, Tensor[Any, Any]]:
    """Backpropagate through ``tape``: seed the gradient of each ``(target, seed)`` of ``seeds``,
    run every recorded entry newest first (sorted by time when tapes were merged, each time
    once), and return the gradients.

    Args:
        tape: any tape of a merged group (the group's root runs).
        seeds: ``(target tensor, seed)`` pairs; a seed is an array of the target's shape and
            dtype (first order) or an array or tensor (``create_graph``: a tensor seed stays one,
            so the result is a function of it too). Empty for dfdx's ``execute()`` and for a
            store already seeded (checkpointing's recomputation).
        op: the call, for error messages (``"backward"``, ``"grad"``, ``"GradientTape.gradient"``).
        retain: keep the entries and do not consume the tape, so the same forward pass can be
            differentiated again (PyTorch's ``retain_graph``; a persistent context tape).
        into: (first order) run into this store instead of the tape's own stores, which are left
            alone (functional ``grad``, ``GradientTape.gradient``, checkpointing).
        to_grad: (first order) also add each taking-part leaf's gradient into its ``.grad``
            (PyTorch's ``loss.backward()``).
        fire_hooks: (first order) ``False``: a pass inside another pass (checkpointing's
            recomputation), whose hooks the outer pass fires; anomaly checks still run when no
            hook is registered.
        create_graph: compute the gradients with the ops' second rules, as recorded tensors that
            can be differentiated again; the result is then ``{id: gradient tensor}`` for the ids
            in ``keep`` (and whatever else the pass reached).
        keep: (``create_graph``) the ids whose gradients are wanted (a set, or any container).
        record_on: (``create_graph``) where the gradients are recorded: ``None``, on ``tape``
            itself (PyTorch's ``create_graph``); else on these context tapes (TensorFlow's
            ``gradient`` inside other recording tapes). See :func:`rebuilder`.

    Returns:
        First order: the filled store (``into``, else the tape's; when tapes with different
        stores were merged, each store receives the gradients it keeps and the first is
        returned). ``create_graph``: the gradient tensors by id.

    A tape with no store (ops on parameters or ``requires_grad`` tensors only, PyTorch's
    spelling) runs into a new one that keeps the gradients of the leaves that take part; a
    ``leaky_trace()`` tape into a new leaky one.

    Raises:
        TapeError: the tape was already run (``op`` names the call); (``create_graph``) an entry
            the gradient flows into has no second rule (the message names the op).
    """
    if create_graph:
        if _tp._recorder is not None:
            _tp._recorder.refuse(f"runs a differentiable backward ({op}, create_graph): it is not replayed")
        if keep is None:
            raise TypeError(f"{op}: backprop(create_graph=True) needs keep=, the ids whose gradients are wanted")
        return _differentiable(tape, seeds, op, retain, keep, record_on)
    return _first_order(tape, seeds, op, retain, into, to_grad, fire_hooks)


def _execute(tape: GradientTape) -> Gradients:
    """``GradientTape.execute()`` (the core's slot ``gradtape.tape._execute``)."""
    return backprop(tape, op="execute")


_tp._execute = _execute


def _runner(fire_hooks: bool) -> Runner:
    """The loop a pass runs: :func:`_run_entries`, or while a hook is registered or anomaly mode
    is on the checking loop of :mod:`gradtape.hooks`. ``fire_hooks=False`` (a pass nested in
    another, whose loop fires the hooks) keeps the plain loop whenever a hook is registered."""
    hooked = bool(_tensor_hooks or _post_hooks)
    if not (hooked or _tp._anomaly) or (hooked and not fire_hooks):
        return _run_entries
    return _run_entries_checked


def _check_writes(ops: list[_Entry], op: str) -> None:
    """Refuse a backward whose entries saved an array that was written in place after they
    were recorded (``gradtape.tape.note_writes``: a tensor's ``__setitem__``/``fill_``/
    ``zero_``/``copy_``, an optimizer step): the gradient would silently be computed from the
    new values. ``ops`` sorted by time. Free unless a write happened since the first entry."""
    writes = _tp._writes
    if not writes or not ops or writes[-1][0] < ops[0][0]:
        return
    first = ops[0][0]
    recent = [(t, b) for t, ref in writes if t > first and (b := ref()) is not None]
    if not recent:
        return
    for entry in ops:
        later = [b for t, b in recent if t > entry[0]]
        if not later:
            break  # entries are in time order: none later was recorded before a write
        for arr in _saved_arrays(entry[1:], 4, set()):
            buf = _tp._buffer(arr)
            if any(buf is b for b in later):
                fn = entry[2] if entry[1] is _tp._run_closure else entry[1]
                name = getattr(fn, "__qualname__", type(fn).__name__)
                raise TapeError(
                    f"{op}: an array of shape {arr.shape} ({arr.dtype}) that the recorded op {name} saved for this "
                    "backward was written in place after the op ran (a tensor's __setitem__/fill_/zero_/copy_, or "
                    "an optimizer step, between the forward pass and this backward): the gradient would be "
                    "computed from the new values. Run backward before the write (optimizer.step() after "
                    "loss.backward()), write into a clone(), or redo the forward pass after the write (PyTorch "
                    "raises 'a variable needed for gradient computation has been modified by an inplace operation')"
                )


def _saved_arrays(obj: Any, depth: int, seen: set[int]) -> Iterator[np.ndarray[Any, Any]]:
    """The arrays (numpy's, or the GPU's: missing those switched the check off on the ``Cuda``
    device, a silently wrong gradient) an entry's saved state reaches (tuples, lists, dicts,
    tensors, closure cells, bound methods' objects, objects' attributes), ``depth`` levels deep."""
    tensor_cls = _tensor_class()
    for leaf in _saved(obj, depth, seen):
        if leaf.__class__ is not int:
            yield leaf.data if isinstance(leaf, tensor_cls) else leaf


def _saved(obj: Any, depth: int, seen: set[int]) -> Iterator[Any]:
    """What :func:`_saved_arrays` walks, yielding arrays, tensors and ints (the walk is
    shared with :func:`saved_ids`)."""
    if isinstance(obj, np.ndarray) or _arrays.on_gpu(obj):
        yield obj
        return
    if obj.__class__ is int:
        yield obj
        return
    if depth == 0 or id(obj) in seen or obj is None or isinstance(obj, (int, float, str, type)):
        return
    seen.add(id(obj))
    tensor_cls = _tensor_class()
    items: Any = ()
    if isinstance(obj, (tuple, list)):
        items = obj
    elif isinstance(obj, dict):
        items = obj.values()
    elif isinstance(obj, tensor_cls):
        yield obj
        return
    elif isinstance(obj, types.FunctionType):
        items = [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
    elif isinstance(obj, types.MethodType):
        items = (obj.__self__,)
    elif isinstance(obj, functools.partial):
        items = (*obj.args, *obj.keywords.values())
    elif hasattr(obj, "__dict__") and not isinstance(obj, types.ModuleType):
        items = vars(obj).values()
    for item in items:
        yield from _saved(item, depth - 1, seen)


def saved_ids(entry: _Entry, depth: int = 8) -> set[int]:
    """Every int an entry's saved state reaches and the ids of the tensors it holds (the walk
    of :func:`saved_arrays`): a superset of the ids of the tensors its rules touch, for
    :func:`gradtape.capture`'s check that a pass reaches no tensor with a hook."""
    tensor_cls = _tensor_class()
    found: set[int] = set()
    for leaf in _saved(entry, depth, set()):
        if leaf.__class__ is int:
            found.add(leaf)
        elif isinstance(leaf, tensor_cls):
            found.add(leaf.id)
    return found


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:  # an empty cell (a variable assigned after the closure was made)
        return False
    return True


def saved_arrays(entry: _Entry, depth: int = 8, skip: set[int] | None = None) -> Iterator[np.ndarray[Any, Any]]:
    """The arrays a recorded entry's rules can read (its arguments, its closures' cells, the
    objects they hold, ``depth`` levels deep), numpy's or a GPU's: what
    :func:`gradtape.capture` checks a replay refreshes before it runs the entry again. Objects
    whose ids are in ``skip`` are not entered."""
    return _saved_arrays(entry[1:], depth, set(skip or ()))


def entry_op(entry: _Entry) -> str:
    """The public op that recorded ``entry`` (for messages)."""
    return _entry_op(entry)


def _into_pass(run: Runner, ops: list[_Entry], into: Gradients, seeds: Sequence[tuple[Any, Any]], retain: bool) -> None:
    """A functional pass: the seeds into ``into``, then the entries."""
    for t, g in seeds:
        into._accum(t.id, g)
    run(ops, into, retain)


@contextlib.contextmanager
def _recorded_pass(
    recorder: Any,
    op: str,
    ops: list[_Entry],
    grads: Gradients,
    fresh: bool,
    leaves: dict[int, Tensor[Any, Any] | None],
    seeds: Sequence[tuple[Tensor[Any, Any], Any]],
    to_grad: bool,
) -> Iterator[None]:
    """A first-order pass :func:`gradtape.capture` records (``recorder.backward``: it runs
    again at each replay) before the ``with`` block runs it. While it runs, the recorder notes
    nothing: what the entries do (a checkpoint's recomputation and its nested pass, a
    closure's ops) is part of them, and a replay runs them again as they are."""
    hooked = set(_tensor_hooks) | set(_post_hooks)
    recorder.backward(op, list(ops), grads, fresh, dict(leaves), seeds, to_grad, hooked)
    was, recorder.calling = recorder.calling, True
    try:
        yield
    finally:
        recorder.calling = was


def gradient_copy(op: str, t: Tensor[Any, Any], grads: Gradients) -> Tensor[Any, Any]:
    """A new untraced tensor holding a copy of ``t``'s gradient in ``grads``, in ``t``'s dtype
    (what a functional pass returns); while :func:`gradtape.capture` records, each replay copies
    that replay's gradient into it."""
    out: Tensor[Any, Any] = t._like(_arrays.copy(grads._data[t.id], t.dtype))
    recorder = _tp._recorder
    if recorder is not None:
        recorder.kernel(op, out.data, _copy_gradient, (grads, t.id), (), False, True)
    return out


def _copy_gradient(out: np.ndarray[Any, Any], grads: Gradients, tid: int) -> None:
    np.copyto(out, grads._data[tid], casting="unsafe")


def replay_first_order(
    ops: list[_Entry],
    grads: Gradients,
    seeds: Sequence[tuple[int, Array]],
    leaves: dict[int, Tensor[Any, Any] | None],
    to_grad: bool,
) -> None:
    """A first-order pass again, for :func:`gradtape.capture`'s replays: what
    :func:`_first_order` does on its common path (one store, run once) with entries it
    recorded, into ``grads`` (the same store object; the caller resets a store the recorded
    pass had made afresh), seeded with ``(id, array)`` pairs. ``ops`` is not consumed. No
    checks: the recorded pass made them."""
    grads._parts.update(leaves)
    if _trace.active is not None:
        if not all(bool(np.all(g == 1)) for _, g in seeds):
            _trace.refuse("runs a backward seeded with a gradient array (gradient=...)")
        why = _untraceable(ops)
        if why is not None:
            _trace.refuse(why)
    _one_store_pass(_run_entries, ops, grads, [(tid, g.copy()) for tid, g in seeds], leaves, to_grad, True)


def _untraceable(ops: list[_Entry]) -> str | None:
    """Why a kernel trace of these entries' rules cannot hold (``gradtape.capture``'s compiled
    replays), or ``None``: every rule must be declared traceable (its arithmetic in noted
    kernels: :func:`gradtape.devices.kernels._trace.traceable`, or a :func:`record` backward
    marked ``traceable``); a hand-written closure (``add_backward_op``) is not."""
    for entry in ops:
        fn = entry[1]
        if fn is _run_closure:
            return "runs a hand-written backward closure (add_backward_op), which compiled replays run as Python"
        rule = entry[2] if fn is _op_backward else fn
        if rule not in _trace.TRACEABLE and not getattr(rule, "traceable", False):
            return f"runs the backward of {_entry_op(entry)}, which compiled replays do not cover yet"
    return None


def _one_store_pass(
    run: Runner,
    ops: list[_Entry],
    grads: Gradients,
    seeds: Sequence[tuple[int, Array]],
    leaves: dict[int, Tensor[Any, Any] | None],
    to_grad: bool,
    keep: bool,
) -> None:
    """The common first-order pass (one store, run once): seed ``grads`` with the ``(id,
    array)`` pairs (arrays it may own), run the entries (``keep``: leave ``ops`` as it is), and
    with ``to_grad`` add the leaves' gradients into their ``.grad``."""
    for tid, g in seeds:
        grads._accum(tid, g)
    run(ops, grads, keep)
    if to_grad:
        _deposit(leaves, grads, True)


def _first_order(
    tape: GradientTape,
    seeds: Sequence[tuple[Tensor[Any, Any], Any]],
    op: str,
    retain: bool,
    into: Gradients | None,
    to_grad: bool,
    fire_hooks: bool,
) -> Gradients:
    """:func:`backprop` with arrays into stores."""
    tape = tape._root()
    if tape._consumed:
        raise TapeError(
            f"{op}: this tape was already run by an earlier backward()/execute()/grad(); a tape runs "
            "once (pass retain_graph=True to run it again; otherwise trace the inputs and redo the forward pass)"
        )
    rerun = tape._retained  # run before: the stores hold the last run's gradients
    fresh = tape._gradients is None  # this pass makes the tape's store (PyTorch's spelling)
    leaves = tape._leaves
    ops = sorted(tape._ops, key=_op_time) if tape._merged else tape._ops
    _check_writes(ops, op)  # before anything is consumed, so a refused backward leaves the tape as it was
    if retain:
        tape._retained = True
    else:
        tape._consume()
        tape._ops = []
        tape._leaves = {}
    run = _runner(fire_hooks)
    recorder = _tp._recorder
    if into is not None:  # a functional pass (torch.autograd.grad, GradientTape.gradient)
        if recorder is None:
            _into_pass(run, ops, into, seeds, retain)
        else:
            with _recorded_pass(recorder, op, ops, into, True, leaves, seeds, False):
                _into_pass(run, ops, into, seeds, retain)
        return into
    stores = tape._stores
    grads = tape._gradients
    if grads is None:
        grads = Gradients()
        if not tape._leaky:  # PyTorch's spelling: keep the leaves' gradients only
            grads._leafs = set(leaves)
        tape._gradients = grads
    elif tape._leaky:  # a leaky_trace() tape merged into a pass with a store: its leaky store too
        if stores is None:
            stores = tape._stores = {}
        leaky = Gradients.leaky()
        stores[id(leaky)] = leaky
    tape._leaky = False
    grads._parts.update(leaves)
    if (
        not stores and not retain and not rerun and not _tp._anomaly and (not to_grad or _store_fits(grads, leaves))
    ):  # one store, run once, and (for .grad) keeping the leaves' gradients and no earlier ones
        if grads._transient:
            grads._end_transient()
        pairs = [(t.id, g) for t, g in seeds]
        if recorder is None:
            _one_store_pass(run, ops, grads, pairs, leaves, to_grad, False)
            return grads
        with _recorded_pass(recorder, op, ops, grads, fresh, leaves, seeds, to_grad):
            _one_store_pass(run, ops, grads, pairs, leaves, to_grad, False)
        return grads
    if recorder is not None:
        recorder.refuse(f"runs {op} into several stores, again (retain_graph) or in anomaly mode: it is not replayed")
    # several stores, or a pass run more than once: run into a fresh working store, so an
    # intermediate's gradient kept from an earlier run is not fed into this one, and add
    # the results to what each store keeps (leafs accumulate, as PyTorch's .grad)
    all_stores = [grads, *(stores.values() if stores else ())]
    for s in all_stores[1:]:
        s._parts.update(leaves)
    first, work = _run_into_stores(ops, all_stores, seeds, retain, run, extra=leaves if to_grad else None)
    if to_grad:
        _deposit(leaves, work, False)
    return first


def _differentiable(
    tape: GradientTape,
    seeds: Sequence[tuple[Tensor[Any, Any], Any]],
    op: str,
    retain: bool,
    keep: Container[int],
    record_on: Sequence[GradientTape] | None,
) -> dict[int, Tensor[Any, Any]]:
    """:func:`backprop` with the ops' second rules, into gradient tensors (``create_graph``)."""
    if not seeds:
        raise TypeError(f"{op}: backprop(create_graph=True) needs at least one (target, seed)")
    root = tape._root()
    like = seeds[0][0]
    # made before the pass consumes anything: it reads what the context tapes recorded
    rebuild = rebuilder(like, root if record_on is None else None, record_on or ())
    if root._consumed:
        raise TapeError(f"{op}: this tape was already run by an earlier backward()/execute()/grad()")
    ops = sorted(root._ops, key=_op_time)
    _check_writes(ops, op)
    if not retain:
        root._consume()
        root._ops = []
    else:  # run again later: that run must not read gradients this one left in a store
        root._retained = True
    tensor_cls = _tensor_class()
    # a seed given as a tensor stays one: the result is then a function of it too (jvp
    # through the double-vjp construction differentiates with respect to it)
    seed_t = {t.id: g if isinstance(g, tensor_cls) else like._like(_arrays.copy(g)) for t, g in seeds}
    return _run_entries_diff(ops, seed_t, keep, rebuild, op)


def rebuilder(like: Tensor[Any, Any], owned: GradientTape | None, contexts: Sequence[GradientTape] = ()) -> Rebuild:
    """How the differentiable pass turns an array the forward saved back into the tensor it
    stands for: ``rebuild(id, array)`` gives a non-leaf tensor of that id (on ``like``'s device)
    carrying the tapes that record what is computed from it, so differentiating the gradient
    reaches back through the forward.

    The one rule, for both ways a pass is differentiated again: the tensor carries ``owned``
    (the tape being differentiated, for PyTorch's ``create_graph``: its producer's entry is
    there) and the context tapes among ``contexts`` whose entries include that id (for
    TensorFlow's ``gradient`` inside other recording tapes), as a :class:`~gradtape.tape.TapeSet`
    when there are context tapes, else ``owned`` itself. A tensor no tape recorded carries
    :data:`~gradtape.tape.WATCHED` when one of ``contexts`` watches it (a leaf), else
    ``NONE_TAPE``.
    """
    times = [(c, {e[0] for e in c._root()._ops}) for c in contexts]

    def rebuild(i: int, data: Array) -> Tensor[Any, Any]:
        tape: Tape | None = owned
        if times:
            refs = tuple(c._ctx.ref for c, ts in times if i in ts and c._ctx is not None and c._ctx.ref is not None)
            if refs:
                tape = TapeSet(owned, refs)
            elif owned is None:
                tape = WATCHED if any(c._ctx is not None and i in c._ctx.watched for c in contexts) else NONE_TAPE
        t: Tensor[Any, Any] = like._like(data)
        t.id, t.tape, t._leaf = i, tape if tape is not None else NONE_TAPE, False
        return t

    return rebuild


# ----- the loops ------------------------------------------------------------------------------------


def _run_entries(ops: list[_Entry], grads: Gradients, keep: bool) -> None:
    """Run recorded entries (sorted by time) newest first into ``grads``, each once.

    ``keep=False`` pops them from ``ops`` (the arrays they saved are freed as backward
    goes); ``keep=True`` leaves ``ops`` as it is (a persistent tape runs again)."""
    if keep:
        ops = list(ops)
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


# ----- the differentiable pass (higher-order derivatives) -------------------------------------------

_SECOND_RULES = "every gradtape op has one: README's 'Gradients of gradients' lists them"


def _op_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return str(name).replace(".<locals>", "")


def _entry_op(entry: _Entry) -> str:
    """The public op an entry was recorded by, found through the functions it holds (the
    entry's rule, the closures' cells): the first one defined inside a public function."""
    seen: list[Any] = [entry[1], *entry[2:]]
    for _ in range(3):
        nxt: list[Any] = []
        for f in seen:
            qual = getattr(f, "__qualname__", "")
            if callable(f) and "<locals>" in qual and not qual.startswith("_"):
                return str(qual.split(".")[0])
            for cell in getattr(f, "__closure__", None) or ():
                try:
                    nxt.append(cell.cell_contents)
                except ValueError:
                    pass
        seen = nxt
    return _op_name(entry[1])


def _run_entries_diff(
    ops: list[_Entry],
    seeds: dict[int, Tensor[Any, Any]],
    keep: Container[int],
    rebuild: Rebuild,
    op: str,
) -> dict[int, Tensor[Any, Any]]:
    """Backpropagate with the ops' differentiable rules: gradients are tensors, computed by
    recorded ops. Returns the gradient tensors of ``keep`` (and of what else was reached).

    Raises:
        TapeError: an entry that gradient flows into has no differentiable rule (a raw-array
            closure from ``add_backward_op``, or an op not yet given one); the message names it.
    """
    gs = dict(seeds)
    last = -1
    for k in range(len(ops) - 1, -1, -1):
        entry = ops[k]
        time = entry[0]
        if time == last:
            continue
        last = time
        fn = entry[1]
        if fn is _run_closure:
            closure = entry[2]
            second = entry[3] if len(entry) > 3 else None
            if second is not None:  # an op with several outputs (gradtape.tape.record)
                out_ids, differentiable = second
                pending = [gs.get(o) if o in keep else gs.pop(o, None) for o, _, _ in out_ids]
                if all(p is None for p in pending):
                    continue
                if differentiable is None:  # recorded without a second rule (checkpoint)
                    raise TapeError(
                        f"{op}: the backward {_op_name(closure)!r} has no differentiable form, so gradients of "
                        f"gradients cannot flow through it ({_SECOND_RULES})"
                    )
                like = next(p for p in pending if p is not None)
                g_ts = [
                    p if p is not None else like._like(_arrays.zeros(shape, dtype, like.data))
                    for p, (_, shape, dtype) in zip(pending, out_ids, strict=True)
                ]
                for i, gi in differentiable(g_ts, rebuild):
                    prev = gs.get(i)
                    gs[i] = gi if prev is None else prev + gi
                continue
            # the closure's outputs were made after the previous entry and before it: if one of
            # them has a gradient, it would flow through raw arrays
            before = ops[k - 1][0] if k else -1
            if any(before < i < time and i not in keep for i in gs):
                module = str(getattr(closure, "__module__", ""))
                if module.startswith("gradtape."):
                    raise TapeError(
                        f"{op}: the backward {getattr(closure, '__name__', '?')!r} (an op of {module}) has no "
                        f"differentiable form yet, so gradients of gradients cannot flow through it ({_SECOND_RULES})"
                    )
                raise TapeError(
                    f"{op}: a hand-written backward closure ({_op_name(closure)}, recorded with add_backward_op) "
                    "computes raw arrays and cannot be differentiated again; write the op as a gradtape.autograd."
                    "Function whose backward uses gradtape ops"
                )
            continue
        g = gs.get(time) if time in keep else gs.pop(time, None)
        if g is None:
            continue
        rule = _DIFF.get(fn) if fn is not _op_backward or entry[3] is not None else None
        if rule is None:
            raise TapeError(
                f"{op}: the backward of op {_entry_op(entry)!r} has no differentiable form yet, so gradients of "
                f"gradients cannot flow through it ({_SECOND_RULES})"
            )
        for i, gi in rule(g, entry, rebuild):
            prev = gs.get(i)
            gs[i] = gi if prev is None else prev + gi
    return gs


# ----- stores and .grad -----------------------------------------------------------------------------


def _store_fits(store: Gradients, leaves: dict[int, Any]) -> bool:
    """Whether a pass into ``store`` alone leaves each leaf tensor's gradient of this pass in
    it, for ``.grad``: the store keeps it (``retain_leafs`` did not leave it out, so backward
    computes it) and held none before (a leaky store accumulating over passes)."""
    data, keep = store._data, store._leafs
    for i, t in leaves.items():
        if t is not None and (i in data or (keep is not None and i not in keep)):
            return False
    return True


_new_tensor = object.__new__


_BORROWED: set[int] = set()
"""Ids of ``.grad`` tensors whose array a :class:`Gradients` store also holds (backward hands
the store's array to ``.grad`` instead of copying it, and marks it shared in the store, so the
store copies before writing). gradtape writes into such an array only after
:func:`grad_array_mut` has given ``.grad`` its own copy."""


def grad_array_mut(t: Tensor[Any, Any], values: bool = True) -> Array | None:
    """The array of ``t.grad`` to write in place (clipping, zeroing, accumulating), or ``None``
    when ``t.grad`` is ``None``: when a gradient store shares it, first a copy of it
    (``values=False``: a new uninitialised array, for a caller that overwrites every element),
    so writing into ``.grad`` never changes a stored gradient."""
    try:
        gt = t._grad
    except AttributeError:
        return None
    if gt is None:
        return None
    if gt.id in _BORROWED:
        _BORROWED.discard(gt.id)
        gt.data = _arrays.copy(gt.data) if values else np.empty_like(gt.data)
    data: Array = gt.data
    return data


def set_grad(t: Tensor[Any, Any], arr: Array, lent: bool) -> None:
    """``t.grad`` = a new untraced leaf tensor of ``t``'s kind on ``arr`` (``lent``: a store
    holds ``arr`` too, so gradtape copies it before writing into it, see :data:`_BORROWED`):
    what backward deposits, and what a compiled replay of ``gradtape.capture`` sets again."""
    gt = _new_tensor(t.__class__)
    gid = next_id()
    if lent:
        _BORROWED.add(gid)
    gt.data, gt.device, gt.tape, gt.id, gt._leaf = arr, t.device, NONE_TAPE, gid, True
    t._grad = gt


def clear_grad(t: Tensor[Any, Any]) -> None:
    """``t.grad = None`` (``zero_grad``'s default), forgetting that a store shared its array."""
    try:
        gt = t._grad
    except AttributeError:
        return
    if gt is not None:
        _BORROWED.discard(gt.id)
        t._grad = None


def _deposit(leaves: dict[int, Tensor[Any, Any] | None], store: Gradients, owned: bool) -> None:
    """Add the gradient ``store`` holds for each leaf tensor of ``leaves`` into its ``.grad``
    (PyTorch's accumulation): the first gradient becomes ``.grad`` (the store's own array when
    ``owned``, marked shared there so the store copies before it writes into it again, a
    copy otherwise), later ones are added in place. A store's ``_drop`` (``zero_grads``)
    forgets its array, so a dfdx loop that clears both per step never copies."""
    data, shared = store._data, store._shared
    for tid, t in leaves.items():
        if t is None:
            continue
        g = data.get(tid)
        if g is None:
            continue
        try:
            cur = t._grad
        except AttributeError:
            cur = None
        if cur is None:
            # a buffer the store already shares (another gradient aliases it: a + b gives both
            # the output's buffer) is copied, so accumulating into one .grad never moves another
            if owned and tid not in shared and _arrays.writeable(g):
                shared.add(tid)
                set_grad(t, g, True)
            else:
                _untraced(".grad gets a copy of a shared gradient")
                set_grad(t, _arrays.copy(g), False)
        elif cur.tape is not NONE_TAPE:  # a recorded .grad (backward(create_graph=True)): not written into
            _untraced(".grad accumulates")
            t._grad = cur._like(_as_array(cur.data + g, dtype=t.dtype))
        else:
            _untraced(".grad accumulates (no zero_grad before backward)")
            old = cur.data
            if _arrays.writeable(old) and old.shape == g.shape and old.dtype == g.dtype:
                # in place, or (a borrowed array) into a new one: one pass either way
                np.add(old, g, out=grad_array_mut(t, values=False))
            else:
                cur.data = _as_array(old + g, dtype=t.dtype)


def _run_into_stores(
    ops: list[_Entry],
    stores: list[Gradients],
    seeds: Sequence[tuple[Tensor[Any, Any], Any]],
    keep: bool,
    run: Runner,
    extra: dict[int, Any] | None = None,
) -> tuple[Gradients, Gradients]:
    """Run ``ops`` once (with ``run``, see :func:`_runner`) into a working store that keeps
    what any of ``stores`` keeps, then give each store the gradients it keeps (added to what it
    holds: stores accumulate).
    ``extra``: ids the working store keeps too (the leaves whose ``.grad`` backward fills).
    Returns ``(first store, working store)``.

    The first store, which ``execute`` returns, also holds what the others keep, for this
    pass only (until its next pass starts): ``grads = loss.backward()`` then has the gradient
    of a ``leaky_trace()`` input merged into a model's ``alloc_grads()`` pass, while the
    model's store does not start keeping everything from then on."""
    for s in stores:
        if s._transient:
            s._end_transient()
    work = Gradients() if not _tp._anomaly else _working_store()
    keep_all = any(s._leafs is None for s in stores)
    work._leafs = None if keep_all else set().union(*(s._leafs or () for s in stores), extra or ())
    for t, g in seeds:
        work._accum(t.id, g)
    run(ops, work, keep)
    first = stores[0]
    everything = [s for s in stores if s._leafs is None]
    some = [s for s in stores if s._leafs is not None]
    for i, g in work._data.items():
        takers = everything + [s for s in some if i in s._leafs]  # type: ignore[operator]
        if not takers:
            continue
        if not any(s is first for s in takers):
            takers.append(first)
            if first._transient is None:
                first._transient = set()
            first._transient.add(i)
        for s in takers:
            s._take(i, g, shared=len(takers) > 1 or i in work._shared)
    return first, work


# ----- seeds and nested structures of tensors (the front ends' arguments) ---------------------------


def _flatten(op: str, x: Any, what: str, path: str = "") -> list[tuple[str, Tensor[Any, Any]]]:
    """The tensors of a nested list/tuple/dict structure, with their places (for errors)."""
    if isinstance(x, _tensor_class()):
        return [(path, x)]
    if isinstance(x, (list, tuple)):
        out: list[tuple[str, Tensor[Any, Any]]] = []
        for i, v in enumerate(x):
            out += _flatten(op, v, what, f"{path}[{i}]")
        return out
    if isinstance(x, dict):
        out = []
        for k, v in x.items():
            out += _flatten(op, v, what, f"{path}[{k!r}]")
        return out
    raise TypeError(f"{op}: {what}{path} must be a Tensor (or a list/tuple/dict of them), got {type(x).__name__}")


def _unflatten(structure: Any, values: Iterator[Any]) -> Any:
    if isinstance(structure, _tensor_class()):
        return next(values)
    if isinstance(structure, (list, tuple)):
        items = [_unflatten(v, values) for v in structure]
        return type(structure)(items) if isinstance(structure, list) or type(structure) is tuple else items
    return {k: _unflatten(v, values) for k, v in structure.items()}


def seed_array(op: str, t: Tensor[Any, Any], g: Any, what: str) -> Array:
    """``g`` (a tensor or an array-like) as a fresh array seeding the gradient of ``t``:
    exactly ``t``'s shape, converted to ``t``'s dtype.

    Raises:
        ShapeError: the shapes differ (the message names ``op``, ``what`` and both shapes).
        DTypeError: ``g`` is not numeric (bool, object, complex, strings).
    """
    arr = _as_array(getattr(g, "data", g))
    if arr.dtype.kind not in "fiu":
        raise DTypeError(f"{op}: {what} must be a float array or tensor, got dtype {arr.dtype} (shape {arr.shape})")
    if arr.shape != t.shape:
        raise ShapeError(f"{op}: {what} has shape {arr.shape}, the tensor it seeds has shape {t.shape}")
    return _arrays.copy(arr, t.dtype)


def _seeds(op: str, targets: list[Tensor[Any, Any]], output_gradients: Any) -> list[Array]:
    if output_gradients is None:
        return [_arrays.ones(t.shape, t.dtype, t.data) for t in targets]
    given = output_gradients if isinstance(output_gradients, (list, tuple)) else [output_gradients]
    if len(given) != len(targets):
        raise ValueError(f"{op}: {len(given)} output gradients for {len(targets)} targets")
    return [
        _arrays.ones(t.shape, t.dtype, t.data) if g is None else seed_array(op, t, g, f"output_gradients[{k}]")
        for k, (t, g) in enumerate(zip(targets, given, strict=True))
    ]
