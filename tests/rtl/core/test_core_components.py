"""The core's own components in the Amaranth simulator, each against a small Python model
written from its docstring contract (instruction buffers, fault recorder, predicate file,
late write-back arbitration, issue selection)."""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.sim import Simulator
from simtgpu.isa import INSTRUCTIONS, Sem
from simtgpu.isa.instructions import Space
from simtgpu.rtl.fault_recorder import FaultRecorder
from simtgpu.rtl.ibuffer import InstrBuffers
from simtgpu.rtl.isa_consts import FaultCause, iid
from simtgpu.rtl.isa_consts import Sem as RSem
from simtgpu.rtl.issue import IssueSelect
from simtgpu.rtl.late_writeback import LateWriteback
from simtgpu.rtl.predicate_file import PredicateFile


def _drive(ctx, port, **values) -> None:
    """``ctx.set`` each named member of ``port`` (the component or one of its interfaces)."""
    for name, value in values.items():
        ctx.set(getattr(port, name), value)


def _run(dut, bench) -> None:
    sim = Simulator(dut)
    sim.add_clock(1e-6, if_exists=True)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_instruction_buffers_against_fifo_model(depth):
    """Pushes, pops (also of a buffer's only entry as another is pushed) and resets against a
    deque per warp: counts, the head and the needs of the entry after it."""
    warps = 3
    dut = InstrBuffers(warps, depth)
    rng = random.Random(11 + depth)

    async def bench(ctx):
        model = [deque() for _ in range(warps)]
        for _ in range(800):
            for w in range(warps):
                assert ctx.get(dut.count[w]) == len(model[w])
                assert ctx.get(dut.valid) >> w & 1 == (len(model[w]) != 0)
                if model[w]:
                    pc, word, _, _ = model[w][0]
                    assert ctx.get(dut.head[w].pc) == pc
                    assert ctx.get(dut.head[w].word) == word
                    # the head's kind, from the buffer's register
                    assert ctx.get(dut.head_kind[w].as_value()) == model[w][0][3]
                if len(model[w]) > 1:
                    assert ctx.get(dut.next_needs[w]) == model[w][1][2]
            room = [w for w in range(warps) if len(model[w]) < depth]
            full = [w for w in range(warps) if model[w]]
            push = bool(room) and rng.random() < 0.6
            pop = bool(full) and rng.random() < 0.6
            pushed_into = [w for w in room if len(model[w]) == 1 and w in full]
            if push and pop and pushed_into and rng.random() < 0.3:
                pw = qw = rng.choice(pushed_into)  # the only entry leaves as the next arrives
            else:
                pw = rng.choice(room) if push else rng.randrange(warps)
                qw = rng.choice(full) if pop else rng.randrange(warps)
            reset = rng.random() < 0.02
            # a block arriving beside others empties its own warps' buffers only
            reset_warps = rng.getrandbits(warps) if rng.random() < 0.03 else 0
            entry = (rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(40),
                     rng.getrandbits(3))
            _drive(ctx, dut, push=push, push_warp=pw, pop=pop, pop_warp=qw, reset=reset,
                   reset_warps=reset_warps)
            _drive(ctx, dut.entry, pc=entry[0], word=entry[1], needs=entry[2])
            _drive(ctx, dut.entry.kind, fence=entry[3] & 1, sfu=entry[3] >> 1 & 1,
                   mma=entry[3] >> 2)
            await ctx.tick()
            if pop:
                model[qw].popleft()
            if push:
                model[pw].append(entry)
            if reset:
                model = [deque() for _ in range(warps)]
            for w in range(warps):
                if reset_warps >> w & 1:
                    model[w] = deque()

    _run(dut, bench)


