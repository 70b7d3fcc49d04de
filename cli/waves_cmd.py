"""``simtgpu waves``: look into a waveform of the harness (FST or VCD) without a viewer.

    simtgpu waves info build/demo/vector_add.fst
    simtgpu waves pipeline build/demo/vector_add.fst -o build/demo/pipeline.png \\
        --konata build/demo/vector_add.kanata
    simtgpu waves signals build/demo/vector_add.fst -s core0.is_rr.pc -s retire__0__valid \\
        -o build/demo/signals.png --first 300 --last 400
    simtgpu waves layout build/demo/vector_add.fst     # GTKWave save file + Surfer commands

The configuration (cores, warps, lanes) comes from the dump itself; cycles are the model's
(docs/waveforms.md).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simtgpu.errors import SimtgpuError

from .argtypes import int_at_least
from .files import input_file, output_file


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "waves", help="plot a waveform, draw the pipeline, write Konata and viewer layouts",
        description="Tools for a waveform (FST or VCD) of the simtgpu harness: pictures on a "
                    "cycle axis, a Konata pipeline log, GTKWave and Surfer layouts.")
    sub = p.add_subparsers(dest="waves_cmd", metavar="TOOL")
    sub.required = True
    pi = sub.add_parser("info", help="configuration, cycles and variables of a dump")
    pi.add_argument("dump", metavar="FILE.fst|FILE.vcd")
    pi.set_defaults(func=info)
    ps = sub.add_parser("signals", help="plot chosen signals against cycles (PNG)")
    ps.add_argument("dump", metavar="FILE.fst|FILE.vcd")
    ps.add_argument("-s", "--signal", action="append", required=True, metavar="NAME",
                    help="signal, matched by the end of its name (repeatable)")
    ps.add_argument("-o", "--output", required=True, metavar="PNG")
    ps.add_argument("--first", type=int, metavar="CYCLE", help="first cycle shown")
    ps.add_argument("--last", type=int, metavar="CYCLE", help="last cycle shown")
    ps.set_defaults(func=signals)
    pp = sub.add_parser("pipeline", help="pipeline occupancy and stall reasons of a core "
                        "(PNG), and a Konata log")
    pp.add_argument("dump", metavar="FILE.fst|FILE.vcd")
    pp.add_argument("--core", type=int, default=0)
    pp.add_argument("-o", "--output", metavar="PNG", help="the picture")
    pp.add_argument("--konata", metavar="FILE", help="the Konata (Kanata 0004) log")
    pp.add_argument("--first", type=int, metavar="CYCLE",
                    help="first cycle shown (default: the first fetch)")
    pp.add_argument("--cycles", type=int_at_least(1, "the number of cycles is positive"),
                    default=200,
                    help="cycles shown (default 200)")
    pp.set_defaults(func=pipeline)
    pl = sub.add_parser("layout", help="write a GTKWave save file (.gtkw) and a Surfer "
                        "command file that open the pipeline")
    pl.add_argument("dump", metavar="FILE.fst|FILE.vcd")
    pl.set_defaults(func=layout)


def _open(path: str) -> Any:
    """The dump at ``path``; a directory, a device or a pipe is refused before the reader
    sees it (it would wait for ever on a pipe or on /dev/zero)."""
    from simtgpu.verification.waves import open_dump

    return open_dump(input_file(path))


@contextlib.contextmanager
def _writing(what: str) -> Iterator[None]:
    """A file that cannot be written is the user's to fix: one line, no traceback."""
    try:
        yield
    except OSError as e:
        name = f" {e.filename}" if e.filename else ""
        raise SimtgpuError(f"{what}{name}: cannot write: {e.strerror or e}") from None


def info(args: argparse.Namespace) -> int:
    d = _open(args.dump)
    cfg = d.config()
    cycles, _ = d.cycles()
    span = f"cycles {cycles[0]}..{cycles[-1]}" if cycles else "no clock edges"
    anonymous = sum("$" in n.rsplit(".", 1)[-1] for n in d.vars)  # not $rootio.* (Verilator)
    print(f"{d.path}: {d.path.stat().st_size:,} bytes, {len(d.vars):,} variables "
          f"({anonymous} anonymous), timescale {d.timescale}, {span}")
    print(f"configuration: {cfg.cores} core(s), {cfg.warps} warps x {cfg.lanes} lanes")
    return 0


def signals(args: argparse.Namespace) -> int:
    from simtgpu.verification.waves import plot_signals

    if args.first is not None and args.last is not None and args.first > args.last:
        raise SimtgpuError(f"--first {args.first} is after --last {args.last}")
    out = output_file(args.output, "-o", (".png",), probe=True)
    d = _open(args.dump)
    with _writing("-o"):
        print(plot_signals(d, args.signal, out, args.first, args.last))
    return 0


def pipeline(args: argparse.Namespace) -> int:
    from simtgpu.verification.waves import WaveError, plot_pipeline, write_konata
    from simtgpu.verification.waves import pipeline as read_pipeline

    if not args.output and not args.konata:
        raise WaveError("simtgpu waves pipeline: give -o PNG, --konata FILE or both")
    if args.output:
        output_file(args.output, "-o", (".png",), probe=True)
    if args.konata:
        output_file(args.konata, "--konata", probe=True)
    d = _open(args.dump)
    pipe = read_pipeline(d, args.core)
    if args.output:
        with _writing("-o"):
            print(plot_pipeline(pipe, args.output, args.first, args.cycles))
    if args.konata:
        with _writing("--konata"):
            path, recs = write_konata(pipe, args.konata)
        retired = sum(r.retired for r in recs)
        print(f"{path}: {len(recs)} instructions, {retired} retired, "
              f"{len(recs) - retired} squashed (open it in Konata)")
    return 0


def layout(args: argparse.Namespace) -> int:
    from simtgpu.verification.waves import write_gtkw, write_surfer

    d = _open(args.dump)
    with _writing("layout"):
        gtkw, surfer = write_gtkw(d), write_surfer(d)
    print(f"GTKWave: gtkwave {_show(d.path)} {_show(gtkw)}")
    print(f"Surfer:  surfer {_show(d.path)} -c {_show(surfer)}")
    return 0


def _show(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)
