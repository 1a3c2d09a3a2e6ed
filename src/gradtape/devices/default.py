"""The default device: what PyTorch's global generator and default device are to a PyTorch
program, for code that names no device.

PyTorch programs build layers and tensors without naming a device (``nn.Linear(784, 128)``,
``torch.randn(8, 3)``) and seed them with ``torch.manual_seed(1)``. gradtape's devices carry
their own seeded generator (dfdx's ``Cpu::seed_from_u64``), and every layer and factory still
takes one (``dev=``); where none is given they use the process's default device, a
:class:`~gradtape.devices.cpu.Cpu` made on first use with seed 0. :func:`manual_seed` reseeds
it, :func:`set_default_device` replaces it. ``set_default_device("cuda")`` makes a GPU's shared
``Cuda`` the default (PyTorch's idiom for building a whole program on the GPU); ``"cpu"``
still names a ``Cpu`` then (:func:`host_device`: the one that was the default), so
``from_numpy``, ``.to("cpu")`` and ``nn.init``'s host draws stay on the CPU.

The default device is one object for the whole process (as PyTorch's default generator is one
for all threads): two threads that draw from it without a lock of their own get their numbers
in whatever order they run. Give each thread its own ``Cpu(seed=...)`` for reproducible
parallel draws.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np

from gradtape.devices import _arrays

if TYPE_CHECKING:
    from gradtape.devices.cpu import Cpu
    from gradtape.devices.cuda import Cuda

__all__ = ["device", "get_default_device", "host_device", "initial_seed", "manual_seed", "set_default_device"]

AnyDevice: TypeAlias = "Cpu | Cuda"
"""A device object: what gradtape's (and dfdx's) ``dev=`` takes."""

DeviceSpec: TypeAlias = "Cpu | Cuda | str | None"
"""What PyTorch's ``device=`` takes: a device object, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` (a
:class:`device` is a ``str``), or ``None`` for the default device (:func:`pick_device`)."""

_LOCK = threading.Lock()
_DEFAULT: list[Cpu] = []  # the default device: a Cpu, or a Cuda typed as the Cpu it stands in for
_HOST: list[Cpu] = []  # while a Cuda is the default: the Cpu that "cpu" names


def get_default_device() -> Cpu:
    """The device layers, factories and data loaders use when given none (PyTorch's
    ``torch.get_default_device``): a ``Cpu`` made with seed 0 on first use, or the one
    :func:`set_default_device` set (a ``Cuda`` after ``set_default_device("cuda")``, typed as
    the ``Cpu`` it stands in for, as :func:`pick_device` returns it). The same object on every
    call until it is replaced."""
    if not _DEFAULT:
        from gradtape.devices.cpu import Cpu

        with _LOCK:
            if not _DEFAULT:
                _DEFAULT.append(Cpu())
    return _DEFAULT[0]


def host_device() -> Cpu:
    """The ``Cpu`` that ``"cpu"`` names (``device="cpu"``, ``.to("cpu")``) and that
    :func:`~gradtape.from_numpy` shares memory on: the default device while it is a ``Cpu``;
    while a ``Cuda`` is the default, the ``Cpu`` that was the default before it (one with seed 0
    if none was made yet). ``nn.init`` draws a GPU tensor's values from its generator, on the
    host, so a model gets the same values on either device."""
    from gradtape.devices.cpu import Cpu

    dev = get_default_device()
    if isinstance(dev, Cpu):
        return dev
    with _LOCK:
        if not _HOST:
            _HOST.append(Cpu())
        return _HOST[0]


def set_default_device(device: Cpu | Cuda | str | None) -> None:
    """Make ``device`` the default device (PyTorch's ``torch.set_default_device``): the device
    layers, factories and datasets built without one use from now on.

    Args:
        device: a ``Cpu`` or ``Cuda``; ``"cuda"``/``"cuda:N"`` (or ``gradtape.device("cuda")``):
            that GPU's shared ``Cuda`` device, the one ``device="cuda"`` names, and the ``Cpu``
            that was the default stays what ``"cpu"`` names (:func:`host_device`); ``"cpu"``:
            back to that ``Cpu`` (a no-op while the default is a ``Cpu``); or ``None``, which
            drops the current default so that the next use makes a fresh ``Cpu()`` with seed 0.

    Raises:
        ValueError: a string naming another device, or a bad index (the message names it).
        RuntimeError: ``"cuda"`` without CuPy, numba-cuda or a GPU (:class:`Cuda`'s error,
            which says which is missing); the default stays as it was.
        TypeError: anything else.
    """
    from gradtape.devices.cpu import Cpu

    if device is None:
        with _LOCK:
            _DEFAULT.clear()
            _HOST.clear()
        return
    if isinstance(device, str) and device.split(":")[0] == "cpu":
        host = host_device()
        with _LOCK:
            _DEFAULT[:] = [host]
            _HOST.clear()
        return
    if isinstance(device, str) or getattr(device, "type", None) == "cuda":
        dev = as_device("set_default_device", device)
    elif isinstance(device, Cpu):
        dev = device
    else:
        got = type(device).__name__
        raise TypeError(f"set_default_device: expected a Cpu, a Cuda, 'cpu', 'cuda' or None, got {got}")
    if isinstance(dev, Cpu):
        with _LOCK:
            _DEFAULT[:] = [dev]
            _HOST.clear()
        return
    host = host_device()
    with _LOCK:
        _HOST[:] = [host]
        _DEFAULT[:] = [dev]


def manual_seed(seed: int) -> Cpu:
    """Reseed the default device's generator (PyTorch's ``torch.manual_seed``): the layers,
    ``randn``/``rand``/``randint`` factories, dropout masks and shuffling loaders that use the
    default device draw the same numbers after the same seed. As PyTorch's, it also reseeds the
    GPUs' shared devices made so far (``device="cuda:N"``, :func:`gradtape.cuda.manual_seed`)
    and, while a ``Cuda`` is the default, the ``Cpu`` that ``"cpu"`` names. The device objects
    stay the same, so layers and tensors made before keep using them.

    Args:
        seed: an int; numpy's PCG64 generator is seeded with it (``numpy.random.default_rng``;
            CuPy's ``default_rng`` on a GPU). gradtape's numbers differ from PyTorch's for the
            same seed (another generator).

    Returns:
        The default device (PyTorch returns its ``Generator``; the device is gradtape's).

    Raises:
        TypeError: ``seed`` is not an int (a bool or float included).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__} {seed!r}")
    host = host_device()
    host.reseed(int(seed))
    for cuda in _CUDA.values():
        cast("Cpu", cuda).reseed(int(seed))
    dev = get_default_device()
    if dev is not host and all(dev is not c for c in _CUDA.values()):
        dev.reseed(int(seed))  # a Cuda the caller made, not one of the shared ones reseeded above
    return dev


