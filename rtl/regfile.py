"""Vector register file: one block RAM per lane, ``warps * regs`` words deep.

Stage ``is`` presents the three read addresses (rs1, rs2, and rs3 or rd) of the instruction it
issues; the synchronous read data is there in ``rr``. The three read ports are what an FPGA
build replicates into three RAM copies sharing the write port; they are transparent to the
write port, so a value written back in the cycle its consumer issues is read by it. ``ren``
low holds the read data (the pipeline is stalled with the instruction in ``rr``).

There is one write port, shared by ``wb`` and the late write-back of global loads; each lane
has its own write enable (guarded-off lanes keep their value). The file is not reset: the core
writes zeros to every entry when a block starts.
"""

from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out


class RegFile(wiring.Component):
    """Parameters
    ----------
    warps, lanes, regs:
        Core shape. ``regs`` must be a power of two.
    """

    READ_PORTS = 3

    def __init__(self, warps: int, lanes: int, regs: int = 32):
        if regs & (regs - 1):
            raise ValueError(f"regs must be a power of two, not {regs}")
        self.warps, self.lanes, self.regs = warps, lanes, regs
        self.addr_bits = max(1, (warps * regs - 1).bit_length())
        vec = data.ArrayLayout(32, lanes)
        super().__init__({
            "ren": In(1),
            "raddr": In(data.ArrayLayout(self.addr_bits, self.READ_PORTS)),
            "rdata": Out(data.ArrayLayout(vec, self.READ_PORTS)),
            "we": In(lanes),
            "waddr": In(self.addr_bits),
            "wdata": In(vec),
        })

    def addr(self, warp, reg):
        """Word address of register ``reg`` of ``warp``."""
        return warp * self.regs + reg

    def elaborate(self, platform) -> Module:
        m = Module()
        for lane in range(self.lanes):
            mem = Memory(shape=32, depth=self.warps * self.regs, init=[])
            m.submodules[f"lane{lane}"] = mem
            wp = mem.write_port()
            m.d.comb += [wp.addr.eq(self.waddr), wp.data.eq(self.wdata[lane]),
                         wp.en.eq(self.we[lane])]
            for p in range(self.READ_PORTS):
                rp = mem.read_port(domain="sync", transparent_for=(wp,))
                m.d.comb += [rp.addr.eq(self.raddr[p]), rp.en.eq(self.ren),
                             self.rdata[p][lane].eq(rp.data)]
        return m
