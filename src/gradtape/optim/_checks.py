"""Checks of the optimizers' and schedules' hyper-parameters (not public API): each returns the
value normalised or raises ``ValueError`` naming the class and the argument."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeAlias

Check: TypeAlias = Callable[[str, str, Any], Any]
"""``check(owner, name, value)``: the value normalised, or ``ValueError`` naming ``owner`` and ``name``."""


def _real(owner: str, name: str, value: Any) -> float:
    """``float(value)`` for a real number (a Python or numpy int or float, a 0-d array).

    Raises:
        TypeError: ``value`` is not a real number (a complex number, a string, ``None``); the
            message names ``owner``, ``name`` and the type.
    """
    if isinstance(value, (complex, str, bytes)) or value is None:
        raise TypeError(f"{owner}: {name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: {name} must be a real number, got {type(value).__name__} {value!r}") from None


def check_nonneg(owner: str, name: str, value: float) -> float:
    """``float(value)``, a finite number >= 0 (NaN refused).

    Raises:
        TypeError: ``value`` is not a real number (``lr=1j``).
        ValueError: it is negative, infinite or NaN.
    """
    value = _real(owner, name, value)
    if not value >= 0.0 or math.isinf(value):  # also rejects NaN
        raise ValueError(f"{owner}: {name} must be a finite number >= 0, got {value}")
    return value


def check_unit(owner: str, name: str, value: float) -> float:
    """``float(value)``, in ``[0, 1)``.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: it is outside ``[0, 1)``.
    """
    value = _real(owner, name, value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{owner}: {name} must be in [0, 1), got {value}")
    return value


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``bool(value)`` (a flag: nothing is refused)."""
    return bool(value)


def check_hint(owner: str, name: str, value: Any) -> bool | None:
    """``None`` or ``bool(value)``: one of PyTorch's implementation switches that do not change
    the rule (``foreach``, ``fused``; ``capturable`` is :func:`check_bool`). gradtape keeps the
    value in the parameter groups, as PyTorch does, and runs its one fused kernel per parameter
    whatever it is."""
    return None if value is None else bool(value)


def check_not_differentiable(owner: str, name: str, value: Any) -> bool:
    """``False``: PyTorch's ``differentiable=True`` (autograd through ``step()``) is refused.

    Raises:
        ValueError: ``value`` is true; the message names ``owner`` and says why.
    """
    if value:
        raise ValueError(
            f"{owner}: {name}=True (PyTorch's autograd through optimizer.step()) is not supported: gradtape's "
            "optimizers update each parameter's array in place, outside any tape; for a differentiable update "
            "(meta-learning), write the rule with gradtape ops on traced tensors"
        )
    return False


SWITCHES: dict[str, Check] = {
    "foreach": check_hint,
    "fused": check_hint,
    "capturable": check_bool,
    "differentiable": check_not_differentiable,
}
"""PyTorch's implementation switches and their checks: an optimizer takes the ones its PyTorch
counterpart takes (:func:`switches`)."""


def switches(*names: str) -> dict[str, Check]:
    """The checks of the switches ``names`` (keys of :data:`SWITCHES`), for an optimizer's
    ``_hyper``."""
    return {n: SWITCHES[n] for n in names}


def check_betas(owner: str, name: str, value: Any) -> tuple[float, float]:
    """A pair of numbers in ``[0, 1)`` (Adam's ``betas``), as a tuple of floats."""
    betas = tuple(value)
    if len(betas) != 2:
        raise ValueError(f"{owner}: {name} must be a pair, got {betas}")
    return check_unit(owner, f"{name}[0]", betas[0]), check_unit(owner, f"{name}[1]", betas[1])


def check_positive_int(owner: str, name: str, value: int) -> int:
    """``value``, an ``int`` (not a ``bool``) >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
    return value


def check_closed_unit(owner: str, name: str, value: float) -> float:
    """``float(value)``, in ``[0, 1]`` (Adadelta's ``rho``, as PyTorch checks it).

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: it is outside ``[0, 1]`` (or NaN).
    """
    value = _real(owner, name, value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{owner}: {name} must be in [0, 1], got {value}")
    return value


def check_nonneg_int(owner: str, name: str, value: int) -> int:
    """``value``, an ``int`` (not a ``bool``) >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{owner}: {name} must be an int >= 0, got {value!r}")
    return value


def check_line_search(owner: str, name: str, value: Any) -> str | None:
    """``None`` or ``"strong_wolfe"`` (LBFGS's ``line_search_fn``, the two PyTorch has)."""
    if value is not None and value != "strong_wolfe":
        raise ValueError(f"{owner}: {name} must be None or 'strong_wolfe', got {value!r}")
    return value if value is None else "strong_wolfe"
