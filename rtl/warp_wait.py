"""Per-warp wait reason: what each warp slot is doing at ``is`` this cycle, for people.

Nothing in the core reads it. It exists so that a waveform (``w<w>_wait`` in the core) and
the pipeline tools show, per warp and per cycle, why a warp did not issue, with the same
words as the stall counters. The encoding is :class:`WarpWait`; the GTKWave layout that
``simtgpu waves layout`` writes comes with a filter file that shows the names.
"""

from amaranth import Module
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

from .params import require_positive

__all__ = ["WarpWait", "WarpWaits"]


class WarpWait(enum.Enum, shape=3):
    """Why a warp slot did or did not issue in a cycle (first match, top down)."""

    IDLE = 0  # no running warp in the slot (no block, or the warp exited)
    ISSUE = 1  # it issued this cycle
    BARRIER = 2  # held at a barrier
    FETCH = 3  # nothing buffered: fetch is behind, or a control instruction resolves
    MEMORY = 4  # head waits on a global load, atomic, ldparam, SFU result or a fence
    HAZARD = 5  # head waits on a short-latency producer (scoreboard)
    SFU = 6  # head is an SFU instruction and the SFUs are busy
    READY = 7  # could issue: another warp was picked, or the back end held issue


class WarpWaits(wiring.Component):
    """Parameters
    ----------
    warps:
        Warp slots.

    Combinationally, ``wait[w]`` from the issue conditions of :class:`~.issue.IssueSelect`
    (``hazard parked structural bar_hold``), the buffered heads (``valid``), the running
    warps (``runnable``) and the warp that issued (``issued``, ``warp``).
    """

    def __init__(self, warps: int):
        require_positive(warps=warps)
        self.warps = warps
        wb = max(1, (warps - 1).bit_length())
        super().__init__({
            "runnable": In(warps),
            "valid": In(warps),
            "issued": In(1),
            "warp": In(wb),
            "hazard": In(warps),
            "parked": In(warps),
            "structural": In(warps),
            "bar_hold": In(warps),
            "wait": Out(WarpWait).array(warps),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        for w in range(self.warps):
            out = self.wait[w]
            with m.If(~self.runnable[w]):
                m.d.comb += out.eq(WarpWait.IDLE)
            with m.Elif(self.issued & (self.warp == w)):
                m.d.comb += out.eq(WarpWait.ISSUE)
            with m.Elif(self.bar_hold[w]):
                m.d.comb += out.eq(WarpWait.BARRIER)
            with m.Elif(~self.valid[w]):
                m.d.comb += out.eq(WarpWait.FETCH)
            with m.Elif(self.parked[w]):
                m.d.comb += out.eq(WarpWait.MEMORY)
            with m.Elif(self.hazard[w]):
                m.d.comb += out.eq(WarpWait.HAZARD)
            with m.Elif(self.structural[w]):
                m.d.comb += out.eq(WarpWait.SFU)
            with m.Else():
                m.d.comb += out.eq(WarpWait.READY)
        return m
