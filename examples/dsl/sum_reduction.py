"""Sum reduction: each program sums one BLOCK of x (tl.sum: registers, warp shuffles, then
shared memory across warps) and stores its partial; the total is also accumulated with
tl.atomic_add (one atomic per program)."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import close, main


@triton.jit
def sum_kernel(x_ptr, partial_ptr, total_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.sum(x, axis=0)
    tl.store(partial_ptr + pid, s)
    tl.atomic_add(total_ptr, s)


def run(size: int, seed: int = 0, block: int = 64):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size).astype(np.float32)
    programs = triton.cdiv(size, block)
    partial = np.zeros(programs, np.float32)
    total = np.zeros(1, np.float32)
    stats = sum_kernel[(programs,)](x, partial, total, size, BLOCK=block)
    pad = np.zeros(programs * block, np.float64)
    pad[:size] = x
    want = pad.reshape(programs, block).sum(axis=1)
    ok1, d1 = close(partial, want, rtol=1e-5, atol=1e-5)
    ok2, d2 = close(total, np.array([x.astype(np.float64).sum()]), rtol=1e-4, atol=1e-4)
    return ok1 and ok2, f"{size} elements, partials: {d1}; total: {d2}", stats


if __name__ == "__main__":
    sys.exit(main("sum_reduction", run, 1000))
