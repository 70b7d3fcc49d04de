"""``mma`` on one core against the ISS: fragments loaded per thread, in-place and
back-to-back dependent ``mma`` (fp16 and bf16, overlapping groups), every destination register
stored. ``make test`` runs each program on the Verilator model of ``tiny`` (memory against the
ISS, seconds each); ``SIMTGPU_LONG=1`` adds the Amaranth simulator's runs (minutes each): the
retire trace step-and-compared, ``small``'s shape, and the faults of a divergent ``mma`` and
of a misaligned group as the ISS reports them."""

from __future__ import annotations

import numpy as np
import pytest
from core_bench import DATA_ADDR, launch_from_asm, per_warp, run_iss, run_rtl, small_config
from simtgpu.isa import FaultCause
from simtgpu.isa.mma import mma_shape
from simtgpu.sim import numerics as nx
from simtgpu.sim.trace import per_warp as lines_per_warp
from simtgpu.verification.compare import program_order
from simtgpu.verification.fp_vectors import mma_fragments, mma_tiles
from test_core_verilator import DATA, run_kernel
from verilator_queue import queued_sim

IN_REGS, OUT_REGS = 12, 16  # r8..r19 loaded, r8..r23 stored


def _source(body: str, threads: int, shared: int = 0) -> str:
    stride = 4 * threads
    loads = "\n".join(f"        ldg r{8 + j}, [r1+{j * stride}]" for j in range(IN_REGS))
    stores = "\n".join(f"        stg [r2+{j * stride}], r{8 + j}" for j in range(OUT_REGS))
    return ("        .kernel k\n        .param in, ptr\n        .param out, ptr\n"
            + (f"        .shared {shared}\n" if shared else "") +
            f"        ldparam r1, in\n        ldparam r2, out\n        s2r r3, tid\n"
            f"        shli r3, r3, 2\n        add r1, r1, r3\n        add r2, r2, r3\n"
            f"{loads}\n{body}\n{stores}\n        exit\n        .end\n")


def _inputs(lanes: int, warps: int, fmt: str, seed: int) -> bytes:
    """Per warp one tile: A in r8..r11, B in r12.., C in r16..r19, as [register][thread]."""
    s = mma_shape(lanes)
    a, b, c = mma_tiles(np.random.default_rng(seed), warps, s.m, s.n, s.k, fmt)
    fa, fb, fc = mma_fragments(s, a, b, c)
    regs = np.zeros((IN_REGS, warps, lanes), np.uint32)
    regs[0:4] = fa.transpose(1, 0, 2)
    regs[4:4 + s.regs_b] = fb.transpose(1, 0, 2)
    regs[8:12] = fc.transpose(1, 0, 2)
    return regs.reshape(IN_REGS, warps * lanes).astype("<u4").tobytes()


PROGRAMS = {
    # accumulate in place twice (the second depends on all four registers of the first)
    "accumulate": "        mma.f16 r16, r8, r12, r16\n        mma.f16 r16, r8, r12, r16",
    # a chain through every group: D feeds the next C, then B, then A (overlapping D)
    "chain": ("        mma.bf16 r20, r8, r12, r16\n        mma.f16 r16, r8, r12, r20\n"
              "        mma.bf16 r12, r8, r16, r20\n        mma.f16 r8, r8, r12, r20"),
    # independent work of the warp between mma's, and an mma writing r0..r3 (r0 stays 0;
    # the out pointer in r2 is kept in r24 meanwhile)
    "mixed": ("        add r24, r2, r0\n        mma.f16 r20, r8, r12, r16\n"
              "        addi r9, r9, 7\n        fadd r10, r16, r17\n"
              "        mma.bf16 r0, r8, r12, r16\n        add r11, r1, r3\n"
              "        add r2, r24, r0\n        mma.f16 r16, r20, r12, r16"),
    # shared stores whose lanes share a bank hold mem for a round per lane: the mma's are
    # picked while the back end stalls, wait in the issue stage's skid register and read
    # their first registers as they enter rr (a dependent mma and ALU work around them)
    "behind_a_stall": ("        add r26, r19, r8\n        shli r25, r3, 2\n        sts [r25], r3\n"
                       "        sts [r25+4], r3\n        mma.f16 r20, r8, r12, r16\n"
                       "        sts [r25+8], r3\n        addi r9, r9, 1\n"
                       "        sts [r25+12], r3\n        mma.bf16 r16, r20, r12, r16"),
}
SHARED = {"behind_a_stall": 128}  # bytes of .shared (8 threads x 16)


@pytest.fixture(scope="module")
def tiny_sim():
    with queued_sim("tiny") as s:
        yield s


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_mma_programs_on_verilator(tiny_sim, name):
    """Each program on the Verilator model of tiny (the build the other core tests share)."""
    lanes, warps = tiny_sim.cfg.lanes, 2
    threads = warps * lanes
    mem = _inputs(lanes, warps, "bf16" if name == "chain" else "f16", len(name))
    run_kernel(tiny_sim, _source(PROGRAMS[name], threads, SHARED.get(name, 0)), "k", (1,),
               (threads,),
               [DATA, DATA + len(mem)], mem + bytes(4 * OUT_REGS * threads))


