"""The skid buffer (rtl/skid_buffer.py) in the Amaranth simulator against a two-entry queue
model: random offers and random ``down.ready``; every cycle's ``up.ready``, ``down.valid``,
head and ``idle`` compared, the items out in order, and one item per cycle through it when
the receiver always takes."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.lib import data
from amaranth.sim import Simulator
from simtgpu.rtl.skid_buffer import SkidBuffer


def _simulate(dut: SkidBuffer, bench) -> None:
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def _run(offer_p: float, take_p: float, cycles: int, seed: int, copies: int = 0) -> dict:
    dut = SkidBuffer(16, copies=copies, copy_of=(lambda p: p[3:11]) if copies else None)
    rng = random.Random(seed)
    stats = {"in": 0, "out": 0, "full": 0}

    async def bench(ctx) -> None:
        held: deque[int] = deque()  # the model: what the buffer holds, oldest first
        sent = 0
        copy_next = 0
        expect_out = 0
        for cycle in range(cycles):
            valid, ready = rng.random() < offer_p, rng.random() < take_p
            ctx.set(dut.up.valid, valid)
            ctx.set(dut.up.payload, sent)
            ctx.set(dut.down.ready, ready)
            at = f"cycle {cycle}"
            # ready is the second entry's being free, whatever is offered this cycle
            assert ctx.get(dut.up.ready) == (len(held) < 2), at
            assert ctx.get(dut.down.valid) == (len(held) > 0), at
            assert ctx.get(dut.idle) == (not held), at
            if held:
                assert ctx.get(dut.down.payload) == held[0], at
                for i in range(copies):  # each copy holds bits 3..10 of the head
                    assert ctx.get(dut.down_copy[i]) == held[0] >> 3 & 0xFF, (at, i)
            if copies and cycle:  # and what the previous cycle gave as their next value
                assert ctx.get(dut.down_copy[0]) == copy_next, at
            if copies:
                copy_next = ctx.get(dut.down_copy_next)
            if held and ready:
                assert held.popleft() == expect_out, at
                expect_out += 1
                stats["out"] += 1
            if valid and ctx.get(dut.up.ready):
                held.append(sent)
                sent = (sent + 1) & 0xFFFF
                stats["in"] += 1
            stats["full"] += len(held) == 2
            await ctx.tick()

    _simulate(dut, bench)
    return stats


def test_skid_buffer_against_a_queue() -> None:
    stats = _run(0.7, 0.6, 4000, seed=1)
    assert stats["full"] > 200 and stats["out"] > 1500, stats  # it filled and drained


def test_copies_hold_the_head_bits() -> None:
    """``copies``: registers of their own with ``copy_of`` the item at ``down``, checked
    every cycle against the model's head while the buffer fills, stalls and drains."""
    stats = _run(0.7, 0.6, 2000, seed=4, copies=3)
    assert stats["full"] > 100 and stats["out"] > 700, stats


def test_skid_buffer_moves_an_item_per_cycle() -> None:
    stats = _run(1.0, 1.0, 500, seed=2)
    assert stats["out"] == 499 and stats["full"] == 0, stats  # one cycle late, never stalls


