"""Saving and loading a module's parameters and buffers as a safetensors file.

Keys are those of :meth:`Module.state_dict` (PyTorch's keys in PyTorch's order: each module's
parameters, then its persistent buffers such as BatchNorm's ``running_mean`` /
``running_var`` / ``num_batches_tracked``, then its children's; tied weights under every
name), e.g. ``"0.weight"``; values are the arrays in their own dtype, written with
``safetensors.numpy.save_file``. The layout matches PyTorch's ``state_dict`` for the layers
gradtape shares with it, so a file read by ``safetensors.torch.load_file`` loads into the
PyTorch model strictly.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from gradtape.devices import _arrays
from gradtape.errors import DTypeError, ShapeError
from gradtape.nn.module import Module
from gradtape.tensor import Tensor

__all__ = ["load", "save", "state_dict"]


def state_dict(module: Module) -> dict[str, Tensor[Any, Any]]:
    """``{name: tensor}`` for every parameter and persistent buffer, in PyTorch's order, tied
    weights under each name: ``module.state_dict(keep_vars=True)`` (the tensors themselves,
    not copies)."""
    return module.state_dict(keep_vars=True)


def save(module: Module, path: str | os.PathLike[str]) -> None:
    """Write ``module``'s parameters and buffers to the safetensors file ``path``.

    Raises:
        OSError: the file cannot be written.
    """
    from safetensors.numpy import save_file

    # np.require keeps a 0-d array (num_batches_tracked) 0-d; np.ascontiguousarray makes it 1-d
    # (a GPU tensor's array is copied to the host first: the file is written from host memory)
    arrays = {k: _arrays.into_memory_of(t.data, None) for k, t in state_dict(module).items()}
    save_file({k: np.require(a, requirements="C") for k, a in arrays.items()}, os.fspath(path))


def load(module: Module, path: str | os.PathLike[str], strict: bool = True) -> None:
    """Copy the arrays in the safetensors file ``path`` into ``module``'s parameters and
    buffers, in place (the tensors keep their ids, so gradient stores and optimisers that
    refer to them stay valid). Everything is checked before anything is written.

    Args:
        module: the module to fill; its structure must match the file's keys.
        path: a file written by :func:`save` (or any safetensors file with these keys).
        strict: also reject keys in the file that the module does not have.

    Raises:
        KeyError: a parameter or buffer is missing from the file (the message names the
            key and the file), or, with ``strict``, the file has unexpected keys. A missing
            BatchNorm ``num_batches_tracked`` (files written before gradtape had one) is not
            an error: the layer keeps its count.
        ShapeError: a stored array's shape differs (the message names the key and both shapes).
        DTypeError: a stored array's dtype differs (the message names the key and both dtypes).
    """
    from safetensors.numpy import load_file

    p = os.fspath(path)
    stored = load_file(p)
    targets: dict[str, Tensor[Any, Any]] = {}
    for name, t, owner, own in module._state_entries():
        if name not in stored:
            if own in owner._optional_state:
                continue
            raise KeyError(f"load: key {name!r} (shape {t.shape}) is missing from {p}")
        targets[name] = t
        arr = stored[name]
        if arr.shape != t.shape:
            raise ShapeError(f"load: {name!r} has shape {arr.shape} in {p} but the module expects {t.shape}")
        if arr.dtype != t.dtype:
            raise DTypeError(f"load: {name!r} has dtype {arr.dtype} in {p} but the module expects {t.dtype}")
    if strict:
        extra = sorted(set(stored) - {k for k, _, _, _ in module._state_entries()})
        if extra:
            raise KeyError(f"load: {p} has keys the module does not: {extra}")
    for name, t in targets.items():
        t.data[...] = _arrays.into_memory_of(stored[name], t.data)  # onto the tensor's device
