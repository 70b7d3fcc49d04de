"""The host interface: command records, the MMIO register file and their encodings.

This module is the contract between the driver and every backend (the ISS backend, the RTL
host interface): the record as a field table (:data:`RECORD_FIELDS`), pack/unpack derived
from it, the rules a LAUNCH record must meet (:func:`launch_problem`) and the MMIO map. Pure
functions and data, no device behaviour. docs/command-queue.md says what every field means;
its field table is generated from :data:`RECORD_FIELDS`.

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

from .config import GpuConfig

RECORD_BYTES = 64
RECORD_WORDS = RECORD_BYTES // 4
QUEUE_ENTRIES = 64
"""Ring size the driver programs by default (a power of two; the hardware accepts 2..4096)."""
MAX_QUEUE_ENTRIES = 4096

DEVICE_ID = 0x53475055  # 'SGPU' read as a big-endian string: 0x53 'S', 0x47 'G', ...
VERSION_MAJOR = 2  # 2: w13/w14 carry the launched module's code range (were reserved)
VERSION_MINOR = 2  # 1: per-core performance counters (CORE_COUNTERS_BASE); 2: memory-path
# counters (L1_*, DRAM_*, LOADS, LOAD_LATENCY_*) and a per-core window of 0x80 bytes
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
    # The cores' memory paths (docs/memory-system.md): L1 events, line requests sent toward
    # memory, loads and their latency (accepted on the core's port to response, in cycles).
    L1_HITS = 0xB4  # reads that hit in an L1
    L1_MISSES = 0xB8  # reads that missed and sent a line read (an MSHR taken)
    L1_MERGES = 0xBC  # reads merged into a miss already outstanding (no second request)
    L1_MSHR_FULL = 0xC0  # cycles a read miss waited because every MSHR was busy
    DRAM_READ_BYTES = 0xC4  # line bytes requested from memory by reads and atomics
    DRAM_WRITE_BYTES = 0xC8  # line bytes of stores sent to memory
    LOADS = 0xCC  # global read transactions answered (with or without an L1)
    LOAD_LATENCY_SUM = 0xD0  # sum of their latencies (cycles); / LOADS = the average
    LOAD_LATENCY_MAX = 0xD4  # the longest since the current launch started (not a sum)


PERF_COUNTERS: tuple[Mmio, ...] = tuple(m for m in Mmio if m >= Mmio.CYCLES_LO)
MAX_COUNTERS: frozenset[Mmio] = frozenset({Mmio.LOAD_LATENCY_MAX})
"""Counters that hold a maximum, zeroed when a launch starts, not a running sum: the driver
reports their value after the launch, not a difference, and the GPU-wide one is the largest of
the cores' (not their sum)."""


class CoreCounter(IntEnum):
    """Byte offsets of the per-core performance counters inside one core's window (RO,
    32 bits, modulo 2**32, zeroed with the GPU-wide ones). Each is the share of core ``i`` of
    the GPU-wide counter of the same name (:meth:`total`): summed over the cores, modulo
    2**32, they give that counter (for a :data:`MAX_COUNTERS` one, the largest of them gives
    it). Cycles stay GPU-wide (every core sees the same clock)."""

    INSTRUCTIONS = 0x00
    THREAD_INSTRUCTIONS = 0x04
    STALL_SCOREBOARD = 0x08
    STALL_MEMORY = 0x0C
    STALL_BARRIER = 0x10
    STALL_STRUCTURAL = 0x14
    STALL_IDLE = 0x18
    MEM_TRANSACTIONS = 0x1C
    DIVERGENCE_EVENTS = 0x20
    BARRIERS = 0x24
    L1_HITS = 0x28
    L1_MISSES = 0x2C
    L1_MERGES = 0x30
    L1_MSHR_FULL = 0x34
    DRAM_READ_BYTES = 0x38
    DRAM_WRITE_BYTES = 0x3C
    LOADS = 0x40
    LOAD_LATENCY_SUM = 0x44
    LOAD_LATENCY_MAX = 0x48

    @property
    def total(self) -> Mmio:
        """The GPU-wide counter this one is a per-core share of."""
        return Mmio[self.name]


