"""``simtgpu compile`` end to end, and the quality figures (instruction counts against the
hand-written kernels, compile time)."""

import shutil
import subprocess

import numpy as np
import pytest
from compiler_helpers import EXAMPLES
from simtgpu.cli.main import main


def test_compile_isa_text_object_and_ir(tmp_path, capsys):
    src = str(EXAMPLES / "vector_add.py")
    s = tmp_path / "add.s"
    assert main(["compile", src, "-k", "add_kernel", "-o", str(s), "-D", "BLOCK_SIZE=64"]) == 0
    text = s.read_text()
    assert ".kernel add_kernel" in text and ".param x_ptr, ptr" in text and "exit" in text
    from simtgpu.assembler import assemble

    assert "add_kernel" in assemble(text, str(s)).kernels
    o = tmp_path / "add.sgo"
    assert main(["compile", src, "-k", "add_kernel", "-o", str(o), "-D", "BLOCK_SIZE=64"]) == 0
    from simtgpu.driver_model import Device

    dev = Device(backend="iss", config="small")
    mod = dev.load_module(str(o))
    x = np.arange(100, dtype=np.float32)
    a, out = dev.to_device(x), dev.empty(100, np.float32)
    dev.launch(mod.kernel("add_kernel"), grid=2, block=32, args=(a, a, out, 100))
    assert np.array_equal(out.to_host(), 2 * x)
    dev.close()
    capsys.readouterr()
    assert main(["compile", src, "-k", "add_kernel", "-D", "BLOCK_SIZE=64", "--emit", "ir"]) == 0
    assert "kernel @add_kernel(" in capsys.readouterr().out


def test_compile_ptx_with_signature(tmp_path):
    out = tmp_path / "ln.ptx"
    rc = main(["compile", str(EXAMPLES / "layernorm.py"), "-k", "_layer_norm_fwd_fused",
               "--target", "ptx", "-o", str(out), "-D", "BLOCK_SIZE=128",
               *[f"--sig={n}=*fp32" for n in ("X", "Y", "W", "B", "Mean", "Rstd")],
               "--sig", "eps=fp32"])
    assert rc == 0
    text = out.read_text()
    assert ".param .f32 _layer_norm_fwd_fused_param_eps" in text
    ptxas = shutil.which("ptxas") or "/usr/local/bin/ptxas"
    if shutil.os.path.exists(ptxas):
        r = subprocess.run([ptxas, "-arch=sm_90", str(out), "-o", str(tmp_path / "a.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("argv, message", [
    (["nope.py", "-k", "k"], "no such file"),
    ([str(EXAMPLES / "vector_add.py"), "-k", "missing"], "no @jit kernel named 'missing'"),
    ([str(EXAMPLES / "vector_add.py"), "-k", "add_kernel", "-D", "BOGUS=1"],
     "has no parameter 'BOGUS'"),
    ([str(EXAMPLES / "vector_add.py"), "-k", "add_kernel", "-D", "BLOCK_SIZE=64",
      "--sig", "x_ptr=*f64"], "unknown parameter type"),
    ([str(EXAMPLES / "vector_add.py"), "-k", "add_kernel", "-D", "BLOCK_SIZE=64",
      "--target", "ptx", "-o", "x.sgo"], "-o .sgo needs --target isa"),
])
def test_compile_command_mistakes(capsys, argv, message):
    assert main(["compile", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_quality_figures():
    from simtgpu.compiler_backend.bench import compile_times, figures

    rows = figures(n=512, mm=16)
    assert {r.kernel for r in rows} == {"vector_add", "saxpy", "block_sum", "matmul"}
    for r in rows:
        assert r.correct, r
        assert r.ratio <= 1.2, r  # within 1.2x of the hand-written kernel
    times = compile_times(repeat=2)
    assert all(ms < 100 for ms in times.values()), times


def test_tutorial_compile_time_section():
    # a measure, not a timed test: the rows and the section's form (docs/performance.md)
    from simtgpu.compiler_backend import bench_compile

    names = ["01 add BLOCK_SIZE=1024", "02 softmax BLOCK_SIZE=128", "03 matmul 32x32x16"]
    rows = bench_compile.compile_times(repeat=1, names=names)
    add, softmax, mm = rows
    assert add.spilled > 0 and add.instructions > 1024 and not add.note  # 32 per thread
    assert softmax.spilled == 0 and 0 < softmax.registers <= 32
    assert mm.spill_space == "local" and mm.spilled > 0 and not mm.note  # beyond shared
    assert all(r.ptx_ms > 0 for r in rows)
    text = bench_compile.render(rows, {"commit": "abc", "date": "d", "cpu": "c", "nproc": "2"},
                                1.5)
    assert text.startswith("## Compile time of the tutorial kernels")
    assert "| 01 add BLOCK_SIZE=1024 |" in text and "load average 1.5" in text
    assert "(local) |" in text and "--part compile" in text and "| PTX ms |" in text


def test_figures_of_a_changed_tree_say_so(monkeypatch):
    """machine()'s commit names a tree that differs from it (figures measured before the
    commit that holds their code)."""
    from simtgpu.cli import bench as cli_bench

    def fake(changed):
        def run(cmd, **kw):
            out = "abc1234\n" if "rev-parse" in cmd else ""
            return subprocess.CompletedProcess(cmd, 1 if changed and "diff" in cmd else 0, out)
        return run

    monkeypatch.setattr(cli_bench.subprocess, "run", fake(True))
    assert cli_bench.machine()["commit"] == "abc1234 with uncommitted changes"
    monkeypatch.setattr(cli_bench.subprocess, "run", fake(False))
    assert cli_bench.machine()["commit"] == "abc1234"
