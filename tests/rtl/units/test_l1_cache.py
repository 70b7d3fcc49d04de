"""The L1 data cache (rtl/l1_cache.py) on Verilator, cycle by cycle against a Python model
written from its contract (the module docstring): hits, misses, MSHR merging, MSHR-full
stalls, eviction, write-through with no write-allocate, atomics bypassing (and invalidating),
``invalidate``, responses in request order.

The model runs in the loop with a random environment: an initiator that offers reads, stores
and atomics over a few lines (so sets conflict and lines are evicted) and a memory below that
executes requests in order after a random latency. Independently of the model, every response
the initiator takes is checked against a flat reference memory updated in request order:
a single initiator must see its own requests as if executed one after another.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from simtgpu.rtl.fpu import ATOMIC_LATENCY
from simtgpu.rtl.l1_cache import L1Cache
from simtgpu.rtl.signatures import AtomOp
from simtgpu.sim.numerics import fadd
from simtgpu.verification.units import build_unit
from test_rtl_units_stateful import (
    M32,
    Masked,
    Vector,
    check_cycles,
    pack,
    pack_fields,
    run_closed_loop,
    unpack,
)
from units_harness import SEED

READ, WRITE, ATOMIC = 0, 1, 2
ATOM_ADD, ATOM_EXCH, ATOM_CAS = AtomOp.ADD.value, AtomOp.EXCH.value, AtomOp.CAS.value
ATOM_FADD = AtomOp.FADD.value
ATOM_W = AtomOp.as_shape().width  # the request's atom_op field

PARAMS = {"line_words": 4, "size_bytes": 256, "ways": 2, "mshrs": 2, "rob_depth": 4,
          "tag_bits": 4}


def _req_fields(lw: int, tag_bits: int, r: dict) -> list[tuple[int, int]]:
    return [(r["kind"], 2), (r["addr"], 32), (pack(r["wdata"], 32), 32 * lw), (r["be"], 4 * lw),
            (r["op"], ATOM_W), (r["b"], 32), (r["c"], 32), (r["tag"], tag_bits)]


def down_payload(lw: int, tag_bits: int, r: dict) -> int:
    """A request's payload as the cache sends it down; a READ's write data and byte enables
    are not compared (the memory ignores them, and an executing cache's atomic that fetches
    its line carries its own there)."""
    word = pack_fields(_req_fields(lw, tag_bits, r))
    if r["kind"] != READ:
        return word
    field = ((1 << 36 * lw) - 1) << 34  # wdata and be, after kind (2) and addr (32)
    return Masked(word, ~field)


def _decode_req(word: int, lw: int, tag_bits: int) -> dict:
    out, pos = {}, 0
    for name, width in [("kind", 2), ("addr", 32), ("wdata", 32 * lw), ("be", 4 * lw),
                        ("op", ATOM_W), ("b", 32), ("c", 32), ("tag", tag_bits)]:
        out[name] = (word >> pos) & ((1 << width) - 1)
        pos += width
    out["wdata"] = unpack(out["wdata"], 32, lw)
    return out


def merge_bytes(old: list[int], new: list[int], be: int) -> list[int]:
    out = []
    for i, (o, n) in enumerate(zip(old, new, strict=True)):
        m = sum(0xFF << (8 * b) for b in range(4) if be >> (4 * i + b) & 1)
        out.append((o & ~m) | (n & m))
    return out


class L1Model:
    """The cache's contract, one clock cycle per :meth:`step`; with ``atomics="execute"``
    (a bank of the L2) atomics are performed on the cached line, fetched first if absent."""

    # cycles an atomic waits with its line read: one for the atomic unit's operand register
    # (the old word comes from the line's block RAM), atom.fadd then the adder's latency, and
    # one for the new word's register
    ATOM_WAIT = 2
    FADD_WAIT = ATOMIC_LATENCY + 2

    def __init__(self, c: L1Cache):
        self.c = c
        self.execute = c.atomics == "execute"
        self.atom_wait = 0
        self.read_at = None  # (set, way) the data memory was read at for the last cycle's request
        self.lw, self.ways, self.sets = c.line_words, c.ways, c.sets
        self.ob, self.sb = c.offset_bits, c.set_bits
        self.amask = (1 << c.addr_bits) - 1  # the cache takes addresses modulo its memory's
        self.valid = [[False] * self.ways for _ in range(self.sets)]
        self.tags = [[0] * self.ways for _ in range(self.sets)]
        self.data = [[[0] * self.lw for _ in range(self.ways)] for _ in range(self.sets)]
        self.rr = [0] * self.sets
        self.mshr: list[int | None] = [None] * c.mshrs
        self.stale = [False] * c.mshrs  # outstanding across an invalidate
        rd = c.rob_depth
        self.rob = [{"valid": False, "ready": False, "fill": False, "wait": 0,
                     "data": [0] * self.lw, "tag": 0, "was_hit": False} for _ in range(rd)]
        self.head = self.tail = self.count = 0
        # a free entry in this cycle, worked out in the last one: from the count and a
        # retirement then, the acceptance then bounded by that cycle's room (rtl/l1_cache.py)
        self.room_q = True
        self.peak_mshrs = 0  # most MSHRs busy at once (how deep a bench reached)
        self.dq: list[dict] = []
        self.route: list[dict] = []
        # the response from below taken last cycle, taking effect now: its route entry, its
        # line's words and (a fill) the victim way chosen as it arrived
        self.got: tuple[dict, list[int], int, bool] | None = None
        self.stats = {k: 0 for k in ("hit", "miss", "merge", "mshr_full", "evict",
                                     "write_hit", "atomic_inval", "invalidate",
                                     "stale_fill", "atomic_fetch", "atomic_hit",
                                     "hit_after_miss")}

    def lookup(self, addr: int) -> tuple[int, int, int, int | None]:
        line = (addr & self.amask) >> self.ob
        s = line % self.sets
        tag = line >> self.sb
        way = next((w for w in range(self.ways) if self.valid[s][w] and self.tags[s][w] == tag),
                   None)
        return line, s, tag, way

    def step(self, v: Vector) -> Vector:
        c, lw = self.c, self.lw
        req = _decode_req(v["up__req__payload"], lw, c.tag_bits)
        line, s, _tag, way = self.lookup(req["addr"])
        hit = way is not None
        pend = next((i for i, ln in enumerate(self.mshr) if ln == line and not self.stale[i]),
                    None)
        free = next((i for i, ln in enumerate(self.mshr) if ln is None), None)
        fill = bool(self.got and self.got[0]["fill"])
        room_q = self.room_q and not fill  # the RTL's register
        room = room_q and not v["invalidate"]
        is_read = req["kind"] == READ
        is_atomic = req["kind"] == ATOMIC
        new_miss = is_read and not hit and pend is None
        valid = bool(v["up__req__valid"])
        fetch = self.execute and valid and is_atomic and room and not hit and pend is None \
            and free is not None
        atom_ready = True
        read_at = (s, way if hit else 0)
        if self.execute:  # the atomic waits for its line: read in the previous cycle
            line_ok = self.read_at == read_at
            start = valid and is_atomic and room and hit and pend is None and line_ok
            need = self.FADD_WAIT if start and req["op"] == ATOM_FADD else self.ATOM_WAIT
            atom_ready = line_ok and self.atom_wait == need
            self.atom_wait = self.atom_wait + 1 if start and not atom_ready else 0
        self.read_at = read_at if valid else None  # (a read for no request is not waited on)
        if is_read:
            can = room and (hit or pend is not None or free is not None)
        elif is_atomic and self.execute:
            can = room and hit and pend is None and atom_ready
        else:
            can = room and pend is None
        fire = valid and can
        line_miss = new_miss or (self.execute and is_atomic and not hit and pend is None)
        head = self.rob[self.head]
        resp_valid = head["valid"] and head["ready"]
        out = {
            "up__req__ready": int(can),
            "up__resp__valid": int(resp_valid),
            "up__resp__payload": pack_fields([(pack(head["data"], 32), 32 * lw),
                                              (head["tag"], c.tag_bits)]) if resp_valid else None,
            "down__req__valid": int(bool(self.dq)),
            "down__req__payload": down_payload(lw, c.tag_bits, self.dq[0])
            if self.dq else 0,
            "down__resp__ready": 1,
            "hit": int(fire and is_read and hit),
            "miss": int((fire and new_miss) or fetch),
            "merge": int(fire and is_read and not hit and pend is not None),
            "mshr_full": int(valid and room and line_miss and free is None),
            "idle": int(self.count == 0 and not self.dq and not self.route and not self.got),
        }
        for k in ("hit", "miss", "merge", "mshr_full"):
            self.stats[k] += out[k]

        # --- the clock edge ---
        if resp_valid and v["up__resp__ready"]:
            head["valid"] = False
            self.head = (self.head + 1) % c.rob_depth
        if self.dq and v["down__req__ready"]:
            self.dq.pop(0)
        if self.got:  # the response taken last cycle takes effect
            r, rdata, victim, any_inval = self.got
            self.got = None
            if r["fill"] and self.stale[r["mshr"]]:
                self.stats["stale_fill"] += 1
                self.mshr[r["mshr"]] = None
            elif r["fill"]:
                fl = self.mshr[r["mshr"]]
                fs = fl % self.sets
                if not any_inval:
                    self.stats["evict"] += 1
                    if self.ways > 1:
                        self.rr[fs] = (self.rr[fs] + 1) % self.ways
                self.valid[fs][victim] = True
                self.tags[fs][victim] = fl >> self.sb
                self.data[fs][victim] = list(rdata)
                self.mshr[r["mshr"]] = None
            if r["fill"]:
                for e in self.rob:
                    if e["valid"] and not e["ready"] and e["fill"] and e["wait"] == r["mshr"]:
                        e["ready"], e["data"] = True, list(rdata)
            else:
                e = self.rob[r["rob"]]
                e["ready"] = True
                if not r["keep"]:  # an executed atomic answers with its old word
                    e["data"] = [rdata[0]] + [0] * (lw - 1)  # an ack: its first word
        if v["down__resp__valid"]:  # taken now; its victim chosen from the set as it is now
            r = self.route.pop(0)
            fs = (self.mshr[r["mshr"]] or 0) % self.sets
            inval = [w for w in range(self.ways) if not self.valid[fs][w]]
            self.got = (r, unpack(v["down__resp__payload"], 32, lw),
                        inval[0] if inval else self.rr[fs], bool(inval))
        if fetch:
            self.stats["atomic_fetch"] += 1
            self.mshr[free] = line
            self.stale[free] = False
            self.dq.append(dict(req, kind=READ, addr=line << self.ob))
            self.route.append({"fill": True, "keep": False, "mshr": free, "rob": self.tail})
        if fire:
            e = self.rob[self.tail]
            # a read hit at the head next cycle (the buffer empty, or its one entry leaving)
            # in an entry a read miss held before: the flags worked out a cycle ahead must
            # be the hit's, not what the entry's last occupant left
            at_head = self.count == 0 or (self.count == 1 and resp_valid
                                          and v["up__resp__ready"])
            if is_read and hit and at_head and e["fill"] and not e["was_hit"]:
                self.stats["hit_after_miss"] += 1
            e["was_hit"] = hit
            e.update(valid=True, ready=is_read and hit, fill=is_read,
                     wait=pend if pend is not None else (free if free is not None else 0),
                     data=list(self.data[s][way]) if hit else [0] * lw, tag=req["tag"])
            if new_miss:
                self.mshr[free] = line
                self.stale[free] = False
            if not is_read or new_miss:
                down = dict(req)
                if new_miss:
                    down["addr"] = line << self.ob
                keep = self.execute and is_atomic
                if keep:  # the atomic's new word, written through
                    word = (req["addr"] >> 2) % lw
                    old = self.data[s][way][word]
                    new = apply_atomic(old, req)
                    be = 0xF << (4 * word)
                    self.data[s][way] = merge_bytes(self.data[s][way], [new] * lw, be)
                    down.update(kind=WRITE, wdata=[new] * lw, be=be)
                    e["data"] = [old] + [0] * (lw - 1)
                    self.stats["atomic_hit"] += 1
                self.dq.append(down)
                self.route.append({"fill": new_miss, "keep": keep, "mshr": free or 0,
                                   "rob": self.tail})
            if req["kind"] == WRITE and hit:
                self.data[s][way] = merge_bytes(self.data[s][way], req["wdata"], req["be"])
                self.stats["write_hit"] += 1
            if req["kind"] == ATOMIC and hit and not self.execute:
                self.valid[s][way] = False
                self.stats["atomic_inval"] += 1
            self.tail = (self.tail + 1) % c.rob_depth
        retired = bool(resp_valid and v["up__resp__ready"])
        if c.rob_depth >= 4:
            bound = c.rob_depth - 1 if room_q else c.rob_depth
            self.room_q = retired or self.count != bound
        else:
            self.room_q = self.count + fire - retired != c.rob_depth
        if fire and not (resp_valid and v["up__resp__ready"]):
            self.count += 1
        elif resp_valid and v["up__resp__ready"] and not fire:
            self.count -= 1
        if v["invalidate"]:
            self.stats["invalidate"] += 1
            self.valid = [[False] * self.ways for _ in range(self.sets)]
            self.stale = [ln is not None for ln in self.mshr]
        self.peak_mshrs = max(self.peak_mshrs, sum(x is not None for x in self.mshr))
        return out


class Below:
    """Memory under the cache: in order, a random latency, executes requests on arrival;
    ``2**addr_bits`` bytes, addresses past the end wrap (as the RTL's memory model's do)."""

    def __init__(self, rng: random.Random, lw: int, latency: tuple[int, int] = (1, 9),
                 addr_bits: int = 32):
        self.rng, self.lw, self.latency = rng, lw, latency
        self.mask = (1 << addr_bits) - 1
        self.junk = random.Random(1)  # its own stream: the traffic stays as it was
        self.words: dict[int, int] = {}
        self.queue: list[tuple[int, list[int], int]] = []

    def word(self, a: int) -> int:
        a &= self.mask
        return self.words.setdefault(a, (a * 2654435761) & M32)

    def put(self, a: int, w: int) -> None:
        self.words[a & self.mask] = w

    def execute(self, t: int, r: dict) -> None:
        lw = self.lw
        base = r["addr"] & ~(4 * lw - 1)
        # an acknowledgement's words above the first carry nothing meaningful
        # (mem_response_layout): junk here, which the cache must not pass on
        junk = [self.junk.getrandbits(32) for _ in range(lw - 1)]
        if r["kind"] == ATOMIC:
            old = self.word(r["addr"])
            self.put(r["addr"], apply_atomic(old, r))
            data = [old] + junk
        elif r["kind"] == WRITE:
            cur = [self.word(base + 4 * i) for i in range(lw)]
            for i, w in enumerate(merge_bytes(cur, r["wdata"], r["be"])):
                self.put(base + 4 * i, w)
            data = [0] + junk
        else:
            data = [self.word(base + 4 * i) for i in range(lw)]
        due = max(t + self.rng.randrange(*self.latency), self.queue[-1][0] if self.queue else 0)
        self.queue.append((due, data, r["tag"]))


def apply_atomic(old: int, r: dict) -> int:
    if r["op"] == ATOM_FADD:
        return int(fadd(np.uint32(old), np.uint32(r["b"])))
    if r["op"] == ATOM_ADD:
        return (old + r["b"]) & M32
    if r["op"] == ATOM_EXCH:
        return r["b"]
    return r["c"] if old == r["b"] else old  # CAS


def random_traffic(model, lw: int, tb: int, rng: random.Random, lines: list[int],
                   cycles: int, ops: tuple[int, ...] = (ATOM_ADD, ATOM_EXCH, ATOM_CAS),
                   latency: tuple[int, int] = (1, 9), invalidate: float = 0.01,
                   addr_bits: int = 32, kinds: tuple[float, float, float] = (0.6, 0.27, 0.13),
                   in_flight: int | None = None, offer: float = 0.75,
                   ) -> tuple[list[Vector], list[Vector], dict]:
    """``cycles`` of the cache ``model`` in a random environment: an initiator offering reads,
    stores and atomics (``ops``) over ``lines`` (the first 4 hot: merges), a memory below
    (:class:`Below`, answering after ``randrange(*latency)`` cycles and in order), random
    ``resp.ready`` and ``invalidate`` (in that share of the cycles). Every response taken is
    checked against a flat reference memory updated in request order (both memories of
    ``2**addr_bits`` bytes, wrapping past the end). ``kinds``: the shares of reads, stores
    and atomics among the requests. ``in_flight``: at most that many requests accepted and
    not answered (as the LSU keeps to ``lsu_depth``), none offered beyond. ``offer``: the
    chance of a new request in a cycle without one. Returns the stimulus,
    the model's outputs and counts (``checked``: reads compared)."""
    below = Below(rng, lw, latency, addr_bits)
    ref = Below(random.Random(0), lw, addr_bits=addr_bits)  # the flat reference (no queue)
    expected: list[list[int] | int | None] = []  # per accepted request, in order
    state: dict = {"cur": None, "tag": 0, "resp": 0, "checked": 0}

    def new_request() -> dict:
        ln = rng.choice(lines[:4] if rng.random() < 0.3 else lines)  # hot lines: merges
        kind = rng.choices([READ, WRITE, ATOMIC], kinds)[0]
        addr = ln * 4 * lw + (4 * rng.randrange(lw) if kind == ATOMIC else 0)
        state["tag"] = (state["tag"] + 1) % (1 << tb)
        op = rng.choice(ops)
        b = (int(np.float32(rng.uniform(-4, 4)).view(np.uint32)) if op == ATOM_FADD
             else rng.getrandbits(2))
        return {"kind": kind, "addr": addr, "wdata": [rng.getrandbits(32) for _ in range(lw)],
                "be": rng.choice([(1 << 4 * lw) - 1, rng.getrandbits(4 * lw)]),
                "op": op, "b": b, "c": rng.getrandbits(32), "tag": state["tag"]}

    def env(t: int, last: Vector | None) -> Vector:
        if last is not None:
            prev = state["vec"]
            if prev["down__req__ready"] and last["down__req__valid"]:
                below.execute(t - 1, _decode_req(last["down__req__payload"], lw, tb))
            if prev["down__resp__valid"] and last["down__resp__ready"]:
                below.queue.pop(0)
            if prev["up__req__valid"] and last["up__req__ready"]:
                r = state["cur"]
                base = r["addr"] & ~(4 * lw - 1)
                if r["kind"] == READ:
                    expected.append([ref.word(base + 4 * i) for i in range(lw)])
                elif r["kind"] == WRITE:
                    cur = [ref.word(base + 4 * i) for i in range(lw)]
                    for i, w in enumerate(merge_bytes(cur, r["wdata"], r["be"])):
                        ref.put(base + 4 * i, w)
                    expected.append(None)
                else:
                    old = ref.word(r["addr"])
                    ref.put(r["addr"], apply_atomic(old, r))
                    expected.append(old)
                state["cur"] = None
            if last["up__resp__valid"] and prev["up__resp__ready"]:
                got = unpack(last["up__resp__payload"], 32, lw)
                want = expected[state["resp"]]
                if isinstance(want, list):
                    assert got == want, f"cycle {t - 1}: read {state['resp']} got {got} != {want}"
                    state["checked"] += 1
                elif isinstance(want, int):
                    assert got[0] == want, f"cycle {t - 1}: atomic old {got[0]:#x} != {want:#x}"
                state["resp"] += 1
        full = in_flight is not None and len(expected) - state["resp"] >= in_flight
        if state["cur"] is None and not full and rng.random() < offer:
            state["cur"] = new_request()
        r = state["cur"]
        due = below.queue[0] if below.queue and below.queue[0][0] <= t else None
        vec = {
            "up__req__valid": int(r is not None),
            "up__req__payload": pack_fields(_req_fields(lw, tb, r)) if r is not None else 0,
            "up__resp__ready": int(rng.random() < 0.8),
            "down__req__ready": int(rng.random() < 0.7),
            "down__resp__valid": int(due is not None),
            "down__resp__payload": pack_fields([(pack(due[1], 32), 32 * lw), (due[2], tb)])
            if due is not None else 0,
            "invalidate": int(rng.random() < invalidate),
        }
        state["vec"] = vec
        return vec

    stim, want = run_closed_loop(model, env, cycles)
    return stim, want, state


