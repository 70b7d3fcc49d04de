"""Per-warp scoreboard: one pending-write bit per register and per predicate.

``is`` sets the bits of an instruction's destination when it issues; the bit clears when the
value is written back (the ``wb`` stage, or the late-writeback port that returns global loads
and SFU results). An instruction issues only when none of the registers and predicates it
reads or writes is pending, which removes RAW and WAW hazards without forwarding.

``pending`` already excludes the bits cleared in the current cycle, and the register file's
read ports are transparent to its write port, so a consumer may issue in the same cycle its
producer writes back. The clears are presented a cycle ahead (``clear_next``: the write-backs
of the next cycle, which the stage before them knows), so that what reaches the issue stage's
choice each cycle is one gate past flip-flops: the set and the clears come as per-warp masks
out of registers. The set comes in as per-warp masks too (``IssueSelect.sets``): each warp's
head knows its destination bits before the pick, so the pick only gates them rather than
being followed by the decoding of a picked register index.
"""

import operator
from functools import reduce

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

    ``set[w]`` (the bits warp ``w``'s issue sets this cycle, zero when it does not issue) shows
    in ``pending`` from the next cycle; ``clear_next[i]`` is port
    ``i``'s write-back of the next cycle: its bit is free in ``pending`` in that cycle (and
    after). ``reset`` and ``reset_warps`` empty the warps' bits from the next cycle; a set in
    their cycle is dropped.

    ``hold``: port 0's write-back does not come after all (its instruction stays in ``mem``,
    whose hold is known late in the cycle): its clear is withheld.

    ``clearing[w]``: the bits of warp ``w`` that ``clear_next`` frees in the next cycle if
    port 0's write-back comes (its bit whatever its ``en``, which is late: it waits on the
    LSU's fault and deferral), ``clearing_held[w]`` those if it does not (every port but 0),
    so that ``pending`` in the next cycle is ``(pending | set) & ~clearing`` or
    ``~clearing_held`` (no reset), what :class:`~simtgpu.rtl.hazard_ahead.HazardAhead` works
    out a cycle ahead, both ways, so that port 0's ``en`` and ``hold`` choose after its
    register.
    """

    def __init__(self, warps: int, regs: int = 32, clear_ports: int = 2):
        require_positive(warps=warps)
        self.warps, self.regs, self.clear_ports = warps, regs, clear_ports
        self.width = regs + NUM_PREDS
        wb = max(1, (warps - 1).bit_length())
        port = data.StructLayout({"en": 1, "warp": wb, "idx": 5, "pred": 1})
        super().__init__({
            "reset": In(1),
            "reset_warps": In(warps),
            "set": In(data.ArrayLayout(self.width, warps)),
            "clear_next": In(data.ArrayLayout(port, clear_ports)),
            "hold": In(1),
            "pending": Out(data.ArrayLayout(self.width, warps)),
            "clearing": Out(data.ArrayLayout(self.width, warps)),
            "clearing_held": Out(data.ArrayLayout(self.width, warps)),
        })

    def bit(self, m: Module, port) -> Signal:
        """One-hot bit of a clear port's register or predicate, whatever its ``en``."""
        one = Signal(self.width)
        # shifts of a one-bit value keep the result within a machine word in simulation
        with m.If(port.pred):
            m.d.comb += one.eq(Cat(Const(0, self.regs), 1 << port.idx[:3]))
        with m.Else():
            m.d.comb += one.eq(1 << port.idx)
        return one

    def elaborate(self, platform) -> Module:
        m = Module()
        # The set of an issue and the clears of the next cycle are registered as per-warp
        # masks, so the issue stage's choice starts at ``(state | set) & ~clear`` of
        # flip-flops rather than at the decoding of a register index; what ``pending`` shows
        # each cycle is that of a same-cycle clear. A reset in the set's cycle drops it.
        state = [Signal(self.width, name=f"pending_w{w}") for w in range(self.warps)]
        clr_bits = [self.bit(m, self.clear_next[i]) for i in range(self.clear_ports)]
        for w in range(self.warps):
            set_q = Signal(self.width, name=f"set_w{w}")
            clr_q = Signal(self.width, name=f"clr_w{w}")
            m.d.sync += set_q.eq(Mux(self.reset | self.reset_warps[w], 0, self.set[w]))
            # each port's bit for warp ``w`` whatever its en, kept as a net: the decoding of
            # the ports' fields (flip-flops of their sources) is its own logic, and each
            # port's ``en``, late (the late write-back's choice waits on ``wb``'s valid), only
            # gates it, rather than synthesis folding the decoding in after the choice
            mine = []
            for i, (c, b) in enumerate(zip(self.clear_next, clr_bits, strict=True)):
                bits = Signal(self.width, name=f"clr{i}_w{w}", attrs={"keep": 1})
                m.d.comb += bits.eq(Mux(c.warp == w, b, 0))
                mine.append(bits)
            first, *late = self.clear_next
            own = mine[0]  # port 0's bit, whatever its en
            m.d.comb += [
                self.clearing_held[w].eq(reduce(operator.or_, [
                    Mux(c.en, b, 0) for c, b in zip(late, mine[1:], strict=True)], 0)),
                self.clearing[w].eq(own | self.clearing_held[w])]
            m.d.sync += clr_q.eq(Mux(first.en & ~self.hold, self.clearing[w],
                                     self.clearing_held[w]))
            now = Signal(self.width, name=f"now_w{w}")
            m.d.comb += [now.eq((state[w] | set_q) & ~clr_q), self.pending[w].eq(now)]
            with m.If(self.reset | self.reset_warps[w]):
                m.d.sync += state[w].eq(0)
            with m.Else():
                m.d.sync += state[w].eq(now)
        return m
