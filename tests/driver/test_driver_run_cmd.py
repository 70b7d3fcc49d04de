"""``simtgpu run``: success, --print, --stats, --trace, faults and bad specs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from simtgpu.arch.config import CONFIGS
from simtgpu.assembler.examples import example_asm
from simtgpu.cli.main import main
from simtgpu.driver_model.argspec import parse_arg, parse_print
from simtgpu.driver_model.errors import DriverError
from test_driver_local_memory import PROBE


@pytest.fixture
def vadd():
    return str(example_asm("vector_add"))


def _run(capsys, *argv):
    rc = main(["run", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_run_prints_result_and_stats(vadd, capsys):
    rc, out, err = _run(capsys, vadd, "--kernel", "vector_add", "--grid", "4", "--block", "32",
                        "--arg", "a=f32[100]:arange", "b=f32[100]:fill(0.5)", "c=f32[100]",
                        "n=i32:100", "--print", "c[:4]", "--print", "c[98:]", "--stats")
    assert rc == 0, err
    assert "c[:4] = [0.5 1.5 2.5 3.5]" in out
    assert "c[98:] = [98.5 99.5]" in out
    assert "thread-instructions" in out and "fadd" in out


def test_run_matches_numpy_for_random_inputs(vadd, capsys, tmp_path):
    rc, out, _ = _run(capsys, vadd, "-k", "vector_add", "--grid", "2", "--block", "8",
                      "--config", "tiny", "--seed", "5", "--arg", "a=f32[16]:rand",
                      "b=f32[16]:rand(-1,1)", "c=f32[16]", "n=i32:16", "--print", "c")
    assert rc == 0
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 1, 16).astype(np.float32)
    b = rng.uniform(-1, 1, 16).astype(np.float32)
    with np.printoptions(threshold=64, linewidth=100):
        assert f"c = {a + b}" in out


def test_run_writes_trace_json_lines(vadd, capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    rc, _, _ = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block", "8", "--config",
                    "tiny", "--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:8",
                    "--trace", str(trace))
    assert rc == 0
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert len(lines) == 2 * 19  # two warps, 19 instructions each
    assert lines[0]["pc"] == 0 and lines[0]["op"] == "s2r"
    stores = [x for x in lines if x["op"] == "stg"]
    assert len(stores) == 2 and all(len(x["mem"]) == 4 for x in stores)


def test_run_fault_reports_and_exits_1(vadd, capsys):
    rc, out, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block", "8",
                        "--arg", "a=f32[8]", "b=f32[8]", "c=ptr:0x20", "n=i32:8")
    assert rc == 1
    assert "kernel fault: OUT_OF_RANGE" in err
    assert "@p0 stg [r8], r9" in err and "lanes       0x000000ff" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("args,msg", [
    (["--arg", "a=f32[8]:bogus"], "unknown initialiser 'bogus'"),
    (["--arg", "a=f64[8]"], "array element type must be one of f32, i32, u32"),
    (["--arg", "n=i32:abc"], "'abc' is not an integer"),
    (["--arg", "n=i32:3000000000"], "out of range for i32"),
    (["--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]"], "missing n"),
    (["--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=f32:1"], "parameter 'n' is i32"),
    (["--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:1", "x=i32:1"], "no parameter"),
    (["--arg", "a=i32:1", "b=f32[8]", "c=f32[8]", "n=i32:1"], "parameter 'a' is ptr"),
    (["--arg", "junk"], "expected NAME=TYPE"),
    (["--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:8", "--print", "n"],
     "--print n: not an array"),
    # each of these once ended in a NumPy traceback or wrapped silently
    (["--arg", "a=f32[8]:rand(0,inf)", "b=f32[8]", "c=f32[8]", "n=i32:8"],
     "rand needs finite numbers, not inf"),
    (["--arg", "a=f32[8]:rand(nan,1)", "b=f32[8]", "c=f32[8]", "n=i32:8"],
     "rand needs finite numbers, not nan"),
    (["--arg", "a=i32[8]:randint(0,1e30)", "b=f32[8]", "c=f32[8]", "n=i32:8"],
     "1000000000000000019884624838656 is out of range for i32 [-2147483648, 2147483647]"),
    (["--arg", "a=u32[8]:randint(-5,5)", "b=f32[8]", "c=f32[8]", "n=i32:8"],
     "-5 is out of range for u32 [0, 4294967295]"),
    (["--arg", "a=u32[8]:fill(-1)", "b=f32[8]", "c=f32[8]", "n=i32:8"],
     "-1 is out of range for u32"),
    (["--arg", "a=i32[8]:fill(1.5)", "b=f32[8]", "c=f32[8]", "n=i32:8"],
     "fill needs whole numbers for i32, not 1.5"),
    (["--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:8", "s=f32:1e39"],
     "1e+39 is out of range for f32"),
    (["--arg", "a=f32[100000000000]", "b=f32[8]", "c=f32[8]", "n=i32:8"],
     "400000000000 bytes is more than any device memory"),
    (["--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:8", "--print", "c[::0]"],
     "bad index '::0'"),
])
def test_run_bad_specs_are_clear_errors(vadd, capsys, args, msg):
    rc, _, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block", "8", *args)
    assert rc == 1
    assert msg in err and "Traceback" not in err


def test_trace_write_error_is_reported_after_the_launch(vadd, capsys):
    # /dev/full refuses every write with ENOSPC (Linux, as CI is)
    rc, _, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block", "8", "--arg",
                      "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:8", "--trace", "/dev/full")
    assert rc == 1 and "Traceback" not in err
    assert "trace file /dev/full: No space left on device (the launch ran" in err


def test_negative_seed_is_a_usage_error(vadd, capsys):
    with pytest.raises(SystemExit) as info:
        _run(capsys, vadd, "-k", "vector_add", "--seed=-1", "--arg", "a=f32[8]")
    assert info.value.code == 2
    assert "a seed is a non-negative integer, not -1" in capsys.readouterr().err


def test_run_bad_geometry_and_kernel(vadd, capsys):
    base = ["--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]", "n=i32:8"]
    most = CONFIGS["small"].max_threads_per_block  # the run command's default configuration
    rc, _, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block",
                      str(2 * most), *base)
    assert rc == 1 and f"allows at most {most}" in err
    rc, _, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1,x", "--block", "8", *base)
    assert rc == 1 and "--grid '1,x'" in err
    rc, _, err = _run(capsys, vadd, "-k", "nope", "--grid", "1", "--block", "8", *base)
    assert rc == 1 and "no kernel 'nope' (kernels: vector_add)" in err


def test_parse_forms():
    s = parse_arg("m=i32[2,3]:randint(5,5)")
    arr = s.make_array(np.random.default_rng(0))
    assert arr.shape == (2, 3) and (arr == 5).all() and arr.dtype == np.int32
    assert parse_arg("x=u32:0xff").value == 255
    assert parse_arg("p=ptr:0").value == 0
    assert parse_arg("s=f32:-2.5e1").value == -25.0
    assert parse_print("m[0:2, 1]") == ("m", (slice(0, 2), 1))
    assert parse_print("c") == ("c", ())
    with pytest.raises(DriverError, match="randint takes 0 or 2"):
        parse_arg("a=i32[4]:randint(3)")
    with pytest.raises(DriverError, match="bad index"):
        parse_print("c[1:2:3:4]")



def test_waves_needs_the_rtl_backend(vadd, capsys):
    rc, _, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block", "4",
                      "--arg", "a=f32[4]:ones", "b=f32[4]:ones", "c=f32[4]", "n=i32:4",
                      "--waves", "build/x.vcd")
    assert rc == 1
    assert "--waves needs --backend rtl" in err


def test_memory_needs_rtl(vadd, capsys):
    rc, _, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block", "4",
                      "--arg", "a=f32[4]:ones", "b=f32[4]:ones", "c=f32[4]", "n=i32:4",
                      "--memory", "realistic")
    assert rc == 1
    assert "--memory needs --backend rtl" in err


def test_long_launch_reports_progress_and_stops_at_the_budget(tmp_path, capsys, monkeypatch):
    import functools

    from simtgpu.cli import run_cmd
    from simtgpu.sim import iss as iss_module

    monkeypatch.setattr(iss_module, "PROGRESS_EVERY", 1000)  # the rule, at a test's scale
    monkeypatch.setattr(run_cmd, "ProgressReport",
                        functools.partial(run_cmd.ProgressReport, every_s=0.0))
    spin = tmp_path / "spin.s"
    spin.write_text(".kernel spin\nL:  bra L\n.end\n")
    rc, _, err = _run(capsys, str(spin), "-k", "spin", "--grid", "1", "--block", "8",
                      "--budget", "5000")
    assert rc == 1 and "kernel fault: WATCHDOG" in err
    reports = [line for line in err.splitlines() if line.startswith("spin: running, ")]
    assert [r.split()[2] for r in reports] == ["1,000", "2,000", "3,000", "4,000", "5,000"]
    assert reports[0].endswith("Ctrl-C stops the launch")


@pytest.fixture
def probe(tmp_path):
    path = tmp_path / "probe.s"
    path.write_text(PROBE)  # (addr, value: each thread's local word's address and value)
    return str(path)


def test_run_gives_a_local_area_with_local_bytes(probe, capsys):
    rc, out, err = _run(capsys, probe, "-k", "probe", "--grid", "2", "--block", "8",
                        "--config", "tiny", "--local-bytes", "4", "--arg", "addr=u32[16]",
                        "value=u32[16]", "--print", "value")
    assert rc == 0, err
    with np.printoptions(threshold=64, linewidth=100):  # each thread read back its global id
        assert f"value = {np.arange(16, dtype=np.uint32)}" in out


@pytest.mark.parametrize("args, msg", [
    ([], "kernel probe keeps values in local memory (its last parameter is __local): give "
         "its bytes per thread with --local-bytes"),
    (["--local-bytes", "4", "--arg", "__local=i32[4]"],
     "__local is the hidden local-memory parameter"),
])
def test_run_local_memory_errors_name_the_option(probe, capsys, args, msg):
    rc, _, err = _run(capsys, probe, "-k", "probe", "--grid", "1", "--block", "8",
                      "--config", "tiny", "--arg", "addr=u32[8]", "value=u32[8]", *args)
    assert rc == 1
    assert msg in err and "Traceback" not in err


def test_local_bytes_for_a_kernel_without_local_memory(vadd, capsys):
    rc, _, err = _run(capsys, vadd, "-k", "vector_add", "--grid", "1", "--block", "8",
                      "--local-bytes", "8", "--arg", "a=f32[8]", "b=f32[8]", "c=f32[8]",
                      "n=i32:8")
    assert rc == 1 and "Traceback" not in err
    assert "--local-bytes 8: kernel vector_add has no __local parameter" in err


@pytest.mark.parametrize("value", ["-4", "6", "four"])
def test_bad_local_bytes_is_a_usage_error(probe, capsys, value):
    with pytest.raises(SystemExit) as info:
        _run(capsys, probe, "-k", "probe", "--grid", "1", "--block", "8",
             f"--local-bytes={value}", "--arg", "addr=u32[8]")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--local-bytes" in err
    assert ("not an integer" if value == "four" else
            f"a non-negative multiple of 4 bytes, not {value}") in err


def test_compile_then_run_a_kernel_that_spills_to_local_memory(capsys, tmp_path):
    # tutorial 03's matmul at 32x32x8 on 8-lane warps spills hundreds of values, beyond the
    # shared spill area's reach: `simtgpu compile` names the bytes `simtgpu run` needs
    from simtgpu.assembler.examples import EXAMPLES

    out = tmp_path / "mm.s"
    ints = [f"--sig={n}=i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                         "stride_bn", "stride_cm", "stride_cn")]
    rc = main(["compile", str(EXAMPLES / "dsl" / "matmul.py"), "-k", "matmul_kernel",
               "--sig=a_ptr=*fp32", "--sig=b_ptr=*fp32", "--sig=c_ptr=*fp32", *ints,
               "-D", "BLOCK_SIZE_M=32", "-D", "BLOCK_SIZE_N=32", "-D", "BLOCK_SIZE_K=8",
               "-D", "GROUP_SIZE_M=4", "--config", "full", "--warp-size", "8", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    m = re.search(r"spilled to local memory, (\d+) bytes per thread: simtgpu run "
                  r"--local-bytes (\d+)", err)
    assert m and m.group(1) == m.group(2)
    arrays = ["a_ptr=f32[32,32]:randint", "b_ptr=f32[32,32]:randint", "c_ptr=f32[32,32]"]
    strides = ["M=i32:32", "N=i32:32", "K=i32:32", "stride_am=i32:32", "stride_ak=i32:1",
               "stride_bk=i32:32", "stride_bn=i32:1", "stride_cm=i32:32", "stride_cn=i32:1"]
    rc, text, err = _run(capsys, str(out), "-k", "matmul_kernel", "--config", "full",
                         "--grid", "1", "--block", "32", "--local-bytes", m.group(1),
                         "--arg", *arrays, *strides, "--print", "c_ptr[0]",
                         "--print", "c_ptr[31]")
    assert rc == 0, err
    rng = np.random.default_rng(0)  # (the run's seed; arrays are made in parameter order)
    a, b = (parse_arg(s).make_array(rng) for s in arrays[:2])
    c = a @ b  # small integers: exact in fp32
    with np.printoptions(threshold=64, linewidth=100):
        assert f"c_ptr[0] = {c[0]}" in text and f"c_ptr[31] = {c[31]}" in text
