"""Connectionist temporal classification loss (Graves et al. 2006), PyTorch's
``torch.nn.functional.ctc_loss``: inputs checked here once, the alpha-beta recursions in
:mod:`gradtape.devices.kernels.ctc`, a first rule only (PyTorch has no double backward of
``ctc_loss`` either: a gradient of its gradient raises).
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices._arrays import into_memory_of as _into_memory_of
from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import ctc as _kctc
from gradtape.errors import DTypeError, ShapeError, TapeError
from gradtape.ops._function import Function, FunctionCtx
from gradtape.tape import NONE_TAPE, _tensor_class, op_tape, record

if TYPE_CHECKING:
    from gradtape._typing import T
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["ctc_loss"]

Array = np.ndarray[Any, Any]
_OP = "ctc_loss"


def _int_array(value: object, what: str) -> Array:
    """``value`` (a tensor, array, sequence or int) as an int64 numpy array, refusing
    non-integer dtypes."""
    data: Any = value.data if isinstance(value, _tensor_class()) else value
    if isinstance(data, bool) or (isinstance(data, (list, tuple)) and any(isinstance(v, bool) for v in data)):
        raise DTypeError(f"{_OP}: {what} must hold integers, got bool")
    if isinstance(data, numbers.Integral):
        data = np.asarray(int(data))
    if hasattr(data, "__cuda_array_interface__"):
        data = data.get()
    try:
        arr = np.asarray(data)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{_OP}: {what} must be a tensor, an array or a sequence of ints, got {value!r}") from e
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(value, _tensor_class()):
            arr = arr.astype(np.int64)  # an empty list
        else:
            raise DTypeError(f"{_OP}: {what} must have an integer dtype, got {arr.dtype} (shape {arr.shape})")
    return arr.astype(np.int64)


def _lengths(value: object, what: str, n: int, batched: bool) -> Array:
    arr = _int_array(value, what)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n) or (arr.ndim == 0 and batched):
        want = f"({n},)" if batched else "() or (1,)"
        raise ShapeError(f"{_OP}: {what} must have shape {want} (one length per batch element), got {arr.shape}")
    arr = arr.reshape(-1)
    if (arr < 0).any():
        raise ValueError(f"{_OP}: {what} must be non-negative, got {arr.tolist()}")
    return arr


def _prepare(
    log_probs: Tensor[Any, Any], targets: object, input_lengths: object, target_lengths: object, blank: int
) -> tuple[Array, Array, Array, Array, Array]:
    """Check everything; return ``(lp (T, N, C) contiguous, labels int64, offsets, il, tl)``."""
    if not isinstance(log_probs, _tensor_class()):
        raise TypeError(f"{_OP}: log_probs must be a Tensor, got {type(log_probs).__name__}")
    x = log_probs.data
    if x.dtype.kind != "f" or x.dtype.itemsize not in (4, 8):
        raise DTypeError(f"{_OP}: log_probs must be float32 or float64, got {x.dtype} (shape {x.shape})")
    if x.ndim not in (2, 3):
        raise ShapeError(f"{_OP}: log_probs must have shape (T, N, C) or unbatched (T, C), got {x.shape}")
    batched = x.ndim == 3
    if _on_gpu(x):
        x = x.get()  # type: ignore[attr-defined]  # CuPy: the recursions run on the host; the loss and gradient go back to the GPU
    lp = np.ascontiguousarray(x if batched else x[:, None, :], dtype=x.dtype.newbyteorder("="))
    t_max, n, n_classes = lp.shape
    if isinstance(blank, bool) or not isinstance(blank, numbers.Integral):
        raise TypeError(f"{_OP}: blank must be an int, got {type(blank).__name__}")
    if not 0 <= int(blank) < n_classes:
        raise ValueError(
            f"{_OP}: blank must be in [0, C) = [0, {n_classes}) for log_probs of shape {x.shape}, got {blank}"
        )
    il = _lengths(input_lengths, "input_lengths", n, batched)
    tl = _lengths(target_lengths, "target_lengths", n, batched)
    if (il > t_max).any():
        raise ValueError(
            f"{_OP}: input_lengths must be at most T = {t_max} (log_probs of shape {x.shape}), got {il.tolist()}"
        )
    tg = _int_array(targets, "targets")
    if not batched and tg.ndim == 1:
        tg = tg[None, :]  # PyTorch's unbatched targets: one padded row
    elif not batched:
        raise ShapeError(f"{_OP}: unbatched log_probs {x.shape} take 1-D targets (S,), got {tg.shape}")
    if tg.ndim == 2:
        if tg.shape[0] != n:
            raise ShapeError(f"{_OP}: padded targets must have shape (N, S) with N = {n}, got {tg.shape}")
        if (tl > tg.shape[1]).any():
            raise ShapeError(
                f"{_OP}: target_lengths {tl.tolist()} exceed the padded targets' length S = {tg.shape[1]} "
                f"(targets of shape {tg.shape})"
            )
        offsets = np.arange(n, dtype=np.int64) * tg.shape[1]
        used = np.concatenate([tg[b, : tl[b]] for b in range(n)]) if n else tg.reshape(-1)
    elif tg.ndim == 1:
        total = int(tl.sum())
        if tg.shape[0] != total:
            raise ShapeError(
                f"{_OP}: concatenated targets must have sum(target_lengths) = {total} labels, got shape {tg.shape}"
            )
        offsets = np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
        used = tg
    else:
        raise ShapeError(f"{_OP}: targets must be padded (N, S) or concatenated (sum(target_lengths),), got {tg.shape}")
    if used.size and (used.min() < 0 or used.max() >= n_classes):
        bad = used[(used < 0) | (used >= n_classes)]
        raise ValueError(f"{_OP}: target labels must be in [0, C) = [0, {n_classes}), got {bad[:8].tolist()}")
    return lp, np.ascontiguousarray(tg.reshape(-1)), offsets, il, tl


class _CtcLossBackward(Function):
    """ctc_loss's gradient as a recorded op (``create_graph=True``) whose own backward raises:
    PyTorch has no double backward of ``ctc_loss`` either."""

    @staticmethod
    def forward(ctx: FunctionCtx, g: Any, x: Any, gradient: Any) -> Any:
        return x._like(gradient(g.data))

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise TapeError(
            f"{_OP}: double backward (a gradient of its gradient) is not supported; PyTorch has no double "
            "backward for ctc_loss either"
        )


def ctc_loss(
    log_probs: Tensor[Any, T],
    targets: Any,
    input_lengths: Any,
    target_lengths: Any,
    blank: int = 0,
    reduction: Literal["none", "mean", "sum"] = "mean",
    zero_infinity: bool = False,
) -> Tensor[Any, T]:
    """The connectionist temporal classification loss (Graves et al. 2006, "Connectionist
    Temporal Classification: Labelling Unsegmented Sequence Data with Recurrent Neural
    Networks"), PyTorch's ``torch.nn.functional.ctc_loss``.

    For element ``b`` with input length ``T_b`` and labels ``l`` (length ``L_b``), the
    extended target ``l'`` puts ``blank`` around and between the labels (``2 L_b + 1``
    symbols); the loss is ``-log p(l | x) = -log sum_{paths} prod_t exp(log_probs[t, b,
    path_t])`` over the paths of length ``T_b`` that collapse (merge repeats, drop blanks) to
    ``l``, computed by the forward recursion ``alpha_t(s) = (alpha_{t-1}(s) + alpha_{t-1}(s-1)
    [+ alpha_{t-1}(s-2) when l'(s) != blank and l'(s) != l'(s-2)]) y_t(l'(s))`` in log space.
    A target no path of length ``T_b`` reaches (``T_b`` below ``L_b`` plus its repeats) has an
    infinite loss.

    Args:
        log_probs: ``(T, N, C)`` or unbatched ``(T, C)`` log-probabilities (as from
            ``log_softmax(dim=-1)``), float32 or float64; the loss has its dtype.
        targets: integer labels in ``[0, C)``: padded ``(N, S)`` (row ``b``'s first
            ``target_lengths[b]`` entries are used), concatenated 1-D
            ``(sum(target_lengths),)``, or unbatched ``(S,)``. A tensor, array or list.
        input_lengths: ``(N,)`` integer lengths ``<= T`` (tensor, array, list or tuple);
            ``()``/``(1,)`` unbatched. Time steps from ``input_lengths[b]`` on are unused.
        target_lengths: ``(N,)`` integer target lengths (same kinds); ``()``/``(1,)`` unbatched.
        blank: the blank label, in ``[0, C)``.
        reduction: ``"none"`` (the ``(N,)`` losses, ``()`` unbatched), ``"sum"``, or
            ``"mean"`` (default): each loss divided by its target length clamped to at least 1,
            then averaged over the batch.
        zero_infinity: replace infinite losses (and their gradients) by zeros.

    Gradient (PyTorch's CPU formula): with ``beta`` the backward recursion (including the
    emission at ``t``) and ``nll`` the element's loss, ``grad[t, b, c] = exp(log_probs[t, b,
    c]) - exp(log sum_{s: l'(s) = c} alpha_t(s) beta_t(s) + nll - log_probs[t, b, c])`` times
    the output's gradient (and the reduction's factor), for ``t < input_lengths[b]``; zero for
    later steps. As in PyTorch this treats ``log_probs`` as normalized log-probabilities: it
    is exact once backpropagated through ``log_softmax``. On a GPU tensor the recursions run on
    the host (the loss and gradient are copied back). An infinite loss gives NaN
    gradients unless ``zero_infinity``. Gradients of gradients are not supported (nor in
    PyTorch): asking for them raises.

    Raises:
        TypeError: ``log_probs`` is not a tensor, or ``blank`` is not an int, or a length or
            target argument is not array-like.
        DTypeError: ``log_probs`` is not float32/float64; targets or lengths are not integers.
        ShapeError: ``log_probs`` is not 2-D/3-D; a length argument has not one entry per batch
            element; padded targets' rows differ from N or are shorter than a target length;
            concatenated targets do not hold ``sum(target_lengths)`` labels.
        ValueError: an unknown ``reduction``; ``blank`` outside ``[0, C)``; a label outside
            ``[0, C)``; a negative length; an input length above ``T``.
        TapeError: differentiating the gradient again (a double backward: the gradient from
            ``create_graph=True`` fed to another backward); no second-order derivative.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{_OP}: reduction must be one of 'none', 'mean', 'sum', got {reduction!r}")
    lp, labels, offsets, il, tl = _prepare(log_probs, targets, input_lengths, target_lengths, blank)
    blank = int(blank)
    n = lp.shape[1]
    dtype = lp.dtype
    nll, alpha = _kctc.ctc_forward(lp, labels, offsets, il, tl, blank)
    losses = np.where(nll == np.inf, 0.0, nll) if zero_infinity else nll
    batched = log_probs.data.ndim == 3
    if reduction == "none":
        value: Any = losses.astype(dtype) if batched else losses.astype(dtype).reshape(())
    elif reduction == "sum":
        value = np.asarray(losses.sum(), dtype)
    else:
        value = np.asarray((losses / np.maximum(tl, 1)).mean() if n else np.nan, dtype)
    tape = op_tape(log_probs)
    out: Tensor[Any, T] = log_probs._from_op(_into_memory_of(value, log_probs.data), tape)
    if tape is not NONE_TAPE:
        xid, x_leaf, shape = log_probs.id, log_probs._leaf, log_probs.data.shape
        if reduction == "mean":
            factor = 1.0 / (np.maximum(tl, 1).astype(np.float64) * max(n, 1))
        else:
            factor = np.ones(n)

        def gradient(g: Any) -> Array:
            ga = np.asarray(g.get() if _on_gpu(g) else g, np.float64)
            scale = np.ascontiguousarray((ga.reshape(-1) if reduction == "none" else np.full(n, float(ga))) * factor)
            gx = _kctc.ctc_backward(lp, labels, offsets, il, tl, blank, nll, alpha, scale, zero_infinity)
            return _into_memory_of(gx.reshape(shape), log_probs.data)

        def ctc_loss_backward(grads: Gradients, g: Array) -> None:
            if grads.wants(xid, x_leaf):
                grads._accum(xid, _as_array(gradient(g)))

        def ctc_loss_second(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            # backward with create_graph=True works (as PyTorch's); differentiating the
            # gradient it gives again raises, naming the op
            x_t = rebuild(xid, log_probs.data)
            return [(xid, _CtcLossBackward.apply(g, x_t, gradient))]

        record(tape, out, ctc_loss_backward, ctc_loss_second)
    return out
