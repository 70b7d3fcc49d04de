"""Histogram with atomics: each element adds 1 to its bin (values clamped to the bins)."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import main


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0)
    b = tl.minimum(tl.maximum(v, 0), BINS - 1)
    tl.atomic_add(hist_ptr + b, 1, mask=mask)


def run(size: int, seed: int = 0, bins: int = 16, block: int = 64):
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, bins + 2, size).astype(np.int32)
    hist = np.zeros(bins, np.int32)
    stats = histogram_kernel[(triton.cdiv(size, block),)](x, hist, size, BINS=bins,
                                                          BLOCK=block)
    want = np.bincount(np.clip(x, 0, bins - 1), minlength=bins).astype(np.int32)
    ok = np.array_equal(hist, want)
    return ok, f"{size} values into {bins} bins, exact {ok}", stats


if __name__ == "__main__":
    sys.exit(main("histogram", run, 1000))
