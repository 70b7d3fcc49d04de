"""Hostile sources: each small input here once crashed, hung or misplaced an error.

Every one must end in a SourceErrors (never a foreign exception), promptly, at the right line
and column; the ones that are valid assemble to what a hand computation says.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from simtgpu.assembler import ObjectFile, ObjectFormatError, assemble, assemble_file
from simtgpu.errors import SimtgpuError, SourceError, SourceErrors

HANG_GUARD_S = 5.0  # not a speed target: these took 50 s and more before


def _errors(src: str) -> list[SourceError]:
    start = time.monotonic()
    with pytest.raises(SourceErrors) as info:
        assemble(src, "t.s")
    assert time.monotonic() - start < HANG_GUARD_S
    return info.value.errors


def _first(src: str) -> tuple[int, int, str]:
    e = _errors(src)[0]
    return e.loc.line, e.loc.col, e.message


@pytest.mark.parametrize(("name", "src", "line", "col", "words"), [
    ("150 nested parentheses", "addi r1, r1, " + "(" * 150 + "1" + ")" * 150, 1, 78,
     "parentheses deep"),
    ("3,600-digit hex literal", "addi r1, r1, 0x" + "f" * 3600, 1, 14, "value too large"),
    ("long literal in .word", ".data\n.word 0x" + "f" * 3600, 2, 7, "value too large"),
    ("5,000-digit decimal in li", "li r1, " + "9" * 5000, 1, 8, "value too large"),
    (".space 1<<63", ".data\n.space 1<<63", 2, 1, "larger than 64 MiB"),
    (".space 1<<40", ".data\n.space 1<<40", 2, 1, "larger than 64 MiB"),
    (".equ squaring chain", ".equ a0, 0xffffffff\n"
     + "\n".join(f".equ a{i + 1}, a{i}*a{i}" for i in range(22)), 3, 12, "value too large"),
    ("shift past 64 bits", "addi r1, r1, (1<<63)<<63", 1, 21, "value too large"),
    ("li 1e1000000", "li r1, 1e1000000", 1, 8, "out of range for binary32"),
    ("5,000-digit float", ".data\n.float 1." + "1" * 5000, 2, 8, "too many digits"),
    ("Arabic-Indic digits as a number", "addi r1, r1, \u0661\u0662", 1, 14,
     "unexpected character"),
    ("Arabic-Indic digit as a register", "addi r\u0661, r1, 1", 1, 7, "unexpected character"),
])
def test_hostile_source_is_refused_at_its_place(name, src, line, col, words) -> None:
    got_line, got_col, message = _first(src)
    assert (got_line, got_col) == (line, col), (name, message)
    assert words in message, (name, message)


def test_a_thousand_unary_operators_evaluate_without_recursion() -> None:
    # -~x is x + 1; 500 pairs on 1 give 501 (hand-computed), in the 16-bit immediate
    obj = assemble(".kernel k\naddi r1, r0, " + "-~" * 500 + "1\nexit\n.end\n", "t.s")
    word = struct.unpack_from("<I", obj.code)[0]
    assert struct.unpack("<I", assemble(".kernel k\naddi r1, r0, 501\nexit\n.end\n").code[:4]
                         )[0] == word


@pytest.mark.parametrize("char", ["\f", "\v", "\x1c", "\x85", "\u2028", "\u2029"])
def test_only_newline_ends_a_line(char: str) -> None:
    # the character sits in a comment; the error on line 4 must be reported on line 4
    src = f".kernel k\n; a comment {char} that goes on\nexit\nbogus r1\n.end\n"
    line, col, message = _first(src)
    assert (line, col) == (4, 1) and "unknown mnemonic 'bogus'" in message


def test_byte_order_mark_is_accepted() -> None:
    plain = assemble(".kernel k\nexit\n.end\n", "t.s")
    assert assemble("\ufeff.kernel k\nexit\n.end\n", "t.s").code == plain.code


def test_windows_line_ends_are_accepted() -> None:
    plain = assemble(".kernel k\naddi r1, r0, 7\nexit\n.end\n", "t.s")
    assert assemble(".kernel k\r\naddi r1, r0, 7\r\nexit\r\n.end\r\n", "t.s").code == plain.code


def test_tiny_float_rounds_to_zero_keeping_its_sign() -> None:
    obj = assemble(".data\nx: .float 1e-1000000, -1e-1000000\n", "t.s")
    assert struct.unpack("<II", obj.data[:8]) == (0, 0x8000_0000)


def test_non_utf8_file_names_line_and_column(tmp_path) -> None:
    path = tmp_path / "bad.s"
    path.write_bytes(b".kernel k\nexit ; caf\xe9\n.end\n")
    with pytest.raises(SimtgpuError) as info:
        assemble_file(path)
    assert info.value.render().startswith(f"{path}:2:11: error: the file is not UTF-8")


# -- a file of junk: bounded errors, bounded time ----------------------------------------------
JUNK_LINES = 200_000
JUNK_TIME_S = 20.0  # not a speed target: this took 66-118 s before (it finishes in ~0.1 s)


def test_a_junk_file_stops_after_max_errors_promptly() -> None:
    from simtgpu.assembler.assembler import MAX_ERRORS

    # every line a different unknown word: each once asked difflib for a "did you mean"
    src = "\n".join(f"junk{i} r1, r2, r3" for i in range(JUNK_LINES))
    start = time.monotonic()
    with pytest.raises(SourceErrors) as info:
        assemble(src, "junk.s")
    assert time.monotonic() - start < JUNK_TIME_S
    errors = info.value.errors
    assert len(errors) == MAX_ERRORS + 1
    assert all("unknown mnemonic 'junk" in e.message for e in errors[:-1])
    last = errors[-1]
    stop = MAX_ERRORS + 1  # the line of the first error past the bound
    assert (last.loc.file, last.loc.line, last.loc.col) == ("junk.s", stop, 1)
    assert last.render() == (f"junk.s:{stop}:1: error: too many errors (more than "
                             f"{MAX_ERRORS}), stopping at line {stop}")


def test_exactly_max_errors_are_all_reported_without_a_stop_entry() -> None:
    from simtgpu.assembler.assembler import MAX_ERRORS

    errors = _errors("\n".join(f"junk{i}" for i in range(MAX_ERRORS)))
    assert len(errors) == MAX_ERRORS and "too many" not in errors[-1].message


def test_errors_of_the_second_pass_stop_too() -> None:
    from simtgpu.assembler.assembler import MAX_ERRORS

    # pass 1 accepts every line; pass 2 finds each label undefined (with a hint among 3,000
    # labels: the hints are what used to cost seconds here)
    n = 3000
    src = (".kernel k\n" + "\n".join(f"label_{i}: bra lbl_{i}x" for i in range(n))
           + "\nexit\n.end\n")
    errors = _errors(src)
    assert len(errors) == MAX_ERRORS + 1
    assert errors[0].message == "undefined label 'lbl_0x' (did you mean 'label_0'?)"
    assert errors[-1].message == (f"too many errors (more than {MAX_ERRORS}), stopping at "
                                  f"line {MAX_ERRORS + 2}")


def test_hints_are_difflibs() -> None:
    import difflib

    from simtgpu.assembler.suggest import Suggester

    names = ["loop", "done", "table", "start_1", "start_2", "x", "a_long_label_name"]
    s = Suggester(names)
    for word in ["lop", "loops", "dne", "tabel", "start_3", "y", "a_long_label_nme", "zzz",
                 "", "s" * 500]:
        want = difflib.get_close_matches(word, names, n=1)
        assert s(word) == (want[0] if want else None), word


# -- files that are not regular files ------------------------------------------------------
def _returns(call, unblock: Path | None = None):
    """``call()``'s exception (or None), failing the test if it blocked reading ``unblock``,
    a pipe: then its other end is opened and closed so the reader sees end-of-file."""
    result: dict[str, BaseException | None] = {}

    def work() -> None:
        try:
            call()
            result["error"] = None
        except BaseException as e:  # noqa: BLE001 - checked by the caller
            result["error"] = e

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(HANG_GUARD_S)
    hung = t.is_alive()
    if hung and unblock is not None:
        os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))
        t.join(HANG_GUARD_S)
    assert not hung, "blocked reading a pipe"
    return result["error"]


@pytest.fixture
def pipe(tmp_path: Path) -> Path:
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return p


NOT_REGULAR = "is not a regular file (a device or a pipe)"


def test_object_file_from_a_pipe_or_device_is_refused_unread(pipe: Path) -> None:
    for path, unblock in ((pipe, pipe), (Path(os.devnull), None)):
        e = _returns(lambda p=path: ObjectFile.from_file(p), unblock)
        assert isinstance(e, ObjectFormatError) and str(e) == f"{path}: {NOT_REGULAR}; give a file"


def test_assemble_file_from_a_pipe_or_device_is_refused_unread(pipe: Path, tmp_path) -> None:
    from simtgpu.assembler import SourceFileError

    for path, unblock in ((pipe, pipe), (Path(os.devnull), None)):
        e = _returns(lambda p=path: assemble_file(p), unblock)
        assert isinstance(e, SourceFileError) and str(e) == f"{path}: {NOT_REGULAR}; give a file"
    with pytest.raises(SourceFileError, match="is a directory, not a file"):
        assemble_file(tmp_path)
    with pytest.raises(SourceFileError, match="no such file"):
        assemble_file(tmp_path / "missing.s")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_object_file_from_dev_zero_is_refused() -> None:
    # run apart, with its memory bounded: the old reader read /dev/zero until memory ran out
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from simtgpu.assembler import ObjectFile, ObjectFormatError\n"
            "try:\n"
            "    ObjectFile.from_file('/dev/zero')\n"
            "except ObjectFormatError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == f"/dev/zero: {NOT_REGULAR}; give a file", out.stderr[-300:]


def test_object_file_size_is_bounded_before_reading(tmp_path: Path) -> None:
    from simtgpu.assembler.objfile import MAX_OBJECT_BYTES

    big = tmp_path / "big.sgo"
    with open(big, "wb") as f:
        f.truncate(MAX_OBJECT_BYTES + 1)  # sparse: no disk used, and it is not read
    with pytest.raises(ObjectFormatError) as info:
        ObjectFile.from_file(big)
    assert str(info.value) == (f"{big}: {MAX_OBJECT_BYTES + 1} bytes, larger than any object "
                               f"file ({MAX_OBJECT_BYTES} bytes at most)")


def test_truncated_object_file_is_a_clear_error(tmp_path: Path) -> None:
    blob = assemble(".kernel k\nexit\n.end\n").to_bytes()
    path = tmp_path / "cut.sgo"
    path.write_bytes(blob[:-4])
    with pytest.raises(ObjectFormatError, match=rf"^{path}: truncated: the header says "
                       rf"{len(blob)} bytes, the file has {len(blob) - 4}$"):
        ObjectFile.from_file(path)
