"""The ``simtgpu`` command: one entry point, one sub-command module per tool.

Sub-commands register themselves through ``register(subparsers)`` in their own modules so
that each tool owns its command-line surface. User mistakes arrive here as
:class:`simtgpu.errors.SimtgpuError` and are printed without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from simtgpu import __version__
from simtgpu.errors import SimtgpuError

# module name -> sub-commands it registers (imported lazily so `simtgpu isa` stays fast)
COMMAND_MODULES = (
    "simtgpu.cli.asm_cmd",  # asm, disasm, isa
    "simtgpu.cli.run_cmd",  # run
    "simtgpu.cli.rtl_cmd",  # rtl
    "simtgpu.cli.synth_cmd",  # synth
    "simtgpu.cli.compile_cmd",  # compile
    "simtgpu.cli.arch_cmd",  # command-queue
    "simtgpu.cli.waves_cmd",  # waves
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simtgpu", description="an open SIMT GPU in Python")
    parser.add_argument("--version", action="version", version=f"simtgpu {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue  # tool not present in this tree yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SimtgpuError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