def test_fault_recorder_priority_and_hold():
    """Random simultaneous fault sources: the first one (mem, stack, divergent bar, divergent
    mma, barrier deadlock, issue) is recorded, held until flush (``stop`` from the next
    cycle, ``fault.valid`` and the record one cycle later), and the deadlock names the
    lowest waiting warp with the pc and word of its bar. From the first fault to the flush,
    ``dead`` names every warp whose instruction faulted in mem (from the next cycle), and
    ``kill`` every warp whose instruction faults or faulted in mem or ex1 (in the same cycle
    too), recorded or not; an illegal head and a deadlock name none (nothing younger of
    their warp was issued). An issue fault's pc and word are those the port shows in the
    cycle after it (the core's ``is_rr`` register then). While a fault is held, a fault of
    the recorded warp from an older stage (mem over ex1, a deadlock or an issue fault; ex1
    over a deadlock or an issue fault) replaces the record from the next edge: it is an
    older instruction's, still in flight when the younger one faulted."""
    warps, lanes = 4, 8
    dut = FaultRecorder(warps, lanes)
    rng = random.Random(3)
    mem_causes = [FaultCause.OUT_OF_RANGE, FaultCause.MISALIGNED]
    stack_causes = [FaultCause.STACK_OVERFLOW, FaultCause.STACK_UNDERFLOW]

    async def bench(ctx):
        held, record, dead, dead_ex1 = False, None, 0, 0
        rank, upcoming = 0, None  # the recorded source's rank; a replacement, shown next
        replaced = 0
        bar_at = [(0, 0)] * warps  # pc and word of each warp's last bar
        live = [rng.getrandbits(lanes) for _ in range(warps)]
        for w in range(warps):
            ctx.set(dut.live[w], live[w])
        block = (5, 6, 7)
        ctx.set(dut.block.x, block[0])
        ctx.set(dut.block.y, block[1])
        ctx.set(dut.block.z, block[2])
        valid = False  # fault.valid: held in the last cycle and no flush then
        issue_taken = None  # an issue fault taken at the last edge, its pc and word to come
        for step in range(1500):
            assert ctx.get(dut.stop) == held, step
            assert ctx.get(dut.fault.valid) == valid, step
            assert ctx.get(dut.dead) == dead, step
            if valid:
                rec = dut.fault.record
                got = (ctx.get(rec.cause).value, ctx.get(rec.warp), ctx.get(rec.lane_mask),
                       ctx.get(rec.pc), ctx.get(rec.instr))
                assert got == record, step
                assert (ctx.get(rec.block.x), ctx.get(rec.block.y),
                        ctx.get(rec.block.z)) == block

            def src(port):
                v = dict(warp=rng.randrange(warps), lanes=rng.getrandbits(lanes),
                         pc=rng.getrandbits(32), word=rng.getrandbits(32))
                _drive(ctx, port, **v)
                return v

            mem, ex1, iss = src(dut.mem), src(dut.ex1), src(dut.issue)
            if issue_taken is not None:  # last cycle's issue fault reads pc and word now
                cause, warp, lanes_, pc_fault_then = issue_taken
                record = (cause, warp, lanes_, iss["pc"], 0 if pc_fault_then else iss["word"])
                issue_taken = None
            raise_ = {k: rng.random() < 0.15 for k in
                      ("mem", "stack", "divergent", "mma", "deadlock", "issue")}
            mem_cause, stack_cause = rng.choice(mem_causes), rng.choice(stack_causes)
            pc_fault = rng.random() < 0.5
            arrive = rng.random() < 0.3
            arrive_warp = rng.randrange(warps)
            waiting = rng.getrandbits(warps)
            running = rng.random() < 0.9
            flush = rng.random() < 0.05
            _drive(ctx, dut.mem, valid=raise_["mem"], cause=mem_cause)
            _drive(ctx, dut.ex1, stack=raise_["stack"], stack_cause=stack_cause,
                   divergent=raise_["divergent"], divergent_mma=raise_["mma"])
            _drive(ctx, dut.bar, deadlock=raise_["deadlock"], arrive=arrive, warp=arrive_warp,
                   waiting=waiting)
            _drive(ctx, dut.issue, valid=raise_["issue"], pc_fault=pc_fault)
            _drive(ctx, dut, running=running, flush=flush)
            raised_mem = 1 << mem["warp"] if raise_["mem"] else 0
            raised_ex1 = (1 << ex1["warp"] if raise_["stack"] or raise_["divergent"]
                          or raise_["mma"] else 0)
            now = raised_mem | raised_ex1 if held or running else 0
            assert ctx.get(dut.kill) == dead | dead_ex1 | now, step
            # entering ex1: the stack's fault of this cycle left out (its warp has nothing
            # behind it), the barrier's and the mma's kept
            raised_bar = 1 << ex1["warp"] if raise_["divergent"] or raise_["mma"] else 0
            now_entry = raised_mem | raised_bar if held or running else 0
            assert ctx.get(dut.kill_entry) == dead | dead_ex1 | now_entry, step
            assert ctx.get(dut.kill_ex1) == (dead | dead_ex1 | now) >> ex1["warp"] & 1, step
            await ctx.tick()

            ex1_new = None  # the first ex1 source's record
            if raise_["stack"]:
                ex1_new = (stack_cause, ex1["warp"], ex1["lanes"], ex1["pc"], ex1["word"])
            elif raise_["divergent"]:
                ex1_new = (FaultCause.DIVERGENT_BARRIER, ex1["warp"], ex1["lanes"], ex1["pc"],
                           ex1["word"])
            elif raise_["mma"]:
                ex1_new = (FaultCause.DIVERGENT_MMA, ex1["warp"], ex1["lanes"], ex1["pc"],
                           ex1["word"])
            new, new_is_issue, new_rank = None, False, None
            if raise_["mem"]:
                new, new_rank = (mem_cause, mem["warp"], mem["lanes"], mem["pc"], mem["word"]), 0
            elif ex1_new is not None:
                new, new_rank = ex1_new, 1
            elif raise_["deadlock"]:
                arrived = waiting | (1 << arrive_warp if arrive else 0)
                first = next((w for w in range(warps) if arrived >> w & 1), 0)
                pc, word = ((ex1["pc"], ex1["word"]) if arrive and arrive_warp == first
                            else bar_at[first])
                new, new_rank = (FaultCause.BARRIER_DEADLOCK, first, live[first], pc, word), 2
            elif raise_["issue"]:
                new_is_issue, new_rank = True, 3  # its pc and word come in the next cycle
                new = ((FaultCause.PC_OUT_OF_RANGE, iss["warp"], iss["lanes"], None, 0)
                       if pc_fault else
                       (FaultCause.ILLEGAL_INSTRUCTION, iss["warp"], iss["lanes"], None, None))
            if upcoming is not None:  # the last edge wrote it
                record, upcoming = upcoming, None
            was_held = held
            valid = held and not flush
            if flush:
                held, dead, dead_ex1 = False, 0, 0
            elif was_held:
                dead |= raised_mem
                dead_ex1 |= raised_ex1
                # a later fault of the recorded warp from an older source (mem over the
                # others, ex1 over a deadlock or an issue fault) replaces the record, from
                # the next edge
                if raise_["mem"] and rank > 0 and mem["warp"] == record[1]:
                    rank, replaced = 0, replaced + 1
                    upcoming = (mem_cause.value, mem["warp"], mem["lanes"], mem["pc"],
                                mem["word"])
                elif ex1_new is not None and rank > 1 and ex1["warp"] == record[1]:
                    rank, upcoming = 1, (ex1_new[0].value, *ex1_new[1:])
                    replaced += 1
            if not was_held and running and new is not None:
                held, record, rank = True, (new[0].value, *new[1:]), new_rank
                dead, dead_ex1 = raised_mem, raised_ex1
                if new_is_issue:
                    issue_taken = (new[0].value, new[1], new[2], pc_fault)
            if arrive:
                bar_at[arrive_warp] = (ex1["pc"], ex1["word"])
        assert replaced > 10, replaced

    _run(dut, bench)


