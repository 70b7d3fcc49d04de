"""RMSNorm: y = x / sqrt(mean(x**2) + eps) * w, one row per program."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import close, main


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / N
    rstd = tl.rsqrt(mean_sq + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, x * rstd * w, mask=mask)


def run(size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows, n = max(1, size // 32), size % 61 + 3
    x = rng.standard_normal((rows, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    eps = 1e-5
    stats = rmsnorm_kernel[(rows,)](x, w, y, n, n, eps, BLOCK=triton.next_power_of_2(n))
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w
    ok, detail = close(y, want, rtol=1e-4, atol=1e-5)
    return ok, f"{rows}x{n}: {detail}", stats


if __name__ == "__main__":
    sys.exit(main("rmsnorm", run, 200))
