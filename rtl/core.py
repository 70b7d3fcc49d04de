"""The SIMT core: nine stages ``sch if id is rr ex1 ex2 mem wb`` around per-lane units.

Front end (never stalls):
  ``sch``  picks, round robin, a warp that may fetch: no control instruction waiting to
           resolve and room in its three-entry instruction buffer for this fetch and those
           in flight.
  ``if``   receives the local instruction memory's read (addressed with sch's pc) and
           registers it, so that id starts from flip-flops.
  ``id``   rebuilds the control word from the word and the bits instruction memory keeps
           beside it (:class:`Decoder` predecodes on the write port; rtl/decoder.py), with
           the issue fields kept there too (scoreboard mask, destination bits, kind), into
           the warp's instruction buffer. A control
           instruction (bra ssy sync exit) stops the warp's fetch until ex1 resolves it; bar
           does not (it cannot move the pc), it stops the warp's issue until the release.
Back end (one stall signal, raised by ``mem`` while the LSU needs more cycles and by ``ex1``
while the SIMT stack unit is busy):
  ``is``   picks, round robin, a warp whose buffered instruction has no scoreboard hazard
           (a register still waiting for a global load, an atomic, ldparam or the SFU counts
           as one; the test is made a cycle ahead into a register, :class:`HazardAhead`), is
           not at a fence with stores outstanding and not at a barrier; presents register
           addresses.
  ``rr``   register and predicate read, guard evaluation, special registers; the multiplier,
           the FPU and the half unit take their operands here (the latter two register
           them, their four segments in ex1, ex2, mem and wb).
  ``ex1``  ALU, branch/ssy/sync/exit resolution (SIMT stack), barrier arrival, address
           generation.
  ``ex2``  multiplier results; ex1's ALU and FP-compare answers chosen from registers.
  ``mem``  LSU: shared memory, global requests, faults on bad addresses.
  ``wb``   register and predicate write, scoreboard release, retire port; the last segment
           of the FPU and of the half unit (their rounding) into the register file's write
           register; global load data comes back through the same write port in a free
           ``wb`` slot.

The core holds the block state and the stage registers and wires the units: besides the
arithmetic ones, :class:`InstrBuffers` (``id`` to ``is``), :class:`IssueSelect` and
:class:`HazardAhead` (``is``), :class:`PredicateFile` (``rr``/``wb``),
:class:`SfuSequencer` (ex1 onwards), :class:`LateWriteback` (``wb``),
:class:`FaultRecorder` and :class:`StallClassifier`.
See docs/microarchitecture.md for the full story.
"""

import operator
from functools import reduce
from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from simtgpu.isa import INSTRUCTIONS, PT, SIMT_OPS, Sem
from simtgpu.isa.instructions import Space
from simtgpu.isa.mma import mma_shape

from . import layouts, reuse
from .alu import ALU_SEMS, Alu, AluOp, alu_op
from .barrier import Barrier
from .configs import RtlConfig
from .decoder import PREDECODED, Decoder, decoded
from .fault_recorder import FaultRecorder
from .fcompare import FCmpCond, FCompare
from .fpu import CORE_LATENCY as FPU_LATENCY
from .fpu import Fpu, FpuOp
from .half_unit import CORE_LATENCY as HALF_LATENCY
from .half_unit import HALF_UNIT_OPS, HalfOp, HalfUnit
from .hazard_ahead import HazardAhead
from .ibuffer import InstrBuffers
from .isa_consts import BARRIER_OPS, SReg, iid, one_of
from .isa_consts import Sem as RSem
from .issue import IssueSelect, issue_fields
from .late_writeback import LateWriteback
from .layouts import per_warp, port_view, split_signal
from .lsu import Lsu, LsuOp, LsuPrep
from .matrix_unit import MatrixUnit
from .multiplier import MulOp, Multiplier
from .predicate_file import PredicateFile
from .regfile import RegFile
from .scheduler import RoundRobin
from .scoreboard import Scoreboard
from .sfu_sequencer import SfuSequencer
from .signatures import AtomOp, core_signature, dim3_layout
from .simt_stack import SimtOp, SimtStack
from .stages import Stage, gated_domain
from .stall_classifier import StallClassifier
from .warp_unit import WarpUnit
from .warp_wait import WarpWait, WarpWaits

ABSENT_INSTRUCTIONS: frozenset[str] = frozenset(
    i.mnemonic for i in INSTRUCTIONS
    if i.sem is Sem.HALF and i.mnemonic not in HALF_UNIT_OPS)
"""ISA instructions this core has no unit for (none today): they decode as illegal, so a
program that uses them faults on the RTL instead of retiring wrong values."""


