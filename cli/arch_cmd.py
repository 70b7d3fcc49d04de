"""``simtgpu command-queue``: the command record's field table, as docs/command-queue.md
shows it (generated from :data:`simtgpu.arch.command_queue.RECORD_FIELDS`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("command-queue", help="print the command record's field table",
                              description="Print the 64-byte command record's field table in "
                              "Markdown, exactly as docs/command-queue.md holds it.")
    p.add_argument("--update", metavar="FILE.md", type=Path,
                   help="replace the table in FILE.md (the one that starts with the table's "
                   "header row) instead of printing it; `make docs` does this")
    p.set_defaults(func=_record_table)


def _record_table(args: argparse.Namespace) -> int:
    from simtgpu.arch.command_queue import record_table_markdown
    from simtgpu.errors import SimtgpuError

    table = record_table_markdown()
    if args.update is None:
        sys.stdout.write(table)
        return 0
    try:
        lines = args.update.read_text().splitlines(keepends=True)
    except OSError as e:
        raise SimtgpuError(f"{args.update}: cannot read: {e.strerror or e}") from None
    header = table.splitlines(keepends=True)[0]
    if header not in lines:
        raise SimtgpuError(f"{args.update}: no record table (a line {header.strip()!r})")
    start = lines.index(header)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    args.update.write_text("".join(lines[:start]) + table + "".join(lines[end:]))
    return 0
