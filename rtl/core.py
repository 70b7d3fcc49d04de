"""The SIMT core: nine stages ``sch if id is rr ex1 ex2 mem wb`` around per-lane units.

Front end (never stalls):
  ``sch``  picks, round robin, a warp that may fetch: it has no fetch in flight, no control
           instruction waiting to resolve and room in its two-entry instruction buffer.
  ``if``   reads the local instruction memory (synchronous read).
  ``id``   decodes the word (:class:`Decoder`) into the warp's instruction buffer. A control
           instruction (bra ssy sync exit) stops the warp's fetch until ex1 resolves it; bar
           does not (it cannot move the pc), it stops the warp's issue until the release.
Back end (one stall signal, raised by ``mem`` while the LSU needs more cycles and by ``ex1``
while the SIMT stack unit is busy):
  ``is``   picks, round robin, a warp whose buffered instruction has no scoreboard hazard
           (a register still waiting for a global load, an atomic, ldparam or the SFU counts
           as one), is not at a fence with stores outstanding and not at a barrier; presents
           register addresses.
  ``rr``   register and predicate read, guard evaluation, special registers; the multiplier
           and FPU take their operands here.
  ``ex1``  ALU, branch/ssy/sync/exit resolution (SIMT stack), barrier arrival, address
           generation.
  ``ex2``  multiplier and FPU results.
  ``mem``  LSU: shared memory, global requests, faults on bad addresses.
  ``wb``   register and predicate write, scoreboard release, retire port; global load data
           comes back through the same write port in a free ``wb`` slot.

See docs/microarchitecture.md for the full story.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from simtgpu.isa import INSTRUCTIONS, PT, Sem
from simtgpu.isa.instructions import Space

from . import layouts
from .alu import ALU_SEMS, Alu, AluOp, alu_op
from .barrier import Barrier
from .configs import RtlConfig
from .decoder import Decoder
from .fcompare import FCmpCond, FCompare
from .fpu import Fpu, FpuOp
from .isa_consts import FaultCause, SReg, iid
from .isa_consts import Sem as RSem
from .layouts import split_signal
from .lsu import Lsu, LsuOp
from .multiplier import MulOp, Multiplier
from .regfile import RegFile
from .scheduler import RoundRobin
from .scoreboard import Scoreboard
from .sfu import Sfu
from .signatures import core_signature
from .simt_stack import SimtOp, SimtStack
from .stages import Stage
from .warp_unit import WarpUnit

IBUF_DEPTH = 3


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


class Core(wiring.Component):
    """One SIMT core (streaming multiprocessor).

    Parameters
    ----------
    cfg:
        The build configuration (:class:`RtlConfig`): lanes, warps, regs, shared memory,
        stack depth, memory size (for range checks), line width, instruction memory size,
        barrier watchdog.
    core_id:
        Value of the ``coreid`` special register.

    The ports are those of :func:`simtgpu.rtl.signatures.core_signature`.
    """

    def __init__(self, cfg: RtlConfig, core_id: int = 0):
        lanes = cfg.lanes
        if lanes & (lanes - 1) or not 4 <= lanes <= 32:
            raise ValueError(f"lanes must be a power of two from 4 to 32, not {lanes}")
        if cfg.regs != 32:
            raise ValueError(f"regs must be 32 (the ISA's register count), not {cfg.regs}")
        self.cfg = cfg
        self.core_id = core_id
        super().__init__(core_signature(cfg))

    # ------------------------------------------------------------------------------------
    def elaborate(self, platform) -> Module:  # noqa: C901 - the core is wiring, kept in one
        m = Module()
        cfg = self.cfg
        L, W = cfg.lanes, cfg.warps
        wb_ = _bits(W)
        vec = data.ArrayLayout(32, L)
        uop = layouts.uop(W, L)

        # --- units ----------------------------------------------------------------------
        m.submodules.decoder = decoder = Decoder()
        m.submodules.regfile = rf = RegFile(W, L, cfg.regs)
        m.submodules.scoreboard = sb = Scoreboard(W, cfg.regs, clear_ports=2)
        m.submodules.stack = stack = SimtStack(W, L, cfg.stack_depth)
        m.submodules.barrier = bar = Barrier(W, cfg.barrier_watchdog_cycles)
        m.submodules.lsu = lsu = Lsu(W, L, cfg.line_words, cfg.shared_bytes, cfg.memory_bytes,
                                     cfg.tag_bits)
        m.submodules.warp_unit = wu = WarpUnit(L)
        alus = [Alu() for _ in range(L)]
        muls = [Multiplier(latency=2) for _ in range(L)]
        fpus = [Fpu(latency=2) for _ in range(L)]
        fcmps = [FCompare() for _ in range(L)]
        S = cfg.sfus
        sfus = [Sfu() for _ in range(S)]
        for l in range(L):
            m.submodules[f"alu{l}"] = alus[l]
            m.submodules[f"mul{l}"] = muls[l]
            m.submodules[f"fpu{l}"] = fpus[l]
            m.submodules[f"fcmp{l}"] = fcmps[l]
        for u in range(S):
            m.submodules[f"sfu{u}"] = sfus[u]
        wiring.connect(m, wiring.flipped(self.mem), lsu.mem)

        m.submodules.imem = imem = Memory(shape=32, depth=cfg.imem_words, init=[])
        imem_w = imem.write_port()
        imem_r = imem.read_port(domain="sync")
        m.d.comb += [imem_w.en.eq(self.imem.we), imem_w.addr.eq(self.imem.addr),
                     imem_w.data.eq(self.imem.data)]

        # --- block state ------------------------------------------------------------------
        blk = Signal(self.dispatch.payload.shape())
        member = Signal(W)  # warp slots of the resident block
        finished = Signal(W)
        cycles = Signal(64)
        m.d.sync += cycles.eq(cycles + 1)

        pc = [Signal(32, name=f"w{w}_pc") for w in range(W)]
        active = [Signal(L, name=f"w{w}_active") for w in range(W)]
        live = [Signal(L, name=f"w{w}_live") for w in range(W)]
        ctrl_wait = Signal(W)
        # registers of each warp waiting for a late write-back (a global load or atomic,
        # ldparam, the SFU): the warp goes on issuing independent instructions, and a head
        # that needs one of these registers is counted as waiting on memory, not on the
        # pipeline's scoreboard
        long_pending = [Signal(cfg.regs, name=f"w{w}_long") for w in range(W)]
        stores_out = [Signal(8, name=f"w{w}_stores") for w in range(W)]
        preds = [[Signal(7, name=f"w{w}_l{l}_p") for l in range(L)] for w in range(W)]

        fault_q = Signal()
        fault_rec = Signal(self.fault.record.shape())
        m.d.comb += [self.fault.valid.eq(fault_q), self.fault.record.eq(fault_rec)]

        running = Signal()
        block_complete = Signal()
        can_issue = running & ~fault_q & ~self.halt

        # tid.x/y/z of every thread, written once per block by the init walk
        tid_layout = data.StructLayout({"x": 16, "y": 16, "z": 16})
        tid_mems = []
        for l in range(L):
            tm = Memory(shape=tid_layout, depth=W, init=[])
            m.submodules[f"tid{l}"] = tm
            tid_mems.append((tm.write_port(), tm.read_port(domain="sync")))

        # --- init walk: number the threads ---------------------------------------------------
        # The register file zeroes itself in one cycle (RegFile.clear). Shared memory is zeroed
        # by its own walk, one row per cycle over the rows of the block's .shared size (the
        # LSU faults on addresses past it, so the rest is never seen); it starts with the
        # init walk and goes on while the warps run, and a shared access waits until it is
        # done (Lsu.clear). The warps' set-up code usually hides it.
        init_len = W * L
        init_cnt = Signal(range(init_len + 1))
        row_bytes = 4 * L
        sh_rows = Signal(range(lsu.shared.rows + 1))
        sh_clear_row = Signal(range(lsu.shared.rows + 1))
        m.d.comb += [sh_rows.eq((blk.shared_bytes + row_bytes - 1) // row_bytes),
                     lsu.clear.eq(sh_clear_row < sh_rows), lsu.clear_row.eq(sh_clear_row)]
        with m.If(lsu.clear):
            m.d.sync += sh_clear_row.eq(sh_clear_row + 1)
        tx, ty, tz = Signal(16), Signal(16), Signal(16)

        with m.FSM(init="IDLE") as fsm:
            with m.State("IDLE"):
                ready = (~fault_q & (self.dispatch.payload.num_warps <= W)
                         & (self.dispatch.payload.shared_bytes <= cfg.shared_bytes))
                m.d.comb += self.dispatch.ready.eq(ready)
                with m.If(self.dispatch.valid & ready):
                    m.d.sync += [blk.eq(self.dispatch.payload), init_cnt.eq(0),
                                 tx.eq(0), ty.eq(0), tz.eq(0), sh_clear_row.eq(0)]
                    m.next = "INIT"
            with m.State("INIT"):
                for l in range(L):
                    wp, _ = tid_mems[l]
                    m.d.comb += [wp.addr.eq(init_cnt // L if L > 1 else init_cnt),
                                 wp.data.x.eq(tx), wp.data.y.eq(ty), wp.data.z.eq(tz),
                                 wp.en.eq((init_cnt < W * L) & (init_cnt % L == l))]
                with m.If(tx + 1 >= blk.block_dim.x):
                    m.d.sync += tx.eq(0)
                    with m.If(ty + 1 >= blk.block_dim.y):
                        m.d.sync += [ty.eq(0), tz.eq(tz + 1)]
                    with m.Else():
                        m.d.sync += ty.eq(ty + 1)
                with m.Else():
                    m.d.sync += tx.eq(tx + 1)
                m.d.sync += init_cnt.eq(init_cnt + 1)
                with m.If(init_cnt == init_len - 1):
                    m.next = "RUN"
                    for w in range(W):
                        lanes_live = Cat(((w * L + l) < blk.num_threads) for l in range(L))
                        is_member = w < blk.num_warps
                        m.d.sync += [pc[w].eq(blk.entry_pc),
                                     live[w].eq(Mux(is_member, lanes_live, 0)),
                                     active[w].eq(Mux(is_member, lanes_live, 0)),
                                     member[w].eq(is_member)]
                        for l in range(L):
                            m.d.sync += preds[w][l].eq(0)
                    m.d.sync += [finished.eq(0), ctrl_wait.eq(0)]
            with m.State("RUN"):
                m.d.comb += running.eq(1)
                with m.If(block_complete):
                    m.next = "DONE"
                with m.If(self.flush):
                    m.next = "IDLE"
            with m.State("DONE"):
                m.d.comb += self.dispatch.block_done.eq(1)
                m.d.sync += member.eq(0)
                m.next = "IDLE"
        with m.If(self.flush):
            m.d.sync += [member.eq(0), fault_q.eq(0)]
        block_reset = fsm.ongoing("INIT") & (init_cnt == 0)
        m.d.comb += [sb.reset.eq(block_reset | self.flush), rf.clear.eq(block_reset),
                     stack.reset.eq(block_reset | self.flush),
                     bar.reset.eq(block_reset | self.flush),
                     bar.members.eq(member), bar.exited.eq(finished & member)]

        # --- sch: pick a warp to fetch -----------------------------------------------------
        m.submodules.sch_if = sch_if_st = Stage("sch_if", layouts.sch_if(W))
        m.submodules.if_id = if_id_st = Stage("if_id", layouts.if_id(W))
        sch_if, if_id = sch_if_st.q, if_id_st.q
        ib_count = [Signal(range(IBUF_DEPTH + 1), name=f"w{w}_ibcount") for w in range(W)]
        ib_head = [Signal(range(IBUF_DEPTH), name=f"w{w}_ibhead") for w in range(W)]
        # each warp's buffer is a small RAM (written at the tail, read at the head): a
        # register per entry would be rewritten every cycle in simulation
        ib_w = []
        ib_r = []
        for w in range(W):
            ib_mem = Memory(shape=layouts.id_is(), depth=IBUF_DEPTH, init=[])
            m.submodules[f"w{w}_ib"] = ib_mem
            ib_w.append(ib_mem.write_port())
            ib_r.append(ib_mem.read_port(domain="comb"))
        fetchable = Signal(W)
        for w in range(W):
            # fetches in flight count against the buffer, so whatever arrives has a slot
            inflight = ((sch_if.valid & (sch_if.warp == w)).as_unsigned()
                        + (if_id.valid & (if_id.warp == w)).as_unsigned())
            m.d.comb += fetchable[w].eq(member[w] & ~finished[w] & ~ctrl_wait[w]
                                        & (ib_count[w] + inflight < IBUF_DEPTH))
        m.submodules.sch = sch_rr = RoundRobin(W)
        m.d.comb += sch_rr.request.eq(fetchable)
        sch_pick, sch_found = sch_rr.grant, sch_rr.found
        do_fetch = sch_found & can_issue
        m.d.comb += [sch_if_st.d.valid.eq(do_fetch), sch_if_st.d.warp.eq(sch_pick)]
        with m.Switch(sch_pick):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += sch_if_st.d.pc.eq(pc[w])
        m.d.comb += [sch_rr.advance.eq(do_fetch), sch_rr.restart.eq(block_reset)]

        # --- if: instruction memory read ----------------------------------------------------
        imem_bytes = cfg.imem_words * 4
        m.d.comb += [imem_r.addr.eq(sch_if.pc[2:]), imem_r.en.eq(1)]
        m.d.comb += if_id_st.d.eq(sch_if)
        if_pc_fault = Signal()
        m.d.sync += if_pc_fault.eq((sch_if.pc >= imem_bytes) | (sch_if.pc >= self.code_limit)
                                   | (sch_if.pc[:2] != 0))

        # --- id: decode into the instruction buffer ----------------------------------------
        m.d.comb += decoder.word.eq(imem_r.data)
        id_entry = split_signal(layouts.id_is(), "id_entry")
        m.d.comb += [id_entry.pc.eq(if_id.pc), id_entry.word.eq(imem_r.data),
                     id_entry.pc_fault.eq(if_pc_fault), id_entry.dec.eq(decoder.dec)]

        # --- is: pick a warp to issue ------------------------------------------------------
        heads = [split_signal(layouts.id_is(), f"w{w}_head") for w in range(W)]
        for w in range(W):
            m.d.comb += [ib_r[w].addr.eq(ib_head[w]), heads[w].eq(ib_r[w].data)]

        nreg = cfg.regs

        def needs(dec) -> Signal:
            """Scoreboard bits an instruction reads or writes (registers, then predicates).

            Register and predicate masks are built apart from one-bit shifts: a shift of
            the full-width constant would be a 167-bit vector in the Verilog."""
            n = Signal(nreg + 8)

            def reg(idx, cond):
                return Mux(cond, 1 << idx, 0)

            def prd(idx, cond):
                return Mux(cond & (idx != PT), 1 << idx, 0)

            regs = (reg(dec.rs1, dec.rd_rs1) | reg(dec.rs2, dec.rd_rs2)
                    | reg(dec.rs3, dec.rd_rs3) | reg(dec.rd, dec.rd_rd | dec.wr_reg))
            prds = (prd(dec.guard, 1) | prd(dec.rs1[:3], dec.rd_ps1)
                    | prd(dec.rs2[:3], dec.rd_ps2) | prd(dec.rs3[:3], dec.rd_ps3)
                    | prd(dec.rd[:3], dec.wr_pred))
            m.d.comb += n.eq(Cat(regs[:nreg], prds))
            return n

        stall = Signal()
        lwb_wait = Signal()
        sfu_busy = Signal()  # an SFU instruction is between is and its write-back
        # a warp that has issued bar issues nothing more until the barrier releases it; its
        # fetch goes on (bar does not move the pc), so the instructions after the bar are
        # buffered by the time it is released
        bar_hold = Signal(W)
        eligible = Signal(W)
        hazard = Signal(W)
        parked = Signal(W)
        structural = Signal(W)
        for w in range(W):
            h = heads[w]
            has = ib_count[w] != 0
            is_fence = h.dec.iid == iid("fence")
            haz_bits = needs(h.dec) & sb.pending[w]
            haz = haz_bits != 0
            # the hazard is on a register a long-latency instruction will write
            on_long = (haz_bits[:cfg.regs] & long_pending[w]) != 0
            park = on_long | (is_fence & (stores_out[w] != 0))
            busy_unit = (h.dec.sem == RSem.SFU) & sfu_busy
            # structural: the head would issue but for the busy SFU
            m.d.comb += [hazard[w].eq(has & haz & ~park), parked[w].eq(has & park),
                         structural[w].eq(has & busy_unit & ~haz & ~park & ~bar_hold[w]
                                          & member[w] & ~finished[w])]
            m.d.comb += eligible[w].eq(has & ~haz & ~park & ~busy_unit & ~bar_hold[w]
                                       & member[w] & ~finished[w])
        m.submodules.issue = is_rr_sched = RoundRobin(W)
        m.d.comb += is_rr_sched.request.eq(eligible)
        is_pick, is_found = is_rr_sched.grant, is_rr_sched.found
        do_issue = is_found & can_issue & ~stall & ~lwb_wait
        issued = split_signal(layouts.id_is(), "issued")
        with m.Switch(is_pick):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += issued.eq(heads[w])
        issue_fault = do_issue & (issued.dec.illegal | issued.pc_fault)
        issue_ok = do_issue & ~issue_fault
        m.d.comb += [is_rr_sched.advance.eq(do_issue), is_rr_sched.restart.eq(block_reset)]

        # instruction buffer write (id) and pop (is)
        for w in range(W):
            # a fetch that arrives behind a control instruction of its warp is dropped: the
            # warp's pc is set again when ex1 resolves the control instruction
            push = if_id.valid & (if_id.warp == w) & ~ctrl_wait[w] & ~finished[w]
            pop = issue_ok & (is_pick == w)
            tail = Signal(range(IBUF_DEPTH), name=f"w{w}_ibtail")
            m.d.comb += tail.eq((ib_head[w] + ib_count[w]) % IBUF_DEPTH)
            m.d.comb += [ib_w[w].addr.eq(tail), ib_w[w].data.eq(id_entry), ib_w[w].en.eq(push)]
            with m.If(push):
                with m.If(decoder.dec.ctrl & ~decoder.dec.illegal
                          & (decoder.dec.iid != iid("bar"))):
                    m.d.sync += ctrl_wait[w].eq(1)
            with m.If(pop):
                m.d.sync += ib_head[w].eq((ib_head[w] + 1) % IBUF_DEPTH)
            m.d.sync += ib_count[w].eq(ib_count[w] + push - pop)
            with m.If(block_reset | self.flush):
                m.d.sync += [ib_count[w].eq(0), ib_head[w].eq(0)]

        def is_long(dec):
            glob = Cat(dec.iid == iid(i.mnemonic) for i in INSTRUCTIONS
                       if i.sem in (Sem.LOAD, Sem.ATOMIC, Sem.PARAM)
                       and i.space is not Space.SHARED).any()
            return glob | (dec.sem == RSem.SFU)

        # scoreboard set at issue
        m.d.comb += [sb.set.en.eq(issue_ok & (issued.dec.wr_reg | issued.dec.wr_pred)),
                     sb.set.warp.eq(is_pick),
                     sb.set.idx.eq(issued.dec.rd),
                     sb.set.pred.eq(issued.dec.wr_pred)]

        # register read addresses
        m.d.comb += [rf.ren.eq(~stall),
                     rf.raddr[0].eq(rf.addr(is_pick, issued.dec.rs1)),
                     rf.raddr[1].eq(rf.addr(is_pick, issued.dec.rs2)),
                     rf.raddr[2].eq(rf.addr(is_pick, Mux(issued.dec.rd_rd, issued.dec.rd,
                                                         issued.dec.rs3)))]
        for l in range(L):
            _, rp = tid_mems[l]
            m.d.comb += [rp.addr.eq(is_pick), rp.en.eq(~stall)]

        m.submodules.is_rr = is_rr_st = Stage("is_rr", layouts.is_rr(W))
        is_rr = is_rr_st.q
        m.d.comb += [is_rr_st.stall.eq(stall),
                     is_rr_st.d.valid.eq(issue_ok), is_rr_st.d.warp.eq(is_pick),
                     is_rr_st.d.pc.eq(issued.pc), is_rr_st.d.word.eq(issued.word),
                     is_rr_st.d.dec.eq(issued.dec)]

        # --- rr: operands, guard, predicates, special registers -----------------------------
        rr = split_signal(uop, "rr")
        d = is_rr.dec
        wp_preds = [Signal(7, name=f"rr_l{l}_preds") for l in range(L)]
        r_active = Signal(L)
        r_live = Signal(L)
        with m.Switch(is_rr.warp):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += [r_active.eq(active[w]), r_live.eq(live[w])]
                    for l in range(L):
                        m.d.comb += wp_preds[l].eq(preds[w][l])

        def pread(l, field):
            """A predicate source field (bit 4 negates, bits 2:0 select, 7 = pt)."""
            idx = field[:3]
            val = Mux(idx == PT, 1, (wp_preds[l] >> idx)[0])
            return val ^ field[4]

        guard = Signal(L)
        for l in range(L):
            g = Mux(d.guard == PT, 1, (wp_preds[l] >> d.guard)[0])
            m.d.comb += guard[l].eq(g ^ d.gneg)
        m.d.comb += [rr.valid.eq(is_rr.valid), rr.warp.eq(is_rr.warp), rr.pc.eq(is_rr.pc),
                     rr.word.eq(is_rr.word), rr.dec.eq(d), rr.active.eq(r_active),
                     rr.exec.eq(r_active & guard)]
        sreg_val = [Signal(32, name=f"sreg{l}") for l in range(L)]
        for l in range(L):
            _, tp = tid_mems[l]
            m.d.comb += [rr.a[l].eq(rf.rdata[0][l]),
                         rr.b[l].eq(Mux(d.use_imm, d.imm, rf.rdata[1][l])),
                         rr.c[l].eq(rf.rdata[2][l]),
                         rr.pa[l].eq(pread(l, d.rs1)),
                         rr.pb[l].eq(pread(l, d.rs2)),
                         rr.pc3[l].eq(pread(l, d.rs3))]
            with m.Switch(d.imm[:5]):
                for s, val in (
                    (SReg.TID_X, tp.data.x), (SReg.TID_Y, tp.data.y), (SReg.TID_Z, tp.data.z),
                    (SReg.NTID_X, blk.block_dim.x), (SReg.NTID_Y, blk.block_dim.y),
                    (SReg.NTID_Z, blk.block_dim.z), (SReg.CTAID_X, blk.block_id.x),
                    (SReg.CTAID_Y, blk.block_id.y), (SReg.CTAID_Z, blk.block_id.z),
                    (SReg.NCTAID_X, blk.grid.x), (SReg.NCTAID_Y, blk.grid.y),
                    (SReg.NCTAID_Z, blk.grid.z), (SReg.LANEID, l), (SReg.WARPID, is_rr.warp),
                    (SReg.NWARPS, blk.num_warps), (SReg.WARPSIZE, L),
                    (SReg.CLOCK, cycles[:32]), (SReg.CLOCKHI, cycles[32:]),
                    (SReg.COREID, self.core_id), (SReg.TID, is_rr.warp * L + l),
                ):
                    with m.Case(s.value):
                        m.d.comb += sreg_val[l].eq(val)

        # multiplier and FPU take their operands in rr (two stages: ex1, ex2)
        mul_op = Signal(MulOp)
        fpu_op = Signal(FpuOp)
        with m.Switch(d.iid):
            for ins in INSTRUCTIONS:
                if ins.sem is Sem.MUL:
                    with m.Case(iid(ins.mnemonic)):
                        m.d.comb += mul_op.eq(MulOp[ins.mnemonic.upper()])
                if ins.sem in (Sem.FP, Sem.CVT):
                    with m.Case(iid(ins.mnemonic)):
                        m.d.comb += fpu_op.eq(FpuOp[ins.mnemonic.upper().replace(".", "_")])
        for l in range(L):
            m.d.comb += [muls[l].en.eq(~stall), muls[l].op.eq(mul_op),
                         muls[l].a.eq(rr.a[l]), muls[l].b.eq(rr.b[l]),
                         fpus[l].en.eq(~stall), fpus[l].op.eq(fpu_op),
                         fpus[l].a.eq(rr.a[l]), fpus[l].b.eq(rr.b[l]), fpus[l].c.eq(rr.c[l])]

        m.submodules.rr_ex1 = rr_ex1_st = Stage("rr_ex1", uop)
        rr_ex1 = rr_ex1_st.q
        m.d.comb += [rr_ex1_st.stall.eq(stall), rr_ex1_st.d.eq(rr)]
        for l in range(L):
            with m.If(d.sem == RSem.SREG):
                m.d.comb += rr_ex1_st.d.b[l].eq(sreg_val[l])

        # --- ex1: ALU, control flow, barrier, address generation ---------------------------
        x = rr_ex1
        xd = x.dec
        ex1 = split_signal(uop, "ex1")
        m.d.comb += ex1.eq(x)
        alu_op_sig = Signal(AluOp)
        with m.Switch(xd.iid):
            for ins in INSTRUCTIONS:
                if ins.sem in ALU_SEMS:
                    with m.Case(iid(ins.mnemonic)):
                        m.d.comb += alu_op_sig.eq(alu_op(ins))
        m.d.comb += [wu.shfl_mode.eq(xd.fn[:2]), wu.vote_mode.eq(xd.fn[:2]), wu.exec.eq(x.exec),
                     wu.a.eq(x.a), wu.b.eq(x.b), wu.p.eq(x.pa)]
        for l in range(L):
            a = alus[l]
            m.d.comb += [a.op.eq(alu_op_sig), a.a.eq(x.a[l]), a.b.eq(x.b[l]), a.c.eq(x.c[l]),
                         a.pa.eq(x.pa[l]), a.pb.eq(x.pb[l]), a.psel.eq(x.pc3[l])]
            fc = fcmps[l]
            m.d.comb += [fc.cond.eq(xd.fn[:FCmpCond.as_shape().width]), fc.a.eq(x.a[l]),
                         fc.b.eq(x.b[l])]
            with m.Switch(xd.sem):
                with m.Case(RSem.FCMP):
                    m.d.comb += ex1.presult[l].eq(fc.pred)
                with m.Case(RSem.SHUFFLE):
                    m.d.comb += ex1.result[l].eq(wu.shfl[l])
                with m.Case(RSem.VOTE):
                    m.d.comb += [ex1.result[l].eq(wu.ballot), ex1.presult[l].eq(wu.vote_pred[l])]
                with m.Case(RSem.SFU):
                    m.d.comb += ex1.deferred.eq(1)
                with m.Case(RSem.SREG):
                    m.d.comb += ex1.result[l].eq(x.b[l])
                with m.Case(RSem.LOAD, RSem.STORE, RSem.PARAM):
                    m.d.comb += ex1.a[l].eq(x.a[l] + xd.imm)
                with m.Case(RSem.INT, RSem.INT_IMM, RSem.CONST, RSem.SELECT):
                    m.d.comb += ex1.result[l].eq(a.result)
                with m.Case(RSem.ICMP, RSem.PLOGIC):
                    m.d.comb += ex1.presult[l].eq(a.pred)

        x_live = Signal(L)
        with m.Switch(x.warp):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += x_live.eq(live[w])
        simt_ops = {"bra": SimtOp.BRA, "ssy": SimtOp.SSY, "sync": SimtOp.SYNC,
                    "exit": SimtOp.EXIT}
        is_simt = Signal()
        is_bar = Signal()
        with m.Switch(xd.iid):
            for name, sop in simt_ops.items():
                with m.Case(iid(name)):
                    m.d.comb += [is_simt.eq(1), stack.op.eq(sop)]
            with m.Case(iid("bar")):
                m.d.comb += is_bar.eq(1)
        mem_hold = Signal()
        ex1_block = x.valid & is_simt & ~stack.ready
        m.d.comb += stall.eq(mem_hold | ex1_block)
        leaving = x.valid & ~stall  # ex1's side effects happen once, as it leaves
        m.d.comb += [stack.valid.eq(leaving & is_simt), stack.warp.eq(x.warp),
                     stack.pc.eq(x.pc), stack.target.eq(x.pc + xd.imm),
                     stack.active.eq(x.active), stack.live.eq(x_live),
                     stack.guard.eq(x.exec)]
        bar_divergent = leaving & is_bar & (x.active != x_live)
        m.d.comb += [bar.arrive.eq(leaving & is_bar & ~bar_divergent), bar.warp.eq(x.warp)]

        # warp state updates from control resolution and barriers
        for w in range(W):
            with m.If(stack.done & (stack.done_warp == w)):
                m.d.sync += ctrl_wait[w].eq(0)
                with m.If(stack.finished):
                    m.d.sync += [finished[w].eq(1), live[w].eq(0), active[w].eq(0)]
                with m.Elif(~stack.fault):
                    m.d.sync += [pc[w].eq(stack.new_pc), active[w].eq(stack.new_active),
                                 live[w].eq(stack.new_live)]
            with m.If(issue_ok & (is_pick == w) & (issued.dec.iid == iid("bar"))):
                m.d.sync += bar_hold[w].eq(1)
            with m.Elif((bar.release & bar.waiting[w]) | block_reset | self.flush):
                m.d.sync += bar_hold[w].eq(0)
            with m.If(do_fetch & (sch_pick == w)):
                m.d.sync += pc[w].eq(pc[w] + 4)

        # SFU: the S units take the lanes in L / S passes of SFU_LATENCY cycles, lanes
        # p*S .. p*S+S-1 in pass p; the first pass starts as the instruction leaves ex1, the
        # results come back through the late write-back slot after the last pass
        passes = L // S
        sfu_start = leaving & (xd.sem == RSem.SFU)
        sfu_meta = Signal(data.StructLayout(
            {"warp": wb_, "rd": 5, "wr": 1, "pc": 32, "active": L, "exec": L, "stale": 1}))
        # an SFU instruction younger than a fault of its warp must not retire: one that starts
        # after the fault, or as a global access of its warp faults in mem (the only fault
        # raised with younger instructions of the warp already in flight)
        sfu_stale = Signal()
        sfu_wb_valid = Signal()
        sfu_a = split_signal(vec, "sfu_a")  # the operands, for the passes after the first
        sfu_op = Signal(3)
        sfu_pass = Signal(range(passes))
        sfu_values = split_signal(vec, "sfu_values")
        sfu_next = Signal()  # a pass is done and another follows
        m.d.comb += sfu_next.eq(sfus[0].done & (sfu_pass != passes - 1))
        for u in range(S):
            m.d.comb += [sfus[u].start.eq(sfu_start | sfu_next),
                         sfus[u].op.eq(Mux(sfu_start, xd.fn[:3], sfu_op)),
                         sfus[u].a.eq(x.a[u])]
            with m.If(~sfu_start):
                with m.Switch(sfu_pass):
                    for p_ in range(passes - 1):
                        with m.Case(p_):
                            m.d.comb += sfus[u].a.eq(sfu_a[(p_ + 1) * S + u])
            with m.If(sfus[0].done):
                with m.Switch(sfu_pass):
                    for p_ in range(passes):
                        with m.Case(p_):
                            m.d.sync += sfu_values[p_ * S + u].eq(sfus[u].result)
        with m.If(sfu_next):
            m.d.sync += sfu_pass.eq(sfu_pass + 1)
        with m.If(sfu_start):
            m.d.sync += [sfu_a.eq(x.a), sfu_op.eq(xd.fn[:3]), sfu_pass.eq(0),
                         sfu_meta.warp.eq(x.warp), sfu_meta.rd.eq(xd.rd),
                         sfu_meta.wr.eq(xd.wr_reg), sfu_meta.pc.eq(x.pc),
                         sfu_meta.active.eq(x.active), sfu_meta.exec.eq(x.exec),
                         sfu_meta.stale.eq(sfu_stale)]
        with m.If(sfus[0].done & ~sfu_next):
            m.d.sync += sfu_wb_valid.eq(1)
        with m.If(issue_ok & (issued.dec.sem == RSem.SFU)):
            m.d.sync += sfu_busy.eq(1)

        # --- ex2: multiplier and FPU results -----------------------------------------------
        m.submodules.ex1_ex2 = ex1_ex2_st = Stage("ex1_ex2", uop)
        ex1_ex2 = ex1_ex2_st.q
        m.d.comb += [ex1_ex2_st.stall.eq(stall), ex1_ex2_st.d.eq(ex1)]
        ex2 = split_signal(uop, "ex2")
        m.d.comb += ex2.eq(ex1_ex2)
        for l in range(L):
            with m.Switch(ex1_ex2.dec.sem):
                with m.Case(RSem.MUL):
                    m.d.comb += ex2.result[l].eq(muls[l].result)
                with m.Case(RSem.FP, RSem.CVT):
                    m.d.comb += ex2.result[l].eq(fpus[l].result)

        # --- mem: LSU ------------------------------------------------------------------------
        m.submodules.ex2_mem = ex2_mem_st = Stage("ex2_mem", uop)
        ex2_mem = ex2_mem_st.q
        # mem may move on while ex1 is held: a bubble enters mem then
        m.d.comb += [ex2_mem_st.stall.eq(mem_hold), ex2_mem_st.kill.eq(stall),
                     ex2_mem_st.d.eq(ex2)]
        y = ex2_mem
        lsu_op = Signal(LsuOp)
        atom_fn = Signal(5)
        m.d.comb += atom_fn.eq(y.dec.fn)
        with m.Switch(y.dec.iid):
            for ins in INSTRUCTIONS:
                if ins.space is None:
                    continue
                if ins.sem is Sem.LOAD:
                    op = LsuOp.LDG if ins.space is Space.GLOBAL else LsuOp.LDS
                elif ins.sem is Sem.STORE:
                    op = LsuOp.STG if ins.space is Space.GLOBAL else LsuOp.STS
                elif ins.sem is Sem.PARAM:
                    op = LsuOp.LDPARAM
                else:
                    op = LsuOp.ATOM if ins.space is Space.GLOBAL else LsuOp.ATOMS
                with m.Case(iid(ins.mnemonic)):
                    m.d.comb += lsu_op.eq(op)
                    if ins.sem is Sem.ATOMIC and ins.fn is None:
                        m.d.comb += atom_fn.eq(5)  # cas
        # precise faults: the instructions of the faulting warp still in the pipeline behind
        # the fault are younger; they leave no trace (no memory access, no retire)
        def dead(warp) -> Signal:
            return fault_q & (warp == fault_rec.warp)

        y_valid = y.valid & ~dead(y.warp)
        m.d.comb += sfu_stale.eq(dead(x.warp) | (~fault_q & running & lsu.fault & y_valid
                                                  & (y.warp == x.warp)))
        m.d.comb += [lsu.valid.eq(y_valid), lsu.op.eq(lsu_op), lsu.fn.eq(atom_fn),
                     lsu.warp.eq(y.warp), lsu.pc.eq(y.pc), lsu.rd.eq(y.dec.rd),
                     lsu.wr.eq(y.dec.wr_reg), lsu.active.eq(y.active), lsu.exec.eq(y.exec),
                     lsu.addr.eq(y.a), lsu.data.eq(y.b), lsu.cdata.eq(y.c),
                     lsu.shared_size.eq(blk.shared_bytes), lsu.param_addr.eq(blk.param_addr),
                     lsu.param_size.eq(blk.param_size),
                     mem_hold.eq(lsu.hold)]
        m.submodules.mem_wb = mem_wb_st = Stage("mem_wb", uop)
        mem_wb = mem_wb_st.q
        m.d.comb += [mem_wb_st.kill.eq(mem_hold), mem_wb_st.d.eq(y),
                     mem_wb_st.d.deferred.eq(y.deferred | lsu.deferred),
                     mem_wb_st.d.valid.eq(y_valid & ~lsu.fault)]

        # outstanding global stores per warp (fences)
        for w in range(W):
            inc = lsu.sent & (lsu.sent_warp == w)
            dec_ = lsu.acked & (lsu.acked_warp == w)
            ld = lsu.op != LsuOp.STG
            m.d.sync += stores_out[w].eq(stores_out[w] + (inc & ~ld) - (dec_ & ~lsu.acked_load))
            with m.If(block_reset | self.flush):
                m.d.sync += stores_out[w].eq(0)

        # --- wb: register/predicate write, scoreboard release, retire ----------------------
        z = mem_wb
        zd = z.dec
        values = split_signal(vec, "values")
        m.d.comb += values.eq(z.result)
        with m.If(zd.iid == iid("lds")):
            m.d.comb += values.eq(lsu.sh_values)
        with m.If(zd.sem == RSem.ATOMIC):
            m.d.comb += values.eq(lsu.atom_values)
        lwb = lsu.lwb
        sfu_take = sfu_wb_valid & ~z.valid & ~lwb.valid
        with m.If(sfu_take):
            m.d.sync += [sfu_wb_valid.eq(0), sfu_busy.eq(0)]
        # A late write-back takes a free wb slot. Issue stops for it only when no bubble is
        # already on its way to wb: bubbles are never squeezed out of the pipeline, so one
        # between is and mem reaches wb in a few cycles (and mem_hold makes one at wb).
        bubble_coming = (~is_rr.valid | ~rr_ex1.valid | ~ex1_ex2.valid | ~ex2_mem.valid
                         | mem_hold)
        m.d.comb += [lwb.ready.eq(~z.valid),
                     lwb_wait.eq((lwb.valid | sfu_wb_valid) & ~bubble_coming)]
        # long_pending follows the scoreboard: set at issue, cleared where the scoreboard's
        # bit is (the late write-back, or wb when no lane executed and nothing comes back)
        long_set = issue_ok & is_long(issued.dec) & issued.dec.wr_reg
        for w in range(W):
            set_bits = Mux(long_set & (is_pick == w), 1 << issued.dec.rd, 0)
            clr = [Mux(c.en & ~c.pred & (c.warp == w), 1 << c.idx, 0) for c in sb.clear]
            clr_bits = Signal(cfg.regs, name=f"w{w}_long_clr")
            m.d.comb += clr_bits.eq(clr[0] | clr[1])
            m.d.sync += long_pending[w].eq((long_pending[w] & ~clr_bits) | set_bits)
            with m.If(block_reset | self.flush):
                m.d.sync += long_pending[w].eq(0)
        wb_reg = z.valid & zd.wr_reg & ~z.deferred
        with m.If(wb_reg):
            m.d.comb += [rf.we.eq(z.exec), rf.waddr.eq(rf.addr(z.warp, zd.rd)),
                         rf.wdata.eq(values)]
        with m.Elif(lwb.valid & lwb.ready):
            m.d.comb += [rf.we.eq(Mux(lwb.p.wr, lwb.p.exec, 0)),
                         rf.waddr.eq(rf.addr(lwb.p.warp, lwb.p.rd)), rf.wdata.eq(lwb.p.values)]
        with m.Elif(sfu_take):
            m.d.comb += [rf.we.eq(Mux(sfu_meta.wr, sfu_meta.exec, 0)),
                         rf.waddr.eq(rf.addr(sfu_meta.warp, sfu_meta.rd)),
                         rf.wdata.eq(sfu_values)]
        for w in range(W):
            with m.If(z.valid & zd.wr_pred & (z.warp == w)):
                for l in range(L):
                    with m.If(z.exec[l]):
                        m.d.sync += preds[w][l].eq(
                            preds[w][l] & ~(1 << zd.rd[:3]) | (z.presult[l] << zd.rd[:3]))
        m.d.comb += [sb.clear[0].en.eq(z.valid & ((zd.wr_reg & ~z.deferred) | zd.wr_pred)),
                     sb.clear[0].warp.eq(z.warp), sb.clear[0].idx.eq(zd.rd),
                     sb.clear[0].pred.eq(zd.wr_pred),
                     sb.clear[1].pred.eq(0)]
        with m.If(lwb.valid & lwb.ready):
            m.d.comb += [sb.clear[1].en.eq(lwb.p.wr), sb.clear[1].warp.eq(lwb.p.warp),
                         sb.clear[1].idx.eq(lwb.p.rd)]
        with m.Elif(sfu_take):
            m.d.comb += [sb.clear[1].en.eq(sfu_meta.wr), sb.clear[1].warp.eq(sfu_meta.warp),
                         sb.clear[1].idx.eq(sfu_meta.rd)]

        rt = self.retire
        with m.If(z.valid & ~z.deferred):
            m.d.comb += [rt.valid.eq(1), rt.warp.eq(z.warp), rt.pc.eq(z.pc),
                         rt.mask.eq(z.active), rt.exec.eq(z.exec),
                         rt.rd_valid.eq(zd.wr_reg), rt.rd.eq(zd.rd), rt.values.eq(values),
                         rt.pd_valid.eq(zd.wr_pred), rt.pd.eq(zd.rd[:3]),
                         rt.pvalues.eq(z.presult)]
        with m.Elif(lwb.valid & lwb.ready):
            # every late write-back is older than any fault of its warp (younger accesses
            # never reach the LSU once the fault is raised), so it retires, as on the ISS
            m.d.comb += [rt.valid.eq(1), rt.warp.eq(lwb.p.warp),
                         rt.pc.eq(lwb.p.pc),
                         rt.mask.eq(lwb.p.active), rt.exec.eq(lwb.p.exec),
                         rt.rd_valid.eq(lwb.p.wr), rt.rd.eq(lwb.p.rd),
                         rt.values.eq(lwb.p.values)]
        with m.Elif(sfu_take):
            m.d.comb += [rt.valid.eq(~sfu_meta.stale), rt.warp.eq(sfu_meta.warp),
                         rt.pc.eq(sfu_meta.pc),
                         rt.mask.eq(sfu_meta.active), rt.exec.eq(sfu_meta.exec),
                         rt.rd_valid.eq(sfu_meta.wr), rt.rd.eq(sfu_meta.rd),
                         rt.values.eq(sfu_values)]
        m.d.comb += rt.block.eq(blk.block_id)

        # --- faults (the first one is kept until flush) -----------------------------------
        def fault(cause, warp, lanes_, pc_, word):
            m.d.sync += [fault_q.eq(1), fault_rec.cause.eq(cause), fault_rec.warp.eq(warp),
                         fault_rec.lane_mask.eq(lanes_), fault_rec.pc.eq(pc_),
                         fault_rec.instr.eq(word), fault_rec.block.eq(blk.block_id)]

        issue_active = Signal(L)
        with m.Switch(is_pick):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += issue_active.eq(active[w])
        # BARRIER_DEADLOCK names the lowest-numbered waiting warp, counting the one arriving
        # in this cycle (the deadlock is raised as the last live warp arrives), with its live
        # mask, the pc of its bar and the bar's word
        bar_arrived = Signal(W)
        m.d.comb += bar_arrived.eq(bar.waiting | Mux(bar.arrive, 1 << bar.warp, 0))
        bar_words = [Signal(32, name=f"w{w}_bar_word") for w in range(W)]
        bar_pcs = [Signal(32, name=f"w{w}_bar_pc") for w in range(W)]
        for w in range(W):
            with m.If(bar.arrive & (bar.warp == w)):
                m.d.sync += [bar_words[w].eq(x.word), bar_pcs[w].eq(x.pc)]
        bar_first = Signal(wb_)
        for w in reversed(range(W)):
            with m.If(bar_arrived[w]):
                m.d.comb += bar_first.eq(w)
        bar_first_pc = Signal(32)
        bar_first_live = Signal(L)
        bar_first_word = Signal(32)
        with m.Switch(bar_first):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += [bar_first_pc.eq(bar_pcs[w]), bar_first_live.eq(live[w]),
                                 bar_first_word.eq(bar_words[w])]
        # the warp arriving now has not had its bar's pc and word recorded yet
        with m.If(bar.arrive & (bar.warp == bar_first)):
            m.d.comb += [bar_first_pc.eq(x.pc), bar_first_word.eq(x.word)]
        with m.If(~fault_q & running):
            with m.If(lsu.fault & y.valid):
                fault(lsu.fault_cause, y.warp, lsu.fault_lanes, y.pc, y.word)
            with m.Elif(stack.done & stack.fault):
                fault(stack.fault_cause, x.warp, x.active, x.pc, x.word)
            with m.Elif(bar_divergent):
                fault(FaultCause.DIVERGENT_BARRIER, x.warp, x.active, x.pc, x.word)
            with m.Elif(bar.deadlock):
                fault(FaultCause.BARRIER_DEADLOCK, bar_first, bar_first_live, bar_first_pc,
                      bar_first_word)
            with m.Elif(issue_fault):
                fault(Mux(issued.pc_fault, FaultCause.PC_OUT_OF_RANGE,
                          FaultCause.ILLEGAL_INSTRUCTION),
                      is_pick, issue_active, issued.pc, Mux(issued.pc_fault, 0, issued.word))

        # --- completion, status, performance events ---------------------------------------
        pipe_busy = (sch_if.valid | if_id.valid | is_rr.valid | rr_ex1.valid | ex1_ex2.valid
                     | ex2_mem.valid | mem_wb.valid | sfu_busy)
        m.d.comb += self.drained.eq(~pipe_busy & lsu.idle & stack.ready)
        all_done = (member != 0) & ((finished & member) == member)
        m.d.comb += block_complete.eq(all_done & self.drained & ~fault_q)
        m.d.comb += self.busy.eq(~fsm.ongoing("IDLE") | pipe_busy | ~lsu.idle)

        p = self.perf
        any_live = (member & ~finished) != 0
        m.d.comb += [p.issued.eq(issue_ok), p.mem_transactions.eq(lsu.transaction),
                     p.divergence.eq(stack.diverged & stack.valid),
                     p.barriers.eq(bar.release)]
        # Each running cycle without an issue is charged to one reason, first match:
        # memory (the LSU holds mem, or a global load's data takes the write-back slot),
        # structural (the SIMT stack unit holds ex1, the SFU's result takes the write-back
        # slot, or a warp is ready but for the busy SFU), scoreboard, memory (warps parked on
        # global loads, atomics, ldparam or fences), barrier, idle.
        with m.If(~issue_ok & running):
            with m.If(~any_live):
                m.d.comb += p.stall_idle.eq(1)
            with m.Elif(mem_hold | lwb.valid):
                m.d.comb += p.stall_memory.eq(1)
            with m.Elif(ex1_block | sfu_wb_valid | (structural != 0)):
                m.d.comb += p.stall_structural.eq(1)
            with m.Elif(hazard != 0):
                m.d.comb += p.stall_scoreboard.eq(1)
            with m.Elif(parked != 0):
                m.d.comb += p.stall_memory.eq(1)
            with m.Elif(bar_hold != 0):
                m.d.comb += p.stall_barrier.eq(1)
            with m.Else():
                m.d.comb += p.stall_idle.eq(1)
        with m.Elif(~running):
            m.d.comb += p.stall_idle.eq(1)
        return m

