"""The host interface: command records, the MMIO register file and their encodings.

This module is the contract between the driver and every backend (the ISS backend, the RTL
host interface): constants and pure pack/unpack functions only, no behaviour. The meaning
of every field is written down in docs/command-queue.md.

Summary
-------
* A ring of ``entries`` fixed 64-byte records lives in device memory at ``QUEUE_BASE``.
  The host writes a record at index ``tail`` and rings the doorbell by writing the new tail
  (``(tail + 1) % entries``) to ``Mmio.DOORBELL``. The ring is full when the next tail would
  equal ``HEAD``.
* The device consumes records in order from ``HEAD``. When a command completes, the device
  writes the record's fence value (w1) as a little-endian u32 to the address in
  ``Mmio.FENCE_ADDR`` and then advances ``HEAD``.
* A kernel fault (or a malformed record) stops the queue: ``STATUS.FAULT`` is set, the
  ``FAULT_*`` registers describe it, ``HEAD`` stays on the faulting record and its fence is
  not written. Writing ``CONTROL.CLEAR_FAULT`` clears the fault and discards the faulting
  record and every record queued behind it (``HEAD := TAIL``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

RECORD_BYTES = 64
RECORD_WORDS = RECORD_BYTES // 4
QUEUE_ENTRIES = 64
"""Ring size the driver programs by default (a power of two; the hardware accepts 2..4096)."""
MAX_QUEUE_ENTRIES = 4096

DEVICE_ID = 0x53475055  # 'SGPU' read as a big-endian string: 0x53 'S', 0x47 'G', ...
VERSION_MAJOR = 1
VERSION_MINOR = 0
VERSION = (VERSION_MAJOR << 16) | VERSION_MINOR


class CommandOp(IntEnum):
    """Record word 0."""

    NOP = 0  # does nothing but complete (its fence is written)
    LAUNCH = 1  # run a grid; the fence is written after every block has finished
    FENCE = 2  # only write the fence (after all earlier commands' memory writes are visible)


class Mmio(IntEnum):
    """Byte offsets of the 32-bit MMIO registers. RO = read-only, W1 = write-one-to-act."""

    ID = 0x00  # RO  DEVICE_ID
    VERSION = 0x04  # RO  (major << 16) | minor
    QUEUE_BASE = 0x08  # RW  global byte address of the ring, 64-byte aligned; resets HEAD/TAIL
    QUEUE_ENTRIES = 0x0C  # RW  ring size in records, power of two; resets HEAD/TAIL
    DOORBELL = 0x10  # RW  TAIL: index one past the last record written; writing it starts work
    HEAD = 0x14  # RO  index of the next record the device will consume
    FENCE_ADDR = 0x18  # RW  global byte address (4-aligned) of the completion fence word
    STATUS = 0x1C  # RO  Status bits
    FAULT_CAUSE = 0x20  # RO  isa.FaultCause of the fault (NONE for a malformed record)
    FAULT_PC = 0x24  # RO  faulting instruction's absolute imem byte address
    FAULT_CORE = 0x28  # RO  core that ran the faulting block
    FAULT_WARP = 0x2C  # RO  warp index within the block
    FAULT_LANES = 0x30  # RO  lane mask of the faulting lanes
    FAULT_BLOCK_X = 0x34  # RO  faulting block's ctaid
    FAULT_BLOCK_Y = 0x38
    FAULT_BLOCK_Z = 0x3C
    CONTROL = 0x40  # W1  Control bits; reads as 0
    FAULT_INSTR = 0x44  # RO  the instruction word at FAULT_PC (0 if none)
    IMEM_ADDR = 0x48  # RW  instruction-memory byte address for IMEM_DATA (4-aligned)
    IMEM_DATA = 0x4C  # RW  word at IMEM_ADDR; a read or a write then adds 4 to IMEM_ADDR
    # Capabilities (RO): what the device was built with (configs.GpuConfig).
    CAP_CORES = 0x50
    CAP_WARPS = 0x54  # warps per core
    CAP_LANES = 0x58
    CAP_SHARED_BYTES = 0x5C  # shared memory per core
    CAP_MEM_BYTES = 0x60
    CAP_IMEM_BYTES = 0x64
    CAP_STACK_DEPTH = 0x68
    # Performance counters (RO), free-running modulo 2**32 since reset (CONTROL.RESET_COUNTERS
    # zeroes them). The driver reads them before and after a launch and subtracts.
    CYCLES_LO = 0x80  # device clock cycles while busy (ISS: 0, it has no cycles)
    CYCLES_HI = 0x84  # high word of the 64-bit cycle count
    INSTRUCTIONS = 0x88  # warp-instructions retired
    THREAD_INSTRUCTIONS = 0x8C  # sum over retired warp-instructions of their executing lanes
    STALL_SCOREBOARD = 0x90  # warp-scheduler slots lost to register dependencies
    STALL_MEMORY = 0x94  # ... to warps waiting on global memory
    STALL_BARRIER = 0x98  # ... to warps waiting at a barrier
    STALL_STRUCTURAL = 0x9C  # ... to a busy unit (SFU, LSU)
    STALL_IDLE = 0xA0  # ... with no live warp on the core
    MEM_TRANSACTIONS = 0xA4  # global-memory bus transactions after coalescing
    DIVERGENCE_EVENTS = 0xA8  # branches that split a warp
    BARRIERS = 0xAC  # block barriers completed
    COMMANDS = 0xB0  # commands completed


PERF_COUNTERS: tuple[Mmio, ...] = tuple(m for m in Mmio if m >= Mmio.CYCLES_LO)
MMIO_SPAN = 0x100
"""Size of the register window; offsets inside it that no register names read as 0."""


class Status(IntEnum):
    BUSY = 1 << 0  # commands are queued or running (HEAD != TAIL and no fault)
    FAULT = 1 << 1  # a kernel fault or a bad record stopped the queue
    BAD_COMMAND = 1 << 2  # with FAULT: the record at HEAD is malformed (FAULT_CAUSE = NONE)


class Control(IntEnum):
    CLEAR_FAULT = 1 << 0  # clear STATUS.FAULT/BAD_COMMAND and FAULT_*; HEAD := TAIL
    RESET_COUNTERS = 1 << 1  # zero every performance counter


@dataclass(frozen=True)
class Command:
    """One decoded queue record. Launch fields are zero for NOP and FENCE."""

    opcode: CommandOp
    fence: int
    entry_pc: int = 0
    grid: tuple[int, int, int] = (0, 0, 0)
    block: tuple[int, int, int] = (0, 0, 0)
    param_addr: int = 0
    param_size: int = 0
    shared_bytes: int = 0
    regs: int = 0

    @property
    def block_threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


class RecordError(ValueError):
    """A record that the device must refuse (reported through STATUS.BAD_COMMAND)."""


_FMT = f"<{RECORD_WORDS}I"


def pack(cmd: Command) -> bytes:
    """Encode a command as its 64-byte little-endian record."""
    words = [int(cmd.opcode), cmd.fence, cmd.entry_pc, *cmd.grid, *cmd.block,
             cmd.param_addr, cmd.param_size, cmd.shared_bytes, cmd.regs, 0, 0, 0]
    for i, w in enumerate(words):
        if not 0 <= w <= 0xFFFF_FFFF:
            raise ValueError(f"record word {i} does not fit in 32 bits: {w}")
    return struct.pack(_FMT, *words)


def unpack(record: bytes) -> Command:
    """Decode a 64-byte record. Raises :class:`RecordError` for what the device refuses:
    an unknown opcode or non-zero reserved words (w13..w15)."""
    if len(record) != RECORD_BYTES:
        raise RecordError(f"a record is {RECORD_BYTES} bytes, not {len(record)}")
    w = struct.unpack(_FMT, record)
    try:
        op = CommandOp(w[0])
    except ValueError:
        raise RecordError(f"unknown command opcode {w[0]}") from None
    if any(w[13:16]):
        raise RecordError("reserved record words w13..w15 must be zero")
    return Command(op, w[1], w[2], (w[3], w[4], w[5]), (w[6], w[7], w[8]), w[9], w[10],
                   w[11], w[12])


def launch_problem(cmd: Command) -> str | None:
    """What makes a LAUNCH record unrunnable on any device (zero-sized grid or block,
    misaligned entry or parameter block), or None. Size limits of a particular build
    (threads per block, shared bytes) are checked by the device against its capabilities."""
    if cmd.opcode != CommandOp.LAUNCH:
        return None
    if 0 in cmd.grid or 0 in cmd.block:
        return f"zero grid or block dimension: grid={cmd.grid} block={cmd.block}"
    if cmd.entry_pc % 4:
        return f"entry pc {cmd.entry_pc:#x} is not 4-aligned"
    if cmd.param_addr % 4 or cmd.param_size % 4:
        return "parameter block address and size must be multiples of 4"
    return None


def record_address(queue_base: int, index: int) -> int:
    """Global byte address of ring record ``index``."""
    return queue_base + index * RECORD_BYTES


def next_index(index: int, entries: int) -> int:
    return (index + 1) % entries
