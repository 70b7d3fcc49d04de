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
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


class SkidBuffer(wiring.Component):
    """Parameters
    ----------
    shape:
        The payload's shape.

    Members
    -------
    up: ``In(stream.Signature(shape))``
        Items in.
    down: ``Out(stream.Signature(shape))``
        The same items, in order, a cycle or more later.
    idle: ``Out(1)``
        Nothing held.
    """

    def __init__(self, shape):
        super().__init__({
            "up": In(stream.Signature(shape)),
            "down": Out(stream.Signature(shape)),
            "idle": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        up, down = self.up, self.down
        main_valid, skid_valid = Signal(), Signal()
        main = Signal.like(up.payload, name="main")
        skid = Signal.like(up.payload, name="skid")
        m.d.comb += [down.valid.eq(main_valid), down.payload.eq(main),
                     up.ready.eq(~skid_valid), self.idle.eq(~main_valid & ~skid_valid)]
        take = up.valid & ~skid_valid
        with m.If(~main_valid | down.ready):  # main is empty or its item leaves
            m.d.sync += [main.eq(Mux(skid_valid, skid, up.payload)),
                         main_valid.eq(skid_valid | take), skid_valid.eq(0)]
        with m.Elif(take):
            m.d.sync += [skid.eq(up.payload), skid_valid.eq(1)]
        return m
