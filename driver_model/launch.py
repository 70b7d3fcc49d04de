"""Launch dimensions as the driver takes them, and the record of a finished launch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import DriverError

Dims = tuple[int, int, int]


def normalize_dims(value: Any, what: str) -> Dims:
    """``int`` or a 1- to 3-tuple (list, 1-D array) of positive ints -> (x, y, z), missing
    dimensions 1."""
    if isinstance(value, (tuple, list)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        items = tuple(value)
    else:
        items = (value,)
    if not 1 <= len(items) <= 3:
        raise DriverError(f"{what} must be an int or 1 to 3 dimensions, not {value!r}")
    dims = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise DriverError(f"{what} dimensions must be integers, not {value!r}")
        if v < 1:
            raise DriverError(f"{what} dimensions must be at least 1, not {value!r}")
        dims.append(int(v))
    dims += [1] * (3 - len(dims))
    return (dims[0], dims[1], dims[2])


@dataclass
class LaunchResult:
    """What one launch did, as measured by the device's counters and the backend.

    ``instructions`` counts warp-instructions; ``thread_instructions`` sums the executing
    lanes of each. ``counters`` holds every performance-counter delta by name (lower case);
    ``per_core`` the deltas of each core's counter window (``arch.command_queue.CoreCounter``
    names, lower case; cycles are GPU-wide), or None where the backend has no per-core
    counters (the ISS); ``details`` is backend-specific (the ISS's LaunchStats fields).
    """

    kernel: str
    grid: Dims
    block: Dims
    backend: str
    fence: int
    wall_s: float
    instructions: int
    thread_instructions: int
    cycles: int
    divergence_events: int
    per_opcode: dict[str, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    per_core: list[dict[str, int]] | None = None

    @property
    def thread_instructions_per_s(self) -> float:
        return self.thread_instructions / self.wall_s if self.wall_s > 0 else 0.0

    def report(self) -> str:
        """Multi-line human-readable summary (``simtgpu run --stats``)."""
        lines = [
            f"kernel {self.kernel} grid={self.grid} block={self.block} on {self.backend}",
            f"  warp-instructions    {self.instructions}",
            f"  thread-instructions  {self.thread_instructions}",
            f"  divergence events    {self.divergence_events}",
            f"  wall time            {self.wall_s * 1e3:.2f} ms "
            f"({self.thread_instructions_per_s / 1e6:.2f} M thread-instr/s)",
        ]
        if self.cycles:
            lines.append(f"  cycles               {self.cycles}")
        extra = {k: v for k, v in self.counters.items()
                 if v and k not in ("instructions", "thread_instructions", "divergence_events",
                                    "cycles_lo", "cycles_hi", "commands")}
        for k, v in extra.items():
            lines.append(f"  {k:<20} {v}")
        if self.per_opcode:
            lines.append("  per opcode:")
            for op, n in sorted(self.per_opcode.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"    {op:<12} {n}")
        return "\n".join(lines)
