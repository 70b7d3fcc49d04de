"""The compiler wrapper that compiles Verilator's runtime once (rtlsim/objcache.py): an object
is reused only for the same compiler, arguments and preprocessed source, and the model's own
files and profile builds always compile."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from simtgpu.rtlsim import objcache
from simtgpu.rtlsim.verilator import verilator_env

CXX = shutil.which("c++") or shutil.which("g++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (Verilator needs one)")


def _compile(work: Path, runtime: Path, cache: Path, *extra: str) -> tuple[int, bytes]:
    """Compile ``runtime/lib.cpp`` into ``work/lib.o`` through the wrapper, as make would;
    returns the exit status and the object made."""
    env = dict(os.environ, **{objcache.ENV: str(cache)})
    cmd = [sys.executable, objcache.__file__, CXX, "-I.", f"-I{runtime}", "-MMD", *extra,
           "-c", "-o", "lib.o", str(runtime / "lib.cpp")]
    res = subprocess.run(cmd, cwd=work, env=env, capture_output=True)
    return res.returncode, (work / "lib.o").read_bytes() if res.returncode == 0 else b""


def _entries(cache: Path) -> int:
    return len(list(cache.glob("*/obj"))) if cache.exists() else 0


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "lib.cpp").write_text('#include "model.h"\nint f() { return WIDTH * 3; }\n')
    (runtime / "model.h").write_text("#define WIDTH 7\n")
    return runtime, tmp_path / "cache", tmp_path


def _build_dir(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir()
    return d


def test_a_second_build_reuses_the_object(tree) -> None:
    runtime, cache, root = tree
    rc, first = _compile(_build_dir(root, "a"), runtime, cache)
    assert rc == 0 and _entries(cache) == 1
    b = _build_dir(root, "b")
    (runtime / "lib.cpp").touch()  # same text: still the same object
    rc, second = _compile(b, runtime, cache)
    assert rc == 0 and second == first and _entries(cache) == 1
    assert (b / "lib.d").read_text().startswith("lib.o:")  # make's dependency file too


def test_a_header_of_the_build_folder_is_part_of_the_key(tree) -> None:
    """cocotb's verilator.cpp includes the model's Vtop.h from ``-I.``: a build whose header
    differs must not get another build's object."""
    runtime, cache, root = tree
    (runtime / "model.h").unlink()
    a, b = _build_dir(root, "a"), _build_dir(root, "b")
    (a / "model.h").write_text("#define WIDTH 7\n")
    (b / "model.h").write_text("#define WIDTH 9\n")
    _, obj_a = _compile(a, runtime, cache)
    _, obj_b = _compile(b, runtime, cache)
    assert obj_a != obj_b and _entries(cache) == 2


def test_flags_are_part_of_the_key(tree) -> None:
    runtime, cache, root = tree
    _compile(_build_dir(root, "a"), runtime, cache, "-O0")
    _compile(_build_dir(root, "b"), runtime, cache, "-O2")
    assert _entries(cache) == 2


def test_the_models_own_files_and_profile_builds_are_not_cached(tree) -> None:
    runtime, cache, root = tree
    a = _build_dir(root, "a")
    shutil.copy(runtime / "lib.cpp", a / "lib.cpp")  # a source of the build folder
    env = dict(os.environ, **{objcache.ENV: str(cache)})
    cmd = [sys.executable, objcache.__file__, CXX, f"-I{runtime}", "-c", "-o", "lib.o",
           "lib.cpp"]
    assert subprocess.run(cmd, cwd=a, env=env).returncode == 0 and (a / "lib.o").exists()
    assert _entries(cache) == 0
    rc, _ = _compile(_build_dir(root, "b"), runtime, cache, "-fprofile-generate")
    assert rc == 0 and _entries(cache) == 0


def test_a_compile_error_is_reported_and_not_cached(tree) -> None:
    runtime, cache, root = tree
    (runtime / "lib.cpp").write_text("int f() { return missing; }\n")
    rc, _ = _compile(_build_dir(root, "a"), runtime, cache)
    assert rc != 0 and _entries(cache) == 0


def test_a_cache_that_cannot_be_written_still_compiles(tree) -> None:
    """The cache folder is a file (a full disk or a read-only cache acts alike): the compile
    goes on without it."""
    runtime, cache, root = tree
    cache.write_text("")
    rc, obj = _compile(_build_dir(root, "a"), runtime, cache)
    assert rc == 0 and obj


def test_verilator_builds_go_through_it(monkeypatch) -> None:
    monkeypatch.delenv("OBJCACHE", raising=False)
    env = verilator_env()
    assert env["OBJCACHE"].endswith("objcache.py") and env[objcache.ENV]
    monkeypatch.setenv("OBJCACHE", "ccache")  # the user's own choice is kept
    assert verilator_env()["OBJCACHE"] == "ccache"
