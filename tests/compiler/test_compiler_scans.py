"""Scans and reductions with a combine function on the ISS against NumPy models of the
documented order (first element to last, bit for bit): tl.cumsum, tl.cumprod,
tl.associative_scan (also reverse and with a non-commutative tuple combine), tl.reduce
(one axis, all axes, tuple operands), tl.sort and tl.histogram, plus ptxas."""

import functools

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors

P, IP, I = ir.ptr("f32"), ir.ptr("i32"), ir.I32
F = np.float32


@triton.jit
def _add(a, b):
    return a + b

@triton.jit
def _affine(a1, b1, a2, b2):
    # composition of x -> a*x + b maps (first then second): non-commutative
    return a2 * a1, a2 * b1 + b2

@triton.jit
def _argmax(v1, i1, v2, i2):
    take = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)

@triton.jit
def k_scan(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.cumsum(x, axis=1))
    tl.store(o_ptr + M * N + offs, tl.cumsum(x, 0, reverse=True))
    tl.store(o_ptr + 2 * M * N + offs, tl.associative_scan(x, 1, _add, reverse=True))
    tl.store(o_ptr + 3 * M * N + rm, tl.reduce(x, 1, _add))
    tl.store(o_ptr + 3 * M * N + M + rn, tl.reduce(x, 0, _add))
    tl.store(o_ptr + 3 * M * N + M + N, tl.reduce(x, None, _add))
    tl.store(o_ptr + 3 * M * N + M + N + 1 + offs, tl.cumprod(x * 0.1 + 1.0, axis=1))
    a, b = tl.associative_scan((x, x * 2.0), 1, _affine)
    tl.store(o_ptr + 4 * M * N + M + N + 1 + offs, b)
    v, i = tl.reduce((x, rn[None, :] + rm[:, None] * 0), 1, _argmax)
    tl.store(o_ptr + 5 * M * N + M + N + 1 + rm, i.to(tl.float32))
    tl.store(o_ptr + 5 * M * N + 2 * M + N + 1 + offs, tl.sort(x))
    tl.store(o_ptr + 6 * M * N + 2 * M + N + 1 + offs, x.sort(descending=True))

