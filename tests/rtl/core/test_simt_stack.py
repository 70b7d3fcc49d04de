"""SimtStack against a Python model of docs/execution-model.md's ssy/bra/sync/exit rules."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator
from simtgpu.isa import FaultCause
from simtgpu.rtl.simt_stack import SimtOp, SimtStack

LANES = 8
FULL = (1 << LANES) - 1


def ref_step(stack, depth, op, pc, target, active, live, guard):
    """The contract, written directly from the execution-model text."""

    def pop(live):
        while True:
            if not stack:
                return ("finished", live) if live == 0 else ("fault", FaultCause.STACK_UNDERFLOW)
            _kind, epc, emask = stack.pop()
            if emask & live:
                return ("ok", epc, emask & live, live)

    if op is SimtOp.SSY:
        if len(stack) == depth:
            return ("fault", FaultCause.STACK_OVERFLOW)
        stack.append(("SYNC", target, active))
        return ("ok", pc + 4, active, live)
    if op is SimtOp.BRA:
        taken = active & guard
        if taken == active:
            return ("ok", target, active, live)
        if taken == 0:
            return ("ok", pc + 4, active, live)
        rest = active & ~guard & FULL
        if stack and stack[-1][0] == "DIV" and stack[-1][1] == pc + 4:
            k, p, msk = stack[-1]
            stack[-1] = (k, p, msk | rest)
        else:
            if len(stack) == depth:
                return ("fault", FaultCause.STACK_OVERFLOW)
            stack.append(("DIV", pc + 4, rest))
        return ("ok", target, taken, live)
    if op is SimtOp.SYNC:
        return pop(live)
    gone = active & guard
    live &= ~gone
    active &= ~gone
    if active:
        return ("ok", pc + 4, active, live)
    return pop(live)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_simt_stack_random_against_model(seed):
    rng = random.Random(seed)
    warps, depth = 3, 4
    dut = SimtStack(warps, LANES, depth)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    stats = {"div": 0, "merge_pop": 0, "fault": 0, "finished": 0, "ops": 0}

    async def bench(ctx):
        state = {}

        def fresh(w):
            live = rng.randrange(1, FULL + 1)
            state[w] = {"pc": rng.randrange(0, 64) * 4, "active": live, "live": live, "st": []}
            ctx.set(dut.reset, 1)

        for w in range(warps):
            fresh(w)
        await ctx.tick()
        ctx.set(dut.reset, 0)
        for _ in range(1500):
            w = rng.randrange(warps)
            s = state[w]
            op = rng.choice([SimtOp.SSY, SimtOp.BRA, SimtOp.BRA, SimtOp.SYNC, SimtOp.EXIT])
            if op is SimtOp.EXIT and rng.random() < 0.6:
                guard = rng.choice([FULL, rng.randrange(FULL + 1)])
            else:
                guard = rng.randrange(FULL + 1)
            # a branch back to pc+4 of a DIV entry exercises the merge rule
            target = rng.choice([rng.randrange(64) * 4, s["pc"]])
            while not ctx.get(dut.ready):
                await ctx.tick()
            for name, val in (("op", op), ("warp", w), ("pc", s["pc"]), ("target", target),
                              ("active", s["active"]), ("live", s["live"]), ("guard", guard)):
                ctx.set(getattr(dut, name), val)
            ctx.set(dut.valid, 1)
            want = ref_step(s["st"], depth, op, s["pc"], target, s["active"], s["live"], guard)
            got = None
            for _cycle in range(2 * depth + 4):
                if ctx.get(dut.done):
                    assert ctx.get(dut.done_warp) == w
                    if ctx.get(dut.fault):
                        got = ("fault", FaultCause(ctx.get(dut.fault_cause).value))
                    elif ctx.get(dut.finished):
                        got = ("finished", ctx.get(dut.new_live))
                    else:
                        got = ("ok", ctx.get(dut.new_pc), ctx.get(dut.new_active),
                               ctx.get(dut.new_live))
                await ctx.tick()
                ctx.set(dut.valid, 0)
                if got is not None:
                    break
            assert got == want, (op, w, s, guard, target)
            stats["ops"] += 1
            if got[0] == "ok":
                s["pc"], s["active"], s["live"] = got[1], got[2], got[3]
                if op is SimtOp.BRA and got[2] != s["active"]:
                    stats["div"] += 1
            else:
                stats[got[0]] += 1
                while not ctx.get(dut.ready):
                    await ctx.tick()
                # restart this warp from a fresh state (reset clears every stack pointer)
                for v in range(warps):
                    fresh(v)
                await ctx.tick()
                ctx.set(dut.reset, 0)

    sim.add_testbench(bench)
    sim.run()
    assert stats["fault"] > 5 and stats["finished"] > 5 and stats["ops"] == 1500
