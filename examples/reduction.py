"""Per-block sums in shared memory (a tree of adds), checked bit for bit against NumPy
adding in the same tree order.

    python examples/reduction.py --size 5000 [--block 32]
"""

from __future__ import annotations

import sys

import numpy as np
from example_common import (
    ASM,
    block_size,
    compare_close,
    compare_exact,
    open_device,
    parser,
    verdict,
)


def tree_sums(x: np.ndarray, block: int) -> np.ndarray:
    """out[b] as the kernel computes it: pad with 0.0 to whole blocks, then for
    s = B/2, B/4, ..., 1 add sh[t + s] into sh[t] (f32, round to nearest even)."""
    grid = -(-x.size // block)
    sh = np.zeros(grid * block, np.float32)
    sh[:x.size] = x
    sh = sh.reshape(grid, block)
    s = block // 2
    while s:
        sh[:, :s] = sh[:, :s] + sh[:, s:2 * s]
        s //= 2
    return sh[:, 0].copy()


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0], size=5000).parse_args(argv)
    dev = open_device(args)
    kernel = dev.load_module(ASM / "reduction.s").kernel("block_sum")

    block = block_size(args, dev)
    if block & (block - 1) or block > 256:
        print(f"--block {block}: block_sum needs a power of two up to 256", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    n = args.size
    x = rng.uniform(-1, 1, n).astype(np.float32)
    grid = -(-n // block)
    d_x = dev.to_device(x)
    d_out = dev.empty(grid, np.float32)

    res = dev.launch(kernel, grid=grid, block=block, args=(d_x, d_out, n))
    if args.stats:
        print(res.report())
    got = d_out.to_host()
    ok, detail = compare_exact(got, tree_sums(x, block))
    if ok:  # and the tree sum is the sum, to f32 accuracy
        exact = np.pad(x.astype(np.float64), (0, grid * block - n)).reshape(grid, -1).sum(1)
        ok, detail2 = compare_close(got, exact, rtol=1e-5, atol=1e-5)
        detail = f"{detail}; {detail2}"
    return verdict(f"block_sum n={n} block={block}", ok, detail)


if __name__ == "__main__":
    sys.exit(main())
