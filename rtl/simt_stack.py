"""Per-warp SIMT reconvergence stacks and the control-flow resolution of ex1.

Executes ``ssy``, ``bra``, ``sync`` and ``exit`` exactly as docs/execution-model.md defines
them, including the DIV merge rule and the repeated pop of empty entries.

Storage: one ``Memory`` of ``warps * depth`` entries ``(kind, pc, mask)``, written through on
every push and merge, plus a register copy of each warp's top entry so that push, merge and the
first pop need no memory read. After a pop the new top is read back from the memory (one extra
cycle, ``REFILL``); popping an entry whose mask has no live lane reads the next entry from
memory (``POPMEM``) when an entry under it has a live lane. Each entry keeps the OR of the masks
under it (``below``), so a pop that would empty the stack of dead entries ends in the
command's cycle: every fault and every finish is answered while the instruction is in ex1,
where the core drops it (a fault's instruction leaves no trace) and the fault record names
it. While the unit is busy (``ready`` low) ex1 holds a new control instruction.

The memory's write is registered: a push or merge reaches it at the next edge, so the
command's decisions (the stack pointer's compares, the merge test) end at flip-flops rather
than at the distributed RAM's write decoding. Only the top entry is ever written and only
entries below it are ever read, and the top a write leaves is the register copy, so no read
in the cycle after a write can want the entry that write is bringing.

A command is answered by ``done`` in the same cycle when no memory read is needed, else one or
more cycles later. ``done`` carries the warp's new ``pc``, ``active`` and ``live`` masks, or
``finished`` (the warp has no live lane and an empty stack), or a ``fault``.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, enum, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .isa_consts import FaultCause
from .params import require_positive


class StackKind(enum.Enum, shape=1):
    SYNC = 0
    DIV = 1


class SimtOp(enum.Enum, shape=2):
    SSY = 0
    BRA = 1
    SYNC = 2
    EXIT = 3


def entry_layout(lanes: int) -> data.StructLayout:
    """A stack entry; ``below``: the OR of the masks of the entries under it."""
    return data.StructLayout({"kind": StackKind, "pc": 32, "mask": lanes, "below": lanes})


class SimtStack(wiring.Component):
    """Reconvergence stacks of all warps of a core.

    Parameters
    ----------
    warps:
        Warp slots.
    lanes:
        Lanes per warp.
    depth:
        Entries per warp (pushing onto a full stack is ``STACK_OVERFLOW``).

    Command (``cmd``, accepted when ``valid & ready``): ``op``; ``warp``; ``pc`` of the
    instruction; ``target`` (ssy/bra); ``active`` and ``live`` masks of the warp; ``guard``,
    the lanes whose guard holds (``bra``: the branch condition; ``exit``: the exiting lanes
    are ``active & guard``).
    """

    def __init__(self, warps: int, lanes: int, depth: int = 16):
        require_positive(depth=depth)
        self.warps, self.lanes, self.depth = warps, lanes, depth
        wb = max(1, (warps - 1).bit_length())
        self.sp_bits = depth.bit_length()
        super().__init__({
            "reset": In(1),
            "reset_warps": In(warps),
            "valid": In(1),
            "ready": Out(1),
            "op": In(SimtOp),
            "warp": In(wb),
            "pc": In(32),
            "target": In(32),
            "active": In(lanes),
            "live": In(lanes),
            "guard": In(lanes),
            "done": Out(1),
            "done_warp": Out(wb),
            "new_pc": Out(32),
            "new_active": Out(lanes),
            "new_live": Out(lanes),
            "finished": Out(1),
            "fault": Out(1),
            "fault_cause": Out(FaultCause),
            "diverged": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        lanes, depth, warps = self.lanes, self.depth, self.warps
        layout = entry_layout(lanes)
        m.submodules.mem = mem = Memory(shape=layout, depth=warps * depth, init=[])
        wr = mem.write_port()
        rd = mem.read_port(domain="sync")
        # the write as the command decides it, registered into the memory's port (above)
        w_en, w_addr, w_data = Signal(), Signal.like(wr.addr), Signal(layout)
        m.d.sync += [wr.en.eq(w_en), wr.addr.eq(w_addr), wr.data.eq(w_data)]

        sp = [Signal(self.sp_bits, name=f"sp_w{w}") for w in range(warps)]
        top = [Signal(layout, name=f"top_w{w}") for w in range(warps)]
        # the top entry's pc less 4, kept beside it: a divergent bra merges into a DIV top
        # whose pc is its own pc + 4, and comparing this with the bra's pc needs no adder
        # in front of the compare (the stack's answer is on the core's longest path)
        top_back = [Signal(33, name=f"top_back_w{w}") for w in range(warps)]  # no wrap
        sp_cur = Signal(self.sp_bits)
        top_cur = Signal(layout)
        top_back_cur = Signal(33)
        # whether a divergent bra of the warp merges into its top entry (a DIV entry whose pc
        # is the bra's pc + 4), worked out for every warp and then chosen, so that the choice
        # of the warp's registers does not come before the 33-bit compare
        merges_cur = Signal()
        with m.Switch(self.warp):
            for w in range(warps):
                with m.Case(w):
                    m.d.comb += [sp_cur.eq(sp[w]), top_cur.eq(top[w]),
                                 top_back_cur.eq(top_back[w]),
                                 merges_cur.eq((sp[w] != 0) & (top[w].kind == StackKind.DIV)
                                               & (top_back[w] == self.pc))]

        # Busy-state registers: the warp being resolved and its live mask.
        b_warp = Signal.like(self.warp)
        b_live = Signal(lanes)
        b_sp = Signal(self.sp_bits)  # stack pointer after the pop being evaluated

        def set_sp(w, value):
            with m.Switch(w):
                for i in range(warps):
                    with m.Case(i):
                        m.d.sync += sp[i].eq(value)

        def set_top(w, value, back):
            """The top entry := ``value``, its pc less 4 := ``back``, worked out by each
            caller from what it has at hand: a subtraction after the choice among the entries
            would be on the stack's longest path."""
            with m.Switch(w):
                for i in range(warps):
                    with m.Case(i):
                        m.d.sync += [top[i].eq(value), top_back[i].eq(back)]

        def addr(w, idx):
            return w * depth + idx

        def addr_under(w, sp, n):
            """The address ``n`` entries under ``sp``; the bottom when there are none (a read
            made whether it is wanted or not stays inside the warp's entries)."""
            return addr(w, Mux(sp >= n, sp - n, 0))

        def answer(w, pc, active, live):
            m.d.comb += [self.done.eq(1), self.done_warp.eq(w), self.new_pc.eq(pc),
                         self.new_active.eq(active), self.new_live.eq(live)]

        def finish(w, live):
            m.d.comb += [self.done.eq(1), self.done_warp.eq(w), self.finished.eq(1),
                         self.new_live.eq(live)]

        def fault(w, cause):
            m.d.comb += [self.done.eq(1), self.done_warp.eq(w), self.fault.eq(1),
                         self.fault_cause.eq(cause)]

        def pop(w, entry, sp_after, bottom, live):
            """Evaluate a popped ``entry``; ``sp_after`` is the stack pointer without it,
            ``bottom`` whether that is 0 (told by each caller without a subtraction in front
            of the compare: the stack's fault is on the core's longest path)."""
            with m.If((entry.mask & live) != 0):
                answer(w, entry.pc, entry.mask & live, live)
                set_sp(w, sp_after)
                with m.If(~bottom):  # the entry below becomes the top: read it back
                    m.d.sync += [b_warp.eq(w)]
                    m.next = "REFILL"
                with m.Else():
                    m.next = "IDLE"
            with m.Elif((entry.below & live) == 0):  # (a bottom entry's ``below`` is 0)
                # no entry under it has a live lane either: the pops would empty the stack,
                # so it ends now, in the command's cycle, and a fault names the command
                # while it is still in ex1
                set_sp(w, 0)
                with m.If(live == 0):
                    finish(w, live)
                with m.Else():
                    fault(w, FaultCause.STACK_UNDERFLOW)
                m.next = "IDLE"
            with m.Else():  # empty entry, a live one under it: pop again from memory
                m.d.sync += [b_warp.eq(w), b_live.eq(live), b_sp.eq(sp_after - 1)]
                m.next = "POPMEM"

        def pop_first(w, live):
            with m.If(sp_cur == 0):
                with m.If(live == 0):
                    finish(w, live)
                with m.Else():
                    fault(w, FaultCause.STACK_UNDERFLOW)
            with m.Else():
                pop(w, top_cur, sp_cur - 1, sp_cur == 1, live)

        def push(w, entry, back):
            m.d.comb += entry.below.eq(Mux(sp_cur == 0, 0, top_cur.mask | top_cur.below))
            with m.If(sp_cur == depth):
                fault(w, FaultCause.STACK_OVERFLOW)
            with m.Else():
                m.d.comb += [w_en.eq(1), w_addr.eq(addr(w, sp_cur)), w_data.eq(entry)]
                set_sp(w, sp_cur + 1)
                set_top(w, entry, back)

        # A pop reads the entry under the one it pops (``pop``: REFILL and POPMEM take it a
        # cycle later). The read is made every cycle, at the address such a pop would read,
        # from flip-flops (the warp's stack pointer, or the one being popped from memory):
        # whether the pop happens is decided late in the cycle (the masks, the live lanes),
        # and only REFILL and POPMEM, which a pop enters, use what is read.
        m.d.comb += rd.en.eq(1)
        w = self.warp
        with m.FSM(init="IDLE"):
            with m.State("IDLE"):
                m.d.comb += [self.ready.eq(1), rd.addr.eq(addr_under(w, sp_cur, 2))]
                with m.If(self.valid & ~self.reset):
                    with m.Switch(self.op):
                        with m.Case(SimtOp.SSY):
                            entry = Signal(layout)
                            m.d.comb += [entry.kind.eq(StackKind.SYNC), entry.pc.eq(self.target),
                                         entry.mask.eq(self.active)]
                            with m.If(sp_cur != depth):
                                answer(w, self.pc + 4, self.active, self.live)
                            push(w, entry, self.target - 4)
                        with m.Case(SimtOp.BRA):
                            taken = self.active & self.guard
                            with m.If(taken == self.active):
                                answer(w, self.target, self.active, self.live)
                            with m.Elif(taken == 0):
                                answer(w, self.pc + 4, self.active, self.live)
                            with m.Else():
                                m.d.comb += self.diverged.eq(1)
                                rest = self.active & ~self.guard
                                with m.If(merges_cur):
                                    merged = Signal(layout)
                                    m.d.comb += [merged.eq(top_cur),
                                                 merged.mask.eq(top_cur.mask | rest)]
                                    m.d.comb += [w_en.eq(1), w_addr.eq(addr(w, sp_cur - 1)),
                                                 w_data.eq(merged)]
                                    set_top(w, merged, top_back_cur)
                                    answer(w, self.target, taken, self.live)
                                with m.Else():
                                    entry = Signal(layout)
                                    m.d.comb += [entry.kind.eq(StackKind.DIV),
                                                 entry.pc.eq(self.pc + 4), entry.mask.eq(rest)]
                                    with m.If(sp_cur != depth):
                                        answer(w, self.target, taken, self.live)
                                    # (pc + 4) - 4 as the 32-bit pc wraps: pc, but past the
                                    # top for the last word (whose pc + 4 is 0)
                                    push(w, entry, Cat(self.pc, self.pc[2:].all()))
                        with m.Case(SimtOp.SYNC):
                            pop_first(w, self.live)
                        with m.Case(SimtOp.EXIT):
                            gone = self.active & self.guard
                            live = Signal(lanes)
                            active = Signal(lanes)
                            m.d.comb += [live.eq(self.live & ~gone),
                                         active.eq(self.active & ~gone)]
                            with m.If(active != 0):
                                answer(w, self.pc + 4, active, live)
                            with m.Else():
                                pop_first(w, live)
            with m.State("REFILL"):
                set_top(b_warp, rd.data, rd.data.pc - 4)
                m.next = "IDLE"
            with m.State("POPMEM"):
                m.d.comb += rd.addr.eq(addr_under(b_warp, b_sp, 1))
                pop(b_warp, rd.data, b_sp, b_sp == 0, b_live)

        for i in range(warps):
            with m.If(self.reset | self.reset_warps[i]):
                m.d.sync += sp[i].eq(0)
        return m
