"""Simulation memory behind the GPU's external port: storage plus a DRAM timing model.

One line-wide ``Memory`` (``line_words`` 32-bit words per row, byte write enables) serves the
external memory port. Requests are executed one at a time in arrival order, so responses are
in request order and an atomic's read-modify-write can never interleave with another access.
An ATOMIC takes two cycles (read, then write), so the request after it waits one cycle.

Timing (docs/memory-system.md; the Python reference is :class:`simtgpu.rtlsim.dram_model.
DramTiming`): one data channel moves a line in ``cycles_per_line`` cycles. An accepted request
starts its transfer when the channel is free (at once, if it is idle), and its response is due
``latency`` cycles after that start (at least 2 cycles after acceptance: one to read the
array, one to queue the answer), later only if the initiator holds ``resp.ready`` low. Every
accepted request holds a response-queue entry until its response is taken; with
``max_inflight`` entries held, ``req.ready`` is low. The three values are registers, set at
reset from the configuration's memory setting and reloaded through the ``timing`` port, so one
model build serves every setting. With ``cycles_per_line`` 1 and ``max_inflight`` latency + 3
(the ``ideal`` setting) it is the fixed-latency memory this model always was.

A backdoor port (``bd``) reads and writes whole lines without bus cycles; the harness uses it
to load and dump memory images. Use it only while the GPU is idle: it does not take part in the
ordering of bus requests.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from simtgpu.rtl.atomic_alu import atomic_result
from simtgpu.rtl.configs import RtlConfig
from simtgpu.rtl.signatures import AtomOp, MemKind, mem_port_signature

from .sim_ram import SimRam

__all__ = ["MemoryModel", "backdoor_signature", "timing_signature"]

LATENCY_BITS = 13  # up to 4096 cycles (MemoryConfig's bound)
CPL_BITS = 8


def timing_signature(queue_depth: int) -> wiring.Signature:
    """DRAM timing, seen from the tester: while ``we`` is high the model loads ``latency``,
    ``cycles_per_line`` (at least 1) and ``max_inflight`` (1 to ``queue_depth``) at the next
    clock edge. Change it only while the memory is idle."""
    return wiring.Signature({
        "we": Out(1),
        "latency": Out(LATENCY_BITS),
        "cycles_per_line": Out(CPL_BITS),
        "max_inflight": Out(range(queue_depth + 1)),
    })


def backdoor_signature(line_words: int, lines: int) -> wiring.Signature:
    """Backdoor line access, seen from the tester: ``we`` writes ``wdata`` to line ``addr``;
    ``rdata`` holds line ``addr`` one cycle after ``addr`` was presented."""
    return wiring.Signature({
        "addr": Out(range(lines)),
        "wdata": Out(32 * line_words),
        "we": Out(1),
        "rdata": In(32 * line_words),
    })


def _default_fpu() -> tuple[Elaboratable, object, int] | None:
    """The units' pipelined FPU (``rtl/fpu.py``: ``Fpu(latency)`` with ``en``, ``op``, ``a``,
    ``b``, ``c``, ``result``), bit-exact with ``simtgpu.sim.numerics.fadd``; None while it is
    not in the tree. Its gated form: the model is simulation only, and an ``atom.fadd`` is
    rare, so the adder is evaluated only in its cycles."""
    try:
        from simtgpu.rtl.fpu import Fpu, FpuOp
    except ImportError:
        return None
    fpu = Fpu(gated=True, fadd_only=True)
    return fpu, FpuOp.FADD, fpu.latency


class _Port:
    """Address, data and enable signals of one storage port."""

    def __init__(self, addr_bits: int, width: int, en_bits: int):
        self.addr = Signal(addr_bits)
        self.data = Signal(width)
        self.en = Signal(en_bits)


class MemoryModel(wiring.Component):
    """Line-wide simulation memory with fixed latency, byte enables and atomics.

    Parameters
    ----------
    cfg:
        Build configuration: ``line_words``, ``sim_memory_bytes``, the memory setting
        (``cfg.memory``: the timing at reset), ``mem_queue_depth`` and the external tag width.
    latency:
        Overrides the reset latency of ``cfg.memory`` (tests).
    fpu:
        ``(component, fadd_op, latency)`` of the pipelined FP unit used by ``atom.fadd``; by
        default the units' ``Fpu`` from ``rtl/fpu.py``. Without one (``fadd_supported`` is
        then False) ``atom.fadd`` returns the old value and leaves memory unchanged.
    storage:
        ``"amaranth"`` (an Amaranth ``Memory``, reachable as ``self.mem.data`` in the Amaranth
        simulator) or ``"verilog"`` (the :class:`~simtgpu.rtlsim.sim_ram.SimRam` black box, for
        Verilog builds of large memories).

    Members
    -------
    bus: ``In(mem_port_signature(line_words, ext_tag_bits))``
    bd: ``In(backdoor_signature(line_words, lines))``
    timing: ``In(timing_signature(mem_queue_depth))``
    """

    def __init__(self, cfg: RtlConfig, *, latency: int | None = None, fpu=None,
                 storage: str = "amaranth"):
        self.cfg = cfg
        self.lines = cfg.sim_memory_lines
        timing = cfg.memory
        self.latency = timing.latency if latency is None else latency
        if not 1 <= self.latency < 1 << LATENCY_BITS:
            raise ValueError(f"latency must be from 1 to {(1 << LATENCY_BITS) - 1}, "
                             f"not {self.latency}")
        self.cycles_per_line = timing.cycles_per_line(cfg.line_bytes)
        self.max_inflight = timing.max_inflight or self.latency + 3
        self.queue_depth = max(cfg.mem_queue_depth, self.max_inflight)
        if storage not in ("amaranth", "verilog"):
            raise ValueError(f"storage must be 'amaranth' or 'verilog', not {storage!r}")
        self.storage = storage
        self._fpu = fpu if fpu is not None else _default_fpu()
        self.fadd_supported = self._fpu is not None
        super().__init__({
            "bus": In(mem_port_signature(cfg.line_words, cfg.ext_tag_bits)),
            "bd": In(backdoor_signature(cfg.line_words, self.lines)),
            "timing": In(timing_signature(self.queue_depth)),
        })
        # Created here rather than in elaborate() so that tests can reach the array through
        # the Amaranth simulator (``ctx.set(model.mem.data[i], ...)``) as a backdoor. Verilog
        # builds keep the array in a black box instead (rtlsim/sim_ram.py explains why).
        if storage == "amaranth":
            self.mem = Memory(shape=unsigned(32 * cfg.line_words), depth=self.lines, init=[])
        else:
            self.mem = SimRam(32 * cfg.line_words, self.lines)

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self.cfg
        lw = cfg.line_words
        line_shift = (cfg.line_bytes - 1).bit_length()
        line_idx_bits = max(1, (self.lines - 1).bit_length())
        word_bits = max(1, (lw - 1).bit_length())
        tag_bits = cfg.ext_tag_bits

        m.submodules.mem = mem = self.mem
        width = 32 * lw
        # The bus ports, whichever the storage: rp (sync read, en) and wp (byte enables).
        rp = _Port(line_idx_bits, width, 1)
        wp = _Port(line_idx_bits, width, width // 8)
        if isinstance(mem, Memory):
            mwp = mem.write_port(granularity=8)
            mrp = mem.read_port()
            bd_wp = mem.write_port()
            bd_rp = mem.read_port()
            m.d.comb += [
                mrp.addr.eq(rp.addr), mrp.en.eq(rp.en), rp.data.eq(mrp.data),
                mwp.addr.eq(wp.addr), mwp.en.eq(wp.en), mwp.data.eq(wp.data),
                bd_wp.addr.eq(self.bd.addr), bd_wp.data.eq(self.bd.wdata),
                bd_wp.en.eq(self.bd.we),
                bd_rp.addr.eq(self.bd.addr), self.bd.rdata.eq(bd_rp.data),
            ]
        else:
            m.d.comb += [
                mem.rd_addr.eq(rp.addr), mem.rd_en.eq(rp.en), rp.data.eq(mem.rd_data),
                mem.wr_addr.eq(wp.addr), mem.wr_be.eq(wp.en), mem.wr_data.eq(wp.data),
                mem.bd_addr.eq(self.bd.addr), mem.bd_we.eq(self.bd.we),
                mem.bd_wdata.eq(self.bd.wdata), self.bd.rdata.eq(mem.bd_rdata),
            ]

        # Free-running time for response due dates (modular comparison).
        now = Signal(16)
        m.d.sync += now.eq(now + 1)

        # Timing registers, reloaded through the timing port.
        t_latency = Signal(LATENCY_BITS, init=self.latency)
        t_cpl = Signal(CPL_BITS, init=self.cycles_per_line)
        t_limit = Signal(range(self.queue_depth + 1), init=self.max_inflight)
        with m.If(self.timing.we):
            m.d.sync += [t_latency.eq(self.timing.latency), t_cpl.eq(self.timing.cycles_per_line),
                         t_limit.eq(self.timing.max_inflight)]

        # Response queue: (line, tag, due time); an entry for every request in flight.
        depth = self.queue_depth
        entry = data.StructLayout({
            "rdata": unsigned(32 * lw), "tag": unsigned(tag_bits), "due": unsigned(16)})
        m.submodules.rq = rq = SyncFIFO(width=entry.size, depth=depth)

        req = self.bus.req
        # Stage 1: the request accepted in an earlier cycle, with its read data valid. The read
        # port only reads on acceptance, so its data holds while an atom.fadd waits on the FPU.
        s1_valid = Signal()
        s1_kind = Signal(MemKind)
        s1_tag = Signal(tag_bits)
        s1_line = Signal(line_idx_bits)
        s1_word = Signal(word_bits)
        s1_op = Signal(AtomOp)
        s1_b = Signal(32)
        s1_c = Signal(32)
        s1_due = Signal(16)

        s1_atomic = Signal()
        s1_hold = Signal()  # an atom.fadd whose sum is not out of the FPU yet
        m.d.comb += s1_atomic.eq(s1_valid & (s1_kind == MemKind.ATOMIC))
        space = Signal()
        m.d.comb += space.eq(rq.level + s1_valid < t_limit)
        # One access at a time through stage 1 for atomics: the next request could read the
        # line that the atomic writes at the end of stage 1.
        m.d.comb += req.ready.eq(space & ~s1_atomic)
        fire = Signal()
        m.d.comb += fire.eq(req.valid & req.ready)

        # The data channel: `busy` cycles until it can start the next transfer. A request
        # accepted now starts in `busy` cycles and occupies it for t_cpl cycles.
        busy = Signal(16)
        with m.If(fire):
            m.d.sync += busy.eq(busy + t_cpl - 1)
        with m.Elif(busy != 0):
            m.d.sync += busy.eq(busy - 1)

        req_line = Signal(line_idx_bits)
        m.d.comb += [
            req_line.eq(req.payload.addr[line_shift:]),
            rp.addr.eq(req_line),
            rp.en.eq(fire),
        ]
        with m.If(~s1_hold):
            m.d.sync += [
                s1_valid.eq(fire),
                s1_kind.eq(req.payload.kind),
                s1_tag.eq(req.payload.tag),
                s1_line.eq(req_line),
                s1_word.eq(req.payload.addr[2:line_shift] if lw > 1 else 0),
                s1_op.eq(req.payload.atom_op),
                s1_b.eq(req.payload.atom_b),
                s1_c.eq(req.payload.atom_c),
                s1_due.eq(now + busy + t_latency),
            ]

        # Atomic read-modify-write on the word read in stage 1.
        old = Signal(32)
        words = [rp.data[32 * i:32 * (i + 1)] for i in range(lw)]
        with m.Switch(s1_word):
            for i in range(lw):
                with m.Case(i):
                    m.d.comb += old.eq(words[i])
        fadd_result = Signal(32)
        if self._fpu is not None:
            fpu, fadd_op, fpu_latency = self._fpu
            m.submodules.fpu = fpu
            wait = Signal(range(fpu_latency + 1))
            is_fadd = Signal()
            m.d.comb += [
                is_fadd.eq(s1_atomic & (s1_op == AtomOp.FADD)),
                s1_hold.eq(is_fadd & (wait != fpu_latency)),
                fpu.en.eq(is_fadd),
                fpu.op.eq(fadd_op),
                fpu.a.eq(old),
                fpu.b.eq(s1_b),
                fadd_result.eq(fpu.result),
            ]
            with m.If(s1_hold):
                m.d.sync += wait.eq(wait + 1)
            with m.Else():
                m.d.sync += wait.eq(0)
        else:
            m.d.comb += fadd_result.eq(old)
        new = atomic_result(m, s1_op, old, s1_b, s1_c, fadd_result)

        # The one bus write port: a WRITE at accept time, or the atomic's write at the end of
        # stage 1 (no request is accepted meanwhile, see req.ready).
        s1_done = Signal()
        m.d.comb += s1_done.eq(s1_valid & ~s1_hold)
        with m.If(s1_atomic):
            m.d.comb += [
                wp.addr.eq(s1_line),
                wp.data.eq(Cat(*([new] * lw))),
                wp.en.eq(Mux(s1_done, Const(0xF, 4) << Cat(Const(0, 2), s1_word), 0)),
            ]
        with m.Else():
            m.d.comb += [
                wp.addr.eq(req_line),
                wp.data.eq(req.payload.wdata.as_value()),
                wp.en.eq(Mux(fire & (req.payload.kind == MemKind.WRITE), req.payload.be, 0)),
            ]

        # Queue the answer when stage 1 completes.
        w_entry = Signal(entry)
        m.d.comb += [
            w_entry.tag.eq(s1_tag),
            w_entry.due.eq(s1_due),
            rq.w_data.eq(w_entry.as_value()),
            rq.w_en.eq(s1_done),
        ]
        with m.Switch(s1_kind):
            with m.Case(MemKind.READ):
                m.d.comb += w_entry.rdata.eq(rp.data)
            with m.Case(MemKind.ATOMIC):
                m.d.comb += w_entry.rdata.eq(old)

        # Release the head when it is due.
        head = Signal(entry)
        m.d.comb += head.eq(rq.r_data)
        late = Signal(16)
        due = Signal()
        m.d.comb += [late.eq(now - head.due), due.eq(~late[15])]  # now >= due, modulo 2**16
        resp = self.bus.resp
        m.d.comb += [
            resp.valid.eq(rq.r_rdy & due),
            resp.payload.rdata.eq(head.rdata),
            resp.payload.tag.eq(head.tag),
            rq.r_en.eq(resp.valid & resp.ready),
        ]
        return m
