"""``simtgpu rtl``: write the Verilog of a GPU configuration, optionally lint it.

    simtgpu rtl --config tiny -o build/gpu-tiny.v
    simtgpu rtl --config small --top harness -o build/harness-small.v --lint
"""

from __future__ import annotations

import argparse
from typing import Any

from simtgpu.arch.config import CONFIGS
from simtgpu.errors import SimtgpuError

from .files import output_file


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "rtl", help="write the Verilog of a GPU configuration",
        description="Generate Verilog for the GPU (or the simulation harness: GPU + memory "
        "model with backdoor ports) of a named configuration.")
    p.add_argument("--config", default="small", choices=sorted(CONFIGS),
                   help="GPU configuration (default small)")
    p.add_argument("--top", default="gpu", choices=("gpu", "harness", "core"),
                   help="gpu: the GPU alone; harness: GPU + simulation memory; core: one "
                   "SIMT core (default gpu)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.v", help="Verilog file")
    p.add_argument("--stats", action="store_true",
                   help="print where the generation time went (elaboration, RTLIL, yosys) and "
                   "the Verilog lines of each unit kind")
    p.add_argument("--flat", action="store_true",
                   help="write every unit instance as its own module (Amaranth's own output) "
                   "instead of each distinct core and lane unit once (docs/microarchitecture.md)")
    p.add_argument("--lint", action="store_true",
                   help="then run verilator --lint-only -Wall with rtlsim/lint_waivers.vlt")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simtgpu.rtl.configs import get_rtl_config
    from simtgpu.rtlsim.verilator import lint_verilog
    from simtgpu.rtlsim.verilator_runner import harness_verilog
    from simtgpu.rtlsim.verilog_export import module_lines, timed_verilog

    cfg = get_rtl_config(args.config)
    # the place is checked before the generation (minutes for a large configuration)
    out = output_file(args.output, "-o", probe=True)
    try:
        if args.stats or args.flat:
            text, times = timed_verilog(cfg, args.top, reuse=not args.flat)
        else:  # the cached copy of these hardware sources when there is one (build/verilog)
            text = harness_verilog(cfg, args.top).read_text()
        out.write_text(text)
    except OSError as e:
        raise SimtgpuError(f"{out}: cannot write Verilog: {e.strerror}") from None
    print(f"wrote {out} ({args.top}, config {cfg.name}: {cfg.cores} cores x {cfg.warps} warps "
          f"x {cfg.lanes} lanes)")
    if args.stats:
        print(f"{text.count(chr(10)):,} lines, {len(text) / 1e6:.1f} MB; CPU seconds: "
              f"elaborate {times['elaborate']:.1f}, netlist + RTLIL {times['rtlil']:.1f}, yosys "
              f"(RTLIL to Verilog) {times['yosys']:.1f}; {times['wall']:.1f} s of wall time "
              f"({times['jobs']} at once)")
        lines = module_lines(text)
        total = sum(lines.values())
        print("lines by unit (copies summed; a shared module <Class>_u<n> once):")
        for name, n in lines.most_common(12):
            print(f"  {n:>9,} {100 * n / total:5.1f} %  {name}")
    if args.lint:
        problems = lint_verilog(out, args.top)
        if problems:
            raise SimtgpuError(f"{out}: verilator lint found problems:\n{problems}")
        print(f"{out}: verilator --lint-only -Wall clean (waivers: rtlsim/lint_waivers.vlt)")
    return 0
