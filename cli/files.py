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

from simtgpu.assembler.inputs import decode_source
from simtgpu.errors import SimtgpuError


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
    return decode_source(read_bytes(p, what), p)


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
        except (FileExistsError, NotADirectoryError):  # a file where a folder must be
            folder = next((f for f in reversed(p.parents) if f.exists() and not f.is_dir()),
                          p.parent)
            raise SimtgpuError(f"{prefix}{p}: cannot write: {folder} is a file, not a "
                               "folder") from None
        except OSError as e:
            raise SimtgpuError(f"{prefix}{p}: cannot write: {e.strerror or e}") from None
        if not existed:
            p.unlink(missing_ok=True)
    return p