def assert_l1_cases_reached(state: dict, st: dict) -> None:
    """What 4,000 cycles of :func:`random_traffic` on 20 lines of a small L1 (8 sets x 2 ways)
    must have exercised: every case of the contract, many times."""
    assert state["checked"] > 300, state
    # (floors under the least count over seeds 1 to 40: test_cache_bench_cases_for_any_seed)
    assert st["hit"] > 200 and st["miss"] > 100 and st["merge"] > 10, st
    assert st["evict"] > 30 and st["write_hit"] > 30 and st["atomic_inval"] > 10, st
    assert st["mshr_full"] > 0 and st["invalidate"] > 10 and st["stale_fill"] > 0, st


def l1_traffic(cache: L1Cache, seed: int) -> tuple[list[Vector], list[Vector], L1Model]:
    """The main bench's stimulus and model outputs: 4,000 cycles over 20 lines in 8 sets x 2
    ways, its cases asserted (:func:`assert_l1_cases_reached`)."""
    rng = random.Random(seed + 70)
    model = L1Model(cache)
    lines = [rng.randrange(0x100, 0x400) for _ in range(20)]
    stim, want, state = random_traffic(model, cache.line_words, cache.tag_bits, rng, lines,
                                       4000)
    assert_l1_cases_reached(state, model.stats)
    return stim, want, model


