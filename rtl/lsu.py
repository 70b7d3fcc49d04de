"""Load/store unit: the ``mem`` stage.

Global accesses (``ldg``, ``stg``, ``ldparam``) are coalesced: each cycle the lowest remaining
lane picks a memory line and every remaining lane whose address falls in the same line joins
its transaction, so consecutive aligned words of a warp are one transaction and scattered
addresses cost one transaction per distinct line. Global atomics go out one lane at a time in
lane order as ATOMIC requests; the memory executes them. Before anything is sent, every
executing lane is checked (alignment, the null guard, the memory size, the parameter block
size, the block's shared size) and a bad lane raises the fault instead.

The LSU holds its instruction in ``mem`` (``hold``) until the last transaction has been
accepted by the memory port; the core stalls the stages behind it. Loads do not wait for
their data: the instruction leaves with ``deferred`` set, its destination stays pending in the
scoreboard, and the data returns through the late write-back stream ``lwb`` once the last
response of the instruction has arrived (responses come back in request order, so the
transactions of one instruction arrive together). A FIFO remembers, per transaction, which
lanes take which word of the returned line.

Shared memory accesses go to the banked :class:`SharedMemory`: one cycle per round of
conflict-free lanes; they wait while ``clear`` zeroes the shared memory for a new block.
A shared load's data is ready in the ``wb`` stage (``sh_values``), as with the synchronous
register file.

The work that needs only the instruction is done a stage earlier, in ``ex2``, by
:class:`LsuPrep`, and the core registers it into ``mem`` beside the instruction (``prep``):
the effective and shared-memory word addresses, the range and alignment checks with the
fault they raise, for every pair of lanes whether the two can go in one transaction
(global: the same line) or one round (shared: not the same bank at different words),
whether two executing lanes cannot (``more``), and the first leader and its address (the
later ones are chosen as the cycle before ends), so a request's address comes from
registers. Whether the instruction needs another cycle (``hold``, which stalls the stages
behind it) is then read from registers in a few gates: in its first cycle from ``prep``,
after it from a ``more`` worked out as the cycle before ended, with the memory port's
``ready`` a register of the request buffer in front of it. The cycle counts are those of
doing it all in ``mem``.
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out
from simtgpu.isa import GLOBAL_NULL_GUARD

from . import reuse
from .atomic_alu import atomic_result
from .fpu import ATOMIC_LATENCY, Fpu, FpuOp
from .isa_consts import FaultCause
from .layouts import split_signal
from .shared_memory import SharedMemory, lane_pairs, one_hot_choice, shared_geometry
from .signatures import AtomOp, MemKind, mem_port_signature

_ATOM_BITS = AtomOp.as_shape().width


class LsuOp(enum.Enum, shape=3):
    NONE = 0
    LDG = 1
    STG = 2
    LDS = 3
    STS = 4
    ATOM = 5
    ATOMS = 6
    LDPARAM = 7


def lwb_layout(warps: int, lanes: int) -> data.StructLayout:
    """A late write-back: the values of a global load (or atomic) for its executing lanes."""
    return data.StructLayout({
        "warp": max(1, (warps - 1).bit_length()),
        "rd": 5,
        "wr": 1,
        "pc": 32,
        "active": lanes,
        "exec": lanes,
        "values": data.ArrayLayout(32, lanes),
    })


def more_lanes(lanes: Value, split: Value) -> Value:
    """Two of ``lanes`` cannot share one transaction or round (their pair's ``split`` bit)."""
    return Cat(lanes[i] & lanes[j] & split[p]
               for p, (i, j) in enumerate(lane_pairs(len(lanes)))).any()


def with_leaders(lanes: Value, leaders: Value, split: Value) -> Value:
    """The lanes of ``lanes`` that go with ``leaders`` (lanes of ``lanes``, the lowest of
    each group): each lane no lower leader is ``split`` from. For a global access the one
    leader's line; for ld.s and st.s each bank's lowest lane's word (``split`` pairs are in
    one bank, so a lane meets only its own bank's leader)."""
    pairs = {pair: split[p] for p, pair in enumerate(lane_pairs(len(lanes)))}
    return Cat(lanes[l] & ~Cat(leaders[k] & pairs[k, l] for k in range(l)).any()
               for l in range(len(lanes)))


def bank_leaders(lanes: Value, same_bank: Value) -> Value:
    """The lowest lane of ``lanes`` in each shared-memory bank (``same_bank`` by lane pair)."""
    pairs = {pair: same_bank[p] for p, pair in enumerate(lane_pairs(len(lanes)))}
    return Cat(lanes[f] & ~Cat(lanes[j] & pairs[j, f] for j in range(f)).any()
               for f in range(len(lanes)))


def prep_layout(lanes: int, word_bits: int) -> data.StructLayout:
    """What :class:`LsuPrep` works out in ``ex2`` for the LSU in ``mem``."""
    return data.StructLayout({
        "op": LsuOp,
        "fn": 5,
        "ea": data.ArrayLayout(32, lanes),  # effective address (ldparam: in the param block)
        "word": data.ArrayLayout(word_bits, lanes),  # shared-memory word, block base added
        "fault": 1,  # an executing lane is misaligned or out of range
        "fault_cause": FaultCause,  # these two: the fault's, meaningless without one
        "fault_lanes": lanes,
        # pair (i, j) of lane_pairs: the two lanes never go in one transaction (global: other
        # lines; atomics: always) or one shared-memory round (same bank, other words)
        "split": max(1, len(lane_pairs(lanes))),
        # ld.s and st.s: pair (i, j): the two lanes are in one bank; and the lowest executing
        # lane of each bank (``bank_leaders``), the first round's leaders
        "same_bank": max(1, len(lane_pairs(lanes))),
        "banks_lead": lanes,
        # from ``split`` and the executing lanes: an executing lane (``some``), and two that
        # cannot share a transaction or round (``more``), so that mem's first ``hold`` is
        # read from registers
        "some": 1,
        "more": 1,
        # the lowest executing lane (one-hot) and its ``ea``: the LSU's first leader and its
        # request's address, from registers in mem (no choice among the lanes in front of
        # the L1's lookup of the request)
        "lead": lanes,
        "lead_addr": 32,
    })


class LsuPrep(wiring.Component):
    """The LSU's part of ``ex2``: everything about a memory instruction that does not depend
    on the memory's answers, worked out one stage early so that ``mem`` starts from
    registers (see the module docstring).

    Parameters
    ----------
    lanes, line_words, shared_bytes, memory_bytes:
        As for :class:`Lsu`.
    """

    def __init__(self, lanes: int, line_words: int, shared_bytes: int, memory_bytes: int):
        self.lanes, self.line_words, self.memory_bytes = lanes, line_words, memory_bytes
        _, self.word_bits, _ = shared_geometry(lanes, shared_bytes)
        vec = data.ArrayLayout(32, lanes)
        super().__init__({
            "op": In(LsuOp),
            "fn": In(5),
            "exec": In(lanes),
            "addr": In(vec),
            # the last byte address at which a whole word fits in the block's shared memory
            # and in the parameter block (size - 4; negative when none does), worked out once
            # per launch, so that each check is one comparison
            "shared_last": In(signed(33)),
            # the block's first byte in the shared memory: a whole row of banks (a multiple
            # of 4 x lanes), so it moves no lane to another bank
            "shared_base": In(32),
            "param_addr": In(32),
            "param_last": In(signed(33)),
            "q": Out(prep_layout(lanes, self.word_bits)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        lanes, op, q = self.lanes, self.op, self.q
        line_shift = 2 + max(0, (self.line_words - 1).bit_length())
        lb = max(0, (lanes - 1).bit_length())
        m.d.comb += [q.op.eq(op), q.fn.eq(self.fn)]
        ea = [Signal(32, name=f"ea{l}") for l in range(lanes)]
        word = [Signal(self.word_bits, name=f"word{l}") for l in range(lanes)]

        def past_memory(a) -> Value:
            """``a + 4 > memory_bytes``."""
            return Const(1) if self.memory_bytes < 4 else a > self.memory_bytes - 4
        mis = Signal(lanes)
        oor = Signal(lanes)
        in_global = (op == LsuOp.LDG) | (op == LsuOp.STG) | (op == LsuOp.ATOM)
        in_shared = (op == LsuOp.LDS) | (op == LsuOp.STS) | (op == LsuOp.ATOMS)
        in_param = op == LsuOp.LDPARAM
        for l in range(lanes):
            a = self.addr[l]
            m.d.comb += [ea[l].eq(Mux(op == LsuOp.LDPARAM, a + self.param_addr, a)),
                         word[l].eq((a + self.shared_base)[2:]),
                         q.ea[l].eq(ea[l]), q.word[l].eq(word[l]), mis[l].eq(a[:2] != 0)]
            # a word must lie wholly inside its space; out of range is reported before
            # misalignment, as the ISS does. Each space's check is made and the op's space
            # chooses among them, an AND-OR after the comparisons (each ``a + 4 > size`` as
            # ``a > size - 4``, the right side a constant or an input: no adder before them).
            m.d.comb += oor[l].eq((in_global & ((a < GLOBAL_NULL_GUARD) | past_memory(a)))
                                  | (in_shared & (a > self.shared_last))
                                  | (in_param & (a > self.param_last)))
        bad_mis = Signal(lanes)
        bad_oor = Signal(lanes)
        m.d.comb += [bad_mis.eq(self.exec & mis), bad_oor.eq(self.exec & oor)]
        # the cause and the lanes are those of a fault, and mean nothing without one
        any_oor = bad_oor.any()
        m.d.comb += [q.fault.eq((op != LsuOp.NONE) & (any_oor | bad_mis.any())),
                     q.fault_cause.eq(Mux(any_oor, FaultCause.OUT_OF_RANGE,
                                          FaultCause.MISALIGNED)),
                     q.fault_lanes.eq(Mux(any_oor, bad_oor, bad_mis))]
        # Each pair's bits as an AND-OR of the op's classes, assigned whole once: written as a
        # switch on the op per pair, each case a bit of ``q``, the export made one process of
        # every pair's cases, which Verilator turns into a copy of the whole split and
        # same_bank vector per pair (``full``'s 496 pairs: most of its core's 63 MB of C++).
        plain_global = (op == LsuOp.LDG) | (op == LsuOp.STG)  # not ATOM, as in_global has it
        is_atomic = (op == LsuOp.ATOM) | (op == LsuOp.ATOMS)
        is_shared = (op == LsuOp.LDS) | (op == LsuOp.STS)
        split = []
        same_bank = []
        for i, j in lane_pairs(lanes):
            a_i, a_j = self.addr[i], self.addr[j]
            # ld.s and st.s: same bank, other words: from the addresses within the block, as
            # the block's base (whole rows) adds the same to both and changes no bank; not
            # from ``word``, which has the base's adder in front of it
            wi, wj = a_i[2:2 + self.word_bits], a_j[2:2 + self.word_bits]
            bank = is_shared & (wi[:lb] == wj[:lb])
            split.append(
                # global: ``a`` is the address, not through ``ea``'s choice, which has
                # ldparam's adder in front of it
                (plain_global & (a_i[line_shift:] != a_j[line_shift:]))
                # ldparam: every lane reads the same word (its address is the immediate: the
                # decoder takes a word with a register field set as illegal); lanes apart
                # only when their offsets differ, which needs no adder in front of the
                # compare (the block's base comes after it, into ``ea``)
                | (in_param & (a_i != a_j))
                | is_atomic
                | (bank & (wi != wj)))
            same_bank.append(bank)
        if split:
            m.d.comb += [q.split.eq(Cat(split)), q.same_bank.eq(Cat(same_bank))]
        m.d.comb += [q.some.eq(self.exec.any()), q.more.eq(more_lanes(self.exec, q.split)),
                     q.banks_lead.eq(bank_leaders(self.exec, q.same_bank))]
        for l in reversed(range(lanes)):
            with m.If(self.exec[l]):
                m.d.comb += [q.lead.eq(1 << l), q.lead_addr.eq(ea[l])]
        return m


class Lsu(wiring.Component):
    """Parameters
    ----------
    warps, lanes:
        Core shape.
    line_words:
        Words per memory line (a power of two).
    shared_bytes:
        Shared memory of the core.
    memory_bytes:
        Device memory size: global addresses at or past it fault.
    tag_bits:
        Memory request tag width (the tag is the warp slot).
    fifo_depth:
        Transactions that may be outstanding on the memory port.
    gated:
        The form of the shared atomics' FP adder (:class:`~simtgpu.rtl.fpu.Fpu`'s ``gated``,
        from ``RtlConfig.clock_gating``), so that it is the lanes' FPU module.

    ``prep`` is the instruction's :class:`LsuPrep` output, registered from ``ex2``.
    """

    def __init__(self, warps: int, lanes: int, line_words: int, shared_bytes: int,
                 memory_bytes: int, tag_bits: int = 8, fifo_depth: int = 8,
                 gated: bool = False):
        self.warps, self.lanes, self.line_words = warps, lanes, line_words
        self.gated = gated
        self.shared_bytes, self.memory_bytes = shared_bytes, memory_bytes
        self.tag_bits, self.fifo_depth = tag_bits, fifo_depth
        self.shared = SharedMemory(lanes, shared_bytes)
        wb = max(1, (warps - 1).bit_length())
        vec = data.ArrayLayout(32, lanes)
        super().__init__({
            "valid": In(1),
            "prep": In(prep_layout(lanes, self.shared.word_bits)),
            "warp": In(wb),
            "pc": In(32),
            "rd": In(5),
            "wr": In(1),
            "active": In(lanes),
            "exec": In(lanes),
            "data": In(vec),
            "cdata": In(vec),
            "hold": Out(1),
            "deferred": Out(1),
            "fault": Out(1),
            "fault_cause": Out(FaultCause),
            "fault_lanes": Out(lanes),
            "sh_values": Out(vec),
            # sh_values as its parts: the lanes whose value is the banks' read of this cycle
            # (``sh_fresh``: ``sh_rdata``) and the others' (``sh_held``, registers), for a
            # user that chooses the slow read data last
            "sh_rdata": Out(vec),
            "sh_fresh": Out(lanes),
            "sh_held": Out(vec),
            "atom_values": Out(vec),  # old values of a shared atomic, ready in wb
            "mem": Out(mem_port_signature(line_words, tag_bits)),
            "lwb": Out(stream.Signature(lwb_layout(warps, lanes))),
            "sent": Out(1),  # the last transaction of an instruction was accepted
            "sent_warp": Out(wb),
            "acked": Out(1),  # the last response of an instruction arrived
            "acked_warp": Out(wb),
            "acked_load": Out(1),
            "idle": Out(1),  # nothing outstanding
            "transaction": Out(1),  # a request was accepted (performance counter)
            "clear": In(1),
            "clear_row": In(self.shared.row_bits),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        lanes, lw = self.lanes, self.line_words
        wib = max(1, (lw - 1).bit_length())  # word index within a line
        line_mask = ~(4 * lw - 1) & 0xFFFF_FFFF
        m.submodules.shared = sh = self.shared

        prep = self.prep
        op, fn = prep.op, prep.fn
        is_global = (op == LsuOp.LDG) | (op == LsuOp.STG) | (op == LsuOp.ATOM) | \
            (op == LsuOp.LDPARAM)
        is_shared = (op == LsuOp.LDS) | (op == LsuOp.STS)
        is_load = (op == LsuOp.LDG) | (op == LsuOp.ATOM) | (op == LsuOp.LDPARAM)
        active = self.valid & (op != LsuOp.NONE)
        addr = prep.ea

        started = Signal()
        rem_q = Signal(lanes)
        rem = Signal(lanes)
        m.d.comb += rem.eq(Mux(started, rem_q, self.exec))
        # the checks were made in ex2 (LsuPrep); a bad lane faults before anything is sent
        faulting = active & ~started & prep.fault
        with m.If(faulting):
            m.d.comb += [self.fault.eq(1), self.fault_cause.eq(prep.fault_cause),
                         self.fault_lanes.eq(prep.fault_lanes)]
        # more than one transaction or round left: two remaining lanes that cannot share one;
        # in the first cycle ex2's answer (``prep.more``), after it this unit's, worked out
        # from ``rem_next`` as the cycle before ends (``more_q``): from registers either way
        more = Signal()
        more_q = Signal()
        m.d.comb += more.eq(Mux(started, more_q, prep.more))

        # --- global: coalescing into line transactions ------------------------------------
        meta = data.StructLayout({
            "warp": len(self.warp), "rd": 5, "wr": 1, "pc": 32, "load": 1, "last": 1,
            "active": lanes, "exec": lanes, "group": lanes,
            "widx": data.ArrayLayout(wib, lanes),
        })
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=meta.size, depth=self.fifo_depth)
        # the lowest remaining lane (one-hot) and its address, from registers: in the first
        # cycle ex2's (``prep.lead``), after it this unit's, chosen from the lanes left as the
        # cycle before ends (``lead_q``, below), so the request's address reaches the L1's lookup
        # (rtl/l1_cache.py, ``lookahead``) through one multiplexer
        leader = Signal(lanes)
        leader_addr = Signal(32)
        lead_q = Signal(lanes)
        lead_addr_q = Signal(32)
        m.d.comb += [leader.eq(Mux(started, lead_q, prep.lead)),
                     leader_addr.eq(Mux(started, lead_addr_q, prep.lead_addr))]
        leader_b = Signal(32)
        leader_c = Signal(32)
        m.d.comb += [leader_b.eq(one_hot_choice(leader, [self.data[l] for l in range(lanes)])),
                     leader_c.eq(one_hot_choice(leader, [self.cdata[l] for l in range(lanes)]))]
        line = Signal(32)
        m.d.comb += line.eq(leader_addr & line_mask)
        # the lanes that go with the leader: its line's (an atomic's pairs are all split, so
        # the leader alone), from the pairs ex2 worked out rather than from 32-bit compares
        # behind the leader's choice
        group = Signal(lanes)
        m.d.comb += group.eq(with_leaders(rem, leader, prep.split))
        widx = [addr[l][2:2 + wib] if lw > 1 else Const(0, 1) for l in range(lanes)]

        req = self.mem.req.p
        m.d.comb += [req.addr.eq(Mux(op == LsuOp.ATOM, leader_addr, line)),
                     req.tag.eq(self.warp), req.atom_b.eq(leader_b), req.atom_c.eq(leader_c)]
        with m.Switch(op):
            with m.Case(LsuOp.STG):
                m.d.comb += req.kind.eq(MemKind.WRITE)
            with m.Case(LsuOp.ATOM):
                m.d.comb += req.kind.eq(MemKind.ATOMIC)
            with m.Default():
                m.d.comb += req.kind.eq(MemKind.READ)
        # atom.cas has its own opcode; the core hands it over as fn AtomOp.CAS
        m.d.comb += req.atom_op.eq(fn[:_ATOM_BITS])
        # each word of the line is picked into its own signal and the payload is written once:
        # per-lane assignments into the packed payload would copy the whole line per lane
        for j in range(lw):
            word = Signal(32, name=f"wdata{j}")
            # a signal, not an expression: Amaranth emits an expression anew at every use
            hit = Signal(lanes, name=f"hit{j}")
            m.d.comb += hit.eq(Cat(group[l] & (widx[l] == j) for l in range(lanes)))
            for l in range(lanes):  # the highest lane writing word j wins
                with m.If(hit[l]):
                    m.d.comb += word.eq(self.data[l])
            m.d.comb += [req.wdata[j].eq(word), req.be[4 * j:4 * j + 4].eq(hit.any().replicate(4))]

        entry = Signal(meta)
        m.d.comb += [entry.warp.eq(self.warp), entry.rd.eq(self.rd), entry.wr.eq(self.wr),
                     entry.pc.eq(self.pc), entry.load.eq(is_load), entry.exec.eq(self.exec),
                     entry.active.eq(self.active), entry.group.eq(group),
                     entry.last.eq((rem & ~group) == 0)]
        for l in range(lanes):
            m.d.comb += entry.widx[l].eq(Mux(op == LsuOp.ATOM, 0, widx[l]))
        m.d.comb += fifo.w_data.eq(entry)

        go_global = active & is_global & ~faulting & (rem != 0)
        m.d.comb += [self.mem.req.valid.eq(go_global & fifo.w_rdy)]
        accepted = self.mem.req.valid & self.mem.req.ready
        m.d.comb += [fifo.w_en.eq(accepted), self.transaction.eq(accepted)]

        # --- shared memory ------------------------------------------------------------------
        # while ``clear`` zeroes a row, shared accesses wait (the banks' write ports are taken)
        go_shared = active & is_shared & ~faulting & (rem != 0) & ~self.clear
        go_atoms = active & (op == LsuOp.ATOMS) & ~faulting & (rem != 0) & ~self.clear
        m.d.comb += [sh.clear.eq(self.clear), sh.clear_row.eq(self.clear_row)]
        # the lanes, the direction and the data come from registers (the remaining lanes, a
        # shared atomic's leader and phase); whether the access goes (``act``, below) comes
        # last, so the bank selection does not wait for the faults and the phase's decoding
        is_atoms = op == LsuOp.ATOMS
        # An ld.s or st.s serves, each round, every bank's lowest lane left and the lanes at
        # its word (rtl/shared_memory.py's choice, ``sh.pick``). The lanes left are told here
        # as a global access's are, from leaders (the banks': ex2's for the first round, then
        # ``banks_lead_q``, worked out as the cycle before ends) and ex2's pairs: the banks'
        # own choice sits by their RAMs, and it was on the path from the lanes left, there and
        # back, into ``more_q`` (a6df8a4's seed 2).
        banks_lead_q = Signal(lanes)
        round_lanes = Signal(lanes)
        m.d.comb += round_lanes.eq(with_leaders(
            rem, Mux(started, banks_lead_q, prep.banks_lead), prep.split))
        a_phase = Signal(range(4))
        a_new = Signal(32)
        atom_new = Signal(32)  # a shared atomic's word to write
        m.d.comb += [sh.req.eq(Mux(is_atoms, leader, rem)),
                     sh.we.eq(Mux(is_atoms, a_phase == 3, op == LsuOp.STS))]
        for l in range(lanes):
            m.d.comb += [sh.word[l].eq(prep.word[l]),
                         sh.wdata[l].eq(Mux(is_atoms, atom_new, self.data[l]))]
        # ld.s and st.s: two lanes of one bank are at one word unless ex2 split them (a shared
        # atomic sends its leader alone, so what this says for it does not matter)
        m.d.comb += sh.same_word.eq(prep.same_bank & ~prep.split)
        cap = split_signal(data.ArrayLayout(32, lanes), "cap")
        for l in range(lanes):
            with m.If(sh.served_q[l]):
                m.d.sync += cap[l].eq(sh.rdata[l])
            m.d.comb += [self.sh_values[l].eq(Mux(sh.served_q[l], sh.rdata[l], cap[l])),
                         self.sh_rdata[l].eq(sh.rdata[l]), self.sh_held[l].eq(cap[l])]
        m.d.comb += self.sh_fresh.eq(sh.served_q)

        # shared atomics: one lane at a time in lane order; read, compute, write
        fpu = Fpu(latency=ATOMIC_LATENCY, gated=self.gated, fadd_only=True)  # one module
        m.submodules.atom_fpu = reuse.shared(  # for every core's (rtl/reuse.py)
            fpu, (ATOMIC_LATENCY, True, self.gated, True))
        a_old = Signal(32)
        old_now = Signal(32)
        for l in reversed(range(lanes)):
            with m.If(leader[l]):
                m.d.comb += old_now.eq(sh.rdata[l])
        # Every operation is worked out from the old word and the leader's operands registered
        # in phase 1, so neither the banks' read data nor the choice of the leading lane
        # reaches the comparisons or the adder in a cycle. The adder takes them in phase 2's
        # first cycle and answers ATOMIC_LATENCY cycles later: an atoms.fadd stays in phase 2
        # until then (``a_wait``); the others leave it after one cycle.
        a_b, a_c = Signal(32), Signal(32)
        is_fadd = fn == AtomOp.FADD
        a_wait = Signal(range(ATOMIC_LATENCY))
        m.d.comb += [fpu.en.eq(1), fpu.op.eq(FpuOp.FADD), fpu.a.eq(a_old), fpu.b.eq(a_b),
                     fpu.valid.eq(go_atoms & (a_phase == 2) & (a_wait == 0) & is_fadd)]
        computed = atomic_result(m, fn[:_ATOM_BITS], a_old, a_b, a_c, fpu.result)
        # the shared memory is read in phase 0 and written in phase 3
        m.d.comb += [sh.act.eq(go_shared | (go_atoms & ((a_phase == 0) | (a_phase == 3)))),
                     atom_new.eq(Mux(is_fadd, fpu.result, a_new))]
        with m.If(go_atoms):
            with m.Switch(a_phase):
                with m.Case(0):  # read the leader's word
                    m.d.sync += a_phase.eq(1)
                with m.Case(1):  # old value is here
                    m.d.sync += [a_old.eq(old_now), a_b.eq(leader_b), a_c.eq(leader_c),
                                 a_phase.eq(2)]
                with m.Case(2):
                    with m.If(is_fadd & (a_wait != ATOMIC_LATENCY - 1)):
                        m.d.sync += a_wait.eq(a_wait + 1)
                    with m.Else():
                        m.d.sync += [a_new.eq(computed), a_wait.eq(0), a_phase.eq(3)]
                with m.Case(3):  # write, remember the old value for the lane
                    for l in range(lanes):
                        with m.If(leader[l]):
                            m.d.sync += self.atom_values[l].eq(a_old)
                    m.d.sync += a_phase.eq(0)

        # --- sequencing ---------------------------------------------------------------------
        # ``hold`` is ``rem_next != 0``, told without the groups and rounds: by ``more``, the
        # remaining lanes (``some``), the memory port's and the FIFO's ``ready`` (registers:
        # the request buffer's, rtl/skid_buffer.py) and the atomic's phase, all from registers
        # in a few gates, as the stall of every stage behind mem waits on it
        some = started | prep.some  # a held instruction has lanes left
        room = fifo.w_rdy & self.mem.req.ready
        # The lanes left after this cycle, for the registers loaded only while ``hold``
        # (``rem_q``, ``lead_q``, ``more_q``): a held instruction is ``active`` and not
        # faulting, so they are told by the op alone, without ``valid`` and the fault behind
        # ``go_*`` (the fault recorder's ``dead`` among them)
        rem_next = Signal(lanes)
        rem_global = Mux(room, rem & ~group, rem)
        rem_atoms = Mux(~self.clear & (a_phase == 3), rem & ~leader, rem)
        with m.If(is_global):
            m.d.comb += rem_next.eq(rem_global)
        with m.Elif(is_shared):
            m.d.comb += rem_next.eq(Mux(self.clear, rem, rem & ~round_lanes))
        with m.Elif(is_atoms):
            m.d.comb += rem_next.eq(rem_atoms)
        # the next leader from the lanes a global access or a shared atomic leaves: an ld.s or
        # st.s has one per bank instead (``banks_lead_q``), so its rounds' logic stays off
        # the leader's registers
        rem_led = Signal(lanes)
        m.d.comb += rem_led.eq(Mux(is_global, rem_global, rem_atoms))
        m.d.comb += self.hold.eq(active & ~faulting & some & (
            (is_global & (~room | more))
            | (is_shared & (self.clear | more))
            | (is_atoms & (self.clear | (a_phase != 3) | more))))
        m.d.sync += more_q.eq(more_lanes(rem_next, prep.split))
        lead_next = Signal(lanes)
        lead_addr_next = Signal(32)
        for l in reversed(range(lanes)):
            with m.If(rem_led[l]):
                m.d.comb += [lead_next.eq(1 << l), lead_addr_next.eq(addr[l])]
        with m.If(self.hold):
            m.d.sync += [started.eq(1), rem_q.eq(rem_next), lead_q.eq(lead_next),
                         banks_lead_q.eq(bank_leaders(rem_next, prep.same_bank)),
                         lead_addr_q.eq(lead_addr_next)]
        with m.Else():
            m.d.sync += started.eq(0)
        m.d.comb += [
            self.deferred.eq(active & is_load & (self.exec != 0)),
            self.sent.eq(go_global & accepted & ~more),
            self.sent_warp.eq(self.warp),
        ]

        # --- responses ----------------------------------------------------------------------
        head = Signal(meta)
        m.d.comb += head.eq(fifo.r_data)
        resp = self.mem.resp
        acc = split_signal(data.ArrayLayout(32, lanes), "acc")
        merged = split_signal(data.ArrayLayout(32, lanes), "merged")
        for l in range(lanes):
            word = Signal(32, name=f"resp_word{l}")
            with m.Switch(head.widx[l]):
                for j in range(lw):
                    with m.Case(j):
                        m.d.comb += word.eq(resp.p.rdata[j])
            m.d.comb += merged[l].eq(Mux(head.group[l], word, acc[l]))

        lwb_valid = Signal()
        lwb_data = Signal(self.lwb.p.shape())
        m.d.comb += [self.lwb.valid.eq(lwb_valid), self.lwb.p.eq(lwb_data)]
        with m.If(self.lwb.ready):
            m.d.sync += lwb_valid.eq(0)
        blocked = head.load & head.last & lwb_valid & ~self.lwb.ready
        # ``ready`` is worked out whole before the response's ``valid`` meets it: the valid
        # comes from the L1, placed apart, and the acceptance goes back to it (its reorder
        # buffer's head and slots), so it must be one gate on the L1's side of the loop, not
        # the first input of the LSU's chain of gates for ``blocked``
        ready = Signal(name="resp_ready", attrs={"keep": 1})
        m.d.comb += [ready.eq(fifo.r_rdy & ~blocked), resp.ready.eq(ready),
                     fifo.r_en.eq(resp.valid & ready)]
        # the lanes' words are gathered whether the response is taken or not: one that is
        # not (``blocked``) is offered again unchanged and gathers the same words, so the
        # acceptance reaches only the queue and the write-back, not every lane's register
        with m.If(resp.valid & fifo.r_rdy):
            m.d.sync += acc.eq(merged)
        with m.If(resp.valid & ready):
            with m.If(head.last):
                m.d.comb += [self.acked.eq(1), self.acked_warp.eq(head.warp),
                             self.acked_load.eq(head.load)]
                with m.If(head.load):
                    m.d.sync += [lwb_valid.eq(1), lwb_data.warp.eq(head.warp),
                                 lwb_data.rd.eq(head.rd), lwb_data.wr.eq(head.wr),
                                 lwb_data.pc.eq(head.pc), lwb_data.exec.eq(head.exec),
                                 lwb_data.active.eq(head.active), lwb_data.values.eq(merged)]
        m.d.comb += self.idle.eq(~fifo.r_rdy & ~lwb_valid & ~started)
        return m
