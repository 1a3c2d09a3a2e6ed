"""Function transforms on the one tape (PyTorch's ``torch.autograd.functional``, also at its
path ``gradtape.autograd.functional``; JAX's ``vjp``/``jvp``): :func:`vjp`, :func:`jvp`,
:func:`hvp`, :func:`vhp`, :func:`jacobian`, :func:`hessian`, with PyTorch's arguments
(``strict`` checks as PyTorch's; ``vectorize`` and the strategies are accepted and give the
same values, computed by reverse passes).

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

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

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


def _tangents(op: str, v: Any, xs: list[Tensor[Any, Any]], missing: Exception) -> list[Tensor[Any, Any]]:
    """``v`` as one tensor per input (checked by :func:`_vs`); ``None`` means 1 for a single
    one-element input (PyTorch's rule for jvp, hvp and vhp), and raises ``missing`` otherwise."""
    if v is not None:
        return _vs(op, v, xs, "inputs")
    if len(xs) != 1 or xs[0].size != 1:
        raise missing
    return [xs[0]._like(_arrays.ones(xs[0].shape, xs[0].dtype, xs[0].data))]


def _dot(gs: tuple[Tensor[Any, Any] | None, ...], vs: list[Tensor[Any, Any]]) -> Tensor[Any, Any] | None:
    """``sum_i <g_i, v_i>`` over the gradients that exist (recorded: the double-vjp and
    reverse-over-reverse constructions differentiate it), ``None`` when none does."""
    dot: Tensor[Any, Any] | None = None
    for g, vv in zip(gs, vs, strict=True):
        if g is not None:
            term = (g * vv).sum()
            dot = term if dot is None else dot + term
    return dot


def _zeros_for_none(gs: tuple[Tensor[Any, Any] | None, ...], like: list[Tensor[Any, Any]]) -> list[Tensor[Any, Any]]:
    return [
        g if g is not None else x._like(_arrays.zeros(x.shape, x.dtype, x.data)) for g, x in zip(gs, like, strict=True)
    ]


def _strict(
    op: str, gs: tuple[Tensor[Any, Any] | None, ...], what: str = "The output of the user-provided function"
) -> None:
    """PyTorch's ``strict=True`` check: a gradient that is absent (``None``: the output does
    not depend on that input at all) raises RuntimeError naming the input."""
    for i, g in enumerate(gs):
        if g is None:
            raise RuntimeError(f"{op}: {what} is independent of input {i}. This is not allowed in strict mode.")


def _scalar(op: str, outs: list[Tensor[Any, Any]]) -> Tensor[Any, Any]:
    """The one single-element output of a function given to hvp/vhp/hessian (PyTorch's rule),
    viewed as a scalar."""
    if len(outs) != 1:
        raise RuntimeError(f"{op}: The function given to {op} should return a single Tensor")
    if outs[0].size != 1:
        raise RuntimeError(
            f"{op}: The Tensor returned by the function given to {op} should contain a single element "
            f"(got shape {outs[0].shape})"
        )
    return outs[0] if outs[0].shape == () else outs[0].reshape(())


def _out(values: list[Any], single: bool) -> Any:
    return values[0] if single else tuple(values)


def _outputs(op: str, func: Func, xs: list[Tensor[Any, Any]]) -> tuple[list[Tensor[Any, Any]], bool]:
    out = func(*[x if x.requires_grad else x.leaky_trace() for x in xs])
    single = isinstance(out, Tensor)
    outs = [out] if single else list(out) if isinstance(out, (tuple, list)) else None
    if outs is None or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(f"{op}: func must return a Tensor or a tuple of Tensors, got {type(out).__name__}")
    return outs, single


def vjp(func: Func, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs`` (reverse mode).

    Args:
        func: tensors -> a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the cotangent, of the outputs' shapes; ``None`` only for a scalar output (1).
        create_graph: record the product so it can be differentiated again.
        strict: raise where the outputs do not depend on an input (PyTorch's check) instead of
            giving zeros.

    Returns:
        The outputs (untraced) and the product (one tensor per input, zeros where an input is
        unused).

    Raises:
        TypeError: ``func`` returns no tensor, or ``v`` does not match the outputs.
        ShapeError: a ``v`` has the wrong shape.
        RuntimeError: ``strict`` and an input the outputs do not depend on.
    """
    xs, single = _inputs("vjp", inputs, create_graph)
    outs, single_out = _outputs("vjp", func, xs)
    vs = None if v is None else _vs("vjp", v, outs, "outputs")
    gs = grad(outs, xs, grad_outputs=vs, create_graph=create_graph, allow_unused=True)
    if strict:
        _strict("vjp", gs)
    values = [o.detach() for o in outs]
    return _out(values, single_out), _out(_zeros_for_none(gs, xs), single)


def jvp(func: Func, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``.

    gradtape has no forward mode: this is the double-vjp construction (``u -> J^T u`` is linear
    in ``u``, so ``J v = d/du <J^T u, v>``), two reverse passes, the first with
    ``create_graph=True``; it needs the ops' differentiable backward.

    Args:
        func: tensors -> a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the tangent, of the inputs' shapes; ``None`` only for a single one-element input.
        create_graph: record the product so it can be differentiated again.
        strict: raise where the outputs do not depend on an input (PyTorch's check).

    Returns:
        The outputs (untraced) and ``J v`` (one tensor per output).

    Raises:
        TypeError, ShapeError: as :func:`vjp`; TapeError: an op has no differentiable backward.
        RuntimeError: ``strict`` and an input the outputs do not depend on.
    """
    xs, _ = _inputs("jvp", inputs, create_graph)
    vs = _tangents("jvp", v, xs, TypeError("jvp: v can be omitted only for a single one-element input"))
    outs, single_out = _outputs("jvp", func, xs)
    us = [o._like(_arrays.zeros(o.shape, o.dtype, o.data)).leaky_trace() for o in outs]  # dummy cotangents
    gs = grad(outs, xs, grad_outputs=us, create_graph=True, allow_unused=True)
    if strict:
        _strict("jvp", gs)
    dot = _dot(gs, vs)
    if dot is None:
        jv = [o._like(_arrays.zeros(o.shape, o.dtype, o.data)) for o in outs]
    else:
        jv = _zeros_for_none(grad(dot, us, create_graph=create_graph, allow_unused=True), us)
    return _out([o.detach() for o in outs], single_out), _out(jv, single_out)


def _second_product(op: str, func: Func, inputs: Any, v: Any, create_graph: bool, strict: bool) -> tuple[Any, Any]:
    """``(f(inputs), H v)`` of a single-element ``f``, by reverse over reverse ``d/dx <grad f, v>``
    (:func:`hvp` and :func:`vhp`: the Hessian is symmetric)."""
    xs, single = _inputs(op, inputs, create_graph)
    missing = RuntimeError(
        f"{op}: The vector v can only be None if the input to the user-provided function is a single "
        "Tensor with a single element."
    )
    vs = _tangents(op, v, xs, missing)
    outs, _ = _outputs(op, func, xs)
    f = _scalar(op, outs)
    gs = grad(f, xs, create_graph=True, allow_unused=True)
    if strict:
        _strict(op, gs)
    dot = _dot(gs, vs)
    if dot is None:
        if strict:
            raise RuntimeError(
                f"{op}: The jacobian of the user-provided function is independent of the input. "
                "This is not allowed in strict mode."
            )
        hv = [x._like(_arrays.zeros(x.shape, x.dtype, x.data)) for x in xs]
    else:
        hs = grad(dot, xs, create_graph=create_graph, allow_unused=True)
        if strict:
            _strict(op, hs, "The hessian of the user-provided function")
        hv = _zeros_for_none(hs, xs)
    return outs[0].detach(), _out(hv, single)


def hvp(func: Func, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)``: the Hessian of a single-element function times ``v``, by reverse
    over reverse: ``d/dx <grad f, v>`` (PyTorch's ``hvp``).

    Args:
        func: tensors -> a tensor with one element.
        inputs: a tensor or a tuple of tensors.
        v: of the inputs' shapes; ``None`` only for a single one-element input (then 1).
        create_graph: record the product so it can be differentiated again.
        strict: raise where the function (or its gradient) does not depend on an input.

    Raises:
        RuntimeError: ``func`` returns several tensors or one of several elements (PyTorch's
            errors); ``v`` omitted for other inputs; ``strict`` and an independent input.
        TypeError: ``v`` does not match. ShapeError: a ``v`` has the wrong shape.
        TapeError: an op has no differentiable backward.
    """
    return _second_product("hvp", func, inputs, v, create_graph, strict)


def vhp(func: Func, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T H)``: PyTorch's ``vhp``. The Hessian of a twice-differentiable
    function is symmetric, so this is :func:`hvp`'s product (the same values); arguments and
    errors as :func:`hvp`."""
    return _second_product("vhp", func, inputs, v, create_graph, strict)


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


def _jacobian_rows(
    o: Tensor[Any, Any], xs: list[Tensor[Any, Any]], create_graph: bool, strict: str | None = None
) -> list[Tensor[Any, Any]]:
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
        if strict is not None:
            _strict("jacobian", gs, strict)
        for j, g in enumerate(_zeros_for_none(gs, xs)):
            per_input[j].append(g)
    return [_assemble(p, o.shape, x, create_graph) for x, p in zip(xs, per_input, strict=True)]


def _check_strategy(op: str, name: str, strategy: str, vectorize: bool, strict: bool) -> None:
    """PyTorch's checks of ``vectorize``/``strategy`` (the values are computed by reverse
    passes whichever is chosen)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            f'{op}: Expected {name} to be either "forward-mode" or "reverse-mode". Hint: If your '
            f'code uses "{strategy}", please change it.'
        )
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(
            f"{op}: Computing Jacobian using forward-AD or forward-over-reverse Hessian is "
            "only implemented for `vectorize=True`."
        )
    if strict and vectorize:
        raise RuntimeError(
            f"{op}: `strict=True` and `vectorize=True` are not supported together. Please either "
            "set `strict=False` or `vectorize=False`."
        )


def jacobian(
    func: Func,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: for one input and one output, a tensor of shape
    ``output.shape + input.shape``; tuples of them for tuples (``J[i][j]`` is output ``i`` by
    input ``j``, as PyTorch's). One reverse pass per output element.

    Args:
        func: tensors -> a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        create_graph: record the Jacobian (through the ops' differentiable backward, then
            ``stack``) so it can be differentiated again with respect to the traced inputs.
        strict: raise where an output does not depend on an input (PyTorch's check).
        vectorize, strategy: PyTorch's choices of how to compute it, checked as PyTorch checks
            them; the Jacobian is the same either way (here: one reverse pass per output
            element).

    Raises:
        TypeError: ``func`` returns no tensor. TapeError: with ``create_graph``, an op has no
        differentiable backward. RuntimeError: ``strict`` and an independent output/input
        pair, or ``strict`` with ``vectorize``. ValueError: an unknown ``strategy``.
        NotImplementedError: ``strategy="forward-mode"`` without ``vectorize`` (PyTorch's).
    """
    _check_strategy("jacobian", "strategy", strategy, vectorize, strict)
    xs, single = _inputs("jacobian", inputs, create_graph)
    outs, single_out = _outputs("jacobian", func, xs)
    rows = [
        _jacobian_rows(o, xs, create_graph, f"Output {i} of the user-provided function" if strict else None)
        for i, o in enumerate(outs)
    ]
    if single_out:
        return rows[0][0] if single else tuple(rows[0])
    return tuple(r[0] if single else tuple(r) for r in rows)


def hessian(
    func: Func,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a scalar function at ``inputs``: for one input of shape ``s``, a tensor of
    shape ``s + s``; ``H[i][j]`` tuples for several inputs. The gradient is computed once with
    ``create_graph=True``, then one reverse pass per input element.

    Args:
        func: tensors -> a scalar tensor.
        inputs: a tensor or a tuple of tensors.
        create_graph: record the Hessian (third-order rules are the second rules' own second
            rules) so it can be differentiated again with respect to the traced inputs.
        strict: raise where the function or its gradient does not depend on an input.
        vectorize, outer_jacobian_strategy: as :func:`jacobian`'s ``vectorize``/``strategy``.

    Raises:
        RuntimeError: ``func`` returns several tensors or one of several elements (PyTorch's
            errors); ``strict`` and an independent input. TapeError: an op has no
            differentiable backward. ValueError, NotImplementedError: as :func:`jacobian`.
    """
    _check_strategy("hessian", "outer_jacobian_strategy", outer_jacobian_strategy, vectorize, strict)
    xs, single = _inputs("hessian", inputs, create_graph)
    outs, _ = _outputs("hessian", func, xs)
    f = _scalar("hessian", outs)
    g0 = grad(f, xs, create_graph=True, allow_unused=True)
    if strict:
        _strict("hessian", g0)
    gs = _zeros_for_none(g0, xs)
    # The Hessian is the Jacobian of the gradient; a constant gradient (it does not depend on
    # the inputs) gives a zero row of blocks.
    if strict:
        for i, gi in enumerate(gs):
            if not gi.requires_grad:
                raise RuntimeError(
                    f"hessian: While computing the hessian, found that the jacobian of the user-provided function "
                    f"with respect to input {i} is independent of the input. This is not allowed in strict mode."
                )
    blocks = [
        _jacobian_rows(gi, xs, create_graph, "The hessian of the user-provided function" if strict else None)
        if gi.requires_grad
        else [x._like(np.zeros(gi.shape + x.shape, x.dtype)) for x in xs]
        for gi in gs
    ]
    return blocks[0][0] if single else tuple(tuple(b) for b in blocks)
