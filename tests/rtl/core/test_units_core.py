"""Scoreboard and barrier unit in the Amaranth simulator, against hand-worked sequences."""

from __future__ import annotations

import random

from amaranth.sim import Simulator
from simtgpu.rtl.barrier import Barrier
from simtgpu.rtl.scoreboard import Scoreboard


def test_scoreboard_random_against_model():
    warps, regs = 3, 32
    dut = Scoreboard(warps, regs, clear_ports=2)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    rng = random.Random(5)

    async def bench(ctx):
        model = [0] * warps
        clr = [0] * warps  # the bits the last cycle's clear_next frees in this one
        for _ in range(600):
            # the set: per warp, the bits its issue sets (a register, an mma's group of
            # four, or a predicate); zero for the warps that do not issue
            sets = [0] * warps
            if rng.random() < 0.6:
                w, idx, pred = rng.randrange(warps), rng.randrange(32), rng.random() < 0.3
                if pred:
                    sets[w] = 1 << (regs + (idx & 7))
                elif rng.random() < 0.3:
                    sets[w] = 0xF << (idx & ~3)
                else:
                    sets[w] = 1 << idx
            for w in range(warps):
                ctx.set(dut.set[w], sets[w])
            drive = []
            for p in dut.clear_next:
                en, w, idx, pred = (rng.random() < 0.6, rng.randrange(warps), rng.randrange(32),
                                    rng.random() < 0.3)
                ctx.set(p.en, en)
                ctx.set(p.warp, w)
                ctx.set(p.idx, idx)
                ctx.set(p.pred, pred)
                drive.append((en, w, (regs + (idx & 7)) if pred else idx))
            # port 0's write-back may not come after all (mem holds): its clear is withheld
            hold = rng.random() < 0.3
            ctx.set(dut.hold, hold)
            # a block arriving beside others forgets its warps' bits (and their set now)
            reset_warps = rng.getrandbits(warps) if rng.random() < 0.05 else 0
            ctx.set(dut.reset_warps, reset_warps)
            for w in range(warps):
                # pending is bypassed: bits cleared this cycle already read as free
                assert ctx.get(dut.pending[w]) == model[w] & ~clr[w]
                # the next cycle's clears both ways: port 0's bit whatever its en
                held = sum(1 << bit for en, pw, bit in drive[1:] if en and pw == w)
                own = 1 << drive[0][2] if drive[0][1] == w else 0
                assert ctx.get(dut.clearing_held[w]) == held
                assert ctx.get(dut.clearing[w]) == held | own
            await ctx.tick()
            for w in range(warps):
                model[w] = 0 if reset_warps >> w & 1 else (model[w] & ~clr[w]) | sets[w]
            clr = [0] * warps
            for port, (en, w, bit) in enumerate(drive):
                if en and not (port == 0 and hold):
                    clr[w] |= 1 << bit
        ctx.set(dut.reset, 1)
        await ctx.tick()
        for w in range(warps):
            assert ctx.get(dut.pending[w]) == 0

    sim.add_testbench(bench)
    sim.run()


def _barrier_run(steps, members, watchdog=50):
    """Drive ``steps`` = list of (arrive_warp or None, exited mask); return per-step outputs."""
    dut = Barrier(4, watchdog)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    out = []

    async def bench(ctx):
        ctx.set(dut.members, members)
        for arrive, exited in steps:
            ctx.set(dut.exited, exited)
            ctx.set(dut.arrive, arrive is not None)
            ctx.set(dut.warp, arrive or 0)
            out.append((ctx.get(dut.release), ctx.get(dut.waiting), ctx.get(dut.deadlock)))
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    return out


def test_barrier_releases_when_all_arrive():
    out = _barrier_run([(0, 0), (2, 0), (None, 0), (1, 0), (None, 0)], members=0b0111)
    assert out[1][1] == 0b001 and out[2][1] == 0b101
    assert [o[0] for o in out] == [0, 0, 0, 1, 0]
    assert out[3][1] == 0b111  # the warps woken
    assert out[4][1] == 0 and not any(o[2] for o in out)


def test_barrier_deadlock_when_a_warp_exited():
    out = _barrier_run([(0, 0), (1, 0b100), (None, 0b100)], members=0b0111)
    assert out[1][2] == 1 and out[1][0] == 0


def test_barrier_watchdog():
    steps = [(0, 0)] + [(None, 0)] * 12
    out = _barrier_run(steps, members=0b0011, watchdog=8)
    flags = [o[2] for o in out]
    # arrival in cycle 0; the fault rises in the cycle its wait count reaches 8
    assert flags.index(1) == 8 and not any(o[0] for o in out)


def test_round_robin_scheduler_is_fair():
    from simtgpu.rtl.scheduler import RoundRobin

    dut = RoundRobin(4)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    grants = []

    async def bench(ctx):
        for req in [0b1111] * 6 + [0b1010] * 4 + [0b0100] * 2 + [0b0000]:
            ctx.set(dut.request, req)
            ctx.set(dut.advance, 1)
            grants.append(ctx.get(dut.grant) if ctx.get(dut.found) else None)
            await ctx.tick()
        ctx.set(dut.restart, 1)
        await ctx.tick()
        ctx.set(dut.restart, 0)
        ctx.set(dut.request, 0b1111)
        grants.append(ctx.get(dut.grant))

    sim.add_testbench(bench)
    sim.run()
    assert grants == [0, 1, 2, 3, 0, 1, 3, 1, 3, 1, 2, 2, None, 0]


def test_warp_unit_shuffles_against_the_rule():
    """Every mode with ``rb`` small, near the warp's edge, huge and all ones: the source lane
    is used only when inside the warp and executing (the ISS's ``shuffle``)."""
    from simtgpu.rtl.warp_unit import ShflMode, WarpUnit

    lanes = 4
    dut = WarpUnit(lanes)
    sim = Simulator(dut)
    rng = random.Random(11)
    picks = [0, 1, 2, 3, 4, 5, 7, 8, 0x10, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFC, 0xFFFFFFFF]

    def want(mode, l, b, a, ex):
        src = {ShflMode.IDX: b & (lanes - 1), ShflMode.UP: l - b, ShflMode.DOWN: l + b,
               ShflMode.XOR: l ^ b}[mode]
        return a[src] if 0 <= src < lanes and ex >> src & 1 else a[l]

    async def bench(ctx):
        for _ in range(400):
            mode = rng.choice(list(ShflMode))
            a = [rng.getrandbits(32) for _ in range(lanes)]
            b = [rng.choice(picks) if rng.random() < 0.7 else rng.getrandbits(32)
                 for _ in range(lanes)]
            ex = rng.randrange(1 << lanes)
            ctx.set(dut.shfl_mode, mode)
            ctx.set(dut.exec, ex)
            for l in range(lanes):
                ctx.set(dut.a[l], a[l])
                ctx.set(dut.b[l], b[l])
            for l in range(lanes):
                assert ctx.get(dut.shfl[l]) == want(mode, l, b[l], a, ex), (mode, l, b, ex)

    sim.add_testbench(bench)
    sim.run()