CORE_COUNTERS_BASE = 0x800
"""MMIO byte offset of core 0's counter window; core ``i``'s starts ``i * CORE_COUNTERS_STRIDE``
further on (:func:`core_counter_offset`)."""
CORE_COUNTERS_STRIDE = 0x80
MMIO_SPAN = 0x1000
"""Size of the register window; offsets inside it that no register names read as 0."""
MMIO_ADDR_BITS = (MMIO_SPAN - 1).bit_length()
"""Width of the MMIO byte address (``rtl.signatures.mmio_signature``)."""
MAX_COUNTER_CORES = (MMIO_SPAN - CORE_COUNTERS_BASE) // CORE_COUNTERS_STRIDE
"""Cores whose counter windows fit in the register window; a device with more is refused."""


def core_counter_offset(core: int, counter: CoreCounter) -> int:
    """MMIO byte offset of ``counter`` of core ``core``."""
    if not 0 <= core < MAX_COUNTER_CORES:
        raise ValueError(f"core {core} has no counter window (the map holds cores "
                         f"0..{MAX_COUNTER_CORES - 1})")
    return CORE_COUNTERS_BASE + core * CORE_COUNTERS_STRIDE + counter


def _check_counter_map() -> None:
    assert max(PERF_COUNTERS) < CORE_COUNTERS_BASE
    assert max(CoreCounter) + 4 <= CORE_COUNTERS_STRIDE
    assert all(c.total in PERF_COUNTERS for c in CoreCounter)


_check_counter_map()


class Status(IntEnum):
    BUSY = 1 << 0  # commands are queued or running (HEAD != TAIL and no fault)
    FAULT = 1 << 1  # a kernel fault or a bad record stopped the queue
    BAD_COMMAND = 1 << 2  # with FAULT: the record at HEAD is malformed (FAULT_CAUSE = NONE)


class Control(IntEnum):
    CLEAR_FAULT = 1 << 0  # clear STATUS.FAULT/BAD_COMMAND and FAULT_*; HEAD := TAIL
    RESET_COUNTERS = 1 << 1  # zero every performance counter


@dataclass(frozen=True)
class RecordField:
    """One field of the command record: ``count`` consecutive words from ``word``.

    A field's value sits in the low ``width`` bits of its word; the bits above must be zero
    (a ``width`` of 0 is a reserved word). ``launch`` fields are read by LAUNCH only, and
    their rules (``width``, ``align``, ``nonzero``) are checked on LAUNCH records only; NOP and
    FENCE ignore those words. The other fields' rules hold in every record. ``name`` is the
    :class:`Command` attribute (a tuple when ``count`` is 3).
    """

    name: str
    word: int
    meaning: str
    count: int = 1
    width: int = 32
    align: int = 1
    nonzero: bool = False
    launch: bool = True

    @property
    def words(self) -> range:
        return range(self.word, self.word + self.count)

    @property
    def label(self) -> str:
        text = self.name.replace("_", " ")
        return f"{text} x, y, z" if self.count == 3 and self.width else text

    @property
    def max(self) -> int:
        """The largest value the field holds (a multiple of ``align``)."""
        return ((1 << self.width) - 1) // self.align * self.align

    def value_problem(self, value: int) -> str | None:
        """Why one word of this field breaks its rules, or None."""
        if self.width == 0:
            return None if value == 0 else "is not zero"
        if self.nonzero and value == 0:
            return "is zero"
        if value >> self.width:
            return f"exceeds {self.max}"
        if value % self.align:
            return f"is not a multiple of {self.align}"
        return None


def _opcodes() -> str:
    return ", ".join(f"`{op.value}` {op.name}" for op in CommandOp) + " (`CommandOp`)"


