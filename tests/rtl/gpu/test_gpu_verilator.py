"""End to end on Verilator: examples/asm/vector_add.s through the command queue on ``tiny``
(and ``small``, two cores, with the long regressions), device memory compared with the ISS;
and a fault report through the FAULT_* registers compared with the ISS's fault record."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from simtgpu.arch.command_queue import Command, CommandOp, Mmio, Status, pack
from simtgpu.assembler import assemble, assemble_file
from simtgpu.assembler.examples import example_asm
from simtgpu.isa.abi import FaultCause
from simtgpu.rtlsim.verilator_runner import RtlSim
from simtgpu.sim import GlobalMemory, Iss, KernelFault
from simtgpu.sim import numerics as nx
from simtgpu.verification.directed import FAULT_AFTER_WORK
from verilator_queue import FENCE, PARAMS, QUEUE, queued_sim

A, B, C = 0x2000, 0x3000, 0x4000

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["tiny", pytest.param("small", marks=pytest.mark.regress)])
def sim(request):
    # small (2 cores) takes about 4 minutes to build whenever the RTL changes.
    with queued_sim(request.param) as s:
        yield s


def _submit(sim: RtlSim, cmd: Command) -> tuple[bool, int]:
    """Put ``cmd`` at the ring's tail, ring the doorbell, run until the queue is idle."""
    tail = sim.mmio_read(Mmio.DOORBELL)
    sim.write(QUEUE + 64 * tail, pack(cmd))
    sim.mmio_write(Mmio.DOORBELL, (tail + 1) % 4)
    return sim.run(max_cycles=2_000_000)


