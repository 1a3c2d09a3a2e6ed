"""Exceptions raised by gradtape.

Every error names the op that raised it and the shapes and dtypes involved, so a
bad call is diagnosed from the message alone.
"""

from __future__ import annotations

__all__ = [
    "DTypeError",
    "DeviceError",
    "DivisionByZeroError",
    "GradtapeError",
    "NumericalInstabilityError",
    "ShapeError",
    "TapeError",
]


class GradtapeError(Exception):
    """Base class of all gradtape errors."""


class ShapeError(GradtapeError, ValueError):
    """A tensor's shape does not fit the op (the message names the op and both shapes).

    Subclasses :class:`ValueError`, so code catching numpy's shape errors keeps working.
    """


class DTypeError(GradtapeError, TypeError):
    """Tensors of different or unsupported dtypes met in one op (float32 and float64 never mix
    silently; the message names the op, the dtypes and the shapes)."""


class DeviceError(GradtapeError, RuntimeError):
    """Tensors on different devices met in one op (a GPU tensor and a CPU tensor, or two
    GPUs): the message names the op and both devices. Move one first (``x.to(y.device)``,
    ``x.cuda()``, ``x.cpu()``), as in PyTorch, whose error is a ``RuntimeError`` too."""


class DivisionByZeroError(GradtapeError, ZeroDivisionError, RuntimeError):
    """An integer ``//``, ``%``, ``floor_divide``, ``remainder`` or ``fmod`` met a zero divisor
    (the message names the op, the dtypes and the shapes). PyTorch raises a ``RuntimeError``
    there, Python a ``ZeroDivisionError``: this is both. Float division by zero is not an
    error (``inf``/``nan``, as in PyTorch)."""


class TapeError(GradtapeError, RuntimeError):
    """A tape was used wrongly: executed twice, extended after it was consumed, ``backward()``
    called on a tensor without a tape or on a non-scalar tensor."""


class NumericalInstabilityError(GradtapeError, FloatingPointError):
    """A NaN or Inf appeared while anomaly detection was on (:func:`gradtape.autograd.detect_anomaly`;
    the Mamba crate's ``ModelError::numerical_instability``): the message names the op (the
    one whose backward produced a non-finite gradient, or the one that produced a non-finite
    forward value and the op that read it) and the file and line that called it."""
