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

from collections.abc import Callable, Container, Iterator, Mapping
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices._arrays import same_device
from gradtape.devices.cpu import as_float_dtype
from gradtape.devices.kernels import _trace
from gradtape.engine import clear_grad, grad_array_mut
from gradtape.gradients import Gradients
from gradtape.tape import NONE_TAPE, PARAM
from gradtape.tensor import Tensor

__all__ = ["Module", "ParameterIter"]

Array = np.ndarray[Any, Any]

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
    if _tp._recorder is not None:  # gradtape.capture guards the training flag of every module called
        _tp._recorder.module(self)
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


class ParameterIter(list[Tensor[Any, Any]]):
    """What :meth:`Module.parameters` returns: a list of the parameters that is also an
    iterator.

    PyTorch's ``parameters()`` returns a generator, and ported programs write
    ``next(model.parameters())`` for the first parameter (its dtype, its device); gradtape's
    callers and tests use the result as a list (iterated more than once, ``len``, ``[0]``).
    This is both: ``for p in params``, ``list(params)``, ``len(params)`` and indexing are the
    list's (every loop starts from the first parameter), while ``next(params)`` reads its own
    cursor, giving the parameters in order and raising ``StopIteration`` after the last (as a
    generator's ``next`` does; the cursor is separate from ``for`` loops, which never move it).
    """

    __slots__ = ("_cursor",)

    def __next__(self) -> Tensor[Any, Any]:
        i = getattr(self, "_cursor", 0)
        if i >= len(self):
            raise StopIteration
        self._cursor = i + 1
        return self[i]


