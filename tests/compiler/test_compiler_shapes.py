"""Shape operations on the ISS against NumPy: trans/.T/permute, reshape/view/ravel, flip,
join/split/interleave, cat, expand_dims, broadcast_to and gather, on tiles already in
registers (loaded) and on lazy tiles (index arithmetic), plus ptxas and the errors."""


import numpy as np
import pytest
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from compiler_helpers import compile_error
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function
from test_compiler_ptx import needs_ptxas, ptxas_errors

P = ir.ptr("f32")


@triton.jit
def _put(base, t, R: tl.constexpr, C: tl.constexpr):
    """Store the (R, C) tile t row-major at base; the next free place."""
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    tl.store(base + r[:, None] * C + c[None, :], t)
    return base + R * C


@triton.jit
def k_shapes(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])  # in registers
    lazy = (rm[:, None] * N + rn[None, :]).to(tl.float32)  # index arithmetic
    base = _put(o_ptr, x.T, N, M)
    base = _put(base, tl.trans(lazy), N, M)
    base = _put(base, tl.reshape(x, (N, M)), N, M)
    base = _put(base, tl.reshape(lazy, N, M), N, M)
    base = _put(base, tl.flip(x), M, N)
    base = _put(base, x.flip(0), M, N)
    a, b = tl.split(tl.join(x, lazy))
    base = _put(base, a - b, M, N)
    base = _put(base, tl.ravel(tl.permute(tl.join(x, lazy), (2, 0, 1)))[None, :], 1, 2 * M * N)
    base = _put(base, tl.cat(x, lazy), 2 * M, N)
    base = _put(base, tl.interleave(x, lazy), M, 2 * N)
    base = _put(base, tl.expand_dims(tl.sum(x, axis=1), -1), M, 1)
    base = _put(base, tl.gather(x, (rn[None, :] * 3 + rm[:, None]) % M, 0), M, N)
    _put(base, tl.broadcast_to(x.sum(0)[None, :], (M, N)), M, N)


def _expected(x: np.ndarray) -> list[np.ndarray]:
    m, n = x.shape
    lazy = np.arange(m * n, dtype=np.float32).reshape(m, n)
    j = np.stack([x, lazy], -1)
    rows, cols = np.arange(m)[:, None], np.arange(n)[None, :]
    return [x.T, lazy.T, x.reshape(n, m), lazy.reshape(n, m), x[:, ::-1], x[::-1], x - lazy,
            j.transpose(2, 0, 1).ravel(), np.concatenate([x, lazy], 0), j.reshape(m, 2 * n),
            x.sum(1), x[(cols * 3 + rows) % m, cols], np.broadcast_to(x.sum(0), (m, n))]


@pytest.mark.parametrize("m, n", [(4, 8), (8, 4), (2, 64)])
def test_shape_operations_match_numpy(iss_device, m, n):
    x = np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32)
    o = np.zeros(20 * m * n, np.float32)
    k_shapes[(1,)](x, o, M=m, N=n)
    pos = 0
    for i, w in enumerate(_expected(x)):
        w = np.asarray(w, np.float32).ravel()
        got = o[pos:pos + w.size]
        if i in (10, 12):  # row and column sums: the reduction's order, not NumPy's
            assert np.allclose(got, w, rtol=1e-5, atol=1e-5), i
        else:
            assert np.array_equal(got, w), i
        pos += w.size


@needs_ptxas
def test_shape_operations_pass_ptxas(tmp_path):
    text = compile_function(k_shapes.fn, dict(x_ptr=P, o_ptr=P), dict(M=16, N=16),
                            Target.ptx("sm_90"), 4).code
    assert not (err := ptxas_errors(tmp_path, text)), err


@pytest.mark.parametrize("line, message", [
    ("tl.reshape(tl.arange(0, 8), (4, 4))", "cannot reshape a tile of shape [8]"),
    ("tl.split(tl.arange(0, 8))", "last axis has size 2"),
    ("tl.trans(tl.reshape(tl.arange(0, 8), (2, 2, 2)))", "needs a 2-D tile"),
    ("tl.permute(tl.reshape(tl.arange(0, 8), (2, 4)), (0, 0))", "is not a permutation"),
    ("tl.cat(tl.arange(0, 8), tl.arange(0, 4))", "two tiles of one shape"),
    ("tl.arange(0, 8).nosuch", "tensors have no attribute 'nosuch'"),
])
def test_shape_errors_point_at_the_call(tmp_path, line, message):
    err = compile_error(tmp_path, "shape_err", f"def kern(x_ptr):\n    y = {line}\n",
                        dict(x_ptr=P))
    assert message in str(err)
    assert (err.loc.line, err.loc.col) == (7, 9), str(err)
