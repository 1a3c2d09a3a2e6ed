"""Optimizers, learning-rate schedules and gradient clipping for gradtape parameters.

- :class:`SGD` (momentum, Nesterov: Sutskever et al. 2013), :class:`Adam` (Kingma & Ba
  2015, AMSGrad), :class:`AdamW` (Loshchilov & Hutter 2019), :class:`RMSprop` (Hinton's
  lecture 6e), :class:`Adadelta`, :class:`Adagrad`, :class:`Adamax`, :class:`NAdam`,
  :class:`RAdam`: PyTorch's ``torch.optim`` arguments, defaults and update rules, each
  parameter updated in place by one fused numba kernel pass
  (:mod:`gradtape.devices.kernels.optim`).
- :class:`LBFGS`: PyTorch's ``LBFGS``, ``opt.step(closure)`` (fixed step or strong Wolfe
  line search).
- :mod:`gradtape.optim.lr_scheduler` (PyTorch's path): ``LambdaLR``, ``MultiplicativeLR``,
  ``StepLR``, ``MultiStepLR``, ``ConstantLR``, ``ExponentialLR``, ``LinearLR``,
  ``PolynomialLR``, ``CosineAnnealingLR``, ``CosineAnnealingWarmRestarts``, ``CyclicLR``,
  ``OneCycleLR``, ``ReduceLROnPlateau``, ``SequentialLR``, ``ChainedScheduler``, each with
  ``state_dict``/``load_state_dict`` so that a resumed run continues exactly;
  :class:`StepLR`, :class:`CosineAnnealingLR` and :class:`LRScheduler` are also here.
- :func:`clip_grad_norm_`: clip the gradients in a :class:`~gradtape.Gradients` store by
  their global norm. PyTorch's form, on each parameter's ``.grad``, is
  :func:`gradtape.nn.utils.clip_grad_norm_` (``torch.nn.utils``'s place and signature; the
  same formula, one implementation).

Every optimizer's :meth:`~Optimizer.step` takes the gradients from a store, ``opt.step(grads)``,
or, with no argument, from each parameter's ``.grad`` as PyTorch's ``opt.step()`` does;
:meth:`~Optimizer.zero_grad` clears ``.grad`` (PyTorch's ``set_to_none``). PyTorch's spelling::

    opt = gradtape.optim.Adam(model.parameters(), lr=1e-3)
    loss.backward()                       # fills each parameter's .grad
    gradtape.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    opt.zero_grad()

A training step with a store (``model.parameters()`` is a list of untraced parameter tensors)::

    opt = gradtape.optim.Adam(model.parameters(), lr=1e-3)
    grads = Gradients.leaky()
    grads.retain_leafs(model.parameters())
    loss = cross_entropy(model.forward(dev.tensor(x).trace(grads)), y)
    grads = loss.backward()
    clip_grad_norm_(model.parameters(), grads, max_norm=1.0)
    opt.step(grads)

Gradient accumulation over micro-batches: a ``Gradients`` store traced into by several
forward passes accumulates (``+=``) every backward pass into the same buffers, so reuse one
store for ``k`` micro-batches, scale each loss by ``1 / k`` to get the mean, and step once::

    grads = Gradients.leaky()
    grads.retain_leafs(model.parameters())
    for xb, yb in micro_batches:          # k of them
        loss = cross_entropy(model.forward(dev.tensor(xb).trace(grads)), yb) * (1.0 / k)
        grads = loss.backward()           # the same store, gradients summed into it
    opt.step(grads)                       # one update with the accumulated gradient
"""

from __future__ import annotations

from gradtape.optim import lr_scheduler, swa_utils
from gradtape.optim.adaptive import Adadelta, Adagrad, Adamax, NAdam, RAdam
from gradtape.optim.clip import clip_grad_norm_
from gradtape.optim.lbfgs import LBFGS
from gradtape.optim.lr_scheduler import CosineAnnealingLR, LRScheduler, StepLR
from gradtape.optim.more import ASGD, Rprop
from gradtape.optim.optimizers import SGD, Adam, AdamW, Optimizer, RMSprop

__all__ = [
    "ASGD",
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "CosineAnnealingLR",
    "LRScheduler",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "StepLR",
    "clip_grad_norm_",
    "lr_scheduler",
    "swa_utils",
]
