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

**Compiled replays** (``capture(fn, compile=True)``, the default). The first replay of a
plan runs its items under a kernel trace (:mod:`gradtape.devices.kernels._trace`): the kernel
wrappers note each numba kernel they call and its exact arguments (products on oneDNN through
their compiled caller, the bias and ReLU passes, the fused backward kernels, cross-entropy's
backward, SGD's and Adam's updates), and each stretch of consecutive items that ran only noted kernels
becomes one generated numba function (about 2 us to call, where each item costs a Python
call, its checks and its allocations); the other items (a loss computed with numpy's ``exp``,
a convolution, an optimizer other than SGD, Adam and AdamW, a hand-written closure) stay
Python calls between them. Only items and backward rules declared traceable take part (every other
one, and every numpy fallback of a wrapper, refuses, naming itself). What the traced items do
to Python objects (the backward's gradient store and ``.grad``, ``zero_grad``'s clearing) is
kept as the state they left and set again after each compiled call, with the gradients a
caller can still reach afterwards (``.grad`` after ``opt.step()``) handed out as copies, so an
array kept from one step is never overwritten by the next. Before each stretch runs compiled,
what it read is checked as traced (the optimizer's hyper-parameters and state, the stores'
contents, which ``.grad`` were set); where it changed (a learning rate set between calls) the
stretch replays item by item and is traced again (at once after 50 good calls; a stretch
that keeps changing stays item by item). The second replay checks every compiled stretch
against the flat replay on its new inputs, bit for bit (every array the items changed and
every gradient they made): a stretch that differs replays item by item from then on, so an
item that computed outside its noted kernels can slow a plan but not change its numbers.
:attr:`Captured.compiled_replays` counts the calls in which every stretch ran compiled,
:attr:`Captured.compile_reason` says why something replays item by item.

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

import functools
import operator
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, TypeVar

import numba
import numpy as np

from gradtape import tape as _tp
from gradtape.devices.kernels import _jit, _trace
from gradtape.engine import _BORROWED, clear_grad, entry_op, replay_first_order, saved_arrays, saved_ids, set_grad
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
    compiled: _Compiled | str | None = None  # None: not tried yet; a string: why it replays item by item

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
        compile: whether replays are compiled (see the module docstring).
        compiled_replays: replays in which every traced stretch ran as one compiled call.
        compile_reason: why the last plan (or a stretch of it) replays item by item, else
            ``None``.
    """

    def __init__(self, fn: Callable[P, R], max_plans: int = 8, compile: bool = True) -> None:
        if not callable(fn):
            raise TypeError(f"capture: expected a function or a module, got {type(fn).__name__}")
        if max_plans < 1:
            raise ValueError(f"capture: max_plans must be at least 1, got {max_plans}")
        if not isinstance(compile, bool):
            raise TypeError(f"capture: compile must be a bool, got {type(compile).__name__}")
        self.fn = fn
        self.max_plans = max_plans
        self.compile = compile
        self.compiled_replays = 0
        self.compile_reason: str | None = None
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
                if not self.compile or isinstance(state.compiled, str):
                    return _replay(state, arrays)
                return self._compiled(state, arrays)
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

    def _compiled(self, plan: _Plan, arrays: list[Array]) -> Any:
        """A replay of ``plan`` as one compiled call, once the plan has one and it was checked;
        the first replay traces the plan's kernels and compiles them, the second checks the
        compiled call against a flat replay (see :func:`_traced` and :func:`_checked`)."""
        c = plan.compiled
        if c is None:
            result, got = _traced(plan, arrays)
            plan.compiled = got
            if isinstance(got, str):
                self.compile_reason = got
            return result
        assert isinstance(c, _Compiled)
        if not c.checked:
            result, why = _checked(plan, c, arrays)
            if why is not None:
                self.compile_reason = why
            return result
        result, missed = _run_compiled(plan, c, arrays, _name(self.fn))
        if not missed:
            c.calls += 1
            self.compiled_replays += 1
        elif c.calls >= RETRACE_AFTER:  # a guard changed (a learning rate set between calls): trace again
            plan.compiled = None
        else:  # it keeps changing: tracing, compiling and checking at every call would cost more
            self.compile_reason = (
                "finds the objects a traced run reads (an optimizer's hyper-parameters, gradient stores, .grad "
                f"arrays a Python backward made) changed within {RETRACE_AFTER} calls of a trace: that run "
                "replays item by item"
            )
            if not c.uncompile(plan, missed):
                plan.compiled = self.compile_reason
        return result

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


def _copy_inputs(plan: _Plan, arrays: list[Array]) -> None:
    """The call's tensor and array arguments into the buffers the recorded call read."""
    for buf, a in zip(plan.inputs, arrays, strict=True):
        np.copyto(buf, a)


