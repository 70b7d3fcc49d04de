"""Each distinct unit written once: the reuser behind :mod:`simtgpu.rtl.reuse`.

While :class:`ModuleReuse` is active, every unit a design passes to
:func:`simtgpu.rtl.reuse.shared` is elaborated once per distinct (class, key) as a module of
its own, named ``<Class>_u<n>``; each instance becomes an Amaranth
``Instance`` of that module wired to the unit's own port signals (so the parent's code, which
reads and drives those signals, is unchanged). Shared units may share units of their own (a core
shares its lanes' FPUs); the modules nest. The exported Verilog is the top's plus every shared
module's; the exporter converts each to RTLIL and Verilog as soon as it is elaborated, side
by side with the rest of the elaboration (rtlsim/verilog_export.py). Only Verilog export uses
this: the Amaranth simulator cannot run an ``Instance``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from amaranth.back import rtlil
from amaranth.hdl import ClockSignal, Const, Elaboratable, Fragment, Instance, ResetSignal, Signal
from amaranth.hdl._xfrm import DomainCollector
from amaranth.lib import wiring
from amaranth.lib.wiring import In
from simtgpu.rtl import reuse

__all__ = ["ModuleReuse", "SharedModule", "component_ports", "module_name", "rtlil_ports",
           "shared_module_bytes",
           "shared_modules"]


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


def shared_module_bytes(verilog: str) -> dict[str, int]:
    """Bytes of Verilog of each shared module in ``verilog`` (:func:`shared_modules`), the
    private modules written for its units (``\\<Class>_u<n>.<unit>``) included."""
    sizes = dict.fromkeys(shared_modules(verilog), 0)
    heads = [(m.start(), m.group(1)) for m in re.finditer(r"^module \\?(\S+?)\s*\(",
                                                              verilog, re.M)]
    for (start, name), (end, _) in zip(heads, [*heads[1:], (len(verilog), "")], strict=True):
        owner = name.split(".", 1)[0]
        if owner in sizes:
            sizes[owner] += end - start
    return sizes


@dataclass
class SharedModule:
    """One distinct unit: its module name, its elaborated fragment and ports (what the exporter
    converts to RTLIL), whether it uses the ``sync`` domain (then it has
    ``clk`` and ``rst`` ports), its parameter ports, and how many instances use it."""
    name: str
    fragment: Fragment
    ports: dict[str, tuple[Signal, object]]
    sync: bool
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
        if self.module.sync:
            kw["i_clk"] = ClockSignal("sync")
            kw["i_rst"] = ResetSignal("sync")
        for name in self.module.params:
            value, width = self.params[name]
            kw[f"i_param_{name}"] = Const(value, width)
        return Instance(self.module.name, **kw)


class ModuleReuse:
    """The reuser: use as a context manager around the elaboration of the top."""

    def __init__(self, on_define: Callable[[SharedModule], None] | None = None) -> None:
        """``on_define`` is called with each module as soon as it is elaborated."""
        self.on_define = on_define
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
            if self.on_define is not None:
                self.on_define(module)
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
        """Elaborate ``unit`` (and the shared units inside it) as module ``<Class>_u<n>``; the
        exporter converts it (``on_define``, rtlsim/verilog_export.py)."""
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
        finally:
            self._stack.pop()
        unused = set(params) - conv.used
        if unused:
            raise TypeError(f"{type(unit).__name__} never reads its shared-module parameter(s) "
                            f"{', '.join(sorted(unused))} (rtl.reuse.param): its instances "
                            "would all carry the first one's value")
        # the domains Amaranth will add as ports when it converts the fragment (Fragment.prepare)
        collector = DomainCollector()
        collector(fragment)
        outside = collector.used_domains - collector.defined_domains - {"comb"}
        if outside - {"sync"}:
            raise TypeError(f"{type(unit).__name__} uses clock domain(s) defined outside it "
                            f"({', '.join(sorted(outside - {'sync'}))}): it cannot be shared")
        return SharedModule(name, fragment, ports, "sync" in outside, tuple(sorted(params)))

    def check(self, module: SharedModule, head: set[str]) -> None:
        """Raise if ``module``'s converted ports (``head``, :func:`rtlil_ports`) are not its
        signature's, its parameters' and (when it uses ``sync``) ``clk`` and ``rst``: its
        instances connect exactly those."""
        want = set(module.ports) | ({"clk", "rst"} if module.sync else set())
        if head != want:
            cls = module.name.rsplit("_u", 1)[0]
            extra, missing = sorted(head - want), sorted(want - head)
            why = (f"has ports outside its signature and the sync domain ({', '.join(extra)})"
                   if extra else f"lacks the port(s) {', '.join(missing)} its instances connect")
            raise TypeError(f"{cls} {why}: it cannot be shared")

    def summary(self) -> Counter[str]:
        """Instances of every shared module, by module name."""
        return Counter({m.name: m.instances for m in self.modules.values()})


def rtlil_ports(text: str, name: str) -> set[str]:
    """Port names of module ``name`` in RTLIL text."""
    body = text.split(f"module \\{name}\n", 1)[1].split("\nend\n", 1)[0]
    found = set(re.findall(r"^\s*wire .*\b(?:input|output|inout) \d+\s+(?:signed\s+)?\\(\S+)$",
                           body, re.M))
    if not found:
        raise ValueError(f"no ports found in the RTLIL of {name}")
    return found
