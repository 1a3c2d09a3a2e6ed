"""Kernel tracing, for :func:`gradtape.capture`'s compiled replays.

A captured plan replays its items (``(fn, args)`` pairs: an op's replay kernel over the
arrays it recorded) one Python call each. A *compiled* replay calls one generated numba
function instead, which calls the same numba kernels over the same arrays in the same order.
This module is how the plan learns which numba kernels its items run: while a
:class:`Trace` is :data:`active` (one replay of the plan, run by ``gradtape.capturing``),
the kernel wrappers that pick a compiled kernel for their arrays (``blas.matmul`` on oneDNN,
``elementwise.add_rows``, ``activations.relu``, ...) note the dispatcher and the exact
arguments they call it with (:func:`note`); where a wrapper computes with numpy instead (a
fallback for small or strided arrays, another library's product), it refuses
(:func:`refuse`): numpy's loops are not callable from numba, and the same arithmetic
written in a numba loop can differ in the last bits (numpy's SIMD ``exp``, its pairwise
sums).

Which replay items may be traced at all is declared by the modules that make them
(:func:`traceable`): an item function whose only arithmetic runs in noted kernels. An item
function not declared refuses the compiled replay with its name. A declared function that
still computed something in numpy would leave that array stale in a compiled replay:
``gradtape.capturing`` checks every compiled plan once against a flat replay, on other
inputs, before it uses it (bit for bit), so such a slip keeps the plan flat rather than
giving wrong numbers.

Nothing here runs while no trace is active but one global test per wrapper call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Dyn", "Failure", "Touches", "Trace", "active", "note", "refuse", "traceable"]


Failure = str | Callable[[], Exception]


@dataclass(frozen=True)
class Dyn:
    """A kernel argument that is a number read at each compiled call from ``array[index]``
    (float64, as a Python float is), where the item's :attr:`Touches.numbers` writes it: Adam's
    bias-corrected step size, which changes at every step. Noted in place of the number."""

    array: Any
    index: int


class Trace:
    """The numba kernels one replay ran, in order: ``steps`` holds ``(dispatcher, args,
    failure, ok)`` (``failure``: the kernel returns a status, and one other than ``ok`` is the
    error the wrapper raises, so described), ``reason`` why the replay cannot be compiled
    (``None`` if it can)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.steps: list[tuple[Any, tuple[Any, ...], Failure | None, int]] = []
        self.reason: str | None = None

    def step(self, kernel: Any, args: tuple[Any, ...], failure: Failure | None = None, ok: int = 0) -> None:
        if threading.get_ident() == self.thread:
            self.steps.append((kernel, args, failure, ok))

    def refuse(self, why: str) -> None:
        if threading.get_ident() == self.thread and self.reason is None:
            self.reason = why


active: Trace | None = None
"""The trace being taken (set by ``gradtape.capturing`` around one replay), else ``None``."""


def note(kernel: Any, *args: Any, failure: Failure | None = None, ok: int = 0) -> None:
    """Where a trace is active: the wrapper just called ``kernel(*args)`` (a numba dispatcher;
    ``args`` arrays and numbers). ``failure``: the kernel returns a status, and one other than
    ``ok`` is the error the wrapper raises: a function making that exception (called then,
    so it reads the arrays as they are), or its text (a compiled replay raises
    ``RuntimeError`` with it)."""
    t = active
    if t is not None:
        t.step(kernel, args, failure, ok)


def refuse(why: str) -> None:
    """Where a trace is active: this replay computes something outside numba kernels (``why``
    names it), so its plan replays item by item."""
    t = active
    if t is not None:
        t.refuse(why)


@dataclass
class Touches:
    """The Python objects a traced item reads and changes besides arrays, which a compiled
    replay must find as traced and leave as the item would: gradient ``stores`` (their
    contents; ``fresh``: the item empties the first one before it writes, so its earlier
    contents do not matter), ``tensors`` whose ``.grad`` it reads or sets (``grads_read``:
    ``"same"``, its kernels read the ``.grad`` arrays, which must be the traced ones;
    ``"is_none"``, it reads only whether each is ``None``, as a backward pass deciding to set
    or to add; ``"none"``, it only sets them, as ``zero_grad``), ``guard`` (a
    function returning what else it read, ``(values, arrays)``: hyper-parameters, optimizer
    state; a compiled replay runs only where it returns what it returned when traced, the
    values equal, the arrays the same objects), ``after`` (Python bookkeeping to run after
    each compiled call: an optimizer's write log) and ``numbers`` (for an item whose kernels
    take numbers that change at every call, noted as :class:`Dyn`: ``numbers(True)`` does the
    item's Python bookkeeping, Adam's step counts, and writes this call's numbers, before each
    compiled call; ``numbers(False)`` writes them for the call just run item by item)."""

    stores: list[Any] = field(default_factory=list)
    tensors: list[Any] = field(default_factory=list)
    fresh: bool = False
    grads_read: str = "same"
    guard: Callable[[], tuple[tuple[Any, ...], tuple[Any, ...]]] | None = None
    after: Callable[[], None] | None = None
    numbers: Callable[[bool], None] | None = None


Check = Callable[[tuple[Any, ...], dict[str, Any]], str | None]
Touch = Callable[[tuple[Any, ...], dict[str, Any]], Touches]

TRACEABLE: dict[Callable[..., Any], tuple[Check | None, Touch | None]] = {}
"""Replay item functions (for a recorded call, the function the call wraps) whose arithmetic
runs only in noted kernels: each with an optional check of its arguments (returns why they
cannot be traced, or ``None``) and, for an item that reads or changes Python objects (a
backward pass's store, an optimizer's state), what it touches."""


def traceable(fn: Callable[..., Any], check: Check | None = None, touches: Touch | None = None) -> None:
    """Declare ``fn`` a replay item function whose arithmetic runs only through wrappers that
    :func:`note` their kernels: ``check(args, kwargs)``, if given, vets an item's arguments;
    ``touches(args, kwargs)`` names the Python objects it reads and changes (:class:`Touches`)."""
    TRACEABLE[fn] = (check, touches)
