"""Step-and-compare: the core's retire port against the ISS retire trace, per warp."""

from __future__ import annotations

import numpy as np
import pytest
from core_bench import DATA_ADDR, launch_from_asm, per_warp, run_iss, run_rtl, small_config
from kernels import ALL_UNITS
from simtgpu.sim.trace import per_warp as lines_per_warp
from simtgpu.verification.compare import program_order

EXAMPLES = "examples/asm/"


def tiny():
    return small_config("tiny")


@pytest.mark.parametrize("kernel,form", [("classify", "gated"), ("block_sum", "gated"),
                                         ("all_units", "gated"), ("all_units", "fpga"),
                                         ("classify", "fpga")])
def test_retire_trace_matches_iss_per_warp(kernel, form):
    """Step-and-compare: each warp's retired instructions (pc, masks, destination values)
    equal the ISS's, in program order. A load's late write-back may retire after younger
    independent instructions of its warp, so the RTL's lines are first put back into program
    order (each matched to the oldest unmatched ISS line of its pc). ``form``: the
    simulation models' gated clocks, or the FPGA form that ``simtgpu synth`` builds
    (``RtlConfig.clock_gating=False``: the same units under clock enables)."""
    cfg = tiny().with_(clock_gating=form == "gated")
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
    ref_lines, rtl_lines = lines_per_warp(ref), lines_per_warp(rtl.retired)
    ordered = []
    for key, wl in ref_lines.items():
        ordered += program_order(wl, rtl_lines.get(key, []))[1]
    ordered += [x for key, gl in rtl_lines.items() if key not in ref_lines for x in gl]
    got, want = per_warp(ordered), per_warp(ref)
    assert got.keys() == want.keys()
    for key in want:
        assert len(got[key]) == len(want[key]), key
        for i, (g, w) in enumerate(zip(got[key], want[key], strict=True)):
            assert g == w, (key, i, g, w)
