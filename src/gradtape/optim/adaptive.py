"""Adadelta, Adagrad, Adamax, NAdam and RAdam: PyTorch's ``torch.optim`` classes of those names,
with their constructor arguments, defaults and (single-tensor) update rules.

Each updates a parameter in place with one fused numba kernel pass
(:mod:`gradtape.devices.kernels.optim`; 3-19x faster than the same update in numpy on the
benchmarks' parameter sizes, 8k to 1M float32 elements), and works in both spellings of
:class:`~gradtape.optim.Optimizer`: ``opt.step(grads)`` with a store, or PyTorch's
``loss.backward(); opt.step(); opt.zero_grad()`` on each parameter's ``.grad``. Parameter
groups, ``state_dict``/``load_state_dict`` and ``maximize`` are the base class's.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from gradtape.devices.kernels import optim as _k
from gradtape.optim._checks import Check, check_betas, check_bool, check_closed_unit, check_nonneg, switches
from gradtape.optim.optimizers import Array, Optimizer, ParamsT

__all__ = ["Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler 2012, "ADADELTA: An Adaptive Learning Rate Method"); PyTorch's
    ``torch.optim.Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False)``.

    For each parameter ``p`` with gradient ``g`` (same shape, float32/float64):

    - ``g = g + weight_decay * p``
    - ``v = rho * v + (1 - rho) * g**2``
    - ``delta = sqrt(u + eps) / sqrt(v + eps) * g``
    - ``u = rho * u + (1 - rho) * delta**2``
    - ``p -= lr * delta``

    State: ``"step"``, ``"square_avg"`` (v), ``"acc_delta"`` (u).

    Raises:
        ValueError: ``lr``, ``eps`` or ``weight_decay`` negative or not finite, ``rho``
            outside ``[0, 1]`` (each message names ``Adadelta`` and the argument), and as
            :class:`~gradtape.optim.Optimizer`.
    """

    name = "Adadelta"
    _state_keys = ("step", "square_avg", "acc_delta")
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "rho": check_closed_unit,
        "eps": check_nonneg,
        "weight_decay": check_nonneg,
        "maximize": check_bool,
        **switches("foreach", "capturable", "differentiable"),
    }
    rho: float
    eps: float
    weight_decay: float
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "rho": rho,
                "eps": eps,
                "weight_decay": weight_decay,
                "maximize": maximize,
                "foreach": foreach,
                "capturable": capturable,
                "differentiable": differentiable,
            },
        )

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        self._next_step(state)
        sq = self._buf(state, "square_avg", p)
        acc = self._buf(state, "acc_delta", p)
        _k._run(_k.ADADELTA, p, [g, sq, acc], hp["lr"], hp["rho"], hp["eps"], hp["weight_decay"])


class Adagrad(Optimizer):
    """Adagrad (Duchi, Hazan & Singer 2011, "Adaptive Subgradient Methods for Online Learning
    and Stochastic Optimization"); PyTorch's ``torch.optim.Adagrad(params, lr=1e-2, lr_decay=0,
    weight_decay=0, initial_accumulator_value=0, eps=1e-10, *, maximize=False)``.

    For each parameter ``p`` with gradient ``g``, at step ``t = 1, 2, ...``:

    - ``g = g + weight_decay * p``
    - ``s = s + g**2`` (``s`` starts at ``initial_accumulator_value``)
    - ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)``

    State: ``"step"``, ``"sum"`` (s); created for every parameter at construction, as PyTorch
    does (step 0), from the constructor's ``initial_accumulator_value``: a parameter group's
    own value is accepted and saved but, as in PyTorch, not used.

    Raises:
        ValueError: ``lr``, ``lr_decay``, ``weight_decay``, ``initial_accumulator_value`` or
            ``eps`` negative or not finite, and as :class:`~gradtape.optim.Optimizer`.
    """

    name = "Adagrad"
    _state_keys = ("step", "sum")
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "lr_decay": check_nonneg,
        "weight_decay": check_nonneg,
        "initial_accumulator_value": check_nonneg,
        "eps": check_nonneg,
        "maximize": check_bool,
        **switches("foreach", "differentiable", "fused"),
    }
    lr_decay: float
    weight_decay: float
    initial_accumulator_value: float
    eps: float
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "lr_decay": lr_decay,
                "weight_decay": weight_decay,
                "initial_accumulator_value": initial_accumulator_value,
                "eps": eps,
                "maximize": maximize,
                "foreach": foreach,
                "differentiable": differentiable,
                "fused": fused,
            },
        )
        for state, p in zip(self.state, self.params, strict=True):
            self._init_state(state, p.data)

    def _init_state(self, state: dict[str, Any], p: Array) -> None:
        state["step"] = 0
        state["sum"] = np.full(p.shape, self.defaults["initial_accumulator_value"], dtype=p.dtype)

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        if "sum" not in state:  # loaded from a state_dict without this parameter's entry
            self._init_state(state, p)
        step = self._next_step(state)
        clr = hp["lr"] / (1.0 + (step - 1) * hp["lr_decay"])
        _k._run(_k.ADAGRAD, p, [g, state["sum"]], clr, hp["eps"], hp["weight_decay"])


