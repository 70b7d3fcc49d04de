"""simtgpu.sim: the golden functional simulator (ISS) of the simtgpu programming model.

    from simtgpu.sim import Iss, GlobalMemory
    mem = GlobalMemory(1 << 20)
    stats = Iss(mem, warp_size=32).launch(code, entry, grid, block, param_addr, param_size,
                                          shared_bytes)

See docs/iss.md for the model and docs/trace-format.md for the retire trace.
"""

from .errors import FaultRecord, IssError, KernelFault, MemoryAccessError
from .iss import Iss
from .memory import GlobalMemory
from .stats import LaunchStats

__all__ = ["FaultRecord", "GlobalMemory", "Iss", "IssError", "KernelFault", "LaunchStats",
           "MemoryAccessError"]
