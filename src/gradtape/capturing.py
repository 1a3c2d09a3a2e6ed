"""``gradtape.capture``: record a call's kernels once, then replay them with no per-op Python
dispatch (CUDA graphs' capture and replay, tinygrad's ``TinyJit``, MLX's ``mx.compile``).

    model.eval()
    predict = gradtape.capture(model)      # or @gradtape.capture on a function
    with gradtape.no_grad():
        for batch in loader:
            logits = predict(batch)        # call 1 eager, call 2 records, later calls replay

**What a replay is.** Each op that gradtape can replay hands the recorder, while a call is
recorded, the kernel that computed its output and the arrays it read (``ops._util.replayable``);
the plan is that list. A replay copies the call's tensor and array arguments into the buffers
the recorded call read, reruns the kernels in order over the same arrays (parameters are read
where they live, so an optimizer's in-place updates are seen), and returns new tensors holding
copies of the outputs: no argument checks, no tape, no ``Tensor`` objects in between, no op
lookup. The values are the eager call's bit for bit: the same kernels on the same inputs.

**When it replays.** Plans are kept per *key*: each argument's shape and dtype for tensors
(and whether it requires grad) and numpy arrays, the value of every other argument (ints, strings, ``None``, ...: they
must be hashable; Python values are baked into the plan as JAX's ``jit`` bakes static arguments),
and the grad mode. For a key, the first call runs eagerly (lazy initialisation, kernel
compilation), the second runs eagerly while it is recorded, and later calls replay. Before a
replay, guards check that every tensor the plan reads that existed before the recorded call
(parameters, buffers) still holds the same array (``load_state_dict`` or ``.data = ...``
replace it: the call is then recorded again) and that every module called kept its
``training`` flag (``model.train()`` after recording eval records again). :attr:`Captured.replays`,
:attr:`Captured.recorded` and :attr:`Captured.eager_calls` count what happened.

**What is refused (the call then always runs eagerly, with one ``RuntimeWarning`` naming the
reason; :attr:`Captured.reason` keeps it):** an op gradtape cannot replay yet whose output
reaches a replayable op or the result (so far: ``linear``, the declared elementwise ops such as
``relu``, ``gelu``, ``tanh``, convolutions, max/min/average pooling, and views such as
``reshape``, ``flatten``, ``permute`` of replayable outputs; not yet ``+`` between tensors,
normalisations, attention, embeddings, dropout in training mode); a call that records a tape
(training: backward and optimizer steps are the next step of issue 30), reads a tensor's
values on the host (``.item()``, ``.numpy()``, ``.tolist()``, ``float(t)``: the replay would not
rerun the Python that used them), writes a tensor in place, or reads a tensor made inside the
call from host data (make such constants outside the captured function); a GPU tensor; a
result that is not tensors (in tuples, lists or dicts), numbers, strings or ``None``.

**What you must know.** As with JAX's ``jit`` and CUDA graphs, Python code in the captured
function runs only while a call is recorded: a replay does not print, count, or append to your
lists, and numpy work done directly on a tensor's ``.data`` inside the function is not seen
(its result is baked in). Keep such work outside. Replays of one ``Captured`` are serialised
(a call made while another thread replays runs eagerly).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, TypeVar

import numpy as np

from gradtape import tape as _tp
from gradtape.tape import is_grad_enabled, next_id
from gradtape.tensor import Tensor

__all__ = ["Captured", "capture"]

Array = np.ndarray[Any, Any]
P = ParamSpec("P")
R = TypeVar("R")

_SCALARS = (int, float, str, bool, type(None))


def _root(a: Array) -> Array:
    """The array that owns ``a``'s memory (``a`` itself, or the base of a view of a view...)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", type(fn).__name__)).replace("._", ".").lstrip("_")


