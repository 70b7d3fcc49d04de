"""Matrix transpose through shared memory, CUDA style: thread intrinsics, a shared tile
(padded by one column against bank conflicts), a barrier, coalesced reads and writes."""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import main


@triton.jit
def transpose_kernel(src, dst, rows, cols, TILE: tl.constexpr, BLOCK_ROWS: tl.constexpr):
    tile = tl.shared_array((TILE, TILE + 1), tl.float32)
    tx = tl.thread_id(0)
    ty = tl.thread_id(1)
    x = tl.block_id(0) * TILE + tx
    y0 = tl.block_id(1) * TILE + ty
    for j in tl.static_range(0, TILE, BLOCK_ROWS):
        y = y0 + j
        tile[ty + j, tx] = tl.load(src + y * cols + x, mask=(y < rows) & (x < cols), other=0.0)
    tl.barrier()
    x = tl.block_id(1) * TILE + tx
    y0 = tl.block_id(0) * TILE + ty
    for j in tl.static_range(0, TILE, BLOCK_ROWS):
        y = y0 + j
        tl.store(dst + y * rows + x, tile[tx, ty + j], mask=(y < cols) & (x < rows))


def run(size: int, seed: int = 0, tile: int = 8, block_rows: int = 4):
    rng = np.random.default_rng(seed)
    rows, cols = size, size + 5
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros((cols, rows), np.float32)
    grid = (triton.cdiv(cols, tile), triton.cdiv(rows, tile))
    stats = transpose_kernel[grid](a, out, rows, cols, TILE=tile, BLOCK_ROWS=block_rows,
                                   block=(tile, block_rows))
    ok = np.array_equal(out, a.T)
    return ok, f"{rows}x{cols}, exact {ok}", stats


if __name__ == "__main__":
    sys.exit(main("transpose", run, 30))
