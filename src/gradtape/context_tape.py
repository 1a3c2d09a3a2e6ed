"""TensorFlow's front end: ``GradientTape`` as a context tape (seed 004).

::

    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)                  # 2 x

One class, :class:`gradtape.GradientTape`, is both dfdx's tape (``x.trace()`` makes one) and
TensorFlow's (``with GradientTape() as tape`` makes one): the methods stay on the class, in the
core (:mod:`gradtape.tape`), typed and documented, and their bodies are the functions of this
module, which fills the core's slots (``gradtape.tape._tf_enter`` and the others) when it is
imported. The state a context tape holds (``gradtape.tape._Ctx``: recording, watched ids, the
thread's context stack) stays in the core, where the recording rule (``op_tape``) reads it.

:func:`gradient` differentiates through the engine (:func:`gradtape.engine.backprop`): into a
fresh store, or, when other context tapes are recording around the call, with the ops' second
rules recorded on those tapes (nested tapes give higher derivatives).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.engine import _flatten, _seeds, _unflatten, backprop, gradient_copy
from gradtape.errors import TapeError
from gradtape.gradients import Gradients
from gradtape.tape import NONE_TAPE, WATCHED, GradientTape, _add_modes, _Ctx, _state

if TYPE_CHECKING:
    from gradtape.tensor import Tensor

__all__ = ["enter", "gradient", "leave", "persistent", "watch", "watched_variables"]


def enter(tape: GradientTape) -> None:
    """``GradientTape.__enter__``: push ``tape`` on this thread's context stack and record on it.

    Raises:
        TapeError: the tape is already recording, or was consumed.
    """
    root = tape._root()
    ctx = tape._ctx
    if ctx is None:
        ctx = tape._ctx = _Ctx(False, True)  # from now on not a traced pass (see op_tape)
    if ctx.recording:
        raise TapeError("GradientTape.__enter__: this tape is already recording (a tape enters one with block)")
    if root._consumed:
        raise TapeError("GradientTape.__enter__: this tape was consumed by gradient()/execute(); make a new one")
    if ctx.ref is None:
        ctx.ref = weakref.ref(tape)
    st = _state()
    ctx.state = st
    ctx.recording = True
    tape._record = root._ops.append if root is tape else tape._push
    st.contexts.append(tape)
    _add_modes(1)


def leave(tape: GradientTape) -> None:
    """``GradientTape.__exit__``: stop recording on ``tape`` (its recorded ops stay)."""
    ctx = tape._ctx
    if ctx is None or not ctx.recording or ctx.state is None:
        return
    ctx.recording = False  # TapeSets and op_tape skip a tape that is not recording
    contexts = ctx.state.contexts
    for i in range(len(contexts) - 1, -1, -1):
        if contexts[i] is tape:
            del contexts[i]
            break
    _add_modes(-1)


def persistent(tape: GradientTape) -> bool:
    """``GradientTape.persistent``: whether ``gradient`` may be called more than once."""
    return tape._ctx is not None and tape._ctx.persistent


def watch(tape: GradientTape, tensor: Any) -> None:
    """``GradientTape.watch``: every active context tape of the thread watches the tensors of
    ``tensor`` (nested lists, tuples, dicts); an untraced one's tape becomes ``WATCHED``.

    Raises:
        TapeError: the tape is not recording (call ``watch`` inside its ``with`` block).
        TypeError: an element is not a tensor (the message names its type and place).
    """
    ctx = tape._ctx
    if ctx is None or not ctx.recording or ctx.state is None:
        raise TapeError("GradientTape.watch: the tape is not recording; call watch() inside its with block")
    ts = [t for _, t in _flatten("GradientTape.watch", tensor, "tensor")]
    active = [c._ctx for c in ctx.state.contexts if c._ctx is not None and c._ctx.recording]
    for t in ts:
        for c in active:
            c.watched.add(t.id)
            c.watched_tensors.setdefault(t.id, t)
        if t.tape is NONE_TAPE:
            t.tape = WATCHED


def watched_variables(tape: GradientTape) -> tuple[Tensor[Any, Any], ...]:
    """``GradientTape.watched_variables``: the tensors ``tape`` watches, in the order first watched."""
    return tuple(tape._ctx.watched_tensors.values()) if tape._ctx is not None else ()


def gradient(tape: GradientTape, target: Any, sources: Any, output_gradients: Any, unconnected_gradients: str) -> Any:
    """``GradientTape.gradient`` (its docstring has the arguments, results and errors).

    With no other context tape recording in this thread, a first-order pass into a fresh store
    that keeps the sources' gradients, returned as untraced copies; otherwise a differentiable
    pass whose gradients the recording tapes record (seed 004's nested tapes).

    Raises:
        TapeError, TypeError, ShapeError, ValueError: see ``GradientTape.gradient``.
    """
    op = "GradientTape.gradient"
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"{op}: unconnected_gradients must be 'none' or 'zero', got {unconnected_gradients!r}")
    root = tape._root()
    if root._consumed:
        raise TapeError(
            f"{op}: this tape was already used by gradient() or execute(); a non-persistent tape "
            "computes gradients once (create it with GradientTape(persistent=True) to call gradient() again)"
        )
    ctx = tape._ctx
    if ctx is not None and ctx.recording and not ctx.persistent:
        raise TapeError(
            f"{op}: called inside the non-persistent tape's own with block; call it after the block "
            "(or use persistent=True)"
        )
    targets = [t for _, t in _flatten(op, target, "target")]
    if not targets:
        raise TypeError(f"{op}: target is empty")
    srcs = _flatten(op, sources, "sources")
    seeds = list(zip(targets, _seeds(op, targets, output_gradients), strict=True))
    retain = ctx is not None and ctx.persistent
    st = _state()
    outer = [c for c in st.contexts if c is not tape and c._ctx is not None and c._ctx.recording]
    found: dict[int, Any]
    if outer:
        # another tape records: compute the gradients with recorded ops, so that it can
        # differentiate them again (seed 004's nested tapes)
        found = backprop(
            root, seeds, op=op, retain=retain, create_graph=True, keep={t.id for _, t in srcs}, record_on=outer
        )
    else:
        grads = Gradients()
        grads._leafs = {t.id for _, t in srcs}
        root._merged = True  # entries of nested tapes may interleave: run them in time order
        backprop(root, seeds, op=op, retain=retain, into=grads)
        found = grads._data
    results: list[Any] = []
    watched = ctx.watched_tensors if ctx is not None else None
    for _, t in srcs:
        # as in TensorFlow, a leaf a context tape does not watch has no gradient from it,
        # even when it is an operand of a recorded op
        gs = found.get(t.id) if watched is None or not t._leaf or t.id in watched else None
        if gs is None:
            zero = t._like(_arrays.zeros(t.shape, t.dtype, t.data)) if unconnected_gradients == "zero" else None
            if zero is not None and _tp._recorder is not None:
                _tp._recorder.constant(zero.data)
            results.append(zero)
        elif outer:
            results.append(gs)  # a recorded tensor: differentiable again
        else:
            results.append(gradient_copy(op, t, grads))
    return _unflatten(sources, iter(results))


# the bodies of GradientTape's TensorFlow methods (gradtape.tape cannot import this module)
_tp._tf_enter = enter
_tp._tf_exit = leave
_tp._tf_persistent = persistent
_tp._tf_watch = watch
_tp._tf_watched_variables = watched_variables
_tp._tf_gradient = gradient
