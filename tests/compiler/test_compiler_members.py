"""Triton's import paths with the imports swapped, and the members of ``tl.tensor`` that
Triton 3.5 defines (``x.cast``, ``x.item()``, ``x.logical_and(y)``, ``ptr.store(v)``,
``ptr.atomic_add(v)``, ``x.floor()`` ... and a block pointer's ``.advance``), each on the
ISS against NumPy."""

import math
import subprocess
import sys

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors

F = np.float32


@pytest.mark.parametrize("statement, name", [
    ("from simtgpu.compiler_backend.language.extra.libdevice import tanh", "tanh"),
    ("from simtgpu.compiler_backend.language.extra.cuda import libdevice", "libdevice.pow"),
    ("from simtgpu.compiler_backend.language.extra import libdevice", "libdevice.erf"),
    ("from simtgpu.compiler_backend.language.math import tanh", "tanh"),
    ("import simtgpu.compiler_backend.language.extra.cuda.libdevice as libdevice",
     "libdevice.exp"),
])
def test_triton_import_paths_reach_the_language(statement, name):
    # a fresh interpreter: the import must work before anything imported the language
    code = (f"{statement}\nimport simtgpu.compiler_backend.language as tl\n"
            f"f = {name}\nassert f is getattr(tl, f.__name__), f\nprint('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "ok", r.stderr


@triton.jit
def k_members(x_ptr, o_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    (o_ptr + offs).store(x.cast(tl.int32).cast(tl.float32))
    (o_ptr + BLOCK + offs).store(x.floor() + x.ceil() + x.erf() + x.abs().sqrt_rn()
                                 + offs.cdiv(4).to(tl.float32))
    pos = x > 0
    big = x > 1
    (o_ptr + 2 * BLOCK + offs).store(pos.logical_and(big).to(tl.float32)
                                     + 2.0 * pos.logical_or(x < -1).to(tl.float32))
    first = tl.sum(tl.where(offs == 0, x, 0.0), axis=0, keep_dims=True)  # shape [1]
    (o_ptr + 3 * BLOCK).store(first.item())
    c_ptr.atomic_add(pos.to(tl.int32).sum())
    (c_ptr + 1).atomic_max(offs)


def test_tensor_members_match_numpy(iss_device):
    x = np.random.default_rng(2).standard_normal(32).astype(F) * 3
    o = np.zeros(3 * 32 + 1, F)
    c = np.zeros(2, np.int32)
    k_members[(1,)](x, o, c, BLOCK=32)
    assert np.array_equal(o[:32], np.trunc(x))
    erf = np.array([math.erf(v) for v in x.astype(float)], F)
    cdiv = (np.arange(32) + 3) // 4
    np.testing.assert_allclose(o[32:64], np.floor(x) + np.ceil(x) + erf + np.sqrt(np.abs(x))
                               + cdiv, atol=4e-6)
    want = ((x > 0) & (x > 1)).astype(F) + 2 * ((x > 0) | (x < -1)).astype(F)
    assert np.array_equal(o[64:96], want)
    assert o[96] == x[0]
    assert c[0] == (x > 0).sum() and c[1] == 31


@triton.jit
def k_advance(a_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, BM: tl.constexpr):
    bp = tl.make_block_ptr(a_ptr, (M, N), (N, 1), (0, 0), (BM, N), (1, 0))
    acc = tl.zeros((BM, N), tl.float32)
    for _ in range(M // BM):
        acc += tl.load(bp)
        bp = bp.advance((BM, 0))
    rm = tl.arange(0, BM)
    rn = tl.arange(0, N)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], acc)


def test_block_pointer_advance_member(iss_device):
    a = np.arange(64, dtype=F).reshape(8, 8)
    o = np.zeros((2, 8), F)
    k_advance[(1,)](a, o, M=8, N=8, BM=2)
    assert np.array_equal(o, a.reshape(4, 2, 8).sum(0))


@pytest.mark.parametrize("line, message", [
    ("tl.arange(0, 8).item()", "item() needs a tensor of one element, not one of shape [8]"),
    ("tl.arange(0, 8).logical_and(tl.arange(0, 8) > 2)", "logical_and needs two booleans"),
])
def test_member_misuse_is_a_clear_error(tmp_path, line, message):
    err = compile_error(tmp_path, "member_err", f"def kern(x_ptr):\n    y = {line}\n",
                        dict(x_ptr=ir.ptr("f32")))
    assert message in str(err)
    assert err.loc.line == 7, str(err)


@triton.jit
def k_bitcast(x_ptr, o_ptr, u_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    bits = x.to(tl.int32, bitcast=True)
    tl.store(o_ptr + offs, (bits ^ (1 << 31)).to(tl.float32, bitcast=True))  # -x by its bits
    tl.store(u_ptr + offs, x.to(tl.uint32, bitcast=True) >> 23)  # sign and exponent


def test_float_int_bitcasts_keep_the_bits(iss_device):
    x = np.random.default_rng(4).standard_normal(16).astype(F)
    x[:3] = [0.0, -np.inf, 1e-30]
    o = np.zeros(16, F)
    u = np.zeros(16, np.uint32)
    k_bitcast[(1,)](x, o, u, BLOCK=16)
    np.testing.assert_array_equal(o.view(np.uint32), (-x).view(np.uint32))
    np.testing.assert_array_equal(u, x.view(np.uint32) >> 23)


def test_bitcast_of_another_width_is_a_clear_error(tmp_path):
    err = compile_error(tmp_path, "bitcast_err",
                        "def kern(x_ptr):\n    y = (tl.arange(0, 8) > 2).to(tl.float32, "
                        "bitcast=True)\n", dict(x_ptr=ir.ptr("f32")))
    assert "only float32, int32 and uint32 share a width" in str(err)


@triton.jit
def k_quantize(x_ptr, q_ptr, BLOCK: tl.constexpr):
    # the Triton 2.x form of bitsandbytes' row-wise quantisation (tl.libdevice.llrint)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    max_val = tl.max(tl.abs(x), axis=0)
    tl.store(q_ptr + offs, tl.libdevice.llrint(127. * (x / max_val)).to(tl.int32))


def test_libdevice_llrint_of_the_quantised_row(iss_device):
    # multiples of 1/64 with a largest magnitude of 2: x / max_val is x * 0.5 (an exact
    # reciprocal) and 127 * x * 0.5 is exact, so the model needs no rounding of its own; x = 1
    # gives the tie 63.5 (ties to even are checked bit for bit in test_compiler_libmath.py)
    m = np.random.default_rng(6).integers(-127, 128, 32)
    m[:3] = [128, 64, -64]
    x = (m / 64).astype(F)
    q = np.zeros(32, np.int32)
    k_quantize[(1,)](x, q, BLOCK=32)
    np.testing.assert_array_equal(q, np.rint(127 * m / 128).astype(np.int32))


@triton.jit
def k_dtype_questions(X, O, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if x.dtype.is_floating():
        x = x * 2
    if x.dtype.primitive_bitwidth == 32 and X.dtype.element_ty.is_fp32() and not x.dtype.is_int():
        x = x + 1
    if x.dtype.is_int_unsigned():
        x = x + x.dtype.get_int_max_value() - x.dtype.get_int_max_value() + 5
    tl.store(O + offs, x)


def test_dtype_questions_are_compile_time(iss_device):
    x = np.arange(8, dtype=F)
    o = np.zeros(8, F)
    k_dtype_questions[(1,)](x, o, BLOCK=8)
    assert np.array_equal(o, x * 2 + 1)
    u = np.arange(8, dtype=np.uint32)
    ou = np.zeros(8, np.uint32)
    k_dtype_questions[(1,)](u, ou, BLOCK=8)
    assert np.array_equal(ou, u + 5)
    assert tl.int32.get_int_min_value() == -2**31 and tl.uint64.get_int_max_value() == 2**64 - 1
    assert tl.float16.itemsize == 2 and tl.int1.is_bool() and not tl.float32.is_fp8()


@needs_ptxas
@pytest.mark.parametrize("kern, types, cexpr", [
    (k_members, dict(x_ptr=ir.ptr("f32"), o_ptr=ir.ptr("f32"), c_ptr=ir.ptr("i32")),
     dict(BLOCK=32)),
    (k_bitcast, dict(x_ptr=ir.ptr("f32"), o_ptr=ir.ptr("f32"), u_ptr=ir.ptr("u32")),
     dict(BLOCK=16)),
    (k_advance, dict(a_ptr=ir.ptr("f32"), o_ptr=ir.ptr("f32")), dict(M=8, N=8, BM=2)),
    (k_quantize, dict(x_ptr=ir.ptr("f32"), q_ptr=ir.ptr("i32")), dict(BLOCK=32)),
], ids=["members", "bitcast", "advance", "llrint"])
def test_members_pass_ptxas(tmp_path, kern, types, cexpr):
    text = compile_function(kern.fn, types, cexpr, Target.ptx("sm_90"), 4).code
    assert not (err := ptxas_errors(tmp_path, text)), err
