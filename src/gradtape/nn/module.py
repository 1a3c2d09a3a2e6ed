"""The :class:`Module` base class: parameter discovery, train/eval mode, gradient stores.

A module is a plain Python object whose :class:`~gradtape.tensor.Tensor` attributes are its
parameters (untraced leafs, ``NoneTape``) and whose :class:`Module` attributes (or lists,
tuples and str-keyed dicts of modules, nested in any way; or a :class:`~gradtape.nn.ModuleList`
/ :class:`~gradtape.nn.ModuleDict`) are its children, as in PyTorch's ``nn.Module``. State a
container attribute would hide from discovery (a tensor in a list, modules in a set) is
refused with ``TypeError``, not silently left untrained. Assigning a tensor to a
public attribute that is not a buffer marks it as a parameter (its tape becomes
:data:`gradtape.tape.PARAM`, PyTorch's ``requires_grad`` leaf): ops on it record whenever
grad mode is on, so a parameter gets its gradient through any path to the loss, in any layer,
including one a user writes (see :func:`gradtape.tape.op_tape`); under ``no_grad()`` nothing
records. Training in PyTorch's spelling::

    opt.zero_grad()
    loss = cross_entropy(model(x), y)
    loss.backward()          # adds into every parameter's .grad
    opt.step()

or dfdx's: trace the *input* into a store that keeps only the parameters' gradients
(:meth:`Module.alloc_grads`)::

    grads = model.alloc_grads()
    loss = cross_entropy(model(x.trace(grads)), y)
    grads = loss.backward()
    for p in model.parameters():
        p.data -= lr * grads.get(p).data
    model.zero_grads(grads)

"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Self

from gradtape.engine import clear_grad, grad_array_mut
from gradtape.gradients import Gradients
from gradtape.tape import NONE_TAPE, PARAM
from gradtape.tensor import Tensor

__all__ = ["Module"]

_CONTAINERS = (list, tuple, dict, set, frozenset)
"""The attribute values that discovery looks into (subclasses included: a ``NamedTuple``, an
``OrderedDict``)."""

_SETS = (set, frozenset)


def _call_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``module(*args, **kwargs)``: ``module.forward(*args, **kwargs)``. Typed ``Any`` here;
    ``gradtape.mypy_plugin`` types it as the subclass's ``forward``.

    The arguments ``forward``'s typed signatures declare as tensors are checked first (once
    per class the parameters are read from the annotations, as for the functional ops): a
    list or a numpy array passed to a layer raises ``TypeError`` naming the layer and the
    argument, not an ``AttributeError`` from inside it.
    """
    entry = _FORWARD_CHECKS.get(self.__class__)
    if entry is None:
        entry = _FORWARD_CHECKS[self.__class__] = _forward_check(self.__class__)
    first_only, check = entry
    # the common case inline: forward(self, x: Tensor[...]) called with a tensor
    if check is not None and not (first_only and args and args[0].__class__ is Tensor):
        check(*args, **kwargs)
    return self.forward(*args, **kwargs)


_FORWARD_CHECKS: dict[type, tuple[bool, Any]] = {}


def _forward_check(cls: type) -> tuple[bool, Any]:
    """``(first_only, check)`` for ``cls.forward``, built once per class: ``check`` raises
    ``TypeError`` for a non-tensor where the signatures declare a tensor
    (:func:`gradtape.ops._util.checked` applied to a no-op with that signature), or is
    ``None`` when no parameter is typed a tensor; ``first_only`` says the only such parameter
    is the first, a required one, which :func:`_call_forward` checks inline."""
    import functools

    from gradtape.ops._util import _tensor_params, checked

    forward = cls.forward  # type: ignore[attr-defined]
    params = [p for p in _tensor_params(forward) if p[0] > 0]  # beyond self
    if not params:
        return False, None

    @functools.wraps(forward)
    def probe(self: Any, *args: Any, **kwargs: Any) -> None:
        return None

    wrapped = checked(probe, cls.__name__, require_float=False)  # a layer checks its dtypes itself

    def check(*args: Any, **kwargs: Any) -> None:
        wrapped(None, *args, **kwargs)

    return [(pos, kind) for pos, _, kind in params] == [(1, "tensor")], check


