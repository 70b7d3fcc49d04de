"""simtgpu.arch: the hardware/software contract, below both the driver and the RTL.

What a GPU build is (:mod:`.config`: :class:`GpuConfig` and the named configurations) and how
the host talks to it (:mod:`.command_queue`: the 64-byte command record, the MMIO register
map). The driver, the ISS backend, the RTL and the tests all read these; this package imports
nothing of theirs, only :mod:`simtgpu.isa` and :mod:`simtgpu.errors`.
"""

from .config import CONFIGS, ConfigError, GpuConfig, get_config

__all__ = ["CONFIGS", "ConfigError", "GpuConfig", "get_config"]
