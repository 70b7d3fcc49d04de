"""tl.int8, tl.uint8, tl.int16, tl.uint16 and bool (``*i1``) pointers, tiles and host arrays:
ISS results against NumPy (wrapping arithmetic, Triton's promotion, casts, masked sub-word
loads and stores at unaligned starts where several threads write bytes of one word at the
same time, Inductor-style bool outputs, an int8 dequantise and a uint8 image kernel), the
placed error of an 8-bit atomic, and the PTX through ptxas."""

import re

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error, current_device, generated_kernel
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from simtgpu.driver_model import Device
from simtgpu.driver_model.errors import DriverError
from test_compiler_ptx import needs_ptxas, ptxas_errors


@pytest.fixture(autouse=True)
def iss():
    triton.set_device(Device(backend="iss", config="small"))
    yield
    triton.set_device(None)


def _trunc_div(a, b):
    """C's (and Triton's) integer division: the quotient truncated toward zero."""
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q)


# --- wrapping arithmetic in the narrow type -------------------------------------------------
@triton.jit
def wrap_ops(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    tl.store(o_ptr + offs * 9 + 0, x + y, mask=m)
    tl.store(o_ptr + offs * 9 + 1, x - y, mask=m)
    tl.store(o_ptr + offs * 9 + 2, x * y, mask=m)
    tl.store(o_ptr + offs * 9 + 3, x << 3, mask=m)
    tl.store(o_ptr + offs * 9 + 4, x // y, mask=m)
    tl.store(o_ptr + offs * 9 + 5, -x, mask=m)
    tl.store(o_ptr + offs * 9 + 6, ~x, mask=m)
    tl.store(o_ptr + offs * 9 + 7, tl.abs(x) + ((x * y) >> 2), mask=m)
    tl.store(o_ptr + offs * 9 + 8, tl.maximum(x, y) ^ (x & y), mask=m)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint16])
def test_arithmetic_wraps_in_the_narrow_type(dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(1)
    n = 37
    x = rng.integers(info.min, info.max + 1, n).astype(dt)
    y = rng.integers(info.min, info.max + 1, n).astype(dt)
    x[:4] = [info.min, info.max, 0, 1]
    y[y == 0] = 3
    y[:4] = [3, info.max, 7, 1] if info.min == 0 else [-1, -1, 7, info.min]
    o = np.zeros(9 * n, dt)
    wrap_ops[(triton.cdiv(n, 16),)](x, y, o, n, BLOCK=16)
    with np.errstate(over="ignore"):
        want = np.stack([x + y, x - y, x * y, (x << 3).astype(dt),
                         _trunc_div(x, y).astype(dt), (-x.astype(np.int64)).astype(dt), ~x,
                         (np.abs(x.astype(np.int64)).astype(dt) + ((x * y) >> 2)).astype(dt),
                         np.maximum(x, y) ^ (x & y)], axis=1).reshape(-1)
    assert np.array_equal(o, want.astype(dt))


def _expression(rng, depth: int):
    """A random expression over ``x`` and ``y`` as (kernel text, NumPy function)."""
    if depth == 0 or rng.random() < 0.2:
        leaf = rng.choice(["x", "y", "c"])
        if leaf == "c":
            c = int(rng.integers(1, 100))
            return str(c), lambda x, y, dt, c=c: np.full_like(x, c)
        return leaf, (lambda x, y, dt: x) if leaf == "x" else (lambda x, y, dt: y)
    op = rng.choice(["+", "-", "*", "&", "|", "^", "<<", ">>", "//", "neg", "~", "where"])
    a_text, a = _expression(rng, depth - 1)
    if op in ("neg", "~"):
        f = (lambda x, y, dt: (-a(x, y, dt).astype(np.int64)).astype(dt)) if op == "neg" \
            else (lambda x, y, dt: ~a(x, y, dt))
        return f"({'-' if op == 'neg' else '~'}{a_text})", f
    if op in ("<<", ">>"):
        k = int(rng.integers(0, 7))
        f = (lambda x, y, dt: (a(x, y, dt) << dt(k)).astype(dt)) if op == "<<" \
            else (lambda x, y, dt: a(x, y, dt) >> dt(k))
        return f"({a_text} {op} {k})", f
    b_text, b = _expression(rng, depth - 1)
    if op == "where":
        return (f"tl.where({a_text} < {b_text}, {b_text}, {a_text})",
                lambda x, y, dt: np.where(a(x, y, dt) < b(x, y, dt), b(x, y, dt), a(x, y, dt)))
    if op == "//":  # by a divisor that is never zero: (b | 1)
        return (f"({a_text} // ({b_text} | 1))",
                lambda x, y, dt: _trunc_div(a(x, y, dt), b(x, y, dt) | dt(1)).astype(dt))
    fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "&": np.bitwise_and,
          "|": np.bitwise_or, "^": np.bitwise_xor}[op]
    return f"({a_text} {op} {b_text})", lambda x, y, dt: fn(a(x, y, dt), b(x, y, dt))


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint16])
def test_random_expressions_against_numpy(tmp_path, dt):
    """Seeded random expressions of the wrapping, bitwise, shift, division and select ops
    (each result stored to a narrow array, so the re-normalisations that no reader needs
    are dropped: narrow.drop_unread_extensions)."""
    rng = np.random.default_rng(np.dtype(dt).itemsize * 10 + (np.dtype(dt).kind == "u"))
    info = np.iinfo(dt)
    texts, fns = zip(*[_expression(rng, 4) for _ in range(12)], strict=True)
    body = "".join(f"    tl.store(o_ptr + offs * 12 + {i}, {t}, mask=m)\n"
                   for i, t in enumerate(texts))
    kern, _ = generated_kernel(tmp_path, f"k_expr_{np.dtype(dt).name}", f"""def kern(
        x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    y = tl.load(y_ptr + offs, mask=m, other=0)
{body}""")
    n = 45
    x = rng.integers(info.min, info.max + 1, n).astype(dt)
    y = rng.integers(info.min, info.max + 1, n).astype(dt)
    x[:3], y[:3] = [info.min, info.max, 0], [info.max, info.min, 1]
    o = np.zeros(12 * n, dt)
    kern[(triton.cdiv(n, 16),)](x, y, o, n, BLOCK=16)
    with np.errstate(over="ignore", divide="ignore"):
        want = np.stack([f(x, y, dt).astype(dt) for f in fns], axis=1).reshape(-1)
    for i, t in enumerate(texts):
        assert np.array_equal(o[i::12], want[i::12]), t