class Module:
    """Base class of gradtape's layers (PyTorch's ``nn.Module``, dfdx's ``Module`` trait).

    Parameters are found automatically: every public ``Tensor`` attribute (in assignment
    order) is a parameter, unless it is a buffer (state that is saved in checkpoints but not
    trained, such as BatchNorm's running statistics): registered with
    :meth:`register_buffer`, as in PyTorch, or named in the class's ``buffer_names``.
    Every public ``Module`` attribute is a child, and so is every module in a public list,
    tuple or dict attribute, nested in any way (a dict of lists of modules). A child's
    parameters are named ``<attribute>.<name>``; in a container, ``<attribute>.<index>.<name>``
    (list, tuple) or ``<attribute>.<key>.<name>`` (dict), as PyTorch's ``state_dict`` names
    the same structure built with ``nn.ModuleList`` / ``nn.ModuleDict`` (``layers.0.weight``,
    ``heads.cls.weight``). Attributes starting with ``_`` are ignored. Other values in a
    container (numbers, strings, ``None``) are skipped; containers are scanned on every
    discovery, so keep large plain data under a ``_`` name.

    A difference from PyTorch, on purpose: PyTorch ignores modules held in a plain ``list`` or
    ``dict`` attribute (their parameters are neither trained nor saved unless the container is
    an ``nn.ModuleList`` / ``nn.ModuleDict``); gradtape discovers them, with the names those
    containers would give, so the PyTorch user's model trains as meant and its state dict
    matches the PyTorch model written with the containers. The one thing such a plain
    container lacks is an entry of its own in :meth:`named_modules`.

    PyTorch's ``Module`` API is here with its names and results: :meth:`parameters`,
    :meth:`named_parameters`, :meth:`buffers`, :meth:`named_buffers`, :meth:`children`,
    :meth:`named_children`, :meth:`modules`, :meth:`named_modules`, :meth:`apply`,
    :meth:`register_buffer`, :meth:`register_parameter`, :meth:`add_module`,
    :meth:`state_dict`, :meth:`load_state_dict`, :meth:`to` / :meth:`double` /
    :meth:`float`, :meth:`train` / :meth:`eval`, :meth:`zero_grad`, :meth:`requires_grad_`.

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
    """Names of ``Tensor`` attributes that are (persistent) buffers, not parameters: the
    class-level spelling of :meth:`register_buffer`."""

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
                not assigned); ``name`` is a buffer and ``value`` is neither a Tensor nor ``None``.
            ValueError: ``value`` is a dict holding a module under a key that is empty or
                contains ``"."``.
        """
        buffers = self._buffer_set()
        if name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"{type(self).__name__}: cannot assign a {type(value).__name__} to the buffer {name!r} "
                    "(a Tensor or None is required)"
                )
        elif not name.startswith("_"):
            if isinstance(value, Tensor):
                if value.tape is NONE_TAPE:
                    value.tape = PARAM
                    value._leaf = True  # an untraced op's result (``randn(...) * 0.5``) too: a parameter is a leaf
            elif isinstance(value, _CONTAINERS):
                _container_modules(self, name, value)  # raises for undiscoverable state
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        """``del self.name``; a registered buffer is unregistered too (PyTorch's ``__delattr__``)."""
        object.__delattr__(self, name)
        registered = self.__dict__.get("_buffers")
        if registered is not None:
            registered.pop(name, None)

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
        """Iterate over the direct sub-modules, each once (PyTorch's ``children``: a module held
        under two names is yielded once)."""
        memo: set[int] = set()
        for _, m in self.named_children():
            if id(m) not in memo:
                memo.add(id(m))
                yield m

    def named_modules(
        self, memo: set[Module] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """Iterate over ``(dotted name, module)`` for this module (named ``prefix``, ``""`` by
        default) and all its descendants, depth first, a module before its children: PyTorch's
        ``named_modules``. With ``remove_duplicate`` (the default) a module reached twice
        (shared by two parents, or held under two names) is yielded once, under its first name.

        The names are those of :meth:`named_children`: a module in a plain list or dict
        attribute is ``layers.0`` or ``heads.cls``; the list or dict itself is not a module and
        has no entry (PyTorch's ``ModuleList`` / ``ModuleDict`` have one, ``layers``; these
        two classes have one here too).

        Args:
            memo: modules already yielded (PyTorch's argument; filled in as it goes).
            prefix: the name of this module, prepended to the others' with a ``"."``.
            remove_duplicate: yield a module reached twice once.
        """
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """Iterate over this module and all its descendants (depth first, this one first; each
        module once, as PyTorch's ``modules``)."""
        for _, m in self.named_modules():
            yield m

    def apply(self, fn: Callable[[Module], object]) -> Self:
        """Call ``fn`` on every sub-module (recursively, children first) and then on this one,
        and return ``self``: PyTorch's ``Module.apply``, the usual way to initialise a model::

            def init_weights(m):
                if isinstance(m, nn.Linear):
                    nn.init.xavier_uniform_(m.weight)
                    nn.init.zeros_(m.bias)

            model.apply(init_weights)

        Each child (:meth:`children`, each once) applies ``fn`` to its own subtree first, in
        attribute order, as PyTorch does. ``fn``'s return value is ignored.

        Raises:
            TypeError: ``fn`` is not callable.
        """
        if not callable(fn):
            raise TypeError(f"{type(self).__name__}.apply: fn must be callable, got {type(fn).__name__}")
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ----- buffers ---------------------------------------------------------------------------

    def _buffer_set(self) -> Container[str]:
        """The names of this module's buffers: those given to :meth:`register_buffer` (a dict,
        name -> persistent) and, before any is registered, the class's ``buffer_names``."""
        registered = self.__dict__.get("_buffers")
        return self.buffer_names if registered is None else registered

    def register_buffer(self, name: str, tensor: Tensor[Any, Any] | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (never trained, not in
        :meth:`parameters`) but is listed by :meth:`named_buffers`, converted by :meth:`to`
        and, if ``persistent``, saved by :meth:`state_dict` (PyTorch's ``register_buffer``).
        BatchNorm's ``running_mean`` is one; an attention mask or a positional table another::

            self.register_buffer("mask", dev.tensor(np.tril(np.ones((n, n)))), persistent=False)

        The tensor becomes the attribute ``name`` (read it as ``self.mask``; assigning a new
        tensor to ``self.mask`` later replaces the buffer, it does not make a parameter). Its
        tape is left as it is: pass an untraced tensor.

        Args:
            name: the attribute name: a non-empty ``str`` without ``"."``, not already an
                attribute other than a buffer. A name starting with ``"_"`` is allowed (unlike
                a parameter's), as in PyTorch.
            tensor: the buffer's value, a gradtape tensor of any dtype (an int64 counter is
                fine), or ``None`` (a placeholder: no entry in :meth:`named_buffers` or
                :meth:`state_dict` until a tensor is assigned).
            persistent: whether :meth:`state_dict` (and :func:`gradtape.nn.save`) includes it.

        Raises:
            TypeError: ``name`` is not a ``str``, or ``tensor`` is neither a Tensor nor ``None``.
            KeyError: ``name`` is empty, contains ``"."``, or is already an attribute that is
                not a buffer (a parameter, a method, ``training``): PyTorch's errors.
        """
        cls = type(self).__name__
        if not isinstance(name, str):
            raise TypeError(f"{cls}.register_buffer: buffer name should be a string, got {type(name).__name__}")
        if not name:
            raise KeyError(f'{cls}.register_buffer: buffer name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{cls}.register_buffer: buffer name can\'t contain ".", got {name!r}')
        registered = self.__dict__.get("_buffers")
        if registered is None:
            registered = dict.fromkeys(self.buffer_names, True)
        if name not in registered and hasattr(self, name):
            raise KeyError(f"{cls}.register_buffer: attribute {name!r} already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"{cls}.register_buffer: cannot assign a {type(tensor).__name__} to the buffer {name!r} "
                "(a gradtape Tensor or None is required)"
            )
        registered[name] = persistent
        object.__setattr__(self, "_buffers", registered)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param: Tensor[Any, Any] | None) -> None:
        """Add the parameter ``param`` as the attribute ``name`` (PyTorch's
        ``register_parameter``): the same as ``setattr(self, name, param)``, checked.

        Raises:
            TypeError: ``name`` is not a ``str``, or ``param`` is neither a Tensor nor ``None``.
            KeyError: ``name`` is empty, contains ``"."``, starts with ``"_"`` (such attributes
                are never parameters here) or is already an attribute that is not a
                parameter (a buffer, a module, a method).
        """
        cls = type(self).__name__
        if not isinstance(name, str):
            raise TypeError(f"{cls}.register_parameter: parameter name should be a string, got {type(name).__name__}")
        if not name or "." in name or name.startswith("_"):
            raise KeyError(
                f"{cls}.register_parameter: parameter name must be non-empty, without '.' and not start with '_', "
                f"got {name!r}"
            )
        if param is not None and not isinstance(param, Tensor):
            raise TypeError(
                f"{cls}.register_parameter: cannot assign a {type(param).__name__} as the parameter {name!r} "
                "(a gradtape Tensor or None is required)"
            )
        current = self.__dict__.get(name, getattr(type(self), name, None))
        if name in self._buffer_set() or (hasattr(self, name) and not isinstance(current, (Tensor, type(None)))):
            raise KeyError(f"{cls}.register_parameter: attribute {name!r} already exists")
        setattr(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add the child ``module`` as the attribute ``name`` (PyTorch's ``add_module`` /
        ``register_module``): the same as ``setattr(self, name, module)``, checked.

        Raises:
            TypeError: ``name`` is not a ``str``, or ``module`` is neither a Module nor ``None``.
            KeyError: ``name`` is empty, contains ``"."`` or starts with ``"_"``, or is already
                an attribute that is not a module (a parameter, a buffer, a method).
        """
        cls = type(self).__name__
        if not isinstance(name, str):
            raise TypeError(f"{cls}.add_module: module name should be a string, got {type(name).__name__}")
        if not name or "." in name or name.startswith("_"):
            raise KeyError(
                f"{cls}.add_module: module name must be non-empty, without '.' and not start with '_', got {name!r}"
            )
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{cls}.add_module: {type(module).__name__} is not a Module")
        current = self.__dict__.get(name, getattr(type(self), name, None))
        if name in self._buffer_set() or (hasattr(self, name) and not isinstance(current, (Module, type(None)))):
            raise KeyError(f"{cls}.add_module: attribute {name!r} already exists")
        setattr(self, name, module)

    register_module = add_module

    # ----- parameters and buffers by name ------------------------------------------------------

    def _own_tensors(self, buffers: bool) -> Iterator[tuple[str, Tensor[Any, Any]]]:
        """This module's own parameters (``buffers=False``) or buffers, in attribute order."""
        names = self._buffer_set()
        for name, value in vars(self).items():
            if not isinstance(value, Tensor):
                continue
            is_buffer = name in names
            if is_buffer == buffers and (is_buffer or not name.startswith("_")):
                yield name, value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor[Any, Any]]]:
        """Iterate over ``(dotted name, parameter)``: this module's own parameters in
        assignment order, then each child's (recursively), e.g. ``"0.weight"``, ``"0.bias"``.
        With ``remove_duplicate`` (the default, as PyTorch) a tensor shared by two attributes
        (tied weights) is reported once, under its first name; :meth:`state_dict` lists both.

        Args:
            prefix: prepended to every name.
            recurse: also the descendants' parameters (``False``: this module's own only).
            remove_duplicate: report a shared tensor once.
        """
        seen: set[int] = set()
        for name, p in self._named_all(prefix, False, recurse):
            if not remove_duplicate:
                yield name, p
            elif id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor[Any, Any]]]:
        """Iterate over ``(dotted name, buffer)`` (e.g. BatchNorm's ``running_mean``), in the
        order of :meth:`named_parameters`, non-persistent buffers included (``None`` ones not).
        Arguments as :meth:`named_parameters`."""
        seen: set[int] = set()
        for name, b in self._named_all(prefix, True, recurse):
            if not remove_duplicate:
                yield name, b
            elif id(b) not in seen:
                seen.add(id(b))
                yield name, b

    def buffers(self, recurse: bool = True) -> Iterator[Tensor[Any, Any]]:
        """Iterate over the buffers, in the order of :meth:`named_buffers` (each tensor once)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def _named_all(self, prefix: str, buffers: bool, recurse: bool = True) -> Iterator[tuple[str, Tensor[Any, Any]]]:
        for name, t in self._own_tensors(buffers):
            yield prefix + name, t
        if recurse:
            for cname, child in self.named_children():
                yield from child._named_all(f"{prefix}{cname}.", buffers)

    def parameters(self, recurse: bool = True) -> ParameterIter:
        """The parameters, in the order of :meth:`named_parameters` (each tensor once); with
        ``recurse=False`` this module's own only. A :class:`ParameterIter`: a list (reusable,
        ``len``, indexing) that ``next()`` also steps through, so PyTorch's
        ``next(model.parameters())`` (the first parameter) works as written."""
        out = ParameterIter()
        if not recurse:
            out.extend(p for _, p in self.named_parameters(recurse=False))
            return out
        self._collect_parameters(out, set())
        return out

    def _collect_parameters(self, out: list[Tensor[Any, Any]], seen: set[int]) -> None:
        # named_parameters without names or generators: one pass over vars() per module
        # (zero_grads and alloc_grads call this every training step); each value's class is
        # classified once (_attr_kind), a dict lookup instead of a chain of isinstance checks
        children: list[Module] = []
        attrs = vars(self)
        registered = attrs.get("_buffers")
        buffers = self.buffer_names if registered is None else registered
        kinds = _ATTR_KINDS
        for name, value in attrs.items():
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

    @_tp.recorded_call
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
            if not _arrays.writeable(g.data):
                name = next(n for n, q in self.named_parameters() if q is p)
                raise ValueError(
                    f"{type(self).__name__}.zero_grad: the .grad of {name!r} (shape {p.shape}) holds a read-only "
                    "array; use zero_grad() (set_to_none=True) or assign it a writable array"
                )
            bufs.append(g.data)
        for b in bufs:
            b[...] = 0

    @_tp.recorded_call
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

    # ----- state_dict, conversion ---------------------------------------------------------------

    _optional_state: ClassVar[tuple[str, ...]] = ()
    """Own state names :meth:`load_state_dict` does not report missing (the value is kept):
    BatchNorm's ``num_batches_tracked``, which checkpoints written before it existed lack, as
    PyTorch's BatchNorm accepts checkpoints without it."""

    def _state_entries(self, prefix: str = "") -> Iterator[tuple[str, Tensor[Any, Any], Module, str]]:
        """``(key, tensor, owner, own name)`` for every parameter and persistent buffer, in
        PyTorch's ``state_dict`` order: a module's parameters, then its buffers, then each
        child's entries; nothing deduplicated (tied weights appear under every name)."""
        registered = self.__dict__.get("_buffers")
        names = self.buffer_names if registered is None else registered
        params: list[tuple[str, Tensor[Any, Any]]] = []
        buffers: list[tuple[str, Tensor[Any, Any]]] = []
        for name, value in vars(self).items():
            if not isinstance(value, Tensor):
                continue
            if name in names:
                if registered is None or registered[name]:
                    buffers.append((name, value))
            elif not name.startswith("_"):
                params.append((name, value))
        for name, t in params + buffers:
            yield prefix + name, t, self, name
        for cname, child in self.named_children():
            yield from child._state_entries(f"{prefix}{cname}.")

    def state_dict(
        self, *, destination: dict[str, Tensor[Any, Any]] | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Tensor[Any, Any]]:
        """``{dotted name: tensor}`` of every parameter and persistent buffer: PyTorch's
        ``Module.state_dict``, with its keys in its order (a module's parameters, then its
        buffers, then its children's, recursively). Tied weights (one tensor under two
        attributes, or a module shared by two parents) appear under every name, as in PyTorch,
        so a strict ``load_state_dict`` on either side finds every key it expects.

        Args:
            destination: a dict to fill and return (default a new one).
            prefix: prepended to every key.
            keep_vars: ``True``: the parameter and buffer tensors themselves. ``False`` (the
                default, PyTorch's ``detach()``): new untraced tensors sharing their arrays, so
                writing into a value's ``.data`` changes the module, and using one records
                nothing.

        Returns:
            The dict; each value keeps its tensor's shape and dtype (BatchNorm's
            ``num_batches_tracked`` is a 0-d int64 tensor, as PyTorch's).
        """
        out: dict[str, Tensor[Any, Any]] = {} if destination is None else destination
        for key, t, _, _ in self._state_entries(prefix):
            out[key] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> _IncompatibleKeys:
        """Copy the values of ``state_dict`` into this module's parameters and persistent
        buffers, in place (PyTorch's ``Module.load_state_dict``): the tensors keep their ids and
        arrays, so an optimizer built on ``model.parameters()`` stays valid.

        Values may be gradtape tensors, numpy arrays or anything numpy reads (a PyTorch
        ``state_dict()``'s tensors: ``model.load_state_dict(torch_model.state_dict())``). Each
        is cast to the target's dtype as PyTorch's ``copy_`` casts (a float32 checkpoint fills
        a float64 model). Everything is checked before anything is written.

        A missing ``num_batches_tracked`` of a BatchNorm is not reported (the layer keeps its
        count), as PyTorch's BatchNorm accepts checkpoints from before it had one.

        Args:
            state_dict: ``{dotted name: value}``, e.g. from :meth:`state_dict`.
            strict: raise if a key is missing or unexpected (else they are only returned).

        Returns:
            ``(missing_keys, unexpected_keys)``, a named tuple of two lists of keys (PyTorch's
            ``_IncompatibleKeys``): this module's keys absent from ``state_dict``, and
            ``state_dict``'s keys this module does not have.

        Raises:
            TypeError: ``state_dict`` is not a mapping, or a value is not numeric
                (the message names the key).
            RuntimeError: with ``strict``, missing or unexpected keys; with either setting, a
                value whose shape differs from the target's (``size mismatch for <key>``). One
                error lists every problem, as PyTorch's ("Error(s) in loading state_dict for
                <class>").
        """
        cls = type(self).__name__
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"{cls}.load_state_dict: expected a mapping of names to tensors, got {type(state_dict).__name__}"
            )
        missing: list[str] = []
        plan: list[tuple[Tensor[Any, Any], Array]] = []
        errors: list[str] = []
        known: set[str] = set()
        for key, t, owner, own in self._state_entries():
            known.add(key)
            if key not in state_dict:
                if own not in owner._optional_state:
                    missing.append(key)
                continue
            arr = _state_array(cls, key, state_dict[key])
            if arr.shape != t.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {arr.shape} from checkpoint, "
                    f"the shape in current model is {t.shape}."
                )
                continue
            plan.append((t, arr))
        unexpected = [k for k in state_dict if k not in known]
        if strict:
            head = []
            if unexpected:
                head.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                head.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
            errors = head + errors
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {cls}:\n\t" + "\n\t".join(errors))
        for t, _ in plan:
            if not _arrays.writeable(t.data):
                raise RuntimeError(f"{cls}.load_state_dict: the tensor of shape {t.shape} is read-only")
        for t, arr in plan:
            if arr is not t.data:  # from either device's memory into the tensor's own
                np.copyto(t.data, _arrays.into_memory_of(arr, t.data), casting="unsafe")
        return _IncompatibleKeys(missing, unexpected)

    def to(
        self, *args: Any, dtype: npt.DTypeLike | None = None, device: Any = None, non_blocking: bool = False
    ) -> Self:
        """Convert the float parameters and buffers to ``dtype`` and/or move every parameter
        and buffer to ``device``, in place, and return ``self`` (PyTorch's ``Module.to``):
        ``model.to(np.float64)``, ``model.to(dev)``, ``model.to(dev, np.float64)``,
        ``model.to("cpu")``.

        The tensors keep their ids (an optimizer built before still refers to them, but its
        state, e.g. Adam's moments, keeps the old dtype: convert before building it, as in
        PyTorch); a float tensor's array is replaced by a converted copy, and so is its
        ``.grad``'s. Integer and bool buffers (``num_batches_tracked``) keep their dtype.

        Args:
            args: a dtype (a numpy dtype or its name, ``"float64"``; a torch dtype's name,
                ``"torch.float64"``, is read too), a gradtape device (a ``Cpu`` or ``Cuda``),
                PyTorch's device strings (``"cpu"``, ``"cuda"``, ``"cuda:1"``), or a gradtape
                tensor (its device and dtype), in any order. Moving copies each array to the
                device's memory (the tensors keep their ids); the optimizer's state moves
                with the first step that meets it only if it is built after the move, as in
                PyTorch: build the optimizer after ``model.to(device)``.
            dtype: the float dtype, float32 or float64.
            device: the device.
            non_blocking: accepted for PyTorch compatibility; ignored.

        Raises:
            TypeError: an argument is none of these; DTypeError (through the dtype check): a
                dtype other than float32/float64.
            ValueError: a device string other than ``"cpu"``/``"cuda"``. RuntimeError: ``"cuda"``
                without CuPy, numba-cuda or a GPU.
        """
        del non_blocking
        from gradtape.devices._arrays import is_device_spec
        from gradtape.devices.default import as_device

        cls = type(self).__name__
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif is_device_spec(a) or (hasattr(a, "rng") and hasattr(a, "randn")):
                device = a
            elif isinstance(a, str) and a.split(":")[0] in ("mps", "meta", "xla"):
                raise ValueError(f"{cls}.to: gradtape computes on 'cpu' and 'cuda', not {a!r}")
            elif isinstance(a, (str, np.dtype, type)) or hasattr(a, "is_floating_point"):
                dtype = _dtype_arg(cls, a)
            else:
                raise TypeError(f"{cls}.to: expected a dtype, a device or a tensor, got {type(a).__name__} {a!r}")
        if device is not None:
            device = as_device(f"{cls}.to", device)
        dt = None if dtype is None else as_float_dtype(_dtype_arg(cls, dtype), f"{cls}.to")
        seen: set[int] = set()
        for m in self.modules():
            for _, t in [*m._own_tensors(False), *m._own_tensors(True)]:
                if id(t) in seen:
                    continue
                seen.add(id(t))
                g = getattr(t, "_grad", None)
                if dt is not None and t.data.dtype.kind == "f" and t.data.dtype != dt:
                    t.data = t.data.astype(dt)
                    if g is not None:
                        g.data = g.data.astype(dt)
                if device is not None and not same_device(t.device, device):
                    t.data = device._put(t.data)
                    if g is not None:
                        g.data = device._put(g.data)
                        g.device = device
                if device is not None:
                    t.device = device
        return self

    def cuda(self, device: Any = None) -> Self:
        """Move every parameter and buffer to a GPU in place and return ``self`` (PyTorch's
        ``Module.cuda``; ``device``: an index, ``"cuda:1"`` or a ``Cuda``; GPU 0 by default).

        Raises:
            RuntimeError: CuPy, numba-cuda or a GPU is missing (the message says which).
        """
        spec = f"cuda:{device}" if isinstance(device, int) else ("cuda" if device is None else device)
        return self.to(spec)

    def double(self) -> Self:
        """Convert the float parameters and buffers to float64 (``to(np.float64)``); returns self."""
        return self.to(dtype=np.float64)

    def float(self) -> Self:
        """Convert the float parameters and buffers to float32 (``to(np.float32)``); returns self."""
        return self.to(dtype=np.float32)

    def cpu(self) -> Self:
        """Move every parameter and buffer to host memory in place and return ``self``
        (PyTorch's ``Module.cpu``; a no-op for a model on the CPU)."""
        return self.to("cpu")

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Set ``requires_grad`` on every parameter (:meth:`Tensor.requires_grad_`) and return
        self (PyTorch's ``Module.requires_grad_``): ``False`` freezes the module (its
        parameters record nothing and optimizers skip them), ``True`` unfreezes it."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

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


