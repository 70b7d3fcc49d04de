"""Per-warp scoreboard: one pending-write bit per register and per predicate.

``is`` sets the bit of an instruction's destination when it issues; the bit clears when the
value is written back (the ``wb`` stage, or the late-writeback port that returns global loads
and SFU results). An instruction issues only when none of the registers and predicates it
reads or writes is pending, which removes RAW and WAW hazards without forwarding.

``pending`` already excludes the bits cleared in the current cycle, and the register file's
read ports are transparent to its write port, so a consumer may issue in the same cycle its
producer writes back.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import NUM_PREDS

from .params import require_positive


class Scoreboard(wiring.Component):
    """Pending-write bits of ``warps`` warps: bits ``0..regs-1`` are registers, bits
    ``regs..regs+7`` predicates.

    Parameters
    ----------
    warps:
        Warp slots.
    regs:
        Registers per thread.
    clear_ports:
        Number of independent clear ports (write-back paths).
    """

    def __init__(self, warps: int, regs: int = 32, clear_ports: int = 2):
        require_positive(warps=warps)
        self.warps, self.regs, self.clear_ports = warps, regs, clear_ports
        self.width = regs + NUM_PREDS
        wb = max(1, (warps - 1).bit_length())
        port = data.StructLayout({"en": 1, "warp": wb, "idx": 5, "pred": 1})
        # group: the four registers idx..idx+3 (an mma's destination group, idx aligned)
        set_port = data.StructLayout({"en": 1, "warp": wb, "idx": 5, "pred": 1, "group": 1})
        super().__init__({
            "reset": In(1),
            "reset_warps": In(warps),
            "set": In(set_port),
            "clear": In(data.ArrayLayout(port, clear_ports)),
            "pending": Out(data.ArrayLayout(self.width, warps)),
        })

    def bit(self, m: Module, port) -> Signal:
        """One-hot bit of a port's register or predicate, or zero when not enabled."""
        one = Signal(self.width)
        # shifts of a one-bit value keep the result within a machine word in simulation
        with m.If(port.en):
            with m.If(port.pred):
                m.d.comb += one.eq(Cat(Const(0, self.regs), 1 << port.idx[:3]))
            with m.Elif(getattr(port, "group", 0)):
                m.d.comb += one.eq(0xF << port.idx)
            with m.Else():
                m.d.comb += one.eq(1 << port.idx)
        return one

    def elaborate(self, platform) -> Module:
        m = Module()
        # The set of an issue is registered and ORed in the next cycle, so the issue stage's
        # choice ends at a few flip-flops rather than at every warp's pending bits; what
        # ``pending`` shows each cycle is the same. A reset in the set's cycle drops it.
        state = [Signal(self.width, name=f"pending_w{w}") for w in range(self.warps)]
        set_q = Signal.like(self.set, name="set_q")
        m.d.sync += [set_q.eq(self.set),
                     set_q.en.eq(self.set.en & ~self.reset
                                 & ~self.reset_warps.bit_select(self.set.warp, 1))]
        set_bit = self.bit(m, set_q)
        clr_bits = [self.bit(m, self.clear[i]) for i in range(self.clear_ports)]
        for w in range(self.warps):
            clr = Signal(self.width, name=f"clr_w{w}")
            terms = 0
            for i, b in enumerate(clr_bits):
                terms = terms | (b & (self.clear[i].warp == w).replicate(self.width))
            m.d.comb += clr.eq(terms)
            now = Signal(self.width, name=f"now_w{w}")
            held = state[w] | Mux(set_q.warp == w, set_bit, 0)
            m.d.comb += [now.eq(held & ~clr), self.pending[w].eq(now)]
            with m.If(self.reset | self.reset_warps[w]):
                m.d.sync += state[w].eq(0)
            with m.Else():
                m.d.sync += state[w].eq(now)
        return m