def _select(m: Module, index, values: list, width: int, name: str) -> Signal:
    """``values[index]`` through a ``Switch``: each value stays its own signal in the
    Verilog instead of an element of a packed array."""
    out = Signal(width, name=name)
    with m.Switch(index):
        for i, v in enumerate(values):
            with m.Case(i):
                m.d.comb += out.eq(v)
    return out


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
        vec = data.ArrayLayout(32, L)
        uop = layouts.uop(W, L)

        # --- units ----------------------------------------------------------------------
        m.submodules.decoder = decoder = Decoder(absent=ABSENT_INSTRUCTIONS)
        m.submodules.regfile = rf = RegFile(W, L, cfg.regs, candidates=W)
        m.submodules.scoreboard = sb = Scoreboard(W, cfg.regs, clear_ports=4)
        m.submodules.stack = stack = SimtStack(W, L, cfg.stack_depth)
        m.submodules.lsu = lsu = Lsu(W, L, cfg.line_words, cfg.shared_bytes, cfg.memory_bytes,
                                     cfg.tag_bits, fifo_depth=cfg.lsu_depth, gated=cfg.clock_gating)
        lsu_prep = LsuPrep(L, cfg.line_words, cfg.shared_bytes, cfg.memory_bytes)
        # a module of its own in exported Verilog (rtl/reuse.py), about a sixth of the core's
        # logic at 32 lanes, so that its netlist is built beside the core's (verilog_export)
        m.submodules.lsu_prep = reuse.shared(lsu_prep, (L, cfg.line_words, cfg.shared_bytes,
                                                        cfg.memory_bytes))
        m.submodules.warp_unit = wu = WarpUnit(L)
        m.submodules.ibuf = ibuf = InstrBuffers(W)
        m.submodules.issue_select = iss = IssueSelect(W, cfg.regs)
        m.submodules.hazard_ahead = haz = HazardAhead(W, ibuf.depth, cfg.regs)
        m.submodules.preds = pf = PredicateFile(W, L)
        m.submodules.sfu = sfu = SfuSequencer(W, L, cfg.sfus, gated=cfg.clock_gating)
        m.submodules.late_wb = lw = LateWriteback(W, L)
        mx = MatrixUnit(W, L, cfg.mma_dots, gated=cfg.clock_gating)
        m.submodules.matrix = reuse.shared(mx, (W, L, cfg.mma_dots, cfg.clock_gating))
        m.submodules.faults = fr = FaultRecorder(W, L)
        m.submodules.stalls = sc = StallClassifier(W)
        m.submodules.warp_waits = wwait = WarpWaits(W)
        alus = [Alu() for _ in range(L)]
        muls = [Multiplier(latency=2, gated=cfg.clock_gating) for _ in range(L)]
        # the FPU's and the half unit's last register loads as mem's instruction moves to wb
        # (``en_last``), which it does while ex1 holds the stages before it
        fpus = [Fpu(FPU_LATENCY, gated=cfg.clock_gating, output_register=False,
                    last_enable=True) for _ in range(L)]
        fcmps = [FCompare() for _ in range(L)]
        halfs = [HalfUnit(gated=cfg.clock_gating, latency=HALF_LATENCY, output_register=False,
                          last_enable=True) for _ in range(L)]
        for l in range(L):  # one module each in exported Verilog (rtl/reuse.py)
            m.submodules[f"half{l}"] = reuse.shared(halfs[l], (HALF_LATENCY, False,
                                                                 cfg.clock_gating))
            m.submodules[f"alu{l}"] = reuse.shared(alus[l], ())
            m.submodules[f"mul{l}"] = reuse.shared(muls[l], (2, cfg.clock_gating))
            m.submodules[f"fpu{l}"] = reuse.shared(fpus[l], (FPU_LATENCY, False, cfg.clock_gating))
            m.submodules[f"fcmp{l}"] = reuse.shared(fcmps[l], ())
        # the LSU's requests leave by the port; the memory path's buffer (rtl/mem_path.py)
        # takes them, so whether the L1 takes one never decides the LSU's hold in the cycle
        wiring.connect(m, lsu.mem, wiring.flipped(self.mem))
        wiring.connect(m, lsu.lwb, lw.lwb)
        wiring.connect(m, sfu.result, lw.sfu)
        wiring.connect(m, mx.result, lw.mma)

        # instruction memory keeps each word with its predecoded control bits: the decoder
        # works on the write port, so id only rebuilds the control word (rtl/decoder.py);
        # and with what issue needs of it (``needs``, ``dests``, ``kind``), so that the
        # memory's read (registered once, in if) feeds the instruction buffers and the issue
        # stage's hazard (rtl/hazard_ahead.py) directly. The write is registered between the
        # decoder and those fields: it reaches the memory a cycle after the port presents it.
        imem_entry = data.StructLayout({"word": 32, "pre": PREDECODED,
                                        "issue": layouts.ISSUE_FIELDS})
        m.submodules.imem = imem = Memory(shape=imem_entry, depth=cfg.imem_words, init=[])
        imem_w = imem.write_port()
        imem_r = imem.read_port(domain="sync")
        imem_wq = Signal(data.StructLayout({"en": 1, "addr": len(self.imem.addr), "word": 32,
                                            "pre": PREDECODED}), name="imem_wq")
        m.d.comb += decoder.word.eq(self.imem.data)
        m.d.sync += [imem_wq.en.eq(self.imem.we), imem_wq.addr.eq(self.imem.addr),
                     imem_wq.word.eq(self.imem.data), imem_wq.pre.eq(decoder.pre)]
        w_dec = decoded(m, imem_wq.word, imem_wq.pre, "imem_w_dec")
        m.d.comb += [imem_w.en.eq(imem_wq.en), imem_w.addr.eq(imem_wq.addr),
                     imem_w.data.word.eq(imem_wq.word), imem_w.data.pre.eq(imem_wq.pre),
                     imem_w.data.issue.eq(issue_fields(m, w_dec, cfg.regs, mma_shape(L).regs_b))]

        # --- block state ------------------------------------------------------------------
        # A core holds up to ``max_blocks`` blocks at once. Every block of a launch has the
        # same shape, so block slot k owns warp slots [k*nw, (k+1)*nw) and shared-memory rows
        # [k*rows, (k+1)*rows): a block is taken into the lowest free slot whose warps and
        # rows fit. The launch-wide fields are kept once (``blk``); per block, a slot record
        # (id, first warp, shared base); per warp, its slot and index within the block.
        S = cfg.max_blocks
        blk = Signal(self.dispatch.payload.shape())
        # the last byte at which a word fits in the shared memory and the parameter block
        # (LsuPrep's range checks), worked out as the launch's fields are taken
        shared_last, param_last = Signal(signed(33)), Signal(signed(33))
        slots = [Signal(layouts.block_slot(W), name=f"slot{k}") for k in range(S)]
        wblk = per_warp(layouts.warp_block(W, S), W)  # w<w>_slot, w<w>_index
        slot_busy = Signal(S)  # from hand-off until block_done
        slot_closing = Signal(S)  # complete: block_done pulses in the next cycle
        member = Signal(W)  # warp slots of the resident blocks
        finished = Signal(W)
        cycles = Signal(64)
        m.d.sync += cycles.eq(cycles + 1)

        ws = per_warp(layouts.warp_state(L), W)  # w<w>_pc, w<w>_active, w<w>_live
        ctrl_wait = Signal(W)

        fault_q, fault_rec = fr.stop, fr.fault.record
        running = Signal()
        can_issue = running & ~fault_q & ~self.halt

        def slot_of(warp, name: str) -> Signal:
            return _select(m, warp, [wblk[w].slot for w in range(W)], len(wblk[0].slot), name)

        def slot_field(slot, field: str, shape, name: str) -> Signal:
            out = Signal(shape, name=name)
            with m.Switch(slot):
                for k in range(S):
                    with m.Case(k):
                        m.d.comb += out.eq(getattr(slots[k], field))
            return out

        # tid.x/y/z of every thread, written once per block by the init walk
        tid_layout = data.StructLayout({"x": 16, "y": 16, "z": 16})
        tid_mems = []
        for l in range(L):
            tm = Memory(shape=tid_layout, depth=W, init=[])
            m.submodules[f"tid{l}"] = tm
            tid_mems.append((tm.write_port(), tm.read_port(domain="sync")))

        # --- init walk: number the threads ---------------------------------------------------
        # The register file forgets the new block's warps in one cycle (RegFile.clear_warps).
        # Shared memory is zeroed by its own walk, one row per cycle over the rows of the
        # block's .shared size (the LSU faults on addresses past it, so the rest is never
        # seen); it starts with the init walk and goes on while the warps run, and a shared
        # access waits until it is done (Lsu.clear). The warps' set-up code usually hides it.
        # One walk at a time: a block is taken only when the last one's walks are done (or
        # no other block is resident, which restarts them).
        row_bytes = 4 * L
        pl = self.dispatch.payload
        pl_rows = Signal(range(lsu.shared.rows * row_bytes // row_bytes + row_bytes))
        m.d.comb += pl_rows.eq((pl.shared_bytes + row_bytes - 1) >> (row_bytes.bit_length() - 1))
        # slot k fits a block when the k + 1 blocks up to it have their warps and rows:
        # ``(k+1) * num_warps <= W`` and ``(k+1) * ceil(shared_bytes / row_bytes) <= rows``,
        # each written as a comparison of the payload's field with a constant (ceil(x / b) <=
        # n is x <= b * n), so that no adder or multiplier stands between the dispatcher's
        # payload and ``ready``, which the dispatcher waits on to raise ``valid``
        fits = Signal(S)
        for k in range(S):
            shared_max = min(cfg.shared_bytes, row_bytes * (lsu.shared.rows // (k + 1)))
            m.d.comb += fits[k].eq(~slot_busy[k] & (pl.num_warps <= W // (k + 1))
                                   & (pl.shared_bytes <= shared_max))
        pick = Signal(range(max(S, 2)))
        for k in reversed(range(S)):
            with m.If(fits[k]):
                m.d.comb += pick.eq(k)
        # the lowest slot that fits, one-hot: what a block taken into slot k sets is worked out
        # for every k beside the fit test (a block's size arrives with it), and the pick only
        # chooses among them, rather than multiplying and comparing after it
        picked_slot = Signal(S, name="picked_slot")
        m.d.comb += picked_slot.eq(Cat(fits[k] & ~fits[:k].any() for k in range(S)))

        def per_slot(values: list, shape, name: str) -> Signal:
            """``values[k]`` of the picked slot (an AND-OR over the one-hot pick)."""
            out = Signal(shape, name=name)
            m.d.comb += out.eq(reduce(operator.or_, (Mux(picked_slot[k], v, 0)
                                                      for k, v in enumerate(values))))
            return out
        initing = Signal()
        init_slot = Signal(range(max(S, 2)))
        init_base = Signal(range(W))
        init_cnt = Signal(range(W * L + 1))
        # init_cnt == num_warps * L - 1 (the block's last thread), kept in a register: the
        # comparison's carry chain was in front of every new warp's state
        init_last = Signal()
        sh_clear_row = Signal(range(lsu.shared.rows + 1))
        sh_clear_end = Signal(range(lsu.shared.rows + 1))
        # sh_clearing is sh_clear_row < sh_clear_end, kept in a register: the LSU's hold (and
        # with it the stall of the whole back end) waits on it
        sh_clearing = Signal()
        m.d.comb += [lsu.clear.eq(sh_clearing), lsu.clear_row.eq(sh_clear_row)]
        with m.If(lsu.clear):
            m.d.sync += [sh_clear_row.eq(sh_clear_row + 1),
                         sh_clearing.eq(sh_clear_row + 1 < sh_clear_end)]
        tx, ty, tz = Signal(16), Signal(16), Signal(16)

        ready = (~fault_q & ~initing & (fits != 0) & (~lsu.clear | (slot_busy == 0))
                 & ~self.flush)
        m.d.comb += self.dispatch.ready.eq(ready)
        first_rows = [k * pl_rows for k in range(S)]
        first_row = per_slot(first_rows, len(sh_clear_row), "take_first_row")
        end_row = per_slot([(k + 1) * pl_rows for k in range(S)], len(sh_clear_end),
                           "take_end_row")
        take_base = per_slot([k * pl.num_warps for k in range(S)], len(init_base), "take_base")
        with m.If(self.dispatch.valid & ready):
            m.d.sync += [blk.eq(pl), shared_last.eq(pl.shared_bytes + Const(-4, signed(4))),
                         param_last.eq(pl.param_size + Const(-4, signed(4))),
                         init_cnt.eq(0), initing.eq(1), init_slot.eq(pick),
                         init_last.eq(pl.num_warps * L == 1),
                         init_base.eq(take_base),
                         tx.eq(0), ty.eq(0), tz.eq(0),
                         sh_clear_row.eq(first_row), sh_clear_end.eq(end_row),
                         sh_clearing.eq(pl_rows != 0)]
            for k in range(S):
                with m.If(picked_slot[k]):
                    m.d.sync += [slot_busy[k].eq(1), slots[k].block_id.eq(pl.block_id),
                                 slots[k].warp_base.eq(k * pl.num_warps),
                                 slots[k].shared_base.eq(first_rows[k] * row_bytes)]

        # The warps of the block being taken in and its last warp (the one whose lanes may be
        # partly live): registers, set with init_base from the same pick and warp count, so
        # that the resets they drive (scoreboard, buffers, issue) start at flip-flops rather
        # than at an adder and comparisons of the block's base.
        new_warps = Signal(W)
        last_warp = Signal(W)
        slot_warps_of, slot_last_of = [], []
        for k in range(S):  # the warps of slot k and its last, for a block of this size
            base, end = k * pl.num_warps, (k + 1) * pl.num_warps
            # the last warp is at or above every base: no constant comparison (CMPCONST)
            slot_warps_of.append(Cat((Const(1) if w == W - 1 else (w >= base)) & (w < end)
                                     for w in range(W)))
            slot_last_of.append(Cat(w + 1 == end for w in range(W)))
        with m.If(self.dispatch.valid & ready):
            m.d.sync += [new_warps.eq(per_slot(slot_warps_of, W, "take_warps")),
                         last_warp.eq(per_slot(slot_last_of, W, "take_last_warp"))]
        # The live lanes of the last warp: lane l when l <= (num_threads - 1) mod L, every
        # other warp all L (num_warps is ceil(num_threads / L), and L a power of two). One
        # mask for the block rather than a comparison per warp and lane, which a simulator
        # evaluated every cycle.
        tail_live = Signal(L)
        lb = cfg.lane_bits
        tail_idx = (blk.num_threads - 1)[:lb]
        m.d.comb += tail_live.eq(Cat(Const(1) if l == 0 else (tail_idx >= l) for l in range(L)))
        with m.If(initing):
            for l in range(L):
                wp, _ = tid_mems[l]
                m.d.comb += [wp.addr.eq(init_base + init_cnt[lb:]),
                             wp.data.x.eq(tx), wp.data.y.eq(ty), wp.data.z.eq(tz),
                             wp.en.eq(init_cnt[:lb] == l)]
            with m.If(tx + 1 >= blk.block_dim.x):
                m.d.sync += tx.eq(0)
                with m.If(ty + 1 >= blk.block_dim.y):
                    m.d.sync += [ty.eq(0), tz.eq(tz + 1)]
                with m.Else():
                    m.d.sync += ty.eq(ty + 1)
            with m.Else():
                m.d.sync += tx.eq(tx + 1)
            m.d.sync += [init_cnt.eq(init_cnt + 1),
                         init_last.eq(init_cnt + 2 == blk.num_warps * L)]
            with m.If(init_last):
                m.d.sync += initing.eq(0)
                for w in range(W):
                    with m.If(new_warps[w]):
                        lanes_live = Mux(last_warp[w], tail_live, Const((1 << L) - 1, L))
                        m.d.sync += [ws[w].pc.eq(blk.entry_pc), ws[w].live.eq(lanes_live),
                                     ws[w].active.eq(lanes_live), member[w].eq(1),
                                     finished[w].eq(0), ctrl_wait[w].eq(0),
                                     wblk[w].slot.eq(init_slot),
                                     wblk[w].index.eq(w - init_base)]
                m.d.comb += pf.reset_warps.eq(new_warps)

        # completion: a slot whose warps have all exited and left nothing behind (no
        # instruction in the pipeline, no global access outstanding) closes; block_done
        # pulses in the next cycle, one slot at a time. A block alone on the core waits for
        # the whole core to drain, as a one-block core does.
        gl_out = [Signal(range(64), name=f"w{w}_gl_out") for w in range(W)]
        lwb_take = lsu.lwb.valid & lsu.lwb.ready
        # A store's acknowledgement counts a cycle after the LSU takes it, from flip-flops:
        # it follows the memory's response (the L1's reorder buffer, the LSU's head), and
        # the counts it lowers here and in the issue stage (a fence's wait) are carry chains
        # of their own. Counting late is safe: a warp's stores seem outstanding a cycle
        # longer. A flush clears it with the counts.
        store_acked = Signal()
        store_acked_warp = Signal.like(lsu.acked_warp)
        m.d.sync += [store_acked.eq(lsu.acked & ~lsu.acked_load & ~self.flush),
                     store_acked_warp.eq(lsu.acked_warp)]
        # So does an access sent: ``sent`` is the LSU's acceptance by the memory path, late in
        # the cycle, and into the counts' carry chains it was 11 levels from a register
        # (de2181d's estimate). A warp with a send counting is not quiet (``sent_late``
        # below), so a block closes in the same cycle as before; its access cannot be
        # answered before the send counts (a response takes several cycles).
        sent_q = Signal()
        sent_warp_q = Signal.like(lsu.sent_warp)
        m.d.sync += [sent_q.eq(lsu.sent & ~self.flush), sent_warp_q.eq(lsu.sent_warp)]
        sent_late = Signal(W)
        for w in range(W):
            inc = sent_late[w]
            m.d.comb += inc.eq(sent_q & (sent_warp_q == w))
            # a store's acknowledgement and a load's late write-back of one warp may come in
            # the same cycle: each counts
            store_done = store_acked & (store_acked_warp == w)
            load_done = lwb_take & (lsu.lwb.p.warp == w)
            m.d.sync += gl_out[w].eq(gl_out[w] + inc - store_done - load_done)
            with m.If(self.flush):
                m.d.sync += gl_out[w].eq(0)
        slot_warps = [Signal(W, name=f"slot{k}_warps") for k in range(S)]
        for k in range(S):
            m.d.comb += slot_warps[k].eq(Cat(member[w] & (wblk[w].slot == k) for w in range(W)))
        in_pipe = Signal(W)  # warps with an instruction in a stage register
        quiet = Signal(W)
        slot_running = Signal(S)
        slot_complete = Signal(S)
        drained_core = Signal()
        for k in range(S):
            mine = slot_warps[k]
            alone = (slot_busy & ~(1 << k)) == 0
            all_done = (mine != 0) & ((finished & mine) == mine)
            settled = ((mine & ~quiet) == 0) & ~sfu.busy & ~mx.busy & stack.ready
            m.d.comb += [
                slot_running[k].eq(slot_busy[k] & ~slot_closing[k]
                                   & ~(initing & (init_slot == k))),
                slot_complete[k].eq(slot_running[k] & (slot_closing == 0) & all_done & ~fault_q
                                    & Mux(alone, drained_core, settled)),
            ]
        m.d.comb += running.eq(slot_running != 0)
        closing_pick = Signal(range(max(S, 2)))
        for k in reversed(range(S)):
            with m.If(slot_complete[k]):
                m.d.comb += closing_pick.eq(k)
        with m.If(slot_complete != 0):
            m.d.sync += slot_closing.eq(1 << closing_pick)
        with m.If(slot_closing != 0):
            m.d.comb += self.dispatch.block_done.eq(1)
            m.d.sync += slot_closing.eq(0)
        # only the closing slot's own bits: in the same cycle a block may be taken into
        # another slot (its slot_busy bit) and an init walk may end (its warps' member
        # bits), and an assignment to the whole of slot_busy or member here would undo them
        for k in range(S):
            with m.If(slot_closing[k]):
                m.d.sync += slot_busy[k].eq(0)
                for w in range(W):
                    with m.If(slot_warps[k][w]):
                        m.d.sync += member[w].eq(0)
        with m.If(self.flush):
            m.d.sync += [member.eq(0), slot_busy.eq(0), slot_closing.eq(0), initing.eq(0),
                         sh_clear_end.eq(0), sh_clearing.eq(0)]

        # a block arriving on an empty core resets the units wholesale (and their round-robin
        # pointers), as a one-block core does; beside other blocks only its own warps. Both
        # are registers, set as the block is taken (the init walk's first cycle, init_cnt
        # 0): the resets reach the SIMT stack, the scoreboard and the issue stage, whose
        # answers feed the fault record, so their source is a flip-flop, not a comparison.
        # The slots busy beside it then are those busy now but for the one closing (a block
        # is taken only into a free slot, and never in a flush cycle).
        block_reset = Signal()
        alone_reset = Signal()  # block_reset, of a block alone on the core
        taken = self.dispatch.valid & ready
        m.d.sync += [block_reset.eq(taken),
                     alone_reset.eq(taken & ((slot_busy & ~slot_closing & ~(1 << pick)) == 0))]
        whole_reset = Signal()
        m.d.comb += whole_reset.eq(alone_reset | self.flush)
        reset_warps = Mux(block_reset, new_warps, 0)
        m.d.comb += [sb.reset.eq(whole_reset), sb.reset_warps.eq(reset_warps),
                     rf.clear_warps.eq(reset_warps),
                     stack.reset.eq(whole_reset), stack.reset_warps.eq(reset_warps),
                     ibuf.reset.eq(whole_reset), ibuf.reset_warps.eq(reset_warps),
                     iss.reset.eq(whole_reset), iss.reset_warps.eq(reset_warps)]

        # one barrier per block slot; arrivals come one per cycle, so at most one releases
        bar = SimpleNamespace(arrive=Signal(name="bar_arrive"), warp=Signal(range(max(W, 2))),
                              release=Signal(name="bar_release"), deadlock=Signal(),
                              waiting=Signal(W, name="bar_waiting"))
        bars = []
        for k in range(S):
            b = Barrier(W, cfg.barrier_watchdog_cycles)
            m.submodules[f"barrier{k}"] = b
            bars.append(b)
            m.d.comb += [b.reset.eq((block_reset & (init_slot == k)) | self.flush),
                         b.members.eq(slot_warps[k]), b.exited.eq(finished & slot_warps[k]),
                         b.warp.eq(bar.warp), b.arrive.eq(bar.arrive & slot_warps[k].bit_select(
                             bar.warp, 1))]
        m.d.comb += bar.waiting.eq(reduce(operator.or_, (b.waiting for b in bars)))
        for k in reversed(range(S)):
            with m.If(bars[k].release):
                m.d.comb += [bar.release.eq(1), bar.waiting.eq(bars[k].waiting)]
        with m.If(Cat(b.release for b in bars) == 0):
            for k in reversed(range(S)):
                with m.If(bars[k].deadlock):
                    m.d.comb += [bar.deadlock.eq(1), bar.waiting.eq(bars[k].waiting)]

        # --- sch: pick a warp to fetch -----------------------------------------------------
        m.submodules.sch_if = sch_if_st = Stage("sch_if", layouts.sch_if(W))
        m.submodules.if_id = if_id_st = Stage("if_id", layouts.if_id(W))
        sch_if, if_id = sch_if_st.q, if_id_st.q
        fetchable = Signal(W)
        for w in range(W):
            # fetches in flight count against the buffer, so whatever arrives has a slot
            inflight = ((sch_if.valid & (sch_if.warp == w)).as_unsigned()
                        + (if_id.valid & (if_id.warp == w)).as_unsigned())
            m.d.comb += fetchable[w].eq(member[w] & ~finished[w] & ~ctrl_wait[w]
                                        & (ibuf.count[w] + inflight < ibuf.depth))
        m.submodules.sch = sch_rr = RoundRobin(W)
        m.d.comb += sch_rr.request.eq(fetchable)
        sch_pick, sch_found = sch_rr.grant, sch_rr.found
        do_fetch = sch_found & can_issue
        m.d.comb += [sch_if_st.d.valid.eq(do_fetch), sch_if_st.d.warp.eq(sch_pick)]
        with m.Switch(sch_pick):
            for w in range(W):
                with m.Case(w):
                    m.d.comb += sch_if_st.d.pc.eq(ws[w].pc)
        m.d.comb += [sch_rr.advance.eq(do_fetch), sch_rr.restart.eq(whole_reset & ~self.flush)]

        # --- if: instruction memory read ----------------------------------------------------
        # The memory is addressed with sch's pc, beside sch_if's register of it, so that its
        # slow output (a block RAM's, about 6 ns after the clock on an ECP5) spends if
        # reaching a register, ``if_word``, and id starts from flip-flops.
        imem_bytes = cfg.imem_words * 4
        m.d.comb += [imem_r.addr.eq(sch_if_st.d.pc[2:]), imem_r.en.eq(1)]
        if_word = Signal(imem_entry, name="if_word")
        m.d.sync += if_word.eq(imem_r.data)
        m.d.comb += if_id_st.d.eq(sch_if)
        if_pc_fault = Signal()
        m.d.sync += if_pc_fault.eq((sch_if.pc >= imem_bytes) | (sch_if.pc < self.code_base)
                                   | (sch_if.pc >= self.code_end) | (sch_if.pc[:2] != 0))

        # --- id: the control word into the instruction buffer -------------------------------
        id_word = Signal(32, name="id_word")  # the word in id (waveform tools read it)
        m.d.comb += id_word.eq(if_word.word)
        id_dec = decoded(m, id_word, if_word.pre, "id_dec")
        id_entry = port_view(ibuf.entry, layouts.id_is())
        m.d.comb += [id_entry.pc.eq(if_id.pc), id_entry.word.eq(id_word),
                     id_entry.pc_fault.eq(if_pc_fault), id_entry.dec.eq(id_dec),
                     *[id_entry[f].eq(if_word.issue[f]) for f in layouts.ISSUE_FIELDS.members]]
        # a fetch that arrives behind a control instruction of its warp is dropped: the warp's
        # pc is set again when ex1 resolves the control instruction
        accept = Signal()
        m.d.comb += accept.eq(if_id.valid & ~(ctrl_wait | finished).bit_select(if_id.warp, 1))
        m.d.comb += [ibuf.push.eq(accept), ibuf.push_warp.eq(if_id.warp)]
        # a SIMT-stack op moves the pc: the warp's fetch waits for it (a barrier does not)
        stops_fetch = id_dec.ctrl & ~id_dec.illegal & ~Cat(
            id_dec.iid == iid(name) for name in BARRIER_OPS).any()
        for w in range(W):
            with m.If(accept & (if_id.warp == w) & stops_fetch):
                m.d.sync += ctrl_wait[w].eq(1)

        # --- is: pick a warp to issue ------------------------------------------------------
        clears = Signal.like(iss.clear)  # the scoreboard's clears of this cycle (wb below)
        stall = Signal()
        mem_hold = Signal()  # mem holds its instruction: the LSU needs more cycles
        lwb_wait = Signal()
        for w in range(W):
            wiring.connect(m, ibuf.head[w], iss.head[w])
        # The issue stage does not wait on the stall of this cycle (the LSU's hold, late):
        # an instruction issued while the back end stalls waits in a skid register
        # (``is_skid``) and enters rr as the stall ends, before anything else issues.
        # Issue looks only at whether the skid is full, a flip-flop.
        skid = split_signal(layouts.is_rr(W), "is_skid")
        skid_mma = Signal(name="is_skid_mma")
        m.d.comb += [iss.valid.eq(ibuf.valid), iss.head_kind.eq(ibuf.head_kind),
                     iss.runnable.eq(member & ~finished),
                     iss.pending.eq(sb.pending), iss.sfu_busy.eq(sfu.busy),
                     iss.mma_busy.eq(mx.busy),
                     iss.enable.eq(can_issue & ~skid.valid & ~lwb_wait & ~mx.read),
                     iss.clear.eq(clears),
                     iss.release.eq(bar.release), iss.release_warps.eq(bar.waiting)]
        is_pick, issue_ok = iss.warp, iss.ok
        issued = port_view(iss.entry, layouts.id_is())
        m.d.comb += [ibuf.pop.eq(issue_ok), ibuf.pop_warp.eq(is_pick)]
        # each head's hazard a cycle ahead, for the choice of the next cycle
        m.d.comb += [haz.pop.eq(issue_ok), haz.pop_warp.eq(is_pick),
                     haz.push.eq(ibuf.push), haz.push_warp.eq(ibuf.push_warp),
                     haz.push_needs.eq(id_entry.needs), iss.hazard_q.eq(haz.hazard)]
        for w in range(W):
            m.d.comb += [haz.count[w].eq(ibuf.count[w]), haz.head_needs[w].eq(ibuf.head[w].needs),
                         haz.next_needs[w].eq(ibuf.next_needs[w]),
                         haz.pending[w].eq(sb.pending[w]), haz.clearing[w].eq(sb.clearing[w]),
                         haz.clearing_held[w].eq(sb.clearing_held[w]),
                         haz.dests[w].eq(iss.dests[w])]
        # a fence issues once its warp's stores are complete: the L1 below invalidates. (The
        # fence, the SFU's reserve and the mma's issue read the entry's ``kind`` bits, worked
        # out as instruction memory was written, not the issued id decoded after the pick.)
        m.d.comb += self.fence.eq(issue_ok & issued.kind.fence)

        # scoreboard set at issue (an mma's whole destination group), per warp
        is_mma_issue = issued.kind.mma
        m.d.comb += [sb.set.eq(iss.sets), sfu.reserve.eq(issue_ok & issued.kind.sfu)]
        # an mma reads its groups' first registers as it enters rr (as it issues, or from the
        # skid), the rest through the matrix unit's read cycles (rtl/matrix_unit.py)
        with m.If(skid.valid):
            m.d.comb += [mx.issue.valid.eq(skid_mma & ~stall), mx.issue.warp.eq(skid.warp),
                         mx.issue.a.eq(skid.dec.rs1), mx.issue.b.eq(skid.dec.rs2),
                         mx.issue.c.eq(skid.dec.rs3)]
        with m.Else():
            m.d.comb += [mx.issue.valid.eq(issue_ok & is_mma_issue & ~stall),
                         mx.issue.warp.eq(is_pick), mx.issue.a.eq(issued.dec.rs1),
                         mx.issue.b.eq(issued.dec.rs2), mx.issue.c.eq(issued.dec.rs3)]
        m.d.comb += [mx.ren.eq(~stall), *[mx.rdata[p].eq(rf.rdata[p]) for p in range(3)]]

        # register read addresses: each warp's head's three, the pick choosing among them
        # (worked out before the pick, not from the picked entry, so that the pick is one
        # multiplexer away from the register file's RAMs; the register file looks up whether
        # each candidate's entries hold data beside the pick)
        m.d.comb += rf.ren.eq(~stall)
        heads = [port_view(ibuf.head[w], layouts.id_is()).dec for w in range(W)]
        for w in range(W):
            h = heads[w]
            m.d.comb += [rf.rcand[w][0].eq(rf.addr(w, h.rs1)), rf.rcand[w][1].eq(rf.addr(w, h.rs2)),
                         rf.rcand[w][2].eq(rf.addr(w, Mux(h.rd_rd, h.rd, h.rs3)))]
        # the skid's instruction or the matrix unit's reads go first (both known from
        # flip-flops; never both: the matrix unit reads while issue waits for it)
        sd = skid.dec
        with m.If(skid.valid):
            m.d.comb += [rf.rforce_addr[0].eq(rf.addr(skid.warp, sd.rs1)),
                         rf.rforce_addr[1].eq(rf.addr(skid.warp, sd.rs2)),
                         rf.rforce_addr[2].eq(rf.addr(skid.warp, Mux(sd.rd_rd, sd.rd, sd.rs3)))]
        with m.Else():
            m.d.comb += [rf.rforce_addr[p].eq(rf.addr(mx.result.warp, mx.raddr[p]))
                         for p in range(3)]
        m.d.comb += [rf.rforce.eq(skid.valid | mx.read), rf.rsel.eq(is_pick)]
        for l in range(L):
            _, rp = tid_mems[l]
            m.d.comb += [rp.addr.eq(Mux(skid.valid, skid.warp, is_pick)), rp.en.eq(~stall)]

        m.submodules.is_rr = is_rr_st = Stage("is_rr", layouts.is_rr(W))
        is_rr = is_rr_st.q
        picked = split_signal(layouts.is_rr(W), "is_picked")  # what leaves is this cycle
        m.d.comb += [picked.valid.eq(issue_ok), picked.warp.eq(is_pick),
                     picked.pc.eq(issued.pc), picked.word.eq(issued.word),
                     picked.dec.eq(issued.dec)]
        m.d.comb += [is_rr_st.stall.eq(stall), is_rr_st.d.eq(Mux(skid.valid, skid, picked))]
        # The skid takes what is picked while it is empty (an issue fault's pc and word too,
        # for the fault record); it is full from an issue in a stalled cycle until the stall
        # ends, when is_rr takes it. A flush empties it.
        with m.If(~skid.valid):
            m.d.sync += [skid.eq(picked), skid.valid.eq(issue_ok & stall),
                         skid_mma.eq(is_mma_issue)]
        with m.Elif(~stall):
            m.d.sync += skid.valid.eq(0)
        with m.If(self.flush):
            m.d.sync += skid.valid.eq(0)

        # --- rr: operands, guard, predicates, special registers -----------------------------
        rr = split_signal(uop, "rr")
        d = is_rr.dec
        m.d.comb += pf.rwarp.eq(is_rr.warp)
        wp_preds = pf.rdata
        r_active = _select(m, is_rr.warp, [ws[w].active for w in range(W)], L, "rr_active")

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
        rr_slot = slot_of(is_rr.warp, "rr_slot")
        rr_block = slot_field(rr_slot, "block_id", dim3_layout(), "rr_block")
        rr_index = _select(m, is_rr.warp, [wblk[w].index for w in range(W)],
                           len(wblk[0].index), "rr_index")
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
                    (SReg.NTID_Z, blk.block_dim.z), (SReg.CTAID_X, rr_block.x),
                    (SReg.CTAID_Y, rr_block.y), (SReg.CTAID_Z, rr_block.z),
                    (SReg.NCTAID_X, blk.grid.x), (SReg.NCTAID_Y, blk.grid.y),
                    (SReg.NCTAID_Z, blk.grid.z), (SReg.LANEID, l), (SReg.WARPID, rr_index),
                    (SReg.NWARPS, blk.num_warps), (SReg.WARPSIZE, L),
                    (SReg.CLOCK, cycles[:32]), (SReg.CLOCKHI, cycles[32:]),
                    (SReg.COREID, reuse.param(self, "core_id", self.core_id)),
                    (SReg.TID, rr_index * L + l),
                ):
                    with m.Case(s.value):
                        m.d.comb += sreg_val[l].eq(val)

        # the multiplier, FPU and half unit take their operands in rr; the multiplier's result
        # is ex2's. The FPU and the half unit register theirs at rr's end (a register file
        # block RAM's read data arrives late in rr), their segments fill ex1, ex2, mem and
        # wb, and wb writes their results (the register file's write register is their last)
        mul_op = Signal(MulOp)
        fpu_op = Signal(FpuOp)
        half_op = Signal(HalfOp)
        with m.Switch(d.iid):
            for ins in INSTRUCTIONS:
                if ins.sem is Sem.MUL:
                    with m.Case(iid(ins.mnemonic)):
                        m.d.comb += mul_op.eq(MulOp[ins.mnemonic.upper()])
                if ins.sem in (Sem.FP, Sem.CVT):
                    with m.Case(iid(ins.mnemonic)):
                        m.d.comb += fpu_op.eq(FpuOp[ins.mnemonic.upper().replace(".", "_")])
                if ins.mnemonic in HALF_UNIT_OPS:
                    with m.Case(iid(ins.mnemonic)):
                        m.d.comb += half_op.eq(HalfOp[ins.mnemonic.upper().replace(".", "_")])
        for l in range(L):
            m.d.comb += [muls[l].en.eq(~stall), muls[l].op.eq(mul_op),
                         muls[l].valid.eq(is_rr.valid & (d.sem == RSem.MUL)),
                         muls[l].a.eq(rr.a[l]), muls[l].b.eq(rr.b[l]),
                         fpus[l].en.eq(~stall), fpus[l].en_last.eq(~mem_hold),
                         fpus[l].op.eq(fpu_op),
                         fpus[l].valid.eq(is_rr.valid & ((d.sem == RSem.FP) | (d.sem == RSem.CVT))),
                         fpus[l].a.eq(rr.a[l]), fpus[l].b.eq(rr.b[l]), fpus[l].c.eq(rr.c[l]),
                         halfs[l].en.eq(~stall), halfs[l].en_last.eq(~mem_hold),
                         halfs[l].op.eq(half_op),
                         halfs[l].valid.eq(is_rr.valid & (d.sem == RSem.HALF)),
                         halfs[l].a.eq(rr.a[l]), halfs[l].b.eq(rr.b[l]),
                         halfs[l].c.eq(rr.c[l])]

        m.submodules.rr_ex1 = rr_ex1_st = Stage("rr_ex1", uop)
        rr_ex1 = rr_ex1_st.q
        # the younger instructions of a faulting warp are dropped as they enter ex1
        # (rtl/fault_recorder.py: kill); an SFU or mma instruction dropped there gives its
        # unit, reserved as it issued, back (it never starts, so nothing else would), a
        # cycle later: the kill mask is late in its cycle (an ex1 fault raised in it), and
        # the unit stays reserved meanwhile, so nothing else can take it
        rr_dropped = Signal()
        sfu_dropped, mma_dropped = Signal(), Signal()
        m.d.comb += [rr_ex1_st.stall.eq(stall), rr_ex1_st.d.eq(rr),
                     rr_ex1_st.d.valid.eq(rr.valid & ~fr.kill_entry.bit_select(rr.warp, 1)),
                     rr_dropped.eq(rr.valid & ~stall & fr.kill_entry.bit_select(rr.warp, 1)),
                     sfu.release.eq(sfu_dropped), sfu.reset.eq(self.flush)]
        m.d.sync += [sfu_dropped.eq(rr_dropped & (d.sem == RSem.SFU)),
                     mma_dropped.eq(rr_dropped & (d.sem == RSem.MMA))]
        for l in range(L):
            with m.If(d.sem == RSem.SREG):
                m.d.comb += rr_ex1_st.d.b[l].eq(sreg_val[l])

        def alu_op_of(dec, name: str) -> Signal:
            op = Signal(AluOp, name=name)
            with m.Switch(dec.iid):
                for ins in INSTRUCTIONS:
                    if ins.sem in ALU_SEMS:
                        with m.Case(iid(ins.mnemonic)):
                            m.d.comb += op.eq(alu_op(ins))
            return op

        # The lanes' ALUs and FP compares work in ex1 on ex1's register (the FPGA form). The
        # simulation models' form (cfg.clock_gating) gives them their own copy of the
        # operands, taken at the same edge from rr on a clock that rises only for an
        # instruction of theirs (gated_domain), so that a Verilator model evaluates them only
        # in the cycles after one. The copies are taken from rr's combinational signals, not
        # from a register: the Amaranth simulator lets a gated flip-flop see a register of
        # the core clock already updated at the same edge.
        cmp_bits = FCmpCond.as_shape().width
        alu_fields = ("a", "b", "c", "pa", "pb", "pc3")
        if cfg.clock_gating:
            ex1_alu = split_signal(data.StructLayout({f: uop.members[f] for f in alu_fields}),
                                   "ex1_alu")
            ex1_alu_fn = Signal(cmp_bits, name="ex1_alu_fn")
            is_alu = Signal()
            with m.Switch(rr.dec.sem):
                with m.Case(RSem.INT, RSem.INT_IMM, RSem.CONST, RSem.ICMP, RSem.SELECT,
                            RSem.PLOGIC, RSem.FCMP):
                    m.d.comb += is_alu.eq(1)
            alu_dom = gated_domain(m, "alu_ops", ~stall & rr.valid & is_alu)
            ex1_alu_op = Signal(AluOp, name="ex1_alu_op")
            m.d[alu_dom] += [ex1_alu_op.eq(alu_op_of(rr.dec, "rr_alu_op")),
                             ex1_alu_fn.eq(rr.dec.fn[:cmp_bits])]
            m.d[alu_dom] += [getattr(ex1_alu, f)[l].eq(getattr(rr, f)[l])
                             for f in alu_fields for l in range(L)]

        # --- ex1: ALU, control flow, barrier, address generation ---------------------------
        x = rr_ex1
        xd = x.dec
        ex1 = split_signal(uop, "ex1")
        m.d.comb += ex1.eq(x)
        if not cfg.clock_gating:
            # the ALU's op decoded in rr and registered as rr_ex1 loads (the value ex1 would
            # decode), so that ex1's ALU does not wait for the decoding of the instruction's id
            ex1_alu, ex1_alu_op, ex1_alu_fn = x, Signal(AluOp, name="ex1_alu_op"), xd.fn[:cmp_bits]
            with m.If(~stall):
                m.d.sync += ex1_alu_op.eq(alu_op_of(rr.dec, "rr_alu_op"))
        m.d.comb += [wu.shfl_mode.eq(xd.fn[:2]), wu.vote_mode.eq(xd.fn[:2]), wu.exec.eq(x.exec),
                     wu.a.eq(x.a), wu.b.eq(x.b), wu.p.eq(x.pa)]
        # whether ex1's result is the ALU's, and its predicate the ALU's or the FP compare's,
        # decoded in rr and registered as rr_ex1 loads, and again as ex1_ex2 loads (``ex2_*``),
        # where ex2 chooses those answers from registers of their own (below)
        res_alu, pred_alu = Signal(name="ex1_res_alu"), Signal(name="ex1_pred_alu")
        pred_fcmp = Signal(name="ex1_pred_fcmp")
        alu_q = [Signal(32, name=f"ex2_alu_result{l}") for l in range(L)]
        alu_pred_q = Signal(L, name="ex2_alu_pred")
        res_alu_q, pred_alu_q = Signal(name="ex2_res_alu"), Signal(name="ex2_pred_alu")
        with m.If(~stall):
            m.d.sync += [res_alu_q.eq(res_alu), pred_alu_q.eq(pred_alu | pred_fcmp),
                         res_alu.eq(one_of(rr.dec.sem, (RSem.INT, RSem.INT_IMM, RSem.CONST,
                                                        RSem.SELECT))),
                         pred_alu.eq(one_of(rr.dec.sem, (RSem.ICMP, RSem.PLOGIC))),
                         pred_fcmp.eq(rr.dec.sem == RSem.FCMP)]
        for l in range(L):
            a, s = alus[l], ex1_alu
            m.d.comb += [a.op.eq(ex1_alu_op), a.a.eq(s.a[l]), a.b.eq(s.b[l]), a.c.eq(s.c[l]),
                         a.pa.eq(s.pa[l]), a.pb.eq(s.pb[l]), a.psel.eq(s.pc3[l])]
            fc = fcmps[l]
            m.d.comb += [fc.cond.eq(ex1_alu_fn), fc.a.eq(s.a[l]), fc.b.eq(s.b[l])]
            with m.Switch(xd.sem):
                with m.Case(RSem.SHUFFLE):
                    m.d.comb += ex1.result[l].eq(wu.shfl[l])
                with m.Case(RSem.VOTE):
                    m.d.comb += [ex1.result[l].eq(wu.ballot), ex1.presult[l].eq(wu.vote_pred[l])]
                with m.Case(RSem.SFU, RSem.MMA):
                    m.d.comb += ex1.deferred.eq(1)
                with m.Case(RSem.SREG):
                    m.d.comb += ex1.result[l].eq(x.b[l])
                with m.Case(RSem.LOAD, RSem.STORE, RSem.PARAM):
                    m.d.comb += ex1.a[l].eq(x.a[l] + xd.imm)
            # the ALU's and the FP compare's answers go into registers of their own as ex1_ex2
            # loads, and ex2 chooses them (below): the core's choice among ex1's results is
            # then not behind the ALU, the longest logic of ex1 (ex2 passes every result but
            # the multiplier's through, so the choice costs no cycle there)
            with m.If(~stall):
                m.d.sync += [alu_q[l].eq(a.result),
                             alu_pred_q[l].eq(Mux(pred_fcmp, fc.pred, a.pred))]

        x_live = _select(m, x.warp, [ws[w].live for w in range(W)], L, "x_live")
        # which SIMT-stack op or barrier the instruction is, decoded in rr and registered as
        # rr_ex1 loads, so that ex1's control does not start at the decoding of its id
        is_simt, is_bar = Signal(name="ex1_is_simt"), Signal(name="ex1_is_bar")
        ex1_divergent = Signal(name="ex1_divergent")
        rr_live = _select(m, is_rr.warp, [ws[w].live for w in range(W)], L, "rr_live")
        with m.If(~stall):
            m.d.sync += ex1_divergent.eq(rr.active != rr_live)
        simt_op = Signal.like(stack.op, name="ex1_simt_op")
        with m.If(~stall):
            with m.Switch(rr.dec.iid):
                for name in sorted(SIMT_OPS):
                    with m.Case(iid(name)):
                        m.d.sync += [is_simt.eq(1), simt_op.eq(SimtOp[name.upper()]),
                                     is_bar.eq(0)]
                for name in BARRIER_OPS:
                    with m.Case(iid(name)):
                        m.d.sync += [is_simt.eq(0), is_bar.eq(1)]
                with m.Default():
                    m.d.sync += [is_simt.eq(0), is_bar.eq(0)]
        m.d.comb += stack.op.eq(simt_op)
        # A control instruction acts on the SIMT stack and the barrier once, in its first
        # cycle in ex1 in which the stack can take it, whatever mem's hold: ``acted`` marks
        # one that waits in ex1 having acted. So the stack, the barrier and the faults they
        # raise never wait on the stall (the LSU's hold), which is the core's longest path.
        # The older instructions that can still fault are the same as if it acted as it
        # left: one holding mem has passed its checks, and ex2's reaches mem after it either
        # way (rtl/fault_recorder.py).
        acted = Signal()
        ex1_block = x.valid & is_simt & ~stack.ready & ~acted
        m.d.comb += stall.eq(mem_hold | ex1_block)
        leaving = x.valid & ~stall  # the SFU and the matrix unit start as it leaves
        acting = Signal()
        m.d.comb += acting.eq(x.valid & ~acted & ~ex1_block)
        m.d.sync += acted.eq(stall & (acted | acting))
        m.d.comb += [stack.valid.eq(acting & is_simt), stack.warp.eq(x.warp),
                     stack.pc.eq(x.pc), stack.target.eq(x.pc + xd.imm),
                     stack.active.eq(x.active), stack.live.eq(x_live),
                     stack.guard.eq(x.exec)]
        # whether a bar is divergent, worked out in rr and registered as rr_ex1 loads: the
        # warp's live lanes cannot change in between (nothing of a warp is behind an
        # instruction that reaches the SIMT stack until it answers), and the arrival, which
        # the barrier's deadlock and the fault recorder's ``stop`` follow, then starts at a
        # flip-flop rather than at the choice of the warp's live mask and a comparison
        bar_divergent = acting & is_bar & ex1_divergent
        is_mma = xd.sem == RSem.MMA
        mma_lanes_missing = is_mma & (x.exec != (1 << L) - 1)
        mma_divergent = acting & mma_lanes_missing
        m.d.comb += [bar.arrive.eq(acting & is_bar & ~bar_divergent), bar.warp.eq(x.warp)]

        # warp state updates from control resolution, and the pc from fetch
        for w in range(W):
            with m.If(stack.done & (stack.done_warp == w)):
                m.d.sync += ctrl_wait[w].eq(0)
                with m.If(stack.finished):
                    m.d.sync += [finished[w].eq(1), ws[w].live.eq(0), ws[w].active.eq(0)]
                with m.Elif(~stack.fault):
                    m.d.sync += [ws[w].pc.eq(stack.new_pc), ws[w].active.eq(stack.new_active),
                                 ws[w].live.eq(stack.new_live)]
            with m.If(do_fetch & (sch_pick == w)):
                m.d.sync += ws[w].pc.eq(ws[w].pc + 4)

        # the SFUs start as an SFU instruction leaves ex1; their result comes back through
        # the late write-back
        sfu_stale = Signal()
        # an SFU or mma that started in the last cycle, and whether its warp faults now (mem)
        sfu_started, mma_started, behind_fault = Signal(), Signal(), Signal()
        m.d.comb += [sfu.ex1.start.eq(leaving & (xd.sem == RSem.SFU)), sfu.ex1.op.eq(xd.fn[:3]),
                     *[sfu.ex1.a[l].eq(x.a[l]) for l in range(L)],
                     sfu.ex1.warp.eq(x.warp), sfu.ex1.rd.eq(xd.rd),
                     sfu.ex1.wr.eq(xd.wr_reg), sfu.ex1.pc.eq(x.pc),
                     sfu.ex1.active.eq(x.active), sfu.ex1.exec.eq(x.exec),
                     sfu.ex1.stale.eq(sfu_stale)]
        # the matrix unit starts as an mma leaves ex1 (unless it faults or is stale)
        m.d.comb += [mx.ex1.start.eq(leaving & is_mma),
                     mx.ex1.abort.eq(mma_lanes_missing | sfu_stale),
                     mx.ex1.bf16.eq(xd.iid == iid("mma.bf16")), mx.ex1.rd.eq(xd.rd),
                     mx.ex1.pc.eq(x.pc), mx.ex1.active.eq(x.active), mx.ex1.exec.eq(x.exec),
                     mx.take.eq(lw.mma_take),
                     mx.reset.eq(whole_reset | mma_dropped | (mma_started & behind_fault))]

        # --- ex2: multiplier results, the ALU's chosen ----------------------------------------
        m.submodules.ex1_ex2 = ex1_ex2_st = Stage("ex1_ex2", uop)
        ex1_ex2 = ex1_ex2_st.q
        # ... and as they leave it, with an instruction that faults as it leaves ex1
        m.d.comb += [ex1_ex2_st.stall.eq(stall), ex1_ex2_st.d.eq(ex1),
                     ex1_ex2_st.d.valid.eq(ex1.valid & ~fr.kill_ex1)]
        ex2 = split_signal(uop, "ex2")
        m.d.comb += ex2.eq(ex1_ex2)
        for l in range(L):
            with m.Switch(ex1_ex2.dec.sem):
                with m.Case(RSem.MUL):
                    m.d.comb += ex2.result[l].eq(muls[l].result)
            with m.If(res_alu_q):
                m.d.comb += ex2.result[l].eq(alu_q[l])
            with m.If(pred_alu_q):
                m.d.comb += ex2.presult[l].eq(alu_pred_q[l])

        # the LSU's checks and address work for the instruction in ex2 (LsuPrep), registered
        # into mem beside it
        def lsu_op_of(dec, name: str) -> tuple[Signal, Signal]:
            """The LsuOp of the instruction decoded in ``dec`` (NONE: not a memory access) and
            its atomic function."""
            op, fn = Signal(LsuOp, name=f"{name}_lsu_op"), Signal(5, name=f"{name}_atom_fn")
            m.d.comb += fn.eq(dec.fn)
            with m.Switch(dec.iid):
                for ins in INSTRUCTIONS:
                    if ins.space is None:
                        continue
                    if ins.sem is Sem.LOAD:
                        kind = LsuOp.LDG if ins.space is Space.GLOBAL else LsuOp.LDS
                    elif ins.sem is Sem.STORE:
                        kind = LsuOp.STG if ins.space is Space.GLOBAL else LsuOp.STS
                    elif ins.sem is Sem.PARAM:
                        kind = LsuOp.LDPARAM
                    else:
                        kind = LsuOp.ATOM if ins.space is Space.GLOBAL else LsuOp.ATOMS
                    with m.Case(iid(ins.mnemonic)):
                        m.d.comb += op.eq(kind)
                        if ins.sem is Sem.ATOMIC and ins.fn is None:
                            m.d.comb += fn.eq(AtomOp.CAS)
            return op, fn

        def lsu_prep_inputs(st, op: Signal, fn: Signal, name: str) -> dict:
            """LsuPrep's inputs for the instruction of stage view ``st``, as comb signals."""
            ins = {"op": op, "fn": fn, "exec": st.exec, "addr": st.a,
                   "shared_base": slot_field(slot_of(st.warp, f"{name}_slot"), "shared_base",
                                             32, f"{name}_shared_base")}
            for f, v in (("shared_last", shared_last), ("param_addr", blk.param_addr),
                         ("param_last", param_last)):  # the launch's, every block's
                ins[f] = Signal.like(getattr(lsu_prep, f), name=f"{name}_{f}")
                m.d.comb += ins[f].eq(v)
            return ins

        # In the simulation models' form (cfg.clock_gating) LsuPrep works on a copy of its
        # inputs taken from ex1's comb signals at the edge that loads ex2, on a clock that rises
        # only for a memory instruction (gated_domain; the rule of the ALU's copy above), so a
        # Verilator model evaluates its address checks and lane pairs only after one. The
        # launch's fields are the same for every block of it, and a block's shared base is
        # fixed while it runs, so the copy equals what ex2 would read. The op that mem sees
        # is ex2's own in both forms: after a non-memory instruction the copy is stale.
        # ex2's op and atomic function are decoded in ex1 and registered as ex1_ex2 loads, so
        # that the address checks do not wait for the decoding of the instruction's id.
        ex1_op, ex1_fn = lsu_op_of(ex1.dec, "ex1")
        lsu_op, ex2_fn = Signal(LsuOp, name="ex2_lsu_op"), Signal(5, name="ex2_atom_fn")
        with m.If(~stall):
            m.d.sync += [lsu_op.eq(ex1_op), ex2_fn.eq(ex1_fn)]
        if cfg.clock_gating:
            src = lsu_prep_inputs(ex1, ex1_op, ex1_fn, "ex1")
            prep_dom = gated_domain(m, "lsu_prep", ~stall & (src["op"] != LsuOp.NONE))
            for f, v in src.items():
                held = Signal.like(getattr(lsu_prep, f), name=f"ex2_prep_{f}")
                m.d[prep_dom] += held.eq(v)
                m.d.comb += getattr(lsu_prep, f).eq(held)
        else:
            m.d.comb += [getattr(lsu_prep, f).eq(v)
                         for f, v in lsu_prep_inputs(ex1_ex2, lsu_op, ex2_fn, "ex2").items()]

        # --- mem: LSU ------------------------------------------------------------------------
        m.submodules.ex2_mem = ex2_mem_st = Stage("ex2_mem", uop)
        ex2_mem = ex2_mem_st.q
        # mem may move on while ex1 is held: a bubble enters mem then
        m.d.comb += [ex2_mem_st.stall.eq(mem_hold), ex2_mem_st.kill.eq(stall),
                     ex2_mem_st.d.eq(ex2)]
        y = ex2_mem
        mem_prep = split_signal(lsu_prep.q.shape(), "ex2_mem_lsu")
        with m.If(~mem_hold):  # loaded with ex2_mem (a bubble's is never looked at)
            m.d.sync += [mem_prep.eq(lsu_prep.q), mem_prep.op.eq(lsu_op)]
        # precise faults: the instructions of a warp still in the pipeline behind a fault it
        # raised in mem are younger; they leave no trace (no memory access, no retire). Every
        # warp that faulted there is dead, not only the recorded one (rtl/fault_recorder.py).
        def dead(warp) -> Signal:
            return fr.dead.bit_select(warp, 1)

        # mem's instruction's bit of ``dead`` is kept in a register of its own (``y_dead``,
        # from the recorder's next value for the instruction entering mem): the recorder's
        # register and the choice of the warp's bit were the start of the LSU's hold and so
        # of the stall of every stage (af4b953's slowest routed path on seed 3). A held
        # instruction's bit is 0 and stays 0: a dead one does not hold, and ``dead`` gains
        # only the warp of a fault in mem, which a held instruction does not raise. A
        # bubble's bit is never read
        y_dead = Signal()
        m.d.sync += y_dead.eq(~mem_hold & fr.dead_next.bit_select(ex2.warp, 1))
        y_valid = y.valid & ~y_dead
        # An SFU or mma instruction younger than a fault of its warp must not retire. A memory
        # access faults in mem, in its first cycle there (the only fault raised with younger
        # instructions of the warp already in flight). One that starts after the fault (dead)
        # or as its warp's access faults in mem (two behind it) is stale from its start; one
        # that started in the cycle before, as the access left ex2 (one behind it), is made
        # stale (SFU) or dropped (mma) now, a cycle after its start, from the fault itself:
        # knowing it at the start would put LsuPrep's address checks in front of both units.
        m.d.comb += sfu_stale.eq(dead(x.warp) | (running & lsu.fault & y_valid
                                                  & (y.warp == x.warp)))
        started_warp = Signal.like(x.warp)
        m.d.sync += [sfu_started.eq(leaving & (xd.sem == RSem.SFU)),
                     mma_started.eq(leaving & is_mma), started_warp.eq(x.warp)]
        m.d.comb += [behind_fault.eq(running & lsu.fault & y_valid & (y.warp == started_warp)),
                     sfu.mark_stale.eq(sfu_started & behind_fault)]
        m.d.comb += [lsu.valid.eq(y_valid), lsu.prep.eq(mem_prep),
                     lsu.warp.eq(y.warp), lsu.pc.eq(y.pc), lsu.rd.eq(y.dec.rd),
                     lsu.wr.eq(y.dec.wr_reg), lsu.active.eq(y.active), lsu.exec.eq(y.exec),
                     lsu.data.eq(y.b), lsu.cdata.eq(y.c),
                     mem_hold.eq(lsu.hold)]
        m.submodules.mem_wb = mem_wb_st = Stage("mem_wb", uop)
        mem_wb = mem_wb_st.q
        m.d.comb += [mem_wb_st.kill.eq(mem_hold), mem_wb_st.d.eq(y),
                     mem_wb_st.d.deferred.eq(y.deferred | lsu.deferred),
                     mem_wb_st.d.valid.eq(y_valid & ~lsu.fault)]
        # outstanding global stores per warp (fences)
        m.d.comb += [iss.store_sent.eq(lsu.sent & (mem_prep.op == LsuOp.STG)),
                     iss.store_sent_warp.eq(lsu.sent_warp),
                     iss.store_acked.eq(store_acked),
                     iss.store_acked_warp.eq(store_acked_warp)]

        # --- wb: register/predicate write, scoreboard release, retire ----------------------
        z = mem_wb
        zd = z.dec
        # wb's choices among its sources are decoded in mem and registered, so that the
        # register file's write data and the retire port do not start at a decoding of the
        # id. They are loaded every cycle, not only as mem_wb loads (under mem's hold): while
        # mem holds, they decode the held instruction and wb holds a bubble, whose values
        # nothing reads (``from_fp``, ``from_banks`` and the late write-back all wait for
        # ``z.valid``). Four more enables on the hold made the LUT mapping rebuild the
        # LSU's hold two levels deeper (every stage register behind it; docs/performance.md)
        is_lds, is_atomic = Signal(name="wb_is_lds"), Signal(name="wb_is_atomic")
        fp_sem, is_half = Signal(name="wb_fp_sem"), Signal(name="wb_is_half")
        m.d.sync += [is_lds.eq(y.dec.iid == iid("lds")),
                     is_atomic.eq(y.dec.sem == RSem.ATOMIC),
                     fp_sem.eq(one_of(y.dec.sem, (RSem.FP, RSem.CVT, RSem.HALF))),
                     is_half.eq(y.dec.sem == RSem.HALF)]
        # A shared load's lanes read in this cycle take the banks' read data (a block RAM's
        # output, slow on an FPGA) after every other choice: ``values`` has the held lanes'
        # and the other results, and the register file's write data and the retire port
        # choose the read data last, per lane (``from_banks``).
        values = split_signal(vec, "values")
        m.d.comb += values.eq(z.result)
        # The FPU's and the half unit's last segments (their rounding) run in wb, so their
        # results, too, are chosen last (``from_fp``), after the late write-back's choice
        # among the writers: only ``wb`` writes while it holds an instruction.
        from_fp = Signal(name="wb_from_fp", attrs={"keep": 1})
        fp_values = split_signal(vec, "wb_fp_values")
        m.d.comb += [from_fp.eq(z.valid & fp_sem),
                     *[fp_values[l].eq(Mux(is_half, halfs[l].result,
                                           fpus[l].result)) for l in range(L)]]
        with m.If(is_lds):
            m.d.comb += values.eq(lsu.sh_held)
        with m.If(is_atomic):
            m.d.comb += values.eq(lsu.atom_values)
        from_banks = Signal(L, name="wb_from_banks", attrs={"keep": 1})
        m.d.comb += from_banks.eq(Mux(is_lds & z.valid & ~z.deferred, lsu.sh_fresh, 0))
        # retire and fault records name the warp by its block and its index within it
        retire_slot = slot_of(lw.retire.warp, "retire_slot")
        retire_block = slot_field(retire_slot, "block_id", dim3_layout(), "retire_block")
        for name in lw.retire.signature.members:
            if name not in ("warp", "values"):
                m.d.comb += getattr(self.retire, name).eq(getattr(lw.retire, name))
        for l in range(L):
            m.d.comb += self.retire.values[l].eq(
                Mux(from_fp, fp_values[l],
                    Mux(from_banks[l], lsu.sh_rdata[l], lw.retire.values[l])))
        m.d.comb += self.retire.warp.eq(
            _select(m, lw.retire.warp, [wblk[w].index for w in range(W)], 8, "retire_index"))
        fault_slot = slot_of(fault_rec.warp, "fault_slot")
        m.d.comb += [self.fault.valid.eq(fr.fault.valid), self.fault.record.eq(fault_rec),
                     self.fault.record.warp.eq(_select(
                         m, fault_rec.warp, [wblk[w].index for w in range(W)],
                         len(self.fault.record.warp), "fault_index")),
                     self.fault.record.block.eq(slot_field(fault_slot, "block_id",
                                                           dim3_layout(), "fault_block"))]
        m.d.comb += [lw.wb.valid.eq(z.valid), lw.wb.warp.eq(z.warp), lw.wb.pc.eq(z.pc),
                     lw.wb.active.eq(z.active), lw.wb.exec.eq(z.exec),
                     lw.wb.deferred.eq(z.deferred), lw.wb.wr_reg.eq(zd.wr_reg),
                     lw.wb.wr_pred.eq(zd.wr_pred), lw.wb.rd.eq(zd.rd),
                     *[lw.wb.values[l].eq(values[l]) for l in range(L)],
                     lw.wb.presult.eq(z.presult), lw.block.eq(retire_block),
                     sfu.take.eq(lw.sfu_take)]
        # (mem's hold makes a bubble at wb too, but it is not waited for: issue does not
        # look at the hold, and an issue in a hold cycle only fills the skid)
        bubble_coming = ~is_rr.valid | ~rr_ex1.valid | ~ex1_ex2.valid | ~ex2_mem.valid
        m.d.comb += [lw.bubble_coming.eq(bubble_coming), lwb_wait.eq(lw.wait)]
        # (z wins the write port whenever it writes: LateWriteback)
        z_writes = z.valid & zd.wr_reg & ~z.deferred
        m.d.comb += [rf.we.eq(lw.rf.we), rf.waddr.eq(rf.addr(lw.rf.warp, lw.rf.rd)),
                     *[rf.wdata[l].eq(Mux(from_fp, fp_values[l],
                                          Mux(from_banks[l] & z_writes, lsu.sh_rdata[l],
                                              lw.rf.data[l]))) for l in range(L)]]
        m.d.comb += [pf.we.eq(z.valid & zd.wr_pred), pf.wwarp.eq(z.warp),
                     pf.widx.eq(zd.rd[:3]), pf.wmask.eq(z.exec), pf.wdata.eq(z.presult)]
        # A late write-back's scoreboard clear comes a cycle after its write (the value is in
        # the register file by then): its choice among the LSU, the SFU and the matrix unit
        # stays off the issue stage's path, at one cycle more from a load to its use.
        late_clear = Signal.like(lw.clear)
        m.d.sync += late_clear.eq(lw.clear)

        def wb_clear(port, st, valid) -> list:
            """``port`` := the scoreboard clear of the instruction of stage view ``st`` in wb."""
            return [port.en.eq(valid & ((st.dec.wr_reg & ~st.deferred) | st.dec.wr_pred)),
                    port.warp.eq(st.warp), port.idx.eq(st.dec.rd), port.pred.eq(st.dec.wr_pred)]

        # the clears of this cycle (the issue stage's long-latency marks) and, for the
        # scoreboard, those of the next: what mem_wb loads now, withheld while mem holds (a
        # bubble enters mem_wb then); the hold comes last, after the scoreboard's and
        # HazardAhead's registers (rtl/hazard_ahead.py)
        m.d.comb += [*wb_clear(clears[0], z, z.valid), clears[1].eq(late_clear),
                     *wb_clear(sb.clear_next[0], mem_wb_st.d, mem_wb_st.d.valid),
                     *[sb.clear_next[1 + i].eq(lw.clears[i]) for i in range(3)],
                     sb.hold.eq(mem_hold),
                     haz.take0.eq(sb.clear_next[0].en & ~mem_hold)]

        # --- faults (the first one is kept until flush) -----------------------------------
        stall_q = Signal()
        m.d.sync += stall_q.eq(stall)
        issue_active = _select(m, is_pick, [ws[w].active for w in range(W)], L, "issue_active")
        m.d.comb += [fr.flush.eq(self.flush), fr.running.eq(running),
                     fr.mem.valid.eq(lsu.fault & y.valid), fr.mem.cause.eq(lsu.fault_cause),
                     fr.mem.warp.eq(y.warp), fr.mem.lanes.eq(lsu.fault_lanes),
                     fr.mem.pc.eq(y.pc), fr.mem.word.eq(y.word),
                     fr.ex1.stack.eq(stack.done & stack.fault),
                     fr.ex1.stack_cause.eq(stack.fault_cause),
                     fr.ex1.divergent.eq(bar_divergent), fr.ex1.divergent_mma.eq(mma_divergent),
                     fr.ex1.warp.eq(x.warp), fr.ex1.lanes.eq(Mux(is_mma, x.exec, x.active)),
                     fr.ex1.pc.eq(x.pc), fr.ex1.word.eq(x.word),
                     fr.bar.arrive.eq(bar.arrive), fr.bar.warp.eq(bar.warp),
                     fr.bar.waiting.eq(bar.waiting), fr.bar.deadlock.eq(bar.deadlock),
                     fr.issue.valid.eq(iss.fault), fr.issue.pc_fault.eq(issued.pc_fault),
                     fr.issue.warp.eq(is_pick), fr.issue.lanes.eq(issue_active),
                     # the faulting head's pc and word a cycle later: is_rr takes them, or
                     # the skid in a stalled cycle
                     fr.issue.pc.eq(Mux(stall_q, skid.pc, is_rr.pc)),
                     fr.issue.word.eq(Mux(stall_q, skid.word, is_rr.word))]
        for w in range(W):
            m.d.comb += fr.live[w].eq(ws[w].live)

        # --- completion, status, performance events ---------------------------------------
        pipe_busy = (sch_if.valid | if_id.valid | skid.valid | is_rr.valid | rr_ex1.valid
                     | ex1_ex2.valid | ex2_mem.valid | mem_wb.valid | sfu.busy | mx.busy)
        # (the memory path's buffer is the GPU's to wait for; a store's acknowledgement still
        # to be counted is the core's)
        mem_idle = lsu.idle & ~store_acked
        # (a fault record being written is not final yet: rtl/fault_recorder.py)
        m.d.comb += [self.drained.eq(~pipe_busy & mem_idle & stack.ready & ~fr.settling),
                     drained_core.eq(self.drained)]
        m.d.comb += self.busy.eq((slot_busy != 0) | pipe_busy | ~mem_idle)
        # a warp is quiet with nothing of it in a stage register and no global access out
        # (nor one sent in the cycle before, which counts now)
        for w in range(W):
            m.d.comb += in_pipe[w].eq(
                (sch_if.valid & (sch_if.warp == w)) | (if_id.valid & (if_id.warp == w))
                | (skid.valid & (skid.warp == w)) | (is_rr.valid & (is_rr.warp == w))
                | (rr_ex1.valid & (rr_ex1.warp == w))
                | (ex1_ex2.valid & (ex1_ex2.warp == w)) | (ex2_mem.valid & (ex2_mem.warp == w))
                | (mem_wb.valid & (mem_wb.warp == w)))
            m.d.comb += quiet[w].eq(~in_pipe[w] & (gl_out[w] == 0) & ~sent_late[w])

        # the perf port is registered (each strobe tells of the cycle before; the counters
        # count it with that cycle's ``active``): the stall reason is worked out from the
        # issue stage's hazards, late in the cycle, and the counters' adders are far away
        p = self.perf
        m.d.sync += [p.issued.eq(issue_ok), p.mem_transactions.eq(lsu.transaction),
                     p.divergence.eq(stack.diverged & stack.valid),
                     p.barriers.eq(bar.release),
                     p.resident_warps.eq(sum(member[w] for w in range(W))),
                     p.resident_blocks.eq(sum(slot_busy[k] for k in range(S)))]
        # a cycle is charged as one that issued when an instruction enters rr (picked now,
        # or from the skid), so that an issue into the skid leaves the stall charged. The
        # classifier's inputs are registered (it works on the cycle before, as the port tells
        # of it): the hazards come late in the cycle, out of the issue stage's selection.
        m.d.sync += [sc.issued.eq(is_rr_st.d.valid & ~stall), sc.running.eq(running),
                     sc.any_live.eq((member & ~finished) != 0), sc.mem_hold.eq(mem_hold),
                     sc.lwb_valid.eq(lsu.lwb.valid), sc.ex1_block.eq(ex1_block),
                     sc.sfu_wb.eq(sfu.result.valid | mx.result.valid),
                     sc.structural_warps.eq(iss.structural),
                     sc.hazard.eq(iss.hazard), sc.parked.eq(iss.parked),
                     sc.bar_hold.eq(iss.bar_hold)]
        m.d.comb += [p.stall_idle.eq(sc.stall_idle), p.stall_memory.eq(sc.stall_memory),
                     p.stall_structural.eq(sc.stall_structural),
                     p.stall_scoreboard.eq(sc.stall_scoreboard),
                     p.stall_barrier.eq(sc.stall_barrier)]
        # why each warp did not issue, named per warp for waveforms (w<w>_wait)
        m.d.comb += [wwait.runnable.eq(member & ~finished), wwait.valid.eq(ibuf.valid),
                     wwait.issued.eq(issue_ok), wwait.warp.eq(is_pick),
                     wwait.hazard.eq(iss.hazard), wwait.parked.eq(iss.parked),
                     wwait.structural.eq(iss.structural), wwait.bar_hold.eq(iss.bar_hold)]
        for w in range(W):
            m.d.comb += Signal(WarpWait, name=f"w{w}_wait").eq(wwait.wait[w])
        return m
