"""Parameter initialisers with PyTorch's names, formulas and defaults (``torch.nn.init``).

Each ``*_`` function fills a tensor in place (its array keeps its identity, so a model, an
optimizer or a gradient store holding the tensor sees the new values) and returns it; nothing
is recorded, as under PyTorch's ``no_grad``. The usual spelling::

    def init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            nn.init.zeros_(m.bias)

    model.apply(init_weights)

Randomness comes from the tensor's device's seeded generator (``Cpu(seed=...).rng``), so the
same seed and the same calls give the same values on every run; ``generator=`` takes a
``numpy.random.Generator``, a device (its generator) or an int seed (a fresh
``default_rng(seed)``) instead, as PyTorch's ``generator=`` takes a ``torch.Generator``. The
values are not PyTorch's own draws (another generator), only their distributions. A GPU
tensor (``Cuda``) draws from the host's generator (:func:`gradtape.devices.default.host_device`:
the default device, or the ``Cpu`` that was the default before ``set_default_device("cuda")``)
on the host, and the values are copied into its GPU array: the same values a CPU tensor on
that device would get.

Fans (:func:`calculate_fan_in_and_fan_out`) are PyTorch's: for a weight of shape
``(out, in, *kernel)``, ``fan_in = in * prod(kernel)`` and ``fan_out = out * prod(kernel)``
(``Linear``'s ``(out, in)``, ``Conv2d``'s ``(out, in / groups, kh, kw)``; ``ConvTranspose2d``'s
``(in, out / groups, kh, kw)`` swaps them, as in PyTorch).
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from gradtape.devices import _arrays
from gradtape.devices.default import host_device
from gradtape.errors import DTypeError, ShapeError
from gradtape.tensor import Tensor

__all__ = [
    "calculate_fan_in_and_fan_out",
    "calculate_gain",
    "constant_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

Array = np.ndarray[Any, Any]
P = TypeVar("P", bound=Tensor[Any, Any])

Nonlinearity = Literal[
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
    "tanh",
    "relu",
    "leaky_relu",
    "selu",
]

_GAIN_ONE = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


# ----- helpers ---------------------------------------------------------------------------------


def _target(fn: str, tensor: object, floats: bool = True) -> Array:
    """The writable array of ``tensor``.

    Raises:
        TypeError: ``tensor`` is not a gradtape Tensor.
        DTypeError: ``floats`` and it is not float32/float64.
        ValueError: its array is read-only.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}: expected a gradtape Tensor (e.g. layer.weight), got {type(tensor).__name__}")
    a = tensor.data
    if floats and a.dtype.kind != "f":
        raise DTypeError(f"{fn}: expected a float32/float64 tensor, got dtype {a.dtype} (shape {a.shape})")
    if not _arrays.writeable(a):
        raise ValueError(f"{fn}: the tensor of shape {a.shape} is read-only; cannot initialise it in place")
    return a


def _rng(fn: str, tensor: Tensor[Any, Any], generator: object) -> np.random.Generator:
    """The generator to draw from: ``generator`` (a Generator, a device's, or a seed's), else the
    tensor's device's; for a GPU tensor, the host device's (:func:`gradtape.manual_seed`
    seeds it; the draws are made on the host and copied to the GPU).

    Raises:
        TypeError: ``generator`` is none of these, or the tensor's device has no generator.
    """
    if generator is None:
        on_gpu = _arrays.on_gpu(tensor.data)
        rng = getattr(host_device() if on_gpu else tensor.device, "rng", None)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"{fn}: the tensor's device {tensor.device!r} has no random generator; pass generator=")
        return rng
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    rng = getattr(generator, "rng", None)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(
        f"{fn}: generator must be a numpy Generator, a device (Cpu) or an int seed, got {type(generator).__name__}"
    )


