"""Diagnostics and checks: ``str()`` of a compile error carries file:line:col, an uncaught error
from ``kernel[grid](...)`` shows no compiler frames, messages name what the user wrote, and
``tl.static_print/static_assert/device_assert/device_print/assume`` and ``ptr.type.element_ty``
do what docs/compiler.md says."""

from __future__ import annotations

import traceback

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import generated_kernel
from simtgpu.compiler_backend.debug_ops import DeviceAssertionError
from simtgpu.errors import SourceError


def _launch_error(kern, *args, **kw) -> BaseException:
    with pytest.raises(Exception) as ei:  # noqa: PT011 - the type is checked by the caller
        kern[(1,)](*args, **kw)
    return ei.value


@pytest.mark.parametrize("body, what", [
    ("    d = {1: 2}\n", "a dict literal"),
    ("    v = [i for i in range(4)]\n", "a list comprehension"),
    ("    with open('f'):\n        pass\n", "a with statement"),
    ("    s = {1, 2}\n", "a set literal"),
    ("    try:\n        pass\n    except Exception:\n        pass\n", "a try statement"),
])
def test_messages_say_what_the_user_wrote(iss_device, tmp_path, body, what):
    kern, _ = generated_kernel(tmp_path, "what", "def kern(x_ptr):\n" + body)
    e = _launch_error(kern, np.zeros(4, np.float32))
    assert isinstance(e, SourceError)
    assert e.message == f"{what} is not supported in a kernel"
    assert "Dict" not in str(e) and "ListComp" not in str(e)


def test_str_carries_file_line_col_and_no_compiler_frames(iss_device, tmp_path):
    kern, _ = generated_kernel(tmp_path, "strloc", (
        "def kern(x_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + tl.arange(0, 2 * BLOCK))\n"))
    e = _launch_error(kern, np.zeros(8, np.float32), BLOCK=8)
    assert str(e).startswith(f"{tmp_path / 'strloc.py'}:8:")
    assert "do not broadcast" in str(e)
    frames = [f.filename for f in traceback.extract_tb(e.__traceback__)]
    internal = [f for f in frames if "compiler_backend" in f and not f.endswith("jit.py")]
    assert internal == [], internal
    assert len([f for f in frames if f.endswith("jit.py")]) <= 1
    assert e.__cause__ is None and e.__suppress_context__


def test_static_assert_and_static_print(iss_device, tmp_path, capsys):
    kern, _ = generated_kernel(tmp_path, "static", (
        "def kern(x_ptr, BLOCK: tl.constexpr):\n"
        "    tl.static_print('BLOCK is', BLOCK)\n"
        "    tl.static_assert(BLOCK % 8 == 0, 'BLOCK must be a multiple of 8')\n"
        "    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n"))
    x = np.zeros(8, np.float32)
    kern[(1,)](x, BLOCK=8)
    assert "BLOCK is 8" in capsys.readouterr().out and (x == 1).all()
    e = _launch_error(kern, np.zeros(4, np.float32), BLOCK=4)
    assert isinstance(e, SourceError) and f"{tmp_path / 'static.py'}:8:5:" in str(e)
    assert "static_assert failed: BLOCK must be a multiple of 8" in str(e)


@triton.jit
def k_assert(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.device_assert(x >= 0, "x must be non-negative")  # <- assert
    tl.assume(n > 0)
    tl.store(y_ptr + offs, x * 2, mask=m)


def test_device_assert_passes_and_fails_with_a_report(iss_device):
    x = np.arange(64, dtype=np.int32)
    y = np.zeros(64, np.int32)
    k_assert[(2,)](x, y, 64, BLOCK=32)
    np.testing.assert_array_equal(y, 2 * x)
    x[37] = -5  # block 1, element 5
    with pytest.raises(DeviceAssertionError) as ei:
        k_assert[(2,)](x, y, 64, BLOCK=32)
    msg = str(ei.value)
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1)
                if t.endswith("# <- assert"))
    assert f"{__file__}:{line}:" in msg and "x must be non-negative" in msg
    assert "block (1,0,0)" in msg and "thread 5 " in msg


@triton.jit
def k_print(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_print("x", x, offs)
    tl.device_print("pid", pid)


def test_device_print_prints_every_element_after_the_launch(iss_device, capsys):
    x = np.arange(16, dtype=np.float32) * 0.5
    k_print[(2,)](x, 16, BLOCK=8)
    lines = capsys.readouterr().out.splitlines()
    want = [f"pid ({p}, 0, 0) idx ({i}) x: {float(x[8 * p + i])!r}, {8 * p + i}"
            for p in range(2) for i in range(8)]
    assert [ln for ln in lines if " x: " in ln] == want
    assert [ln for ln in lines if " pid: " in ln] == ["pid (0, 0, 0) idx (0) pid: 0",
                                                      "pid (1, 0, 0) idx (0) pid: 1"]


@triton.jit
def k_print_threads(x_ptr):
    t = tl.thread_id(0)
    tl.device_print("t", t * 2)


def test_device_print_in_a_thread_level_kernel(iss_device, capsys):
    k_print_threads[(1,)](np.zeros(1, np.float32), block=(4, 1, 1))
    assert capsys.readouterr().out.splitlines() == [
        f"pid (0, 0, 0) idx ({t}) t: {2 * t}" for t in range(4)]


def test_pointer_element_type(iss_device, tmp_path):
    kern, _ = generated_kernel(tmp_path, "elemty", (
        "def kern(x_ptr, u_ptr):\n"
        "    tl.static_assert(x_ptr.type.element_ty == tl.float32)\n"
        "    tl.static_assert(u_ptr.dtype.element_ty == tl.uint32)\n"
        "    z = tl.zeros((8,), x_ptr.type.element_ty) + 2\n"
        "    tl.store(x_ptr + tl.arange(0, 8), z)\n"))
    x = np.zeros(8, np.float32)
    kern[(1,)](x, np.zeros(1, np.uint32))
    assert (x == 2).all()


def test_device_assert_and_print_ptx_assemble(tmp_path):
    import shutil
    import subprocess
    from pathlib import Path

    from simtgpu.compiler_backend import Target, compile_function, parse_type

    ptxas = shutil.which("ptxas") or "/usr/local/bin/ptxas"
    if not Path(ptxas).exists():
        pytest.skip("ptxas not installed")
    types = {"x_ptr": parse_type("*i32"), "y_ptr": parse_type("*i32"), "n": parse_type("i32")}
    ck = compile_function(k_assert.fn, types, {"BLOCK": 128}, Target.ptx("sm_90"))
    assert "ld.shared" in ck.code
    del types["y_ptr"]
    types["x_ptr"] = parse_type("*fp32")
    printing = compile_function(k_print.fn, types, {"BLOCK": 128}, Target.ptx("sm_90"))
    assert "atom.global.add" in printing.code
    for i, code in enumerate((ck.code, printing.code)):
        (tmp_path / f"k{i}.ptx").write_text(code)
        subprocess.run([ptxas, "-arch=sm_90", str(tmp_path / f"k{i}.ptx"), "-o",
                        str(tmp_path / f"k{i}.cubin")], check=True, capture_output=True)