class Adamax(Optimizer):
    """Adamax, Adam with the infinity norm (Kingma & Ba 2015, section 7.1); PyTorch's
    ``torch.optim.Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *,
    maximize=False)``.

    For each parameter ``p`` with gradient ``g``, at step ``t``:

    - ``g = g + weight_decay * p``
    - ``m = beta1 * m + (1 - beta1) * g``
    - ``u = max(beta2 * u, |g| + eps)``
    - ``p -= lr / (1 - beta1**t) * m / u``

    State: ``"step"``, ``"exp_avg"`` (m), ``"exp_inf"`` (u).

    Raises:
        ValueError: ``lr``, ``eps`` or ``weight_decay`` negative or not finite, a beta
            outside ``[0, 1)``, and as :class:`~gradtape.optim.Optimizer`.
    """

    name = "Adamax"
    _state_keys = ("step", "exp_avg", "exp_inf")
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "betas": check_betas,
        "eps": check_nonneg,
        "weight_decay": check_nonneg,
        "maximize": check_bool,
        **switches("foreach", "differentiable", "capturable"),
    }
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "betas": betas,
                "eps": eps,
                "weight_decay": weight_decay,
                "maximize": maximize,
                "foreach": foreach,
                "differentiable": differentiable,
                "capturable": capturable,
            },
        )

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        step = self._next_step(state)
        m = self._buf(state, "exp_avg", p)
        u = self._buf(state, "exp_inf", p)
        b1, b2 = hp["betas"]
        clr = hp["lr"] / (1.0 - b1**step)
        _k._run(_k.ADAMAX, p, [g, m, u], clr, b1, b2, hp["eps"], hp["weight_decay"])


