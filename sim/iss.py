"""The golden functional simulator: runs a whole grid, instruction by instruction.

Scheduling (deterministic; see docs/iss.md):

* Blocks are taken in linear order (x fastest) in *waves* of consecutive blocks that are
  simulated together; a wave holds up to :data:`WAVE_THREADS` threads (at least one block).
* Within a wave, execution proceeds in *rounds*. A round takes every runnable warp once:
  the warps are grouped by PC, and each group, in increasing PC order, executes one
  instruction as a single vectorised step (warps in warp order, lanes in lane order).
* Barriers are resolved between rounds.

Only the order of each warp's own instructions is architectural; how warps interleave is a
scheduling choice that the RTL makes differently, so traces are compared per warp.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

import numpy as np
from simtgpu.isa import FaultCause

from . import semantics, trace
from .disasm import disassemble
from .errors import FaultRecord, IssError, KernelFault
from .memory import GlobalMemory
from .program import Illegal, Op, Program, program_for
from .stats import LaunchStats
from .wave import RUN, Fault, Wave, mask_bits

WAVE_THREADS = 8192
"""Threads simulated together; more amortises Python overhead, fewer keeps arrays in cache."""

Dim3 = tuple[int, int, int]

BUDGET_PER_WARP = 1_000_000
"""The default watchdog allows each warp of the grid this many warp-instructions ..."""
MAX_DEFAULT_BUDGET = 50_000_000
"""... and a launch at most this many in all (about four minutes of one warp's loop)."""
PROGRESS_EVERY = 1 << 20
"""Warp-instructions between calls of :attr:`Iss.progress`."""


def default_budget(warps: int) -> int:
    """The watchdog of a launch of ``warps`` warps when none is given: proportionate, so that
    a single warp spinning in ``l: bra l`` stops after seconds, not minutes."""
    return min(MAX_DEFAULT_BUDGET, BUDGET_PER_WARP * warps)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _dim3(name: str, value) -> Dim3:
    items = (value,) if _is_int(value) else value
    try:
        items = tuple(items)
    except TypeError:
        raise IssError(f"{name} must be 1 to 3 positive integers, not {value!r}") from None
    if not 1 <= len(items) <= 3 or not all(_is_int(v) and v >= 1 for v in items):
        raise IssError(f"{name} must be 1 to 3 positive integers, not {value!r}")
    dims = tuple(int(v) for v in items) + (1,) * (3 - len(items))
    return dims  # type: ignore[return-value]


def _count(name: str, value, low: int) -> int:
    """An integer argument of at least ``low``; IssError naming it otherwise."""
    if not _is_int(value) or value < low:
        raise IssError(f"{name} must be an integer of at least {low}, not {value!r}")
    return int(value)


class Iss:
    """A simulated GPU: device memory plus the configuration that shapes execution.

    Parameters
    ----------
    memory:
        The device memory kernels read and write.
    warp_size:
        Lanes per warp, a power of two from 4 to 32.
    stack_depth:
        Reconvergence-stack entries per warp.
    instruction_budget:
        Warp-instructions one launch may retire before it faults with ``WATCHDOG``; None
        (the default) gives each launch :func:`default_budget` of its warps.
    num_cores:
        Cores the blocks are spread over (block ``b`` runs on core ``b % num_cores``); only
        ``coreid`` and the trace's ``core`` see it.
    """

    def __init__(self, memory: GlobalMemory, warp_size: int = 32, stack_depth: int = 16,
                 instruction_budget: int | None = None, num_cores: int = 1):
        if not isinstance(memory, GlobalMemory):
            raise IssError(f"memory must be a GlobalMemory, not {type(memory).__name__}")
        if not _is_int(warp_size) or warp_size not in (4, 8, 16, 32):
            raise IssError(f"warp_size must be a power of two from 4 to 32, not {warp_size!r}")
        if instruction_budget is not None and (not _is_int(instruction_budget)
                                               or instruction_budget < 1):
            raise IssError(f"instruction_budget must be positive, not {instruction_budget!r}")
        self.memory = memory
        self.warp_size = int(warp_size)
        self.stack_depth = _count("stack_depth", stack_depth, 1)
        self.instruction_budget = (None if instruction_budget is None
                                   else int(instruction_budget))
        self.num_cores = _count("num_cores", num_cores, 1)
        self.progress: Callable[[LaunchStats], None] | None = None
        """Called every :data:`PROGRESS_EVERY` warp-instructions of a launch (a long launch
        can report how far it is)."""

    def launch(self, code: bytes, entry: int, grid: Dim3, block: Dim3, param_addr: int,
               param_size: int, shared_bytes: int, trace: TextIO | None = None,
               code_start: int = 0) -> LaunchStats:
        """Run the grid to completion; raise :class:`KernelFault` on the first fault.

        ``code`` is instruction memory up to the end of the launched module (PC 0 is its
        first byte), ``code_start`` the module's first byte and ``entry`` the kernel's byte
        address; a PC outside ``[code_start, len(code))`` faults with ``PC_OUT_OF_RANGE``, so
        a kernel never runs another module's code. ``param_addr``/``param_size`` locate the
        parameter block in device memory; ``shared_bytes`` is each block's shared memory.
        With ``trace``, one JSON line per retired warp-instruction is written to it.
        """
        grid = _dim3("grid", grid)
        block = _dim3("block", block)
        if not isinstance(code, (bytes, bytearray, memoryview)):
            raise IssError(f"code must be bytes (little-endian instruction words), not "
                           f"{type(code).__name__}")
        if not _is_int(entry) or entry < 0 or entry % 4:
            raise IssError(f"entry must be a 4-aligned byte offset, not {entry!r}")
        if not _is_int(code_start) or not 0 <= code_start <= entry or code_start % 4:
            raise IssError(f"code_start must be a 4-aligned byte address at or below the "
                           f"entry {entry:#x}, not {code_start!r}")
        for name, value in (("shared_bytes", shared_bytes), ("param_size", param_size),
                            ("param_addr", param_addr)):
            if not _is_int(value) or not 0 <= value < 1 << 32:
                raise IssError(f"{name} must be an integer from 0 to 2**32 - 1, not {value!r}")
        if trace is not None and not callable(getattr(trace, "write", None)):
            raise IssError(f"trace must be a writable text file, not {type(trace).__name__}")
        entry, code_start = int(entry), int(code_start)
        prog = program_for(code)
        W = self.warp_size
        nthreads = block[0] * block[1] * block[2]
        wpb = -(-nthreads // W)
        nblocks = grid[0] * grid[1] * grid[2]
        stats = LaunchStats(blocks=nblocks, warps=nblocks * wpb)
        per_wave = max(1, WAVE_THREADS // (wpb * W))
        t0 = time.perf_counter()
        budget = self.instruction_budget or default_budget(stats.warps)
        run = _Runner(prog, stats, budget, trace, self.progress, code_start)
        try:
            for first in range(0, nblocks, per_wave):
                n = min(per_wave, nblocks - first)
                try:
                    w = Wave(first_block=first, nblocks=n, grid=grid,
                             block=block, warp_size=W, stack_depth=self.stack_depth,
                             shared_bytes=shared_bytes, num_cores=self.num_cores,
                             memory_words=self.memory.words, memory_size=self.memory.size,
                             param_addr=param_addr, param_size=param_size, stats=stats)
                except MemoryError:
                    raise IssError(
                        f"the host has too little memory to simulate {n} block(s) of "
                        f"{nthreads} threads with {shared_bytes} bytes of shared memory each "
                        f"(stack depth {self.stack_depth}): lower one of them") from None
                w.pc[:] = entry
                run.wave(w)
        finally:
            stats.per_opcode = run.per_opcode()
            stats.seconds = time.perf_counter() - t0
        return stats


class _Runner:
    """Runs waves of one launch, sharing the program, the counters and the trace."""

    def __init__(self, prog: Program, stats: LaunchStats, budget: int, trace: TextIO | None,
                 progress: Callable[[LaunchStats], None] | None = None, code_start: int = 0):
        self.prog, self.stats, self.budget, self.trace = prog, stats, budget, trace
        self.code_start = code_start
        self.progress = progress
        self.next_report = PROGRESS_EVERY
        self.seq = 0
        self.counts: dict[int, int] = {}

    def per_opcode(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for pc, n in self.counts.items():
            m = self.prog.op(pc).mnemonic
            out[m] = out.get(m, 0) + n
        return dict(sorted(out.items()))

    def wave(self, w: Wave) -> None:
        try:
            self._rounds(w)
        except Fault as f:
            raise KernelFault(self._record(w, f)) from None
        except KeyboardInterrupt:
            # Ctrl-C stops the launch as the watchdog would: a fault record, the device usable
            running = np.flatnonzero(w.status == RUN)
            first = int(running[0]) if running.size else 0
            f = Fault(FaultCause.WATCHDOG, first, w.active[first].copy(),
                      f"stopped by Ctrl-C after {self.stats.warp_instructions} "
                      "warp-instructions", pc=int(w.pc[first]))
            raise KernelFault(self._record(w, f)) from None

    def _record(self, w: Wave, f: Fault) -> FaultRecord:
        pc = int(f.pc) & 0xFFFF_FFFF if f.pc is not None else 0  # a 32-bit pc, as the RTL's
        text = ""
        if self.code_start <= pc < self.prog.size and pc % 4 == 0:
            text = disassemble(int(self.prog.words[pc >> 2]), pc)
        return FaultRecord(cause=f.cause, block=w.block_coords(f.warp),
                           warp=w.warp_in_block(f.warp), lane_mask=mask_bits(f.lanes), pc=pc,
                           instruction=text, detail=f.detail, core=w.core_of(f.warp))

    def _rounds(self, w: Wave) -> None:
        status = w.status
        run_from = self._run
        while True:
            if w.n_wait:
                semantics.barrier_resolve(w)
            run = np.flatnonzero(status == RUN)
            if run.size == 0:
                return
            if self.progress is not None and self.stats.warp_instructions >= self.next_report:
                self.next_report = self.stats.warp_instructions + PROGRESS_EVERY
                self.progress(self.stats)
            pcs = w.pc[run]
            p0 = pcs[0]
            if run.size == 1 or (pcs == p0).all():
                run_from(w, int(p0), _group(run))
                continue
            order = np.argsort(pcs, kind="stable")
            spcs, sruns = pcs[order], run[order]
            cuts = np.flatnonzero(spcs[1:] != spcs[:-1]) + 1
            for pc, part in zip(spcs[np.r_[0, cuts]], np.split(sruns, cuts), strict=True):
                run_from(w, int(pc), _group(part))

    def _fetch(self, w: Wave, pc: int, g) -> Op:
        prog = self.prog
        if pc < self.code_start or pc >= prog.size or pc & 3:
            first = int(w.indices(g)[0])
            raise Fault(FaultCause.PC_OUT_OF_RANGE, first, w.active[first].copy(),
                        f"pc {pc & 0xFFFF_FFFF:#x} is outside the launched module's code "
                        f"[{self.code_start:#x}, {prog.size:#x})", pc=pc)
        try:
            return prog.op(pc)
        except Illegal as e:
            first = int(w.indices(g)[0])
            raise Fault(FaultCause.ILLEGAL_INSTRUCTION, first, w.active[first].copy(), str(e),
                        pc=pc) from None

    def _run(self, w: Wave, pc: int, g) -> None:
        """Execute the group ``g`` from ``pc`` up to and including its next control
        instruction (the only kind that changes the PC, the active mask or the status).

        In between, the active mask is constant, so it and its lane count are read once; the
        retired counts are written back once at the end, and the PC by the control instruction
        (straight-line instructions never read it).
        """
        stats, counts = self.stats, self.counts
        ops, size, start = self.prog.ops, self.prog.size, self.code_start
        tracing = self.trace is not None
        nw = w.count(g)
        act = w.active[g]
        n_act = int(np.count_nonzero(act))
        full = n_act == act.size
        P = w.P
        steps = lanes = 0
        room = (self.budget - stats.warp_instructions) // nw  # whole steps left in the budget
        try:
            while True:
                op = ops[pc >> 2] if start <= pc < size else None
                if op is None or op.__class__ is not Op:
                    op = self._fetch(w, pc, g)
                if steps >= room:
                    k = self.budget - stats.warp_instructions - steps * nw
                    wl = int(w.indices(g)[k])
                    raise Fault(FaultCause.WATCHDOG, wl, w.active[wl].copy(),
                                f"instruction budget of {self.budget} warp-instructions "
                                "exhausted", pc=pc)
                if op.unguarded:
                    ex = act
                    lanes += n_act
                    w.ex_full = full
                else:
                    w.ex_full = False
                    gp = P[op.pred, g]
                    ex = act & ~gp if op.pneg else act & gp
                    lanes += n_act if op.is_bra else int(np.count_nonzero(ex))
                w.clock_bias = steps
                if tracing:
                    mask = np.array(act, copy=True)
                    ex = np.array(ex, copy=True)
                    w.rec = w.mrec = None
                try:
                    op.run(w, op, g, ex)
                except Fault as f:
                    if f.pc is None:
                        f.pc = pc
                    lanes -= n_act if op.unguarded or op.is_bra else int(np.count_nonzero(ex))
                    raise
                steps += 1
                counts[pc] = counts.get(pc, 0) + nw
                if tracing:
                    self.seq = trace.emit(self.trace, self.seq, w, op, g, mask, ex)
                if op.sets_pc:
                    break
                pc += 4
        finally:
            w.retired[g] += steps
            w.clock_bias = 0
            w.ex_full = False
            stats.warp_instructions += steps * nw
            stats.thread_instructions += lanes


def _group(idx: np.ndarray):
    """A slice when the warps are consecutive (views, no copies), else the index array."""
    first, last = int(idx[0]), int(idx[-1])
    if last - first + 1 == idx.size:
        return slice(first, last + 1)
    return idx