# --- Triton's promotion ------------------------------------------------------------------
@triton.jit
def promotion(x_ptr, u_ptr, i_ptr, h_ptr, o_i32, o_i8, o_u8, o_f16, o_f32, o_i16,
              BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # int8
    u = tl.load(u_ptr + offs)  # uint8
    i = tl.load(i_ptr + offs)  # int32
    h = tl.load(h_ptr + offs)  # float16
    a = x * 3 + i  # int8 * Python int stays int8 (wraps); with int32: int32
    tl.static_assert(a.dtype == tl.int32)
    b = x + 100
    tl.static_assert(b.dtype == tl.int8)
    c = x + u  # same width, mixed signedness: the unsigned type
    tl.static_assert(c.dtype == tl.uint8)
    d = x * h
    tl.static_assert(d.dtype == tl.float16)
    e = x * 0.5 + u
    tl.static_assert(e.dtype == tl.float32)
    f = u.to(tl.int16) * 300 + x  # int16 with int8: int16
    tl.static_assert(f.dtype == tl.int16)
    g = (u + i) < 0  # uint8 with int32: int32 (signed compare)
    tl.static_assert(g.dtype == tl.int1)
    k = (x < 200) & (u > -1) & (u < 200)  # comparisons promote a Python int: in int32
    tl.store(o_i32 + offs, a + g.to(tl.int32) * 1000000 + k.to(tl.int32) * 10000000)
    tl.store(o_i8 + offs, b)
    tl.store(o_u8 + offs, c)
    tl.store(o_f16 + offs, d)
    tl.store(o_f32 + offs, e)
    tl.store(o_i16 + offs, f)


def test_promotion_follows_triton():
    rng = np.random.default_rng(2)
    n = 32
    x = rng.integers(-128, 128, n).astype(np.int8)
    u = rng.integers(0, 256, n).astype(np.uint8)
    i = rng.integers(-300, 300, n).astype(np.int32)
    h = (rng.standard_normal(n) * 3).astype(np.float16)
    outs = [np.zeros(n, d) for d in (np.int32, np.int8, np.uint8, np.float16, np.float32,
                                      np.int16)]
    promotion[(1,)](x, u, i, h, *outs, BLOCK=n)
    with np.errstate(over="ignore"):
        x3 = x * np.int8(3)  # wraps in int8
        want = [x3.astype(np.int32) + i + ((u.astype(np.int32) + i) < 0) * 1000000
                + (u < 200) * 10000000,
                x + np.int8(100), x.astype(np.uint8) + u, x.astype(np.float16) * h,
                x.astype(np.float32) * np.float32(0.5) + u,
                (u.astype(np.int16) * np.int16(300) + x).astype(np.int16)]
    for got, w in zip(outs, want, strict=True):
        assert np.array_equal(got, w), (got, w)


# --- conversions ----------------------------------------------------------------------------
@triton.jit
def casts(f_ptr, i_ptr, h_ptr, o8, ou8, o16, ou16, of, oh, oi, ol, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    f = tl.load(f_ptr + offs)
    i = tl.load(i_ptr + offs)
    h = tl.load(h_ptr + offs)
    tl.store(o8 + offs * 3, f.to(tl.int8))  # truncation toward zero, saturating
    tl.store(o8 + offs * 3 + 1, i.to(tl.int8))  # the low bits
    tl.store(o8 + offs * 3 + 2, h.to(tl.int8))
    tl.store(ou8 + offs * 2, f.to(tl.uint8))
    tl.store(ou8 + offs * 2 + 1, i.to(tl.int8).to(tl.uint8))
    tl.store(o16 + offs, i.to(tl.int16))
    tl.store(ou16 + offs, i.to(tl.int8).to(tl.uint16))  # sign-extends, then wraps
    x = i.to(tl.int8)
    tl.store(of + offs, x.to(tl.float32) + i.to(tl.uint8).to(tl.float32) * 1000.0)
    tl.store(oh + offs, x.to(tl.float16))
    tl.store(oi + offs, x.to(tl.int32) * 65536 + i.to(tl.uint16).to(tl.int32))
    tl.store(ol + offs, x.to(tl.int64) * 4294967296 + i.to(tl.uint8).to(tl.int64))


def test_casts_against_numpy():
    rng = np.random.default_rng(3)
    n = 64
    f = (rng.standard_normal(n) * 60).astype(np.float32)
    f[:8] = [127.9, -128.9, -0.7, 0.7, 255.5, 1e9, -1e9, np.nan]
    i = rng.integers(-100000, 100000, n).astype(np.int32)
    h = (rng.standard_normal(n) * 50).astype(np.float16)
    o8, ou8 = np.zeros(3 * n, np.int8), np.zeros(2 * n, np.uint8)
    o16, ou16 = np.zeros(n, np.int16), np.zeros(n, np.uint16)
    of, oh = np.zeros(n, np.float32), np.zeros(n, np.float16)
    oi, ol = np.zeros(n, np.int32), np.zeros(n, np.int64)
    casts[(1,)](f, i, h, o8, ou8, o16, ou16, of, oh, oi, ol, BLOCK=n)
    fz = np.nan_to_num(np.trunc(f), nan=0.0)  # PTX's cvt.rzi.s8.f32: NaN is 0, saturated
    with np.errstate(over="ignore"):
        x = i.astype(np.int8)
        want8 = np.stack([np.clip(fz, -128, 127).astype(np.int8), x,
                          np.trunc(h.astype(np.float32)).astype(np.int8)], 1).reshape(-1)
        wantu8 = np.stack([np.clip(fz, 0, 255).astype(np.uint8), x.astype(np.uint8)],
                          1).reshape(-1)
        assert np.array_equal(o8, want8)
        assert np.array_equal(ou8, wantu8)
        assert np.array_equal(o16, i.astype(np.int16))
        assert np.array_equal(ou16, x.astype(np.uint16))
        assert np.array_equal(of, x.astype(np.float32)
                              + i.astype(np.uint8).astype(np.float32) * np.float32(1000))
        assert np.array_equal(oh, x.astype(np.float16))
        assert np.array_equal(oi, x.astype(np.int32) * 65536 + i.astype(np.uint16))
        assert np.array_equal(ol, x.astype(np.int64) * 2**32 + i.astype(np.uint8))


@triton.jit
def half_bits(h_ptr, i_ptr, u_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    i = h.to(tl.int16, bitcast=True)  # the fp16 sort-key trick: flip the magnitude bits
    key = i ^ ((i >> 15) & 0x7FFF)
    tl.store(i_ptr + offs, key)
    tl.store(u_ptr + offs, h.to(tl.uint16, bitcast=True))
    tl.store(b_ptr + offs, (i + 1).to(tl.float16, bitcast=True))


def test_half_bitcasts_to_and_from_16_bit_integers():
    h = np.array([0.0, -0.0, 1.5, -2.25, 65504, -65504, np.inf, 6e-8], np.float16)
    i, u, b = np.zeros(8, np.int16), np.zeros(8, np.uint16), np.zeros(8, np.float16)
    half_bits[(1,)](h, i, u, b, BLOCK=8)
    v = h.view(np.int16)
    assert np.array_equal(i, v ^ ((v >> 15) & np.int16(0x7FFF)))
    assert np.array_equal(u, h.view(np.uint16))
    with np.errstate(over="ignore"):
        assert np.array_equal(b.view(np.int16), v + np.int16(1))


# --- masked sub-word loads and stores -------------------------------------------------------
@triton.jit
def shifted_copy(x_ptr, o_ptr, start, n, other, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + start + offs, mask=m & (offs % 3 != 1), other=other)
    tl.store(o_ptr + start + offs, v + 1, mask=m)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.uint16])
@pytest.mark.parametrize("start,n", [(1, 29), (3, 34)])
def test_masked_unaligned_stores_keep_the_neighbours(dt, start, n):
    """Each thread stores one element, so the lanes of a warp write the 2 or 4 elements of
    a word at once (the compare-and-swap loop's race); the bytes around the written run
    keep their values."""
    info = np.iinfo(dt)
    rng = np.random.default_rng(start)
    size = start + n + 5
    x = rng.integers(info.min, info.max, size).astype(dt)
    sentinel = rng.integers(info.min, info.max + 1, size).astype(dt)
    o = sentinel.copy()
    other = info.max  # + 1 wraps to the minimum
    shifted_copy[(triton.cdiv(n, 16),)](x, o, start, n, other, BLOCK=16)
    want = sentinel.copy()
    k = np.arange(n)
    v = np.where(k % 3 != 1, x[start:start + n], dt(other))
    with np.errstate(over="ignore"):
        want[start:start + n] = v + dt(1)
    assert np.array_equal(o, want)


@pytest.mark.slow
def test_byte_stores_on_rtl():
    """The RTL's atom.cas under the byte stores' race: one tiny kernel, int8 at an odd
    start (the rtl model of test_compiler_rtl.py, 'small'; skipped where unavailable)."""
    with current_device("rtl"):
        x = np.arange(40, dtype=np.int8) * 7
        o = np.full(40, -3, np.int8)
        shifted_copy[(2,)](x, o, 1, 29, 127, BLOCK=16)
        want = np.full(40, -3, np.int8)
        k = np.arange(29)
        with np.errstate(over="ignore"):
            want[1:30] = np.where(k % 3 != 1, x[1:30], np.int8(127)) + np.int8(1)
        assert np.array_equal(o, want)


# --- bool pointers, as Inductor writes them -------------------------------------------------
@triton.jit
def inductor_bool(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl.load(in_ptr1 + (x0), xmask)
    tmp5 = tl.load(in_ptr2 + (x0), xmask, other=True).to(tl.int1)  # a torch.bool mask
    tmp2 = tmp0 < tmp1
    tmp3 = tmp2 & tmp5
    tl.store(out_ptr0 + (x0), tmp3, xmask)
    tmp4 = tl.where(tmp5, tmp0, 0.0)
    tl.store(out_ptr1 + (x0), tmp4, xmask)


def test_bool_outputs_and_masks():
    rng = np.random.default_rng(4)
    n = 53
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    keep = rng.random(n) < 0.5
    out = np.ones(n + 3, np.bool_)  # the 3 bytes after the output stay True
    vals = np.zeros(n, np.float32)
    inductor_bool[(triton.cdiv(n, 16),)](a, b, keep, out[:n], vals, n, XBLOCK=16)
    assert out.dtype == np.bool_
    assert np.array_equal(out[:n], (a < b) & keep)
    assert out[n:].all()
    assert np.array_equal(out.view(np.uint8)[:n], ((a < b) & keep).astype(np.uint8))
    assert np.array_equal(vals, np.where(keep, a, np.float32(0)))


@triton.jit
def bool_roundtrip(x_ptr, o_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m, other=1)  # int8 values stored to a bool: != 0
    tl.store(o_ptr + offs, v, mask=m)
    flags = tl.load(o_ptr + offs, mask=m, other=False)
    tl.static_assert(flags.dtype == tl.int1)
    tl.static_assert(o_ptr.dtype.element_ty == tl.int1)
    tl.store(c_ptr, tl.sum(flags.to(tl.int32), axis=0))


def test_bool_store_of_integers_writes_zero_or_one():
    x = np.array([0, 1, -1, 2, 0, 127, -128, 0, 5], np.int8)
    o = np.zeros(len(x), np.bool_)
    c = np.zeros(1, np.int32)
    bool_roundtrip[(1,)](x, o, c, len(x), BLOCK=16)
    assert np.array_equal(o.view(np.uint8), (x != 0).astype(np.uint8))
    assert c[0] == np.count_nonzero(x)


# --- kernels people write -----------------------------------------------------------------
@triton.jit
def dequantise(w_ptr, s_ptr, o_ptr, K, stride_w, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_K)
    m = cols < K
    w = tl.load(w_ptr + row * stride_w + cols, mask=m, other=0)
    scale = tl.load(s_ptr + row)
    tl.store(o_ptr + row * K + cols, w.to(tl.float32) * scale, mask=m)


def test_int8_dequantise():
    rng = np.random.default_rng(5)
    rows, K = 5, 27
    w = rng.integers(-128, 128, (rows, K + 3)).astype(np.int8)[:, 1:K + 1]  # a strided view
    scale = rng.random(rows).astype(np.float32) / 64
    o = np.zeros((rows, K), np.float32)
    dequantise[(rows,)](w, scale, o, K, w.strides[0], BLOCK_N=1, BLOCK_K=32)
    assert np.array_equal(o, w.astype(np.float32) * scale[:, None])


@triton.jit
def int8_matmul(a_ptr, b_ptr, c_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    acc = tl.zeros((M, N), dtype=tl.int32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)  # int8 x int8: int32, as Triton's
    scale = tl.load(s_ptr + rn)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float32) * scale[None, :])


@pytest.mark.parametrize("M,N", [(16, 16), (4, 4)])  # outer-product and per-element paths
def test_int8_matmul_accumulates_in_int32(M, N):
    rng = np.random.default_rng(M)
    K = 32
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    s = rng.random(N).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    int8_matmul[(1,)](a, b, c, s, M=M, N=N, K=K, BK=16)
    want = (a.astype(np.int32) @ b.astype(np.int32)).astype(np.float32) * s[None, :]
    assert np.array_equal(c, want)


@triton.jit
def grey(rgb_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = tl.load(rgb_ptr + offs * 3, mask=m)
    g = tl.load(rgb_ptr + offs * 3 + 1, mask=m)
    b = tl.load(rgb_ptr + offs * 3 + 2, mask=m)
    y = (r.to(tl.int32) * 77 + g.to(tl.int32) * 150 + b.to(tl.int32) * 29) >> 8
    bright = tl.minimum(y * 3 // 2, 255).to(tl.uint8)
    tl.store(o_ptr + offs, bright + (r > 250), mask=m)  # uint8 + bool: uint8 (wraps)


def test_uint8_image_kernel():
    rng = np.random.default_rng(6)
    h, w = 7, 9
    img = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
    img[0, 0] = [255, 255, 255]
    o = np.zeros((h, w), np.uint8)
    grey[(triton.cdiv(h * w, 32),)](img, o, h * w, BLOCK=32)
    p = img.astype(np.int32)
    y = (p[..., 0] * 77 + p[..., 1] * 150 + p[..., 2] * 29) >> 8
    want = (np.minimum(y * 3 // 2, 255) + (img[..., 0] > 250)).astype(np.uint8)
    assert np.array_equal(o, want)


@triton.jit
def int16_reduce(x_ptr, o_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    tl.store(s_ptr + tl.arange(0, R), tl.sum(x, axis=1))  # in int32: no wrap
    w = tl.sum(x, axis=1, dtype=tl.int16)  # in int16: wraps
    tl.static_assert(w.dtype == tl.int16)
    tl.store(s_ptr + R + tl.arange(0, R), w)
    acc = tl.zeros((R, C), dtype=tl.int16)
    for _ in range(3):  # a loop-carried int16: each step wraps
        acc = acc * 3 + x
    tl.store(o_ptr + r * C + c, tl.max(acc, axis=1)[:, None] + (acc > 0).to(tl.int16))


def test_int16_loop_and_reductions():
    rng = np.random.default_rng(7)
    R, C = 4, 16
    x = rng.integers(-32768, 32768, (R, C)).astype(np.int16)
    o = np.zeros((R, C), np.int16)
    s = np.zeros(2 * R, np.int32)
    int16_reduce[(1,)](x, o, s, R=R, C=C)
    assert np.array_equal(s[:R], x.astype(np.int32).sum(1))
    assert np.array_equal(s[R:], x.sum(1, dtype=np.int16))
    acc = np.zeros_like(x)
    with np.errstate(over="ignore"):
        for _ in range(3):
            acc = acc * np.int16(3) + x
        want = acc.max(1)[:, None] + (acc > 0).astype(np.int16)
    assert np.array_equal(o, want)


@triton.jit
def int8_scans(x_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    c = tl.cumsum(x, 0)  # in int32, as Triton's
    tl.static_assert(c.dtype == tl.int32)
    w = tl.cumsum(x, 0, dtype=tl.int8)  # in int8: wraps
    tl.static_assert(w.dtype == tl.int8)
    tl.store(o_ptr + i * 3, c.to(tl.int8) ^ w)  # zero where the two agree modulo 256
    tl.store(o_ptr + i * 3 + 1, w)
    tl.store(o_ptr + i * 3 + 2, tl.cumprod(x, 0))  # keeps int8 and wraps


def test_int8_scans_wrap_as_triton():
    x = np.random.default_rng(8).integers(-128, 128, 32).astype(np.int8)
    o = np.ones(3 * 32, np.int8)
    int8_scans[(1,)](x, o, N=32)
    assert not o[0::3].any()
    assert np.array_equal(o[1::3], np.cumsum(x, dtype=np.int8))
    assert np.array_equal(o[2::3], np.cumprod(x, dtype=np.int8))


# --- constants, element types, pointer casts --------------------------------------------------
@triton.jit
def constants(o_ptr, p_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.zeros((BLOCK,), dtype=tl.int8) - 1
    f = tl.full((BLOCK,), 300, tl.uint16) * 300  # 90000 wraps to 24464
    e = tl.full((BLOCK,), 7, o_ptr.dtype.element_ty)
    tl.static_assert(e.dtype == tl.int16)
    tl.store(o_ptr + offs * 3, z)
    tl.store(o_ptr + offs * 3 + 1, f)
    tl.store(o_ptr + offs * 3 + 2, e)
    q = p_ptr.to(tl.pointer_type(tl.uint8))  # the same bytes read as uint8
    tl.store(q + offs, tl.load(q + offs) + 1)


def test_constants_and_pointer_types():
    o = np.zeros(3 * 8, np.int16)
    p = np.array([-1, 0, 1, 2, -128, 127, 5, -5], np.int8)
    constants[(1,)](o, p, BLOCK=8)
    assert np.array_equal(o.reshape(8, 3), np.tile([-1, 24464, 7], (8, 1)))
    assert np.array_equal(p, np.array([0, 1, 2, 3, -127, -128, 6, -4], np.int8))


# --- what is refused ---------------------------------------------------------------------------
def test_array_dtypes_are_checked_against_the_compiled_elements():
    ck = compile_function(inductor_bool.fn, {
        "in_ptr0": ir.ptr("f32"), "in_ptr1": ir.ptr("f32"), "in_ptr2": ir.ptr("i1"),
        "out_ptr0": ir.ptr("i1"), "out_ptr1": ir.ptr("f32"), "xnumel": ir.I32},
        {"XBLOCK": 16}, Target("isa", 8))
    ck.check_array("out_ptr0", np.bool_)
    with pytest.raises(DriverError, match="compiled for bool elements, got an array of uint8"):
        ck.check_array("out_ptr0", np.uint8)
    ck = compile_function(grey.fn, {"rgb_ptr": ir.ptr("u8"), "o_ptr": ir.ptr("u8"),
                                    "n": ir.I32}, {"BLOCK": 16}, Target("isa", 8))
    with pytest.raises(DriverError, match="compiled for uint8 elements, got an array of int8"):
        ck.check_array("o_ptr", np.int8)
    with pytest.raises(DriverError, match="int8, uint8, int16, uint16, .*bool"):
        ck.check_array("o_ptr", np.float64)


# (generated kernels: KERNEL_PRELUDE puts ``def kern`` on line 6 of its file)
def test_loop_carried_narrow_type_must_not_change(tmp_path):
    e = compile_error(tmp_path, "k_carry8", """def kern(p):
    offs = tl.arange(0, 16)
    acc = tl.zeros((16,), dtype=tl.int8)
    for k in range(3):
        acc += tl.load(p + offs) * k
    tl.store(p + offs, acc)
""", {"p": ir.ptr("i8")})
    assert re.search(r"k_carry8\.py:9:\d+: loop-carried 'acc' starts as i8 .*"
                     r"becomes i32", str(e))


def test_atomic_on_int8_is_a_placed_error(tmp_path):
    e = compile_error(tmp_path, "k_atomic8", """def kern(p):
    tl.atomic_add(p + tl.arange(0, 16), 1)
""", {"p": ir.ptr("i8")})
    assert re.search(r"k_atomic8\.py:7:\d+: atomic_add on int8 is not supported",
                     str(e))


def test_bitcast_that_changes_the_width_is_refused(tmp_path):
    e = compile_error(tmp_path, "k_bitcast8", """def kern(p):
    offs = tl.arange(0, 16)
    tl.store(p + offs, tl.load(p + offs).to(tl.int16, bitcast=True))
""", {"p": ir.ptr("i8")})
    assert re.search(r"k_bitcast8\.py:8:\d+: bitcast from i8 to i16 changes the "
                     r"width", str(e))


# --- PTX ----------------------------------------------------------------------------------------
@needs_ptxas
@pytest.mark.parametrize("kernel,types,cexpr,want", [
    (wrap_ops, {"x_ptr": ir.ptr("i8"), "y_ptr": ir.ptr("i8"), "o_ptr": ir.ptr("i8"),
                "n": ir.I32}, {"BLOCK": 128}, ("ld.global.s8", "st.global.u8")),
    (wrap_ops, {"x_ptr": ir.ptr("u16"), "y_ptr": ir.ptr("u16"), "o_ptr": ir.ptr("u16"),
                "n": ir.I32}, {"BLOCK": 128}, ("ld.global.u16", "st.global.u16")),
    (inductor_bool, {"in_ptr0": ir.ptr("f32"), "in_ptr1": ir.ptr("f32"),
                     "in_ptr2": ir.ptr("i1"), "out_ptr0": ir.ptr("i1"),
                     "out_ptr1": ir.ptr("f32"), "xnumel": ir.I32}, {"XBLOCK": 128},
     ("ld.global.u8", "st.global.u8")),
    (grey, {"rgb_ptr": ir.ptr("u8"), "o_ptr": ir.ptr("u8"), "n": ir.I32}, {"BLOCK": 128},
     ("ld.global.u8", "st.global.u8")),
    (int16_reduce, {"x_ptr": ir.ptr("i16"), "o_ptr": ir.ptr("i16"), "s_ptr": ir.ptr("i32")},
     {"R": 4, "C": 32}, ("ld.global.s16", "st.global.u16")),
    (casts, {"f_ptr": ir.ptr("f32"), "i_ptr": ir.ptr("i32"), "h_ptr": ir.ptr("f16"),
             "o8": ir.ptr("i8"), "ou8": ir.ptr("u8"), "o16": ir.ptr("i16"),
             "ou16": ir.ptr("u16"), "of": ir.ptr("f32"), "oh": ir.ptr("f16"),
             "oi": ir.ptr("i32"), "ol": ir.ptr("i64")}, {"BLOCK": 128},
     ("cvt.rzi.ftz.s32.f32", "st.global.u8", "st.global.u16")),
])
def test_ptx_assembles(tmp_path, kernel, types, cexpr, want):
    ptx = compile_function(kernel.fn, types, cexpr, Target.ptx("sm_90"), num_warps=4).code
    for w in want:
        assert w in ptx
    assert ptxas_errors(tmp_path, ptx) == ""
