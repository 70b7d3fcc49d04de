"""Vector register file: one block RAM per lane, ``warps * regs`` words deep.

Stage ``is`` presents the three read addresses (rs1, rs2, and rs3 or rd) of each instruction it
may issue (``rcand``: every warp's buffered head) and, last, which of them it issues
(``rsel``), or, known early in the cycle, an address that goes before them all (``rforce``:
the issue stage's skid register, the matrix unit's reads); the synchronous read data is there
in ``rr``. The three read ports are what an FPGA build replicates into three RAM copies sharing
the write port; they are transparent to the write port, so a value written back in the cycle
its consumer issues is read by it. ``ren`` low holds the read data (the pipeline is stalled
with the instruction in ``rr``).

There is one write port, shared by ``wb`` and the late write-back of global loads and the SFU;
each lane has its own write enable (guarded-off lanes keep their value). The write is
registered: it reaches the RAMs at the next edge, so the choice among the writers upstream and
the RAMs' write enables are in different cycles. A read in the cycle the write is presented
takes the written lanes from that register (the bypass) and the others from the RAM, as the
RAMs' transparency did when they wrote at once; to its users the port behaves as before.

Every register of a new block reads as zero. Rather than writing zeros to all
``warps * regs`` entries when a block starts (a cycle per entry), ``clear`` (or
``clear_warps``, for the warps of one block) drops one
*written* bit per entry in a single cycle: an entry whose bit is low reads as zero, and the
first write to it stores zeros in the lanes that do not write, so the bit can stand for every
lane.
"""

from amaranth import Array, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out


