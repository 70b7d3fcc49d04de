"""Reading the files the assembler is given: a source (.s) or an object (.sgo).

Only a regular file is read. A directory, a device such as ``/dev/zero`` or a pipe is refused
before any byte is read: reading one would fail half-way, never end, or block for ever. The
file is opened without blocking (opening a pipe that has no writer blocks otherwise) and
checked through the open descriptor, so what is checked is what is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from simtgpu.errors import SimtgpuError, SourceError, SourceLocation


def read_regular_file(path: Path, error: type[SimtgpuError], limit: int | None = None,
                      what: str = "file") -> bytes:
    """The bytes of the regular file ``path``. ``error`` (with the path first in its message)
    when it is something else, or holds more than ``limit`` bytes (``what`` names the kind of
    file in that message); :class:`OSError` as :func:`open` raises it (a missing file, no
    permission)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            raise error(f"{path}: is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise error(f"{path}: is not a regular file (a device or a pipe); give a file")
        if limit is not None and info.st_size > limit:
            raise error(f"{path}: {info.st_size} bytes, larger than any {what} "
                        f"({limit} bytes at most)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            blob = f.read() if limit is None else f.read(limit + 1)
    finally:
        os.close(fd)
    if limit is not None and len(blob) > limit:  # (it grew while being read)
        raise error(f"{path}: more than {limit} bytes, larger than any {what}")
    return blob


def decode_source(raw: bytes, path: str | os.PathLike[str]) -> str:
    """``raw`` as UTF-8 text; a byte that is not UTF-8 is a :class:`SourceError` at its line
    and column of ``path``."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise SourceError(SourceLocation(str(path), line, col),
                          f"the file is not UTF-8 text (byte {raw[e.start]:#04x})") from None