@pytest.mark.parametrize("routes, per_route", [(0, False), (4, False), (4, True)])
def test_side_bits_follow_their_items(routes: int, per_route: bool) -> None:
    """With side information (the queue form): every cycle's ``up.ready``, ``down.valid``,
    head and ``idle`` as a two-entry queue's, and each held item's side bits those it came
    in with, advanced once per cycle held by the receiver's ``*_side_next`` (here: +1), at
    ``down`` and in the second entry alike. With routes (the item's low two bits here), the
    registered ``down_to`` names the head's route every cycle, and is zero when empty, and
    ``down_key`` has the head's key (bits 1 to 3) at its route and zero at the others.
    ``per_route``: the side bits an array of one element per route, each chosen by a copy
    of the read pointer of its own; seen whole, they behave as the plain eight bits."""
    side_shape = data.ArrayLayout(2, 4) if per_route else 8
    dut = SkidBuffer(16, side_shape=side_shape, routes=routes,
                     route_of=(lambda p: p[:2]) if routes else None,
                     key_of=(lambda p: p[1:4]) if routes else None)
    rng = random.Random(3)
    stats = {"out": 0, "full": 0}

    def raw(port):  # a side port as its bits, whatever its shape
        return port.as_value() if isinstance(port, data.View) else port

    async def bench(ctx) -> None:
        held: deque[list[int]] = deque()  # [item, side] per held item, oldest first
        sent = 0
        for cycle in range(3000):
            valid, ready = rng.random() < 0.7, rng.random() < 0.6
            ctx.set(dut.up.valid, valid)
            ctx.set(dut.up.payload, sent)
            ctx.set(raw(dut.up_side), (sent * 7) & 0xFF)
            ctx.set(dut.down.ready, ready)
            ctx.set(raw(dut.down_side_next), (ctx.get(raw(dut.down_side)) + 1) & 0xFF)
            ctx.set(raw(dut.skid_side_next), (ctx.get(raw(dut.skid_side)) + 1) & 0xFF)
            at = f"cycle {cycle}"
            assert ctx.get(dut.up.ready) == (len(held) < 2), at
            assert ctx.get(dut.down.valid) == (len(held) > 0), at
            assert ctx.get(dut.skid_valid) == (len(held) == 2), at
            assert ctx.get(dut.idle) == (not held), at
            if held:
                assert [ctx.get(dut.down.payload), ctx.get(raw(dut.down_side))] == held[0], at
            if routes:
                assert ctx.get(dut.down_to) == ((1 << (held[0][0] & 3)) if held else 0), at
                for r in range(routes):
                    want = held[0][0] >> 1 & 7 if held and held[0][0] & 3 == r else 0
                    assert ctx.get(dut.down_key[r]) == want, (at, r)
            if len(held) == 2:
                assert [ctx.get(dut.skid), ctx.get(raw(dut.skid_side))] == held[1], at
            for h in held:
                h[1] = (h[1] + 1) & 0xFF
            if held and ready:
                held.popleft()
                stats["out"] += 1
            if valid and ctx.get(dut.up.ready):
                held.append([sent, (sent * 7) & 0xFF])
                sent = (sent + 1) & 0xFFFF
            stats["full"] += len(held) == 2
            await ctx.tick()

    _simulate(dut, bench)
    assert stats["full"] > 200 and stats["out"] > 1000, stats


def test_routes_need_side_information() -> None:
    with pytest.raises(ValueError, match="routes need side_shape and route_of"):
        SkidBuffer(16, routes=2, route_of=lambda p: p[:1])
    with pytest.raises(ValueError, match="key_of needs routes"):
        SkidBuffer(16, side_shape=8, key_of=lambda p: p[:1])
    with pytest.raises(ValueError, match="copies need copy_of and no side_shape"):
        SkidBuffer(16, copies=2)
    with pytest.raises(ValueError, match="copies need copy_of and no side_shape"):
        SkidBuffer(16, side_shape=8, copies=2, copy_of=lambda p: p[:4])


def test_copies_of_a_struct_payloads_field() -> None:
    """``copy_of`` takes a field of a struct payload (the L2 copies a request's address):
    the buffer elaborates, and each copy follows the head's field in simulation."""
    layout = data.StructLayout({"addr": 8, "rest": 8})
    dut = SkidBuffer(layout, copies=2, copy_of=lambda p: p.addr)
    seen = []

    async def bench(ctx) -> None:
        ctx.set(dut.down.ready, 1)
        for k in range(1, 5):
            ctx.set(dut.up.valid, 1)
            ctx.set(dut.up.payload, {"addr": 16 * k, "rest": k})
            await ctx.tick()
            seen.append([ctx.get(c) for c in dut.down_copy])

    _simulate(dut, bench)
    assert seen == [[16 * k, 16 * k] for k in range(1, 5)]