RECORD_FIELDS: tuple[RecordField, ...] = (
    RecordField("opcode", 0, _opcodes(), launch=False),
    RecordField("fence", 1, "value written to the fence word when this command completes",
                launch=False),
    RecordField("entry_pc", 2, "absolute instruction-memory byte address of the kernel's first "
                "instruction (module base + kernel entry); must lie in the code range "
                "[code base, code end)", align=4),
    RecordField("grid", 3, "blocks in the grid", count=3, width=16, nonzero=True),
    RecordField("block", 6, "threads per block; the product is at most warps per core x lanes",
                count=3, width=16, nonzero=True),
    RecordField("param_addr", 9, "global byte address of the parameter block; 0 when the kernel "
                "has no parameters", align=4),
    RecordField("param_size", 10, "bytes in the parameter block (4 per parameter); `ldparam` "
                "past it faults", width=16, align=4),
    RecordField("shared_bytes", 11, "the block's shared memory: the kernel's `.shared` size plus "
                "the launch's dynamic bytes; at most the per-core shared memory"),
    RecordField("regs", 12, "registers per thread the kernel uses (from the object file); "
                "informational for the device (every thread has 32)"),
    RecordField("code_base", 13, "absolute instruction-memory byte address of the launched "
                "module's first instruction: a warp whose pc leaves [code base, code end) "
                "faults `PC_OUT_OF_RANGE`", align=4),
    RecordField("code_end", 14, "one past the module's last instruction byte; at most the end "
                "of the loaded code (the highest instruction-memory word ever written)",
                align=4, nonzero=True),
    RecordField("reserved", 15, "must be 0", width=0, launch=False),
)
"""The command record, word by word: pack/unpack, the RTL host interface's decoding,
:func:`launch_problem` and the table in docs/command-queue.md are all derived from it."""

FIELD: dict[str, RecordField] = {f.name: f for f in RECORD_FIELDS}
MAX_GRID_DIM = FIELD["grid"].max
MAX_PARAM_BYTES = FIELD["param_size"].max


def _check_fields() -> None:
    covered = [w for f in RECORD_FIELDS for w in f.words]
    assert covered == list(range(RECORD_WORDS)), "record fields must tile w0..w15 in order"


_check_fields()


@dataclass(frozen=True)
class Command:
    """One decoded queue record (the attributes are :data:`RECORD_FIELDS`). The driver leaves
    the launch fields zero in NOP and FENCE; the device ignores them there."""

    opcode: CommandOp
    fence: int
    entry_pc: int = 0
    grid: tuple[int, int, int] = (0, 0, 0)
    block: tuple[int, int, int] = (0, 0, 0)
    param_addr: int = 0
    param_size: int = 0
    shared_bytes: int = 0
    regs: int = 0
    code_base: int = 0
    code_end: int = 0

    @property
    def block_threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def field_words(self, f: RecordField) -> tuple[int, ...]:
        """The record words of field ``f`` (zeros for a reserved field)."""
        if f.width == 0:
            return (0,) * f.count
        value = getattr(self, f.name)
        return tuple(value) if f.count > 1 else (int(value),)


class RecordError(ValueError):
    """A record that the device must refuse (reported through STATUS.BAD_COMMAND)."""


_FMT = f"<{RECORD_WORDS}I"


def pack(cmd: Command) -> bytes:
    """Encode a command as its 64-byte little-endian record. Only word width is checked, so a
    record the device refuses can be written on purpose."""
    words = [w for f in RECORD_FIELDS for w in cmd.field_words(f)]
    for i, w in enumerate(words):
        if not 0 <= w <= 0xFFFF_FFFF:
            raise ValueError(f"record word {i} does not fit in 32 bits: {w}")
    return struct.pack(_FMT, *words)


def unpack(record: bytes) -> Command:
    """Decode a 64-byte record. Raises :class:`RecordError` for what the device refuses in
    every record: an unknown opcode or non-zero reserved words."""
    if len(record) != RECORD_BYTES:
        raise RecordError(f"a record is {RECORD_BYTES} bytes, not {len(record)}")
    words = struct.unpack(_FMT, record)
    try:
        CommandOp(words[0])
    except ValueError:
        raise RecordError(f"unknown command opcode {words[0]}") from None
    values: dict[str, object] = {}
    for f in RECORD_FIELDS:
        mine = words[f.word:f.word + f.count]
        if not f.launch:
            for i, w in zip(f.words, mine, strict=True):
                why = f.value_problem(w)
                if why:
                    raise RecordError(f"record word w{i} ({f.label}) {why}")
        if f.width:
            values[f.name] = mine if f.count > 1 else mine[0]
    values["opcode"] = CommandOp(values["opcode"])
    return Command(**values)  # type: ignore[arg-type]