class _Recorder:
    """What one recorded call did: the kernels in order, the arrays they read, the guards."""

    def __init__(self, start: int, inputs: list[Array]) -> None:
        self.thread = threading.get_ident()
        self.start = start  # tensors with smaller ids existed before the call
        self.known: dict[int, Array] = {id(_root(a)): _root(a) for a in inputs}
        self.written: set[int] = set()
        self.guards: list[tuple[Tensor[Any, Any], Array]] = []
        self.modules: list[tuple[Any, bool]] = []
        self.kernels: list[tuple[Callable[..., Any], Array, tuple[Any, ...]]] = []
        self.reason: str | None = None

    def refuse(self, why: str) -> None:
        """The recorded call cannot be replayed, because it ``why`` (the first reason is kept)."""
        if threading.get_ident() == self.thread and self.reason is None:
            self.reason = why

    def host_read(self, t: Tensor[Any, Any], what: str) -> None:
        """A tensor's values were read into Python (``what``: ``item()``, ``numpy()``, ...)."""
        self.refuse(
            f"reads a tensor's values on the host ({what} of a tensor of shape {tuple(t.shape)}): a replay "
            "would not rerun the Python that uses them; return the tensor and read it after the call"
        )

    def module(self, m: Any) -> None:
        """A module was called: its ``training`` flag is guarded at replay."""
        if threading.get_ident() == self.thread:
            self.modules.append((m, bool(getattr(m, "training", False))))

    def kernel(
        self,
        op: str,
        out: Array,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        sources: tuple[Any, ...],
        recording: bool,
    ) -> None:
        """The op ``op`` computed ``out``; ``fn(out, *args)`` recomputes it (see
        ``ops._util.replayable``)."""
        if threading.get_ident() != self.thread or self.reason is not None:
            return
        if recording:
            self.refuse(
                f"records a tape ({op} recorded a backward: grad mode is on and an input requires grad); "
                "capture replays inference so far: call it under gradtape.no_grad()"
            )
            return
        if out.__class__ is not np.ndarray:
            self.refuse(f"runs {op} on a GPU: capture replays CPU kernels so far")
            return
        for s in sources:
            if s is None:
                continue
            r = _root(s.data)
            if id(r) in self.known:
                continue
            if s.id < self.start:  # a parameter, a buffer, a tensor the function closes over
                self.known[id(r)] = r
                self.guards.append((s, s.data))
                continue
            self.refuse(
                f"{op} reads a tensor of shape {tuple(s.shape)} made inside the call by an op that gradtape "
                "cannot replay yet, or from host data (make constants outside the captured function)"
            )
            return
        for a in args:
            if isinstance(a, np.ndarray) and id(_root(a)) not in self.known:
                self.refuse(f"{op} read a copy of its input of shape {a.shape} (a non-contiguous input)")
                return
        r = _root(out)
        if id(r) in self.known and id(r) not in self.written:
            self.refuse(f"{op} wrote into an argument's or a parameter's array")
            return
        self.known[id(r)] = r
        self.written.add(id(r))
        self.kernels.append((fn, out, args))


@dataclass
class _Plan:
    """A recorded call: what a replay copies in, checks, runs and returns."""

    inputs: list[Array]
    guards: list[tuple[Tensor[Any, Any], Array]]
    modules: list[tuple[Any, bool]]
    kernels: list[tuple[Callable[..., Any], Array, tuple[Any, ...]]]
    template: Any
    outs: list[tuple[Array, Any]] = field(default_factory=list)

    def valid(self) -> bool:
        return all(t.data is a for t, a in self.guards) and all(
            bool(getattr(m, "training", False)) is flag for m, flag in self.modules
        )


@dataclass
class _Seen:
    """A key called once (eagerly); the next call records."""

    calls: int = 1


