"""``simtgpu run``: assemble or load a kernel, make its arguments, launch it, show results.

    simtgpu run examples/asm/vector_add.s --kernel vector_add --grid 4 --block 256 \\
        --arg a=f32[1000]:rand b=f32[1000]:rand c=f32[1000] n=i32:1000 --print c[:8] --stats

Arguments are matched to the kernel's parameters by name (see driver_model/argspec.py for
the forms). A kernel fault prints the fault report and exits 1. ``--stats`` adds IPC and the
stall shares, per core and in total, ``--json``/``--stats-json FILE`` write the same as JSON
(docs/statistics.md), ``--plot FILE.png`` draws them (driver_model/statistics.py).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

import numpy as np
from simtgpu.arch.config import CONFIGS, MEMORY_SETTINGS
from simtgpu.driver_model.argspec import ArgSpec, parse_arg, parse_print
from simtgpu.driver_model.errors import DriverError
from simtgpu.isa.abi import LOCAL_PARAM

from .argtypes import int_at_least, seed_type
from .files import output_file


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="run a kernel on a backend (ISS by default)",
        description="Assemble (.s) or load (.sgo) a module and launch one of its kernels.")
    p.add_argument("module", metavar="KERNEL.s|.sgo", help="assembly source or object file")
    p.add_argument("--kernel", "-k", required=True, help="kernel name in the module")
    p.add_argument("--grid", required=True, help="blocks: X[,Y[,Z]]")
    p.add_argument("--block", required=True, help="threads per block: X[,Y[,Z]]")
    p.add_argument("--arg", dest="args", action="extend", nargs="+", default=[],
                   metavar="SPEC", help="NAME=TYPE[N]:INIT (array) or NAME=TYPE:VALUE")
    p.add_argument("--shared", type=int, default=0, metavar="BYTES",
                   help="dynamic shared memory bytes on top of the kernel's .shared")
    p.add_argument("--local-bytes", type=_local_bytes, default=0, metavar="BYTES",
                   help=f"local memory per thread for a kernel whose last parameter is the "
                   f"hidden {LOCAL_PARAM} (register spills; `simtgpu compile` reports the "
                   "bytes); docs/execution-model.md")
    p.add_argument("--backend", default="iss", help="iss (default), rtl or cuda")
    p.add_argument("--config", default="small", choices=sorted(CONFIGS),
                   help="GPU configuration (default small)")
    p.add_argument("--print", dest="prints", action="append", default=[], metavar="NAME[SLICE]",
                   help="print an array argument after the run, e.g. c[:8] (repeatable)")
    p.add_argument("--trace", metavar="FILE",
                   help="write the retire trace (JSON lines, docs/trace-format.md; ISS or RTL)")
    p.add_argument("--waves", metavar="FILE.fst|FILE.vcd",
                   help="with --backend rtl: dump a waveform of the run, FST or (named *.vcd) "
                        "VCD (docs/waveforms.md)")
    p.add_argument("--memory", choices=MEMORY_SETTINGS, default=None,
                   help="with --backend rtl: device-memory timing of the DRAM model (default "
                   "ideal; docs/memory-system.md)")
    p.add_argument("--l1", choices=("on", "off"), default=None,
                   help="with --backend rtl: build each core with its L1 data cache (the "
                   "configuration's default size) or without (default: the configuration's "
                   "own; docs/memory-system.md)")
    p.add_argument("--l2", choices=("on", "off"), default=None,
                   help="with --backend rtl: build the GPU with its shared L2 (the "
                   "configuration's default size) or without (default: the configuration's "
                   "own; docs/memory-system.md)")
    p.add_argument("--stats", action="store_true",
                   help="print the launch statistics: counts, IPC and stall shares per core "
                   "and in total")
    p.add_argument("--json", action="store_true",
                   help="write the statistics as JSON on stdout (the run's other messages "
                   "go to stderr); schema in docs/statistics.md")
    p.add_argument("--stats-json", metavar="FILE",
                   help="write the statistics as JSON into FILE")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the statistics (needs matplotlib: the 'plot' extra): on the RTL "
                   "the stall breakdown per core and in total and the issue rate over time, on the "
                   "ISS the "
                   "instruction mix")
    p.add_argument("--seed", type=seed_type, default=0, help="seed for :rand initialisers")
    p.add_argument("--budget", type=int_at_least(1, "an instruction budget is a positive "
                                                 "number of warp-instructions"),
                   default=None, metavar="N",
                   help="instruction budget of the launch (ISS watchdog; the RTL refuses it)")
    p.set_defaults(func=run)


# ASCII digits between blanks (int() would also take 1_0 and ４, and \s matches control
# characters such as \x1f that int() refuses): the number is converted from its group alone
_DIM = re.compile(r"[ \t]*([-+]?[0-9]+)[ \t]*")


def parse_dims(text: str, what: str) -> tuple[int, ...]:
    found = [_DIM.fullmatch(x) for x in text.split(",")]
    if not all(found):
        raise DriverError(f"--{what} {text!r}: expected X[,Y[,Z]] with integers")
    dims = tuple(int(f.group(1)) for f in found)
    if not 1 <= len(dims) <= 3:
        raise DriverError(f"--{what} {text!r}: expected 1 to 3 dimensions")
    return dims


def bind_args(kernel: Any, specs: list[ArgSpec]) -> list[ArgSpec]:
    """Order the specs as the kernel's parameters; every parameter exactly once, types
    matching (an array goes to a ``ptr`` parameter)."""
    by_name: dict[str, ArgSpec] = {}
    for s in specs:
        if s.name in by_name:
            raise DriverError(f"--arg {s.text}: '{s.name}' given twice")
        by_name[s.name] = s
    params = kernel.info.params
    if params and params[-1].name == LOCAL_PARAM:  # (the driver fills it: --local-bytes)
        params = params[:-1]
        if LOCAL_PARAM in by_name:
            raise DriverError(f"--arg {by_name[LOCAL_PARAM].text}: {LOCAL_PARAM} is the hidden "
                              "local-memory parameter, which the driver fills in: give its "
                              "bytes per thread with --local-bytes")
    names = {p.name for p in params}
    unknown = [s.name for s in specs if s.name not in names]
    if unknown:
        raise DriverError(f"--arg: {kernel.name} has no parameter(s) {', '.join(unknown)}; "
                          f"signature: {kernel.signature}")
    missing = [p.name for p in params if p.name not in by_name]
    if missing:
        raise DriverError(f"--arg: missing {', '.join(missing)}; signature: {kernel.signature}")
    ordered = []
    for p in params:
        s = by_name[p.name]
        ok = (p.type == "ptr" and (s.is_array or s.type == "ptr")) or \
             (not s.is_array and s.type == p.type)
        if not ok:
            given = f"an array of {s.type}" if s.is_array else f"a {s.type} scalar"
            raise DriverError(f"--arg {s.text}: parameter '{p.name}' is {p.type}, "
                              f"given {given}; signature: {kernel.signature}")
        ordered.append(s)
    return ordered


def fault_report(fault: Any) -> str:
    r = fault.record
    bx, by, bz = r.block
    lanes = [i for i in range(32) if r.lane_mask >> i & 1]
    if not r.names_an_instruction(r.cause, r.lane_mask):
        return f"kernel fault: {r.cause.name}\n  detail      {r.detail}"
    lines = [
        f"kernel fault: {r.cause.name}",
        f"  pc          0x{r.pc:04x}  {r.instruction or '(no instruction: outside the code)'}",
        f"  block       ({bx}, {by}, {bz})   core {r.core}",
        f"  warp        {r.warp}",
        f"  lanes       0x{r.lane_mask:08x}  {lanes}",
    ]
    if r.detail:
        lines.append(f"  detail      {r.detail}")
    return "\n".join(lines)


def _local_bytes(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0 or value % 4:
        raise argparse.ArgumentTypeError(f"local memory per thread is a non-negative "
                                         f"multiple of 4 bytes, not {value}")
    return value


def _check_local(kernel: Any, local_bytes: int) -> None:
    """--local-bytes against the kernel's hidden local-memory parameter."""
    params = kernel.info.params
    has = bool(params) and params[-1].name == LOCAL_PARAM
    if has and not local_bytes:
        raise DriverError(f"kernel {kernel.name} keeps values in local memory (its last "
                          f"parameter is {LOCAL_PARAM}): give its bytes per thread with "
                          "--local-bytes BYTES (`simtgpu compile` reports them)")
    if local_bytes and not has:
        raise DriverError(f"--local-bytes {local_bytes}: kernel {kernel.name} has no "
                          f"{LOCAL_PARAM} parameter (it uses no local memory)")


