"""PTX for idioms of library kernels (FlagGems' block-scan carry, a pointer stepped back by a
constant): the text ptxas parses, checked through ptxas where it is installed, and the
values of the same kernels on the ISS against NumPy."""

import re
import subprocess

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import PTXAS, needs_ptxas

P = ir.ptr("f32")
I32 = ir.I32


@triton.jit
def _add_previous_sum(out, sums, n, BLOCK: tl.constexpr):
    """Each block but the first adds the sum of the block before it (a scan's carry)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if pid > 0:
        carry = tl.load(sums + pid - 1)
        x = tl.load(out + offs, mask=mask)
        tl.store(out + offs, x + carry, mask=mask)


@triton.jit
def _far_scalars(x_ptr, y_ptr, FAR: tl.constexpr):
    """Scalars a constant number of elements away, past a 32-bit byte displacement."""
    tl.store(y_ptr, tl.load(x_ptr + FAR) + tl.load(x_ptr - FAR))


def _carry_ptx(arch: str = "sm_90") -> str:
    types = dict(out=P, sums=P, n=I32)
    return compile_function(_add_previous_sum.fn, types, dict(BLOCK=32), Target.ptx(arch),
                            num_warps=1).code


def _far_ptx() -> str:
    return compile_function(_far_scalars.fn, dict(x_ptr=P, y_ptr=P), dict(FAR=600_000_000),
                            Target.ptx("sm_90"), num_warps=1).code


def _ptxas(tmp_path, code: str, arch: str = "sm_90") -> None:
    src = tmp_path / "k.ptx"
    src.write_text(code)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_negative_displacement_is_written_as_ptx_parses(iss_device):
    code = _carry_ptx()
    # "[%rd7-4]" is a syntax error for ptxas; PTX's form is "[%rd7+-4]"
    assert not re.search(r"\[%\w+-\d+\]", code)
    assert re.search(r"ld\.global\.f32 %f\d+, \[%rd\d+\+-4\]", code)
    n, block = 100, 32
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    sums = rng.standard_normal(triton.cdiv(n, block)).astype(np.float32)
    out = x.copy()
    _add_previous_sum[(len(sums),)](out, sums, n, BLOCK=block, num_warps=1)
    want = x.copy()
    for b in range(1, len(sums)):
        want[b * block:(b + 1) * block] += sums[b - 1]
    assert np.array_equal(out, want)


def test_displacement_past_32_bits_is_a_register():
    code = _far_ptx()
    assert not re.search(r"\[%rd\d+\+-?\d{10,}\]", code)
    assert len(re.findall(r"ld\.global\.f32 %f\d+, \[%rd\d+\];", code)) == 2


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_accepts_a_negative_displacement(tmp_path, arch):
    _ptxas(tmp_path, _carry_ptx(arch), arch)


@needs_ptxas
def test_ptxas_accepts_far_scalars(tmp_path):
    _ptxas(tmp_path, _far_ptx())
