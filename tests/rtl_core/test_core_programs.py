"""Whole programs on one core (Amaranth simulator), final memory compared with the ISS."""

from __future__ import annotations

import numpy as np
import pytest
from core_bench import DATA_ADDR, launch_from_asm, per_warp, run_iss, run_rtl, small_config
from kernels_e import ALL_UNITS
from simtgpu.isa import FaultCause

EXAMPLES = "examples/asm/"

CONFIGS = {
    "tiny": lambda: small_config("tiny"),  # 2 warps x 4 lanes
    "small": lambda: small_config("small"),  # 4 warps x 8 lanes
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


def _chain_program(distance: int) -> str:
    """A chain of dependent adds, each consumer ``distance`` independent instructions after
    its producer, then every register stored."""
    lines = ["s2r r1, tid", "shli r30, r1, 2", "ldparam r31, out", "add r31, r31, r30",
             "addi r2, r1, 3"]
    fill = 10  # filler registers r10..r19
    prev = 2
    dst = 3
    for step in range(4):
        for k in range(distance):
            lines.append(f"addi r{fill + (k % 10)}, r1, {step * 16 + k}")
        lines.append(f"add r{dst}, r{prev}, r{prev}")
        lines.append(f"xori r{dst}, r{dst}, {step + 1}")
        prev, dst = dst, dst + 1
    for i, r in enumerate([2, 3, 4, 5, 6] + list(range(10, 10 + min(distance, 10)))):
        lines.append(f"stg [r31+{i * 64}], r{r}")
    lines.append("exit")
    body = "\n".join("        " + x for x in lines)
    return f"        .kernel k\n        .param out, ptr\n{body}\n        .end\n"


@pytest.mark.parametrize("distance", range(10))
def test_alu_dependency_chain(distance):
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(_chain_program(distance), "k", (1,), (8,), [DATA_ADDR],
                             bytes(64 * 15))
    _check(cfg, launch)


@pytest.mark.parametrize("cfgname", sorted(CONFIGS))
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


@pytest.mark.parametrize("cfgname", sorted(CONFIGS))
def test_block_sum_barrier_shared(cfgname):
    cfg = CONFIGS[cfgname]()
    block = cfg.lanes * cfg.warps
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2 * block).astype(np.float32)
    launch = launch_from_asm(open(EXAMPLES + "reduction.s").read(), "block_sum", (2,),
                             (block,), [DATA_ADDR, DATA_ADDR + 4 * len(x), 2 * block - 3],
                             x.tobytes() + bytes(16))
    _check(cfg, launch)


LOOP = """
        .kernel k
        .param out, ptr
        s2r     r1, tid
        andi    r2, r1, 7           ; trip count 0..7 per thread
        movi    r3, 0
        movi    r4, 1
        ssy     done
loop:   isetp.gt p0, r2, r0
   @!p0 bra     out_
        add     r3, r3, r4
        shli    r4, r4, 1
        addi    r2, r2, -1
        bra     loop
out_:   sync
done:   ldparam r5, out
        shli    r6, r1, 2
        add     r5, r5, r6
        stg     [r5], r3
        exit
        .end
"""


def test_loop_per_thread_trip_counts():
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(LOOP, "k", (1,), (7,), [DATA_ADDR], bytes(32))
    _check(cfg, launch)


SHARED_CONFLICTS = """
        .kernel k
        .param out, ptr
        .shared 512
        s2r     r1, tid
        shli    r2, r1, 2
        muli    r3, r1, 20          ; stride 5 words: some lanes share a bank
        addi    r4, r1, 100
        sts     [r3], r4
        andi    r5, r1, 3
        shli    r5, r5, 2           ; lanes read 4 distinct words (broadcast)
        lds     r6, [r5]
        lds     r7, [r3]
        ldparam r8, out
        add     r8, r8, r2
        add     r6, r6, r7
        stg     [r8], r6
        exit
        .end
"""


