"""Block barrier unit.

Counts the arrivals of a block's warps at ``bar`` and releases them all together once every
warp of the block has arrived. A warp that has exited never arrives, so when every warp that is
still alive waits and some warp of the block has exited the barrier can never complete: that is
``BARRIER_DEADLOCK``, raised at once. A watchdog raises the same fault when warps have waited
longer than ``watchdog`` cycles (a barrier that some live warp never reaches).
``DIVERGENT_BARRIER`` (``bar`` with ``active != live``) is checked by ex1 before arriving.
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .params import require_positive


class Barrier(wiring.Component):
    """One barrier per resident block.

    Parameters
    ----------
    warps:
        Warp slots of the core.
    watchdog:
        Cycles a barrier may wait before ``deadlock`` rises.

    ``members``: the warp slots of the block; ``exited``: those of them that have finished.
    ``arrive``/``warp``: a warp reaches ``bar``. ``release``: one-cycle pulse with the warps to
    wake in ``waiting``.
    """

    def __init__(self, warps: int, watchdog: int = 1 << 16):
        require_positive(watchdog=watchdog)
        self.warps, self.watchdog = warps, watchdog
        super().__init__({
            "reset": In(1),
            "members": In(warps),
            "exited": In(warps),
            "arrive": In(1),
            "warp": In(max(1, (warps - 1).bit_length())),
            "waiting": Out(warps),
            "release": Out(1),
            "deadlock": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        waiting = Signal(self.warps)
        arrived = Signal(self.warps)
        m.d.comb += arrived.eq(waiting | (self.arrive << self.warp))
        timer = Signal(range(self.watchdog + 1))
        m.d.comb += self.waiting.eq(waiting)
        alive = self.members & ~self.exited
        all_in = (arrived & self.members) == self.members
        stuck = (arrived != 0) & ((arrived & alive) == alive) & (self.exited & self.members != 0)
        with m.If(self.reset):
            m.d.sync += [waiting.eq(0), timer.eq(0)]
        with m.Elif((arrived != 0) & all_in):
            m.d.comb += [self.release.eq(1), self.waiting.eq(arrived)]
            m.d.sync += [waiting.eq(0), timer.eq(0)]
        with m.Else():
            m.d.sync += waiting.eq(arrived)
            with m.If(arrived != 0):
                m.d.sync += timer.eq(timer + 1)
                with m.If(stuck | (timer == self.watchdog)):
                    m.d.comb += self.deadlock.eq(1)
        return m
