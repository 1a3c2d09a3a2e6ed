"""PyTorch's creation ops at the top of the package (``torch.zeros(8, 3)``,
``torch.randn(4, 4, requires_grad=True)``, ``torch.tensor([1, 2])``) and its dtype names
(``torch.float32``, ``torch.long``), so a PyTorch program ports by renaming ``torch`` to
``gradtape``.

Each function makes its tensor on a device: ``dev=`` (gradtape's spelling) or ``device=``
(PyTorch's: a :class:`~gradtape.devices.cpu.Cpu` or the string ``"cpu"``), else the default
device (:func:`gradtape.get_default_device`), whose generator :func:`gradtape.manual_seed`
seeds. They are the device's own methods (:class:`~gradtape.devices.cpu.Cpu`) with PyTorch's
calling conventions: sizes as separate ints or as one tuple (``zeros(8, 3)`` or ``zeros((8,
3))``), ``dtype=None`` for the default (float32 for floats, int64 for ``randint`` and integer
``arange``), and ``requires_grad=True`` for a leaf that records (float dtypes only).

Types: a tuple of sizes keeps its literal dims under mypy and pyright (``zeros((8, 3))`` is
``Tensor[tuple[L[8], L[3]], NoneTape]``); separate ints keep them under mypy (pyright widens
them to ``int``). ``requires_grad=True`` gives the same static tape type as ``Cpu.tensor``'s
(``NoneTape``; ``PARAM`` is a ``NoneTape``).

The random numbers are numpy's (PCG64), not PyTorch's: the same seed gives other numbers than
``torch.manual_seed`` does. Tests that compare with PyTorch copy the weights across.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, TypeVarTuple, cast, overload

import numpy as np
import numpy.typing as npt

from gradtape.devices import _arrays
from gradtape.devices.cpu import Cpu
from gradtape.devices.default import get_default_device, host_device, pick_device
from gradtape.errors import DTypeError
from gradtape.ops._util import record_zero_gradient
from gradtape.shapes import broadcast_shapes
from gradtape.tape import NoneTape, op_tape
from gradtape.tensor import Tensor

__all__ = [
    "SizeFactory",
    "arange",
    "as_tensor",
    "bernoulli",
    "empty",
    "empty_like",
    "eye",
    "from_numpy",
    "full",
    "full_like",
    "get_default_dtype",
    "is_tensor",
    "linspace",
    "normal",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randperm",
    "randn_like",
    "tensor",
    "zeros",
    "zeros_like",
]

SI = TypeVar("SI", bound=tuple[int, ...])
S = TypeVar("S")
Ts = TypeVarTuple("Ts")

Device = Cpu | str | None


class SizeFactory(Protocol):
    """The type of PyTorch's size-taking creation functions (:func:`zeros`, :func:`ones`,
    :func:`empty`, :func:`randn`, :func:`rand`): sizes as one tuple (its literal dims kept under
    every checker) or as separate ints (kept under mypy; pyright and pyrefly widen them to
    ``int``), and the keywords ``dtype``, ``device``, ``requires_grad``, ``dev``."""

    @overload
    def __call__(
        self,
        size: SI,
        /,
        *,
        dtype: npt.DTypeLike | None = None,
        device: Device = None,
        requires_grad: bool = False,
        dev: Cpu | None = None,
    ) -> Tensor[SI, NoneTape]: ...
    @overload
    def __call__(
        self,
        *size: *Ts,
        dtype: npt.DTypeLike | None = None,
        device: Device = None,
        requires_grad: bool = False,
        dev: Cpu | None = None,
    ) -> Tensor[tuple[*Ts], NoneTape]: ...


def _public(fn: Callable[..., Tensor[Any, NoneTape]], name: str) -> SizeFactory:
    """``fn`` under its public name, typed as a :class:`SizeFactory`."""
    fn.__name__ = fn.__qualname__ = name
    return cast(SizeFactory, fn)


def _size(op: str, size: tuple[Any, ...]) -> tuple[int, ...]:
    """PyTorch's size arguments: ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``; each a
    non-negative int."""
    s = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in s):
        raise TypeError(f"{op}: size must be non-negative ints (as separate arguments or one tuple), got {size!r}")
    return tuple(int(n) for n in s)


def _float_dtype(dtype: npt.DTypeLike | None) -> npt.DTypeLike:
    return np.float32 if dtype is None else dtype


def _finish(op: str, t: Tensor[Any, NoneTape], requires_grad: bool) -> Tensor[Any, NoneTape]:
    if not requires_grad:
        return t
    if t.dtype.kind != "f":
        raise DTypeError(
            f"{op}: requires_grad=True needs a float dtype, got {t.dtype} (only floats are differentiated)"
        )
    return t.requires_grad_()


def tensor(
    data: npt.ArrayLike,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    *,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """A new leaf tensor holding a copy of ``data`` (``torch.tensor``): Python floats give
    float32, ints int64, bools bool; an array keeps its dtype. See :meth:`Cpu.tensor` for every
    rule and error; ``device``/``dev`` as the module says.

    Raises:
        DTypeError, ValueError, TypeError: as :meth:`Cpu.tensor`; an unknown ``device``
            (ValueError) or both ``device`` and ``dev`` (TypeError).
    """
    return pick_device("tensor", device, dev).tensor(data, dtype, requires_grad)


def as_tensor(data: Any, dtype: npt.DTypeLike | None = None, device: Device = None) -> Tensor[Any, Any]:
    """``torch.as_tensor``: ``data`` as a tensor without a copy where possible: a tensor of the
    asked dtype and device is returned as it is (another one is converted with :meth:`Tensor.to`,
    recorded), a float32/float64 or integer numpy array on the CPU shares its memory
    (:func:`from_numpy`), anything else is copied as :func:`tensor` does.

    Raises:
        DTypeError, ValueError, TypeError: as :func:`tensor` (and :meth:`Tensor.to`).
    """
    if isinstance(data, Tensor):
        out: Tensor[Any, Any] = data
        if dtype is not None and np.dtype(dtype) != data.dtype:
            out = out.to(np.dtype(dtype))
        if device is not None:
            out = out.to(device)
        return out
    d = pick_device("as_tensor", device, None)
    if (
        isinstance(data, np.ndarray)
        and (dtype is None or np.dtype(dtype) == data.dtype)
        and getattr(d, "type", "cpu") == "cpu"
    ):
        try:
            return d.from_numpy(data)
        except (TypeError, ValueError, DTypeError):
            pass  # a dtype or layout from_numpy does not share: copied below
    return d.tensor(data, dtype)


def is_tensor(obj: object) -> bool:
    """``torch.is_tensor``: whether ``obj`` is a gradtape tensor."""
    return isinstance(obj, Tensor)


def get_default_dtype() -> np.dtype[Any]:
    """``torch.get_default_dtype``: float32, the dtype of Python floats in :func:`tensor` and of
    the factories and layers (gradtape has no switch for it)."""
    return np.dtype(np.float32)


def from_numpy(array: np.ndarray[Any, Any]) -> Tensor[Any, NoneTape]:
    """A tensor sharing ``array``'s memory on the default device (``torch.from_numpy``; see
    :meth:`Cpu.from_numpy` for the dtypes and errors)."""
    return host_device().from_numpy(array)


def _zeros(
    *size: Any,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """Zeros of shape ``size`` (``torch.zeros(2, 3)`` or ``torch.zeros((2, 3))``), float32 by
    default; ``dtype`` float32, float64, bool or an integer dtype.

    Raises:
        TypeError: ``size`` is not non-negative ints; a bad ``device``.
        DTypeError: another dtype; ``requires_grad`` for a non-float dtype.
    """
    return _full("zeros", _size("zeros", size), 0, dtype, device, requires_grad, dev)


zeros: SizeFactory = _public(_zeros, "zeros")


def _ones(
    *size: Any,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """Ones of shape ``size`` (``torch.ones``), float32 by default; dtypes and errors as
    :func:`zeros`."""
    return _full("ones", _size("ones", size), 1, dtype, device, requires_grad, dev)


ones: SizeFactory = _public(_ones, "ones")


def _empty(
    *size: Any,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """A tensor of shape ``size`` to be overwritten (``torch.empty``). Its values are zeros:
    gradtape does not hand out uninitialised memory (a read of it gives the same numbers on
    every run). Dtypes and errors as :func:`zeros`."""
    return _full("empty", _size("empty", size), 0, dtype, device, requires_grad, dev)


empty: SizeFactory = _public(_empty, "empty")


def full(
    size: Sequence[int],
    fill_value: float,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """A tensor of shape ``size`` filled with ``fill_value`` (``torch.full``), float32 by
    default; ``dtype`` float32, float64, bool or an integer dtype.

    Raises:
        TypeError: ``size`` is not non-negative ints, ``fill_value`` not a real number; a bad
            ``device``.
        DTypeError: another dtype; ``requires_grad`` for a non-float dtype.
    """
    return _full("full", _size("full", (size,)), fill_value, dtype, device, requires_grad, dev)


def _full(
    op: str,
    size: tuple[int, ...],
    fill_value: float,
    dtype: npt.DTypeLike | None,
    device: Device,
    requires_grad: bool,
    dev: Cpu | None,
) -> Tensor[Any, NoneTape]:
    t = pick_device(op, device, dev).full(size, fill_value, _float_dtype(dtype))
    return _finish(op, t, requires_grad)


def _randn(
    *size: Any,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """Samples of the standard normal N(0, 1) of shape ``size`` (``torch.randn``), from the
    device's generator; float32 by default, or float64.

    Raises:
        TypeError: ``size`` is not non-negative ints; a bad ``device``.
        DTypeError: a dtype other than float32/float64.
    """
    d = pick_device("randn", device, dev)
    return _finish("randn", d.randn(_size("randn", size), _float_dtype(dtype)), requires_grad)


randn: SizeFactory = _public(_randn, "randn")


def _rand(
    *size: Any,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """Samples of the uniform distribution on ``[0, 1)`` of shape ``size`` (``torch.rand``),
    from the device's generator; float32 by default, or float64.

    Raises:
        TypeError: ``size`` is not non-negative ints; a bad ``device``.
        DTypeError: a dtype other than float32/float64.
    """
    d = pick_device("rand", device, dev)
    return _finish("rand", d.rand(_size("rand", size), 0.0, 1.0, _float_dtype(dtype)), requires_grad)


rand: SizeFactory = _public(_rand, "rand")


@overload
def randint(
    high: int,
    size: SI,
    /,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    dev: Cpu | None = None,
) -> Tensor[SI, NoneTape]: ...
@overload
def randint(
    low: int,
    high: int,
    size: SI,
    /,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    dev: Cpu | None = None,
) -> Tensor[SI, NoneTape]: ...
def randint(
    *args: Any,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    dev: Cpu | None = None,
) -> Tensor[Any, NoneTape]:
    """Integers drawn uniformly from ``[low, high)`` (``torch.randint(high, size)`` or
    ``torch.randint(low, high, size)``; ``low`` 0 by default), of shape ``size`` (a tuple),
    int64 by default, from the device's generator.

    Raises:
        TypeError: other than two or three positional arguments; ``low``/``high`` not ints,
            ``size`` not a tuple of ints; a bad ``device``.
        ValueError: ``high <= low``.
    """
    if len(args) == 2:
        low, (high, size) = 0, args
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError(f"randint: expected (high, size) or (low, high, size), got {len(args)} positional arguments")
    d = pick_device("randint", device, dev)
    return d.randint(low, high, _size("randint", (size,)), np.int64 if dtype is None else dtype)


def randperm(
    n: int, *, dtype: npt.DTypeLike | None = None, device: Device = None, dev: Cpu | None = None
) -> Tensor[tuple[int], NoneTape]:
    """A random permutation of ``0 .. n - 1`` (``torch.randperm(n)``), int64 by default, from
    the device's generator (the ranks of ``n`` uniform float64 draws: every order equally
    likely; not PyTorch's stream of numbers).

    Raises:
        TypeError: ``n`` is not a non-negative int; a bad ``device``.
        DTypeError: ``dtype`` is not an integer dtype.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise TypeError(f"randperm: n must be a non-negative int, got {n!r}")
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise DTypeError(f"randperm: dtype must be an integer dtype, got {dt}")
    d = pick_device("randperm", device, dev)
    keys = d.rand((int(n),), 0.0, 1.0, np.float64)
    out: Tensor[tuple[int], NoneTape] = keys._like(keys.data.argsort().astype(dt))
    return out


