"""Activation layers (:class:`ReLU`, :class:`LeakyReLU`, :class:`ELU`, :class:`GELU`,
:class:`Tanh`, :class:`Sigmoid`, :class:`SiLU`, :class:`Softmax`, :class:`LogSoftmax`, and
PyTorch's other ``nn`` activations: :class:`ReLU6`, :class:`Hardtanh`, :class:`Softplus`,
:class:`PReLU` (the one with a parameter), :class:`RReLU`, ...), :class:`Identity`, the dropouts
(:class:`Dropout`, :class:`Dropout1d`, :class:`Dropout2d`, :class:`Dropout3d`, :class:`AlphaDropout`,
:class:`FeatureAlphaDropout`), :class:`Flatten` and :class:`Unflatten`, with PyTorch's constructor
arguments.

The activations keep the input's shape type and tape kind (``Tensor[S, T] -> Tensor[S, T]``);
:class:`Flatten` types ``(N, ...) -> (N, int)`` for inputs of rank 2 to 4.

``inplace=True`` (PyTorch's argument of ``ReLU``, ``LeakyReLU``, ``ELU``, ``SiLU``, ``RReLU`` and
the dropouts) is accepted and changes nothing: gradtape's ops never overwrite their input, and
the values and gradients are those of the in-place PyTorch layer.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, overload

import numpy as np

from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.errors import DTypeError, ShapeError
from gradtape.nn._typing import D1, D2, D3, ED, SD, N, S, T
from gradtape.nn.functional import _alpha_dropout, _channel_dropout, _feature_alpha_dropout, _rrelu
from gradtape.nn.module import Module
from gradtape.ops.nn import _generator, dropout, glu, prelu  # the unwrapped ops: Module.__call__ checked x
from gradtape.ops.softmax import log_softmax, softmax, softmin
from gradtape.ops.unary import (
    celu,
    elu,
    gelu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
)
from gradtape.shapes import AnyShape, Rank1, Rank2, Rank3, Rank4
from gradtape.tape import NONE_TAPE, NoneTape
from gradtape.tensor import Tensor

__all__ = [
    "CELU",
    "AlphaDropout",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "FeatureAlphaDropout",
    "ELU",
    "Flatten",
    "GELU",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "Identity",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "RReLU",
    "ReLU",
    "ReLU6",
    "SELU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
    "Unflatten",
]


def _real(layer: str, name: str, value: object) -> float:
    """``value`` as a float.

    Raises:
        TypeError: it is not a real number (a bool included); the message names the layer.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{layer}: {name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)


def _probability(layer: str, p: object) -> float:
    """``p`` as a float in ``[0, 1]``.

    Raises:
        ValueError: it is not a number in ``[0, 1]`` (PyTorch's error).
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{layer}: dropout probability has to be between 0 and 1, but got {p!r}")
    return float(p)


class _Activation(Module):
    """An elementwise activation layer: ``forward`` applies the class's ``_op``, one of the
    elementwise ops of :mod:`gradtape.ops.unary` (the function ``Tensor``'s method of that
    name is)."""

    _op: Callable[[Tensor[Any, Any]], Tensor[Any, Any]]

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """Same shape and dtype as ``x``."""
        return self._op(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class _InplaceActivation(_Activation):
    """An activation whose PyTorch layer takes ``inplace`` (accepted, changes nothing: see the
    module docstring)."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace


class ReLU(_InplaceActivation):
    """``y = max(x, 0)`` elementwise; gradient ``g * (x > 0)`` (PyTorch's ``nn.ReLU``).

    Args:
        inplace: accepted for PyTorch compatibility; changes nothing (see the module docstring).
    """

    _op = staticmethod(relu)


