"""The memory queue (rtl/ram_fifo.py: its block-RAM head, its distributed-RAM head register
and its asynchronous read) in the Amaranth simulator against a Python deque:
random pushes and pops, every cycle's ``r_rdy``, ``w_rdy``, ``level`` and head compared, on
depths that are and are not powers of two (wrap-around), with the queue running empty (the
written-then-read bypass) and full; the write data is random in every cycle, pushed or not
(the memory is written whenever there is room)."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.sim import Simulator
from simtgpu.rtl.ram_fifo import RamFifo


@pytest.mark.parametrize("style", ["block", "distributed", "async"])
@pytest.mark.parametrize("depth", [2, 5, 16, 20])
def test_ram_fifo_against_a_deque(depth: int, style: str) -> None:
    dut = RamFifo(width=24, depth=depth, ram_style=style)
    rng = random.Random(depth)
    seen = {"empty_push": 0, "full": 0, "pops": 0}

    async def bench(ctx) -> None:
        want: deque[int] = deque()
        for cycle in range(3000):
            # phases: mostly pushing (fills up), mostly popping (runs dry), balanced
            phase = (cycle // 200) % 3
            p_push, p_pop = [(0.8, 0.3), (0.3, 0.8), (0.6, 0.6)][phase]
            w_en, r_en = rng.random() < p_push, rng.random() < p_pop
            w_data = rng.getrandbits(24)
            ctx.set(dut.w_en, w_en)
            ctx.set(dut.w_data, w_data)
            ctx.set(dut.r_en, r_en)
            at = f"{style}, depth {depth}, cycle {cycle}"
            assert ctx.get(dut.level) == len(want), at
            assert ctx.get(dut.r_rdy) == (len(want) > 0), at
            assert ctx.get(dut.w_rdy) == (len(want) < depth), at
            if want:
                assert ctx.get(dut.r_data) == want[0], at
            pop = r_en and bool(want)
            push = w_en and len(want) < depth
            seen["empty_push"] += push and len(want) - pop == 0
            seen["full"] += len(want) == depth
            seen["pops"] += pop
            if pop:
                want.popleft()
            if push:
                want.append(w_data)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # the cases the bench is for happened
    assert seen["empty_push"] > 50 and seen["full"] > 50 and seen["pops"] > 1000, seen


def test_ram_fifo_checks_its_size() -> None:
    with pytest.raises(ValueError, match="depth at least 2"):
        RamFifo(width=8, depth=1)
    with pytest.raises(ValueError,
                       match="ram_style must be 'block', 'distributed' or 'async', not 'lut'"):
        RamFifo(width=8, depth=4, ram_style="lut")
