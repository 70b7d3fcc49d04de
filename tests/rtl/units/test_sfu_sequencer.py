"""The SFU sequencer's reservation (Amaranth simulator): ``busy`` from the issue until the
result is taken, given back by an instruction dropped before it starts (``release``) and by
a flush (``reset``), which also drops a pass still running. Results against the shared
numerics."""

import numpy as np
from simtgpu.rtl.sfu import SfuOp
from simtgpu.rtl.sfu_sequencer import SfuSequencer
from simtgpu.sim import numerics as nx
from units_harness import run_clocked

WARPS, LANES, SFUS = 2, 4, 2  # two passes of two lanes
LIMIT = 200  # cycles; every SFU function takes far fewer for two passes


async def _start(ctx, dut, values: list[int], warp: int = 1, rd: int = 5) -> None:
    """Reserve (as the instruction issues) and, a cycle later, start it (as it leaves ex1)."""
    ctx.set(dut.reserve, 1)
    await ctx.tick()
    ctx.set(dut.reserve, 0)
    x = dut.ex1
    ctx.set(x.start, 1)
    ctx.set(x.op, SfuOp.SQRT)
    for lane, v in enumerate(values):
        ctx.set(x.a[lane], v)
    ctx.set(x.warp, warp)
    ctx.set(x.rd, rd)
    ctx.set(x.wr, 1)
    ctx.set(x.exec, (1 << LANES) - 1)
    await ctx.tick()
    ctx.set(x.start, 0)


async def _cycles_until_valid(ctx, dut, limit: int = LIMIT) -> int | None:
    for cycle in range(limit):
        if ctx.get(dut.result.valid):
            return cycle
        await ctx.tick()
    return None


def test_a_result_holds_the_unit_until_taken():
    dut = SfuSequencer(WARPS, LANES, SFUS)
    a = np.array([4.0, 2.0, 0.25, 9.0], dtype=np.float32).view(np.uint32)
    seen = {}

    async def bench(ctx):
        await _start(ctx, dut, [int(v) for v in a])
        assert ctx.get(dut.busy)
        assert await _cycles_until_valid(ctx, dut) is not None
        seen["values"] = [ctx.get(dut.result.values[i]) for i in range(LANES)]
        seen["rd"], seen["warp"] = ctx.get(dut.result.rd), ctx.get(dut.result.warp)
        assert ctx.get(dut.busy)
        ctx.set(dut.take, 1)
        await ctx.tick()
        ctx.set(dut.take, 0)
        seen["after_take"] = (ctx.get(dut.busy), ctx.get(dut.result.valid))

    run_clocked(dut, bench)
    want = np.asarray(nx.sfu("sqrt", a), dtype=np.uint32)
    assert seen["values"] == [int(v) for v in want]
    assert (seen["rd"], seen["warp"]) == (5, 1)
    assert seen["after_take"] == (0, 0)


def test_a_dropped_reservation_is_given_back():
    """Reserved as it issued, dropped before ex1 (a faulting warp's younger instruction):
    without ``release`` the unit stayed busy for ever and the core never drained."""
    dut = SfuSequencer(WARPS, LANES, SFUS)
    seen = {}

    async def bench(ctx):
        ctx.set(dut.reserve, 1)
        await ctx.tick()
        ctx.set(dut.reserve, 0)
        seen["reserved"] = ctx.get(dut.busy)
        ctx.set(dut.release, 1)
        await ctx.tick()
        ctx.set(dut.release, 0)
        seen["released"] = ctx.get(dut.busy)
        seen["valid"] = await _cycles_until_valid(ctx, dut, 40)

    run_clocked(dut, bench)
    assert (seen["reserved"], seen["released"], seen["valid"]) == (1, 0, None)


def test_a_flush_mid_pass_leaves_no_result_and_the_next_instruction_runs():
    dut = SfuSequencer(WARPS, LANES, SFUS)
    a = np.array([16.0, 1.0, 4.0, 64.0], dtype=np.float32).view(np.uint32)
    seen = {}

    async def bench(ctx):
        await _start(ctx, dut, [7, 7, 7, 7])
        ctx.set(dut.reset, 1)  # the first pass is running
        await ctx.tick()
        ctx.set(dut.reset, 0)
        seen["busy"] = ctx.get(dut.busy)
        seen["stray"] = await _cycles_until_valid(ctx, dut, 60)
        await _start(ctx, dut, [int(v) for v in a], warp=0, rd=9)
        seen["next"] = await _cycles_until_valid(ctx, dut)
        seen["values"] = [ctx.get(dut.result.values[i]) for i in range(LANES)]
        seen["rd"] = ctx.get(dut.result.rd)

    run_clocked(dut, bench)
    assert seen["busy"] == 0 and seen["stray"] is None
    assert seen["next"] is not None and seen["rd"] == 9
    want = np.asarray(nx.sfu("sqrt", a), dtype=np.uint32)
    assert seen["values"] == [int(v) for v in want]


def test_a_start_marked_stale_a_cycle_later_gives_a_stale_result():
    """The core learns that an SFU instruction is younger than a fault one cycle after its
    start (the access one ahead of it faults in mem then): ``mark_stale``."""
    dut = SfuSequencer(WARPS, LANES, SFUS)
    seen = {}

    async def bench(ctx):
        await _start(ctx, dut, [7, 7, 7, 7])
        ctx.set(dut.mark_stale, 1)
        await ctx.tick()
        ctx.set(dut.mark_stale, 0)
        seen["valid"] = await _cycles_until_valid(ctx, dut)
        seen["stale"] = ctx.get(dut.result.stale)
        ctx.set(dut.take, 1)
        await ctx.tick()
        ctx.set(dut.take, 0)
        await _start(ctx, dut, [7, 7, 7, 7])  # the next one is not stale
        seen["next_valid"] = await _cycles_until_valid(ctx, dut)
        seen["next_stale"] = ctx.get(dut.result.stale)

    run_clocked(dut, bench)
    assert seen["valid"] is not None and seen["stale"] == 1
    assert seen["next_valid"] is not None and seen["next_stale"] == 0
