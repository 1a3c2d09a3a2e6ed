"""Watching backward: tensor hooks, post-accumulate hooks and anomaly detection.

- ``Tensor.register_hook(fn)`` (PyTorch's): ``fn(grad) -> Tensor | array | None`` sees the
  gradient flowing into the tensor, once it is complete, and may replace it.
- ``Tensor.register_post_accumulate_grad_hook(fn)`` (PyTorch's, for parameters):
  ``fn(tensor, grads)`` runs once per backward pass when the tensor's gradient in ``grads``
  is final, the parameters a forward pass used last first (what data-parallel training and
  optimizer-in-backward need).
- :func:`detect_anomaly` / :func:`set_detect_anomaly` (PyTorch's names; the Mamba crate's
  NaN/Inf detection, seed 001): every recorded op checks its inputs for non-finite values and
  notes where it was called; every backward closure's results are checked; the first
  non-finite value raises :class:`~gradtape.errors.NumericalInstabilityError` naming the op
  and the file and line that called it.

Each returns a :class:`RemovableHandle`. All of it costs nothing while unused: backward takes
the checking path only while a hook is registered or anomaly mode is on, and anomaly mode
routes ops through the tape layer's slow path (``gradtape.tape.direct`` is false) only while
it is on. This module plugs into the backward engine: the registries live in
:mod:`gradtape.engine`, which runs :func:`run_entries_checked` (handed down into its slot when
this module is imported) instead of its plain loop while one is in use.
"""

from __future__ import annotations

import bisect
import itertools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from gradtape import engine as _eng
from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _array_of
from gradtape.errors import DTypeError, NumericalInstabilityError, ShapeError
from gradtape.grad_mode import ModeSwitch
from gradtape.gradients import Gradients, _readonly

if TYPE_CHECKING:
    from gradtape.tensor import Tensor

__all__ = [
    "RemovableHandle",
    "detect_anomaly",
    "is_anomaly_enabled",
    "set_detect_anomaly",
]

Array = np.ndarray[Any, Any]
F = TypeVar("F", bound=Callable[..., Any])
_handle_ids = itertools.count(1)


class RemovableHandle:
    """What registering a hook returns: :meth:`remove` unregisters it (PyTorch's handle)."""

    __slots__ = ("_id", "_registry", "_tid")

    def __init__(self, registry: dict[int, dict[int, Any]], tid: int) -> None:
        self._registry = registry
        self._tid = tid
        self._id = next(_handle_ids)

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        hooks = self._registry.get(self._tid)
        if hooks is not None:
            hooks.pop(self._id, None)
            if not hooks:
                del self._registry[self._tid]

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_hook(t: Tensor[Any, Any], fn: Callable[[Tensor[Any, Any]], Any]) -> RemovableHandle:
    """See ``Tensor.register_hook``."""
    if not callable(fn):
        raise TypeError(f"register_hook: expected a callable, got {type(fn).__name__}")
    h = RemovableHandle(_eng._tensor_hooks, t.id)
    _eng._tensor_hooks.setdefault(t.id, {})[h._id] = (fn, t.shape, t.dtype, t.device, t._leaf)
    return h


def register_post_accumulate_grad_hook(
    t: Tensor[Any, Any], fn: Callable[[Tensor[Any, Any], Gradients], None]
) -> RemovableHandle:
    """See ``Tensor.register_post_accumulate_grad_hook``."""
    if not callable(fn):
        raise TypeError(f"register_post_accumulate_grad_hook: expected a callable, got {type(fn).__name__}")
    h = RemovableHandle(_eng._post_hooks, t.id)
    _eng._post_hooks.setdefault(t.id, {})[h._id] = (fn, t)
    return h


