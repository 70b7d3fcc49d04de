"""Idioms of Triton's tutorials that the language must accept as written, each in a kernel
of our own checked against NumPy (docs/compiler.md, "Triton's tutorials")."""

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl


@triton.jit
def k_row_l2norm(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                 BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # a persistent row loop as in tutorial 02: num_stages is a parameter and a launch option
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=0.0)
        y = x * (num_stages / tl.sqrt(tl.sum(x * x, axis=0)))
        tl.store(out_ptr + row * out_stride + cols, y, mask=mask)


def test_launch_option_named_as_a_parameter_binds_it(iss_device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((11, 21)).astype(np.float32)
    y = np.full((11, 24), -7.0, np.float32)
    k_row_l2norm[(4,)](y, x, x.strides[0] // 4, y.strides[0] // 4, 11, 21,
                       BLOCK_SIZE=32, num_stages=3, num_warps=1)
    want = 3 * x / np.sqrt((x.astype(np.float64) ** 2).sum(1, keepdims=True))
    assert np.allclose(y[:, :21], want, rtol=1e-5, atol=1e-6)
    assert np.all(y[:, 21:] == -7.0)
