"""``gradtape.capture``: record a call's kernels once, then replay them with no per-op Python
dispatch (CUDA graphs' capture and replay, tinygrad's ``TinyJit``, MLX's ``mx.compile``), for
a training step (forward, backward, optimizer step) or an inference forward.

    @gradtape.capture
    def train_step(x, y):                  # PyTorch's spelling, or gradtape's (trace, store)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss                        # return tensors; read .item() outside

    for x, y in loader:
        loss = train_step(x, y)            # call 1 eager, call 2 records, later calls replay

**What a replay is.** While a call is recorded, each op gradtape can replay hands the
recorder the kernel that computed its output and the arrays it read
(``ops._util.replayable``); a backward pass hands it its recorded entries and store; an
optimizer's ``step``, ``zero_grad`` (the optimizer's or a module's), ``zero_grads`` and a
learning-rate scheduler's ``step`` are recorded as calls. A replay copies the call's tensor
and array arguments into the buffers the recorded call read, reruns the kernels in order over
the same arrays (parameters are read where they live, so the optimizer's in-place updates are
seen), runs the recorded backward entries again into the same store
(:func:`gradtape.engine.replay_first_order`), reruns the recorded calls (their Python: the
optimizer reads the gradients the replay left), and returns new untraced tensors holding copies
of the outputs. What is skipped: argument checks, ``Tensor`` objects, tape bookkeeping and op
lookup in the forward. The values are the eager call's bit for bit: the same kernels on the
same inputs. Every array a recorded backward rule reads must be one a replay rewrites (an
input, a parameter, an op's output, or what an op's replay kernel refreshes besides it: a
convolution's im2col columns, max pooling's arg-max indices, the softmax cross-entropy keeps);
anything else refuses the recording.

**When it replays.** Plans are kept per *key*: each tensor or numpy argument's shape and dtype
(and whether a tensor requires grad), the value of every other argument (ints, strings,
``None``, ...: they must be hashable; Python values are baked into the plan as JAX's ``jit``
bakes static arguments), and the grad mode. For a key, the first call runs eagerly (lazy
initialisation: optimizer state, kernel compilation), the second runs eagerly while it is
recorded, and later calls replay. Before a replay, guards check that every tensor the plan
reads that existed before the recorded call (parameters, buffers) still holds the same array
(``.data = ...`` replaces it: the call is then recorded again) and still requires grad or not
as it did (``p.requires_grad_(False)`` freezes it: recorded again), and that every module called
kept its ``training`` flag (``model.train()`` after recording in eval mode records again).
:attr:`Captured.replays`, :attr:`Captured.recorded` and :attr:`Captured.eager_calls` count what
happened.

**Constants made inside the call.** A tensor made from host data inside the function
(``dev.tensor(np.arange(L))`` for positions, as nanoGPT's ``torch.arange``) is kept as a
constant of the plan only after a second recording agrees: the call with the next *different*
arguments is recorded again (eagerly), and the plan stands if it ran the same kernels and made
every such tensor with the same values. A tensor made from the values of an argument or a
parameter (``dev.tensor(-x.data)``) differs between the two and refuses the capture, as does
Python control flow that took another branch; calls repeating the same arguments keep recording
until one differs. Like JAX's ``jit``, a value that changes only later (a Python counter read
inside the function) is not seen.

**Activation checkpointing.** A block under :func:`gradtape.checkpoint` replays: its forward
kernels rerun, and the recorded backward reruns the checkpoint's recomputation as it is. Before
the block's forward a replay takes the generators' snapshot again (so the recomputation redraws
the dropout masks the forward just drew), after it the outputs' CRC-32s (the determinism
check's); a numpy array passed to the block (a causal mask made in ``forward``) is a constant
once a second recording agrees, as a host-data tensor is.

**Random numbers and clipping.** Dropout (``nn.Dropout``, ``F.dropout``, attention dropout)
draws a fresh mask at every replay, from the generator the eager op would use (the device's,
at the same point of its sequence of draws), so a captured run equals an eager run from the
same seed. Gradient clipping (``nn.utils.clip_grad_norm_``, ``clip_grad_value_``, and the
store form ``optim.clip_grad_norm_``) is a recorded call, rerun at each replay; the norm it
returns (a tensor, or the store form's float returned as it is) is each replay's own.

**What is refused (the call then always runs eagerly, with one ``RuntimeWarning`` naming the
reason; :attr:`Captured.reason` keeps it):** an op gradtape cannot replay yet whose output
reaches a replayable op, a backward pass or the result (so far replayable: ``linear``, the
declared elementwise ops such as ``relu``, ``gelu``, ``silu``, ``softplus``, ``tanh``, ``+``,
``-``, ``*``, ``/`` and negation between tensors (broadcasting too) and with numbers, the
declared two-input ops, arithmetic on integer tensors, ``to_dtype``, convolutions and
``conv_transpose2d``, max/min/average pooling, ``sum`` and ``mean``, ``softmax`` and
``log_softmax``, ``cross_entropy``'s common case, ``nll_loss``,
``mse_loss``, ``l1_loss``, ``huber_loss``, ``smooth_l1_loss``,
``binary_cross_entropy_with_logits``, ``embedding``, ``layer_norm``, ``rms_norm`` and
``group_norm``, the fused attention (``scaled_dot_product_attention``,
``nn.MultiheadAttention`` without weights), ``selective_scan``, ``nn.LSTM``/``GRU``/``RNN``,
``dropout``, ``cat`` and ``stack``, integer-array indexing (``x[idx]``), random tensors drawn
inside the call (``dev.randn``, ``randint``, ``rand_like``, ...: fresh numbers at each replay),
and views such as ``reshape`` (a copying one too), ``flatten``, ``permute`` of replayable
outputs, of the arguments and of parameters, comparisons and ``where``, ``gather`` (numpy's and
PyTorch's), ``index_select``, ``argmax``/``argmin`` along a dim (so ``max(x, dim)``), ``pad``,
``interpolate`` (``nn.Upsample``), adaptive average pooling, ``cumprod``, ``prod``, sorting
(``sort``, ``argsort``, ``topk``, ``kthvalue``, ``median``, ``cummax``), the rounding ops,
``sign``, ``roll``, ``tril``/``triu``, ``tile``, ``split``/``chunk``/``unbind``/``flip`` of
parameters, integer casts and arithmetic, the logical ops, ``any``/``all``, ``norm``,
``normalize``, ``cosine_similarity``, ``cdist``, ``einsum``, ``one_hot`` with
``num_classes``, the BCE, KL, Poisson, margin-ranking, hinge and cosine embedding losses,
``cross_entropy`` with label smoothing, ``ignore_index`` or ``reduction="none"``, ``prelu``,
``searchsorted``, ``bucketize``, ``diag``, ``repeat_interleave`` by a number, ``index_add``
and ``scatter_add`` (their positions computed again from the index at each replay), adaptive
max pooling, the triplet and Gaussian NLL losses, and the class-weighted ``cross_entropy``,
``nll_loss`` and ``binary_cross_entropy`` (the weight read as it is at each replay: a tensor's
or numpy array's own, one of another dtype converted again, a list's values a constant):
``tests/test_capture_ops.py`` counts the PyTorch-spelled op calls that replay, 440 of its 449;
ops whose result comes from values through the host, ``nonzero``, ``unique``,
``masked_select``, bool-mask indexing and ``one_hot`` without ``num_classes``, never replay:
each refuses, naming itself); a hand-written backward
closure that reads an array of its own (one reading its op's input and output tensors replays
as it is); tensor hooks, anomaly mode, ``retain_graph``, ``create_graph`` (a first-order functional pass,
``torch.autograd.grad`` or TensorFlow's ``tape.gradient``, replays), MPI communication; a call
that reads a tensor's values on the host (``.item()``, ``.numpy()``, ``.tolist()``,
``float(t)``: the replay would not rerun the Python that used them), writes a tensor in place
outside an optimizer step, or makes a tensor from host data that the second recording makes
with other values (above); a GPU tensor; a result that is not tensors (in tuples, lists or
dicts, named tuples), numbers, strings or ``None``, or a Python float other than a clip norm
when the call clips.

**What you must know.** As with JAX's ``jit`` and CUDA graphs, Python code in the captured
function runs only while a call is recorded (except the optimizer and scheduler calls above): a
replay does not print, count, or append to your lists, and numpy work done directly on a
tensor's ``.data`` inside the function is not rerun. What the recorder can see of it is
refused: a parameter or buffer it reads whose values changed outside a recorded call (``p.data
-= lr * p.grad.data``, a running statistic updated in numpy), a tensor made from host data
whose values a second recording disagrees with. Keep such work outside, or make it a recorded
call (:func:`gradtape.tape.recorded_call`). Replays of one ``Captured`` are serialised (a call
made while another thread replays runs eagerly).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, TypeVar

import numpy as np

from gradtape import tape as _tp
from gradtape.engine import entry_op, replay_first_order, saved_arrays, saved_ids
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
        self.guards: list[tuple[Tensor[Any, Any], Array, bool]] = []  # tensor, its array, requires_grad
        self.modules: list[tuple[Any, bool]] = []
        self.items: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self.reason: str | None = None
        self.trained = False  # a backward pass was recorded
        self.calling = False  # inside a recorded call (an optimizer step): its writes are replayed
        self.hosts: list[Array] = []  # arrays of tensors made from host data inside the call
        # floats recorded calls returned (held, so their ids stay theirs) and the slots replays refill
        self.boxes: dict[int, tuple[float, list[float]]] = {}
        self.kept: dict[int, tuple[str, Array, Array]] = {}  # pre-existing arrays read, and their values
        self.rebuilt: set[int] = set()  # ids of objects whose state a kernel makes anew (replayable's rebuilds)

    def refuse(self, why: str) -> None:
        """The recorded call cannot be replayed, because it ``why`` (the first reason is kept)."""
        if threading.get_ident() == self.thread and self.reason is None and not self.calling:
            self.reason = why

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` now and at every replay, in this place: an optimizer's ``step``, a
        ``zero_grad``. The Python of ``fn`` reruns at each replay (it reads the gradients the
        replayed backward left and updates parameters and state in place)."""
        if threading.get_ident() != self.thread:
            return fn(*args)
        at = len(self.items)
        self.items.append((fn, args))
        self.calling = True
        try:
            result = fn(*args)
        finally:
            self.calling = False
        for a in saved_arrays((0, fn, *args)):  # what the call may change, a replay changes too
            kept = self.kept.get(id(_root(a)))
            if kept is not None:
                self.kept[id(_root(a))] = (kept[0], kept[1], kept[1].copy())
        if isinstance(result, Tensor) and result.data.__class__ is np.ndarray:  # clip_grad_norm_'s norm
            r = _root(result.data)
            self.known[id(r)] = r
            self.written.add(id(r))
            self.items[at] = (_call_into, (result.data, fn, args))
        elif result.__class__ is float:  # the store form's norm: a result slot each replay refills
            box = [result]
            self.boxes[id(result)] = (result, box)
            self.items[at] = (_call_into_box, (box, fn, args))
        return result

    def backward(
        self,
        op: str,
        ops: list[Any],
        grads: Any,
        fresh: bool,
        leaves: dict[int, Any],
        seeds: Any,
        to_grad: bool,
        hooked: set[int],
    ) -> None:
        """A first-order backward pass (``op``) is about to run ``ops`` into ``grads`` (made by
        this pass when ``fresh``): a replay runs the same entries again, after the kernels that
        refresh the arrays they saved (see :func:`gradtape.engine.replay_first_order`).
        ``hooked``: the ids of the tensors with hooks (``register_hook`` and post-accumulate
        hooks); a pass that may reach one is refused (a replay does not fire hooks)."""
        if threading.get_ident() != self.thread or self.reason is not None:
            return
        if _tp._anomaly:
            self.refuse(f"runs {op} in anomaly mode, which a replay does not check")
            return
        if hooked and hooked & _ids_in(ops, leaves, seeds):
            self.refuse(f"runs {op} through tensors with hooks (register_hook), which a replay does not fire")
            return
        seeded: list[tuple[int, Array]] = []
        for t, g in seeds:
            d = t.data
            if d.__class__ is not np.ndarray or id(_root(d)) not in self.known:
                self.refuse(
                    f"runs {op} from a tensor of shape {tuple(t.shape)} that an op gradtape cannot replay yet computed"
                )
                return
            if not (isinstance(g, np.ndarray) and (id(_root(g)) in self.known or bool(np.all(g == 1)))):
                self.refuse(f"runs {op} with a seed (gradient=...) made from host data")
                return
            seeded.append((t.id, g if id(_root(g)) in self.known else g.copy()))
        for entry in ops:  # every array a backward rule reads must be one a replay rewrites
            for a in saved_arrays(entry, skip=self.rebuilt):
                if a.__class__ is not np.ndarray or id(_root(a)) not in self.known:
                    name = entry_op(entry)
                    name = "an op" if name.startswith("_") else name
                    self.refuse(
                        f"runs {op} through {name}, whose backward reads an array of shape {a.shape} that "
                        "a replay would not recompute (an op gradtape cannot replay yet, a hand-written closure's "
                        "own array, or host data)"
                    )
                    return
        leafs = None if grads._leafs is None else set(grads._leafs)
        self.items.append((_backward_item, (ops, grads, fresh, leafs, seeded, leaves, to_grad)))
        self.trained = True

    def constant(self, a: Array) -> None:
        """``a`` is a constant of the plan (a Python number's 0-d array an op reads): known,
        never written by a replay."""
        if threading.get_ident() == self.thread:
            self.known.setdefault(id(_root(a)), _root(a))

    def host_tensor(self, t: Tensor[Any, Any]) -> None:
        """A tensor was made from host data (``dev.tensor(np.arange(n))``, ``Tensor(array,
        dev)``): its array is a constant of the plan if a second recording, on other
        arguments, makes it with the same values (see :class:`Captured`)."""
        self.host_array(t.data)

    def made_anew(self, *objs: Any) -> None:
        """Each replay makes these objects' contents anew before a backward reads them (a
        checkpoint's generator snapshot, retaken by a recorded call): the arrays reachable from
        them are not checked against the recorded ones."""
        if threading.get_ident() == self.thread:
            self.rebuilt.update(id(o) for o in objs)

    def host_array(self, a: Array) -> None:
        """A numpy array made inside the call from host data (a tensor's, see
        :meth:`host_tensor`; or held by an op: ``gradtape.checkpoint``'s arguments, a causal
        mask): a constant of the plan if a second recording, on other arguments, holds one
        with the same values. GPU arrays are left to the kernels' refusal."""
        if threading.get_ident() != self.thread or self.calling or a.__class__ is not np.ndarray:
            return
        r = _root(a)
        if id(r) not in self.known:
            self.known[id(r)] = r
            self.hosts.append(r)

    def read(self, t: Tensor[Any, Any]) -> None:
        """A view op read ``t``: where ``t`` existed before the call (a parameter), its array is
        read where it lives at replay, and guarded (as a kernel's source is): views of it made
        inside the call (``W.T``, ``w.detach()``) are then known."""
        if threading.get_ident() != self.thread or self.calling or t.id >= self.start:
            return
        d = t.data
        if d.__class__ is np.ndarray and id(_root(d)) not in self.known:
            self.known[id(_root(d))] = _root(d)
            self.guards.append((t, d, t.requires_grad))
            self.keep(f"a tensor of shape {tuple(t.shape)} that a view reads", d)

    def drawn(self, t: Tensor[Any, Any] | Array, draw: Callable[[], Array]) -> None:
        """``t`` (a tensor or an array) holds random numbers ``draw()`` gave (``dev.randn``,
        ``randint``, a recurrent layer's dropout masks, ...): a replay draws again, in this place
        of the sequence of draws."""
        if threading.get_ident() != self.thread or self.calling or self.reason is not None:
            return
        d = t.data if isinstance(t, Tensor) else t
        r = _root(d)
        self.hosts = [h for h in self.hosts if h is not r]  # not a constant: a kernel's output
        self.known[id(r)] = r
        self.written.add(id(r))
        self.items.append((_redraw, (d, draw)))

    def host_read(self, t: Tensor[Any, Any], what: str) -> None:
        """A tensor's values were read into Python (``what``: ``item()``, ``numpy()``, ...)."""
        self.refuse(
            f"reads a tensor's values on the host ({what} of a tensor of shape {tuple(t.shape)}): a replay "
            "would not rerun the Python that uses them; return the tensor and read it after the call"
        )

    def module(self, m: Any) -> None:
        """A module was called: its ``training`` flag is guarded at replay, and its buffers'
        values are kept, to tell at the end that nothing but a recorded call changed them."""
        if threading.get_ident() == self.thread:
            self.modules.append((m, bool(getattr(m, "training", False))))
            for kind in ("named_parameters", "named_buffers"):
                named = getattr(m, kind, None)
                for name, t in named(recurse=False) if named is not None else ():
                    self.keep(f"{type(m).__name__}.{name}", t.data)

    def keep(self, label: str, a: Array) -> None:
        """Keep a copy of a pre-existing array the call reads (a parameter, a buffer): at the
        end, one that changed outside a recorded call refuses the recording."""
        if a.__class__ is np.ndarray and id(_root(a)) not in self.kept:
            self.kept[id(_root(a))] = (label, _root(a), _root(a).copy())

    def changed(self) -> str | None:
        """The first kept array whose values changed since it was kept (outside a recorded
        call, which keeps them again after it runs): a change a replay would not make."""
        for label, a, old in self.kept.values():
            if not _same(a, old):
                return label
        return None

    def kernel(
        self,
        op: str,
        out: Array,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        sources: tuple[Any, ...],
        recording: bool,
        train: bool,
        writes: tuple[Array, ...] = (),
        rebuilds: tuple[Any, ...] = (),
    ) -> None:
        """The op ``op`` computed ``out``; ``fn(out, *args)`` recomputes it (see
        ``ops._util.replayable``)."""
        if threading.get_ident() != self.thread or self.reason is not None or self.calling:
            return
        self.rebuilt.update(id(r) for r in rebuilds)
        if recording and not train:
            self.refuse(
                f"records {op} on a tape, whose backward gradtape cannot replay yet (it saves arrays a replay "
                "would not refresh); in inference, call it under gradtape.no_grad()"
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
                self.guards.append((s, s.data, s.requires_grad))
                self.keep(f"a tensor of shape {tuple(s.shape)} that {op} reads", s.data)
                continue
            self.refuse(
                f"{op} reads a tensor of shape {tuple(s.shape)} made inside the call by an op that gradtape "
                "cannot replay yet, or from host data (make constants outside the captured function)"
            )
            return
        written = {id(w) for w in writes}
        for w in writes:  # arrays the kernel rewrites besides out (its backward reads them)
            self.known[id(_root(w))] = _root(w)
            self.written.add(id(_root(w)))
        for a in (b for arg in args for b in (arg if arg.__class__ is tuple else (arg,))):  # tuples one level deep
            if isinstance(a, np.ndarray) and id(a) not in written and id(_root(a)) not in self.known:
                self.refuse(
                    f"{op} reads an array of shape {a.shape} that is neither an argument, a parameter, a constant "
                    "nor a replayed op's output (a copy of a strided input, or a numpy array made inside the call: "
                    "make it a tensor with dev.tensor, or pass it in)"
                )
                return
        r = _root(out)
        if id(r) in self.known and id(r) not in self.written:
            self.refuse(f"{op} wrote into an argument's or a parameter's array")
            return
        self.known[id(r)] = r
        self.written.add(id(r))
        self.items.append((fn, (out, *args)))


@dataclass
class _Plan:
    """A recorded call: what a replay copies in, checks, runs and returns."""

    inputs: list[Array]
    guards: list[tuple[Tensor[Any, Any], Array, bool]]
    modules: list[tuple[Any, bool]]
    items: list[tuple[Callable[..., Any], tuple[Any, ...]]]
    template: Any
    outs: list[tuple[Array, Any]] = field(default_factory=list)

    def valid(self) -> bool:
        return all(t.data is a and t.requires_grad is rg for t, a, rg in self.guards) and all(
            bool(getattr(m, "training", False)) is flag for m, flag in self.modules
        )


@dataclass
class _Pending:
    """A recording that made tensors from host data: the next call of its key records again,
    and its plan stands only if that recording runs the same kernels (``sig``) and makes the
    host-data tensors with the same values (``hosts``), on other arguments (``inputs``)."""

    sig: tuple[Any, ...]
    hosts: list[Array]
    inputs: list[Array]


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
        self._plans: dict[Any, _Plan | _Pending | _Seen | str] = {}
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
        if isinstance(state, _Pending):
            return self._record(key, args, kwargs, state)
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

    def _record(self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any], pending: _Pending | None = None) -> Any:
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
        skw = {k: sub(kwargs[k]) for k in sorted(kwargs)}  # the order _key lists them in
        rec = _Recorder(next_id(), inputs)
        _tp._recorder = rec
        try:
            result = self.fn(*sargs, **skw)
        finally:
            _tp._recorder = None
        self.recorded += 1
        changed = rec.changed()
        if changed is not None:
            rec.refuse(
                f"changes {changed} in place outside a recorded call (numpy on its .data), which a replay would "
                "not: make the update a recorded call (gradtape.tape.recorded_call), or do it outside"
            )
        outs: list[tuple[Array, Any]] = []
        template = _template(result, outs, rec)
        if rec.reason is not None:
            self._plans[key] = rec.reason
            self._refused(rec.reason)
            return result  # the eager values (copies of nothing: no plan keeps these arrays)
        plan = _Plan(inputs, rec.guards, rec.modules, rec.items, template, outs)
        if rec.hosts:  # constants made inside the call: a second recording, on other arguments, must agree
            sig = _signature(rec.items)
            hosts = [h.copy() for h in rec.hosts]
            if pending is None:
                self._plans[key] = _Pending(sig, hosts, [b.copy() for b in inputs])
                return _rebuild(plan)
            why = _differs(pending, sig, hosts)
            if why is not None:
                self._plans[key] = why
                self._refused(why)
                return _rebuild(plan)
            if inputs and all(_same(a, b) for a, b in zip(inputs, pending.inputs, strict=True)):
                return _rebuild(plan)  # the same arguments again: they cannot tell a constant, wait for others
        self._plans[key] = plan
        return _rebuild(plan)