class Captured(Generic[P, R]):
    """A function (or module) whose calls are recorded once and replayed: see
    :mod:`gradtape.capturing` and :func:`capture`. Calling it takes and returns what the
    function does.

    Attributes:
        replays: calls answered by a replay.
        recorded: calls recorded (each also ran eagerly).
        eager_calls: calls run eagerly without recording (first calls of a key, refused ones).
        reason: why the last refused recording could not be replayed, else ``None``.
    """

    def __init__(self, fn: Callable[P, R], max_plans: int = 8) -> None:
        if not callable(fn):
            raise TypeError(f"capture: expected a function or a module, got {type(fn).__name__}")
        if max_plans < 1:
            raise ValueError(f"capture: max_plans must be at least 1, got {max_plans}")
        self.fn = fn
        self.max_plans = max_plans
        self.replays = 0
        self.recorded = 0
        self.eager_calls = 0
        self.reason: str | None = None
        self._plans: dict[Any, _Plan | _Seen | str] = {}
        self._lock = threading.Lock()
        self._warned = False
        self.__doc__ = getattr(fn, "__doc__", None)

    def __repr__(self) -> str:
        return f"capture({_name(self.fn)}: {self.replays} replays, {self.recorded} recorded, {self.eager_calls} eager)"

    def reset(self) -> None:
        """Forget every plan: the next call of each key runs eagerly again."""
        self._plans.clear()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if _tp._recorder is not None or not self._lock.acquire(blocking=False):
            self.eager_calls += 1  # inside another recording, or another thread replays
            return self.fn(*args, **kwargs)
        try:
            result: R = self._call(args, kwargs)
            return result
        finally:
            self._lock.release()

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        key, arrays, why = _key(args, kwargs)
        if key is None:
            return self._eager(args, kwargs, why)
        state = self._plans.get(key)
        if isinstance(state, _Plan):
            if state.valid():
                self.replays += 1
                return _replay(state, arrays)
            return self._record(key, args, kwargs)  # a parameter's array was replaced, a module changed mode
        if isinstance(state, str):
            self.eager_calls += 1
            return self.fn(*args, **kwargs)
        if state is None:
            if len(self._plans) >= self.max_plans:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = _Seen()
            self.eager_calls += 1
            return self.fn(*args, **kwargs)
        return self._record(key, args, kwargs)

    def _eager(self, args: tuple[Any, ...], kwargs: dict[str, Any], why: str) -> Any:
        self.eager_calls += 1
        self._refused(why)
        return self.fn(*args, **kwargs)

    def _refused(self, why: str) -> None:
        self.reason = why
        if not self._warned:
            self._warned = True
            warnings.warn(f"gradtape.capture: {_name(self.fn)} runs eagerly: it {why}", RuntimeWarning, stacklevel=4)

    def _record(self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        inputs: list[Array] = []

        def sub(v: Any) -> Any:
            if isinstance(v, Tensor):
                buf = v.data.copy()
                inputs.append(buf)
                return v._like(buf)
            if isinstance(v, np.ndarray):
                buf = v.copy()
                inputs.append(buf)
                return buf
            return v

        sargs = tuple(sub(v) for v in args)
        skw = {k: sub(v) for k, v in kwargs.items()}
        rec = _Recorder(next_id(), inputs)
        _tp._recorder = rec
        try:
            result = self.fn(*sargs, **skw)
        finally:
            _tp._recorder = None
        self.recorded += 1
        outs: list[tuple[Array, Any]] = []
        template = _template(result, outs, rec)
        if rec.reason is not None:
            self._plans[key] = rec.reason
            self._refused(rec.reason)
            return result  # the eager values (copies of nothing: no plan keeps these arrays)
        plan = _Plan(inputs, rec.guards, rec.modules, rec.kernels, template, outs)
        self._plans[key] = plan
        return _rebuild(plan)


def _key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Array], str]:
    """``(key, arrays, why)``: the plan key of a call and its tensor/array arguments' arrays in
    order, or ``(None, [], why)`` when the call cannot have one."""
    parts: list[Any] = [is_grad_enabled()]
    arrays: list[Array] = []
    for name, v in [(None, a) for a in args] + sorted(kwargs.items()):
        if isinstance(v, Tensor):
            d = v.data
            if d.__class__ is not np.ndarray:
                return None, [], f"takes a tensor on {v.device}: capture replays CPU calls so far"
            parts.append((name, "T", d.shape, d.dtype.str, v.requires_grad))
            arrays.append(d)
        elif isinstance(v, np.ndarray):
            parts.append((name, "A", v.shape, v.dtype.str))
            arrays.append(v)
        else:
            try:
                hash(v)
            except TypeError:
                return (
                    None,
                    [],
                    (
                        f"takes an argument of type {type(v).__name__}, which is unhashable: arguments are tensors, "
                        "numpy arrays or hashable values (a list of tensors is not replayed)"
                    ),
                )
            parts.append((name, "V", type(v), v))
    return tuple(parts), arrays, ""