def initial_seed() -> int:
    """The seed the default device's generator was last seeded with (PyTorch's
    ``torch.initial_seed``)."""
    return int(get_default_device().seed)


def _check_cpu_name(op: str, name: str) -> None:
    """Accept PyTorch's device string ``"cpu"`` (``"cpu:0"`` too) for ``op``.

    Raises:
        ValueError: any other device name (the message names ``op`` and it).
    """
    if name.split(":")[0] != "cpu":
        raise ValueError(
            f"{op}: unknown device {name!r}; {op} takes 'cpu' only (move tensors and models with .to('cuda'))"
        )


def pick_dtype(dtype: Any) -> Any:
    """A layer's parameter dtype: ``dtype``, or float32 (PyTorch's default dtype,
    ``gradtape.get_default_dtype()``) where it is ``None``, as PyTorch code passes it through
    (``factory_kwargs = {"device": None, "dtype": None}``): numpy alone would read ``None`` as
    float64."""
    return np.float32 if dtype is None else dtype


def pick_device(op: str, device: object, dev: object) -> Cpu:
    """The device a factory or a layer makes its tensors on: ``dev=`` (gradtape's and dfdx's
    spelling: a ``Cpu`` or ``Cuda``), else ``device=`` (PyTorch's: a device object, ``"cpu"``,
    ``"cuda"``, ``"cuda:N"`` or a :class:`device`), else the default device. ``"cpu"`` is
    :func:`host_device` (the default device while that is a ``Cpu``: its seeded generator, as a
    layer built with no device uses); ``"cuda"``
    the shared ``Cuda(N)`` of :func:`as_device`. A ``Cuda`` is returned typed as ``Cpu``
    (the device protocol both implement).

    Raises:
        TypeError: both ``dev`` and ``device`` are given, or one is not a device (the message
            names ``op``).
        ValueError: a string naming another device, or a bad index.
        RuntimeError: ``"cuda"`` without CuPy, numba-cuda or a GPU (:class:`Cuda`'s error).
    """
    from gradtape.devices.cpu import Cpu

    if dev is not None and device is not None:
        raise TypeError(f"{op}: pass dev= or device=, not both")
    d = dev if dev is not None else device
    if d is None:
        return get_default_device()
    if isinstance(d, str):
        if d.split(":")[0] == "cuda":
            cuda: Cpu = as_device(op, d)
            return cuda
        _check_cpu_name(op, d)
        return host_device()
    if isinstance(d, Cpu) or getattr(d, "type", None) == "cuda":
        return cast("Cpu", d)
    raise TypeError(f"{op}: device must be a Cpu, a Cuda, 'cpu' or 'cuda', got {type(d).__name__}")


