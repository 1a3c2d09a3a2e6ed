"""Function transforms on the one tape (PyTorch's ``torch.autograd.functional``, JAX's ``vjp``/
``jvp``): :func:`vjp`, :func:`jvp`, :func:`hvp`, :func:`jacobian`, :func:`hessian`.

Each takes a function of tensors and the point to differentiate at, traces fresh copies of
the inputs (new ids, the same data; with ``create_graph=True`` a traced input is used as is,
so the result is differentiable with respect to it, as in PyTorch), and builds on
:func:`gradtape.autograd.grad`; the ones that need second derivatives (``jvp``, ``hvp``,
``hessian``) use ``create_graph=True`` and so work through the ops' differentiable backward
(every built-in op has one; a raw closure raises a ``TapeError`` naming its op). Argument
names are PyTorch's: ``func``, ``inputs``, ``v``, ``create_graph``.

``inputs`` is a tensor or a tuple of tensors; results follow PyTorch's conventions: a tensor
for a single input, a tuple for a tuple of inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gradtape.autograd import grad
from gradtape.devices import _arrays
from gradtape.errors import ShapeError
from gradtape.ops.shape import stack
from gradtape.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vjp"]

Func = Callable[..., Any]


def _inputs(op: str, inputs: Any, create_graph: bool = False) -> tuple[list[Tensor[Any, Any]], bool]:
    # With create_graph=True a traced input is used as is, so the result stays differentiable
    # with respect to it (PyTorch's semantics); otherwise a fresh traced copy keeps the
    # caller's tape untouched.
    single = isinstance(inputs, Tensor)
    seq = [inputs] if single else list(inputs) if isinstance(inputs, (tuple, list)) else None
    if seq is None or not all(isinstance(t, Tensor) for t in seq):
        raise TypeError(f"{op}: inputs must be a Tensor or a tuple of Tensors, got {type(inputs).__name__}")
    return [t if create_graph and t.requires_grad else t.detach() for t in seq], single


def _vs(op: str, v: Any, like: list[Tensor[Any, Any]], what: str) -> list[Tensor[Any, Any]]:
    vs = [v] if isinstance(v, Tensor) else list(v) if isinstance(v, (tuple, list)) else None
    if vs is None or len(vs) != len(like) or not all(isinstance(t, Tensor) for t in vs):
        raise TypeError(f"{op}: v must be a Tensor or a tuple of {len(like)} Tensors matching the {what}")
    for k, (a, b) in enumerate(zip(vs, like, strict=True)):
        if a.shape != b.shape:
            raise ShapeError(f"{op}: v[{k}] has shape {a.shape}, {what}[{k}] has shape {b.shape}")
    return vs


def _zeros_for_none(gs: tuple[Tensor[Any, Any] | None, ...], like: list[Tensor[Any, Any]]) -> list[Tensor[Any, Any]]:
    return [
        g if g is not None else x._like(_arrays.zeros(x.shape, x.dtype, x.data)) for g, x in zip(gs, like, strict=True)
    ]


def _out(values: list[Any], single: bool) -> Any:
    return values[0] if single else tuple(values)


def _outputs(op: str, func: Func, xs: list[Tensor[Any, Any]]) -> tuple[list[Tensor[Any, Any]], bool]:
    out = func(*[x if x.requires_grad else x.leaky_trace() for x in xs])
    single = isinstance(out, Tensor)
    outs = [out] if single else list(out) if isinstance(out, (tuple, list)) else None
    if outs is None or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(f"{op}: func must return a Tensor or a tuple of Tensors, got {type(out).__name__}")
    return outs, single


def vjp(func: Func, inputs: Any, v: Any = None, create_graph: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs`` (reverse mode).

    Args:
        func: tensors -> a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the cotangent, of the outputs' shapes; ``None`` only for a scalar output (1).
        create_graph: record the product so it can be differentiated again.

    Returns:
        The outputs (untraced) and the product (one tensor per input, zeros where an input is
        unused).

    Raises:
        TypeError: ``func`` returns no tensor, or ``v`` does not match the outputs.
        ShapeError: a ``v`` has the wrong shape.
    """
    xs, single = _inputs("vjp", inputs, create_graph)
    outs, single_out = _outputs("vjp", func, xs)
    vs = None if v is None else _vs("vjp", v, outs, "outputs")
    gs = grad(outs, xs, grad_outputs=vs, create_graph=create_graph, allow_unused=True)
    values = [o.detach() for o in outs]
    return _out(values, single_out), _out(_zeros_for_none(gs, xs), single)


