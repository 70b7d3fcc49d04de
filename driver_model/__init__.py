"""simtgpu.driver_model: the host API (devices, memory, modules, launches) and its backends.

Quick start::

    from simtgpu.driver_model import Device
    dev = Device(backend="iss", config="small")
    mod = dev.load_module("examples/asm/vector_add.s")
    a, b = dev.to_device(x), dev.to_device(y)
    c = dev.empty(n, np.float32)
    dev.launch(mod.kernel("vector_add"), grid=(n + 63) // 64, block=64, args=(a, b, c, n))
    result = c.to_host()

The configuration and command-queue contract live a layer down, in :mod:`simtgpu.arch`
(re-exported here: ``CONFIGS``, ``GpuConfig``, ``get_config``); the host API names below are
imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from simtgpu.arch.config import CONFIGS, GpuConfig, get_config

from .errors import DriverError

_LAZY = {
    "Allocator": "allocator", "MemoryStats": "allocator", "Backend": "backend",
    "BACKENDS": "device", "Device": "device", "make_backend": "device",
    "DeviceArray": "device_array", "LaunchResult": "launch", "Kernel": "module",
    "Module": "module",
}

__all__ = ["CONFIGS", "DriverError", "GpuConfig", "get_config", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
