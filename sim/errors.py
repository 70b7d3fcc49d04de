"""Errors and fault records of the simulator.

A *user mistake* on the host side (a bad launch argument, a host access outside device
memory) raises :class:`IssError`. A *kernel fault* (the program did something the
architecture forbids) stops the launch and raises :class:`KernelFault`, whose
:class:`FaultRecord` carries the same fields as the RTL's fault record.
"""

from __future__ import annotations

from dataclasses import dataclass

from simtgpu.errors import SimtgpuError
from simtgpu.isa import FaultCause


class IssError(SimtgpuError):
    """A host-side misuse of the simulator; the message names the argument and the problem."""


class MemoryAccessError(IssError):
    """A host read or write outside the usable range of device memory."""


@dataclass(frozen=True)
class FaultRecord:
    """What stopped a kernel: where (block, warp, lanes, PC), why, and the instruction.

    ``lane_mask`` has bit ``l`` set for each lane ``l`` that caused the fault (for barrier
    deadlocks and the watchdog: the warp's active lanes; none for the RTL's launch watchdog,
    which stops a launch and names no instruction). ``instruction`` is the disassembly
    of the word at ``pc`` (empty when the PC is outside the code). ``detail`` says more in
    words, for example the offending address.
    """

    cause: FaultCause
    block: tuple[int, int, int]
    warp: int
    lane_mask: int
    pc: int
    instruction: str
    detail: str = ""
    core: int = 0

    @staticmethod
    def names_an_instruction(cause: FaultCause, lane_mask: int) -> bool:
        """False for the RTL's launch watchdog: it stops a launch, not a warp (no lane, no
        instruction at its pc 0)."""
        return bool(lane_mask) or cause is not FaultCause.WATCHDOG

    def __str__(self) -> str:
        if not self.names_an_instruction(self.cause, self.lane_mask):
            return f"fault: {self.cause.name}: {self.detail}"
        bx, by, bz = self.block
        text = f" ({self.instruction})" if self.instruction else ""
        out = (f"fault: {self.cause.name} at pc 0x{self.pc:04x}{text} block ({bx},{by},{bz}) "
               f"warp {self.warp} lanes 0x{self.lane_mask:08x} on core {self.core}")
        return out + (f": {self.detail}" if self.detail else "")


class KernelFault(SimtgpuError):
    """The kernel faulted; ``record`` says where and why. The launch stopped there."""

    def __init__(self, record: FaultRecord):
        super().__init__(str(record))
        self.record = record

    def render(self) -> str:
        return str(self.record)