@triton.jit
def k_hist(x_ptr, h_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    h = tl.histogram(x, BINS, mask=offs < n)
    tl.store(h_ptr + tl.arange(0, BINS), h)


def _fold(values) -> np.float32:
    """The documented reduction order: a left fold in float32."""
    return functools.reduce(lambda a, b: F(a + b), values)


def _affine_scan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ra, rb = a[:, 0].copy(), b[:, 0].copy()
    out = np.zeros_like(b)
    out[:, 0] = rb
    for j in range(1, a.shape[1]):
        ra, rb = a[:, j] * ra, F(a[:, j] * rb) + b[:, j]
        out[:, j] = rb
    return out


@pytest.mark.parametrize("m, n", [(4, 8), (2, 64), (64, 2)])
def test_scans_and_reductions_bit_exact(iss_device, m, n):
    x = np.random.default_rng(m * n).standard_normal((m, n)).astype(F)
    o = np.zeros(8 * m * n + 2 * m + n + 1, F)
    # the NumPy model rounds every multiply and add: no contraction into ffma here (the
    # contraction has its own tests in test_compiler_fma.py)
    k_scan[(1,)](x, o, M=m, N=n, enable_fp_fusion=False)
    want = [np.cumsum(x, 1, dtype=F), np.cumsum(x[::-1], 0, dtype=F)[::-1],
            np.cumsum(x[:, ::-1], 1, dtype=F)[:, ::-1], [_fold(r) for r in x],
            [_fold(c) for c in x.T], [_fold(x.ravel())],
            np.cumprod(x * F(0.1) + F(1.0), 1, dtype=F), _affine_scan(x, x * F(2)),
            x.argmax(1), np.sort(x, 1, kind="stable"), -np.sort(-x, 1, kind="stable")]
    pos = 0
    for i, w in enumerate(want):
        w = np.asarray(w, F).ravel()
        assert np.array_equal(o[pos:pos + w.size], w), i
        pos += w.size


@pytest.mark.parametrize("n, bins", [(100, 16), (32, 8), (7, 32)])
def test_histogram_counts_in_range_values(iss_device, n, bins):
    x = np.random.default_rng(n).integers(-3, bins + 3, 128).astype(np.int32)
    h = np.zeros(bins, np.int32)
    k_hist[(1,)](x, h, n, BLOCK=128, BINS=bins)
    v = x[:n]
    assert np.array_equal(h, np.bincount(v[(v >= 0) & (v < bins)], minlength=bins))


@triton.jit
def k_int_scan(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.cumsum(x, 0))
    tl.store(o_ptr + BLOCK + offs, tl.sort(x, descending=True))
    tl.store(o_ptr + 2 * BLOCK, tl.reduce(x, 0, _add, keep_dims=True).sum())
    a, b = tl.broadcast(tl.reshape(x, (BLOCK // 8, 8)), (tl.arange(0, 8) % 3)[None, :])
    tl.store(o_ptr + 2 * BLOCK + 1, tl.xor_sum(a + b))
    tl.store(o_ptr + 2 * BLOCK + 2 + tl.arange(0, BLOCK // 8), tl.xor_sum(a * b, axis=1))


@pytest.mark.parametrize("block", [8, 64])
def test_int32_scan_sort_and_reduce(iss_device, block):
    x = np.random.default_rng(block).integers(-(2**31), 2**31 - 1, block).astype(np.int32)
    o = np.zeros(3 * block + 2, np.int32)
    k_int_scan[(1,)](x, o, BLOCK=block)
    a, b = np.broadcast_arrays(x.reshape(-1, 8), np.arange(8, dtype=np.int32)[None, :] % 3)
    assert o[2 * block + 1] == np.bitwise_xor.reduce((a + b).ravel())
    assert np.array_equal(o[2 * block + 2:2 * block + 2 + block // 8],
                          np.bitwise_xor.reduce(a * b, axis=1))
    assert np.array_equal(o[:block], np.cumsum(x, dtype=np.int32))
    assert np.array_equal(o[block:2 * block], np.sort(x)[::-1])
    assert o[2 * block] == x.sum(dtype=np.int32)


@needs_ptxas
@pytest.mark.parametrize("kern, types, cexpr", [
    (k_scan, dict(x_ptr=P, o_ptr=P), dict(M=16, N=16)),
    (k_hist, dict(x_ptr=IP, h_ptr=IP, n=I), dict(BLOCK=128, BINS=16)),
    (k_int_scan, dict(x_ptr=IP, o_ptr=IP), dict(BLOCK=64)),
], ids=["scan", "hist", "int_scan"])
def test_scans_pass_ptxas(tmp_path, kern, types, cexpr):
    text = compile_function(kern.fn, types, cexpr, Target.ptx("sm_90"), 4).code
    assert not (err := ptxas_errors(tmp_path, text)), err


@pytest.mark.parametrize("line, message", [
    ("tl.reduce(tl.arange(0, 8), 0, max)", "combine_fn must be a @triton.jit function"),
    ("tl.reduce(tl.arange(0, 8), 0, _affine)", "missing argument"),
    ("tl.cumsum(tl.arange(0, 8), 1)", "axis 1 is out of range for shape [8]"),
    ("tl.sort(tl.reshape(tl.arange(0, 8), (2, 4)), 0)", "last axis only"),
])
def test_scan_errors_point_at_the_call(tmp_path, line, message):
    err = compile_error(tmp_path, "scan_err", f"def kern(x_ptr):\n    y = {line}\n",
                        dict(x_ptr=P), {"_affine": _affine})
    assert message in str(err)
    assert err.loc.line == 7, str(err)
