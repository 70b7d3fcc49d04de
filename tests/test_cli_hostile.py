"""The ``simtgpu`` sub-commands (and ``make demo`` / ``make bench``) under hostile input.

Each case below once printed a Python traceback, hung (a pipe or a device read for ever),
accepted nonsense, or said something misleading ("no such file" for a directory), or found
an unwritable output only after the work was done. Now each is one line that names the file
or option, with exit status 1 (2 for a usage error, as argparse gives), and no traceback.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from simtgpu.assembler.examples import example_asm
from simtgpu.cli.main import main

VADD_ARGS = ["-k", "vector_add", "--grid", "1", "--block", "8", "--config", "tiny",
             "--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:8"]


def _cli(capsys, *argv: str, entry=main) -> tuple[int, str, str]:
    try:
        rc = entry(list(argv))
    except SystemExit as e:  # argparse's usage errors
        rc = e.code
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    f = {
        "dir": tmp_path / "dir.s", "pipe": tmp_path / "pipe.s", "latin1": tmp_path / "l1.s",
        "ok": tmp_path / "ok.s", "file": tmp_path / "plain",
    }
    f["dir"].mkdir()
    os.mkfifo(f["pipe"])
    f["latin1"].write_bytes(b"; ok\n  ; caf\xe9\n")
    f["ok"].write_text(Path(example_asm("vector_add")).read_text())
    f["file"].write_text("x")
    return f


def _no_hang(capsys, pipe: Path, *argv: str) -> tuple[int, str]:
    """Run the command in a thread; if it blocks on ``pipe`` (the old behaviour) open the
    pipe's other end so the reader gets end-of-file, and fail."""
    result: dict[str, object] = {}

    def work() -> None:
        try:
            result["rc"] = main(list(argv))
        except BaseException as e:  # noqa: BLE001 - reported below
            result["error"] = e

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(10)
    hung = t.is_alive()
    if hung:
        fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(10)
    err = capsys.readouterr().err
    assert not hung, f"simtgpu {' '.join(argv)} blocked reading a pipe"
    assert "error" not in result, result.get("error")
    return int(result["rc"]), err  # type: ignore[call-overload]


# -- asm, disasm ------------------------------------------------------------------------------
def test_asm_says_what_the_input_is(capsys, files) -> None:
    rc, _, err = _cli(capsys, "asm", str(files["dir"]))
    assert rc == 1 and err.strip() == f"error: {files['dir']}: is a directory, not a file"
    rc, _, err = _cli(capsys, "asm", str(files["pipe"]))
    assert rc == 1 and "is not a regular file (a device or a pipe)" in err


def test_asm_non_utf8_names_line_and_column(capsys, files) -> None:
    rc, _, err = _cli(capsys, "asm", str(files["latin1"]))
    assert rc == 1
    assert err.startswith(f"{files['latin1']}:2:8: error: the file is not UTF-8 text (byte 0xe9)")


def test_asm_refuses_an_empty_or_directory_output(capsys, files, tmp_path) -> None:
    rc, _, err = _cli(capsys, "asm", str(files["ok"]), "-o", "")
    assert rc == 1 and "-o '': the file name is empty" in err
    assert not (tmp_path / "ok.sgo").exists()  # (it used to write the default name instead)
    rc, _, err = _cli(capsys, "asm", str(files["ok"]), "-o", str(files["dir"]))
    assert rc == 1 and "is a directory; name a file" in err


def test_disasm_of_a_pipe_does_not_hang(capsys, files) -> None:
    rc, err = _no_hang(capsys, files["pipe"], "disasm", str(files["pipe"]))
    assert rc == 1 and "is not a regular file (a device or a pipe)" in err


# -- command-queue --update -------------------------------------------------------------------
def test_command_queue_update_input_problems(capsys, files) -> None:
    rc, _, err = _cli(capsys, "command-queue", "--update", str(files["latin1"]))
    assert rc == 1 and f"{files['latin1']}:2:8: error: the file is not UTF-8" in err
    rc, err = _no_hang(capsys, files["pipe"], "command-queue", "--update", str(files["pipe"]))
    assert rc == 1 and "--update" in err and "is not a regular file" in err


def test_command_queue_update_write_failure(capsys, tmp_path, monkeypatch) -> None:
    from simtgpu.arch.command_queue import core_counter_table_markdown, record_table_markdown

    doc = tmp_path / "doc.md"
    doc.write_text(record_table_markdown() + "\n" + core_counter_table_markdown())

    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_text", refuse)
    rc, _, err = _cli(capsys, "command-queue", "--update", str(doc))
    assert rc == 1 and f"--update {doc}: cannot write: Permission denied" in err


# -- run ----------------------------------------------------------------------------------
def test_run_says_the_module_is_a_directory(capsys, files) -> None:
    rc, _, err = _cli(capsys, "run", str(files["dir"]), *VADD_ARGS)
    assert rc == 1 and f"{files['dir']}: is a directory, not a file" in err