def jvp(func: Func, inputs: Any, v: Any = None, create_graph: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``.

    gradtape has no forward mode: this is the double-vjp construction (``u -> J^T u`` is linear
    in ``u``, so ``J v = d/du <J^T u, v>``), two reverse passes, the first with
    ``create_graph=True``; it needs the ops' differentiable backward.

    Args:
        func: tensors -> a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the tangent, of the inputs' shapes; ``None`` only for a single one-element input.
        create_graph: record the product so it can be differentiated again.

    Returns:
        The outputs (untraced) and ``J v`` (one tensor per output).

    Raises:
        TypeError, ShapeError: as :func:`vjp`; TapeError: an op has no differentiable backward.
    """
    xs, _ = _inputs("jvp", inputs, create_graph)
    if v is None:
        if len(xs) != 1 or xs[0].size != 1:
            raise TypeError("jvp: v can be omitted only for a single one-element input")
        vs = [xs[0]._like(_arrays.ones(xs[0].shape, xs[0].dtype, xs[0].data))]
    else:
        vs = _vs("jvp", v, xs, "inputs")
    outs, single_out = _outputs("jvp", func, xs)
    us = [o._like(_arrays.zeros(o.shape, o.dtype, o.data)).leaky_trace() for o in outs]  # dummy cotangents
    gs = grad(outs, xs, grad_outputs=us, create_graph=True, allow_unused=True)
    dot = None
    for g, vv in zip(gs, vs, strict=True):
        if g is not None:
            term = (g * vv).sum()
            dot = term if dot is None else dot + term
    if dot is None:
        jv = [o._like(_arrays.zeros(o.shape, o.dtype, o.data)) for o in outs]
    else:
        jv = _zeros_for_none(grad(dot, us, create_graph=create_graph, allow_unused=True), us)
    return _out([o.detach() for o in outs], single_out), _out(jv, single_out)


def hvp(func: Func, inputs: Any, v: Any, create_graph: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)``: the Hessian of a scalar function times ``v`` (the Hessian is
    symmetric, so this is also PyTorch's ``vhp``), by reverse over reverse: ``d/dx <grad f, v>``.

    Args:
        func: tensors -> a scalar tensor.
        inputs: a tensor or a tuple of tensors.
        v: of the inputs' shapes.
        create_graph: record the product so it can be differentiated again.

    Raises:
        TypeError: ``func`` is not scalar-valued, ``v`` does not match.
        ShapeError: a ``v`` has the wrong shape. TapeError: an op has no differentiable backward.
    """
    xs, single = _inputs("hvp", inputs, create_graph)
    vs = _vs("hvp", v, xs, "inputs")
    outs, _ = _outputs("hvp", func, xs)
    if len(outs) != 1 or outs[0].shape != ():
        raise TypeError(f"hvp: func must return a scalar tensor, got shape {outs[0].shape}")
    gs = grad(outs[0], xs, create_graph=True, allow_unused=True)
    dot = None
    for g, vv in zip(gs, vs, strict=True):
        if g is not None:
            term = (g * vv).sum()
            dot = term if dot is None else dot + term
    hv = (
        [x._like(_arrays.zeros(x.shape, x.dtype, x.data)) for x in xs]
        if dot is None
        else _zeros_for_none(grad(dot, xs, create_graph=create_graph, allow_unused=True), xs)
    )
    return outs[0].detach(), _out(hv, single)


def _assemble(
    rows: list[Tensor[Any, Any]], head: tuple[int, ...], x: Tensor[Any, Any], create_graph: bool
) -> Tensor[Any, Any]:
    """Stack per-element gradients (each of ``x.shape``) into a tensor of ``head + x.shape``;
    through the recorded ``stack``/``reshape`` ops when ``create_graph``."""
    out: Tensor[Any, Any]
    if not rows:
        out = x._like(np.zeros(head + x.shape, x.dtype))
    elif create_graph:
        out = stack(rows).reshape(head + x.shape)
    else:
        out = x._like(np.stack([r.numpy() for r in rows]).reshape(head + x.shape))
    return out


def _jacobian_rows(o: Tensor[Any, Any], xs: list[Tensor[Any, Any]], create_graph: bool) -> list[Tensor[Any, Any]]:
    """d o / d x for each ``x`` in ``xs``: tensors of ``o.shape + x.shape``, one reverse pass
    (a unit cotangent) per element of ``o``; recorded when ``create_graph``."""
    per_input: list[list[Tensor[Any, Any]]] = [[] for _ in xs]
    for k in range(o.size):
        e = np.zeros(o.size, o.dtype)
        e[k] = 1.0
        gs = grad(
            o,
            xs,
            grad_outputs=[e.reshape(o.shape)],
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
        )
        for j, g in enumerate(_zeros_for_none(gs, xs)):
            per_input[j].append(g)
    return [_assemble(p, o.shape, x, create_graph) for x, p in zip(xs, per_input, strict=True)]


def jacobian(func: Func, inputs: Any, create_graph: bool = False) -> Any:
    """The Jacobian of ``func`` at ``inputs``: for one input and one output, a tensor of shape
    ``output.shape + input.shape``; tuples of them for tuples (``J[i][j]`` is output ``i`` by
    input ``j``, as PyTorch's). One reverse pass per output element.

    Args:
        func: tensors -> a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        create_graph: record the Jacobian (through the ops' differentiable backward, then
            ``stack``) so it can be differentiated again with respect to the traced inputs.

    Raises:
        TypeError: ``func`` returns no tensor. TapeError: with ``create_graph``, an op has no
        differentiable backward.
    """
    xs, single = _inputs("jacobian", inputs, create_graph)
    outs, single_out = _outputs("jacobian", func, xs)
    rows = [_jacobian_rows(o, xs, create_graph) for o in outs]
    if single_out:
        return rows[0][0] if single else tuple(rows[0])
    return tuple(r[0] if single else tuple(r) for r in rows)


def hessian(func: Func, inputs: Any, create_graph: bool = False) -> Any:
    """The Hessian of a scalar function at ``inputs``: for one input of shape ``s``, a tensor of
    shape ``s + s``; ``H[i][j]`` tuples for several inputs. The gradient is computed once with
    ``create_graph=True``, then one reverse pass per input element.

    Args:
        func: tensors -> a scalar tensor.
        inputs: a tensor or a tuple of tensors.
        create_graph: record the Hessian (third-order rules are the second rules' own second
            rules) so it can be differentiated again with respect to the traced inputs.

    Raises:
        TypeError: ``func`` is not scalar-valued. TapeError: an op has no differentiable backward.
    """
    xs, single = _inputs("hessian", inputs, create_graph)
    outs, _ = _outputs("hessian", func, xs)
    if len(outs) != 1 or outs[0].shape != ():
        raise TypeError(f"hessian: func must return a scalar tensor, got shape {outs[0].shape}")
    gs = _zeros_for_none(grad(outs[0], xs, create_graph=True, allow_unused=True), xs)
    # The Hessian is the Jacobian of the gradient; a constant gradient (it does not depend on
    # the inputs) gives a zero row of blocks.
    blocks = [
        _jacobian_rows(gi, xs, create_graph)
        if gi.requires_grad
        else [x._like(np.zeros(gi.shape + x.shape, x.dtype)) for x in xs]
        for gi in gs
    ]
    return blocks[0][0] if single else tuple(tuple(b) for b in blocks)
