"""PyTorch's ``torch.save`` / ``torch.load`` on gradtape: a checkpoint of nested dicts, lists
and tuples of tensors, numpy arrays and plain values (a ``state_dict()``, an optimizer's, an
epoch number) to a file and back.

The file is a pickle in which every tensor is replaced by its host array, dtype, device name
and ``requires_grad`` flag, so a checkpoint written from the GPU loads on a machine without
one (``map_location="cpu"``). :func:`load` reads it with an unpickler that only builds those
records, numpy arrays and Python's plain containers and values (PyTorch's ``weights_only=True``,
its default since 2.6): loading a file from elsewhere cannot run code. ``weights_only=False``
(for a whole pickled object, ``torch.save(model)``'s kind) uses Python's own unpickler: only for
files you trust.

For a module's parameters alone, :func:`gradtape.nn.save` writes safetensors.
"""

from __future__ import annotations

import io
import os
import pickle
from typing import IO, Any

import numpy as np

from gradtape.devices import _arrays
from gradtape.devices.default import as_device
from gradtape.tensor import Tensor

__all__ = ["load", "save"]

_PROTOCOL = 4


class _SavedTensor:
    """A tensor in a checkpoint: its host array, device name and whether it requires grad."""

    __slots__ = ("data", "device", "requires_grad")

    def __init__(self, data: np.ndarray[Any, Any], device: str, requires_grad: bool) -> None:
        self.data, self.device, self.requires_grad = data, device, requires_grad

    def __reduce__(self) -> tuple[Any, ...]:
        return (_SavedTensor, (self.data, self.device, self.requires_grad))


def _pack(obj: Any, path: str) -> Any:
    """``obj`` with each tensor replaced by a :class:`_SavedTensor` (dicts, lists and tuples
    walked; ``path`` names the place for errors)."""
    if isinstance(obj, Tensor):
        dev = obj.device
        name = "cpu" if getattr(dev, "type", "cpu") == "cpu" else f"cuda:{getattr(dev, 'index', 0)}"
        return _SavedTensor(np.array(_arrays.into_memory_of(obj.data, None)), name, bool(obj.requires_grad))
    if isinstance(obj, dict):
        return obj.__class__((k, _pack(v, f"{path}[{k!r}]")) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return obj.__class__(_pack(v, f"{path}[{i}]") for i, v in enumerate(obj))
    return obj


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes]) -> None:
    """``torch.save(obj, f)``: write ``obj`` (a ``state_dict()``, an optimizer's state, nested
    dicts/lists/tuples of tensors, arrays, numbers and strings) to the path or binary file ``f``.

    Raises:
        OSError: the file cannot be written.
        pickle.PicklingError, TypeError: ``obj`` holds something pickle cannot write (a tensor
            recording on a live tape: detach it).
    """
    packed = _pack(obj, "obj")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            pickle.dump(packed, fh, protocol=_PROTOCOL)
    else:
        pickle.dump(packed, f, protocol=_PROTOCOL)


_ALLOWED = {
    ("gradtape.serialization", "_SavedTensor"),
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "slice"),
    ("builtins", "complex"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.numeric", "_frombuffer"),
}
"""The globals a ``weights_only`` load may build: the tensor records, numpy arrays and scalars,
Python's plain containers."""


class _WeightsUnpickler(pickle.Unpickler):
    """Python's unpickler restricted to :data:`_ALLOWED` (PyTorch's ``weights_only``)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"load: the file asks for {module}.{name}, which a weights_only load does not build (it holds more "
            "than tensors, arrays and plain values); pass weights_only=False for a file you trust"
        )


def _unpack(obj: Any, map_location: Any) -> Any:
    """``obj`` with each :class:`_SavedTensor` rebuilt as a tensor on ``map_location`` (or the
    device it was saved from)."""
    if isinstance(obj, _SavedTensor):
        where = obj.device if map_location is None else map_location
        dev = as_device("load", where)
        t = dev.tensor(obj.data, obj.data.dtype)
        return t.requires_grad_() if obj.requires_grad else t
    if isinstance(obj, dict):
        return obj.__class__((k, _unpack(v, map_location)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return obj.__class__(_unpack(v, map_location) for v in obj)
    return obj


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, weights_only: bool = True) -> Any:
    """``torch.load(f, map_location=None, weights_only=True)``: read what :func:`save` wrote.
    Tensors come back on ``map_location`` (``"cpu"``, ``"cuda"``, a device) or the device they
    were saved from, with their dtype and ``requires_grad``; they are new tensors (load them
    into a model with ``model.load_state_dict``).

    Raises:
        OSError: the file cannot be read.
        pickle.UnpicklingError: a ``weights_only`` load met something other than tensors,
            arrays and plain values (the message names it), or the file is not a checkpoint.
        RuntimeError: a tensor's device is a GPU this machine does not have (pass
            ``map_location="cpu"``).
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            raw = fh.read()
    else:
        raw = f.read()
    buf = io.BytesIO(raw)
    obj = _WeightsUnpickler(buf).load() if weights_only else pickle.load(buf)
    return _unpack(obj, map_location)