@pytest.mark.parametrize("value", ["0", "-5", "ten"])
def test_run_budget_is_a_usage_error_naming_the_option(capsys, files, value) -> None:
    rc, _, err = _cli(capsys, "run", str(files["ok"]), *VADD_ARGS, "--budget", value)
    assert rc == 2 and "argument --budget:" in err


@pytest.mark.parametrize("grid", ["1_0", "\uff11", "0x2", "1e1"])
def test_run_grid_takes_plain_decimal_integers(capsys, files, grid) -> None:
    args = list(VADD_ARGS)
    args[args.index("--grid") + 1] = grid
    rc, out, err = _cli(capsys, "run", str(files["ok"]), *args)
    assert rc == 1 and "expected X[,Y[,Z]] with integers" in err and "done" not in out


@pytest.mark.parametrize("option, name", [("--stats-json", "s.json"), ("--plot", "s.png")])
def test_run_checks_its_outputs_before_the_launch(capsys, files, option, name) -> None:
    bad = files["file"] / name  # a folder that is a file: cannot be made
    rc, out, err = _cli(capsys, "run", str(files["ok"]), *VADD_ARGS, option, str(bad))
    assert rc == 1 and f"{option} {bad}: cannot write" in err
    assert "done" not in out  # refused before the launch ran


def test_run_fault_outside_the_code_says_so(capsys, tmp_path) -> None:
    src = tmp_path / "off.s"
    src.write_text(".kernel k\n    nop\n.end\n")
    rc, _, err = _cli(capsys, "run", str(src), "-k", "k", "--grid", "1", "--block", "4")
    assert rc == 1
    assert "kernel fault: PC_OUT_OF_RANGE" in err
    assert "  pc          0x0004  (no instruction: outside the code)\n" in err
    assert "block       (0, 0, 0)   core 0" in err


# -- rtl -----------------------------------------------------------------------------------
def test_rtl_checks_the_output_before_generating(capsys, files, monkeypatch) -> None:
    from simtgpu.rtlsim import verilator_runner, verilog_export

    calls = []

    def generate(*args, **kw):
        calls.append(args)
        raise AssertionError("generation started")

    monkeypatch.setattr(verilator_runner, "harness_verilog", generate)
    monkeypatch.setattr(verilog_export, "timed_verilog", generate)
    for out, words in ((files["dir"], "is a directory; name a file"),
                       (files["file"] / "gpu.v", "cannot write"), ("", "file name is empty")):
        rc, _, err = _cli(capsys, "rtl", "--config", "tiny", "-o", str(out))
        assert rc == 1 and words in err, err
    assert calls == []


# -- waves ---------------------------------------------------------------------------------
def test_waves_dump_that_is_not_a_file(capsys, files) -> None:
    rc, _, err = _cli(capsys, "waves", "info", str(files["dir"]))
    assert rc == 1 and f"{files['dir']}: is a directory, not a file" in err
    rc, err = _no_hang(capsys, files["pipe"], "waves", "info", str(files["pipe"]))
    assert rc == 1 and "is not a regular file" in err


@pytest.mark.parametrize("argv, words", [
    (["pipeline", "DUMP", "-o", "p.txt"], "p.txt: name a .png file"),
    (["signals", "DUMP", "-s", "x", "-o", "s.pdf"], "s.pdf: name a .png file"),
    (["pipeline", "DUMP", "-o", "BAD/p.png"], "cannot write"),
    (["pipeline", "DUMP", "--konata", "BAD/p.kanata"], "--konata"),
    (["pipeline", "DUMP", "--konata", "DIR"], "is a directory; name a file"),
    (["signals", "DUMP", "-s", "x", "--first", "500", "--last", "100", "-o", "s.png"],
     "--first 500 is after --last 100"),
])
def test_waves_outputs_are_checked_before_the_dump_is_read(capsys, files, tmp_path, argv,
                                                          words) -> None:
    dump = tmp_path / "empty.vcd"  # unreadable as a dump: the output is refused first
    dump.write_text("")
    subst = {"DUMP": str(dump), "BAD/p.png": str(files["file"] / "p.png"),
             "BAD/p.kanata": str(files["file"] / "p.kanata"), "DIR": str(files["dir"]),
             "p.txt": str(tmp_path / "p.txt"), "s.pdf": str(tmp_path / "s.pdf"),
             "s.png": str(tmp_path / "s.png")}
    rc, _, err = _cli(capsys, "waves", *[subst.get(a, a) for a in argv])
    assert rc == 1 and words in err, err


@pytest.mark.parametrize("cycles", ["0", "-5"])
def test_waves_pipeline_cycles_must_be_positive(capsys, tmp_path, cycles) -> None:
    rc, _, err = _cli(capsys, "waves", "pipeline", str(tmp_path / "x.fst"), "-o",
                      str(tmp_path / "p.png"), "--cycles", cycles)
    assert rc == 2 and "argument --cycles: the number of cycles is positive" in err