# ----- anomaly mode ---------------------------------------------------------------------------


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (process-wide, as PyTorch's)."""
    return _tp._anomaly


def set_detect_anomaly(mode: bool) -> bool:
    """Turn anomaly detection on or off for the whole process; return the previous mode.

    Raises:
        TypeError: ``mode`` is not a bool.
    """
    if not isinstance(mode, bool):
        raise TypeError(f"set_detect_anomaly: mode must be a bool, got {type(mode).__name__}")
    prev = _tp._anomaly
    if mode != prev:
        _tp._anomaly = mode
        _tp._add_modes(1 if mode else -1)  # every recorded op goes through the resolver
        if not mode:
            _sites.clear()
    return prev


class detect_anomaly(ModeSwitch):
    """Anomaly detection in a block or a decorated function (PyTorch's
    ``torch.autograd.detect_anomaly``; seed 001's NaN/Inf detection).

    While on, each recorded op (1) checks its tensor inputs and raises
    :class:`~gradtape.errors.NumericalInstabilityError` if one holds NaN or Inf, naming the op
    that produced it and where that op was called (file and line, outside gradtape), and the op
    that read it; (2) notes where it was called, so that in backward, after each closure runs,
    every gradient it wrote is checked and the first non-finite one raises naming the op whose
    backward produced it and where its forward was called. ``loss.backward()`` also checks the
    loss itself. Ops on untraced tensors (nothing recording) are not checked.

    Slow (a stack walk per op, a pass over every gradient written): for debugging. Off by
    default, and free when off. Process-wide, like PyTorch's.

    Args:
        mode: on (default) or off inside the block.
    """

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self._mode = mode

    def _set(self, mode: bool) -> bool:
        return set_detect_anomaly(mode)

    def clone(self) -> detect_anomaly:
        """A new context manager of the same mode (PyTorch's ``clone``)."""
        return detect_anomaly(self._mode)


_sites: list[tuple[int, str, str]] = []  # (clock when the op started, op name, call site)


def _where() -> tuple[str, str]:
    """The op being recorded (the innermost gradtape function that is not tape plumbing) and
    where the user called it (the innermost frame outside gradtape)."""
    op = "?"
    f = sys._getframe(2)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not mod.startswith("gradtape.") or mod.startswith("gradtape.examples"):
            return op, f"{f.f_code.co_filename}:{f.f_lineno} (in {f.f_code.co_name})"
        name = f.f_code.co_name
        if op == "?" and mod not in ("gradtape.tape", "gradtape.ops._util", "gradtape.hooks"):
            if not name.startswith(("_", "record")):
                op = name
        f = f.f_back  # type: ignore[assignment]
    return op, "?"


def _site_of(time: int) -> tuple[str, str]:
    """The op (and call site) recorded last before ``time`` (an entry's time or a tensor id)."""
    k = bisect.bisect_left(_sites, (time,)) - 1
    if k < 0:
        return "?", "?"
    return _sites[k][1], _sites[k][2]


def _first_bad(a: Array) -> str:
    bad = ~np.isfinite(a)
    idx = np.unravel_index(int(np.argmax(bad)), a.shape) if a.ndim else ()
    return f"{a[idx].item()!r} at index {tuple(int(i) for i in idx)}"


def anomaly_forward(ts: tuple[Tensor[Any, Any], ...]) -> None:
    """Anomaly mode's forward check, called by the tape layer for every recorded op."""
    op, site = _where()
    for k, t in enumerate(ts):
        d = t.data
        if d.dtype.kind in "fc" and not np.isfinite(d).all():
            if t._leaf:
                origin = "an input tensor (a leaf)"
            else:
                p_op, p_site = _site_of(t.id + 1)
                origin = f"op '{p_op}' called at {p_site}"
            raise NumericalInstabilityError(
                f"forward: operand {k} (shape {d.shape}) of op '{op}' called at {site} holds non-finite values "
                f"({_first_bad(d)}); it was produced by {origin}"
            )
    _sites.append((_tp.next_id(), op, site))


def check_loss(t: Tensor[Any, Any]) -> None:
    """Anomaly mode: the tensor backward starts from must be finite."""
    d = t.data
    if d.dtype.kind in "fc" and not np.isfinite(d).all():
        p_op, p_site = _site_of(t.id + 1)
        raise NumericalInstabilityError(
            f"backward: the tensor backward starts from (shape {d.shape}) is non-finite ({_first_bad(d)}); "
            f"it was produced by op '{p_op}' called at {p_site}"
        )


class _Checked(Gradients):
    """A working store that remembers which gradients a backward closure wrote."""

    __slots__ = ("touched",)

    def __init__(self) -> None:
        super().__init__()
        self.touched: set[int] = set()

    def _mut(self, i: int, shape: tuple[int, ...], dtype: np.dtype[Any], like: Any = None) -> Array:
        self.touched.add(i)
        return super()._mut(i, shape, dtype, like)

    def _accum(self, i: int, value: Array) -> None:
        self.touched.add(i)
        super()._accum(i, value)

    def _accum_alias(self, i: int, value: Array, src: int) -> None:
        self.touched.add(i)
        super()._accum_alias(i, value, src)

    def _fused(self, i: int, kernel: Any, ufunc: Any, a: Array, b: Array) -> None:
        self.touched.add(i)
        super()._fused(i, kernel, ufunc, a, b)

    def _fused_args(self, i: int, kernel: Any, fresh: Any, s: Array, g: Array, args: tuple[Any, ...]) -> None:
        self.touched.add(i)
        super()._fused_args(i, kernel, fresh, s, g, args)

    def _addmul_scratch(self, i: int, scratch: Array, b: Array) -> None:
        self.touched.add(i)
        super()._addmul_scratch(i, scratch, b)

    def _accum_bcast(self, i: int, g: Array, shape: tuple[int, ...]) -> None:
        self.touched.add(i)
        super()._accum_bcast(i, g, shape)

    def _axpy(self, i: int, alpha: float, x: Array, alpha_c: Any = None) -> None:
        self.touched.add(i)
        super()._axpy(i, alpha, x, alpha_c)


def working_store() -> Gradients:
    """The store a backward pass runs into: a checking one in anomaly mode."""
    return _Checked() if _tp._anomaly else Gradients()


def _as_array(op: str, r: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    arr = _array_of(getattr(r, "data", r))
    if arr.dtype.kind not in "fiub":  # complex (its imaginary part would be dropped), objects, strings
        raise DTypeError(f"{op}: the hook returned a gradient of dtype {arr.dtype}; the tensor's dtype is {dtype}")
    if arr.shape != shape:
        raise ShapeError(f"{op}: the hook returned a gradient of shape {arr.shape}, the tensor has shape {shape}")
    return _arrays.copy(arr, dtype)


def run_entries_checked(ops: list[Any], grads: Gradients, keep: bool) -> None:
    """``gradtape.engine._run_entries`` with hooks fired at their moments and anomaly checks."""
    tensor_cls = _tp._tensor_class()
    if keep:
        ops = list(ops)
    # (moment, kind, tensor id): a hook fires before the first entry whose time is at most its
    # moment (every entry that adds to the gradient has run); popped largest moment first
    pend: list[tuple[int, int, int]] = []
    for tid in _eng._tensor_hooks:
        pend.append((tid, 0, tid))
    for tid in _eng._post_hooks:
        pend.append((_tp._first_use.pop(tid, tid), 1, tid))
    pend.sort()
    checked = grads if isinstance(grads, _Checked) else None
    fired_nonleaf: list[int] = []

    def fire(kind: int, tid: int) -> None:
        g = grads._data.get(tid)
        if g is None:
            return
        if kind == 0:
            for fn, shape, dtype, device, leaf in list(_eng._tensor_hooks.get(tid, {}).values()):
                r = fn(tensor_cls(_readonly(g), device))  # read-only where the memory has the flag
                if r is not None:
                    g = _as_array("register_hook", r, shape, dtype)
                    grads._data[tid] = g
                    grads._shared.discard(tid)
                if not leaf:
                    fired_nonleaf.append(tid)
        else:
            for fn, t in list(_eng._post_hooks.get(tid, {}).values()):
                fn(t, grads)

    last = -1
    while ops:
        entry = ops.pop()
        time = entry[0]
        if time == last:
            continue
        last = time
        fn = entry[1]
        closure = fn is _tp._run_closure
        while pend and (pend[-1][0] >= time or (closure and pend[-1][1] == 0 and pend[-1][0] == time - 1)):
            _, kind, tid = pend.pop()
            fire(kind, tid)
        if checked is not None:
            checked.touched.clear()
        if closure:
            entry[2](grads)
        else:
            g = grads._release(time)  # what engine._run_entries inlines
            if g is not None:
                fn(grads, g, entry)
                g = None
        if checked is not None:
            for i in checked.touched:
                a = grads._data.get(i)
                if a is not None and a.dtype.kind in "fc" and not np.isfinite(a).all():
                    op, site = _site_of(time)
                    raise NumericalInstabilityError(
                        f"backward: the backward of op '{op}' (its forward called at {site}) produced a non-finite "
                        f"gradient ({_first_bad(a)}) for the tensor of id {i}, shape {a.shape}"
                    )
    while pend:
        _, kind, tid = pend.pop()
        fire(kind, tid)
    if not keep:
        for tid in fired_nonleaf:  # a non-leaf's gradient flows once: its hooks are done
            _eng._tensor_hooks.pop(tid, None)


# what the engine runs while hooks or anomaly mode are on, and the core's forward check
# (gradtape.engine and gradtape.tape cannot import this module)
_eng._run_entries_checked = run_entries_checked
_eng._working_store = working_store
_tp._anomaly_forward = anomaly_forward