def normal(
    mean: Tensor[Any, Any] | float,
    std: Tensor[Any, Any] | float = 1.0,
    size: tuple[int, ...] | None = None,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
) -> Tensor[Any, Any]:
    """``torch.normal``: samples of ``N(mean, std**2)`` from the device's generator. With
    numbers, of shape ``size`` (float32 by default); with a tensor ``mean`` and/or ``std``, of
    their broadcast shape and float dtype, on their device. PyTorch's rule for the gradient:
    exactly 0 to a tensor ``mean`` or ``std`` (a draw, not a reparameterisation; write ``mean +
    std * randn_like(mean)`` for that).

    Raises:
        TypeError: two numbers without ``size``, or an argument that is neither a number nor a
            tensor. ValueError: a negative ``std``. ShapeError: the tensors' shapes do not broadcast.
    """
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    for name, v in (("mean", mean), ("std", std)):
        if not isinstance(v, (Tensor, int, float, np.number)) or isinstance(v, bool):
            raise TypeError(f"normal: {name} must be a number or a tensor, got {type(v).__name__}")
    if not tensors:
        if size is None:
            raise TypeError("normal: with a number mean and std, give size (as torch.normal(0.0, 1.0, size=(2, 3)))")
        if float(std) < 0:
            raise ValueError(f"normal: std must be >= 0, got {std}")
        d = pick_device("normal", device, None)
        out: Tensor[Any, Any] = d.randn(_size("normal", (size,)), _float_dtype(dtype)) * float(std) + float(mean)
        return out.detach()
    first = tensors[0]
    x = first.data
    if x.dtype.kind != "f":
        raise DTypeError(f"normal: a tensor mean or std must be a float tensor, got {x.dtype}")
    if isinstance(std, Tensor):
        if bool((std.data < 0).any()):
            raise ValueError("normal: std must be >= 0 everywhere")
    elif float(std) < 0:
        raise ValueError(f"normal: std must be >= 0, got {std}")
    shapes = [t.shape for t in tensors]
    shape = shapes[0] if len(shapes) == 1 else broadcast_shapes("normal", shapes[0], shapes[1])
    eps = first.device.randn(tuple(shape), x.dtype).data
    m = mean.data if isinstance(mean, Tensor) else x.dtype.type(mean)
    s = std.data if isinstance(std, Tensor) else x.dtype.type(std)
    draw = first._from_op(_arrays.contiguous(m + s * eps), op_tape(*tensors))
    result: Tensor[Any, Any] = record_zero_gradient(draw, *tensors)
    return result


