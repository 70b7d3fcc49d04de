"""Whole programs on one core (Amaranth simulator), final memory compared with the ISS."""

from __future__ import annotations

import core_bench
import numpy as np
import pytest
from core_bench import DATA_ADDR, launch_from_asm, run_iss, run_rtl, small_config
from kernels import ATOMIC_OPS_ALL, LOOP, SHARED_CONFLICTS, STALL_MIX, chain_program

EXAMPLES = "examples/asm/"

CONFIGS = {
    "tiny": lambda: small_config("tiny"),  # 2 warps x 4 lanes
    "small": lambda: small_config("small"),  # CONFIGS["small"]: 8 warps x 8 lanes
}


def _check(cfg, launch, **kw):
    rtl = run_rtl(cfg, launch, **kw)
    want, fault = run_iss(cfg, launch)
    assert fault is None, fault
    assert rtl.fault is None, rtl.fault
    got = np.frombuffer(rtl.memory, dtype="<u4")
    ref = np.frombuffer(want, dtype="<u4")
    np.testing.assert_array_equal(got, ref)
    return rtl


@pytest.mark.parametrize("distance", [0, 3])  # all of 0..9 run on Verilator
def test_alu_dependency_chain(distance):
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(chain_program(distance), "k", (1,), (8,), [DATA_ADDR],
                             bytes(64 * 15))
    _check(cfg, launch)


@pytest.mark.parametrize("cfgname", ["tiny"])  # both configs run on Verilator
def test_vector_add_coalesced(cfgname):
    cfg = CONFIGS[cfgname]()
    rng = np.random.default_rng(2)
    n, block = 2 * cfg.lanes * cfg.warps - 3, cfg.lanes * cfg.warps
    a = rng.standard_normal(2 * block).astype(np.float32)
    b = rng.standard_normal(2 * block).astype(np.float32)
    nb = 4 * 2 * block
    mem = a.tobytes() + b.tobytes() + bytes(nb)
    launch = launch_from_asm(open(EXAMPLES + "vector_add.s").read(), "vector_add", (2,),
                             (block,), [DATA_ADDR, DATA_ADDR + nb, DATA_ADDR + 2 * nb, n], mem)
    rtl = _check(cfg, launch)
    # per warp: 4 parameter reads, 2 loads and 1 store, each one line transaction
    assert rtl.perf["mem_transactions"] == 2 * cfg.warps * 7


def test_divergent_classify():
    """Short Collatz runs keep this quick in the Amaranth simulator; the Verilator tests run
    the long ones."""
    cfg = CONFIGS["tiny"]()
    vals = np.array([0, 1, 2, 3, -5, 6, 1, 4, 5, 8, 0, 16], dtype=np.int32)
    n = len(vals) - 2
    nb = 4 * len(vals)
    launch = launch_from_asm(open(EXAMPLES + "divergence.s").read(), "classify", (2,),
                             (8,), [DATA_ADDR, DATA_ADDR + nb, n],
                             vals.tobytes() + bytes(nb))
    _check(cfg, launch, max_cycles=20000)


@pytest.mark.parametrize("cfgname", ["tiny"])
def test_block_sum_barrier_shared(cfgname):
    cfg = CONFIGS[cfgname]()
    block = cfg.lanes * cfg.warps
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2 * block).astype(np.float32)
    launch = launch_from_asm(open(EXAMPLES + "reduction.s").read(), "block_sum", (2,),
                             (block,), [DATA_ADDR, DATA_ADDR + 4 * len(x), 2 * block - 3],
                             x.tobytes() + bytes(16))
    _check(cfg, launch)


def test_loop_per_thread_trip_counts():
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(LOOP, "k", (1,), (7,), [DATA_ADDR], bytes(32))
    _check(cfg, launch)


def test_shared_bank_conflicts_and_broadcast():
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(SHARED_CONFLICTS, "k", (1,), (8,), [DATA_ADDR], bytes(32))
    _check(cfg, launch)


