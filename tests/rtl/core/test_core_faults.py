"""Faults on one core (Amaranth simulator): cause, PC and lanes as the ISS reports them."""

from __future__ import annotations

import pytest
from core_bench import DATA_ADDR, launch_from_asm, run_iss, run_rtl, small_config
from simtgpu.isa import FaultCause

EXAMPLES = "examples/asm/"


def tiny():
    return small_config("tiny")


def faulting_run(src: str, threads: int, cause: FaultCause, **rtl_options):
    """One block of ``threads`` running ``src`` on the tiny core and on the ISS, which must
    both fault with ``cause``; (launch, the RTL's fault record and run, the ISS's fault)."""
    cfg = tiny()
    launch = launch_from_asm(src, "k", (1,), (threads,), [DATA_ADDR], bytes(16))
    rtl = run_rtl(cfg, launch, **rtl_options)
    _, ref = run_iss(cfg, launch)
    assert ref is not None and rtl.fault is not None
    assert rtl.fault["cause"] == cause == FaultCause(int(ref.cause))
    assert rtl.fault["pc"] == ref.pc
    return launch, rtl, ref

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
    _, rtl, ref = faulting_run(src, 6, cause)
    assert rtl.fault["lanes"] == ref.lane_mask




@pytest.mark.parametrize("between", [1, 2, 3])
def test_illegal_head_picked_while_mem_holds(between):
    """An illegal instruction behind a shared store whose lanes share a bank (a round per
    lane: mem holds the stages behind it) and ``between`` independent instructions: with two
    of them it is picked in a stalled cycle, when its pc and word reach the fault record
    through the issue stage's skid register instead of is_rr (reading is_rr's there fails
    this test); the record names it as the ISS does."""
    body = "\n".join(f"        addi r{2 + i}, r0, {i}" for i in range(between))
    src = (f"        .kernel k\n        .param out, ptr\n        .shared 64\n"
           f"        s2r r1, tid\n        shli r1, r1, 4\n        sts [r1], r1\n{body}\n"
           f"        .word 0xffffffff\n        exit\n        .end\n")
    launch, rtl, ref = faulting_run(src, 4, FaultCause.ILLEGAL_INSTRUCTION)
    assert (rtl.fault["warp"], rtl.fault["lanes"]) == (ref.warp, ref.lane_mask)
    assert rtl.fault["instr"] == 0xFFFFFFFF
    assert int.from_bytes(launch.code[ref.pc:ref.pc + 4], "little") == 0xFFFFFFFF


BARRIER_FAULTS = {
    # warp 1 exits, warp 0 waits at the barrier forever
    "deadlock": ("s2r r1, warpid\n        isetp.ne p0, r1, r0\n   @p0  exit\n        bar",
                 FaultCause.BARRIER_DEADLOCK),
    # warp 0 exits and warp 1 is the one waiting: the record names warp 1, not warp 0
    "deadlock_w1": ("s2r r1, warpid\n        isetp.eq p0, r1, r0\n   @p0  exit\n        bar",
                    FaultCause.BARRIER_DEADLOCK),
    # warp 1 waits long before warp 0 exits (raised when the exit completes)
    "deadlock_late_exit": ("s2r r1, warpid\n        isetp.eq p0, r1, r0\n"
                           "   @!p0 bra B\n" + "        addi r2, r2, 1\n" * 12
                           + "        exit\nB:      bar", FaultCause.BARRIER_DEADLOCK),
    "divergent": ("s2r r1, laneid\n        isetp.eq p0, r1, r0\n        ssy J\n"
                  "   @p0  bra T\n        bar\n        sync\nT:      sync\nJ:      nop",
                  FaultCause.DIVERGENT_BARRIER),
    "overflow": ("\n".join(["        ssy J"] * 17) + "\nJ:      nop", FaultCause.STACK_OVERFLOW),
}


@pytest.mark.parametrize("case", sorted(BARRIER_FAULTS))
def test_control_faults_match_iss(case):
    body, cause = BARRIER_FAULTS[case]
    src = f"        .kernel k\n        .param out, ptr\n{body}\n        exit\n        .end\n"
    launch, rtl, ref = faulting_run(src, 8, cause)
    assert (rtl.fault["warp"], rtl.fault["lanes"]) == (ref.warp, ref.lane_mask)
    # the record's instruction word is the faulting instruction's
    word = int.from_bytes(launch.code[ref.pc:ref.pc + 4], "little")
    assert rtl.fault["instr"] == word, f"instr {rtl.fault['instr']:#x}, expected {word:#x}"
    assert ref.instruction.split()[0] in ("bar", "sync", "ssy")