def bernoulli(input: Tensor[S, Any], p: float | None = None) -> Tensor[S, NoneTape]:
    """Independent 0/1 draws, ``1`` with probability ``input`` elementwise (``torch.bernoulli``;
    or with the one probability ``p`` for every element), of ``input``'s shape and float dtype,
    from its device's generator. Untraced, as in PyTorch (a draw has no gradient).

    Raises:
        TypeError: ``input`` is not a tensor. DTypeError: it is not a float tensor.
        ValueError: a probability is outside ``[0, 1]``.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli: input must be a Tensor, got {type(input).__name__}")
    x = input.data
    if x.dtype.kind != "f":
        raise DTypeError(f"bernoulli: input must be a float tensor of probabilities, got {x.dtype}")
    probs: Any = x if p is None else float(p)
    if p is not None:
        lo = hi = float(p)
    else:
        lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 1.0)
    if not (0.0 <= lo and hi <= 1.0):
        raise ValueError(f"bernoulli: probabilities must be in [0, 1], got values in [{lo}, {hi}]")
    u = input.device.rand(x.shape, 0.0, 1.0, x.dtype).data
    out: Tensor[S, NoneTape] = input._like((u < probs).astype(x.dtype))
    return out


def arange(
    start: float,
    end: float | None = None,
    step: float = 1,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[tuple[int], NoneTape]:
    """``[start, end)`` in steps of ``step`` (``torch.arange(end)`` or ``torch.arange(start,
    end, step)``): int64 when every bound is an int, float32 otherwise, unless ``dtype`` says.
    See :meth:`Cpu.arange` for the errors."""
    t = pick_device("arange", device, dev).arange(start, end, step, dtype)
    return _finish("arange", t, requires_grad)


def linspace(
    start: float,
    end: float,
    steps: int,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[tuple[int], NoneTape]:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included
    (``torch.linspace``), float32 by default.

    Raises:
        TypeError: ``steps`` is not a non-negative int; ``start``/``end`` not real numbers.
        DTypeError: a dtype other than float32/float64.
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise TypeError(f"linspace: steps must be a non-negative int, got {steps!r}")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"linspace: {name} must be a real number, got {type(v).__name__} {v!r}")
    d = pick_device("linspace", device, dev)
    dt = np.dtype(_float_dtype(dtype))
    if dt.kind != "f":
        raise DTypeError(f"linspace: dtype must be float32 or float64, got {dt}")
    t = d.tensor(np.linspace(float(start), float(end), int(steps), dtype=np.float64).astype(dt), dt)
    return _finish("linspace", t, requires_grad)


def eye(
    n: int,
    m: int | None = None,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[tuple[int, int], NoneTape]:
    """The ``(n, m)`` identity (``torch.eye``; ``m`` defaults to ``n``), float32 by default;
    ``dtype`` float32, float64, bool or an integer dtype.

    Raises:
        TypeError: ``n`` or ``m`` is not a non-negative int.
    """
    cols = n if m is None else m
    for name, v in (("n", n), ("m", cols)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise TypeError(f"eye: {name} must be a non-negative int, got {v!r}")
    d = pick_device("eye", device, dev)
    return _finish("eye", d.tensor(np.eye(int(n), int(cols)), _float_dtype(dtype)), requires_grad)


def _like(op: str, t: Tensor[Any, Any], dtype: npt.DTypeLike | None, device: Device, dev: Cpu | None) -> Cpu:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
    if dev is None and device is None:
        d = t.device
        if isinstance(d, Cpu) or getattr(d, "type", None) == "cuda":
            same: Cpu = d  # type: ignore[assignment]  # a Cuda: typed as the Cpu it stands in for
            return same
        return get_default_device()
    return pick_device(op, device, dev)


def zeros_like(
    input: Tensor[S, Any],
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[S, NoneTape]:
    """Zeros of ``input``'s shape and dtype (``torch.zeros_like``), on its device unless
    ``device``/``dev`` says. Raises TypeError when ``input`` is not a tensor."""
    return _full_like("zeros_like", input, 0, dtype, device, requires_grad, dev)


def ones_like(
    input: Tensor[S, Any],
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[S, NoneTape]:
    """Ones of ``input``'s shape and dtype (``torch.ones_like``); as :func:`zeros_like`."""
    return _full_like("ones_like", input, 1, dtype, device, requires_grad, dev)


