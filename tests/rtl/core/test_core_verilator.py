"""Longer programs on the core under Verilator (through the GPU harness: command queue, MMIO,
memory model; Python only waits for completion), compared with the ISS, plus the IPC figure of
an ALU loop measured with the performance counters."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from kernels import ALL_UNITS, LOOP, SHARED_CONFLICTS, UNEVEN_BLOCKS, chain_program
from simtgpu.arch.command_queue import Command, CommandOp, Mmio, pack
from simtgpu.assembler import assemble
from simtgpu.assembler.examples import example_asm
from simtgpu.rtlsim.verilator_runner import RtlSim
from simtgpu.sim import GlobalMemory, Iss
from verilator_queue import PARAMS, QUEUE, queued_sim

DATA = 0x4000

pytestmark = pytest.mark.slow


def run_kernel(sim: RtlSim, src: str, kernel: str, grid, block, params, memory: bytes,
               max_cycles: int = 5_000_000) -> dict:
    """Run one launch on the RTL and on the ISS; assert equal memory; return counters."""
    obj = assemble(src)
    k = obj.kernel(kernel)
    code = obj.code
    words = list(struct.unpack(f"<{len(code) // 4}I", code))
    pbytes = struct.pack(f"<{len(params)}I", *[p & 0xFFFF_FFFF for p in params])
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))

    gm = GlobalMemory(sim.cfg.memory_bytes)
    gm.write(DATA, memory)
    gm.write(PARAMS, pbytes)
    Iss(gm, warp_size=sim.cfg.lanes).launch(code, k.entry, grid, block, PARAMS, len(pbytes),
                                            k.shared_bytes)

    sim.load_imem(0, words)
    sim.write(DATA, memory)
    sim.write(PARAMS, pbytes)
    sim.mmio_write(Mmio.CONTROL, 2)  # reset the counters
    head = sim.mmio_read(Mmio.HEAD)
    sim.write(QUEUE + 64 * (head % 4), pack(Command(
        CommandOp.LAUNCH, 0x100 + head, k.entry, grid, block, PARAMS, len(pbytes),
        k.shared_bytes, k.regs, 0, len(code))))
    sim.mmio_write(Mmio.DOORBELL, (head + 1) % 4)
    done, cycles = sim.run(max_cycles=max_cycles)
    assert done, f"no completion after {cycles} cycles"
    assert sim.mmio_read(Mmio.STATUS) == 0, f"fault cause {sim.mmio_read(Mmio.FAULT_CAUSE)}"
    got = np.frombuffer(sim.read(DATA, len(memory)), dtype="<u4")
    want = np.frombuffer(gm.read(DATA, len(memory)), dtype="<u4")
    np.testing.assert_array_equal(got, want)
    return {name: sim.mmio_read(getattr(Mmio, name)) for name in (
        "CYCLES_LO", "INSTRUCTIONS", "THREAD_INSTRUCTIONS", "STALL_SCOREBOARD", "STALL_MEMORY",
        "STALL_BARRIER", "STALL_STRUCTURAL", "STALL_IDLE", "MEM_TRANSACTIONS",
        "DIVERGENCE_EVENTS", "BARRIERS")}


@pytest.fixture(scope="module", params=["tiny", "small"])
def sim(request):
    with queued_sim(request.param) as s:
        yield s


@pytest.mark.parametrize("distance", range(10))
def test_alu_dependency_chain(sim, distance):
    run_kernel(sim, chain_program(distance), "k", (1,), (8,), [DATA], bytes(64 * 15))


def test_vector_add_coalesced(sim):
    rng = np.random.default_rng(2)
    block = sim.cfg.lanes * sim.cfg.warps
    n = 3 * block - 3
    a = rng.standard_normal(3 * block).astype(np.float32)
    b = rng.standard_normal(3 * block).astype(np.float32)
    nb = a.nbytes
    c = run_kernel(sim, example_asm("vector_add").read_text(), "vector_add", (3,),
                   (block,), [DATA, DATA + nb, DATA + 2 * nb, n],
                   a.tobytes() + b.tobytes() + bytes(nb))
    # per warp: 4 parameter reads, 2 loads and 1 store, each one line transaction
    assert c["MEM_TRANSACTIONS"] == 3 * sim.cfg.warps * 7


def test_loop_and_bank_conflicts(sim):
    run_kernel(sim, LOOP, "k", (2,), (sim.cfg.lanes + 3,), [DATA], bytes(4 * 64))
    nthreads = min(20, sim.cfg.lanes * sim.cfg.warps)
    run_kernel(sim, SHARED_CONFLICTS, "k", (1,), (nthreads,), [DATA], bytes(4 * nthreads))


def test_classify_long_collatz(sim):
    rng = np.random.default_rng(7)
    n = 150
    vals = rng.integers(-20, 3000, n).astype(np.int32)
    vals[:6] = [0, 1, 27, 97, -1, 2]
    block = sim.cfg.lanes * 2
    grid = -(-n // block)
    nb = 4 * grid * block
    run_kernel(sim, example_asm("divergence").read_text(), "classify", (grid,),
               (block,), [DATA, DATA + nb, n], vals.tobytes() + bytes(nb - 4 * n + nb))


def test_block_sum(sim):
    rng = np.random.default_rng(8)
    block = sim.cfg.lanes * sim.cfg.warps
    n = 5 * block - 7
    x = rng.standard_normal(5 * block).astype(np.float32)
    run_kernel(sim, example_asm("reduction").read_text(), "block_sum", (5,),
               (block,), [DATA, DATA + x.nbytes, n], x.tobytes() + bytes(32))


def test_matmul(sim):
    rng = np.random.default_rng(9)
    m_, n_, k_ = 12, 10, 7
    a = rng.standard_normal((m_, k_)).astype(np.float32)
    b = rng.standard_normal((k_, n_)).astype(np.float32)
    bx, by = 4, 2
    grid = (-(-n_ // bx), -(-m_ // by))
    pa, pb, pc = DATA, DATA + a.nbytes, DATA + a.nbytes + b.nbytes
    run_kernel(sim, example_asm("matmul").read_text(), "matmul", grid, (bx, by),
               [pa, pb, pc, m_, n_, k_], a.tobytes() + b.tobytes() + bytes(4 * m_ * n_))


def test_uneven_one_warp_blocks(sim):
    """Many one-warp blocks of uneven length, several resident per core (block slots): a
    slot closes in the same cycle as another block is taken in or ends its init walk, in
    every phase. Before the fix the closing slot's update of the slot-busy and warp-member
    bits undid those of the other block, which then never ran or never completed (the
    matmul above hung `small`)."""
    rng = np.random.default_rng(11)
    blocks = 48
    x = rng.integers(0, 1 << 32, blocks * sim.cfg.lanes, dtype=np.uint32)
    run_kernel(sim, UNEVEN_BLOCKS, "k", (blocks,), (sim.cfg.lanes,), [DATA], x.tobytes(),
               max_cycles=1_000_000)


def test_alu_loop_ipc(sim):
    """One block of (up to) four warps on one core: warp-instructions per cycle over the whole
    launch (block start and drain included), and in the loop alone (the difference between
    two trip counts)."""
    warps = min(4, sim.cfg.warps)
    block = warps * sim.cfg.lanes
    src = example_asm("alu_loop").read_text()
    runs = {}
    for iters in (100, 300):
        runs[iters] = run_kernel(sim, src, "alu_loop", (1,), (block,), [DATA, iters],
                                 bytes(4 * block))
    c = runs[300]
    ipc = c["INSTRUCTIONS"] / c["CYCLES_LO"]
    loop_ipc = ((c["INSTRUCTIONS"] - runs[100]["INSTRUCTIONS"])
                / (c["CYCLES_LO"] - runs[100]["CYCLES_LO"]))
    print(f"{sim.cfg.name} ({warps} warps): {c['INSTRUCTIONS']} warp-instructions in "
          f"{c['CYCLES_LO']} cycles, IPC {ipc:.3f}, loop IPC {loop_ipc:.3f}; counters {c}")
    if warps >= 4:
        assert ipc >= 0.9 and loop_ipc >= 0.9


def test_all_units_one_warp(sim):
    run_kernel(sim, ALL_UNITS, "k", (1,), (sim.cfg.lanes,), [DATA, DATA + 4096],
               bytes(4096 + 64))
