"""Activation checkpointing: trade one extra forward pass for the memory of a block's intermediates.

:func:`checkpoint` is PyTorch's ``torch.utils.checkpoint.checkpoint`` (the non-reentrant kind,
``use_reentrant=False``) and Burn's ``CheckpointStrategy`` (seed 002) on gradtape's tape::

    h = x.trace(grads)
    for block in blocks:
        h = gradtape.checkpoint(block, h)   # block's intermediates are not kept
    loss = h.square().mean()
    grads = loss.backward()                  # each block runs forward again, then backward

The trade-off. Without checkpointing, every op inside ``fn`` records a backward entry that
keeps what its gradient needs (inputs, outputs, masks) until backward reaches it, so a deep
stack holds the activations of every layer at once. ``checkpoint(fn, *args)`` runs ``fn`` with
recording off (nothing inside is recorded, so those arrays are freed as soon as ``fn`` is done
with them) and records ONE backward closure that keeps only the tensor arguments (their
arrays, ids and leaf flags), the non-tensor arguments, ``fn``, and the random generator
states. When the outputs' gradients arrive in backward, the closure runs ``fn`` again on the
saved inputs with recording on a private tape (the memory of one block's intermediates, held
only while that block's backward runs) and backpropagates through that recomputation: the
cost is one extra forward pass of ``fn`` per checkpoint, the saving the intermediates of every
checkpointed block but the one being differentiated.

Exactness. The recomputation runs the same ops in the same order on the same values, and its
backward entries run inside the outer backward pass at the point where ``fn``'s own entries
would have run, accumulating into the same :class:`~gradtape.gradients.Gradients` store (the
outer pass's), so the gradients of the inputs and of every module parameter ``fn`` uses
(tensors carrying the ``PARAM`` marker, found by the recomputation itself, not passed as
arguments) are bitwise equal to the uncheckpointed ones, float32 and float64.

What is replayed (``preserve_rng_state=True``, the default). Before ``fn`` runs, the state of
every random generator it can draw from without being given one is saved, and restored for
the recomputation (then the generators are put back where backward found them, so the
recomputation does not shift the stream for later draws): the ``rng`` (a numpy ``Generator``)
of the device of every tensor argument and of every parameter of the modules ``fn`` is found
to use (``fn`` itself, the object of a bound method, ``functools.partial`` arguments,
closure cells, module-level names ``fn`` reads, and modules among the arguments), which is
where ``ops.dropout`` / ``nn.Dropout`` with ``rng=None`` and ``dev.randn``/``dev.rand``
draw; and numpy's global ``np.random`` state. A generator passed explicitly (``dropout(x,
rng=gen)``) is replayed only if it is a device's; an int seed replays by itself. Anything else
(a fresh ``np.random.default_rng()``, Python's ``random``) is not replayed:
``determinism_check="default"`` then detects the difference (shapes, dtypes and a CRC-32 of
every output's bytes are compared with the first run's) and raises a ``TapeError`` instead of
returning wrong gradients.

Not to be confused with :mod:`gradtape.nn.checkpoint`, which saves and loads a model's
parameters in safetensors files (a "checkpoint" of training state, not of activations).
"""

from __future__ import annotations

import functools
import types
import zlib
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import numpy as np

from gradtape import tape as _tp
from gradtape.engine import backprop
from gradtape.errors import TapeError
from gradtape.grad_mode import enable_grad, no_grad
from gradtape.tape import NONE_TAPE, PARAM, GradientTape, TapeSet, next_id, op_tape, record
from gradtape.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]

Array = np.ndarray[Any, Any]
_OP = "checkpoint"


# ----- arguments ---------------------------------------------------------------------------------