class Module:
    """Base class of gradtape's layers (PyTorch's ``nn.Module``, dfdx's ``Module`` trait).

    Parameters are found automatically: every public ``Tensor`` attribute (in assignment
    order) is a parameter, unless its name is listed in the class's ``buffer_names`` (state
    that is saved in checkpoints but not trained, such as BatchNorm's running statistics).
    Every public ``Module`` attribute is a child, and so is every module in a public list,
    tuple or dict attribute, nested in any way (a dict of lists of modules). A child's
    parameters are named ``<attribute>.<name>``; in a container, ``<attribute>.<index>.<name>``
    (list, tuple) or ``<attribute>.<key>.<name>`` (dict), as PyTorch's ``state_dict`` names
    the same structure built with ``nn.ModuleList`` / ``nn.ModuleDict`` (``layers.0.weight``,
    ``heads.cls.weight``). Attributes starting with ``_`` are ignored. Other values in a
    container (numbers, strings, ``None``) are skipped; containers are scanned on every
    discovery, so keep large plain data under a ``_`` name.

    State that a container attribute would hide is refused rather than silently left
    untrained, on assignment (``__setattr__``) and again on discovery (a list can be mutated
    after it is assigned): a ``Tensor`` anywhere in a list, tuple or dict attribute (PyTorch
    does not discover those either; assign each tensor as its own attribute), a module or
    tensor in a ``set`` / ``frozenset`` (no order, no names), a module under a dict key that
    is not a ``str`` (``TypeError``) or that is empty or contains ``"."`` (``ValueError``:
    the parameter names would be ambiguous, PyTorch's ``ModuleDict`` refuses them too). The
    messages name the module's class, the attribute and what was found.

    Subclasses implement :meth:`forward`; calling the module calls ``forward``.

    Assigning an untraced tensor to a parameter attribute marks it as a parameter (PyTorch's
    ``nn.Parameter``, TensorFlow's trainable variable): its tape becomes the marker
    :data:`gradtape.tape.PARAM` (a ``NoneTape``), so ops on it record while anything records
    in the thread and never in untraced inference. The tensor object itself is marked: the
    same tensor used elsewhere is a parameter there too.
    """

    training: bool = True
    """``True`` in training mode (the default), ``False`` after :meth:`eval`."""

    buffer_names: ClassVar[tuple[str, ...]] = ()
    """Names of ``Tensor`` attributes that are buffers, not parameters."""

    def forward(self, x: Any) -> Any:
        """The layer's computation; subclasses override it.

        Raises:
            NotImplementedError: always, on the base class.
        """
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    # Calling a module calls forward. An assignment, not a ``def``: a subclass's own
    # ``__call__ = forward`` (typed layers do this to expose forward's precise overloads)
    # then keeps its own type under pyright too, which otherwise types an undeclared
    # override with the base class's declared ``(x: Any) -> Any``.
    __call__ = _call_forward

    def __setattr__(self, name: str, value: Any) -> None:
        """``self.name = value``: an untraced tensor assigned to a public attribute that is not a
        buffer becomes a parameter (see the class docstring); a list, tuple, dict, set or
        frozenset assigned to a public attribute is checked for state discovery could not find.

        Raises:
            TypeError: ``value`` is a container holding a tensor, a set holding a module or
                tensor, or a dict holding a module under a non-str key (the attribute is then
                not assigned).
            ValueError: ``value`` is a dict holding a module under a key that is empty or
                contains ``"."``.
        """
        if not name.startswith("_"):
            if isinstance(value, Tensor):
                if value.tape is NONE_TAPE and name not in self.buffer_names:
                    value.tape = PARAM
                    value._leaf = True  # an untraced op's result (``randn(...) * 0.5``) too: a parameter is a leaf
            elif isinstance(value, _CONTAINERS):
                _container_modules(self, name, value)  # raises for undiscoverable state
        object.__setattr__(self, name, value)

    # ----- discovery ------------------------------------------------------------------------

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Iterate over ``(name, child)`` for the direct sub-modules, in attribute order: a
        module attribute as ``name``, the modules in a container attribute as ``name.0``,
        ``name.key``, ``name.key.0`` ... (depth first, in the container's order).

        Raises:
            TypeError, ValueError: a container attribute holds undiscoverable state (see the
                class docstring), e.g. a tensor appended to a list after it was assigned.
        """
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, _CONTAINERS):
                yield from _container_modules(self, name, value)

    def children(self) -> Iterator[Module]:
        """Iterate over the direct sub-modules."""
        for _, m in self.named_children():
            yield m

    def modules(self) -> Iterator[Module]:
        """Iterate over this module and all its descendants (depth first, this one first)."""
        yield self
        for child in self.children():
            yield from child.modules()

    def _own_tensors(self, buffers: bool) -> Iterator[tuple[str, Tensor[Any, Any]]]:
        for name, value in vars(self).items():
            if name.startswith("_") or not isinstance(value, Tensor):
                continue
            if (name in self.buffer_names) == buffers:
                yield name, value

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor[Any, Any]]]:
        """Iterate over ``(dotted name, parameter)``: this module's own parameters in
        assignment order, then each child's (recursively), e.g. ``"0.weight"``, ``"0.bias"``.
        A tensor shared by two attributes is reported once (under its first name)."""
        seen: set[int] = set()
        for name, p in self._named_all(prefix, buffers=False):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Tensor[Any, Any]]]:
        """Iterate over ``(dotted name, buffer)`` (e.g. BatchNorm's ``running_mean``)."""
        yield from self._named_all(prefix, buffers=True)

    def _named_all(self, prefix: str, buffers: bool) -> Iterator[tuple[str, Tensor[Any, Any]]]:
        for name, t in self._own_tensors(buffers):
            yield prefix + name, t
        for cname, child in self.named_children():
            yield from child._named_all(f"{prefix}{cname}.", buffers)

    def parameters(self) -> list[Tensor[Any, Any]]:
        """The parameters, in the order of :meth:`named_parameters` (each tensor once)."""
        out: list[Tensor[Any, Any]] = []
        self._collect_parameters(out, set())
        return out

    def _collect_parameters(self, out: list[Tensor[Any, Any]], seen: set[int]) -> None:
        # named_parameters without names or generators: one pass over vars() per module
        # (zero_grads and alloc_grads call this every training step); each value's class is
        # classified once (_attr_kind), a dict lookup instead of a chain of isinstance checks
        children: list[Module] = []
        buffers = self.buffer_names
        kinds = _ATTR_KINDS
        for name, value in vars(self).items():
            if name[0] == "_":
                continue
            kind = kinds.get(value.__class__)
            if kind is None:
                kind = _attr_kind(value.__class__)
            if kind == 1:  # a tensor
                if name not in buffers and id(value) not in seen:
                    seen.add(id(value))
                    out.append(value)
            elif kind == 2:  # a module
                children.append(value)
            elif kind == 3:  # a list, tuple, dict, set or frozenset
                _add_container_modules(self, name, value, children)
        for child in children:
            child._collect_parameters(out, seen)

    def num_parameters(self) -> int:
        """Total number of parameter elements."""
        return sum(p.size for p in self.parameters())

    # ----- mode -----------------------------------------------------------------------------

    def train(self, mode: bool = True) -> Self:
        """Set training mode (``training = mode``) on this module and all descendants; returns self."""
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Self:
        """Set evaluation mode (``training = False``) recursively; returns self."""
        return self.train(False)

    # ----- gradients ------------------------------------------------------------------------

    def alloc_grads(self) -> Gradients:
        """A gradient store that keeps only this module's parameter gradients (dfdx's
        ``alloc_grads``): ``Gradients.leaky()`` with the parameters marked by
        ``retain_leafs``, so after ``backward()`` the gradients of inputs and intermediates
        are dropped (and backward skips the ones nobody keeps)."""
        grads = Gradients.leaky()
        grads.retain_leafs(self.parameters())
        return grads

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients ``backward()`` accumulated into the parameters' ``.grad``
        (PyTorch's ``Module.zero_grad``), before the next step's ``backward()``.

        Args:
            set_to_none: ``True`` (the default, as in PyTorch 2): ``p.grad = None`` for every
                parameter, so the next ``backward()`` stores a fresh gradient. ``False``: a
                parameter's existing gradient tensor is zeroed in place (same tensor; its own
                array, copied first if a gradient store shares it); a ``None`` gradient stays
                ``None``.

        The dfdx spelling for a gradient store, :meth:`zero_grads`, is separate: this method
        does not touch any :class:`~gradtape.gradients.Gradients`.

        Raises:
            ValueError: ``set_to_none=False`` and a ``.grad`` holds a read-only array (the
                message names the parameter; checked for every parameter before any is zeroed,
                as ``Optimizer.zero_grad`` does).
            TypeError, ValueError: discovery refuses a container attribute (see the class docstring).
        """
        params = self.parameters()
        if set_to_none:
            for p in params:
                p.grad = None
            return
        # the slot, not the property: a parameter made by an untraced op (``w = randn() * s``) is
        # not an op-graph leaf, and reading ``.grad`` would warn about that
        bufs: list[Any] = []
        for p in params:
            g = getattr(p, "_grad", None)
            if g is None:
                continue
            grad_array_mut(p, values=False)  # zeroed below: a shared array is not copied first
            if not g.data.flags.writeable:
                name = next(n for n, q in self.named_parameters() if q is p)
                raise ValueError(
                    f"{type(self).__name__}.zero_grad: the .grad of {name!r} (shape {p.shape}) holds a read-only "
                    "array; use zero_grad() (set_to_none=True) or assign it a writable array"
                )
            bufs.append(g.data)
        for b in bufs:
            b[...] = 0

    def zero_grads(self, grads: Gradients) -> None:
        """Drop this module's parameter gradients from ``grads`` (dfdx's ``zero_grads``), so the
        store can be reused for the next step: absent gradients read as zeros
        (``grads.get(p)``) and the next backward starts from them. The parameters' ``.grad``
        (which ``backward()`` fills in either spelling) is cleared too, as
        :meth:`zero_grad` clears it."""
        drop = grads._drop
        for p in self.parameters():
            drop(p.id)
            clear_grad(p)

    def __repr__(self) -> str:
        extra = self.extra_repr()
        kids = list(self.named_children())
        if not kids:
            return f"{type(self).__name__}({extra})"
        lines = [f"{type(self).__name__}({extra}"]
        for name, m in kids:
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"

    def extra_repr(self) -> str:
        """The constructor arguments shown by ``repr``; subclasses override it."""
        return ""


_STATEFUL = (Module, Tensor, *_CONTAINERS)
"""Container items that discovery looks at; anything else (numbers, strings, ``None``) is skipped."""

_ATTR_KINDS: dict[type, int] = {}
""":func:`_attr_kind` of the classes seen by :meth:`Module._collect_parameters`."""


def _attr_kind(cls: type) -> int:
    """How discovery treats an attribute of class ``cls``: 1 a tensor, 2 a module, 3 a
    container to look into, 0 anything else; cached in ``_ATTR_KINDS`` (up to 4096 classes,
    so classes made on the fly cannot grow it without bound)."""
    kind = 1 if issubclass(cls, Tensor) else 2 if issubclass(cls, Module) else 3 if issubclass(cls, _CONTAINERS) else 0
    if len(_ATTR_KINDS) < 4096:
        _ATTR_KINDS[cls] = kind
    return kind


def _add_container_modules(owner: Module, name: str, value: Any, children: list[Module]) -> None:
    """Append the modules in the container attribute ``owner.name`` to ``children`` (the
    per-step path of :meth:`Module._collect_parameters`): a flat list, tuple or dict of modules
    and plain values (numbers, strings, ``None``; a dict's keys all plain str keys) without
    building names; anything else (a nested container, a tensor, a set, a dict with another
    key) through :func:`_container_modules`, which checks it and raises for undiscoverable
    state. One loop over the items of a list or the values of a dict, the keys checked after
    it: the same time per call as a loop per kind (measured with ``model.parameters()`` on the
    digits CNN, the 2- and 8-block CharTransformer and a dict of 8 layers: within 1%)."""
    is_dict = isinstance(value, dict)
    if is_dict or not isinstance(value, _SETS):
        kinds = _ATTR_KINDS
        found: list[Module] = []
        for item in value.values() if is_dict else value:
            kind = kinds.get(item.__class__)
            if kind is None:
                kind = _attr_kind(item.__class__)
            if kind == 2:
                found.append(item)
            elif kind != 0:
                break
        else:
            if not is_dict or _plain_keys(value):
                children.extend(found)
                return
    children.extend(m for _, m in _container_modules(owner, name, value))


def _plain_keys(d: dict[Any, Any]) -> bool:
    """Whether every key of ``d`` can name parameters: a non-empty ``str`` without ``"."``."""
    for k in d:
        if k.__class__ is not str or not k or "." in k:
            return False
    return True


def _container_modules(owner: Module, name: str, value: Any) -> list[tuple[str, Module]]:
    """``(dotted name, module)`` for every module in the container ``value`` that ``owner``
    holds as attribute ``name``: depth first, in the container's order, list and tuple items
    named by index and dict values by key (``"layers.0"``, ``"heads.cls"``, ``"blocks.a.1"``),
    as PyTorch names the same structure built with ``ModuleList`` / ``ModuleDict``.

    Raises:
        TypeError: a tensor anywhere in ``value``; a module or tensor in a set or frozenset;
            a module under a dict key that is not a ``str``.
        ValueError: a module under a dict key that is empty or contains ``"."``.
    """
    found: list[tuple[str, Module]] = []
    _walk_container(owner, name, name, name, value, found)
    return found


def _walk_container(
    owner: Module, attr: str, path: str, where: str, value: Any, found: list[tuple[str, Module]]
) -> None:
    """:func:`_container_modules`'s recursion: ``path`` is the dotted name of ``value``,
    ``where`` the Python expression that reaches it (``blocks[0]['a']``) for the messages."""
    if isinstance(value, _SETS):
        held = _state_in_set(value)
        if held is not None:
            raise TypeError(
                f"{type(owner).__name__}.{attr}: {where} is a {type(value).__name__} holding a "
                f"{type(held).__name__}; a set has no order and no names, so the parameters of the modules "
                "(or the tensors) in it cannot be discovered: they would never be trained or saved. Use an "
                "nn.ModuleList (or a list) or an nn.ModuleDict (or a dict with str keys)"
            )
        return
    is_dict = isinstance(value, dict)
    for key, item in value.items() if is_dict else enumerate(value):
        if not isinstance(item, _STATEFUL):
            continue
        sub = f"{where}[{key!r}]"
        if isinstance(item, Tensor):
            raise TypeError(
                f"{type(owner).__name__}.{attr}: {sub} is a Tensor (shape {item.shape}) inside a "
                f"{type(value).__name__}; tensors in a list, tuple or dict attribute are not discovered as "
                "parameters (in PyTorch neither: it needs an nn.ParameterList), so it would never be trained "
                "or saved. Assign each tensor as its own attribute (self.w0 = ...), or hold it in a Module and "
                "put the modules in an nn.ModuleList / nn.ModuleDict; use an attribute name starting with '_' "
                "for tensors that are not state to train or save"
            )
        n = len(found)
        if isinstance(item, Module):
            found.append((f"{path}.{key}", item))
        else:
            _walk_container(owner, attr, f"{path}.{key}", sub, item, found)
        if is_dict and len(found) > n:
            _check_key(owner, attr, path, where, key, found[n][1])


def _check_key(owner: Module, attr: str, path: str, where: str, key: Any, module: Module) -> None:
    """Raise if the dict key ``key`` (under which ``module`` was found) cannot name parameters."""
    head = f"{type(owner).__name__}.{attr}: {where} has the key {key!r}"
    if not isinstance(key, str):
        raise TypeError(
            f"{head} ({type(key).__name__}) holding a {type(module).__name__}; parameter names are built from "
            f"the keys, which must be str (as in PyTorch's nn.ModuleDict): use str keys (e.g. {str(key)!r}) or "
            "an nn.ModuleList"
        )
    if not key or "." in key:
        raise ValueError(
            f"{head} holding a {type(module).__name__}; a key that is empty or contains '.' makes the parameter "
            f"names ambiguous ({path}.{key}.<name>), as PyTorch's nn.ModuleDict refuses them too: use a key "
            "without '.'"
        )


def _state_in_set(value: Any) -> Any:
    """The first module or tensor in the set ``value`` (or in a tuple or frozenset in it), else ``None``."""
    for item in value:
        if isinstance(item, (Module, Tensor)):
            return item
        if isinstance(item, (tuple, frozenset)):
            held = _state_in_set(item)
            if held is not None:
                return held
    return None
