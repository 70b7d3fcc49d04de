"""Vector add: out = x + y, one BLOCK-sized tile per program, masked at the ragged end."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import main


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def run(size: int, seed: int = 0, block: int = 64):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    out = np.zeros(size, np.float32)
    grid = lambda meta: (triton.cdiv(size, meta["BLOCK_SIZE"]),)  # noqa: E731
    stats = add_kernel[grid](x, y, out, size, BLOCK_SIZE=block)
    ok = np.array_equal(out, x + y)
    return ok, f"{size} elements, bit-exact {ok}", stats


if __name__ == "__main__":
    sys.exit(main("vector_add", run, 1000))
