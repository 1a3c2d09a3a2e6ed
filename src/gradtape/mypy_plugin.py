"""gradtape's mypy plugin: ``model(x)`` typed as the module's own ``forward``, and dim arithmetic.

Enable it in the project's mypy configuration::

    [tool.mypy]                              # pyproject.toml
    plugins = ["gradtape.mypy_plugin"]

    [mypy]                                   # mypy.ini / setup.cfg
    plugins = gradtape.mypy_plugin

Under pyright (which has no plugins), and under mypy without the plugin, the same code
type-checks as before: the plugin changes no declaration, it computes more precise types
where it can compute an exact answer and reports an error only where it proves one.

**Module calls.** A call ``model(*args, **kwargs)`` on an instance of a
:class:`gradtape.nn.Module` subclass that does not define ``__call__`` itself is checked
against that subclass's ``forward`` (arguments, their shape types, generic batch and dtype
variables) and returns ``forward``'s result type. Without the plugin such a call is typed
``(x: Any) -> Any`` (no false alarm, no check). A module whose ``forward`` is overloaded keeps
the base signature; it writes ``__call__ = forward``, as gradtape's own typed layers do.

**Dim arithmetic.** A dim the plugin can compute becomes ``Literal[n]``. It folds the int
constants written in the call: literals, ``+ - * // % **`` of them (``16 * 2 * 2``,
``8 * 13 * 13``, ``-1``) and names declared ``Final``; a tensor's dims are its shape type's
``Literal`` ones. It computes

* *shapes written inline*: mypy widens ``dev.zeros((8, 4))`` to ``Tensor[tuple[int, int], ...]``
  once it is stored in a variable (pyright keeps ``Literal[8], Literal[4]``); with the plugin
  every gradtape function or method whose shape parameter is typed by a
  ``tuple[int, ...]``-bound type variable (the device's ``zeros``, ``ones``, ``randn``,
  ``rand``; ``broadcast_to``) keeps the literal dims, and other items keep their type:
  ``dev.zeros((n, 4))`` with ``n: int`` is ``Tensor[tuple[int, Literal[4]], NoneTape]``;
* ``reshape`` (method and ``ops.reshape``; a tuple or one int): the target's literal dims,
  and ``-1`` solved when every dim of the input is ``Literal`` (else ``-1`` is ``int``). A
  fully computed result is also what an annotated target is checked against, so
  ``y: Tensor[Rank2[L[10], L[4]], ...] = x.reshape((10, -1))`` type-checks (mypy alone solves
  the shape from the annotation and rejects the ``-1``);
* ``nn.Flatten``: called on a tensor with literal dims, the flattened dim, for a ``Flatten``
  typed ``Flatten[Literal[s], Literal[e]]`` or constructed inline (``nn.Flatten(0)(x)``);
* ``ops.concat`` / ``ops.stack`` of a tuple or list display of tensors of one rank with a
  literal ``axis``: the summed dim (concat) or the new dim ``len(tensors)`` (stack); a dim
  that is literal in one input is that literal in the result;
* ``ops.conv1d`` / ``conv2d`` / ``conv_transpose2d``, ``ops.max_pool2d`` / ``min_pool2d`` /
  ``avg_pool2d`` and ``ops.upscale2d``: the spatial output dims, by PyTorch's formulas
  (:mod:`gradtape.ops.conv`, :mod:`gradtape.ops.pool`), when the input's spatial dims, the
  weight's kernel dims and each ``stride`` / ``padding`` / ``dilation`` / ``output_padding``
  (given, or its default from the signature) are literal ints or tuples of them
  (``padding="valid"`` / ``"same"`` too; ``upscale2d``'s ``size`` or a constant
  ``scale_factor``);
* constructors of generic gradtape layers (``nn.Linear[I, O]`` and every other ``gradtape.nn``
  class whose type parameters are bound by arguments): a constant int expression passed to a
  parameter typed by one of the class's type variables binds it to that ``Literal``, when the
  call has an expected type that the result fits (an annotated variable or attribute, a
  return, an argument): ``self.fc: nn.Linear[L[64], L[10]] = nn.Linear(16 * 2 * 2, 10, dev=dev)``
  type-checks (mypy alone types ``16 * 2 * 2`` as ``int`` and rejects it). Without an
  expected type the layer stays what mypy and pyright infer (``Linear[int, int]``), so an
  unannotated layer keeps accepting inputs of any feature dim type.

**Layer widths.** A gradtape layer built without an expected type (``norm = nn.LayerNorm(64)``,
``self.fc = nn.Linear(64, 10, dev=dev)``) keeps mypy's type, ``int`` widths, and remembers the
constant widths its constructor got, in the type's extra attributes, which no subtype check
or join sees (a list of layers of different widths stays one type). Its calls (``__call__``
and ``forward``) are checked: an input whose literal width (the last dim for ``Linear``,
norms, attention and transformer layers; channel dim 1 for convolutions and batch norms) is
not the layer's literal width is an error, ``LayerNorm[64] called on a tensor of shape (8, 32):
its last dim is 32, the layer takes 64``. The result gets the layer's literal output width
(``Linear``'s out-features, ``Embedding``'s and attention's width, a convolution's
out-channels) where the call has an expected type that takes it, or where every dim of the
input is a ``Literal`` already (``x = dev.randn((8, 32)); h = fc1(x)``: such a value fits no
``int``-typed annotation anyway, so ``h`` gets ``(L[8], L[128])`` and ``fc2(h)`` is checked);
otherwise (``h = self.fc(x)`` of a ``Tensor[Rank2[int, int], ...]``) it keeps mypy's ``int``,
so that ``return h`` fits a typed ``forward``'s ``int``-typed return. (``Tensor``'s shape
parameter is invariant, which is what makes two literal dims that differ an error; a
covariant one would let mypy join them to ``int``.) An attribute
assigned a layer of other widths later (``if big: self.fc = nn.Linear(32, 32)``) forgets them.
Convolution and pooling layers remember their constant kernel, stride, padding, dilation and
output padding the same way, and their results get literal spatial sizes where the widths do
(PyTorch's formulas, as for ``ops.conv2d`` and ``ops.max_pool2d``); ``nn.Flatten`` multiplies
them, so a ``Linear`` after it is checked against ``C * H * W``. The recurrent layers
(``nn.LSTM(8, 16, bidirectional=True)``) remember their output width, ``hidden_size`` or twice
it, and an annotation whose output width is another literal is an error at the constructor.
A value typed ``nn.Module`` itself keeps ``Module.__call__``'s ``(*args, **kwargs)``.

**Sequential chains.** ``nn.Sequential(l1, l2, ...)`` with its layers written in the call:
each layer's literal input width must be the output width of the layer before it
(activations, dropout and normalisations pass it on; another module ends the check), else
an error at the constructor naming both layers, ``Sequential: layer 2 (Linear[16, 10]) takes
16 features, but layer 0 (Linear[64, 32]) gives 32``. The layers' types are remembered as the
widths are, and ``seq(x)`` is checked as ``l3(l2(l1(x)))`` would be (the first error is
reported, naming the layer and the shape it got) and returns the last layer's result type
(without the plugin, ``Any``).

mypy's own result is replaced only where its dim is ``int`` (or its shape ``Any``): named
axes (``NewType``), type variables and literal dims mypy already has are kept, and so is
mypy's whole type when the computed one does not fit the call's expected type (an annotated
``Tensor[Rank2[int, int], ...]`` target still gets ``int`` dims).

**Errors**, each naming the op and the shapes (and a convolution's or pooling's parameters),
with the error code ``gradtape-shape`` (``# type: ignore[gradtape-shape]`` silences one):
``reshape`` to a shape of another element count, a ``-1`` that does not divide, two ``-1``
or a dim below ``-1``; ``concat`` / ``stack`` of tensors whose ranks or (other) literal dims
differ, or an axis out of range; ``stack`` of a list display whose length is not the new
dim of the call's expected type (a list's type has no length, so without the plugin that dim
is taken from the expected type); a convolution, pooling or ``upscale2d`` whose output size is
not positive; a pooling padding above half the kernel; ``squeeze(axis)`` of an axis out of
range or whose literal size is not 1; ``realize`` to a shape type with a ``Literal`` dim where
the tensor's dim is another literal (it always raises at run time). For example::

    reshape: cannot reshape (8, 5) (40 elements) to (6, 7) (42 elements)
    squeeze: axis 0 of shape (4, 1) has size 4, not 1
    concat: tensors of shapes (2, 3) and (4, 3) differ in dim 0 (joined along axis 1)
    conv2d: output size (0, 0) is not positive: input (1, 1, 2, 2), weight (8, 1, 3, 3),
        kernel (3, 3), stride (1, 1), padding (0, 0), dilation (1, 1)

**Limits.** Only what is written in the call is folded (a tuple display, constants, ``Final``
names; not a shape held in a variable); tensors of ``Any`` shape or ``tuple[int, ...]`` give
nothing. A variable keeps the literal shape type of the tensor first assigned to it, so
assigning it a tensor of another shape type later (``h = dev.zeros((8, 4))`` then
``h = layer(h)``, or two branches creating different sizes) is an assignment error, as for
any variable under mypy; annotate the variable with the common type
(``h: Tensor[Rank2[int, int], NoneTape] = ...``) or enable mypy's ``allow_redefinition``
(pyright widens such a variable by itself). An error the plugin reports inside an argument of
another overloaded call can make mypy add that no overload of the outer call matches. The
layers' spatial sizes (``conv(x)`` of an ``nn.Conv2d``, ``nn.MaxPool2d``) are computed only
where the widths' are (inside a ``Sequential``, or where the call has an expected type): their
types carry the channels, not the kernel size or stride, which the constructor's constants give
(see **Layer widths**). A ``Sequential`` built from ``*layers``, held in a list, or assigned two
chains is called as ``Any``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

from mypy.erasetype import erase_typevars
from mypy.errorcodes import ErrorCode
from mypy.expandtype import expand_type, expand_type_by_instance
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import (
    ARG_POS,
    Argument,
    CallExpr,
    Context,
    Decorator,
    Expression,
    FloatExpr,
    FuncDef,
    IndexExpr,
    IntExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    OpExpr,
    OverloadedFuncDef,
    RefExpr,
    StarExpr,
    StrExpr,
    TempNode,
    TupleExpr,
    TypeInfo,
    UnaryExpr,
    Var,
)
from mypy.plugin import (
    CheckerPluginInterface,
    FunctionContext,
    FunctionSigContext,
    MethodContext,
    MethodSigContext,
    Plugin,
)
from mypy.subtypes import is_subtype
from mypy.typeops import bind_self
from mypy.types import (
    AnyType,
    CallableType,
    ExtraAttrs,
    FunctionLike,
    Instance,
    LiteralType,
    NoneType,
    ProperType,
    TupleType,
    Type,
    TypeOfAny,
    TypeType,
    TypeVarId,
    TypeVarType,
    get_proper_type,
)

MODULE = "gradtape.nn.module.Module"
TENSOR = "gradtape.tensor.Tensor"
SHAPES_REALIZE = "gradtape.shapes.realize"
FLATTEN = "gradtape.nn.activation.Flatten"

SHAPE = ErrorCode("gradtape-shape", "Tensor shapes that gradtape's plugin proves do not fit", "General")
"""The error code of the shape errors the plugin proves (reshape counts, concat dims, conv sizes)."""

# Defaults used when the signature's own defaults are not available (a module read from
# mypy's cache keeps no default expressions); the same values as the signatures'.
_DEFAULTS: dict[str, int | None] = {"axis": 0, "stride": 1, "padding": 0, "dilation": 1, "output_padding": 0}

_CONV = {
    "conv1d": (1, False),
    "conv2d": (2, False),
    "conv3d": (3, False),
    "conv_transpose2d": (2, True),
    "conv_transpose3d": (3, True),
}
_POOL = ("max_pool2d", "min_pool2d", "avg_pool2d")

Dim = ProperType
"""One dim of a shape type: ``Literal[n]``, ``int``, a named axis, a type variable, ``Any``."""


# ----- constants and dims ------------------------------------------------------------------


def _fold(e: Expression) -> int | None:
    """The value of a constant int expression (``16 * 2 * 2``, ``-1``, a ``Final`` name), else ``None``."""
    if isinstance(e, IntExpr):
        return e.value
    if isinstance(e, UnaryExpr):
        v = _fold(e.expr)
        if v is None:
            return None
        return {"-": -v, "+": v, "~": ~v}.get(e.op)
    if isinstance(e, OpExpr):
        a, b = _fold(e.left), _fold(e.right)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if e.op in ("//", "%") and b != 0:
            return a // b if e.op == "//" else a % b
        if e.op == "**" and 0 <= b <= 64:
            return int(a**b)
        return None
    if isinstance(e, (NameExpr, MemberExpr)) and isinstance(e.node, Var) and e.node.is_final:
        final = e.node.final_value
        return final if isinstance(final, int) and not isinstance(final, bool) else None
    return None


def _lit(t: Type | None) -> int | None:
    """``n`` for ``Literal[n]`` (or mypy's ``Literal[n]?`` of an int literal), else ``None``."""
    if t is None:
        return None
    p = get_proper_type(t)
    if isinstance(p, Instance) and p.last_known_value is not None:
        p = p.last_known_value
    if isinstance(p, LiteralType) and p.fallback.type.fullname == "builtins.int":
        v = p.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def _int_value(e: Expression, t: Type | None) -> int | None:
    """An int argument's value: folded from its expression, or its type's ``Literal``."""
    v = _fold(e)
    return v if v is not None else _lit(t)


def _literal(api: CheckerPluginInterface, n: int) -> LiteralType:
    return LiteralType(n, api.named_generic_type("builtins.int", []))


def _int(api: CheckerPluginInterface) -> Instance:
    return api.named_generic_type("builtins.int", [])


def _is_wide(d: Dim) -> bool:
    """A dim that says nothing more than "some int": ``int`` (also mypy's ``Literal[n]?``) or ``Any``."""
    return isinstance(d, AnyType) or (isinstance(d, Instance) and d.type.fullname == "builtins.int")


def _shape_of(t: Type | None) -> list[Dim] | None:
    """The dims of a ``Tensor[tuple[...], T]`` type, else ``None``."""
    if t is None:
        return None
    p = get_proper_type(t)
    if not (isinstance(p, Instance) and p.type.has_base(TENSOR) and p.args):
        return None
    if p.type.fullname != TENSOR:
        p = map_instance_to_supertype(p, p.type.mro[[i.fullname for i in p.type.mro].index(TENSOR)])
    s = get_proper_type(p.args[0])
    return [get_proper_type(d) for d in s.items] if isinstance(s, TupleType) else None


def _literals(dims: Sequence[Dim] | None) -> list[int] | None:
    """Every dim's value when all of them are ``Literal``, else ``None``."""
    if dims is None:
        return None
    vals = [_lit(d) for d in dims]
    return [v for v in vals if v is not None] if all(v is not None for v in vals) else None


def _dim_str(d: Dim) -> str:
    v = _lit(d)
    if v is not None:
        return str(v)
    if isinstance(d, Instance):
        return d.type.name
    if isinstance(d, TypeVarType):
        return d.name
    return "Any" if isinstance(d, AnyType) else str(d)


def _shape_str(dims: Sequence[Dim | int]) -> str:
    items = [str(d) if isinstance(d, int) else _dim_str(d) for d in dims]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _ints_str(vals: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, vals)) + ("," if len(vals) == 1 else "") + ")"


