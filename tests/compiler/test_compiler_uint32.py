"""uint32 is unsigned everywhere: ``tl.uint32`` values and uint32 NumPy arrays compare, shift,
divide, take min/max and convert to float as NumPy's uint32 does (checked against NumPy on the
ISS), and the PTX uses the .u32 forms."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from simtgpu.compiler_backend import Target, compile_function, parse_type

EDGES = np.array([0, 1, 2, 3, 7, 28, 31, 255, 65535, 65536, 0x7FFFFFFE, 0x7FFFFFFF, 0x80000000,
                  0x80000001, 0xC0000000, 0xFFFFFFFE, 0xFFFFFFFF, 12345678, 3000000000],
                 dtype=np.uint32)


def operands(seed: int, n: int = 256) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    small = rng.integers(1, 1000, n // 4).astype(np.uint32)
    y[: n // 4] = small  # small divisors exercise the quotient correction
    ex, ey = np.meshgrid(EDGES, EDGES)
    return np.concatenate([x, ex.ravel()]), np.concatenate([y, ey.ravel()])


@triton.jit
def k_issue(X, Y):
    v = tl.load(X).to(tl.uint32)
    tl.store(Y, v >> 28)


def test_issue_example_shift_of_converted_value(iss_device):
    x = np.array([2**31], dtype=np.uint32).view(np.int32)  # an int32 array, as in the issue
    y = np.zeros(1, np.int32)
    k_issue[(1,)](x, y)
    assert int(y.view(np.uint32)[0]) == 8


@triton.jit
def k_ops(x_ptr, y_ptr, out_ptr, f_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    s = y & 31
    outs = (x >> s, x // y, x % y, tl.minimum(x, y), tl.maximum(x, y),
            (x < y).to(tl.uint32), (x >= y).to(tl.uint32), x >> 28, x // 7, x % 1000,
            x // 0x80000001, x // 16, x % 16, x * y, x - y, -x, ~x)
    for i in tl.static_range(len(outs)):
        tl.store(out_ptr + i * n + offs, outs[i], mask=m)
    tl.store(f_ptr + offs, x.to(tl.float32), mask=m)
    tl.store(f_ptr + n + offs, x, mask=m)  # float store of a uint32 value converts


def reference_ops(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    ys = np.where(y == 0, 1, y)
    q = np.where(y == 0, np.uint32(0xFFFFFFFF), x // ys)
    r = np.where(y == 0, x, x % ys)
    with np.errstate(over="ignore"):
        return [x >> (y & 31), q, r, np.minimum(x, y), np.maximum(x, y), (x < y),
                (x >= y), x >> 28, x // 7, x % 1000, x // np.uint32(0x80000001), x // 16,
                x % 16, x * y, x - y, np.uint32(0) - x, ~x]


@pytest.mark.parametrize("seed", [1, 2])
def test_uint32_ops_match_numpy(iss_device, seed):
    x, y = operands(seed)
    n = x.size
    out = np.zeros(17 * n, np.uint32)
    f = np.zeros(2 * n, np.float32)
    k_ops[(triton.cdiv(n, 128),)](x, y, out, f, n, BLOCK=128)
    ref = reference_ops(x, y)
    for i, r in enumerate(ref):
        np.testing.assert_array_equal(out[i * n:(i + 1) * n], r.astype(np.uint32),
                                      err_msg=f"output {i}")
    np.testing.assert_array_equal(f[:n], x.astype(np.float32))
    np.testing.assert_array_equal(f[n:], x.astype(np.float32))


@triton.jit
def k_runtime_divisor(x_ptr, out_ptr, d, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.store(out_ptr + offs, x // d, mask=m)
    tl.store(out_ptr + n + offs, x % d, mask=m)


@pytest.mark.parametrize("d", [0, 1, 3, 1000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF])
def test_uint32_scalar_parameter_divisor(iss_device, d):
    x, _ = operands(3, 64)
    n = x.size
    out = np.zeros(2 * n, np.uint32)
    k_runtime_divisor[(triton.cdiv(n, 128),)](x, out, np.uint32(d), n, BLOCK=128)
    q = x // np.uint32(d) if d else np.full(n, 0xFFFFFFFF, np.uint32)
    r = x % np.uint32(d) if d else x
    np.testing.assert_array_equal(out[:n], q)
    np.testing.assert_array_equal(out[n:], r)


@triton.jit
def k_convert(f_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(f_ptr + offs, mask=m, other=0.0)
    u = v.to(tl.uint32)
    tl.store(out_ptr + offs, u, mask=m)
    tl.store(out_ptr + n + offs, tl.max(tl.where(m, u, 0), axis=0), mask=offs == 0)
    tl.store(out_ptr + n + 1 + offs, tl.min(tl.where(m, u, 0xFFFFFFFF), axis=0), mask=offs == 0)
    tl.store(out_ptr + n + 2 + offs, tl.argmax(tl.where(m, u, 0), axis=0), mask=offs == 0)


def test_float_to_uint32_and_unsigned_reductions(iss_device):
    f = np.array([0.0, 1.5, 2.0**31, 3.0e9, 4294967040.0, 7.9, 2.0**31 + 256, 100.0],
                 np.float32)
    out = np.zeros(f.size + 3, np.uint32)
    k_convert[(1,)](f, out, f.size, BLOCK=8)
    u = f.astype(np.uint32)
    np.testing.assert_array_equal(out[:f.size], u)
    assert out[f.size] == u.max() and out[f.size + 1] == u.min()
    assert out[f.size + 2] == int(np.argmax(u))


def test_uint32_dtype_and_pointer_element_type():
    assert str(parse_type("*u32")) == "ptr<u32,global>"
    assert tl.uint32 != tl.int32


@pytest.mark.skipif(shutil.which("ptxas") is None and not __import__("os").path.exists(
    "/usr/local/bin/ptxas"), reason="ptxas not installed")
def test_uint32_ptx_uses_unsigned_forms(tmp_path):
    types = {"x_ptr": parse_type("*u32"), "y_ptr": parse_type("*u32"),
             "out_ptr": parse_type("*u32"), "f_ptr": parse_type("*fp32"), "n": parse_type("i32")}
    ck = compile_function(k_ops.fn, types, {"BLOCK": 128}, Target.ptx("sm_90"))
    for form in ("shr.u32", "setp.lt.u32", "min.u32", "max.u32", "cvt.rn.f32.u32"):
        assert form in ck.code, form
    ptxas = shutil.which("ptxas") or "/usr/local/bin/ptxas"
    src = tmp_path / "k.ptx"
    src.write_text(ck.code)
    subprocess.run([ptxas, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                   check=True, capture_output=True)
