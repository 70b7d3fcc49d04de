"""PTX addressing and stores: element offsets of global pointers are one ``mul.wide.s32``
(64-bit, as Triton writes them), and a tile smaller than the block, held by several threads,
is stored once per element (only the first threads write). Checked on the text and through
ptxas; the values stored are those of the ISA (tests/compiler/test_compiler_examples.py)."""

import re
import subprocess

import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import PTXAS, needs_ptxas

P = ir.ptr("f32")
I32 = ir.I32


@triton.jit
def _copy_and_sum(x_ptr, y_ptr, s_ptr, n, BLOCK: tl.constexpr, SMALL: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x, mask=m)
    tl.store(s_ptr + tl.program_id(0), tl.sum(x, axis=0))  # a scalar: one copy per thread
    head = tl.arange(0, SMALL)
    tl.store(s_ptr + 64 + head, tl.load(x_ptr + head))  # a tile smaller than the block


def _ptx(block=128, small=16):
    types = dict(x_ptr=P, y_ptr=P, s_ptr=P, n=I32)
    return compile_function(_copy_and_sum.fn, types, dict(BLOCK=block, SMALL=small),
                            Target.ptx(), num_warps=4).code


def test_element_offsets_are_one_wide_multiply():
    code = _ptx()
    assert "cvt.s64.s32" not in code
    # x + offs, y + offs, s + pid, x + head, s + 64 + head: one mul.wide.s32 by 4 each
    assert len(re.findall(r"mul\.wide\.s32 %rd\d+, %r\d+, 4;", code)) == 5


def test_copies_of_small_tiles_are_stored_once():
    code = _ptx(small=16)
    owner = {m.group(2): int(m.group(3)) for m in re.finditer(
        r"setp\.lt\.u32 (%p(\d+)), %r\d+, (\d+);", code)}
    stores = re.findall(r"(@%p(\d+) )?st\.global\.f32", code)
    guarded_by = [owner.get(p) for _, p in stores]
    # the full tile (its own mask), the scalar sum (thread 0), the 16-element tile (tid < 16)
    assert guarded_by == [None, 1, 16]
    full = compile_function(_copy_and_sum.fn, dict(x_ptr=P, y_ptr=P, s_ptr=P, n=I32),
                            dict(BLOCK=128, SMALL=128), Target.ptx()).code
    assert "setp.lt.u32" in full and full.count("setp.lt.u32") == 1  # only the scalar's


@needs_ptxas
def test_ptxas_accepts(tmp_path):
    src = tmp_path / "k.ptx"
    src.write_text(_ptx())
    r = subprocess.run([PTXAS, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("small", [4, 16])
def test_results_on_the_iss(iss_device, small):
    import numpy as np

    n = 100
    x = np.random.default_rng(small).standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    s = np.zeros(64 + small, np.float32)
    _copy_and_sum[(triton.cdiv(n, 32),)](x, y, s, n, BLOCK=32, SMALL=small)
    assert np.array_equal(y, x) and np.array_equal(s[64:], x[:small])
    want = [x[i:i + 32].astype(np.float64).sum() for i in range(0, n, 32)]
    assert np.allclose(s[:4], want, rtol=1e-5, atol=1e-5)