def test_predicate_file_against_model():
    warps, lanes = 3, 4
    dut = PredicateFile(warps, lanes)
    rng = random.Random(8)

    async def bench(ctx):
        model = [[0] * lanes for _ in range(warps)]
        for _ in range(600):
            rw = rng.randrange(warps)
            ctx.set(dut.rwarp, rw)
            for l in range(lanes):
                assert ctx.get(dut.rdata[l]) == model[rw][l]
            we, ww, idx = rng.random() < 0.7, rng.randrange(warps), rng.randrange(7)
            mask, bits, reset = rng.getrandbits(lanes), rng.getrandbits(lanes), rng.random() < 0.03
            reset_warps = rng.getrandbits(warps) if rng.random() < 0.03 else 0
            _drive(ctx, dut, we=we, wwarp=ww, widx=idx, wmask=mask, wdata=bits, reset=reset,
                   reset_warps=reset_warps)
            await ctx.tick()
            written = {}
            if we:
                for l in range(lanes):
                    if mask >> l & 1:
                        p = model[ww][l] & ~(1 << idx)
                        written[l] = p | (bits >> l & 1) << idx
            if reset:
                model = [[0] * lanes for _ in range(warps)]
            for w in range(warps):
                if reset_warps >> w & 1:
                    model[w] = [0] * lanes
            for l, v in written.items():
                model[ww][l] = v

    _run(dut, bench)


