"""The ISS backend: the host interface modelled in Python on top of the golden simulator.

It implements the MMIO register file of :mod:`~simtgpu.arch.command_queue` exactly
as the RTL host interface does: records are read from the ring in device memory, each
LAUNCH runs on :class:`simtgpu.sim.Iss`, completion writes the fence word and advances HEAD,
and a kernel fault stops the queue with the FAULT_* registers filled in. The model works
when the host waits (:meth:`run_until_idle`); a host that polls cannot tell the difference.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any

from simtgpu.arch import command_queue as cq
from simtgpu.arch.command_queue import Command, CommandOp, Control, Mmio, RecordError, Status
from simtgpu.arch.config import GpuConfig
from simtgpu.isa.abi import GLOBAL_NULL_GUARD, FaultCause
from simtgpu.sim import GlobalMemory, Iss, KernelFault

from .backend import Backend

_MASK32 = 0xFFFF_FFFF
_DETAILS_KEPT = 256  # per-command details remembered for the driver (by fence value)

# LaunchStats attribute -> performance counter it adds to (absent attributes count 0).
_STAT_COUNTERS = {
    "warp_instructions": Mmio.INSTRUCTIONS,
    "thread_instructions": Mmio.THREAD_INSTRUCTIONS,
    "divergence_events": Mmio.DIVERGENCE_EVENTS,
    "mem_transactions": Mmio.MEM_TRANSACTIONS,
    "barriers": Mmio.BARRIERS,
}


class IssBackend(Backend):
    """Device model on the ISS.

    Parameters
    ----------
    config:
        Sizes of the modelled GPU (warp size, cores, memory, shared memory, stack depth).
    instruction_budget:
        Warp-instructions one launch may retire before it faults with WATCHDOG (None: the
        ISS default).
    """

    name = "iss"

    def __init__(self, config: GpuConfig, instruction_budget: int | None = None):
        self.config = config
        self.memory = GlobalMemory(config.memory_bytes)
        kwargs: dict[str, Any] = {"stack_depth": config.stack_depth, "num_cores": config.cores}
        if instruction_budget is not None:
            kwargs["instruction_budget"] = instruction_budget
        self.iss = Iss(self.memory, config.lanes, **kwargs)
        self.imem = bytearray(config.imem_bytes)
        self._imem_high = 0  # one past the highest byte ever loaded: the code the ISS sees
        self._regs: dict[int, int] = {}
        self._counters: dict[int, int] = {}
        self._details: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._trace: Any = None
        self._fault_detail = ""
        self._reset()

    def _reset(self) -> None:
        self._queue_base = 0
        self._entries = cq.QUEUE_ENTRIES
        self._head = 0
        self._tail = 0
        self._fence_addr = 0
        self._status = 0
        self._imem_addr = 0
        self._clear_fault()
        self._counters = {int(m): 0 for m in cq.PERF_COUNTERS}

    def _clear_fault(self) -> None:
        for reg in (Mmio.FAULT_CAUSE, Mmio.FAULT_PC, Mmio.FAULT_CORE, Mmio.FAULT_WARP,
                    Mmio.FAULT_LANES, Mmio.FAULT_BLOCK_X, Mmio.FAULT_BLOCK_Y,
                    Mmio.FAULT_BLOCK_Z, Mmio.FAULT_INSTR):
            self._regs[int(reg)] = 0
        self._status &= ~(Status.FAULT | Status.BAD_COMMAND)
        self._fault_detail = ""

    # -- register file ---------------------------------------------------------------------
    def mmio_read(self, offset: int) -> int:
        self._check_offset(offset)
        cfg = self.config
        fixed = {
            Mmio.ID: cq.DEVICE_ID, Mmio.VERSION: cq.VERSION,
            Mmio.QUEUE_BASE: self._queue_base, Mmio.QUEUE_ENTRIES: self._entries,
            Mmio.DOORBELL: self._tail, Mmio.HEAD: self._head, Mmio.FENCE_ADDR: self._fence_addr,
            Mmio.STATUS: self._status_value(), Mmio.IMEM_ADDR: self._imem_addr,
            Mmio.CAP_CORES: cfg.cores, Mmio.CAP_WARPS: cfg.warps_per_core,
            Mmio.CAP_LANES: cfg.lanes, Mmio.CAP_SHARED_BYTES: cfg.shared_bytes_per_core,
            Mmio.CAP_MEM_BYTES: cfg.memory_bytes, Mmio.CAP_IMEM_BYTES: cfg.imem_bytes,
            Mmio.CAP_STACK_DEPTH: cfg.stack_depth,
        }
        if offset in fixed:
            return fixed[offset] & _MASK32
        if offset == Mmio.IMEM_DATA:
            value = self._imem_word(self._imem_addr)
            self._imem_addr = (self._imem_addr + 4) & _MASK32
            return value
        if offset in self._counters:
            return self._counters[offset] & _MASK32
        return self._regs.get(offset, 0)

    def mmio_write(self, offset: int, value: int) -> None:
        self._check_offset(offset)
        value &= _MASK32
        if offset == Mmio.QUEUE_BASE:
            self._queue_base, self._head, self._tail = value, 0, 0
        elif offset == Mmio.QUEUE_ENTRIES:
            self._entries, self._head, self._tail = value, 0, 0
        elif offset == Mmio.DOORBELL:
            self._tail = value % self._entries if self._entries else 0
        elif offset == Mmio.FENCE_ADDR:
            self._fence_addr = value
        elif offset == Mmio.CONTROL:
            if value & Control.CLEAR_FAULT and self._status & Status.FAULT:
                self._clear_fault()
                self._head = self._tail
            if value & Control.RESET_COUNTERS:
                self._counters = dict.fromkeys(self._counters, 0)
        elif offset == Mmio.IMEM_ADDR:
            self._imem_addr = value
        elif offset == Mmio.IMEM_DATA:
            a = self._imem_addr
            if a % 4 == 0 and a + 4 <= len(self.imem):  # writes outside imem are dropped
                self.imem[a:a + 4] = value.to_bytes(4, "little")
                self._imem_high = max(self._imem_high, a + 4)
            self._imem_addr = (a + 4) & _MASK32
        # Read-only registers ignore writes, as in the RTL.

    @staticmethod
    def _check_offset(offset: int) -> None:
        if not (0 <= offset < cq.MMIO_SPAN and offset % 4 == 0):
            raise ValueError(f"MMIO offset {offset:#x} is outside the register window or "
                             "not word aligned")

    def _status_value(self) -> int:
        busy = self._head != self._tail and not self._status & Status.FAULT
        return self._status | (Status.BUSY if busy else 0)

    def _imem_word(self, addr: int) -> int:
        if addr % 4 or addr + 4 > len(self.imem):
            return 0
        return int.from_bytes(self.imem[addr:addr + 4], "little")

    # -- memory ----------------------------------------------------------------------------
    def read(self, addr: int, n: int) -> bytes:
        return bytes(self.memory.read(addr, n))

    def write(self, addr: int, data: bytes) -> None:
        self.memory.write(addr, bytes(data))

    def set_trace(self, sink: Any) -> None:
        self._trace = sink

    def fault_detail(self) -> str:
        return self._fault_detail

    def command_details(self, fence: int) -> dict[str, Any]:
        return dict(self._details.get(fence, {}))

    # -- the command processor -------------------------------------------------------------
    def run_until_idle(self) -> None:
        while self._head != self._tail and not self._status & Status.FAULT:
            if not self._queue_ok():
                self._bad_command(cq.record_address(self._queue_base, self._head),
                                  "queue registers are not programmed consistently")
                return
            addr = cq.record_address(self._queue_base, self._head)
            try:
                cmd = cq.unpack(self.read(addr, cq.RECORD_BYTES))
            except RecordError as e:
                self._bad_command(addr, str(e))
                return
            problem = self._launch_problem(cmd)
            if problem is not None:
                self._bad_command(addr, problem)
                return
            if cmd.opcode == CommandOp.LAUNCH and not self._launch(cmd):
                return
            self.write(self._fence_addr, cmd.fence.to_bytes(4, "little"))
            self._counters[Mmio.COMMANDS] += 1
            self._head = cq.next_index(self._head, self._entries)

    def _launch_problem(self, cmd: Command) -> str | None:
        """Why this device refuses ``cmd`` (None: it runs it): the contract's rules
        (:func:`simtgpu.arch.command_queue.launch_problem`) against the loaded code."""
        return cq.launch_problem(cmd, self.config, self._imem_high)

    def _queue_ok(self) -> bool:
        mem = self.config.memory_bytes
        e = self._entries
        return (2 <= e <= cq.MAX_QUEUE_ENTRIES and e & (e - 1) == 0
                and self._queue_base % cq.RECORD_BYTES == 0
                and GLOBAL_NULL_GUARD <= self._queue_base
                and self._queue_base + e * cq.RECORD_BYTES <= mem
                and self._fence_addr % 4 == 0
                and GLOBAL_NULL_GUARD <= self._fence_addr <= mem - 4)

    def _launch(self, cmd: Command) -> bool:
        """Run one grid on the ISS; False (with the fault registers set) if it faulted."""
        try:
            stats = self.iss.launch(
                bytes(self.imem[:cmd.code_end]), cmd.entry_pc, cmd.grid, cmd.block,
                cmd.param_addr, cmd.param_size, cmd.shared_bytes, trace=self._trace,
                code_start=cmd.code_base)
        except KernelFault as fault:
            self._record_fault(fault.record)
            return False
        for attr, reg in _STAT_COUNTERS.items():
            self._counters[reg] += int(getattr(stats, attr, 0) or 0)
        details = (dataclasses.asdict(stats) if dataclasses.is_dataclass(stats)
                   else dict(vars(stats)))
        self._details[cmd.fence] = details
        while len(self._details) > _DETAILS_KEPT:
            self._details.popitem(last=False)
        return True

    def _record_fault(self, record: Any) -> None:
        block = tuple(record.block) + (0, 0, 0)
        pc = int(record.pc)
        self._regs.update({
            Mmio.FAULT_CAUSE: int(record.cause), Mmio.FAULT_PC: pc & _MASK32,
            Mmio.FAULT_CORE: int(getattr(record, "core", 0) or 0),
            Mmio.FAULT_WARP: int(record.warp), Mmio.FAULT_LANES: int(record.lane_mask) & _MASK32,
            Mmio.FAULT_BLOCK_X: block[0], Mmio.FAULT_BLOCK_Y: block[1],
            Mmio.FAULT_BLOCK_Z: block[2], Mmio.FAULT_INSTR: self._imem_word(pc),
        })
        self._fault_detail = str(getattr(record, "detail", "") or "")
        self._status |= Status.FAULT

    def _bad_command(self, addr: int, why: str) -> None:
        self._clear_fault()
        self._fault_detail = why
        self._regs[Mmio.FAULT_CAUSE] = int(FaultCause.NONE)
        self._regs[Mmio.FAULT_PC] = addr & _MASK32
        self._status |= Status.FAULT | Status.BAD_COMMAND
