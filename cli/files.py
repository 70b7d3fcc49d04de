"""Input and output files of the sub-commands, checked before any work is done.

Every command that reads a file the user names goes through :func:`input_file`, so a
directory, a device such as ``/dev/zero`` or a pipe is refused with a message that says what
it is (reading one would hang or fail half-way), and a text file that is not UTF-8 is
reported at its line and column like any other source error. Output paths go through
:func:`output_file` before a long computation, so a run is not thrown away because its
result cannot be written.
"""

from __future__ import annotations

import os
from pathlib import Path

from simtgpu.errors import SimtgpuError, SourceError, SourceLocation


def input_file(path: str | os.PathLike[str], what: str = "") -> Path:
    """``path`` when it names a regular file; :class:`SimtgpuError` saying what it is
    otherwise. ``what`` (an option such as ``--update``) prefixes the message."""
    prefix = f"{what} " if what else ""
    if not str(path):
        raise SimtgpuError(f"{prefix}'': the file name is empty")
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        why = "is a directory, not a file"
    elif p.exists():
        why = "is not a regular file (a device or a pipe); give a file"
    else:
        why = "no such file"
    raise SimtgpuError(f"{prefix}{p}: {why}")


def read_bytes(path: str | os.PathLike[str], what: str = "") -> bytes:
    p = input_file(path, what)
    try:
        return p.read_bytes()
    except OSError as e:
        raise SimtgpuError(f"{p}: cannot read: {e.strerror or e}") from None


def read_text(path: str | os.PathLike[str], what: str = "") -> str:
    """The file's text; a byte that is not UTF-8 is a :class:`SourceError` at its place."""
    p = input_file(path, what)
    raw = read_bytes(p, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise SourceError(SourceLocation(str(p), line, col),
                          f"the file is not UTF-8 text (byte {raw[e.start]:#04x})") from None


def output_file(path: str | os.PathLike[str], what: str = "", suffixes: tuple[str, ...] = (),
                probe: bool = False) -> Path:
    """``path`` as an output file: not empty, not a directory, one of ``suffixes`` (lower
    case, with the dot) when given. With ``probe`` its folder is made and the file opened
    for appending (and removed again if this made it), so an unwritable place is found
    before the work that fills it."""
    prefix = f"{what} " if what else ""
    if not str(path):
        raise SimtgpuError(f"{prefix}'': the file name is empty")
    p = Path(path)
    if p.is_dir():
        raise SimtgpuError(f"{prefix}{p}: is a directory; name a file")
    if suffixes and p.suffix.lower() not in suffixes:
        raise SimtgpuError(f"{prefix}{p}: name a {' or '.join(suffixes)} file")
    if probe and (p.is_file() or not p.exists()):  # (a pipe would block the probe)
        existed = p.exists()
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            with open(p, "ab"):
                pass
        except OSError as e:
            raise SimtgpuError(f"{prefix}{p}: cannot write: {e.strerror or e}") from None
        if not existed:
            p.unlink(missing_ok=True)
    return p
