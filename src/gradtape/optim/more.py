"""Rprop and ASGD: PyTorch's ``torch.optim`` classes of those names, with their constructor
arguments, defaults and (single-tensor) update rules.

Each updates a parameter in place with one fused numba kernel pass
(:mod:`gradtape.devices.kernels.optim`), and works in both spellings of
:class:`~gradtape.optim.Optimizer`: ``opt.step(grads)`` with a store, or PyTorch's
``loss.backward(); opt.step(); opt.zero_grad()`` on each parameter's ``.grad``. Parameter
groups, ``state_dict``/``load_state_dict`` and ``maximize`` are the base class's.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from gradtape.devices import _arrays
from gradtape.devices.kernels import optim as _k
from gradtape.optim._checks import Check, _real, check_bool, check_hint, check_nonneg, switches
from gradtape.optim.optimizers import Array, Optimizer, ParamsT

__all__ = ["ASGD", "Rprop"]


def _pair(owner: str, name: str, value: Any) -> tuple[float, float]:
    """Two real numbers, neither NaN, as a tuple of floats.

    Raises:
        TypeError: ``value`` is not a sequence of real numbers.
        ValueError: it does not hold two, or one is NaN.
    """
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{owner}: {name} must be a pair of numbers, got {type(value).__name__} {value!r}") from None
    if len(items) != 2:
        raise ValueError(f"{owner}: {name} must be a pair of numbers, got {items!r}")
    a, b = _real(owner, f"{name}[0]", items[0]), _real(owner, f"{name}[1]", items[1])
    if math.isnan(a) or math.isnan(b):
        raise ValueError(f"{owner}: {name} must not hold NaN, got ({a}, {b})")
    return a, b


def check_etas(owner: str, name: str, value: Any) -> tuple[float, float]:
    """Rprop's ``etas``: ``(etaminus, etaplus)`` with ``0 < etaminus < 1 < etaplus``, PyTorch's check.

    Raises:
        TypeError: not a pair of real numbers.
        ValueError: the pair does not satisfy ``0 < etas[0] < 1 < etas[1]``.
    """
    minus, plus = _pair(owner, name, value)
    if not 0.0 < minus < 1.0 < plus:
        raise ValueError(f"{owner}: {name} must satisfy 0 < {name}[0] < 1 < {name}[1], got ({minus}, {plus})")
    return minus, plus


def check_real(owner: str, name: str, value: Any) -> float:
    """``float(value)``, a real number that is not NaN (infinities allowed: ASGD's ``t0=inf``
    never starts averaging). PyTorch checks none of the values this takes (ASGD's ``lambd``,
    ``alpha``, ``t0``) and neither does gradtape, beyond NaN.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: it is NaN.
    """
    x = _real(owner, name, value)
    if math.isnan(x):
        raise ValueError(f"{owner}: {name} must be a number, got nan")
    return x


class Rprop(Optimizer):
    """Rprop, resilient backpropagation (Riedmiller & Braun 1993, "A Direct Adaptive Method for
    Faster Backpropagation Learning: The RPROP Algorithm"); PyTorch's ``torch.optim.Rprop(params,
    lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
    maximize=False, differentiable=False)``.

    Each element has its own step size ``s`` (``lr`` on the parameter's first step), grown
    while the gradient keeps its sign and shrunk when it flips. For each parameter ``p`` with
    gradient ``g``, with ``etas = (eta_minus, eta_plus)`` and ``step_sizes = (s_min, s_max)``:

    - ``f = eta_plus`` where ``g * prev > 0``, ``eta_minus`` where ``g * prev < 0``, else ``1``
    - ``s = clamp(s * f, s_min, s_max)``
    - ``g = 0`` where ``f == eta_minus`` (no move after a sign change, and no shrink next step)
    - ``p -= sign(g) * s``; ``prev = g``

    ``lr`` only sets the initial step sizes (as in PyTorch, changing a group's ``lr`` later,
    by hand or by a schedule, does not change a parameter's running step sizes). Where
    ``g * prev`` or ``g`` is NaN the factor and the sign are those of PyTorch's CPU ``sign``
    (``0`` for NaN). Full-batch (or large-batch) training is Rprop's setting: with noisy
    mini-batch gradients the sign flips at random.

    Args:
        params: the parameters or parameter groups (:class:`~gradtape.optim.Optimizer`).
        lr: the initial step size, >= 0.
        etas: ``(eta_minus, eta_plus)``, the step-size factors, ``0 < eta_minus < 1 < eta_plus``.
        step_sizes: ``(s_min, s_max)``, the bounds of a step size (not checked, as in PyTorch,
            beyond being two numbers; ``s_max`` wins where ``s_min > s_max``).
        capturable, foreach: PyTorch's implementation switches, kept in the groups (one
            implementation here); ``differentiable=True`` is refused.
        maximize: apply the rule to ``-g`` (ascend).

    State: ``"step"`` (int), ``"prev"`` (the previous, masked gradient), ``"step_size"`` (s),
    arrays of the parameter's shape and dtype.

    Raises:
        ValueError: ``lr`` negative or not finite, ``etas`` outside ``0 < etas[0] < 1 <
            etas[1]``, ``step_sizes`` not two numbers (or NaN), ``differentiable=True`` (each
            message names ``Rprop`` and the argument), and as :class:`~gradtape.optim.Optimizer`.
        TypeError: ``etas`` or ``step_sizes`` not a pair of real numbers.
    """

    name = "Rprop"
    _state_keys = ("step", "prev", "step_size")
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "etas": check_etas,
        "step_sizes": _pair,
        "foreach": check_hint,
        "maximize": check_bool,
        **switches("differentiable", "capturable"),
    }
    etas: tuple[float, float]
    step_sizes: tuple[float, float]
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "etas": etas,
                "step_sizes": step_sizes,
                "foreach": foreach,
                "maximize": maximize,
                "differentiable": differentiable,
                "capturable": capturable,
            },
        )

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        self._next_step(state)
        prev = self._buf(state, "prev", p)
        size = state.get("step_size")
        if size is None:  # the parameter's first step: every step size starts at the group's lr
            size = state["step_size"] = _arrays.full(p.shape, hp["lr"], p.dtype, p)
        etaminus, etaplus = hp["etas"]
        lo, hi = hp["step_sizes"]
        _k._run(_k.RPROP, p, [g, prev, size], etaminus, etaplus, lo, hi)


class ASGD(Optimizer):
    """ASGD, averaged stochastic gradient descent (Polyak & Juditsky 1992, "Acceleration of
    Stochastic Approximation by Averaging"); PyTorch's ``torch.optim.ASGD(params, lr=1e-2,
    lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, maximize=False,
    differentiable=False, capturable=False)``.

    For each parameter ``p`` with gradient ``g``, at step ``t = 1, 2, ...``, with the
    parameter's rate ``eta`` (``lr`` at its first step) and averaging weight ``mu`` (``1`` at
    first):

    - ``g = g + weight_decay * p``
    - ``p = p * (1 - lambd * eta) - eta * g``
    - ``ax = p`` while ``mu == 1``, else ``ax = ax + mu * (p - ax)`` (the running average of
      the iterates, Polyak-Ruppert, from step ``t0`` on)
    - ``eta = lr / (1 + lambd * lr * t) ** alpha``; ``mu = 1 / max(1, t - t0)`` (Python floats,
      for the next step, as PyTorch computes them; ``lr`` is the group's at this step)

    The parameters themselves follow SGD with the decaying rate; the average is kept in the
    state as ``"ax"`` (as in PyTorch, it is not swapped into the parameters: copy it there to
    evaluate the averaged model).

    Args:
        params: the parameters or parameter groups (:class:`~gradtape.optim.Optimizer`).
        lr: the learning rate, >= 0.
        lambd: the decay term.
        alpha: the power of the rate's decay.
        t0: the step from which the average starts (PyTorch's default ``1e6`` in effect
            never; ``inf`` never).
        weight_decay: the L2 penalty, >= 0.
        foreach, capturable: PyTorch's implementation switches, kept in the groups (one
            implementation here); ``differentiable=True`` is refused.
        maximize: apply the rule to ``-g`` (ascend).

    State: ``"step"`` (int), ``"eta"`` and ``"mu"`` (floats), ``"ax"`` (the average, an array
    of the parameter's shape and dtype).

    Raises:
        ValueError: ``lr`` or ``weight_decay`` negative or not finite, ``lambd``, ``alpha`` or
            ``t0`` NaN (PyTorch checks neither, gradtape only NaN), ``differentiable=True``
            (each message names ``ASGD`` and the argument), and as
            :class:`~gradtape.optim.Optimizer`.
        TypeError: ``lambd``, ``alpha`` or ``t0`` not a real number.
    """

    name = "ASGD"
    _state_keys = ("step", "eta", "mu", "ax")
    _scalar_state: ClassVar[dict[str, type]] = {"step": int, "eta": float, "mu": float}
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "lambd": check_real,
        "alpha": check_real,
        "t0": check_real,
        "weight_decay": check_nonneg,
        "foreach": check_hint,
        "maximize": check_bool,
        **switches("differentiable", "capturable"),
    }
    lambd: float
    alpha: float
    t0: float
    weight_decay: float
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "lambd": lambd,
                "alpha": alpha,
                "t0": t0,
                "weight_decay": weight_decay,
                "foreach": foreach,
                "maximize": maximize,
                "differentiable": differentiable,
                "capturable": capturable,
            },
        )

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        lr, lambd = hp["lr"], hp["lambd"]
        if not state:  # the parameter's first step, in PyTorch's order of the state's keys
            state.update(step=0, eta=lr, mu=1.0)
        step = self._next_step(state)
        eta = float(state.get("eta", lr))
        mu = float(state.get("mu", 1.0))
        ax = self._buf(state, "ax", p)
        _k._run(_k.ASGD, p, [g, ax], 1.0 - lambd * eta, eta, hp["weight_decay"], mu, mu != 1.0)
        state["eta"] = lr / ((1.0 + lambd * lr * step) ** hp["alpha"])
        state["mu"] = 1.0 / max(1.0, step - hp["t0"])
