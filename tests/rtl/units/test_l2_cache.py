"""The shared L2 (rtl/l2_cache.py) on Verilator, cycle by cycle against a Python model written
from its contract: the two-entry skid buffers requests enter (two in a row) and responses
leave through (queues of two, as test_skid_buffer's), banks by line address (each the cache of
test_l1_cache's model with atomics executed: hits, misses, MSHR merging, eviction,
write-through), the order FIFO that keeps responses in request order, the round-robin onto
the one DRAM port, bank conflicts, and atomics (``atom.fadd`` included) performed on the
cached line, fetched first when absent.

The RTL's banks decide on lookups kept up to date in the buffer's entries (``lookahead``);
the model looks each request up in the cycle it is at the port, so a lookup brought up to date
wrongly (a fill, an eviction, an MSHR taken or freed, an invalidation missed) shows as a
different decision.

The random environment is the L1 bench's (:func:`test_l1_cache.random_traffic`): every
response is also checked against a flat memory updated in request order.
"""

from __future__ import annotations

import random

import pytest
from simtgpu.rtl.l1_cache import L1Cache
from simtgpu.rtl.l2_cache import L2Cache
from simtgpu.verification.units import build_unit
from test_l1_cache import (
    ATOM_ADD,
    ATOM_CAS,
    ATOM_EXCH,
    ATOM_FADD,
    L1Model,
    _decode_req,
    _req_fields,
    down_payload,
    random_traffic,
)
from test_rtl_units_stateful import Vector, check_cycles, pack_fields
from units_harness import SEED

PARAMS = {"line_words": 4, "size_bytes": 512, "ways": 2, "banks": 2, "mshrs": 2,
          "rob_depth": 4, "tag_bits": 5}


class L2Model:
    """The L2's contract, one clock cycle per :meth:`step` (ports as the RTL names them)."""

    def __init__(self, c: L2Cache):
        self.c = c
        self.lw, self.nb, self.bb, self.tb = c.line_words, c.banks, c.bank_bits, c.tag_bits
        self.ob = (4 * self.lw - 1).bit_length()
        self.banks = [L1Model(b) for b in c._banks]
        self.order: list[int] = []  # the bank of every request in flight
        self.depth = self.nb * c.rob_depth
        self.last = self.nb - 1  # the bank granted the DRAM port last
        self.waiting: int | None = None  # the bank whose request waited there last cycle
        self.src_bits = max(1, self.bb)
        self.inner = self.tb - self.src_bits  # tag bits below the bank on the DRAM port
        self.outstanding = 0
        self.stats = {"conflict": 0}

    def _to_bank(self, addr: int) -> int:
        low = addr & ((1 << self.ob) - 1)
        return low | ((addr >> (self.ob + self.bb)) << self.ob)

    def _from_bank(self, addr: int, bank: int) -> int:
        low = addr & ((1 << self.ob) - 1)
        return (low | (bank << self.ob) | ((addr >> self.ob) << (self.ob + self.bb))) \
            & 0xFFFF_FFFF

    def step(self, v: Vector) -> Vector:
        lw, tb = self.lw, self.tb
        req = _decode_req(v["up__req__payload"], lw, tb)
        bank = (req["addr"] >> self.ob) % self.nb
        bank_payload = pack_fields(_req_fields(lw, tb, dict(req, addr=self._to_bank(
            req["addr"]))))
        # the order FIFO has an entry per reorder-buffer entry in use, so it is never full
        # when a bank can accept: the RTL does not look at its room
        assert len(self.order) == sum(b.count for b in self.banks) <= self.depth
        head = self.order[0] if self.order else None
        valids = [bool(b.dq) for b in self.banks]
        grant = next((i for i in ((self.last + 1 + k) % self.nb for k in range(self.nb))
                      if valids[i]), 0)
        if self.waiting is not None and valids[self.waiting]:
            grant = self.waiting  # an offered request keeps the port until it is taken
        src = v["down__resp__payload"] >> (32 * lw + self.inner)
        ins = []
        for i in range(self.nb):
            ins.append({
                "up__req__valid": int(bool(v["up__req__valid"]) and bank == i),
                "up__req__payload": bank_payload,
                "up__resp__ready": int(bool(v["up__resp__ready"]) and head == i),
                "down__req__ready": int(bool(v["down__req__ready"]) and grant == i),
                "down__resp__valid": int(bool(v["down__resp__valid"]) and src == i),
                "down__resp__payload": v["down__resp__payload"]
                & ((1 << (32 * lw + self.inner)) - 1),
                "invalidate": v["invalidate"],
            })
        ext_valid = any(valids)
        down = 0
        if ext_valid:
            g = self.banks[grant].dq[0]
            down = down_payload(lw, tb, dict(
                g, addr=self._from_bank(g["addr"], grant),
                tag=(grant << self.inner) | (g["tag"] & ((1 << self.inner) - 1))))
        outs = [b.step(x) for b, x in zip(self.banks, ins, strict=True)]
        ready = bool(outs[bank]["up__req__ready"])
        resp_valid = head is not None and bool(outs[head]["up__resp__valid"])
        out = {
            "up__req__ready": int(ready),
            "up__resp__valid": int(resp_valid),
            "up__resp__payload": outs[head]["up__resp__payload"] if head is not None else 0,
            "down__req__valid": int(ext_valid),
            "down__req__payload": down,
            "down__resp__ready": 1,
            **{k: int(any(o[k] for o in outs)) for k in ("hit", "miss", "merge", "mshr_full")},
            "idle": int(all(o["idle"] for o in outs) and not ext_valid
                        and self.outstanding == 0 and not self.order),
        }
        if v["up__req__valid"] and not ready:
            self.stats["conflict"] += 1  # the request's bank cannot take it this cycle
        # --- the clock edge ---
        req_fire = ext_valid and bool(v["down__req__ready"])
        resp_fire = bool(v["down__resp__valid"])
        if req_fire:
            self.last = grant
        self.waiting = grant if ext_valid and not req_fire else None
        self.outstanding += int(req_fire) - int(resp_fire)
        if resp_valid and v["up__resp__ready"]:
            self.order.pop(0)
        if v["up__req__valid"] and ready:
            self.order.append(bank)
        return out


