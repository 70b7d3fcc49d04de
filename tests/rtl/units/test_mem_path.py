"""A core's memory path (rtl/mem_path.py) on Verilator, cycle by cycle against a model
written from its contract: the two-entry skid buffer requests enter (a queue of two, as
test_skid_buffer's) in front of the L1 of test_l1_cache's model, ``invalidate`` reaching the
cache a cycle later; without an L1, the buffer alone in front of the memory.

The RTL's L1 decides on lookups kept up to date in the buffer's entries (``lookahead``); the
model looks each request up in the cycle it is at the cache's port, so a lookup brought up to
date wrongly (a fill, an eviction, an MSHR taken or freed, a line an atomic drops, an
invalidation missed) shows as a different decision. The random environment is the L1
bench's (:func:`test_l1_cache.random_traffic`): every response is also checked against a flat
memory updated in request order.
"""

from __future__ import annotations

import random

from simtgpu.arch.config import L1Config
from simtgpu.rtl.configs import get_rtl_config
from simtgpu.rtl.l1_cache import L1Cache
from simtgpu.rtl.mem_path import CoreMemPath
from simtgpu.rtl.signatures import MemKind, mem_perf_layout, mem_request_layout
from simtgpu.verification.units import build_unit
from test_l1_cache import L1Model, assert_l1_cases_reached, random_traffic
from test_rtl_units_stateful import Masked, Vector, check_cycles
from units_harness import SEED

PORTS = ("up__req__ready", "up__resp__valid", "up__resp__payload", "down__req__valid",
         "down__req__payload", "down__resp__ready", "idle", "perf")
"""What the bench compares every cycle. Of ``perf``, the events the path itself measures
(:class:`PathEvents`); the L1's strobes in it are the cache's, which test_l1_cache checks."""

PERF = mem_perf_layout()
KIND = mem_request_layout(1)["kind"]  # where a request payload's kind sits (any line width)


def kind_of(payload: int) -> MemKind:
    return MemKind((payload >> KIND.offset) & ((1 << KIND.width) - 1))


class PathEvents:
    """The model of ``perf``'s own events: each request leaving the buffer (taken by the
    cache, or by the interconnect) is timed, and each response taken by the LSU ends the
    oldest one (responses come in request order); ``load`` is a read's, with
    ``load_latency`` the cycles between the two. ``dram_read``/``dram_write``: a request
    sent down, by its kind."""

    def __init__(self) -> None:
        self.now = 0
        self.accepted: list[tuple[bool, int]] = []  # (a read, its cycle), oldest first
        self.quick_alone = 0  # answers the cycle after their acceptance, nothing older due

    def step(self, v: Vector, out: Vector, leaving: int | None) -> Masked:
        """This cycle's ``perf``: ``out`` the path's other outputs, ``leaving`` the payload of
        the request leaving the buffer now (None if none)."""
        value = care = 0

        def put(name: str, x: int) -> None:
            nonlocal value, care
            f = PERF[name]
            value |= x << f.offset
            care |= ((1 << f.width) - 1) << f.offset

        if leaving is not None:
            self.accepted.append((kind_of(leaving) == MemKind.READ, self.now))
        load = False
        if out["up__resp__valid"] and v["up__resp__ready"]:
            read, t = self.accepted.pop(0)
            self.quick_alone += self.now - t == 1 and not self.accepted
            load = read
            if read:
                put("load_latency", (self.now - t) % (1 << PERF["load_latency"].width))
        put("load", int(load))
        sent = out["down__req__valid"] and v["down__req__ready"]
        kind = kind_of(out["down__req__payload"]) if sent else None
        put("dram_read", int(bool(sent) and kind != MemKind.WRITE))
        put("dram_write", int(bool(sent) and kind == MemKind.WRITE))
        self.now += 1
        return Masked(value, care)


class BufferedL1Model:
    """:class:`L1Model` behind a queue of at most two requests (the oldest at the cache's
    port; ``up.req.ready`` is the queue's having room), its ``invalidate`` a cycle late."""

    def __init__(self, path: CoreMemPath):
        self.inner = L1Model(L1Cache(**path.l1_args))  # (a description, never elaborated)
        self.stats = self.inner.stats
        self.held: list[int] = []  # request payloads, oldest first
        self.invalidate = 0  # registered on the way to the cache
        self.events = PathEvents()

    def step(self, v: Vector) -> Vector:
        out = self.inner.step(dict(v, up__req__valid=int(bool(self.held)),
                                   up__req__payload=self.held[0] if self.held else 0,
                                   invalidate=self.invalidate))
        taken = bool(self.held) and bool(out["up__req__ready"])
        room = len(self.held) < 2
        out = dict(out, up__req__ready=int(room),
                   idle=int(out["idle"] and not self.held))
        out["perf"] = self.events.step(v, out, self.held[0] if taken else None)
        if taken:
            self.held.pop(0)
        if v["up__req__valid"] and room:
            self.held.append(v["up__req__payload"])
        self.invalidate = v["invalidate"]
        return {k: out[k] for k in PORTS}