# an instruction after the faulting memory access: it must not retire (precise faults)
PRECISE = {
    "store_high": ("lui r8, 0x7fff\n        stg [r8], r0\n        addi r9, r9, 1\n"
                   "        addi r10, r10, 1", FaultCause.OUT_OF_RANGE),
    "shared_range": ("movi r8, 64\n        lds r9, [r8]\n        addi r9, r9, 1\n"
                     "        addi r10, r10, 1", FaultCause.OUT_OF_RANGE),
    "store_low": ("movi r8, 16\n        stg [r8], r0\n        movi r9, 3\n"
                  "        stg [r1], r9", FaultCause.OUT_OF_RANGE),
    # the SFU and the matrix unit start as an instruction leaves ex1, while the access one
    # ahead of it is still in ex2 (its fault raised a cycle later, in mem) or, two ahead,
    # faulting in mem: neither instance may write back
    "sfu_behind_shared": ("movi r8, 64\n        lds r9, [r8]\n        sfu.sqrt r10, r8\n"
                          "        addi r11, r11, 1", FaultCause.OUT_OF_RANGE),
    "sfu_behind_store": ("lui r8, 0x7fff\n        stg [r8], r0\n        sfu.rcp r10, r8",
                         FaultCause.OUT_OF_RANGE),
    "sfu_two_behind": ("movi r8, 64\n        lds r9, [r8]\n        addi r11, r11, 1\n"
                       "        sfu.sqrt r10, r8", FaultCause.OUT_OF_RANGE),
    "mma_behind_misaligned": ("ldg r3, [r1+2]\n        mma.f16 r8, r12, r16, r20",
                              FaultCause.MISALIGNED),
    "mma_behind_shared": ("movi r2, 64\n        lds r3, [r2]\n        mma.f16 r8, r12, r16, r20",
                          FaultCause.OUT_OF_RANGE),
    "mma_two_behind": ("ldg r3, [r1+2]\n        addi r4, r4, 1\n"
                       "        mma.bf16 r8, r12, r16, r20", FaultCause.MISALIGNED),
}


@pytest.mark.parametrize("case", sorted(PRECISE))
def test_memory_fault_is_precise(case):
    """Nothing younger than the faulting instruction of its warp retires, though the pipeline
    holds younger instructions of that warp when the LSU detects the fault."""
    body, cause = PRECISE[case]
    src = (f"        .kernel k\n        .param out, ptr\n        .shared 16\n"
           f"        ldparam r1, out\n        {body}\n        exit\n        .end\n")
    _, rtl, ref = faulting_run(src, 4, cause, trace_retire=True, after_fault=40)
    younger = [x["pc"] for x in rtl.retired if x["warp"] == ref.warp and x["pc"] >= ref.pc]
    assert younger == [], f"retired after the fault at pc {ref.pc:#x}: {younger}"


# Both warps fault on a memory access with an SFU or mma instruction two behind it: the
# second warp's is dropped as it would enter ex1 (its warp killed by the first fault), after
# it reserved its unit at issue
DROPPED_BEHIND_FAULT = {
    "sfu_after_load": ("lui r2, 0x10\n        ldg r3, [r2]\n        hsub2.f16 r4, r5, r5\n"
                       "        sfu.log2 r6, r7", FaultCause.OUT_OF_RANGE),
    "sfu_after_store": ("stg [r0-1024], r31\n        shfl.down r26, r26, r24\n"
                        "        sfu.rsqrt r15, r6", FaultCause.OUT_OF_RANGE),
    "mma_after_load": ("lui r2, 0x10\n        ldg r3, [r2]\n        addi r4, r4, 1\n"
                       "        mma.f16 r8, r12, r16, r20", FaultCause.OUT_OF_RANGE),
}


@pytest.mark.parametrize("case", sorted(DROPPED_BEHIND_FAULT))
def test_a_unit_reserved_by_a_dropped_instruction_is_given_back(case):
    """An SFU or mma instruction reserves its unit as it issues and gives it back when its
    result is taken; one dropped before it starts must give it back too, or the unit stays
    busy and the core never drains after the fault (the host then waits for its drain
    timeout, and a busy SFU survived even the flush: every later launch hung)."""
    body, cause = DROPPED_BEHIND_FAULT[case]
    src = (f"        .kernel k\n        .param out, ptr\n        {body}\n        exit\n"
           "        .end\n")
    _, rtl, ref = faulting_run(src, 8, cause)  # two warps; the run ends once drained
    assert (rtl.fault["warp"], rtl.fault["lanes"]) == (ref.warp, ref.lane_mask)


