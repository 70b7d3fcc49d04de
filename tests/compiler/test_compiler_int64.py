"""tl.int64 and tl.uint64 (64-bit integers as register pairs on this ISA, native .s64 in
PTX) against NumPy's int64/uint64: every operation on random values and the edges, kernel
parameters beyond 32 bits, loop-carried values, address tables (integer-to-pointer casts)
and kernels in the style of Triton's tutorials 06 and 08. The Hypothesis property test over
int64 expressions is in test_compiler_int_fuzz.py, the folding of each 64-bit op in
test_compiler_fold_property.py."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend.compiler import Target, compile_function, parse_type

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
EDGES = [0, -1, 1, 2**31, 2**31 - 1, -2**31, 2**32, 2**32 - 1, -2**32, I64_MAX, I64_MIN,
         I64_MIN + 1, 0x123456789ABCDEF, -0x0FEDCBA987654321]
N = 64


def _operands(seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    a = (rng.integers(I64_MIN, I64_MAX, N, dtype=np.int64, endpoint=True)
         >> rng.integers(0, 63, N)).astype(np.int64)  # every magnitude
    b = rng.integers(I64_MIN, I64_MAX, N, dtype=np.int64, endpoint=True)
    # float32 ties at every magnitude: 2**k * (2**24 + 1) halfway cases and odd neighbours
    ties = [(1 << 24) + 1 << k for k in range(0, 38, 5)] + [(1 << 25) + 3 << 30, 3 << 61]
    a[:len(EDGES)] = EDGES
    a[len(EDGES):len(EDGES) + len(ties)] = ties
    a[-len(ties):] = [-t for t in ties]
    b[:len(EDGES)] = EDGES[::-1]
    b[30:34] = a[30:34]  # equal pairs
    b[-3:] = a[-3:] + 1
    b[40:44] = [0, -1, 7, -(1 << 62)]  # divisors: zero, -1 (MIN // -1 wraps), small, large
    a[40:44] = [5, I64_MIN, -7, I64_MIN]
    s = rng.integers(0, 64, N).astype(np.int64)
    s[:6] = [0, 1, 31, 32, 33, 63]
    f = (rng.standard_normal(N) * 10.0 ** rng.integers(0, 20, N)).astype(np.float32)
    f[:10] = [0.0, -0.5, 2.0**31, 2.0**32, -2.0**40, 2.0**63, -2.0**63, 2.0**64, 1e30, -1e30]
    f[10:13] = [np.nan, np.inf, -np.inf]
    return a, b, s, f


OPS = ["add", "sub", "mul", "and", "or", "xor", "shl", "sra", "shru", "neg", "not", "lt",
       "le", "gt", "ge", "eq", "ne", "ltu", "geu", "max", "min", "maxu", "minu", "trunc",
       "sext", "zext", "where", "abs", "f32_to_i64", "f32_to_u64"]


@triton.jit
def k_ops(a_ptr, b_ptr, s_ptr, f_ptr, out_ptr, fo_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0)
    b = tl.load(b_ptr + offs, mask=m, other=0)
    s = tl.load(s_ptr + offs, mask=m, other=0)
    f = tl.load(f_ptr + offs, mask=m, other=0.0)
    ua = a.to(tl.uint64, bitcast=True)
    ub = b.to(tl.uint64, bitcast=True)
    o = out_ptr + offs
    tl.store(o + 0 * n, a + b, mask=m)
    tl.store(o + 1 * n, a - b, mask=m)
    tl.store(o + 2 * n, a * b, mask=m)
    tl.store(o + 3 * n, a & b, mask=m)
    tl.store(o + 4 * n, a | b, mask=m)
    tl.store(o + 5 * n, a ^ b, mask=m)
    tl.store(o + 6 * n, a << s, mask=m)
    tl.store(o + 7 * n, a >> s, mask=m)
    tl.store(o + 8 * n, (ua >> s).to(tl.int64, bitcast=True), mask=m)
    tl.store(o + 9 * n, -a, mask=m)
    tl.store(o + 10 * n, ~a, mask=m)
    tl.store(o + 11 * n, (a < b).to(tl.int64), mask=m)
    tl.store(o + 12 * n, (a <= b).to(tl.int64), mask=m)
    tl.store(o + 13 * n, (a > b).to(tl.int64), mask=m)
    tl.store(o + 14 * n, (a >= b).to(tl.int64), mask=m)
    tl.store(o + 15 * n, (a == b).to(tl.int64), mask=m)
    tl.store(o + 16 * n, (a != b).to(tl.int64), mask=m)
    tl.store(o + 17 * n, (ua < ub).to(tl.int64), mask=m)
    tl.store(o + 18 * n, (ua >= ub).to(tl.int64), mask=m)
    tl.store(o + 19 * n, tl.maximum(a, b), mask=m)
    tl.store(o + 20 * n, tl.minimum(a, b), mask=m)
    tl.store(o + 21 * n, tl.maximum(ua, ub).to(tl.int64, bitcast=True), mask=m)
    tl.store(o + 22 * n, tl.minimum(ua, ub).to(tl.int64, bitcast=True), mask=m)
    tl.store(o + 23 * n, a.to(tl.int32).to(tl.int64), mask=m)
    tl.store(o + 24 * n, (b.to(tl.int32) + 0).to(tl.int64), mask=m)
    tl.store(o + 25 * n, b.to(tl.uint32).to(tl.int64), mask=m)
    tl.store(o + 26 * n, tl.where(a < b, a * 3, b - 5), mask=m)
    tl.store(o + 27 * n, tl.abs(a), mask=m)
    tl.store(o + 28 * n, f.to(tl.int64), mask=m)
    tl.store(o + 29 * n, f.to(tl.uint64).to(tl.int64, bitcast=True), mask=m)

    tl.store(fo_ptr + offs, a.to(tl.float32), mask=m)
    tl.store(fo_ptr + n + offs, ua.to(tl.float32), mask=m)


def _saturate(v: float, lo: int, hi: int) -> int:
    """float32 -> integer as PTX's cvt.rzi (NumPy leaves NaN and overflow undefined)."""
    if v != v:
        return 0
    if abs(v) == float("inf"):
        return hi if v > 0 else lo
    return min(max(int(v), lo), hi)  # int() truncates toward zero


