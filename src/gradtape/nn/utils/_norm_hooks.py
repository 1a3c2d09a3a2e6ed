"""PyTorch's weight normalisation and spectral normalisation (the hook API of
``torch.nn.utils.weight_norm`` / ``spectral_norm``) on gradtape modules.

- :func:`weight_norm` (Salimans & Kingma 2016, "Weight Normalization"): the parameter
  ``name`` is replaced by ``name_g`` (a magnitude) and ``name_v`` (a direction), and the weight
  is ``g * v / ||v||`` (the norm over every dim but ``dim``).
- :func:`spectral_norm` (Miyato et al. 2018, "Spectral Normalization for GANs"): the parameter
  becomes ``name_orig`` and the weight is ``name_orig / sigma``, sigma the largest singular
  value of ``name_orig`` (as a matrix, ``dim`` first) estimated by power iteration with the
  buffers ``name_u`` and ``name_v``, which training-mode forwards update.
- :func:`remove_weight_norm`, :func:`remove_spectral_norm` undo them: ``name`` is a plain
  parameter again, holding the normalised weight's values.

How it works here (gradtape's ``Module`` has no forward pre-hooks): the module's class is
swapped for a subclass of it made for this one module (same ``__name__``; ``isinstance`` still
holds) whose ``forward`` computes each normalised weight once, with gradtape ops on the
parameters, before the original ``forward`` runs, and whose property ``name`` returns it. The
weight is therefore recomputed from the current parameters on every forward, and gradients
flow to ``name_g`` / ``name_v`` (``name_orig``), never to a stale tensor; outside a forward,
reading ``module.weight`` computes it from the current parameters (no power iteration).
``state_dict`` keys are PyTorch's (``weight_g``, ``weight_v``; ``weight_orig``, ``weight_u``,
``weight_v``), so checkpoints map both ways. Removing the last norm restores the original class.

``copy.deepcopy`` and ``pickle`` give a module with the same norms (its own class). Assigning
to ``module.weight`` while a norm is applied raises ``AttributeError`` (assign the underlying
parameters). The power iteration writes the buffers in place outside the tape, so a
:func:`gradtape.capture` replay does not repeat it.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol, TypeVar

import numpy as np

from gradtape.grad_mode import no_grad
from gradtape.nn.module import Module
from gradtape.tape import NONE_TAPE
from gradtape.tensor import Tensor

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]

M = TypeVar("M", bound=Module)

_HOOKS = "_gt_norm_hooks"
"""The instance attribute (a dict: name -> hook) of a module with a norm applied."""
_BASE = "_gt_norm_base"
"""The class attribute of a swapped class: the module's original class."""
_CACHE = "_gt_norm_cache"
"""The instance attribute holding the weights computed for the forward that is running."""
_PARAMETRIZED = "_gt_parametrized"
"""The instance attribute (a tuple) naming the tensors :mod:`gradtape.nn.utils.parametrize` parametrizes."""


class _Hook(Protocol):
    kind: str

    def compute(self, module: Module, training_forward: bool) -> Tensor[Any, Any]: ...


def _hooks(module: Module) -> dict[str, _Hook]:
    d: dict[str, _Hook] | None = module.__dict__.get(_HOOKS)
    return {} if d is None else d


def _forward_of(base: type) -> Any:
    orig = base.forward  # type: ignore[attr-defined]

    @functools.wraps(orig)  # keeps the signature (and overloads) Module.__call__ checks inputs against
    def forward(self: Module, *args: Any, **kwargs: Any) -> Any:
        hooks = _hooks(self)
        outer = self.__dict__.get(_CACHE)
        cache = {name: h.compute(self, self.training) for name, h in hooks.items()}
        object.__setattr__(self, _CACHE, cache)
        try:
            return orig(self, *args, **kwargs)
        finally:
            object.__setattr__(self, _CACHE, outer)

    return forward