class RegFile(wiring.Component):
    """Parameters
    ----------
    warps, lanes, regs:
        Core shape. ``regs`` must be a power of two.
    candidates:
        Read-address candidates (``rcand``), of which ``rsel`` chooses the one read unless
        ``rforce`` reads ``rforce_addr``.
    """

    READ_PORTS = 3

    def __init__(self, warps: int, lanes: int, regs: int = 32, candidates: int = 1):
        if regs & (regs - 1):
            raise ValueError(f"regs must be a power of two, not {regs}")
        if candidates < 1:
            raise ValueError(f"candidates must be at least 1, not {candidates}")
        self.warps, self.lanes, self.regs = warps, lanes, regs
        self.candidates = candidates
        self.addr_bits = max(1, (warps * regs - 1).bit_length())
        vec = data.ArrayLayout(32, lanes)
        ports = data.ArrayLayout(self.addr_bits, self.READ_PORTS)
        super().__init__({
            "ren": In(1),
            "rcand": In(data.ArrayLayout(ports, candidates)),
            "rsel": In(range(max(2, candidates))),
            "rforce": In(1),
            "rforce_addr": In(ports),
            "rdata": Out(data.ArrayLayout(vec, self.READ_PORTS)),
            "we": In(lanes),
            "waddr": In(self.addr_bits),
            "wdata": In(vec),
            "clear": In(1),
            "clear_warps": In(warps),
        })

    def addr(self, warp, reg):
        """Word address of register ``reg`` of ``warp``."""
        return warp * self.regs + reg

    def elaborate(self, platform) -> Module:
        m = Module()
        entries = self.warps * self.regs
        # one word of written bits per warp (rather than one warps * regs-bit vector), so a
        # simulator keeps each in a native machine word instead of shifting a wide vector
        rb = (self.regs - 1).bit_length()
        written = Array(Signal(self.regs, name=f"written_w{w}") for w in range(self.warps))

        def is_written(addr):
            return written[addr[rb:]].bit_select(addr[:rb], 1)

        # The write as presented (its written bits are set and tested at the next edge, as
        # the RAMs take it): cancelled by a clear of its warp in the same cycle, which wins.
        warp_of = self.waddr[rb:]
        cleared = self.clear | Array(self.clear_warps)[warp_of]
        wq_we = Signal(self.lanes)
        wq_addr = Signal.like(self.waddr)
        wq_data = Signal.like(self.wdata)
        m.d.sync += [wq_we.eq(Mux(cleared, 0, self.we)), wq_addr.eq(self.waddr),
                     wq_data.eq(self.wdata)]
        writing = wq_we != 0
        # this write is the entry's first since clear: looked up as the write is presented
        # (``holds`` below: the written bits as the edge that registers it leaves them) and
        # registered beside it, so that the RAMs' write enables start at flip-flops rather
        # than at a lookup of one bit of ``warps * regs``
        first = Signal()
        for w in range(self.warps):
            with m.If(self.clear | self.clear_warps[w]):
                m.d.sync += written[w].eq(0)
            with m.Elif(writing & (wq_addr[rb:] == w)):
                m.d.sync += written[w].eq(written[w] | (1 << wq_addr[:rb]))
        # The read addresses: the chosen candidate's. ``rsel`` is late in its cycle (the issue
        # stage's pick) and ``rforce`` early, so the forced address is folded into every
        # candidate first (``cands``) and ``rsel`` is the last choice, through a Switch so
        # that each candidate stays its own signal.
        ports = data.ArrayLayout(self.addr_bits, self.READ_PORTS)
        cands = [Signal(ports, name=f"rcand{c}_or_forced") for c in range(self.candidates)]
        m.d.comb += [cands[c].eq(Mux(self.rforce, self.rforce_addr, self.rcand[c]))
                     for c in range(self.candidates)]

        def by_rsel(out: Value, values: list) -> None:
            """``out`` := ``values[rsel]`` (the last one for any ``rsel`` past it)."""
            with m.Switch(self.rsel):
                for c in range(len(values) - 1):
                    with m.Case(c):
                        m.d.comb += out.eq(values[c])
                with m.Default():
                    m.d.comb += out.eq(values[-1])

        raddr = Signal(ports, name="raddr")
        by_rsel(raddr, cands)
        # Whether each read port's entry holds data, as the RAMs' read data has it: the
        # written bits as this edge leaves them (with the write presented now, less the clears
        # of this cycle), looked up for every candidate beside the pick and chosen by ``rsel``
        # into a register (kept while ``ren`` is low, as the data is), so that neither the
        # lookup (one bit of ``warps * regs``) nor the choice follows the edge in ``rr``. A
        # read of the entry whose write is presented in its cycle finds the bit as it was
        # before that write: clear, the lanes that do not write read zero (a first write
        # zeroes them); set, the RAM's old value.
        fresh = Signal()  # the last cycle read
        m.d.sync += fresh.eq(self.ren)
        clear_of = Array(self.clear_warps)

        def holds(a) -> Value:
            """The entry at ``a`` holds data after this edge."""
            w = a[rb:]
            return (~self.clear & ~clear_of[w]
                    & (is_written(a) | (writing & (wq_addr == a))))

        m.d.sync += first.eq(~holds(self.waddr))
        valid = [Signal(name=f"rvalid{p}") for p in range(self.READ_PORTS)]
        bypass = [Signal(self.lanes, name=f"bypass{p}") for p in range(self.READ_PORTS)]
        for p in range(self.READ_PORTS):
            # kept: the lookup is made per candidate, not after the choice of the address
            # (equal logic, which synthesis would otherwise share behind the pick)
            cand = [Signal(name=f"rvalid{p}_c{c}", attrs={"keep": 1})
                    for c in range(self.candidates)]
            m.d.comb += [cand[c].eq(holds(cands[c][p])) for c in range(self.candidates)]
            chosen = Signal(name=f"rvalid{p}_next")
            by_rsel(chosen, cand)
            with m.If(self.ren):
                m.d.sync += valid[p].eq(chosen)
            # The bypass compares the registered read address with the write register's
            # address after the edge, not the address as the issue stage chooses it.
            addr_q = Signal.like(raddr[p], name=f"raddr{p}_q")
            bypass_held = Signal(self.lanes, name=f"bypass{p}_held")
            with m.If(self.ren):
                m.d.sync += addr_q.eq(raddr[p])
            m.d.comb += bypass[p].eq(Mux(fresh, Mux(addr_q == wq_addr, wq_we, 0), bypass_held))
            m.d.sync += bypass_held.eq(bypass[p])
        # the bypassed lanes' data: the write register's in the cycle after the read, kept
        # while the read data is held (the write register moves on)
        bdata, bdata_held = Signal.like(self.wdata), Signal.like(self.wdata)
        m.d.comb += bdata.eq(Mux(fresh, wq_data, bdata_held))
        m.d.sync += bdata_held.eq(bdata)
        for lane in range(self.lanes):
            mem = Memory(shape=32, depth=entries, init=[])
            m.submodules[f"lane{lane}"] = mem
            wp = mem.write_port()
            m.d.comb += [wp.addr.eq(wq_addr),
                         wp.data.eq(Mux(wq_we[lane], wq_data[lane], 0)),
                         wp.en.eq(Mux(first & writing, 1, wq_we[lane]))]
            for p in range(self.READ_PORTS):
                rp = mem.read_port(domain="sync", transparent_for=(wp,))
                m.d.comb += [rp.addr.eq(raddr[p]), rp.en.eq(self.ren),
                             self.rdata[p][lane].eq(
                                 Mux(bypass[p][lane], bdata[lane],
                                     Mux(valid[p], rp.data, 0)))]
        return m
