"""The ISS watchdog: a proportionate default budget, progress on long launches, and Ctrl-C as
a clean stop that leaves the simulator usable."""

from __future__ import annotations

import numpy as np
import pytest
from simtgpu.assembler import assemble
from simtgpu.isa import FaultCause
from simtgpu.sim import GlobalMemory, Iss, KernelFault
from simtgpu.sim import iss as iss_module

SPIN = assemble(".kernel k\nL:\n    bra L\n.end\n", "spin.s")
STORE = assemble(".kernel k\n    s2r r1, tid.x\n    shli r2, r1, 2\n    li r3, 0x2000\n"
                 "    add r2, r2, r3\n    stg [r2], r1\n    exit\n.end\n", "store.s")


def _launch(iss: Iss, obj, block: int = 8):
    k = obj.kernel("k")
    return iss.launch(obj.code, k.entry, (1, 1, 1), (block, 1, 1), 0x80, 0, 0)


@pytest.mark.parametrize(("warps", "budget"), [
    (1, 1_000_000), (7, 7_000_000), (50, 50_000_000), (51, 50_000_000), (10_000, 50_000_000)])
def test_default_budget_is_per_warp_and_capped(warps: int, budget: int) -> None:
    assert iss_module.default_budget(warps) == budget


def test_single_spinning_warp_stops_at_the_default_budget(monkeypatch) -> None:
    monkeypatch.setattr(iss_module, "BUDGET_PER_WARP", 5000)  # the rule, at a test's scale
    iss = Iss(GlobalMemory(1 << 16), warp_size=8)
    with pytest.raises(KernelFault) as info:
        _launch(iss, SPIN)
    assert info.value.record.cause is FaultCause.WATCHDOG
    assert "instruction budget of 5000 warp-instructions" in info.value.record.detail


def test_progress_is_reported_while_a_launch_runs(monkeypatch) -> None:
    monkeypatch.setattr(iss_module, "PROGRESS_EVERY", 1000)
    iss = Iss(GlobalMemory(1 << 16), warp_size=8, instruction_budget=4500)
    seen: list[int] = []
    iss.progress = lambda stats: seen.append(stats.warp_instructions)
    with pytest.raises(KernelFault):
        _launch(iss, SPIN)
    assert len(seen) == 4 and seen == sorted(seen) and seen[0] >= 1000


def test_ctrl_c_stops_the_launch_and_the_simulator_stays_usable(monkeypatch) -> None:
    monkeypatch.setattr(iss_module, "PROGRESS_EVERY", 1000)
    mem = GlobalMemory(1 << 16)
    iss = Iss(mem, warp_size=8)

    def interrupt(stats) -> None:
        raise KeyboardInterrupt

    iss.progress = interrupt
    with pytest.raises(KernelFault) as info:
        _launch(iss, SPIN)
    rec = info.value.record
    assert rec.cause is FaultCause.WATCHDOG and "stopped by Ctrl-C" in rec.detail
    assert rec.pc == 0 and rec.lane_mask == 0xFF
    iss.progress = None
    _launch(iss, STORE)  # the next launch runs normally
    assert np.array_equal(mem.read_words(0x2000, 8), np.arange(8, dtype=np.uint32))