def test_l1_cache_cycles() -> None:
    bld, cache = build_unit("l1_cache", lambda: L1Cache(**PARAMS))
    stim, want, _ = l1_traffic(cache, SEED)
    check_cycles("l1_cache", bld, stim, want, "units_l1_cache_cycles")


def test_l1_cache_aliases_past_its_memory() -> None:
    """The cache of a 4 KiB memory (``addr_bits=12``): an address and its aliases past the
    memory's end are one location below, so they are one line in the cache, one tag and one
    MSHR (a read of one alias hits or merges into the other's line and sees its stores).
    Each of 10 lines is offered under two random aliases of 16."""
    bld, cache = build_unit("l1_cache_alias", lambda: L1Cache(**PARAMS, addr_bits=12))
    rng = random.Random(SEED + 72)
    model = L1Model(cache)
    lines = [ln + 256 * rng.randrange(16) for ln in rng.sample(range(0x10, 0x100), 10)
             for _ in range(2)]
    stim, want, state = random_traffic(model, cache.line_words, cache.tag_bits, rng, lines,
                                       3000, addr_bits=12)
    st = model.stats
    assert state["checked"] > 300, state
    assert st["hit"] > 200 and st["merge"] > 20 and st["write_hit"] > 30, st
    check_cycles("l1_cache_alias", bld, stim, want, "units_l1_cache_alias_cycles")


