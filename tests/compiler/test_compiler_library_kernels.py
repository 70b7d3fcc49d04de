"""Idioms of Triton kernel libraries (fused norms, losses, activations, top-k and argmax
kernels of the kind Liger-Kernel, FlagGems, attorch and Unsloth ship), each in a kernel of
our own checked against NumPy: calling a type to convert (``tl.float32(x)``), Triton's
``triton.language.core``/``standard`` modules and ``_log2``, ``.value`` of a compile-time
value, ``x.numel``, a whole-tile argmax on a tile smaller than the block, a heuristic that
sets ``num_warps``, and the errors for a tensor passed as a reduction's axis and for
Triton names that do not exist here."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.errors import KernelError

RNG = np.random.default_rng(7)


# --- calling a type converts -------------------------------------------------------------------
@triton.jit
def k_online_softmax(Y, X, n_cols, BLOCK: tl.constexpr):
    # running maximum and sum start as typed scalars, as in multi-block softmax kernels
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = tl.float32(-float("inf"))
    d = tl.float32(0)
    for start in tl.range(0, n_cols, BLOCK):
        x = tl.load(X + row * n_cols + start + offs, mask=start + offs < n_cols,
                    other=-float("inf"))
        new_m = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    for start in tl.range(0, n_cols, BLOCK):
        x = tl.load(X + row * n_cols + start + offs, mask=start + offs < n_cols)
        y = tl.exp(x - m) / d
        k = tl.int32(y * 1000.0)  # a tensor converted by calling its type
        tl.store(Y + row * n_cols + start + offs, y + tl.float32(k) * 0.0,
                 mask=start + offs < n_cols)


def test_calling_a_type_converts_its_argument(iss_device):
    x = RNG.standard_normal((3, 37)).astype(np.float32)
    y = np.empty_like(x)
    k_online_softmax[(3,)](y, x, 37, BLOCK=16, num_warps=1)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_a_tensor_as_a_reduction_axis_is_a_placed_error(tmp_path):
    # tl.max(m, x) of a scalar m (meant as tl.maximum) used to return m unchanged
    err = compile_error(tmp_path, "axis_tensor", """def kern(X):
    x = tl.load(X + tl.arange(0, 8))
    m = tl.max(x, axis=0)
    m = tl.max(m, x)
""", {"X": ir.ptr("f32")})
    assert (err.loc.line, err.loc.col) == (9, 9), str(err)
    assert "axis must be a compile-time integer" in err.message


# --- Triton's modules and compile-time helpers --------------------------------------------------
@triton.jit
def _dtype_lowest(dtype):
    # a helper reading .value of its compile-time argument, as Triton code does
    dt = dtype.value
    if dt.is_floating():
        v: tl.constexpr = float("-inf")
        return v
    w: tl.constexpr = dt.int_bitwidth
    v: tl.constexpr = -(2 ** (w - 1))
    return v


@triton.jit
def k_split_rows(Z, X, N: tl.constexpr):
    # sums of the two halves of a row through tl.core.reshape, with the exponent from
    # tl.standard._log2 and the size from x.numel
    x = tl.core.load(X + tl.core.arange(0, N))
    LOG: tl.core.constexpr = tl.standard._log2(x.numel)
    halves = tl.core.reshape(x, [2, 1 << (LOG - 1)])
    s = tl.sum(halves, axis=1)
    lo = tl.max(tl.where(x > 0, x, _dtype_lowest(X.dtype.element_ty)))
    tl.store(Z + tl.arange(0, 2), s)
    tl.store(Z + 2, lo)
    tl.store(Z + 3, tl.core.sum(x, 0) + 0.0 * tl.standard.sum(x, 0))


def test_triton_core_module_log2_value_and_numel(iss_device):
    # the import paths of Triton's modules of the language
    import simtgpu.compiler_backend.language.core as core
    from simtgpu.compiler_backend.language.standard import _log2

    assert core.reshape is tl.reshape
    x = RNG.standard_normal(16).astype(np.float32)
    z = np.zeros(4, np.float32)
    k_split_rows[(1,)](z, x, N=16, num_warps=1)
    np.testing.assert_allclose(z, [x[:8].sum(), x[8:].sum(), x.max(), x.sum()], rtol=1e-5,
                               atol=1e-5)
    assert _log2(16) == 4 and _log2(17) == 4


# --- argmax of a tile smaller than the block ----------------------------------------------------
@triton.jit
def k_gather_argmax(Out, X, Idx, n, BLOCK: tl.constexpr):
    # second stage of a two-stage argmax: the winner among the partial maxima picks its
    # stored index (a tile of 16 on 4 warps of 8 lanes: warps 2 and 3 hold replicas)
    offs = tl.arange(0, BLOCK)
    v = tl.load(X + offs, mask=offs < n, other=-float("inf"))
    i = tl.argmax(v, axis=0)
    mn, j = tl.min(tl.where(offs < n, v, float("inf")), axis=0, return_indices=True)
    tl.store(Out, tl.load(Idx + i))
    tl.store(Out + 1, j)


@pytest.mark.parametrize("n", [10, 16])
def test_whole_tile_argmax_on_a_tile_smaller_than_the_block(iss_device, n):
    x = RNG.standard_normal(16).astype(np.float32)
    idx = (np.arange(16) * 7 + 3).astype(np.int32)
    out = np.zeros(2, np.int32)
    k_gather_argmax[(1,)](out, x, idx, n, BLOCK=16, num_warps=4)
    assert out.tolist() == [idx[x[:n].argmax()], x[:n].argmin()]


# --- heuristics and autotuning as libraries write them ------------------------------------------
@triton.jit
def k_scaled_gelu(Y, X, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    y = 0.5 * x * (1 + tl.math.erf(x * tl.math.rsqrt(2.0)))
    tl.store(Y + offs, y * scale, mask=offs < n)


@pytest.mark.parametrize("n", [50, 100])
def test_heuristic_that_sets_num_warps(iss_device, n):
    from math import erf

    # applied here, not at import: the old refusal raised while decorating
    kern = triton.heuristics({"BLOCK": lambda a: 16 if a["n"] <= 64 else 32,
                              "num_warps": lambda a: 1 if a["n"] <= 64 else 2})(k_scaled_gelu)
    x = RNG.standard_normal(n).astype(np.float32)
    y = np.empty_like(x)
    kern[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](y, x, n, 2.0)
    ref = 2.0 * 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
    np.testing.assert_allclose(y, ref, rtol=2e-5, atol=2e-6)


# --- names Triton has and this language lacks on purpose ----------------------------------------
@pytest.mark.parametrize("expr, why", [
    ('tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], '
     'dtype=tl.float32, is_pure=True, pack=1)', "inline PTX has no meaning on this ISA"),
    ("x.to(tl.float64)", "no double-precision arithmetic"),
])
def test_missing_triton_names_say_why(tmp_path, expr, why):
    err = compile_error(tmp_path, "missing_name", f"""def kern(X):
    x = tl.load(X + tl.arange(0, 8))
    y = {expr}