@pytest.mark.parametrize("tail", ["bra", "fallthrough"])
def test_pc_past_the_loaded_code(tail):
    """A pc at the end of the loaded code faults PC_OUT_OF_RANGE as on the ISS, although the
    instruction memory goes on (with zero words, which would be ILLEGAL_INSTRUCTION)."""
    body = ("        bra E\n        exit\nE:\n" if tail == "bra"
            else "        s2r r1, tid\n        addi r1, r1, 1\n")
    src = f"        .kernel k\n        .param out, ptr\n{body}        .end\n"
    launch, rtl, ref = faulting_run(src, 6, FaultCause.PC_OUT_OF_RANGE)
    assert len(launch.code) < tiny().imem_words * 4
    assert (rtl.fault["warp"], rtl.fault["lanes"], rtl.fault["instr"]) == \
        (ref.warp, ref.lane_mask, 0)


def test_second_warps_fault_is_precise_too():
    """Both warps reach a divergent ``bar`` (no ``ssy``: the lanes that skip the branch stay
    apart) in consecutive cycles; warp 0's is recorded. Warp 1's ``bar`` faults too, although
    the record keeps only the first: it must not retire, nor anything younger of warp 1 (the
    ISS retires no ``bar`` here: it stops at the first, and would fault at the second). With
    only the recorded warp's instructions dropped, warp 1's ``bar`` retired."""
    body = ("s2r r1, laneid\n        andi r1, r1, 1\n        isetp.eq p0, r1, r0\n"
            "   @p0  bra B\nB:      bar\n        addi r2, r2, 1")
    src = (f"        .kernel k\n        .param out, ptr\n        {body}\n        exit\n"
           "        .end\n")
    launch, rtl, ref = faulting_run(src, 8, FaultCause.DIVERGENT_BARRIER, trace_retire=True,
                                    after_fault=40)
    assert (rtl.fault["warp"], rtl.fault["lanes"]) == (ref.warp, ref.lane_mask) == (0, 0b0101)
    late = [(x["warp"], x["pc"]) for x in rtl.retired if x["pc"] >= ref.pc]
    assert late == [], f"retired at or after the bar at pc {ref.pc:#x}: {late}"
    # and warp 1 got as far as the bar: both warps retired every instruction before it
    before = sorted((x["warp"], x["pc"]) for x in rtl.retired)
    assert before == [(w, pc) for w in (0, 1) for pc in range(0, ref.pc, 4)]


def test_underflow_after_dead_entries_names_the_exit():
    """Warp 0's lanes 2 and 3 push two SYNC entries and exit while lanes 0 and 1, live, are
    on no entry (their DIV entry was popped by the ``sync`` at T): the exit pops two entries
    without a live lane and underflows. The record names the exit, its warp and lanes as the
    ISS does, and the exit does not retire, though warp 1's instructions follow it into ex1.
    (When the pops went on reading the stack's memory a cycle per entry, the exit had left
    ex1 and retired by the fault's cycle, and the record named warp 1's instruction in ex1.)"""
    body = """s2r r1, tid.x
        movi r2, 4
        isetp.lt p0, r1, r2
        andi r3, r1, 3
        movi r4, 2
        isetp.lt p1, r3, r4
   @!p0 bra other
   @p1  bra T
        ssy A
        ssy B
        exit
T:      sync
A:      exit
B:      exit
other:  addi r5, r0, 1
        addi r5, r5, 1
        addi r5, r5, 1
        addi r5, r5, 1"""
    src = (f"        .kernel k\n        .param out, ptr\n        {body}\n        exit\n"
           "        .end\n")
    launch, rtl, ref = faulting_run(src, 8, FaultCause.STACK_UNDERFLOW, trace_retire=True,
                                    after_fault=40)
    assert (rtl.fault["warp"], rtl.fault["lanes"], rtl.fault["instr"]) == \
        (ref.warp, ref.lane_mask, int.from_bytes(launch.code[ref.pc:ref.pc + 4], "little"))
    assert ref.warp == 0 and ref.lane_mask == 0b1100
    # warp 0 in program order: to the bra T (0x1c), the sync at T (0x2c), then lanes 2 and
    # 3's two ssy; the exit (0x28) faults and does not retire
    warp0 = [x["pc"] for x in rtl.retired if x["warp"] == 0]
    assert warp0 == [*range(0, 0x20, 4), 0x2c, 0x20, 0x24] and ref.pc == 0x28