def _weight_property(name: str) -> property:
    def get(self: Module) -> Tensor[Any, Any]:
        cache = self.__dict__.get(_CACHE)
        if cache is not None and name in cache:
            w: Tensor[Any, Any] = cache[name]
            return w
        return _hooks(self)[name].compute(self, False)

    def set_(self: Module, value: Any) -> None:
        raise AttributeError(
            f"{type(self).__name__}: {name!r} is computed by {_hooks(self)[name].kind} from its parameters; "
            f"assign those instead, or call remove_{_hooks(self)[name].kind}(module, {name!r}) first"
        )

    return property(get, set_, doc=f"The normalised {name!r}, computed from its parameters.")


def _retype(module: Module) -> None:
    """Give ``module`` a new class made for it: a subclass of its original class with a property
    per name in its hooks and per parametrized name (:mod:`gradtape.nn.utils.parametrize`), or
    the original class itself when there are none. A class made here is never changed
    afterwards, so a copy of the module sharing it cannot be broken by a change of the
    original's norms."""
    cls = type(module)
    base = cls.__dict__.get(_BASE, cls)
    hooks = _hooks(module)
    pnames: tuple[str, ...] = module.__dict__.get(_PARAMETRIZED, ())
    if not hooks and not pnames:
        if _BASE in cls.__dict__:
            object.__setattr__(module, "__class__", base)
        for attr in (_HOOKS, _CACHE, _PARAMETRIZED):
            module.__dict__.pop(attr, None)
    else:
        object.__setattr__(module, "__class__", _subclass(base, tuple(hooks), pnames))


def _subclass(base: type, names: tuple[str, ...], pnames: tuple[str, ...] = ()) -> type:
    name = f"Parametrized{base.__name__}" if pnames else base.__name__  # PyTorch's names
    ns: dict[str, Any] = {
        _BASE: base,
        "__reduce_ex__": _reduce_ex,
        "__setstate__": _setstate,
        "__module__": base.__module__,
        "__qualname__": name,
    }
    if names:
        ns["forward"] = _forward_of(base)
    ns.update({n: _weight_property(n) for n in names})
    ns.update({n: _parametrized_property(n) for n in pnames})
    return type(name, (base,), ns)


def _parametrized_property(name: str) -> property:
    def get(self: Any) -> Tensor[Any, Any]:
        w: Tensor[Any, Any] = self.parametrizations[name]()
        return w

    def set_(self: Any, value: Any) -> None:
        self.parametrizations[name].right_inverse(value)

    return property(get, set_, doc=f"The parametrized {name!r}, computed by module.parametrizations.{name}.")


def _reduce_ex(self: Module, protocol: Any) -> tuple[Any, ...]:
    """Pickling and ``copy.deepcopy``: rebuilt from the original class and the state (the class
    made at run time cannot be pickled by name)."""
    return (_rebuild, (type(self).__dict__[_BASE],), dict(self.__dict__))


def _rebuild(base: type[Module]) -> Module:
    obj = base.__new__(base)
    object.__setattr__(obj, "__class__", _subclass(base, (), ()))
    return obj


def _setstate(self: Module, state: dict[str, Any]) -> None:
    self.__dict__.update(state)
    _retype(self)


def _install(module: Module, name: str, hook: _Hook) -> None:
    """Add ``hook`` for ``name`` (and the property ``name``)."""
    hooks = dict(_hooks(module))
    hooks[name] = hook
    object.__setattr__(module, _HOOKS, hooks)
    _retype(module)


def _uninstall(module: Module, name: str) -> None:
    """Drop the hook of ``name`` and its property; the original class once none is left."""
    hooks = dict(_hooks(module))
    del hooks[name]
    object.__setattr__(module, _HOOKS, hooks)
    _retype(module)