def _tdiv(x: int, y: int) -> int:
    """C's (and Triton's) truncating division; by zero as the 32-bit ops (docs/compiler.md)."""
    if y == 0:
        return -1 if x >= 0 else 1
    return _wrap(abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1))  # MIN // -1 wraps


def _wrap(v: int) -> int:
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


def _reference(a, b, s, f) -> tuple[np.ndarray, np.ndarray]:
    ua, ub, us = a.view(np.uint64), b.view(np.uint64), s.astype(np.uint64)
    with np.errstate(all="ignore"):
        rows = [a + b, a - b, a * b, a & b, a | b, a ^ b, a << s, a >> s,
                (ua >> us).view(np.int64), -a, ~a, a < b, a <= b, a > b, a >= b, a == b,
                a != b, ua < ub, ua >= ub, np.maximum(a, b), np.minimum(a, b),
                np.maximum(ua, ub).view(np.int64), np.minimum(ua, ub).view(np.int64),
                a.astype(np.int32).astype(np.int64), b.astype(np.int32).astype(np.int64),
                b.astype(np.uint32).astype(np.int64), np.where(a < b, a * 3, b - 5), np.abs(a),
                [_saturate(float(v), I64_MIN, I64_MAX) for v in f],
                np.array([_saturate(float(v), 0, (1 << 64) - 1) for v in f],
                         np.uint64).view(np.int64)]
    ints = np.stack([np.asarray(r).astype(np.int64) for r in rows])
    # int64/uint64 -> float32 rounds to nearest even, as NumPy
    return ints, np.concatenate([a.astype(np.float32), ua.astype(np.float32)])


def _check_ops(seed: int) -> None:
    a, b, s, f = _operands(seed)
    out = np.zeros((len(OPS), N), np.int64)
    fo = np.zeros(2 * N, np.float32)
    k_ops[(1,)](a, b, s, f, out, fo, N, BLOCK=N)
    ints, floats = _reference(a, b, s, f)
    for name, got, ref in zip(OPS, out, ints, strict=True):
        np.testing.assert_array_equal(got, ref, err_msg=name)
    np.testing.assert_array_equal(fo, floats)


def test_int64_ops_match_numpy(iss_device):
    _check_ops(1)


