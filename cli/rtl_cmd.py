"""``simtgpu rtl``: write the Verilog of a GPU configuration, optionally lint it.

    simtgpu rtl --config tiny -o build/gpu-tiny.v
    simtgpu rtl --config small --top harness -o build/harness-small.v --lint
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simtgpu.arch.config import CONFIGS
from simtgpu.errors import SimtgpuError


class RtlCommandError(SimtgpuError):
    """A ``simtgpu rtl`` invocation that cannot be carried out (bad path, lint failure)."""


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
    p.add_argument("--lint", action="store_true",
                   help="then run verilator --lint-only -Wall with rtlsim/lint_waivers.vlt")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simtgpu.rtl.configs import get_rtl_config
    from simtgpu.rtlsim.verilator import lint_verilog
    from simtgpu.rtlsim.verilog_export import generate_verilog

    cfg = get_rtl_config(args.config)
    out = Path(args.output)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(generate_verilog(cfg, args.top))
    except OSError as e:
        raise RtlCommandError(f"{out}: cannot write Verilog: {e.strerror}") from None
    print(f"wrote {out} ({args.top}, config {cfg.name}: {cfg.cores} cores x {cfg.warps} warps "
          f"x {cfg.lanes} lanes)")
    if args.lint:
        problems = lint_verilog(out, args.top)
        if problems:
            raise RtlCommandError(f"{out}: verilator lint found problems:\n{problems}")
        print(f"{out}: verilator --lint-only -Wall clean (waivers: rtlsim/lint_waivers.vlt)")
    return 0