class NAdam(Optimizer):
    """NAdam, Adam with Nesterov momentum (Dozat 2016, "Incorporating Nesterov Momentum into
    Adam"), with the momentum schedule of PyTorch's ``torch.optim.NAdam(params, lr=2e-3,
    betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, *, maximize=False)``.

    For each parameter ``p`` with gradient ``g``, at step ``t``:

    - ``p *= 1 - lr * weight_decay`` if ``decoupled_weight_decay`` (NAdamW), else
      ``g = g + weight_decay * p``
    - ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``;
      ``mu_prod = mu_1 * ... * mu_t``
    - ``m = beta1 * m + (1 - beta1) * g``; ``v = beta2 * v + (1 - beta2) * g**2``
    - ``d = sqrt(v / (1 - beta2**t)) + eps``
    - ``p -= lr * (1 - mu_t) / (1 - mu_prod) * g / d``
      ``+ lr * mu_{t+1} / (1 - mu_prod * mu_{t+1}) * m / d``

    State: ``"step"``, ``"mu_product"`` (a float), ``"exp_avg"`` (m), ``"exp_avg_sq"`` (v).

    Raises:
        ValueError: ``lr``, ``eps``, ``weight_decay`` or ``momentum_decay`` negative or not
            finite, a beta outside ``[0, 1)``, and as :class:`~gradtape.optim.Optimizer`.
    """

    name = "NAdam"
    _state_keys = ("step", "mu_product", "exp_avg", "exp_avg_sq")
    _scalar_state: ClassVar[dict[str, type]] = {"step": int, "mu_product": float}
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "betas": check_betas,
        "eps": check_nonneg,
        "weight_decay": check_nonneg,
        "momentum_decay": check_nonneg,
        "decoupled_weight_decay": check_bool,
        "maximize": check_bool,
        **switches("foreach", "capturable", "differentiable"),
    }
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    momentum_decay: float
    decoupled_weight_decay: bool
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "betas": betas,
                "eps": eps,
                "weight_decay": weight_decay,
                "momentum_decay": momentum_decay,
                "decoupled_weight_decay": decoupled_weight_decay,
                "maximize": maximize,
                "foreach": foreach,
                "capturable": capturable,
                "differentiable": differentiable,
            },
        )

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        step = self._next_step(state)
        m, v = self._moments(state, p)
        lr, md = hp["lr"], hp["momentum_decay"]
        b1, b2 = hp["betas"]
        mu = b1 * (1.0 - 0.5 * 0.96 ** (step * md))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
        mu_product = state["mu_product"] = float(state.get("mu_product", 1.0)) * mu
        c_grad = lr * (1.0 - mu) / (1.0 - mu_product)
        c_avg = lr * mu_next / (1.0 - mu_product * mu_next)
        decay, wd_grad = self._decay_split(hp)
        bc2 = 1.0 - b2**step
        _k._run(_k.NADAM, p, [g, m, v], decay, wd_grad, b1, b2, bc2, hp["eps"], c_grad, c_avg)


class RAdam(Optimizer):
    """RAdam, rectified Adam (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate
    and Beyond"); PyTorch's ``torch.optim.RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    weight_decay=0, decoupled_weight_decay=False, *, maximize=False)``.

    For each parameter ``p`` with gradient ``g``, at step ``t``:

    - ``p *= 1 - lr * weight_decay`` if ``decoupled_weight_decay``, else
      ``g = g + weight_decay * p``
    - ``m = beta1 * m + (1 - beta1) * g``; ``v = beta2 * v + (1 - beta2) * g**2``
    - ``rho_inf = 2 / (1 - beta2) - 1``;
      ``rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)``
    - if ``rho_t > 5``: ``r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``
      and ``p -= lr * r * m / (1 - beta1**t) * sqrt(1 - beta2**t) / (sqrt(v) + eps)``
    - else ``p -= lr * m / (1 - beta1**t)`` (the un-adapted momentum step)

    State: ``"step"``, ``"exp_avg"`` (m), ``"exp_avg_sq"`` (v).

    Raises:
        ValueError: ``lr``, ``eps`` or ``weight_decay`` negative or not finite, a beta
            outside ``[0, 1)``, and as :class:`~gradtape.optim.Optimizer`.
    """

    name = "RAdam"
    _state_keys = ("step", "exp_avg", "exp_avg_sq")
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "betas": check_betas,
        "eps": check_nonneg,
        "weight_decay": check_nonneg,
        "decoupled_weight_decay": check_bool,
        "maximize": check_bool,
        **switches("foreach", "capturable", "differentiable"),
    }
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    decoupled_weight_decay: bool
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "betas": betas,
                "eps": eps,
                "weight_decay": weight_decay,
                "decoupled_weight_decay": decoupled_weight_decay,
                "maximize": maximize,
                "foreach": foreach,
                "capturable": capturable,
                "differentiable": differentiable,
            },
        )

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        step = self._next_step(state)
        m, v = self._moments(state, p)
        lr = hp["lr"]
        b1, b2 = hp["betas"]
        bc1, bc2 = 1.0 - b1**step, 1.0 - b2**step
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho_t = rho_inf - 2.0 * step * b2**step / bc2
        rectified = rho_t > 5.0
        if rectified:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            c = lr * rect * math.sqrt(bc2) / bc1
        else:
            c = lr / bc1
        decay, wd_grad = self._decay_split(hp)
        _k._run(_k.RADAM, p, [g, m, v], decay, wd_grad, b1, b2, c, hp["eps"], rectified)