def launch_problem(cmd: Command, config: GpuConfig, code_limit: int) -> str | None:
    """Why a device of ``config`` refuses this LAUNCH record, or None (always None for NOP
    and FENCE). ``code_limit`` is one past the highest instruction-memory byte ever loaded.

    These are the rules of docs/command-queue.md: each launch field's own rules from
    :data:`RECORD_FIELDS` (non-zero grid and block dimensions, grid dimensions and the
    parameter size within their 16-bit fields, aligned entry pc and parameter block), the
    block within one core's warp slots, the shared bytes within one core's shared memory and
    the code range inside the loaded code with the entry pc in it. The driver checks them
    before it queues a launch, the ISS backend when it consumes a record, and the RTL host
    interface builds the same checks in hardware.
    """
    if cmd.opcode != CommandOp.LAUNCH:
        return None
    for f in RECORD_FIELDS:
        if not f.launch:
            continue
        for w in cmd.field_words(f):
            why = f.value_problem(w)
            if why:
                if f.count > 1:
                    return f"{f.name} {getattr(cmd, f.name)} {why} in a dimension"
                return f"{f.label} {w} {why}"
    threads = cmd.block_threads
    if threads > config.max_threads_per_block:
        return (f"block {cmd.block} has {threads} threads; configuration '{config.name}' "
                f"allows at most {config.max_threads_per_block} ({config.warps_per_core} "
                f"warps x {config.lanes} lanes)")
    if cmd.shared_bytes > config.shared_bytes_per_core:
        return (f"{cmd.shared_bytes} bytes of shared memory exceed the "
                f"{config.shared_bytes_per_core} bytes per core of configuration "
                f"'{config.name}'")
    if cmd.code_end > code_limit:
        return (f"code end {cmd.code_end:#x} is past the loaded code (which ends at "
                f"{code_limit:#x})")
    if not cmd.code_base <= cmd.entry_pc < cmd.code_end:
        return (f"entry pc {cmd.entry_pc:#x} is outside the code range [{cmd.code_base:#x}, "
                f"{cmd.code_end:#x})")
    return None


def record_table_markdown() -> str:
    """The table of record fields in docs/command-queue.md (``simtgpu command-queue``
    prints it)."""
    rows = ["| word | field | bits | rule | records | meaning |",
            "| --- | --- | --- | --- | --- | --- |"]
    for f in RECORD_FIELDS:
        words = f"w{f.word}" if f.count == 1 else f"w{f.words[0]}..w{f.words[-1]}"
        bits = "31:0" if f.width == 32 else "none" if f.width == 0 else f"{f.width - 1}:0"
        rules = []
        if f.width == 0:
            rules.append("0")
        elif f.nonzero:
            rules.append(f"1..{f.max}")
        elif f.width < 32:
            rules.append(f"at most {f.max}")
        if f.align > 1:
            rules.append(f"multiple of {f.align}")
        applies = "LAUNCH" if f.launch else "all"
        rows.append(f"| {words} | {f.label} | {bits} | {', '.join(rules) or '-'} | {applies} "
                    f"| {f.meaning} |")
    return "\n".join(rows) + "\n"


def core_counter_table_markdown() -> str:
    """The per-core counter window table in docs/command-queue.md (``simtgpu command-queue``
    prints it after the record table)."""
    rows = ["| offset in a core's window | counter | its sum over the cores |",
            "| --- | --- | --- |"]
    rows += [f"| 0x{c.value:02X} | {c.name} | {c.total.name} (0x{int(c.total):02X})"
             f"{', the largest (a maximum)' if c.total in MAX_COUNTERS else ''} |"
             for c in CoreCounter]
    last = MAX_COUNTER_CORES - 1
    rows.append(f"| window of core *i* | 0x{CORE_COUNTERS_BASE:03X} + *i* x "
                f"0x{CORE_COUNTERS_STRIDE:02X} | *i* = 0..{last}; core {last} at "
                f"0x{core_counter_offset(last, CoreCounter(0)):03X} |")
    return "\n".join(rows) + "\n"


def record_address(queue_base: int, index: int) -> int:
    """Global byte address of ring record ``index``."""
    return queue_base + index * RECORD_BYTES


def next_index(index: int, entries: int) -> int:
    return (index + 1) % entries
