"""Stochastic Weight Averaging and exponential moving averages of a model's weights, at
PyTorch's path ``gradtape.optim.swa_utils`` with PyTorch's names, arguments, defaults and
formulas (``torch.optim.swa_utils``).

SWA (Izmailov, Podoprikhin, Garipov, Vetrov & Wilson, "Averaging Weights Leads to Wider
Optima and Better Generalization", UAI 2018, https://arxiv.org/abs/1803.05407) averages the
weights a run visits late in training, with a constant or cyclical learning rate: the average
lies in a flatter region of the loss and generalises better than the last iterate. An
exponential moving average (EMA, Polyak averaging with exponential weights) weighs recent
iterates more.

- :class:`AveragedModel`: a deep copy of a model whose parameters (and, with
  ``use_buffers=True``, buffers) are the running average of the model's, updated by
  :meth:`AveragedModel.update_parameters`; called, it runs the copy.
- :func:`get_swa_avg_fn`, :func:`get_ema_avg_fn` (one tensor at a time, out of place) and
  :func:`get_swa_multi_avg_fn`, :func:`get_ema_multi_avg_fn` (lists of tensors, in place):
  the averaging rules :class:`AveragedModel` takes as ``avg_fn`` / ``multi_avg_fn``.
- :func:`update_bn`: recompute BatchNorm's running statistics for the averaged weights in
  one pass over the data.
- :class:`SWALR`: anneal each parameter group's learning rate to a constant SWA rate.

A PyTorch user's SWA loop runs as written::

    swa_model = gradtape.optim.swa_utils.AveragedModel(model)
    scheduler = gradtape.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=300)
    swa_scheduler = gradtape.optim.swa_utils.SWALR(opt, swa_lr=0.05)
    for epoch in range(300):
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        if epoch > 160:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
    gradtape.optim.swa_utils.update_bn(loader, swa_model)

The averages are written into the averaged model's arrays in place under ``no_grad()``:
nothing records on a tape, and the writes are noted (as an optimizer step's are) so that a
backward still to run over the old values refuses to.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from copy import deepcopy
from typing import Any, Literal

import numpy as np

from gradtape import tape as _tp
from gradtape.devices import _arrays
from gradtape.devices.default import as_device, get_default_device
from gradtape.grad_mode import no_grad
from gradtape.nn.module import Module
from gradtape.nn.norm import _BatchNorm
from gradtape.optim._checks import _real
from gradtape.optim.lr_scheduler import LRScheduler, _per_group
from gradtape.optim.optimizers import Optimizer
from gradtape.tape import NONE_TAPE, note_writes
from gradtape.tensor import Tensor

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]

Array = np.ndarray[Any, Any]
AnyTensor = Tensor[Any, Any]
ParamList = Sequence[AnyTensor]
"""A list (or tuple) of tensors, as a ``multi_avg_fn`` receives them (PyTorch's ``PARAM_LIST``)."""
AvgFn = Callable[[AnyTensor, AnyTensor, "AnyTensor | int"], AnyTensor]
"""``avg_fn(averaged, current, num_averaged) -> new averaged`` (out of place)."""
MultiAvgFn = Callable[[ParamList, ParamList, "AnyTensor | int"], None]
"""``multi_avg_fn(averaged_list, current_list, num_averaged)``, updating ``averaged_list`` in place."""


def _count(num_averaged: AnyTensor | int) -> int:
    """``num_averaged`` as a Python int (a 0-d tensor's value)."""
    return int(num_averaged.item()) if isinstance(num_averaged, Tensor) else int(num_averaged)


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _lerp_(a: Array, b: Array, w: float) -> None:
    """``a = a + w * (b - a)`` in place, PyTorch's ``lerp`` rule: for ``|w| >= 0.5`` it is
    computed as ``b - (b - a) * (1 - w)``, which is exact at ``w = 1``."""
    if abs(w) < 0.5:
        a += w * (b - a)
    else:
        np.subtract(b, (b - a) * (1 - w), out=a)


def _write(a: Array, value: Any) -> None:
    """``a[...] = value`` in ``a``'s memory, cast as PyTorch's ``copy_`` casts (a float into an
    integer buffer truncates toward zero)."""
    np.copyto(a, _arrays.into_memory_of(value, a), casting="unsafe")


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """The exponential moving average as a ``multi_avg_fn`` for :class:`AveragedModel`
    (PyTorch's ``get_ema_multi_avg_fn``)::

        W_0^EMA = W_0^model                                    (the first update copies)
        W_{t+1}^EMA = decay * W_t^EMA + (1 - decay) * W_{t+1}^model

    The returned function updates each tensor of its first list in place, under ``no_grad()``;
    floating tensors by PyTorch's ``lerp`` with weight ``1 - decay``, integer ones (a buffer
    such as ``num_batches_tracked`` with ``use_buffers=True``) by the formula truncated toward
    zero, as PyTorch's ``copy_`` does.

    Args:
        decay: the decay rate, in ``[0, 1]`` (default 0.999).

    Returns:
        ``ema_update(ema_param_list, current_param_list, num_averaged) -> None``.

    Raises:
        ValueError: ``decay`` is outside ``[0, 1]``.
        TypeError: ``decay`` is not a number (the comparison fails, as in PyTorch).
    """
    _check_decay(decay)

    def ema_update(ema_param_list: ParamList, current_param_list: ParamList, _: AnyTensor | int) -> None:
        written: list[Array] = []
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                a = p_ema.data
                b = _arrays.into_memory_of(p_model.data, a)
                if a.dtype.kind in "fc":
                    _lerp_(a, b, 1 - decay)
                else:
                    _write(a, a * decay + b * (1 - decay))
                written.append(a)
        if written:
            note_writes(*written)

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """The equal-weight (SWA) running average as a ``multi_avg_fn`` for
    :class:`AveragedModel` (PyTorch's ``get_swa_multi_avg_fn``)::

        W_avg <- W_avg + (W_model - W_avg) / (n + 1)       (n: the models averaged so far)

    so that after ``k`` updates ``W_avg`` is the mean of the ``k`` models passed. Each tensor of
    the first list is updated in place under ``no_grad()``: floating ones by PyTorch's ``lerp``
    with weight ``1 / (n + 1)``, integer ones by the formula truncated toward zero. The weight
    is a float64 number here; PyTorch computes it as a tensor of its default dtype (float32
    unless ``torch.set_default_dtype`` says otherwise), so its float64 averages then differ
    from these by float32 rounding of the weight.

    Returns:
        ``swa_update(averaged_param_list, current_param_list, num_averaged) -> None``;
        ``num_averaged`` is an int or a 0-d integer tensor.
    """

    def swa_update(
        averaged_param_list: ParamList, current_param_list: ParamList, num_averaged: AnyTensor | int
    ) -> None:
        n = _count(num_averaged)
        written: list[Array] = []
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                a = p_avg.data
                b = _arrays.into_memory_of(p_model.data, a)
                if a.dtype.kind in "fc":
                    _lerp_(a, b, 1.0 / (n + 1))
                else:
                    _write(a, a + (b - a) / (n + 1))
                written.append(a)
        if written:
            note_writes(*written)

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """The exponential moving average as an ``avg_fn`` for :class:`AveragedModel` (PyTorch's
    ``get_ema_avg_fn``): ``decay * W_EMA + (1 - decay) * W_model``, computed out of place on
    one pair of tensors under ``no_grad()`` (the first update copies, as for
    :func:`get_ema_multi_avg_fn`).

    Args:
        decay: the decay rate, in ``[0, 1]`` (default 0.999).

    Returns:
        ``ema_update(ema_param, current_param, num_averaged) -> Tensor``.

    Raises:
        ValueError: ``decay`` is outside ``[0, 1]``.
        TypeError: ``decay`` is not a number.
    """
    _check_decay(decay)

    def ema_update(ema_param: AnyTensor, current_param: AnyTensor, num_averaged: AnyTensor | int) -> AnyTensor:
        with no_grad():
            out: AnyTensor = decay * ema_param + (1 - decay) * current_param
        return out

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """The equal-weight (SWA) running average as an ``avg_fn`` for :class:`AveragedModel`
    (PyTorch's ``get_swa_avg_fn``, and what :class:`AveragedModel` does on the CPU without
    one): ``W_avg + (W_model - W_avg) / (n + 1)``, out of place under ``no_grad()``, ``n`` the
    number of models averaged so far (an int or a 0-d integer tensor).

    Returns:
        ``swa_update(averaged_param, current_param, num_averaged) -> Tensor``.
    """

    def swa_update(averaged_param: AnyTensor, current_param: AnyTensor, num_averaged: AnyTensor | int) -> AnyTensor:
        with no_grad():
            out: AnyTensor = averaged_param + (current_param - averaged_param) / (num_averaged + 1)
        return out

    return swa_update


def _device_of(model: Any) -> Any:
    """The device of ``model``'s first parameter or buffer, else the default device."""
    if isinstance(model, Module):
        for t in itertools.chain(model.parameters(), model.buffers()):
            return t.device
    return get_default_device()


def _on(t: AnyTensor, like: AnyTensor) -> AnyTensor:
    """An untraced tensor with ``t``'s values in ``like``'s memory (``t.detach()`` when it is there)."""
    if _arrays.same_device(t.device, like.device):
        return t.detach()
    return Tensor(_arrays.into_memory_of(t.data, like.data), like.device, NONE_TAPE)


def _group_key(t: AnyTensor) -> tuple[str, int, str]:
    """Which group of PyTorch's ``_group_tensors_by_device_and_dtype`` ``t`` falls in."""
    data = t.data
    if _arrays.on_gpu(data):
        return ("cuda", int(data.device.id), str(data.dtype))  # type: ignore[attr-defined]  # a CuPy array
    return ("cpu", 0, str(data.dtype))


class AveragedModel(Module):
    """A running average of a model's weights, for Stochastic Weight Averaging (SWA) and
    exponential moving averages (EMA): PyTorch's ``torch.optim.swa_utils.AveragedModel``.

    SWA is Izmailov, Podoprikhin, Garipov, Vetrov & Wilson, "Averaging Weights Leads to Wider
    Optima and Better Generalization" (UAI 2018, https://arxiv.org/abs/1803.05407); EMA is
    Polyak averaging with exponential weights.

    The averaged model holds ``module``, a ``copy.deepcopy`` of ``model`` (its own tensors,
    new ids: gradients through it are its own), and the buffer ``n_averaged`` (a 0-d int64
    count of the models averaged). :meth:`update_parameters` copies the model's parameters on
    its first call and averages them in on later ones::

        W_avg <- W_model                                    (n_averaged == 0)
        W_avg <- avg(W_avg, W_model, n_averaged)            (later; default the equal-weight
                                                             mean W_avg + (W_model - W_avg) / (n + 1))

    Calling the averaged model calls ``module``; its :meth:`state_dict` has PyTorch's keys,
    ``n_averaged`` and then ``module.<the model's keys>``. ``avg_fn`` and ``multi_avg_fn`` are
    not saved in it (as in PyTorch).

    With BatchNorm layers, either recompute the running statistics for the averaged weights
    with :func:`update_bn` after training, or average the buffers too with
    ``use_buffers=True``; otherwise the buffers are copied from ``model`` at each update.

    Args:
        model: the gradtape module to average (deep-copied; ``model`` itself is never written).
        device: where the copy lives (``"cpu"``, ``"cuda"``, ``"cuda:N"``, an int GPU index or
            a device): the copy is moved there with :meth:`Module.to`. ``None``: where
            ``model`` is.
        avg_fn: ``avg_fn(averaged, current, num_averaged) -> Tensor``, the new value of one
            averaged tensor (e.g. :func:`get_ema_avg_fn`), called with untraced tensors and
            ``num_averaged`` a 0-d int64 tensor; the result is copied into the averaged tensor
            in place.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, num_averaged)`` updating
            the tensors of ``averaged_list`` in place (e.g. :func:`get_ema_multi_avg_fn`),
            called once per (device, dtype) group, as PyTorch groups them. With neither
            function, the equal-weight SWA mean (:func:`get_swa_avg_fn`'s formula).
        use_buffers: also average the buffers (BatchNorm's running statistics; an integer
            buffer's average is truncated toward zero, as PyTorch's ``copy_`` casts).

    Raises:
        AssertionError: both ``avg_fn`` and ``multi_avg_fn`` are given (PyTorch raises the same).
        TypeError, ValueError: ``device`` names no device (from :meth:`Module.to`).
    """

    n_averaged: Tensor[tuple[()], Any]
    module: Module

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: AvgFn | None = None,
        multi_avg_fn: MultiAvgFn | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            if isinstance(device, int) and not isinstance(device, bool):
                device = f"cuda:{device}"
            self.module = self.module.to(device)
            dev = as_device("AveragedModel", device)
        else:
            dev = _device_of(self.module)
        self.register_buffer("n_averaged", dev.tensor(np.zeros((), dtype=np.int64)))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """``self.module(*args, **kwargs)``: the averaged model's output."""
        return self.module(*args, **kwargs)

    def _n_on(self, like: AnyTensor) -> AnyTensor:
        """``n_averaged`` (untraced) in ``like``'s memory, as PyTorch's ``n_averaged.to(device)``."""
        return _on(self.n_averaged, like)

    @_tp.recorded_call
    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s parameters (and with ``use_buffers`` its buffers) into this
        model's, in place and under ``no_grad()`` (PyTorch's ``update_parameters``): the first
        call (``n_averaged == 0``) copies them, later ones apply ``avg_fn`` / ``multi_avg_fn``
        (default the equal-weight mean, by :func:`get_swa_avg_fn`'s formula on every device:
        PyTorch uses it on the CPU and :func:`get_swa_multi_avg_fn`'s ``lerp`` on a GPU).
        Without ``use_buffers``, the buffers are copied from ``model``. Then ``n_averaged += 1``.

        The tensors are paired in order (``zip``, as PyTorch's): ``model`` should have the
        architecture of the model this one was built from.

        Raises:
            RuntimeError: a tensor of ``model`` has another shape than the averaged tensor it
                is paired with (PyTorch's ``copy_`` error type; PyTorch lets a shape that
                broadcasts through, gradtape refuses every mismatch).
            ValueError: without ``use_buffers``, ``model`` has another number of buffers
                (PyTorch's ``zip(..., strict=True)`` error).
            ShapeError: ``avg_fn`` returned a value that does not broadcast to a parameter's
                shape.
        """
        if self.use_buffers:
            self_param: Iterable[AnyTensor] = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param: Iterable[AnyTensor] = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param = self.parameters()
            model_param = model.parameters()
        n = int(self.n_averaged.item())
        written: list[Array] = []
        with no_grad():
            averaged: list[AnyTensor] = []
            current: list[AnyTensor] = []
            for p_averaged, p_model in zip(self_param, model_param, strict=False):
                if p_model.shape != p_averaged.shape:
                    raise RuntimeError(
                        f"AveragedModel.update_parameters: the model's tensor #{len(averaged)} has shape "
                        f"{p_model.shape}, the averaged model's {p_averaged.shape}; the tensors are paired in order, "
                        "so pass a model of the architecture the averaged model was built from"
                    )
                averaged.append(p_averaged.detach())
                current.append(_on(p_model, p_averaged))
            if n == 0:  # every pair checked first: nothing is written if one does not fit
                for a, c in zip(averaged, current, strict=True):
                    _write(a.data, c.data)
                    written.append(a.data)
            else:
                if self.multi_avg_fn is not None or self.avg_fn is None:
                    groups: dict[tuple[str, int, str], tuple[list[AnyTensor], list[AnyTensor]]] = {}
                    for a, c in zip(averaged, current, strict=True):
                        mine, theirs = groups.setdefault(_group_key(a), ([], []))
                        mine.append(a)
                        theirs.append(c)
                    for mine, theirs in groups.values():
                        if self.multi_avg_fn is not None:
                            self.multi_avg_fn(mine, theirs, self._n_on(mine[0]))
                        else:  # PyTorch's CPU path: get_swa_avg_fn's formula, tensor by tensor
                            for a, c in zip(mine, theirs, strict=True):
                                _write(a.data, a.data + (c.data - a.data) / (n + 1))
                        written.extend(a.data for a in mine)
                else:
                    avg_fn = self.avg_fn
                    for a, c in zip(averaged, current, strict=True):
                        a.copy_(avg_fn(a.detach(), c, self._n_on(a)))
                        written.append(a.data)
            if not self.use_buffers:  # keep the buffers in sync with the model's
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    _write(b_swa.data, b_model.data)
                    written.append(b_swa.data)
            self.n_averaged.data[...] += 1
            written.append(self.n_averaged.data)
        note_writes(*written)


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every BatchNorm layer of ``model`` in one pass over
    ``loader`` (PyTorch's ``torch.optim.swa_utils.update_bn``): the statistics the averaged
    weights produce, which are not the average of the statistics of the models averaged.

    Each BatchNorm's ``running_mean``, ``running_var`` and ``num_batches_tracked`` are reset
    (0, 1, 0), its ``momentum`` set to ``None`` (the cumulative average: after ``k`` batches the
    running statistics are the mean of the ``k`` batch statistics, the variance unbiased per
    batch), and ``model`` is called on each batch in training mode under ``no_grad()``. The
    momenta and the model's training mode are restored afterwards (also when the pass raises).
    Nothing happens for a model without BatchNorm.

    Args:
        loader: an iterable of batches (a :class:`gradtape.utils.data.DataLoader`): each a
            tensor, or a list or tuple whose first element is the input tensor.
        model: the model (an :class:`AveragedModel` or any gradtape module).
        device: if given, each input is moved there with ``input.to(device)`` first.

    Raises:
        whatever ``model``'s forward raises on a batch (e.g. ``ValueError`` for a batch of one).
    """
    momenta: dict[_BatchNorm[Any], float | None] = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for bn in momenta:
        bn.momentum = None
    try:
        with no_grad():
            for batch in loader:
                x = batch[0] if isinstance(batch, (list, tuple)) else batch
                if device is not None:
                    x = x.to(device)
                model(x)
    finally:
        for bn, momentum in momenta.items():
            bn.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each parameter group's learning rate to a fixed SWA rate, then keep it there
    (PyTorch's ``torch.optim.swa_utils.SWALR``), for Stochastic Weight Averaging (Izmailov et
    al. 2018, "Averaging Weights Leads to Wider Optima and Better Generalization").

    At step ``s`` (0 at construction, +1 per :meth:`step`), with ``T = anneal_epochs``,
    ``t = clamp(s / max(1, T), 0, 1)`` and ``alpha = f(t)`` (``f(t) = (1 - cos(pi t)) / 2``
    for ``"cos"``, ``f(t) = t`` for ``"linear"``)::

        lr_s = swa_lr * alpha + lr_0 * (1 - alpha)

    where ``lr_0``, the rate annealing starts from, is recovered from the group's current rate
    and the previous step's ``alpha`` (PyTorch's recursive form), so the schedule starts from
    whatever rate the group has when SWALR is built (e.g. after another schedule).
    ``anneal_epochs=0`` jumps to ``swa_lr`` at once. Each group carries ``swa_lr``. As with
    every gradtape schedule, a negative rate is set as 0, and :meth:`get_lr` called directly
    does not warn (PyTorch's does; read the rates with :meth:`get_last_lr`).

    Args:
        optimizer: a gradtape optimizer.
        swa_lr: the SWA learning rate, one for all groups or a list or tuple with one per group.
        anneal_epochs: the number of annealing epochs, an int >= 0 (default 10).
        anneal_strategy: ``"cos"`` (default) or ``"linear"``.
        last_epoch: as :class:`~gradtape.optim.lr_scheduler.LRScheduler`.

    Raises:
        TypeError: ``optimizer`` is not a gradtape optimizer; a ``swa_lr`` is not a real
            number.
        ValueError: a list of ``swa_lr`` whose length is not the number of groups;
            ``anneal_strategy`` is neither ``"cos"`` nor ``"linear"``; ``anneal_epochs`` is not
            an int >= 0; ``last_epoch < -1``.
        KeyError: ``last_epoch >= 0`` and a group has no ``initial_lr``.
    """

    anneal_epochs: int
    _anneal_strategy: Literal["cos", "linear"]
    anneal_func: Callable[[float], float]

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | Sequence[float],
        anneal_epochs: int = 10,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"SWALR: {type(optimizer).__name__} is not an Optimizer")
        swa_lrs = [_real("SWALR", "swa_lr", v) for v in _per_group("SWALR", "swa_lr", optimizer, swa_lr)]
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The rate annealing started from, given the current ``lr`` at weight ``alpha``."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy: Literal["cos", "linear"]) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list[float]:
        """``swa_lr * alpha + lr_0 * (1 - alpha)`` per group, at the step count of the call
        (see the class docstring); :meth:`step` calls it."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0.0, min(1.0, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(float(g["lr"]), float(g["swa_lr"]), prev_alpha) for g in groups]
        t = max(0.0, min(1.0, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [float(g["swa_lr"]) * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs, strict=True)]

    def state_dict(self) -> dict[str, Any]:
        """As :meth:`LRScheduler.state_dict`, without ``anneal_func`` (PyTorch's keys:
        ``_anneal_strategy`` says which it is)."""
        state = super().state_dict()
        state.pop("anneal_func", None)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """As :meth:`LRScheduler.load_state_dict`; ``anneal_func`` is set from the loaded
        ``_anneal_strategy``."""
        if isinstance(state_dict, dict):
            state_dict = {k: v for k, v in state_dict.items() if k != "anneal_func"}
        super().load_state_dict(state_dict)
        self._set_anneal_func(self._anneal_strategy)
