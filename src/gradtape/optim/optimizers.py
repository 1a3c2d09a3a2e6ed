"""Optimizers that update gradtape parameters in place, from a :class:`~gradtape.Gradients`
store (``opt.step(grads)``) or from each parameter's ``.grad`` (PyTorch's ``opt.step()`` and
``opt.zero_grad()``).

Each follows PyTorch's ``torch.optim`` update rule exactly (single-tensor form) and updates
each parameter with one fused kernel pass (:mod:`gradtape.devices.kernels.optim`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import numpy as np

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import optim as _k
from gradtape.engine import clear_grad, grad_array_mut
from gradtape.errors import DTypeError, ShapeError
from gradtape.gradients import Gradients
from gradtape.optim._checks import Check, check_betas, check_bool, check_nonneg, check_unit, switches
from gradtape.tape import note_writes
from gradtape.tensor import Tensor

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop"]

Array = np.ndarray[Any, Any]
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

SCHEDULE_KEYS = frozenset({"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"})
"""The entries :mod:`gradtape.optim.lr_scheduler` keeps in a parameter group (PyTorch's names):
a group may carry them besides the optimizer's hyper-parameters, and :meth:`Optimizer.state_dict`
saves them, so that a schedule resumed from a checkpoint starts from its base rates."""

ParamsT: TypeAlias = Sequence[Tensor[Any, Any] | dict[str, Any]]
"""What an optimizer takes as ``params``: the tensors, or parameter groups (dicts with
``"params"`` and hyper-parameters), as PyTorch's ``torch.optim.optimizer.ParamsT``."""


class Optimizer:
    """Base class: parameter groups, their hyper-parameters, per-parameter state.

    Args:
        params: the parameters, gradtape tensors of dtype float32/float64 whose ``.data``
            (a writable numpy array) :meth:`step` updates in place, each at most once; or
            PyTorch's parameter groups, a sequence of dicts ``{"params": [tensors], **hp}``
            whose hyper-parameters ``hp`` (any of the optimizer's, ``lr`` included) override
            the constructor's for that group, e.g. AdamW without weight decay on biases and
            norms: ``[{"params": weights}, {"params": others, "weight_decay": 0.0}]``.
        defaults: the hyper-parameters given to the constructor (``lr`` and the optimizer's
            own); groups take them where they do not set their own.

    ``param_groups`` is the list of groups, each a dict with ``"params"`` (the tensors) and
    every hyper-parameter, read by :meth:`step` (edit them there, as in PyTorch). The
    optimizer's attributes (``opt.weight_decay``, ...) read the defaults, ``opt.lr`` the
    first group's rate (the one in use with one group); setting one validates it and sets it
    in the defaults and in every group (schedules set ``lr`` per group instead, see
    :mod:`gradtape.optim.lr_scheduler`, and keep their base rate in the group as
    ``"initial_lr"``, PyTorch's key; :data:`SCHEDULE_KEYS`). ``params`` is the flat list of
    all groups' tensors, in order. State is kept per position in that list (``state[i]``
    for ``params[i]``): numpy arrays of the parameter's shape and dtype plus, for Adam and
    RMSprop, the step count.

    ``maximize=True`` (an optimizer's keyword, PyTorch's): the rule is applied to ``-g``, so
    the parameters ascend the objective.

    PyTorch's implementation switches are taken where PyTorch's optimizer takes them, in its
    order (``foreach=None``, ``fused=None``, ``capturable=False``, ``differentiable=False``),
    and kept in each group as PyTorch keeps them, so a constructor call and a ``state_dict``
    port as written. They choose among PyTorch's implementations of one rule; gradtape has one
    (a fused kernel pass per parameter), which runs whatever ``foreach``, ``fused`` and
    ``capturable`` say. ``differentiable=True`` (autograd through ``step()``) raises
    ``ValueError``: the update is not recorded on any tape.

    Raises:
        ValueError: no parameters, or a tensor given twice (also across groups), a
            parameter read-only, a group without ``"params"`` or with a key the optimizer
            does not have (besides :data:`SCHEDULE_KEYS`), a hyper-parameter out of range
            (``lr`` negative or not finite), or ``differentiable=True``, each naming the
            optimizer and the argument.
        TypeError: a parameter is not a gradtape ``Tensor``.
        DTypeError: a parameter is not float32/float64.
    """

    name = "Optimizer"
    _state_keys: tuple[str, ...] = ()
    _scalar_state: ClassVar[dict[str, type]] = {"step": int}
    """State entries that are numbers, not arrays, and the type :meth:`load_state_dict` gives them."""
    _hyper: ClassVar[dict[str, Check]] = {"lr": check_nonneg}
    """Each hyper-parameter's check, in the order :meth:`hyperparams` lists them."""
    lr: float

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        items = list(params)
        if not items:
            raise ValueError(f"{self.name}: params is empty")
        self.defaults: dict[str, Any] = self._validate(dict(defaults))
        dicts = [isinstance(it, dict) for it in items]
        if any(dicts) and not all(dicts):
            raise TypeError(f"{self.name}: params mixes tensors and parameter groups (dicts); give one kind")
        raw: list[dict[str, Any]] = [it for it in items if isinstance(it, dict)] if all(dicts) else [{"params": items}]
        ps: list[Tensor[Any, Any]] = []
        groups: list[dict[str, Any]] = []
        seen: set[int] = set()
        for gi, group in enumerate(raw):
            if "params" not in group:
                raise ValueError(f"{self.name}: parameter group {gi} has no 'params'")
            unknown = sorted(set(group) - set(self.defaults) - {"params"} - SCHEDULE_KEYS)
            if unknown:
                raise ValueError(
                    f"{self.name}: parameter group {gi} sets {unknown}, which {self.name} does not have "
                    f"(its hyper-parameters: {sorted(self.defaults)})"
                )
            given = group["params"]
            members: list[Any] = [given] if isinstance(given, Tensor) else list(given)
            if not members:
                raise ValueError(f"{self.name}: parameter group {gi} is empty")
            for p in members:
                i = len(ps)
                if not isinstance(p, Tensor):
                    raise TypeError(f"{self.name}: params[{i}] is a {type(p).__name__}, not a gradtape Tensor")
                if p.dtype not in _FLOATS:
                    raise DTypeError(
                        f"{self.name}: params[{i}] has dtype {p.dtype}; optimizers take float32 or float64"
                    )
                if not _arrays.writeable(p.data):
                    raise ValueError(f"{self.name}: params[{i}] (shape {p.shape}) is read-only")
                if p.id in seen:
                    raise ValueError(f"{self.name}: params[{i}] (id {p.id}) appears more than once")
                seen.add(p.id)
                ps.append(p)
            hp = self._validate({**self.defaults, **{k: v for k, v in group.items() if k != "params"}})
            groups.append({"params": members, **hp, **{k: group[k] for k in SCHEDULE_KEYS if k in group}})
        self.param_groups: list[dict[str, Any]] = groups
        self.params: list[Tensor[Any, Any]] = ps
        self.state: list[dict[str, Any]] = [{} for _ in ps]

    def _validate(self, hp: dict[str, Any]) -> dict[str, Any]:
        """Check and normalise a full set of hyper-parameters with :attr:`_hyper` (raises ValueError)."""
        return {key: check(self.name, key, hp[key]) for key, check in self._hyper.items()}

    if not TYPE_CHECKING:  # attribute access to the defaults; typed by each class's annotations

        def __getattr__(self, key: str) -> Any:
            groups = self.__dict__.get("param_groups")
            if key == "lr" and groups:  # the rate in use, which schedules set per group
                return groups[0]["lr"]
            defaults = self.__dict__.get("defaults")
            if defaults is not None and key in defaults:
                return defaults[key]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key: str, value: Any) -> None:
        defaults = self.__dict__.get("defaults")
        if defaults is not None and key in defaults:
            checked = self._validate({**defaults, key: value})
            defaults[key] = checked[key]
            for g in self.__dict__.get("param_groups", ()):
                g[key] = checked[key]
            return
        super().__setattr__(key, value)

    def hyperparams(self) -> dict[str, Any]:
        """The default hyper-parameters as a dict (``lr`` and the optimizer's own)."""
        return dict(self.defaults)

    @_tp.recorded_call
    def step(self, grads: Gradients | None = None) -> None:
        """Update every parameter that has a gradient in place, each with its group's
        hyper-parameters: PyTorch's ``optimizer.step()``.

        The gradients come from ``grads`` when a store is given (what ``loss.backward()``
        returned; each parameter's ``.grad`` is then not read), else from each parameter's
        ``.grad`` (PyTorch's spelling: ``loss.backward(); opt.step(); opt.zero_grad()``).
        Either source is only read, never written. A parameter with no gradient (absent
        from the store, or ``p.grad is None``) is skipped and its state (momentum buffer,
        step count) is not advanced, as PyTorch skips ``p.grad is None``. The parameter's
        ``.data`` is updated in place, so views of it and the tensor's identity stay valid.

        Args:
            grads: the :class:`~gradtape.Gradients` store, or ``None`` (default) to read
                ``.grad``. A gradient has its parameter's shape and dtype (float32/float64).

        Raises:
            ShapeError, DTypeError: a gradient's shape or dtype is not its parameter's (for
                ``.grad``: the parameter's ``.data`` was replaced after the gradient was set).
            ValueError: a parameter's ``.data`` was replaced by a read-only array.
        """
        stored = None if grads is None else grads._data  # the store's own arrays: read, never written
        name = self.name
        i = -1
        written: list[Array] = []
        for group in self.param_groups:
            maximize = group.get("maximize", False)
            for p in group["params"]:
                i += 1
                if stored is not None:
                    g = stored.get(p.id)
                else:  # the _grad slot behind .grad: no property call, no non-leaf warning
                    gt = getattr(p, "_grad", None)
                    g = None if gt is None else gt.data
                if g is None:
                    continue
                pd = p.data
                if g.shape != pd.shape or g.dtype != pd.dtype:
                    what = f"params[{i}]'s gradient" if stored is not None else f"params[{i}].grad"
                    if g.shape != pd.shape:
                        raise ShapeError(f"{name}.step: {what}: gradient shape {g.shape} != parameter shape {pd.shape}")
                    raise DTypeError(f"{name}.step: {what}: gradient dtype {g.dtype} != parameter dtype {pd.dtype}")
                if not _arrays.writeable(pd):
                    raise ValueError(f"{name}.step: params[{i}] (shape {pd.shape}) is read-only")
                if maximize:  # PyTorch's maximize: ascend, i.e. the rule applied to -g
                    g = np.negative(g)
                self._update(self.state[i], pd, g, group)
                written.append(pd)
        if written:  # a backward still to run over these parameters' old values will refuse to
            note_writes(*written)

    @_tp.recorded_call
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad``: PyTorch's ``optimizer.zero_grad(set_to_none)``.

        Args:
            set_to_none: ``True`` (default, as PyTorch 2): set each ``.grad`` to ``None``
                (the next ``backward()`` allocates it afresh, and :meth:`step` skips a
                parameter whose ``.grad`` stays ``None``). ``False``: fill each existing
                ``.grad`` with zeros in place (same array, so views and aliases see the
                zeros); a ``.grad`` that is ``None`` stays ``None``.

        A :class:`~gradtape.Gradients` store is not touched; clear one with
        ``model.zero_grads(grads)``.

        Raises:
            ValueError: ``set_to_none=False`` and a ``.grad`` holds a read-only array (checked
                for every parameter before any is zeroed).
        """
        if set_to_none:
            for p in self.params:
                clear_grad(p)
            return
        bufs: list[Array] = []
        for i, p in enumerate(self.params):
            g = grad_array_mut(p, values=False)  # zeroed below: a shared array is not copied first
            if g is None:
                continue
            if not _arrays.writeable(g):
                raise ValueError(
                    f"{self.name}.zero_grad: params[{i}].grad (shape {g.shape}) is read-only and cannot be zeroed "
                    "in place; use zero_grad(set_to_none=True)"
                )
            bufs.append(g)
        for g in bufs:
            g.fill(0)

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        raise NotImplementedError

    _fixed_numbers = False
    """Whether :meth:`_update` calls its kernels with numbers that change only when the
    hyper-parameters or the state's arrays do (SGD), so a kernel trace of :meth:`step` holds for
    later steps (``gradtape.capture``'s compiled replays, guarded by :meth:`_trace_guard`), or
    with numbers :meth:`_trace_numbers` recomputes at each call (Adam's bias corrections).
    The others' steps replay as Python."""

    _dynamic_state: tuple[str, ...] = ()
    """State entries that change at every step (Adam's ``"step"``), which :meth:`_trace_numbers`
    advances: left out of :meth:`_trace_guard`."""

    def _trace_guard(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """What :meth:`step` reads besides the gradients: ``(values, arrays)``, every group's
        hyper-parameters and the state's numbers, then the parameters' and the state's arrays
        (compared by identity)."""
        values: list[Any] = []
        arrays: list[Any] = []
        skip = self._dynamic_state
        for group in self.param_groups:
            values += [v for k, v in group.items() if k != "params"]
        for p, st in zip(self.params, self.state, strict=True):
            arrays.append(p.data)
            for k, v in st.items():
                if k not in skip:
                    (arrays if v.__class__ is np.ndarray else values).append(v)
        return tuple(values), tuple(arrays)

    def _trace_numbers(self) -> Any:
        """``numbers(advance)`` for :class:`gradtape.devices.kernels._trace.Touches`, or ``None``
        where :meth:`_update` takes no numbers that change at every step. Called before the
        step is traced, it opens the slots that :meth:`_update` fills while traced."""
        return None

    def _buf(self, state: dict[str, Any], key: str, p: Array) -> Array:
        """The state buffer ``state[key]``, created as zeros of ``p``'s shape and dtype when absent."""
        buf = state.get(key)
        if buf is None:
            buf = state[key] = _arrays.zeros(p.shape, p.dtype, p)  # C-contiguous, whatever p's layout; p's memory
        return buf

    def _next_step(self, state: dict[str, Any]) -> int:
        """Advance a parameter's step count ``state["step"]`` (``0`` when absent; a loaded
        float or 0-d array read as ``int``) and return the new count ``t >= 1``."""
        step = state["step"] = int(state.get("step", 0)) + 1
        return step

    def _moments(self, state: dict[str, Any], p: Array) -> tuple[Array, Array]:
        """Adam's first and second moment buffers ``(state["exp_avg"], state["exp_avg_sq"])``
        (zeros when new), shared by Adam, NAdam and RAdam."""
        m, v = state.get("exp_avg"), state.get("exp_avg_sq")
        if m is None or v is None:  # the first step (or a loaded state without them): created by _buf
            m, v = self._buf(state, "exp_avg", p), self._buf(state, "exp_avg_sq", p)
        return m, v

    def _decay_split(self, hp: dict[str, Any]) -> tuple[float, float]:
        """The weight decay as ``(decay, wd_grad)`` for the kernels that apply
        ``p *= decay; g = g + wd_grad * p``: ``(1 - lr * weight_decay, 0)`` when
        ``decoupled_weight_decay`` (AdamW's rule), else ``(1, weight_decay)`` (the L2 penalty)."""
        lr, wd = hp["lr"], hp["weight_decay"]
        return (1.0 - lr * wd, 0.0) if hp["decoupled_weight_decay"] else (1.0, wd)

    def state_dict(self) -> dict[str, Any]:
        """Return ``{"state": {i: {key: copy}}, "hyperparams": {...}, "param_groups": [...]}``,
        a deep copy.

        State arrays are numpy copies; step counts are ints. Parameters that never got a
        gradient have no entry. ``param_groups`` holds each group's hyper-parameters, the
        schedules' entries (``initial_lr``, ...) and its parameters' positions
        (``"params": [i, ...]``), as PyTorch's.
        """
        state = self._copy_states()
        groups: list[dict[str, Any]] = []
        start = 0
        for g in self.param_groups:
            n = len(g["params"])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": list(range(start, start + n))})
            start += n
        return {"state": state, "hyperparams": self.hyperparams(), "param_groups": groups}

    def _copy_states(self) -> dict[int, dict[str, Any]]:
        """``state_dict()["state"]``: each non-empty state, its arrays copied (the GPU's too: a
        state dict that held the live buffers would change with every later step)."""
        return {
            i: {k: (_arrays.copy(v) if isinstance(v, np.ndarray) or _arrays.on_gpu(v) else v) for k, v in s.items()}
            for i, s in enumerate(self.state)
            if s
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state and hyper-parameters saved by :meth:`state_dict` (copies the arrays).

        Each group's hyper-parameters and schedule entries become the saved group's (a
        schedule's ``initial_lr`` included, so a schedule built or loaded afterwards resumes
        from its base rates, as in PyTorch).

        Raises:
            ValueError: a parameter index is out of range, a key is unknown, a
                hyper-parameter is invalid, or the saved groups do not hold the same
                numbers of parameters as this optimizer's.
            ShapeError, DTypeError: a state array does not match its parameter.
        """
        new = self._load_states(state_dict["state"])
        defaults = self._validate({**self.defaults, **state_dict.get("hyperparams", {})})
        saved = state_dict.get("param_groups")
        group_hps: list[dict[str, Any]] = []
        if saved is not None:
            sizes = [len(g["params"]) for g in saved]
            mine = [len(g["params"]) for g in self.param_groups]
            if sizes != mine:
                raise ValueError(
                    f"{self.name}.load_state_dict: the saved parameter groups hold {sizes} parameters, "
                    f"this optimizer's hold {mine}"
                )
            for g in saved:
                group_hps.append(self._validate({**defaults, **{k: v for k, v in g.items() if k != "params"}}))
        else:  # saved before groups existed: every group takes the saved hyper-parameters
            group_hps = [dict(defaults) for _ in self.param_groups]
        self.defaults.update(defaults)
        for gi, (g, hp) in enumerate(zip(self.param_groups, group_hps, strict=True)):
            for k in SCHEDULE_KEYS:  # the schedules' entries, as saved (PyTorch restores the groups whole)
                g.pop(k, None)
                if saved is not None and k in saved[gi]:
                    g[k] = saved[gi][k]
            g.update(hp)
        self.state = new

    def _load_states(self, saved: dict[Any, dict[str, Any]]) -> list[dict[str, Any]]:
        """The per-parameter states of a saved ``state_dict["state"]``, checked and copied."""
        new: list[dict[str, Any]] = [{} for _ in self.params]
        for i, s in saved.items():
            i = int(i)
            if not 0 <= i < len(self.params):
                raise ValueError(f"{self.name}.load_state_dict: state for parameter {i}, have {len(self.params)}")
            p = self.params[i]
            for k, v in s.items():
                if k not in self._state_keys:
                    raise ValueError(f"{self.name}.load_state_dict: unknown state key {k!r} for parameter {i}")
                if k in self._scalar_state:
                    new[i][k] = self._scalar_state[k](v)
                    continue
                arr = _as_array(v)
                if arr.shape != p.shape:
                    raise ShapeError(
                        f"{self.name}.load_state_dict: {k} of parameter {i} has shape {arr.shape}, "
                        f"parameter has {p.shape}"
                    )
                if arr.dtype != p.dtype:
                    raise DTypeError(
                        f"{self.name}.load_state_dict: {k} of parameter {i} has dtype {arr.dtype}, "
                        f"parameter has {p.dtype}"
                    )
                moved = _arrays.into_memory_of(arr, p.data)  # a checkpoint from the other device: onto the parameter's
                new[i][k] = _arrays.contiguous(_arrays.copy(moved) if moved is arr else moved)
        return new

    def __repr__(self) -> str:
        hp = ", ".join(f"{k}={v}" for k, v in self.hyperparams().items())
        groups = f", {len(self.param_groups)} groups" if len(self.param_groups) > 1 else ""
        return f"{self.name}({len(self.params)} params{groups}, {hp})"


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and weight decay.

    PyTorch's ``torch.optim.SGD`` rule (momentum in Sutskever et al. 2013's form as
    PyTorch writes it). For each parameter ``p`` with gradient ``g`` (same shape and dtype):

    - ``d = g + weight_decay * p``
    - with ``momentum != 0``: ``b = d`` on the parameter's first step, else
      ``b = momentum * b + (1 - dampening) * d``; then ``d = d + momentum * b`` if
      ``nesterov`` else ``d = b``
    - ``p -= lr * d``

    Arguments in PyTorch's order and with its defaults (``lr=1e-3``); ``maximize=True``
    applies the rule to ``-g``.

    State: ``"momentum_buffer"`` (when ``momentum != 0``).

    Raises:
        ValueError: ``lr``, ``momentum``, ``dampening`` or ``weight_decay`` negative or not
            finite; ``nesterov`` with ``momentum == 0`` or ``dampening != 0``; and as
            :class:`Optimizer`.
    """

    name = "SGD"
    _state_keys = ("momentum_buffer",)
    _fixed_numbers = True
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "momentum": check_nonneg,
        "dampening": check_nonneg,
        "weight_decay": check_nonneg,
        "nesterov": check_bool,
        "maximize": check_bool,
        **switches("foreach", "differentiable", "fused"),
    }
    momentum: float
    dampening: float
    weight_decay: float
    nesterov: bool
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "momentum": momentum,
                "dampening": dampening,
                "weight_decay": weight_decay,
                "nesterov": nesterov,
                "maximize": maximize,
                "foreach": foreach,
                "differentiable": differentiable,
                "fused": fused,
            },
        )

    def _validate(self, hp: dict[str, Any]) -> dict[str, Any]:
        checked = super()._validate(hp)
        momentum, dampening = checked["momentum"], checked["dampening"]
        if checked["nesterov"] and (momentum <= 0.0 or dampening != 0.0):
            raise ValueError(
                f"SGD: nesterov needs momentum > 0 and dampening == 0, got momentum={momentum}, dampening={dampening}"
            )
        return checked

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        buf = None
        first = False
        momentum = hp["momentum"]
        if momentum != 0.0:
            first = "momentum_buffer" not in state
            buf = self._buf(state, "momentum_buffer", p)
        # the buffers are this optimizer's own and step() checked p and g: skip re-validation
        _k._sgd_apply(p, g, buf, hp["lr"], momentum, hp["dampening"], hp["weight_decay"], hp["nesterov"], first)


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization"), AMSGrad optional.

    PyTorch's ``torch.optim.Adam`` rule. For each parameter ``p`` with gradient ``g``, at
    step ``t = 1, 2, ...`` (counted per parameter):

    - ``g = g + weight_decay * p`` (L2 penalty, coupled), or with
      ``decoupled_weight_decay=True`` (PyTorch's keyword; :class:`AdamW`)
      ``p *= 1 - lr * weight_decay``
    - ``m = beta1 * m + (1 - beta1) * g``; ``v = beta2 * v + (1 - beta2) * g**2``
    - AMSGrad (Reddi et al. 2018): ``v_max = max(v_max, v)`` is used instead of ``v``
    - ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``

    ``maximize=True`` applies the rule to ``-g``.

    State: ``"step"`` (int), ``"exp_avg"`` (m), ``"exp_avg_sq"`` (v), ``"max_exp_avg_sq"``
    (AMSGrad), arrays of the parameter's shape and dtype.

    Raises:
        ValueError: ``lr``, ``eps`` or ``weight_decay`` negative or not finite, a beta
            outside [0, 1), and as :class:`Optimizer`.
    """

    name = "Adam"
    _state_keys = ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "betas": check_betas,
        "eps": check_nonneg,
        "weight_decay": check_nonneg,
        "amsgrad": check_bool,
        "maximize": check_bool,
        "decoupled_weight_decay": check_bool,
        **switches("foreach", "capturable", "differentiable", "fused"),
    }
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    amsgrad: bool
    maximize: bool
    decoupled_weight_decay: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "betas": betas,
                "eps": eps,
                "weight_decay": weight_decay,
                "amsgrad": amsgrad,
                "maximize": maximize,
                "decoupled_weight_decay": decoupled_weight_decay,
                "foreach": foreach,
                "capturable": capturable,
                "differentiable": differentiable,
                "fused": fused,
            },
        )

    _dynamic_state = ("step",)

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        step = self._next_step(state)
        m, v = self._moments(state, p)
        vmax = self._buf(state, "max_exp_avg_sq", p) if hp["amsgrad"] else None
        b1, b2 = hp["betas"]
        decoupled = hp["decoupled_weight_decay"]
        dyn = None
        slots = self.__dict__.get("_trace_slots")
        if _trace.active is not None and slots is not None:  # a compiled replay's numbers, per parameter
            dyn = (self.__dict__["_trace_dyn"], 2 * len(slots))
            slots.append((state, hp))
        _k._adam_apply(p, g, m, v, vmax, hp["lr"], b1, b2, hp["eps"], step, hp["weight_decay"], decoupled, dyn)

    def _trace_numbers(self) -> Any:
        slots: list[tuple[dict[str, Any], dict[str, Any]]] = []
        dyn = np.zeros(2 * len(self.params))
        self._trace_slots, self._trace_dyn = slots, dyn

        def numbers(advance: bool) -> None:
            """Each traced parameter's step count advanced (``advance``: the compiled call is
            the step) and this step's size and ``sqrt(1 - beta2**t)`` written where the kernel
            calls read them: :func:`~gradtape.devices.kernels.optim.adam_scalars`, as the
            eager step computes them."""
            for k, (state, hp) in enumerate(slots):
                step = self._next_step(state) if advance else int(state["step"])
                b1, b2 = hp["betas"]
                decoupled = hp["decoupled_weight_decay"]
                size, root, _, _ = _k.adam_scalars(hp["lr"], b1, b2, step, hp["weight_decay"], decoupled)
                dyn[2 * k] = size
                dyn[2 * k + 1] = root

        return numbers


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (Loshchilov & Hutter 2019, "Decoupled Weight
    Decay Regularization"); PyTorch's ``torch.optim.AdamW`` rule.

    As :class:`Adam` except that the gradient is not changed by the decay; instead, before
    the Adam update, ``p *= 1 - lr * weight_decay``. Default ``weight_decay`` is ``1e-2``.

    Raises:
        ValueError: as :class:`Adam`.
    """

    name = "AdamW"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )


class RMSprop(Optimizer):
    """RMSprop (Hinton, Srivastava & Swersky, "Neural Networks for Machine Learning",
    lecture 6e), with PyTorch's ``torch.optim.RMSprop`` rule; centered form after Graves 2013.

    For each parameter ``p`` with gradient ``g``:

    - ``g = g + weight_decay * p``
    - ``s = alpha * s + (1 - alpha) * g**2``
    - centered: ``a = alpha * a + (1 - alpha) * g`` and ``r = sqrt(s - a**2) + eps``;
      else ``r = sqrt(s) + eps``
    - with ``momentum > 0``: ``b = momentum * b + g / r`` and ``p -= lr * b``; else
      ``p -= lr * g / r``

    State: ``"step"``, ``"square_avg"`` (s), ``"grad_avg"`` (a, centered),
    ``"momentum_buffer"`` (b, momentum > 0).

    Raises:
        ValueError: ``lr``, ``eps``, ``momentum`` or ``weight_decay`` negative or not finite,
            ``alpha`` outside [0, 1), and as :class:`Optimizer`.
    """

    name = "RMSprop"
    _state_keys = ("step", "square_avg", "grad_avg", "momentum_buffer")
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "alpha": check_unit,
        "eps": check_nonneg,
        "weight_decay": check_nonneg,
        "momentum": check_nonneg,
        "centered": check_bool,
        "maximize": check_bool,
        **switches("capturable", "foreach", "differentiable"),
    }
    alpha: float
    eps: float
    weight_decay: float
    momentum: float
    centered: bool
    maximize: bool

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "alpha": alpha,
                "eps": eps,
                "weight_decay": weight_decay,
                "momentum": momentum,
                "centered": centered,
                "maximize": maximize,
                "capturable": capturable,
                "foreach": foreach,
                "differentiable": differentiable,
            },
        )

    def _update(self, state: dict[str, Any], p: Array, g: Array, hp: dict[str, Any]) -> None:
        self._next_step(state)
        momentum = hp["momentum"]
        sq = self._buf(state, "square_avg", p)
        ga = self._buf(state, "grad_avg", p) if hp["centered"] else None
        buf = self._buf(state, "momentum_buffer", p) if momentum > 0.0 else None
        _k._rmsprop_apply(p, g, sq, ga, buf, hp["lr"], hp["alpha"], hp["eps"], hp["weight_decay"], momentum)