def _leaves(x: Any, out: list[Tensor[Any, Any]]) -> None:
    """The tensors of ``x`` (nested lists, tuples and dicts are searched), in order."""
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _leaves(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _leaves(v, out)


def _replace(x: Any, table: dict[int, Tensor[Any, Any]]) -> Any:
    """``x`` with each tensor replaced by ``table[id(tensor)]`` (same nesting)."""
    if isinstance(x, Tensor):
        return table[id(x)]
    if isinstance(x, list):
        return [_replace(v, table) for v in x]
    if isinstance(x, tuple):
        items = [_replace(v, table) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)  # namedtuples too
    if isinstance(x, dict):
        return {k: _replace(v, table) for k, v in x.items()}
    return x


def _modules(fn: Any, args: Any) -> list[Any]:
    """The :class:`gradtape.nn.Module` instances ``fn`` visibly uses: ``fn`` itself, the object
    of a bound method, a ``functools.partial``'s function and arguments, closure cells and the
    module-level names a Python function reads, and modules among ``args``."""
    from gradtape.nn.module import Module

    found: list[Any] = []
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if id(obj) in seen or depth > 3 or len(seen) > 4096:  # bounded: big globals cost little
            return
        seen.add(id(obj))
        if isinstance(obj, Module):
            found.append(obj)
            return
        if isinstance(obj, (list, tuple)):
            for v in obj:
                visit(v, depth + 1)
        elif isinstance(obj, dict):
            for v in obj.values():
                visit(v, depth + 1)
        elif isinstance(obj, functools.partial):
            visit(obj.func, depth + 1)
            visit(obj.args, depth + 1)
            visit(obj.keywords, depth + 1)
        elif isinstance(obj, types.MethodType):
            visit(obj.__self__, depth + 1)
            visit(obj.__func__, depth + 1)
        elif isinstance(obj, types.FunctionType):
            for cell in obj.__closure__ or ():
                try:
                    visit(cell.cell_contents, depth + 1)
                except ValueError:  # an empty cell
                    pass
            g = obj.__globals__
            for name in obj.__code__.co_names:
                if name in g:
                    v = g[name]
                    if isinstance(v, (Module, list, tuple, dict, functools.partial, types.FunctionType)):
                        visit(v, depth + 1)

    visit(fn, 0)
    visit(args, 0)
    return found


def _parameters(mods: list[Any]) -> list[Tensor[Any, Any]]:
    out: list[Tensor[Any, Any]] = []
    seen: set[int] = set()
    for m in mods:
        for p in m.parameters():
            if p.id not in seen and p.tape is PARAM:
                seen.add(p.id)
                out.append(p)
    return out


# ----- random state --------------------------------------------------------------------------------


def _rng_snapshot(tensors: list[Tensor[Any, Any]]) -> list[tuple[Any, Any]]:
    """``(generator, state)`` of every device generator the tensors' devices hold, then
    numpy's global ``RandomState`` (as ``(None, state)``)."""
    snap: list[tuple[Any, Any]] = []
    seen: set[int] = set()
    for t in tensors:
        dev = t.device
        if id(dev) in seen:
            continue
        seen.add(id(dev))
        gen = getattr(dev, "rng", None)
        if isinstance(gen, np.random.Generator):
            snap.append((gen, gen.bit_generator.state))
    snap.append((None, np.random.get_state()))
    return snap


def _rng_set(snap: list[tuple[Any, Any]]) -> None:
    for gen, state in snap:
        if gen is None:
            np.random.set_state(state)
        else:
            gen.bit_generator.state = state


def _rng_now(snap: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    return [(gen, np.random.get_state() if gen is None else gen.bit_generator.state) for gen, _ in snap]


# ----- outputs ---------------------------------------------------------------------------------------


def _split_outputs(result: Any) -> tuple[bool, list[Any]]:
    """``(single, items)``: a tensor, or a tuple whose tensor items are differentiated (other
    items are passed through as they are)."""
    if isinstance(result, Tensor):
        return True, [result]
    if type(result) is tuple and any(isinstance(r, Tensor) for r in result):
        return False, list(result)
    what = "an empty tuple" if result == () else type(result).__name__
    raise TypeError(
        f"{_OP}: fn must return a Tensor or a tuple containing Tensors, got {what}; "
        "checkpoint differentiates the tensors fn returns"
    )


def _crc(a: Array) -> int:
    return zlib.crc32(np.ascontiguousarray(a).reshape(-1).view(np.uint8).data)


# ----- checkpoint ------------------------------------------------------------------------------------


def checkpoint(
    fn: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], Any] | None = None,
    determinism_check: Literal["default", "none"] = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run ``fn(*args, **kwargs)`` without keeping its intermediates; recompute them in backward.

    PyTorch's ``torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)`` (see the
    module docstring for the memory/compute trade-off: one extra forward of ``fn`` per
    checkpoint, only the inputs stored). The outputs carry the tape the caller's ops would
    record on (a traced argument's tape; while a traced pass is live or a ``GradientTape``
    context watches them, the tape parameters record on), and gradients reach the tensor
    arguments and every module parameter ``fn`` uses, in the same store and bitwise equal to
    calling ``fn`` directly. Under :func:`gradtape.no_grad` (or when nothing records) it just
    returns ``fn(*args, **kwargs)``. Checkpoints nest.

    Args:
        fn: a callable: an ``nn.Module``, a function, a bound method, a lambda. It must be a
            function of its arguments, the parameters it reads and random draws from the
            generators replayed (see the module docstring): it runs twice.
        *args, **kwargs: passed to ``fn``. Tensors (also inside lists, tuples and dicts) are
            its differentiable inputs; anything else is passed through as is, in both runs.
        use_reentrant: PyTorch's choice of algorithm, taken as written: ``None`` or ``False``
            (PyTorch's recommended kind) is this function. ``True`` (PyTorch's older, reentrant
            kind) runs the same algorithm, giving the gradients the reentrant kind gives where
            it gives any, with its refusals: no keyword arguments for ``fn``, no ``context_fn``
            or ``debug``. (Where no input requires grad, PyTorch's reentrant kind leaves the
            parameters without gradients and warns; here they get theirs.)
        context_fn: PyTorch's selective-checkpointing hook; only ``None`` is taken.
        determinism_check: ``"default"`` compares the recomputed outputs' shapes, dtypes and
            values (a CRC-32 of their bytes, so nothing more is stored) with the first run's;
            ``"none"`` skips the check.
        debug: accepted (PyTorch's operator trace on a failed determinism check): the
            :class:`~gradtape.errors.TapeError` here already names what differed.
        early_stop: accepted; the recomputation runs ``fn`` whole (the values are the same).
        preserve_rng_state: save the random generators' states before ``fn`` runs and replay
            them in the recomputation (so dropout masks are the same); ``False`` skips it.

    Returns:
        What ``fn`` returns: a tensor, or a tuple (its tensors recorded, other items passed
        through). Output tensors have fresh ids, as any op's outputs.

    Raises:
        TypeError: ``fn`` is not callable; ``fn`` returned something other than a tensor or a
            tuple containing tensors (the message names ``checkpoint``).
        ValueError: ``determinism_check`` is neither ``"default"`` nor ``"none"``; with
            ``use_reentrant=True``, keyword arguments for ``fn`` or a ``context_fn``/``debug``
            (PyTorch's refusals).
        NotImplementedError: a ``context_fn``.
        TapeError: (backward) the recomputation returned outputs of other shapes, dtypes or
            values than the first run (``fn`` is not deterministic: randomness that is not
            replayed, state that changed between the runs); (higher order) gradients of
            gradients flow through the checkpoint: ``create_graph=True``, a ``GradientTape``
            inside another recording one and ``gradtape.functional``'s ``hvp``/``hessian``
            are not supported through ``checkpoint``; call ``fn`` directly there.

    Limitations: hooks (``register_hook``) on tensors created inside ``fn`` do not fire; the
    block's own backward entries are not anomaly-checked while hooks are registered; under a
    ``GradientTape`` context, the parameters of a ``fn`` whose modules cannot be found (see
    the module docstring) are not watched automatically (``watch`` them).
    """
    if not callable(fn):
        raise TypeError(f"{_OP}: fn must be callable, got {type(fn).__name__}")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"{_OP}: determinism_check must be 'default' or 'none', got {determinism_check!r}")
    if use_reentrant:
        if kwargs:
            raise ValueError(f"{_OP}: Unexpected keyword arguments: {','.join(kwargs)} (use_reentrant=True takes none)")
        if context_fn is not None or debug is not False:
            raise ValueError(f"{_OP}: Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if context_fn is not None:
        raise NotImplementedError(
            f"{_OP}: context_fn (PyTorch's selective activation checkpointing) is not supported; pass None"
        )
    if not _tp.is_grad_enabled():
        return fn(*args, **kwargs)
    inputs: list[Tensor[Any, Any]] = []
    _leaves(args, inputs)
    _leaves(kwargs, inputs)
    mods = _modules(fn, (args, kwargs))
    params = _parameters(mods)
    tape = op_tape(*inputs, *params)
    if tape is NONE_TAPE and not mods:
        # fn's parameters (which record whenever grad mode is on) cannot be seen: record
        # speculatively (a recomputation that records nothing backpropagates nothing)
        tape = GradientTape._pending()
    if tape is NONE_TAPE:  # nothing records: a plain call
        return fn(*args, **kwargs)
    snap = _rng_snapshot(inputs + params) if preserve_rng_state else None
    rec = _tp._recorder
    if rec is not None:  # gradtape.capture: the snapshot is taken again before each replayed forward
        if snap is not None:
            rec.call(_resnap, snap)
            rec.made_anew(snap)
        for a in _host_arrays((args, kwargs)):  # a mask made inside the call: a checked constant
            rec.host_array(a)
    # what the closure keeps: the inputs (untraced, same ids, data and leaf flags)
    saved = {id(t): _detached(t) for t in inputs}
    saved_args, saved_kwargs = _replace(args, saved), _replace(kwargs, saved)
    with no_grad():
        result = fn(*args, **kwargs)
    single, items = _split_outputs(result)
    outs: list[Any] = [r._from_op(r.data, tape) if isinstance(r, Tensor) else r for r in items]
    out_meta = [
        (k, o.id, o.shape, o.dtype, _crc(o.data) if determinism_check == "default" else 0)
        for k, o in enumerate(outs)
        if isinstance(o, Tensor)
    ]
    if rec is not None and determinism_check == "default":  # and the outputs' CRC-32s after it
        rec.call(_recrc, out_meta, [o.data for o in outs if isinstance(o, Tensor)])
    rerun = _Rerun(fn, saved_args, saved_kwargs, snap, out_meta, determinism_check == "default")
    del result, items  # the closure keeps the outputs' ids and metadata, not their arrays

    def checkpoint_backward(grads: Any, gs: list[Array | None]) -> None:
        _recompute_and_backprop(rerun, grads, gs)

    def no_higher_order(grad_outputs: Any, rebuild: Any) -> list[tuple[int, Any]]:
        raise TapeError(
            f"{_OP}: gradients of gradients (create_graph=True, a GradientTape inside another recording one, "
            "gradtape.functional's hvp/hessian/jvp) cannot flow through a checkpointed function; call fn "
            "directly (without checkpoint) where higher-order derivatives are needed"
        )

    # no_higher_order: a second rule that refuses, naming checkpoint (record's own refusal for
    # a missing rule would name the closure, not the call the user made)
    record(tape, [o for o in outs if isinstance(o, Tensor)], checkpoint_backward, no_higher_order)
    return outs[0] if single else tuple(outs)


def _resnap(snap: list[tuple[Any, Any]]) -> None:
    """Take the snapshot of :func:`_rng_snapshot` again, in place (a capture's replay, before
    the checkpointed forward draws)."""
    for i, (gen, _) in enumerate(snap):
        snap[i] = (gen, np.random.get_state() if gen is None else gen.bit_generator.state)


def _recrc(out_meta: list[tuple[int, int, tuple[int, ...], Any, int]], arrays: list[Array]) -> None:
    """The outputs' CRC-32s again, in place (a capture's replay, after the checkpointed forward
    wrote new values into ``arrays``), for the backward's determinism check."""
    for i, ((k, oid, shape, dtype, _), a) in enumerate(zip(out_meta, arrays, strict=True)):
        out_meta[i] = (k, oid, shape, dtype, _crc(a))


def _host_arrays(tree: Any) -> list[Array]:
    """The numpy arrays in nested tuples, lists and dicts of ``fn``'s arguments."""
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [a for v in tree for a in _host_arrays(v)]
    if isinstance(tree, dict):
        return [a for v in tree.values() for a in _host_arrays(v)]
    return []


def _detached(t: Tensor[Any, Any]) -> Tensor[Any, Any]:
    d: Tensor[Any, Any] = t._like(t.data)
    d.id, d._leaf = t.id, t._leaf
    return d


class _Rerun(NamedTuple):
    """What a checkpoint's backward closure keeps to run ``fn`` again."""

    fn: Callable[..., Any]
    args: Any
    """The positional arguments, their tensors replaced by untraced copies (same ids)."""
    kwargs: Any
    snap: list[tuple[Any, Any]] | None
    """The random generators' states before the first run (``None``: not replayed)."""
    out_meta: list[tuple[int, int, tuple[int, ...], Any, int]]
    """Per tensor output: its position, id, shape, dtype and CRC-32 (0 when not checked)."""
    check: bool
    """Compare the recomputed outputs' CRC-32s with the first run's."""


def _recompute_and_backprop(rerun: _Rerun, grads: Any, gs: list[Array | None]) -> None:
    """Run ``fn`` again with recording on a private tape, then run that tape's entries into
    ``grads`` (the outer pass's store), seeded with ``gs``, the gradients of the outputs (one
    per tensor output, ``None`` for one without)."""
    priv = GradientTape._traced(grads)
    try:
        _recompute_into(priv, rerun, grads, gs)
    finally:  # also on errors: a tape left live would make later ops on parameters record
        root = priv._root()
        root._ops = []
        root._consume()


def _recompute_into(priv: GradientTape, rerun: _Rerun, grads: Any, gs: list[Array | None]) -> None:
    fn, args, kwargs, snap, out_meta, check = rerun
    start = next_id()
    inputs: list[Tensor[Any, Any]] = []
    _leaves((args, kwargs), inputs)
    table: dict[int, Tensor[Any, Any]] = {}
    for t in inputs:
        r = t.put_tape(priv)
        r._leaf = t._leaf  # as the caller's tensor: stores that skip unkept leafs skip it too
        table[id(t)] = r
    st = _tp._state()
    contexts = st.contexts
    first_use = set(_tp._first_use) if _tp._post_hooked else None
    now = _rng_now(snap) if snap is not None else None
    try:
        if contexts:  # record on the private tape only, not on the caller's context tapes
            st.contexts = []
            _tp._add_modes(-len(contexts))
        if snap is not None:
            _rng_set(snap)
        with enable_grad():
            result = fn(*_replace(args, table), **_replace(kwargs, table))
    finally:
        if now is not None:
            _rng_set(now)
        if contexts:
            st.contexts = contexts
            _tp._add_modes(len(contexts))
        if first_use is not None:  # the recomputation is not a forward pass of the caller's
            for k in [k for k in _tp._first_use if k not in first_use]:
                del _tp._first_use[k]
    try:
        single, items = _split_outputs(result)
    except TypeError as e:
        raise TapeError(f"{_OP}: the recomputation of fn in backward {e}") from None
    if len(items) != max(k for k, *_ in out_meta) + 1 or (single and len(out_meta) != 1):
        raise TapeError(f"{_OP}: the recomputation of fn returned {len(items)} outputs, the first run {len(out_meta)}")
    root = priv
    moves: list[tuple[int, int, Array | None]] = []
    for (k, oid, shape, dtype, crc), g in zip(out_meta, gs, strict=True):
        r = items[k]
        if not isinstance(r, Tensor) or r.shape != shape or r.dtype != dtype:
            got = f"shape {r.shape}, dtype {r.dtype}" if isinstance(r, Tensor) else type(r).__name__
            raise TapeError(
                f"{_OP}: the recomputation of fn in backward gave output {k} with {got}; the first run gave "
                f"shape {shape}, dtype {dtype} (fn must compute the same thing twice)"
            )
        if check and _crc(r.data) != crc:
            raise TapeError(
                f"{_OP}: the recomputation of fn in backward gave output {k} (shape {shape}) other values than "
                "the first run: fn is not deterministic (random draws from a generator checkpoint does not "
                "replay, such as a fresh np.random.default_rng(); or state that changed between the runs); pass "
                "the generator of a device, or determinism_check='none' to accept it"
            )
        tp = r.tape
        owned = tp.owned if isinstance(tp, TapeSet) else tp
        if isinstance(owned, GradientTape):
            root = _tp._merge_owned(root, owned)
            moves.append((oid, r.id, g))
    # seed: the outer gradients of the outputs (taken out of the store by the backward loop,
    # unless the store keeps them) move to the recomputed outputs' ids, as the producing
    # entries of the recomputation read them: the same arrays, marked shared (copied before
    # an in-place add), since the store may still hold them under the output's id or another
    data, shared = grads._data, grads._shared
    leafs = grads._leafs
    for oid, rid, g in moves:
        if g is not None:  # adds up where rid < start (fn returned an input as it is) or repeats
            grads._accum_alias(rid, g, oid)
    # the outer pass fires the hooks: this nested one does not
    backprop(root, op=_OP, into=grads, fire_hooks=False)
    # gradients of the recomputation's intermediates (a store that keeps every gradient): no
    # one holds those tensors
    if leafs is None:
        for i in [i for i in data if i >= start]:
            del data[i]
            shared.discard(i)


def checkpoint_sequential(
    functions: Any,
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run a sequence of modules (an ``nn.Sequential`` or a list of callables) in ``segments``
    chunks, each but the last under :func:`checkpoint`: PyTorch's
    ``torch.utils.checkpoint.checkpoint_sequential``, with its chunking (``len // segments``
    modules a chunk, the remainder in the last, which runs normally as its output is needed
    right away).

    Args:
        functions: an ``nn.Sequential`` (its children in order) or a list of callables, each
            taking the previous one's output.
        segments: the number of chunks, ``1 <= segments``.
        input: the first callable's input (a tensor).
        use_reentrant: as :func:`checkpoint`.
        **kwargs: only ``preserve_rng_state`` (as :func:`checkpoint`).

    Returns:
        The last callable's output.

    Raises:
        ValueError: another keyword argument; ``segments`` < 1 or more than the modules.
    """
    preserve = bool(kwargs.pop("preserve_rng_state", True))
    if kwargs:
        raise ValueError(f"checkpoint_sequential: Unexpected keyword arguments: {','.join(kwargs)}")
    if isinstance(segments, bool) or int(segments) != segments or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive int, got {segments!r}")
    children = getattr(functions, "children", None)
    fns: list[Callable[[Any], Any]] = list(children()) if callable(children) else list(functions)

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = fns[j](x)
            return x

        return forward

    size = len(fns) // segments
    if size == 0:
        raise ValueError(f"checkpoint_sequential: {segments} segments for {len(fns)} modules; give at most {len(fns)}")
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(fns) - 1)(input)