_CUDA: dict[int, object] = {}


class device(str):
    """PyTorch's ``torch.device``: ``device("cuda")``, ``device("cuda:1")``, ``device("cuda", 1)``,
    ``device("cpu")``. A string (``"cuda:1"``), so every gradtape API that takes ``"cpu"`` or
    ``"cuda"`` takes it; :attr:`type` and :attr:`index` as PyTorch's. Naming a GPU needs no GPU
    (as in PyTorch, the error comes when a tensor is put there).

    Raises:
        ValueError: another device type than ``"cpu"`` or ``"cuda"``, or a bad index.
        TypeError: the spec is not a string (or a device).
    """

    def __new__(cls, spec: str, index: int | None = None) -> device:
        if not isinstance(spec, str):
            raise TypeError(f"device: expects a string such as 'cpu', 'cuda' or 'cuda:0', got {type(spec).__name__}")
        kind, sep, idx = spec.partition(":")
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"device: unknown device type {kind!r}; gradtape knows 'cpu' and 'cuda'")
        if sep and index is not None:
            raise ValueError(f"device: the index is given twice ({spec!r} and {index})")
        n: int | None = index
        if sep:
            if not idx.isdigit():
                raise ValueError(f"device: bad device index in {spec!r}")
            n = int(idx)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0 or (kind == "cpu" and n != 0)):
            raise ValueError(f"device: bad index {n!r} for a {kind} device")
        out = super().__new__(cls, kind if n is None else f"{kind}:{n}")
        out._type, out._index = kind, n
        return out

    _type: str
    _index: int | None

    @property
    def type(self) -> str:
        """``"cpu"`` or ``"cuda"``."""
        return self._type

    @property
    def index(self) -> int | None:  # type: ignore[override]  # PyTorch's attribute shadows str.index
        """The GPU's index, ``None`` where none was named (PyTorch's ``device.index``; it shadows
        ``str.index`` on this string)."""
        return self._index

    def __repr__(self) -> str:
        return f"device(type={self._type!r}" + (f", index={self._index})" if self._index is not None else ")")


def as_device(op: str, spec: object) -> Any:
    """The device object ``spec`` names (:func:`is_device_spec`): ``"cpu"`` is
    :func:`host_device` (the default device when that is a ``Cpu``), ``"cuda"`` and ``"cuda:N"`` one
    shared ``Cuda(N)`` per GPU; a device object is returned as it is.

    Raises:
        ValueError: a string naming another device (the message names ``op`` and it).
        TypeError: ``spec`` names no device.
        RuntimeError: a CUDA device without CuPy, numba-cuda or a GPU.
    """
    from gradtape.devices.cpu import Cpu
    from gradtape.devices.cuda import Cuda

    if isinstance(spec, (Cpu, Cuda)):
        return spec
    kind = spec if isinstance(spec, str) else getattr(spec, "type", None)
    if not isinstance(kind, str):
        raise TypeError(f"{op}: expects a device ('cpu', 'cuda', 'cuda:0', a Cpu or a Cuda), got {spec!r}")
    name, _, idx = kind.partition(":")
    index = getattr(spec, "index", None) if not isinstance(spec, str) else None
    if name == "cpu":
        return host_device()
    if name != "cuda":
        raise ValueError(f"{op}: unknown device {spec!r}; gradtape knows 'cpu' and 'cuda' ('cuda:N')")
    try:
        n = int(idx) if idx else (int(index) if index is not None else 0)
    except ValueError:
        raise ValueError(f"{op}: bad device index in {spec!r}") from None
    dev_cuda = _CUDA.get(n)
    if dev_cuda is None:
        dev_cuda = _CUDA[n] = Cuda(n)
    return dev_cuda


_arrays._RESOLVER[:] = [as_device]
