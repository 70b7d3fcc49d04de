"""Host interface: the MMIO register file and the command processor.

The register map is exactly ``simtgpu.arch.command_queue.Mmio`` (docs/host-interface.md
walks through it). The command processor consumes 64-byte records from the ring in device
memory through its own memory port (a source on the interconnect, like a core):

    idle --HEAD != TAIL--> fetch (1..16 line reads) --> decode
        LAUNCH --> start dispatcher --> run --all blocks done--> drain --> fence write --> idle
        NOP / FENCE --> drain --> fence write --> idle
        bad record --> faulted (STATUS.FAULT | BAD_COMMAND)
    run --core fault or watchdog--> halt cores, wait until drained --> flush --> faulted
    faulted --CONTROL.CLEAR_FAULT--> HEAD := TAIL, idle  (the clear acts in the cycle after
                                     the write, before the bus's next access; a launch
                                     still draining goes to idle after its flush)

"drain" waits until no memory request is outstanding anywhere, so the fence is written only
after every store of the command is in memory (memory answers in order).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2
from simtgpu.arch.command_queue import (
    DEVICE_ID,
    MAX_QUEUE_ENTRIES,
    RECORD_BYTES,
    RECORD_FIELDS,
    RECORD_WORDS,
    VERSION,
    CommandOp,
    Control,
    Mmio,
    Status,
)

from .configs import RtlConfig
from .dispatcher import launch_layout
from .signatures import (
    FaultCause,
    MemKind,
    fault_signature,
    imem_write_signature,
    mem_port_signature,
    mmio_signature,
)

__all__ = ["CpState", "HostInterface"]


class CpState(enum.Enum, shape=4):
    """Command-processor states (visible in waveforms)."""

    IDLE = 0
    FETCH_REQ = 1
    FETCH_RESP = 2
    DECODE = 3
    START = 4
    RUN = 5
    DRAIN = 6
    FENCE_REQ = 7
    FENCE_RESP = 8
    HALT = 9
    FLUSH = 10
    FAULTED = 11


class HostInterface(wiring.Component):
    """MMIO registers plus the command processor.

    Parameters
    ----------
    cfg:
        Build configuration (capabilities, line width, watchdog).

    Members
    -------
    mmio: ``In(mmio_signature())``
        The host's register bus.
    mem: ``Out(mem_port_signature(line_words, tag_bits))``
        The command processor's memory port (record fetch, fence write).
    imem: ``Out(imem_write_signature(imem_addr_bits))``
        Instruction-memory writes broadcast to every core (from IMEM_DATA or ``imem_bd``).
    imem_bd: ``In(imem_write_signature(imem_addr_bits))``
        Backdoor instruction-memory writes (simulation harness), one word per cycle.
    code_limit: ``Out(32)``
        One past the highest instruction-memory byte ever written: a LAUNCH record whose code
        range ends past it is refused.
    code_base, code_end: ``Out(32)``
        The running launch's code range (record words w13/w14, held while it runs): the cores
        fault ``PC_OUT_OF_RANGE`` at a pc outside ``[code_base, code_end)``.
    launch, disp_start, disp_abort, disp_done:
        The dispatcher's launch, start and abort pulses, and its done pulse.
    core_fault: ``In(fault_signature(lanes)).array(cores)``
        Fault outputs of the cores.
    drained, halted: ``In(1)``
        Every core is drained and the interconnect has nothing outstanding (a cycle late);
        the cores have seen ``core_halt`` (registered twice): while the host halts them
        (HALT) they count as drained only with ``halted`` as well, since before it one could
        still start an instruction. The host applies that rule by its own state, so neither
        input depends on ``core_halt`` (as one signal, the state's decoding into
        ``core_halt`` went out to the GPU and back into the fault record's enables: the
        ``f_instr`` endpoint among the latest of every routed seed at bc93f6b).
    core_start, core_halt, core_flush: ``Out(1)``
        Broadcast core controls.
    perf_re: ``Out(1)``; perf_rdata: ``In(32)``
        A register read starts (``mmio.addr`` is valid); the perf counters decode the address
        and answer in ``perf_rdata`` the next cycle, 0 when it names no counter. The host's
        own registers read 0 there, so the two are ORed.
    counters_reset, command_done: ``Out(1)``
        Pulses for the perf counters.
    busy, fault, idle: ``Out(1)``
        STATUS.BUSY and STATUS.FAULT; ``idle``: nothing queued, nothing running, no fault.
    """

    def __init__(self, cfg: RtlConfig):
        self.cfg = cfg
        super().__init__({
            "mmio": In(mmio_signature()),
            "mem": Out(mem_port_signature(cfg.line_words, cfg.tag_bits)),
            "imem": Out(imem_write_signature(cfg.imem_addr_bits)),
            "imem_bd": In(imem_write_signature(cfg.imem_addr_bits)),
            "code_limit": Out(32),
            "code_base": Out(32),
            "code_end": Out(32),
            "launch": Out(launch_layout()),
            "disp_start": Out(1),
            "disp_abort": Out(1),
            "disp_done": In(1),
            "core_fault": In(fault_signature(cfg.lanes)).array(cfg.cores),
            "drained": In(1), "halted": In(1),
            "core_start": Out(1),
            "core_halt": Out(1),
            "core_flush": Out(1),
            "perf_re": Out(1),
            "perf_rdata": In(32),
            "counters_reset": Out(1),
            "command_done": Out(1),
            "busy": Out(1),
            "fault": Out(1),
            "idle": Out(1),
            "state": Out(CpState),
        })

    def elaborate(self, platform) -> Module:  # noqa: C901 (one FSM, read top to bottom)
        m = Module()
        cfg = self.cfg
        lw = cfg.line_words
        line_shift = (cfg.line_bytes - 1).bit_length()

        # --- registers --------------------------------------------------------------------
        queue_base = Signal(32)
        entries = Signal(range(MAX_QUEUE_ENTRIES + 1), init=2)
        tail = Signal(range(MAX_QUEUE_ENTRIES))
        head = Signal(range(MAX_QUEUE_ENTRIES))
        fence_addr = Signal(32)
        imem_addr = Signal(32)
        fault = Signal()
        bad_command = Signal()
        f_cause = Signal(FaultCause)
        f_pc = Signal(32)
        f_core = Signal(8)
        f_warp = Signal(8)
        f_lanes = Signal(32)
        f_block = [Signal(16, name=f"f_block_{a}") for a in "xyz"]
        f_instr = Signal(32)

        state = Signal(CpState)
        m.d.comb += self.state.eq(state)

        # --- shadow instruction memory (for IMEM_DATA reads) ---------------------------------
        m.submodules.shadow = shadow = Memory(shape=32, depth=cfg.imem_words, init=[])
        sh_w = shadow.write_port()
        sh_r = shadow.read_port()
        m.d.comb += [
            self.imem.addr.eq(sh_w.addr), self.imem.data.eq(sh_w.data), self.imem.we.eq(sh_w.en),
            sh_r.addr.eq(imem_addr[2:]),
        ]

        # --- MMIO bus -----------------------------------------------------------------------
        bus = self.mmio
        ack = Signal()
        ack_imem_read = Signal()
        rdata = Signal(32)
        m.d.comb += [
            bus.ready.eq(ack),
            bus.rdata.eq(Mux(ack_imem_read, sh_r.data, rdata | self.perf_rdata)),
        ]
        take = Signal()
        m.d.comb += take.eq((bus.we | bus.re) & ~ack)
        m.d.sync += [ack.eq(take), ack_imem_read.eq(take & bus.re & (bus.addr == Mmio.IMEM_DATA))]
        m.d.comb += self.perf_re.eq(take & bus.re)

        # ``head`` and ``tail`` take their next values from ``head_d`` and ``tail_d`` (set
        # below; they hold otherwise), so whether a command is queued is a register, worked
        # out from the next values: the two pointers' comparison was the start of the host's
        # ``busy``, whose net reaches the performance counters across the device and came
        # back into the state's enable, a routed run's slowest path (15318c0, seed 1).
        head_d = Signal.like(head)
        tail_d = Signal.like(tail)
        queued = Signal()  # head != tail
        m.d.comb += [head_d.eq(head), tail_d.eq(tail)]
        m.d.sync += [head.eq(head_d), tail.eq(tail_d), queued.eq(head_d != tail_d)]

        status = Signal(32)
        busy = Signal()
        m.d.comb += [
            busy.eq((queued | (state != CpState.IDLE)) & ~fault),
            status.eq(Cat(busy, fault, bad_command)),
            self.busy.eq(busy),
            self.fault.eq(fault),
            self.idle.eq(~busy & ~fault),
        ]
        assert Status.BUSY == 1 and Status.FAULT == 2 and Status.BAD_COMMAND == 4

        read_map = {
            Mmio.ID: DEVICE_ID, Mmio.VERSION: VERSION, Mmio.QUEUE_BASE: queue_base,
            Mmio.QUEUE_ENTRIES: entries, Mmio.DOORBELL: tail, Mmio.HEAD: head,
            Mmio.FENCE_ADDR: fence_addr, Mmio.STATUS: status, Mmio.FAULT_CAUSE: f_cause,
            Mmio.FAULT_PC: f_pc, Mmio.FAULT_CORE: f_core, Mmio.FAULT_WARP: f_warp,
            Mmio.FAULT_LANES: f_lanes, Mmio.FAULT_BLOCK_X: f_block[0],
            Mmio.FAULT_BLOCK_Y: f_block[1], Mmio.FAULT_BLOCK_Z: f_block[2], Mmio.CONTROL: 0,
            Mmio.FAULT_INSTR: f_instr, Mmio.IMEM_ADDR: imem_addr,
            Mmio.CAP_CORES: cfg.cores, Mmio.CAP_WARPS: cfg.warps, Mmio.CAP_LANES: cfg.lanes,
            Mmio.CAP_SHARED_BYTES: cfg.shared_bytes, Mmio.CAP_MEM_BYTES: cfg.memory_bytes,
            Mmio.CAP_IMEM_BYTES: cfg.gpu.imem_bytes, Mmio.CAP_STACK_DEPTH: cfg.stack_depth,
        }
        with m.If(take & bus.re):
            with m.Switch(bus.addr):
                for reg, value in read_map.items():
                    with m.Case(reg):
                        m.d.sync += rdata.eq(value)
                with m.Default():  # the perf counters' offsets, or none: perf_rdata answers
                    m.d.sync += rdata.eq(0)

        # Instruction-memory writes: MMIO IMEM_DATA, or the backdoor, registered before they
        # reach the shadow, the cores' memories and ``code_limit`` (the bus's decoding is not
        # on the path into the cores' predecoders). The write lands in the cycle after the
        # bus's; a read of it (MMIO IMEM_DATA, two cycles on at the earliest: the bus waits
        # for ``ack`` between accesses) or a launch (a command in the queue) comes later.
        sh_wq = Signal(data.StructLayout({"en": 1, "addr": len(sh_w.addr), "data": 32}))
        m.d.comb += [sh_w.addr.eq(sh_wq.addr), sh_w.data.eq(sh_wq.data), sh_w.en.eq(sh_wq.en)]
        m.d.sync += sh_wq.en.eq(0)
        with m.If(self.imem_bd.we):
            m.d.sync += [sh_wq.addr.eq(self.imem_bd.addr), sh_wq.data.eq(self.imem_bd.data),
                         sh_wq.en.eq(1)]
        with m.Elif(take & bus.we & (bus.addr == Mmio.IMEM_DATA)):
            m.d.sync += [sh_wq.addr.eq(imem_addr[2:]), sh_wq.data.eq(bus.wdata),
                         sh_wq.en.eq(1)]
        with m.If(take & (bus.addr == Mmio.IMEM_DATA)):
            m.d.sync += imem_addr.eq(imem_addr + 4)
        # code limit: one past the highest byte ever written (as the driver's ISS backend sees
        # the loaded code); a warp whose pc reaches it faults PC_OUT_OF_RANGE
        code_limit = Signal(32)
        written_end = Signal(32)
        m.d.comb += [written_end.eq((sh_w.addr + 1) << 2), self.code_limit.eq(code_limit)]
        with m.If(sh_w.en & (written_end > code_limit)):
            m.d.sync += code_limit.eq(written_end)

        # The queue's writes (QUEUE_BASE, QUEUE_ENTRIES, DOORBELL) take effect in the cycle
        # after the bus's, from a register of the write and its range check (``queue_wq``):
        # the check's carry chain, then the pointers' next values and their comparison into
        # ``queued``, were one path from the bus (7ad5489's netlist, the estimate's worst).
        # The next access comes a cycle later still (the bus waits for ``ack``), and it sees
        # them: a STATUS read right after a doorbell reads BUSY.
        queue_wq = Signal(data.StructLayout({"base": 1, "entries": 1, "doorbell": 1,
                                             "data": 32}))
        m.d.sync += [queue_wq.base.eq(0), queue_wq.entries.eq(0), queue_wq.doorbell.eq(0),
                     queue_wq.data.eq(bus.wdata)]
        with m.If(queue_wq.base):
            m.d.sync += queue_base.eq(queue_wq.data)
        with m.If(queue_wq.entries):
            m.d.sync += entries.eq(queue_wq.data)
        with m.If(queue_wq.base | queue_wq.entries):
            m.d.comb += [head_d.eq(0), tail_d.eq(0)]
        with m.If(queue_wq.doorbell):
            m.d.comb += tail_d.eq(queue_wq.data)
        # CLEAR_FAULT acts from a register of the write, as the queue's writes do: the bus's
        # decoding fanned out to the enables of the whole fault record (af4b953's worst routed
        # path on seed 1). The next access still sees it: it comes two cycles after the write
        write_clear = Signal()
        m.d.sync += write_clear.eq(0)
        with m.If(take & bus.we):
            with m.Switch(bus.addr):
                with m.Case(Mmio.QUEUE_BASE):
                    m.d.sync += queue_wq.base.eq(1)
                with m.Case(Mmio.QUEUE_ENTRIES):
                    with m.If((bus.wdata >= 2) & (bus.wdata <= MAX_QUEUE_ENTRIES)):
                        m.d.sync += queue_wq.entries.eq(1)
                with m.Case(Mmio.DOORBELL):
                    with m.If(bus.wdata < entries):
                        m.d.sync += queue_wq.doorbell.eq(1)
                with m.Case(Mmio.FENCE_ADDR):
                    m.d.sync += fence_addr.eq(bus.wdata)
                with m.Case(Mmio.IMEM_ADDR):
                    m.d.sync += imem_addr.eq(bus.wdata)
                with m.Case(Mmio.CONTROL):
                    m.d.sync += write_clear.eq(bus.wdata[Control.CLEAR_FAULT.bit_length() - 1])
                    m.d.comb += self.counters_reset.eq(
                        bus.wdata[Control.RESET_COUNTERS.bit_length() - 1])

        # --- command processor --------------------------------------------------------------
        rec = [Signal(32, name=f"rec_w{i}") for i in range(RECORD_WORDS)]
        rec_addr = Signal(32)
        m.d.comb += rec_addr.eq(queue_base + (head << 6))
        assert RECORD_BYTES == 64
        reads = max(1, RECORD_WORDS // lw)  # line reads per record
        fetch_i = Signal(range(reads + 1))
        # the line address of the next read, a register: the record's address (an adder
        # from ``head``) aligned as the fetch starts, a line more after each read, so that
        # the request's address is not one path with those adders, the interconnect and the
        # L2's lookup
        fetch_addr = Signal(32)
        watchdog = Signal(32)
        # whether the watchdog has reached RUN's and HALT's limits, from flip-flops: it counts
        # up by one a cycle from 0 in each state, so having been at the limit less one a cycle
        # ago is being at the limit now; where it restarts (as RUN or HALT is entered) the
        # flags are cleared with it. The comparisons' carry chains then end at a register,
        # not in the fault record's enables (ahead of them at 38002d7 in the path estimate)
        run_timeout, drain_timeout = Signal(), Signal()
        m.d.sync += [run_timeout.eq(watchdog >= cfg.watchdog_cycles - 1),
                     drain_timeout.eq(watchdog >= cfg.drain_timeout_cycles - 1)]

        req = self.mem.req
        resp = self.mem.resp
        m.d.comb += [resp.ready.eq(1), req.payload.eq(0)]  # fields not set below stay zero

        # Record decoding, field by field from the record's table (arch.command_queue), with
        # each field's own rules (width, alignment, non-zero) and the rules that depend on
        # this build and on the loaded code: the hardware form of ``launch_problem``. It is
        # read in DECODE's third cycle, from registers written in the first two, so no path
        # runs from the record through comparisons' carry chains into the state and the fault
        # record. The block's thread count takes the first two cycles (one multiplier in
        # each); its rule needs no product at all (see ``pair`` below).
        fld = {f.name: rec[f.word:f.word + f.count] for f in RECORD_FIELDS}
        record_bad = []  # rules of every record
        launch_bad = []  # rules of LAUNCH records
        for f in RECORD_FIELDS:
            rules = launch_bad if f.launch else record_bad
            for w in fld[f.name]:
                if f.width < 32:
                    rules.append(w[f.width:] != 0)
                if f.nonzero:
                    rules.append(w == 0)
                if f.align > 1:
                    rules.append(w[:exact_log2(f.align)] != 0)
        op = fld["opcode"][0]
        entry_pc = fld["entry_pc"][0]
        grid = fld["grid"]
        block = fld["block"]
        shared_bytes = fld["shared_bytes"][0]
        max_threads = cfg.warps * cfg.lanes
        small = [Signal(range(max_threads + 1), name=f"bdim_{a}") for a in "xyz"]
        m.d.comb += [s.eq(b) for s, b in zip(small, block, strict=True)]
        # x*y*z > M exactly when z > 0 and x*y > M // z (integers), so the rule is one
        # comparison of two registers in the second cycle: ``pair`` (x*y, one multiplier) and
        # ``limit`` (M // z, a table of M + 1 constants), both written in the first. Two
        # multipliers in series and the comparison after them were 1cdfe4d's worst path on
        # all three seeds. The count itself (``threads``) is written in the second cycle and
        # first read in START.
        pair = Signal(range(max_threads ** 2 + 1))
        limit = Signal(range(max_threads ** 2 + 1))
        m.d.sync += pair.eq(small[0] * small[1])
        with m.Switch(small[2]):
            with m.Case(0):  # a product of zero is never too many
                m.d.sync += limit.eq(max_threads ** 2)
            for z in range(1, max_threads + 1):
                with m.Case(z):
                    m.d.sync += limit.eq(max_threads // z)
            with m.Default():  # a dimension over M is refused on its own (below)
                m.d.sync += limit.eq(0)
        threads = Signal(range(max_threads ** 3 + 1))
        m.d.sync += threads.eq(pair * small[2])  # the record's words hold through DECODE
        # ... and the comparison is registered in the second cycle, so the third cycle's
        # decision starts from a flip-flop (the comparison into the state and the fault
        # record was the host's slowest path at daac862: a cycle more per command)
        too_many = Signal()
        m.d.sync += too_many.eq(pair > limit)
        # DECODE's cycles passed: 1, ``pair`` and ``limit`` are the record's; 2, ``too_many``
        checked = Signal(range(3))
        with m.If(state != CpState.DECODE):
            m.d.sync += checked.eq(0)
        # The product is taken over truncated dimensions, so each must fit on its own first.
        launch_bad += [b > max_threads for b in block]
        code_base, code_end = fld["code_base"][0], fld["code_end"][0]
        launch_bad += [shared_bytes > cfg.shared_bytes,
                       code_end > code_limit, entry_pc < code_base, entry_pc >= code_end]
        record_bad.append(op > max(CommandOp).value)
        # The record's own rules are registered in DECODE's first cycle as well (its words
        # are written only while it is fetched), so the second cycle's decision starts from
        # registers: no path runs from the record through the comparisons' carry chains into
        # the state and the fault record.
        # So is whether it is a launch (a 32-bit comparison of its opcode word): the second
        # cycle's choice among fault, START and DRAIN is a few flags.
        is_launch = op == CommandOp.LAUNCH
        is_launch_q = Signal()
        record_is_bad = Signal()
        m.d.sync += [record_is_bad.eq(Cat(*record_bad).any()
                                      | (is_launch & Cat(*launch_bad).any())),
                     is_launch_q.eq(is_launch)]
        bad = Signal()
        m.d.comb += bad.eq(record_is_bad | (is_launch_q & too_many))

        # the record words are written only while a record is fetched, so they hold the
        # running launch's range until it ends
        m.d.comb += [self.code_base.eq(code_base), self.code_end.eq(code_end)]
        lt = self.launch
        m.d.comb += [
            lt.entry_pc.eq(entry_pc),
            *[getattr(lt.grid, a).eq(g) for a, g in zip("xyz", grid, strict=True)],
            *[getattr(lt.block_dim, a).eq(b) for a, b in zip("xyz", block, strict=True)],
            lt.num_threads.eq(threads),
            lt.num_warps.eq((threads + cfg.lanes - 1) >> cfg.lane_bits),
            lt.param_addr.eq(fld["param_addr"][0]),
            lt.param_size.eq(fld["param_size"][0]),
            lt.shared_bytes.eq(shared_bytes),
        ]

        # First faulting core (lowest index) this cycle.
        any_fault = Signal()
        fault_core = Signal(range(max(cfg.cores, 2)))
        m.d.comb += any_fault.eq(Cat(*[f.valid for f in self.core_fault]).any())
        for i in reversed(range(cfg.cores)):
            with m.If(self.core_fault[i].valid):
                m.d.comb += fault_core.eq(i)

        def latch_core_fault(core):
            with m.Switch(core):
                for i in range(cfg.cores):
                    with m.Case(i):
                        r = self.core_fault[i].record
                        m.d.sync += [
                            f_cause.eq(r.cause), f_pc.eq(r.pc), f_core.eq(i),
                            f_warp.eq(r.warp), f_lanes.eq(r.lane_mask), f_instr.eq(r.instr),
                            f_block[0].eq(r.block.x), f_block[1].eq(r.block.y),
                            f_block[2].eq(r.block.z),
                        ]

        next_head = Mux(head + 1 == entries, 0, head + 1)

        # CLEAR_FAULT acts in the cycle after the write (``write_clear``), even while the
        # faulting launch is still being drained (STATUS then shows BUSY until the cores are
        # flushed). The FSM below comes later, so a fault latched in the same cycle wins.
        with m.If(write_clear & fault):
            m.d.sync += [
                fault.eq(0), bad_command.eq(0), f_cause.eq(FaultCause.NONE),
                f_pc.eq(0), f_core.eq(0), f_warp.eq(0), f_lanes.eq(0), f_instr.eq(0),
                *[b.eq(0) for b in f_block],
            ]
            m.d.comb += head_d.eq(tail)

        with m.Switch(state):
            with m.Case(CpState.IDLE):
                with m.If(queued & ~fault):
                    m.d.sync += [state.eq(CpState.FETCH_REQ), fetch_i.eq(0),
                                 fetch_addr.eq((rec_addr >> line_shift) << line_shift)]

            with m.Case(CpState.FETCH_REQ):
                m.d.comb += [
                    req.valid.eq(1),
                    req.payload.kind.eq(MemKind.READ),
                    req.payload.addr.eq(fetch_addr),
                ]
                with m.If(req.ready):
                    m.d.sync += state.eq(CpState.FETCH_RESP)

            with m.Case(CpState.FETCH_RESP):
                with m.If(resp.valid):
                    words = resp.payload.rdata
                    if lw >= RECORD_WORDS:
                        # The record is one aligned 16-word slice of the line.
                        slots = lw // RECORD_WORDS
                        with m.Switch(rec_addr[6:line_shift] if slots > 1 else 0):
                            for s in range(slots):
                                with m.Case(s):
                                    m.d.sync += [rec[k].eq(words[s * RECORD_WORDS + k])
                                                 for k in range(RECORD_WORDS)]
                    else:
                        with m.Switch(fetch_i):
                            for j in range(reads):
                                with m.Case(j):
                                    m.d.sync += [rec[j * lw + k].eq(words[k])
                                                 for k in range(lw)]
                    m.d.sync += [fetch_i.eq(fetch_i + 1),
                                 fetch_addr.eq(fetch_addr + (1 << line_shift))]
                    with m.If(fetch_i + 1 == reads):
                        m.d.sync += state.eq(CpState.DECODE)
                    with m.Else():
                        m.d.sync += state.eq(CpState.FETCH_REQ)

            with m.Case(CpState.DECODE):
                with m.If(checked != 2):  # the rules' registers being written
                    m.d.sync += checked.eq(checked + 1)
                with m.Elif(bad):
                    m.d.sync += [
                        fault.eq(1), bad_command.eq(1), f_cause.eq(FaultCause.NONE),
                        f_pc.eq(rec_addr), f_core.eq(0), f_warp.eq(0), f_lanes.eq(0), f_instr.eq(0),
                        *[b.eq(0) for b in f_block],
                        state.eq(CpState.FAULTED),
                    ]
                with m.Elif(is_launch_q):
                    m.d.sync += state.eq(CpState.START)
                with m.Else():
                    m.d.sync += state.eq(CpState.DRAIN)

            with m.Case(CpState.START):
                m.d.comb += [self.disp_start.eq(1), self.core_start.eq(1)]
                m.d.sync += [watchdog.eq(0), run_timeout.eq(0), state.eq(CpState.RUN)]

            with m.Case(CpState.RUN):
                m.d.sync += watchdog.eq(watchdog + 1)
                with m.If(any_fault):
                    latch_core_fault(fault_core)
                    m.d.sync += [fault.eq(1), state.eq(CpState.HALT), watchdog.eq(0),
                                 drain_timeout.eq(0)]
                    m.d.comb += self.disp_abort.eq(1)
                with m.Elif(run_timeout):
                    m.d.sync += [
                        fault.eq(1), f_cause.eq(FaultCause.WATCHDOG), f_pc.eq(0), f_core.eq(0),
                        f_warp.eq(0), f_lanes.eq(0), f_instr.eq(0), *[b.eq(0) for b in f_block],
                        state.eq(CpState.HALT), watchdog.eq(0), drain_timeout.eq(0),
                    ]
                    m.d.comb += self.disp_abort.eq(1)
                with m.Elif(self.disp_done):
                    m.d.sync += state.eq(CpState.DRAIN)

            with m.Case(CpState.DRAIN):
                with m.If(self.drained):
                    m.d.sync += state.eq(CpState.FENCE_REQ)

            with m.Case(CpState.FENCE_REQ):
                word = fence_addr[2:line_shift] if lw > 1 else Const(0, 1)
                m.d.comb += [
                    req.valid.eq(1),
                    req.payload.kind.eq(MemKind.WRITE),
                    req.payload.addr.eq((fence_addr >> line_shift) << line_shift),
                    req.payload.wdata.as_value().eq(Cat(*(fld["fence"] * lw))),
                    req.payload.be.eq(Const(0xF, 4) << Cat(Const(0, 2), word)),
                ]
                with m.If(req.ready):
                    m.d.sync += state.eq(CpState.FENCE_RESP)

            with m.Case(CpState.FENCE_RESP):
                with m.If(resp.valid):
                    m.d.comb += self.command_done.eq(1)
                    m.d.sync += state.eq(CpState.IDLE)
                    m.d.comb += head_d.eq(next_head)

            with m.Case(CpState.HALT):
                # Cores finish what is in flight. Should a broken core never drain, flush it
                # anyway after a while: the queue must not stay stuck behind it.
                m.d.comb += self.core_halt.eq(1)
                m.d.sync += watchdog.eq(watchdog + 1)
                with m.If((self.drained & self.halted)
                          | drain_timeout):
                    m.d.sync += state.eq(CpState.FLUSH)
                    # the faulting core's record once it has drained: an older instruction
                    # of the faulting warp, still in flight at the first fault, may have
                    # replaced it with its own (rtl/fault_recorder.py)
                    with m.If(fault & ~write_clear & (f_cause != FaultCause.WATCHDOG) & Cat(
                            f.valid for f in self.core_fault).bit_select(f_core, 1)):
                        latch_core_fault(f_core)

            with m.Case(CpState.FLUSH):
                m.d.comb += [self.core_halt.eq(1), self.core_flush.eq(1)]
                m.d.sync += state.eq(Mux(fault, CpState.FAULTED, CpState.IDLE))

            with m.Case(CpState.FAULTED):
                # cleared by CONTROL.CLEAR_FAULT (above): leaves as the record is cleared, so
                # that STATUS reads idle from the next access on, as the queue's writes do
                with m.If(~fault | write_clear):
                    m.d.sync += state.eq(CpState.IDLE)
        return m
