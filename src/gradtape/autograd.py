"""PyTorch's ``torch.autograd`` front end (seed 003) on gradtape's one tape.

- :func:`grad`: the gradients of outputs w.r.t. chosen inputs, as a tuple, without touching
  any :class:`~gradtape.gradients.Gradients` store (``torch.autograd.grad``).
- :class:`Function`: a custom op written as ``forward(ctx, ...)`` / ``backward(ctx, ...)``
  (``torch.autograd.Function``), a convenience over ``split_tape`` / ``add_backward_op``:
  it records one backward closure on the tape its inputs record on
  (:func:`gradtape.tape.op_tape`), so it works with traced inputs, module parameters, context
  tapes and grad modes like every built-in op, and :func:`gradtape.testing.gradcheck` checks it.

The grad modes (``no_grad`` and friends, :mod:`gradtape.grad_mode`) and anomaly detection
(``detect_anomaly``, ``set_detect_anomaly``, :mod:`gradtape.hooks`) are re-exported here under
PyTorch's names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from gradtape.hooks import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from gradtape.tape import NONE_TAPE, GradientTape, attach_diff, op_tape, owned_tape, seed_array
from gradtape.tensor import Tensor

if TYPE_CHECKING:
    from gradtape.gradients import Gradients

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
    seeds: list[tuple[int, Array]] = []
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
            seeds.append((o.id, np.ones((), o.dtype)))
        else:
            seeds.append((o.id, seed_array(op, o, g, f"grad_outputs[{k}]")))
    assert tape is not None
    from gradtape.gradients import Gradients

    found: dict[int, Any]
    if create_graph:
        root = tape._root()

        def rebuild(i: int, data: Array) -> Tensor[Any, Any]:
            # a saved array as the tensor it stands for, on the same tape: its producer's
            # entry is there, so differentiating the gradient reaches back through the forward
            t: Tensor[Any, Any] = outs[0]._like(data)
            t.id, t.tape, t._leaf = i, root, False
            return t

        found = {}
        given = dict(seeds)
        tape._diff_backprop(
            outs,
            [
                g if isinstance(g, Tensor) and g.shape == o.shape and g.dtype == o.dtype else given[o.id]
                for o, g in zip(outs, seeds_in, strict=True)
            ],
            {t.id for t in ins},
            rebuild,
            True,
            op,
            found,
        )
    else:
        store = Gradients()
        store._leafs = {t.id for t in ins}
        tape._backprop(seeds, retain=bool(retain_graph), op=op, into=store)
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
            result.append(t._like(np.array(g, dtype=t.dtype, copy=True)))
    return tuple(result)


class FunctionCtx:
    """The ``ctx`` a :class:`Function`'s ``forward`` and ``backward`` share (PyTorch's
    ``FunctionCtx``): tensors saved for backward, which inputs need a gradient, and any
    attribute ``forward`` sets on it."""

    needs_input_grad: tuple[bool, ...]
    """One flag per argument of ``apply``: ``True`` for a tensor whose gradient is wanted (it
    carries a tape, or is a parameter or a watched tensor, and the op records)."""

    def __init__(self) -> None:
        self.needs_input_grad = ()
        self._saved: tuple[Tensor[Any, Any] | None, ...] = ()

    def save_for_backward(self, *tensors: Tensor[Any, Any] | None) -> None:
        """Keep ``tensors`` (or ``None``) for ``backward``, read back as :attr:`saved_tensors`.

        Raises:
            TypeError: an argument is neither a tensor nor ``None``.
        """
        for k, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward: argument {k} must be a Tensor or None, got {type(t).__name__}")
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor[Any, Any] | None, ...]:
        """The tensors given to :meth:`save_for_backward`, in order."""
        return self._saved


class Function:
    """A custom differentiable op (PyTorch's ``torch.autograd.Function``).

    Subclass it with two static methods and call :meth:`apply`::

        class Softplus(Function):
            @staticmethod
            def forward(ctx, x):
                y = x.softplus()
                ctx.save_for_backward(x)
                return y

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.sigmoid()

        y = Softplus.apply(x)

    ``forward(ctx, *args, **kwargs)`` runs with recording off (``no_grad``) on the same
    tensors (same ids) and returns a tensor or a tuple of tensors; arguments that are not
    tensors are passed through. ``backward(ctx, *grad_outputs)`` gets one gradient tensor per
    output (zeros for an output that received none) and returns one gradient per argument
    of ``apply`` (a tensor, an array or ``None``; ``None`` for non-tensor arguments), also
    with recording off. ``apply`` records one backward closure on the tape the tensor
    arguments record on (:func:`gradtape.tape.op_tape`): traced inputs, parameters, context
    tapes and grad modes behave as for built-in ops, and the outputs carry that tape.

    Raises (from ``apply``):
        TypeError: ``forward`` returned something other than a tensor or a tuple of tensors,
            or ``backward`` returned the wrong number of gradients (both name the class).
        ShapeError: a gradient ``backward`` returned does not have its input's shape.
        DTypeError: a gradient is not numeric.
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """The op's forward computation; subclasses override it.

        Raises:
            NotImplementedError: always, on the base class.
        """
        raise NotImplementedError("Function.forward must be overridden")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        """The op's vector-Jacobian product; subclasses override it.

        Raises:
            NotImplementedError: always, on the base class.
        """
        raise NotImplementedError("Function.backward must be overridden")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and record ``backward`` (see the class docstring)."""
        name = cls.__name__
        tensors = [a for a in args if isinstance(a, Tensor)]
        tape = op_tape(*tensors)
        ctx = FunctionCtx()
        recording = tape is not NONE_TAPE
        ctx.needs_input_grad = tuple(recording and isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        single = isinstance(result, Tensor)
        raw = (result,) if single else result
        if not isinstance(raw, tuple) or not all(isinstance(r, Tensor) for r in raw):
            raise TypeError(f"{name}.forward must return a Tensor or a tuple of Tensors, got {type(result).__name__}")
        outs = tuple(r._from_op(r.data, tape) for r in raw)  # fresh ids: the op's outputs
        if recording:
            out_ids = [(o.id, o.shape, o.dtype) for o in outs]
            ins = [(k, a.id, a.shape, a.dtype) for k, a in enumerate(args) if isinstance(a, Tensor)]
            n_args = len(args)
            like = outs[0]

            def results(res: Any) -> list[tuple[int, int, Any, Any]]:
                """(argument index, input id, gradient, input dtype) of backward's result, checked."""
                res_t = res if isinstance(res, tuple) else (res,)
                if len(res_t) != n_args:
                    raise TypeError(
                        f"{name}.backward returned {len(res_t)} gradient(s) for the {n_args} argument(s) of "
                        f"{name}.apply (return None for arguments without one)"
                    )
                checked = []
                for k, i, shape, dtype in ins:
                    g = res_t[k]
                    if g is None:
                        continue
                    arr = np.asarray(g.data if isinstance(g, Tensor) else g)
                    if arr.dtype.kind not in "fiu":
                        raise DTypeError(f"{name}.backward: gradient {k} has dtype {arr.dtype}, not a number")
                    if arr.shape != shape:
                        raise ShapeError(
                            f"{name}.backward: gradient {k} has shape {arr.shape}, its input has shape {shape}"
                        )
                    checked.append((k, i, g, dtype))
                return checked

            def function_backward(grads: Gradients) -> None:
                gs = [grads._release(oid) for oid, _, _ in out_ids]
                if all(g is None for g in gs):
                    return
                grad_outputs = [
                    like._like(np.zeros(shape, dtype) if g is None else np.array(g, copy=True))
                    for g, (_, shape, dtype) in zip(gs, out_ids, strict=True)
                ]
                with no_grad():
                    res = cls.backward(ctx, *grad_outputs)
                for _, i, g, dtype in results(res):
                    arr = np.asarray(g.data if isinstance(g, Tensor) else g)
                    grads._accum(i, np.array(arr, dtype=dtype, copy=True))

            def differentiable(
                grad_outputs: list[Tensor[Any, Any]], rebuild: Any
            ) -> list[tuple[int, Tensor[Any, Any]]]:
                # the second rule: backward run with recording on, on the tensors it saved, so a
                # backward written in gradtape ops records and can be differentiated again
                res = cls.backward(ctx, *grad_outputs)
                out: list[tuple[int, Tensor[Any, Any]]] = []
                for k, i, g, _ in results(res):
                    if not isinstance(g, Tensor):
                        raise TapeError(
                            f"{name}.backward returned a {type(g).__name__} for argument {k}: a gradient of a "
                            "gradient cannot flow through raw arrays; return tensors computed with gradtape ops"
                        )
                    out.append((i, g))
                return out

            attach_diff(function_backward, out_ids, differentiable)
            tape.add_backward_op(function_backward)
        return outs[0] if single else outs