# ----- the arguments of one call -----------------------------------------------------------


class _Call:
    """The arguments of one call by parameter name: expressions, and types when mypy has them.

    Built from a return-type hook (types inferred by mypy) or a signature hook (types
    inferred here, on demand, with ``api.get_expression_type``).
    """

    def __init__(
        self,
        api: CheckerPluginInterface,
        names: Sequence[str | None],
        args: Sequence[Sequence[Expression]],
        types: Sequence[Sequence[Type]] | None,
        receiver: Type | None,
        defaults: dict[str, Expression | None],
        context: Context | None = None,
    ) -> None:
        self.api, self.receiver, self.defaults = api, receiver, defaults
        self._args: dict[str, Expression] = {}
        self._types: dict[str, Type] = {}
        for i, name in enumerate(names):
            if name is None or i >= len(args) or len(args[i]) != 1:
                continue
            self._args[name] = args[i][0]
            if types is not None and i < len(types) and len(types[i]) == 1:
                self._types[name] = types[i][0]
        self.positional: int | None = None
        """How many positional arguments the call passes (PyTorch's varargs: ``x.reshape(2, 3)``)."""
        if isinstance(context, CallExpr):
            # keywords the overload item at hand lacks (PyTorch's dim= on concat's typed rows)
            for name, e in zip(context.arg_names, context.args, strict=False):
                if name is not None and name not in self._args:
                    self._args[name] = e
            self.positional = sum(kind == ARG_POS for kind in context.arg_kinds)

    def given(self, name: str) -> bool:
        return name in self._args

    def expr(self, name: str) -> Expression | None:
        return self._args.get(name)

    def type(self, name: str) -> Type | None:
        if name in self._types:
            return self._types[name]
        e = self._args.get(name)
        if e is None:
            return None
        t = self.api.get_expression_type(e)
        self._types[name] = t
        return t

    def tensor(self, name: str) -> list[Dim] | None:
        """The shape of the tensor argument ``name`` (or of the receiver, for a method)."""
        if name not in self._args and self.receiver is not None:
            return _shape_of(self.receiver)
        return _shape_of(self.type(name))

    def int_or_ints(self, name: str, nd: int) -> list[int] | str | None:
        """``name`` as ``nd`` ints (an int, or a tuple of ``nd``; else its default); a string
        literal as itself (``padding="same"``); ``None`` when not known."""
        e = self._args.get(name)
        if e is None:
            if name in self.defaults:
                d = self.defaults[name]
                if d is None:
                    return None
                e = d
            elif name in _DEFAULTS:
                v0 = _DEFAULTS[name]
                return None if v0 is None else [v0] * nd
            else:
                return None
            t: Type | None = None
        else:
            t = self.type(name)
        if isinstance(e, StrExpr):
            return e.value
        v = _int_value(e, t)
        if v is not None:
            return [v] * nd
        if isinstance(e, TupleExpr) and len(e.items) == nd:
            pt = get_proper_type(t) if t is not None else None
            item_types: list[Type | None] = list(pt.items) if isinstance(pt, TupleType) else [None] * nd
            vals = [_int_value(i, it) for i, it in zip(e.items, item_types, strict=False)]
            if all(x is not None for x in vals) and len(vals) == nd:
                return [x for x in vals if x is not None]
        return None

    def tensors(self, name: str) -> list[list[Dim] | None] | None:
        """The shapes of a tuple or list display of tensors (``(a, b)``, ``[a, b]``)."""
        e = self._args.get(name)
        if not isinstance(e, (TupleExpr, ListExpr)) or any(isinstance(i, StarExpr) for i in e.items):
            return None
        if not e.items:
            return None
        t = get_proper_type(self._types.get(name))
        if isinstance(t, TupleType) and len(t.items) == len(e.items):
            return [_shape_of(i) for i in t.items]
        return [_shape_of(self._item_type(i)) for i in e.items]

    def _item_type(self, e: Expression) -> Type:
        """The type of an item of a list display, inferred without an expected type (mypy's
        own inference of the item depends on the overload it is trying), once per item."""
        key = (id(e), _binder_version(self.api))
        cached = _ITEM_TYPES.get(key)
        if cached is not None and cached[0] is e:
            return cached[1]
        t = self.api.get_expression_type(e)
        if len(_ITEM_TYPES) > 100_000:
            _ITEM_TYPES.clear()
        _ITEM_TYPES[key] = (e, t)
        return t


_ITEM_TYPES: dict[tuple[int, int], tuple[Expression, Type]] = {}
"""Item types of list displays by (node, binder version), as mypy's own expression cache."""


def _binder_version(api: CheckerPluginInterface) -> int:
    """mypy's count of narrowing changes, which invalidates what was inferred before (a loop
    body checked again, a narrowed name); a fresh number when it cannot be read."""
    binder = getattr(api, "binder", None)
    version = getattr(binder, "version", None)
    if isinstance(version, int):
        return version
    global _FRESH
    _FRESH -= 1
    return _FRESH


