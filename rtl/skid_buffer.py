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
item that moves or stays takes its own next bits.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


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
    """

    def __init__(self, shape, side_shape=None):
        self.side_shape = side_shape
        members = {
            "up": In(stream.Signature(shape)),
            "down": Out(stream.Signature(shape)),
            "idle": Out(1),
        }
        if side_shape is not None:
            members |= {"up_side": In(side_shape), "down_side": Out(side_shape),
                        "skid_valid": Out(1), "skid": Out(shape), "skid_side": Out(side_shape),
                        "down_side_next": In(side_shape), "skid_side_next": In(side_shape)}
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        up, down = self.up, self.down
        main_valid, skid_valid = Signal(), Signal()
        main = Signal.like(up.payload, name="main")
        skid = Signal.like(up.payload, name="skid")
        m.d.comb += [down.valid.eq(main_valid), down.payload.eq(main),
                     up.ready.eq(~skid_valid), self.idle.eq(~main_valid & ~skid_valid)]
        take = up.valid & ~skid_valid
        leaves = ~main_valid | down.ready  # main is empty or its item leaves
        with m.If(leaves):
            m.d.sync += [main.eq(Mux(skid_valid, skid, up.payload)),
                         main_valid.eq(skid_valid | take), skid_valid.eq(0)]
        with m.Elif(take):
            m.d.sync += [skid.eq(up.payload), skid_valid.eq(1)]
        if self.side_shape is not None:
            main_side = Signal(self.side_shape, name="main_side")
            skid_side = Signal(self.side_shape, name="skid_side")
            m.d.comb += [self.down_side.eq(main_side), self.skid_side.eq(skid_side),
                         self.skid.eq(skid), self.skid_valid.eq(skid_valid)]
            # every entry's bits are rewritten every cycle (an empty one's are not looked at)
            m.d.sync += [main_side.eq(Mux(leaves, Mux(skid_valid, self.skid_side_next,
                                                          self.up_side), self.down_side_next)),
                         skid_side.eq(Mux(skid_valid, self.skid_side_next, self.up_side))]
        return m