""", {"X": ir.ptr("f32")})
    assert isinstance(err, KernelError)
    assert err.loc.line == 8, str(err)
    assert "is not supported here" in err.message and why in err.message


# --- int64 indices across threads ---------------------------------------------------------------
@triton.jit
def k_embedding_rows(Out, OutT, W, Idx, n, D: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr):
    # rows of W picked by int64 indices: the index column is broadcast over the columns
    # (a relayout of an int64 tile), and the offsets transposed once more
    om = tl.program_id(0) * BM + tl.arange(0, BM)
    on = tl.arange(0, BN)
    idx = tl.load(Idx + om, mask=om < n, other=0)
    offs = idx[:, None] * D + on[None, :]
    m = (om[:, None] < n) & (on[None, :] < D)
    tl.store(Out + om[:, None] * D + on[None, :], tl.load(W + offs, mask=m, other=0.0), mask=m)
    tl.store(OutT + on[:, None] * n + om[None, :], tl.trans(offs), mask=tl.trans(m))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_int64_indices_broadcast_and_transposed(iss_device, num_warps):
    V, D, n = 9, 12, 13
    w = RNG.standard_normal((V, D)).astype(np.float32)
    idx = RNG.integers(0, V, n).astype(np.int64)
    out = np.zeros((n, D), np.float32)
    offs_t = np.zeros((16, n), np.int64)
    k_embedding_rows[(triton.cdiv(n, 8),)](out, offs_t, w, idx, n, D=D, BM=8, BN=16,
                                           num_warps=num_warps)
    np.testing.assert_array_equal(out, w[idx])
    np.testing.assert_array_equal(offs_t[:D], (idx[:, None] * D + np.arange(D)).T)


@triton.jit
def k_wide_outer(Z, X, M: tl.constexpr, N: tl.constexpr):
    v = tl.load(X + tl.arange(0, M))
    w = tl.load(X + M + tl.arange(0, N))
    tl.store(Z + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], v[:, None] * 3 + w)


def test_int64_values_beyond_32_bits_cross_threads_whole(iss_device):
    x = RNG.integers(-2**40, 2**40, 12).astype(np.int64)
    x[0], x[1] = -1, 2**33 + 5  # a borrow across the words, a high word alone
    z = np.zeros((4, 8), np.int64)
    k_wide_outer[(1,)](z, x, M=4, N=8, num_warps=4)
    np.testing.assert_array_equal(z, x[:4, None] * 3 + x[None, 4:])


@triton.jit
def k_wide_whole_reductions(Out, X, N: tl.constexpr):
    # a count in int64 and the winner among int64 values, as FlagGems' kernels reduce
    # their int64 offsets and counts (partial results of several warps meet in shared)
    x = tl.load(X + tl.arange(0, N))
    tl.store(Out, tl.sum((x > 0).to(tl.int64)) + tl.sum(x))
    tl.store(Out + 1, tl.max(x))
    tl.store(Out + 2, tl.min(x))
    tl.store(Out + 3, tl.argmax(x, axis=0).to(tl.int64))


@pytest.mark.parametrize("n, num_warps", [(32, 4), (16, 4), (64, 8)])
def test_whole_tile_reductions_of_int64_across_warps(iss_device, n, num_warps):
    x = RNG.integers(-2**40, 2**40, n).astype(np.int64)
    out = np.zeros(4, np.int64)
    k_wide_whole_reductions[(1,)](out, x, N=n, num_warps=num_warps)
    assert out.tolist() == [(x > 0).sum() + x.sum(), x.max(), x.min(), x.argmax()]