def test_late_writeback_arbitration():
    """wb first, then the LSU's late write-back, then the SFU, then the matrix unit;
    ``wait`` without a bubble; ``clear`` is the taken source's clear, zero otherwise."""
    warps, lanes = 4, 4
    dut = LateWriteback(warps, lanes)
    rng = random.Random(21)

    async def bench(ctx):
        for step in range(400):
            wb_valid, deferred = rng.random() < 0.5, rng.random() < 0.3
            wr_reg, wr_pred = rng.random() < 0.7, rng.random() < 0.3
            lwb_valid, lwb_wr = rng.random() < 0.5, rng.random() < 0.8
            sfu_valid, sfu_wr, stale = rng.random() < 0.5, rng.random() < 0.8, rng.random() < 0.2
            mma_valid, mma_retire = rng.random() < 0.5, rng.random() < 0.5
            bubble = rng.random() < 0.5
            src = {n: dict(warp=rng.randrange(warps), rd=rng.randrange(32),
                           exec=rng.getrandbits(lanes), pc=rng.getrandbits(32),
                           active=rng.getrandbits(lanes),
                           values=[rng.getrandbits(32) for _ in range(lanes)])
                   for n in ("wb", "lwb", "sfu", "mma")}
            src["mma"]["rd"] = rng.choice((0, rng.randrange(32)))  # r0: cleared, not written
            ports = {"wb": dut.wb, "lwb": dut.lwb.p, "sfu": dut.sfu, "mma": dut.mma}
            for n, port in ports.items():
                for k, v in src[n].items():
                    if k == "values":
                        for l in range(lanes):
                            ctx.set(port.values[l], v[l])
                    else:
                        _drive(ctx, port, **{k: v})
            _drive(ctx, dut.wb, valid=wb_valid, deferred=deferred, wr_reg=wr_reg, wr_pred=wr_pred)
            _drive(ctx, dut.lwb, valid=lwb_valid)
            _drive(ctx, dut.lwb.p, wr=lwb_wr)
            _drive(ctx, dut.sfu, valid=sfu_valid, wr=sfu_wr, stale=stale)
            _drive(ctx, dut.mma, valid=mma_valid, retire=mma_retire, retire_rd=src["mma"]["rd"])
            _drive(ctx, dut, bubble_coming=bubble)

            if wb_valid and not deferred:
                who, writes, retires = "wb", wr_reg, True
            elif wb_valid:
                who, writes, retires = None, False, False
            elif lwb_valid:
                who, writes, retires = "lwb", lwb_wr, True
            elif sfu_valid:
                who, writes, retires = "sfu", sfu_wr, not stale
            elif mma_valid:
                who, writes, retires = "mma", src["mma"]["rd"] != 0, mma_retire
            else:
                who, writes, retires = None, False, False
            assert ctx.get(dut.lwb.ready) == (not wb_valid)
            assert ctx.get(dut.sfu_take) == (who == "sfu")
            assert ctx.get(dut.mma_take) == (who == "mma")
            assert ctx.get(dut.wait) == ((lwb_valid or sfu_valid or mma_valid) and not bubble)
            s = src[who] if who else None
            assert ctx.get(dut.rf.we) == (s["exec"] if writes else 0), step
            if writes:
                assert (ctx.get(dut.rf.warp), ctx.get(dut.rf.rd)) == (s["warp"], s["rd"])
                assert [ctx.get(dut.rf.data[l]) for l in range(lanes)] == s["values"]
            # an mma's register clears even when it is r0 (nothing written)
            clears = who in ("lwb", "sfu") and writes or who == "mma"
            assert ctx.get(dut.clear.en) == clears
            assert (ctx.get(dut.clear.warp), ctx.get(dut.clear.idx)) == (
                (s["warp"], s["rd"]) if clears else (0, 0)), step
            for i, n in enumerate(("lwb", "sfu", "mma")):  # per source: the taken one's
                port = dut.clears[i]
                assert ctx.get(port.en) == (who == n and clears), (step, n)
                if who == n and clears:
                    assert (ctx.get(port.warp), ctx.get(port.idx)) == (s["warp"], s["rd"])
            assert ctx.get(dut.retire.valid) == retires
            if retires:
                assert (ctx.get(dut.retire.warp), ctx.get(dut.retire.pc),
                        ctx.get(dut.retire.mask)) == (s["warp"], s["pc"], s["active"])

    _run(dut, bench)


def _needs(d: dict, regs: int) -> int:
    """Scoreboard bits of a decoded head, from the ISA's operand rules: registers read or
    written, then the predicates (guard, predicate sources, predicate destination; pt never)."""
    bits = 0
    for idx, used in ((d["rs1"], d["rd_rs1"]), (d["rs2"], d["rd_rs2"]), (d["rs3"], d["rd_rs3"]),
                      (d["rd"], d["rd_rd"] or d["wr_reg"])):
        if used:
            bits |= 1 << idx
    for idx, used in ((d["guard"], True), (d["rs1"] & 7, d["rd_ps1"]),
                      (d["rs2"] & 7, d["rd_ps2"]), (d["rs3"] & 7, d["rd_ps3"]),
                      (d["rd"] & 7, d["wr_pred"])):
        if used and idx != 7:
            bits |= 1 << (regs + idx)
    return bits


def _dests(d: dict, regs: int) -> int:
    """The scoreboard bits an issue sets: a predicate, an mma's group, a register."""
    if d["wr_pred"]:
        return 1 << (regs + (d["rd"] & 7))
    if d["sem"] == RSem.MMA:
        return 0xF << d["rd"]
    return 1 << d["rd"] if d["wr_reg"] else 0


