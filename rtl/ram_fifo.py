"""A first-in first-out queue kept in a memory (block RAM, or distributed RAM on an FPGA).

``amaranth.lib.fifo.SyncFIFO`` reads its storage asynchronously, which an FPGA can only
build from distributed RAM: a cache's queue of requests to memory, a line wide, was 128 of
the ECP5's 16x4 RAMs (768 LUT sites) in each L2 bank of ``tiny``. This queue has SyncFIFO's
ports and timing (an entry written in one cycle can be read in the next; ``r_data`` is the
head while ``r_rdy``) with its storage behind a registered read port: the port is addressed
with the *next* cycle's head (the head after this cycle's pop), so the head is out of the
memory as it becomes the head. The one case the memory cannot answer is an entry written in
the cycle before it is read, into a queue that was empty after that cycle's pop: that entry
comes from a register of the written data instead (one register and one multiplexer of the
width, which is what a transparent read port would cost too). In distributed RAM
(``ram_style="distributed"``) the head is a register of its own instead, loaded as the head
is popped from an asynchronous read of the entry after it, so the pop is the last choice
before a register rather than the address of a read. ``ram_style="async"`` reads distributed
RAM asynchronously at the head (``SyncFIFO``'s form, for a wide, shallow queue where a
register of the width costs more than it saves).

The memory is written every cycle the queue is not full, at the tail: the push only moves
the tail, so the write enable is ``w_rdy``, a flip-flop, and not the writer's decision
(which would then have to reach every RAM cell of the width, spread over the device, before
the level's update). While the queue is not full the slot at the tail holds no entry, so
what lands there without a push is never read. ``r_rdy`` and ``w_rdy`` are flip-flops too
(their next values chosen by the push and the pop among compares on the level), so a
reader's pop, which depends on them, starts at registers: the L2's order of responses
(rtl/l2_cache.py) is such a loop, from the head through the answering bank's
retirement back to the pop.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["RamFifo"]


class RamFifo(wiring.Component):
    """A queue of ``depth`` entries of ``width`` bits in a memory.

    ``ram_style`` is the memory's hint to synthesis: ``"block"`` (block RAM),
    ``"distributed"`` (distributed RAM and a register: a shallow, narrow queue whose head must
    come out of a register) or ``"async"`` (distributed RAM read asynchronously at the head).

    Members
    -------
    w_data: ``In(width)``; w_en: ``In(1)``; w_rdy: ``Out(1)``
        An entry is written when ``w_en`` and ``w_rdy`` (not full).
    r_data: ``Out(width)``; r_en: ``In(1)``; r_rdy: ``Out(1)``
        The head, valid while ``r_rdy`` (not empty); popped when ``r_en`` and ``r_rdy``.
    level: ``Out(range(depth + 1))``
        Entries held.
    """

    def __init__(self, *, width: int, depth: int, ram_style: str = "block"):
        if ram_style not in ("block", "distributed", "async"):
            raise ValueError(f"RamFifo: ram_style must be 'block', 'distributed' or 'async', "
                             f"not {ram_style!r}")
        if width < 1 or depth < 2:
            raise ValueError(f"RamFifo: width must be at least 1 and depth at least 2, not "
                             f"{width} and {depth}")
        self.width = width
        self.depth = depth
        self.ram_style = ram_style
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1, init=1),
            "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        depth = self.depth
        # ram_style: without the hint yosys builds a memory this shallow from distributed RAM
        # plus a register (checked on tiny's L2: no DP16KD, 500 LUT sites more than SyncFIFO);
        # "distributed" asks for that: a narrow queue whose head must come from a register
        style = "distributed" if self.ram_style == "async" else self.ram_style
        m.submodules.storage = mem = Memory(shape=unsigned(self.width), depth=depth, init=[],
                                             attrs={"ram_style": style})
        wp = mem.write_port()
        head = Signal(range(depth))
        tail = Signal(range(depth))
        push = Signal()
        pop = Signal()
        level_next = Signal(range(depth + 1))

        def after(ptr):
            return Mux(ptr == depth - 1, 0, ptr + 1)

        m.d.comb += [
            # the level one up and one down from the register, the push and the pop choosing
            # last (no carry chain after them)
            level_next.eq(Mux(push & ~pop, self.level + 1,
                              Mux(pop & ~push, self.level - 1, self.level))),
            push.eq(self.w_en & self.w_rdy), pop.eq(self.r_en & self.r_rdy),
            # written whenever there is room (the module docstring says why)
            wp.addr.eq(tail), wp.data.eq(self.w_data), wp.en.eq(self.w_rdy),
        ]
        with m.If(push):
            m.d.sync += tail.eq(after(tail))
        with m.If(pop):
            m.d.sync += head.eq(after(head))
        if self.ram_style == "block":
            self._block_head(m, mem, head, tail, push, pop, after)
        elif self.ram_style == "distributed":
            self._distributed_head(m, mem, head, tail, push, pop, after)
        else:
            rp = mem.read_port(domain="comb")
            m.d.comb += [rp.addr.eq(head), self.r_data.eq(rp.data)]
        # the flags' next values with the compares on the level register and this cycle's
        # push and pop choosing last (they come late: a bank's acceptance, a reader's pop)
        m.d.sync += [self.level.eq(level_next),
                     self.r_rdy.eq(Mux(push, 1, Mux(pop, self.level != 1, self.level != 0))),
                     self.w_rdy.eq(Mux(pop, 1, Mux(push, self.level != depth - 1,
                                                   self.level != depth)))]
        return m

    def _block_head(self, m, mem, head, tail, push, pop, after) -> None:
        """The head out of a block RAM's registered read, addressed with the next cycle's
        head; an entry written in the cycle before it is read comes from a register."""
        rp = mem.read_port()
        next_head = Signal.like(head)
        m.d.comb += [next_head.eq(Mux(pop, after(head), head)), rp.addr.eq(next_head)]
        # the entry written now, if it is the next cycle's head (the memory gives the old word)
        bypass = Signal()
        written = Signal(self.width)
        m.d.sync += [bypass.eq(push & (next_head == tail)), written.eq(self.w_data)]
        m.d.comb += self.r_data.eq(Mux(bypass, written, rp.data))

    def _distributed_head(self, m, mem, head, tail, push, pop, after) -> None:
        """The head in a register of its own, loaded from an asynchronous read of the entry
        after the head (addressed from flip-flops, so read early in the cycle) as the head is
        popped, or from the written data as it lands where the next head is: the pop and the
        push choose last, one multiplexer before the register (the L2's response order is a
        loop through the pop: rtl/l2_cache.py)."""
        rp = mem.read_port(domain="comb")
        head1 = Signal.like(head)
        m.d.comb += [head1.eq(after(head)), rp.addr.eq(head1)]
        lands_next = Signal()  # a push now writes the entry after the head (one held)
        m.d.comb += lands_next.eq(tail == head1)
        with m.If(pop):
            m.d.sync += self.r_data.eq(Mux(push & lands_next, self.w_data, rp.data))
        with m.Elif(push & ~self.r_rdy):  # into an empty queue: it is the head
            m.d.sync += self.r_data.eq(self.w_data)
