"""The register between two pipeline stages.

Minerva's ``Stage`` idea, cut down to what this core needs: the earlier stage drives ``d``
(a payload with a ``valid`` field), the later stage reads ``q``. Each cycle the register
either holds its contents (``stall``), takes a bubble (``kill``: ``q.valid`` becomes 0), or
loads ``d``. The core names every boundary after the two stages it joins (``is_rr``,
``rr_ex1``, ...), so signals and waveforms read like the pipeline diagram in
docs/microarchitecture.md.
"""

from collections.abc import Collection, Mapping, Sequence

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


class Cuts:
    """The boundaries between a pipelined unit's segments that are registers.

    A unit written as segments (functions from one boundary's values to the next's) calls
    the instance at each boundary: at a register boundary the values come back registered,
    the first such register loading under ``take`` (an operation enters: ``en & valid``, so
    the operand stage holds for a bubble), the later ones under ``en``; elsewhere they come
    back as they are. One datapath description then serves every latency. ``enables``
    gives a boundary its own enable instead (a unit whose last register crosses into a
    stage that moves on while the earlier ones hold: the core's ``wb``)."""

    def __init__(self, m: Module, registered: Collection[str], take: Value, en: Value,
                 enables: Mapping[str, Value] | None = None):
        self.m, self.registered, self.take, self.en = m, frozenset(registered), take, en
        self.enables = dict(enables or {})
        self.first = True

    def __call__(self, name: str, values):
        """``values`` (a Value, or a tuple/NamedTuple of them, nested) across boundary
        ``name``."""
        if name not in self.registered:
            return values
        enable = self.take if self.first else self.enables.get(name, self.en)
        self.first = False
        return self._across(name, values, enable)

    def _across(self, name: str, values, enable: Value):
        if not isinstance(values, tuple):
            return self._register(f"{name}_q", values, enable)
        fields = getattr(values, "_fields", range(len(values)))
        regs = [self._across(f"{name}_{f}", v, enable)
                for f, v in zip(fields, values, strict=True)]
        return type(values)(*regs) if hasattr(values, "_fields") else tuple(regs)

    def _register(self, name: str, value: Value, enable: Value) -> Signal:
        reg = Signal.like(value, name=name)
        with self.m.If(enable):
            self.m.d.sync += reg.eq(value)
        return reg


def last_cut_enable(order: Sequence[str], cuts: Collection[str], last_en: Value | None,
                    delays: int) -> dict[str, Value]:
    """The ``enables`` of :class:`Cuts` that put a unit's last register under ``last_en``:
    its last registered boundary (in ``order``), unless delay registers follow the cuts
    (then :func:`delayed`'s ``last_en`` takes the last of those); none without ``last_en``."""
    registered = [b for b in order if b in cuts]
    if last_en is None or delays or not registered:
        return {}
    return {registered[-1]: last_en}


def delayed(m: Module, en: Value, word: Value, n: int, last_en: Value | None = None) -> Value:
    """``word`` through ``n`` registers (none: ``word`` itself), each advancing only while
    ``en`` is 1, the last while ``last_en`` is, where given."""
    regs = [Signal(len(word), name=f"result_d{i + 1}") for i in range(n)]
    for i, (src, dst) in enumerate(zip([word, *regs[:-1]], regs, strict=False)):
        with m.If(last_en if last_en is not None and i == n - 1 else en):
            m.d.sync += dst.eq(src)
    return regs[-1] if regs else word


def delayed_result(m: Module, en: Value, word: Value, latency: int) -> Value:
    """The 32-bit ``word`` registered ``max(1, latency - 1)`` times under ``en``: the output
    register of a unit whose ``latency - 1`` first cycles are spent before ``word``; the
    further stages are there for retiming."""
    return delayed(m, en, word, max(1, latency - 1))


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