_FRESH = 0


def _from_return_ctx(ctx: FunctionContext | MethodContext, defaults: dict[str, Expression | None]) -> _Call:
    receiver = ctx.type if isinstance(ctx, MethodContext) else None
    return _Call(ctx.api, ctx.callee_arg_names, ctx.args, ctx.arg_types, receiver, defaults, ctx.context)


def _from_sig_ctx(ctx: FunctionSigContext | MethodSigContext, defaults: dict[str, Expression | None]) -> _Call:
    receiver = ctx.type if isinstance(ctx, MethodSigContext) else None
    return _Call(ctx.api, ctx.default_signature.arg_names, ctx.args, None, receiver, defaults, ctx.context)


# ----- the result type ---------------------------------------------------------------------


def _fits_context(api: CheckerPluginInterface, t: Type) -> bool:
    """``t`` is what the call's expected type (if any) accepts, its type variables left open."""
    context = api.type_context[-1] if api.type_context else None
    if context is None or isinstance(get_proper_type(context), AnyType):
        return True
    return is_subtype(erase_typevars(t), erase_typevars(context))


def _with_shape(api: CheckerPluginInterface, default: Type, dims: Sequence[Dim | None]) -> Type:
    """``default`` (a ``Tensor[S, T]``) with the shape ``dims`` where they are more precise.

    A ``None`` dim keeps mypy's. mypy's dim is replaced only where it is ``int`` or ``Any``;
    when it is a different ``Literal``, or the rank differs, mypy's type is kept whole, and so
    it is when the result does not fit the call's expected type.
    """
    d = get_proper_type(default)
    if not (isinstance(d, Instance) and d.type.fullname == TENSOR and len(d.args) == 2):
        return default
    old = get_proper_type(d.args[0])
    merged: list[Type] = []
    if isinstance(old, TupleType):
        if len(old.items) != len(dims):
            return default
        for o, n in zip(old.items, dims, strict=True):
            po = get_proper_type(o)
            if n is None or (not _is_wide(po) and _lit(po) is None):
                merged.append(o)  # a named axis, a type variable: mypy's
            elif _is_wide(po):
                merged.append(n)
            elif _lit(po) == _lit(n):
                merged.append(o)
            else:
                return default  # mypy computed another literal: keep mypy's
        shape: Type = old.copy_modified(items=merged)
    elif isinstance(old, AnyType) or (isinstance(old, Instance) and old.type.fullname == "builtins.tuple"):
        merged = [_int(api) if n is None else n for n in dims]
        shape = TupleType(merged, api.named_generic_type("builtins.tuple", [AnyType(TypeOfAny.special_form)]))
    else:
        return default
    new = d.copy_modified(args=[shape, d.args[1]])
    return new if _fits_context(api, new) else default


def _shape_arg(call: _Call, name: str) -> list[Dim] | None:
    """A shape written as a tuple display: constant items as ``Literal``, others as typed."""
    e = call.expr(name)
    if not isinstance(e, TupleExpr) or any(isinstance(i, StarExpr) for i in e.items):
        return None
    t = get_proper_type(call.type(name))
    types: list[Type | None] = list(t.items) if isinstance(t, TupleType) and len(t.items) == len(e.items) else []
    if not types:
        return None
    out: list[Dim] = []
    for item, it in zip(e.items, types, strict=True):
        v = _int_value(item, it)
        if v is not None:
            out.append(_literal(call.api, v))
            continue
        p = get_proper_type(it) if it is not None else AnyType(TypeOfAny.special_form)
        out.append(p.copy_modified(last_known_value=None) if isinstance(p, Instance) else p)
    return out


# ----- the ops -----------------------------------------------------------------------------

Outcome = tuple[list[Dim | None] | None, str | None]
"""What an op's rule computes: the result's dims (``None``: not computed), and an error."""


