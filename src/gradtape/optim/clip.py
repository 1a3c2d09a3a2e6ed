"""Gradient clipping by global norm: :func:`clip_grad_norm_` (PyTorch's formula) on a
:class:`~gradtape.Gradients` store.

The formula lives in one place, :func:`_clip_norm`, which takes the list of gradient arrays;
this store form and the ``.grad`` form :func:`gradtape.nn.utils.clip_grad_norm_` (PyTorch's
``torch.nn.utils.clip_grad_norm_`` spelling) both call it.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterable, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.gradients import Gradients
from gradtape.tensor import Tensor

__all__ = ["clip_grad_norm_"]

Array = np.ndarray[Any, Any]


class _NonFiniteNormError(ValueError, RuntimeError):
    """The total gradient norm is NaN or infinite (``error_if_nonfinite=True``).

    A ``ValueError`` (gradtape's argument errors) and a ``RuntimeError`` (what PyTorch's
    ``clip_grad_norm_`` raises), so code written for either catches it.
    """


_NO_ERRSTATE = contextlib.nullcontext()


def _check_clip_args(fn: str, max_norm: float, norm_type: float) -> tuple[float, float]:
    """Validate and normalise ``max_norm`` (>= 0) and ``norm_type`` (> 0 or inf); raise ValueError."""
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not max_norm >= 0.0:
        raise ValueError(f"{fn}: max_norm must be >= 0, got {max_norm}")
    if not norm_type > 0.0:
        raise ValueError(f"{fn}: norm_type must be > 0 or inf, got {norm_type}")
    return max_norm, norm_type


def _clip_norm(
    fn: str,
    arrays: Sequence[Array],
    max_norm: float,
    norm_type: float,
    error_if_nonfinite: bool,
    writable: Callable[[int], Array] | None = None,
) -> float:
    """The one implementation of clipping by global norm (PyTorch's formula).

    ``total`` is the ``norm_type``-norm of the vector of each array's ``norm_type``-norm
    (the norm of all elements concatenated; ``inf``: the largest absolute value). If
    ``coef = max_norm / (total + 1e-6)`` is below 1, every gradient is multiplied in place
    by ``coef`` (cast to its dtype); otherwise nothing is written.

    Args:
        fn: the public function's name, for messages.
        arrays: the gradients (float32/float64 arrays, any shapes); read only, unless
            ``writable`` is None, in which case they are the buffers scaled in place.
        max_norm, norm_type: already checked by :func:`_check_clip_args`.
        error_if_nonfinite: raise if ``total`` is NaN or infinite.
        writable: ``writable(i)`` returns the buffer to scale for ``arrays[i]`` (called only
            when clipping happens), e.g. a copy-on-write store's own copy.

    Returns:
        ``total`` as a Python float (0.0 for no arrays).

    Raises:
        ValueError: ``error_if_nonfinite`` and a non-finite total (also a ``RuntimeError``).
    """
    if not arrays:
        return 0.0
    norms: list[float] = []
    if norm_type == 2.0 and _arrays.on_gpu(arrays[0]):  # GPU arrays: one wait, not one a tensor
        squares = [np.vdot(g, g).astype(np.float64) for g in arrays if g.size]
        norms = [math.sqrt(float(sum(squares[1:], squares[0]))) if squares else 0.0]
        arrays_norms: list[Array] = []
    else:
        arrays_norms = list(arrays)
    for g in arrays_norms:
        if not g.size:
            norms.append(0.0)
        elif norm_type == 2.0 and g.dtype.kind == "f":  # one BLAS dot: ~3 us less per tensor
            gf = g.reshape(-1)
            norms.append(math.sqrt(float(np.dot(gf, gf))))
        else:
            norms.append(float(np.linalg.vector_norm(g, ord=norm_type)))
    total = float(np.linalg.vector_norm(np.asarray(norms, dtype=np.float64), ord=norm_type))
    if error_if_nonfinite and not math.isfinite(total):
        raise _NonFiniteNormError(
            f"{fn}: the total norm of order {norm_type} of the gradients is {total}; "
            "pass error_if_nonfinite=False to clip anyway"
        )
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        with np.errstate(invalid="ignore") if not math.isfinite(total) else _NO_ERRSTATE:  # inf * 0: NaN, silently
            for i, g in enumerate(arrays):
                buf = g if writable is None else writable(i)
                buf *= buf.dtype.type(coef)
    return total


def clip_grad_norm_(
    params: Iterable[Tensor[Any, Any]],
    grads: Gradients,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> float:
    """Scale the gradients of ``params`` in ``grads`` in place so their global norm is at most ``max_norm``.

    The store form of PyTorch's ``torch.nn.utils.clip_grad_norm_`` (same formula): the total
    norm is the ``norm_type``-norm of the vector of every parameter's gradient norm, i.e. of
    all gradient elements concatenated (``inf``: the largest absolute value). If
    ``coef = max_norm / (total + 1e-6)`` is below 1, every gradient is multiplied by
    ``coef`` (in its own dtype); otherwise nothing changes. Parameters with no gradient in
    ``grads`` are skipped, and a tensor listed twice counts once.

    A gradient buffer shared copy-on-write with another tensor's gradient is copied before
    it is scaled (through :meth:`Gradients.get_or_alloc_mut`), so other gradients never change.

    This form reads the store only, never ``.grad``. For PyTorch's spelling, which reads and
    scales each parameter's ``.grad`` and returns the norm as a 0-d tensor, use
    :func:`gradtape.nn.utils.clip_grad_norm_` ``(params, max_norm)``. Calling this one that way
    (a number as the second argument) raises ``TypeError`` rather than guessing, since the
    two return different types.

    Args:
        params: the parameters (float32/float64 tensors of any shapes).
        grads: the store holding their gradients (e.g. what ``loss.backward()`` returned);
            each gradient has its parameter's shape and dtype.
        max_norm: the largest allowed total norm, >= 0.
        norm_type: ``p`` of the p-norm, > 0, or ``math.inf``.
        error_if_nonfinite: raise if the total norm is NaN or infinite.

    Returns:
        The total norm of the gradients before clipping, a Python float (0.0 if none has a gradient).

    Raises:
        TypeError: ``grads`` is not a :class:`~gradtape.Gradients` (for PyTorch's spelling
            ``clip_grad_norm_(params, max_norm)`` or ``(params, max_norm=...)`` the message
            names :func:`gradtape.nn.utils.clip_grad_norm_`).
        ValueError: ``max_norm`` negative or NaN, ``norm_type`` not > 0, or (with
            ``error_if_nonfinite``) a non-finite total norm (that error is also a
            ``RuntimeError``, as PyTorch's).
    """
    if not isinstance(grads, Gradients):
        raise TypeError(f"clip_grad_norm_: grads must be a Gradients store, got {type(grads).__name__}")
    max_norm, norm_type = _check_clip_args("clip_grad_norm_", max_norm, norm_type)
    return _clip_store(list(params), grads, max_norm, norm_type, error_if_nonfinite)


@_tp.recorded_call  # gradtape.capture reruns it at each replay (on the parameters' list it was given)
def _clip_store(
    params: list[Tensor[Any, Any]], grads: Gradients, max_norm: float, norm_type: float, error_if_nonfinite: bool
) -> float:
    """:func:`clip_grad_norm_` on checked arguments."""
    present: list[Tensor[Any, Any]] = []
    arrays: list[Array] = []
    seen: set[int] = set()
    for p in params:
        if p.id in seen:
            continue
        seen.add(p.id)
        g = grads.get_ref_checked(p)
        if g is None:
            continue
        present.append(p)
        arrays.append(g)
    return _clip_norm(
        "clip_grad_norm_",
        arrays,
        max_norm,
        norm_type,
        error_if_nonfinite,
        lambda i: grads.get_or_alloc_mut(present[i]),
    )


def _refuse_torch_spelling(fn: Callable[..., float]) -> Callable[..., float]:
    """Wrap the store form so PyTorch's call ``clip_grad_norm_(params, max_norm)`` (or with
    ``max_norm=`` and no store) raises a ``TypeError`` naming the ``.grad`` form, instead of
    Python's "missing argument" message. Type checkers see the unwrapped signature."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> float:
        grads = args[1] if len(args) > 1 else kwargs.get("grads")
        if isinstance(grads, Real) or (grads is None and "max_norm" in kwargs):
            given = f"the number {grads!r}" if grads is not None else "max_norm but no store"
            raise TypeError(
                f"clip_grad_norm_: the second argument is the Gradients store, got {given}; for PyTorch's "
                "form, which clips each parameter's .grad, call gradtape.nn.utils.clip_grad_norm_(params, max_norm)"
            )
        return fn(*args, **kwargs)

    return wrapper


if not TYPE_CHECKING:
    clip_grad_norm_ = _refuse_torch_spelling(clip_grad_norm_)