class LeakyReLU(Module):
    """``y = x`` where ``x > 0``, else ``negative_slope * x`` (PyTorch's ``nn.LeakyReLU``;
    Maas et al. 2013). Gradient ``1`` where ``x > 0``, else ``negative_slope`` (also at 0, as
    PyTorch). Shape, dtype and tape kind of ``x``.

    Args:
        negative_slope: the slope for ``x <= 0`` (default ``0.01``).
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        TypeError: ``negative_slope`` is not a real number.
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        self.negative_slope = _real("LeakyReLU", "negative_slope", negative_slope)
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.leaky_relu` of ``x``."""
        return leaky_relu(x, self.negative_slope)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """Exponential linear unit (Clevert et al. 2015; PyTorch's ``nn.ELU``): ``y = x`` where
    ``x > 0``, else ``alpha * (exp(x) - 1)``. Gradient ``1`` where ``x > 0``, else
    ``alpha * exp(x)``. Shape, dtype and tape kind of ``x``.

    Args:
        alpha: the scale of the negative part (default ``1.0``).
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        TypeError: ``alpha`` is not a real number.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        self.alpha = _real("ELU", "alpha", alpha)
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.elu` of ``x``."""
        return elu(x, self.alpha)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class GELU(Module):
    """Gaussian error linear unit ``y = x * Phi(x)`` (Hendrycks & Gimpel 2016; PyTorch's
    ``nn.GELU``), as :func:`gradtape.ops.gelu`: ``approximate="none"`` (the default) is the
    exact erf form, ``"tanh"`` the approximation
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))``. Shape, dtype and tape kind of ``x``.

    Raises:
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.
    """

    def __init__(self, approximate: Literal["none", "tanh"] = "none") -> None:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.gelu` of ``x`` with this layer's ``approximate``."""
        return gelu(x, self.approximate)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(_Activation):
    """``y = tanh(x)``; gradient ``g * (1 - y**2)``."""

    _op = staticmethod(tanh)


class Sigmoid(_Activation):
    """``y = 1 / (1 + exp(-x))``; gradient ``g * y * (1 - y)``."""

    _op = staticmethod(sigmoid)


class SiLU(_InplaceActivation):
    """``y = x * sigmoid(x)`` (swish; Elfwing et al. 2017; PyTorch's ``nn.SiLU``).

    Args:
        inplace: accepted for PyTorch compatibility; changes nothing.
    """

    _op = staticmethod(silu)


def _softmax_dim(layer: str, dim: int | None, ndim: int) -> int:
    """``dim``, or for ``None`` PyTorch's legacy implicit choice (0 for 0-, 1- and 3-D inputs,
    else 1) with PyTorch's deprecation warning."""
    if dim is not None:
        return dim
    warnings.warn(
        f"{layer}: implicit dimension choice has been deprecated (as in PyTorch); pass dim=", UserWarning, stacklevel=4
    )
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """Softmax along ``dim`` (PyTorch's ``nn.Softmax``):
    ``y = exp(x) / sum(exp(x), dim)``, computed stably (:func:`gradtape.ops.softmax`).
    Shape, dtype and tape kind of ``x``.

    Args:
        dim: the axis that sums to 1 (negative counts from the end). ``None`` (PyTorch's
            default, deprecated there) picks PyTorch's legacy axis: 0 for 0-, 1- and 3-D
            inputs, else 1, with a warning.

    Raises (on forward): ShapeError when ``dim`` is out of range for ``x``.
    """

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``softmax(x, dim)``."""
        return softmax(x, _softmax_dim("Softmax", self.dim, x.ndim))

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax along ``dim`` (PyTorch's ``nn.LogSoftmax``): ``y = x - log(sum(exp(x), dim))``
    (:func:`gradtape.ops.log_softmax`). Shape, dtype and tape kind of ``x``. ``dim`` as
    :class:`Softmax`.

    Raises (on forward): ShapeError when ``dim`` is out of range for ``x``.
    """

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``log_softmax(x, dim)``."""
        return log_softmax(x, _softmax_dim("LogSoftmax", self.dim, x.ndim))

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Identity(Module):
    """``y = x``, the input itself (PyTorch's ``nn.Identity``): a placeholder where a model
    may or may not have a layer. Any constructor arguments are accepted and ignored, as in
    PyTorch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        del args, kwargs

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``x`` itself."""
        return x

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class Dropout(Module):
    """Inverted dropout (Srivastava et al. 2014; PyTorch's ``nn.Dropout``): in training mode each
    element is zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``; in eval
    mode the identity. Masks come from the input device's seeded generator.

    Args:
        p: the drop probability, ``0 <= p <= 1``.
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        self.p = p
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``x`` masked and rescaled (training) or ``x`` itself (eval)."""
        return dropout(x, self.p, training=self.training)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Dropout2d(Module):
    """Channel dropout (Tompson et al. 2015, "Efficient Object Localization Using
    Convolutional Networks"; PyTorch's ``nn.Dropout2d``): in training mode each channel
    ``x[n, c]`` of an ``(N, C, H, W)`` input is zeroed as a whole with probability ``p`` and the
    others scaled by ``1 / (1 - p)``; in eval mode the identity.

    ``y = x * m`` with ``m`` of shape ``(N, C, 1, 1)``, ``m = keep / (1 - p)``, ``keep`` drawn
    from the input device's seeded generator (a ``Cpu(seed=...)`` repeats its masks); the
    gradient is ``g * m``. A 3-D input is taken as ``(N, C, L)`` with a mask ``(N, C, 1)``, as
    PyTorch does (with its warning that this will change).

    Args:
        p: the probability of zeroing a channel, ``0 <= p <= 1``.
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.
        ShapeError: (on forward) ``x`` is neither 3-D nor 4-D (PyTorch warns and goes on for
            other ranks; a 2-D input wants :class:`Dropout`).
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        self.p = _probability("Dropout2d", p)
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``x`` with whole channels masked and the rest rescaled (training), or ``x`` (eval)."""
        if x.ndim not in (3, 4):
            raise ShapeError(
                f"Dropout2d: expected a 4-D (N, C, H, W) input (or 3-D, taken as (N, C, L)), got shape {x.shape}"
            )
        if x.dtype.kind != "f":
            raise DTypeError(f"Dropout2d: expected a float32/float64 input, got dtype {x.dtype} (shape {x.shape})")
        if not self.training or self.p == 0.0:
            return x
        if x.ndim == 3:
            warnings.warn(
                "Dropout2d: a 3-D input is taken as (N, C, L) and whole channels x[n, c] are dropped, as PyTorch "
                "does today; use a 4-D input",
                UserWarning,
                stacklevel=3,
            )
        dt = x.dtype
        mask_shape = (*x.shape[:2], *(1,) * (x.ndim - 2))
        if self.p == 1.0:
            m = np.zeros(mask_shape, dt)
        else:
            keep = _generator(None, x).random(mask_shape, dtype=dt) >= dt.type(self.p)
            m = np.multiply(keep, dt.type(1.0 / (1.0 - self.p)), dtype=dt)
        out: Tensor[S, T] = x * x._like(m)
        return out

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Flatten(Module, Generic[SD, ED]):
    """Flatten dims ``start_dim..end_dim`` into one (PyTorch's ``nn.Flatten``; default: all but
    the batch dim), ``(N, C, H, W) -> (N, C*H*W)``. A reshape: the gradient is reshaped back.

    Typed ``Flatten[SD, ED]``, the types of ``start_dim`` and ``end_dim``: ``Flatten()``
    (the defaults, ``Flatten[Literal[1], Literal[-1]]``) maps ``Tensor[Rank2[N, Any], T]``,
    ``Tensor[Rank3[N, Any, Any], T]`` and ``Tensor[Rank4[N, Any, Any, Any], T]`` to
    ``Tensor[Rank2[N, int], T]`` (the flattened size is computed at run time; the tape kind
    is kept). Any other rank, an untyped input, or a Flatten built with other dims
    (``Flatten[int, int]``, also what a bare ``Flatten`` annotation means) gives
    ``Tensor[Any, T]``.

    Raises (on forward): ValueError when the dims are out of range for the input.
    """

    @overload
    def __init__(
        self: Flatten[Literal[1], Literal[-1]], start_dim: Literal[1] = 1, end_dim: Literal[-1] = -1
    ) -> None: ...
    @overload
    def __init__(self: Flatten[int, int], start_dim: int = 1, end_dim: int = -1) -> None: ...
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = start_dim, end_dim

    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    @overload
    def forward(self: Flatten[Literal[1], Literal[-1]], x: Tensor[Rank2[N, D1], T]) -> Tensor[Rank2[N, int], T]: ...
    @overload
    def forward(self: Flatten[Literal[1], Literal[-1]], x: Tensor[Rank3[N, D1, D2], T]) -> Tensor[Rank2[N, int], T]: ...
    @overload
    def forward(
        self: Flatten[Literal[1], Literal[-1]], x: Tensor[Rank4[N, D1, D2, D3], T]
    ) -> Tensor[Rank2[N, int], T]: ...
    @overload
    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``x`` reshaped with the flattened dims multiplied together."""
        nd = x.ndim
        s = self.start_dim + nd if self.start_dim < 0 else self.start_dim
        e = self.end_dim + nd if self.end_dim < 0 else self.end_dim
        if not 0 <= s <= e < nd:
            raise ValueError(f"Flatten: dims {self.start_dim}..{self.end_dim} out of range for shape {x.shape}")
        shape = x.shape
        n = 1
        for d in shape[s : e + 1]:
            n *= d
        return x.reshape((*shape[:s], n, *shape[e + 1 :]))

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (PyTorch's ``nn.Unflatten``), e.g.
    ``Unflatten(1, (C, H, W))`` maps ``(N, C*H*W)`` to ``(N, C, H, W)``; the inverse of
    :class:`Flatten`. A reshape: the gradient is reshaped back. Untyped output
    (``Tensor[Any, T]``, the input's tape kind).

    Args:
        dim: the dim to split (negative counts from the end).
        unflattened_size: the sizes it becomes, a tuple or list of ints whose product is the
            dim's size; one of them may be ``-1`` (inferred).

    Raises:
        TypeError: ``dim`` is not an int or ``unflattened_size`` not a sequence of ints.
        ValueError: ``unflattened_size`` holds more than one ``-1``, or a size below ``-1``.
        ShapeError: (on forward) ``dim`` out of range, or the sizes do not multiply to the
            dim's size (the message names both).
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"Unflatten: dim must be an int, got {type(dim).__name__} {dim!r}")
        if isinstance(unflattened_size, (str, bytes)) or not isinstance(unflattened_size, Sequence):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple or list of ints, got {unflattened_size!r}")
        sizes = tuple(unflattened_size)
        if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in sizes):
            raise TypeError(f"Unflatten: unflattened_size must hold ints, got {unflattened_size!r}")
        if sum(1 for n in sizes if n == -1) > 1 or any(n < -1 for n in sizes):
            raise ValueError(f"Unflatten: unflattened_size may hold one -1 and sizes >= 0, got {sizes}")
        self.dim, self.unflattened_size = int(dim), tuple(int(n) for n in sizes)

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """``x`` reshaped: ``shape[:dim] + unflattened_size + shape[dim + 1:]``."""
        shape = x.shape
        d = self.dim + len(shape) if self.dim < 0 else self.dim
        if not 0 <= d < len(shape):
            raise ShapeError(f"Unflatten: dim {self.dim} is out of range for shape {shape}")
        sizes = self.unflattened_size
        known = math.prod(n for n in sizes if n != -1)
        if -1 in sizes:
            if known == 0 or shape[d] % known:
                raise ShapeError(
                    f"Unflatten: sizes {sizes} cannot split dim {self.dim} of size {shape[d]} (input shape {shape})"
                )
            sizes = tuple(shape[d] // known if n == -1 else n for n in sizes)
        elif known != shape[d]:
            raise ShapeError(
                f"Unflatten: sizes {sizes} don't multiply up to the size of dim {self.dim} ({shape[d]}) "
                f"of the input (shape {shape})"
            )
        return x.reshape((*shape[:d], *sizes, *shape[d + 1 :]))

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ----- more of PyTorch's activation layers --------------------------------------------------


class ReLU6(_InplaceActivation):
    """``y = min(max(x, 0), 6)`` (PyTorch's ``nn.ReLU6``, :func:`gradtape.ops.relu6`);
    gradient ``1`` for ``0 < x < 6``, else ``0``.

    Args:
        inplace: accepted for PyTorch compatibility; changes nothing.
    """

    _op = staticmethod(relu6)


class Softsign(_Activation):
    """``y = x / (1 + |x|)`` (PyTorch's ``nn.Softsign``, :func:`gradtape.ops.softsign`)."""

    _op = staticmethod(softsign)


class Tanhshrink(_Activation):
    """``y = x - tanh(x)`` (PyTorch's ``nn.Tanhshrink``, :func:`gradtape.ops.tanhshrink`)."""

    _op = staticmethod(tanhshrink)


class LogSigmoid(_Activation):
    """``y = log(sigmoid(x))`` computed without overflow (PyTorch's ``nn.LogSigmoid``,
    :func:`gradtape.ops.logsigmoid`)."""

    _op = staticmethod(logsigmoid)


class Mish(_InplaceActivation):
    """``y = x * tanh(softplus(x))`` (Misra 2019; PyTorch's ``nn.Mish``, :func:`gradtape.ops.mish`).

    Args:
        inplace: accepted for PyTorch compatibility; changes nothing.
    """

    _op = staticmethod(mish)


class SELU(_InplaceActivation):
    """Scaled ELU (Klambauer et al. 2017; PyTorch's ``nn.SELU``, :func:`gradtape.ops.selu`).

    Args:
        inplace: accepted for PyTorch compatibility; changes nothing.
    """

    _op = staticmethod(selu)


class Hardswish(_InplaceActivation):
    """``y = x * relu6(x + 3) / 6`` (MobileNetV3; PyTorch's ``nn.Hardswish``,
    :func:`gradtape.ops.hardswish`).

    Args:
        inplace: accepted for PyTorch compatibility; changes nothing.
    """

    _op = staticmethod(hardswish)


class Hardsigmoid(_InplaceActivation):
    """``y = relu6(x + 3) / 6`` (PyTorch's ``nn.Hardsigmoid``, :func:`gradtape.ops.hardsigmoid`).

    Args:
        inplace: accepted for PyTorch compatibility; changes nothing.
    """

    _op = staticmethod(hardsigmoid)


class Hardtanh(Module):
    """``x`` clamped into ``[min_val, max_val]`` (PyTorch's ``nn.Hardtanh``,
    :func:`gradtape.ops.hardtanh`); gradient ``1`` strictly inside, else ``0``. Shape, dtype
    and tape kind of ``x``.

    Args:
        min_val, max_val: the bounds (default ``-1``, ``1``).
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        TypeError: a bound is not a real number. ValueError: ``min_val > max_val``.
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        self.min_val = _real("Hardtanh", "min_val", min_val)
        self.max_val = _real("Hardtanh", "max_val", max_val)
        if self.min_val > self.max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.hardtanh` of ``x``."""
        return hardtanh(x, self.min_val, self.max_val)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class _Shrink(Module):
    """A thresholding layer with PyTorch's ``lambd`` (``>= 0``, default ``0.5``): ``forward``
    applies the class's ``_op`` (``softshrink`` or ``hardshrink`` of :mod:`gradtape.ops.unary`).

    Raises:
        TypeError: ``lambd`` is not a real number. ValueError: it is negative.
    """

    _op: Callable[..., Tensor[Any, Any]]

    def __init__(self, lambd: float = 0.5) -> None:
        name = type(self).__name__
        self.lambd = _real(name, "lambd", lambd)
        if not self.lambd >= 0.0:
            raise ValueError(f"{name}: lambda must be greater or equal to 0, but found to be {lambd}")

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """The thresholded ``x``, same shape and dtype."""
        return self._op(x, self.lambd)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return str(self.lambd)


class Softshrink(_Shrink):
    """Soft thresholding (PyTorch's ``nn.Softshrink``, :func:`gradtape.ops.softshrink`):
    ``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else ``0``.

    Raises:
        TypeError: ``lambd`` is not a real number. ValueError: it is negative.
    """

    _op = staticmethod(softshrink)


class Hardshrink(_Shrink):
    """Hard thresholding (PyTorch's ``nn.Hardshrink``, :func:`gradtape.ops.hardshrink`): ``x``
    where ``|x| > lambd``, else ``0``.

    Raises:
        TypeError: ``lambd`` is not a real number. ValueError: it is negative.
    """

    _op = staticmethod(hardshrink)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value`` (PyTorch's ``nn.Threshold``,
    :func:`gradtape.ops.threshold`).

    Args:
        threshold: the level. value: what replaces elements at or below it.
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        TypeError: ``threshold`` or ``value`` is not a real number.
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        self.threshold = _real("Threshold", "threshold", threshold)
        self.value = _real("Threshold", "value", value)
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.threshold` of ``x``."""
        return threshold(x, self.threshold, self.value)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class CELU(Module):
    """Continuously differentiable ELU (Barron 2017; PyTorch's ``nn.CELU``,
    :func:`gradtape.ops.celu`): ``x`` where ``x > 0``, else ``alpha * (exp(x / alpha) - 1)``.

    Args:
        alpha: the scale (default ``1.0``; not 0).
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        TypeError: ``alpha`` is not a real number. ValueError: it is 0.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        self.alpha = _real("CELU", "alpha", alpha)
        if self.alpha == 0.0:
            raise ValueError("CELU: alpha must not be 0")
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.celu` of ``x``."""
        return celu(x, self.alpha)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold`` (PyTorch's
    ``nn.Softplus``, :func:`gradtape.ops.softplus`).

    Args:
        beta: the sharpness (default ``1.0``). threshold: the linear region's start (default ``20``).

    Raises:
        TypeError: ``beta`` or ``threshold`` is not a real number (ValueError on forward for a
            0 or infinite ``beta``, as :func:`gradtape.ops.softplus`).
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        self.beta = _real("Softplus", "beta", beta)
        self.threshold = _real("Softplus", "threshold", threshold)

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.softplus` of ``x``."""
        return softplus(x, self.beta, self.threshold)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class GLU(Module):
    """The gated linear unit (Dauphin et al. 2017; PyTorch's ``nn.GLU``, :func:`gradtape.ops.glu`):
    ``x`` halved along ``dim`` into ``a, b``, ``a * sigmoid(b)``.

    Args:
        dim: the dim to halve (default ``-1``).

    Raises (on forward): ShapeError when ``dim`` is out of range or its size is odd.
    """

    def __init__(self, dim: int = -1) -> None:
        self.dim = dim

    def forward(self, x: Tensor[Any, T]) -> Tensor[Any, T]:
        """:func:`gradtape.ops.glu` of ``x``."""
        return glu(x, self.dim)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """Softmax of ``-x`` along ``dim`` (PyTorch's ``nn.Softmin``, :func:`gradtape.ops.softmin`);
    ``dim=None`` as :class:`Softmax`.

    Raises (on forward): ShapeError when ``dim`` is out of range for ``x``.
    """

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``softmin(x, dim)``."""
        return softmin(x, _softmax_dim("Softmin", self.dim, x.ndim))

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """Parametric ReLU (He et al. 2015; PyTorch's ``nn.PReLU``, :func:`gradtape.ops.prelu`):
    ``x`` where ``x > 0``, else ``weight * x``, with a learnable slope per channel (dim 1 of
    ``x``) or one slope shared by all.

    Args:
        num_parameters: ``1`` (one slope) or the number of channels.
        init: the slopes' initial value (default ``0.25``, PyTorch's).
        dtype: the weight's dtype (default float32).
        dev, device: its device, gradtape's or PyTorch's spelling (default the default device;
            :func:`gradtape.devices.default.pick_device`).

    Attributes:
        weight: ``(num_parameters,)``, a parameter.
        slopes: ``num_parameters`` (PyTorch's attribute of that name; gradtape's
            ``Module.num_parameters()`` counts parameters).

    Raises:
        ValueError: ``num_parameters`` is not a positive int. TypeError: ``init`` is not a real number.
    """

    def __init__(
        self,
        num_parameters: int = 1,
        init: float = 0.25,
        dtype: Any = np.float32,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
    ) -> None:
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive int, got {num_parameters!r}")
        value = _real("PReLU", "init", init)
        device_ = pick_device("PReLU", device, dev)
        dtype = pick_dtype(dtype)
        self.slopes = num_parameters  # PyTorch's num_parameters; that name is Module's method here
        self.weight: Tensor[Rank1[int], NoneTape] = Tensor(np.full((num_parameters,), value, dtype), device_, NONE_TAPE)

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """:func:`gradtape.ops.prelu` of ``x`` with :attr:`weight`."""
        return prelu(x, self.weight)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"num_parameters={self.slopes}"


class Softmax2d(Module):
    """Softmax over the channels of each position (PyTorch's ``nn.Softmax2d``): ``softmax(x,
    dim=-3)`` on ``(N, C, H, W)`` or ``(C, H, W)`` inputs.

    Raises (on forward): ShapeError when ``x`` is not 3-D or 4-D.
    """

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``softmax(x, -3)``."""
        if x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: needs a 3-D or 4-D input, got shape {x.shape}")
        return softmax(x, -3)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class RReLU(Module):
    """Randomized leaky ReLU (Xu et al. 2015, "Empirical Evaluation of Rectified Activations in
    Convolutional Network"; PyTorch's ``nn.RReLU``, :func:`gradtape.nn.functional.rrelu`): ``x``
    where ``x > 0``, else ``a * x``, with ``a`` drawn per element from ``U(lower, upper)`` in
    training mode (the device's generator; gradient ``g * a``) and ``a = (lower + upper) / 2`` in
    eval mode. Shape, dtype and tape kind of ``x``.

    Args:
        lower, upper: the slope's range (default ``1/8``, ``1/3``).
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        TypeError: a bound is not a real number. ValueError: ``lower > upper``.
    """

    def __init__(self, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, inplace: bool = False) -> None:
        self.lower = _real("RReLU", "lower", lower)
        self.upper = _real("RReLU", "upper", upper)
        if self.lower > self.upper:
            raise ValueError(f"RReLU: lower bound {lower} must be at most the upper bound {upper}")
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``rrelu(x, lower, upper, training=self.training)``."""
        out: Tensor[S, T] = _rrelu("RReLU", x, self.lower, self.upper, self.training)
        return out

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"


def _dropout1d(op: str, x: Tensor[Any, Any], p: float, training: bool) -> Tensor[Any, Any]:
    return _channel_dropout(op, x, p, training, False, 3)


def _dropout3d(op: str, x: Tensor[Any, Any], p: float, training: bool) -> Tensor[Any, Any]:
    return _channel_dropout(op, x, p, training, False, 5)


class _RandomDropout(Module):
    """A dropout layer with PyTorch's ``(p=0.5, inplace=False)`` whose forward is the class's
    functional ``_fn(layer name, x, p, training)`` (:mod:`gradtape.nn.functional`'s, its errors
    naming the layer); masks from the input device's generator (:func:`gradtape.manual_seed`)."""

    _fn: Callable[..., Tensor[Any, Any]]

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        self.p = _probability(type(self).__name__, p)
        self.inplace = inplace

    def forward(self, x: Tensor[S, T]) -> Tensor[S, T]:
        """``x`` with the class's dropout applied (training mode), or ``x`` itself (eval mode)."""
        out: Tensor[S, T] = type(self)._fn(type(self).__name__, x, self.p, self.training)
        return out

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_RandomDropout):
    """Channel dropout of ``(N, C, L)`` or unbatched ``(C, L)`` inputs (PyTorch's ``nn.Dropout1d``,
    :func:`gradtape.nn.functional.dropout1d`): in training mode each channel ``x[n, c]`` is zeroed
    as a whole with probability ``p`` and the others scaled by ``1 / (1 - p)`` (gradient: ``g``
    times the same mask); the identity in eval mode.

    Args:
        p: the probability of zeroing a channel, ``0 <= p <= 1``.
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``. (On forward) ShapeError for an input neither 2-D nor
            3-D, DTypeError for a non-float one.
    """

    _fn = staticmethod(_dropout1d)


class Dropout3d(_RandomDropout):
    """Channel dropout of ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` inputs (Tompson et al.
    2015; PyTorch's ``nn.Dropout3d``, :func:`gradtape.nn.functional.dropout3d`): in training mode
    each channel ``x[n, c]`` is zeroed as a whole with probability ``p`` and the others scaled by
    ``1 / (1 - p)``; the identity in eval mode. Other ranks warn, as PyTorch.

    Args:
        p: the probability of zeroing a channel, ``0 <= p <= 1``.
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``. (On forward) DTypeError for a non-float input.
    """

    _fn = staticmethod(_dropout3d)


class AlphaDropout(_RandomDropout):
    """Alpha dropout (Klambauer et al. 2017, "Self-Normalizing Neural Networks"; PyTorch's
    ``nn.AlphaDropout``, :func:`gradtape.nn.functional.alpha_dropout`), for SELU networks: in
    training mode each element is set with probability ``p`` to SELU's negative saturation and
    the result affinely rescaled so that zero mean and unit variance are kept; the identity in eval
    mode.

    Args:
        p: the drop probability, ``0 <= p <= 1``.
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``. (On forward) DTypeError for a non-float input.
    """

    _fn = staticmethod(_alpha_dropout)


class FeatureAlphaDropout(_RandomDropout):
    """Alpha dropout of whole channels (PyTorch's ``nn.FeatureAlphaDropout``,
    :func:`gradtape.nn.functional.feature_alpha_dropout`): one draw per ``(n, c)`` of an
    ``(N, C, *)`` input, the channel set to SELU's negative saturation and rescaled as
    :class:`AlphaDropout`; the identity in eval mode.

    Args:
        p: the drop probability, ``0 <= p <= 1``.
        inplace: accepted for PyTorch compatibility; changes nothing.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``. (On forward) ShapeError for an input of fewer than 2
            dims in training, DTypeError for a non-float one.
    """

    _fn = staticmethod(_feature_alpha_dropout)
