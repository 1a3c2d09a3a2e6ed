"""GradientTape semantics: consuming execute, newest-first order, merging, freeing, NoneTape."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, GradientTape, NoneTape, OwnedTape, TapeError
from gradtape.tape import NONE_TAPE, BackwardOp, _run_closure, merge_tapes, next_id


def _recorder(log: list[str], name: str) -> BackwardOp:
    """A backward op that appends ``name`` to ``log`` when it runs."""

    def op(grads: Gradients) -> None:
        log.append(name)

    return op


# ----- execute consumes the tape ------------------------------------------------------------


def test_execute_returns_the_tapes_gradients() -> None:
    """execute() returns the very store the tape was created with."""
    g = Gradients.leaky()
    tape = GradientTape(g)
    assert tape.execute() is g


def test_default_store_is_leaky_gradients() -> None:
    """A tape created without a store fills a fresh Gradients."""
    tape = GradientTape()
    assert isinstance(tape.gradients, Gradients)
    assert len(tape.gradients) == 0


def test_owned_tape_is_gradient_tape() -> None:
    """OwnedTape is dfdx's name for the same class."""
    assert OwnedTape is GradientTape
    assert GradientTape.OWNS_TAPE is True
    assert NoneTape.OWNS_TAPE is False


def test_second_execute_raises() -> None:
    """A tape runs once: a second execute() raises TapeError."""
    tape = GradientTape()
    tape.add_backward_op(lambda g: None)
    tape.execute()
    with pytest.raises(TapeError, match=r"execute: this tape was already run by an earlier backward\(\)/execute\(\)"):
        tape.execute()


def test_second_execute_of_empty_tape_raises() -> None:
    """Even an empty tape is consumed by execute()."""
    tape = GradientTape()
    tape.execute()
    with pytest.raises(TapeError):
        tape.execute()


def test_add_backward_op_after_execute_raises() -> None:
    """Recording onto a consumed tape raises TapeError."""
    tape = GradientTape()
    tape.execute()
    with pytest.raises(TapeError, match="consumed"):
        tape.add_backward_op(lambda g: None)


def test_consumed_flag_and_len() -> None:
    """consumed flips after execute(); len counts closures not yet run."""
    tape = GradientTape()
    tape.add_backward_op(lambda g: None)
    tape.add_backward_op(lambda g: None)
    assert len(tape) == 2
    assert not tape.consumed
    tape.execute()
    assert tape.consumed
    assert len(tape) == 0


def test_append_after_execute_raises() -> None:
    """A consumed tape cannot be merged (either side)."""
    done, live = GradientTape(), GradientTape()
    done.execute()
    with pytest.raises(TapeError):
        live.append(done)
    with pytest.raises(TapeError):
        done.append(live)


def test_ops_record_onto_consumed_tape_raise() -> None:
    """Using a tensor whose tape already ran backward raises instead of recording silently."""
    dev = Cpu()
    x = dev.tensor(np.array([1.0, 2.0])).leaky_trace()
    y = x * 2.0
    y.sum().backward()
    with pytest.raises(TapeError):
        y.exp()


# ----- order -----------------------------------------------------------------------------------


def test_ops_run_newest_first() -> None:
    """Closures run in reverse order of recording."""
    log: list[str] = []
    tape = GradientTape()
    for name in "abcd":
        tape.add_backward_op(_recorder(log, name))
    tape.execute()
    assert log == ["d", "c", "b", "a"]


def test_ops_receive_the_tapes_store() -> None:
    """Each closure is called with the tape's Gradients."""
    g = Gradients.leaky()
    seen: list[Gradients] = []
    tape = GradientTape(g)
    tape.add_backward_op(seen.append)
    tape.execute()
    assert seen == [g]
    assert seen[0] is g


def test_ops_run_newest_first_by_id_not_insertion() -> None:
    """Entries recorded out of time order (by hand, through the recorder) still run by id."""
    log: list[str] = []
    a, b = GradientTape(), GradientTape()
    early, late = next_id(), next_id()
    a._record((late, _run_closure, _recorder(log, "late")))
    b._record((early, _run_closure, _recorder(log, "early")))
    a.append(b)
    a.execute()
    assert log == ["late", "early"]