class _IncompatibleKeys(NamedTuple):
    """:meth:`Module.load_state_dict`'s result (PyTorch's ``_IncompatibleKeys``)."""

    missing_keys: list[str]
    """The module's keys absent from the state dict."""
    unexpected_keys: list[str]
    """The state dict's keys the module does not have."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


def _state_array(cls: str, key: str, value: Any) -> Array:
    """The array of a state dict's ``value``: a gradtape tensor's, a numpy array, or what numpy
    reads (a torch tensor, detached first).

    Raises:
        TypeError: numpy cannot read ``value`` as a bool, integer or float array (the message
            names ``key``).
    """
    if isinstance(value, Tensor):
        return value.data
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value)  # (numpy refuses a GPU array: a torch CUDA tensor goes the detach way)
        except (TypeError, ValueError, RuntimeError):
            detach = getattr(value, "detach", None)
            if detach is None:
                arr = np.asarray(None)
            else:  # a torch tensor that requires grad, or on a GPU: numpy reads it once detached, on the host
                arr = np.asarray(detach().cpu())
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"{cls}.load_state_dict: the value for {key!r} is a {type(value).__name__} that numpy reads as dtype "
            f"{arr.dtype}; expected a tensor or an array of numbers"
        )
    return arr


def _dtype_arg(cls: str, a: Any) -> np.dtype[Any]:
    """``a`` (a numpy dtype, a type, a dtype name, a torch dtype or its name) as a numpy dtype.

    Raises:
        TypeError: numpy does not know it.
    """
    name = str(a) if hasattr(a, "is_floating_point") else a
    if isinstance(name, str) and name.startswith("torch."):
        name = name[len("torch.") :]
    try:
        return np.dtype(name)
    except TypeError:
        raise TypeError(f"{cls}.to: {a!r} is not a dtype") from None


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


def _zero_grad_check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    set_to_none = args[1] if len(args) > 1 else kwargs.get("set_to_none", True)
    return None if set_to_none else "runs zero_grad(set_to_none=False), which fills in numpy"


# what a kernel trace may take of zero_grad and zero_grads (gradtape.capture's compiled replays):
# no kernels, only the stores' and the .grad's contents, which a compiled call sets as traced
_trace.traceable(
    Module.zero_grad.__wrapped__,  # type: ignore[attr-defined]
    _zero_grad_check,
    lambda args, kwargs: _trace.Touches([], list(args[0].parameters()), grads_read="none"),
)
_trace.traceable(
    Module.zero_grads.__wrapped__,  # type: ignore[attr-defined]
    touches=lambda args, kwargs: _trace.Touches(
        [args[1] if len(args) > 1 else kwargs["grads"]], list(args[0].parameters()), grads_read="none"
    ),
)
