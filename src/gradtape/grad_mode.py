"""PyTorch's grad modes (seed 003): :class:`no_grad`, :class:`enable_grad`,
:class:`set_grad_enabled` and :func:`is_grad_enabled`.

Grad mode is a per-thread switch of gradtape's one recording rule
(:func:`gradtape.tape.op_tape`): while it is off, no op records, whatever its inputs carry
(traced inputs, parameters, tensors a ``GradientTape`` context watches), and every result
is an untraced ``NoneTape`` tensor (``requires_grad`` is ``False``). Each is a context
manager and a decorator, and each affects only the thread that uses it, as in PyTorch::

    with gradtape.no_grad():
        y = x.leaky_trace() * 2          # y.requires_grad is False: nothing recorded

    @gradtape.no_grad()
    def evaluate(model, x): ...

While no thread has grad mode off (and no ``GradientTape`` context is active), ops pay
nothing for it: the resolver reads the thread's state only when some thread uses a mode.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Generator
from typing import Any, Self, TypeVar, cast, overload

from gradtape.tape import _set_grad_enabled, is_grad_enabled

__all__ = [
    "enable_grad",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_grad_enabled",
]

F = TypeVar("F", bound=Callable[..., Any])


class ModeSwitch:
    """A context manager and decorator that sets a mode with :meth:`_set` (which returns the
    previous mode) to ``_mode`` on entry and restores the previous mode on exit; re-entrant
    (a stack of previous modes). The base of the grad modes here and of
    :class:`gradtape.hooks.detect_anomaly` (PyTorch's ``_DecoratorContextManager``)."""

    _mode: bool = True

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def _set(self, mode: bool) -> bool:
        raise NotImplementedError

    def __enter__(self) -> None:
        self._prev.append(self._set(self._mode))

    def __exit__(self, *exc: object) -> None:
        self._set(self._prev.pop())

    def __call__(self, fn: F) -> F:
        """Decorate ``fn`` so that it runs in this mode (a generator function: each
        resumption of the generator runs in it, as PyTorch's decorators do)."""
        return _decorate(self, fn)

    def clone(self) -> ModeSwitch:
        """A new context manager of the same mode (PyTorch's ``clone``)."""
        return type(self)()


class _GradMode(ModeSwitch):
    """A context manager and decorator that sets this thread's grad mode to ``_mode`` and
    restores the previous mode on exit."""

    def _set(self, mode: bool) -> bool:
        return _set_grad_enabled(mode)


def _decorate(mode: Any, fn: F) -> F:
    if not callable(fn):
        raise TypeError(f"{type(mode).__name__}: can decorate a function, got {type(fn).__name__}")
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            with mode.clone():
                gen = fn(*args, **kwargs)
                value = next(gen)
            while True:
                try:
                    sent = yield value
                except GeneratorExit:
                    with mode.clone():
                        gen.close()
                    raise
                except BaseException as e:  # thrown into the generator: pass it on
                    with mode.clone():
                        value = gen.throw(e)
                    continue
                try:
                    with mode.clone():
                        value = gen.send(sent)
                except StopIteration as stop:
                    return stop.value

        return cast(F, gen_wrapper)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with mode.clone():
            return fn(*args, **kwargs)

    return cast(F, wrapper)


class _NoArgMode(_GradMode):
    """A mode that takes no argument, so it also decorates without parentheses
    (``@no_grad`` as well as ``@no_grad()``), as PyTorch's do."""

    @overload
    def __new__(cls) -> Self: ...
    @overload
    def __new__(cls, orig_func: F) -> F: ...  # type: ignore[misc]
    def __new__(cls, orig_func: Any = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return _decorate(cls(), orig_func)


class no_grad(_NoArgMode):
    """Turn recording off in this thread (PyTorch's ``torch.no_grad``): inside, no op records,
    even on traced inputs, parameters or watched tensors, and results are untraced. For
    inference and for updates that must not be differentiated. Context manager and decorator
    (``@no_grad()`` or ``@no_grad``); thread-local.
    """

    _mode = False


class enable_grad(_NoArgMode):
    """Turn recording back on in this thread inside a :class:`no_grad` block (PyTorch's
    ``torch.enable_grad``). Context manager and decorator (``@enable_grad()`` or
    ``@enable_grad``); thread-local."""

    _mode = True


class set_grad_enabled(_GradMode):
    """Set this thread's grad mode to ``mode`` (PyTorch's ``torch.set_grad_enabled``).

    Called as a function it sets the mode at once and leaves it set; used in a ``with``
    statement (or as a decorator) it restores the previous mode at the end::

        with set_grad_enabled(is_train):
            loss = model(x)
        set_grad_enabled(False)              # off from here on, in this thread

    Args:
        mode: ``True`` records, ``False`` does not.

    Raises:
        TypeError: ``mode`` is not a bool.
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {type(mode).__name__}")
        super().__init__()
        self._mode = mode
        self._prev.append(_set_grad_enabled(mode))
        self._armed = True  # the constructor's setting, which the with-block then owns

    def __enter__(self) -> None:
        if self._armed:
            self._armed = False
            return
        self._prev.append(_set_grad_enabled(self._mode))

    def __exit__(self, *exc: object) -> None:
        _set_grad_enabled(self._prev.pop())

    def clone(self) -> set_grad_enabled:
        """A new ``set_grad_enabled(mode)`` (which sets the mode, as the constructor does)."""
        return set_grad_enabled(self._mode)

    def __call__(self, fn: F) -> F:
        """Decorate ``fn`` so that it runs with grad mode ``mode``; used as a decorator, the
        constructor's setting is undone, so the code around it keeps its mode."""
        if self._armed:
            self._armed = False
            _set_grad_enabled(self._prev.pop())
        return _decorate(self, fn)


_inference = threading.local()


class inference_mode(_GradMode):
    """Turn recording off in this thread for inference (PyTorch's ``torch.inference_mode``):
    the same as :class:`no_grad` here, since an untraced op already keeps no version counter or
    view tracking to skip. ``inference_mode(False)`` is a no-op block, as in PyTorch. Context
    manager and decorator (``@inference_mode()``, or ``@inference_mode`` without parentheses);
    thread-local.

    Args:
        mode: ``True`` (default) turns recording off inside; ``False`` changes nothing.

    Raises:
        TypeError: ``mode`` is not a bool.
    """

    @overload
    def __new__(cls, mode: bool = True) -> Self: ...
    @overload
    def __new__(cls, mode: F) -> F: ...  # type: ignore[misc]
    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # @inference_mode without parentheses
            return _decorate(cls(True), mode)
        return super().__new__(cls)

    def __init__(self, mode: Any = True) -> None:
        if callable(mode):
            return
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode: mode must be a bool, got {type(mode).__name__}")
        super().__init__()
        self._on = mode

    def __enter__(self) -> None:
        if self._on:
            _inference.depth = getattr(_inference, "depth", 0) + 1
            self._prev.append(_set_grad_enabled(False))
        else:
            self._prev.append(is_grad_enabled())

    def __exit__(self, *exc: object) -> None:
        if self._on:
            _inference.depth -= 1
        _set_grad_enabled(self._prev.pop())

    def clone(self) -> inference_mode:
        """A new ``inference_mode(mode)``."""
        return inference_mode(self._on)


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside an ``inference_mode()`` block (PyTorch's
    ``torch.is_inference_mode_enabled``)."""
    return getattr(_inference, "depth", 0) > 0
