"""Block pointers (tl.make_block_ptr, tl.advance) and tensor descriptors
(tl.make_tensor_descriptor, desc.load/desc.store) against NumPy: matmuls with ragged
edges, boundary checks per dimension, zero and NaN padding, masked stores, the PTX through
ptxas, and the errors of misuse at their file:line:col."""

import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors

P = ir.ptr("f32")
IP = ir.ptr("i32")
I = ir.I32  # noqa: E741


@triton.jit
def matmul_block_ptr(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(sam, sak), offsets=(pm * BM, 0),
                             block_shape=(BM, BK), order=(1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (sbk, sbn), (0, pn * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, K, BK):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1))
        acc = tl.dot(a, b, acc)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (scm, scn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc, boundary_check=(0, 1))


@triton.jit
def matmul_descriptor(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                       block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([pm * BM, k])
        b = tl.load_tensor_descriptor(b_desc, [k, pn * BN])
        acc = tl.dot(a, b, acc)
    c_desc.store([pm * BM, pn * BN], acc)


def _operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


@pytest.mark.parametrize("m, n, k", [(19, 13, 11), (16, 16, 8), (5, 27, 3)])
def test_block_ptr_matmul_matches_numpy(iss_device, m, n, k):
    a, b = _operands(m, n, k)
    c = np.full((m, n), 7.0, np.float32)
    grid = (triton.cdiv(m, 8), triton.cdiv(n, 8))
    matmul_block_ptr[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, BM=8, BN=8, BK=4)
    assert np.allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    # B given transposed in memory: only the strides change
    bt = np.ascontiguousarray(b.T)
    c2 = np.zeros((m, n), np.float32)
    matmul_block_ptr[grid](a, bt, c2, m, n, k, k, 1, 1, k, n, 1, BM=8, BN=8, BK=4)
    assert np.array_equal(c2, c)


@pytest.mark.parametrize("m, n, k", [(19, 13, 11), (8, 8, 16)])
def test_descriptor_matmul_matches_numpy(iss_device, m, n, k):
    a, b = _operands(m, n, k, seed=1)
    c = np.full((m, n), 7.0, np.float32)
    grid = lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))  # noqa: E731
    matmul_descriptor[grid](a, b, c, m, n, k, BM=8, BN=8, BK=4)
    assert np.allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@triton.jit
def window(x_ptr, o_ptr, y_ptr, R, C, r0, c0, BR: tl.constexpr, BC: tl.constexpr,
           CHECK: tl.constexpr, PAD: tl.constexpr):
    """Read the BR x BC block of X (R x C) at (r0, c0) with boundary checks CHECK and
    padding PAD, write it whole to O, and write it through a checked block pointer into Y
    (R x C) at the same place."""
    src = tl.make_block_ptr(x_ptr, (R, C), (C, 1), (r0, c0), (BR, BC), (1, 0))
    v = tl.load(src, boundary_check=CHECK, padding_option=PAD)
    rows = tl.arange(0, BR)[:, None]
    cols = tl.arange(0, BC)[None, :]
    tl.store(o_ptr + rows * BC + cols, v)
    dst = tl.make_block_ptr(y_ptr, (R, C), (C, 1), (r0, c0), (BR, BC), (1, 0))
    tl.store(dst, v + 1.0, boundary_check=(0, 1))


def _window_model(x, r0, c0, br, bc, check, pad):
    """NumPy: the block, with elements outside X on a checked dimension set to ``pad``."""
    r, c = x.shape
    out = np.empty((br, bc), np.float32)
    for i in range(br):
        for j in range(bc):
            ri, cj = r0 + i, c0 + j
            outside = (0 in check and not 0 <= ri < r) or (1 in check and not 0 <= cj < c)
            out[i, j] = pad if outside else x[ri, cj]
    return out


@pytest.mark.parametrize("r0, c0, check, pad", [
    (5, 9, (0, 1), "zero"),   # the bottom-right corner: both dimensions ragged
    (-3, 2, (0,), "nan"),     # above the array: only rows checked, columns inside
    (2, -2, (1,), "zero"),    # left of the array: only columns checked
    (1, 1, (0, 1), "nan"),    # wholly inside: nothing padded
])
def test_boundary_checks_and_padding(iss_device, r0, c0, check, pad):
    r, c, br, bc = 7, 12, 4, 8
    x = np.arange(r * c, dtype=np.float32).reshape(r, c) + 0.5
    o = np.zeros((br, bc), np.float32)
    y = np.full((r, c), -1.0, np.float32)
    window[(1,)](x, o, y, r, c, r0, c0, BR=br, BC=bc, CHECK=check, PAD=pad)
    want = _window_model(x, r0, c0, br, bc, check, np.nan if pad == "nan" else 0.0)
    assert np.array_equal(o, want, equal_nan=True)
    # the checked store writes exactly the elements inside Y
    y_want = np.full((r, c), -1.0, np.float32)
    for i in range(br):
        for j in range(bc):
            if 0 <= r0 + i < r and 0 <= c0 + j < c:
                y_want[r0 + i, c0 + j] = want[i, j] + 1.0
    assert np.array_equal(y, y_want, equal_nan=True)