def empty_like(
    input: Tensor[S, Any],
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[S, NoneTape]:
    """A tensor of ``input``'s shape and dtype to be overwritten (``torch.empty_like``):
    zeros, as :func:`empty`."""
    return _full_like("empty_like", input, 0, dtype, device, requires_grad, dev)


def full_like(
    input: Tensor[S, Any],
    fill_value: float,
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[S, NoneTape]:
    """``fill_value`` in ``input``'s shape and dtype (``torch.full_like``), on its device
    unless ``device``/``dev`` says.

    Raises:
        TypeError: ``input`` is not a tensor; ``fill_value`` not a real number.
        DTypeError: ``requires_grad`` for a non-float dtype.
    """
    return _full_like("full_like", input, fill_value, dtype, device, requires_grad, dev)


def _full_like(
    op: str,
    input: Tensor[S, Any],
    fill_value: float,
    dtype: npt.DTypeLike | None,
    device: Device,
    requires_grad: bool,
    dev: Cpu | None,
) -> Tensor[S, NoneTape]:
    d = _like(op, input, dtype, device, dev)
    t = d.full(tuple(input.shape), fill_value, input.dtype if dtype is None else dtype)
    return _finish(op, t, requires_grad)


def randn_like(
    input: Tensor[S, Any],
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[S, NoneTape]:
    """N(0, 1) samples in ``input``'s shape and float dtype (``torch.randn_like``), from the
    generator of ``input``'s device unless ``device``/``dev`` says.

    Raises:
        TypeError: ``input`` is not a tensor.
        DTypeError: a non-float dtype.
    """
    d = _like("randn_like", input, dtype, device, dev)
    t = d.randn(tuple(input.shape), input.dtype if dtype is None else dtype)
    return _finish("randn_like", t, requires_grad)


def rand_like(
    input: Tensor[S, Any],
    *,
    dtype: npt.DTypeLike | None = None,
    device: Device = None,
    requires_grad: bool = False,
    dev: Cpu | None = None,
) -> Tensor[S, NoneTape]:
    """Uniform ``[0, 1)`` samples in ``input``'s shape and float dtype (``torch.rand_like``);
    as :func:`randn_like`."""
    d = _like("rand_like", input, dtype, device, dev)
    t = d.rand(tuple(input.shape), 0.0, 1.0, input.dtype if dtype is None else dtype)
    return _finish("rand_like", t, requires_grad)
