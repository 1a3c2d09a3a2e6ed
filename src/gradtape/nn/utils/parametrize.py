"""PyTorch's ``torch.nn.utils.parametrize`` on gradtape modules: a tensor of a module computed
on every access from the parameters of a parametrization.

``register_parametrization(module, "weight", P())`` moves the parameter ``weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ... when
``P.right_inverse`` returns a tuple) and makes ``module.weight`` a property computing
``P(original)`` with gradtape ops on each access, so gradients reach the originals. The module's
class becomes a subclass made for it, named ``Parametrized<Class>`` as in PyTorch;
``state_dict`` keys are PyTorch's (``parametrizations.weight.original0``, ...). Assigning
``module.weight = value`` stores ``P.right_inverse(value)`` in the originals.

:func:`gradtape.nn.utils.parametrizations.weight_norm` and ``spectral_norm`` are built on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from gradtape.grad_mode import no_grad
from gradtape.nn.container import ModuleDict, ModuleList
from gradtape.nn.module import Module
from gradtape.nn.utils._norm_hooks import _PARAMETRIZED, _hooks, _retype
from gradtape.tape import NONE_TAPE
from gradtape.tensor import Tensor

__all__ = ["ParametrizationList", "is_parametrized", "register_parametrization", "remove_parametrizations"]

M = TypeVar("M", bound=Module)


def _copy_into(dst: Tensor[Any, Any], src: Tensor[Any, Any], where: str) -> None:
    if tuple(dst.shape) != tuple(src.shape):
        raise ValueError(f"{where}: right_inverse gave shape {tuple(src.shape)}, the original has {tuple(dst.shape)}")
    dst.data[...] = src.data


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (PyTorch's ``ParametrizationList``): its items are
    the parametrization modules, applied in order; the parameter ``original`` (or ``original0``,
    ``original1``, ... when the first one's ``right_inverse`` returns a tuple) holds what they
    are applied to. Calling it (no arguments) computes the parametrized tensor."""

    def __init__(self, modules: Iterable[Module], original: Tensor[Any, Any]) -> None:
        super().__init__(modules)
        with no_grad():
            new: Any = original.detach()
            for m in reversed(self._modules):
                inverse = getattr(m, "right_inverse", None)
                if inverse is not None:
                    new = inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        if isinstance(new, Tensor):
            _copy_into(original, new, type(self).__name__)
            self.original = original
            self.ntensors = 1
        else:
            parts = list(new)
            for i, t in enumerate(parts):
                if not isinstance(t, Tensor):
                    raise TypeError(
                        f"right_inverse must return a Tensor or a sequence of Tensors, got {type(t).__name__}"
                    )
                c = t.detach().clone()
                c.tape = NONE_TAPE
                setattr(self, f"original{i}", c)
            self.ntensors = len(parts)

    def right_inverse(self, value: Tensor[Any, Any]) -> None:
        """Store ``value`` as the parametrized tensor: the items' ``right_inverse`` applied in
        reverse order, copied into the originals in place (PyTorch's ``right_inverse``).

        Raises:
            ValueError: a result's shape differs from its original's.
        """
        with no_grad():
            new: Any = value
            for m in reversed(self._modules):
                inverse = getattr(m, "right_inverse", None)
                if inverse is not None:
                    new = inverse(new)
            where = f"{type(self).__name__}.right_inverse"
            if self.is_tensor:
                _copy_into(self.original, new, where)
            else:
                for i, t in enumerate(new):
                    _copy_into(getattr(self, f"original{i}"), t, where)

    def forward(self) -> Any:  # type: ignore[override]  # no input: the originals are its own
        """The parametrized tensor: the first item applied to the original(s), then the others."""
        if self.is_tensor:
            x = self._modules[0](self.original)
        else:
            x = self._modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in self._modules[1:]:
            x = m(x)
        return x


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, if given)."""
    names: tuple[str, ...] = module.__dict__.get(_PARAMETRIZED, ())
    return bool(names) if tensor_name is None else tensor_name in names


def register_parametrization(module: M, tensor_name: str, parametrization: Module, *, unsafe: bool = False) -> M:
    """Parametrize ``module``'s parameter (or buffer) ``tensor_name`` by ``parametrization``
    (PyTorch's ``register_parametrization``): ``module.tensor_name`` becomes
    ``parametrization(original)``, computed on each access. A second call on the same name
    appends to ``module.parametrizations[tensor_name]`` (applied after the first).

    Args:
        module: the module (changed in place and returned).
        tensor_name: a parameter or buffer of ``module`` itself.
        parametrization: a Module whose ``forward`` maps the original(s) to the tensor, with an
            optional ``right_inverse`` (tensor to original, or a tuple of originals).
        unsafe: skip checking that the parametrized tensor keeps the shape and dtype.

    Returns:
        ``module``.

    Raises:
        TypeError: ``module`` or ``parametrization`` is not a Module.
        ValueError: ``module`` has no tensor ``tensor_name``; the parametrization (without
            ``unsafe``) changes its shape or dtype; ``tensor_name`` has an old-API norm.
    """
    if not isinstance(module, Module) or not isinstance(parametrization, Module):
        raise TypeError(
            "register_parametrization: module and parametrization must be gradtape nn.Modules, got "
            f"{type(module).__name__} and {type(parametrization).__name__}"
        )
    cls = type(module).__name__
    if tensor_name in _hooks(module):
        raise ValueError(
            f"register_parametrization: {cls}.{tensor_name} has {_hooks(module)[tensor_name].kind} applied"
        )
    if is_parametrized(module, tensor_name):
        before: Tensor[Any, Any] = getattr(module, tensor_name)
        module.parametrizations[tensor_name].append(parametrization)  # type: ignore[attr-defined]
    else:
        original = module.__dict__.get(tensor_name)
        if not isinstance(original, Tensor):
            raise ValueError(f"register_parametrization: {cls} has no parameter or buffer with name {tensor_name!r}")
        if tensor_name in module._buffer_set():
            raise ValueError(
                f"register_parametrization: {cls}.{tensor_name} is a buffer; gradtape parametrizes parameters"
            )
        before = original.detach()
        plist = ParametrizationList([parametrization], original)
        delattr(module, tensor_name)
        pdict = module.__dict__.get("parametrizations")
        if not isinstance(pdict, ModuleDict):
            pdict = ModuleDict()
            module.add_module("parametrizations", pdict)
        pdict[tensor_name] = plist
        names: tuple[str, ...] = module.__dict__.get(_PARAMETRIZED, ())
        object.__setattr__(module, _PARAMETRIZED, (*names, tensor_name))
        _retype(module)
    if not unsafe:
        with no_grad():
            after = getattr(module, tensor_name)
        if not isinstance(after, Tensor) or after.shape != before.shape or after.dtype != before.dtype:
            got = f"{type(after).__name__}" if not isinstance(after, Tensor) else f"{after.shape} {after.dtype}"
            remove_parametrizations(module, tensor_name, leave_parametrized=False)
            raise ValueError(
                f"register_parametrization: the parametrization of {cls}.{tensor_name} may not change the shape or "
                f"dtype ({before.shape} {before.dtype} -> {got}); pass unsafe=True to allow it"
            )
    return module


def remove_parametrizations(module: M, tensor_name: str, leave_parametrized: bool = True) -> M:
    """Remove the parametrizations of ``tensor_name`` (PyTorch's ``remove_parametrizations``):
    ``module.tensor_name`` is a plain parameter again, holding the parametrized value
    (``leave_parametrized=True``; the original tensor object keeps its id when there is one
    original) or the original.

    Raises:
        ValueError: ``tensor_name`` is not parametrized, or ``leave_parametrized=False`` with
            several originals.
    """
    cls = type(module).__name__
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: {cls} does not have a parametrization on {tensor_name!r}")
    pdict: ModuleDict = module.parametrizations  # type: ignore[attr-defined]
    plist: Any = pdict[tensor_name]
    if plist.is_tensor:
        t: Tensor[Any, Any] = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            if value.shape == t.shape:
                t.data[...] = value.data
            else:
                t = value.detach().clone()
                t.tape = NONE_TAPE
    else:
        if not leave_parametrized:
            raise ValueError(
                f"remove_parametrizations: {cls}.{tensor_name} has {plist.ntensors} originals; "
                "use leave_parametrized=True"
            )
        with no_grad():
            t = getattr(module, tensor_name).detach().clone()
        t.tape = NONE_TAPE
    del pdict[tensor_name]
    names = tuple(n for n in module.__dict__.get(_PARAMETRIZED, ()) if n != tensor_name)
    object.__setattr__(module, _PARAMETRIZED, names)
    if not names:
        delattr(module, "parametrizations")
    _retype(module)
    setattr(module, tensor_name, t)
    return module
