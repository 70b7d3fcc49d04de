"""Memory model: fixed latency, in-order responses, byte enables, atomics against a reference,
the backdoor port, and the DRAM timing (latency, bandwidth cap, back-pressure at the in-flight
limit) cycle by cycle against rtlsim/dram_model.py."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rtlgpu_helpers import RefMemory, run_sim, send, set_request
from simtgpu.arch.config import ConfigError, MemoryConfig, get_config, memory_settings
from simtgpu.rtl.configs import RtlConfigError, get_rtl_config
from simtgpu.rtl.signatures import AtomOp, MemKind
from simtgpu.rtlsim.dram_model import DramTiming
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
    ops = [op for op in AtomOp if op != AtomOp.FADD or dut.fadd_supported]
    float_ops = (AtomOp.FADD, AtomOp.FMIN, AtomOp.FMAX)
    fp_edges = [0, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000,
                0x00000001, 0x7F7FFFFF]
    requests = []
    for i in range(300):
        kind = rng.choice([MemKind.READ, MemKind.WRITE, MemKind.ATOMIC])
        line = rng.randrange(6)  # few lines, so accesses collide
        if kind == MemKind.ATOMIC:
            op = rng.choice(ops)
            addr = line * cfg.line_bytes + 4 * rng.randrange(lw)
            pool = fp_edges if op in float_ops else [0, 1, 0x7FFFFFFF, 0x80000000]
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


# --- DRAM timing: the RTL against the reference of rtlsim/dram_model.py, cycle by cycle ------

def _timed_cfg(memory: MemoryConfig, name: str = "tiny"):
    return get_rtl_config(name, sim_memory_bytes=4096).with_(memory=memory)


def _drive_timing(dut, cfg, requests, ready_p: float, seed: int, program=None):
    """Offer ``requests`` ((kind, gap before it)) and take responses with probability
    ``ready_p`` per cycle, checking ``req.ready`` and ``resp.valid`` against
    :class:`DramTiming` every cycle; returns (accept cycles, response cycles)."""
    rng = random.Random(seed)
    memory = program or cfg.memory
    model = DramTiming.from_config(memory, cfg.line_bytes)
    lw = cfg.line_words
    accepted, answered = [], []

    async def tb(ctx):
        if program is not None:
            ctx.set(dut.timing.latency, program.latency)
            ctx.set(dut.timing.cycles_per_line, program.cycles_per_line(cfg.line_bytes))
            ctx.set(dut.timing.max_inflight, program.inflight_limit)
            ctx.set(dut.timing.we, 1)
            await ctx.tick()
            ctx.set(dut.timing.we, 0)
        i, gap = 0, requests[0][1] if requests else 0
        t = 0
        while len(answered) < len(requests):
            offer = i < len(requests) and gap == 0
            kind = requests[i][0] if offer else MemKind.READ
            set_request(ctx, dut.bus.req.payload, kind, 64 * (i % 8), tag=i & 0xFF,
                        op=AtomOp.ADD, b=1, line_words=lw)
            ctx.set(dut.bus.req.valid, offer)
            take = rng.random() < ready_p
            ctx.set(dut.bus.resp.ready, take)
            ready, valid = ctx.get(dut.bus.req.ready), ctx.get(dut.bus.resp.valid)
            assert ready == model.req_ready(), f"cycle {t}: req.ready {ready}"
            assert valid == model.resp_valid(), f"cycle {t}: resp.valid {valid}"
            fire, got = offer and ready, valid and take
            if got:
                assert ctx.get(dut.bus.resp.payload.tag) == len(answered) & 0xFF
                answered.append(t)
            model.clock(fire, kind == MemKind.ATOMIC, got)
            if fire:
                accepted.append(t)
                i += 1
                gap = requests[i][1] if i < len(requests) else 0
            elif not offer:
                gap -= 1
            await ctx.tick()
            t += 1
            assert t < 20000, "the memory model stopped answering"

    run_sim(dut, tb)
    return accepted, answered


@pytest.mark.parametrize("memory,ready_p,seed", [
    (MemoryConfig("ideal", 4), 0.8, 1),
    (MemoryConfig("vortexlike", 24, 0, 8), 0.9, 2),
    (MemoryConfig("bw", 30, 4, 12), 1.0, 3),     # 16 B lines at 4 B/cycle: 4 cycles each
    (MemoryConfig("bw-bp", 9, 8, 5), 0.5, 4),    # back-pressure and a bandwidth cap
])
def test_dram_timing_matches_reference(memory: MemoryConfig, ready_p: float, seed: int) -> None:
    cfg = _timed_cfg(memory)
    rng = random.Random(seed)
    kinds = [MemKind.READ, MemKind.READ, MemKind.WRITE, MemKind.ATOMIC]
    requests = [(rng.choice(kinds), rng.choice([0, 0, 0, 1, 5])) for _ in range(120)]
    accepted, answered = _drive_timing(MemoryModel(cfg), cfg, requests, ready_p, seed)
    assert len(answered) == len(requests)
    assert all(b - a >= 2 for a, b in zip(accepted, answered, strict=True))


def test_dram_latency_bandwidth_and_backpressure_closed_form() -> None:
    """Hand-computed: a back-to-back read stream at 30 cycles and 4 cycles per line is
    answered at 30, 34, 38, ... from the first acceptance; with 5 in flight the port stops
    accepting after 5 requests until the first response is taken."""
    memory = MemoryConfig("bw", 30, 4, 5)
    cfg = _timed_cfg(memory)
    assert memory.cycles_per_line(cfg.line_bytes) == 4
    reqs = [(MemKind.READ, 0)] * 12
    accepted, answered = _drive_timing(MemoryModel(cfg), cfg, reqs, 1.0, 0)
    assert answered[:5] == [30 + 4 * i for i in range(5)]
    # The 6th request waits for the first response (cycle 30) to free an entry.
    assert accepted[:5] == [0, 1, 2, 3, 4] and accepted[5] == 31
    # From then on the channel and the in-flight bound interleave; every response keeps
    # the 4-cycle spacing of the channel or more.
    assert all(b - a >= 4 for a, b in zip(answered, answered[1:], strict=False))
    assert DramTiming(30, 4, 5).stream(12) == answered


def test_dram_timing_port_reprograms() -> None:
    """One model built with ideal timing, reprogrammed at run time, behaves as the new
    setting (this is how one Verilator build serves every setting)."""
    cfg = get_rtl_config("tiny", sim_memory_bytes=4096)
    target = MemoryConfig("realistic-ish", 20, 8, 6)
    reqs = [(MemKind.READ, 0)] * 20
    _, answered = _drive_timing(MemoryModel(cfg), cfg, reqs, 1.0, 0, program=target)
    # The tb spends one cycle programming, so cycle 0 is the first cycle after it.
    assert answered[0] == 20 and answered[1] == 22


def test_memory_settings_named() -> None:
    small = get_config("small")
    s = memory_settings(small)
    assert (s["ideal"].latency, s["ideal"].inflight_limit) == (small.mem_latency,
                                                               small.mem_latency + 3)
    assert s["realistic"].latency == 100
    assert s["realistic"].peak_bytes_per_cycle(4 * small.lanes) == 16
    assert memory_settings(get_config("full"))["realistic"].peak_bytes_per_cycle(128) == 64
    assert s["vortex"].latency == 24
    assert small.with_memory("ideal") == small
    with pytest.raises(ConfigError, match="unknown memory setting 'fast'"):
        small.with_memory("fast")
    with pytest.raises(ConfigError, match="bytes_per_cycle must be a power of two"):
        MemoryConfig("x", 10, 12)
    deep = small.with_memory(MemoryConfig("deep", 10, 0, 500))
    assert get_rtl_config(deep).mem_queue_depth == 500  # sized for its own setting
    with pytest.raises(RtlConfigError, match="mem_queue_depth"):
        get_rtl_config(deep, mem_queue_depth=64)
    with pytest.raises(ConfigError, match="must be below"):
        small.with_memory(MemoryConfig("slow", 4096, 1, 1024))
