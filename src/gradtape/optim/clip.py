"""Gradient clipping by global norm: :func:`clip_grad_norm_` (PyTorch's formula)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gradtape.gradients import Gradients
from gradtape.tensor import Tensor

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(
    params: Iterable[Tensor[Any, Any]],
    grads: Gradients,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> float:
    """Scale the gradients of ``params`` in ``grads`` in place so their global norm is at most ``max_norm``.

    PyTorch's ``torch.nn.utils.clip_grad_norm_``: the total norm is the ``norm_type``-norm
    of the vector of every parameter's gradient norm, i.e. of all gradient elements
    concatenated (``inf``: the largest absolute value). If
    ``coef = max_norm / (total + 1e-6)`` is below 1, every gradient is multiplied by
    ``coef`` (in its own dtype); otherwise nothing changes. Parameters with no gradient in
    ``grads`` are skipped, and a tensor listed twice counts once.

    A gradient buffer shared copy-on-write with another tensor's gradient is copied before
    it is scaled (through :meth:`Gradients.get_or_alloc_mut`), so other gradients never change.

    Args:
        params: the parameters (float32/float64 tensors).
        grads: the store holding their gradients (e.g. what ``loss.backward()`` returned).
        max_norm: the largest allowed total norm, >= 0.
        norm_type: ``p`` of the p-norm, > 0, or ``math.inf``.
        error_if_nonfinite: raise if the total norm is NaN or infinite.

    Returns:
        The total norm of the gradients before clipping, a Python float (0.0 if none has a gradient).

    Raises:
        ValueError: ``max_norm`` negative or NaN, ``norm_type`` not > 0, or (with
            ``error_if_nonfinite``) a non-finite total norm.
    """
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not max_norm >= 0.0:
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0, got {max_norm}")
    if not norm_type > 0.0:
        raise ValueError(f"clip_grad_norm_: norm_type must be > 0 or inf, got {norm_type}")
    present: list[Tensor[Any, Any]] = []
    norms: list[float] = []
    seen: set[int] = set()
    for p in params:
        if p.id in seen:
            continue
        seen.add(p.id)
        g = grads.get_ref_checked(p)
        if g is None:
            continue
        present.append(p)
        if not g.size:
            norms.append(0.0)
        elif norm_type == 2.0 and g.dtype.kind == "f":  # one BLAS dot: ~3 us less per tensor
            gf = g.reshape(-1)
            norms.append(math.sqrt(float(np.dot(gf, gf))))
        else:
            norms.append(float(np.linalg.vector_norm(g, ord=norm_type)))
    if not present:
        return 0.0
    total = float(np.linalg.vector_norm(np.asarray(norms, dtype=np.float64), ord=norm_type))
    if error_if_nonfinite and not math.isfinite(total):
        raise ValueError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}; "
            "pass error_if_nonfinite=False to clip anyway"
        )
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        for p in present:
            buf = grads.get_or_alloc_mut(p)
            buf *= buf.dtype.type(coef)
    return total