def _reshape(call: _Call) -> Outcome:
    e = call.expr("shape")
    if e is None or (call.positional or 0) > (1 if call.receiver is not None else 2):
        return None, None  # PyTorch's varargs (x.reshape(2, -1)): typed Tensor[Any, T], not checked here
    single = _int_value(e, call.type("shape")) if not isinstance(e, TupleExpr) else None
    if isinstance(e, TupleExpr):
        target = _shape_arg(call, "shape")
    elif single is not None:
        target = [_literal(call.api, single)]
    else:
        return None, None
    if target is None:
        return None, None
    vals = [_lit(d) for d in target]
    known = [v for v in vals if v is not None]
    src = call.tensor("a")
    src_vals = _literals(src)
    shown = _shape_str(target)
    if sum(v == -1 for v in known) > 1 or any(v < -1 for v in known):
        where = f" for a tensor of shape {_shape_str(src)}" if src is not None else ""
        return None, f"reshape: invalid target shape {shown}{where} (dims must be >= 0, at most one may be -1)"
    out: list[Dim | None] = list(target)
    if -1 in vals:
        k = vals.index(-1)
        out[k] = _int(call.api)
        if src_vals is not None and len(known) == len(vals):
            total, rest = math.prod(src_vals), math.prod(v for v in known if v != -1)
            if rest == 0 or total % rest:
                why = "the other dims hold 0 elements" if rest == 0 else f"{total} is not a multiple of {rest}"
                return None, f"reshape: cannot reshape {_shape_str(src_vals)} ({total} elements) to {shown}: {why}"
            out[k] = _literal(call.api, total // rest)
    elif src_vals is not None and len(known) == len(vals):
        total, want = math.prod(src_vals), math.prod(known)
        if total != want:
            return None, (
                f"reshape: cannot reshape {_shape_str(src_vals)} ({total} elements) to {shown} ({want} elements)"
            )
    return out, None


def _join(op: str, call: _Call) -> Outcome:
    """``concat`` (``op == "concat"``, or PyTorch's ``cat``) and ``stack``."""
    shapes = call.tensors("tensors")
    if shapes is None or any(s is None for s in shapes):
        return None, None
    ss = [s for s in shapes if s is not None]
    listed = ", ".join(_shape_str(s) for s in ss[:-1]) + " and " + _shape_str(ss[-1]) if len(ss) > 1 else ""
    rank = len(ss[0])
    if any(len(s) != rank for s in ss):
        return None, f"{op}: tensors of shapes {listed} have different ranks"
    # the axis's two spellings: gradtape's axis= and PyTorch's dim= (cat's own name)
    key = "dim" if (op == "cat" and not call.given("axis")) or call.given("dim") else "axis"
    got = call.int_or_ints(key, 1)
    if got is None and not call.given(key):
        # the default: 0 for cat, concat and stack alike (read from gradtape's syntax tree,
        # which mypy's cache does not keep: a cached run would otherwise lose it)
        got = [0]
    op = "concat" if op == "cat" else op
    if not isinstance(got, list):
        return None, None
    n_axes = rank + (op == "stack")
    if not -n_axes <= got[0] < n_axes:
        return None, (
            f"{op}: axis {got[0]} is out of range for tensors of shape {_shape_str(ss[0])}"
            f" (valid axes: {-n_axes} to {n_axes - 1})"
        )
    axis = got[0] % n_axes
    out: list[Dim | None] = []
    for k in range(rank):
        col = [s[k] for s in ss]
        vals = [_lit(d) for d in col]
        if op == "concat" and k == axis:
            out.append(_literal(call.api, sum(v for v in vals if v is not None)) if None not in vals else None)
            continue
        lits = {v for v in vals if v is not None}
        if len(lits) > 1:
            along = f" along axis {axis}" if op == "concat" else ""
            return None, f"{op}: tensors of shapes {listed} differ in dim {k} (joined{along})"
        out.append(_literal(call.api, lits.pop()) if lits else None)
    if op == "stack":
        out.insert(axis, _literal(call.api, len(ss)))
        # a list's type has no length, so stack's signature takes the new dim from the
        # expected type (``Count``); a list display's length is known here (a tuple's type has it)
        want = _context_dims(call.api) if isinstance(call.expr("tensors"), ListExpr) else None
        got_n = _lit(want[axis]) if want is not None and len(want) == rank + 1 else None
        if got_n is not None and got_n != len(ss):
            shown = _shape_str([_int(call.api) if d is None else d for d in out])
            return None, (
                f"stack: a list of {len(ss)} tensors of shape {_shape_str(ss[0])} gives {shown}"
                f" (axis {axis}), the expected type has {got_n} there"
            )
    return out, None


def _context_dims(api: CheckerPluginInterface) -> list[Dim] | None:
    """The shape of the call's expected type, when it is a ``Tensor`` of a tuple shape."""
    context = api.type_context[-1] if api.type_context else None
    return _shape_of(context) if context is not None else None


def _conv_sizes(
    size: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    extra: Sequence[int],
    transposed: bool,
) -> list[int]:
    """A convolution's output sizes (PyTorch's formulas): ``(n + 2p - d (k - 1) - 1) // s + 1``,
    transposed ``(n - 1) s - 2p + d (k - 1) + output_padding + 1``."""
    if transposed:
        return [
            (n - 1) * s - 2 * p + d * (k - 1) + o + 1
            for n, s, p, d, k, o in zip(size, stride, padding, dilation, kernel, extra, strict=True)
        ]
    return [
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, s, p, d, k in zip(size, stride, padding, dilation, kernel, strict=True)
    ]


def _pool_sizes(size: Sequence[int], kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int]) -> list[int]:
    """A pooling's output sizes: ``(n + 2p - k) // s + 1``."""
    return [(n + 2 * p - k) // s + 1 for n, k, s, p in zip(size, kernel, stride, padding, strict=True)]


def _conv(op: str, call: _Call) -> Outcome:
    nd, transposed = _CONV[op]
    x, w = call.tensor("x"), call.tensor("w")
    if x is None or w is None or len(x) != nd + 2 or len(w) != nd + 2:
        return None, None
    size, kernel = _literals(x[2:]), _literals(w[2:])
    stride, padding, dilation = (call.int_or_ints(n, nd) for n in ("stride", "padding", "dilation"))
    extra = call.int_or_ints("output_padding", nd) if transposed else [0] * nd
    if size is None or kernel is None or not isinstance(stride, list) or not isinstance(dilation, list):
        return None, None
    if not isinstance(extra, list) or padding is None:
        return None, None
    if min(stride + dilation + kernel) < 1 or min(size + extra) < 0:
        return None, None  # rejected at run time with a ValueError, not a size
    if isinstance(padding, str):
        if transposed or padding not in ("valid", "same") or (padding == "same" and max(stride) != 1):
            return None, None
        if padding == "same":
            return [None, None, *(_literal(call.api, n) for n in size)], None
        padding = [0] * nd
    if min(padding) < 0:
        return None, None
    outs = _conv_sizes(size, kernel, stride, padding, dilation, extra, transposed)
    if any(n <= 0 for n in outs):
        params = f"kernel {_ints_str(kernel)}, stride {_ints_str(stride)}, padding {_ints_str(padding)}, "
        params += f"dilation {_ints_str(dilation)}" + (f", output_padding {_ints_str(extra)}" if transposed else "")
        return None, (
            f"{op}: output size {_ints_str(outs)} is not positive: input {_shape_str(x)}, "
            f"weight {_shape_str(w)}, {params}"
        )
    return [None, None, *(_literal(call.api, n) for n in outs)], None


def _pool_stride(call: _Call, kernel: list[int] | str | None, nd: int) -> list[int] | str | None:
    """A pooling's ``stride``: as given, or the kernel size where it is omitted or ``None``
    (PyTorch's default)."""
    given = call.expr("stride")
    if given is None or (isinstance(given, NameExpr) and given.fullname == "builtins.None"):
        return kernel
    return call.int_or_ints("stride", nd)


def _pool(op: str, call: _Call) -> Outcome:
    x = call.tensor("x")
    if x is None or len(x) != 4:
        return None, None
    size = _literals(x[2:])
    kernel = call.int_or_ints("kernel_size", 2)
    stride = _pool_stride(call, kernel, 2)
    padding = call.int_or_ints("padding", 2)
    if size is None or not isinstance(kernel, list) or not isinstance(stride, list) or not isinstance(padding, list):
        return None, None
    if min(kernel + stride) < 1 or min(padding) < 0:
        return None, None  # rejected at run time with a ValueError, not a size
    params = f"kernel {_ints_str(kernel)}, stride {_ints_str(stride)}, padding {_ints_str(padding)}"
    if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
        return None, f"{op}: padding {_ints_str(padding)} is more than half the kernel {_ints_str(kernel)}"
    outs = _pool_sizes(size, kernel, stride, padding)
    if any(n + 2 * p < k for n, k, p in zip(size, kernel, padding, strict=True)) or any(n <= 0 for n in outs):
        return None, f"{op}: output size {_ints_str(outs)} is not positive: input {_shape_str(x)}, {params}"
    return [None, None, *(_literal(call.api, n) for n in outs)], None


def _float(e: Expression) -> float | None:
    """A constant number written in the call (``2``, ``1.5``, ``-0.5``), else ``None``."""
    if isinstance(e, FloatExpr):
        return e.value
    if isinstance(e, UnaryExpr) and e.op == "-" and isinstance(e.expr, FloatExpr):
        return -e.expr.value
    v = _fold(e)
    return float(v) if v is not None else None


def _upscale(call: _Call) -> Outcome:
    """``upscale2d``: ``size`` (an int or a pair) or ``floor(H * scale_factor)``."""
    x = call.tensor("x")
    if x is None or len(x) != 4:
        return None, None
    size = call.int_or_ints("size", 2) if call.given("size") else None
    if isinstance(size, list):
        return (None, None) if min(size) < 1 else ([None, None, *(_literal(call.api, n) for n in size)], None)
    e = call.expr("scale_factor")
    hw = _literals(x[2:])
    if e is None or hw is None:
        return None, None
    items = e.items if isinstance(e, TupleExpr) else [e, e]
    scales = [_float(i) for i in items]
    if len(scales) != 2 or any(f is None or not math.isfinite(f) or f <= 0 for f in scales):
        return None, None
    outs = [math.floor(n * float(f)) for n, f in zip(hw, scales, strict=True) if f is not None]
    if min(outs) < 1:
        return None, (
            f"upscale2d: output size {_ints_str(outs)} is not positive: input {_shape_str(x)}, "
            f"scale_factor {'(' + ', '.join(map(str, scales)) + ')'}"
        )
    return [None, None, *(_literal(call.api, n) for n in outs)], None


Rule = Callable[[_Call], Outcome]


def _squeeze(call: _Call) -> Outcome:
    """``squeeze(axis)``: each literal axis must be in range and its dim, where literal, 1."""
    x = call.tensor("a")
    e = call.expr("axis")
    if x is None or e is None:
        return None, None
    items = e.items if isinstance(e, TupleExpr) else [e]
    axes = [_fold(i) for i in items]
    if not items or any(a is None for a in axes):
        return None, None
    nd = len(x)
    for a in (a for a in axes if a is not None):
        if not -nd <= a < max(nd, 1):
            return None, f"squeeze: axis {a} is out of range for a tensor of shape {_shape_str(x)}"
        size = _lit(x[a % nd]) if nd else None
        if size is not None and size != 1:
            return None, f"squeeze: axis {a % nd} of shape {_shape_str(x)} has size {size}, not 1"
    return None, None


def _realize(call: _Call) -> Outcome:
    """``realize(shape)`` (method or ``shapes.realize``): a ``Literal`` dim of the requested
    shape type where the tensor's dim is another ``Literal`` (``dev.randn((32, 60))
    .realize(tuple[Batch, L[64]])``) always fails at run time, so it is reported here. The
    rank is the overloads' to check; ``int`` or named dims on either side are left to run time."""
    x = call.tensor("t")
    want = get_proper_type(call.type("shape"))
    if isinstance(want, CallableType):  # mypy types the value tuple[A, B] as its constructor
        want = get_proper_type(want.ret_type)
    elif isinstance(want, TypeType):
        want = want.item
    e = call.expr("shape")
    if isinstance(want, TupleType):
        items = want.items
    elif isinstance(want, Instance) and want.type.fullname == "builtins.tuple" and len(want.args) == 1:
        # tuple[L[4]] as a value is read as tuple[L[4], ...]: one dim where the index is one type
        one = isinstance(e, IndexExpr) and not isinstance(e.index, TupleExpr)
        items = [want.args[0]] if one else []
    else:
        items = []
    if x is None or len(items) != len(x):
        return None, None
    for i, (have, dim) in enumerate(zip(x, items, strict=True)):
        a, b = _lit(have), _lit(dim)
        if a is not None and b is not None and a != b:
            shown = (
                "(" + ", ".join(_dim_str(get_proper_type(d)) for d in items) + ("," if len(items) == 1 else "") + ")"
            )
            return None, f"realize: dim {i} of shape {_shape_str(x)} is {a}, the type {shown} wants {b}"
    return None, None


def _rule_for(name: str) -> Rule | None:
    if name == "realize":
        return _realize
    if name == "reshape":
        return _reshape
    if name == "squeeze":
        return _squeeze
    if name in ("concat", "cat", "stack"):
        return partial(_join, name)
    if name in _CONV:
        return partial(_conv, name)
    if name in _POOL:
        return partial(_pool, name)
    if name == "upscale2d":
        return _upscale
    return None


def _apply(rule: Rule, call: _Call) -> Outcome:
    """``rule(call)``; nothing computed if the arithmetic fails (mypy must never crash here)."""
    try:
        return rule(call)
    except (ArithmeticError, ValueError):
        return None, None


def _result_hook(rule: Rule, defaults: dict[str, Expression | None], ctx: FunctionContext | MethodContext) -> Type:
    """Return-type hook: the rule's dims over mypy's result. Errors are the signature hook's
    (this hook also runs while mypy tries overloads, where errors would be dropped)."""
    dims, _ = _apply(rule, _from_return_ctx(ctx, defaults))
    if dims is None:
        return ctx.default_return_type
    return _with_shape(ctx.api, ctx.default_return_type, dims)


_SIGNATURE_OUTCOMES: dict[tuple[int, int, tuple[str | None, ...]], tuple[Context, Outcome]] = {}
"""A call's outcome by call node, for the items of an overloaded callee (the signature hook
runs once per item): the arguments are inferred once, not once per overload."""


def _signature_hook(
    rule: Rule, defaults: dict[str, Expression | None], ctx: FunctionSigContext | MethodSigContext
) -> FunctionLike:
    """Signature hook: reports the rule's error (this hook runs once per call, before mypy tries
    the overloads, whose errors it drops). A ``reshape`` whose result is computed in full gets
    that result as its signature's, its ``shape`` parameter untied from it: mypy alone solves
    the shape's type variable from the expected type, which rejects a ``-1`` where the expected
    type says ``Literal[10]``."""
    key = (id(ctx.context), _binder_version(ctx.api), tuple(ctx.default_signature.arg_names))
    cached = _SIGNATURE_OUTCOMES.get(key)
    if cached is not None and cached[0] is ctx.context:
        dims, error = cached[1]
    else:
        dims, error = _apply(rule, _from_sig_ctx(ctx, defaults))
        if len(_SIGNATURE_OUTCOMES) > 100_000:
            _SIGNATURE_OUTCOMES.clear()
        _SIGNATURE_OUTCOMES[key] = (ctx.context, (dims, error))
    if error is not None:
        ctx.api.fail(error, ctx.context, code=SHAPE)
        return ctx.default_signature
    sig = ctx.default_signature
    if rule is not _reshape or dims is None or "shape" not in sig.arg_names:
        return sig
    known = [d for d in dims if d is not None]
    ret = get_proper_type(sig.ret_type)
    if len(known) != len(dims) or _literals(known) is None:
        return sig
    if not (isinstance(ret, Instance) and ret.type.fullname == TENSOR and len(ret.args) == 2):
        return sig
    fallback = ctx.api.named_generic_type("builtins.tuple", [AnyType(TypeOfAny.special_form)])
    new_ret = ret.copy_modified(args=[TupleType(_widen_to_context(ctx.api, known), fallback), ret.args[1]])
    if not _fits_context(ctx.api, new_ret):
        return sig
    arg_types = list(sig.arg_types)
    arg_types[sig.arg_names.index("shape")] = AnyType(TypeOfAny.special_form)
    used = [v for v in sig.variables if any(_mentions(t, v.id) for t in [*arg_types, new_ret])]
    return sig.copy_modified(arg_types=arg_types, ret_type=new_ret, variables=used)


def _widen_to_context(api: CheckerPluginInterface, dims: list[Dim]) -> list[Type]:
    """``dims`` with ``int`` where the call's expected type (a ``Tensor`` of the same rank) says
    ``int``: ``t: Tensor[Rank2[int, L[4]], ...] = x.reshape((10, -1))`` is ``(int, 4)``."""
    context = get_proper_type(api.type_context[-1]) if api.type_context else None
    want = _shape_of(context) if isinstance(context, Instance) and context.type.fullname == TENSOR else None
    if want is None or len(want) != len(dims):
        return list(dims)
    plain_int = [
        isinstance(w, Instance) and w.type.fullname == "builtins.int" and w.last_known_value is None for w in want
    ]
    return [_int(api) if wide else d for d, wide in zip(dims, plain_int, strict=True)]


def _literal_shapes_hook(params: frozenset[str], ctx: FunctionContext | MethodContext) -> Type:
    """Return-type hook of a call taking a shape (``dev.zeros((3, 4))``): the literal dims."""
    call = _from_return_ctx(ctx, {})
    for name in params:
        dims = _shape_arg(call, name)
        if dims is not None:
            return _with_shape(ctx.api, ctx.default_return_type, dims)
    return ctx.default_return_type


def _flatten_bounds(ctx: MethodContext) -> tuple[int, int] | None:
    """``(start_dim, end_dim)`` of the ``Flatten`` called: from its type (``Flatten[L[1], L[-1]]``)
    or from its constructor written inline (``nn.Flatten(0)(x)``)."""
    t = get_proper_type(ctx.type)
    remembered = _extra(t, WIDTHS)  # Flatten() inside a Sequential: Flatten[int, int] remembering
    for typed in (t, remembered):
        if isinstance(typed, Instance) and len(typed.args) == 2:
            start, end = _lit(typed.args[0]), _lit(typed.args[1])
            if start is not None and end is not None:
                return start, end
    callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
    if not (isinstance(callee, CallExpr) and isinstance(callee.callee, RefExpr) and callee.callee.fullname == FLATTEN):
        return None
    bounds = {"start_dim": 1, "end_dim": -1}
    for i, (arg, name) in enumerate(zip(callee.args, callee.arg_names, strict=True)):
        key = name if name is not None else ("start_dim", "end_dim")[i] if i < 2 else None
        v = _fold(arg)
        if key not in bounds or v is None:
            return None
        bounds[key] = v
    return bounds["start_dim"], bounds["end_dim"]


def _flatten_hook(ctx: MethodContext) -> Type:
    """``flat(x)`` for an ``nn.Flatten`` whose dims are known: the flattened dim's size."""
    bounds = _flatten_bounds(ctx)
    x = ctx.arg_types[0][0] if ctx.arg_types and len(ctx.arg_types[0]) == 1 else None
    dims = _shape_of(x)
    if bounds is None or dims is None:
        return ctx.default_return_type
    nd = len(dims)
    s, e = (b + nd if b < 0 else b for b in bounds)
    if not 0 <= s <= e < nd:
        return ctx.default_return_type
    vals = _literals(dims[s : e + 1])
    mid: Dim = _literal(ctx.api, math.prod(vals)) if vals is not None else _int(ctx.api)
    return _with_shape(ctx.api, ctx.default_return_type, [*dims[:s], mid, *dims[e + 1 :]])


# ----- layer constructors ------------------------------------------------------------------


def _layer_signature(ctx: FunctionSigContext) -> FunctionLike:
    """A generic layer's constructor with its constant int arguments bound as ``Literal``.

    ``Linear(16 * 2 * 2, 10, dev=dev)``: the parameters typed ``I`` and ``O`` receive constant
    expressions, so ``I = Literal[64]``, ``O = Literal[10]``; those parameters take ``int``.
    Applied only when the call has an expected type that the result fits.
    """
    sig = ctx.default_signature
    ids = {v.id for v in sig.variables if isinstance(v, TypeVarType)}
    bound: dict[TypeVarId, int] = {}
    blocked: set[TypeVarId] = set()
    direct: set[int] = set()
    for i, formal in enumerate(sig.arg_types):
        pf = get_proper_type(formal)
        exprs = ctx.args[i] if i < len(ctx.args) else []
        if isinstance(pf, TypeVarType) and pf.id in ids and len(exprs) == 1:
            v = _fold(exprs[0])
            fits = not pf.values and is_subtype(_literal(ctx.api, v), pf.upper_bound) if v is not None else False
            if v is None or bound.get(pf.id, v) != v or not fits:
                blocked.add(pf.id)
            else:
                bound[pf.id] = v
                direct.add(i)
            continue
        if exprs:  # another argument mentions the variable: leave it to mypy
            blocked |= {v for v in ids if _mentions(formal, v)}
    env: dict[TypeVarId, Type] = {v: _literal(ctx.api, n) for v, n in bound.items() if v not in blocked}
    if not env:
        return sig
    built = get_proper_type(expand_type(sig.ret_type, env))
    if isinstance(built, Instance):
        if len(_CONSTRUCTED) > 100_000:
            _CONSTRUCTED.clear()
        _CONSTRUCTED[id(ctx.context)] = (ctx.context, built)
    if _context_missing(ctx.api):
        return sig
    new = expand_type(sig, env)
    arg_types = list(new.arg_types)
    for i in direct:
        pf = get_proper_type(sig.arg_types[i])
        if isinstance(pf, TypeVarType) and pf.id in env:
            arg_types[i] = _int(ctx.api)
    new = new.copy_modified(arg_types=arg_types, variables=[v for v in sig.variables if v.id not in env])
    return new if _fits_context(ctx.api, new.ret_type) else sig


def _mentions(t: Type, var: TypeVarId) -> bool:
    return erase_typevars(t, {var}) != t


def _context_missing(api: CheckerPluginInterface) -> bool:
    context = api.type_context[-1] if api.type_context else None
    return context is None or isinstance(get_proper_type(context), (AnyType, NoneType))


_CONSTRUCTED: dict[int, tuple[Context, Instance]] = {}
"""The layer each constructor call builds, its constant widths bound as ``Literal``, by call node."""

WIDTHS = "<gradtape widths>"
"""The key under which a layer's type keeps the widths its constructor got (``Linear(64, 10)``
is ``Linear[int, int]`` remembering ``Linear[L[64], L[10]]``). Kept in the instance type's
extra attributes, which no subtype check, join or attribute access of user code sees."""

LAYERS = "<gradtape layers>"
"""The key under which an ``nn.Sequential``'s type keeps its layers' types (a tuple type)."""

SEQUENTIAL = "gradtape.nn.container.Sequential"

# A layer's width checks: class -> (inputs: (parameter, type argument, dim)), (outputs: (type
# argument, dim)). A dim is an index into the input's (output's) shape; 1 only for inputs of
# rank ``_CHANNEL_RANK`` (batched convolutions and batch norms).
_N = "gradtape.nn."
_LAYER_DIMS: dict[str, tuple[tuple[tuple[str, int, int], ...], tuple[tuple[int, int], ...]]] = {
    _N + "linear.Linear": ((("x", 0, -1),), ((1, -1),)),
    _N + "linear.Embedding": ((), ((1, -1),)),
    _N + "linear.EmbeddingBag": ((), ((1, -1),)),
    _N + "norm.LayerNorm": ((("x", 0, -1),), ()),
    _N + "norm.RMSNorm": ((("x", 0, -1),), ()),
    _N + "norm.BatchNorm1d": ((("x", 0, 1),), ()),
    _N + "norm.BatchNorm2d": ((("x", 0, 1),), ()),
    _N + "norm.GroupNorm": ((("x", 0, 1),), ()),
    _N + "conv.Conv1d": ((("x", 0, 1),), ((1, 1),)),
    _N + "conv.Conv2d": ((("x", 0, 1),), ((1, 1),)),
    _N + "conv.ConvTranspose2d": ((("x", 0, 1),), ((1, 1),)),
    _N + "attention.MultiHeadAttention": ((("q", 0, -1), ("k", 0, -1), ("v", 0, -1)), ((0, -1),)),
    _N + "transformer.TransformerEncoderLayer": ((("src", 0, -1),), ((0, -1),)),
    _N + "transformer.TransformerEncoder": ((("src", 0, -1),), ((0, -1),)),
    _N + "transformer.Transformer": ((("src", 0, -1), ("tgt", 0, -1)), ((0, -1),)),
    _N + "rnn.LSTM": ((("input", 0, -1),), ()),
    _N + "rnn.GRU": ((("input", 0, -1),), ()),
    _N + "rnn.RNN": ((("input", 0, -1),), ()),
    _N + "rnn.LSTMCell": ((("input", 0, -1),), ()),
    _N + "rnn.GRUCell": ((("input", 0, -1),), ()),
    _N + "rnn.RNNCell": ((("input", 0, -1),), ()),
}
_TUPLE_RESULT = {_N + "rnn.LSTM", _N + "rnn.GRU", _N + "rnn.RNN", _N + "rnn.LSTMCell"}
"""Layers whose call returns a tuple (an output and states): a ``Sequential`` chain's width
check ends there."""
_RECURRENT = (_N + "rnn.LSTM", _N + "rnn.GRU", _N + "rnn.RNN")
"""Recurrent layers typed ``[I, H, O]``: ``O`` is ``H``, or ``2 H`` when ``bidirectional=True``."""
_CHANNEL_RANK = {
    _N + "norm.BatchNorm1d": (2, 3),
    _N + "norm.BatchNorm2d": (4,),
    _N + "norm.GroupNorm": (2, 3, 4),
    _N + "conv.Conv1d": (3,),
    _N + "conv.Conv2d": (4,),
    _N + "conv.ConvTranspose2d": (4,),
}
_WHAT = {-1: "last dim", 1: "channel dim 1"}

GEOMETRY = "<gradtape geometry>"
"""The key under which a convolution or pooling layer's type keeps the kernel, stride, padding,
dilation and output padding its constructor got as constants (a tuple type of ``Literal``
ints, five per spatial dim; padding ``"same"`` as ``-1``), so that a call's spatial output
sizes are computed as ``ops.conv2d``'s and ``ops.max_pool2d``'s are."""

# class -> (spatial dims, "conv" | "transposed" | "pool")
_GEOMETRY: dict[str, tuple[int, str]] = {
    _N + "conv.Conv1d": (1, "conv"),
    _N + "conv.Conv2d": (2, "conv"),
    _N + "conv.ConvTranspose2d": (2, "transposed"),
    _N + "conv.MaxPool2d": (2, "pool"),
    _N + "conv.AvgPool2d": (2, "pool"),
    _N + "conv.MinPool2d": (2, "pool"),
}


def _geometry_kind(t: Type | None) -> tuple[int, str] | None:
    p = get_proper_type(t) if t is not None else None
    if not isinstance(p, Instance):
        return None
    return next((_GEOMETRY[b.fullname] for b in p.type.mro if b.fullname in _GEOMETRY), None)


def _geometry_constructed(inner: Callable[[FunctionContext], Type] | None, ctx: FunctionContext) -> Type:
    """Return-type hook of a convolution or pooling layer's constructor: ``inner``'s result
    (the widths, :func:`_layer_constructed`) remembering the layer's geometry (:data:`GEOMETRY`)
    where every part of it is a constant."""
    t = inner(ctx) if inner is not None else ctx.default_return_type
    p = get_proper_type(t)
    kind = _geometry_kind(p)
    if kind is None or not isinstance(p, Instance):
        return t
    nd, how = kind
    call = _from_return_ctx(ctx, {})
    kernel = call.int_or_ints("kernel_size", nd)
    stride = _pool_stride(call, kernel, nd) if how == "pool" else call.int_or_ints("stride", nd)
    padding = call.int_or_ints("padding", nd)
    if padding == "same" and how == "conv":
        padding = [-1] * nd
    elif padding == "valid" and how == "conv":
        padding = [0] * nd
    dilation = [1] * nd if how == "pool" else call.int_or_ints("dilation", nd)
    extra = call.int_or_ints("output_padding", nd) if how == "transposed" else [0] * nd
    parts = (kernel, stride, padding, dilation, extra)
    if not all(isinstance(v, list) and len(v) == nd for v in parts):
        return t
    values = [n for v in parts if isinstance(v, list) for n in v]
    fallback = ctx.api.named_generic_type("builtins.tuple", [_int(ctx.api)])
    return _with_extra(p, GEOMETRY, TupleType([_literal(ctx.api, n) for n in values], fallback))


def _spatial_out(layer: Type | None, x: Sequence[Dim]) -> list[int] | None:
    """The spatial output sizes of ``layer`` called on a tensor of shape ``x`` (batched: the
    spatial dims after the channel), or ``None`` where they are not known or not positive
    (the call then fails at run time, naming the sizes)."""
    kind = _geometry_kind(layer)
    geo = _extra(layer, GEOMETRY)
    if kind is None or not isinstance(geo, TupleType):
        return None
    nd, how = kind
    values = [_lit(i) for i in geo.items]
    size = _literals(x[2:]) if len(x) == nd + 2 else None
    if size is None or len(values) != 5 * nd or any(v is None for v in values):
        return None
    kernel, stride, padding, dilation, extra = (
        [v for v in values[i * nd : (i + 1) * nd] if v is not None] for i in range(5)
    )
    if how == "pool":
        if any(n + 2 * pd < k for n, k, pd in zip(size, kernel, padding, strict=True)):
            return None
        outs = _pool_sizes(size, kernel, stride, padding)
    elif min(padding) < 0:  # padding="same" (stride 1): the input's sizes
        outs = list(size) if max(stride) == 1 else []
    else:
        outs = _conv_sizes(size, kernel, stride, padding, dilation, extra, how == "transposed")
    return outs if outs and min(outs) > 0 else None


def _layer_constructed(ctx: FunctionContext) -> Type:
    """Return-type hook of a gradtape layer's constructor: a layer typed with ``int`` widths
    (no expected type) keeps the ``Literal`` widths its arguments gave, out of its type's
    compatibility (see :data:`WIDTHS`), for the checks of its calls."""
    t = get_proper_type(ctx.default_return_type)
    cached = _CONSTRUCTED.get(id(ctx.context))
    if cached is None or cached[0] is not ctx.context or not isinstance(t, Instance):
        return ctx.default_return_type
    built = cached[1]
    if built.type is not t.type or len(built.args) != len(t.args):
        return ctx.default_return_type
    if all(_lit(a) == _lit(b) for a, b in zip(t.args, built.args, strict=True)):
        return ctx.default_return_type  # the type has the literal widths itself
    if any(_lit(a) is None and not _is_wide(get_proper_type(a)) for a in t.args):
        return ctx.default_return_type  # a named axis or type variable: mypy's
    _forget_reassigned(ctx.api, WIDTHS, built)
    return _with_extra(t, WIDTHS, built)


def _recurrent_constructed(ctx: FunctionContext) -> Type:
    """Return-type hook of ``nn.LSTM`` / ``GRU`` / ``RNN``: the widths as
    :func:`_layer_constructed` remembers them, with the output width ``O`` computed from a
    constant ``hidden_size`` and ``bidirectional`` (``2 H`` when it is ``True``). With
    ``bidirectional=True`` the constructor's overloads give ``O = Any``, which this hook
    replaces with ``2 H``, so an annotation with another literal is an assignment error. A
    one-direction layer whose solved ``O`` is another literal than the constant
    ``hidden_size`` (its annotation disagreeing with the argument) is reported here:
    ``LSTM: outputs are hidden_size = 16 wide, the type says 32``."""
    t = _layer_constructed(ctx)
    p = get_proper_type(t)
    if not isinstance(p, Instance) or len(p.args) != 3:
        return t
    call = _from_return_ctx(ctx, {})
    bi = call.expr("bidirectional")
    if bi is None:
        two = False
    elif isinstance(bi, NameExpr) and bi.fullname in ("builtins.True", "builtins.False"):
        two = bi.fullname == "builtins.True"
    else:
        return t
    hidden = call.expr("hidden_size")
    h = _int_value(hidden, call.type("hidden_size")) if hidden is not None else None
    if h is None:
        return t
    width = 2 * h if two else h
    declared = _lit(p.args[2])
    if declared is not None and declared != width:
        how = f"bidirectional=True gives outputs 2 * {h} = {width}" if two else f"outputs are hidden_size = {h}"
        ctx.api.fail(f"{p.type.name}: {how} wide, the type says {declared}", ctx.context, code=SHAPE)
        return t
    remembered = _extra(p, WIDTHS)
    base = remembered if isinstance(remembered, Instance) and len(remembered.args) == 3 else p
    out = _literal(ctx.api, width)
    if isinstance(get_proper_type(p.args[2]), AnyType):
        # bidirectional=True: the constructor's types leave O as Any (any annotation is
        # accepted without the plugin); with it, O is the width computed here, so an annotation
        # with another literal is an assignment error and the outputs carry 2 H
        p = p.copy_modified(args=[*p.args[:2], out])
    if _lit(base.args[2]) == width:
        return p
    built = base.copy_modified(args=[*base.args[:2], out])
    return _with_extra(p, WIDTHS, built)


def _with_extra(t: Instance, key: str, value: Type) -> Instance:
    attrs = t.extra_attrs.copy() if t.extra_attrs is not None else ExtraAttrs({}, set(), None)
    attrs.attrs[key] = value
    attrs.immutable.add(key)
    new = t.copy_modified()
    new.extra_attrs = attrs
    return new


def _extra(t: Type | None, key: str) -> ProperType | None:
    p = get_proper_type(t) if t is not None else None
    if not isinstance(p, Instance) or p.extra_attrs is None or key not in p.extra_attrs.attrs:
        return None
    if id(p.extra_attrs) in _CONFLICTED:
        return None
    return get_proper_type(p.extra_attrs.attrs[key])


_CONFLICTED: dict[int, ExtraAttrs] = {}
"""The remembered widths (layers) of variables assigned another layer later: forgotten."""


def _forget_reassigned(api: CheckerPluginInterface, key: str, value: Type) -> None:
    """A constructor's result assigned to a variable that remembers other widths (``self.fc =
    Linear(32, 32)`` in a branch after ``self.fc = Linear(64, 32)``): the variable's type is
    the expected type, which then forgets them (the variable may hold either layer)."""
    context = get_proper_type(api.type_context[-1]) if api.type_context else None
    if not isinstance(context, Instance) or context.extra_attrs is None:
        return
    old = context.extra_attrs.attrs.get(key)
    if old is not None and old != value:
        _CONFLICTED[id(context.extra_attrs)] = context.extra_attrs


def _layer_widths(t: Type | None) -> tuple[str, list[int | None]] | None:
    """``(class, widths)`` of a gradtape layer with checked dims: each type argument's literal
    (from the type, else from what its constructor got), ``None`` where not literal."""
    p = get_proper_type(t) if t is not None else None
    if not isinstance(p, Instance):
        return None
    owner = next((b for b in p.type.mro if b.fullname in _LAYER_DIMS), None)
    if owner is None:
        return None
    inst = map_instance_to_supertype(p, owner)
    remembered = _extra(p, WIDTHS)
    old = map_instance_to_supertype(remembered, owner) if isinstance(remembered, Instance) else None
    widths = [_lit(a) for a in inst.args]
    if old is not None and len(old.args) == len(widths):
        widths = [w if w is not None else _lit(b) for w, b in zip(widths, old.args, strict=True)]
    return owner.fullname, widths


def _layer_str(cls: str, widths: Sequence[int | None]) -> str:
    return cls.rpartition(".")[2] + "[" + ", ".join("int" if w is None else str(w) for w in widths) + "]"


def _typed_widths(layer: Type | None) -> set[int]:
    """The indices of the layer's widths that its type itself gives as ``Literal``."""
    p = get_proper_type(layer) if layer is not None else None
    if not isinstance(p, Instance):
        return set()
    owner = next((b for b in p.type.mro if b.fullname in _LAYER_DIMS), None)
    inst = map_instance_to_supertype(p, owner) if owner is not None else p
    return {k for k, a in enumerate(inst.args) if _lit(a) is not None}


def _layer_error(layer: Type | None, arg: str, x: Sequence[Dim] | None, only_remembered: bool = True) -> str | None:
    """The error of calling ``layer`` with a tensor of shape ``x`` as its argument ``arg``:
    a literal dim that is not the layer's literal width."""
    found = _layer_widths(layer)
    if found is None or x is None:
        return None
    cls, widths = found
    typed = set() if only_remembered is False else _typed_widths(layer)
    for name, k, dim in _LAYER_DIMS[cls][0]:
        if name != arg or k >= len(widths) or widths[k] is None or not x or k in typed:
            continue  # a width of the layer's type is checked by its overloads (mypy's error)
        if dim == 1 and len(x) not in _CHANNEL_RANK.get(cls, ()):
            continue
        got = _lit(x[dim])
        if got is not None and got != widths[k]:
            return (
                f"{_layer_str(cls, widths)} called on a tensor of shape {_shape_str(x)}: its {_WHAT[dim]} is"
                f" {got}, the layer takes {widths[k]}"
            )
    return None


def _layer_call_check(ctx: MethodSigContext) -> None:
    """Reports a layer call whose input's literal width is not the layer's (see :data:`_LAYER_DIMS`)."""
    if _layer_widths(ctx.type) is None:
        return
    call = _from_sig_ctx(ctx, {})
    for name in ("x", "q", "k", "v", "src", "tgt", "input"):
        if not call.given(name):
            continue
        error = _layer_error(ctx.type, name, call.tensor(name))
        if error is not None:
            ctx.api.fail(error, ctx.context, code=SHAPE)
            return


def _literal_result_wanted(ctx: MethodContext, x: Sequence[Dim] | None) -> bool:
    """Whether a layer call's result gets the literal widths the layer remembers: where the
    call has an expected type (the result is then kept only if it fits it), inside a
    ``Sequential``, or where every dim of the input ``x`` is already a ``Literal``
    (``x = dev.randn((8, 32)); h = fc1(x)``). Such an input's type fits no ``int``-typed
    annotation already, so a literal output width adds no new mismatch; an input with an
    ``int`` dim (a typed ``forward``'s ``Tensor[Rank2[int, int], ...]``) keeps mypy's ``int``
    widths, so ``h = self.fc(x); return h`` still fits the ``int``-typed return."""
    context = ctx.api.type_context[-1] if ctx.api.type_context else None
    return context is not None or bool(_IN_CHAIN) or (bool(x) and _literals(x) is not None)


def _layer_result(ctx: MethodContext) -> Type:
    """A layer call's result with the layer's literal output width where mypy has ``int``."""
    found = _layer_widths(ctx.type)
    dims = _shape_of(ctx.default_return_type)
    x = _shape_of(ctx.arg_types[0][0]) if ctx.arg_types and len(ctx.arg_types[0]) == 1 else None
    if found is None or dims is None or not _literal_result_wanted(ctx, x):
        return ctx.default_return_type  # h = fc(x) of an int-typed x keeps mypy's int width
    cls, widths = found
    out: list[Dim | None] = [None] * len(dims)
    for k, dim in _LAYER_DIMS[cls][1]:
        if k < len(widths) and widths[k] is not None and dims:
            if dim == 1 and len(dims) not in _CHANNEL_RANK.get(cls, ()):
                continue
            out[dim] = _literal(ctx.api, widths[k] or 0)
    spatial = _spatial_out(ctx.type, x) if x is not None and len(x) == len(dims) else None
    if spatial is not None:
        out[2:] = [_literal(ctx.api, n) for n in spatial]
    if all(d is None for d in out):
        return ctx.default_return_type
    return _with_shape(ctx.api, ctx.default_return_type, out)


def _pool_layer_result(ctx: MethodContext) -> Type:
    """A pooling layer's call with its spatial output sizes where its geometry and the input's
    sizes are constants (where an expected type takes them, or inside a ``Sequential``, as
    :func:`_layer_result`)."""
    dims = _shape_of(ctx.default_return_type)
    x = _shape_of(ctx.arg_types[0][0]) if ctx.arg_types and len(ctx.arg_types[0]) == 1 else None
    if dims is None or x is None or len(x) != len(dims) or not _literal_result_wanted(ctx, x):
        return ctx.default_return_type
    spatial = _spatial_out(ctx.type, x)
    if spatial is None:
        return ctx.default_return_type
    return _with_shape(ctx.api, ctx.default_return_type, [None, None, *(_literal(ctx.api, n) for n in spatial)])


def _checked_layer_call(ctx: MethodSigContext) -> FunctionLike:
    """``layer(x)`` of a gradtape layer: its widths checked against ``x``'s, then its own signature."""
    _layer_call_check(ctx)
    return _forward_signature(ctx)


def _checked_layer_forward(ctx: MethodSigContext) -> FunctionLike:
    """``layer.forward(x)``: as :func:`_checked_layer_call`."""
    _layer_call_check(ctx)
    return ctx.default_signature


# ----- nn.Sequential -----------------------------------------------------------------------

_SAME_SHAPE = ("gradtape.nn.activation.", "gradtape.nn.norm.")
"""Modules whose output has their input's shape (activations, dropout, normalisations)."""
_NOT_SAME_SHAPE = {FLATTEN, "gradtape.nn.activation.Unflatten"}


def _chain_error(layers: Sequence[Type]) -> str | None:
    """The first pair of layers of a ``Sequential`` whose literal widths disagree: a layer's
    output width (a ``Linear``'s out-features, a convolution's out-channels, an embedding's
    width) against the input width of the next layer that checks one."""
    have: tuple[int, int, int, str] | None = None  # width, dim, layer index, layer shown
    for i, t in enumerate(layers):
        p = get_proper_type(t)
        found = _layer_widths(p)
        if found is None:
            name = p.type.fullname if isinstance(p, Instance) else ""
            if not (name.startswith(_SAME_SHAPE) and name not in _NOT_SAME_SHAPE):
                have = None  # a module of unknown output shape
            continue
        cls, widths = found
        shown = _layer_str(cls, widths)
        if cls in _TUPLE_RESULT:
            have = None  # the next module gets a tuple, not a tensor of a known width
            continue
        for _, k, dim in _LAYER_DIMS[cls][0][:1]:
            want = widths[k] if k < len(widths) else None
            if want is None or have is None:
                continue
            same_dim = have[1] == dim or cls.rpartition(".")[2].startswith("BatchNorm1d")
            if same_dim and have[0] != want:
                what = "features" if dim == -1 else "channels"
                return (
                    f"Sequential: layer {i} ({shown}) takes {want} {what}, but layer {have[2]} ({have[3]}) gives"
                    f" {have[0]}"
                )
        outs = _LAYER_DIMS[cls][1]
        if outs:
            k, dim = outs[0]
            w = widths[k] if k < len(widths) else None
            have = (w, dim, i, shown) if w is not None else None
        elif have is None:
            ins = _LAYER_DIMS[cls][0]
            if ins and ins[0][1] < len(widths) and widths[ins[0][1]] is not None and ins[0][2] == -1:
                have = (widths[ins[0][1]] or 0, -1, i, shown)
    return None


def _sequential_constructed(ctx: FunctionContext) -> Type:
    """``nn.Sequential(*layers)``: the chain's literal widths checked; the layers' types kept
    with the result (see :data:`LAYERS`) for its calls."""
    t = get_proper_type(ctx.default_return_type)
    if not isinstance(t, Instance) or len(ctx.arg_types) != 1 or not ctx.arg_types[0]:
        return ctx.default_return_type
    if any(kind != ARG_POS for kind in ctx.arg_kinds[0]):
        return ctx.default_return_type  # Sequential(*mods): the layers are not known
    layers = [_as_constructed(ctx.api, e, t) for e, t in zip(ctx.args[0], ctx.arg_types[0], strict=True)]
    error = _chain_error(layers)
    if error is not None:
        ctx.api.fail(error, ctx.context, code=SHAPE)
        return ctx.default_return_type
    fallback = ctx.api.named_generic_type("builtins.tuple", [AnyType(TypeOfAny.special_form)])
    chain = TupleType(layers, fallback)
    _forget_reassigned(ctx.api, LAYERS, chain)
    return _with_extra(t, LAYERS, chain)


def _as_constructed(api: CheckerPluginInterface, e: Expression, t: Type) -> Type:
    """A layer built inline in ``Sequential(...)`` as a layer built without an expected type:
    ``int`` widths remembering their literals (mypy typed it under the expected ``Module``, so
    with literal widths, whose overloads would refuse a named-axis input that an unannotated
    layer takes)."""
    p = get_proper_type(t)
    callee = e.callee if isinstance(e, CallExpr) else None
    if not (isinstance(p, Instance) and isinstance(callee, RefExpr) and isinstance(callee.node, TypeInfo)):
        return t
    if callee.node is not p.type or not any(_lit(a) is not None for a in p.args):
        return t
    wide = p.copy_modified(args=[_int(api) if _lit(a) is not None else a for a in p.args])
    return _with_extra(wide, WIDTHS, p)


_IN_CHAIN: list[int] = []
"""Non-empty while a ``Sequential``'s inner layers are applied: their results keep the literal
widths the layers remember (each feeds the next layer, not a variable)."""


def _sequential_call(ctx: MethodSigContext) -> FunctionLike:
    """``seq(x)`` of an ``nn.Sequential`` whose layers are known: each layer's call applied in
    turn (checked as if written ``l2(l1(x))``); the result is the last layer's. An error in the
    chain is reported naming the layer and the shape it got."""
    sig = _forward_signature(ctx)
    layers = _extra(ctx.type, LAYERS)
    checker = getattr(ctx.api, "expr_checker", None)
    msg = getattr(ctx.api, "msg", None)
    if not isinstance(layers, TupleType) or checker is None or msg is None or not isinstance(sig, CallableType):
        return sig
    given = [a for a in ctx.args if a]
    if len(given) != 1 or len(given[0]) != 1 or len(sig.arg_types) < 1:
        return sig
    x = ctx.api.get_expression_type(given[0][0], AnyType(TypeOfAny.special_form))  # forward's x: Any
    if _shape_of(x) is None:
        return sig
    current: Type = x
    failed = False
    last = len(layers.items) - 1
    outer = ctx.api.type_context[-1] if ctx.api.type_context else None
    for i, layer in enumerate(layers.items):
        # the last layer's result meets the call's expected type, where there is one (a named
        # axis or int there solves the layer's type variables); where that fails, the layer is
        # applied alone as the inner ones are, so that a mismatch with the expected type is
        # reported where the result is used (mypy's own message there), not blamed on the
        # last layer
        for inner in (False, True) if i == last and outer is not None else (True,):
            if inner:
                ctx.api.type_context.append(None)
                _IN_CHAIN.append(i)
            try:
                with msg.filter_errors(save_filtered_errors=True) as watcher:
                    arg = TempNode(current, context=ctx.context)
                    result, _ = checker.check_call(layer, [arg], [ARG_POS], ctx.context)
            finally:
                if inner:
                    ctx.api.type_context.pop()
                    _IN_CHAIN.pop()
            if not watcher.has_new_errors():
                break
        if watcher.has_new_errors() and not failed:
            failed = True  # the first error is reported; the chain goes on with the layer's result
            found = _layer_widths(layer)
            p = get_proper_type(layer)
            shown = _layer_str(*found) if found else p.type.name if isinstance(p, Instance) else str(p)
            first = watcher.filtered_errors()[0].message if watcher.filtered_errors() else ""
            text = f"{shown} cannot take a tensor of shape {_shape_str(_shape_of(current) or [])}: {first}"
            message = f"Sequential: layer {i}: {first if first.startswith(shown) else text}"
            ctx.api.fail(message, ctx.context, code=SHAPE)
        current = result
        if _shape_of(current) is None:
            return sig  # an untyped step: the rest is not known
    return sig.copy_modified(ret_type=current)


# ----- model(x) ----------------------------------------------------------------------------


def _forward_signature(ctx: MethodSigContext) -> FunctionLike:
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
    if owner is None or owner.fullname == MODULE:
        # a value typed ``Module`` (``self.encoder: Module``) may be any subclass at run time:
        # its call keeps Module.__call__'s ``(*args, **kwargs) -> Any``, keywords included
        # (Module.forward's ``(x)`` is only the base's placeholder)
        return ctx.default_signature
    sym = owner.names["forward"]
    forward = get_proper_type(sym.type) if sym is not None and sym.type is not None else None
    if owner is None or not isinstance(forward, CallableType):  # overloaded/untyped: default
        return ctx.default_signature
    # A generic module (class Holder(Module, Generic[W])): W as the instance binds it.
    forward = expand_type_by_instance(forward, map_instance_to_supertype(t, owner))
    bound = bind_self(forward, t)
    if not isinstance(bound, CallableType):
        return ctx.default_signature
    return bound.copy_modified(name=ctx.default_signature.name)


# ----- the plugin --------------------------------------------------------------------------


def _signature_of(node: object) -> list[CallableType]:
    """The callable types of a function, overloaded function or callable attribute."""
    t: Type | None = None
    if isinstance(node, (FuncDef, OverloadedFuncDef)):
        t = node.type
    elif isinstance(node, Decorator):
        t = node.var.type
    elif isinstance(node, Var):
        t = node.type
    p = get_proper_type(t) if t is not None else None
    if isinstance(p, CallableType):
        return [p]
    if isinstance(p, FunctionLike):
        return list(p.items)
    return []


def _shape_params(node: object) -> frozenset[str]:
    """The parameters typed by a ``tuple[int, ...]``-bound type variable (``shape: SI``)."""
    out: set[str] = set()
    for sig in _signature_of(node):
        for name, t in zip(sig.arg_names, sig.arg_types, strict=True):
            p = get_proper_type(t)
            if name is None or not isinstance(p, TypeVarType):
                continue
            bound = get_proper_type(p.upper_bound)
            if isinstance(bound, Instance) and bound.type.fullname == "builtins.tuple":
                out.add(name)
    return frozenset(out)


def _signature_defaults(node: object) -> dict[str, Expression | None]:
    """Default expressions of a function's parameters by name (none when read from mypy's cache)."""
    funcs: list[FuncDef] = []
    if isinstance(node, FuncDef):
        funcs = [node]
    elif isinstance(node, Decorator):  # an op given its generated table by @typed_as(_sig.<op>)
        table = _typed_as_table(node)
        return {**(_signature_defaults(table) if table is not None else {}), **_signature_defaults(node.func)}
    elif isinstance(node, OverloadedFuncDef):
        items = [node.impl] if node.impl is not None else []
        items += list(node.items)
        funcs = [f.func if isinstance(f, Decorator) else f for f in items if isinstance(f, (Decorator, FuncDef))]
    out: dict[str, Expression | None] = {}
    for f in funcs:
        arguments: list[Argument] = getattr(f, "arguments", None) or []  # unset when read from the cache
        for arg in arguments:
            if arg.initializer is not None and arg.variable.name not in out:
                init = arg.initializer
                is_none = isinstance(init, NameExpr) and init.fullname == "builtins.None"
                out[arg.variable.name] = None if is_none else init
    return out


def _typed_as_table(node: Decorator) -> OverloadedFuncDef | None:
    """The overload table ``_sig.<op>`` of an op decorated ``@typed_as(_sig.<op>)``
    (:func:`gradtape._typing.typed_as`, the tables of ``scripts/gen_shape_overloads.py``)."""
    for dec in node.original_decorators:
        if (
            isinstance(dec, CallExpr)
            and isinstance(dec.callee, RefExpr)
            and dec.callee.fullname == "gradtape._typing.typed_as"
            and len(dec.args) == 1
            and isinstance(dec.args[0], RefExpr)
            and isinstance(dec.args[0].node, OverloadedFuncDef)
        ):
            return dec.args[0].node
    return None


class GradtapePlugin(Plugin):
    """mypy hooks: ``Module.__call__`` as ``forward``, literal shapes, and dim arithmetic."""

    def _lookup(self, fullname: str) -> object:
        sym = self.lookup_fully_qualified(fullname)
        return sym.node if sym is not None else None

    def _method(self, fullname: str) -> tuple[TypeInfo, str, object] | None:
        """``(class, method name, node)`` of a gradtape method (found in the class's MRO)."""
        cls, _, method = fullname.rpartition(".")
        info = self._lookup(cls) if cls else None
        if not isinstance(info, TypeInfo):
            return None
        owner = info.get_containing_type_info(method)
        if owner is None or not owner.fullname.startswith("gradtape."):
            return None
        return info, method, owner.names[method].node

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        """``<Module subclass>.__call__`` as ``forward``; error checks of ``Tensor.reshape``."""
        found = self._method(fullname) if fullname.startswith("gradtape.") or fullname.endswith("__call__") else None
        cls, _, method = fullname.rpartition(".")
        if method in ("__call__", "forward") and cls:
            info = self._lookup(cls)
            if not isinstance(info, TypeInfo) or not any(base.fullname == MODULE for base in info.mro):
                return None
            if any(base.fullname == SEQUENTIAL for base in info.mro) and method == "__call__":
                return _sequential_call
            if any(base.fullname in _LAYER_DIMS for base in info.mro):
                return _checked_layer_call if method == "__call__" else _checked_layer_forward
            return _forward_signature if method == "__call__" else None
        if found is not None and found[0].has_base(TENSOR):
            rule = _rule_for(method)
            if rule is not None:
                return partial(_signature_hook, rule, {})
        return None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        """Literal shapes of creation methods (``dev.zeros``) and ``Tensor`` methods; ``Flatten``."""
        found = self._method(fullname)
        if found is None:
            return None
        info, method, node = found
        if method in ("__call__", "forward") and info.has_base(FLATTEN):
            return _flatten_hook
        if method in ("__call__", "forward") and any(base.fullname in _LAYER_DIMS for base in info.mro):
            return _layer_result
        if method in ("__call__", "forward") and _geometry_kind(Instance(info, [])) is not None:
            return _pool_layer_result
        if info.has_base(TENSOR):
            rule = _rule_for(method)
            if rule is not None:
                return partial(_result_hook, rule, {})
        params = _shape_params(node)
        return partial(_literal_shapes_hook, params) if params else None

    def get_function_signature_hook(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        """Error checks of gradtape's ops; constant int arguments of generic modules (gradtape's
        layers and a user's ``class Block(nn.Module, Generic[W])`` alike)."""
        node = self._lookup(fullname)
        if isinstance(node, TypeInfo):
            if node.has_base(MODULE) and node.type_vars:
                return _layer_signature
            return None
        if not fullname.startswith("gradtape."):
            return None
        rule = (
            _rule_for(fullname.rpartition(".")[2])
            if fullname.startswith("gradtape.ops.") or fullname == SHAPES_REALIZE
            else None
        )
        return partial(_signature_hook, rule, _signature_defaults(node)) if rule is not None else None

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        """Result shapes of gradtape's ops; literal shapes of functions taking a shape."""
        if not fullname.startswith("gradtape."):
            return None
        node = self._lookup(fullname)
        if isinstance(node, TypeInfo):
            if node.fullname == SEQUENTIAL:
                return _sequential_constructed
            if node.fullname in _RECURRENT:
                return _recurrent_constructed
            inner = _layer_constructed if node.has_base(MODULE) and node.type_vars else None
            if any(b.fullname in _GEOMETRY for b in node.mro):
                return partial(_geometry_constructed, inner)
            return inner
        rule = _rule_for(fullname.rpartition(".")[2]) if fullname.startswith("gradtape.ops.") else None
        if rule is not None:
            return partial(_result_hook, rule, _signature_defaults(node))
        params = _shape_params(node)
        return partial(_literal_shapes_hook, params) if params else None


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point: the plugin class (any mypy version gradtape supports)."""
    return GradtapePlugin