# ----- append / merge -----------------------------------------------------------------------


def test_append_moves_ops_and_empties_other() -> None:
    """append moves every closure into self and leaves other empty."""
    a, b = GradientTape(), GradientTape()
    a.add_backward_op(lambda g: None)
    b.add_backward_op(lambda g: None)
    b.add_backward_op(lambda g: None)
    a.append(b)
    assert len(a._ops) == 3
    assert b._ops == []
    assert len(a) == 3
    assert len(b) == 3  # b forwards to a, so it reports the merged tape


def test_append_leaves_other_forwarding() -> None:
    """After append, an op added to the old tape lands on the merged one."""
    log: list[str] = []
    a, b = GradientTape(), GradientTape()
    a.append(b)
    b.add_backward_op(_recorder(log, "via b"))
    assert len(a._ops) == 1
    assert b._ops == []
    a.execute()
    assert log == ["via b"]


def test_merged_ops_run_in_time_order() -> None:
    """Interleaved recording on two tapes, merged, runs newest first across both."""
    log: list[str] = []
    a, b = GradientTape(), GradientTape()
    a.add_backward_op(_recorder(log, "a1"))
    b.add_backward_op(_recorder(log, "b1"))
    a.add_backward_op(_recorder(log, "a2"))
    b.add_backward_op(_recorder(log, "b2"))
    a.append(b)
    b.add_backward_op(_recorder(log, "b3"))  # after the merge, through the old tape
    a.add_backward_op(_recorder(log, "a3"))
    a.execute()
    assert log == ["a3", "b3", "b2", "a2", "b1", "a1"]


def test_merge_into_smaller_tape_keeps_time_order() -> None:
    """Appending a longer tape into a shorter one keeps time order and the forwarding."""
    log: list[str] = []
    small, big = GradientTape(), GradientTape()
    big.add_backward_op(_recorder(log, "big1"))
    small.add_backward_op(_recorder(log, "small1"))
    big.add_backward_op(_recorder(log, "big2"))
    big.add_backward_op(_recorder(log, "big3"))
    small.append(big)
    big.add_backward_op(_recorder(log, "big4"))
    small.add_backward_op(_recorder(log, "small2"))
    assert len(big._ops) == 0
    assert len(small) == 6
    small.execute()
    assert log == ["small2", "big4", "big3", "big2", "small1", "big1"]


def test_executing_the_forwarded_tape_runs_the_merged_one() -> None:
    """execute() through the tape that was appended runs the whole merged tape, once."""
    log: list[str] = []
    a, b = GradientTape(), GradientTape()
    a.add_backward_op(_recorder(log, "a"))
    b.add_backward_op(_recorder(log, "b"))
    a.append(b)
    b.execute()
    assert log == ["b", "a"]
    assert a.consumed
    with pytest.raises(TapeError):
        a.execute()


def test_add_to_forwarded_tape_after_root_executed_raises() -> None:
    """Once the merged tape ran, recording through the old tape raises too."""
    a, b = GradientTape(), GradientTape()
    a.append(b)
    a.execute()
    with pytest.raises(TapeError):
        b.add_backward_op(lambda g: None)


def test_merge_returns_root() -> None:
    """merge() appends and returns the combined tape."""
    a, b = GradientTape(), GradientTape()
    b.add_backward_op(lambda g: None)
    m = a.merge(b)
    assert m is a
    assert len(m) == 1


def test_append_self_is_noop() -> None:
    """Appending a tape to itself (or to its root) changes nothing."""
    log: list[str] = []
    a, b = GradientTape(), GradientTape()
    a.add_backward_op(_recorder(log, "a"))
    a.append(a)
    a.append(b)
    a.append(b)
    b.append(a)
    assert len(a) == 1
    a.execute()
    assert log == ["a"]


def test_transitive_merge_forwards_to_final_root() -> None:
    """c -> b -> a: an op recorded on c lands on a, and all three share a's store."""
    log: list[str] = []
    a, b, c = GradientTape(), GradientTape(), GradientTape()
    b.append(c)
    a.append(b)
    c.add_backward_op(_recorder(log, "c"))
    assert c._root() is a
    assert len(a) == 1
    a.execute()
    assert log == ["c"]