def _same(a: Array, b: Array) -> bool:
    """``a`` and ``b`` hold the same bits in the same shape and dtype."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _describe(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ("array", v.shape, v.dtype.str)
    if callable(v):
        return _name(v)
    if type(v) in (list, tuple):
        return (type(v).__name__, len(v))
    return type(v).__name__


def _signature(items: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> tuple[Any, ...]:
    """What a recording ran, for comparing two: each item's function and its arguments'
    kinds, shapes and dtypes."""
    return tuple((_name(fn), tuple(_describe(a) for a in args)) for fn, args in items)


def _differs(pending: _Pending, sig: tuple[Any, ...], hosts: list[Array]) -> str | None:
    """Why a second recording disagrees with the first (``pending``), or ``None``."""
    if sig != pending.sig or len(hosts) != len(pending.hosts):
        return (
            "runs other kernels on a second recording (Python control flow or host data that depends on the "
            "arguments' or parameters' values), so no one plan replays it"
        )
    for a, b in zip(hosts, pending.hosts, strict=True):
        if not _same(a, b):
            return (
                f"makes a tensor of shape {a.shape} from host data (dev.tensor(...)) whose values differ between two "
                "calls: it is computed from the arguments' or the parameters' values (as dev.tensor(-x.data)), which "
                "a replay would not recompute; compute it with gradtape ops, or pass it in as an argument"
            )
    return None


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
        if result.requires_grad and result.id >= rec.start and not rec.trained:  # made on a tape, no backward
            rec.refuse(
                f"records a tape (it returns a tensor of shape {tuple(result.shape)} that requires grad); capture "
                "replays inference so far: call it under gradtape.no_grad()"
            )
            return None
        d = result.data
        if d.__class__ is np.ndarray and id(_root(d)) not in rec.known and result.id < rec.start:
            rec.known[id(_root(d))] = _root(d)  # a parameter returned as it is: read at replay
            rec.guards.append((result, d, result.requires_grad))
        if d.__class__ is not np.ndarray or id(_root(d)) not in rec.known:
            rec.refuse(
                f"returns a tensor of shape {tuple(result.shape)} that an op gradtape cannot replay yet computed"
            )
            return None
        outs.append((d, result.device))
        return _Out(len(outs) - 1)
    if result.__class__ is float and rec.boxes:
        if id(result) in rec.boxes:  # a recorded call's float (a clip norm): each replay's own
            return _Box(rec.boxes[id(result)][1])
        rec.refuse(
            "returns a Python float, which a replay would return unchanged, while it makes floats that change at "
            "each replay (a clip norm): return the clip norm itself, or compute with tensors"
        )
        return None
    if isinstance(result, _SCALARS):
        return result
    if type(result) in (tuple, list):
        return type(result)(_template(r, outs, rec) for r in result)
    if isinstance(result, tuple) and hasattr(type(result), "_fields"):  # a named tuple (values, indices)
        return type(result)(*(_template(r, outs, rec) for r in result))
    if type(result) is dict:
        return {k: _template(v, outs, rec) for k, v in result.items()}
    rec.refuse(
        f"returns a {type(result).__name__}: results are tensors (in tuples, lists, dicts, named tuples), numbers "
        "or None"
    )
    return None


@dataclass(frozen=True)
class _Out:
    index: int


@dataclass(frozen=True)
class _Box:
    """A result slot holding a recorded call's float, which each replay refills."""

    slot: list[float]


