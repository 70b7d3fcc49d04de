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
them: it is one multiplexer from the register. The clears of the next cycle depend on whether
the write-back that ``mem_wb`` loads now comes (``take0``: its ``en``, which waits on the
LSU's fault and deferral, and not the LSU's hold, both late in the cycle): both outcomes are
registered and ``take0``, registered too, chooses between them after the edge.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from simtgpu.isa import NUM_PREDS

from .params import require_positive


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
    (``pending[w]``) and those freed from the next cycle (``clearing[w]`` when ``take0`` is
    high, else ``clearing_held[w]``); the bits its head sets if it issues
    (``dests[w]``). ``pop`` (of ``pop_warp``): the head issues;
    ``push`` (of ``push_warp``, an entry that needs ``push_needs``): an entry is appended.

    ``hazard[w]`` (registered, and chosen by the registered ``take0``): the head of warp ``w``
    in this cycle needs a pending bit,
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
            "clearing": In(bits),
            "clearing_held": In(bits),
            "take0": In(1),
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
        take0_q = Signal()
        m.d.sync += take0_q.eq(self.take0)
        for w in range(self.warps):
            count = self.count[w]
            popped = self.pop & (self.pop_warp == w)
            outcome = []
            for kind, clearing in (("go", self.clearing[w]), ("held", self.clearing_held[w])):
                kept = Signal.like(self.pending[w], name=f"w{w}_kept_{kind}")  # not popped
                grown = Signal.like(self.pending[w], name=f"w{w}_grown_{kind}")  # popped
                m.d.comb += [kept.eq(self.pending[w] & ~clearing),
                             grown.eq((self.pending[w] | self.dests[w]) & ~clearing)]
                stays = (self.head_needs[w] & kept) != 0  # the head does not issue
                filled = (self.push_needs & kept) != 0  # the buffer is empty: the push is next
                after = (self.next_needs[w] & grown) != 0  # the head issues, the next follows
                refilled = (self.push_needs & grown) != 0  # it was the last: the push is next
                haz = Signal(name=f"w{w}_hazard_{kind}")
                m.d.sync += haz.eq(Mux(popped, Mux(count >= 2, after, refilled),
                                       Mux(count >= 1, stays, filled)))
                outcome.append(haz)
            m.d.comb += self.hazard[w].eq(Mux(take0_q, outcome[0], outcome[1]))
        return m
