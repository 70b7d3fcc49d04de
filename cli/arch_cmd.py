"""``simtgpu command-queue``: the command record's field table and the per-core counter
window, as docs/command-queue.md shows them (generated from
:data:`simtgpu.arch.command_queue.RECORD_FIELDS` and ``CoreCounter``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("command-queue", help="print the command record's field table",
                              description="Print the 64-byte command record's field table and "
                              "the per-core performance-counter window in Markdown, exactly "
                              "as docs/command-queue.md holds them.")
    p.add_argument("--update", metavar="FILE.md", type=Path,
                   help="replace the tables in FILE.md (each found by its header row) "
                   "instead of printing them; `make docs` does this")
    p.set_defaults(func=_record_table)


def _record_table(args: argparse.Namespace) -> int:
    from simtgpu.arch.command_queue import core_counter_table_markdown, record_table_markdown
    from simtgpu.errors import SimtgpuError

    from .files import read_text

    tables = [record_table_markdown(), core_counter_table_markdown()]
    if args.update is None:
        sys.stdout.write("\n".join(tables))
        return 0
    lines = read_text(args.update, "--update").splitlines(keepends=True)
    for table in tables:
        header = table.splitlines(keepends=True)[0]
        if header not in lines:
            raise SimtgpuError(f"{args.update}: no table with the header row {header.strip()!r}")
        start = lines.index(header)
        end = start
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        lines[start:end] = table.splitlines(keepends=True)
    try:
        args.update.write_text("".join(lines))
    except OSError as e:
        raise SimtgpuError(f"--update {args.update}: cannot write: {e.strerror or e}") from None
    return 0
