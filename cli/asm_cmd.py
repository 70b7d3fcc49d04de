"""``simtgpu asm``, ``simtgpu disasm`` and ``simtgpu isa``: the assembler's command line."""

from __future__ import annotations

import argparse
import os
import sys

from simtgpu.errors import SimtgpuError

from .files import input_file, output_file, read_text


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("asm", help="assemble a .s file into a .sgo object",
                              description="Assemble FILE.s into a kernel object (.sgo).")
    p.add_argument("source", metavar="FILE.s")
    p.add_argument("-o", "--output", metavar="FILE.sgo",
                   help="output object (default: the source's name with .sgo)")
    p.add_argument("-l", "--listing", action="store_true",
                   help="print address, encoding and source line of everything emitted")
    p.set_defaults(func=_asm)

    p = subparsers.add_parser("disasm", help="disassemble a .sgo object",
                              description="Print an object as assembly that re-assembles "
                              "to the same object.")
    p.add_argument("object", metavar="FILE.sgo")
    p.add_argument("--no-comments", action="store_true",
                   help="leave out the address/encoding comments")
    p.set_defaults(func=_disasm)

    p = subparsers.add_parser("isa", help="print the instruction set",
                              description="Print the instruction set as a summary table, or "
                              "the full reference (docs/isa.md) with --markdown.")
    p.add_argument("--markdown", action="store_true", help="the full reference in Markdown")
    p.set_defaults(func=_isa)


def _asm(args: argparse.Namespace) -> int:
    from simtgpu.assembler import assemble_with_listing

    src = input_file(args.source)
    out = src.with_suffix(".sgo") if args.output is None else output_file(args.output, "-o")
    text = read_text(src)
    obj, listing = assemble_with_listing(text, str(src))
    try:
        obj.write(out)
    except OSError as e:
        raise SimtgpuError(f"{out}: cannot write: {e.strerror}") from None
    if args.listing:
        for item in listing:
            prefix = "" if item.section == "code" else "d:"
            chunks = [item.data[i:i + 4] for i in range(0, len(item.data), 4)]
            for i, chunk in enumerate(chunks[:8]):
                enc = chunk[::-1].hex() if len(chunk) == 4 else chunk.hex()
                source = f"{item.line_no:5}  {item.source}" if i == 0 else ""
                print(f"{prefix}{item.offset + 4 * i:06x}  {enc:8}  {source}".rstrip())
            if len(chunks) > 8:
                print(f"{prefix}{item.offset + 32:06x}  ...       ({len(item.data)} bytes)")
    return 0


def _disasm(args: argparse.Namespace) -> int:
    from simtgpu.assembler import ObjectFile, disassemble_object

    if os.path.exists(args.object):  # (a missing file: the object reader says so)
        input_file(args.object)  # not a directory, a device or a pipe (reading one hangs)
    obj = ObjectFile.from_file(args.object)
    sys.stdout.write(f"; {args.object}: {len(obj.code)} bytes of code, {len(obj.data)} bytes "
                     f"of data, {len(obj.kernels)} kernel(s)\n")
    sys.stdout.write(disassemble_object(obj, comments=not args.no_comments))
    return 0


def _isa(args: argparse.Namespace) -> int:
    from simtgpu.isa.markdown import render_markdown, render_summary

    sys.stdout.write(render_markdown() if args.markdown else render_summary())
    return 0
