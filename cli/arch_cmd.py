"""``simtgpu command-queue``: the command record's field table, as docs/command-queue.md
shows it (generated from :data:`simtgpu.arch.command_queue.RECORD_FIELDS`)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("command-queue", help="print the command record's field table",
                              description="Print the 64-byte command record's field table in "
                              "Markdown, exactly as docs/command-queue.md holds it.")
    p.set_defaults(func=_record_table)


def _record_table(args: argparse.Namespace) -> int:
    from simtgpu.arch.command_queue import record_table_markdown

    sys.stdout.write(record_table_markdown())
    return 0