OLDER_IN_FLIGHT = {
    # (body, cause): the memory access faults in mem after the younger instruction behind
    # it has faulted in ex1 or at issue
    "store_then_illegal": ("movi r1, 16\n        stg [r1], r0\n        .word 0",
                           FaultCause.OUT_OF_RANGE),
    "store_then_underflow": ("movi r1, 16\n        stg [r1], r0\n        sync",
                             FaultCause.OUT_OF_RANGE),
    "load_then_illegal": ("ldparam r1, out\n        ldg r2, [r1+2]\n        .word 0",
                          FaultCause.MISALIGNED),
    "store_work_illegal": ("movi r1, 16\n        stg [r1], r0\n        addi r3, r3, 1\n"
                           "        .word 0", FaultCause.OUT_OF_RANGE),
    "store_then_divergent_bar": ("s2r r2, laneid\n        andi r2, r2, 1\n"
                                 "        isetp.eq p0, r2, r0\n        movi r1, 16\n"
                                 "   @p0  bra B\nB:      stg [r1], r0\n        bar",
                                 FaultCause.OUT_OF_RANGE),
}


@pytest.mark.parametrize("case", sorted(OLDER_IN_FLIGHT))
def test_an_older_fault_still_in_flight_wins(case):
    """A younger instruction of the warp faults first in time (in ex1, or at issue), while an
    older memory access is still on its way to mem; the ISS meets the older one first, so the
    record is the older one's (it replaces the first), and nothing from it on retires. The
    record used to keep the younger fault."""
    body, cause = OLDER_IN_FLIGHT[case]
    src = (f"        .kernel k\n        .param out, ptr\n        .shared 16\n        {body}\n"
           "        exit\n        .end\n")
    _, rtl, ref = faulting_run(src, 4, cause, trace_retire=True, after_fault=40)
    assert (rtl.fault["warp"], rtl.fault["lanes"]) == (ref.warp, ref.lane_mask)
    late = [x["pc"] for x in rtl.retired if x["pc"] >= ref.pc]
    assert late == [], f"retired at or after the fault at pc {ref.pc:#x}: {late}"


def test_bar_of_a_partial_warp_after_an_exit_is_not_divergent():
    """A ``bar`` whose warp has fewer live lanes than lanes (a partial second warp, and lane
    0 of each warp exited before it) with every live lane active is no divergent barrier:
    the run ends and writes what the ISS writes. A divergence test against all lanes, or
    against another warp's live mask, faults here."""
    src = ("        .kernel k\n        .param out, ptr\n"
           "        s2r r1, laneid\n        s2r r3, tid\n        isetp.eq p0, r1, r0\n"
           "   @p0  exit\n        bar\n        ldparam r2, out\n        shli r3, r3, 2\n"
           "        add r2, r2, r3\n        stg [r2], r3\n        exit\n        .end\n")
    cfg = tiny()
    launch = launch_from_asm(src, "k", (1,), (6,), [DATA_ADDR], bytes(32))
    want, ref = run_iss(cfg, launch)
    assert ref is None and want[4:8] == (4).to_bytes(4, "little")
    rtl = run_rtl(cfg, launch)
    assert rtl.fault is None and rtl.memory == want


def test_a_live_warps_access_held_behind_a_fault_completes():
    """Warp 0's shared store faults (out of range) in mem; warp 1's, right behind it, takes a
    round per lane (they share a bank), so mem holds it while warp 0's next instruction, dead,
    waits in ex2. A live warp's instruction in flight at a fault finishes (the cores drain
    before the flush): warp 1's store retires. Taking the dead bit of the instruction in ex2
    for the one mem holds dropped it half done."""
    src = ("        .kernel k\n        .param out, ptr\n        .shared 64\n"
           "        s2r r1, tid\n        shli r1, r1, 4\n        addi r1, r1, -64\n"
           "        sts [r1], r1\n        addi r5, r0, 1\n        exit\n        .end\n")
    _, rtl, ref = faulting_run(src, 8, FaultCause.OUT_OF_RANGE, trace_retire=True,
                               after_fault=40)
    assert (rtl.fault["warp"], rtl.fault["lanes"]) == (ref.warp, ref.lane_mask) == (0, 0b1111)
    assert (1, ref.pc) in [(x["warp"], x["pc"]) for x in rtl.retired]
    late = [x["pc"] for x in rtl.retired if x["warp"] == 0 and x["pc"] >= ref.pc]
    assert late == [], f"warp 0 retired at or after the fault at pc {ref.pc:#x}: {late}"