# ----- what a kernel trace of step and zero_grad may take (gradtape.capture's compiled replays) ------


def _step_check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    opt = args[0]
    if not opt._fixed_numbers and type(opt)._trace_numbers is Optimizer._trace_numbers:
        return f"runs {opt.name}.step, whose kernels take numbers that change at every step (a step count)"
    if any(g.get("maximize", False) for g in opt.param_groups):
        return f"runs {opt.name}.step with maximize=True"
    return None


def _step_touches(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _trace.Touches:
    opt = args[0]
    grads = args[1] if len(args) > 1 else kwargs.get("grads")
    stored = None if grads is None else grads._data
    written = []
    for p in opt.params:
        if stored is not None:
            has = p.id in stored
        else:
            has = getattr(p, "_grad", None) is not None
        if has:
            written.append(p.data)
    return _trace.Touches(
        [] if grads is None else [grads],
        list(opt.params) if grads is None else [],
        guard=opt._trace_guard,
        after=lambda: note_writes(*written) if written else None,
        numbers=opt._trace_numbers(),
    )


def _zero_grad_check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    set_to_none = args[1] if len(args) > 1 else kwargs.get("set_to_none", True)
    return None if set_to_none else "runs zero_grad(set_to_none=False), which fills in numpy"


_trace.traceable(Optimizer.step.__wrapped__, _step_check, _step_touches)  # type: ignore[attr-defined]
_trace.traceable(
    Optimizer.zero_grad.__wrapped__,  # type: ignore[attr-defined]
    _zero_grad_check,
    lambda args, kwargs: _trace.Touches([], list(args[0].params), grads_read="none"),
)
