"""Devices: the ``Device`` protocol and the numba-backed ``Cpu``.

``Cpu`` and ``Device`` load on first access, so that the kernels in
``gradtape.devices.kernels`` can be imported by ops without importing the tensor class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradtape.devices.base import Device
    from gradtape.devices.cpu import Cpu

__all__ = ["Cpu", "Device"]


def __getattr__(name: str) -> Any:
    if name == "Cpu":
        from gradtape.devices.cpu import Cpu

        return Cpu
    if name == "Device":
        from gradtape.devices.base import Device

        return Device
    raise AttributeError(f"module 'gradtape.devices' has no attribute {name!r}")
