"""Dispatcher: blocks handed out once each in linear order (x fastest), spread over ready
cores, completions counted, one ``done`` pulse after the last block finished."""

from __future__ import annotations

import random

import pytest
from rtlgpu_helpers import run_sim
from simtgpu.rtl.dispatcher import Dispatcher


def _run(cores: int, grid: tuple[int, int, int], capacity: int, seed: int, busy_max: int = 12):
    dut = Dispatcher(cores, cores * capacity)
    rng = random.Random(seed)
    log = {"handed": [], "done_at": [], "last_finish": None}

    async def tb(ctx):
        for name, v in (("entry_pc", 0x40), ("num_threads", 64), ("num_warps", 2),
                        ("param_addr", 0x2000), ("param_size", 16), ("shared_bytes", 128)):
            ctx.set(getattr(dut.launch, name), v)
        for axis, v in zip("xyz", grid, strict=True):
            ctx.set(getattr(dut.launch.grid, axis), v)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        resident = [[] for _ in range(cores)]  # remaining cycles per resident block
        total = grid[0] * grid[1] * grid[2]
        finished = 0
        cycle = 0
        while cycle < 5000:
            for c in range(cores):
                ctx.set(dut.cores[c].ready, len(resident[c]) < capacity)
            # Finish at most one block per core per cycle.
            for c in range(cores):
                done_now = bool(resident[c]) and resident[c][0] <= 0
                ctx.set(dut.cores[c].block_done, done_now)
                if done_now:
                    resident[c].pop(0)
                    finished += 1
                    log["last_finish"] = cycle
            sampled = await ctx.tick().sample(
                dut.done, *[dut.cores[c].valid for c in range(cores)],
                *[dut.cores[c].payload.block_id.as_value() for c in range(cores)],
                *[dut.cores[c].payload.entry_pc for c in range(cores)])
            done, rest = sampled[2], sampled[3:]
            valids, ids, pcs = rest[:cores], rest[cores:2 * cores], rest[2 * cores:]
            assert sum(valids) <= 1, "a block offered to two cores at once"
            for c in range(cores):
                if valids[c]:
                    bid = ids[c]
                    log["handed"].append(
                        (c, (bid & 0xFFFF, bid >> 16 & 0xFFFF, bid >> 32 & 0xFFFF)))
                    assert pcs[c] == 0x40
                    resident[c].append(rng.randint(1, busy_max))
            if done:
                log["done_at"].append(cycle)
            for c in range(cores):
                resident[c] = [r - 1 for r in resident[c]]
            cycle += 1
            if finished == total and log["done_at"] and cycle > log["done_at"][-1] + 5:
                break
        log["busy_after"] = ctx.get(dut.busy)

    run_sim(dut, tb)
    return log


@pytest.mark.parametrize("cores,grid,capacity,seed", [
    (1, (5, 1, 1), 1, 1), (3, (4, 3, 2), 2, 2), (2, (1, 1, 7), 3, 3), (4, (3, 2, 1), 1, 4)])
def test_blocks_in_linear_order_then_one_done(cores, grid, capacity, seed) -> None:
    log = _run(cores, grid, capacity, seed)
    expected = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    assert [bid for _, bid in log["handed"]] == expected
    assert len(log["done_at"]) == 1
    # done is the cycle after the last completion was counted, never before.
    assert log["done_at"][0] == log["last_finish"] + 1
    assert not log["busy_after"]


def test_ready_cores_share_the_blocks() -> None:
    # Blocks last long and every core has room: the choice must rotate over the cores.
    log = _run(3, (9, 1, 1), 4, 5, busy_max=1000)
    assert [c for c, _ in log["handed"]] == [0, 1, 2] * 3
