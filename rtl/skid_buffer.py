"""A two-entry skid buffer: a stream cut into registers in both directions.

The core's global requests pass through one on their way to the L1 (rtl/core.py). Without
it the L1's ``ready`` (its tag lookup of the request's address) decided in the same cycle
whether the LSU's transaction was taken, and so the LSU's ``hold`` and the stall of every
stage behind ``mem``: one path from the LSU through the cache's tags back to the whole core.
Here ``up.ready`` is a register (the second entry is free), so the sender's decision never
waits on the receiver, and with two entries a stream still moves one item per cycle. It costs
every item one cycle.

::

    up ──► main ──► down          up.ready  = ~skid.valid (a register)
      └──► skid ─┘                down.valid = main.valid (a register)

An item goes into ``main`` when ``main`` is empty or leaving, else into ``skid`` (which then
refuses the next one); ``main`` takes ``skid``'s item before a new one, so the order holds.

**Side information** (``side_shape``): each entry can also hold bits that the receiver works
out about its item and keeps up to date while the item waits, such as the L2's tag lookup
(rtl/l2_cache.py), so that the receiver's decision on the item at ``down`` starts from
registers. The receiver gives the bits of the item offered at ``up`` (``up_side``) and,
every cycle, the next bits of each held item (``down_side_next``, ``skid_side_next``); an
item that moves or stays takes its own next bits. This form is the same two entries as a
queue with read and write pointers (the same cycles at both ports): the receiver's
``down.ready`` then comes from a decision of its own, and it drives a pointer and a count,
where it drove the enables of two line-wide registers across the device, the whole GPU's
slowest path (docs/performance.md).

**Routes** (``routes``, with side information): where the items go to one of several
receivers (the L2's banks), the buffer can say which one the item at ``down`` goes to from
flip-flops (``down_to``, one-hot, zero when empty): each entry keeps its item's route, taken
as it enters (``route_of``), and ``down_to`` is worked out for the next cycle from the push
and the pop, so a receiver's ``valid`` is not the read pointer's choice of an item and a
decoding of its address (on the FPGA, the banks are far from the buffer and from each other).
A few bits of the item can come the same way (``key_of``: the L2 takes a request's ``kind``):
``down_key[r]`` is the key of the item at ``down`` if it goes to receiver ``r``, else zero,
from flip-flops, so each receiver's decision starts at registers of its own rather than at
the read pointer's choice between the entries, which the receivers would share (the logic
worked out from it is alike in every receiver, and synthesis merges it into one place).
Where the side information is an array with one element per receiver (the L2 banks' own
lookups), each element is chosen and kept by a copy of the read pointer of its own
(:func:`~simtgpu.rtl.replica.replicas`), placed by its receiver.

**Copies** (``copies``, without side information): a few bits of the item at ``down``
(``copy_of``: the L2 takes a request's address) kept in ``copies`` registers of their own
beside ``main`` (``down_copy``), which the placer can put by several readers far apart: the
L2's banks each look up the address of the request leaving the first buffer, and the one
register read by both banks' tag memories was the start of a routed run's slowest path.
"""

from collections.abc import Callable

from amaranth import Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .replica import replicas