# -- make demo, make bench -----------------------------------------------------------------
@pytest.mark.parametrize("argv, rc, words", [
    (["--size", "-5"], 2, "argument --size: the demo adds at least 1 element"),
    (["--size", "0"], 2, "argument --size"),
    (["--seed", "-1"], 2, "argument --seed: a seed is a non-negative integer"),
    (["--size", "100000000000"], 1, "--size 100000000000: three arrays"),
])
def test_demo_options(capsys, argv, rc, words) -> None:
    from simtgpu.cli.demo import main as demo

    got, _, err = _cli(capsys, "--backend", "iss", *argv, entry=demo)
    assert got == rc and words in err


@pytest.mark.parametrize("argv, rc, words", [
    (["--scale", "nan"], 2, "--scale positive and finite"),
    (["--scale", "inf"], 2, "--scale positive and finite"),
    (["--scale", "1e12", "--only", "vector_add", "--warp", "8", "--runs", "1", "--no-write"], 1,
     "--scale 1e+12: the buffers"),
    (["--output", "DIR", "--only", "vector_add", "--warp", "8", "--runs", "1", "--scale",
      "0.001"], 1, "--output DIR: is a directory"),
])
def test_bench_options(capsys, files, argv, rc, words) -> None:
    from simtgpu.cli.bench import main as bench

    argv = [str(files["dir"]) if a == "DIR" else a for a in argv]
    got, _, err = _cli(capsys, *argv, entry=bench)
    assert got == rc and words.replace("DIR", str(files["dir"])) in err, err


def test_a_garbage_source_shows_the_first_errors_and_a_count(capsys, tmp_path) -> None:
    from simtgpu.cli.main import MAX_ERRORS_SHOWN

    src = tmp_path / "junk.s"
    src.write_text("bogus r1\n" * (MAX_ERRORS_SHOWN + 10))
    rc, _, err = _cli(capsys, "asm", str(src))
    assert rc == 1
    heads = [line for line in err.splitlines() if ": error: " in line]
    assert len(heads) == MAX_ERRORS_SHOWN and heads[0].startswith(f"{src}:1:1: error: ")
    assert err.rstrip().endswith(f"... and 10 more error(s), {MAX_ERRORS_SHOWN + 10} in all")


@pytest.mark.parametrize("freq", ["nan", "inf", "0"])
def test_synth_frequency_must_be_positive_and_finite(capsys, monkeypatch, freq) -> None:
    from simtgpu.rtlsim import synth

    def never(*a, **k):
        raise AssertionError("synthesis started")

    monkeypatch.setattr(synth, "synthesize", never)  # (nan once went through to yosys)
    rc, _, err = _cli(capsys, "synth", "--freq", freq)
    assert rc == "simtgpu synth: --freq must be positive and finite (MHz)"


def test_synth_timing_weight_must_not_be_negative(capsys, monkeypatch) -> None:
    from simtgpu.rtlsim import synth

    def never(*a, **k):
        raise AssertionError("synthesis started")

    monkeypatch.setattr(synth, "synthesize", never)
    rc, _, err = _cli(capsys, "synth", "--timing-weight", "-3")
    assert rc == "simtgpu synth: --timing-weight must be zero or more"


def test_synth_speed_grade_is_one_the_part_has(capsys, monkeypatch) -> None:
    from simtgpu.rtlsim import synth

    def never(*a, **k):
        raise AssertionError("synthesis started")

    monkeypatch.setattr(synth, "synthesize", never)
    rc, _, err = _cli(capsys, "synth", "--speed", "9")
    assert rc == 2 and "argument --speed: invalid choice: 9" in err


def test_ctrl_c_is_one_line_and_status_130(capsys, files, monkeypatch) -> None:
    from simtgpu.cli import asm_cmd

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(asm_cmd, "read_text", interrupted)
    try:
        rc, _, err = _cli(capsys, "asm", str(files["ok"]))
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped from simtgpu as a traceback")
    assert rc == 130 and err == "simtgpu asm: interrupted\n"


def test_a_source_past_the_assemblers_limit_ends_with_its_stop_note(capsys, tmp_path) -> None:
    """The assembler stops after MAX_ERRORS with a placed note; the CLI shows the first
    errors, how many more there are, and the note (not a total that understates the file)."""
    from simtgpu.assembler.assembler import MAX_ERRORS
    from simtgpu.cli.main import MAX_ERRORS_SHOWN

    src = tmp_path / "junk.s"
    src.write_text("bogus r1\n" * (MAX_ERRORS + 500))
    rc, _, err = _cli(capsys, "asm", str(src))
    lines = err.rstrip().splitlines()
    assert rc == 1
    assert f"... and {MAX_ERRORS - MAX_ERRORS_SHOWN} more error(s)" in lines
    assert lines[-1] == (f"{src}:{MAX_ERRORS + 1}:1: error: too many errors (more than "
                         f"{MAX_ERRORS}), stopping at line {MAX_ERRORS + 1}")
