"""``triton.runtime.driver`` for this GPU: the current device's properties and target, so
that host code sizing its launches from them (tutorial 02's occupancy) runs unchanged::

    from simtgpu.compiler_backend.runtime import driver
    props = driver.active.utils.get_device_properties(driver.active.get_current_device())
    props["multiprocessor_count"], props["max_shared_mem"], props["warpSize"]

The figures come from the current device's configuration (docs/compiler.md, "Triton's
tutorials").
"""

from __future__ import annotations

from dataclasses import dataclass

from .jit import device_target, get_device


@dataclass(frozen=True)
class GPUTarget:
    """Triton's ``GPUTarget``: backend (``simtgpu`` or ``cuda``), arch, warp size."""

    backend: str
    arch: str
    warp_size: int


class _Utils:
    def get_device_properties(self, device=None) -> dict[str, int]:
        """Triton's property names for the current device (``device``: the current
        device's index 0, or the device itself): ``multiprocessor_count`` (cores),
        ``max_shared_mem`` (bytes per core), ``warpSize`` (lanes), ``max_num_regs``
        (32-bit registers per core: per thread x threads per core), and this GPU's
        ``max_threads_per_block``."""
        dev = _device(device)
        c = dev.config
        return {"multiprocessor_count": c.cores, "max_shared_mem": c.shared_bytes_per_core,
                "warpSize": c.lanes, "max_num_regs": c.regs * c.warps_per_core * c.lanes,
                "max_threads_per_block": c.max_threads_per_block}


def _device(device):
    current = get_device()
    if device is None or device == 0 or device is current:
        return current
    raise ValueError(f"device {device!r} is not the current device (set it with "
                     "simtgpu.compiler_backend.set_device)")


class _ActiveDriver:
    utils = _Utils()

    def get_current_device(self) -> int:
        return 0

    def get_current_target(self) -> GPUTarget:
        t = device_target(get_device())
        if t.kind == "ptx":
            return GPUTarget("cuda", t.arch, t.warp_size)
        return GPUTarget("simtgpu", get_device().config.name, t.warp_size)


class _Driver:
    active = _ActiveDriver()


driver = _Driver()