class BufferOnlyModel:
    """The path without an L1: requests through a queue of at most two, responses straight
    up."""

    def __init__(self) -> None:
        self.held: list[int] = []
        self.events = PathEvents()

    def step(self, v: Vector) -> Vector:
        room = len(self.held) < 2
        out = {
            "up__req__ready": int(room),
            "up__resp__valid": v["down__resp__valid"],
            "up__resp__payload": v["down__resp__payload"],
            "down__req__valid": int(bool(self.held)),
            "down__req__payload": self.held[0] if self.held else 0,
            "down__resp__ready": v["up__resp__ready"],
            "idle": int(not self.held),
        }
        leaving = self.held[0] if self.held and v["down__req__ready"] else None
        out["perf"] = self.events.step(v, out, leaving)
        if self.held and v["down__req__ready"]:
            self.held.pop(0)
        if v["up__req__valid"] and room:
            self.held.append(v["up__req__payload"])
        return out


NO_L1 = get_rtl_config("tiny").with_caches(l1=False)


def no_l1_traffic(seed: int) -> list[tuple[list[Vector], list[Vector]]]:
    """The no-L1 bench's two runs (stimulus, model outputs), their cases asserted: dense
    traffic that fills the buffer, then sparse traffic whose answers come the cycle after
    their acceptance with nothing older in flight (the load-latency queue empty, the
    acceptance still in its register). The memory below bounds nothing, so the initiator
    keeps to the LSU's bound (``lsu_depth`` transactions in flight), which the load-latency
    queue is sized for."""
    cfg = NO_L1
    rng = random.Random(seed + 74)
    lines = [rng.randrange(0x100, 0x400) for _ in range(20)]
    stim, want, state = random_traffic(BufferOnlyModel(), cfg.line_words, cfg.tag_bits, rng,
                                       lines, 1500, addr_bits=cfg.memory_addr_bits,
                                       in_flight=cfg.lsu_depth)
    assert state["checked"] > 100, state
    assert sum(1 for v, w in zip(stim, want, strict=True)
               if v["up__req__valid"] and not w["up__req__ready"]) > 20  # the buffer fills
    model = BufferOnlyModel()
    sparse, sparse_want, state = random_traffic(
        model, cfg.line_words, cfg.tag_bits, rng, lines, 1500, addr_bits=cfg.memory_addr_bits,
        in_flight=cfg.lsu_depth, latency=(1, 3), offer=0.1)
    quick = model.events.quick_alone
    # (floors under the least count over seeds 1 to 40: test_cache_bench_cases_for_any_seed)
    assert state["checked"] > 50 and quick > 20, (state, quick)
    return [(stim, want), (sparse, sparse_want)]


def test_mem_path_without_l1_cycles() -> None:
    """With no L1 (``GpuConfig.l1`` None) the path is the request buffer alone
    (:func:`no_l1_traffic`)."""
    bld, _ = build_unit("mem_path_no_l1", lambda: CoreMemPath(NO_L1))
    for (stim, want), run in zip(no_l1_traffic(SEED), ("", "_sparse"), strict=True):
        check_cycles("mem_path_no_l1", bld, stim, want, f"units_mem_path_no_l1{run}_cycles")


def test_mem_path_l1_lookahead_cycles() -> None:
    cfg = get_rtl_config("tiny").with_(l1=L1Config(256, 2, 2, 4))  # 8 sets x 2 ways of 16 B
    bld, path = build_unit("mem_path", lambda: CoreMemPath(cfg))
    rng = random.Random(SEED + 73)
    model = BufferedL1Model(path)
    lines = [rng.randrange(0x100, 0x400) for _ in range(20)]
    stim, want, state = random_traffic(model, cfg.line_words, cfg.tag_bits, rng, lines, 4000,
                                       addr_bits=cfg.memory_addr_bits)
    assert_l1_cases_reached(state, model.stats)
    check_cycles("mem_path", bld, stim, want, "units_mem_path_cycles")