def _replay(plan: _Plan, arrays: list[Array]) -> Any:
    _copy_inputs(plan, arrays)
    for fn, args in plan.items:
        fn(*args)
    return _rebuild(plan)


@dataclass
class _Effects:
    """What a traced item did to Python objects (:class:`gradtape.devices.kernels._trace.Touches`:
    gradient stores, tensors' ``.grad``), redone after each compiled call of its run: each
    store's contents after the item (``post``; arrays the item made are the trace's own, which
    the compiled kernels rewrite) and the ``.grad`` each tensor got (``post_grad``: changed or
    not, the array, whether a store lends it). A compiled call applies them only where the
    objects are as they were when traced (:meth:`ready`: each store held ``pre``, each tensor's
    ``.grad`` held ``pre_grad``'s array, the guard returns what it returned); otherwise that
    run replays item by item. ``exposed``: the arrays made here that the caller can still
    reach after the traced call (a ``.grad`` left for the next step); the call hands those out
    as copies at its end (:func:`_hand_out`), so a gradient the caller keeps is never
    overwritten by a later call."""

    touches: _trace.Touches
    pre: list[dict[int, Array]]
    pre_grad: list[Array | None]
    guard: tuple[Any, ...] = ()
    post: list[tuple[dict[int, Array], tuple[Any, ...]]] = field(default_factory=list)
    pre_flags: list[tuple[Any, ...]] = field(default_factory=list)  # each store's Gradients._flags() before
    post_grad: list[tuple[bool, Array | None, bool]] = field(default_factory=list)
    exposed: set[int] = field(default_factory=set)
    changes: list[bool] = field(default_factory=list)  # per store: the item changed it
    item: int = -1  # its index in the plan's items

    def ready(self, out: dict[int, Array], implied: set[int] | frozenset[int] = frozenset()) -> bool:
        """Whether the objects are as traced; ``out``: the arrays handed out as copies (the
        traced array's id to its copy), which stand for the traced ones; ``implied``: the ids of
        the stores and tensors an earlier item of the same run has just set as traced."""
        t = self.touches
        if t.guard is not None and not _same_guard(t.guard(), self.guard):
            return False
        for k, (store, pre) in enumerate(zip(t.stores, self.pre, strict=True)):
            if (k == 0 and t.fresh) or id(store) in implied:
                continue
            d = store._data
            if len(d) != len(pre) or any(d.get(i) is not out.get(id(a), a) for i, a in pre.items()):
                return False
        read = t.grads_read
        if read == "none" or (t.tensors and implied.issuperset(map(id, t.tensors))):
            return True
        for x, a in zip(t.tensors, self.pre_grad, strict=True):
            if id(x) in implied:
                continue
            gt = getattr(x, "_grad", None)
            if a is None or read == "is_none":
                if (gt is None) is not (a is None):
                    return False
            elif gt is None or gt.data is not out.get(id(a), a):
                return False
        return True

    def touched(self) -> set[int]:
        """The ids of the stores and tensors :meth:`apply` sets (or that the item read and left
        as they were: either way as traced after it)."""
        return {id(s) for s in self.touches.stores} | {id(x) for x in self.touches.tensors}

    def made(self) -> list[tuple[Any, Array]]:
        """The arrays the item made (in no store and no ``.grad`` before it), each with where it
        was left: ``(store, key)`` or the tensor whose ``.grad`` it is."""
        before = {id(a) for pre in self.pre for a in pre.values()}
        before.update(id(a) for a in self.pre_grad if a is not None)
        found: dict[int, tuple[Any, Array]] = {}
        for store, (data, _) in zip(self.touches.stores, self.post, strict=True):
            for i, a in data.items():
                if id(a) not in before:
                    found.setdefault(id(a), ((store, i), a))
        for x, (changed, g, _) in zip(self.touches.tensors, self.post_grad, strict=True):
            if changed and g is not None and id(g) not in before:
                found.setdefault(id(g), (x, g))
        return list(found.values())