def test_l1_cache_shallow_cycles() -> None:
    """A reorder buffer of two entries: each is used again within two requests, so a read
    hit often goes into an empty buffer, answering in the next cycle from an entry that a
    miss held before. Whether the head answers, and from where, is worked out a cycle ahead
    (rtl/l1_cache.py); what the entry's last occupant left must not show."""
    bld, cache = build_unit("l1_cache_shallow", lambda: L1Cache(**dict(PARAMS, rob_depth=2)))
    rng = random.Random(SEED + 73)
    model = L1Model(cache)
    lines = [rng.randrange(0x100, 0x400) for _ in range(6)]
    stim, want, state = random_traffic(model, cache.line_words, cache.tag_bits, rng, lines,
                                       3000, latency=(1, 5))
    st = model.stats
    assert state["checked"] > 300 and st["hit_after_miss"] > 15, (state, st)
    check_cycles("l1_cache_shallow", bld, stim, want, "units_l1_cache_shallow_cycles")


DEEP = {"line_words": 4, "size_bytes": 1024, "ways": 4, "mshrs": 32, "rob_depth": 64,
        "tag_bits": 6}
"""A cache as deep as ``small``'s L1 (32 MSHRs, 64 requests in flight), on a small array."""


def deep_traffic(cache: L1Cache, seed: int) -> tuple[list[Vector], list[Vector], L1Model]:
    """The deep bench's stimulus and model outputs, its cases asserted."""
    rng = random.Random(seed + 71)
    model = L1Model(cache)
    lines = [rng.randrange(0x100, 0x800) for _ in range(256)]
    stim, want, state = random_traffic(model, cache.line_words, cache.tag_bits, rng, lines,
                                       4000, latency=(60, 121), invalidate=0.004,
                                       kinds=(0.85, 0.1, 0.05))
    st = model.stats
    assert state["checked"] > 300, state
    assert st["miss"] > 300 and st["merge"] > 20 and st["hit"] > 20, st
    assert st["mshr_full"] > 0 and st["stale_fill"] > 0 and st["write_hit"] > 10, st
    assert model.peak_mshrs == DEEP["mshrs"], model.peak_mshrs
    return stim, want, model


