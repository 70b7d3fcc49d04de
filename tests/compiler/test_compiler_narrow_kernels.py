"""Idioms of other people's Triton kernels over int8/uint8/int16/uint16/bool arrays (Inductor's
``*i1`` outputs, bitsandbytes/torchao/vLLM int8 quantisers, FlagGems' bool ops, Triton's own
test_core cases), in kernels of our own: ISS results against NumPy, and the PTX through ptxas.
The kernels themselves were run from a scratch directory (docs/compiler.md, *Kernel libraries*)."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.driver_model import Device
from test_compiler_ptx import needs_ptxas, ptxas_errors


@pytest.fixture(autouse=True)
def iss():
    triton.set_device(Device(backend="iss", config="small"))
    yield
    triton.set_device(None)


# --- a number assigned in a kernel is a scalar tensor: its .dtype ------------------------------
@triton.jit
def fill_with_assigned_numbers(o_ptr, f_ptr, b_ptr, n, BLOCK: tl.constexpr):
    # Triton's test_core.test_store_constant: `value = 1` makes an int32 scalar tensor, so
    # `dtype=value.dtype` is tl.int32; a float is float32, a bool int1, a wide int int64
    offs = tl.arange(0, BLOCK)
    m = offs < n
    value = 1
    tl.store(o_ptr + offs, tl.full([BLOCK], value=value, dtype=value.dtype), mask=m)
    half = 0.5
    tl.static_assert(half.dtype == tl.float32)
    tl.store(f_ptr + offs, tl.full([BLOCK], half, half.dtype) + offs, mask=m)
    flag = True
    tl.static_assert(flag.dtype == tl.int1)
    tl.store(b_ptr + offs, tl.full([BLOCK], flag, flag.dtype), mask=m)
    big = 2 ** 40
    tl.static_assert(big.dtype == tl.int64)
    tl.static_assert(value.type == tl.int32)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.bool_, np.int32, np.float32])
def test_dtype_of_an_assigned_number(dt):
    n = 13
    o = np.zeros(16, dt)
    f = np.zeros(16, np.float32)
    b = np.zeros(16, np.bool_)
    fill_with_assigned_numbers[(1,)](o, f, b, n, BLOCK=16)
    assert np.array_equal(o, np.where(np.arange(16) < n, 1, 0).astype(dt))
    assert np.array_equal(f[:n], 0.5 + np.arange(n, dtype=np.float32)) and not f[n:].any()
    assert np.array_equal(b.view(np.uint8), (np.arange(16) < n).astype(np.uint8))


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_dtype_of_an_assigned_number_ptx(tmp_path, arch):
    types = {"o_ptr": ir.ptr("i1"), "f_ptr": ir.ptr("f32"), "b_ptr": ir.ptr("i1"), "n": ir.I32}
    ptx = compile_function(fill_with_assigned_numbers.fn, types, {"BLOCK": 128},
                           Target.ptx(arch), num_warps=4).code
    assert ptxas_errors(tmp_path, ptx, arch) == ""


# --- int1 arithmetic stays int1 and wraps mod 2 (Triton: test_core's int1 wraparound) -----------
@triton.jit
def bool_arithmetic(a_ptr, b_ptr, x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)  # bool
    b = tl.load(b_ptr + offs)  # bool
    x = tl.load(x_ptr + offs)  # int8
    s = a + b
    tl.static_assert(s.dtype == tl.int1)
    tl.static_assert((a + True).dtype == tl.int1)
    tl.static_assert((a + 1).dtype == tl.int32)  # a Python int takes part: int32
    tl.static_assert((a + x).dtype == tl.int8)
    tl.static_assert((-a).dtype == tl.int1)
    tl.store(o_ptr + offs * 8 + 0, s.to(tl.int32))  # True + True wraps to False
    tl.store(o_ptr + offs * 8 + 1, (a - b).to(tl.int32))  # False - True wraps to True: 1
    tl.store(o_ptr + offs * 8 + 2, (a * b).to(tl.int32))
    tl.store(o_ptr + offs * 8 + 3, (a + (x > 0)).to(tl.int32))
    tl.store(o_ptr + offs * 8 + 4, (a + True).to(tl.int32))
    tl.store(o_ptr + offs * 8 + 5, (-a).to(tl.int32))
    tl.store(o_ptr + offs * 8 + 6, a + 1)
    tl.store(o_ptr + offs * 8 + 7, (a + x).to(tl.int32))


def test_bool_arithmetic_wraps_in_int1():
    rng = np.random.default_rng(5)
    n = 32
    a = rng.random(n) < 0.5
    b = rng.random(n) < 0.5
    a[:4], b[:4] = [True, True, False, False], [True, False, True, False]
    x = rng.integers(-128, 128, n).astype(np.int8)
    x[:2] = [127, -128]
    o = np.zeros(8 * n, np.int32)
    bool_arithmetic[(1,)](a, b, x, o, BLOCK=n)
    ai = a.astype(np.int32)
    want = np.stack([a ^ b, a ^ b, a & b, a ^ (x > 0), ~a, a, ai + 1,
                     (x + a.astype(np.int8)).astype(np.int32)], axis=1).astype(np.int32)
    assert np.array_equal(o.reshape(n, 8), want)


@needs_ptxas
def test_bool_arithmetic_ptx(tmp_path):
    types = {"a_ptr": ir.ptr("i1"), "b_ptr": ir.ptr("i1"), "x_ptr": ir.ptr("i8"),
             "o_ptr": ir.ptr("i32")}
    ptx = compile_function(bool_arithmetic.fn, types, {"BLOCK": 128}, Target.ptx("sm_90"),
                           num_warps=4).code
    assert ptxas_errors(tmp_path, ptx) == ""


# --- idioms the ported kernels rely on (they ran as they are; kept against regressions) -----------
@triton.jit
def bool_and_nibble_idioms(m_ptr, q_ptr, packed_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = tl.load(m_ptr + offs)  # bool bytes
    q = tl.load(q_ptr + offs)  # uint8 values below 16
    # FlagGems: Python's and/or/not on bool tiles are elementwise
    both = m and (q > 7)
    either = not (m or (q == 3))
    tl.store(o_ptr + offs * 4, both.to(tl.int32) + 2 * either.to(tl.int32))
    # Inductor: bool + bool wraps in int1, tl.sum of bools counts in int32
    tl.store(o_ptr + offs * 4 + 1, (m + (q > 7)).to(tl.int32))
    tl.store(o_ptr + offs * 4 + 2, tl.sum(m, 0) + tl.zeros_like(offs))
    # bitsandbytes' 4-bit packing: pairs through reshape/split, uint8 shifts
    left, right = q.reshape((BLOCK // 2, 2)).split()
    tl.store(packed_ptr + tl.arange(0, BLOCK // 2), left << 4 | (right & 0xF))
    # HQQ: the high nibble back, minus a float zero point
    p = tl.load(packed_ptr + tl.arange(0, BLOCK // 2))
    tl.store(o_ptr + tl.arange(0, BLOCK // 2) * 8 + 3, (((p & 0xF0) >> 4) - 0.5).to(tl.int32))


def test_bool_and_nibble_idioms():
    rng = np.random.default_rng(4)
    n = 32
    m = rng.random(n) < 0.5
    q = rng.integers(0, 16, n).astype(np.uint8)
    packed = np.zeros(n // 2, np.uint8)
    o = np.zeros(4 * n, np.int32)
    bool_and_nibble_idioms[(1,)](m, q, packed, o, BLOCK=n)
    assert np.array_equal(o[0::4], (m & (q > 7)) + 2 * ~(m | (q == 3)))
    assert np.array_equal(o[1::4], m ^ (q > 7))
    assert np.array_equal(o[2::4], np.full(n, m.sum()))
    assert np.array_equal(packed, (q[0::2] << 4) | q[1::2])
    assert np.array_equal(o[3::8], (q[0::2].astype(np.float32) - 0.5).astype(np.int32))
