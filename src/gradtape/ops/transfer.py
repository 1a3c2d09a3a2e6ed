"""Moving a tensor between devices (PyTorch's ``x.to("cuda")``, ``x.cpu()``), differentiably."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradtape._typing import S, T
from gradtape.devices._arrays import same_device
from gradtape.ops._util import record_unary

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["to_device"]


def to_device(a: Tensor[S, T], device: Any) -> Tensor[S, T]:
    """``a`` on ``device`` (a ``Cpu`` or a ``Cuda``): PyTorch's ``a.to(device)``.

    A tensor already on that device's memory is returned as it is (PyTorch's rule). Otherwise
    the values are copied (host to GPU, GPU to host, or GPU to GPU) into a new tensor on
    ``device``, recorded like any op: the gradient flows back, copied to ``a``'s device, so a
    model whose parameters live on the CPU and whose loss is computed on the GPU still gets
    every gradient. Integer and bool tensors move without a tape.

    Args:
        a: a tensor of any shape and dtype.
        device: the target device object (see :meth:`gradtape.tensor.Tensor.to` for names).

    Returns:
        ``Tensor[S, T]`` with ``a``'s shape, dtype and tape kind, on ``device``.
    """
    if same_device(a.device, device):
        return a
    data = device._put(a.data)
    if a.data.dtype.kind != "f":
        moved: Tensor[S, T] = a._like(data)
    else:
        source = a.device
        moved = record_unary(a, data, _move_back, source, diff=lambda g, rebuild, o, i: to_device(g, source))
    moved.device = device
    return moved


def _move_back(grads: Gradients, i: int, g: Any, source: Any) -> None:
    """to_device's first rule: the output's gradient copied to the input's device."""
    grads._accum(i, source._put(g))
