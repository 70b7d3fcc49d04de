"""One datapath unit alone through the FPGA flow: its area and its own Fmax.

``simtgpu synth --unit NAME`` (or ``all``) builds the unit in its FPGA form (clock enables,
no gated clocks: what ``simtgpu synth`` builds into the GPU), registers every input and output,
and runs the flow of :mod:`simtgpu.rtlsim.synth` on it (yosys ``synth_ecp5``, nextpnr-ecp5
out of context). The registers make the paths from the unit's operands and to its results
register-to-register paths that nextpnr times, as the core's stage registers do in the GPU
(out of context, a path from a top-level input or to an output is not timed). A unit's
Fmax bounds the GPU's (the GPU has its paths too, and the wiring between units), and a unit
alone takes seconds to a few minutes where the whole GPU takes an hour: the loop for
retiming a datapath unit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from amaranth import ClockDomain, ClockSignal, Module, Signal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from .synth import SPEED_GRADE, SynthResult, lut_equivalents, synthesize_verilog

__all__ = ["UNITS", "UnitResult", "render_units", "synthesize_unit"]


def _alu():
    from simtgpu.rtl.alu import Alu
    return Alu()


def _fpu():
    from simtgpu.rtl.fpu import CORE_LATENCY, Fpu
    return Fpu(CORE_LATENCY, gated=False, output_register=False, last_enable=True)


def _half():
    from simtgpu.rtl.half_unit import CORE_LATENCY, HalfUnit
    return HalfUnit(gated=False, latency=CORE_LATENCY, output_register=False, last_enable=True)


def _atomic_adder():
    from simtgpu.rtl.fpu import ATOMIC_LATENCY, Fpu
    return Fpu(ATOMIC_LATENCY, gated=False, fadd_only=True)


def _multiplier():
    from simtgpu.rtl.multiplier import Multiplier
    return Multiplier(latency=2, gated=False)


def _fcompare():
    from simtgpu.rtl.fcompare import FCompare
    return FCompare()


def _sfu():
    from simtgpu.rtl.sfu import Sfu
    return Sfu(gated=False)


def _dot_tree():
    from simtgpu.rtl.matrix_unit import DotTree
    return DotTree(8, gated=False)


UNITS: dict[str, tuple[str, Callable[[], wiring.Component]]] = {
    "alu": ("integer ALU of a lane (ex1, combinational)", _alu),
    "fcompare": ("FP compare of a lane (ex1, combinational)", _fcompare),
    "multiplier": ("integer multiplier of a lane (2 cycles)", _multiplier),
    "fpu": ("FP32 unit of a lane (5 cycles: operands registered in rr, segments in ex1 to "
            "wb; the last register the harness's, as the core's register-file write)", _fpu),
    "half": ("half-precision unit of a lane (5 cycles, as the FPU's; the last register the "
             "harness's)", _half),
    "sfu": ("special-function unit of a lane (multi-cycle)", _sfu),
    "atomic-fadd": ("the FP adder of `atom.fadd` / `atoms.fadd` (the LSU's, the L2's: "
                    "operands from a register, 4 cycles)", _atomic_adder),
    "dot-tree": ("a dot-product tree of the matrix unit, k = 8 (tiny's), on the falling "
                 "edge; its inputs registered on that edge too, as the unit's operand "
                 "copies are", _dot_tree),
}
"""The units ``--unit`` knows: name -> (what it is, its FPGA form)."""

FALLING_EDGE_INPUTS = frozenset({"dot-tree"})
"""Units whose inputs come from registers on the falling edge of the clock in the GPU (the
matrix unit's trees read its operand copies in their own domain): a rising-edge register
there would give the harness half-cycle paths the GPU does not have."""


@dataclass
class UnitResult:
    """One unit's figures: the flow's result (its critical path included) and its ports."""

    name: str
    result: SynthResult
    port_bits: int  # the unit's input and output bits, each in a register here

    @property
    def path_from(self) -> str:
        return _cell(self.result.path[0].net) if self.result.path else ""

    @property
    def path_to(self) -> str:
        return _cell(self.result.path[-1].net) if self.result.path else ""

    @property
    def path_ns(self) -> float:
        return sum(s.delay_ns for s in self.result.path)


def registered_ports(unit: wiring.Component, falling_inputs: bool = False
                     ) -> tuple[Module, list[Signal]]:
    """``unit`` under a module that registers each of its inputs (on the falling edge with
    ``falling_inputs``) and outputs: the module and its ports (the inputs before their
    registers, the outputs after theirs)."""
    m = Module()
    m.submodules.unit = unit
    domain = "sync"
    if falling_inputs:
        m.domains.inputs = ClockDomain("inputs", clk_edge="neg", local=True, reset_less=True)
        m.d.comb += ClockSignal("inputs").eq(ClockSignal("sync"))
        domain = "inputs"
    ports = []
    for path, member, value in unit.signature.flatten(unit):
        name = "_".join(str(p) for p in path)
        bits = value.as_value() if hasattr(value, "as_value") else value
        port = Signal(len(bits), name=name)
        ports.append(port)
        if member.flow == In:
            m.d[domain] += bits.eq(port)
        else:
            m.d.sync += port.eq(bits)
    return m, ports


def synthesize_unit(name: str, workdir: Path, freq_mhz: float = 100.0, seed: int = 1,
                    progress: Callable[[str], None] = print, timing_weight: int | None = None,
                    speed: int = SPEED_GRADE) -> UnitResult:
    """Run the flow on unit ``name`` (a key of :data:`UNITS`) with its ports registered
    (``timing_weight`` and ``speed`` as :func:`~simtgpu.rtlsim.synth.synthesize_verilog`)."""
    if name not in UNITS:
        raise ValueError(f"unknown unit {name!r}; known: {', '.join(UNITS)}")
    t = time.monotonic()
    m, ports = registered_ports(UNITS[name][1](), name in FALLING_EDGE_INPUTS)
    text = verilog.convert(m, name="top", ports=ports)
    res = synthesize_verilog(name, text, "top", workdir, freq_mhz, "ecp5", seed, progress,
                             verilog_s=time.monotonic() - t, timing_weight=timing_weight,
                             speed=speed)
    return UnitResult(name, res, sum(len(p) for p in ports))


def _cell(cell: str) -> str:
    """A flip-flop or RAM cell's name without yosys' mapping suffixes: the register it is."""
    cell = cell.removeprefix("unit.").lstrip("\\")
    for cut in ("_TRELLIS_FF", "_DP16KD", "_MULT18X18D", "$"):
        cell = cell.split(cut)[0]
    return cell


def render_units(results: list[UnitResult], command: str, info: dict[str, str]) -> str:
    """The markdown table of ``results``."""
    grades = sorted({r.result.speed_grade for r in results} - {None})
    lines = [
        "## Synthesis: datapath units alone", "",
        "Each unit in its FPGA form (clock enables), every input and output registered, "
        "through the flow "
        "of `simtgpu synth` (yosys `synth_ecp5`, nextpnr-ecp5 `--85k --out-of-context`"
        + "".join(f", speed grade -{g}" for g in grades) + "). "
        "A unit's Fmax bounds the whole GPU's.", "",
        f"Commit {info['commit']}, {info['date']}. Command: `{command}`.", "",
        "| unit | what | LUT4 | carry | FF | MULT18 | DP16KD | LUT sites | Fmax MHz "
        "| worst path (register to register) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        c = r.result.cells
        fmax = f"{r.result.fmax_mhz:.1f}" if r.result.fmax_mhz else "not placed"
        path = f"`{r.path_from}` -> `{r.path_to}`, {r.path_ns:.1f} ns" if r.path_ns else ""
        lines.append(
            f"| `{r.name}` | {UNITS[r.name][0]} | {c.get('LUT4', 0):,} | {c.get('CCU2C', 0):,} "
            f"| {c.get('TRELLIS_FF', 0):,} | {c.get('MULT18X18D', 0):,} "
            f"| {c.get('DP16KD', 0):,} | {lut_equivalents(c):,} | {fmax} | {path} |")
    return "\n".join(lines)
