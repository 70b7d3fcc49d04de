"""Stateful units on Verilator (cocotb), cycle by cycle against Python models.

Register file, scoreboard, SIMT stack, barrier, shared-memory banks, the LSU's global
coalescer and the block dispatcher run as Verilog under Verilator (``play(..., mode="cycle")``:
vector ``i`` is driven in cycle ``i`` and every output is sampled in that cycle, before the
rising edge that commits it). Each test holds a plain-Python cycle model of its unit written
from the unit's contract (module docstrings, docs/execution-model.md), not from its RTL: the
model gives the outputs of a cycle from the state and that cycle's inputs, then the next state.
Stimulus is seeded random plus directed edge cases; where the unit's environment reacts to it
(the SIMT stack's warps, the LSU's memory, the dispatcher's cores) the stimulus generator runs
the model in the loop, so the RTL sees what a real environment would send. Every sampled output
is compared in every cycle; a mismatch names the unit, cycle, port, expected and got values
and the seed (``SIMTGPU_SEED`` picks another).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pytest
from simtgpu.isa import GLOBAL_NULL_GUARD, NUM_PREDS, FaultCause
from simtgpu.rtl.shared_memory import lane_pairs
from simtgpu.rtl.signatures import AtomOp
from simtgpu.sim import numerics as nx
from simtgpu.sim.semantics import apply_atomics
from simtgpu.verification.toolchain import Build
from simtgpu.verification.units import build_unit, play
from units_harness import SEED

M32 = 0xFFFF_FFFF

Vector = dict[str, int]


# --- helpers ------------------------------------------------------------------------------

def pack(values: Iterable[int], width: int) -> int:
    """Element 0 in the low bits, as Amaranth flattens an ArrayLayout/StructLayout port."""
    word = 0
    for i, v in enumerate(values):
        word |= (int(v) & ((1 << width) - 1)) << (i * width)
    return word


def pack_fields(fields: Sequence[tuple[int, int]]) -> int:
    """``(value, width)`` pairs, first field in the low bits (a StructLayout)."""
    word, pos = 0, 0
    for value, width in fields:
        word |= (int(value) & ((1 << width) - 1)) << pos
        pos += width
    return word


def unpack(word: int, width: int, n: int) -> list[int]:
    """The ``n`` elements of a flattened array port."""
    return [(word >> (i * width)) & ((1 << width) - 1) for i in range(n)]


def bits(mask: int, n: int) -> list[int]:
    """Lane bits of a mask, lane 0 first."""
    return [(mask >> i) & 1 for i in range(n)]


class Masked(int):
    """An expected value of which only the bits set in ``care`` are compared (the fields of
    a payload its kind leaves meaningless, as a READ request's write data); an int, so a
    model in the loop reads it as the value."""

    care: int

    def __new__(cls, value: int, care: int) -> Masked:
        obj = super().__new__(cls, value)
        obj.care = care
        return obj


def check_cycles(unit: str, bld: Build, stim: list[Vector], want: list[Vector],
                 run_name: str) -> None:
    """Play ``stim`` on the build of unit ``unit`` in cycle mode and compare every output of
    every cycle with ``want`` (a port the model gives as None is not compared in that cycle:
    its value is meaningless then, as a stream's payload without ``valid``; of a
    :class:`Masked` value only its ``care`` bits are); fail with the first mismatches (unit,
    cycle, port, expected, got, seed)."""
    assert len(stim) == len(want) and stim
    names_in = list(stim[0])
    names_out = list(want[0])
    for i, (v, w) in enumerate(zip(stim, want, strict=True)):
        assert set(v) == set(names_in) and set(w) == set(names_out), f"cycle {i}: ports differ"
    inputs = {k: [v[k] for v in stim] for k in names_in}
    got = play(bld, inputs, names_out, mode="cycle", run_name=run_name)
    problems = []
    for i, exp in enumerate(want):
        for port in names_out:
            g, e = int(got[port][i]), exp[port]
            if e is not None and (g ^ e) & getattr(e, "care", -1):
                problems.append((i, port, exp[port], g))
    if problems:
        lines = [f"{unit}: {len(problems)} output mismatches in {len(stim)} cycles "
                 f"(seed {SEED}); first ones:"]
        for i, port, e, g in problems[:10]:
            ins = ", ".join(f"{k}={stim[i][k]:#x}" for k in names_in)
            lines.append(f"  cycle {i} port {port}: expected {e:#x}, got {g:#x}  [{ins}]")
        pytest.fail("\n".join(lines))


def run_closed_loop(model: Any, env: Callable[[int, Vector | None], Vector], cycles: int
                    ) -> tuple[list[Vector], list[Vector]]:
    """Stimulus from an environment that sees the model's previous outputs (as the unit's
    real neighbours see the unit's), and the model's outputs for it, cycle by cycle."""
    stim, want = [], []
    last: Vector | None = None
    for t in range(cycles):
        vec = env(t, last)
        last = model.step(vec)
        stim.append(vec)
        want.append(last)
    return stim, want


# --- register file ------------------------------------------------------------------------

class RegFileModel:
    """Synchronous read ports, transparent to the write of the same cycle, held while ``ren``
    is low; ``clear`` (every warp) or ``clear_warps`` (some) makes their entries read as zero
    until written, wins over a write of the same cycle, and the first write of an entry after
    it stores zeros in the lanes that do not write."""

    def __init__(self, entries: int, lanes: int, ports: int, addr_bits: int, regs: int = 32,
                 candidates: int = 1):
        self.entries, self.lanes, self.ports = entries, lanes, ports
        self.addr_bits, self.regs, self.candidates = addr_bits, regs, candidates
        self.mem = [[0] * lanes for _ in range(entries)]
        self.written = [False] * entries
        self.q = [[0] * lanes for _ in range(ports)]

    def step(self, v: Vector) -> Vector:
        out = {"rdata": pack((w for p in self.q for w in p), 32)}
        cands = unpack(v["rcand"], self.addr_bits, self.ports * self.candidates)
        sel = min(v["rsel"], self.candidates - 1)  # past the last: the last
        raddr = cands[sel * self.ports:(sel + 1) * self.ports]
        if v["rforce"]:
            raddr = unpack(v["rforce_addr"], self.addr_bits, self.ports)
        we = bits(v["we"], self.lanes)
        wdata = unpack(v["wdata"], 32, self.lanes)
        wa = v["waddr"]
        cleared = [bool(v["clear"] or v.get("clear_warps", 0) >> (a // self.regs) & 1)
                   for a in range(self.entries)]
        writing = any(we) and not cleared[wa]
        new = list(self.mem[wa])
        if writing:
            first = not self.written[wa]
            for lane in range(self.lanes):
                if we[lane]:
                    new[lane] = wdata[lane]
                elif first:
                    new[lane] = 0
        if v["ren"]:
            for p, a in enumerate(raddr):
                holds = (self.written[a] or (writing and wa == a)) and not cleared[a]
                word = new if (writing and wa == a) else self.mem[a]
                self.q[p] = list(word) if holds else [0] * self.lanes
        if writing:
            self.mem[wa] = new
        if writing:
            self.written[wa] = True
        self.written = [w and not c for w, c in zip(self.written, cleared, strict=True)]
        return out


def regfile_stimulus(rng: random.Random, entries: int, lanes: int, addr_bits: int,
                     cycles: int, regs: int = 32, candidates: int = 1,
                     sel_bits: int = 1) -> list[Vector]:
    """Reads of ``raddr`` as one of ``candidates`` address triples (``rsel`` chooses it; the
    others random, and now and then ``rsel`` past the last, which reads the last), or a
    quarter of the time as the forced address (``rforce``), every candidate random."""
    warps = entries // regs
    hot = rng.sample(range(entries), 6)

    def addr() -> int:
        return rng.choice(hot) if rng.random() < 0.7 else rng.randrange(entries)

    def vec(ren=1, raddr=(0, 0, 0), we=0, waddr=0, wdata=None, clear=0,
            clear_warps=0) -> Vector:
        wdata = wdata if wdata is not None else [rng.getrandbits(32) for _ in range(lanes)]
        sel = rng.randrange(candidates)
        force = rng.random() < 0.25
        cands = [raddr if c == sel and not force else (addr(), addr(), addr())
                 for c in range(candidates)]
        if sel == candidates - 1 and rng.random() < 0.2:
            sel = rng.randrange(candidates, 1 << sel_bits) if candidates < 1 << sel_bits else sel
        return {"ren": ren, "rcand": pack([a for c in cands for a in c], addr_bits),
                "rsel": sel, "rforce": int(force),
                "rforce_addr": pack(raddr if force else (addr(), addr(), addr()), addr_bits),
                "we": we, "waddr": waddr, "wdata": pack(wdata, 32),
                "clear": clear, "clear_warps": clear_warps}

    full = (1 << lanes) - 1
    a, b = hot[0], hot[1]
    stim = [
        vec(we=full, waddr=a), vec(raddr=(a, a, b)),  # write, then read it back
        vec(raddr=(a, b, a), we=0b0101, waddr=a),  # partial write, read in the same cycle
        vec(ren=0, raddr=(b, b, b), we=full, waddr=a),  # ren low: old data held
        vec(ren=0), vec(raddr=(a, a, a)),
        vec(clear=1, raddr=(a, b, a)),  # clear: reads of this cycle already see zero
        vec(raddr=(a, b, a)),  # everything reads zero after clear
        vec(we=0b0010, waddr=a, raddr=(a, a, a)),  # first write: other lanes become zero
        vec(we=0b0100, waddr=a, raddr=(a, a, a)),  # second write keeps lane 1
        vec(raddr=(a, a, a)),
        vec(clear=1, we=full, waddr=b, raddr=(b, b, b)),  # clear wins over the same write
        vec(raddr=(b, b, b)),
        vec(clear=1, ren=0), vec(ren=0), vec(raddr=(b, a, b)),  # held data survives clear
        vec(we=full, waddr=a), vec(we=full, waddr=b), vec(raddr=(a, b, a)),
        # one warp's clear: its entries read zero, the other warp's keep their data, and its
        # write of the same cycle is lost
        vec(clear_warps=1 << (a // regs), we=full, waddr=a, raddr=(a, b, a)),
        vec(raddr=(a, b, a)),
    ]
    while len(stim) < cycles:
        we = 0 if rng.random() < 0.3 else rng.randrange(1, full + 1)
        stim.append(vec(ren=int(rng.random() < 0.85), raddr=(addr(), addr(), addr()),
                        we=we, waddr=addr(), clear=int(rng.random() < 0.02),
                        clear_warps=rng.randrange(1, 1 << warps) if rng.random() < 0.03
                        else 0))
    return stim


def test_regfile_cycles():
    bld, rf = build_unit("regfile")
    entries = rf.warps * rf.regs
    rng = random.Random(SEED)
    stim = regfile_stimulus(rng, entries, rf.lanes, rf.addr_bits, 2500, rf.regs,
                            rf.candidates, len(rf.rsel))
    model = RegFileModel(entries, rf.lanes, rf.READ_PORTS, rf.addr_bits, rf.regs,
                         rf.candidates)
    want = [model.step(v) for v in stim]
    assert sum(1 for w in want if w["rdata"]) > 1000  # reads do return data
    check_cycles("regfile", bld, stim, want, "units_regfile_cycles")


# --- scoreboard ---------------------------------------------------------------------------

class ScoreboardModel:
    """Pending bit per register and predicate per warp; ``pending`` already leaves out the
    bits cleared in the same cycle (which the unit is told a cycle ahead, on ``clear_next``);
    set of this cycle shows the next cycle; reset (of all warps, or of the warps of
    ``reset_warps``) wins."""

    def __init__(self, warps: int, regs: int):
        self.warps, self.regs = warps, regs
        self.width = regs + NUM_PREDS
        self.state = [0] * warps

    def bit(self, en: int, idx: int, pred: int) -> int:
        if not en:
            return 0
        return 1 << (self.regs + (idx & 7)) if pred else 1 << idx

    def step(self, v: Vector) -> Vector:
        now = list(self.state)
        for en, warp, idx, pred in v["_clears"]:
            now[warp] &= ~self.bit(en, idx, pred)
        out = {"pending": pack(now, self.width)}
        for w in range(self.warps):
            if v["reset"] or (v["reset_warps"] >> w) & 1:
                self.state[w] = 0
            else:
                self.state[w] = now[w] | self.sets(v["_set"])[w]
        return out

    def sets(self, set_: tuple[int, int, int, int]) -> list[int]:
        """The per-warp ``set`` masks of one issue ``(en, warp, idx, pred)``."""
        en, warp, idx, pred = set_
        return [self.bit(en, idx, pred) if w == warp else 0 for w in range(self.warps)]


def sb_port(en: int, warp: int, idx: int, pred: int, warp_bits: int) -> int:
    return pack_fields([(en, 1), (warp, warp_bits), (idx, 5), (pred, 1)])


def test_scoreboard_cycles():
    bld, sb = build_unit("scoreboard")
    wb = max(1, (sb.warps - 1).bit_length())
    rng = random.Random(SEED + 1)
    model = ScoreboardModel(sb.warps, sb.regs)
    pending: list[tuple[int, int, int]] = []  # (warp, idx, pred) set and not yet cleared

    def rand_port(en_p: float) -> tuple[int, int, int, int]:
        pred = int(rng.random() < 0.25)
        return (int(rng.random() < en_p), rng.randrange(sb.warps), rng.randrange(32), pred)

    def vec(set_=(0, 0, 0, 0), clears=((0, 0, 0, 0), (0, 0, 0, 0)), reset=0,
            reset_warps=0) -> Vector:
        return {"reset": reset, "reset_warps": reset_warps,
                "set": pack(model.sets(set_), model.width),
                "clear": pack((sb_port(*c, wb) for c in clears), 9),
                "_set": set_, "_clears": clears}

    stim = [
        vec(set_=(1, 1, 5, 0)), vec(set_=(1, 1, 3, 1)),  # a register and a predicate
        vec(clears=((1, 1, 5, 0), (0, 0, 0, 0))),  # cleared: pending drops in this cycle
        vec(set_=(1, 1, 5, 0), clears=((1, 1, 5, 0), (1, 1, 3, 1))),  # set beats clear
        vec(set_=(1, 2, 9, 0), clears=((1, 1, 11, 1), (1, 1, 11, 1))),  # pred idx 11 -> 3
        vec(clears=((1, 1, 5, 0), (1, 2, 9, 0))),
        vec(set_=(1, 3, 31, 0)), vec(set_=(1, 0, 0, 0), reset=1), vec(),
        vec(set_=(1, 2, 7, 0)), vec(set_=(1, 1, 7, 0), reset_warps=0b10),  # one warp's reset
        vec(set_=(1, 2, 8, 0), reset_warps=0b100), vec(),  # beats that warp's set
    ]
    while len(stim) < 2000:
        set_ = rand_port(0.6)
        clears = []
        for _ in range(sb.clear_ports):
            if pending and rng.random() < 0.35:
                w, i, p = pending.pop(rng.randrange(len(pending)))
                clears.append((1, w, i, p))
            else:
                clears.append(rand_port(0.2))
        if set_[0]:
            pending.append(set_[1:])
        reset = int(rng.random() < 0.01)
        reset_warps = rng.randrange(1 << sb.warps) if rng.random() < 0.02 else 0
        if reset:
            pending.clear()
        pending = [p for p in pending if not (reset_warps >> p[0]) & 1]
        stim.append(vec(set_, tuple(clears), reset, reset_warps))
    want = [model.step(v) for v in stim]
    # the unit takes each cycle's clears a cycle ahead (``clear_next``): vector k carries
    # the clears that the model applies in cycle k + 1
    assert stim[0]["clear"] == 0
    stim = [{"reset": v["reset"], "reset_warps": v["reset_warps"], "set": v["set"],
             "clear_next": stim[k + 1]["clear"] if k + 1 < len(stim) else 0}
            for k, v in enumerate(stim)]
    assert sum(bin(w["pending"]).count("1") for w in want) > 2000
    check_cycles("scoreboard", bld, stim, want, "units_scoreboard_cycles")


# --- SIMT stack ---------------------------------------------------------------------------

SSY, BRA, SYNC, EXIT = range(4)  # SimtOp
DIV_KIND, SYNC_KIND = "DIV", "SYNC"


class SimtStackModel:
    """ssy/bra/sync/exit as docs/execution-model.md defines them, with the unit's timing: a
    command is answered in the cycle it is accepted unless it pops an entry with no live lane
    and an entry under it has one (one more cycle per entry popped from memory); after a pop
    that leaves entries on the stack the unit is busy (``ready`` low) for one cycle."""

    def __init__(self, warps: int, lanes: int, depth: int):
        self.warps, self.lanes, self.depth = warps, lanes, depth
        self.full = (1 << lanes) - 1
        self.stacks: list[list[tuple[str, int, int]]] = [[] for _ in range(warps)]
        self.state = "IDLE"
        self.b_warp = 0
        self.b_live = 0

    def _zero(self) -> Vector:
        return {"ready": 0, "done": 0, "done_warp": 0, "new_pc": 0, "new_active": 0,
                "new_live": 0, "finished": 0, "fault": 0, "fault_cause": 0, "diverged": 0}

    def _pop(self, out: Vector, w: int, live: int) -> None:
        """Pop one entry of warp ``w`` (the stack is not empty) and evaluate it."""
        _kind, pc, mask = self.stacks[w].pop()
        left = len(self.stacks[w])
        if mask & live:
            out.update(done=1, done_warp=w, new_pc=pc, new_active=mask & live, new_live=live)
            self.state = "REFILL" if left else "IDLE"
        elif not any(m & live for _k, _pc, m in self.stacks[w]):
            self.stacks[w].clear()  # every entry left is dead: the pops would empty it
            self._empty(out, w, live)
            self.state = "IDLE"
        else:
            self.state, self.b_warp, self.b_live = "POPMEM", w, live

    def _empty(self, out: Vector, w: int, live: int) -> None:
        if live == 0:
            out.update(done=1, done_warp=w, finished=1, new_live=0)
        else:
            out.update(done=1, done_warp=w, fault=1,
                       fault_cause=FaultCause.STACK_UNDERFLOW.value)

    def _pop_first(self, out: Vector, w: int, live: int) -> None:
        if self.stacks[w]:
            self._pop(out, w, live)
        else:
            self._empty(out, w, live)

    def _push(self, out: Vector, w: int, entry: tuple[str, int, int], answer: tuple) -> None:
        if len(self.stacks[w]) == self.depth:
            out.update(done=1, done_warp=w, fault=1, fault_cause=FaultCause.STACK_OVERFLOW.value)
        else:
            self.stacks[w].append(entry)
            self._answer(out, w, *answer)

    def _answer(self, out: Vector, w: int, pc: int, active: int, live: int) -> None:
        out.update(done=1, done_warp=w, new_pc=pc & M32, new_active=active, new_live=live)

    def step(self, v: Vector) -> Vector:
        out = self._zero()
        if self.state == "REFILL":
            self.state = "IDLE"
        elif self.state == "POPMEM":
            self._pop(out, self.b_warp, self.b_live)
        else:
            out["ready"] = 1
            if v["valid"] and not v["reset"]:
                self._command(out, v)
            if v["reset"]:
                self.stacks = [[] for _ in range(self.warps)]
        return out

    def _command(self, out: Vector, v: Vector) -> None:
        w, op, pc, target = v["warp"], v["op"], v["pc"], v["target"]
        active, live, guard = v["active"], v["live"], v["guard"]
        st = self.stacks[w]
        if op == SSY:
            self._push(out, w, (SYNC_KIND, target, active), (pc + 4, active, live))
        elif op == BRA:
            taken = active & guard
            if taken == active:
                self._answer(out, w, target, active, live)
            elif taken == 0:
                self._answer(out, w, pc + 4, active, live)
            else:
                out["diverged"] = 1
                rest = active & ~guard & self.full
                if st and st[-1][0] == DIV_KIND and st[-1][1] == (pc + 4) & M32:
                    kind, epc, emask = st[-1]
                    st[-1] = (kind, epc, emask | rest)
                    self._answer(out, w, target, taken, live)
                else:
                    self._push(out, w, (DIV_KIND, (pc + 4) & M32, rest), (target, taken, live))
        elif op == SYNC:
            self._pop_first(out, w, live)
        else:
            gone = active & guard
            live &= ~gone
            active &= ~gone
            if active:
                self._answer(out, w, pc + 4, active, live)
            else:
                self._pop_first(out, w, live)


@pytest.mark.parametrize("seed_offset", [0, 1])
def test_simt_stack_cycles(seed_offset):
    bld, st = build_unit("simt_stack")
    rng = random.Random(SEED + 10 + seed_offset)
    model = SimtStackModel(st.warps, st.lanes, st.depth)
    full = (1 << st.lanes) - 1
    warps: list[dict] = []
    stats = {"div": 0, "merge": 0, "finished": 0, "underflow": 0, "overflow": 0,
             "popmem": 0, "refused": 0}

    def fresh() -> dict:
        live = rng.randrange(1, full + 1)
        return {"pc": rng.randrange(64) * 4, "active": live, "live": live}

    warps.extend(fresh() for _ in range(st.warps))
    idle = {"reset": 0, "valid": 0, "op": 0, "warp": 0, "pc": 0, "target": 0, "active": 0,
            "live": 0, "guard": 0}

    def env(t: int, last: Vector | None) -> Vector:
        if last is not None and last["done"]:
            s = warps[last["done_warp"]]
            if last["fault"]:
                key = ("overflow" if last["fault_cause"] == FaultCause.STACK_OVERFLOW.value
                       else "underflow")
                stats[key] += 1
                warps[last["done_warp"]] = fresh()
            elif last["finished"]:
                stats["finished"] += 1
                warps[last["done_warp"]] = fresh()
            else:
                s.update(pc=last["new_pc"], active=last["new_active"], live=last["new_live"])
                if last["diverged"]:
                    stats["div"] += 1
        if model.state != "IDLE":
            stats["popmem"] += model.state == "POPMEM"
            stats["refused"] += 1
            # a command offered while busy is ignored: offer garbage to prove it
            return dict(idle, valid=int(rng.random() < 0.5), op=rng.randrange(4),
                        warp=rng.randrange(st.warps), active=rng.randrange(full + 1))
        if rng.random() < 0.005:
            for i in range(st.warps):
                warps[i] = fresh()
            return dict(idle, reset=1, valid=int(rng.random() < 0.5))
        if rng.random() < 0.15:
            return dict(idle)
        w = rng.randrange(st.warps)
        s = warps[w]
        op = rng.choice([SSY, BRA, BRA, BRA, SYNC, EXIT])
        top = model.stacks[w][-1] if model.stacks[w] else None
        if top is not None and top[0] == DIV_KIND and top[1] == s["pc"] + 4 \
                and rng.random() < 0.7:
            op = BRA  # a second divergent branch at the same pc merges into the DIV entry
        if op == EXIT and rng.random() < 0.6:
            guard = rng.choice([full, rng.randrange(full + 1)])
        else:
            guard = rng.randrange(full + 1)
        if op == BRA and top is not None and top[1] == s["pc"] + 4 and rng.random() < 0.7:
            lanes_on = [l for l in range(st.lanes) if s["active"] >> l & 1]
            if len(lanes_on) > 1:  # split the active lanes: the new rest merges
                guard = sum(1 << l for l in rng.sample(lanes_on, len(lanes_on) - 1))
        # branching to the pc of the branch itself makes pc+4 a DIV entry's pc: merge rule
        target = rng.choice([rng.randrange(64) * 4, s["pc"], s["pc"], s["pc"] + 8])
        if op == BRA and model.stacks[w] and model.stacks[w][-1][0] == DIV_KIND \
                and model.stacks[w][-1][1] == s["pc"] + 4 and guard & s["active"] \
                and s["active"] & ~guard:
            stats["merge"] += 1
        return dict(idle, valid=1, op=op, warp=w, pc=s["pc"], target=target,
                    active=s["active"], live=s["live"], guard=guard)

    # directed start: overflow, merge, a chain of empty entries popped from memory
    w0 = {"reset": 0, "valid": 1, "warp": 1, "live": 0b1111, "active": 0b1111, "pc": 0x40,
          "target": 0x100, "guard": 0}
    directed = [
        dict(w0, op=SSY), dict(w0, op=SSY), dict(w0, op=SSY),
        dict(w0, op=BRA, guard=0b0011),  # diverges: push DIV (0x44, 0b1100), stack full
        dict(w0, op=BRA, active=0b0011, guard=0b0001, pc=0x40),  # merge into the DIV entry
        dict(w0, op=SSY),  # full: STACK_OVERFLOW
        dict(w0, op=EXIT, active=0b1111, live=0b1111, guard=0b1111),  # all exit: pops
    ] + [dict(w0, valid=0, op=SYNC)] * 8
    stim, want = [], []
    for vec in directed:
        stim.append(vec)
        want.append(model.step(vec))
    s2, w2 = run_closed_loop(model, env, 3000)
    stim += s2
    want += w2
    assert stats["div"] > 50 and stats["finished"] > 5 and stats["underflow"] > 5
    assert stats["overflow"] > 5 and stats["popmem"] > 5 and stats["merge"] > 5, stats
    check_cycles("simt_stack", bld, stim, want, f"units_simt_stack_cycles_{seed_offset}")


# --- barrier ------------------------------------------------------------------------------

class BarrierModel:
    """Arrivals accumulate; when every member has arrived (with this cycle's arrival) all are
    released at once; when every live member waits and some member has exited the barrier can
    never complete (deadlock at once); the watchdog raises deadlock when the wait counter,
    counting cycles with some warp waiting modulo ``2**bit_length(watchdog)``, hits
    ``watchdog``."""

    def __init__(self, warps: int, watchdog: int):
        self.warps, self.watchdog = warps, watchdog
        self.waiting = 0
        self.timer = 0
        self.timer_mod = 1 << watchdog.bit_length()

    def step(self, v: Vector) -> Vector:
        members, exited = v["members"], v["exited"]
        arrived = self.waiting | ((v["arrive"] << v["warp"]) & ((1 << self.warps) - 1))
        out = {"waiting": self.waiting, "release": 0, "deadlock": 0}
        if v["reset"]:
            self.waiting, self.timer = 0, 0
        elif arrived and (arrived & members) == members:
            out.update(release=1, waiting=arrived)
            self.waiting, self.timer = 0, 0
        else:
            self.waiting = arrived
            if arrived:
                alive = members & ~exited
                stuck = (arrived & alive) == alive and (exited & members) != 0
                if stuck or self.timer == self.watchdog:
                    out["deadlock"] = 1
                self.timer = (self.timer + 1) % self.timer_mod
        return out


def test_barrier_cycles():
    bld, bar = build_unit("barrier")
    n = bar.warps
    full = (1 << n) - 1
    rng = random.Random(SEED + 20)
    model = BarrierModel(n, bar.watchdog)
    stats = {"release": 0, "deadlock": 0}
    blk = {"members": full, "exited": 0, "lazy": -1}

    def new_block() -> None:
        blk["members"] = rng.randrange(1, full + 1)
        blk["exited"] = 0
        # one member that never arrives, to run the watchdog out
        ms = [w for w in range(n) if blk["members"] >> w & 1]
        blk["lazy"] = rng.choice(ms) if rng.random() < 0.2 else -1

    def env(t: int, last: Vector | None) -> Vector:
        if last is not None:
            stats["release"] += last["release"]
            stats["deadlock"] += last["deadlock"]
        vec = {"reset": 0, "members": blk["members"], "exited": blk["exited"], "arrive": 0,
               "warp": 0}
        if last is not None and (last["deadlock"] and rng.random() < 0.7
                                 or rng.random() < 0.01):
            vec["reset"] = 1
            new_block()
            return vec
        if rng.random() < 0.05:
            new_block()
            vec.update(members=blk["members"], exited=0)
        waiting = model.waiting
        alive = blk["members"] & ~blk["exited"]
        cand = [w for w in range(n) if alive >> w & 1 and not waiting >> w & 1
                and w != blk["lazy"]]
        if rng.random() < 0.03 and cand:  # a warp exits instead of arriving
            blk["exited"] |= 1 << rng.choice(cand)
            vec["exited"] = blk["exited"]
        elif rng.random() < 0.4:
            if cand and rng.random() < 0.9:
                vec.update(arrive=1, warp=rng.choice(cand))
            else:  # a stray arrival (already waiting or not a member)
                vec.update(arrive=1, warp=rng.randrange(n))
        return vec

    directed = []
    base = {"reset": 0, "members": 0b1011, "exited": 0, "arrive": 0, "warp": 0}
    directed += [dict(base, arrive=1, warp=0), dict(base, arrive=1, warp=1), dict(base),
                 dict(base, arrive=1, warp=3), dict(base)]  # release with the last arrival
    directed += [dict(base, arrive=1, warp=0), dict(base, exited=0b1000),
                 dict(base, exited=0b1000, arrive=1, warp=1),  # live all wait: deadlock
                 dict(base, reset=1)]
    directed += [dict(base, arrive=1, warp=1)] + [dict(base)] * (bar.watchdog + 3)
    directed += [dict(base, reset=1), dict(base, members=0b0001, arrive=1, warp=0)]
    stim, want = [], []
    for vec in directed:
        stim.append(vec)
        want.append(model.step(vec))
    assert any(w["deadlock"] for w in want[9:])  # the watchdog fired
    s2, w2 = run_closed_loop(model, env, 3000)
    stim += s2
    want += w2
    assert stats["release"] > 50 and stats["deadlock"] > 10, stats
    check_cycles("barrier", bld, stim, want, "units_barrier_cycles")


# --- shared memory ------------------------------------------------------------------------

class SharedMemoryModel:
    """Banks ``bank = word % lanes``; per bank the lowest requesting lane's word is served
    with every requesting lane of the same word; stores: highest such lane's data; loads:
    ``rdata[l]`` the next cycle from the bank lane ``l`` addressed (read before write);
    ``clear`` zeroes one row of every bank; without ``act`` nothing is served, read or
    written."""

    def __init__(self, lanes: int, rows: int, word_bits: int):
        self.lanes, self.rows, self.word_bits = lanes, rows, word_bits
        self.mem = [[0] * rows for _ in range(lanes)]
        self.bank_out = [0] * lanes
        self.bank_q = [0] * lanes
        self.served_q = 0

    def served(self, req: int, words: list[int]) -> int:
        done = 0
        for b in range(self.lanes):
            hits = [l for l in range(self.lanes) if req >> l & 1 and words[l] % self.lanes == b]
            if hits:
                row = words[hits[0]] // self.lanes
                done |= sum(1 << l for l in hits if words[l] // self.lanes == row)
        return done

    def step(self, v: Vector) -> Vector:
        lanes = self.lanes
        words = unpack(v["word"], self.word_bits, lanes)
        wdata = unpack(v["wdata"], 32, lanes)
        served = self.served(v["req"], words) if v["act"] else 0
        out = {"served": served, "served_q": self.served_q,
               "rdata": pack((self.bank_out[self.bank_q[l]] for l in range(lanes)), 32)}
        old = [list(b) for b in self.mem]
        for b in range(lanes):
            group = [l for l in range(lanes) if served >> l & 1 and words[l] % lanes == b]
            if not group:
                continue
            row = words[group[0]] // lanes
            if v["we"]:
                if not v["clear"]:
                    self.mem[b][row] = wdata[group[-1]]
            else:
                self.bank_out[b] = old[b][row]
        if v["clear"]:
            for b in range(lanes):
                self.mem[b][v["clear_row"]] = 0
        self.bank_q = [w % lanes for w in words]
        self.served_q = 0 if v["we"] else served
        return out


def test_shared_memory_cycles():
    bld, sm = build_unit("shared_memory")
    lanes, rows = sm.lanes, sm.rows
    words_n = lanes * rows
    rng = random.Random(SEED + 30)
    model = SharedMemoryModel(lanes, rows, sm.word_bits)
    full = (1 << lanes) - 1
    cur = {"req": 0}
    stats = {"multi": 0, "broadcast": 0, "idle": 0}

    def access() -> dict:
        kind = rng.random()
        if kind < 0.25:  # conflict-free: consecutive words
            base = rng.randrange(words_n)
            words = [(base + l) % words_n for l in range(lanes)]
        elif kind < 0.4:  # all lanes one bank, different rows: fully serialised
            b = rng.randrange(lanes)
            words = [b + lanes * rng.randrange(rows) for _ in range(lanes)]
        elif kind < 0.5:  # broadcast
            words = [rng.randrange(words_n)] * lanes
        else:
            words = [rng.randrange(words_n) for _ in range(lanes)]
        return {"words": words, "we": int(rng.random() < 0.4),
                "wdata": [rng.getrandbits(32) for _ in range(lanes)]}

    acc = {"a": access()}

    def env(t: int, last: Vector | None) -> Vector:
        # an LSU-like driver: keep requesting the lanes not served yet
        if last is not None:
            cur["req"] &= ~last["served"]
        if not cur["req"]:
            acc["a"] = access()
            cur["req"] = rng.randrange(1, full + 1) if rng.random() < 0.3 else full
            if rng.random() < 0.1:
                cur["req"] = 0
        a = acc["a"]
        if len(set(a["words"])) == 1:
            stats["broadcast"] += 1
        srv = model.served(cur["req"], a["words"])
        stats["multi"] += srv != cur["req"]
        act = int(rng.random() < 0.85)  # the LSU's go: the lanes are chosen either way
        stats["idle"] += not act and srv != 0
        # the LSU's pairs: lanes at one word; for two banks' lanes anything (here at random)
        words = a["words"]
        same_word = sum((words[i] == words[j] if words[i] % lanes == words[j] % lanes
                         else rng.getrandbits(1)) << p
                        for p, (i, j) in enumerate(lane_pairs(lanes)))
        return {"req": cur["req"], "act": act, "we": a["we"], "same_word": same_word,
                "word": pack(a["words"], sm.word_bits),
                "wdata": pack(a["wdata"], 32), "clear": int(rng.random() < 0.02),
                "clear_row": rng.randrange(rows)}

    stim, want = run_closed_loop(model, env, 3000)
    assert stats["multi"] > 200 and stats["broadcast"] > 50 and stats["idle"] > 200, stats
    check_cycles("shared_memory", bld, stim, want, "units_shared_memory_cycles")


# --- LSU: global coalescing ---------------------------------------------------------------

LDG, STG, ATOM, LDPARAM = 1, 2, 5, 7  # LsuOp
READ, WRITE, ATOMIC = 0, 1, 2  # MemKind
ATOM_W = AtomOp.as_shape().width  # the request's atom_op field


class Fifo:
    """A first-word-fall-through FIFO with an output register (``SyncFIFOBuffered``): an entry
    written in cycle ``t`` can be read from cycle ``t + 2``; ``depth - 1`` entries wait in
    front of the output register."""

    def __init__(self, depth: int):
        self.inner: list = []
        self.cap = depth - 1
        self.out = None

    @property
    def w_rdy(self) -> bool:
        return len(self.inner) != self.cap

    def edge(self, write, read: bool) -> None:
        if self.inner and (self.out is None or read):
            self.out = self.inner.pop(0)
        elif read:
            self.out = None
        if write is not None:
            self.inner.append(write)


class LsuModel:
    """The LSU's global path: each cycle the lowest remaining lane picks a line and every
    remaining lane in that line joins (atomics: one lane at a time; ``ldparam``: the lanes at
    the leader's offset, which in a program is every lane's); the instruction is held
    until its last transaction is accepted; a faulting lane stops it before anything is sent;
    responses fill the lanes' words in request order and the last one of a load hands the
    values to the late write-back port."""

    def __init__(self, lsu: Any, lanes: int, line_words: int):
        self.lanes, self.lw = lanes, line_words
        self.memory_bytes = lsu.memory_bytes
        self.fifo = Fifo(lsu.fifo_depth)
        self.started = False
        self.rem_q = 0
        self.acc = [0] * lanes
        self.lwb_valid = 0
        self.lwb = (0, 0, 0, 0, 0, 0, [0] * lanes)  # warp, rd, wr, pc, active, exec, values

    def oor(self, op: int, a: int, v: Vector) -> bool:
        if op in (LDG, STG, ATOM):
            return a < GLOBAL_NULL_GUARD or a + 4 > self.memory_bytes
        if op == LDPARAM:
            return a + 4 > v["param_last"] + 4
        return False

    def step(self, v: Vector) -> Vector:
        lanes, lw = self.lanes, self.lw
        op = v["op"]
        active = v["valid"] and op != 0
        is_global = op in (LDG, STG, ATOM, LDPARAM)
        is_load = op in (LDG, ATOM, LDPARAM)
        raw = v["_addr"]
        ea = [(a + v["param_addr"]) & M32 if op == LDPARAM else a for a in raw]
        exe = v["exec"]
        rem = self.rem_q if self.started else exe
        bad_oor = sum(1 << l for l in range(lanes) if exe >> l & 1 and self.oor(op, raw[l], v))
        bad_mis = sum(1 << l for l in range(lanes) if exe >> l & 1 and raw[l] & 3)
        faulting = active and not self.started and (bad_oor or bad_mis)
        out = {"fault": 0, "fault_cause": 0, "fault_lanes": 0}
        if faulting:
            out["fault"] = 1
            if bad_oor:
                out.update(fault_cause=FaultCause.OUT_OF_RANGE.value, fault_lanes=bad_oor)
            else:
                out.update(fault_cause=FaultCause.MISALIGNED.value, fault_lanes=bad_mis)
        rem_lanes = [l for l in range(lanes) if rem >> l & 1]
        lead = rem_lanes[0] if rem_lanes else None
        lead_addr = ea[lead] if lead is not None else 0
        line = lead_addr & ~(4 * lw - 1)
        if op == ATOM:
            group = 1 << lead if lead is not None else 0
        elif op == LDPARAM:
            group = sum(1 << l for l in rem_lanes if raw[l] == raw[lead])
        else:
            group = sum(1 << l for l in rem_lanes if ea[l] & ~(4 * lw - 1) == line)
        widx = [(a >> 2) % lw for a in ea]
        wdata, be = [0] * lw, 0
        for l in range(lanes):
            if group >> l & 1:
                wdata[widx[l]] = v["_data"][l]
                be |= 0xF << (4 * widx[l])
        kind = WRITE if op == STG else ATOMIC if op == ATOM else READ
        go = bool(active and is_global and not faulting and rem)
        req_valid = int(go and self.fifo.w_rdy)
        accepted = req_valid and v["mem__req__ready"]
        last = (rem & ~group) == 0
        rem_next = (rem & ~group if accepted else rem) if go else 0
        hold = int(bool(active and not faulting and rem_next))
        out.update({
            "mem__req__valid": req_valid,
            "mem__req__payload": pack_fields([
                (kind, 2), (lead_addr if op == ATOM else line, 32), (pack(wdata, 32), 32 * lw),
                (be, 4 * lw), (v["fn"] & ((1 << ATOM_W) - 1), ATOM_W),
                (v["_data"][lead] if lead is not None else 0, 32),
                (v["_cdata"][lead] if lead is not None else 0, 32), (v["warp"], 2)]),
            "transaction": int(bool(accepted)), "hold": hold,
            "deferred": int(bool(active and is_load and exe)),
            "sent": int(bool(go and accepted and rem_next == 0)), "sent_warp": v["warp"],
        })
        # responses
        head = self.fifo.out
        blocked = head is not None and head["load"] and head["last"] and self.lwb_valid \
            and not v["lwb__ready"]
        resp_ready = int(head is not None and not blocked)
        fire = bool(resp_ready and v["mem__resp__valid"])
        out.update({"mem__resp__ready": resp_ready, "acked": 0, "acked_warp": 0,
                    "acked_load": 0, "lwb__valid": self.lwb_valid,
                    "lwb__payload": self.lwb_word(),
                    "idle": int(head is None and not self.lwb_valid and not self.started),
                    "sh_values": 0, "atom_values": 0})
        if v["lwb__ready"]:
            self.lwb_valid = 0
        if fire:
            rdata = unpack(v["mem__resp__payload"], 32, lw)
            merged = [rdata[head["widx"][l]] if head["group"] >> l & 1 else self.acc[l]
                      for l in range(lanes)]
            self.acc = merged
            if head["last"]:
                out.update(acked=1, acked_warp=head["warp"], acked_load=int(head["load"]))
                if head["load"]:
                    self.lwb_valid = 1
                    self.lwb = (head["warp"], head["rd"], head["wr"], head["pc"],
                                head["active"], head["exec"], merged)
        entry = None
        if accepted:
            entry = {"warp": v["warp"], "rd": v["rd"], "wr": v["wr"], "pc": v["pc"],
                     "load": is_load, "last": last, "active": v["active"], "exec": exe,
                     "group": group, "widx": [0] * lanes if op == ATOM else widx}
        self.fifo.edge(entry, fire)
        if hold:
            self.started, self.rem_q = True, rem_next
        else:
            self.started = False
        return out

    def lwb_word(self) -> int:
        warp, rd, wr, pc, act, exe, values = self.lwb
        return pack_fields([(warp, 1), (rd, 5), (wr, 1), (pc, 32), (act, self.lanes),
                            (exe, self.lanes), (pack(values, 32), 32 * self.lanes)])


class GlobalMemory:
    """The memory side: takes requests when ``ready`` says so, answers each after a random
    latency in request order, executes writes (byte enables) and atomics."""

    def __init__(self, rng: random.Random, line_words: int, size: int):
        self.rng, self.lw = rng, line_words
        self.words = {a: rng.getrandbits(32) for a in range(0, size, 4)}
        self.queue: list[tuple[int, list[int]]] = []  # (due cycle, line data)
        self.ready = 1

    def execute(self, t: int, payload: int) -> None:
        lw = self.lw
        kind = payload & 3
        addr = (payload >> 2) & M32
        pos = 34
        wdata = unpack(payload >> pos, 32, lw)
        pos += 32 * lw
        be = (payload >> pos) & ((1 << 4 * lw) - 1)
        pos += 4 * lw
        atom_op = (payload >> pos) & ((1 << ATOM_W) - 1)
        b = (payload >> (pos + ATOM_W)) & M32
        c = (payload >> (pos + ATOM_W + 32)) & M32
        if kind == ATOMIC:
            old = self.words[addr]
            one = np.array([old], np.uint32)  # the ISS's routine is the reference semantics
            apply_atomics(one, AtomOp(atom_op).name.lower(), np.array([0]),
                          np.array([b], np.uint32), np.array([c], np.uint32), nx.fadd)
            self.words[addr] = int(one[0])
            data = [old] + [0] * (lw - 1)
        else:
            data = [self.words[addr + 4 * j] for j in range(lw)]
            if kind == WRITE:
                for j in range(lw):
                    m = sum(0xFF << (8 * k) for k in range(4) if be >> (4 * j + k) & 1)
                    self.words[addr + 4 * j] = (data[j] & ~m) | (wdata[j] & m)
        due = max(t + self.rng.randrange(1, 6), self.queue[-1][0] if self.queue else 0)
        self.queue.append((due, data))


def test_lsu_global_coalescing():
    bld, lsu = build_unit("lsu")
    lanes, lw = lsu.lanes, lsu.line_words
    rng = random.Random(SEED + 40)
    model = LsuModel(lsu, lanes, lw)
    mem = GlobalMemory(rng, lw, lsu.memory_bytes)
    param_addr, param_size = GLOBAL_NULL_GUARD + 0x400, 64
    line_bytes = 4 * lw
    stats = {"instr": 0, "faults": 0, "tx": 0, "lwb": 0, "stores": 0}
    cur: dict = {"vec": None, "lines": 0, "tx": 0}

    def lane_addrs(op: int) -> list[int]:
        if op == LDPARAM:  # one offset for every lane (ldparam's immediate), or not
            offsets = [4 * rng.randrange(param_size // 4 + (1 if rng.random() < 0.05 else 0))
                       for _ in range(lanes)]
            return offsets if rng.random() < 0.3 else [offsets[0]] * lanes
        lo, hi = GLOBAL_NULL_GUARD // line_bytes, lsu.memory_bytes // line_bytes
        kind = rng.random()
        if kind < 0.3:  # consecutive words, maybe straddling a line
            base = rng.randrange(GLOBAL_NULL_GUARD, lsu.memory_bytes - 4 * lanes, 4)
            addrs = [base + 4 * l for l in range(lanes)]
        elif kind < 0.45:  # all lanes one word
            addrs = [rng.randrange(GLOBAL_NULL_GUARD, lsu.memory_bytes, 4)] * lanes
        else:  # a few lines
            lines = [rng.randrange(lo, hi) * line_bytes for _ in range(2)]
            addrs = [rng.choice(lines) + 4 * rng.randrange(lw) for _ in range(lanes)]
        if rng.random() < 0.06:  # a bad lane: misaligned, null page or past the end
            l = rng.randrange(lanes)
            addrs[l] = rng.choice([addrs[l] + 2, rng.randrange(0, GLOBAL_NULL_GUARD, 4),
                                   lsu.memory_bytes - 2, lsu.memory_bytes])
        return addrs

    def new_instruction() -> Vector:
        op = rng.choice([LDG, LDG, STG, STG, ATOM, LDPARAM])
        addrs = lane_addrs(op)
        act = rng.randrange(1, 1 << lanes)
        exe = act if rng.random() < 0.8 else act & rng.randrange(1 << lanes)
        data = [rng.getrandbits(32) for _ in range(lanes)]
        cdata = [rng.getrandbits(32) for _ in range(lanes)]
        fn = rng.choice(list(AtomOp)).value
        ex_lanes = [l for l in range(lanes) if exe >> l & 1]
        ea = [(a + param_addr) if op == LDPARAM else a for a in addrs]
        cur["lines"] = (len(ex_lanes) if op == ATOM  # ldparam: one per distinct offset
                        else len({addrs[l] for l in ex_lanes}) if op == LDPARAM
                        else len({ea[l] // line_bytes for l in ex_lanes}))
        cur["tx"] = 0
        return {"valid": 1, "op": op, "fn": fn if op == ATOM else rng.randrange(32),
                "warp": rng.randrange(2), "pc": rng.randrange(1 << 10) * 4,
                "rd": rng.randrange(32), "wr": rng.randrange(2), "active": act, "exec": exe,
                "addr": pack(addrs, 32), "data": pack(data, 32), "cdata": pack(cdata, 32),
                "_addr": addrs, "_data": data, "_cdata": cdata}

    def env(t: int, last: Vector | None) -> Vector:
        if last is not None:
            if last["transaction"]:
                stats["tx"] += 1
                cur["tx"] += 1
                mem.execute(t - 1, last["mem__req__payload"])
            if last["mem__resp__ready"] and mem.queue and mem.queue[0][0] <= t - 1:
                mem.queue.pop(0)
            stats["lwb"] += bool(last["lwb__valid"] and env_state["lwb_ready"])
            if last["fault"]:
                stats["faults"] += 1
            if cur["vec"] is not None and not last["hold"]:
                if not last["fault"]:
                    # one transaction per distinct line of the executing lanes
                    assert cur["tx"] == cur["lines"], (cur, last)
                stats["instr"] += 1
                stats["stores"] += cur["vec"]["op"] == STG
                cur["vec"] = None
        if cur["vec"] is None and rng.random() < 0.8:
            cur["vec"] = new_instruction()
        vec = dict(cur["vec"]) if cur["vec"] is not None else {
            "valid": 0, "op": 0, "fn": 0, "warp": 0, "pc": 0, "rd": 0, "wr": 0, "active": 0,
            "exec": 0, "addr": 0, "data": 0, "cdata": 0, "_addr": [0] * lanes,
            "_data": [0] * lanes, "_cdata": [0] * lanes}
        env_state["lwb_ready"] = int(rng.random() < 0.7)
        due = mem.queue[0] if mem.queue and mem.queue[0][0] <= t else None
        vec.update({
            "shared_last": 64 - 4, "param_addr": param_addr, "param_last": param_size - 4,
            "mem__req__ready": int(rng.random() < 0.7),
            "mem__resp__valid": int(due is not None),
            "mem__resp__payload": pack_fields([(pack(due[1], 32), 32 * lw), (0, 2)])
            if due is not None else 0,
            "lwb__ready": env_state["lwb_ready"], "clear": 0, "clear_row": 0})
        return vec

    env_state = {"lwb_ready": 1}
    stim, want = run_closed_loop(model, env, 3000)
    assert stats["instr"] > 300 and stats["faults"] > 5 and stats["lwb"] > 150, stats
    assert stats["tx"] > stats["instr"] and stats["stores"] > 50, stats
    stim = [{k: v[k] for k in v if not k.startswith("_")} for v in stim]
    check_cycles("lsu", bld, stim, want, "units_lsu_cycles")


# --- dispatcher ---------------------------------------------------------------------------

LAUNCH_FIELDS = [("entry_pc", 32), ("grid", 48), ("block_dim", 48), ("num_threads", 16),
                 ("num_warps", 8), ("param_addr", 32), ("param_size", 16),
                 ("shared_bytes", 32)]


def pack_launch(lc: dict) -> int:
    return pack_fields([(pack(lc[k], 16), w) if w == 48 else (lc[k], w)
                        for k, w in LAUNCH_FIELDS])


class DispatcherModel:
    """Blocks in linear order (x fastest), each to a ready core, the choice rotating from the
    core after the last one served; ``done`` once every block is out and has reported done."""

    def __init__(self, cores: int, max_resident: int):
        self.n = cores
        self.count_mod = 1 << max_resident.bit_length()
        self.launch: dict = {k: (0, 0, 0) if w == 48 else 0 for k, w in LAUNCH_FIELDS}
        self.cur = (0, 0, 0)
        self.all_issued = False
        self.in_flight = 0
        self.running = False
        self.ptr = 0

    def payload(self) -> int:
        """A block: the launch's fields with the block id after ``entry_pc``."""
        word = pack_launch(self.launch)
        return (word & M32) | (pack(self.cur, 16) << 32) | ((word >> 32) << 80)

    def step(self, v: Vector) -> Vector:
        n = self.n
        ready = [v[f"cores__{i}__ready"] for i in range(n)]
        offering = self.running and not self.all_issued
        order = [(self.ptr + k) % n for k in range(n)]
        sel = next((i for i in order if ready[i]), 0)
        handoff = offering and any(ready)
        done = self.running and self.all_issued and self.in_flight == 0
        out = {"busy": int(self.running), "done": int(done)}
        pl = self.payload()
        for i in range(n):
            out[f"cores__{i}__valid"] = int(handoff and sel == i)
            out[f"cores__{i}__payload"] = pl
        finished = sum(v[f"cores__{i}__block_done"] for i in range(n))
        self.in_flight = (self.in_flight + handoff - finished) % self.count_mod
        if handoff:
            self.ptr = 0 if sel == n - 1 else sel + 1
            x, y, z = self.cur
            gx, gy, gz = self.launch["grid"]
            if x + 1 != gx:
                self.cur = (x + 1, y, z)
            elif y + 1 != gy:
                self.cur = (0, y + 1, z)
            elif z + 1 != gz:
                self.cur = (0, 0, z + 1)
            else:
                self.cur = (0, 0, z)
                self.all_issued = True
        if done:
            self.running = False
        if v["start"]:
            self.launch = dict(v["_launch"])
            self.cur, self.all_issued, self.in_flight, self.running = (0, 0, 0), False, 0, True
        if v["abort"]:
            self.running, self.all_issued, self.in_flight = False, True, 0
        return out


def test_dispatcher_cycles():
    bld, dp = build_unit("dispatcher")
    n = dp.n
    rng = random.Random(SEED + 50)
    model = DispatcherModel(n, dp.max_resident)
    cap = [rng.randrange(1, 3) for _ in range(n)]
    resident: list[list[int]] = [[] for _ in range(n)]  # cycles left of each block
    stats = {"launch": 0, "blocks": 0, "done": 0, "abort": 0}
    handed: list[tuple[int, int, int]] = []
    grid: dict = {"g": (1, 1, 1), "aborted": False}

    def launch() -> dict:
        g = (rng.randrange(1, 4), rng.randrange(1, 3), rng.randrange(1, 3))
        return {"entry_pc": rng.randrange(1 << 12) * 4, "grid": g,
                "block_dim": (rng.randrange(1, 65), 1, 1), "num_threads": rng.randrange(1, 65),
                "num_warps": rng.randrange(1, 3), "param_addr": rng.getrandbits(32),
                "param_size": rng.getrandbits(16), "shared_bytes": rng.getrandbits(32)}

    def env(t: int, last: Vector | None) -> Vector:
        for i in range(n):
            resident[i] = [c - 1 for c in resident[i]]
        if last is not None:
            for i in range(n):
                if last[f"cores__{i}__valid"]:
                    resident[i].append(rng.randrange(2, 12))
                    stats["blocks"] += 1
                    pl = last[f"cores__{i}__payload"]
                    handed.append(tuple(unpack(pl >> 32, 16, 3)))
            if last["done"]:
                stats["done"] += 1
                gx, gy, gz = grid["g"]
                order = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
                if not grid["aborted"]:  # (done and abort may fall in one cycle)
                    assert handed == order  # every block once, in linear order
        vec: Vector = {"start": 0, "abort": 0, "_launch": None}
        if not model.running and rng.random() < 0.2:
            lc = launch()
            grid.update(g=lc["grid"], aborted=False)
            handed.clear()
            stats["launch"] += 1
            vec.update(start=1, _launch=lc)
        elif model.running and rng.random() < 0.004:
            stats["abort"] += 1
            vec["abort"] = 1
            grid["aborted"] = True
            for r in resident:  # the host flushes the cores after an abort
                r.clear()
        # between starts the launch input wanders: only its value at start counts
        vec["launch"] = pack_launch(vec["_launch"] or launch())
        for i in range(n):
            finishing = [c for c in resident[i] if c <= 0]
            vec[f"cores__{i}__block_done"] = int(bool(finishing))
            if finishing:
                resident[i].remove(finishing[0])
            vec[f"cores__{i}__ready"] = int(len(resident[i]) < cap[i] and rng.random() < 0.8)
        return vec

    stim, want = run_closed_loop(model, env, 3000)
    assert stats["done"] > 20 and stats["blocks"] > 150, stats
    stim = [{k: v[k] for k in v if not k.startswith("_")} for v in stim]
    check_cycles("dispatcher", bld, stim, want, "units_dispatcher_cycles")

