"""PyTorch's ``torch.autograd`` front end (seed 003) on gradtape's one tape.

- :func:`grad`: the gradients of outputs w.r.t. chosen inputs, as a tuple, without touching
  any :class:`~gradtape.gradients.Gradients` store (``torch.autograd.grad``).
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

from collections.abc import Sequence
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

__all__ = [
    "Function",
    "FunctionCtx",
    "detect_anomaly",
    "enable_grad",
    "grad",
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
