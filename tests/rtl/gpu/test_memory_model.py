"""Memory model: fixed latency, in-order responses, byte enables, atomics against a reference,
and the backdoor port."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rtlgpu_helpers import RefMemory, run_sim, send, set_request
from simtgpu.rtl.configs import get_rtl_config
from simtgpu.rtl.signatures import AtomOp, MemKind
from simtgpu.rtlsim.memory_model import MemoryModel
from simtgpu.sim import numerics as nx


def _cfg(latency: int, name: str = "tiny"):
    return get_rtl_config(name, sim_memory_bytes=4096).with_(mem_latency=latency)


@pytest.mark.parametrize("latency", [1, 2, 5])
def test_read_latency_and_backdoor(latency: int) -> None:
    cfg = _cfg(latency)
    dut = MemoryModel(cfg)
    lw = cfg.line_words
    line = [0x11111111 * (i + 1) for i in range(lw)]
    seen = {}

    async def tb(ctx):
        # Backdoor write of line 5, then a bus read of it.
        ctx.set(dut.bd.addr, 5)
        ctx.set(dut.bd.wdata, sum(w << 32 * i for i, w in enumerate(line)))
        ctx.set(dut.bd.we, 1)
        await ctx.tick()
        ctx.set(dut.bd.we, 0)
        ctx.set(dut.bus.resp.ready, 1)
        cycle = [0]

        def setter(ctx, p):
            set_request(ctx, p, MemKind.READ, 5 * cfg.line_bytes, tag=0x1A5, line_words=lw)

        await send(ctx, dut.bus.req, setter, cycle)
        for n in range(1, 20):
            if ctx.get(dut.bus.resp.valid):
                seen["latency"] = n - 1  # n-1 edges after the accepting edge
                seen["rdata"] = [ctx.get(dut.bus.resp.payload.rdata[i]) for i in range(lw)]
                seen["tag"] = ctx.get(dut.bus.resp.payload.tag)
                break
            await ctx.tick()
        # The backdoor read port sees the line one cycle after its address.
        await ctx.tick()
        seen["bd"] = ctx.get(dut.bd.rdata)

    run_sim(dut, tb)
    # The response is valid in the cycle that starts `latency` edges after the request was
    # accepted (one edge for the read, one for the queue at least).
    assert seen["latency"] + 1 == max(latency, 2)
    assert seen["rdata"] == line
    assert seen["tag"] == 0x1A5
    assert seen["bd"] == sum(w << 32 * i for i, w in enumerate(line))


@pytest.mark.parametrize("name,latency,seed", [("tiny", 3, 1), ("small", 6, 2), ("tiny", 1, 3)])
def test_random_traffic_matches_reference(name: str, latency: int, seed: int) -> None:
    cfg = _cfg(latency, name)
    dut = MemoryModel(cfg)
    lw = cfg.line_words
    rng = random.Random(seed)
    ref = RefMemory(cfg.sim_memory_bytes, lw)
    ops = [AtomOp.ADD, AtomOp.MIN, AtomOp.MAX, AtomOp.EXCH, AtomOp.CAS]
    if dut.fadd_supported:
        ops.append(AtomOp.FADD)
    fp_edges = [0, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000,
                0x00000001, 0x7F7FFFFF]
    requests = []
    for i in range(300):
        kind = rng.choice([MemKind.READ, MemKind.WRITE, MemKind.ATOMIC])
        line = rng.randrange(6)  # few lines, so accesses collide
        if kind == MemKind.ATOMIC:
            op = rng.choice(ops)
            addr = line * cfg.line_bytes + 4 * rng.randrange(lw)
            pool = fp_edges if op == AtomOp.FADD else [0, 1, 0x7FFFFFFF, 0x80000000]
            b = rng.choice(pool + [rng.getrandbits(32)])
            c = rng.getrandbits(32)
            if op == AtomOp.CAS and rng.random() < 0.5:
                b = int(ref.words[addr // 4])  # generated in order, so it often matches
            req = dict(kind=kind, addr=addr, op=op.value, b=b, c=c)
        elif kind == MemKind.WRITE:
            req = dict(kind=kind, addr=line * cfg.line_bytes,
                       wdata=[rng.getrandbits(32) for _ in range(lw)],
                       be=rng.choice([(1 << 4 * lw) - 1, rng.getrandbits(4 * lw)]))
        else:
            req = dict(kind=kind, addr=line * cfg.line_bytes)
        req["tag"] = i & 0xFF
        expected = ref.execute(**{k: v for k, v in req.items() if k != "tag"})
        requests.append((req, expected))
    got = []

    async def sender(ctx):
        for req, _ in requests:
            def setter(ctx, p, req=req):
                set_request(ctx, p, req["kind"], req["addr"], wdata=req.get("wdata"),
                            be=req.get("be", 0), op=req.get("op", 0), b=req.get("b", 0),
                            c=req.get("c", 0), tag=req["tag"], line_words=lw)
            await send(ctx, dut.bus.req, setter)
            for _ in range(rng.choice([0, 0, 0, 1, 3])):
                await ctx.tick()

    async def receiver(ctx):
        while len(got) < len(requests):
            ready = rng.random() < 0.7
            ctx.set(dut.bus.resp.ready, ready)
            if ready and ctx.get(dut.bus.resp.valid):
                got.append(([ctx.get(dut.bus.resp.payload.rdata[i]) for i in range(lw)],
                            ctx.get(dut.bus.resp.payload.tag)))
            await ctx.tick()
        for i in range(8):
            final.append([int(ctx.get(dut.mem.data[i])) >> 32 * w & 0xFFFFFFFF
                          for w in range(lw)])

    final = []
    run_sim(dut, sender, receiver)
    assert len(got) == len(requests)
    for n, ((req, expected), (rdata, tag)) in enumerate(zip(requests, got, strict=True)):
        assert tag == req["tag"], f"response {n} out of order"
        if expected is not None:
            for w, e in enumerate(expected):
                if e is not None:
                    assert rdata[w] == e, f"request {n} {req}: word {w} {rdata[w]:#x} != {e:#x}"
    for i in range(8):
        assert final[i] == ref.line(i * cfg.line_bytes), f"line {i}"


def test_reference_fadd_is_numerics() -> None:
    """The reference used above takes fadd from the shared numerics (sanity of the oracle)."""
    ref = RefMemory(64, 4)
    ref.words[0] = 0x3F800000
    assert ref.atomic(0, AtomOp.FADD, 0x40000000, 0) == 0x3F800000
    assert ref.words[0] == int(nx.fadd(np.uint32(0x3F800000), np.uint32(0x40000000)))
    assert ref.words[0] == 0x40400000
