"""Architectural state and the ABI: registers, predicates, special registers, memory map.

This is the contract between kernels, the assembler, the simulator, the RTL and the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

NUM_REGS = 32
"""General-purpose 32-bit registers per thread, r0..r31. r0 always reads as zero."""

NUM_PREDS = 8
"""Predicate registers per thread, p0..p6 plus pt (p7), which always reads as true."""

PT = 7
"""Index of the always-true predicate ``pt``. Writes to it are discarded."""

WORD_BYTES = 4
INSTR_BYTES = 4

# Register conventions. Kernels have no calls, so there are no callee-saved registers;
# these names only make hand-written kernels easier to read and the compiler's life simple.
REGISTER_CONVENTIONS: tuple[tuple[str, str], ...] = (
    ("r0", "hard-wired zero; writes are discarded"),
    ("r1-r27", "free for the kernel; the compiler allocates from r1 upward"),
    ("r28-r31", "free; pseudo-instructions never use hidden temporaries, so every register "
     "a kernel names is its own"),
    ("p0-p6", "predicates, free for the kernel"),
    ("pt", "always true; the default guard of every instruction"),
)


class SReg(IntEnum):
    """Special registers read with ``s2r rd, NAME``. Values are per thread."""

    TID_X = 0
    TID_Y = 1
    TID_Z = 2
    NTID_X = 3
    NTID_Y = 4
    NTID_Z = 5
    CTAID_X = 6
    CTAID_Y = 7
    CTAID_Z = 8
    NCTAID_X = 9
    NCTAID_Y = 10
    NCTAID_Z = 11
    LANEID = 12
    WARPID = 13
    NWARPS = 14
    WARPSIZE = 15
    CLOCK = 16
    CLOCKHI = 17
    COREID = 18
    TID = 19

    @property
    def asm_name(self) -> str:
        return self.name.lower().replace("_", ".")


SREG_DOCS: dict[SReg, str] = {
    SReg.TID_X: "thread index in the block, x",
    SReg.TID_Y: "thread index in the block, y",
    SReg.TID_Z: "thread index in the block, z",
    SReg.NTID_X: "block size, x",
    SReg.NTID_Y: "block size, y",
    SReg.NTID_Z: "block size, z",
    SReg.CTAID_X: "block index in the grid, x",
    SReg.CTAID_Y: "block index in the grid, y",
    SReg.CTAID_Z: "block index in the grid, z",
    SReg.NCTAID_X: "grid size in blocks, x",
    SReg.NCTAID_Y: "grid size in blocks, y",
    SReg.NCTAID_Z: "grid size in blocks, z",
    SReg.LANEID: "lane index within the warp, 0..warpsize-1",
    SReg.WARPID: "warp index within the block",
    SReg.NWARPS: "number of warps in the block",
    SReg.WARPSIZE: "lanes per warp (a configuration parameter)",
    SReg.CLOCK: "core cycle counter, low 32 bits (ISS: the warp's retired-instruction count)",
    SReg.CLOCKHI: "core cycle counter, high 32 bits",
    SReg.COREID: "index of the core running the block",
    SReg.TID: "linear thread index in the block: x + ntid.x * (y + ntid.y * z)",
}

SREG_BY_NAME: dict[str, SReg] = {s.asm_name: s for s in SReg}

# Thread organisation: a block's threads are numbered linearly with x fastest (SReg.TID);
# warp w holds linear threads [w * warpsize, (w + 1) * warpsize). Lanes of the last warp
# beyond the block size start inactive (as if exited).


@dataclass(frozen=True)
class Region:
    name: str
    base: int
    size_doc: str
    doc: str


# Address spaces. Instruction memory is separate (Harvard): the PC is a byte address into
# the module's code, which the driver loads into instruction memory.
GLOBAL_NULL_GUARD = 0x0000_1000
"""Global addresses below this fault: a null or small-integer pointer is always a bug."""

MEMORY_MAP: tuple[Region, ...] = (
    Region("global null guard", 0x0000_0000, "4 KiB", "any access faults (out-of-range)"),
    Region("global memory", GLOBAL_NULL_GUARD, "configuration's memory size",
           "device memory: buffers, module data sections, parameter blocks, command queue"),
    Region("shared memory", 0x0000_0000, "the block's .shared size",
           "separate space per block, reached only by lds/sts/atoms.*"),
    Region("parameter block", 0x0000_0000, "the kernel's .param list",
           "read-only, reached by ldparam; byte offsets as .param declares them"),
    Region("instruction memory", 0x0000_0000, "the module's code",
           "reached only by fetch; the PC is a byte address, 4-aligned"),
)

# Kernel parameters. Each parameter is one 32-bit word; ``.param`` lines give them offsets
# 0, 4, 8, ... in order of declaration. The driver writes the launch's parameter block into
# global memory and the launch descriptor carries its address; ``ldparam rd, NAME`` reads
# it (all lanes read the same word, one bus transaction).
PARAM_TYPES: dict[str, str] = {
    "ptr": "a global-memory byte address",
    "i32": "a signed 32-bit integer",
    "u32": "an unsigned 32-bit integer",
    "f32": "an IEEE-754 binary32 value",
}
MAX_PARAMS = 64

LOCAL_PARAM = "__local"
"""The hidden last parameter of a kernel that uses local memory (compiled kernels whose
register spills do not fit in shared memory): the base address of the launch's local area,
which the driver allocates (``threads x local_bytes``) and fills in. Block ``b`` (x fastest)
owns ``[b * ntid * local_bytes, (b + 1) * ntid * local_bytes)`` of it, slot-major: word ``s``
of thread ``tid`` is at ``4 * (s * ntid + tid)``, so a warp's lanes touch consecutive words."""


class FaultCause(IntEnum):
    """Architectural fault causes, shared by the ISS, the RTL and the driver."""

    NONE = 0
    ILLEGAL_INSTRUCTION = 1
    OUT_OF_RANGE = 2
    MISALIGNED = 3
    BARRIER_DEADLOCK = 4
    DIVERGENT_BARRIER = 5
    STACK_OVERFLOW = 6
    STACK_UNDERFLOW = 7
    WATCHDOG = 8
    PC_OUT_OF_RANGE = 9
    DIVERGENT_MMA = 10


FAULT_DOCS: dict[FaultCause, str] = {
    FaultCause.NONE: "no fault",
    FaultCause.ILLEGAL_INSTRUCTION: "the word at PC is not a valid encoding",
    FaultCause.OUT_OF_RANGE: "a lane addressed memory outside its space (or in the null guard)",
    FaultCause.MISALIGNED: "a lane's word access was not 4-byte aligned",
    FaultCause.BARRIER_DEADLOCK: "a barrier can never complete: a warp of the block exited "
    "while others wait, or all live warps wait on different barriers",
    FaultCause.DIVERGENT_BARRIER: "bar executed with only part of the warp's live lanes active",
    FaultCause.STACK_OVERFLOW: "the warp's reconvergence stack is full",
    FaultCause.STACK_UNDERFLOW: "sync executed with an empty reconvergence stack",
    FaultCause.WATCHDOG: "the kernel ran past its instruction or cycle budget",
    FaultCause.PC_OUT_OF_RANGE: "the PC left the module's code",
    FaultCause.DIVERGENT_MMA: "mma executed without every lane of the warp (it needs all of "
    "them, active and guarded in)",
}

RECONVERGENCE_STACK_DEPTH = 16
"""Entries per warp; documented default for ISS and RTL (a configuration parameter)."""
