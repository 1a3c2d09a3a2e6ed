"""PyTorch's ``torch.cuda`` queries on gradtape, for the line every PyTorch program starts
with: ``device = gradtape.device("cuda" if gradtape.cuda.is_available() else "cpu")``.

Nothing here imports CuPy until asked; without CuPy, numba-cuda or a GPU,
:func:`is_available` is False, :func:`device_count` 0, and :func:`manual_seed` does nothing
(as PyTorch's, "silently ignored" without CUDA).
"""

from __future__ import annotations

from gradtape.devices.cuda import cuda_available

__all__ = ["current_device", "device_count", "is_available", "manual_seed", "manual_seed_all", "synchronize"]


def is_available() -> bool:
    """Whether the ``Cuda`` device can be made here (``torch.cuda.is_available``): CuPy and
    numba-cuda import and CUDA sees a GPU. Never raises."""
    return cuda_available()


def device_count() -> int:
    """The number of GPUs CUDA sees (``torch.cuda.device_count``); 0 without CUDA."""
    if not cuda_available():
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def current_device() -> int:
    """The index of the current GPU (``torch.cuda.current_device``): 0, the one
    ``gradtape.Cuda()`` and ``device="cuda"`` use.

    Raises:
        RuntimeError: CUDA is not available (as PyTorch).
    """
    if not cuda_available():
        raise RuntimeError("gradtape.cuda.current_device: CUDA is not available (pip install 'gradtape[cuda]')")
    return 0


def manual_seed(seed: int) -> None:
    """Reseed the generator of each GPU's shared device (``device="cuda:N"``;
    ``torch.cuda.manual_seed``); nothing without CUDA.

    Raises:
        TypeError: ``seed`` is not an int.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"gradtape.cuda.manual_seed: seed must be an int, got {seed!r}")
    if not cuda_available():
        return
    from gradtape.devices.default import as_device

    for n in range(device_count()):
        as_device("cuda.manual_seed", f"cuda:{n}").reseed(seed)


manual_seed_all = manual_seed
"""``torch.cuda.manual_seed_all``: :func:`manual_seed` (every GPU's device)."""


def synchronize() -> None:
    """Wait for the current GPU's queued work (``torch.cuda.synchronize``); nothing without CUDA."""
    if cuda_available():
        import cupy

        cupy.cuda.Device().synchronize()
