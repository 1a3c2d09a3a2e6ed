"""One declaration per elementwise op: its math written once.

An elementwise op states three things (after dfdx's ``UnaryDerivative`` with ``f``, ``df`` and
``DF_USES_FX``, JAX's ``defjvp`` and PyTorch's ``derivatives.yaml``)::

    @elementwise(uses="y", derivative=lambda xp, y: 1.0 - y * y, kernel=_ka.tanh_backward)
    def tanh(x: Array) -> Array:
        '''Hyperbolic tangent elementwise ...'''
        return np.tanh(x)

- the **forward** on a numpy array (the decorated function; its docstring is the op's),
  with any scalar parameters after ``x`` (``leaky_relu(x, negative_slope=0.01)``);
- the **derivative** ``f'`` once, as a function ``derivative(xp, s, *params)`` written against an
  array namespace ``xp``: on numpy arrays (:data:`NUMPY`) it is the first-order rule
  (``grad_x += f'(s) * g``), on gradtape tensors (:func:`tensors`) it is the differentiable
  second rule (``g * f'(s)`` recorded, so gradients of gradients flow through it to any order),
  the trick of HIPS autograd's ``numpy_vjps`` and JAX's ``defjvp2``;
- what backward keeps, ``uses``: the input ``x`` or the output ``y`` (``s`` above).

Optional, for speed only: ``kernel(out, s, g, *params)`` adds ``f'(s) * g`` into ``out`` in one
fused pass (a numba kernel of :mod:`gradtape.devices.kernels.activations`; tested against the
derivative by the registry test), ``fresh(s, g, *params)`` the same as a new array, and
``aux=True`` when the forward returns ``(y, aux)``: an intermediate (``sigmoid(x)`` for silu) that
only the kernel reads, after the parameters (``kernel(out, s, g, *params, aux)``).

The decorator returns the public op ``op(a: Tensor[S, T], *params) -> Tensor[S, T]`` (shape
and dtype preserved; float32 stays float32): it checks that ``a`` is a float tensor
(:class:`~gradtape.errors.DTypeError` naming the op otherwise), converts each parameter to a
Python float (``TypeError`` naming the op and the parameter for anything but a real number),
runs the forward and records one entry on the tape the recording rule gives
(:func:`~gradtape.ops._util.record_entry`). Ops built from other ops (``softplus`` from
``log1p``/``exp``, say) need no declaration: they are differentiable by construction.

:data:`ELEMENTWISE` holds every declaration by name; tests/test_op_registry.py walks it
(gradcheck in float64, PyTorch's values, gradients and Hessians, the kernel against the
formula, float32, bad input), and README's list of ops with second rules comes from it.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import S, T
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels import elementwise as _k
from gradtape.errors import TapeError
from gradtape.ops._util import (
    _F32,
    _F64,
    SCALARS,
    float_data,
    op_name_of,
    promote,
    refill,
    replayable,
    sum_to,
    tensor_operand,
)
from gradtape.ops.compare import where as _where
from gradtape.shapes import broadcast_shapes, sum_to_shape
from gradtape.tape import NONE_TAPE, GradientTape, next_id, op_tape, register_diff

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

_nd = np.ndarray

__all__ = [
    "BINARY",
    "ELEMENTWISE",
    "NUMPY",
    "OPS",
    "Binary",
    "binary",
    "Elementwise",
    "elementwise",
    "number",
    "tensors",
]

Array = np.ndarray[Any, Any]
P = ParamSpec("P")


@dataclass(frozen=True, eq=False)
class Elementwise:
    """The declaration of one elementwise op (see the module docstring).

    Attributes:
        name: the registry name (``"tanh"``); private building blocks of a public op start with
            ``_`` (``_gelu``, ``_gelu_tanh`` of ``gelu``) and give that op's name as ``public``.
        forward: ``forward(x, *params) -> y`` (or ``(y, aux)`` with ``aux``) on numpy arrays.
        derivative: ``derivative(xp, s, *params) -> f'(x)``, ``s`` the input or the output.
        uses: ``"x"`` or ``"y"``: which array backward keeps (dfdx's ``DF_USES_FX``).
        params: the names of the scalar parameters after ``x``.
        defaults: their defaults (``inspect.Parameter.empty`` where none).
        kernel: optional fused ``kernel(out, s, g, *params[, aux])``: ``out += f'(s) * g``.
        fresh: optional ``fresh(s, g, *params[, aux]) -> f'(s) * g`` as a new array.
        aux: whether the forward returns ``(y, aux)``.
        integer: optional ``integer(x, *params) -> y`` on an integer or bool array: the op's
            exact result on integer tensors (``abs``, ``square``: PyTorch keeps their dtype),
            returned untraced (integers carry no gradient); it raises ``DTypeError`` for a
            dtype PyTorch refuses too. ``None``: integer and bool tensors are refused.
        into: optional ``into(out, x, *params)``: the forward written into ``out`` (an array of
            ``x``'s shape and dtype), which a replay of :func:`gradtape.capture` calls instead
            of the forward and a copy. It must give the forward's values bit for bit (the
            registry test checks it).
    """

    name: str
    forward: Callable[..., Any]
    derivative: Callable[..., Any]
    uses: Literal["x", "y"]
    params: tuple[str, ...]
    defaults: tuple[Any, ...]
    kernel: Callable[..., None] | None = None
    fresh: Callable[..., Array] | None = None
    aux: bool = False
    public: str = ""
    """The public op's name in messages (``"gelu"`` for ``_gelu``); default ``name``."""
    integer: Callable[..., Array] | None = None
    into: Callable[..., object] | None = None


ELEMENTWISE: dict[str, Elementwise] = {}
"""Every declared elementwise op by name, in declaration order."""
OPS: dict[str, Callable[..., Any]] = {}
"""The public function of each declaration, by name."""


def number(op: str, name: str, v: object) -> float:
    """``v`` as a Python float: numpy treats those as "weak" scalars (NEP 50), so a float32
    tensor stays float32 where a ``np.float64`` argument would promote it.

    Raises:
        TypeError: ``v`` is not a real number (a tensor, an array, a string, a complex, None).
    """
    if v.__class__ is float:
        return v
    if isinstance(v, SCALARS):  # complex numbers are not among them
        return float(v)
    raise TypeError(f"{op}: {name} must be a real number (int or float), got {type(v).__name__}")


def elementwise(
    *,
    derivative: Callable[..., Any],
    uses: Literal["x", "y"],
    kernel: Callable[..., None] | None = None,
    fresh: Callable[..., Array] | None = None,
    aux: bool = False,
    name: str | None = None,
    public: str | None = None,
    integer: Callable[..., Array] | None = None,
    into: Callable[..., object] | None = None,
) -> Callable[[Callable[Concatenate[Array, P], Any]], Callable[Concatenate[Tensor[S, T], P], Tensor[S, T]]]:
    """Declare an elementwise op from its numpy forward (the decorated function) and its
    derivative; see the module docstring. Returns the public op, registered in :data:`ELEMENTWISE`.

    ``name`` overrides the registry name (default: the forward's ``__name__``); ``public`` is the
    name messages give (default: ``name``); ``integer`` the forward on integer and bool arrays,
    for an op PyTorch also runs on them; ``into`` the forward into a given array, for replays
    (see :class:`Elementwise`).

    Raises:
        ValueError: ``uses`` is neither ``"x"`` nor ``"y"``, the name is taken, or ``aux`` is
            set without a ``kernel``.
    """
    if uses not in ("x", "y"):
        raise ValueError(f"elementwise: uses must be 'x' or 'y', got {uses!r}")
    if aux and kernel is None:
        raise ValueError("elementwise: aux=True needs a kernel (only a kernel reads aux)")

    def declare(forward: Callable[Concatenate[Array, P], Any]) -> Callable[Concatenate[Tensor[S, T], P], Tensor[S, T]]:
        op_name = name or forward.__name__
        if op_name in ELEMENTWISE:
            raise ValueError(f"elementwise: an op named {op_name!r} is already declared")
        sig = list(inspect.signature(forward).parameters.values())[1:]
        decl = Elementwise(
            op_name,
            forward,
            derivative,
            uses,
            tuple(p.name for p in sig),
            tuple(p.default for p in sig),
            kernel,
            fresh,
            aux,
            public or op_name,
            integer,
            into,
        )
        ELEMENTWISE[op_name] = decl
        fn = OPS[op_name] = _make_op(decl, forward)
        return fn

    return declare


def _make_op(decl: Elementwise, forward: Callable[..., Any]) -> Callable[..., Any]:
    """The public function of ``decl``, generated once so that it costs what a hand-written op
    costs: no argument binding at call time, one entry recorded (see ``tape._Entry``)."""
    name, label = decl.name, decl.public
    ns: dict[str, Any] = {
        "__name__": forward.__module__,  # the op's frames belong to its module (anomaly mode names ops so)
        "_forward": forward,
        "_decl": decl,
        "_derivative": decl.derivative,
        "_kernel": decl.kernel,
        "_fresh": decl.fresh,
        "_NUMPY": NUMPY,
        "_other": _accum_other,
        "_not_float": float_data,
        "_number": number,
        "_F32": _F32,
        "_F64": _F64,
        "_NONE": NONE_TAPE,
        "_GT": GradientTape,
        "_tp": _tp,
        "_op_tape": op_tape,
        "_new": object.__new__,
        "_nd": np.ndarray,
        "_asarray": _as_array,
        "_on_gpu": _on_gpu,
        "_next_id": next_id,
        "_integer": _integer_op,
        "_replayable": replayable,
        "_refill": _refill_into if decl.into is not None else _refill_aux if decl.aux else _refill,
        "_into": decl.into,
    }
    params = []
    for k, (p, d) in enumerate(zip(decl.params, decl.defaults, strict=True)):
        if d is inspect.Parameter.empty:
            params.append(p)
        else:
            ns[f"_d{k}"] = d
            params.append(f"{p}=_d{k}")
    conv = "".join(f"_number({label!r}, {p!r}, {p}), " for p in decl.params)
    head = ", ".join(["a", *params])
    call = "_forward(x, *params)" if decl.params else "_forward(x)"
    lines = [
        f"def {name}({head}):",
        "    x = a.data",
        "    dt = x.dtype",
        "    if dt is not _F32 and dt is not _F64 and dt.kind != 'f':",
        f"        return _integer(_decl, a{''.join(', ' + p for p in decl.params)})"
        if decl.integer is not None
        else f"        _not_float({label!r}, a)",
        f"    params = ({conv})",
    ]
    if decl.aux:
        lines += [f"    y, aux = {call}", "    kargs = params + (aux,)"]
    else:
        lines += [f"    y = {call}", "    kargs = params"]
    # ops/_util.record_entry written out (its dtype check is the one above): one call less per op
    lines += [
        "    tape = a.tape",
        "    if tape is not _NONE and (tape.__class__ is not _GT or not _tp.direct):",
        "        tape = _op_tape(a)",
        "    out = _new(a.__class__)",
        "    out.data = y if y.__class__ is _nd else _asarray(y)",
        "    out.device = a.device",
        "    out.tape = tape",
        "    out.id = oid = _next_id()",
        "    out._leaf = False",
        "    if tape is not _NONE:",
        f"        tape._record((oid, _backward, a.id, _decl, {decl.uses}, params, kargs))",
        "    if _tp._recorder is not None:",
        # an aux array (silu's sigmoid), which the backward reads, is refreshed with the output
        f"        _replayable({label!r}, out.data, _refill, (_forward, x, params, aux), (a,), tape, True, (aux,))"
        if decl.aux
        else f"        _replayable({label!r}, out.data, _refill, (_into or _forward, x, params), (a,), tape, True)",
        "    return out",
    ]
    lines += _rule_lines(decl)
    exec(compile("\n".join(lines), f"<declared op {name}>", "exec"), ns)
    fn: Callable[..., Any] = ns[name]
    rule = ns["_backward"]
    if decl.kernel is not None and (decl.fresh is None or decl.fresh in _trace.TRACEABLE):
        _trace.traceable(rule)  # its kernels note themselves (a shared gradient sums in numpy: refused)
    rule.__module__ = forward.__module__
    rule.__qualname__ = f"{label}.<locals>.backward"  # TapeError messages name the op (engine._entry_op)
    register_diff(rule, _backward_diff)
    fn.__doc__ = (forward.__doc__ or "").rstrip() + _contract(decl)
    fn.__module__ = forward.__module__
    fn.__qualname__ = forward.__qualname__
    notes = {"a": "Tensor[S, T]"}
    notes.update({p: "float" for p in decl.params})
    notes["return"] = "Tensor[S, T]"
    fn.__annotations__ = notes
    return fn


def _refill(out: Array, forward: Callable[..., Any], x: Array, params: tuple[Any, ...]) -> None:
    """A declared op's forward into ``out`` (a replay of :func:`gradtape.capture`): ``forward(x,
    *params)``, the parameters of an elementwise op or a two-input op's second array."""
    np.copyto(out, forward(x, *params))


def _refill_into(out: Array, into: Callable[..., object], x: Array, params: tuple[Any, ...]) -> None:
    """A declared op's ``into`` form (:class:`Elementwise`), for a replay."""
    into(out, x, *params)


_trace.traceable(
    _refill_into, lambda args, _: None if args[1] in _trace.TRACEABLE else f"{op_name_of(args[1])} replays in numpy"
)


def _refill_aux(out: Array, forward: Callable[..., Any], x: Array, params: tuple[Any, ...], aux: Array) -> None:
    """:func:`_refill` of a forward that returns ``(y, aux)``: both refreshed (the backward
    reads ``aux``)."""
    y, a = forward(x, *params)
    np.copyto(out, y)
    np.copyto(aux, a)


def _integer_op(decl: Elementwise, a: Tensor[Any, Any], *params: Any) -> Any:
    """A declared op on an integer or bool tensor ``a``: ``decl.integer``'s exact result,
    untraced (integers carry no gradient).

    Raises:
        DTypeError: ``a`` is neither integer nor bool (complex), or ``decl.integer`` refuses
            its dtype.
    """
    if a.data.dtype.kind not in "iub":
        float_data(decl.public, a)
    assert decl.integer is not None
    out = a._from_op(_as_array(decl.integer(a.data, *params)), NONE_TAPE)
    if _tp._recorder is not None:
        replayable(decl.public, out.data, refill, (decl.integer, a.data, *params), (a,), NONE_TAPE)
    return out


def _contract(decl: Elementwise) -> str:
    """What every declared op promises, appended to its docstring from the declaration."""
    params = ""
    if decl.params:
        names = ", ".join(f"``{p}``" for p in decl.params)
        params = f"; {names} not a real number raises ``TypeError`` naming the op"
    ints = (
        "An integer ``a`` gives the exact result untraced, as PyTorch's"
        if decl.integer is not None
        else "An integer or bool ``a`` raises ``DTypeError`` naming the op"
    )
    text = (
        "Shape and dtype: ``Tensor[S, T] -> Tensor[S, T]``, ``a``'s shape and dtype, float32 or "
        f"float64 (float32 stays float32). {ints}{params}."
    )
    return "\n\n" + textwrap.fill(text, 96, initial_indent="    ", subsequent_indent="    ") + "\n"


# ----- the first rule: grad_x += f'(s) * g on arrays ---------------------------------------


def _rule_lines(decl: Elementwise) -> list[str]:
    """The source of ``decl``'s first-order rule, ``_backward(grads, g, entry)`` on the entry
    ``(out.id, _backward, a.id, decl, s, params, kargs)``: the fused kernel when declared
    (``grad += f'(s) * g`` in one pass), else ``grad += derivative(numpy, s, *params) * g``.
    Generated with the op, as its forward, so that it costs what a hand-written rule costs: the
    derivative called with its parameters spelt out, the common case tested first (measured
    0.5 us per op on the 64-float tape chain against one shared rule)."""
    if decl.kernel is not None:
        args = "".join(f", entry[5][{k}]" for k in range(len(decl.params)))
        return [
            "def _backward(grads, g, entry):",
            "    if g.__class__ is not _nd and _on_gpu(g):  # the Cuda device: the derivative's formula on CuPy arrays",
            f"        _other(grads, g, entry[2], entry[4], _derivative(_NUMPY, entry[4]{args}))",
            "        return",
            "    grads._fused_args(entry[2], _kernel, _fresh, entry[4], g, entry[6])",
        ]
    args = "".join(f", entry[5][{k}]" for k in range(len(decl.params)))
    return [
        "def _backward(grads, g, entry):",
        "    s = entry[4]",
        f"    d = _derivative(_NUMPY, s{args})",
        "    if d.__class__ is _nd and d.base is None and d is not s and d.dtype is g.dtype:",
        "        grads._addmul_scratch(entry[2], d, g)  # a fresh array of g's dtype: the product may overwrite it",
        "    else:",
        "        _other(grads, g, entry[2], s, d)",
    ]


def _accum_other(grads: Gradients, g: Array, i: int, s: Array, d: Any) -> None:
    """``grad[i] += d * g`` for the derivatives the generated rule's fast test does not take
    (and every derivative on the Cuda device, whose arrays are CuPy's)."""
    if d is s:  # f' = y (exp): one fused pass, s kept intact
        grads._fused(i, _k.addmul, np.multiply, s, g)
    elif d.__class__ is _nd and d.base is None and d.dtype == g.dtype:  # an equal, not shared, descriptor
        grads._addmul_scratch(i, d, g)
    else:  # a number, a numpy scalar of a 0-d input, a view, another dtype, a GPU array
        grads._accum(i, np.multiply(g, d, dtype=g.dtype))


# ----- the second rule: g * f'(s) in gradtape ops --------------------------------------------


def _backward_diff(g: Any, entry: tuple[Any, ...], rebuild: Callable[[int, Array], Any]) -> list[tuple[int, Any]]:
    """The differentiable rule of every declared op: ``g * f'(s)`` with ``s`` rebuilt as the
    tensor it stands for (the input, or the output, so gradients flow on through the op)."""
    oid, _, i, decl, s, params, _ = entry
    st = rebuild(i if decl.uses == "x" else oid, s)
    d = decl.derivative(tensors(g.dtype), st, *params)
    return [(i, g * _as_tensor(d, g, decl.public))]


def _as_tensor(d: Any, g: Any, op: str) -> Any:
    """A derivative from the tensor namespace as a factor of ``g``: a number as a float, a
    constant tensor (a mask, a ``where`` of numbers) cast to ``g``'s dtype.

    Raises:
        TapeError: a recorded tensor of another dtype (the formula lost the input's dtype).
    """
    if isinstance(d, SCALARS):
        return float(d)
    if d.dtype != g.dtype:
        if d.tape is not NONE_TAPE:
            raise TapeError(
                f"{op}: its derivative gave a recorded {d.dtype} tensor for a {g.dtype} gradient; "
                "write the derivative so that it keeps the input's dtype"
            )
        return g._like(d.data.astype(g.dtype))
    return d


# ----- two-input elementwise ops ---------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Binary:
    """The declaration of one broadcasting two-input elementwise op.

    Attributes:
        name: the registry name; ``public``: the op's name in messages.
        forward: ``forward(a, b) -> y`` on numpy arrays (numpy broadcasting).
        vjp: ``vjp(xp, g, a, b, y) -> (g * dy/da, g * dy/db)`` in the array namespace ``xp``,
            of the broadcast shape (HIPS autograd's ``defvjp``): the first rule on numpy arrays,
            the second rule on tensors, as :func:`elementwise`'s derivative. Written with ``g``
            so that a rule can divide (``g / b``, PyTorch's rounding) and pass ``g`` itself.
    """

    name: str
    forward: Callable[[Array, Array], Array]
    vjp: Callable[..., tuple[Any, Any]]
    public: str


BINARY: dict[str, Binary] = {}
"""Every declared two-input op by name."""
BINARY_OPS: dict[str, Callable[..., Any]] = {}
"""The tensor-tensor function of each two-input declaration, by name."""


def binary(
    *, vjp: Callable[..., tuple[Any, Any]], name: str | None = None, public: str | None = None
) -> Callable[[Callable[[Array, Array], Array]], Callable[[Tensor[Any, Any], Tensor[Any, Any]], Tensor[Any, Any]]]:
    """Declare a broadcasting two-input op from its numpy forward (the decorated function) and
    its vector-Jacobian products ``vjp(xp, g, a, b, y)`` written once against an array namespace
    (see the module docstring). Returns the tensor-tensor op ``op(a, b)``: ``b`` must be a tensor
    of ``a``'s dtype whose shape broadcasts with ``a``'s; each input's gradient is summed back
    over the dims broadcasting added (HIPS autograd's ``unbroadcast``). The public op (with its
    typed signature, number operands and fast paths) calls it.

    Raises (the returned op):
        ShapeError: the shapes do not broadcast (names both). DTypeError: the dtypes differ.
        TypeError: ``b`` is not a tensor.
    """

    def declare(forward: Callable[[Array, Array], Array]) -> Callable[..., Any]:
        op_name = name or forward.__name__
        if op_name in BINARY:
            raise ValueError(f"binary: an op named {op_name!r} is already declared")
        decl = BINARY[op_name] = Binary(op_name, forward, vjp, public or op_name)
        label = decl.public

        def op(a: Any, b: Any) -> Any:
            if b.__class__ is a.__class__ and b.data.dtype is not a.data.dtype:
                a, b = promote(label, a, b)  # an integer tensor meets another dtype: PyTorch's promotion
            bt = tensor_operand(label, a, b)
            ad, bd = a.data, bt.data
            if ad.shape != bd.shape:
                broadcast_shapes(label, ad.shape, bd.shape)
            tape = op_tape(a, bt)
            y = forward(ad, bd)
            out = a._from_op(y, tape)
            if tape is not NONE_TAPE:
                tape._record((out.id, _binary_backward, decl, ad, bd, out.data, a.id, bt.id))
            if _tp._recorder is not None:
                replayable(label, out.data, _refill, (forward, ad, (bd,)), (a, bt), tape, True)
            return out

        op.__name__ = op.__qualname__ = op_name
        op.__doc__ = forward.__doc__
        op.__module__ = forward.__module__
        BINARY_OPS[op_name] = op
        return op

    return declare


def _binary_backward(grads: Gradients, g: Array, entry: tuple[Any, ...]) -> None:
    """The first rule of every declared two-input op: each input's vector-Jacobian product,
    summed back to its shape (``g`` itself is passed copy-on-write). Evaluated with numpy's
    divide/invalid warnings off: the conventions at the edges (``0 ** b``, ``log`` of 0) are the
    formula's ``where``s."""
    oid, _, decl, ad, bd, y, aid, bid = entry
    with np.errstate(divide="ignore", invalid="ignore"):
        ga, gb = decl.vjp(NUMPY, g, ad, bd, y)
    for i, gi, shape in ((aid, ga, ad.shape), (bid, gb, bd.shape)):
        if gi is g:
            if g.shape == shape:
                grads._accum_alias(i, g, oid)
            else:
                grads._accum(i, sum_to_shape(g, shape))
        else:
            gi = _as_array(gi, dtype=g.dtype)  # a where of numbers is float64: back to g's dtype
            grads._accum(i, sum_to_shape(gi, shape))


def _binary_diff(g: Any, entry: tuple[Any, ...], rebuild: Callable[[int, Array], Any]) -> list[tuple[int, Any]]:
    """The differentiable rule of every declared two-input op: its ``vjp`` in gradtape ops."""
    oid, _, decl, ad, bd, y, aid, bid = entry
    ga, gb = decl.vjp(tensors(g.dtype), g, rebuild(aid, ad), rebuild(bid, bd), rebuild(oid, y))
    return [(aid, sum_to(ga, ad.shape)), (bid, sum_to(gb, bd.shape))]


register_diff(_binary_backward, _binary_diff)


# ----- the namespaces a derivative is written against ----------------------------------------


class _Numpy:
    """The array namespace on numpy arrays (the first rule). Constants a ``where`` selects
    keep the arrays' dtype: ``where`` returns the dtype of its array operands, or float64 for two
    numbers (the rule casts that to the gradient's dtype)."""

    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    abs = staticmethod(np.abs)
    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    tanh = staticmethod(np.tanh)
    sinh = staticmethod(np.sinh)
    cosh = staticmethod(np.cosh)
    sqrt = staticmethod(np.sqrt)
    sign = staticmethod(np.sign)
    floor = staticmethod(np.floor)
    trunc = staticmethod(np.trunc)
    isnan = staticmethod(np.isnan)
    isfinite = staticmethod(np.isfinite)
    logical_and = staticmethod(np.logical_and)
    where = staticmethod(np.where)
    minimum = staticmethod(np.minimum)
    pow = staticmethod(np.power)

    @staticmethod
    def sigmoid(x: Array) -> Array:
        """``1 / (1 + exp(-x))``, without overflow."""
        return ELEMENTWISE["sigmoid"].forward(x)  # type: ignore[no-any-return]

    @staticmethod
    def softplus(x: Array) -> Array:
        """``log(1 + exp(x))`` as gradtape's ``softplus`` with its defaults."""
        decl = ELEMENTWISE["softplus"]
        return _as_array(decl.forward(x, *decl.defaults)[0])

    @staticmethod
    def erfc(x: Array) -> Array:
        """The complementary error function."""
        return ELEMENTWISE["erfc"].forward(x)  # type: ignore[no-any-return]


NUMPY: Any = _Numpy()
"""The namespace a derivative sees in the first-order rule."""


class _Tensors:
    """The array namespace on gradtape tensors (the second rule): every function is a recorded
    gradtape op, except the piecewise-constant ones (``sign``, ``floor``, ``trunc``, ``isnan``, ``isfinite``,
    ``logical_and``, comparisons, a ``where`` of two numbers), which give constant tensors: their derivative is 0."""

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype = dtype

    def __getattr__(self, name: str) -> Any:
        fn = OPS.get(name)
        if fn is None:
            raise AttributeError(f"the derivative namespace has no function {name!r}")
        return fn

    def sign(self, x: Any) -> Any:
        return x._like(np.sign(x.data))

    def isnan(self, x: Any) -> Any:
        return x._like(np.isnan(x.data))

    def isfinite(self, x: Any) -> Any:
        return x._like(np.isfinite(x.data))

    def floor(self, x: Any) -> Any:
        return x._like(np.floor(x.data))

    def trunc(self, x: Any) -> Any:
        return x._like(np.trunc(x.data))

    def logical_and(self, a: Any, b: Any) -> Any:
        return a._like(np.logical_and(a.data, b.data))

    def where(self, c: Any, a: Any, b: Any) -> Any:
        if isinstance(a, SCALARS) and isinstance(b, SCALARS):
            return c._like(np.where(c.data, a, b).astype(self.dtype))
        return _where(c, a, b)

    def minimum(self, a: Any, b: Any) -> Any:
        return a.minimum(b)

    def pow(self, a: Any, b: Any) -> Any:
        if hasattr(b, "tape"):  # a tensor exponent: the declared two-input pow
            return BINARY_OPS["pow"](a, b)
        return a**b


_TENSORS: dict[np.dtype[Any], _Tensors] = {}


def tensors(dtype: np.dtype[Any]) -> Any:
    """The namespace a derivative sees in the second rule, for gradients of ``dtype``."""
    ns = _TENSORS.get(dtype)
    if ns is None:
        ns = _TENSORS[dtype] = _Tensors(dtype)
    return ns
