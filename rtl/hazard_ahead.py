"""Each warp's head hazard worked out a cycle ahead, into a register.

The issue stage's choice (rtl/issue.py) starts at whether each warp's head needs a pending
scoreboard bit: an AND of the head's ``needs`` with the warp's pending bits and an OR over
40 bits, after the instruction buffer's read. Done in the cycle of the choice, that is half
the way from the flip-flops to the register file's RAMs that the choice addresses. Every
input of it is known a cycle earlier, so it is done then and registered, and the cycle counts
stay those of working it out in the cycle of the choice:

- the head of the next cycle is the head of this one, or, if the head issues now, the entry
  after it; a buffer empty now, or holding only the issuing head, gets its next head from
  the push of this cycle;
- the pending bits of the next cycle are ``(pending | set) & ~clearing`` (rtl/scoreboard.py),
  and only the issuing warp has a set, the bits of its head (``dests``).

Every case is worked out beside the others, and the pick of this cycle only chooses among
them: it is one multiplexer from the register. The clears of the next cycle are late too (a
write-back that a stall turns into a bubble, the late write-back's choice among its
sources), so they also only choose: for each case, whether the head needs a pending bit
other than the two the clear ports name, and whether it needs either of those, are worked
out from the ports' indices alone, and whether each port clears this warp decides at the end.
"""

from amaranth import Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import NUM_PREDS

from .issue import clear_port
from .params import require_positive
from .scoreboard import clear_bit


class HazardAhead(wiring.Component):
    """Parameters
    ----------
    warps:
        Warp slots.
    depth:
        Instruction-buffer entries per warp.
    regs:
        Registers per thread (the scoreboard's bits are ``regs`` registers, then the
        predicates).

    In every cycle, per warp ``w``: ``count[w]`` entries in its buffer, whose head and next
    entry need ``head_needs[w]`` and ``next_needs[w]``; the bits it has pending
    (``pending[w]``); the bits its head sets if it issues (``dests[w]``). ``clear``: the
    scoreboard's two clear ports of this cycle (its ``clear_next``), whose bits are free
    from the next cycle. ``pop`` (of ``pop_warp``): the head issues;
    ``push`` (of ``push_warp``, an entry that needs ``push_needs``): an entry is appended.

    ``hazard[w]`` (registered): the head of warp ``w`` in this cycle needs a pending bit,
    what ``(head.needs & pending) != 0`` says in the same cycle. Meaningless while the warp's
    buffer is empty (after a reset too, which empties it).
    """

    def __init__(self, warps: int, depth: int, regs: int = 32):
        require_positive(warps=warps, depth=depth, regs=regs)
        self.warps, self.depth, self.regs = warps, depth, regs
        wb = max(1, (warps - 1).bit_length())
        bits = data.ArrayLayout(regs + NUM_PREDS, warps)
        super().__init__({
            "count": In(range(depth + 1)).array(warps),
            "head_needs": In(bits),
            "next_needs": In(bits),
            "pending": In(bits),
            "clear": In(data.ArrayLayout(clear_port(warps), 2)),
            "dests": In(bits),
            "pop": In(1),
            "pop_warp": In(wb),
            "push": In(1),
            "push_warp": In(wb),
            "push_needs": In(regs + NUM_PREDS),
            "hazard": Out(warps),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        b0, b1 = (clear_bit(m, port, self.regs) for port in self.clear)
        same = Signal()  # both ports name one bit
        m.d.comb += same.eq(b0 == b1)
        for w in range(self.warps):
            e0, e1 = (port.en & (port.warp == w) for port in self.clear)

            def hazard(name: str, needs: Value, base: Value, w=w, e0=e0, e1=e1) -> Value:
                """``(needs & base & ~clearing) != 0``, the clears' enables applied last:
                a bit other than theirs, or a bit of a port that does not clear it."""
                z = Signal.like(needs, name=f"w{w}_{name}_z")
                m.d.comb += z.eq(needs & base)
                other, on0, on1 = (Signal(name=f"w{w}_{name}_{k}", attrs={"keep": 1})
                                   for k in ("other", "on0", "on1"))
                m.d.comb += [other.eq((z & ~b0 & ~b1) != 0), on0.eq((z & b0) != 0),
                             on1.eq((z & b1) != 0)]
                return other | (on0 & ~e0 & ~(same & e1)) | (on1 & ~e1 & ~(same & e0))

            pending, grown = self.pending[w], self.pending[w] | self.dests[w]
            stays = hazard("stays", self.head_needs[w], pending)  # the head does not issue
            filled = hazard("filled", self.push_needs, pending)  # empty: the push is next
            after = hazard("after", self.next_needs[w], grown)  # it issues, the next follows
            refilled = hazard("refilled", self.push_needs, grown)  # the last: the push is next
            count = self.count[w]
            popped = self.pop & (self.pop_warp == w)
            m.d.sync += self.hazard[w].eq(Mux(popped, Mux(count >= 2, after, refilled),
                                              Mux(count >= 1, stays, filled)))
        return m