def _parameter(fn: str, module: Module, name: str) -> Tensor[Any, Any]:
    """``module``'s parameter ``name``, checked.

    Raises:
        TypeError: ``module`` is not a Module or ``name`` not a str.
        RuntimeError: a norm is already applied to ``name``.
        AttributeError: ``module`` has no parameter ``name`` (a buffer, a missing name, None).
    """
    if not isinstance(module, Module):
        raise TypeError(f"{fn}: expected a gradtape nn.Module, got {type(module).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"{fn}: name must be a str, got {type(name).__name__}")
    cls = type(module).__name__
    hook = _hooks(module).get(name)
    if hook is not None:
        raise RuntimeError(
            f"{fn}: cannot register two {fn} hooks on the same parameter {name!r} of {cls} "
            f"({hook.kind} is already applied to it)"
        )
    own = dict(module.named_parameters(recurse=False, remove_duplicate=False))
    p = own.get(name)
    if p is None:
        names = ", ".join(repr(n) for n in own) or "none"
        raise AttributeError(f"{fn}: {cls} has no parameter {name!r} (its parameters: {names})")
    return p


def _dim_arg(fn: str, module: Module, name: str, dim: Any, ndim: int) -> int:
    """``dim`` in ``[0, ndim)``; -1 for ``None`` or -1 (PyTorch's: the norm over every element)."""
    cls = type(module).__name__
    if dim is None:
        return -1
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fn}: dim must be an int or None, got {type(dim).__name__} (for {cls}.{name})")
    d = int(dim)
    if d == -1:
        return -1
    if not -ndim <= d < ndim:
        raise IndexError(
            f"{fn}: dim {d} is out of range for {cls}.{name} of {ndim} dims "
            f"(expected to be in range of [{-ndim}, {ndim - 1}], or None)"
        )
    return d % ndim


# ----- weight_norm ---------------------------------------------------------------------------


def _norm_except_dim(v: Tensor[Any, Any], dim: int) -> Tensor[Any, Any]:
    """The 2-norm of ``v`` over every dim but ``dim`` (kept, size 1), or over all (``dim=-1``, 0-d)."""
    sq = v * v
    if dim == -1:
        out: Tensor[Any, Any] = sq.sum().sqrt()
        return out
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return sq.sum(axis=axes, keepdims=True).sqrt() if axes else sq.sqrt()


