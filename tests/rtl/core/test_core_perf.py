"""Performance event strobes of one core (Amaranth simulator): every cycle is charged to
exactly one of issued or a stall reason, and each reason is counted where it is the cause."""

from __future__ import annotations

import numpy as np
from core_bench import DATA_ADDR, launch_from_asm, run_iss, run_rtl, small_config

# run_rtl's cycle count includes the dispatch handshake cycle, which it does not sample
HANDSHAKE = 1
REASONS = ("issued", "stall_scoreboard", "stall_memory", "stall_barrier", "stall_structural",
           "stall_idle")


def _run(body: str, threads: int):
    src = (f"        .kernel k\n        .param out, ptr\n        s2r r1, tid\n"
           f"        ldparam r2, out\n        shli r3, r1, 2\n        add r2, r2, r3\n"
           f"{body}        exit\n        .end\n")
    cfg = small_config("tiny")
    launch = launch_from_asm(src, "k", (1,), (threads,), [DATA_ADDR], bytes(4 * threads))
    rtl = run_rtl(cfg, launch)
    want, fault = run_iss(cfg, launch)
    assert fault is None and rtl.fault is None
    np.testing.assert_array_equal(np.frombuffer(rtl.memory, "<u4"), np.frombuffer(want, "<u4"))
    return cfg, rtl


def test_sfu_contention_is_structural():
    """Every warp runs independent SFU instructions back to back: the one SFU is busy while a
    warp whose next instruction is an SFU op waits, which is a structural stall (before, the
    cycles went to stall_memory through the SFU warp's parking)."""
    body = "".join(f"        sfu.rsqrt r{8 + i}, r1\n" for i in range(4))
    body += "".join(f"        add r8, r8, r{9 + i}\n" for i in range(3))
    body += "        stg [r2], r8\n"
    cfg, rtl = _run(body, 2 * 4)
    per_cycle = sum(rtl.perf[n] for n in REASONS)
    assert per_cycle == rtl.cycles - HANDSHAKE, (per_cycle, rtl.cycles, rtl.perf)
    assert rtl.perf["stall_structural"] > 0, rtl.perf


def test_alu_only_has_no_structural_stall():
    body = "".join(f"        addi r{8 + i}, r1, {i}\n" for i in range(6)) + "        stg [r2], r9\n"
    _, rtl = _run(body, 2 * 4)
    assert sum(rtl.perf[n] for n in REASONS) == rtl.cycles - HANDSHAKE
    assert rtl.perf["stall_structural"] == 0, rtl.perf
