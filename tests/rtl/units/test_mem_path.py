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
from simtgpu.verification.units import build_unit
from test_l1_cache import L1Model, assert_l1_cases_reached, random_traffic
from test_rtl_units_stateful import Vector, check_cycles
from units_harness import SEED

PORTS = ("up__req__ready", "up__resp__valid", "up__resp__payload", "down__req__valid",
         "down__req__payload", "down__resp__ready", "idle")
"""What the bench compares every cycle (the counters' events are the L1's strobes and a
latency FIFO, checked by the GPU's counter tests)."""


class BufferedL1Model:
    """:class:`L1Model` behind a queue of at most two requests (the oldest at the cache's
    port; ``up.req.ready`` is the queue's having room), its ``invalidate`` a cycle late."""

    def __init__(self, path: CoreMemPath):
        self.inner = L1Model(L1Cache(**path.l1_args))  # (a description, never elaborated)
        self.stats = self.inner.stats
        self.held: list[int] = []  # request payloads, oldest first
        self.invalidate = 0  # registered on the way to the cache

    def step(self, v: Vector) -> Vector:
        out = self.inner.step(dict(v, up__req__valid=int(bool(self.held)),
                                   up__req__payload=self.held[0] if self.held else 0,
                                   invalidate=self.invalidate))
        taken = bool(self.held) and bool(out["up__req__ready"])
        room = len(self.held) < 2
        out = dict(out, up__req__ready=int(room),
                   idle=int(out["idle"] and not self.held))
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
        if self.held and v["down__req__ready"]:
            self.held.pop(0)
        if v["up__req__valid"] and room:
            self.held.append(v["up__req__payload"])
        return out


def test_mem_path_without_l1_cycles() -> None:
    """With no L1 (``GpuConfig.l1`` None) the path is the request buffer alone."""
    cfg = get_rtl_config("tiny").with_caches(l1=False)
    bld, _ = build_unit("mem_path_no_l1", lambda: CoreMemPath(cfg))
    rng = random.Random(SEED + 74)
    lines = [rng.randrange(0x100, 0x400) for _ in range(20)]
    stim, want, state = random_traffic(BufferOnlyModel(), cfg.line_words, cfg.tag_bits, rng,
                                       lines, 1500, addr_bits=cfg.memory_addr_bits)
    assert state["checked"] > 100, state
    assert sum(1 for v, w in zip(stim, want, strict=True)
               if v["up__req__valid"] and not w["up__req__ready"]) > 20  # the buffer fills
    check_cycles("mem_path_no_l1", bld, stim, want, "units_mem_path_no_l1_cycles")


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