@pytest.mark.parametrize("form", ["gated", "fpga"])
def test_alu_ops_held_through_a_stall(form):
    """Independent ALU instructions of different ops follow shared accesses with bank
    conflicts, which hold mem and so the stages behind it, in the simulation models' form and
    in the FPGA form (whose ex1 reads its op from a register loaded from rr as rr_ex1 loads:
    loading it every cycle instead fails this test); results against the ISS."""
    cfg = CONFIGS["tiny"]().with_(clock_gating=form == "gated")
    launch = launch_from_asm(STALL_MIX, "k", (1,), (4,), [DATA_ADDR], bytes(4 * 96))
    _check(cfg, launch)


def test_shared_memory_is_zero_for_every_block():
    """Each block reads its .shared words before writing them: the block-start walk clears
    the block's .shared size (and only that much is reachable), so every block reads zero,
    also after an earlier block on the core wrote there; the walk is shorter for a small
    .shared size."""
    src = """
        .kernel k
        .param out, ptr
        .shared 64
        s2r r1, tid
        shli r2, r1, 2
        lds r3, [r2]
        addi r4, r1, 7
        sts [r2], r4
        s2r r5, ctaid.x
        shli r5, r5, 5
        add r5, r5, r2
        ldparam r6, out
        add r6, r6, r5
        add r3, r3, r4
        stg [r6], r3
        exit
        .end
"""
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(src, "k", (3,), (8,), [DATA_ADDR], bytes(4 * 8 * 3))
    rtl = _check(cfg, launch)
    got = np.frombuffer(rtl.memory, dtype="<u4")
    np.testing.assert_array_equal(got, np.tile(np.arange(8) + 7, 3))


@pytest.mark.parametrize("start", [0xBF800000, 0x00000000])  # a cell at -1.0, or +0.0
def test_new_atomics_one_warp(start):
    """and/or/xor, float min/max and cas, global (at the memory model) and shared (in the LSU),
    with every lane of a warp on one word: lane order decides, so RTL and ISS must agree."""
    cfg = CONFIGS["tiny"]()
    lanes = cfg.lanes
    edges = np.array([0x80000000, 0x3F800000, 0x7FFFFFFF, 0xC0000000, 0x7F800000, 0xFF800000,
                      0x00000001, 0x80000001, 0x40490FDB, 0xFFC00000, 0, 0x12345678,
                      0xBF000000, 0x3F000000, 0xDEADBEEF, 0x7F7FFFFF], np.uint32)[:16]
    vals = np.roll(edges, start & 7)
    swap = np.arange(1, 17, dtype=np.uint32) * 0x01010101
    vals[0] = start  # lane 0's cas hits the cell, lane 1's compares with lane 0's swap
    vals[1] = swap[0]
    cells = np.full(8, start, np.uint32)
    out = bytes(4 * 16 * 15)
    mem = out + cells.tobytes() + vals.tobytes() + swap.tobytes()
    base = DATA_ADDR
    launch = launch_from_asm(ATOMIC_OPS_ALL, "k", (1,), (lanes,),
                             [base, base + len(out), base + len(out) + 32], mem)
    rtl = _check(cfg, launch)
    got = np.frombuffer(rtl.memory, "<u4")
    cas_old = got[5 * 16:5 * 16 + lanes]
    assert cas_old[0] == start and cas_old[1] == swap[0]  # both compares hit


def test_a_reset_simulator_runs_as_a_fresh_one():
    """``run_rtl`` keeps one simulator per configuration and resets it between runs (the
    build costs more than most runs): a run after others, one of them stopped mid-kernel by
    an assertion, gives what a fresh simulator gives, cycle for cycle."""
    cfg = CONFIGS["tiny"]()
    first = launch_from_asm(chain_program(3), "k", (1,), (8,), [DATA_ADDR], bytes(64 * 15))
    other = launch_from_asm(chain_program(0), "k", (1,), (8,), [DATA_ADDR], bytes(64 * 15))
    run_rtl(cfg, other)
    with pytest.raises(AssertionError, match="did not finish"):
        run_rtl(cfg, first, max_cycles=40)
    reused = run_rtl(cfg, first, trace_retire=True)
    core_bench._SIMULATORS.pop(repr(cfg))
    fresh = run_rtl(cfg, first, trace_retire=True)
    assert reused.retired and reused == fresh