def _needs_mma(d: dict, regs: int, b_regs: int) -> int:
    """An ``mma``'s scoreboard bits: its A, C and D groups of four registers and its B group of
    ``b_regs`` (bits past the last register are dropped), plus the predicates as any other."""
    bits = 0
    for base, n in ((d["rs1"], 4), (d["rs2"], b_regs), (d["rs3"], 4), (d["rd"], 4)):
        bits |= ((1 << n) - 1) << base
    return bits & ((1 << regs) - 1) | _needs(d, regs) & ~((1 << regs) - 1)


@pytest.mark.parametrize("b_regs", [2, 4])
def test_needs_against_the_operand_rules(b_regs):
    """The scoreboard mask ``id`` writes into an instruction-buffer entry, for random decoded
    fields, ordinary instructions and ``mma`` alike."""
    from amaranth import Module, Signal
    from simtgpu.rtl.issue import needs
    from simtgpu.rtl.layouts import DECODED

    regs = 32
    dec = Signal(DECODED)
    m = Module()
    out = needs(m, dec, regs, b_regs)
    rng = random.Random(5 + b_regs)
    flags = ("wr_reg", "wr_pred", "rd_rs1", "rd_rs2", "rd_rs3", "rd_ps1", "rd_ps2", "rd_ps3",
             "rd_rd")

    async def bench(ctx):
        for step in range(600):
            d = {f: rng.random() < 0.4 for f in flags}
            d.update(rd=rng.randrange(regs), rs1=rng.randrange(regs), rs2=rng.randrange(regs),
                     rs3=rng.randrange(regs), guard=rng.choice([7, rng.randrange(8)]))
            mma = rng.random() < 0.3
            for k, v in d.items():
                ctx.set(getattr(dec, k), v)
            ctx.set(dec.sem, RSem.MMA if mma else RSem.INT)
            want = _needs_mma(d, regs, b_regs) if mma else _needs(d, regs)
            assert ctx.get(out) == want, (step, d, mma)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_issue_select_against_model():
    """Hazard, parked, structural and eligible per warp; the round-robin pick; the barrier
    hold, long-latency registers and store counts it keeps, also when some warps alone are
    reset (a block arriving beside others)."""
    warps, regs = 4, 32
    dut = IssueSelect(warps, regs)
    rng = random.Random(17)
    long_iids = {iid(i.mnemonic) for i in INSTRUCTIONS
                 if i.sem in (Sem.LOAD, Sem.ATOMIC, Sem.PARAM) and i.space is not Space.SHARED}
    mma = next(i.mnemonic for i in INSTRUCTIONS if i.sem is Sem.MMA)
    iids = [iid("fence"), iid("bar"), iid("add"), iid("ldg"), iid("lds"), iid("ldparam"),
            iid("sfu.rcp"), iid(mma)]
    flags = ("wr_reg", "wr_pred", "rd_rs1", "rd_rs2", "rd_rs3", "rd_ps1", "rd_ps2", "rd_ps3",
             "rd_rd", "illegal")

    async def bench(ctx):
        last = warps - 1
        bar_hold, long, stores = [0] * warps, [0] * warps, [0] * warps
        for step in range(1500):
            heads = []
            for w in range(warps):
                d = {f: rng.random() < 0.3 for f in flags}
                d["illegal"] = rng.random() < 0.03
                d.update(rd=rng.randrange(regs), rs1=rng.randrange(regs), rs2=rng.randrange(regs),
                         rs3=rng.randrange(regs), guard=rng.choice([7, 7, rng.randrange(7)]),
                         iid=rng.choice(iids))
                d["sem"] = {iid("sfu.rcp"): RSem.SFU, iid(mma): RSem.MMA}.get(d["iid"], RSem.INT)
                if d["sem"] == RSem.MMA:
                    d["rd"] &= ~3  # a legal mma's destination group is aligned
                pc_fault = rng.random() < 0.03
                heads.append((d, pc_fault))
                for k, v in d.items():
                    ctx.set(getattr(dut.head[w].dec, k), v)
                ctx.set(dut.head[w].pc_fault, pc_fault)
                ctx.set(dut.head[w].needs, _needs(d, regs))  # as id works it out (below)
                for kind in (dut.head[w].kind, dut.head_kind[w]):  # the buffer's register too
                    ctx.set(kind.fence, d["iid"] == iid("fence"))
                    ctx.set(kind.sfu, d["sem"] == RSem.SFU)
                    ctx.set(kind.mma, d["sem"] == RSem.MMA)
                ctx.set(dut.head[w].dests, _dests(d, regs))
            valid = rng.getrandbits(warps)
            runnable = rng.getrandbits(warps) | rng.getrandbits(warps)
            pending = [rng.getrandbits(regs + 8) & rng.getrandbits(regs + 8) for _ in range(warps)]
            sfu_busy, enable = rng.random() < 0.3, rng.random() < 0.8
            clears = [(rng.random() < 0.5, rng.randrange(warps), rng.randrange(regs),
                       rng.random() < 0.2) for _ in range(2)]
            sent, sent_w = rng.random() < 0.3, rng.randrange(warps)
            acked_w = rng.choice([w for w in range(warps) if stores[w]] or [0])
            acked = stores[acked_w] > 0 and rng.random() < 0.3
            release, release_warps = rng.random() < 0.1, rng.getrandbits(warps)
            reset = rng.random() < 0.01
            # a block arriving beside others resets its warps alone
            reset_warps = rng.getrandbits(warps) if rng.random() < 0.03 else 0
            for name, v in (("reset_warps", reset_warps),
                            ("valid", valid), ("runnable", runnable), ("sfu_busy", sfu_busy),
                            ("enable", enable), ("store_sent", sent), ("store_sent_warp", sent_w),
                            ("store_acked", acked), ("store_acked_warp", acked_w),
                            ("release", release), ("release_warps", release_warps),
                            ("reset", reset)):
                ctx.set(getattr(dut, name), v)
            for w in range(warps):
                ctx.set(dut.pending[w], pending[w])
            # the hazard register holds each head's hazard of this cycle (HazardAhead)
            ctx.set(dut.hazard_q, sum(((_needs(d, regs) & pending[w]) != 0) << w
                                      for w, (d, _) in enumerate(heads)))
            for i, (en, w, idx, pred) in enumerate(clears):
                ctx.set(dut.clear[i].en, en)
                ctx.set(dut.clear[i].warp, w)
                ctx.set(dut.clear[i].idx, idx)
                ctx.set(dut.clear[i].pred, pred)

            eligible = []
            for w, (d, _) in enumerate(heads):
                has = valid >> w & 1
                haz_bits = _needs(d, regs) & pending[w]
                park = (haz_bits & ((1 << regs) - 1) & long[w]) != 0 or (
                    d["iid"] == iid("fence") and stores[w] != 0)
                busy = d["sem"] == RSem.SFU and sfu_busy
                go = not bar_hold[w] and runnable >> w & 1
                hazard = has and haz_bits != 0 and not park
                structural = has and busy and not haz_bits and not park and go
                assert ctx.get(dut.hazard) >> w & 1 == bool(hazard), (step, w)
                assert ctx.get(dut.parked) >> w & 1 == bool(has and park), (step, w)
                assert ctx.get(dut.structural) >> w & 1 == bool(structural), (step, w)
                if has and not haz_bits and not park and not busy and go:
                    eligible.append(w)
            assert ctx.get(dut.bar_hold) == sum(b << w for w, b in enumerate(bar_hold))
            pick = next((w for w in eligible if w > last), eligible[0] if eligible else None)
            issue = pick is not None and enable
            assert ctx.get(dut.issue) == issue, step
            ok = False
            if issue:
                d, pc_fault = heads[pick]
                fault = d["illegal"] or pc_fault
                ok = not fault
                assert ctx.get(dut.warp) == pick
                assert (ctx.get(dut.fault), ctx.get(dut.ok)) == (fault, ok)
                assert ctx.get(dut.entry.dec.rd) == d["rd"]
            for w, (d, _) in enumerate(heads):
                sets = _dests(d, regs) if ok and pick == w else 0
                assert ctx.get(dut.sets[w]) == sets, (step, w)
            await ctx.tick()

            for w in range(warps):
                if ok and pick == w and heads[w][0]["iid"] == iid("bar"):
                    bar_hold[w] = 1
                elif (release and release_warps >> w & 1) or reset or reset_warps >> w & 1:
                    bar_hold[w] = 0
                for en, cw, idx, pred in clears:
                    if en and not pred and cw == w:
                        long[w] &= ~(1 << idx)
                stores[w] += (sent and sent_w == w) - (acked and acked_w == w)
            if ok:
                d = heads[pick][0]
                if d["sem"] == RSem.MMA:
                    long[pick] |= 0xF << d["rd"]
                elif d["wr_reg"] and (d["iid"] in long_iids or d["sem"] == RSem.SFU):
                    long[pick] |= 1 << d["rd"]
            for w in range(warps):
                if reset_warps >> w & 1:
                    long[w], stores[w] = 0, 0
            if reset:
                long, stores, last = [0] * warps, [0] * warps, warps - 1
            elif issue:
                last = pick

    _run(dut, bench)


