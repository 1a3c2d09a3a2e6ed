"""gradtape's mypy plugin: ``model(x)`` typed as the module's own ``forward``.

Enable it in the project's mypy configuration::

    [tool.mypy]                              # pyproject.toml
    plugins = ["gradtape.mypy_plugin"]

    [mypy]                                   # mypy.ini / setup.cfg
    plugins = gradtape.mypy_plugin

What it does: a call ``model(*args, **kwargs)`` on an instance of a
:class:`gradtape.nn.Module` subclass that does not define ``__call__`` itself is checked
against that subclass's ``forward`` (arguments, their shape types, generic batch and dtype
variables) and returns ``forward``'s result type. Without the plugin such a call is typed
``(x: Any) -> Any`` (no false alarm, no check). A module whose ``forward`` is overloaded keeps
the base signature; it writes ``__call__ = forward``, as gradtape's own typed layers do.

Under pyright (which has no plugins) the same code type-checks as without the plugin.

This is the first piece of issue 14's plugin; dim arithmetic (reshape counts, conv output
sizes) is not computed yet.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.expandtype import expand_type_by_instance
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import TypeInfo
from mypy.plugin import MethodSigContext, Plugin
from mypy.typeops import bind_self
from mypy.types import CallableType, Instance, get_proper_type

MODULE = "gradtape.nn.module.Module"


def _forward_signature(ctx: MethodSigContext) -> CallableType:
    """The signature of ``type(model).forward``, bound to ``model``, for ``model(...)``."""
    t = get_proper_type(ctx.type)
    if not isinstance(t, Instance):
        return ctx.default_signature
    # A class (between the instance's class and Module) that defines __call__ keeps it.
    for base in t.type.mro:
        if "__call__" in base.names:
            if base.fullname != MODULE:
                return ctx.default_signature
            break
    owner = next((base for base in t.type.mro if "forward" in base.names), None)
    sym = owner.names["forward"] if owner is not None else None
    forward = get_proper_type(sym.type) if sym is not None and sym.type is not None else None
    if owner is None or not isinstance(forward, CallableType):  # overloaded/untyped: default
        return ctx.default_signature
    # A generic module (class Holder(Module, Generic[W])): W as the instance binds it.
    forward = expand_type_by_instance(forward, map_instance_to_supertype(t, owner))
    bound = bind_self(forward, t)
    if not isinstance(bound, CallableType):
        return ctx.default_signature
    return bound.copy_modified(name=ctx.default_signature.name)


class GradtapePlugin(Plugin):
    """Routes ``__call__`` of every ``gradtape.nn.Module`` subclass to :func:`_forward_signature`."""

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], CallableType] | None:
        """The hook for ``<class>.__call__`` when ``<class>`` derives from ``Module``."""
        cls, _, method = fullname.rpartition(".")
        if method != "__call__" or not cls:
            return None
        sym = self.lookup_fully_qualified(cls)
        if sym is None or not isinstance(sym.node, TypeInfo):
            return None
        if any(base.fullname == MODULE for base in sym.node.mro):
            return _forward_signature
        return None


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point: the plugin class (any mypy version gradtape supports)."""
    return GradtapePlugin
