"""tl.topk, tl.bitonic_merge, tl.reduce_or and tl.softmax on the ISS against NumPy models of
Triton's definitions, plus ptxas; and tl.sort of uint32 (unsigned order) and float16."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors

P, IP = ir.ptr("f32"), ir.ptr("i32")
F = np.float32


def bitonic_merge_model(x: np.ndarray, descending: bool) -> np.ndarray:
    """Triton's merge network on the last axis, written from its definition: at strides
    n/2 .. 1 the pair (left, right) is swapped when (left > right) != descending."""
    y = x.copy()
    n = y.shape[-1]
    s = n // 2
    while s >= 1:
        for i in range(n):
            if i & s:
                continue
            lo, hi = y[..., i].copy(), y[..., i + s].copy()
            with np.errstate(invalid="ignore"):
                swap = (lo > hi) != descending
            y[..., i] = np.where(swap, hi, lo)
            y[..., i + s] = np.where(swap, lo, hi)
        s //= 2
    return y


@triton.jit
def k_topk(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(o_ptr + rm[:, None] * K + rk[None, :], tl.topk(x, K))
    tl.store(o_ptr + M * K + rm[:, None] * K + rk[None, :], x.topk(K, descending=False))
    tl.store(o_ptr + 2 * M * K + rm[:, None] * N + rn[None, :], tl.bitonic_merge(x))
    tl.store(o_ptr + 2 * M * K + M * N + rm[:, None] * N + rn[None, :],
             tl.bitonic_merge(x, descending=True))


@pytest.mark.parametrize("m, n, k", [(2, 16, 4), (4, 8, 8), (1, 64, 1)])
def test_topk_and_bitonic_merge_match_numpy(iss_device, m, n, k):
    rng = np.random.default_rng(n * k)
    x = rng.standard_normal((m, n)).astype(F)
    x[0, :4] = x[0, 4]  # ties
    # one bitonic line (rises then falls): the merge sorts it
    x[0] = np.concatenate([np.sort(x[0, : n // 2]), -np.sort(-x[0, n // 2:])])
    if m > 1:
        x[-1, 1] = np.nan  # the network's NaN rule
    o = np.zeros(2 * m * k + 2 * m * n, F)
    k_topk[(1,)](x, o, M=m, N=n, K=k)
    xs = np.where(np.isnan(x), -np.inf, x)  # the rows' NaN is only ordered by the model below
    top = -np.sort(-xs, axis=1)[:, :k]
    low = np.sort(np.where(np.isnan(x), np.inf, x), axis=1)[:, :k]
    got_top = o[:m * k].reshape(m, k)
    got_low = o[m * k:2 * m * k].reshape(m, k)
    finite = ~np.isnan(x).any(axis=1)
    assert np.array_equal(got_top[finite], top[finite])
    assert np.array_equal(got_low[finite], low[finite])
    merged = o[2 * m * k:].reshape(2, m, n)
    assert np.array_equal(merged[0], bitonic_merge_model(x, False), equal_nan=True)
    assert np.array_equal(merged[1], bitonic_merge_model(x, True), equal_nan=True)
    assert np.array_equal(merged[0][0], np.sort(x[0]))  # a bitonic line comes out sorted


@triton.jit
def k_uint(x_ptr, o_ptr, BLOCK: tl.constexpr, K: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.uint32, bitcast=True)
    tl.store(o_ptr + offs, tl.sort(x).to(tl.int32, bitcast=True))
    tl.store(o_ptr + BLOCK + tl.arange(0, K), tl.topk(x, K).to(tl.int32, bitcast=True))
    tl.store(o_ptr + BLOCK + K, tl.reduce_or(x, 0).to(tl.int32, bitcast=True))
    y = tl.reshape(x, (BLOCK // 8, 8))
    tl.store(o_ptr + BLOCK + K + 1 + tl.arange(0, BLOCK // 8),
             y.reduce_or(1).to(tl.int32, bitcast=True))
    tl.store(o_ptr + BLOCK + K + 1 + BLOCK // 8 + tl.arange(0, 8),
             tl.reduce_or(y, 0).to(tl.int32, bitcast=True))


@pytest.mark.parametrize("block", [16, 64])
def test_uint32_orders_unsigned_and_reduce_or(iss_device, block):
    rng = np.random.default_rng(block)
    u = rng.integers(0, 2**32, block, dtype=np.uint64).astype(np.uint32)
    u[:3] = [0x80000000, 0x7FFFFFFF, 0xFFFFFFFF]
    k = 4
    o = np.zeros(block + k + 1 + block // 8 + 8, np.int32)
    k_uint[(1,)](u.view(np.int32), o, BLOCK=block, K=k)
    got = o.view(np.uint32)
    assert np.array_equal(got[:block], np.sort(u))
    assert np.array_equal(got[block:block + k], np.sort(u)[::-1][:k])
    assert got[block + k] == np.bitwise_or.reduce(u)
    y = u.reshape(-1, 8)
    assert np.array_equal(got[block + k + 1:block + k + 1 + block // 8],
                          np.bitwise_or.reduce(y, axis=1))
    assert np.array_equal(got[block + k + 1 + block // 8:], np.bitwise_or.reduce(y, axis=0))


@triton.jit
def k_half_sort(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.sort(x, descending=True))


def test_half_sort_orders_values_not_bits(iss_device):
    x = np.random.default_rng(5).standard_normal(32).astype(np.float16)
    o = np.zeros(32, np.float16)
    k_half_sort[(1,)](x, o, BLOCK=32)
    assert np.array_equal(o, -np.sort(-x))


@triton.jit
def k_softmax(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.softmax(x))  # along axis 0, Triton's default
    tl.store(o_ptr + M * N + offs, x.softmax(1, keep_dims=True, ieee_rounding=True))
    tl.store(o_ptr + 2 * M * N + rn, tl.softmax(tl.load(x_ptr + rn)))


def test_softmax_matches_numpy(iss_device):
    m, n = 4, 16
    x = (np.random.default_rng(1).standard_normal((m, n)) * 3).astype(F)
    o = np.zeros(2 * m * n + n, F)
    k_softmax[(1,)](x, o, M=m, N=n)

    def model(v, axis):
        e = np.exp(v - v.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    # exp is the ISA's approximation (docs/numerics.md: a few ulp), the sums are float32
    np.testing.assert_allclose(o[:m * n].reshape(m, n), model(x, 0), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(o[m * n:2 * m * n].reshape(m, n), model(x, 1), rtol=2e-6,
                               atol=1e-7)
    np.testing.assert_allclose(o[2 * m * n:], model(x[0], 0), rtol=2e-6, atol=1e-7)


@needs_ptxas
@pytest.mark.parametrize("kern, types, cexpr", [
    (k_topk, dict(x_ptr=P, o_ptr=P), dict(M=2, N=16, K=4)),
    (k_uint, dict(x_ptr=IP, o_ptr=IP), dict(BLOCK=64, K=4)),
    (k_softmax, dict(x_ptr=P, o_ptr=P), dict(M=4, N=16)),
], ids=["topk", "uint", "softmax"])
def test_topk_family_passes_ptxas(tmp_path, kern, types, cexpr):
    text = compile_function(kern.fn, types, cexpr, Target.ptx("sm_90"), 4).code
    assert not (err := ptxas_errors(tmp_path, text)), err


@pytest.mark.parametrize("line, message", [
    ("tl.topk(tl.arange(0, 8), 3)", "k must be a power of two from 1 to 8"),
    ("tl.topk(tl.arange(0, 8), 16)", "k must be a power of two from 1 to 8"),
    ("tl.bitonic_merge(tl.reshape(tl.arange(0, 8), (2, 4)), 0)", "last axis only"),
    ("tl.reduce_or(tl.arange(0, 8).to(tl.float32), 0)", "tl.reduce_or needs integers"),
])
def test_topk_family_errors_point_at_the_call(tmp_path, line, message):
    err = compile_error(tmp_path, "topk_err", f"def kern(x_ptr):\n    y = {line}\n",
                        dict(x_ptr=P), {})
    assert message in str(err)
    assert err.loc.line == 7, str(err)