@pytest.mark.parametrize("depth", [1, 3])
def test_hazard_ahead_equals_the_hazard_of_the_cycle(depth):
    """HazardAhead's register against ``(head.needs & pending) != 0`` worked out in the cycle
    itself, on a model of the instruction buffers and of the scoreboard's pending bits: pops
    of the head (with ``dests`` set), pushes into empty and one-entry buffers (also beside a
    pop of the only entry), clears (of either outcome of ``take0``, which chooses one after
    the edge), every warp with a head checked every cycle."""
    from simtgpu.rtl.hazard_ahead import HazardAhead

    warps, regs, width = 3, 32, 40
    dut = HazardAhead(warps, depth, regs)
    rng = random.Random(23 + depth)

    def bits():  # a sparse mask, so that hazards come and go
        return rng.getrandbits(width) & rng.getrandbits(width) & rng.getrandbits(width)

    async def bench(ctx):
        bufs = [deque() for _ in range(warps)]  # entries: (needs, dests)
        pending = [bits() for _ in range(warps)]
        checked = 0
        for step in range(1500):
            if step:
                for w in range(warps):
                    if bufs[w]:
                        want = (bufs[w][0][0] & pending[w]) != 0
                        assert (ctx.get(dut.hazard) >> w & 1) == want, (step, w)
                        checked += 1
            full = [w for w in range(warps) if bufs[w]]
            pop = bool(full) and rng.random() < 0.5
            qw = rng.choice(full) if pop else rng.randrange(warps)
            room = [w for w in range(warps) if len(bufs[w]) < depth or (pop and w == qw)]
            push = bool(room) and rng.random() < 0.6
            pw = rng.choice(room) if push else rng.randrange(warps)
            entry = (bits(), 1 << rng.randrange(width))
            clearing = [bits() for _ in range(warps)]
            clearing_held = [bits() for _ in range(warps)]
            take0 = rng.random() < 0.6
            ctx.set(dut.take0, take0)
            for w in range(warps):
                b = list(bufs[w])
                ctx.set(dut.count[w], len(b))
                ctx.set(dut.head_needs[w], b[0][0] if b else rng.getrandbits(width))
                ctx.set(dut.next_needs[w], b[1][0] if len(b) > 1 else rng.getrandbits(width))
                ctx.set(dut.dests[w], b[0][1] if b else rng.getrandbits(width))
                ctx.set(dut.pending[w], pending[w])
                ctx.set(dut.clearing[w], clearing[w])
                ctx.set(dut.clearing_held[w], clearing_held[w])
            _drive(ctx, dut, pop=pop, pop_warp=qw, push=push, push_warp=pw,
                   push_needs=entry[0])
            await ctx.tick()
            sets = [0] * warps
            if pop:
                sets[qw] = bufs[qw].popleft()[1]
            if push:
                bufs[pw].append(entry)
            freed = clearing if take0 else clearing_held
            pending = [(pending[w] | sets[w]) & ~freed[w] | (bits() if not bufs[w] else 0)
                       for w in range(warps)]
        assert checked > 1500

    _run(dut, bench)


