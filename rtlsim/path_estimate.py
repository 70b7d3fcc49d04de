"""Every register-to-register path of a synthesised ECP5 netlist, estimated before placement.

nextpnr names one path after placing and routing (minutes for a core, hours for a GPU here):
the worst. Cutting paths one at a time that way shows a plateau only as it is reached. This
walks the flattened ``synth_ecp5`` netlist (yosys ``write_json``, the flow's
``netlist.json``) once and gives each endpoint an arrival time from a delay model: flip-flop
and block-RAM outputs start paths; a LUT4, a carry cell, a distributed RAM's read and a
multiplier add their delay and a routing delay per net; flip-flop inputs (data, enable,
set/reset), RAM inputs and output ports end them. Endpoints are grouped by the register or
RAM they belong to (the bits of one signal together) and named by unit and stage as nextpnr's
path is (:func:`simtgpu.rtlsim.synth.unit_stage`).

The model (:class:`Delays`) takes its logic delays from the ones nextpnr reports on its paths
(LUT4 0.24 ns, flip-flop clock to output 0.52 ns, a carry step) and an average routing
delay per net, about what nextpnr's routed paths of the register-shell core show (1.0 ns).
It ranks paths and counts how many stand over a clock period; it is not a routed Fmax: a
routed net is 0.1 to 3 ns, by placement and fan-out, which the netlist does not know.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Delays:
    """Delay model in ns (ECP5, speed grade 6: nextpnr's figures on its reported paths)."""

    route: float = 1.0  # one net, driver to sink: the average on routed cores here
    lut: float = 0.24  # LUT4 (also a distributed RAM's read)
    clk_to_q: float = 0.52  # TRELLIS_FF
    bram_clk_to_out: float = 4.8  # DP16KD output after the clock edge
    carry_in: float = 0.45  # CCU2C: a LUT input to its sum or carry out
    carry_step: float = 0.08  # CCU2C: carry in to carry out (the dedicated chain)
    carry_sum: float = 0.40  # CCU2C: carry in to a sum output
    mult: float = 4.5  # MULT18X18D, combinational (inputs and outputs unregistered)
    setup_bram: float = 0.2
    setup_ff: float = 0.0


@dataclass
class Endpoint:
    """A path end: the latest arrival among the flip-flops of one signal, or one RAM."""

    name: str  # the register's signal (its Q net) or the RAM cell
    kind: str  # "FF", "BRAM", "DPRAM", "port"
    arrival: float  # ns after the clock edge, setup included
    levels: int  # LUT4s and carry cells on that path
    cells: int = 1  # the cells (flip-flops, RAMs) or port bits of this name
    path: list[str] = field(default_factory=list)  # cells from the start to the end


class NetlistError(ValueError):
    """The netlist is not a flattened ``synth_ecp5`` netlist this module can read."""


_BRAM_IN = re.compile(r"^(AD|DI|WE|CE|CS|OCE|RST)")
_BUS = re.compile(r"\[\d+\]$")
_FF_CELL = re.compile(r"_TRELLIS_FF(_Q)?(_\d+)?$")


def _top(netlist: dict) -> tuple[str, dict]:
    mods = netlist.get("modules") or {}
    tops = [(k, v) for k, v in mods.items() if str(v.get("attributes", {}).get("top", "0"))
            not in ("0", "00000000000000000000000000000000")]
    if len(tops) != 1:
        raise NetlistError(f"expected one top module, found {len(tops)}")
    return tops[0]


def _bit_names(mod: dict) -> dict[int, str]:
    """A readable name per net bit: the shortest non-internal net name that carries it."""
    names: dict[int, tuple[int, str]] = {}
    for name, net in mod.get("netnames", {}).items():
        internal = "$" in name.split(".")[-1] or name.startswith("$")
        bits = net.get("bits", [])
        for i, b in enumerate(bits):
            if not isinstance(b, int):
                continue
            label = name if len(bits) == 1 else f"{name}[{i}]"
            rank = (1 if internal else 0) * 10_000 + len(label)
            if b not in names or rank < names[b][0]:
                names[b] = (rank, label)
    return {b: n for b, (_, n) in names.items()}


def estimate(netlist: dict, delays: Delays = Delays()) -> list[Endpoint]:
    """Every endpoint of the top module, by name, slowest first."""
    _, mod = _top(netlist)
    cells = mod.get("cells", {})
    driver: dict[int, tuple[str, str]] = {}
    for cname, c in cells.items():
        for port, bits in c.get("connections", {}).items():
            if c.get("port_directions", {}).get(port) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = (cname, port)
    port_in = {b for p in mod.get("ports", {}).values() if p["direction"] == "input"
               for b in p["bits"] if isinstance(b, int)}

    arrival: dict[int, tuple[float, int, int | None]] = {}  # bit -> (ns, levels, from bit)

    def inputs(c: dict, ports: Iterable[str]) -> list[int]:
        return [b for p in ports for b in c["connections"].get(p, []) if isinstance(b, int)]

    def comb_inputs(cname: str, port: str) -> tuple[list[int], float, list[int], float]:
        """(LUT-like inputs, their delay, chain inputs, their delay) of an output bit."""
        c = cells[cname]
        t = c["type"]
        if t == "LUT4":
            return inputs(c, "ABCD"), delays.lut, [], 0.0
        if t == "CCU2C":
            bit0 = [f"{x}0" for x in "ABCD"]
            bit1 = [f"{x}1" for x in "ABCD"]
            lut = inputs(c, bit0 + (bit1 if port != "S0" else []))
            chain = inputs(c, ["CIN"])
            return lut, delays.carry_in, chain, (delays.carry_step if port == "COUT"
                                                 else delays.carry_sum)
        if t == "TRELLIS_DPR16X4":
            return inputs(c, ["RAD"]), delays.lut, [], 0.0
        if t.startswith("MULT18X18"):
            return inputs(c, [p for p, d in c["port_directions"].items()
                              if d == "input" and p[0] in "AB" and p[1:].isdigit()]), \
                delays.mult, [], 0.0
        raise NetlistError(f"cell {cname} of type {t} drives a path: not modelled")

    def start(b: int) -> tuple[float, int, int | None] | None:
        if b in port_in:
            return (0.0, 0, None)
        if b not in driver:
            return (0.0, 0, None)  # a constant or an undriven bit
        cname, port = driver[b]
        t = cells[cname]["type"]
        if t == "TRELLIS_FF":
            return (delays.clk_to_q, 0, None)
        if t.startswith("DP16KD") or t.startswith("PDPW16KD"):
            return (delays.bram_clk_to_out, 0, None)
        return None

    def arrive(root: int) -> tuple[float, int, int | None]:
        # iterative depth-first walk: netlists are deep (carry chains of hundreds of cells)
        stack = [root]
        while stack:
            b = stack[-1]
            if b in arrival:
                stack.pop()
                continue
            s = start(b)
            if s is not None:
                arrival[b] = s
                stack.pop()
                continue
            cname, port = driver[b]
            lut, d_lut, chain, d_chain = comb_inputs(cname, port)
            todo = [x for x in lut + chain if x not in arrival]
            if todo:
                stack.extend(todo)
                continue
            best = (0.0, 0, None)
            for x in lut:
                t, lv, _ = arrival[x]
                cand = (t + delays.route + d_lut, lv + 1, x)
                if cand[0] > best[0]:
                    best = cand
            for x in chain:  # the carry chain is dedicated wiring: no routing delay
                t, lv, _ = arrival[x]
                cand = (t + d_chain, lv + 1, x)
                if cand[0] > best[0]:
                    best = cand
            arrival[b] = best
            stack.pop()
        return arrival[root]

    names = _bit_names(mod)

    def trace(b: int) -> list[str]:
        steps = []
        while b is not None:
            cname = driver.get(b, ("<port>", ""))[0]
            steps.append(names.get(b, cname))
            b = arrival[b][2]
        return steps[::-1]

    ends: dict[str, Endpoint] = {}

    def end(name: str, kind: str, pins: list[int], setup: float) -> None:
        """One endpoint cell (or port bit) whose input nets are ``pins``: the latest counts."""
        if not pins:
            return
        worst = max(pins, key=lambda b: arrive(b)[0])
        t, lv, _ = arrive(worst)
        t += delays.route + setup
        e = ends.get(name)
        if e is None:
            ends[name] = Endpoint(name, kind, t, lv, 1, [*trace(worst), name])
        else:
            e.cells += 1
            if t > e.arrival:
                e.arrival, e.levels, e.path = t, lv, [*trace(worst), name]

    for cname, c in cells.items():
        t = c["type"]
        conn = c.get("connections", {})
        if t == "TRELLIS_FF":
            # yosys names a flip-flop after the signal it holds: ``<signal>_TRELLIS_FF_Q_<n>``
            name = _FF_CELL.sub("", cname.lstrip("\\"))
            if name.startswith("$") or name == cname:
                name = _BUS.sub("", names.get(conn["Q"][0], cname))
            end(name, "FF", inputs(c, ["DI", "CE", "LSR"]), delays.setup_ff)
        elif t.startswith("DP16KD") or t.startswith("PDPW16KD"):
            ins = [p for p, d in c["port_directions"].items()
                   if d == "input" and _BRAM_IN.match(p)]
            end(cname, "BRAM", inputs(c, ins), delays.setup_bram)
        elif t == "TRELLIS_DPR16X4":
            end(cname, "DPRAM", inputs(c, ["WAD", "DI", "WRE"]), delays.setup_ff)
    for pname, p in mod.get("ports", {}).items():
        if p["direction"] == "output":
            for b in p["bits"]:
                if isinstance(b, int):
                    end(pname, "port", [b], 0.0)
    return sorted(ends.values(), key=lambda e: -e.arrival)


def estimate_file(path: Path, delays: Delays = Delays()) -> list[Endpoint]:
    """:func:`estimate` of a ``write_json`` netlist file."""
    try:
        netlist = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise NetlistError(f"{path}: cannot read a netlist ({e})") from None
    return estimate(netlist, delays)


def histogram(ends: list[Endpoint], edges: Iterable[float] = (10, 12.5, 15, 17.5, 20)
              ) -> list[tuple[str, int, int]]:
    """(range, endpoint names, their cells or port bits) per arrival range."""
    edges = sorted(edges)
    rows = []
    lo = None
    for hi in [*edges, None]:
        sel = [e for e in ends if (lo is None or e.arrival >= lo) and (hi is None
                                                                          or e.arrival < hi)]
        label = (f"< {hi:g} ns" if lo is None else f">= {lo:g} ns" if hi is None
                 else f"{lo:g} to {hi:g} ns")
        rows.append((label, len(sel), sum(e.cells for e in sel)))
        lo = hi
    return rows


def render(ends: list[Endpoint], top: str, period_ns: float, count: int = 20,
           units: Iterable[str] = ()) -> str:
    """Markdown: how many endpoints pass ``period_ns`` and by how much, the ``count``
    slowest by unit and stage, and the slowest one's path."""
    from .synth import unit_stage

    over = [e for e in ends if e.arrival > period_ns]
    edges = [period_ns * f for f in (1.0, 1.25, 1.5, 1.75, 2.0)]
    lines = [f"Estimated from the netlist before placement (rtlsim/path_estimate.py: "
             f"{Delays().route:g} ns of routing per net, nextpnr's logic delays); a ranking, "
             f"not a routed Fmax. {len(over):,} of {len(ends):,} endpoints "
             f"({sum(e.cells for e in over):,} of {sum(e.cells for e in ends):,} flip-flops, "
             f"RAMs and port bits) arrive "
             f"after {period_ns:g} ns.", "",
             "| arrival | endpoints | cells |", "| --- | ---: | ---: |"]
    lines += [f"| {label} | {n:,} | {b:,} |" for label, n, b in histogram(ends, edges)]
    lines += ["", "| estimate (ns) | LUT levels | endpoint | unit | stage | path starts at |",
              "| ---: | ---: | --- | --- | --- | --- |"]
    for e in ends[:count]:
        unit, stage = unit_stage(e.name, top, units)
        src_unit, _ = unit_stage(e.path[0], top, units) if e.path else ("", "")
        cells = f" ({e.cells} cells)" if e.cells > 1 else ""
        lines.append(f"| {e.arrival:.1f} | {e.levels} | `{e.name}`{cells} | `{unit}` | {stage} "
                     f"| `{e.path[0] if e.path else ''}` (`{src_unit}`) |")
    if ends:
        lines += ["", f"The slowest, `{ends[0].name}`: " + " -> ".join(
            f"`{_short(s)}`" for s in _dedupe(ends[0].path)) + "."]
    return "\n".join(lines)


def _short(name: str) -> str:
    """A net name less the cell names yosys and abc append (``x_LUT4_Z_3...`` -> ``x``)."""
    return re.sub(r"_(LUT4|CCU2C|TRELLIS|DOB|DOA)\w*", "", name) or name


def _dedupe(path: list[str]) -> list[str]:
    out: list[str] = []
    for s in path:
        if not out or _short(out[-1]) != _short(s):
            out.append(s)
    return out