def test_vector_add_matches_iss(sim: RtlSim) -> None:
    obj = assemble_file(example_asm("vector_add"))
    kernel = obj.kernel("vector_add")
    code = obj.relocate(0x8000)
    words = list(struct.unpack(f"<{len(code) // 4}I", code))
    n, block = 37, 8  # ragged: the last block has 5 live threads
    grid = -(-n // block)
    rng = np.random.default_rng(3)
    a = nx.f32_to_bits(rng.standard_normal(n).astype(np.float32))
    b = nx.f32_to_bits(rng.standard_normal(n).astype(np.float32))
    a[0], b[0] = 0x00000001, 0x80000000  # a subnormal input: FTZ must agree too
    params = struct.pack("<4I", A, B, C, n)

    # Golden: the ISS on the same memory image.
    gm = GlobalMemory(sim.cfg.memory_bytes)
    gm.write(A, a.tobytes())
    gm.write(B, b.tobytes())
    gm.write(C, b"\xee" * 4 * (n + 3))
    gm.write(PARAMS, params)
    Iss(gm, warp_size=sim.cfg.lanes).launch(code, kernel.entry, (grid, 1, 1), (block, 1, 1),
                                            PARAMS, len(params), 0)

    sim.load_imem(0, words)
    sim.write(A, a.tobytes())
    sim.write(B, b.tobytes())
    sim.write(C, b"\xee" * 4 * (n + 3))
    sim.write(PARAMS, params)
    sim.write(FENCE, b"\0" * 4)
    sim.mmio_write(Mmio.CONTROL, 2)  # RESET_COUNTERS
    done, cycles = _submit(sim, Command(CommandOp.LAUNCH, 0x600D, kernel.entry, (grid, 1, 1),
                                        (block, 1, 1), PARAMS, len(params), 0, kernel.regs,
                                        0, len(code)))
    assert done, f"no completion after {cycles} cycles"
    assert sim.mmio_read(Mmio.STATUS) == 0
    assert sim.mmio_read(Mmio.HEAD) == 1
    assert sim.read(FENCE, 4) == struct.pack("<I", 0x600D)
    assert sim.read(C, 4 * (n + 3)) == gm.read(C, 4 * (n + 3))
    assert sim.read(A, 4 * n) == gm.read(A, 4 * n)
    # Every warp retires the whole straight-line kernel once.
    warps = grid * (block // sim.cfg.lanes)
    assert sim.mmio_read(Mmio.INSTRUCTIONS) == warps * len(words)
    assert sim.mmio_read(Mmio.COMMANDS) == 1
    # CYCLES counts from the doorbell write, a few cycles before RUN started.
    assert 0 < sim.mmio_read(Mmio.CYCLES_LO) <= cycles + 4


def test_out_of_range_store_reports_fault(sim: RtlSim) -> None:
    # Thread 6 stores into the null guard page.
    obj = assemble("""
        .kernel bad
        s2r     r1, tid
        movi    r3, 6
        isetp.eq p0, r1, r3
        movi    r2, 0x10
   @p0  stg     [r2], r1
        exit
        .end
    """)
    code = obj.relocate(0x8000)
    kernel = obj.kernel("bad")
    words = list(struct.unpack(f"<{len(code) // 4}I", code))
    gm = GlobalMemory(sim.cfg.memory_bytes)
    with pytest.raises(KernelFault) as golden:
        Iss(gm, warp_size=sim.cfg.lanes).launch(code, kernel.entry, (1, 1, 1), (8, 1, 1),
                                                PARAMS, 0, 0)
    rec = golden.value.record
    sim.load_imem(0x100, words)  # somewhere else in imem: the PC is absolute
    sim.write(FENCE, b"\0" * 4)
    done, _ = _submit(sim, Command(CommandOp.LAUNCH, 0xBAD, 0x400 + kernel.entry, (1, 1, 1),
                                   (8, 1, 1), PARAMS, 0, 0, kernel.regs, 0x400,
                                   0x400 + len(code)))
    assert done
    assert sim.mmio_read(Mmio.STATUS) == Status.FAULT
    assert sim.mmio_read(Mmio.FAULT_CAUSE) == FaultCause.OUT_OF_RANGE == rec.cause
    lanes = sim.cfg.lanes  # thread 6 is the faulting one
    assert sim.mmio_read(Mmio.FAULT_WARP) == rec.warp == 6 // lanes
    assert sim.mmio_read(Mmio.FAULT_LANES) == rec.lane_mask == 1 << (6 % lanes)
    assert sim.mmio_read(Mmio.FAULT_PC) == 0x400 + rec.pc
    assert sim.mmio_read(Mmio.FAULT_INSTR) == words[rec.pc // 4]
    assert sim.read(FENCE, 4) == b"\0" * 4
    head = sim.mmio_read(Mmio.HEAD)
    sim.mmio_write(Mmio.CONTROL, 1)  # CLEAR_FAULT
    assert sim.mmio_read(Mmio.STATUS) == 0
    assert sim.mmio_read(Mmio.HEAD) == sim.mmio_read(Mmio.DOORBELL) == (head + 1) % 4


def test_run_drains_after_a_fault(sim: RtlSim, tmp_path) -> None:
    """``RUN`` returns at a fault only once the GPU has drained: an illegal word behind a
    store and two adds still in flight; the retire log, stopped right after ``RUN`` (no MMIO
    access clocks the GPU in between), holds every instruction the ISS retired, per warp."""
    import io

    from simtgpu.sim.trace import read_trace

    obj = assemble(FAULT_AFTER_WORK)
    code = obj.relocate(0x8000)
    kernel = obj.kernel("late")
    params = struct.pack("<I", C)
    gm = GlobalMemory(sim.cfg.memory_bytes)
    gm.write(PARAMS, params)
    log = io.StringIO()
    with pytest.raises(KernelFault):
        Iss(gm, warp_size=sim.cfg.lanes).launch(code, kernel.entry, (1, 1, 1), (8, 1, 1),
                                                PARAMS, len(params), 0, trace=log)
    want = sorted((ln["warp"], ln["pc"]) for ln in read_trace(io.StringIO(log.getvalue())))
    words = list(struct.unpack(f"<{len(code) // 4}I", code))
    sim.load_imem(0x100, words)
    sim.write(PARAMS, params)
    sim.write(FENCE, b"\0" * 4)
    path = tmp_path / "retire.log"
    tail = sim.mmio_read(Mmio.DOORBELL)
    sim.write(QUEUE + 64 * tail, pack(Command(
        CommandOp.LAUNCH, 0x1A7E, 0x400 + kernel.entry, (1, 1, 1), (8, 1, 1), PARAMS,
        len(params), 0, kernel.regs, 0x400, 0x400 + len(code))))
    sim.retire_log(path)
    sim.mmio_write(Mmio.DOORBELL, (tail + 1) % 4)
    done, _ = sim.run(max_cycles=100_000)
    sim.retire_log(None)
    assert done
    # a log line: core cycle bx by bz warp pc ... (rtlsim/verilator_driver.py)
    got = sorted((int(f[5], 16), int(f[6], 16) - 0x400)
                 for f in (line.split() for line in path.read_text().splitlines()))
    assert got == want
    assert sim.mmio_read(Mmio.STATUS) == Status.FAULT
    sim.mmio_write(Mmio.CONTROL, 1)  # CLEAR_FAULT
