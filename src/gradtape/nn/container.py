"""Containers: :class:`Sequential`, :class:`Residual`, :class:`ModuleList` and :class:`ModuleDict`."""

from __future__ import annotations

import operator
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import TYPE_CHECKING, Any, Self, SupportsIndex, TypeVar, overload

from gradtape.nn.module import Module
from gradtape.shapes import AnyShape
from gradtape.tape import Tape
from gradtape.tensor import Tensor

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Residual", "Sequential"]

S = TypeVar("S")
T = TypeVar("T", bound=Tape)


class Sequential(Module):
    """Apply modules in order, ``y = f_n(...f_2(f_1(x)))`` (PyTorch's ``nn.Sequential``,
    dfdx's tuples of modules). Parameters are named ``<index>.<name>``, e.g. ``"0.weight"``.
    Indexing (``seq[0]``) and ``len`` work as on the list of modules.

    Untyped: ``seq(x)`` is ``Any`` (no false alarm, no check), and so is ``seq[i]``'s call.
    Typing the chain (overloads of ``__init__`` for 1..n layers taking ``Callable[[X], A]``,
    ``Callable[[A], B]``, ...) does not work with gradtape's layers, whose calls are
    overloaded and generic in the batch dim and tape kind: mypy cannot infer the
    intermediate types ("Cannot infer value of type parameter"), and pyright picks one
    overload per layer and fixes its type variables, so that a valid input is then rejected.
    Keying the overloads on the layers' width type arguments instead (a protocol "maps width
    ``A`` to ``B``" that ``Linear[I, O]`` and width-preserving layers satisfy; tried for
    issue 28) does not work either: (1) a broken chain fails the typed overloads and falls to
    the ``*modules: Module`` overload that every other chain needs (convolutions,
    ``Flatten``, user modules), so it is never an error at the constructor; (2) pyright
    cannot match a protocol *method* ``(x: B) -> C`` whose ``B``, ``C`` are the
    constructor's type variables (neither ``Linear``'s ``(x: L[16]) -> L[4]`` nor an
    activation's generic ``(x: W) -> W``: the typed overload fails, ``Any``), and with a
    protocol *property* of covariant widths it solves ``Linear[L[8], L[16]], Linear[L[16],
    L[4]]`` to ``Sequential[int, int]`` (literals widened, with ``__new__`` overloads too), so
    the call checks nothing, while a broken chain joins silently (mypy:
    ``Sequential[L[8], L[4]]`` for ``Linear[L[8], L[16]], Linear[L[32], L[4]]``).
    For a typed model, write a :class:`Module` subclass whose ``forward`` calls the layers
    (annotated, e.g. ``self.fc1: Linear[L[64], L[128]] = Linear(64, 128, dev=dev)``) and
    annotate ``forward``'s input and output: each layer call is then checked. With gradtape's
    mypy plugin (README, "What the mypy plugin adds"), a ``Sequential`` whose layers are
    written in the call is checked without that: the chain's literal widths at the
    constructor, and ``seq(x)`` layer by layer, typed as its last layer's result.

    Raises:
        TypeError: an argument is not a :class:`Module`.
    """

    def __init__(self, *modules: Module) -> None:
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: argument {i} is a {type(m).__name__}, not a Module")
        self.layers: list[Module] = list(modules)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(str(index), module)`` for each module."""
        for i, m in enumerate(self.layers):
            yield str(i), m

    def forward(self, x: Any) -> Any:
        """Each module applied in turn."""
        for m in self.layers:
            x = m(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.layers)


class Residual(Module):
    """A residual connection ``y = x + f(x)`` (He et al. 2016, "Deep Residual Learning";
    dfdx's ``Residual``). ``f`` must keep the input's shape; its parameters are named
    ``f.<name>``.

    Typed as its contract: ``Tensor[S, T] -> Tensor[S, T]`` (``x``'s shape type and tape
    kind; an ``Any`` input gives ``Any``). ``f`` itself is not checked against ``x``'s type
    (it is held as a :class:`Module`); a typed ``f`` is checked where a model's ``forward``
    calls it.

    Raises (on forward): ShapeError when ``f(x)`` does not broadcast with ``x``.
    """

    def __init__(self, f: Module) -> None:
        self.f = f

    @overload
    def forward(self, x: AnyShape) -> Any: ...
    @overload
    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]: ...
    def forward(self, x: Any) -> Any:
        """``x + f(x)``, ``x``'s shape and tape kind."""
        return x + self.f(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


def _check_module(owner: str, what: str, m: object) -> Module:
    """``m`` if it is a :class:`Module`.

    Raises:
        TypeError: it is not (the message names ``owner``, ``what`` and ``m``'s type).
    """
    if not isinstance(m, Module):
        raise TypeError(f"{owner}: {what} is a {type(m).__name__}, not a Module")
    return m


class ModuleList(Module):
    """A list of modules whose parameters are discovered (PyTorch's ``nn.ModuleList``):
    parameters are named ``<index>.<name>``, so a model's ``self.layers = ModuleList(...)``
    names them ``layers.0.weight``, ``layers.1.weight``, ... as PyTorch's ``state_dict`` does.
    Indices are renumbered after ``del`` and ``insert``, as in PyTorch.

    A plain ``list`` attribute of modules is discovered the same way (see :class:`Module`);
    ``ModuleList`` adds PyTorch's spelling and checks every item is a module when it is
    added. It has no ``forward``: iterate over it in the owner's ``forward``. Items are typed
    :class:`Module` (their calls are ``Any``), as for :class:`Sequential`.

    Unlike PyTorch, ``None`` items are refused (a ``TypeError`` like any non-module).

    Raises:
        TypeError: an item is not a :class:`Module`, or ``modules`` is not iterable.
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        self._modules: list[Module] = []
        if modules is not None:
            self.extend(modules)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The children of public attributes (a subclass's own, as for any :class:`Module`),
        then ``(str(index), module)`` for each item."""
        yield from super().named_children()
        for i, m in enumerate(self._modules):
            yield str(i), m

    def _collect_parameters(self, out: list[Tensor[Any, Any]], seen: set[int]) -> None:
        super()._collect_parameters(out, seen)
        for m in self._modules:
            m._collect_parameters(out, seen)

    def _index(self, idx: SupportsIndex) -> int:
        """``idx`` as a non-negative index into the list (PyTorch's ``_get_abs_string_index``).

        Raises:
            TypeError: ``idx`` is not an integer.
            IndexError: it is out of range.
        """
        i = operator.index(idx)
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"ModuleList: index {i} is out of range for {n} modules")
        return i % n

    @overload
    def __getitem__(self, idx: SupportsIndex) -> Module: ...
    @overload
    def __getitem__(self, idx: slice) -> Self: ...
    def __getitem__(self, idx: SupportsIndex | slice) -> Module | Self:
        """``ml[i]``: the ``i``-th module (negative indices count from the end); ``ml[a:b]``: a
        new ``ModuleList`` of the same class holding the same module objects (as in PyTorch).

        Raises:
            IndexError: ``i`` is out of range.
            TypeError: the index is neither an integer nor a slice.
        """
        if isinstance(idx, slice):
            return self.__class__(self._modules[idx])
        return self._modules[self._index(idx)]

    def __setitem__(self, idx: SupportsIndex, module: Module) -> None:
        """``ml[i] = module``: replace the ``i``-th module (an integer index only, as in PyTorch).

        Raises:
            IndexError: ``i`` is out of range.
            TypeError: ``i`` is not an integer (a slice included), or ``module`` is not a Module.
        """
        i = self._index(idx)
        self._modules[i] = _check_module("ModuleList", f"item {i}", module)

    def __delitem__(self, idx: SupportsIndex | slice) -> None:
        """``del ml[i]`` or ``del ml[a:b]``; the remaining modules are renumbered from 0.

        Raises:
            IndexError: ``i`` is out of range.
            TypeError: the index is neither an integer nor a slice.
        """
        if isinstance(idx, slice):
            del self._modules[idx]
        else:
            del self._modules[self._index(idx)]

    def __len__(self) -> int:
        """The number of modules."""
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        """The modules, in order."""
        return iter(self._modules)

    def __iadd__(self, modules: Iterable[Module]) -> Self:
        """``ml += modules``: :meth:`extend`."""
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        """``ml + other``: a new ``ModuleList`` with this one's modules, then ``other``'s."""
        out = ModuleList(self._modules)
        return out.extend(other)

    def append(self, module: Module) -> Self:
        """Add ``module`` at the end; returns ``self`` (as in PyTorch).

        Raises:
            TypeError: ``module`` is not a Module.
        """
        self._modules.append(_check_module("ModuleList.append", "the argument", module))
        return self

    def extend(self, modules: Iterable[Module]) -> Self:
        """Add the modules of the iterable ``modules`` at the end; returns ``self``. Every item is
        checked before any is added.

        Raises:
            TypeError: ``modules`` is not iterable, or an item is not a Module.
        """
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        items = [_check_module("ModuleList", f"item {i}", m) for i, m in enumerate(modules)]
        self._modules.extend(items)
        return self

    def insert(self, index: SupportsIndex, module: Module) -> None:
        """Insert ``module`` before ``index`` (``list.insert``'s semantics: an index past either
        end inserts at that end); the modules after it are renumbered.

        Raises:
            TypeError: ``index`` is not an integer, or ``module`` is not a Module.
        """
        self._modules.insert(operator.index(index), _check_module("ModuleList.insert", "the module", module))

    def pop(self, idx: SupportsIndex = -1) -> Module:
        """Remove and return the module at ``idx`` (the last by default); the rest are renumbered.

        Raises:
            IndexError: ``idx`` is out of range (or the list is empty).
            TypeError: ``idx`` is not an integer.
        """
        return self._modules.pop(self._index(idx))


def _check_key(key: object) -> str:
    """``key`` if it can name a :class:`ModuleDict` entry (PyTorch's ``add_module`` rules).

    Raises:
        TypeError: ``key`` is not a ``str``.
        KeyError: ``key`` is empty or contains ``"."``.
    """
    if not isinstance(key, str):
        raise TypeError(f"ModuleDict: module name should be a string, got {type(key).__name__} {key!r}")
    if not key:
        raise KeyError('ModuleDict: module name can\'t be empty string ""')
    if "." in key:
        raise KeyError(f'ModuleDict: module name can\'t contain ".", got: {key!r}')
    return key


class ModuleDict(Module):
    """An ordered dict of modules whose parameters are discovered (PyTorch's
    ``nn.ModuleDict``): parameters are named ``<key>.<name>``, so a model's
    ``self.heads = ModuleDict({"cls": Linear(...)})`` names them ``heads.cls.weight`` as
    PyTorch's ``state_dict`` does. Insertion order is kept (``update`` from a dict or another
    ``ModuleDict`` keeps its order; assigning an existing key keeps its place).

    Keys are strings that are non-empty and contain no ``"."``, values are modules (PyTorch's
    rules). A plain ``dict`` attribute with str keys is discovered the same way (see
    :class:`Module`); ``ModuleDict`` adds PyTorch's spelling and checks keys and values when
    they are added. It has no ``forward``. Values are typed :class:`Module` (calls ``Any``).
    As in PyTorch, an entry is also read as an attribute (``md.cls`` is ``md["cls"]``, as
    nanoGPT's ``self.transformer.wte``) unless a real attribute has that name; entries are added
    with ``md[key] = module`` (assigning ``md.cls = m`` sets a plain attribute, a child found as
    any module's is).

    Raises:
        TypeError: a key is not a ``str``, a value is not a :class:`Module`, or ``modules`` is
            neither a mapping nor an iterable of pairs.
        KeyError: a key is empty or contains ``"."``.
        ValueError: an element of an iterable of pairs does not have 2 items.
    """

    def __init__(self, modules: Mapping[str, Module] | ModuleDict | Iterable[tuple[str, Module]] | None = None) -> None:
        self._modules: dict[str, Module] = {}
        if modules is not None:
            self.update(modules)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The children of public attributes (a subclass's own, as for any :class:`Module`),
        then ``(key, module)`` for each entry, in insertion order."""
        yield from super().named_children()
        yield from self._modules.items()

    def _collect_parameters(self, out: list[Tensor[Any, Any]], seen: set[int]) -> None:
        super()._collect_parameters(out, seen)
        for m in self._modules.values():
            m._collect_parameters(out, seen)

    def __getattr__(self, name: str) -> Any:
        """``md.name``: the module under the key ``name`` (PyTorch's attribute access to a
        ``ModuleDict``'s entries); called only when no real attribute has that name. Typed
        ``Any`` (the entry's class is not known statically), so ``md.wte.weight`` and
        ``for block in md.h`` type-check as the PyTorch program is written.

        Raises:
            AttributeError: no entry has that key (the message names the class and the key).
        """
        modules = self.__dict__.get("_modules")
        if modules is not None and name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __getitem__(self, key: str) -> Module:
        """``md[key]``: the module under ``key``.

        Raises:
            KeyError: there is none.
        """
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        """``md[key] = module``: add it, or replace the module under ``key`` (keeping its place).

        Raises:
            TypeError: ``key`` is not a ``str`` or ``module`` is not a Module.
            KeyError: ``key`` is empty or contains ``"."``.
        """
        k = _check_key(key)
        self._modules[k] = _check_module("ModuleDict", f"the value for {k!r}", module)

    def __delitem__(self, key: str) -> None:
        """``del md[key]``.

        Raises:
            KeyError: there is no module under ``key``.
        """
        del self._modules[key]

    def __contains__(self, key: object) -> bool:
        """``key in md``: whether a module is stored under ``key``."""
        return key in self._modules

    def __len__(self) -> int:
        """The number of entries."""
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        """The keys, in insertion order (as iterating a dict)."""
        return iter(self._modules)

    def keys(self) -> KeysView[str]:
        """The keys, in insertion order (a live view)."""
        return self._modules.keys()

    def values(self) -> ValuesView[Module]:
        """The modules, in insertion order (a live view)."""
        return self._modules.values()

    def items(self) -> ItemsView[str, Module]:
        """``(key, module)`` pairs, in insertion order (a live view)."""
        return self._modules.items()

    def pop(self, key: str) -> Module:
        """Remove the module under ``key`` and return it.

        Raises:
            KeyError: there is none.
        """
        return self._modules.pop(key)

    def clear(self) -> None:
        """Remove every entry."""
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | ModuleDict | Iterable[tuple[str, Module]]) -> None:
        """Add or replace entries from a mapping (a dict, a ``ModuleDict``: in its order) or an
        iterable of ``(key, module)`` pairs (in order), as PyTorch's ``ModuleDict.update``.
        Every entry is checked before any is stored.

        Raises:
            TypeError: ``modules`` is neither a mapping nor iterable, an element of the
                iterable is not iterable, a key is not a ``str`` or a value is not a Module.
            ValueError: an element of the iterable does not have exactly 2 items.
            KeyError: a key is empty or contains ``"."``.
        """
        pairs: list[tuple[str, Module]] = []
        if isinstance(modules, (Mapping, ModuleDict)):
            for k, m in modules.items():
                pairs.append((_check_key(k), _check_module("ModuleDict", f"the value for {k!r}", m)))
        elif isinstance(modules, Iterable):
            for j, pair in enumerate(modules):
                if not isinstance(pair, Iterable):
                    raise TypeError(
                        f"ModuleDict update sequence element #{j} should be Iterable; is {type(pair).__name__}"
                    )
                kv = list(pair)
                if len(kv) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} has length {len(kv)}; 2 is required")
                k = _check_key(kv[0])
                pairs.append((k, _check_module("ModuleDict", f"the value for {k!r}", kv[1])))
        else:
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, "
                f"but got {type(modules).__name__}"
            )
        self._modules.update(pairs)


def _parameter(owner: str, value: object) -> Tensor[Any, Any]:
    """``value`` if it is a tensor (it becomes a parameter when stored).

    Raises:
        TypeError: it is not.
    """
    if not isinstance(value, Tensor):
        raise TypeError(f"{owner}: a parameter must be a Tensor, got {type(value).__name__}")
    return value


class ParameterList(Module):
    """A list of parameters (PyTorch's ``nn.ParameterList``): tensors held in a list are not
    discovered (a plain ``list`` attribute of tensors raises, see :class:`Module`); held here,
    each is a parameter named ``<index>``, so a model's ``self.scales = ParameterList(...)``
    names them ``scales.0``, ``scales.1``, ... as PyTorch's ``state_dict`` does. An untraced
    tensor becomes a trainable parameter when added (as an attribute does). Indices are
    renumbered after ``del``. No ``forward``.

    Raises:
        TypeError: an item is not a tensor, or ``values`` is not iterable.
    """

    def __init__(self, values: Iterable[Tensor[Any, Any]] | None = None) -> None:
        self._count = 0
        if values is not None:
            self.extend(values)

    def _items(self) -> list[Tensor[Any, Any]]:
        return [getattr(self, str(i)) for i in range(self._count)]

    def append(self, value: Tensor[Any, Any]) -> Self:
        """Add ``value`` at the end (as a parameter); returns self, as PyTorch's."""
        setattr(self, str(self._count), _parameter("ParameterList.append", value))
        self._count += 1
        return self

    def extend(self, values: Iterable[Tensor[Any, Any]]) -> Self:
        """Add each of ``values`` at the end; returns self."""
        for v in values:
            self.append(v)
        return self

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Tensor[Any, Any]]:
        return iter(self._items())

    @overload
    def __getitem__(self, idx: int) -> Tensor[Any, Any]: ...
    @overload
    def __getitem__(self, idx: slice) -> ParameterList: ...
    def __getitem__(self, idx: int | slice) -> Tensor[Any, Any] | ParameterList:
        """The parameter at ``idx`` (negative counts from the end), or a ``ParameterList`` of
        a slice (the same tensors).

        Raises:
            IndexError: ``idx`` is out of range.
        """
        if isinstance(idx, slice):
            return ParameterList(self._items()[idx])
        i = operator.index(idx)
        if not -self._count <= i < self._count:
            raise IndexError(f"ParameterList: index {idx} is out of range for {self._count} parameters")
        return getattr(self, str(i % self._count))  # type: ignore[no-any-return]

    def __setitem__(self, idx: int, value: Tensor[Any, Any]) -> None:
        """Replace the parameter at ``idx``.

        Raises:
            IndexError: ``idx`` is out of range. TypeError: ``value`` is not a tensor.
        """
        i = operator.index(idx)
        if not -self._count <= i < self._count:
            raise IndexError(f"ParameterList: index {idx} is out of range for {self._count} parameters")
        setattr(self, str(i % self._count), _parameter("ParameterList", value))

    def __delitem__(self, idx: int) -> None:
        """Remove the parameter at ``idx``; the ones after it move down one index."""
        items = self._items()
        del items[idx]
        for i in range(self._count):
            delattr(self, str(i))
        self._count = 0
        self.extend(items)

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter containing: [{p.dtype} of size {p.shape}]" for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters (PyTorch's ``nn.ParameterDict``): each is a parameter
    named ``<key>``, so ``self.bias = ParameterDict({"a": ...})`` names it ``bias.a`` in
    ``state_dict``. Keys are non-empty strings without ``"."`` that are not already attributes
    of the class (PyTorch's rules); insertion order is kept. No ``forward``.

    Raises:
        TypeError: a key is not a str, or a value is not a tensor.
        KeyError: a key is empty, contains ``"."``, or names an attribute of the class.
    """

    def __init__(
        self, parameters: Mapping[str, Tensor[Any, Any]] | Iterable[tuple[str, Tensor[Any, Any]]] | None = None
    ) -> None:
        self._keys: list[str] = []
        if parameters is not None:
            self.update(parameters)

    def _check(self, key: object) -> str:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict: keys must be str, got {type(key).__name__}")
        if not key or "." in key or (key not in self._keys and hasattr(type(self), key)):
            raise KeyError(f"ParameterDict: {key!r} cannot name a parameter (empty, holds '.', or a method's name)")
        return key

    def __setitem__(self, key: str, value: Tensor[Any, Any]) -> None:
        """Add or replace the parameter ``key`` (a new key goes last)."""
        k = self._check(key)
        setattr(self, k, _parameter("ParameterDict", value))
        if k not in self._keys:
            self._keys.append(k)

    def __getitem__(self, key: str) -> Tensor[Any, Any]:
        """The parameter ``key``.

        Raises:
            KeyError: there is none.
        """
        if key not in self._keys:
            raise KeyError(f"ParameterDict: no parameter {key!r} (keys: {self._keys})")
        return getattr(self, key)  # type: ignore[no-any-return]

    def __delitem__(self, key: str) -> None:
        """Remove the parameter ``key``.

        Raises:
            KeyError: there is none.
        """
        if key not in self._keys:
            raise KeyError(f"ParameterDict: no parameter {key!r} (keys: {self._keys})")
        delattr(self, key)
        self._keys.remove(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        return list(self._keys)

    def values(self) -> list[Tensor[Any, Any]]:
        """The parameters, in insertion order."""
        return [self[k] for k in self._keys]

    def items(self) -> list[tuple[str, Tensor[Any, Any]]]:
        """``(key, parameter)`` pairs, in insertion order."""
        return [(k, self[k]) for k in self._keys]

    def pop(self, key: str) -> Tensor[Any, Any]:
        """Remove the parameter ``key`` and return it.

        Raises:
            KeyError: there is none.
        """
        value = self[key]
        del self[key]
        return value

    def update(self, parameters: Mapping[str, Tensor[Any, Any]] | Iterable[tuple[str, Tensor[Any, Any]]]) -> None:
        """Add or replace each ``(key, parameter)`` of a mapping (in its order) or of pairs."""
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): Parameter containing: [{v.dtype} of size {v.shape}]" for k, v in self.items())
