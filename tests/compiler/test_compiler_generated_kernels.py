"""Idioms of generated and puzzle-style Triton kernels, each in a kernel of our own checked
against NumPy: PyTorch Inductor's reductions that carry ``int64`` indices
(``_tmp_index = tl.full([XBLOCK, RBLOCK], 9223372036854775807, tl.int64)`` combined by a
``minimum_with_index`` helper through ``tl.reduce``), axis reductions and scans of int64
tiles, and the ``f = lambda x: ...`` helpers of Triton-Puzzles' solutions."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend.compiler import parse_type

RNG = np.random.default_rng(2027)
INT64_MAX = 9223372036854775807


# --- Inductor's argmin/argmax with int64 indices ------------------------------------------
@triton.jit
def _minimum_with_index(a_value, a_index, b_value, b_index):
    # (Inductor's triton_helpers.minimum_with_index: NaN wins, then the lower index on ties)
    mask = a_value < b_value
    equal = a_value == b_value
    a_isnan = a_value != a_value
    b_isnan = b_value != b_value
    mask |= a_isnan and not b_isnan
    equal |= a_isnan and b_isnan
    mask |= equal & (a_index < b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def _min_with_index(value, index, dim):
    return tl.reduce((value, index), dim, _minimum_with_index)


@triton.jit
def triton_red_fused_argmin_min_0(in_ptr0, out_ptr0, out_ptr1, xnumel, rnumel,
                                  XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, RBLOCK], float("inf"), tl.float32)
    _tmp2_index = tl.full([XBLOCK, RBLOCK], 9223372036854775807, tl.int64)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        r1 = rindex
        tmp0 = tl.load(in_ptr0 + (r1 + (rnumel * x0)), rmask & xmask,
                       eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])
        _tmp2_next, _tmp2_index_next = _minimum_with_index(_tmp2, _tmp2_index, tmp1, rindex)
        _tmp2 = tl.where(rmask & xmask, _tmp2_next, _tmp2)
        _tmp2_index = tl.where(rmask & xmask, _tmp2_index_next, _tmp2_index)
    tmp2_val, tmp2_idx = _min_with_index(_tmp2, _tmp2_index, 1)
    tmp2 = tmp2_idx[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp2_val[:, None], xmask)


def test_inductor_looped_argmin_carries_int64_indices(iss_device):
    x = RNG.integers(0, 6, (5, 70)).astype(np.float32)  # many ties: the lowest index wins
    x[3, 40] = np.nan
    idx = np.full(5, -1, np.int64)
    val = np.zeros(5, np.float32)
    triton_red_fused_argmin_min_0[(triton.cdiv(5, 2),)](x, idx, val, 5, 70, XBLOCK=2,
                                                          RBLOCK=16)
    ref = x.argmin(1)  # NumPy's argmin also returns the first NaN
    assert np.array_equal(idx, ref)
    assert np.array_equal(val, x[np.arange(5), ref], equal_nan=True)


# --- int64 axis reductions and scans -------------------------------------------------------
@triton.jit
def k_int64_axes(X, Z, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(X + r * N + c)
    tl.store(Z + tl.arange(0, M), tl.max(x, axis=1))
    tl.store(Z + M + tl.arange(0, N), tl.min(x, axis=0))
    tl.store(Z + M + N + tl.arange(0, M), tl.sum(x, axis=1))
    tl.store(Z + 2 * M + N + tl.arange(0, N), tl.argmax(x, axis=0).to(tl.int64))
    tl.store(Z + 2 * M + 2 * N + tl.arange(0, M), tl.argmin(x, axis=1).to(tl.int64))
    tl.store(Z + 3 * M + 2 * N + r * N + c, tl.cumsum(x, axis=1))


def test_int64_axis_reductions_and_cumsum(iss_device):
    M, N = 8, 16
    x = RNG.integers(-2**40, 2**40, (M, N)).astype(np.int64)
    x[2, 3] = x[2, 7] = x[2].max() + 5  # a tie across the high words
    x[0, 0], x[1, 5] = -2**63, 2**63 - 1
    z = np.zeros(3 * M + 2 * N + M * N, np.int64)
    k_int64_axes[(1,)](x, z, M=M, N=N)
    with np.errstate(over="ignore"):
        ref = np.concatenate([x.max(1), x.min(0), x.sum(1), x.argmax(0), x.argmin(1),
                              np.cumsum(x, 1).ravel()])
    assert np.array_equal(z, ref)


@triton.jit
def k_uint64_axis(X, Z, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    i = (tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C
         + tl.arange(0, C)[None, None, :])
    x = tl.load(X + i)
    o = tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(Z + o, tl.max(x, axis=1))
    tl.store(Z + A * C + o, tl.argmin(x, axis=1).to(tl.uint64))


def test_uint64_reduction_of_a_3d_tile_compares_unsigned(iss_device):
    x = RNG.integers(0, 2**64 - 1, (4, 8, 4), dtype=np.uint64)
    z = np.zeros(32, np.uint64)
    k_uint64_axis[(1,)](x, z, A=4, B=8, C=4, num_warps=2)
    assert np.array_equal(z[:16], x.max(1).ravel())
    assert np.array_equal(z[16:], x.argmin(1).ravel().astype(np.uint64))


@triton.jit
def _running_max(av, ai, bv, bi):
    take = bv >= av  # the last position of the running maximum
    return tl.where(take, bv, av), tl.where(take, bi, ai)


@triton.jit
def k_scan_with_int64_operand(X, I, Z, J, N: tl.constexpr):
    off = tl.arange(0, N)
    v, i = tl.associative_scan((tl.load(X + off), tl.load(I + off)), 0, _running_max)
    tl.store(Z + off, v)
    tl.store(J + off, i)


def test_associative_scan_of_a_value_and_an_int64_position(iss_device):
    x = RNG.integers(0, 5, 32).astype(np.float32)
    pos = (np.arange(32, dtype=np.int64) << 33) + 7  # positions beyond 32 bits
    z, j = np.zeros(32, np.float32), np.zeros(32, np.int64)
    k_scan_with_int64_operand[(1,)](x, pos, z, j, N=32)
    last = [max(k for k in range(i + 1) if x[k] == x[:i + 1].max()) for i in range(32)]
    assert np.array_equal(z, np.maximum.accumulate(x))
    assert np.array_equal(j, pos[last])


# --- lambdas -------------------------------------------------------------------------------
@triton.jit
def flashatt_kernel(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    # (the shape of Triton-Puzzles' flash-attention solution)
    block_id_i = tl.program_id(0)
    log2_e = 1.44269504
    myexp = lambda x: tl.exp2(log2_e * x)  # noqa: E731
    off_i = block_id_i * B0 + tl.arange(0, B0)
    mask_i = off_i < N0
    q = tl.load(q_ptr + off_i, mask=mask_i)
    exp_sum = tl.zeros((B0,), dtype=tl.float32)
    qk_max = tl.full((B0,), -1.0e6, dtype=tl.float32)
    z = tl.zeros((B0,), dtype=tl.float32)
    for id_j in tl.range(0, T, B1):
        off_j = id_j + tl.arange(0, B1)
        mask_j = off_j < T
        mask_ij = mask_i[:, None] & mask_j[None, :]
        k = tl.load(k_ptr + off_j, mask=mask_j)
        qk = q[:, None] * k[None, :] + tl.where(mask_ij, 0, -1.0e6)
        new_max = tl.maximum(tl.max(qk, axis=1), qk_max)
        qk_exp = myexp(qk - new_max[:, None])
        factor = myexp(qk_max - new_max)
        exp_sum = exp_sum * factor + tl.sum(qk_exp, axis=1)
        v = tl.load(v_ptr + off_j, mask=mask_j, other=0.0)
        z = z * factor + tl.sum(qk_exp * v[None, :], axis=1)
        qk_max = new_max
    tl.store(z_ptr + off_i, z / exp_sum, mask=mask_i)


def test_lambda_helper_called_in_a_loop(iss_device):
    q, k, v = (RNG.standard_normal(40).astype(np.float32) for _ in range(3))
    z = np.zeros(40, np.float32)
    flashatt_kernel[(triton.cdiv(40, 16),)](q, k, v, z, 40, 40, B0=16, B1=16)
    s = q[:, None].astype(np.float64) * k[None, :]
    p = np.exp(s - s.max(1, keepdims=True))
    assert np.allclose(z, (p / p.sum(1, keepdims=True)) @ v, atol=1e-5)


@triton.jit
def k_lambda_binding(X, Z, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    c = 1.0
    f = lambda a, s=2.0: a * s + c  # noqa: E731
    c = 10.0  # read when f is called, as in Python
    y = f(x) + f(x, s=3.0) + (lambda q: q * q)(x)
    tl.store(Z + tl.arange(0, N), y)


def test_lambda_defaults_keywords_and_late_binding(iss_device):
    x = RNG.standard_normal(16).astype(np.float32)
    z = np.zeros(16, np.float32)
    k_lambda_binding[(1,)](x, z, N=16)
    assert np.allclose(z, (x * 2 + 10) + (x * 3 + 10) + x * x, atol=1e-6)


def test_lambda_call_with_missing_argument_names_the_call(tmp_path):
    e = compile_error(tmp_path, "lam", "def kern(x_ptr):\n"
                      "    f = lambda a, b: a + b\n"
                      "    tl.store(x_ptr, f(tl.load(x_ptr)))\n",
                      {"x_ptr": parse_type("*fp32")})
    assert "lam.py:8:" in str(e) and "missing a required argument: 'b'" in str(e)


@pytest.mark.parametrize("body", ["lambda *a: a[0]", "lambda *, a: a"])
def test_lambda_with_star_parameters_is_an_error(tmp_path, body):
    e = compile_error(tmp_path, "lamstar", "def kern(x_ptr):\n"
                      f"    f = {body}\n"
                      "    tl.store(x_ptr, f(tl.load(x_ptr)))\n",
                      {"x_ptr": parse_type("*fp32")})
    assert "lamstar.py:7:" in str(e) and "plain positional parameters" in str(e)


# --- Triton's standard-library sort, copied into a kernel ---------------------------------
@triton.jit
def _compare_and_swap(x, flip, i: tl.constexpr, n_dims: tl.constexpr):
    n_outer: tl.constexpr = x.numel >> n_dims
    shape: tl.constexpr = [n_outer * 2**i, 2, 2**(n_dims - i - 1)]
    y = tl.core.reshape(x, shape)
    mask = tl.arange(0, 2)[None, :, None]
    left = tl.reshape(tl.broadcast_to(tl.sum(y * (1 - mask), 1)[:, None, :], shape), x.shape)
    right = tl.reshape(tl.broadcast_to(tl.sum(y * mask, 1)[:, None, :], shape), x.shape)
    idtype = tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    ileft = left.to(idtype, bitcast=True)
    iright = right.to(idtype, bitcast=True)
    ix = x.to(idtype, bitcast=True)
    ret = ix ^ tl.where((left > right) ^ flip, ileft ^ iright, tl.zeros_like(ix))
    return ret.to(x.dtype, bitcast=True)


@triton.jit
def _bitonic_merge(x, stage: tl.constexpr, order: tl.constexpr, n_dims: tl.constexpr):
    n_outer: tl.constexpr = x.numel >> n_dims
    if order == 2:
        shape: tl.constexpr = [n_outer * 2**(n_dims - 1 - stage), 2, 2**stage]
        flip = tl.reshape(tl.broadcast_to(tl.arange(0, 2)[None, :, None], shape), x.shape)
    else:
        flip = order
    for i in tl.static_range(stage):
        x = _compare_and_swap(x, flip, i + (n_dims - stage), n_dims)
    return x


@triton.jit
def k_copied_sort(X, Z, M: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(X + offs)
    n_dims: tl.constexpr = tl.standard._log2(N)
    for i in tl.static_range(1, n_dims + 1):
        x = _bitonic_merge(x, i, 2 if i < n_dims else DESC, n_dims)
    tl.store(Z + offs, x)


@pytest.mark.parametrize("dtype, desc", [(np.float32, 0), (np.int64, 1)])
def test_sort_copied_from_triton_bitcasts_through_get_int_dtype(iss_device, dtype, desc):
    x = RNG.integers(-2**40, 2**40, (2, 8)).astype(dtype)
    z = np.zeros_like(x)
    k_copied_sort[(1,)](x, z, M=2, N=8, DESC=desc)
    ref = np.sort(x, 1)
    assert np.array_equal(z, ref[:, ::-1] if desc else ref)


def test_get_int_dtype_of_a_missing_width_names_the_call(tmp_path):
    e = compile_error(tmp_path, "i16", "def kern(x_ptr):\n"
                      "    t = tl.core.get_int_dtype(16, True)\n"
                      "    tl.store(x_ptr, tl.load(x_ptr).to(t))\n",
                      {"x_ptr": parse_type("*fp32")})
    assert "i16.py:7:" in str(e) and "no 16-bit integer type" in str(e)


# --- float remainder -----------------------------------------------------------------------
@triton.jit
def k_float_mod(X, Y, I, H, Z, ZH, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(X + o)
    tl.store(Z + o, x % tl.load(Y + o))
    tl.store(Z + N + o, tl.load(I + o) % 2.5)  # int32 % float is a float remainder
    tl.store(ZH + o, tl.load(H + o) % 1.5)  # a half stays a half


def test_float_remainder_is_fmod_with_the_dividends_sign(iss_device):
    n = 32
    x = (RNG.standard_normal(n) * 10).astype(np.float32)
    y = (RNG.standard_normal(n) * 2).astype(np.float32)
    x[0], y[1], x[2] = -0.0, 0.0, np.inf  # -0.0 kept; NaN for a zero divisor or inf
    i = RNG.integers(-20, 20, n).astype(np.int32)
    h = (RNG.standard_normal(n) * 5).astype(np.float16)
    z, zh = np.zeros(2 * n, np.float32), np.zeros(n, np.float16)
    k_float_mod[(1,)](x, y, i, h, z, zh, N=n)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(z[:n], np.fmod(x, y), equal_nan=True) and np.signbit(z[0])
    assert np.array_equal(z[n:], np.fmod(i.astype(np.float32), np.float32(2.5)))
    assert np.array_equal(zh, np.fmod(h, np.float16(1.5)))