def test_shared_bank_conflicts_and_broadcast():
    cfg = CONFIGS["small"]()
    launch = launch_from_asm(SHARED_CONFLICTS, "k", (1,), (20,), [DATA_ADDR], bytes(80))
    _check(cfg, launch)


FAULTS = {
    "oob": ("movi r1, 16\n        stg [r1], r0", FaultCause.OUT_OF_RANGE),
    "misaligned": ("ldparam r1, out\n        ldg r2, [r1+2]", FaultCause.MISALIGNED),
    "underflow": ("sync", FaultCause.STACK_UNDERFLOW),
    "illegal": (".word 0", FaultCause.ILLEGAL_INSTRUCTION),
    # lane 0 is both out of range and misaligned: out of range wins, for lane 0 only
    "oob_before_misaligned": ("s2r r1, tid\n        shli r1, r1, 1\n"
                              "        movi r2, 0xffe\n        add r1, r1, r2\n"
                              "        stg [r1], r0", FaultCause.OUT_OF_RANGE),
    "shared_oob": ("s2r r1, tid\n        shli r1, r1, 3\n        lds r2, [r1]",
                   FaultCause.OUT_OF_RANGE),
    "param_oob": ("ldparam r1, 4", FaultCause.OUT_OF_RANGE),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_faults_match_iss(case):
    body, cause = FAULTS[case]
    src = (f"        .kernel k\n        .param out, ptr\n        .shared 16\n        {body}\n"
           "        exit\n        .end\n")
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(src, "k", (1,), (6,), [DATA_ADDR], bytes(16))
    rtl = run_rtl(cfg, launch)
    _, ref = run_iss(cfg, launch)
    assert ref is not None and rtl.fault is not None
    assert rtl.fault["cause"] == cause == FaultCause(int(ref.cause))
    assert rtl.fault["pc"] == ref.pc
    assert rtl.fault["lanes"] == ref.lane_mask


def test_all_units_one_warp():
    """Multiplier, FPU, SFU, fsetp, sel, plogic, shuffles, votes, atomics, fence."""
    cfg = CONFIGS["tiny"]()
    launch = launch_from_asm(ALL_UNITS, "k", (1,), (cfg.lanes,), [DATA_ADDR, DATA_ADDR + 4096],
                             bytes(4096 + 64))
    _check(cfg, launch)


@pytest.mark.parametrize("kernel", ["classify", "block_sum", "all_units"])
def test_retire_trace_matches_iss_per_warp(kernel):
    """Step-and-compare: each warp's retired instructions (pc, masks, destination values)
    equal the ISS's, in order."""
    cfg = CONFIGS["tiny"]()
    if kernel == "classify":
        vals = np.array([0, 1, 2, 3, -5, 6, 1, 4, 5, 8, 0, 16], dtype=np.int32)
        nb = 4 * len(vals)
        launch = launch_from_asm(open(EXAMPLES + "divergence.s").read(), "classify", (2,),
                                 (8,), [DATA_ADDR, DATA_ADDR + nb, len(vals) - 2],
                                 vals.tobytes() + bytes(nb))
    elif kernel == "block_sum":
        x = np.random.default_rng(4).standard_normal(16).astype(np.float32)
        launch = launch_from_asm(open(EXAMPLES + "reduction.s").read(), "block_sum", (2,),
                                 (8,), [DATA_ADDR, DATA_ADDR + 64, 14], x.tobytes() + bytes(8))
    else:
        launch = launch_from_asm(ALL_UNITS, "k", (1,), (cfg.lanes,),
                                 [DATA_ADDR, DATA_ADDR + 4096], bytes(4096 + 64))
    rtl = run_rtl(cfg, launch, trace_retire=True)
    ref: list = []
    run_iss(cfg, launch, trace=ref)
    got, want = per_warp(rtl.retired), per_warp(ref)
    assert got.keys() == want.keys()
    for key in want:
        assert len(got[key]) == len(want[key]), key
        for i, (g, w) in enumerate(zip(got[key], want[key], strict=True)):
            assert g == w, (key, i, g, w)
