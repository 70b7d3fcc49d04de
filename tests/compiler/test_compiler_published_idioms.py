"""Idioms of published Triton kernels (fused MoE GEMMs, RoPE, cross-entropy), in kernels of
our own on the ISS against NumPy: a column of gathered row pointers broadcast over columns
(pointers exchanged between threads), ``N: int`` annotations, early ``return`` under a
run-time condition, Python's ``min`` of run-time scalars, ``triton.jit(fn)`` and
``triton.heuristics(...)(kernel)`` called as functions, ``eviction_policy=``."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors

F = np.float32


def _gather_rows_kernel(X, Idx, Out, n_rows, N: int, stride: int, BR: tl.constexpr,
                        BN: tl.constexpr, SCALE: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * BR
    if start >= n_rows:
        return  # a whole program past the end leaves at once
    end = min(start + BR, n_rows)  # Python's min of run-time scalars
    rows = start + tl.arange(0, BR)
    live = rows < end
    src = tl.load(Idx + rows, mask=live, other=0, eviction_policy="evict_first")
    cols = tl.arange(0, BN)
    # pointers of the gathered rows, then broadcast over the columns: the column of
    # pointers moves between threads
    row_ptr = X + src[:, None] * stride
    x = tl.load(row_ptr + cols[None, :], mask=live[:, None] & (cols[None, :] < N), other=0.0)
    if SCALE:
        x = x * 2.0
    tl.store(Out + rows[:, None] * stride + cols[None, :], x,
             mask=live[:, None] & (cols[None, :] < N))


gather_rows = triton.jit(_gather_rows_kernel)
gather_rows = triton.heuristics({"SCALE": lambda args: args["n_rows"] % 2 == 1})(gather_rows)


@pytest.mark.parametrize("n_rows", [7, 12])
def test_gathered_row_pointers_broadcast_over_columns(iss_device, n_rows):
    rng = np.random.default_rng(n_rows)
    x = rng.standard_normal((20, 12)).astype(F)
    idx = rng.integers(0, 20, n_rows).astype(np.int32)
    out = np.zeros((n_rows, 12), F)
    gather_rows[(4,)](x, idx, out, n_rows, 12, 12, BR=4, BN=16)  # 4 programs: some idle
    assert np.array_equal(out, x[idx] * (2.0 if n_rows % 2 else 1.0))


@needs_ptxas
def test_gathered_row_pointers_pass_ptxas(tmp_path):
    types = dict(X=ir.ptr("f32"), Idx=ir.ptr("i32"), Out=ir.ptr("f32"), n_rows=ir.I32,
                 N=ir.I32, stride=ir.I32)
    text = compile_function(_gather_rows_kernel, types, dict(BR=16, BN=16, SCALE=True),
                            Target.ptx("sm_90"), 4).code
    assert not (err := ptxas_errors(tmp_path, text)), err


def test_pointers_from_different_bases_are_a_clear_error(tmp_path):
    err = compile_error(tmp_path, "ptr_err", (
        "def kern(x_ptr, t_ptr):\n"
        "    r = tl.arange(0, 16)\n"
        "    p = tl.load(t_ptr + r).to(tl.pointer_type(tl.float32))\n"
        "    tl.store(x_ptr + r[:, None] * 16 + r[None, :], tl.load(p[:, None] + r[None, :]))\n"),
        dict(x_ptr=ir.ptr("f32"), t_ptr=ir.ptr("i64")))
    assert "unless all are int32 offsets from one pointer parameter" in str(err)


@triton.jit
def k_batched_dot(A, B, C, Acc, NB: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr):
    bi = tl.arange(0, NB)[:, None, None]
    m = tl.arange(0, M)[None, :, None]
    n = tl.arange(0, N)[None, None, :]
    k = tl.arange(0, K)
    a = tl.load(A + bi * M * K + m * K + k[None, None, :])
    b = tl.load(B + bi * K * N + k[None, :, None] * N + n)
    acc = tl.load(Acc + bi * M * N + m * N + n)
    tl.store(C + bi * M * N + m * N + n, tl.dot(a, b, acc))


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_batched_dot_matches_numpy(iss_device, dt):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 8, 16)).astype(dt)
    b = rng.standard_normal((2, 16, 4)).astype(dt)
    acc = rng.standard_normal((2, 8, 4)).astype(F)
    c = np.zeros((2, 8, 4), F)
    k_batched_dot[(1,)](a, b, c, acc, NB=2, M=8, N=4, K=16)
    want = acc + np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@needs_ptxas
def test_batched_dot_passes_ptxas(tmp_path):
    types = dict(A=ir.ptr("f32"), B=ir.ptr("f32"), C=ir.ptr("f32"), Acc=ir.ptr("f32"))
    text = compile_function(k_batched_dot.fn, types, dict(NB=2, M=8, N=4, K=16),
                            Target.ptx("sm_90"), 4).code
    assert not (err := ptxas_errors(tmp_path, text)), err
