"""SFU sequencer: a warp's SFU instruction on the core's few shared SFUs.

The ``sfus`` units (:class:`Sfu`) take the lanes in ``lanes / sfus`` passes of
``SFU_LATENCY`` cycles, lanes ``p*sfus .. p*sfus+sfus-1`` in pass ``p``. The first pass
starts as the instruction leaves ex1; the results wait for the late write-back slot after
the last pass. One SFU instruction is in flight at a time: ``busy`` from its issue until its
result is taken, and ``is`` holds back the next one meanwhile. An instruction that reserved
the unit and is dropped before it starts (a younger instruction of a faulting warp, dropped
as it would enter ex1) gives the reservation back (``release``); so does a flush.
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from . import reuse
from .layouts import split_signal
from .sfu import Sfu


def sfu_result_signature(warps: int, lanes: int) -> wiring.Signature:
    """A finished SFU instruction (from the SFU's side). ``stale``: it is younger than a
    fault of its warp and must not retire (its register is still written and released)."""
    wb = max(1, (warps - 1).bit_length())
    return wiring.Signature({
        "valid": Out(1), "warp": Out(wb), "rd": Out(5), "wr": Out(1), "pc": Out(32),
        "active": Out(lanes), "exec": Out(lanes), "stale": Out(1),
        "values": Out(32).array(lanes),
    })


def sfu_start_signature(warps: int, lanes: int) -> wiring.Signature:
    """An SFU instruction leaving ex1 (from ex1's side): ``op`` (``SfuOp``), operands ``a``
    and what the write-back and retire need."""
    wb = max(1, (warps - 1).bit_length())
    return wiring.Signature({
        "start": Out(1), "op": Out(3), "a": Out(32).array(lanes),
        "warp": Out(wb), "rd": Out(5), "wr": Out(1), "pc": Out(32), "active": Out(lanes),
        "exec": Out(lanes), "stale": Out(1),
    })


class SfuSequencer(wiring.Component):
    """Parameters
    ----------
    warps:
        Warp slots.
    lanes:
        Lanes per warp.
    sfus:
        Shared SFUs, a divisor of ``lanes``.

    Cycle by cycle:

    - ``reserve``: an SFU instruction leaves ``is``; ``busy`` is high from the next cycle
      until the cycle after ``take``.
    - ``ex1.start``: pass 0 starts with ``ex1.a``; the operands, ``op`` and the rest of
      ``ex1`` are kept, and each pass starts in the cycle the previous one is done.
    - ``result.valid`` rises the cycle after the last pass is done, with the values of every
      lane and the kept fields; it stays until ``take`` (the late write-back took it).
    - ``mark_stale``: the instruction started in the cycle before is younger than a fault
      raised now (its result is then ``stale``, as with ``ex1.stale``).
    - ``release``: the reserving instruction was dropped before its start; ``busy`` falls
      from the next cycle (else the unit, and the core's drain, would wait for ever).
    - ``reset``: a flush; ``busy`` and ``result.valid`` fall from the next cycle, and a pass
      still running then ends without a result (until the next ``start``).
    """

    def __init__(self, warps: int, lanes: int, sfus: int, gated: bool = False):
        if sfus < 1 or lanes % sfus:
            raise ValueError(f"sfus must be a divisor of lanes ({lanes}), not {sfus}")
        self.warps, self.lanes, self.sfus = warps, lanes, sfus
        self.gated = gated  # the SFUs' form (Sfu's gated)
        super().__init__({
            "reserve": In(1),
            "release": In(1),
            "mark_stale": In(1),
            "reset": In(1),
            "busy": Out(1),
            "ex1": In(sfu_start_signature(warps, lanes)),
            "result": Out(sfu_result_signature(warps, lanes)),
            "take": In(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        L, S = self.lanes, self.sfus
        passes = L // S
        vec = data.ArrayLayout(32, L)
        sfus = [Sfu(gated=self.gated) for _ in range(S)]
        for u in range(S):  # one module in exported Verilog (rtl/reuse.py)
            m.submodules[f"sfu{u}"] = reuse.shared(sfus[u], self.gated)
        x, res = self.ex1, self.result
        start = x.start
        wb_valid = Signal()
        busy = Signal()
        meta = Signal(data.StructLayout({"warp": len(x.warp), "rd": 5, "wr": 1, "pc": 32,
                                         "active": L, "exec": L, "stale": 1}))
        a = split_signal(vec, "sfu_a")  # the operands, for the passes after the first
        op = Signal(3)
        pass_ = Signal(range(passes))
        values = split_signal(vec, "sfu_values")
        more = Signal()  # a pass is done and another follows
        flushed = Signal()  # a reset came after the last start: a pass still done is dropped
        m.d.comb += [more.eq(sfus[0].done & (pass_ != passes - 1) & ~flushed),
                     self.busy.eq(busy), res.valid.eq(wb_valid), res.warp.eq(meta.warp),
                     res.rd.eq(meta.rd), res.wr.eq(meta.wr), res.pc.eq(meta.pc),
                     res.active.eq(meta.active), res.exec.eq(meta.exec),
                     res.stale.eq(meta.stale),
                     *[res.values[i].eq(values[i]) for i in range(L)]]
        for u in range(S):
            m.d.comb += [sfus[u].start.eq(start | more),
                         sfus[u].op.eq(Mux(start, x.op, op)),
                         sfus[u].a.eq(x.a[u])]
            with m.If(~start):
                with m.Switch(pass_):
                    for p in range(passes - 1):
                        with m.Case(p):
                            m.d.comb += sfus[u].a.eq(a[(p + 1) * S + u])
            with m.If(sfus[0].done):
                with m.Switch(pass_):
                    for p in range(passes):
                        with m.Case(p):
                            m.d.sync += values[p * S + u].eq(sfus[u].result)
        with m.If(more):
            m.d.sync += pass_.eq(pass_ + 1)
        with m.If(start):
            m.d.sync += [a.eq(Cat(*x.a)), op.eq(x.op), pass_.eq(0),
                         meta.warp.eq(x.warp), meta.rd.eq(x.rd), meta.wr.eq(x.wr),
                         meta.pc.eq(x.pc), meta.active.eq(x.active), meta.exec.eq(x.exec),
                         meta.stale.eq(x.stale)]
        with m.If(self.mark_stale):
            m.d.sync += meta.stale.eq(1)
        with m.If(sfus[0].done & ~more & ~flushed):
            m.d.sync += wb_valid.eq(1)
        with m.If(self.reserve):
            m.d.sync += busy.eq(1)
        with m.If(self.take | self.release):
            m.d.sync += [wb_valid.eq(0), busy.eq(0)]
        with m.If(self.reset):
            m.d.sync += [wb_valid.eq(0), busy.eq(0), flushed.eq(1)]
        with m.If(start):
            m.d.sync += flushed.eq(0)
        return m
