"""`simtgpu asm`, `simtgpu disasm` and `simtgpu isa` through the real entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
from simtgpu.assembler import ObjectFile, assemble_file
from simtgpu.assembler.examples import EXAMPLES_ASM
from simtgpu.cli.main import main
from simtgpu.isa import INSTRUCTIONS
from simtgpu.isa.markdown import render_markdown

EXAMPLES = sorted(EXAMPLES_ASM.glob("*.s"))

PROGRAM = """\
        .kernel k
        .param  p, ptr
        ldparam r1, p
        la      r2, tab
        ldg     r3, [r2+4]
        stg     [r1], r3
        exit
        .end
        .data
tab:    .word   1, 2
"""


def test_asm_writes_object_next_to_source(tmp_path: Path, capsys) -> None:
    src = tmp_path / "k.s"
    src.write_text(PROGRAM)
    assert main(["asm", str(src)]) == 0
    assert capsys.readouterr().out == ""
    assert ObjectFile.from_file(tmp_path / "k.sgo") == assemble_file(src)


def test_asm_listing(tmp_path: Path, capsys) -> None:
    src = tmp_path / "k.s"
    src.write_text(PROGRAM)
    assert main(["asm", str(src), "-o", str(tmp_path / "out.sgo"), "--listing"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # address, the word as a hex value, line number, the source line
    assert lines[0].split() == ["000000", "00000b89", "3", "ldparam", "r1,", "p"]
    assert lines[1].split()[:4] == ["000004", "000013a9", "4", "la"]
    assert lines[2].split() == ["000008", "000013aa"]  # second word of la
    assert lines[-2].split()[:3] == ["d:000000", "00000001", "10"]
    assert lines[-1].split() == ["d:000004", "00000002"]
    assert (tmp_path / "out.sgo").exists()


def test_asm_reports_every_mistake_with_location(tmp_path: Path, capsys) -> None:
    src = tmp_path / "bad.s"
    src.write_text("""\
        .kernel k
        addi r1, r2, 5000
        fmull r1, r2, r3
        bra nowhere
        .end
""")
    assert main(["asm", str(src)]) == 1
    err = capsys.readouterr().err
    heads = [line for line in err.splitlines() if ": error: " in line]
    assert heads == [
        f"{src}:2:22: error: immediate 5000 out of range -1024..1023 for addi",
        f"{src}:3:9: error: unknown mnemonic 'fmull' (did you mean 'fmul'?)",
        f"{src}:4:13: error: undefined label 'nowhere'",
    ]
    assert "        addi r1, r2, 5000\n" in err
    assert "Traceback" not in err
    assert not (tmp_path / "bad.sgo").exists()


def test_missing_input_files(tmp_path: Path, capsys) -> None:
    assert main(["asm", str(tmp_path / "nope.s")]) == 1
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'nope.s'}: no such file"
    assert main(["disasm", str(tmp_path / "nope.sgo")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_disasm_rejects_a_non_object(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "x.sgo"
    bad.write_bytes(b"hello world")
    assert main(["disasm", str(bad)]) == 1
    assert "not a simtgpu object file" in capsys.readouterr().err


@pytest.mark.parametrize("source", [*EXAMPLES, None], ids=lambda p: p.name if p else "data")
def test_disasm_output_reassembles_to_the_same_object(source: Path | None, tmp_path: Path,
                                                      capsys) -> None:
    if source is None:
        source = tmp_path / "k.s"
        source.write_text(PROGRAM)
    obj_path = tmp_path / "a.sgo"
    assert main(["asm", str(source), "-o", str(obj_path)]) == 0
    for flags in ([], ["--no-comments"]):
        capsys.readouterr()
        assert main(["disasm", str(obj_path), *flags]) == 0
        text = capsys.readouterr().out
        again = tmp_path / "again.s"
        again.write_text(text)
        assert assemble_file(again) == ObjectFile.from_file(obj_path), text


def test_isa_summary_and_markdown(capsys) -> None:
    assert main(["isa"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines()[2:] if line.strip()}
    assert {i.mnemonic for i in INSTRUCTIONS} <= listed
    assert main(["isa", "--markdown"]) == 0
    assert capsys.readouterr().out == render_markdown()


def test_docs_isa_md_is_current() -> None:
    path = Path(__file__).parents[2] / "docs" / "isa.md"
    assert path.read_text() == render_markdown(), (
        "docs/isa.md is out of date with isa/: run `make docs`")
