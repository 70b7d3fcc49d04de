"""Per-warp instruction buffers between ``id`` and ``is``.

``id`` appends each decoded instruction to its warp's buffer; ``is`` looks at every warp's
oldest entry (the head) to choose what issues, and pops the one it issues. ``sch`` fetches
only for a warp whose buffer has room for the fetch and those already in ``if``/``id``, so a
push never finds its buffer full.

Each buffer is a small RAM written at the tail and read combinationally at the head: a
register per entry would be rewritten every cycle in simulation.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from . import layouts
from .layouts import fields_signature, port_view, split_signal
from .params import require_positive

IBUF_DEPTH = 3


class InstrBuffers(wiring.Component):
    """``warps`` FIFOs of ``depth`` instruction-buffer entries (``layouts.id_is``).

    Parameters
    ----------
    warps:
        Warp slots.
    depth:
        Entries per warp.

    Cycle by cycle:

    - ``push``: ``entry`` is appended to the buffer of ``push_warp`` (never a full one).
    - ``pop``: the head of ``pop_warp``'s buffer is dropped (never an empty one's). A push
      and a pop of the same warp in one cycle leave the count unchanged.
    - ``count[w]``: entries in warp ``w``'s buffer; ``valid[w]``: ``count[w] != 0``.
    - ``head[w]``: warp ``w``'s oldest entry, combinationally (an entry pushed in a cycle
      shows from the next one); ``next_needs[w]``: the ``needs`` of the entry after it
      (meaningful while ``count[w] >= 2``), what the head becomes when it is popped, for
      :class:`~simtgpu.rtl.hazard_ahead.HazardAhead`; ``head_kind[w]``: the head's ``kind``
      (``layouts.ISSUE_KIND``), the same as ``head[w].kind`` but from a register, so that the
      issue stage's choice starts at flip-flops rather than at a read of the buffer's RAM.
    - ``reset``: every buffer is empty in the next cycle, whatever ``push`` and ``pop`` do;
      ``reset_warps``: the same for the buffers of the warps whose bit is set.
    """

    def __init__(self, warps: int, depth: int = IBUF_DEPTH):
        require_positive(warps=warps, depth=depth)
        self.warps, self.depth = warps, depth
        wb = max(1, (warps - 1).bit_length())
        # entries are one port per field (fields_signature): a packed 150-bit port would be
        # a multi-word vector in simulation, split again by every reader
        entry_layout = layouts.id_is()
        entry = fields_signature(entry_layout)
        super().__init__({
            "reset": In(1),
            "reset_warps": In(warps),
            "push": In(1),
            "push_warp": In(wb),
            "entry": In(entry),
            "pop": In(1),
            "pop_warp": In(wb),
            "count": Out(range(depth + 1)).array(warps),
            "valid": Out(warps),
            "head": Out(entry).array(warps),
            "next_needs": Out(data.ArrayLayout(entry_layout.members["needs"], warps)),
            "head_kind": Out(data.ArrayLayout(layouts.ISSUE_KIND, warps)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        depth = self.depth
        entry = layouts.id_is()
        next_layout = data.StructLayout({"needs": entry.members["needs"],
                                         "kind": layouts.ISSUE_KIND})
        pushed = port_view(self.entry, entry)
        for w in range(self.warps):
            mem = Memory(shape=entry, depth=depth, init=[])
            m.submodules[f"w{w}_ib"] = mem
            wp, rp = mem.write_port(), mem.read_port(domain="comb")
            count = Signal(range(depth + 1), name=f"w{w}_ibcount")
            head = Signal(range(depth), name=f"w{w}_ibhead")
            # the entry after the head, kept beside it rather than added to it in the cycle
            after = Signal(range(depth), name=f"w{w}_ibafter", init=1 % depth)
            tail = Signal(range(depth), name=f"w{w}_ibtail")
            push = self.push & (self.push_warp == w)
            pop = self.pop & (self.pop_warp == w)
            head_entry = split_signal(entry, f"w{w}_head")
            m.d.comb += [tail.eq((head + count) % depth),
                         wp.addr.eq(tail), wp.data.eq(pushed),
                         wp.en.eq(push), rp.addr.eq(head), head_entry.eq(rp.data),
                         port_view(self.head[w], entry).eq(head_entry),
                         self.count[w].eq(count), self.valid[w].eq(count != 0)]
            # the entry after the head: its needs and kind only, from a copy of those fields
            # (a second read port of the whole entry would copy every field's RAM)
            nmem = Memory(shape=next_layout, depth=depth, init=[])
            m.submodules[f"w{w}_ib_needs"] = nmem
            nwp, nrp = nmem.write_port(), nmem.read_port(domain="comb")
            m.d.comb += [nwp.addr.eq(tail), nwp.data.needs.eq(pushed.needs),
                         nwp.data.kind.eq(pushed.kind), nwp.en.eq(push),
                         nrp.addr.eq(after), self.next_needs[w].eq(nrp.data.needs)]
            # the head's kind in a register: the entry after it when it is popped (the entry
            # pushed now if it was the only one), the entry pushed into an empty buffer
            kind = Signal(layouts.ISSUE_KIND, name=f"w{w}_head_kind")
            m.d.comb += self.head_kind[w].eq(kind)
            with m.If(pop):
                m.d.sync += [head.eq(after), after.eq((after + 1) % depth),
                             kind.eq(Mux(count >= 2, nrp.data.kind, pushed.kind))]
            with m.Elif(count == 0):
                m.d.sync += kind.eq(pushed.kind)
            m.d.sync += count.eq(count + push - pop)
            with m.If(self.reset | self.reset_warps[w]):
                m.d.sync += [count.eq(0), head.eq(0), after.eq(1 % depth)]
        return m
