"""SAXPY: y = a * x + y with a scalar float parameter. The compiler contracts the multiply and
the add into one fused multiply-add (rounded once), so the reference is the numerics' ffma."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import main
from simtgpu.sim.numerics import bits_to_f32, f32_to_bits, ffma


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, a * x + y, mask=mask)


def run(size: int, seed: int = 0, block: int = 64):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    a = 2.5
    want = bits_to_f32(ffma(f32_to_bits(np.float32(a)), f32_to_bits(x), f32_to_bits(y)))
    stats = saxpy_kernel[(triton.cdiv(size, block),)](x, y, a, size, BLOCK=block)
    ok = np.array_equal(y, want)
    return ok, f"{size} elements, bit-exact {ok}", stats


if __name__ == "__main__":
    sys.exit(main("saxpy", run, 1000))
