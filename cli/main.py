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
from simtgpu.errors import SimtgpuError, SourceErrors

MAX_ERRORS_SHOWN = 50
"""A file with more source errors than this (a binary or a wrong file given as source) shows
the first ones and a count, not a screenful per line."""

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
        print(render_error(e), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # Ctrl-C outside a launch (which stops on its own, as a fault)
        print(f"simtgpu {args.command}: interrupted", file=sys.stderr)
        return 130


def render_error(e: SimtgpuError) -> str:
    """The error as the user sees it; of many source errors the first
    :data:`MAX_ERRORS_SHOWN`, then how many more there are."""
    if isinstance(e, SourceErrors) and len(e.errors) > MAX_ERRORS_SHOWN:
        shown = SourceErrors(e.errors[:MAX_ERRORS_SHOWN]).render()
        last = e.errors[-1]
        # the assembler stops at its own limit with a last, placed note: show it, not a total
        stopped = last.message.startswith("too many errors")
        more = len(e.errors) - MAX_ERRORS_SHOWN - stopped
        if stopped:
            return f"{shown}\n... and {more} more error(s)\n{last.render()}"
        return f"{shown}\n... and {more} more error(s), {len(e.errors)} in all"
    return e.render()


if __name__ == "__main__":
    sys.exit(main())