@triton.jit
def ragged_sum(x_ptr, out_ptr, n, B: tl.constexpr):
    """A 1-D block pointer advanced in a while loop (its offset is carried)."""
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (B,), (0,))
    acc = tl.zeros((B,), tl.int32)
    i = 0
    while i < n:
        acc += tl.load(p, boundary_check=(0,))
        p = tl.advance(p, (B,))
        i += B
    tl.store(out_ptr + tl.arange(0, B), acc)


def test_block_ptr_carried_by_a_while_loop(iss_device):
    x = np.arange(1, 38, dtype=np.int32)
    out = np.zeros(8, np.int32)
    ragged_sum[(1,)](x, out, x.size, B=8)
    want = np.zeros(40, np.int32)
    want[:x.size] = x
    assert np.array_equal(out, want.reshape(5, 8).sum(0))


@triton.jit
def advance_if(x_ptr, n, far):
    """A block pointer advanced in one branch of a run-time if (its offsets are merged)."""
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (8,), (0,))
    if far > 0:
        p = tl.advance(p, (far,))
    tl.store(p, tl.arange(0, 8) + 1, boundary_check=(0,))


@pytest.mark.parametrize("n, far", [(16, 0), (16, 5), (12, 7)])
def test_block_ptr_advanced_in_one_branch(iss_device, n, far):
    x = np.zeros(n, np.int32)
    advance_if[(1,)](x, n, far)
    want = np.zeros(n + 8, np.int32)
    want[far:far + 8] = np.arange(1, 9)
    assert np.array_equal(x, want[:n])


@needs_ptxas
def test_block_ptr_and_descriptor_ptx_pass_ptxas(tmp_path):
    ints = {n: I for n in ("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn")}
    cases = [
        (matmul_block_ptr, dict(a_ptr=P, b_ptr=P, c_ptr=P, **ints), dict(BM=32, BN=32, BK=8)),
        (matmul_descriptor, dict(a_ptr=P, b_ptr=P, c_ptr=P, M=I, N=I, K=I),
         dict(BM=32, BN=32, BK=8)),
        (window, dict(x_ptr=P, o_ptr=P, y_ptr=P, R=I, C=I, r0=I, c0=I),
         dict(BR=16, BC=16, CHECK=(0, 1), PAD="nan")),
        (ragged_sum, dict(x_ptr=IP, out_ptr=IP, n=I), dict(B=128)),
        (advance_if, dict(x_ptr=IP, n=I, far=I), {}),
    ]
    for kern, types, consts in cases:
        text = compile_function(kern.fn, types, consts, Target.ptx("sm_90"), 4).code
        assert not (err := ptxas_errors(tmp_path, text)), (kern.__name__, err)


_PRE = "    bp = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (4, 4), (1, 0))\n"


@pytest.mark.parametrize("lines, message", [
    ("y = tl.load(bp, mask=None, other=1.0)", "takes boundary_check (and padding_option), "
     "not mask or other"),
    ("y = tl.load(bp, boundary_check=(2,))", "boundary_check dimension 2 is out of range"),
    ("y = tl.load(bp, padding_option='inf')", "padding_option must be 'zero' or 'nan'"),
    ("y = tl.load(x_ptr, boundary_check=(0,))", "boundary_check and padding_option are for "
     "block pointers"),
    ("y = tl.advance(x_ptr, (1, 1))", "tl.advance takes a block pointer"),
    ("y = tl.advance(bp, (1,))", "has 1 entries, the block has 2 dimensions"),
    ("y = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (4, 3), (1, 0))",
     "powers of two"),
    ("y = tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (4, 4), (0, 0))",
     "is not a permutation"),
    ("y = tl.make_tensor_descriptor(x_ptr, [8, 8], [1, 8], [4, 4])",
     "last stride of a tensor descriptor must be the literal 1"),
    ("y = tl.make_tensor_descriptor(x_ptr, [8, 8], [8, 1], [4, 2])",
     "at least 16 bytes"),
])
def test_block_ptr_errors_point_at_the_call(tmp_path, lines, message):
    e = compile_error(tmp_path, "bp_err", f"def kern(x_ptr):\n{_PRE}    {lines}\n",
                      dict(x_ptr=P))
    assert message in str(e)
    assert (e.loc.line, e.loc.col) == (8, 9), str(e)
    assert "bp_err.py:8:9" in str(e)


def test_padding_nan_needs_a_float_block(tmp_path):
    e = compile_error(tmp_path, "bp_nan", (
        "def kern(x_ptr):\n"
        "    bp = tl.make_block_ptr(x_ptr, (8,), (1,), (0,), (8,), (0,))\n"
        "    y = tl.load(bp, boundary_check=(0,), padding_option='nan')\n"), dict(x_ptr=IP))
    assert "padding_option='nan' needs a float block" in str(e)
    assert (e.loc.line, e.loc.col) == (8, 9)


def test_a_block_ptr_rebuilt_in_a_loop_is_an_error(tmp_path):
    e = compile_error(tmp_path, "bp_loop", (
        "def kern(x_ptr, y_ptr, n):\n"
        "    bp = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (8,), (0,))\n"
        "    for i in range(4):\n"
        "        bp = tl.make_block_ptr(y_ptr, (n,), (1,), (i,), (8,), (0,))\n"),
        dict(x_ptr=P, y_ptr=P, n=I))
    assert "only tl.advance may change it" in str(e)
    assert e.loc.line == 8