def test_l1_cache_deep_cycles() -> None:
    """Many misses in flight at once: memory 60 to 120 cycles away (a DRAM's latency) and 256
    lines over 16 sets, so every MSHR fills and reads wait for one (the MSHR and
    reorder-buffer indices past 16 and 32 that the shallow bench never reaches); fewer
    invalidations than there, so that lines live long enough to be hit. Reads are most of
    the traffic, so that the MSHRs fill whatever ``SIMTGPU_SEED`` (stores and atomics wait in
    order behind the misses, and with the other benches' mix over 96 lines most seeds never
    had 32 lines missing at once; test_cache_bench_cases_for_any_seed checks the seeds)."""
    bld, cache = build_unit("l1_cache_deep", lambda: L1Cache(**DEEP))
    stim, want, _ = deep_traffic(cache, SEED)
    check_cycles("l1_cache_deep", bld, stim, want, "units_l1_cache_deep_cycles")


@pytest.mark.long  # the models alone, 40 seeds of each bench: about a minute
@pytest.mark.parametrize("bench", ["l1", "deep", "l2", "mem_path_no_l1"])
def test_cache_bench_cases_for_any_seed(bench: str) -> None:
    """The cache benches reach the cases they assert under any ``SIMTGPU_SEED``: their
    traffic on the models (no RTL) for seeds 1 to 40, each bench's assertions as in the bench.
    (Their floors sit under the least count seen over these seeds.)"""
    # (imported here: test_l2_cache and test_mem_path import this module)
    from simtgpu.rtl.l2_cache import L2Cache
    from test_l2_cache import PARAMS as L2_PARAMS
    from test_l2_cache import l2_traffic
    from test_mem_path import no_l1_traffic
    for seed in range(1, 41):
        if bench == "l1":
            l1_traffic(L1Cache(**PARAMS), seed)
        elif bench == "deep":
            deep_traffic(L1Cache(**DEEP), seed)
        elif bench == "mem_path_no_l1":
            no_l1_traffic(seed)
        else:
            l2_traffic(L2Cache(**L2_PARAMS), seed)