class _WeightNorm:
    kind = "weight_norm"

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute(self, module: Module, training_forward: bool) -> Tensor[Any, Any]:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        out: Tensor[Any, Any] = v * (g / _norm_except_dim(v, self.dim))
        return out


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Apply weight normalisation to the parameter ``name`` of ``module`` (PyTorch's
    ``torch.nn.utils.weight_norm``; Salimans & Kingma 2016, "Weight Normalization: A Simple
    Reparameterization to Accelerate Training of Deep Neural Networks")::

        w = g * v / ||v||

    The parameter ``name`` is replaced by two parameters: ``name_g`` (the magnitude, of shape
    ``w``'s with every dim but ``dim`` of size 1; 0-d for ``dim=None``) and ``name_v`` (the
    direction, ``w``'s shape), initialised so that ``w`` is unchanged (``g = ||w||``,
    ``v = w``). ``||v||`` is the 2-norm over every dim except ``dim`` (over all of ``v`` for
    ``dim=None``; ``dim=-1`` means the same, as in PyTorch). Before each forward the weight is
    recomputed from ``g`` and ``v`` with gradtape ops, so ``backward()`` fills ``name_g.grad``
    and ``name_v.grad``. ``state_dict`` keys are PyTorch's (``weight_g``, ``weight_v``)::

        m = gradtape.nn.utils.weight_norm(nn.Linear(20, 40), name="weight")
        m.weight_g.shape   # (40, 1)
        m.weight_v.shape   # (40, 20)

    Args:
        module: the module (changed in place and returned).
        name: the name of a parameter of ``module`` itself.
        dim: the dim whose slices get their own magnitude (0: one per output unit of a
            ``Linear`` or output channel of a ``Conv2d``), or ``None`` for one magnitude.

    Returns:
        ``module``.

    Raises:
        TypeError: ``module`` is not a Module, ``name`` not a str, ``dim`` not an int or None.
        AttributeError: ``module`` has no parameter ``name`` (the message lists its parameters).
        RuntimeError: weight_norm or spectral_norm is already applied to ``name``.
        IndexError: ``dim`` is out of range for the parameter's dims.
    """
    w = _parameter("weight_norm", module, name)
    d = _dim_arg("weight_norm", module, name, dim, w.ndim)
    with no_grad():
        g = _norm_except_dim(w.detach(), d).clone()
        v = w.detach().clone()
    delattr(module, name)
    module.register_parameter(name + "_g", g)
    module.register_parameter(name + "_v", v)
    _install(module, name, _WeightNorm(name, d))
    return module


def remove_weight_norm(module: M, name: str = "weight") -> M:
    """Remove the weight normalisation of ``name`` from ``module`` (PyTorch's
    ``torch.nn.utils.remove_weight_norm``): ``name_g`` and ``name_v`` are deleted and ``name``
    is a plain parameter again holding ``g * v / ||v||``'s current values.

    Returns:
        ``module``.

    Raises:
        ValueError: :func:`weight_norm` was not applied to ``name`` of ``module``.
    """
    return _remove("weight_norm", module, name, (name + "_g", name + "_v"))


def _remove(kind: str, module: M, name: str, drop: tuple[str, ...]) -> M:
    hook = _hooks(module).get(name) if isinstance(module, Module) else None
    if hook is None or hook.kind != kind:
        raise ValueError(f"{kind} of {name!r} not found in {type(module).__name__} ({module!r})")
    with no_grad():
        w = hook.compute(module, False).detach().clone()
    _uninstall(module, name)
    for n in drop:
        delattr(module, n)
    w.tape = NONE_TAPE
    setattr(module, name, w)  # becomes a parameter
    return module


# ----- spectral_norm -------------------------------------------------------------------------


def _as_matrix(w: Tensor[Any, Any], dim: int) -> Tensor[Any, Any]:
    """``w`` with ``dim`` moved first, reshaped to ``(w.shape[dim], -1)`` (PyTorch's
    ``SpectralNorm.reshape_weight_to_matrix``)."""
    if dim != 0:
        w = w.permute(dim, *[d for d in range(w.ndim) if d != dim])
    out: Tensor[Any, Any] = w.reshape(w.shape[0], -1)
    return out


def _normalize(a: Any, eps: float) -> Any:
    """``a / max(||a||, eps)`` on an array (PyTorch's ``F.normalize(a, dim=0, eps=eps)``)."""
    return a / max(float((a * a).sum() ** 0.5), eps)


class _SpectralNorm:
    kind = "spectral_norm"

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def compute(self, module: Module, training_forward: bool) -> Tensor[Any, Any]:
        w = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = _as_matrix(w, self.dim)
        if training_forward:  # the power iteration, in place into the buffers (no gradient)
            m = mat.data
            for _ in range(self.n_power_iterations):
                v.data[...] = _normalize(m.T @ u.data, self.eps)
                u.data[...] = _normalize(m @ v.data, self.eps)
        # copies: a later training forward updates the buffers in place, and this forward's
        # backward must still see the u, v it used (PyTorch clones them too)
        uc: Tensor[Any, Any] = Tensor(u.data.copy(), u.device, NONE_TAPE)
        vc: Tensor[Any, Any] = Tensor(v.data.copy(), v.device, NONE_TAPE)
        sigma = (uc * (mat @ vc)).sum()
        out: Tensor[Any, Any] = w / sigma
        return out


def _spectral_dim(module: Module, name: str, w: Tensor[Any, Any], n_power_iterations: object, dim: object) -> int:
    """The checks both spectral norms (this module's and :mod:`.parametrizations`') make of
    their arguments, and the dim the matrix is taken along: ``dim``, or PyTorch's default (1
    for the ``ConvTranspose`` layers, 0 otherwise), ``-1`` as the last dim.

    Raises:
        ValueError: ``n_power_iterations`` is not a positive int (the message names the
            module's class and ``name``). TypeError, IndexError: as :func:`_dim_arg`.
    """
    cls = type(module).__name__
    if isinstance(n_power_iterations, bool) or not isinstance(n_power_iterations, (int, np.integer)):
        raise ValueError(f"spectral_norm: n_power_iterations must be an int, got {type(n_power_iterations).__name__}")
    if n_power_iterations <= 0:
        raise ValueError(
            "spectral_norm: expected n_power_iterations to be positive, but got "
            f"n_power_iterations={n_power_iterations} (for {cls}.{name})"
        )
    if dim is None:
        dim = 1 if cls.startswith("ConvTranspose") else 0
    d = _dim_arg("spectral_norm", module, name, dim, w.ndim)
    return w.ndim - 1 if d == -1 else d


def spectral_norm(
    module: M, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> M:
    """Apply spectral normalisation to the parameter ``name`` of ``module`` (PyTorch's
    ``torch.nn.utils.spectral_norm``; Miyato et al. 2018, "Spectral Normalization for
    Generative Adversarial Networks")::

        W = W_orig / sigma(W_orig),   sigma(W) = u^T W v

    with ``W_orig`` viewed as a matrix of shape ``(W.shape[dim], -1)`` (``dim`` moved first)
    and ``u`` (length ``W.shape[dim]``), ``v`` (the other length) the power iteration's
    estimates of its first singular vectors. The parameter ``name`` becomes ``name_orig`` and
    ``u``, ``v`` the buffers ``name_u``, ``name_v`` (random unit vectors at first). Each forward
    in training mode first runs ``n_power_iterations`` steps, in place and without gradient::

        v = normalize(W^T u),  u = normalize(W v)     (normalize(a) = a / max(||a||, eps))

    then computes ``W`` from ``name_orig`` with gradtape ops (gradients flow to ``name_orig``
    through ``sigma`` too, ``u`` and ``v`` held constant). In eval mode the buffers are used as
    they are. ``state_dict`` keys are PyTorch's (``weight_orig``, ``weight_u``, ``weight_v``).

    Args:
        module: the module (changed in place and returned).
        name: the name of a parameter of ``module`` itself.
        n_power_iterations: power iteration steps per training forward, at least 1.
        eps: the floor of the norms in ``normalize``.
        dim: the dim of output units; ``None``: 1 for the ``ConvTranspose`` layers, else 0.

    Returns:
        ``module``.

    Raises:
        TypeError: ``module`` is not a Module, ``name`` not a str, ``dim`` not an int or None.
        ValueError: ``n_power_iterations`` is not a positive int.
        AttributeError: ``module`` has no parameter ``name``.
        RuntimeError: spectral_norm or weight_norm is already applied to ``name``.
        IndexError: ``dim`` is out of range for the parameter's dims.
    """
    w = _parameter("spectral_norm", module, name)
    d = _spectral_dim(module, name, w, n_power_iterations, dim)
    with no_grad():
        mat = _as_matrix(w.detach(), d)
        h, k = mat.shape
        u = w.device.randn((h,), w.dtype)
        v = w.device.randn((k,), w.dtype)
        u.data[...] = _normalize(u.data, eps)
        v.data[...] = _normalize(v.data, eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", w)
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    _install(module, name, _SpectralNorm(name, int(n_power_iterations), d, float(eps)))
    return module


def remove_spectral_norm(module: M, name: str = "weight") -> M:
    """Remove the spectral normalisation of ``name`` from ``module`` (PyTorch's
    ``torch.nn.utils.remove_spectral_norm``): ``name_orig``, ``name_u`` and ``name_v`` are
    deleted and ``name`` is a plain parameter holding ``W_orig / sigma`` (no power iteration).

    Returns:
        ``module``.

    Raises:
        ValueError: :func:`spectral_norm` was not applied to ``name`` of ``module``.
    """
    return _remove("spectral_norm", module, name, (name + "_orig", name + "_u", name + "_v"))
