"""Each distinct unit written once: the reuser behind :mod:`simtgpu.rtl.reuse`.

While :class:`ModuleReuse` is active, every unit a design passes to
:func:`simtgpu.rtl.reuse.shared` is elaborated and converted to RTLIL once per distinct
(class, key) as a module of its own, named ``<Class>_u<n>``; each instance becomes an Amaranth
``Instance`` of that module wired to the unit's own port signals (so the parent's code, which
reads and drives those signals, is unchanged). Shared units may share units of their own (a core
shares its lanes' FPUs); the modules nest. The exported Verilog is the top's plus every shared
module's. Only Verilog export uses this: the Amaranth simulator cannot run an ``Instance``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

from amaranth.back import rtlil
from amaranth.hdl import ClockSignal, Const, Elaboratable, Fragment, Instance, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In
from simtgpu.rtl import reuse

__all__ = ["ModuleReuse", "SharedModule", "component_ports", "module_name", "shared_modules"]


def component_ports(unit: wiring.Component) -> dict[str, tuple[Signal, object]]:
    """The ports of ``unit`` as ``rtlil.convert_fragment`` takes them: flattened signature
    members named ``<path>__<path>``, each with its direction."""
    ports = {}
    for path, member, value in unit.signature.flatten(unit):
        value = value.as_value() if hasattr(value, "as_value") else value
        ports["__".join(map(str, path))] = (
            value, rtlil._ir.PortDirection.Input if member.flow == In
            else rtlil._ir.PortDirection.Output)
    return ports


def module_name(cls_name: str, number: int) -> str:
    """The name of the ``number``-th shared module, of class ``cls_name``: ``<Class>_u<n>``."""
    return f"{cls_name}_u{number}"


_MODULE_HEAD = re.compile(r"^module (\w+_u\d+)\(", re.M)


def shared_modules(verilog: str) -> list[str]:
    """Names of the shared modules (:func:`module_name`) in ``verilog``, a Verilog export made
    with module reuse (``generate_verilog(..., reuse=True)``), in the order they are written:
    the units a Verilator build may verilate on their own (``hier_block``)."""
    return _MODULE_HEAD.findall(verilog)


@dataclass
class SharedModule:
    """One distinct unit: its module name, RTLIL, whether it has clock and reset ports, its
    parameter ports, and how many instances use it."""
    name: str
    rtlil: str
    clk: bool
    rst: bool
    params: tuple[str, ...]
    instances: int = 0


@dataclass
class _Converting:
    unit: wiring.Component
    signals: dict[str, Signal]
    used: set[str] = field(default_factory=set)


class _StandIn(Elaboratable):
    """Elaborates to an ``Instance`` of the shared module, on the unit's port signals."""

    def __init__(self, unit: wiring.Component, module: SharedModule,
                 params: dict[str, tuple[int, int]]):
        self.unit, self.module, self.params = unit, module, params

    def elaborate(self, platform) -> Instance:
        kw: dict[str, object] = {}
        for name, (value, direction) in component_ports(self.unit).items():
            io = "i" if direction == rtlil._ir.PortDirection.Input else "o"
            kw[f"{io}_{name}"] = value
        if self.module.clk:
            kw["i_clk"] = ClockSignal("sync")
        if self.module.rst:
            kw["i_rst"] = ResetSignal("sync")
        for name in self.module.params:
            value, width = self.params[name]
            kw[f"i_param_{name}"] = Const(value, width)
        return Instance(self.module.name, **kw)


class ModuleReuse:
    """The reuser: use as a context manager around elaboration and conversion of the top."""

    def __init__(self) -> None:
        self.modules: dict[Hashable, SharedModule] = {}
        self._stack: list[_Converting] = []
        self._names = 0
        self._token = None

    def __enter__(self) -> ModuleReuse:
        self._token = reuse.active.set(self)
        return self

    def __exit__(self, *exc) -> None:
        reuse.active.reset(self._token)

    def shared(self, unit: wiring.Component, key: Hashable,
               params: dict[str, tuple[int, int]]) -> Elaboratable:
        full_key = (type(unit).__module__, type(unit).__qualname__, key, tuple(sorted(
            (n, w) for n, (_, w) in params.items())))
        module = self.modules.get(full_key)
        if module is None:
            module = self._define(unit, params)
            self.modules[full_key] = module
        module.instances += 1
        unit._MustUse__silence = True  # the stand-in uses it; Amaranth would warn otherwise
        return _StandIn(unit, module, params)

    def param(self, unit: wiring.Component, name: str, value: int):
        for conv in reversed(self._stack):
            if conv.unit is unit and name in conv.signals:
                conv.used.add(name)
                return conv.signals[name]
        return value

    def _define(self, unit: wiring.Component, params: dict[str, tuple[int, int]]
                ) -> SharedModule:
        name = module_name(type(unit).__name__, self._names)  # named before its units are
        self._names += 1
        ports = component_ports(unit)
        signals = {n: Signal(w, name=f"param_{n}") for n, (_, w) in params.items()}
        for n, sig in signals.items():
            ports[f"param_{n}"] = (sig, rtlil._ir.PortDirection.Input)
        conv = _Converting(unit, signals)
        self._stack.append(conv)
        try:
            fragment = Fragment.get(unit, None)
            text, _ = rtlil.convert_fragment(fragment, ports, name, emit_src=False)
        finally:
            self._stack.pop()
        unused = set(params) - conv.used
        if unused:
            raise TypeError(f"{type(unit).__name__} never reads its shared-module parameter(s) "
                            f"{', '.join(sorted(unused))} (rtl.reuse.param): its instances "
                            "would all carry the first one's value")
        head = _module_ports(text, name)
        other = head - set(ports) - {"clk", "rst"}
        if other:
            raise TypeError(f"{type(unit).__name__} has ports outside its signature and the sync "
                            f"domain ({', '.join(sorted(other))}): it cannot be shared")
        return SharedModule(name, text, "clk" in head, "rst" in head, tuple(sorted(params)))

    def summary(self) -> Counter[str]:
        """Instances of every shared module, by module name."""
        return Counter({m.name: m.instances for m in self.modules.values()})


def _module_ports(text: str, name: str) -> set[str]:
    """Port names of module ``name`` in RTLIL text."""
    body = text.split(f"module \\{name}\n", 1)[1].split("\nend\n", 1)[0]
    found = set(re.findall(r"^\s*wire .*\b(?:input|output|inout) \d+\s+\\(\S+)$", body, re.M))
    if not found:
        raise ValueError(f"no ports found in the RTLIL of {name}")
    return found
