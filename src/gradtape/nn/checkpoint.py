"""Saving and loading a module's parameters and buffers as a safetensors file.

Keys are the names of :meth:`Module.named_parameters` followed by those of
:meth:`Module.named_buffers` (BatchNorm's ``running_mean`` / ``running_var``), e.g.
``"0.weight"``; values are the arrays in their own dtype, written with
``safetensors.numpy.save_file``. The layout matches PyTorch's ``state_dict`` for the layers
gradtape shares with it, so a file can be read by ``safetensors.torch.load_file``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from gradtape.errors import DTypeError, ShapeError
from gradtape.nn.module import Module
from gradtape.tensor import Tensor

__all__ = ["load", "save", "state_dict"]


def state_dict(module: Module) -> dict[str, Tensor[Any, Any]]:
    """``{name: tensor}`` for every parameter and buffer, parameters first (the tensors
    themselves, not copies)."""
    out = dict(module.named_parameters())
    for name, t in module.named_buffers():
        out.setdefault(name, t)
    return out


def save(module: Module, path: str | os.PathLike[str]) -> None:
    """Write ``module``'s parameters and buffers to the safetensors file ``path``.

    Raises:
        OSError: the file cannot be written.
    """
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(t.data) for k, t in state_dict(module).items()}, os.fspath(path))


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
            key and the file), or, with ``strict``, the file has unexpected keys.
        ShapeError: a stored array's shape differs (the message names the key and both shapes).
        DTypeError: a stored array's dtype differs (the message names the key and both dtypes).
    """
    from safetensors.numpy import load_file

    p = os.fspath(path)
    stored = load_file(p)
    targets = state_dict(module)
    for name, t in targets.items():
        if name not in stored:
            raise KeyError(f"load: key {name!r} (shape {t.shape}) is missing from {p}")
        arr = stored[name]
        if arr.shape != t.shape:
            raise ShapeError(f"load: {name!r} has shape {arr.shape} in {p} but the module expects {t.shape}")
        if arr.dtype != t.dtype:
            raise DTypeError(f"load: {name!r} has dtype {arr.dtype} in {p} but the module expects {t.dtype}")
    if strict:
        extra = sorted(set(stored) - set(targets))
        if extra:
            raise KeyError(f"load: {p} has keys the module does not: {extra}")
    for name, t in targets.items():
        t.data[...] = stored[name]