class BufferedL2Model:
    """:class:`L2Model` between skid buffers, each a queue of at most two items: requests in
    through two (``up.req.ready`` is the first's having room; an item moves on while the
    second has room; the oldest in the second is at the banks' port) and responses out
    through one (the oldest at ``up.resp``; the banks' response is taken while the queue
    has room)."""

    def __init__(self, c: L2Cache):
        self.inner = L2Model(c)
        self.banks, self.stats = self.inner.banks, self.inner.stats
        self.entering: list[int] = []  # request payloads in the first buffer, oldest first
        self.held: list[int] = []  # in the second
        self.answers: list[int] = []  # response payloads, oldest first

    def step(self, v: Vector) -> Vector:
        answer_room = len(self.answers) < 2
        out = self.inner.step(dict(v, up__req__valid=int(bool(self.held)),
                                   up__req__payload=self.held[0] if self.held else 0,
                                   up__resp__ready=int(answer_room)))
        taken = bool(self.held) and bool(out["up__req__ready"])
        moves = bool(self.entering) and len(self.held) < 2
        room = len(self.entering) < 2
        answered = bool(out["up__resp__valid"]) and answer_room
        new = out["up__resp__payload"]
        out = dict(out, up__req__ready=int(room), up__resp__valid=int(bool(self.answers)),
                   up__resp__payload=self.answers[0] if self.answers else None,
                   idle=int(out["idle"] and not self.entering and not self.held
                            and not self.answers))
        if taken:
            self.held.pop(0)
        if moves:
            self.held.append(self.entering.pop(0))
        if v["up__req__valid"] and room:
            self.entering.append(v["up__req__payload"])
        if self.answers and v["up__resp__ready"]:
            self.answers.pop(0)
        if answered:
            self.answers.append(new)
        return out


def l2_traffic(cache: L2Cache, seed: int) -> tuple[list[Vector], list[Vector]]:
    """The bench's stimulus and model outputs: 5,000 cycles over 24 lines (2 banks x 8 sets x
    2 ways), its cases asserted."""
    rng = random.Random(seed + 71)
    model = BufferedL2Model(cache)
    lines = [rng.randrange(0x100, 0x400) for _ in range(24)]
    stim, want, state = random_traffic(model, cache.line_words, cache.tag_bits, rng, lines,
                                       5000, ops=(ATOM_ADD, ATOM_EXCH, ATOM_CAS, ATOM_FADD))
    st = {k: sum(b.stats[k] for b in model.banks) for k in model.banks[0].stats}
    assert state["checked"] > 300, state
    # (floors under the least count over seeds 1 to 40, on the model:
    # test_l1_cache.test_cache_bench_cases_for_any_seed)
    assert st["hit"] > 200 and st["miss"] > 100 and st["merge"] > 10, st
    assert st["evict"] > 5 and st["write_hit"] > 30, st
    assert st["atomic_hit"] > 50 and st["atomic_fetch"] > 10, st
    assert st["mshr_full"] > 0 and st["invalidate"] > 10, st
    assert model.stats["conflict"] > 50, model.stats
    assert all(b.stats["hit"] > 50 for b in model.banks)  # both banks at work
    return stim, want


@pytest.mark.parametrize("gated", [False, True])
def test_l2_cache_cycles(gated: bool) -> None:
    """Both forms of the banks' FP adder: the enable form (the FPGA's) and the gated clock of
    the simulation models hold the same cycle-by-cycle contract."""
    bld, cache = build_unit("l2_cache", lambda: L2Cache(**PARAMS, gated=gated))
    stim, want = l2_traffic(cache, SEED)
    check_cycles("l2_cache", bld, stim, want, f"units_l2_cache_cycles{'_gated' * gated}")


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
@pytest.mark.parametrize(("make", "match"), [
    (lambda: L1Cache(ways=3), "ways must be a power of two, not 3"),
    (lambda: L1Cache(size_bytes=1000), "size_bytes must be"),
    (lambda: L1Cache(atomics="ignore"), "atomics must be 'bypass' or 'execute'"),
    (lambda: L1Cache(size_bytes=4096, addr_bits=10), "addr_bits must be above the 11 bits"),
    (lambda: L2Cache(banks=3), "banks must be a power of two, not 3"),
    (lambda: L2Cache(ways=3), "ways must be a power of two, not 3"),
])
def test_cache_parameters_checked(make, match) -> None:
    """Both levels refuse bad parameters with a message naming them."""
    with pytest.raises(ValueError, match=match):
        make()
