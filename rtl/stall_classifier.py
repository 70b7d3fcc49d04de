"""Stall classifier: the reason charged for each running cycle in which ``is`` issues nothing.

The reasons feed the performance counters (``perf.stall_*``); exactly one strobe is high in
every cycle of a resident block that does not issue, so the reasons add up to the cycles.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .params import require_positive


class StallClassifier(wiring.Component):
    """Parameters
    ----------
    warps:
        Warp slots.

    Combinationally, each cycle, one ``stall_<reason>`` strobe: none while ``issued``;
    ``idle`` while no block runs (``running`` low); otherwise the first match of

    1. ``idle``: no live warp (``any_live`` low);
    2. ``memory``: the LSU holds ``mem`` (``mem_hold``) or a global load's data takes the
       write-back slot (``lwb_valid``);
    3. ``structural``: the SIMT stack unit holds ex1 (``ex1_block``), the SFU's result
       takes the write-back slot (``sfu_wb``), or a warp is ready but for the busy SFU
       (any bit of ``structural_warps``);
    4. ``scoreboard``: a head waits on a short-latency producer (``hazard``);
    5. ``memory``: a head waits on a global load, atomic, ``ldparam``, SFU result or a
       fence's stores (``parked``);
    6. ``barrier``: a warp is held at a barrier (``bar_hold``);
    7. ``idle``.
    """

    def __init__(self, warps: int):
        require_positive(warps=warps)
        self.warps = warps
        super().__init__({
            "issued": In(1),
            "running": In(1),
            "any_live": In(1),
            "mem_hold": In(1),
            "lwb_valid": In(1),
            "ex1_block": In(1),
            "sfu_wb": In(1),
            "structural_warps": In(warps),
            "hazard": In(warps),
            "parked": In(warps),
            "bar_hold": In(warps),
            "stall_idle": Out(1),
            "stall_memory": Out(1),
            "stall_structural": Out(1),
            "stall_scoreboard": Out(1),
            "stall_barrier": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        with m.If(~self.issued & self.running):
            with m.If(~self.any_live):
                m.d.comb += self.stall_idle.eq(1)
            with m.Elif(self.mem_hold | self.lwb_valid):
                m.d.comb += self.stall_memory.eq(1)
            with m.Elif(self.ex1_block | self.sfu_wb | (self.structural_warps != 0)):
                m.d.comb += self.stall_structural.eq(1)
            with m.Elif(self.hazard != 0):
                m.d.comb += self.stall_scoreboard.eq(1)
            with m.Elif(self.parked != 0):
                m.d.comb += self.stall_memory.eq(1)
            with m.Elif(self.bar_hold != 0):
                m.d.comb += self.stall_barrier.eq(1)
            with m.Else():
                m.d.comb += self.stall_idle.eq(1)
        with m.Elif(~self.running):
            m.d.comb += self.stall_idle.eq(1)
        return m