def test_transitive_merge_shares_the_store() -> None:
    """c -> b -> a: every tape of the merged tree exposes the store execute() fills."""
    a, b, c = GradientTape(), GradientTape(), GradientTape()
    b.append(c)
    a.append(b)
    assert b.gradients is a.gradients
    assert c.gradients is a.gradients


def test_deep_forward_chain_records_onto_root() -> None:
    """An op recorded on a tape 1500 merges deep still lands on the root."""
    tapes = [GradientTape() for _ in range(1500)]
    for i in range(1, len(tapes)):
        tapes[i].append(tapes[i - 1])
    assert tapes[0]._root() is tapes[-1]
    tapes[0].add_backward_op(lambda g: None)
    assert len(tapes[-1]._ops) == 1


def test_append_keeps_each_store() -> None:
    """After append each tape's store keeps its own buffers (a user's reference to either
    store stays valid), and running the merged tape gives each store its gradients, added to
    what it held (stores accumulate)."""
    dev = Cpu()
    t = dev.tensor(np.array([1.0, 2.0]), requires_grad=True)
    ga, gb = Gradients.leaky(), Gradients.leaky()
    gb.get_or_alloc_mut(t)[...] = [3.0, 4.0]
    a, b = GradientTape(ga), GradientTape(gb)
    a.append(b)
    assert b.gradients is ga
    assert t not in ga
    np.testing.assert_array_equal(gb.get(t).numpy(), [3.0, 4.0])
    tid = t.id
    a.add_backward_op(lambda g: g._accum(tid, np.array([1.0, 1.0])))
    assert a.execute() is ga
    np.testing.assert_array_equal(ga.get(t).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(gb.get(t).numpy(), [4.0, 5.0])


# ----- duplicates ------------------------------------------------------------------------------


def test_duplicate_ids_run_once_unmerged() -> None:
    """The same (id, fn, *args) entry recorded twice runs once."""
    log: list[str] = []
    tape = GradientTape()
    entry = (next_id(), _run_closure, _recorder(log, "dup"))
    tape._record(entry)
    tape._record(entry)
    assert len(tape) == 2
    tape.execute()
    assert log == ["dup"]


def test_duplicate_ids_run_once_across_merge() -> None:
    """The same entry on two merged tapes runs once, at its place in time."""
    log: list[str] = []
    a, b = GradientTape(), GradientTape()
    a.add_backward_op(_recorder(log, "first"))
    entry = (next_id(), _run_closure, _recorder(log, "dup"))
    a._record(entry)
    b._record(entry)
    b.add_backward_op(_recorder(log, "last"))
    a.append(b)
    a.execute()
    assert log == ["last", "dup", "first"]


# ----- freeing ---------------------------------------------------------------------------------


def _op_holding_array(tape: GradientTape, log: list[float]) -> tuple[weakref.ref[Any], weakref.ref[Any]]:
    """Record a closure that saved a fresh array; return weakrefs to (array, closure)."""
    saved = np.arange(4.0)

    def op(grads: Gradients) -> None:
        log.append(float(saved.sum()))

    tape.add_backward_op(op)
    return weakref.ref(saved), weakref.ref(op)


def test_closure_and_saved_array_alive_before_execute() -> None:
    """The tape keeps a recorded closure and what it captured until it runs."""
    tape = GradientTape()
    arr_ref, op_ref = _op_holding_array(tape, [])
    gc.collect()
    assert arr_ref() is not None
    assert op_ref() is not None


def test_closure_and_saved_array_freed_after_execute() -> None:
    """After execute() neither the closure nor the array it saved is alive."""
    log: list[float] = []
    tape = GradientTape()
    arr_ref, op_ref = _op_holding_array(tape, log)
    tape.execute()
    gc.collect()
    assert log == [6.0]
    assert op_ref() is None
    assert arr_ref() is None


def test_closures_released_as_they_run() -> None:
    """A newer closure's saved array is already freed when an older closure runs."""
    tape = GradientTape()
    seen: list[bool] = []
    holder: list[Callable[[], object]] = []

    def older(grads: Gradients) -> None:
        seen.append(holder[0]() is None)

    tape.add_backward_op(older)
    arr_ref, _ = _op_holding_array(tape, [])
    holder.append(arr_ref)
    tape.execute()
    assert seen == [True]


def test_tensor_backward_frees_op_closures() -> None:
    """Saved arrays of built-in op closures (here exp's output) die with the backward pass."""
    dev = Cpu()
    x = dev.tensor(np.array([0.5, 1.0])).leaky_trace()
    y = x.exp()
    y_ref = weakref.ref(y.data)
    loss = y.sum()
    del y
    gc.collect()
    assert y_ref() is not None  # still held by exp's backward closure
    loss.backward()
    gc.collect()
    assert y_ref() is None


# ----- NoneTape and merge_tapes ------------------------------------------------------------------


def test_none_tape_records_nothing() -> None:
    """NoneTape.add_backward_op drops the closure: it is never called."""
    log: list[str] = []
    t = NoneTape()
    t.add_backward_op(_recorder(log, "x"))
    assert log == []
    assert not hasattr(t, "_ops")


def test_untraced_ops_keep_none_tape() -> None:
    """Ops on untraced tensors give untraced tensors (no tape objects are created)."""
    dev = Cpu()
    x = dev.tensor([[0.1, 0.2], [0.3, 0.4]])
    y = ((x * x + x) @ x).exp().sum()
    assert y.tape is NONE_TAPE


def test_merge_tapes_none_with_none() -> None:
    """NoneTape with NoneTape stays NoneTape."""
    assert merge_tapes(NONE_TAPE, NONE_TAPE) is NONE_TAPE


def test_merge_tapes_none_with_owned() -> None:
    """NoneTape merged with an owned tape gives the owned tape, either order."""
    t = GradientTape()
    assert merge_tapes(NONE_TAPE, t) is t
    assert merge_tapes(t, NONE_TAPE) is t


def test_merge_tapes_same_tape() -> None:
    """A tape merged with itself is itself and not marked merged."""
    t = GradientTape()
    assert merge_tapes(t, t) is t
    assert t._forward is None


def test_merge_tapes_two_owned() -> None:
    """Two owned tapes merge into the first one's root; the second forwards to it."""
    log: list[str] = []
    a, b = GradientTape(), GradientTape()
    b.add_backward_op(_recorder(log, "b"))
    m = merge_tapes(a, b)
    assert m is a
    assert b._root() is a
    assert len(b._ops) == 0
    assert len(a._ops) == 1


def test_merge_tapes_already_merged() -> None:
    """Tapes that already share a root merge to that root without change."""
    a, b = GradientTape(), GradientTape()
    a.append(b)
    a.add_backward_op(lambda g: None)
    assert merge_tapes(b, a) is a
    assert merge_tapes(a, b) is a
    assert len(a) == 1


def test_merge_tapes_forwarded_operands_use_roots() -> None:
    """Merging two non-root tapes merges their roots."""
    a, b, c, d = GradientTape(), GradientTape(), GradientTape(), GradientTape()
    a.append(b)
    c.append(d)
    m = merge_tapes(b, d)
    assert m is a
    assert d._root() is a
    assert c._root() is a


def test_execute_frees_an_ops_output_gradient_before_the_next_entry_runs() -> None:
    """The loop that hands op entries their output's gradient lets it go right after the op
    ran, not only when the next op entry comes (a closure in between would keep it alive)."""
    dev = Cpu()
    x = dev.tensor(np.arange(1.0, 5.0))
    grads = Gradients.leaky()
    grads.retain_leafs([x])
    xt = x.trace(grads)
    refs: list[weakref.ref[Any]] = []
    alive_after: list[bool] = []
    xt.tape.add_backward_op(lambda g: alive_after.append(refs[0]() is not None))  # runs last
    y = xt.sin()
    y.tape.add_backward_op(lambda g: refs.append(weakref.ref(g._data[y.id])))  # runs before sin's
    y.sum().backward()
    assert len(refs) == 1 and alive_after == [False]
    np.testing.assert_allclose(grads.get(x).numpy(), np.cos(np.arange(1.0, 5.0)))
