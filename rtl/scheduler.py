"""Round-robin warp scheduler, used twice by the core: ``sch`` (which warp fetches) and ``is``
(which warp's buffered instruction issues).

Each cycle the grant goes to the first requesting warp after the one granted last, wrapping
around, so every warp that keeps requesting is served at least once every ``warps`` grants.
``restart`` makes warp 0 the first choice again (a block starts with warp 0, as in the ISS).
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .params import require_positive


class RoundRobin(wiring.Component):
    """Parameters
    ----------
    n:
        Number of requesters (warp slots).

    ``request``: one bit per warp; ``grant``/``found``: the chosen warp (combinational);
    ``advance``: the grant was used this cycle (the pointer moves past it).
    """

    def __init__(self, n: int):
        require_positive(n=n)
        self.n = n
        self.bits = max(1, (n - 1).bit_length())
        super().__init__({
            "request": In(n),
            "advance": In(1),
            "restart": In(1),
            "grant": Out(self.bits),
            "found": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        n = self.n
        last = Signal(self.bits, init=n - 1)
        above = Signal(n)
        m.d.comb += above.eq(self.request
                             & Cat((Const(w, self.bits + 1) > last) for w in range(n)))
        # lowest requester above the last grant, else the lowest requester
        for w in reversed(range(n)):
            with m.If(self.request[w]):
                m.d.comb += [self.grant.eq(w), self.found.eq(1)]
        for w in reversed(range(n)):
            with m.If(above[w]):
                m.d.comb += self.grant.eq(w)
        with m.If(self.restart):
            m.d.sync += last.eq(n - 1)
        with m.Elif(self.advance & self.found):
            m.d.sync += last.eq(self.grant)
        return m
