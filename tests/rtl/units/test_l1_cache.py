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

import pytest
from simtgpu.rtl.l1_cache import L1Cache
from simtgpu.rtl.signatures import AtomOp
from simtgpu.verification.units import build_unit
from test_rtl_units_stateful import (
    M32,
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
ATOM_W = AtomOp.as_shape().width  # the request's atom_op field

PARAMS = {"line_words": 4, "size_bytes": 256, "ways": 2, "mshrs": 2, "rob_depth": 4,
          "tag_bits": 4}


def _req_fields(lw: int, tag_bits: int, r: dict) -> list[tuple[int, int]]:
    return [(r["kind"], 2), (r["addr"], 32), (pack(r["wdata"], 32), 32 * lw), (r["be"], 4 * lw),
            (r["op"], ATOM_W), (r["b"], 32), (r["c"], 32), (r["tag"], tag_bits)]


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
    """The cache's contract, one clock cycle per :meth:`step`."""

    def __init__(self, c: L1Cache):
        self.c = c
        self.lw, self.ways, self.sets = c.line_words, c.ways, c.sets
        self.ob, self.sb = c.offset_bits, c.set_bits
        self.valid = [[False] * self.ways for _ in range(self.sets)]
        self.tags = [[0] * self.ways for _ in range(self.sets)]
        self.data = [[[0] * self.lw for _ in range(self.ways)] for _ in range(self.sets)]
        self.rr = [0] * self.sets
        self.mshr: list[int | None] = [None] * c.mshrs
        self.stale = [False] * c.mshrs  # outstanding across an invalidate
        rd = c.rob_depth
        self.rob = [{"valid": False, "ready": False, "fill": False, "wait": 0,
                     "data": [0] * self.lw, "tag": 0} for _ in range(rd)]
        self.head = self.tail = self.count = 0
        self.dq: list[dict] = []
        self.route: list[dict] = []
        self.stats = {k: 0 for k in ("hit", "miss", "merge", "mshr_full", "evict",
                                     "write_hit", "atomic_inval", "invalidate",
                                     "stale_fill")}

    def lookup(self, addr: int) -> tuple[int, int, int, int | None]:
        line = addr >> self.ob
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
        fill = bool(v["down__resp__valid"] and self.route and self.route[0]["fill"])
        room = self.count != c.rob_depth and not fill and not v["invalidate"]
        is_read = req["kind"] == READ
        new_miss = is_read and not hit and pend is None
        if is_read:
            can = room and (hit or pend is not None or free is not None)
        else:
            can = room and pend is None
        fire = bool(v["up__req__valid"] and can)
        head = self.rob[self.head]
        resp_valid = head["valid"] and head["ready"]
        out = {
            "up__req__ready": int(can),
            "up__resp__valid": int(resp_valid),
            "up__resp__payload": pack_fields([(pack(head["data"], 32), 32 * lw),
                                              (head["tag"], c.tag_bits)]) if resp_valid else 0,
            "down__req__valid": int(bool(self.dq)),
            "down__req__payload": pack_fields(_req_fields(lw, c.tag_bits, self.dq[0]))
            if self.dq else 0,
            "down__resp__ready": 1,
            "hit": int(fire and is_read and hit),
            "miss": int(fire and new_miss),
            "merge": int(fire and is_read and not hit and pend is not None),
            "mshr_full": int(bool(v["up__req__valid"] and room and new_miss and free is None)),
            "idle": int(self.count == 0 and not self.dq),
        }
        for k in ("hit", "miss", "merge", "mshr_full"):
            self.stats[k] += out[k]

        # --- the clock edge ---
        if resp_valid and v["up__resp__ready"]:
            head["valid"] = False
            self.head = (self.head + 1) % c.rob_depth
        if self.dq and v["down__req__ready"]:
            self.dq.pop(0)
        if v["down__resp__valid"]:
            r = self.route.pop(0)
            rdata = unpack(v["down__resp__payload"], 32, lw)
            if r["fill"] and self.stale[r["mshr"]]:
                self.stats["stale_fill"] += 1
                self.mshr[r["mshr"]] = None
            elif r["fill"]:
                fl = self.mshr[r["mshr"]]
                fs = fl % self.sets
                inval = [w for w in range(self.ways) if not self.valid[fs][w]]
                victim = inval[0] if inval else self.rr[fs]
                if not inval:
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
                e["ready"], e["data"] = True, list(rdata)
        if fire:
            e = self.rob[self.tail]
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
                self.dq.append(down)
                self.route.append({"fill": new_miss, "mshr": free or 0, "rob": self.tail})
            if req["kind"] == WRITE and hit:
                self.data[s][way] = merge_bytes(self.data[s][way], req["wdata"], req["be"])
                self.stats["write_hit"] += 1
            if req["kind"] == ATOMIC and hit:
                self.valid[s][way] = False
                self.stats["atomic_inval"] += 1
            self.tail = (self.tail + 1) % c.rob_depth
        if fire and not (resp_valid and v["up__resp__ready"]):
            self.count += 1
        elif resp_valid and v["up__resp__ready"] and not fire:
            self.count -= 1
        if v["invalidate"]:
            self.stats["invalidate"] += 1
            self.valid = [[False] * self.ways for _ in range(self.sets)]
            self.stale = [ln is not None for ln in self.mshr]
        return out


class Below:
    """Memory under the cache: in order, a random latency, executes requests on arrival."""

    def __init__(self, rng: random.Random, lw: int):
        self.rng, self.lw = rng, lw
        self.words: dict[int, int] = {}
        self.queue: list[tuple[int, list[int]]] = []

    def word(self, a: int) -> int:
        return self.words.setdefault(a, (a * 2654435761) & M32)

    def execute(self, t: int, r: dict) -> None:
        lw = self.lw
        base = r["addr"] & ~(4 * lw - 1)
        if r["kind"] == ATOMIC:
            old = self.word(r["addr"])
            self.words[r["addr"]] = apply_atomic(old, r)
            data = [old] + [0] * (lw - 1)
        elif r["kind"] == WRITE:
            cur = [self.word(base + 4 * i) for i in range(lw)]
            for i, w in enumerate(merge_bytes(cur, r["wdata"], r["be"])):
                self.words[base + 4 * i] = w
            data = [0] * lw
        else:
            data = [self.word(base + 4 * i) for i in range(lw)]
        due = max(t + self.rng.randrange(1, 9), self.queue[-1][0] if self.queue else 0)
        self.queue.append((due, data))


def apply_atomic(old: int, r: dict) -> int:
    if r["op"] == ATOM_ADD:
        return (old + r["b"]) & M32
    if r["op"] == ATOM_EXCH:
        return r["b"]
    return r["c"] if old == r["b"] else old  # CAS


def test_l1_cache_cycles() -> None:
    bld, cache = build_unit("l1_cache", lambda: L1Cache(**PARAMS))
    lw, tb = cache.line_words, cache.tag_bits
    rng = random.Random(SEED + 70)
    model = L1Model(cache)
    below = Below(rng, lw)
    ref = Below(random.Random(0), lw)  # the flat reference (its queue is unused)
    lines = [rng.randrange(0x100, 0x400) for _ in range(20)]  # 20 lines over 8 sets x 2 ways
    expected: list[list[int] | int | None] = []  # per accepted request, in order
    state: dict = {"cur": None, "tag": 0, "resp": 0, "checked": 0}

    def new_request() -> dict:
        ln = rng.choice(lines[:4] if rng.random() < 0.3 else lines)  # hot lines: merges
        kind = rng.choices([READ, WRITE, ATOMIC], [0.6, 0.27, 0.13])[0]
        addr = ln * 4 * lw + (4 * rng.randrange(lw) if kind == ATOMIC else 0)
        state["tag"] = (state["tag"] + 1) % (1 << tb)
        return {"kind": kind, "addr": addr, "wdata": [rng.getrandbits(32) for _ in range(lw)],
                "be": rng.choice([(1 << 4 * lw) - 1, rng.getrandbits(4 * lw)]),
                "op": rng.choice([ATOM_ADD, ATOM_EXCH, ATOM_CAS]), "b": rng.getrandbits(2),
                "c": rng.getrandbits(32), "tag": state["tag"]}

    def env(t: int, last: Vector | None) -> Vector:
        if last is not None:
            prev = state["vec"]
            if prev["down__req__ready"] and last["down__req__valid"]:
                below.execute(t - 1, _decode_req(last["down__req__payload"], lw, tb))
            if prev["down__resp__valid"]:
                below.queue.pop(0)
            if prev["up__req__valid"] and last["up__req__ready"]:
                r = state["cur"]
                base = r["addr"] & ~(4 * lw - 1)
                if r["kind"] == READ:
                    expected.append([ref.word(base + 4 * i) for i in range(lw)])
                elif r["kind"] == WRITE:
                    cur = [ref.word(base + 4 * i) for i in range(lw)]
                    for i, w in enumerate(merge_bytes(cur, r["wdata"], r["be"])):
                        ref.words[base + 4 * i] = w
                    expected.append(None)
                else:
                    old = ref.word(r["addr"])
                    ref.words[r["addr"]] = apply_atomic(old, r)
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
        if state["cur"] is None and rng.random() < 0.75:
            state["cur"] = new_request()
        r = state["cur"]
        due = below.queue[0] if below.queue and below.queue[0][0] <= t else None
        vec = {
            "up__req__valid": int(r is not None),
            "up__req__payload": pack_fields(_req_fields(lw, tb, r)) if r is not None else 0,
            "up__resp__ready": int(rng.random() < 0.8),
            "down__req__ready": int(rng.random() < 0.7),
            "down__resp__valid": int(due is not None),
            "down__resp__payload": pack_fields([(pack(due[1], 32), 32 * lw), (0, tb)])
            if due is not None else 0,
            "invalidate": int(rng.random() < 0.01),
        }
        state["vec"] = vec
        return vec

    stim, want = run_closed_loop(model, env, 4000)
    st = model.stats
    assert state["checked"] > 300, state
    assert st["hit"] > 200 and st["miss"] > 100 and st["merge"] > 20, st
    assert st["evict"] > 30 and st["write_hit"] > 30 and st["atomic_inval"] > 10, st
    assert st["mshr_full"] > 0 and st["invalidate"] > 10 and st["stale_fill"] > 0, st
    check_cycles("l1_cache", bld, stim, want, "units_l1_cache_cycles")


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_l1_cache_parameters_checked() -> None:
    with pytest.raises(ValueError, match="ways must be a power of two, not 3"):
        L1Cache(ways=3)
    with pytest.raises(ValueError, match="size_bytes must be"):
        L1Cache(size_bytes=1000)