# the Amaranth simulator takes a minute or two per program: every program on tiny, the one
# that goes through every group on small (its other shape, m8n4k8 with a 2-register B)
@pytest.mark.long  # the Amaranth simulator, minutes
@pytest.mark.parametrize("cfgname,name", [("tiny", n) for n in sorted(PROGRAMS)]
                         + [("small", "chain")])
def test_mma_programs_match_iss(cfgname, name):
    cfg = small_config(cfgname)
    warps = 2
    threads = warps * cfg.lanes
    mem = _inputs(cfg.lanes, warps, "bf16" if name == "chain" else "f16", len(name))
    out = 4 * OUT_REGS * threads
    launch = launch_from_asm(_source(PROGRAMS[name], threads, SHARED.get(name, 0)), "k", (1,),
                             (threads,), [DATA_ADDR, DATA_ADDR + len(mem)], mem + bytes(out))
    rtl = run_rtl(cfg, launch, trace_retire=True)
    ref: list = []
    want, fault = run_iss(cfg, launch, trace=ref)
    assert fault is None and rtl.fault is None, (fault, rtl.fault)
    np.testing.assert_array_equal(np.frombuffer(rtl.memory, "<u4"), np.frombuffer(want, "<u4"))
    ref_lines, rtl_lines = lines_per_warp(ref), lines_per_warp(rtl.retired)
    ordered = []
    for key, wl in ref_lines.items():
        ordered += program_order(wl, rtl_lines.get(key, []))[1]
    assert per_warp(ordered) == per_warp(ref)


@pytest.mark.long  # the Amaranth simulator, minutes
def test_mma_result_is_numerics_mma():
    """The stored D of one mma is ``numerics.mma`` of the tiles (not only the ISS's)."""
    cfg = small_config("tiny")
    s = mma_shape(cfg.lanes)
    a, b, c = mma_tiles(np.random.default_rng(9), 1, s.m, s.n, s.k, "f16")
    fa, fb, fc = mma_fragments(s, a, b, c)
    regs = np.zeros((IN_REGS, cfg.lanes), np.uint32)
    regs[0:4], regs[4:4 + s.regs_b], regs[8:12] = fa[0], fb[0], fc[0]
    mem = regs.astype("<u4").tobytes()
    launch = launch_from_asm(_source("        mma.f16 r20, r8, r12, r16", cfg.lanes), "k",
                             (1,), (cfg.lanes,), [DATA_ADDR, DATA_ADDR + len(mem)],
                             mem + bytes(4 * OUT_REGS * cfg.lanes))
    rtl = run_rtl(cfg, launch)
    got = np.frombuffer(rtl.memory, "<u4")[len(mem) // 4:].reshape(OUT_REGS, cfg.lanes)
    _, _, wd = mma_fragments(s, a, b, np.asarray(nx.mma("f16", a, b, c), np.uint32))
    np.testing.assert_array_equal(got[12:16], wd[0])


def _misaligned_word() -> str:
    """``mma.f16 r8, r9, r12, r16``: an A group that does not start at a multiple of 4."""
    from simtgpu.assembler import assemble
    from simtgpu.isa.formats import RS1

    word = int.from_bytes(assemble("        .kernel k\n        mma.f16 r8, r8, r12, r16\n"
                                   "        .end\n").code[:4], "little")
    return f"        .word {word | (1 << RS1.lo)}"


FAULTS = {
    # lane 1 guarded off
    "divergent": ("        s2r r4, laneid\n        movi r5, 1\n        isetp.ne p0, r4, r5\n"
                  "   @p0  mma.f16 r20, r8, r12, r16", FaultCause.DIVERGENT_MMA),
    # the block's last warp has a lane fewer (the launch below has one thread less)
    "partial_warp": ("        mma.f16 r20, r8, r12, r16", FaultCause.DIVERGENT_MMA),
    "misaligned": (None, FaultCause.ILLEGAL_INSTRUCTION),
}


@pytest.mark.long  # the Amaranth simulator, minutes
@pytest.mark.parametrize("case", sorted(FAULTS))
def test_mma_faults_match_iss(case):
    body, cause = FAULTS[case]
    cfg = small_config("tiny")
    threads = 2 * cfg.lanes - (case == "partial_warp")
    body = body or _misaligned_word()
    mem = bytes(4 * (IN_REGS + OUT_REGS) * 2 * cfg.lanes)
    launch = launch_from_asm(_source("        addi r6, r6, 1\n" + body, threads), "k", (1,),
                             (threads,), [DATA_ADDR, DATA_ADDR + 4 * IN_REGS * threads], mem)
    rtl = run_rtl(cfg, launch)
    _, ref = run_iss(cfg, launch)
    assert ref is not None and rtl.fault is not None
    assert rtl.fault["cause"] == cause == FaultCause(int(ref.cause))
    assert (rtl.fault["pc"], rtl.fault["lanes"], rtl.fault["warp"]) == (
        ref.pc, ref.lane_mask, ref.warp), (rtl.fault, ref)
