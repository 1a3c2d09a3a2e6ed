"""PyTorch's ``torch.nn.utils`` on gradtape parameters: gradient clipping on ``.grad`` and
flattening parameters into one vector.

- :func:`clip_grad_norm_`, :func:`clip_grad_value_`: clip every parameter's ``.grad`` in
  place, as ``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_`` do. The norm formula
  is the one :func:`gradtape.optim.clip_grad_norm_` (the store form, for gradients held in a
  :class:`~gradtape.Gradients`) uses: both call the same implementation.
- :func:`parameters_to_vector`, :func:`vector_to_parameters`: PyTorch's
  ``torch.nn.utils.parameters_to_vector`` / ``vector_to_parameters``.
- :func:`weight_norm`, :func:`remove_weight_norm`, :func:`spectral_norm`,
  :func:`remove_spectral_norm`: PyTorch's weight and spectral normalisation of a module's
  parameter (the hook API, ``weight_g``/``weight_v`` and ``weight_orig``/``weight_u``/``weight_v``;
  see :mod:`gradtape.nn.utils._norm_hooks`); the parametrization API of the same at
  PyTorch's paths, :mod:`gradtape.nn.utils.parametrizations` and
  :mod:`gradtape.nn.utils.parametrize`.

A PyTorch training step::

    loss.backward()
    gradtape.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    opt.zero_grad()
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.engine import grad_array_mut
from gradtape.errors import ShapeError
from gradtape.optim.clip import _check_clip_args, _clip_norm
from gradtape.tape import recorded_call
from gradtape.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]
__all__ += ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]

Array = np.ndarray[Any, Any]


def _param_list(fn: str, parameters: Tensor[Any, Any] | Iterable[Tensor[Any, Any]]) -> list[Tensor[Any, Any]]:
    """``parameters`` as a list (a single tensor becomes ``[tensor]``), each checked to be a Tensor."""
    if isinstance(parameters, Tensor):
        return [parameters]
    try:
        ps = list(parameters)
    except TypeError:
        raise TypeError(
            f"{fn}: parameters must be a Tensor or an iterable of Tensors (e.g. model.parameters()), "
            f"got {type(parameters).__name__}"
        ) from None
    for i, p in enumerate(ps):
        if not isinstance(p, Tensor):
            raise TypeError(
                f"{fn}: parameters[{i}] is a {type(p).__name__}, not a gradtape Tensor "
                "(pass model.parameters(), not the model)"
            )
    return ps


def _grads_of(fn: str, ps: list[Tensor[Any, Any]]) -> list[tuple[Tensor[Any, Any], Array]]:
    """``(parameter, its .grad's array)`` of each parameter whose ``.grad`` is not None, each
    parameter once, checked writable (so an in-place clip never stops half-way). Read only:
    a writer takes the array to write from :func:`gradtape.engine.grad_array_mut`, which copies
    one a gradient store shares."""
    out: list[tuple[Tensor[Any, Any], Array]] = []
    seen: set[int] = set()
    for i, p in enumerate(ps):
        gt = getattr(p, "_grad", None)  # the slot behind .grad: no property call, no non-leaf warning
        if gt is None or id(p) in seen:
            continue
        seen.add(id(p))
        g = gt.data
        if not _arrays.writeable(g):
            raise ValueError(f"{fn}: parameters[{i}].grad (shape {g.shape}) is read-only; cannot clip it in place")
        out.append((p, g))
    return out


def _own(p: Tensor[Any, Any]) -> Array:
    """``p.grad``'s array to scale in place (a copy first if a gradient store shares it)."""
    g = grad_array_mut(p)
    assert g is not None  # _grads_of listed only parameters with a .grad
    return g


def clip_grad_norm_(
    parameters: Tensor[Any, Any] | Iterable[Tensor[Any, Any]],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor[Any, Any]:
    """Scale every parameter's ``.grad`` in place so their global norm is at most ``max_norm``:
    PyTorch's ``torch.nn.utils.clip_grad_norm_``.

    ``total`` is the ``norm_type``-norm of the vector of each gradient's ``norm_type``-norm,
    i.e. of all gradient elements concatenated (``inf``: the largest absolute value). With
    ``coef = max_norm / (total + 1e-6)``, if ``coef < 1`` every ``.grad`` is multiplied by
    ``coef`` in place (in its own dtype; its array keeps its identity); otherwise nothing
    changes. Parameters whose ``.grad`` is ``None`` are skipped.

    Same formula (one implementation) as :func:`gradtape.optim.clip_grad_norm_`, which clips
    the gradients held in a :class:`~gradtape.Gradients` store instead of ``.grad``.

    Differences from PyTorch: a parameter listed twice counts once (PyTorch counts and scales
    its gradient twice); a negative or NaN ``max_norm`` raises (PyTorch flips the gradients'
    sign); norms are accumulated in float64.

    Args:
        parameters: one tensor or an iterable of tensors (``model.parameters()``),
            float32/float64, any shapes.
        max_norm: the largest allowed total norm, >= 0.
        norm_type: ``p`` of the p-norm, > 0, or ``math.inf`` (``"inf"`` is accepted, as
            ``float("inf")``).
        error_if_nonfinite: raise if the total norm is NaN or infinite (nothing is scaled).
        foreach: accepted for PyTorch compatibility and ignored (one fused loop either way).

    Returns:
        The total norm before clipping, a 0-d untraced tensor on the parameters' device, in
        the gradients' dtype (float64 if any gradient is float64, else float32), as PyTorch
        returns it; ``0.0`` as float32 when no parameter has a ``.grad``.

    Raises:
        TypeError: ``parameters`` is not a tensor or an iterable of tensors.
        ValueError: ``max_norm`` negative or NaN, ``norm_type`` not > 0, a ``.grad`` holding
            a read-only array, or (with ``error_if_nonfinite``) a non-finite total norm (that
            error is also a ``RuntimeError``, PyTorch's type).
    """
    del foreach
    fn = "clip_grad_norm_"
    max_norm, norm_type = _check_clip_args(fn, max_norm, norm_type)
    return _clip_grad_norm(_param_list(fn, parameters), max_norm, norm_type, error_if_nonfinite)


@recorded_call  # gradtape.capture reruns it at each replay, on the parameters' list it was given
def _clip_grad_norm(
    ps: list[Tensor[Any, Any]], max_norm: float, norm_type: float, error_if_nonfinite: bool
) -> Tensor[Any, Any]:
    """:func:`clip_grad_norm_` on checked arguments."""
    fn = "clip_grad_norm_"
    present = _grads_of(fn, ps)
    arrays = [g for _, g in present]
    # the arrays are scaled only when the norm is over max_norm: only then does a shared one get copied
    total = _clip_norm(fn, arrays, max_norm, norm_type, error_if_nonfinite, writable=lambda i: _own(present[i][0]))
    dtype = np.result_type(*arrays) if arrays else np.dtype(np.float32)
    like = present[0][0] if present else (ps[0] if ps else None)
    value = _as_array(total, dtype=dtype)
    if like is None:
        from gradtape.devices.cpu import Cpu

        return Cpu().tensor(value)
    out: Tensor[Any, Any] = like._like(value)
    return out


def clip_grad_value_(
    parameters: Tensor[Any, Any] | Iterable[Tensor[Any, Any]],
    clip_value: float,
    foreach: bool | None = None,
) -> None:
    """Clamp every parameter's ``.grad`` in place to ``[-clip_value, clip_value]``:
    PyTorch's ``torch.nn.utils.clip_grad_value_``.

    Each element ``g`` becomes ``min(max(g, -clip_value), clip_value)``; NaN stays NaN.
    Parameters whose ``.grad`` is ``None`` are skipped; each ``.grad`` keeps its array, shape
    and dtype.

    Differences from PyTorch: a negative or NaN ``clip_value`` raises (PyTorch then sets
    every element to ``-|clip_value|``).

    Args:
        parameters: one tensor or an iterable of tensors (``model.parameters()``),
            float32/float64, any shapes.
        clip_value: the largest allowed absolute value of a gradient element, >= 0 (may be
            ``inf``).
        foreach: accepted for PyTorch compatibility and ignored.

    Raises:
        TypeError: ``parameters`` is not a tensor or an iterable of tensors.
        ValueError: ``clip_value`` negative or NaN, or a ``.grad`` holding a read-only array.
    """
    del foreach
    fn = "clip_grad_value_"
    clip_value = float(clip_value)
    if not clip_value >= 0.0:
        raise ValueError(f"{fn}: clip_value must be >= 0, got {clip_value}")
    _clip_grad_value(_param_list(fn, parameters), clip_value)


@recorded_call  # gradtape.capture reruns it at each replay, on the parameters' list it was given
def _clip_grad_value(ps: list[Tensor[Any, Any]], clip_value: float) -> None:
    """:func:`clip_grad_value_` on checked arguments."""
    for p, g in _grads_of("clip_grad_value_", ps):
        c = g.dtype.type(clip_value)
        np.clip(g, -c, c, out=grad_array_mut(p, values=False))  # one pass, into a copy if shared


def parameters_to_vector(parameters: Tensor[Any, Any] | Iterable[Tensor[Any, Any]]) -> Tensor[Any, Any]:
    """The parameters' values flattened (row-major) and concatenated into one 1-D tensor:
    PyTorch's ``torch.nn.utils.parameters_to_vector``.

    Args:
        parameters: one tensor or an iterable of tensors (``model.parameters()``), of any
            shapes, float32/float64.

    Returns:
        A new untraced 1-D tensor of ``sum(p.size)`` elements on the first parameter's
        device, in the parameters' common dtype (float64 if any is float64), a copy: later
        changes to the parameters do not show in it. Unlike PyTorch's, it is not recorded
        for differentiation.

    Raises:
        TypeError: ``parameters`` is not a tensor or an iterable of tensors.
        ValueError: no parameters (PyTorch: ``RuntimeError`` from ``torch.cat``).
    """
    ps = _param_list("parameters_to_vector", parameters)
    if not ps:
        raise ValueError("parameters_to_vector: parameters is empty")
    flat = np.concatenate([_as_array(p.data).reshape(-1) for p in ps])
    out: Tensor[Any, Any] = ps[0]._like(flat)
    return out


def vector_to_parameters(
    vec: Tensor[Any, Any] | Array, parameters: Tensor[Any, Any] | Iterable[Tensor[Any, Any]]
) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into the parameters' values, in place:
    PyTorch's ``torch.nn.utils.vector_to_parameters`` (the inverse of
    :func:`parameters_to_vector`).

    Parameter ``k`` takes the next ``parameters[k].size`` elements of ``vec``, reshaped
    row-major to its shape and cast to its dtype. Unlike PyTorch, which makes each
    ``param.data`` a view of ``vec``, the values are copied into each parameter's own array,
    so the parameters keep their arrays (views of them and an optimizer's references stay
    valid) and later changes to ``vec`` do not show in them.

    Args:
        vec: a 1-D tensor (or numpy array) of exactly ``sum(p.size for p in parameters)``
            elements.
        parameters: one tensor or an iterable of tensors (``model.parameters()``).

    Raises:
        TypeError: ``vec`` is neither a gradtape Tensor nor a numpy array (PyTorch's error),
            or ``parameters`` is not a tensor or an iterable of tensors.
        ShapeError: ``vec`` is not 1-D or its length is not the parameters' total size
            (checked before anything is written).
        ValueError: a parameter's array is read-only (checked before anything is written).
    """
    fn = "vector_to_parameters"
    if isinstance(vec, Tensor):
        v = vec.data
    elif isinstance(vec, np.ndarray):
        v = vec
    else:
        raise TypeError(f"{fn}: expected vec to be a gradtape Tensor or a numpy array, got {type(vec).__name__}")
    ps = _param_list(fn, parameters)
    total = sum(math.prod(p.data.shape) for p in ps)
    if v.ndim != 1 or v.shape[0] != total:
        raise ShapeError(f"{fn}: vec has shape {v.shape}; the parameters need a 1-D vector of {total} elements")
    for i, p in enumerate(ps):
        if not _arrays.writeable(p.data):
            raise ValueError(f"{fn}: parameters[{i}] (shape {p.data.shape}) is read-only")
    start = 0
    for p in ps:
        n = math.prod(p.data.shape)
        np.copyto(p.data, v[start : start + n].reshape(p.data.shape), casting="same_kind")
        start += n


from gradtape.nn.utils import parametrizations as parametrizations  # noqa: E402  (torch's place)
from gradtape.nn.utils import parametrize as parametrize  # noqa: E402  (torch.nn.utils.parametrize)
from gradtape.nn.utils import rnn as rnn  # noqa: E402  (torch.nn.utils.rnn's place: pad_sequence)
from gradtape.nn.utils._norm_hooks import (  # noqa: E402
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)