class SkidBuffer(wiring.Component):
    """Parameters
    ----------
    shape:
        The payload's shape.
    side_shape:
        The shape of each entry's side information, or None (none kept).

    Members
    -------
    up: ``In(stream.Signature(shape))``
        Items in.
    down: ``Out(stream.Signature(shape))``
        The same items, in order, a cycle or more later.
    idle: ``Out(1)``
        Nothing held.
    up_side: ``In(side_shape)``
        With ``side_shape``: the side bits of the item at ``up``.
    down_side, skid_side: ``Out(side_shape)``; skid_valid: ``Out(1)``; skid: ``Out(shape)``
        The side bits of the item at ``down`` and of the second entry, that entry's item and
        whether it holds one.
    down_side_next, skid_side_next: ``In(side_shape)``
        The side bits each held item has in the next cycle, wherever it is then.
    down_to: ``Out(routes)``
        With ``routes`` (and ``side_shape``): one-hot, the receiver of the item at ``down``
        (``route_of`` its payload), from flip-flops; zero when nothing is held.
    down_key: ``Out(ArrayLayout(key width, routes))``
        With ``routes`` and ``key_of``: per receiver, ``key_of`` the item at ``down`` if it
        goes there, else zero, from flip-flops.
    down_copy: ``Out(ArrayLayout(copy width, copies))``; down_copy_next: ``Out(copy width)``
        With ``copies`` and ``copy_of``: ``copy_of`` the item at ``down``, in each of
        ``copies`` registers of its own (meaningful with ``down.valid``), and the value they
        take at the next edge.
    """

    def __init__(self, shape, side_shape=None, routes: int = 0,
                 route_of: Callable[[Value], Value] | None = None,
                 key_of: Callable[[Value], Value] | None = None, copies: int = 0,
                 copy_of: Callable[[Value], Value] | None = None):
        if routes and (side_shape is None or route_of is None):
            raise ValueError("a skid buffer's routes need side_shape and route_of")
        if key_of is not None and not routes:
            raise ValueError("a skid buffer's key_of needs routes")
        if copies and (copy_of is None or side_shape is not None):
            raise ValueError("a skid buffer's copies need copy_of and no side_shape")
        self.side_shape = side_shape
        self.routes, self.route_of, self.key_of = routes, route_of, key_of
        self.copies, self.copy_of = copies, copy_of
        members = {
            "up": In(stream.Signature(shape)),
            "down": Out(stream.Signature(shape)),
            "idle": Out(1),
        }
        if side_shape is not None:
            members |= {"up_side": In(side_shape), "down_side": Out(side_shape),
                        "skid_valid": Out(1), "skid": Out(shape), "skid_side": Out(side_shape),
                        "down_side_next": In(side_shape), "skid_side_next": In(side_shape)}
        if routes:
            members["down_to"] = Out(routes)
        if key_of is not None:
            width = len(Value.cast(key_of(Signal(shape))))
            members["down_key"] = Out(data.ArrayLayout(width, routes))
        if copies:
            width = len(Value.cast(copy_of(Signal(shape))))
            members["down_copy"] = Out(data.ArrayLayout(width, copies))
            members["down_copy_next"] = Out(width)
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        if self.side_shape is not None:
            return self._elaborate_queue()
        m = Module()
        up, down = self.up, self.down
        main_valid, skid_valid = Signal(), Signal()
        main = Signal.like(up.payload, name="main")
        skid = Signal.like(up.payload, name="skid")
        m.d.comb += [down.valid.eq(main_valid), down.payload.eq(main),
                     up.ready.eq(~skid_valid), self.idle.eq(~main_valid & ~skid_valid)]
        take = up.valid & ~skid_valid
        load = Signal()  # main is empty or its item leaves: main takes the next item
        m.d.comb += load.eq(~main_valid | down.ready)
        main_next = Signal.like(up.payload, name="main_next")
        m.d.comb += main_next.eq(Mux(skid_valid, skid, up.payload))
        with m.If(load):
            m.d.sync += [main.eq(main_next), main_valid.eq(skid_valid | take),
                         skid_valid.eq(0)]
        with m.Elif(take):
            m.d.sync += [skid.eq(up.payload), skid_valid.eq(1)]
        if self.copies:
            # each copy is loaded as main is, and holds main's bits otherwise (the same)
            part = self.copy_of  # of a payload (a struct view: not of a multiplexer's value)
            m.d.comb += self.down_copy_next.eq(Mux(load, part(main_next), part(main)))
            copies = replicas(m, self.down_copy_next, self.copies, "copy")
            m.d.comb += [self.down_copy[i].eq(c) for i, c in enumerate(copies)]
        return m

    def _elaborate_queue(self) -> Module:
        """With side information: the same two entries as a queue read and written by
        pointers, so that the items never move and the receiver's ``down.ready`` (which,
        here, follows a decision of its own) drives a pointer and a count, not the enables
        of two payload registers; only the side bits, a few, are rewritten every cycle.
        ``down.payload`` is the read pointer's entry (a multiplexer more than ``main``)."""
        m = Module()
        up, down = self.up, self.down
        items = [Signal.like(up.payload, name=f"item{i}") for i in range(2)]
        sides = [Signal(self.side_shape, name=f"side{i}") for i in range(2)]
        count = Signal(range(3))
        push = up.valid & up.ready
        pop = down.valid & down.ready
        # The entry at ``down`` (``rd``) and the one the next item takes (``wr``). Where each
        # receiver has its own element of the side bits (``routes`` with an array of as
        # many), each element is chosen and rewritten by a copy of the read pointer of its
        # own (rtl/replica.py), which the placer can put by that receiver: the one pointer
        # read by every receiver was the start of the L2's slowest paths. The payload's
        # pointer is one more copy (unmarked, synthesis would merge it into the first).
        per_route = (self.routes and isinstance(self.side_shape, data.ArrayLayout)
                     and self.side_shape.length == self.routes)
        rd_next = Signal()
        *rds, rd = replicas(m, rd_next, self.routes + 1, "rd") if per_route else [Signal()]
        wr = Signal()
        m.d.comb += rd_next.eq(rd ^ pop)
        if not per_route:
            m.d.sync += rd.eq(rd_next)
        m.d.comb += [up.ready.eq(count != 2), down.valid.eq(count != 0),
                     self.idle.eq(count == 0), self.skid_valid.eq(count == 2),
                     down.payload.eq(Mux(rd, items[1], items[0])),
                     self.skid.eq(Mux(rd, items[0], items[1]))]
        for i in range(2):
            with m.If(push & (wr == i)):
                m.d.sync += items[i].eq(up.payload)
        m.d.sync += [wr.eq(wr ^ push), count.eq(count + push - pop)]
        # every entry's side bits are rewritten every cycle (an empty one's are not looked at)
        if per_route:
            parts = [(rds[r], lambda v, r=r: v[r]) for r in range(self.routes)]
        else:
            parts = [(rd, lambda v: v)]
        for ptr, part in parts:
            m.d.comb += [part(self.down_side).eq(Mux(ptr, part(sides[1]), part(sides[0]))),
                         part(self.skid_side).eq(Mux(ptr, part(sides[0]), part(sides[1])))]
            for i in range(2):
                m.d.sync += part(sides[i]).eq(Mux(push & (wr == i), part(self.up_side),
                                                  Mux(ptr == i, part(self.down_side_next),
                                                      part(self.skid_side_next))))
        if self.routes:
            # each entry's route, and the one at ``down`` next: the pushed item's where the
            # buffer is empty once the pop is done, else the entry the read pointer will be at
            dests = [Signal(self.routes, name=f"dest{i}") for i in range(2)]
            up_dest = Signal(self.routes)
            m.d.comb += up_dest.eq(Const(1, self.routes) << self.route_of(up.payload))
            for i in range(2):
                with m.If(push & (wr == i)):
                    m.d.sync += dests[i].eq(up_dest)
            emptied = (count == 0) | ((count == 1) & pop)
            m.d.sync += self.down_to.eq(Mux(emptied, Mux(push, up_dest, 0),
                                            Mux(rd_next, dests[1], dests[0])))
            if self.key_of is not None:
                # the same choice per receiver, of the key where the item goes there
                key = self.key_of
                for r in range(self.routes):
                    m.d.sync += self.down_key[r].eq(Mux(
                        emptied, Mux(push & up_dest[r], key(up.payload), 0),
                        Mux(rd_next, Mux(dests[1][r], key(items[1]), 0),
                            Mux(dests[0][r], key(items[0]), 0))))
        return m
