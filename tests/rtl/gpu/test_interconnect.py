"""Interconnect: round-robin fairness, source id in the tag, responses routed back in order."""

from __future__ import annotations

import random
from collections import deque

from rtlgpu_helpers import run_sim, send, set_request
from simtgpu.rtl.interconnect import Interconnect
from simtgpu.rtl.signatures import MemKind

LW = 4
TAG_BITS = 8


def test_round_robin_when_all_sources_wait() -> None:
    n = 3
    dut = Interconnect(n, LW, TAG_BITS)
    order = []

    async def tb(ctx):
        for i in range(n):
            set_request(ctx, dut.src[i].req.payload, MemKind.READ, 0x1000 * (i + 1), tag=i,
                        line_words=LW)
            ctx.set(dut.src[i].req.valid, 1)
        ctx.set(dut.ext.req.ready, 1)
        for _ in range(3 * n):
            tag = ctx.get(dut.ext.req.payload.tag)
            src = tag >> TAG_BITS
            assert ctx.get(dut.ext.req.payload.addr) == 0x1000 * (src + 1)
            assert tag & 0xFF == src
            assert ctx.get(dut.src[src].req.ready)
            assert not any(ctx.get(dut.src[j].req.ready) for j in range(n) if j != src)
            order.append(src)
            await ctx.tick()
        # With the request stream stalled nothing is granted and the pointer stays.
        ctx.set(dut.ext.req.ready, 0)
        await ctx.tick()
        assert ctx.get(dut.ext.req.payload.tag) >> TAG_BITS == (order[-1] + 1) % n

    run_sim(dut, tb)
    assert order == [0, 1, 2] * 3


def test_only_one_source_gets_every_slot() -> None:
    dut = Interconnect(4, LW, TAG_BITS)
    grants = []

    async def tb(ctx):
        ctx.set(dut.ext.req.ready, 1)
        set_request(ctx, dut.src[2].req.payload, MemKind.WRITE, 0x2000, tag=7, line_words=LW)
        ctx.set(dut.src[2].req.valid, 1)
        for _ in range(5):
            grants.append(ctx.get(dut.ext.req.payload.tag))
            await ctx.tick()

    run_sim(dut, tb)
    assert grants == [(2 << TAG_BITS) | 7] * 5


def test_a_waiting_request_keeps_the_port_when_a_higher_priority_source_arrives() -> None:
    """Stream rules: the offered payload stays put until taken. Source 0 has the higher
    priority; it arrives while source 1's atomic waits at a port that is not ready (the L2
    performs an atomic over several cycles on the operands it sees there)."""
    dut = Interconnect(2, LW, TAG_BITS)
    seen = []

    async def tb(ctx):
        set_request(ctx, dut.src[1].req.payload, MemKind.ATOMIC, 0x1A158, tag=1, line_words=LW)
        ctx.set(dut.src[1].req.valid, 1)
        await ctx.tick()
        set_request(ctx, dut.src[0].req.payload, MemKind.ATOMIC, 0x1A0D8, tag=0, line_words=LW)
        ctx.set(dut.src[0].req.valid, 1)
        for ready in (0, 0, 1, 1):
            ctx.set(dut.ext.req.ready, ready)
            seen.append((ctx.get(dut.ext.req.payload.addr), ctx.get(dut.src[0].req.ready),
                         ctx.get(dut.src[1].req.ready)))
            if ctx.get(dut.src[1].req.ready):
                ctx.set(dut.src[1].req.valid, 0)
            await ctx.tick()

    run_sim(dut, tb)
    assert seen == [(0x1A158, 0, 0), (0x1A158, 0, 0), (0x1A158, 0, 1), (0x1A0D8, 1, 0)]


def test_random_traffic_routes_responses_in_order() -> None:
    n = 3
    per_source = 40
    dut = Interconnect(n, LW, TAG_BITS)
    rng = random.Random(7)
    received = {i: [] for i in range(n)}
    pending = deque()  # (due cycle, ext tag, addr) in acceptance order
    cycle = [0]
    idle_seen = []

    def source(i):
        async def run(ctx):
            for k in range(per_source):
                def setter(ctx, p, k=k):
                    set_request(ctx, p, MemKind.READ, 0x1000 + 0x100 * i + 16 * k, tag=k,
                                line_words=LW)
                await send(ctx, dut.src[i].req, setter)
                for _ in range(rng.choice([0, 0, 2])):
                    await ctx.tick()
        return run

    def sink(i):
        async def run(ctx):
            r = dut.src[i].resp
            while len(received[i]) < per_source:
                ctx.set(r.ready, rng.random() < 0.8)
                *_, valid, ready, tag, word = await ctx.tick().sample(
                    r.valid, r.ready, r.payload.tag, r.payload.rdata[0])
                if valid and ready:
                    received[i].append((tag, word))
        return run

    async def memory(ctx):
        """Accepts requests with random back-pressure, answers in order after 1-6 cycles with
        the request's address as data."""
        done = 0
        req, resp = dut.ext.req, dut.ext.resp
        waiting = None  # the request offered and not taken last cycle: it must still be there
        while done < n * per_source:
            ctx.set(req.ready, rng.random() < 0.75)
            offering = bool(pending) and pending[0][0] <= cycle[0]
            ctx.set(resp.valid, offering)
            if offering:
                ctx.set(resp.payload.tag, pending[0][1])
                ctx.set(resp.payload.rdata[0], pending[0][2])
            *_, rq_v, rq_r, tag, addr, rs_r = await ctx.tick().sample(
                req.valid, req.ready, req.payload.tag, req.payload.addr, resp.ready)
            if waiting is not None:
                assert (rq_v, tag, addr) == (1, *waiting), "an offered request moved"
            waiting = (tag, addr) if rq_v and not rq_r else None
            if offering and rs_r:
                pending.popleft()
                done += 1
            if rq_v and rq_r:
                pending.append((cycle[0] + rng.randint(1, 6), tag, addr))
            cycle[0] += 1
        ctx.set(dut.ext.resp.valid, 0)
        ctx.set(dut.ext.req.ready, 0)
        await ctx.tick()
        idle_seen.append((ctx.get(dut.idle), ctx.get(dut.outstanding)))

    run_sim(dut, memory, *[source(i) for i in range(n)], *[sink(i) for i in range(n)])
    for i in range(n):
        assert received[i] == [(k, 0x1000 + 0x100 * i + 16 * k) for k in range(per_source)]
    assert idle_seen == [(1, 0)]
