"""Custom ops written as ``forward(ctx, ...)`` / ``backward(ctx, ...)`` (PyTorch's
``torch.autograd.Function``).

The mechanism lives with the ops, which declare ops through it (a convolution's or a
scatter's backward that can be differentiated again); :mod:`gradtape.autograd` exports it as
the PyTorch front end's ``Function`` and ``FunctionCtx``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.grad_mode import no_grad
from gradtape.tape import NONE_TAPE, _tensor_class, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["Function", "FunctionCtx"]


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
            if t is not None and not isinstance(t, _tensor_class()):
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
        tensor_cls = _tensor_class()
        tensors = [a for a in args if isinstance(a, tensor_cls)]
        tape = op_tape(*tensors)
        ctx = FunctionCtx()
        recording = tape is not NONE_TAPE
        ctx.needs_input_grad = tuple(recording and isinstance(a, tensor_cls) and a.requires_grad for a in args)
        with no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        single = isinstance(result, tensor_cls)
        raw = (result,) if single else result
        if not isinstance(raw, tuple) or not all(isinstance(r, tensor_cls) for r in raw):
            raise TypeError(f"{name}.forward must return a Tensor or a tuple of Tensors, got {type(result).__name__}")
        outs = tuple(r._from_op(r.data, tape) for r in raw)  # fresh ids: the op's outputs
        if recording:
            out_ids = [(o.id, o.shape, o.dtype) for o in outs]
            ins = [(k, a.id, a.shape, a.dtype) for k, a in enumerate(args) if isinstance(a, tensor_cls)]
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
                    arr = _as_array(g.data if isinstance(g, tensor_cls) else g)
                    if arr.dtype.kind not in "fiu":
                        raise DTypeError(f"{name}.backward: gradient {k} has dtype {arr.dtype}, not a number")
                    if arr.shape != shape:
                        raise ShapeError(
                            f"{name}.backward: gradient {k} has shape {arr.shape}, its input has shape {shape}"
                        )
                    checked.append((k, i, g, dtype))
                return checked

            def function_backward(grads: Gradients, gs: list[np.ndarray[Any, Any] | None]) -> None:
                grad_outputs = [
                    like._like(_arrays.zeros(shape, dtype, like.data) if g is None else _arrays.copy(g))
                    for g, (_, shape, dtype) in zip(gs, out_ids, strict=True)
                ]
                with no_grad():
                    res = cls.backward(ctx, *grad_outputs)
                for _, i, g, dtype in results(res):
                    arr = _as_array(g.data if isinstance(g, tensor_cls) else g)
                    grads._accum(i, _arrays.copy(arr, dtype))

            def differentiable(
                grad_outputs: list[Tensor[Any, Any]], rebuild: Any
            ) -> list[tuple[int, Tensor[Any, Any]]]:
                # the second rule: backward run with recording on, on the tensors it saved, so a
                # backward written in gradtape ops records and can be differentiated again
                res = cls.backward(ctx, *grad_outputs)
                out: list[tuple[int, Tensor[Any, Any]]] = []
                for k, i, g, _ in results(res):
                    if not isinstance(g, tensor_cls):
                        raise TapeError(
                            f"{name}.backward returned a {type(g).__name__} for argument {k}: a gradient of a "
                            "gradient cannot flow through raw arrays; return tensors computed with gradtape ops"
                        )
                    out.append((i, g))
                return out

            record(tape, list(outs), function_backward, differentiable)
        return outs[0] if single else outs
