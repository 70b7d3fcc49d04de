"""The register between two pipeline stages.

Minerva's ``Stage`` idea, cut down to what this core needs: the earlier stage drives ``d``
(a payload with a ``valid`` field), the later stage reads ``q``. Each cycle the register
either holds its contents (``stall``), takes a bubble (``kill``: ``q.valid`` becomes 0), or
loads ``d``. The core names every boundary after the two stages it joins (``is_rr``,
``rr_ex1``, ...), so signals and waveforms read like the pipeline diagram in
docs/microarchitecture.md.
"""

from amaranth import ClockDomain, ClockSignal, Elaboratable, Module, ResetSignal, Signal, Value
from amaranth.lib import data

from .layouts import split_signal


class Stage(Elaboratable):
    """Parameters
    ----------
    name:
        Boundary name, e.g. ``"rr_ex1"``; the registered payload is called that.
    layout:
        The boundary's ``StructLayout``; it must have a one-bit ``valid`` field.
    """

    def __init__(self, name: str, layout: data.StructLayout):
        if "valid" not in dict(layout):
            raise ValueError(f"stage {name}: the layout needs a 'valid' field")
        self.name = name
        self.d = split_signal(layout, f"{name}_d")
        self.q = split_signal(layout, name)
        self.stall = Signal(name=f"{name}_stall")
        self.kill = Signal(name=f"{name}_kill")

    def elaborate(self, platform) -> Module:
        m = Module()
        with m.If(~self.stall):
            with m.If(self.kill):
                m.d.sync += self.q.valid.eq(0)
            with m.Else():
                m.d.sync += self.q.eq(self.d)
        return m


def delayed_result(m: Module, en: Value, word: Value, latency: int) -> Signal:
    """The 32-bit ``word`` registered ``max(1, latency - 1)`` times, each register advancing
    only while ``en`` is 1: the output register of a unit whose ``latency - 1`` first cycles
    are spent before ``word``; the further stages are there for retiming."""
    regs = [Signal(32, name=f"s{i + 2}_result") for i in range(max(1, latency - 1))]
    with m.If(en):
        for src, dst in zip([word, *regs[:-1]], regs, strict=True):
            m.d.sync += dst.eq(src)
    return regs[-1]


def gated_domain(m: Module, name: str, take: Value, reset: bool = False) -> str:
    """A local clock domain ``name`` whose clock rises only at the end of a cycle with ``take``
    (an OR gate: the core clock, held high through a cycle that takes nothing); returns the
    name. ``reset``: the domain has the core's reset (and its clock rises while it is
    asserted), for a unit whose state must return to idle.

    Registers on it hold an idle unit's state, so a Verilator model evaluates the logic
    behind them only in the cycles that start (or carry) an operation: the rarely used lane
    units (the FPU, the multiplier, the half unit, the SFU). The simulation models' form
    (``RtlConfig.clock_gating``); an FPGA wants a clock enable instead, since a clock made
    by a LUT is a timing hazard there."""
    domain = ClockDomain(name, local=True, reset_less=not reset)
    m.domains += domain
    if reset:
        m.d.comb += domain.rst.eq(ResetSignal())
        take = take | ResetSignal()
    m.d.comb += domain.clk.eq(ClockSignal() | ~take)
    return name