def test_warp_waits_against_the_first_match_rule():
    """Every input combination of two warps against the rule written out in Python."""
    from simtgpu.rtl.warp_wait import WarpWait, WarpWaits

    warps = 2
    dut = WarpWaits(warps)
    names = ("runnable", "valid", "hazard", "parked", "structural", "bar_hold")

    def expect(bits: dict, issued: int, pick: int, w: int) -> WarpWait:
        if not bits["runnable"] >> w & 1:
            return WarpWait.IDLE
        if issued and pick == w:
            return WarpWait.ISSUE
        for name, reason in (("bar_hold", WarpWait.BARRIER), ("valid", WarpWait.FETCH),
                             ("parked", WarpWait.MEMORY), ("hazard", WarpWait.HAZARD),
                             ("structural", WarpWait.SFU)):
            bit = bits[name] >> w & 1
            if (not bit) if name == "valid" else bit:  # "valid" low: nothing buffered
                return reason
        return WarpWait.READY

    async def bench(ctx):
        for code in range(1 << (2 * len(names) + 2)):
            bits = {n: (code >> (2 * k)) & 3 for k, n in enumerate(names)}
            issued, pick = code >> (2 * len(names)) & 1, code >> (2 * len(names) + 1) & 1
            for n, v in bits.items():
                ctx.set(getattr(dut, n), v)
            ctx.set(dut.issued, issued)
            ctx.set(dut.warp, pick)
            for w in range(warps):
                assert ctx.get(dut.wait[w]) == expect(bits, issued, pick, w), (bits, w)

    _run(dut, bench)