class ProgressReport:
    """Prints, at most every ``every_s`` seconds of a launch, how many warp-instructions the
    ISS has retired, and that Ctrl-C stops the launch."""

    def __init__(self, name: str, every_s: float = 5.0, stream: Any = None):
        self.name, self.every_s = name, every_s
        self.stream = stream
        self.start = self.last = time.monotonic()

    def __call__(self, stats: Any) -> None:
        now = time.monotonic()
        if now - self.last < self.every_s:
            return
        self.last = now
        rate = stats.warp_instructions / max(now - self.start, 1e-9)
        print(f"{self.name}: running, {stats.warp_instructions:,} warp-instructions "
              f"({rate:,.0f}/s); Ctrl-C stops the launch",
              file=self.stream or sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from simtgpu.driver_model.device import Device

    specs = [parse_arg(t) for t in args.args]
    prints = [parse_print(t) for t in args.prints]
    grid = parse_dims(args.grid, "grid")
    block = parse_dims(args.block, "block")
    options: dict[str, Any] = {}
    if args.budget is not None:
        options["instruction_budget"] = args.budget
    if args.waves:
        if args.backend != "rtl":
            raise DriverError("--waves needs --backend rtl (only the RTL has signals to dump)")
        options["waves"] = args.waves
    if args.memory:
        if args.backend != "rtl":
            raise DriverError("--memory needs --backend rtl (the ISS is functional: it has no "
                              "memory timing)")
        options["memory"] = args.memory
    if args.l1 is not None:
        if args.backend != "rtl":
            raise DriverError("--l1 needs --backend rtl (the ISS has no caches)")
        options["l1"] = args.l1 == "on"
    if args.l2 is not None:
        if args.backend != "rtl":
            raise DriverError("--l2 needs --backend rtl (the ISS has no caches)")
        options["l2"] = args.l2 == "on"
    if args.plot and not args.plot.lower().endswith(".png"):
        raise DriverError(f"--plot {args.plot}: name a .png file")
    # outputs written after the launch: their places are checked before it runs
    for option, path in (("--plot", args.plot), ("--stats-json", args.stats_json)):
        if path is not None and path != "-":
            output_file(path, option, probe=True)
    out = sys.stderr if args.json else sys.stdout  # with --json, stdout is the JSON alone
    dev = Device(backend=args.backend, config=args.config, **options)
    try:
        rc = _run_on(dev, args, specs, prints, grid, block, out)
    finally:
        dev.close()  # the RTL model finishes its waveform as it exits
    if args.waves:
        print(f"waveform: {args.waves} (docs/waveforms.md)", file=out)
    return rc


def _run_on(dev: Any, args: argparse.Namespace, specs: list[ArgSpec], prints: list,
            grid: tuple[int, ...], block: tuple[int, ...], out: Any) -> int:
    from simtgpu.sim import KernelFault

    mod = dev.load_module(args.module)
    kernel = mod.kernel(args.kernel)
    iss = getattr(dev.backend, "iss", None)
    if iss is not None:  # a long simulation says how far it is and how to stop it
        iss.progress = ProgressReport(kernel.name)
    ordered = bind_args(kernel, specs)
    _check_local(kernel, args.local_bytes)
    arrays = {s.name: s for s in ordered if s.is_array}
    for name, _ in prints:
        if name not in arrays:
            raise DriverError(f"--print {name}: not an array argument "
                              f"(arrays: {', '.join(arrays) or 'none'})")
    rng = np.random.default_rng(args.seed)
    launch_args = []
    buffers = {}
    for s in ordered:
        if s.is_array:
            buffers[s.name] = dev.to_device(s.make_array(rng))
            launch_args.append(buffers[s.name])
        else:
            launch_args.append(s.value)
    timeline = None
    if (args.json or args.stats_json or args.plot) and hasattr(dev.backend, "timeline"):
        from simtgpu.driver_model.statistics import CounterTimeline

        timeline = dev.backend.timeline = CounterTimeline()
    try:
        res = dev.launch(kernel, grid, block, launch_args, shared_bytes=args.shared,
                         trace=args.trace, local_bytes=args.local_bytes)
    except KernelFault as fault:
        print(fault_report(fault), file=sys.stderr)
        return 1
    finally:
        if timeline is not None:
            dev.backend.timeline = None
    print(f"{kernel.name}: done, grid {res.grid} block {res.block} on {res.backend} "
          f"({res.instructions} warp-instructions)", file=out)
    for name, index in prints:
        host = buffers[name].to_host()
        try:
            view = host[index] if index else host
        except IndexError as e:
            raise DriverError(f"--print {name}: {e}") from None
        with np.printoptions(threshold=64, linewidth=100):
            print(f"{name}{_index_text(index)} = {view}", file=out)
    if args.stats or args.json or args.stats_json or args.plot:
        from simtgpu.driver_model import statistics as st

        stats = st.launch_statistics(res, dev.config, timeline)
        if args.stats:
            print(res.report(), file=out)
            print(st.render_statistics(stats), file=out)
            timing = getattr(dev.backend.config, "memory_timing", None)
            if args.backend == "rtl" and timing is not None:
                print(f"  device memory        {timing.describe(4 * dev.config.lanes)}",
                      file=out)
        if args.stats_json:
            st.write_statistics_json(stats, args.stats_json)
        if args.json:
            st.write_statistics_json(stats, "-")
        if args.plot:
            what = st.plot_statistics(stats, args.plot)
            print(f"plot: {args.plot} ({what})", file=out)
    return 0


def _index_text(index: tuple) -> str:
    if not index:
        return ""
    parts = []
    for i in index:
        if isinstance(i, slice):
            t = f"{'' if i.start is None else i.start}:{'' if i.stop is None else i.stop}"
            parts.append(t + (f":{i.step}" if i.step is not None else ""))
        else:
            parts.append(str(i))
    return "[" + ", ".join(parts) + "]"
