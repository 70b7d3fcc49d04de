"""What a step-and-compare of a faulting launch reports: an instruction the faulting warp
retired on the RTL and not on the ISS, an older one it lost, a value that differs; and what
it leaves alone: another warp that went further than on the ISS, which stops the grid at the
fault. Nothing here needs the RTL: the RTL trace is the ISS's, edited."""

from __future__ import annotations

import numpy as np
from simtgpu.verification.harness import check_one, rtl_config
from simtgpu.verification.launch import launch_from_asm, run_iss

# two warps reach a divergent bar (no ssy: the lanes that skip the branch stay apart)
SRC = """
.kernel k
.param out, ptr
        s2r     r1, laneid
        andi    r1, r1, 1
        isetp.eq p0, r1, r0
   @p0  bra     B
B:      bar
        exit
.end
"""


class _Rtl:
    """The RTL's side of :func:`check_one` for a run that faulted like the ISS."""

    def __init__(self, trace: list[dict], fault) -> None:
        self.trace, self.buffers, self.timed_out, self.fence_ok = trace, {}, False, True
        self.fault_cause = fault.cause
        self.regs = {"FAULT_PC": fault.pc, "FAULT_WARP": fault.warp,
                     "FAULT_LANES": fault.lane_mask, "FAULT_BLOCK_X": fault.block[0],
                     "FAULT_BLOCK_Y": fault.block[1], "FAULT_BLOCK_Z": fault.block[2]}


def test_an_extra_line_after_the_fault_is_named_as_such():
    cfg = rtl_config("tiny")
    launch = launch_from_asm(SRC, "k", (1,), (2 * cfg.lanes,), [0])
    gold = run_iss(launch, cfg.lanes, cfg.sim_memory_bytes)
    assert gold.fault is not None and gold.fault.warp == 0 and gold.fault.pc == 16
    # the same lines retire on both: nothing to report
    assert check_one(cfg, launch, gold, _Rtl(list(gold.trace), gold.fault)) is None
    # the faulting warp's bar retires on the RTL: faults are precise, so it is named
    last = next(t for t in reversed(gold.trace) if t["warp"] == 0)
    mm = check_one(cfg, launch, gold, _Rtl([*gold.trace, {**last, "pc": 16}], gold.fault))
    assert mm is not None
    assert "warp 0, instruction 4: the rtl retired pc 0x10 `bar`, which the ISS did not " \
           "retire before the launch's fault" in str(mm), str(mm)


def test_other_warps_are_compared_where_both_retired():
    """The ISS stops the grid at the first fault: another warp that went further on the RTL
    is a scheduling choice (its extra lines are not compared), but a line both retired with
    a different value is named, and so is an older line of the faulting warp the RTL lost."""
    cfg = rtl_config("tiny")
    launch = launch_from_asm(SRC, "k", (1,), (2 * cfg.lanes,), [0])
    gold = run_iss(launch, cfg.lanes, cfg.sim_memory_bytes)
    w1 = [i for i, t in enumerate(gold.trace) if t["warp"] == 1]
    ahead = {**gold.trace[w1[-1]], "pc": 20}  # warp 1 went on to its exit
    assert check_one(cfg, launch, gold, _Rtl([*gold.trace, ahead], gold.fault)) is None
    wrong = [dict(t) for t in gold.trace]
    wrong[w1[0]]["values"] = [v ^ 1 for v in wrong[w1[0]]["values"]]
    mm = check_one(cfg, launch, gold, _Rtl(wrong, gold.fault))
    assert mm is not None and "warp 1, instruction 0" in str(mm), str(mm)
    w0 = [i for i, t in enumerate(gold.trace) if t["warp"] == 0]
    lost = [t for i, t in enumerate(gold.trace) if i != w0[-1]]
    mm = check_one(cfg, launch, gold, _Rtl(lost, gold.fault))
    assert mm is not None and "the faulting warp, retired 3 instructions" in str(mm) \
        and "missing one is at pc 0xc" in str(mm), str(mm)


# a discarded atomic, then a long run of independent instructions of the same warp
LATE_SRC = """
.kernel k
.param out, ptr
        ldparam r1, out
        atom.max r0, [r1], r0
""" + "        addi r2, r2, 1\n" * 200 + """        stg [r1+4], r2
        exit
.end
"""


def test_an_instruction_retired_far_behind_younger_ones_is_matched():
    """An ``atom`` whose result is discarded lets its warp run on until memory answers: it
    retires after any number of younger instructions (64 on ``small`` at ``realistic``
    memory overflowed the comparison's old window). The pairs are still compared: a
    value that differs among them is named."""
    from simtgpu.verification.compare import compare_traces

    cfg = rtl_config("tiny")
    launch = launch_from_asm(LATE_SRC, "k", (1,), (cfg.lanes,), ["out"],
                             {"out": np.zeros(2, np.int32)})
    gold = run_iss(launch, cfg.lanes, cfg.sim_memory_bytes)
    assert gold.fault is None
    atom = next(i for i, t in enumerate(gold.trace) if t["pc"] == 4)
    late = [t for i, t in enumerate(gold.trace) if i != atom]
    late.insert(atom + 201, gold.trace[atom])  # behind the 200 adds and the store
    assert compare_traces(launch, gold.trace, late, cfg.lanes) is None
    wrong = [dict(t) for t in late]
    k = atom + 150
    wrong[k]["values"] = [v ^ 1 for v in wrong[k]["values"]]
    mm = compare_traces(launch, gold.trace, wrong, cfg.lanes)
    assert mm is not None and "values differs" in str(mm), str(mm)


# one atom, executed by every lane in the first trip and by none in the second
LOOP_SRC = """
.kernel k
.param out, ptr
        ldparam r1, out
        movi    r2, 2
        movi    r3, 2
L:      isetp.eq p0, r2, r3
   @p0  atom.max r0, [r1], r0
        addi    r2, r2, -1
        isetp.ne p1, r2, r0
   @p1  bra     L
        exit
.end
"""


def test_an_instance_with_no_executing_lane_may_overtake_an_older_one():
    """An instance with an empty ``exec`` makes no access and retires at ``wb``, ahead of an
    older instance of the same instruction still waiting for memory."""
    from simtgpu.verification.compare import compare_traces

    cfg = rtl_config("tiny")
    launch = launch_from_asm(LOOP_SRC, "k", (1,), (cfg.lanes,), ["out"],
                             {"out": np.zeros(1, np.int32)})
    gold = run_iss(launch, cfg.lanes, cfg.sim_memory_bytes)
    first, second = [i for i, t in enumerate(gold.trace) if t["pc"] == 16]
    assert gold.trace[first]["exec"] and not gold.trace[second]["exec"]
    rtl = list(gold.trace)
    rtl.insert(second + 1, rtl.pop(first))  # the empty instance retired first
    assert compare_traces(launch, gold.trace, rtl, cfg.lanes) is None