@pytest.mark.parametrize("lanes", [4, 8])
def test_lsu_prep_against_the_address_rules(lanes):
    """``ex2``'s part of the LSU for random addresses of every op: the shared word (block base
    added), the fault and its lanes (out of range before misaligned, as the ISS), and which
    lane pairs never share a transaction or a round (global: other lines; shared: the same
    bank at another word; ldparam: another offset, every lane's the same in a legal program;
    atomics: all); for ld.s and st.s, the pairs in one bank and each bank's first lane."""
    from simtgpu.isa import GLOBAL_NULL_GUARD
    from simtgpu.rtl.lsu import LsuOp, LsuPrep
    from simtgpu.rtl.shared_memory import lane_pairs

    line_words, shared_bytes, memory_bytes = 4, 1024, 1 << 16
    dut = LsuPrep(lanes, line_words, shared_bytes, memory_bytes)
    rng = random.Random(23 + lanes)
    rows = shared_bytes // (4 * lanes)
    word_mask = (1 << dut.word_bits) - 1

    async def bench(ctx):
        for step in range(800):
            op = rng.choice([o for o in LsuOp if o != LsuOp.NONE])
            shared = op in (LsuOp.LDS, LsuOp.STS, LsuOp.ATOMS)
            size = rng.choice([shared_bytes, 0, 4 * lanes * rng.randrange(1, rows)])
            base = 4 * lanes * rng.randrange(rows)  # a block starts at a whole row
            pool = [4 * rng.randrange(size // 4 + 1) for _ in range(3)]  # repeated words
            addrs = []
            for _ in range(lanes):
                a = rng.choice(pool) if shared else rng.choice(
                    [rng.randrange(0, memory_bytes + 64, 4),  # and the memory's last words
                     memory_bytes - 4 * rng.randrange(-2, 3)])
                if rng.random() < 0.05:
                    a += rng.randrange(1, 4)  # misaligned
                addrs.append(a)
            if op == LsuOp.LDPARAM and rng.random() < 0.8:  # ldparam's one immediate
                addrs = [addrs[0]] * lanes
            exe = rng.randrange(1 << lanes)
            param_addr, param_size = 0x2000, rng.randrange(0, 256, 4)
            for name, v in (("op", op), ("fn", 0), ("exec", exe), ("shared_last", size - 4),
                            ("shared_base", base), ("param_addr", param_addr),
                            ("param_last", param_size - 4)):
                ctx.set(getattr(dut, name), v)
            for l, a in enumerate(addrs):
                ctx.set(dut.addr[l], a)
            words = [((a + base) >> 2) & word_mask for a in addrs]
            for l in range(lanes):
                assert ctx.get(dut.q.word[l]) == words[l], (step, l)
            oor = [(a + 4 > size) if shared else (a + 4 > param_size) if op == LsuOp.LDPARAM
                   else (a < GLOBAL_NULL_GUARD or a + 4 > memory_bytes) for a in addrs]
            bad_oor = sum(1 << l for l in range(lanes) if exe >> l & 1 and oor[l])
            bad_mis = sum(1 << l for l in range(lanes) if exe >> l & 1 and addrs[l] & 3)
            assert ctx.get(dut.q.fault) == bool(bad_oor or bad_mis), step
            if bad_oor or bad_mis:
                assert ctx.get(dut.q.fault_lanes) == (bad_oor or bad_mis), step
                assert ctx.get(dut.q.fault_cause) == (FaultCause.OUT_OF_RANGE if bad_oor
                                                      else FaultCause.MISALIGNED), step
            ea = [a + param_addr if op == LsuOp.LDPARAM else a for a in addrs]
            for p, (i, j) in enumerate(lane_pairs(lanes)):
                if op in (LsuOp.ATOM, LsuOp.ATOMS):
                    want = True
                elif op in (LsuOp.LDS, LsuOp.STS):
                    want = words[i] % lanes == words[j] % lanes and words[i] != words[j]
                elif op == LsuOp.LDPARAM:
                    want = addrs[i] != addrs[j]
                else:
                    want = ea[i] // (4 * line_words) != ea[j] // (4 * line_words)
                assert ctx.get(dut.q.split) >> p & 1 == want, (step, op, i, j)
            if op in (LsuOp.LDS, LsuOp.STS):  # each bank's lowest executing lane leads
                bank = [w % lanes for w in words]
                for p, (i, j) in enumerate(lane_pairs(lanes)):
                    assert ctx.get(dut.q.same_bank) >> p & 1 == (bank[i] == bank[j]), (step, i, j)
                lead = sum(1 << f for f in range(lanes) if exe >> f & 1 and not any(
                    exe >> j & 1 and bank[j] == bank[f] for j in range(f)))
                assert ctx.get(dut.q.banks_lead) == lead, (step, exe, bank)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
