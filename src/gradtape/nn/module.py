"""The :class:`Module` base class: parameter discovery, train/eval mode, gradient stores.

A module is a plain Python object whose :class:`~gradtape.tensor.Tensor` attributes are its
parameters (untraced leafs, ``NoneTape``) and whose :class:`Module` attributes (or lists and
tuples of modules) are its children, as in PyTorch's ``nn.Module``. Assigning a tensor to a
public attribute that is not a buffer marks it as a parameter (its tape becomes
:data:`gradtape.tape.PARAM`): ops on it record whenever a traced forward pass or a
``GradientTape`` context is live in the thread, so a parameter gets its gradient through any
path to the loss, in any layer, including one a user writes (see :func:`gradtape.tape.op_tape`);
in untraced inference nothing records. Training follows dfdx: trace the *input* into a store
that keeps only the parameters' gradients (:meth:`Module.alloc_grads`)::

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

from gradtape.gradients import Gradients
from gradtape.tape import NONE_TAPE, PARAM
from gradtape.tensor import Tensor

__all__ = ["Module"]


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
    Every public ``Module`` attribute, and every list or tuple of modules, is a child; a
    child's parameters are named ``<attribute>.<name>`` (``<attribute>.<index>.<name>`` in
    a list), as in PyTorch's ``state_dict``. Attributes starting with ``_`` are ignored.

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
        if (
            isinstance(value, Tensor)
            and value.tape is NONE_TAPE
            and not name.startswith("_")
            and name not in self.buffer_names
        ):
            value.tape = PARAM
        object.__setattr__(self, name, value)

    # ----- discovery ------------------------------------------------------------------------

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Iterate over ``(name, child)`` for the direct sub-modules, in attribute order."""
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{i}", item

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
        # (zero_grads and alloc_grads call this every training step)
        children: list[Module] = []
        buffers = self.buffer_names
        for name, value in vars(self).items():
            if name[0] == "_":
                continue
            if isinstance(value, Tensor):
                if name not in buffers and id(value) not in seen:
                    seen.add(id(value))
                    out.append(value)
            elif isinstance(value, Module):
                children.append(value)
            elif isinstance(value, (list, tuple)):
                children.extend(item for item in value if isinstance(item, Module))
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

    def zero_grads(self, grads: Gradients) -> None:
        """Drop this module's parameter gradients from ``grads`` (dfdx's ``zero_grads``), so the
        store can be reused for the next step: absent gradients read as zeros
        (``grads.get(p)``) and the next backward starts from them."""
        drop = grads._drop
        for p in self.parameters():
            drop(p.id)

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