def _fill(template: Any, made: list[Tensor[Any, Any]]) -> Any:
    if isinstance(template, _Out):
        return made[template.index]
    if isinstance(template, _Box):
        return template.slot[0]
    if type(template) in (tuple, list):
        return type(template)(_fill(t, made) for t in template)
    if isinstance(template, tuple) and hasattr(type(template), "_fields"):
        return type(template)(*(_fill(t, made) for t in template))
    if type(template) is dict:
        return {k: _fill(v, made) for k, v in template.items()}
    return template


def _rebuild(plan: _Plan) -> Any:
    """The call's result: new untraced tensors holding copies of the plan's outputs."""
    return _fill(plan.template, [Tensor(a.copy(), dev) for a, dev in plan.outs])


def _replay(plan: _Plan, arrays: list[Array]) -> Any:
    for buf, a in zip(plan.inputs, arrays, strict=True):
        np.copyto(buf, a)
    for fn, args in plan.items:
        fn(*args)
    return _rebuild(plan)


def _ids_in(ops: list[Any], leaves: dict[int, Any], seeds: Any) -> set[int]:
    """Every int the entries reach (their times, their inputs' ids, the ids their closures
    hold, and sizes: a superset of the tensor ids the pass touches; see
    :func:`gradtape.engine.saved_ids`), the leaves' ids and the seeds' tensors' ids."""
    found: set[int] = set(leaves)
    found.update(t.id for t, _ in seeds)
    for entry in ops:
        found |= saved_ids(entry)
    return found


def _call_into(out: Array, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """A recorded call that returns a tensor (``clip_grad_norm_``'s norm), replayed: its new
    result copied into the recorded result's array, which the plan's later kernels and its
    outputs read."""
    np.copyto(out, fn(*args).data)


def _redraw(out: Array, draw: Callable[[], Array]) -> None:
    """A random tensor made inside the call, drawn again (fresh numbers) into its array."""
    np.copyto(out, draw())


def _call_into_box(box: list[float], fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """A recorded call that returns a float (the store form of ``clip_grad_norm_``), replayed:
    its new result into the slot the plan's result reads."""
    box[0] = fn(*args)


def _backward_item(
    ops: list[Any],
    grads: Any,
    fresh: bool,
    leafs: set[int] | None,
    seeds: list[tuple[int, Array]],
    leaves: dict[int, Any],
    to_grad: bool,
) -> None:
    """A recorded backward pass, replayed into the same store (emptied first where the recorded
    pass had made it)."""
    if fresh:
        grads._renew(leafs)
    replay_first_order(ops, grads, seeds, leaves, to_grad)


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