def _number(fn: str, name: str, value: object) -> float:
    """``value`` as a float.

    Raises:
        TypeError: it is not a real number (bools refused).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)


def _fill(a: Array, values: npt.ArrayLike) -> None:
    """Write ``values`` (drawn on the host) into ``a`` in place (cast to ``a``'s dtype), on
    ``a``'s GPU where it is a GPU array."""
    np.copyto(a, _arrays.into_memory_of(np.asarray(values), a), casting="unsafe")


def _is_empty(fn: str, a: Array) -> bool:
    """Whether ``a`` has no elements (PyTorch warns and does nothing then)."""
    if a.size == 0:
        warnings.warn(f"{fn}: initializing a zero-element tensor is a no-op", UserWarning, stacklevel=3)
        return True
    return False


def _erfinv(y: npt.ArrayLike) -> Array:
    """The inverse error function of float64 ``y`` in ``[-1, 1]`` (``+-inf`` at ``+-1``):
    Giles' polynomial approximation ("Approximating the erfinv function", 2010; about 1e-7
    relative) refined by four Newton steps on ``erf(x) = |y|``, or on
    ``log(erfc(x)) = log(1 - |y|)`` for ``|y| > 1/2`` (numpy has no ``erfinv``;
    :func:`gradtape.devices.kernels.activations.erf` gives both), to about 1e-15 relative."""
    from gradtape.devices.kernels.activations import erf

    y = np.asarray(y, np.float64)
    inner = np.abs(y) < 1.0
    yi = np.where(inner, y, 0.0)
    w = -np.log((1.0 - yi) * (1.0 + yi))
    small = w < 5.0
    ws = w - 2.5
    p1 = np.full_like(ws, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164):
        p1 = c + p1 * ws
    p1 = 1.50140941 + (0.246640727 + p1 * ws) * ws
    wl = np.sqrt(w) - 3.0
    p2 = np.full_like(wl, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047):
        p2 = c + p2 * wl
    p2 = 2.83297682 + (1.00167406 + p2 * wl) * wl
    ay = np.abs(yi)
    x = np.where(small, p1, p2) * ay
    # Newton on erf(x) = |y| near 0 and on erfc(x) = 1 - |y| in the tail (exact for |y| >= 1/2),
    # where erf(x) - |y| would cancel
    q = 1.0 - ay
    tail = ay > 0.5
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    logq = np.log(np.where(tail, q, 1.0))
    for _ in range(4):
        slope = two_over_sqrt_pi * np.exp(-x * x)
        ec = erf(x, complement=True)
        # in the tail, Newton on log(erfc(x)) = log(1 - |y|): nearly linear there, so it
        # converges from Giles' guess even past the float32 range the guess was made for
        step = np.where(tail, (np.log(np.where(tail, ec, 1.0)) - logq) * ec, erf(x) - ay) / slope
        x = x + np.where(tail, step, -step)
    out: Array = np.where(inner, np.copysign(x, yi), np.copysign(np.inf, y))
    return out


# ----- gains and fans --------------------------------------------------------------------------


def calculate_gain(nonlinearity: Nonlinearity | str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity, PyTorch's ``calculate_gain`` table: the factor
    by which an activation shrinks the variance is undone by scaling the weights' standard
    deviation by it.

    ========================================= =====================================
    nonlinearity                              gain
    ========================================= =====================================
    linear, conv{1,2,3}d, conv_transpose*,    ``1``
    sigmoid
    tanh                                      ``5/3``
    relu                                      ``sqrt(2)``
    leaky_relu                                ``sqrt(2 / (1 + negative_slope**2))``
    selu                                      ``3/4``
    ========================================= =====================================

    Args:
        nonlinearity: the function's name, as above.
        param: ``leaky_relu``'s negative slope (default ``0.01``); ignored for the others.

    Raises:
        ValueError: an unknown ``nonlinearity``, or a ``param`` for ``leaky_relu`` that is not
            a number (PyTorch's errors).
    """
    if nonlinearity in _GAIN_ONE:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, numbers.Real):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def calculate_fan_in_and_fan_out(tensor: Tensor[Any, Any]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *kernel)``:
    ``(in * prod(kernel), out * prod(kernel))``, PyTorch's ``_calculate_fan_in_and_fan_out``.

    Raises:
        TypeError: ``tensor`` is not a gradtape Tensor.
        ShapeError: it has fewer than 2 dims (a ``ValueError``, PyTorch's type).
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"calculate_fan_in_and_fan_out: expected a gradtape Tensor, got {type(tensor).__name__}")
    shape = tensor.shape
    if len(shape) < 2:
        raise ShapeError(
            f"calculate_fan_in_and_fan_out: fan in and fan out can not be computed for a tensor with fewer than 2 "
            f"dimensions (shape {shape})"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(fn: str, tensor: Tensor[Any, Any], mode: str) -> int:
    """``fan_in`` or ``fan_out`` by ``mode``.

    Raises:
        ValueError: ``mode`` is neither (case-insensitive).
    """
    m = mode.lower() if isinstance(mode, str) else mode
    if m not in ("fan_in", "fan_out"):
        raise ValueError(f"{fn}: mode {mode!r} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return fan_in if m == "fan_in" else fan_out


# ----- constant fills --------------------------------------------------------------------------


def constant_(tensor: P, val: float) -> P:
    """Fill ``tensor`` with ``val`` in place; returns it (PyTorch's ``constant_``). Any dtype
    (an integer buffer too; ``val`` is cast to it).

    Raises:
        TypeError: ``tensor`` is not a gradtape Tensor, or ``val`` is not a real number.
        ValueError: the tensor's array is read-only.
    """
    a = _target("constant_", tensor, floats=False)
    a[...] = _number("constant_", "val", val)
    return tensor


def zeros_(tensor: P) -> P:
    """Fill ``tensor`` with 0 in place; returns it (PyTorch's ``zeros_``). Errors as :func:`constant_`."""
    a = _target("zeros_", tensor, floats=False)
    a[...] = 0
    return tensor


def ones_(tensor: P) -> P:
    """Fill ``tensor`` with 1 in place; returns it (PyTorch's ``ones_``). Errors as :func:`constant_`."""
    a = _target("ones_", tensor, floats=False)
    a[...] = 1
    return tensor


def eye_(tensor: P) -> P:
    """Fill the 2-D ``tensor`` with the identity matrix in place (ones on the diagonal, zeros
    elsewhere; a non-square one too); returns it (PyTorch's ``eye_``).

    Raises:
        TypeError: ``tensor`` is not a gradtape Tensor.
        ShapeError: it is not 2-D (a ``ValueError``, PyTorch's type).
        ValueError: its array is read-only.
    """
    a = _target("eye_", tensor, floats=False)
    if a.ndim != 2:
        raise ShapeError(f"eye_: only tensors with 2 dimensions are supported, got shape {a.shape}")
    _fill(a, np.eye(*a.shape))
    return tensor


# ----- random fills ----------------------------------------------------------------------------


def uniform_(tensor: P, a: float = 0.0, b: float = 1.0, generator: Any = None) -> P:
    """Fill ``tensor`` with samples of ``U(a, b)`` in place; returns it (PyTorch's ``uniform_``).

    Args:
        tensor: a float32/float64 gradtape tensor of any shape.
        a, b: the bounds (``a <= b``).
        generator: see the module docstring (default: the tensor's device's).

    Raises:
        TypeError: ``tensor`` is not a float tensor (DTypeError, a TypeError), ``a``/``b`` are
            not numbers, or ``generator`` is not a generator, device or seed.
        ValueError: ``a > b``, or the array is read-only.
    """
    fn = "uniform_"
    arr = _target(fn, tensor)
    lo, hi = _number(fn, "a", a), _number(fn, "b", b)
    if lo > hi:
        raise ValueError(f"{fn}: expected a <= b, got a={lo}, b={hi}")
    _fill(arr, _rng(fn, tensor, generator).uniform(lo, hi, arr.shape))
    return tensor


def normal_(tensor: P, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> P:
    """Fill ``tensor`` with samples of ``N(mean, std**2)`` in place; returns it (PyTorch's
    ``normal_``). Arguments and errors as :func:`uniform_`; ``std`` must be ``>= 0``."""
    fn = "normal_"
    arr = _target(fn, tensor)
    m, s = _number(fn, "mean", mean), _number(fn, "std", std)
    if not s >= 0.0:
        raise ValueError(f"{fn}: std must be >= 0, got {s}")
    _fill(arr, _rng(fn, tensor, generator).normal(m, s, arr.shape))
    return tensor


def trunc_normal_(
    tensor: P, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator: Any = None
) -> P:
    """Fill ``tensor`` with samples of ``N(mean, std**2)`` truncated to ``[a, b]`` in place;
    returns it (PyTorch's ``trunc_normal_``, same method): inverse-CDF sampling, ``u`` uniform
    on ``[Phi(alpha), Phi(beta)]`` with ``alpha = (a - mean) / std``,
    ``beta = (b - mean) / std``, then ``x = mean + std * sqrt(2) * erfinv(2u - 1)``, clamped
    to ``[a, b]``. ``a`` and ``b`` are values, not multiples of ``std``, as in PyTorch.

    Arguments and errors as :func:`normal_`; ``a < b`` is required (ValueError). Like
    PyTorch, a warning when ``mean`` is more than 2 ``std`` outside ``[a, b]`` (the samples
    are then inaccurate).
    """
    fn = "trunc_normal_"
    arr = _target(fn, tensor)
    m, s = _number(fn, "mean", mean), _number(fn, "std", std)
    lo, hi = _number(fn, "a", a), _number(fn, "b", b)
    if not s >= 0.0:
        raise ValueError(f"{fn}: std must be >= 0, got {s}")
    if not lo < hi:
        raise ValueError(f"{fn}: expected a < b, got a={lo}, b={hi}")
    if m < lo - 2 * s or m > hi + 2 * s:
        warnings.warn(
            f"{fn}: mean is more than 2 std from [a, b]; the distribution of values may be incorrect",
            UserWarning,
            stacklevel=2,
        )
    if s == 0.0:
        _fill(arr, np.full(arr.shape, min(max(m, lo), hi)))
        return tensor

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    u_lo, u_hi = 2 * cdf((lo - m) / s) - 1, 2 * cdf((hi - m) / s) - 1
    u = _rng(fn, tensor, generator).uniform(u_lo, u_hi, arr.shape)
    x = _erfinv(u) * (s * math.sqrt(2.0)) + m
    _fill(arr, np.clip(x, lo, hi))
    return tensor


def xavier_uniform_(tensor: P, gain: float = 1.0, generator: Any = None) -> P:
    """Glorot/Xavier uniform initialisation (Glorot & Bengio 2010, "Understanding the
    difficulty of training deep feedforward neural networks"; PyTorch's ``xavier_uniform_``):
    ``U(-bound, bound)`` with ``bound = gain * sqrt(6 / (fan_in + fan_out))``, in place;
    returns the tensor.

    Raises:
        ShapeError: fewer than 2 dims (fans undefined). Others as :func:`uniform_`.
    """
    fn = "xavier_uniform_"
    arr = _target(fn, tensor)
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = _number(fn, "gain", gain) * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    _fill(arr, _rng(fn, tensor, generator).uniform(-bound, bound, arr.shape))
    return tensor


def xavier_normal_(tensor: P, gain: float = 1.0, generator: Any = None) -> P:
    """Glorot/Xavier normal initialisation (PyTorch's ``xavier_normal_``): ``N(0, std**2)``
    with ``std = gain * sqrt(2 / (fan_in + fan_out))``, in place; returns the tensor.
    Errors as :func:`xavier_uniform_`."""
    fn = "xavier_normal_"
    arr = _target(fn, tensor)
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    std = _number(fn, "gain", gain) * math.sqrt(2.0 / float(fan_in + fan_out))
    _fill(arr, _rng(fn, tensor, generator).normal(0.0, std, arr.shape))
    return tensor


def kaiming_uniform_(
    tensor: P,
    a: float = 0.0,
    mode: Literal["fan_in", "fan_out"] = "fan_in",
    nonlinearity: Nonlinearity = "leaky_relu",
    generator: Any = None,
) -> P:
    """He/Kaiming uniform initialisation (He et al. 2015, "Delving Deep into Rectifiers";
    PyTorch's ``kaiming_uniform_``): ``U(-bound, bound)`` with
    ``bound = sqrt(3) * gain / sqrt(fan)``, ``gain = calculate_gain(nonlinearity, a)`` and
    ``fan`` the tensor's ``fan_in`` or ``fan_out`` (``mode``), in place; returns the tensor.
    A zero-element tensor is left as it is, with PyTorch's warning. (PyTorch's default
    ``Linear`` / ``Conv`` weight init is ``kaiming_uniform_(w, a=math.sqrt(5))``.)

    Args:
        a: the negative slope of the rectifier that follows (``leaky_relu`` only).
        mode: ``"fan_in"`` keeps the forward pass's variance, ``"fan_out"`` the backward's.
        nonlinearity: as :func:`calculate_gain` (``"relu"`` or ``"leaky_relu"`` recommended).

    Raises:
        ValueError: an unknown ``mode`` or ``nonlinearity``.
        ShapeError: fewer than 2 dims. Others as :func:`uniform_`.
    """
    fn = "kaiming_uniform_"
    arr = _target(fn, tensor)
    if _is_empty(fn, arr):
        return tensor
    fan = _fan(fn, tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    _fill(arr, _rng(fn, tensor, generator).uniform(-bound, bound, arr.shape))
    return tensor


def kaiming_normal_(
    tensor: P,
    a: float = 0.0,
    mode: Literal["fan_in", "fan_out"] = "fan_in",
    nonlinearity: Nonlinearity = "leaky_relu",
    generator: Any = None,
) -> P:
    """He/Kaiming normal initialisation (PyTorch's ``kaiming_normal_``): ``N(0, std**2)`` with
    ``std = gain / sqrt(fan)``; arguments and errors as :func:`kaiming_uniform_`."""
    fn = "kaiming_normal_"
    arr = _target(fn, tensor)
    if _is_empty(fn, arr):
        return tensor
    fan = _fan(fn, tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    _fill(arr, _rng(fn, tensor, generator).normal(0.0, std, arr.shape))
    return tensor


def orthogonal_(tensor: P, gain: float = 1.0, generator: Any = None) -> P:
    """A (semi-)orthogonal matrix times ``gain``, in place; returns the tensor (Saxe et al.
    2013, "Exact solutions to the nonlinear dynamics of learning in deep linear neural
    networks"; PyTorch's ``orthogonal_``, same method). The tensor is viewed as
    ``(rows, cols) = (shape[0], size / shape[0])``; a standard normal matrix of that shape
    (transposed if ``rows < cols``) is QR-factorised and ``Q``'s columns multiplied by the
    signs of ``R``'s diagonal (so the result is uniform over orthogonal matrices), transposed
    back. The rows (``rows <= cols``) or the columns are then orthonormal, times ``gain``.

    Raises:
        ShapeError: fewer than 2 dims (a ``ValueError``, PyTorch's type). Others as
            :func:`uniform_`.
    """
    fn = "orthogonal_"
    arr = _target(fn, tensor)
    if arr.ndim < 2:
        raise ShapeError(f"{fn}: only tensors with 2 or more dimensions are supported, got shape {arr.shape}")
    g = _number(fn, "gain", gain)
    if arr.size == 0:
        return tensor
    rows = arr.shape[0]
    cols = arr.size // rows
    flat = _rng(fn, tensor, generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    _fill(arr, (q * g).reshape(arr.shape))
    return tensor