@triton.jit
def k_div(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    q = (a.to(tl.uint64, bitcast=True) // b.to(tl.uint64, bitcast=True))
    tl.store(out_ptr + i, a // b)
    tl.store(out_ptr + BLOCK + i, a % b)
    tl.store(out_ptr + 2 * BLOCK + i, q.to(tl.int64, bitcast=True))
    tl.store(out_ptr + 3 * BLOCK + i, a // 8 + a % 8 * 1000)


def test_int64_division_truncates_as_c(iss_device):
    """// and % truncate toward zero (C, Triton, PTX's div.s64); MIN // -1 wraps; by zero as
    the 32-bit ops: x // 0 is -1 for x >= 0 and 1 for x < 0 (all ones unsigned), x % 0 is x."""
    a, b, _, _ = _operands(2)
    out = np.zeros(4 * N, np.int64)
    k_div[(1,)](a, b, out, BLOCK=N)
    pairs = list(zip(a.tolist(), b.tolist(), strict=True))
    assert out[:N].tolist() == [_tdiv(x, y) for x, y in pairs]
    assert out[N:2 * N].tolist() == [_wrap(x - _tdiv(x, y) * y) for x, y in pairs]
    upairs = zip(a.view(np.uint64).tolist(), b.view(np.uint64).tolist(), strict=True)
    assert out[2 * N:3 * N].view(np.uint64).tolist() == [
        (1 << 64) - 1 if y == 0 else x // y for x, y in upairs]
    assert out[3 * N:].tolist() == [_wrap(_tdiv(x, 8) + (x - _tdiv(x, 8) * 8) * 1000)
                                    for x, _ in pairs]


def int64_kernels_on_rtl() -> None:
    """On the current (rtl) device: every int64 operation and the conversions against
    NumPy, as on the ISS (called by test_compiler_rtl.py, which builds the model once)."""
    _check_ops(5)


@triton.jit
def k_params(out_ptr, big, ubig, small, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = pid.to(tl.int64) * stride  # tutorial 06's off_z.to(tl.int64) * stride
    tl.store(out_ptr + pid * BLOCK + offs, base + offs + big + small)
    tl.store(out_ptr + (2 + pid) * BLOCK + offs, (ubig >> 60).to(tl.int64) + offs * 0)


def test_int64_parameters_and_python_ints(iss_device):
    """Python ints beyond 32 bits are int64 (uint64 above 2**63 - 1) parameters, as in
    Triton; NumPy int64 scalars too; an int32 grid id times an int64 stride is 64-bit."""
    out = np.zeros(4 * 8, np.int64)
    big, ubig, stride = -(3 << 40) + 7, (1 << 64) - 5, 1 << 33
    k_params[(2,)](out, big, ubig, 5, np.int64(stride), BLOCK=8)
    offs = np.arange(8)
    for pid in range(2):
        np.testing.assert_array_equal(out[pid * 8:(pid + 1) * 8], pid * stride + offs + big + 5)
        np.testing.assert_array_equal(out[(2 + pid) * 8:(3 + pid) * 8], ubig >> 60)


@triton.jit
def k_pointer_round_trip(x_ptr, o_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    address = x_ptr.to(tl.int64) + 4 * BLOCK  # a pointer as an integer, and back
    tl.store(o_ptr + i, tl.load(address.to(tl.pointer_type(tl.float32)) + i))


def test_pointer_to_int64_and_back(iss_device):
    x = np.arange(16, dtype=np.float32)
    o = np.zeros(8, np.float32)
    k_pointer_round_trip[(1,)](x, o, BLOCK=8)
    np.testing.assert_array_equal(o, x[8:])


@triton.jit
def k_const_shifts(a_ptr, out_ptr, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    tl.store(out_ptr + offs, a << K)
    tl.store(out_ptr + BLOCK + offs, a >> K)
    tl.store(out_ptr + 2 * BLOCK + offs,
             (a.to(tl.uint64, bitcast=True) >> K).to(tl.int64, bitcast=True))


@pytest.mark.parametrize("k", [0, 1, 31, 32, 33, 63])
def test_int64_shifts_by_constants(iss_device, k):
    a = _operands(3)[0]
    out = np.zeros(3 * N, np.int64)
    k_const_shifts[(1,)](a, out, K=k, BLOCK=N)
    with np.errstate(all="ignore"):
        want = np.concatenate([a << k, a >> k, (a.view(np.uint64) >> np.uint64(k)).view(np.int64)])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("stage", [1, 3])
def test_tutorial06_int64_head_offsets(iss_device, stage):
    # the compile bench's tutorial 06 kernel (release 3.1 form: int64 head offsets, block
    # pointers), not causal (STAGE 1) and causal (STAGE 3: two inlined inner loops)
    from simtgpu.compiler_backend.bench_compile import t06_attention

    rng = np.random.default_rng(6)
    Z, H, N, D = 2, 2, 16, 8
    q, k, v = (rng.standard_normal((Z, H, N, D)).astype(np.float32) for _ in range(3))
    out = np.zeros_like(q)
    st4 = [x // 4 for x in q.strides]
    t06_attention[(N // 8, Z * H)](q, k, v, 0.5, out, *st4, H, N, HEAD_DIM=D, BLOCK_M=8,
                                   BLOCK_N=8, STAGE=stage)
    s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2) * 0.5
    if stage == 3:
        s = np.where(np.tril(np.ones((N, N), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


@triton.jit
def k_grouped_matmul(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds,
                     group_size, NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
                     BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    # tutorial 08: the problems' matrices come from tables of int64 addresses
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        while tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles:
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            rows = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            cols = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            ks = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (rows * lda)[:, None] + ks[None, :]
            b_ptrs = b_ptr + (ks * ldb)[:, None] + cols[None, :]
            for _ in range(0, tl.cdiv(gk, BLOCK_SIZE_K)):
                acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            tl.store(c_ptr + (rows * ldc)[:, None] + cols[None, :], acc.to(tl.float16))
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


def test_tutorial08_grouped_gemm_with_an_int64_address_table(iss_device):
    rng = np.random.default_rng(8)
    shapes = [(16, 16, 16), (32, 16, 32), (16, 32, 16)]
    a_s = [rng.standard_normal((m, k)).astype(np.float16) for m, _, k in shapes]
    b_s = [rng.standard_normal((k, n)).astype(np.float16) for _, n, k in shapes]
    dev = iss_device
    da = [dev.to_device(x) for x in a_s]
    db = [dev.to_device(x) for x in b_s]
    dc = [dev.to_device(np.zeros((m, n), np.float16)) for m, n, _ in shapes]
    table = [np.array([d.ptr for d in ds], np.int64) for ds in (da, db, dc)]
    sizes = np.array(shapes, np.int32).reshape(-1)
    lds = np.array([(k, n, n) for _, n, k in shapes], np.int32).reshape(-1)
    k_grouped_matmul[(4,)](*table, sizes, lds, len(shapes), NUM_SM=4, BLOCK_SIZE_M=16,
                           BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    for x, y, d in zip(a_s, b_s, dc, strict=True):
        want = (x.astype(np.float32) @ y.astype(np.float32)).astype(np.float16)
        np.testing.assert_allclose(d.to_host().astype(np.float32), want.astype(np.float32),
                                   rtol=2e-3, atol=2e-3)
    for d in da + db + dc:
        dev.free(d)


@triton.jit
def k_carried(a_ptr, out_ptr, n, step, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.int64)
    x = tl.load(a_ptr + offs)
    for i in range(n):  # an int64 tile carried by a loop
        acc = acc * 3 + x + i
    total = step * 0  # an int64 scalar carried by a while loop and chosen by an if
    k = 0
    while k < n:
        total += step
        k += 1
    if n > 2:
        total = total - (1 << 40)
    else:
        total = total + 1
    tl.store(out_ptr + offs, acc + total)


def test_int64_values_carried_by_loops_and_ifs(iss_device):
    a = _operands(4)[0]
    out = np.zeros(N, np.int64)
    step = (1 << 35) + 3
    for n in (0, 2, 5):
        k_carried[(1,)](a, out, n, step, BLOCK=N)
        acc = np.zeros(N, np.int64)
        with np.errstate(all="ignore"):
            for i in range(n):
                acc = acc * 3 + a + i
        total = n * step + (-(1 << 40) if n > 2 else 1)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(out, acc + np.int64(total), err_msg=str(n))


def _ptxas(tmp_path, code: str) -> None:
    ptxas = shutil.which("ptxas") or "/usr/local/bin/ptxas"
    if not os.path.exists(ptxas):
        pytest.skip("ptxas not installed")
    src = tmp_path / "k.ptx"
    src.write_text(code)
    subprocess.run([ptxas, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                   check=True, capture_output=True)


@pytest.mark.parametrize("kernel, types", [
    (k_ops, {"a_ptr": "*i64", "b_ptr": "*i64", "s_ptr": "*i64", "f_ptr": "*fp32",
             "out_ptr": "*i64", "fo_ptr": "*fp32", "n": "i32"}),
    (k_params, {"out_ptr": "*i64", "big": "i64", "ubig": "u64", "small": "i32",
                "stride": "i64"}),
    (k_div, {"a_ptr": "*i64", "b_ptr": "*i64", "out_ptr": "*i64"}),
    (k_carried, {"a_ptr": "*i64", "out_ptr": "*i64", "n": "i32", "step": "i64"}),
    (k_pointer_round_trip, {"x_ptr": "*fp32", "o_ptr": "*fp32"}),
    (k_grouped_matmul, {"group_a_ptrs": "*i64", "group_b_ptrs": "*i64",
                        "group_c_ptrs": "*i64", "group_gemm_sizes": "*i32", "g_lds": "*i32",
                        "group_size": "i32"}),
])
def test_int64_ptx_is_native_and_ptxas_accepts_it(tmp_path, kernel, types):
    meta = {"k_ops": {"BLOCK": 128}, "k_params": {"BLOCK": 128},
            "k_carried": {"BLOCK": 128}, "k_pointer_round_trip": {"BLOCK": 128},
            "k_div": {"BLOCK": 128},
            "k_grouped_matmul": {"NUM_SM": 4, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16,
                                 "BLOCK_SIZE_K": 16}}[kernel.__name__]
    ck = compile_function(kernel.fn, {k: parse_type(v) for k, v in types.items()}, meta,
                          Target.ptx("sm_90"))
    forms = {"k_ops": ["mul.lo.s64", "shr.u64", "shr.s64", "setp.lt.s64", "setp.lt.u64",
                       "max.u64", "cvt.s64.s32", "cvt.u64.u32", "cvt.u32.u64", "ld.global.u64",
                       "st.global.u64", "cvt.rn.f32.s64", "cvt.rn.f32.u64",
                       "cvt.rzi.ftz.s64.f32", "cvt.rzi.ftz.u64.f32"],
             "k_params": [".param .u64 k_params_param_big", "ld.param.u64"],
             "k_carried": ["mov.b64", "add.s64"],
             "k_div": ["setp.ge.u64", "shr.s64"],
             "k_pointer_round_trip": ["cvta.global.u64", "cvta.to.global.u64"],
             "k_grouped_matmul": ["cvta.to.global.u64"]}[kernel.__name__]
    for form in forms:
        assert form in ck.code, form
    _ptxas(tmp_path, ck.code)


@pytest.mark.parametrize("stage", [1, 3])
def test_tutorial06_ptx_has_int64_head_offsets_and_ptxas_accepts_it(tmp_path, stage):
    from simtgpu.compiler_backend.bench_compile import _ATTN, t06_attention

    ck = compile_function(t06_attention.fn, _ATTN, {"HEAD_DIM": 16, "BLOCK_M": 16,
                                                     "BLOCK_N": 16, "STAGE": stage},
                          Target.ptx("sm_90"))
    for form in ("cvt.s64.s32", "mul.lo.s64"):  # off_z.to(tl.int64) * stride_qz
        assert form in ck.code, form
    _ptxas(tmp_path, ck.code)


def test_int64_errors_name_the_place(tmp_path):
    # (reductions and scans of int64 work: test_compiler_generated_kernels.py; a sort does not)
    e = compile_error(tmp_path, "sort64", "def kern(x_ptr):\n"
                      "    x = tl.load(x_ptr + tl.arange(0, 64))\n"
                      "    tl.store(x_ptr + tl.arange(0, 64), tl.sort(x, 0))\n",
                      {"x_ptr": parse_type("*i64")})
    assert "sort64.py:8:" in str(e) and "int64 tensors cannot be exchanged" in str(e)
    e = compile_error(tmp_path, "atom64", "def kern(x_ptr):\n"
                      "    tl.atomic_add(x_ptr, 1)\n", {"x_ptr": parse_type("*i64")})
    assert "atom64.py:7:" in str(e) and "int64" in str(e)  # the atomic's line



def test_cuda_parameter_packing_of_64_bit_integers():
    """The cuda backend passes an i64/u64 parameter as one 8-byte value (two's complement)."""
    from simtgpu.driver_model.backend_cuda import pack_kernel_params

    packed = pack_kernel_params(["i64", "u64", "i32"], [-2, (1 << 64) - 1, -1], arena=0)
    assert [p.dtype.itemsize for p in packed] == [8, 8, 4]
    assert packed[0].tobytes() == (-2).to_bytes(8, "little", signed=True)
    assert packed[1].tobytes() == b"\xff" * 8
