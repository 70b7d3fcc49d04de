"""Fault recorder: the core's first fault, kept until ``flush``.

Faults are raised by four stages and units; when several are raised in the same cycle the
oldest instruction's wins: ``mem`` (the LSU: misaligned or out-of-range access), then ``ex1``
(a SIMT stack fault, then a divergent ``bar`` or ``mma``), then the barrier unit (deadlock or
watchdog), then ``is`` (illegal instruction, fetch past the code). Once a fault is recorded the core
fetches and issues nothing more, and later faults are left out of the record, but for one
kind: a fault of the recorded warp from an older stage (``mem`` after an ``ex1``, barrier or
``is`` fault; ``ex1`` after a barrier or ``is`` fault). It is an older instruction's, still on
its way when the younger one faulted, the one the ISS meets first, and it replaces the
record. The record is final when the core has drained (``settling`` is low).

Faults are precise for every warp that raises one, not only the recorded one, and in both
directions: what is older than the faulting instruction completes, what is younger (and the
faulting instruction itself) leaves no trace. Which instructions are younger follows from
where the fault is raised:

- in ``mem``: every instruction of the warp behind it. ``dead`` names these warps (from the
  next cycle); the core drops their instructions as they reach ``mem``.
- in ``ex1`` (as the instruction acts: its first cycle there in which the SIMT stack can
  take it, even while ``mem`` holds): the faulting instruction and everything of the warp
  behind ``ex1``; the older ones in ``ex2`` and ``mem`` complete. ``kill`` names these
  warps and the ``mem`` ones, already in the cycle of the fault; the core drops their
  instructions as they enter (``kill_entry``) and as they leave (``kill``) ``ex1``.
  ``kill_entry`` leaves out the SIMT stack's fault of the cycle: the instructions that reach
  the stack move the pc, so their warp's fetch stops as one enters the instruction buffer
  (what is fetched behind it is dropped) until the stack answers, and nothing of its warp
  is behind ``ex1`` while it acts; the stack's answer, late in its cycle, does not reach the
  entry to ``ex1`` (from the next cycle ``kill_entry`` holds the warp too).
- at issue (an illegal head) and in a barrier deadlock: nothing younger of the warp has been
  issued (a ``bar`` holds its warp's issue), so nothing is dropped; the deadlocking ``bar``
  retires, as on the ISS.

Every warp that raises a fault in ``mem`` or ``ex1``, in the cycle of the first fault or
later, is named, not only the recorded one: a second warp's divergent ``bar`` right behind
the first one's would otherwise retire as if it had executed.

A barrier deadlock names the lowest-numbered waiting warp, counting one arriving in this
cycle (the deadlock is raised as the last live warp arrives), with its live mask and the pc
and word of its ``bar``, which the recorder notes as each warp arrives.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import layouts
from .isa_consts import FaultCause
from .params import require_positive
from .signatures import dim3_layout, fault_signature


def fault_source_signature(warps: int, lanes: int, **extra) -> wiring.Signature:
    """A stage's view of its instruction for a fault record (from the stage's side)."""
    wb = max(1, (warps - 1).bit_length())
    return wiring.Signature({"warp": Out(wb), "lanes": Out(lanes), "pc": Out(32),
                             "word": Out(32), **{k: Out(v) for k, v in extra.items()}})


class FaultRecorder(wiring.Component):
    """Parameters
    ----------
    warps:
        Warp slots.
    lanes:
        Lanes per warp.

    Ports (each source names its instruction: ``warp``, ``lanes``, ``pc``, ``word``):

    - ``mem``: ``valid`` with ``cause``; ``lanes`` are the faulting lanes.
    - ``ex1``: ``stack`` (the SIMT stack unit answered with ``stack_cause``),
      ``divergent`` (a ``bar`` with ``active != live``; ``lanes`` is the active mask) and
      ``divergent_mma`` (an ``mma`` without every lane; ``lanes`` are the executing ones).
    - ``bar``: ``arrive``/``warp`` (a warp reaches the barrier, with ``ex1``'s pc and word),
      ``waiting`` (the warps waiting), ``deadlock``; ``live[w]``: warp ``w``'s live lanes.
    - ``issue``: ``valid`` (an illegal head is picked) and ``pc_fault`` (its fetch was past
      the code: ``PC_OUT_OF_RANGE`` with word 0, else ``ILLEGAL_INSTRUCTION``); its ``pc``
      and ``word`` are read in the cycle after ``valid`` (the core's ``is_rr`` register
      holds the picked head then), its ``warp`` and ``lanes`` with ``valid``.

    Cycle by cycle: while ``running`` and no fault is held, the first source in the order
    above that raises one is recorded (with ``block``): ``stop`` rises in the next cycle
    (the core fetches and issues nothing more) and ``fault.valid`` with the record one
    cycle later; they stay high until ``flush`` clears them (a fault raised in the flush
    cycle is still recorded), and the record stays as it is unless the recorded warp
    raises a fault in an older stage (above), which replaces it at the next edge but one
    (``settling``: the record is rewritten at the next edge). From the first fault until ``flush``
    (while ``running`` or a fault is held): ``dead`` holds, from the next cycle, each warp
    that raised a fault in ``mem``; ``kill`` holds each warp that raises or raised one in
    ``mem`` or ``ex1``, already in the cycle it is raised; ``kill_entry`` the same but for
    a SIMT stack fault in the cycle it is raised (it holds from the next); ``kill_ex1`` is
    ``kill`` at ``ex1.warp``. ``dead_next`` is the value ``dead`` takes at the next edge (the
    core keeps the bit of the instruction entering ``mem`` in a register of its own).
    """

    def __init__(self, warps: int, lanes: int):
        require_positive(warps=warps)
        self.warps, self.lanes = warps, lanes
        wb = max(1, (warps - 1).bit_length())
        super().__init__({
            "flush": In(1),
            "running": In(1),
            "block": In(dim3_layout()),
            "mem": In(fault_source_signature(warps, lanes, valid=1, cause=FaultCause)),
            "ex1": In(fault_source_signature(warps, lanes, stack=1, stack_cause=FaultCause,
                                             divergent=1, divergent_mma=1)),
            "bar": In(wiring.Signature({"arrive": Out(1), "warp": Out(wb),
                                        "waiting": Out(warps), "deadlock": Out(1)})),
            "live": In(lanes).array(warps),
            "issue": In(fault_source_signature(warps, lanes, valid=1, pc_fault=1)),
            "fault": Out(fault_signature(lanes)),
            "stop": Out(1),
            "settling": Out(1),
            "dead": Out(warps),
            "dead_next": Out(warps),
            "kill": Out(warps),
            "kill_entry": Out(warps),
            "kill_ex1": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        W, L = self.warps, self.lanes
        rec = self.fault.record
        held = Signal()
        m.d.comb += self.stop.eq(held)
        record = Signal(rec.shape())
        m.d.comb += rec.eq(record)

        ex1, bar = self.ex1, self.bar
        # the warps whose instruction faults in mem or ex1 in this cycle, recorded or not
        raised_mem, raised_ex1 = Signal(W), Signal(W)
        ex1_behind = ex1.divergent | ex1.divergent_mma  # may have its warp behind it
        ex1_raised = ex1.stack | ex1_behind
        m.d.comb += [raised_mem.eq(Mux(self.mem.valid, 1 << self.mem.warp, 0)),
                     raised_ex1.eq(Mux(ex1_raised, 1 << ex1.warp, 0))]
        dead_mem, dead_ex1 = Signal(W), Signal(W)
        dead_any = dead_mem | dead_ex1
        counts = held | self.running
        m.d.comb += [self.dead.eq(dead_mem),
                     self.kill.eq(dead_any | Mux(counts, raised_mem | raised_ex1, 0)),
                     self.kill_entry.eq(dead_any | Mux(
                         counts, raised_mem | Mux(ex1_behind, 1 << ex1.warp, 0), 0)),
                     # ``kill`` at ex1's warp, with this cycle's ex1 fault (the SIMT stack's
                     # answer, late) two gates from the end rather than through the mask
                     self.kill_ex1.eq(dead_any.bit_select(ex1.warp, 1) | (counts & (
                         (self.mem.valid & (self.mem.warp == ex1.warp)) | ex1_raised)))]

        arrivals = layouts.per_warp(layouts.bar_arrival(), W)
        for w in range(W):
            with m.If(bar.arrive & (bar.warp == w)):
                m.d.sync += [arrivals[w].bar_word.eq(ex1.word), arrivals[w].bar_pc.eq(ex1.pc)]
        # A deadlock's record is read in the cycle after it is raised, from registers: the
        # warps waiting then (counting the one arriving in the fault's cycle, whose bar's pc
        # and word are noted by then). The barrier's answer comes late in its cycle (after
        # the SIMT stack's, through the arrival and the release); a choice of warp and a
        # 32-bit mux behind it would not fit there.
        arrived_q = Signal(W)
        m.d.sync += arrived_q.eq(bar.waiting | Mux(bar.arrive, 1 << bar.warp, 0))
        first = Signal(max(1, (W - 1).bit_length()))
        for w in reversed(range(W)):
            with m.If(arrived_q[w]):
                m.d.comb += first.eq(w)
        first_pc, first_live, first_word = Signal(32), Signal(L), Signal(32)
        with m.Switch(first):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += [first_pc.eq(arrivals[w].bar_pc), first_live.eq(self.live[w]),
                                 first_word.eq(arrivals[w].bar_word)]

        # The record is written in two steps, so that the sources' late signals (the SIMT
        # stack's answer, the LSU's checks) decide only a few flip-flops in their cycle: at
        # the fault's edge every source's record is captured as it stands, with which source
        # comes first (``first_q``, one-hot) and whether one was taken (``taken_q``); at the
        # next edge the taken one is copied into the record, and ``fault.valid`` rises with
        # it. ``stop`` (the core stops fetching and issuing) rises at the fault's edge, as
        # does ``dead``.
        iss = self.issue
        # the sources in order, oldest instruction first, and which capture holds each
        raised = Cat(self.mem.valid, ex1.stack, ex1.divergent, ex1.divergent_mma,
                     bar.deadlock, iss.valid)
        kinds = {"mem": (0,), "ex1": (1, 2, 3), "bar": (4,), "issue": (5,)}
        # an ex1 fault's cause is told at the second step, from which of its kinds came first
        # (``first_q``): the SIMT stack's answer, late in its cycle, then reaches only the
        # capture of its own cause, not a choice of cause before the capture
        stack_cause_q = Signal.like(ex1.stack_cause)
        m.d.sync += stack_cause_q.eq(ex1.stack_cause)
        captures = {  # (cause, warp, lanes, pc, word)
            "mem": (self.mem.cause, self.mem.warp, self.mem.lanes, self.mem.pc, self.mem.word),
            "ex1": (0, ex1.warp, ex1.lanes, ex1.pc, ex1.word),  # the cause below
            "bar": (FaultCause.BARRIER_DEADLOCK, 0, 0, 0, 0),  # the rest a cycle later
            # an issue fault's pc and word a cycle later, from the stage register the picked
            # head has gone into: the pick comes late in its cycle, and a capture of its 64
            # bits here would put the pick's fan-out across the core into that cycle
            "issue": (Mux(iss.pc_fault, FaultCause.PC_OUT_OF_RANGE,
                          FaultCause.ILLEGAL_INSTRUCTION), iss.warp, iss.lanes, 0, 0),
        }
        iss_pc_fault_q = Signal()
        m.d.sync += iss_pc_fault_q.eq(iss.pc_fault)
        # An older instruction of the recorded warp may still be on its way when a younger one
        # faults in ex1 (the one in ex2 has yet to reach mem) or at issue (those between is
        # and mem): its fault comes later but is the one the ISS meets first, so it replaces
        # the record. Any later fault of that warp in mem or ex1 is an older instruction's:
        # the younger ones are dropped. The record's source rank (mem 0, ex1 1, barrier 2,
        # issue 3) and warp as they stand this cycle (being written from the captures, or
        # held):
        rank_q, taken_q = Signal(range(4)), Signal()
        first_q = Signal(len(raised))
        cur_rank, cur_warp = Signal(range(4)), Signal.like(rec.warp)
        chosen = Signal(rec.shape())
        first_rank = Mux(first_q[0], 0, Mux(first_q[1:4].any(), 1, Mux(first_q[4], 2, 3)))
        m.d.comb += [cur_rank.eq(Mux(taken_q, first_rank, rank_q)),
                     cur_warp.eq(Mux(taken_q, chosen.warp, record.warp))]
        older = Signal(len(raised))
        ex1_older = (cur_rank > 1) & (ex1.warp == cur_warp)
        m.d.comb += older.eq(Cat(self.mem.valid & (cur_rank > 0) & (self.mem.warp == cur_warp),
                                 raised[1:4] & ex1_older.replicate(3)))
        eligible = Mux(held, older, raised)
        taken = (~held & self.running & raised.any()) | (held & ~self.flush & older.any())
        # lowest set bit: the oldest instruction's source (each bit and the bits below it, not
        # ``eligible & -eligible``, whose carry chain sits behind the sources' late answers)
        m.d.sync += [first_q.eq(Cat(eligible[k] & ~eligible[:k].any()
                                    for k in range(len(raised)))),
                     taken_q.eq(taken)]
        with m.If(taken_q):
            m.d.sync += rank_q.eq(first_rank)
        m.d.comb += self.settling.eq(taken_q)
        for name, (cause, warp, lanes, pc, word) in captures.items():
            cap = Signal(rec.shape(), name=f"{name}_fault")
            m.d.sync += [cap.cause.eq(cause), cap.warp.eq(warp), cap.lane_mask.eq(lanes),
                         cap.pc.eq(pc), cap.instr.eq(word), cap.block.eq(self.block)]
            with m.If(Cat(first_q[k] for k in kinds[name]).any()):
                m.d.comb += chosen.eq(cap)
                if name == "bar":
                    m.d.comb += [chosen.warp.eq(first), chosen.lane_mask.eq(first_live),
                                 chosen.pc.eq(first_pc), chosen.instr.eq(first_word)]
                if name == "ex1":
                    m.d.comb += chosen.cause.eq(Mux(
                        first_q[1], stack_cause_q, Mux(first_q[2], FaultCause.DIVERGENT_BARRIER,
                                                       FaultCause.DIVERGENT_MMA)))
                if name == "issue":
                    m.d.comb += [chosen.pc.eq(iss.pc),
                                 chosen.instr.eq(Mux(iss_pc_fault_q, 0, iss.word))]
        with m.If(taken_q):
            m.d.sync += record.eq(chosen)
        valid = Signal()
        m.d.sync += valid.eq(held & ~self.flush)
        m.d.comb += self.fault.valid.eq(valid)

        # ``dead`` gathers the raising warps while a fault is held or a block runs: it is
        # empty until the first fault (flush empties it with ``held``, but for a fault taken
        # in the flush's cycle), so it needs no ``taken``, which waits on every source, the
        # barrier's deadlock last
        new_fault = ~held & self.running
        m.d.comb += self.dead_next.eq(dead_mem)
        with m.If(self.flush):
            m.d.comb += self.dead_next.eq(Mux(new_fault, raised_mem, 0))
            m.d.sync += [held.eq(0), dead_ex1.eq(Mux(new_fault, raised_ex1, 0))]
        with m.Elif(held | self.running):
            m.d.comb += self.dead_next.eq(dead_mem | raised_mem)
            m.d.sync += dead_ex1.eq(dead_ex1 | raised_ex1)
        m.d.sync += dead_mem.eq(self.dead_next)
        with m.If(taken):
            m.d.sync += held.eq(1)
        return m