def _template(result: Any, outs: list[tuple[Array, Any]], rec: _Recorder) -> Any:
    """``result`` with each tensor replaced by its index in ``outs`` (tensor data and device),
    checked to be an output a replay computes; refuses (through ``rec``) anything else."""
    if isinstance(result, Tensor):
        if result.requires_grad and result.id >= rec.start:  # made by the call, on a tape
            rec.refuse(
                f"records a tape (it returns a tensor of shape {tuple(result.shape)} that requires grad); capture "
                "replays inference so far: call it under gradtape.no_grad()"
            )
            return None
        d = result.data
        if d.__class__ is np.ndarray and id(_root(d)) not in rec.known and result.id < rec.start:
            rec.known[id(_root(d))] = _root(d)  # a parameter returned as it is: read at replay
            rec.guards.append((result, d))
        if d.__class__ is not np.ndarray or id(_root(d)) not in rec.known:
            rec.refuse(
                f"returns a tensor of shape {tuple(result.shape)} that an op gradtape cannot replay yet computed"
            )
            return None
        outs.append((d, result.device))
        return _Out(len(outs) - 1)
    if isinstance(result, _SCALARS):
        return result
    if type(result) in (tuple, list):
        return type(result)(_template(r, outs, rec) for r in result)
    if type(result) is dict:
        return {k: _template(v, outs, rec) for k, v in result.items()}
    rec.refuse(f"returns a {type(result).__name__}: results are tensors (in tuples, lists, dicts), numbers or None")
    return None


@dataclass(frozen=True)
class _Out:
    index: int


def _fill(template: Any, made: list[Tensor[Any, Any]]) -> Any:
    if isinstance(template, _Out):
        return made[template.index]
    if type(template) in (tuple, list):
        return type(template)(_fill(t, made) for t in template)
    if type(template) is dict:
        return {k: _fill(v, made) for k, v in template.items()}
    return template


def _rebuild(plan: _Plan) -> Any:
    """The call's result: new untraced tensors holding copies of the plan's outputs."""
    return _fill(plan.template, [Tensor(a.copy(), dev) for a, dev in plan.outs])


def _replay(plan: _Plan, arrays: list[Array]) -> Any:
    for buf, a in zip(plan.inputs, arrays, strict=True):
        np.copyto(buf, a)
    for fn, out, args in plan.kernels:
        fn(out, *args)
    return _rebuild(plan)


def capture(fn: Callable[P, R], *, max_plans: int = 8) -> Captured[P, R]:
    """Record ``fn``'s kernels on its second call and replay them on later calls with the same
    argument shapes, dtypes and values (see :mod:`gradtape.capturing`). Use it as a decorator
    or on a module: ``predict = gradtape.capture(model)``.

    Args:
        fn: a function or module; its tensor results come back as new untraced tensors.
        max_plans: plans kept (one per key: argument shapes, dtypes, other argument values and
            grad mode); the oldest is dropped beyond.

    Returns:
        A :class:`Captured` callable with ``fn``'s signature.

    Raises:
        TypeError: ``fn`` is not callable. ValueError: ``max_plans < 1``. A call that cannot
        be replayed does not raise: it runs eagerly, with one ``RuntimeWarning`` naming why.
    """
    return Captured(fn, max_plans)
