"""docs/tutorial.md runs as written: every command and code block it shows is executed here.

The tutorial is walked top to bottom in one scratch directory (with ``examples`` linked in,
as if it were a checkout), because later steps use the files earlier steps made:

- a fenced block preceded by ``<!-- file: NAME -->`` is written to ``NAME``;
- a ```` ```python ```` block is written to a file and run as ``__main__``; its assertions
  compare with NumPy. A ```` ```text ```` block preceded by ``<!-- output -->`` is what the
  block before it prints;
- a ```` ```sh ```` block holds ``$ command`` lines, each followed by the output it shows.
  ``simtgpu`` commands run in this process through ``simtgpu.cli.main.main``, ``python``
  with this interpreter, anything else through ``bash``. The exit status must be 0, or the
  one given by a preceding ``<!-- exit: N -->``.

Shown output must appear in the real output line by line, in order; a line ``...`` stands
for lines left out, ``...`` within a line for any text there, and wall-clock figures
(``12.3 ms``, ``0.01 M thread-instr/s``) match any value.
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from simtgpu.cli.main import main as simtgpu_main

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"

_FENCE = re.compile(r"^```(\w*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*(file|exit|output)\s*:?\s*(.*?)\s*-->$")
_TIMING = [
    (re.compile(r"\d+(\.\d+)? ms\b"), "<T> ms"),
    (re.compile(r"\d+(\.\d+)? M thread-instr/s"), "<R> M thread-instr/s"),
]


@dataclass
class Block:
    """One fenced block of the tutorial and the directives just above it."""

    lang: str
    line: int  # 1-based line of the opening fence
    text: str
    directives: dict[str, str] = field(default_factory=dict)


@dataclass
class Command:
    argv: str  # the command as shown, continuation lines joined
    expected: list[str]
    line: int


def parse_blocks(markdown: str) -> list[Block]:
    blocks: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        directives: dict[str, str] = {}
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        while j >= 0 and (d := _DIRECTIVE.match(lines[j].strip())):
            directives[d.group(1)] = d.group(2)
            j -= 1
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        assert end < len(lines), f"tutorial.md:{i + 1}: fence never closed"
        blocks.append(Block(m.group(1), i + 1, "\n".join(lines[i + 1:end]) + "\n", directives))
        i = end + 1
    return blocks


def parse_commands(block: Block) -> list[Command]:
    """``$ cmd`` lines (a trailing backslash continues) and the output lines after each."""
    cmds: list[Command] = []
    lines = block.text.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("$ "):
            parts = [line[2:]]
            start = block.line + 1 + k
            while parts[-1].endswith("\\"):
                parts[-1] = parts[-1][:-1]
                k += 1
                parts.append(lines[k].strip())
            cmds.append(Command(" ".join(p.strip() for p in parts), [], start))
        else:
            assert cmds, f"tutorial.md:{block.line + 1 + k}: output before any '$ ' command"
            cmds[-1].expected.append(line)
        k += 1
    return cmds


def _normal(line: str) -> str:
    line = line.rstrip()
    for pattern, repl in _TIMING:
        line = pattern.sub(repl, line)
    return line


def check_output(shown: list[str], actual: str, where: str) -> None:
    """Every shown line (bar ``...``) occurs in ``actual``, in order."""
    got = [_normal(x) for x in actual.splitlines()]
    pos = 0
    for want in shown:
        w = _normal(want)
        if not w or w.strip() == "...":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in w.split("...")))
        while pos < len(got) and not pattern.fullmatch(got[pos]):
            pos += 1
        if pos == len(got):
            raise AssertionError(f"{where}: shown line not in the real output (or out of "
                                 f"order):\n  {want!r}\nreal output:\n{actual}")
        pos += 1


def run_command(cmd: str, cwd: Path) -> tuple[int, str]:
    """Run one shown command in ``cwd``; returns (exit status, stdout and stderr)."""
    argv = shlex.split(cmd)
    if argv[0] == "simtgpu":
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                rc = simtgpu_main(argv[1:])
            except SystemExit as e:  # argparse usage errors
                rc = e.code if isinstance(e.code, int) else 1
        return rc, buf.getvalue()
    if argv[0] == "python":
        argv[0] = sys.executable
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    else:
        proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                              timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def run_python(block: Block, path: Path) -> str:
    """Run the block as a script (a file, so that ``@jit`` can read its source); stdout."""
    path.write_text(block.text)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(str(path), run_name="__main__")
    except Exception as e:
        raise AssertionError(f"tutorial.md:{block.line}: the python block raised "
                             f"{type(e).__name__}: {e}\nits output:\n{buf.getvalue()}") from e
    return buf.getvalue()


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return parse_blocks(TUTORIAL.read_text())


def test_tutorial_has_the_promised_steps(blocks):
    """The walk-through below is only as good as what the page holds."""
    cmds = [c.argv for b in blocks if b.lang == "sh" for c in parse_commands(b)]
    for sub in ("simtgpu asm ", "simtgpu disasm ", "simtgpu run ", "simtgpu compile "):
        assert any(c.startswith(sub) for c in cmds), f"no '{sub.strip()}' command shown"
    run = " ".join(c for c in cmds if c.startswith("simtgpu run "))
    for opt in ("--print", "--stats", "--trace"):
        assert opt in run
    assert any(b.directives.get("exit") == "1" for b in blocks), "no fault shown"
    assert any(b.directives.get("file") == "scale_clamp.s" for b in blocks), "no kernel file"
    assert sum(b.lang == "python" for b in blocks) >= 3
    for b in blocks:
        assert b.lang in ("sh", "python", "text", "asm", "json", ""), \
            f"tutorial.md:{b.line}: unexpected block language {b.lang!r}"
        if b.lang == "sh":
            assert parse_commands(b), f"tutorial.md:{b.line}: sh block without '$ ' commands"


@pytest.fixture()
def default_dsl_device():
    """DSL launches go to the default device, as in a fresh reader's process (another test in
    this worker may have set one of a different configuration)."""
    import simtgpu.compiler_backend as triton

    triton.set_device(None)
    yield
    triton.set_device(None)


def test_tutorial_runs_as_written(blocks, tmp_path, monkeypatch, default_dsl_device):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    last_output: str | None = None
    ran = 0
    for n, b in enumerate(blocks):
        where = f"tutorial.md:{b.line}"
        name = b.directives.get("file")
        if b.lang == "text" and "output" in b.directives:
            assert last_output is not None, f"{where}: output block after no python block"
            check_output(b.text.splitlines(), last_output, where)
            last_output = None
            continue
        last_output = None
        if b.lang == "python":
            last_output = run_python(b, tmp_path / (name or f"_tutorial_block_{n}.py"))
            ran += 1
        elif name:
            (tmp_path / name).write_text(b.text)
        elif b.lang == "sh":
            want_rc = int(b.directives.get("exit", "0"))
            for cmd in parse_commands(b):
                rc, out = run_command(cmd.argv, tmp_path)
                at = f"tutorial.md:{cmd.line}: {cmd.argv}"
                assert rc == want_rc, f"{at}: exit status {rc}, expected {want_rc}\n{out}"
                check_output(cmd.expected, out, at)
                ran += 1
    assert ran >= 10