def _same_guard(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Two guards' ``(values, arrays)`` agree: the values equal, the arrays the same objects."""
    return bool(a[0] == b[0]) and len(a[1]) == len(b[1]) and all(map(operator.is_, a[1], b[1]))


def _effects_before(touches: _trace.Touches) -> _Effects:
    pre = [{} if k == 0 and touches.fresh else dict(s._data) for k, s in enumerate(touches.stores)]
    grads = [getattr(x, "_grad", None) for x in touches.tensors]
    guard = () if touches.guard is None else touches.guard()
    eff = _Effects(touches, pre, [None if g is None else g.data for g in grads], guard)
    eff.pre_flags = [s._flags() for s in touches.stores]
    return eff


def _effects_after(eff: _Effects) -> None:
    t = eff.touches
    eff.post = [(dict(s._data), s._flags()) for s in t.stores]
    flags_before = eff.pre_flags
    eff.changes = [
        (k == 0 and t.fresh)
        or len(pre) != len(data)
        or any(data.get(i) is not a for i, a in pre.items())
        or flags != before
        for k, (pre, (data, flags), before) in enumerate(zip(eff.pre, eff.post, flags_before, strict=True))
    ]
    for x, a in zip(t.tensors, eff.pre_grad, strict=True):
        gt = getattr(x, "_grad", None)
        now = None if gt is None else gt.data
        # an item that only sets .grad (zero_grad) sets it at every call, whatever it held
        changed = now is not a or t.grads_read == "none"
        eff.post_grad.append((changed, now, gt is not None and gt.id in _BORROWED))


def _exposed(effects: list[_Effects]) -> None:
    """Mark, in each item's effects, the arrays it made that a store or a ``.grad`` still holds
    at the end of the traced call (:attr:`_Effects.exposed`)."""
    for eff in effects:
        made = {id(a) for _, a in eff.made()}
        held: set[int] = set()
        for store in eff.touches.stores:
            held.update(id(a) for a in store._data.values())
        for x in eff.touches.tensors:
            gt = getattr(x, "_grad", None)
            if gt is not None:
                held.add(id(gt.data))
        eff.exposed = made & held


def _hand_out(runs: list[_Run], ids: set[int]) -> dict[int, Array]:
    """At the end of a compiled call: each exposed array (``ids``) a store or a ``.grad`` that
    ``runs`` set holds replaced by a copy (one copy per array, shared by all who hold it, as the
    array was); returns the traced array's id to its copy, which the next call's
    :meth:`_Effects.ready` reads."""
    copies: dict[int, Array] = {}

    def copy(a: Array) -> Array:
        c = copies.get(id(a))
        if c is None:
            c = copies[id(a)] = a.copy()
        return c

    for run in runs:
        for store, _, _ in run.stores:
            d = store._data
            for i, a in d.items():
                if id(a) in ids:
                    d[i] = copy(a)
        for x, _, _ in run.tensors:
            gt = getattr(x, "_grad", None)
            if gt is not None and id(gt.data) in ids:
                gt.data = copy(gt.data)
    return copies


@dataclass
class _Run:
    """A stretch of consecutive traced items (``start:stop``) replayed as generated numba
    functions: each of ``calls``, ``(fn, values, failures)``, runs up to :data:`MAX_STEPS` of
    their kernels in order, ``fn(*values) -> 0`` over ``values`` (the arrays and numbers the
    wrappers called them with; none where they run no kernel, as a ``zero_grad``); a nonzero
    return ``k`` is ``failures[k - 1]``. ``effects``: those of its
    items that touch Python objects, in order, each with the ids of the objects an earlier one
    sets (``implied``: found as traced without a look). Before the function runs, a compiled
    call checks the rest (:meth:`ready`); after it, it sets each object as the last item
    touching it left it (:meth:`apply`: intermediate states, a ``.grad`` set by the backward
    and cleared by ``zero_grad`` after it, are seen by no Python code)."""

    start: int
    stop: int
    calls: list[tuple[_Bound, tuple[Any, ...], list[_trace.Failure]]]
    effects: list[_Effects]
    implied: list[set[int]] = field(default_factory=list)
    stores: list[tuple[Any, dict[int, Array], tuple[Any, ...]]] = field(default_factory=list)
    tensors: list[tuple[Tensor[Any, Any], Array | None, bool]] = field(default_factory=list)
    afters: list[Callable[[], None]] = field(default_factory=list)
    numbers: list[Callable[[bool], None]] = field(default_factory=list)
    installed: set[int] = field(default_factory=set)
    exposed: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        seen: set[int] = set()
        stores: dict[int, tuple[Any, dict[int, Array], tuple[Any, ...]]] = {}
        tensors: dict[int, tuple[Tensor[Any, Any], Array | None, bool]] = {}
        for e in self.effects:
            self.implied.append(set(seen))
            seen |= e.touched()
            t = e.touches
            for store, (data, flags), change in zip(t.stores, e.post, e.changes, strict=True):
                if change:
                    stores[id(store)] = (store, data, flags)
            for x, (changed, a, lent) in zip(t.tensors, e.post_grad, strict=True):
                if changed:
                    tensors[id(x)] = (x, a, lent)
            if t.after is not None:
                self.afters.append(t.after)
            if t.numbers is not None:
                self.numbers.append(t.numbers)
            self.exposed |= e.exposed
        self.stores = list(stores.values())
        self.tensors = list(tensors.values())
        self.installed = {id(a) for _, data, _ in self.stores for a in data.values()}
        self.installed |= {id(a) for _, a, _ in self.tensors if a is not None}

    def ready(self, out: dict[int, Array]) -> bool:
        for e, implied in zip(self.effects, self.implied, strict=True):
            if not e.ready(out, implied):
                return False
        return True

    def apply(self) -> None:
        for store, data, flags in self.stores:
            store._restore(data, flags)
        for x, a, lent in self.tensors:
            clear_grad(x)
            if a is not None:
                set_grad(x, a, lent)
        for f in self.afters:
            f()


@dataclass
class _Compiled:
    """A plan's compiled replay: its items as ``parts``, each a :class:`_Run` or an item
    ``(fn, args)`` run as the flat replay runs it (an op or a call the trace does not take: a
    convolution, a loss computed with numpy's ``exp``, RMSprop's ``step``). ``checked``: it
    matched a flat replay once (:func:`_checked`)."""

    parts: list[Any]
    checked: bool = False
    out: dict[int, Array] = field(default_factory=dict)  # the last call's copies (see _hand_out)
    calls: int = 0  # compiled calls that found every run as traced
    direct: dict[int, list[tuple[Array, int, int]]] | None = None  # see _direct_inputs

    def uncompile(self, plan: _Plan, runs: list[_Run]) -> bool:
        """Replay ``runs`` item by item from now on; returns whether any run is left."""
        self.parts = [q for p in self.parts for q in (plan.items[p.start : p.stop] if p in runs else [p])]
        self.direct = None
        return any(p.__class__ is _Run for p in self.parts)


def _traced(plan: _Plan, arrays: list[Array]) -> tuple[Any, _Compiled | str]:
    """One flat replay of ``plan`` with each item that may be traced
    (:func:`gradtape.devices.kernels._trace.traceable`) run under a kernel trace: the call's
    result, and the plan's compiled replay (runs of traced items made one numba function each,
    the other items kept as they are), or why it has none (no item traced, numba refusing the
    generated function)."""
    _copy_inputs(plan, arrays)
    runs: list[list[Any]] = []  # per item: its kernel steps ([None] for none) where traced, else []
    effects_of: list[_Effects | None] = []
    why: str | None = None
    for fn, args in plan.items:
        key, full, kw = (fn.func, fn.args + args, fn.keywords) if isinstance(fn, functools.partial) else (fn, args, {})
        entry = _trace.TRACEABLE.get(key)
        reason = None if entry is not None else f"runs {_name(key)}, which compiled replays do not cover yet"
        if entry is not None and entry[0] is not None:
            reason = entry[0](full, kw)
        eff = None
        if reason is None and entry is not None and entry[1] is not None:
            eff = _effects_before(entry[1](full, kw))
        t = _trace.Trace()
        if reason is None:
            _trace.active = t
        try:
            fn(*args)
        finally:
            _trace.active = None
        if eff is not None:
            _effects_after(eff)
        reason = reason or t.reason
        if reason is not None:
            runs.append([])
            effects_of.append(None)
            why = why or reason
            continue
        runs.append(list(t.steps) or [None])
        effects_of.append(eff)
    result = _rebuild(plan)
    _exposed([e for e in effects_of if e is not None])
    try:
        parts = _segments(plan, runs, effects_of)
    except Exception as err:  # numba refused a generated function: the flat replay stays
        return result, f"could not be compiled by numba ({type(err).__name__}: {str(err).splitlines()[0][:200]})"
    if not any(isinstance(p, _Run) for p in parts):
        return result, why or "runs no kernel a trace takes"
    compiled = [p for p in parts if isinstance(p, _Run)]
    exposed = {i for r in compiled for i in r.exposed}
    # what this call leaves the caller are copies too: the traced arrays are the compiled calls' own
    return result, _Compiled(parts, out=_hand_out(compiled, exposed) if exposed else {})


def _segments(plan: _Plan, runs: list[list[Any]], effects_of: list[_Effects | None]) -> list[Any]:
    """The compiled replay's parts: each maximal stretch of traced items one :class:`_Run`, the
    other items as they are."""
    parts: list[Any] = []
    i = 0
    n = len(plan.items)
    while i < n:
        if not runs[i]:
            parts.append(plan.items[i])
            i += 1
            continue
        j = i
        steps: list[Any] = []
        effects: list[_Effects] = []
        while j < n and runs[j]:
            steps += [s for s in runs[j] if s is not None]
            eff = effects_of[j]
            if eff is not None:
                eff.item = j
                effects.append(eff)
            j += 1
        if len(steps) == 1 and not effects:  # one kernel: a compiled call would cost what the item costs
            parts += plan.items[i:j]
        else:
            calls = [_compile(steps[k : k + MAX_STEPS]) for k in range(0, len(steps), MAX_STEPS)]
            parts.append(_Run(i, j, calls, effects))
        i = j
    return parts


MAX_STEPS = 32
"""Kernel calls per generated function at most: numba's compile time grows faster than the
function's length (a 135-call function with 547 arguments took 9 s, the same calls in
functions of 32 about 1.5 s in all), while each further function costs one call (about 1-2
microseconds)."""


def _compile(
    steps: list[tuple[Any, tuple[Any, ...], _trace.Failure | None, int]],
) -> tuple[Any, tuple[Any, ...], list[_trace.Failure]]:
    """The generated function calling each traced kernel with its arguments, each of the numba
    type the wrapper called it with (the kernel's compiled code, not a new specialisation):
    every array a parameter once (a flat or reshaped view of a C-contiguous array, or the
    transpose of a 2-D one, made from it inside: numba's compile time grows with the number
    of parameters), Python floats constants (numba types them float64, as a call from Python
    does), other numbers parameters (a bool or an int constant would be a literal type, and a
    new specialisation)."""
    ns: dict[str, Any] = {"_address": _jit.address, "_carray": numba.carray}
    params: list[str] = ["_at"]
    values: list[Any] = []
    seen: dict[Any, str] = {}
    kernels: dict[int, str] = {}
    failures: list[_trace.Failure] = []
    body: list[str] = []
    lines: list[str] = []  # arrays made inside, before the calls
    addresses: list[int] = []  # of the C-contiguous arrays, made from them inside (_at, the first parameter)

    keep: list[Array] = []

    def new(v: Any, key: Any) -> str:
        name = seen[key] = f"a{len(seen)}"
        params.append(name)
        values.append(v)
        return name

    def param(v: Any) -> str:
        if v is None:
            return "None"
        if isinstance(v, _trace.Dyn):  # a number read from its array at each call
            return f"{param(v.array)}[{v.index}]"
        if v.__class__ is float:
            key: Any = ("f", repr(v))  # repr: 0.0 and -0.0 stay two
            name = seen.get(key)
            if name is None:
                name = seen[key] = f"c{len(seen)}"
                ns[name] = v
            return name
        if isinstance(v, np.ndarray):  # one name per view geometry: a.ravel() twice is one array
            i = v.__array_interface__
            key = (id(_root(v)), i["data"][0], v.shape, v.strides, v.dtype.str, v.flags.writeable)
            name = seen.get(key)
            if name is None:
                if v.ndim and v.flags.c_contiguous and v.flags.writeable and v.flags.aligned and v.size:
                    # numba types it as typeof does (C layout, writable, aligned): the kernel's own code
                    name = seen[key] = f"a{len(seen)}"
                    dt = seen.get(("dtype", v.dtype.str))
                    if dt is None:
                        dt = seen[("dtype", v.dtype.str)] = f"d{len(seen)}"
                        ns[dt] = v.dtype.type
                    lines.append(f"    {name} = _carray(_address(_at[{len(addresses)}]), {v.shape!r}, {dt})")
                    addresses.append(i["data"][0])
                    keep.append(v)
                    return name
                view = _view_of_root(v)
                if view is None:
                    return new(v, key)
                name = seen[key] = f"a{len(seen)}"
                lines.append(f"    {name} = {param(_root(v))}{view}")
            return name
        if type(v) in (bool, int) or isinstance(v, np.generic):
            key = (type(v), repr(v))
            return seen.get(key) or new(v, key)
        raise TypeError(f"a kernel argument of type {type(v).__name__}")

    for kernel, args, failure, ok in steps:
        k = kernels.get(id(kernel))
        if k is None:
            k = kernels[id(kernel)] = f"k{len(kernels)}"
            ns[k] = kernel
        call = f"{k}({', '.join(param(a) for a in args)})"
        if failure is None:
            body.append(f"    {call}")
        else:
            failures.append(failure)
            body += [f"    if {call} != {int(ok)}:", f"        return {len(failures)}"]
    source = "\n".join([f"def _replay({', '.join(params)}):", *lines, *body, "    return 0", ""])
    fn: Any = _jit.jit_source(source, "_replay", ns)
    args = (np.array(addresses, np.intp), *values, *keep)  # keep: held here, so the addresses stay theirs
    fn.compile(tuple(numba.typeof(v) for v in args[: 1 + len(values)]))  # now, not at the first call (it would run)
    return _Bound(fn, 1 + len(values)), args, failures


class _Bound:
    """A generated function called with the first ``n`` of the values it is stored with (the
    rest are the arrays whose addresses it reads, held so they stay alive)."""

    __slots__ = ("fn", "n")

    def __init__(self, fn: Any, n: int) -> None:
        self.fn, self.n = fn, n

    def __call__(self, *values: Any) -> int:
        rc: int = self.fn(*values[: self.n])
        return rc


def _view_of_root(v: Array) -> str | None:
    """How to make ``v`` from the array that owns its memory inside a generated function
    (``".reshape((...))"`` or ``".T"``), keeping ``v``'s numba type, or ``None``: ``v`` is the
    owner, or another view (it is then a parameter of its own)."""
    r = _root(v)
    if v is r or not r.flags.c_contiguous or v.dtype != r.dtype or v.flags.writeable != r.flags.writeable:
        return None
    if v.__array_interface__["data"][0] != r.__array_interface__["data"][0] or v.size != r.size or v.ndim == 0:
        return None
    if v.flags.c_contiguous:
        return f".reshape({v.shape!r})"
    if v.ndim == 2 and r.ndim == 2 and v.shape == r.shape[::-1] and v.flags.f_contiguous:
        return ".T"
    return None


def _direct_inputs(plan: _Plan, c: _Compiled) -> dict[int, list[tuple[Array, int, int]]]:
    """The call's arguments that the compiled functions may read where the caller holds them,
    with no copy into the plan's input buffer: inputs read only through the functions' address
    arrays (rebuilt inside with ``numba.carray``), by no item run as Python (nothing reachable
    from its arguments, a backward pass's saved arrays included) and not returned: input index
    -> ``[(address array, slot, byte offset into the buffer), ...]``."""
    roots = {id(_root(b)): k for k, b in enumerate(plan.inputs)}
    blocked: set[int] = {roots[id(_root(d))] for d, _ in plan.outs if id(_root(d)) in roots}
    runs = [p for p in c.parts if p.__class__ is _Run]
    for part in c.parts:
        if part.__class__ is not _Run:
            fn, args = part
            found = saved_arrays((0, fn, *args))
        else:
            found = (v for bound, values, _ in part.calls for v in values[1 : bound.n])
        for a in found:
            if a.__class__ is np.ndarray and id(_root(a)) in roots:
                blocked.add(roots[id(_root(a))])
    slots: dict[int, list[tuple[Array, int, int]]] = {k: [] for k in roots.values() if k not in blocked}
    for part in runs:
        for bound, values, _ in part.calls:
            at = values[0]
            for j, a in enumerate(values[bound.n :]):
                k = roots.get(id(_root(a)))
                if k in slots:
                    start = plan.inputs[k].__array_interface__["data"][0]
                    slots[k].append((at, j, int(at[j]) - start))
    return {k: s for k, s in slots.items() if s}


def _run_compiled(plan: _Plan, c: _Compiled, arrays: list[Array], name: str) -> tuple[Any, list[_Run]]:
    """A compiled replay: each run's function (then its effects), the other items as they are;
    a run whose objects are not as traced replays item by item. Returns the result and the
    runs that did. An argument only compiled functions read (:func:`_direct_inputs`) is read
    where the caller holds it, when it is C-contiguous and aligned: its address goes into the
    functions' address arrays instead of a copy into the input buffer (a large batch's copy
    is what a compiled step of a kernel-bound model otherwise adds to the eager step)."""
    direct = c.direct
    if direct is None:
        direct = c.direct = _direct_inputs(plan, c)
    pending: list[tuple[Array, Array]] = []  # (buffer, the caller's array) not copied yet
    for k, (buf, a) in enumerate(zip(plan.inputs, arrays, strict=True)):
        slots = direct.get(k)
        if slots is not None:
            here = a.flags.c_contiguous and a.flags.aligned and a.dtype is buf.dtype
            start = (a if here else buf).__array_interface__["data"][0]
            for at, j, offset in slots:
                at[j] = start + offset
            if here:
                pending.append((buf, a))
                continue
        np.copyto(buf, a)
    items = plan.items
    out = c.out
    exposed: set[int] = set()
    handed: list[_Run] = []
    missed: list[_Run] = []
    for part in c.parts:
        if part.__class__ is not _Run:
            part[0](*part[1])
            continue
        if not part.ready(out):
            for buf, a in pending:  # the items read the buffers
                np.copyto(buf, a)
            pending = []
            for fn, args in items[part.start : part.stop]:
                fn(*args)
            missed.append(part)
            continue
        for numbers in part.numbers:  # this call's step counts and step sizes (Adam)
            numbers(True)
        for fn, values, failures in part.calls:
            rc = fn(*values)
            if rc:
                failure = failures[rc - 1]
                if callable(failure):
                    raise failure()
                raise RuntimeError(f"gradtape.capture: a compiled replay of {name} failed: {failure}")
        part.apply()
        if part.exposed:
            handed.append(part)
            exposed |= part.exposed
        if out:  # what it set holds the traced arrays themselves now
            out = {k: v for k, v in out.items() if k not in part.installed}
    c.out = _hand_out(handed, exposed) if handed else {}
    return _rebuild(plan), missed


RETRACE_AFTER = 50
"""A compiled replay whose run finds its objects changed (a guard: a learning rate set
between calls, a store holding other gradients) after at least this many calls that found them
as traced is traced again at the next call (once per epoch's schedule, say); one that finds
them changed sooner replays item by item from then on (a schedule stepped at every call would
otherwise trace, compile and check at every call)."""


def _checked(plan: _Plan, c: _Compiled, arrays: list[Array]) -> tuple[Any, str | None]:
    """A flat replay of ``plan`` (its result and its effects are the call's) in which each run,
    after its items ran, is run again compiled from the arrays as they were before them: every
    array the flat items changed, and every array an item made for a store or a ``.grad``,
    must come out bit for bit the same, or that run replays item by item from then on (the
    returned reason says so; with no run left, the plan has no compiled replay). It catches an
    item declared traceable that computes something outside its noted kernels, or a traced
    kernel reading an array a Python item makes anew at each call: the compiled function
    would read or leave that array as the traced replay left it, while these inputs differ."""
    _copy_inputs(plan, arrays)
    items = plan.items
    failed: list[_Run] = []
    for part in c.parts:
        if part.__class__ is not _Run:
            part[0](*part[1])
            continue
        every = [v for _, values, _ in part.calls for v in values]
        roots = list({id(_root(v)): _root(v) for v in every if isinstance(v, np.ndarray)}.values())
        before = [r.copy() for r in roots]
        by_item = {e.item: e for e in part.effects}
        made_now: list[list[Array] | None] = []
        for k in range(part.start, part.stop):
            fn, args = items[k]
            fn(*args)
            e = by_item.get(k)
            if e is not None:
                made_now.append(_made_now(e))
        truth = [r.copy() for r in roots]
        for r, b in zip(roots, before, strict=True):
            np.copyto(r, b)
        for numbers in part.numbers:  # the numbers the flat items just used (their counts advanced)
            numbers(False)
        rc = 0
        for fn, values, _ in part.calls:
            rc = rc or fn(*values)
        # the arrays the flat items changed must come out the same, and so must the tensors the
        # run's items touch (parameters: a flat step may leave one as it was, a zero gradient,
        # where a compiled one reading stale arrays would not); the others are the trace's own
        # scratch (the flat items made their own), or unchanged
        kept = {id(_root(x.data)) for e in part.effects for x in e.touches.tensors if isinstance(x.data, np.ndarray)}
        changed = [not _same(b, t) for b, t in zip(before, truth, strict=True)]
        watched = [w or id(r) in kept for r, w in zip(roots, changed, strict=True)]
        same = rc == 0 and all(_same(r, t) for r, t, w in zip(roots, truth, watched, strict=True) if w)
        for e, now in zip(part.effects, made_now, strict=True):
            same = same and now is not None and all(_same(a, b) for (_, a), b in zip(e.made(), now, strict=True))
        if not same:
            failed.append(part)
        for r, t, w in zip(roots, truth, watched, strict=True):
            if w or not same:  # the flat values; a failed run leaves nothing of its compiled try
                np.copyto(r, t)
    c.checked = True
    if not failed:
        return _rebuild(plan), None
    why = (
        "gave other values compiled than item by item in a traced run (an item computing outside its traced "
        "kernels, or reading arrays a Python item makes anew at each call): that run replays item by item"
    )
    if not c.uncompile(plan, failed):
        plan.compiled = why
    return _rebuild(plan), why


def _made_now(e: _Effects) -> list[Array] | None:
    """The arrays this call's flat run left where the traced run left :meth:`_Effects.made`'s
    (the same store key, or the same tensor's ``.grad``), or ``None`` if one is missing."""
    found: list[Array] = []
    for where, _ in e.made():
        if isinstance(where, tuple):
            now = where[0]._data.get(where[1])
        else:
            gt = getattr(where, "_grad", None)
            now = None if gt is None else gt.data
        if now is None:
            return None
        found.append(now)
    return found


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


def capture(fn: Callable[P, R], *, max_plans: int = 8, compile: bool = True) -> Captured[P, R]:
    """Record ``fn``'s kernels on its second call and replay them on later calls with the same
    argument shapes, dtypes and values (see :mod:`gradtape.capturing`). Use it as a decorator
    or on a module: ``predict = gradtape.capture(model)``.

    Args:
        fn: a function or module; its tensor results come back as new untraced tensors.
        max_plans: plans kept (one per key: argument shapes, dtypes, other argument values and
            grad mode); the oldest is dropped beyond.
        compile: replay each stretch of traced kernels as one generated numba function (the
            default: the first replay traces and compiles, the second checks it against the
            item-by-item replay); ``False`` replays item by item.

    Returns:
        A :class:`Captured` callable with ``fn``'s signature.

    Raises:
        TypeError: ``fn`` is not callable, or ``compile`` is not a bool. ValueError:
        ``max_plans < 1``. A call that cannot be replayed does not raise: it runs eagerly,
        with one ``RuntimeWarning`` naming why.
    """
    return Captured(fn, max_plans, compile)


def _backward_touches(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _trace.Touches:
    _ops, grads, fresh, _leafs, _seeds, leaves, to_grad = args
    tensors = [t for t in leaves.values() if t is not None] if to_grad else []
    return _trace.Touches([grads], tensors, fresh, grads_read="is_none")


_trace.traceable(_backward_item, touches=_backward_touches)
