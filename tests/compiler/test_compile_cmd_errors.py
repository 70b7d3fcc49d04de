"""``simtgpu compile``: every mistake on its command line is a one-line error, never a
traceback (each case once ended in one, or was accepted and failed later)."""

from __future__ import annotations

import pytest
from simtgpu.assembler.examples import EXAMPLES
from simtgpu.cli.main import main

KERNEL = str(EXAMPLES / "dsl" / "vector_add.py")
BASE = [KERNEL, "-k", "add_kernel", "-D", "BLOCK_SIZE=64"]


@pytest.mark.parametrize(("args", "message"), [
    (["--num-warps", "0"], "expected a power of two from 1 to 32, not 0"),
    (["--num-warps", "-1"], "expected a power of two from 1 to 32, not -1"),
    (["--num-warps", "3"], "expected a power of two from 1 to 32, not 3"),
    (["--warp-size", "3"], "expected a power of two from 4 to 32, not 3"),
])
def test_bad_numbers_are_usage_errors(capsys, args, message) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compile", *BASE, *args])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--block", "0"], "--block 0: expected X[,Y[,Z]], each at least 1"),
    (["--block", "1,1,1,1"], "--block 1,1,1,1: expected X[,Y[,Z]], each at least 1"),
    (["--block", "4,x"], "--block 4,x: expected X[,Y[,Z]]"),
])
def test_bad_block_is_an_error(capsys, args, message) -> None:
    assert main(["compile", *BASE, *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_output_naming_a_directory_is_an_error(capsys, tmp_path) -> None:
    assert main(["compile", *BASE, "-o", str(tmp_path)]) == 1
    assert f"-o {tmp_path}: is a directory" in capsys.readouterr().err


def test_unwritable_output_is_an_error(capsys, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "x.s"  # a path below a file cannot be created
    assert main(["compile", *BASE, "-o", str(out)]) == 1
    assert f"-o {out}: cannot write" in capsys.readouterr().err


def test_good_output_is_written(capsys, tmp_path) -> None:
    out = tmp_path / "sub" / "add.s"
    assert main(["compile", *BASE, "-o", str(out)]) == 0
    assert ".kernel add_kernel" in out.read_text()
