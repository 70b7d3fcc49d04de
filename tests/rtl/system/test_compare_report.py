"""What a step-and-compare failure says when the RTL retired an instruction that the ISS did
not, because the ISS stopped the launch at a fault first. Nothing here needs the RTL: the
RTL trace is the ISS's with one line added."""

from __future__ import annotations

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
    # warp 1's bar retires on the RTL too
    last = next(t for t in reversed(gold.trace) if t["warp"] == 1)
    extra = {**last, "pc": 16}
    mm = check_one(cfg, launch, gold, _Rtl([*gold.trace, extra], gold.fault))
    assert mm is not None
    assert "warp 1, instruction 4: the rtl retired pc 0x10 `bar`, which the ISS did not " \
           "retire before the launch's fault" in str(mm), str(mm)
