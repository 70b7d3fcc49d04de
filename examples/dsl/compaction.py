"""Stream compaction: each row's values above a threshold, packed to the front of its
output row in their original order, at most ``cap`` of them, and how many there were.

One program per row walks the row in blocks with a ``while`` loop: ``tl.cumsum`` of the
keep-mask gives each kept value its place, a ``break`` leaves the loop once ``cap`` values
are written, and the sorted kept values of the last block show ``tl.sort``.
"""

import sys

import numpy as np
import simtgpu.compiler_backend as triton
import simtgpu.compiler_backend.language as tl
from dsl_common import main


@triton.jit
def compact_kernel(x_ptr, out_ptr, count_ptr, last_ptr, n_cols, threshold, cap,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    written = 0
    start = 0
    last = tl.full((BLOCK,), float("inf"), tl.float32)
    while start < n_cols:
        offs = start + cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=float("-inf"))
        keep = (x > threshold) & (offs < n_cols)
        place = written + tl.cumsum(keep.to(tl.int32), 0) - 1
        tl.store(out_ptr + row * cap + place, x, mask=keep & (place < cap))
        written += tl.sum(keep.to(tl.int32))
        last = tl.sort(tl.where(keep, x, float("inf")))
        start += BLOCK
        if written >= cap:
            break
    tl.store(count_ptr + row, tl.minimum(written, cap))
    tl.store(last_ptr + row * BLOCK + cols, last)


def reference(x: np.ndarray, threshold: float, cap: int, block: int):
    """Per row: the packed values, their count and the sorted kept values of the last
    block read (the loop stops after the block that reaches ``cap``)."""
    rows, n = x.shape
    out = np.zeros((rows, cap), np.float32)
    count = np.zeros(rows, np.int32)
    last = np.full((rows, block), np.inf, np.float32)
    for r in range(rows):
        kept: list[np.float32] = []
        for start in range(0, n, block):
            blk = x[r, start:start + block]
            sel = blk[blk > threshold]
            kept.extend(sel)
            last[r] = np.sort(np.concatenate([sel, np.full(block - sel.size, np.inf,
                                                           np.float32)]))
            if len(kept) >= cap:
                break
        count[r] = min(len(kept), cap)
        out[r, :count[r]] = kept[:cap]
    return out, count, last


def run(size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows, n = max(1, size // 200), max(1, size)
    cap = max(1, n // 5)
    block = 32
    x = rng.standard_normal((rows, n)).astype(np.float32)
    out = np.zeros((rows, cap), np.float32)
    count = np.zeros(rows, np.int32)
    last = np.zeros((rows, block), np.float32)
    stats = compact_kernel[(rows,)](x, out, count, last, n, 0.8, cap, BLOCK=block)
    want_out, want_count, want_last = reference(x, 0.8, cap, block)
    ok = (np.array_equal(count, want_count) and np.array_equal(last, want_last)
          and all(np.array_equal(out[r, :count[r]], want_out[r, :count[r]])
                  for r in range(rows)))
    return ok, f"{rows}x{n}, cap {cap}: counts {count.tolist()[:4]}", stats


if __name__ == "__main__":
    sys.exit(main("compaction", run, 400))
