"""PyTorch's ``torch.autograd`` front end (seed 003) on gradtape's one tape.

- :func:`grad`: the gradients of outputs w.r.t. chosen inputs, as a tuple, without touching
  any :class:`~gradtape.gradients.Gradients` store (``torch.autograd.grad``).
- :func:`gradcheck`, :func:`gradgradcheck`: PyTorch's checks of first and second derivatives
  against finite differences, Jacobian by Jacobian.
- :class:`Function`: a custom op written as ``forward(ctx, ...)`` / ``backward(ctx, ...)``
  (``torch.autograd.Function``), a convenience over ``split_tape`` / ``add_backward_op``:
  it records one backward closure on the tape its inputs record on
  (:func:`gradtape.tape.op_tape`), so it works with traced inputs, module parameters, context
  tapes and grad modes like every built-in op, and :func:`gradtape.testing.gradcheck` checks it.
  (It lives in :mod:`gradtape.ops._function`, below the tensor, where ops build on it too.)

- :mod:`gradtape.autograd.functional`: ``torch.autograd.functional``'s ``jacobian``, ``hessian``,
  ``vjp``, ``jvp``, ``hvp``, ``vhp`` (those of :mod:`gradtape.functional`).

The grad modes (``no_grad`` and friends, :mod:`gradtape.grad_mode`) and anomaly detection
(``detect_anomaly``, ``set_detect_anomaly``, :mod:`gradtape.hooks`) are re-exported here under
PyTorch's names.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from gradtape.devices import _arrays
from gradtape.engine import backprop, gradient_copy, seed_array
from gradtape.errors import TapeError
from gradtape.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from gradtape.gradients import Gradients
from gradtape.hooks import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from gradtape.ops._function import Function, FunctionCtx
from gradtape.tape import GradientTape, owned_tape
from gradtape.tensor import Tensor
from gradtape.testing import GradcheckError as _TestingGradcheckError

__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]

Array = np.ndarray[Any, Any]


def _tensors(op: str, xs: Any, what: str) -> list[Tensor[Any, Any]]:
    seq = [xs] if isinstance(xs, Tensor) else list(xs) if isinstance(xs, (list, tuple)) else None
    if seq is None:
        raise TypeError(f"{op}: {what} must be a Tensor or a sequence of Tensors, got {type(xs).__name__}")
    for k, t in enumerate(seq):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {what}[{k}] must be a Tensor, got {type(t).__name__}")
    return seq


def grad(
    outputs: Tensor[Any, Any] | Sequence[Tensor[Any, Any]],
    inputs: Tensor[Any, Any] | Sequence[Tensor[Any, Any]],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
) -> tuple[Tensor[Any, Any] | None, ...]:
    """The sum of the gradients of ``outputs`` w.r.t. each of ``inputs`` (PyTorch's
    ``torch.autograd.grad``): a vector-Jacobian product, seeded by ``grad_outputs``.

    Runs the tape the outputs carry (their owned ``GradientTape``, merged if several) into a
    fresh store, so no ``Gradients`` store of the program is touched, and returns one untraced
    tensor per input, of the input's shape and dtype.

    Args:
        outputs: a tensor or a sequence of tensors, each recorded (traced input, module
            parameters in a traced pass, or a hand-written op).
        inputs: a tensor or a sequence of tensors: leaves (a traced input, a parameter, an
            untraced operand of a recorded op) or intermediate results.
        grad_outputs: ``None`` (every output must be a scalar: seeded with 1), or one seed
            per output (a tensor or array of that output's shape, or ``None`` for a scalar
            output).
        retain_graph: keep the recorded closures so the same forward pass can be
            differentiated again; default ``False`` (the tape is consumed, as PyTorch frees
            its graph).
        create_graph: compute the gradients with the ops' differentiable rules, recorded on the
            outputs' tape, so they can be differentiated again (``grad`` of a ``grad``: Hessian
            products, gradient penalties); implies ``retain_graph``. Ops without a
            differentiable rule yet raise a ``TapeError`` naming them.
        allow_unused: ``False`` (default) raises for an input the outputs do not depend on;
            ``True`` gives ``None`` for it.

    Returns:
        A tuple with one gradient (or ``None``) per input.

    Raises:
        TapeError: an output has no tape, its tape was already run, an input is unused and
            ``allow_unused`` is not set, or (``create_graph``) the gradient flows through an op
            whose backward has no differentiable form yet.
        TypeError: an output or input is not a tensor.
        ShapeError: a seed's shape is not its output's; ValueError: ``grad_outputs`` has the
            wrong length, or a non-scalar output has no seed.
    """
    op = "grad"
    outs = _tensors(op, outputs, "outputs")
    ins = _tensors(op, inputs, "inputs")
    if grad_outputs is None:
        seeds_in: list[Any] = [None] * len(outs)
    else:
        seeds_in = list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs]
        if len(seeds_in) != len(outs):
            raise ValueError(f"grad: {len(seeds_in)} grad_outputs for {len(outs)} outputs")
    seeds: list[tuple[Tensor[Any, Any], Array]] = []
    tape: GradientTape | None = None
    for k, (o, g) in enumerate(zip(outs, seeds_in, strict=True)):
        ot = owned_tape(o, f"grad: outputs[{k}]")
        tape = ot if tape is None else tape.merge(ot)
        if g is None:
            if o.shape != ():
                raise ValueError(
                    f"grad: outputs[{k}] has shape {o.shape}: a gradient can be implied only for a scalar "
                    "output; pass grad_outputs"
                )
            seeds.append((o, _arrays.ones((), o.dtype, o.data)))
        else:
            seeds.append((o, seed_array(op, o, g, f"grad_outputs[{k}]")))
    assert tape is not None
    found: dict[int, Any]
    if create_graph:
        # a seed given as a tensor of the output's shape and dtype stays one (see backprop)
        graph_seeds = [
            (o, g if isinstance(g, Tensor) and g.shape == o.shape and g.dtype == o.dtype else s)
            for (o, s), g in zip(seeds, seeds_in, strict=True)
        ]
        found = backprop(tape, graph_seeds, op=op, retain=True, create_graph=True, keep={t.id for t in ins})
    else:
        store = Gradients()
        store._leafs = {t.id for t in ins}
        backprop(tape, seeds, op=op, retain=bool(retain_graph), into=store)
        found = store._data
    result: list[Tensor[Any, Any] | None] = []
    for k, t in enumerate(ins):
        g = found.get(t.id)
        if g is None:
            if not allow_unused:
                raise TapeError(
                    f"grad: inputs[{k}] (shape {t.shape}) was not used to compute the outputs (no recorded op "
                    "connects them); pass allow_unused=True to get None for it"
                )
            result.append(None)
        elif create_graph:
            result.append(cast("Tensor[Any, Any]", g))  # recorded on the outputs' tape: differentiable again
        else:
            result.append(gradient_copy(op, t, store))
    return tuple(result)


# ----- gradcheck / gradgradcheck (torch.autograd.gradcheck's) -----------------------------------


class GradcheckError(_TestingGradcheckError, RuntimeError):
    """A Jacobian computed by the tape disagrees with finite differences (PyTorch's
    ``torch.autograd.gradcheck.GradcheckError``, a ``RuntimeError``; also gradtape's
    :class:`gradtape.testing.GradcheckError`). The message names the output, the input and
    both Jacobians."""


def _outputs_of(out: Any) -> list[Tensor[Any, Any]]:
    """The floating tensors ``func`` returned (a tensor, or those of a tuple or list)."""
    items = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, (tuple, list)) else []
    outs = [o for o in items if isinstance(o, Tensor)]
    if not outs:
        raise TypeError(f"gradcheck: func must return a Tensor or a tuple of Tensors, got {type(out).__name__}")
    return [o for o in outs if o.dtype.kind == "f"]


def _leaves(args: list[Any], diff: list[int]) -> tuple[list[Tensor[Any, Any]], list[Any]]:
    """Fresh leaves that require grad for the arguments at ``diff``, and the argument list with
    them in place."""
    xs = [args[j].detach().requires_grad_(True) for j in diff]
    call = list(args)
    for j, x in zip(diff, xs, strict=True):
        call[j] = x
    return xs, call


def _analytic(func: Callable[..., Any], args: list[Any], diff: list[int], forward: bool) -> list[list[Array]]:
    """``J[i][j]``: output ``i`` by input ``diff[j]`` as a ``(out.size, in.size)`` array, from
    reverse passes (one per output element), or with ``forward`` from Jacobian-vector products
    (the double-vjp construction through the second rules, one per input element)."""
    xs, call = _leaves(args, diff)
    outs = _outputs_of(func(*call))
    jac = [[np.zeros((o.size, x.size)) for x in xs] for o in outs]
    for i, o in enumerate(outs):
        if not forward:
            for k in range(o.size):
                e = np.zeros(o.size, o.dtype)
                e[k] = 1.0
                gs = grad(o, xs, grad_outputs=[e.reshape(o.shape)], retain_graph=True, allow_unused=True)
                for j, g in enumerate(gs):
                    if g is not None:
                        jac[i][j][k] = g.numpy().reshape(-1)
            continue
        u: Tensor[Any, Any] = Tensor(np.zeros(o.shape, o.dtype), o.device).requires_grad_(True)  # a dummy cotangent
        gs = grad(o, xs, grad_outputs=[u], create_graph=True, allow_unused=True)
        for j, (g, x) in enumerate(zip(gs, xs, strict=True)):
            if g is None:
                continue
            for m in range(x.size):
                e = np.zeros(x.size, x.dtype)
                e[m] = 1.0
                (jv,) = grad(
                    (g * Tensor(e.reshape(x.shape), x.device)).sum(), [u], retain_graph=True, allow_unused=True
                )
                if jv is not None:
                    jac[i][j][:, m] = jv.numpy().reshape(-1)
    return jac


def _numeric(func: Callable[..., Any], args: list[Any], diff: list[int], eps: float) -> list[list[Array]]:
    """The same Jacobians by central differences, ``(f(x + eps e) - f(x - eps e)) / (2 eps)``."""
    base = [a.detach() if isinstance(a, Tensor) else a for a in args]  # untraced: func records nothing of them
    outs = _outputs_of(func(*base))
    cols: list[list[Array]] = [[np.zeros((o.size, args[j].size)) for j in diff] for o in outs]
    for jj, j in enumerate(diff):
        x = args[j]
        for m in range(x.size):
            vals = []
            for step in (eps, -eps):
                pert = np.array(x.data, dtype=x.dtype, copy=True)
                pert.reshape(-1)[m] += step
                call = list(base)
                call[j] = Tensor(pert, x.device)
                vals.append([o.numpy().astype(np.float64).reshape(-1) for o in _outputs_of(func(*call))])
            for i in range(len(outs)):
                cols[i][jj][:, m] = (vals[0][i] - vals[1][i]) / (2 * eps)
    return cols


def _compare(
    analytic: list[list[Array]], numeric: list[list[Array]], diff: list[int], atol: float, rtol: float, what: str
) -> str | None:
    for i, (arow, nrow) in enumerate(zip(analytic, numeric, strict=True)):
        for j, (a, n) in enumerate(zip(arow, nrow, strict=True)):
            if not np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                return (
                    f"{what}Jacobian mismatch for output {i} with respect to input {diff[j]},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return None


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """PyTorch's ``torch.autograd.gradcheck``: compare the Jacobians the tape computes with
    central finite differences, for every input tensor that requires grad and every floating
    output, ``|analytical - numerical| <= atol + rtol * |numerical|`` elementwise.

    The reverse-mode Jacobian is built one output element at a time (``grad`` with a unit
    cotangent); ``check_forward_ad`` also builds it from Jacobian-vector products (the
    double-vjp construction, which runs the ops' second rules: gradtape has no forward mode);
    ``nondet_tol`` reruns the reverse passes and requires them to agree within it. Inputs
    should be float64 (PyTorch's advice; a ``UserWarning`` otherwise).

    Args:
        func: tensors (and other arguments, passed through) -> a tensor or a tuple of them.
        inputs: a tensor or a tuple; those with ``requires_grad`` are checked.
        eps, atol, rtol: finite-difference step and tolerances (PyTorch's defaults).
        raise_exception: raise :class:`GradcheckError` on a mismatch (default), else return
            ``False``.
        nondet_tol: tolerance between two reverse passes (0: they must be equal).
        check_grad_dtypes: also require each gradient's dtype to be its input's.
        check_forward_ad, check_backward_ad: which Jacobians to check.
        check_undefined_grad, fast_mode: accepted (gradtape has no undefined gradients; the
            full Jacobians are always compared, which is what fast_mode would shortcut).
        check_batched_grad, check_batched_forward_grad, masked: PyTorch's vmap and sparse
            checks; only their defaults are taken.

    Returns:
        ``True``, or ``False`` on a mismatch with ``raise_exception=False``.

    Raises:
        GradcheckError: a mismatch (``raise_exception``), naming the output and the input.
        ValueError: no input requires grad (PyTorch's refusal).
        NotImplementedError: ``check_batched_grad``, ``check_batched_forward_grad`` or
            ``masked`` set (no vmap, no sparse tensors).
    """
    del check_undefined_grad, fast_mode
    if check_batched_grad or check_batched_forward_grad or masked:
        raise NotImplementedError(
            "gradcheck: check_batched_grad, check_batched_forward_grad and masked need vmap or sparse tensors, "
            "which gradtape does not have; leave them at their defaults"
        )
    args = [inputs] if isinstance(inputs, Tensor) else list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    diff = [j for j, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not diff:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of the them have "
            "requires_grad=True."
        )
    for j in diff:
        if args[j].dtype != np.float64:
            warnings.warn(
                f"Input #{j} requires gradient and is not a double precision floating point. As a result, the check "
                "may fail due to the lack of precision.",
                UserWarning,
                stacklevel=2,
            )
    numeric = _numeric(func, args, diff, eps)
    problems: list[str] = []
    if check_backward_ad:
        analytic = _analytic(func, args, diff, False)
        bad = _compare(analytic, numeric, diff, atol, rtol, "")
        if bad is not None:
            problems.append(bad)
        again = _analytic(func, args, diff, False)
        for i, (arow, brow) in enumerate(zip(analytic, again, strict=True)):
            for j, (a, b) in enumerate(zip(arow, brow, strict=True)):
                if np.abs(a - b).max(initial=0.0) > nondet_tol:
                    problems.append(
                        f"Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                        f"times gives different values, although analytical gradient matches numerical gradient. The "
                        f"tolerance for nondeterminism was {nondet_tol}. (output {i}, input {diff[j]})"
                    )
    if check_grad_dtypes:
        xs, call = _leaves(args, diff)
        outs = _outputs_of(func(*call))
        total = sum((o.sum() for o in outs[1:]), outs[0].sum())
        for x, g in zip(xs, grad(total, xs, allow_unused=True), strict=True):
            if g is not None and g.dtype != x.dtype:
                problems.append(f"Gradient has dtype mismatch: got {g.dtype}, input has {x.dtype}")
    if check_forward_ad:
        bad = _compare(_analytic(func, args, diff, True), numeric, diff, atol, rtol, "Forward AD (jvp): ")
        if bad is not None:
            problems.append(bad)
    if problems:
        if raise_exception:
            raise GradcheckError("gradcheck: " + "\n".join(problems))
        return False
    return True


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """PyTorch's ``torch.autograd.gradgradcheck``: :func:`gradcheck` of the gradient itself,
    the function ``(inputs, v) -> grad(func(inputs), inputs, v, create_graph=True)``, so the
    ops' second rules are checked against finite differences of their first rules.

    Args:
        grad_outputs: the cotangents ``v`` (one per floating output); ``None`` draws them from
            a standard normal (seeded, so a check is repeatable), as PyTorch draws random ones.
        gen_non_contig_grad_outputs: accepted (gradtape's kernels take any layout).
        check_rev_over_rev, check_fwd_over_rev: reverse-over-reverse (default) and the
            forward-over-reverse check (by the double-vjp construction).
        the others: as :func:`gradcheck`.

    Returns and raises as :func:`gradcheck`.
    """
    del gen_non_contig_grad_outputs
    args = [inputs] if isinstance(inputs, Tensor) else list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    diff = [j for j, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not diff:
        raise ValueError("gradgradcheck expects at least one input tensor to require gradient")
    outs = _outputs_of(func(*[a.detach() if isinstance(a, Tensor) else a for a in args]))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        vs: list[Tensor[Any, Any]] = [
            Tensor(rng.standard_normal(o.shape).astype(o.dtype), o.device).requires_grad_(True) for o in outs
        ]
    else:
        vs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
        vs = [v if v.requires_grad else v.detach().requires_grad_(True) for v in vs]
    n = len(args)

    def first_derivative(*xs: Any) -> tuple[Tensor[Any, Any], ...]:
        ins, seeds = list(xs[:n]), list(xs[n:])
        for (
            j
        ) in diff:  # differentiable at this level whatever the caller passes (finite differences pass plain tensors)
            if not ins[j].requires_grad:
                ins[j] = ins[j].detach().requires_grad_(True)
        ys = _outputs_of(func(*ins))
        gs = grad(ys, [ins[j] for j in diff], grad_outputs=seeds, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(
        first_derivative,
        tuple(args) + tuple(vs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        fast_mode=fast_mode,
        masked=masked,
    )
