"""README.md's commands work as printed.

Each command of the README's command-line block runs in a scratch directory that holds the
examples (as a checkout does), with the tutorial test's runner; it must exit 0. The ``make``
targets that the README names must each be one that ``make help`` lists (``make demo`` and
``make test`` are what CI itself runs).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from test_tutorial import parse_blocks, run_command

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _commands() -> list[tuple[int, str]]:
    """(line, command) of every command in the README's sh blocks, continuations joined and
    trailing comments removed."""
    out = []
    for block in parse_blocks(README.read_text()):
        if block.lang != "sh":
            continue
        joined, start = "", 0
        for i, line in enumerate(block.text.splitlines()):
            if not joined:
                start = block.line + 1 + i
            code = re.sub(r"\s+#.*$", "", line).rstrip()
            if code.endswith("\\"):
                joined += code[:-1] + " "
                continue
            joined += code
            if joined.strip():
                out.append((start, joined.strip()))
            joined = ""
    return out


def test_every_tool_command_runs_as_printed(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "build").mkdir()
    ran = 0
    for line, cmd in _commands():
        if cmd.startswith("make "):
            continue
        rc, out = run_command(cmd, tmp_path)
        assert rc == 0, f"README.md:{line}: {cmd}\nexit status {rc}\n{out}"
        if " --waves " in cmd:  # the run says where its waveform went
            assert "waveform: build/run.fst" in out, out
        ran += 1
    assert ran >= 8
    assert (tmp_path / "build" / "run.fst").stat().st_size > 0  # the RTL run's waveform
    assert (tmp_path / "build" / "run.jsonl").stat().st_size > 0  # and its retire trace
    assert (tmp_path / "build" / "run.kanata").read_text().startswith("Kanata")
    stats = json.loads((tmp_path / "build" / "stats.json").read_text())
    assert stats["backend"] == "rtl" and stats["cycles"] > 0 and stats["timeline"]["samples"]
    assert (tmp_path / "build" / "stats.png").read_bytes()[:4] == b"\x89PNG"


def test_every_make_target_shown_exists() -> None:
    listed = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    targets = {line.split()[0] for line in listed.splitlines() if line.strip()}
    shown = {cmd.split()[1] for _, cmd in _commands() if cmd.startswith("make ")}
    assert shown >= {"demo", "test", "bench", "regress", "fuzz"}
    assert shown <= targets, f"README shows make targets that do not exist: {shown - targets}"
