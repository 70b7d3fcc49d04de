"""Divergence and reconvergence: classify() takes a different path, and a different
number of loop trips, in every lane. Checked exactly against a NumPy reference written
from the kernel's header.

    python examples/divergence.py --size 1000
"""

from __future__ import annotations

import sys

import numpy as np
from example_common import ASM, block_size, compare_exact, open_device, parser, verdict

CAP = 255


def classify_reference(x: np.ndarray) -> np.ndarray:
    """-1 for v <= 0, else the Collatz steps from v to 1 (u32 wrapping), capped at 255."""
    v = x.astype(np.int64).astype(np.uint32)  # the kernel's arithmetic is 32-bit unsigned
    steps = np.zeros(x.size, np.int32)
    live = (x > 0) & (v != 1)
    while live.any():
        even = (v & 1) == 0
        nxt = np.where(even, v >> np.uint32(1), v * np.uint32(3) + np.uint32(1))
        v = np.where(live, nxt, v)
        steps += live
        live &= (v != 1) & (steps < CAP)
    return np.where(x <= 0, -1, steps).astype(np.int32)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0], size=1000).parse_args(argv)
    dev = open_device(args)
    kernel = dev.load_module(ASM / "divergence.s").kernel("classify")

    rng = np.random.default_rng(args.seed)
    n = args.size
    x = rng.integers(-20, 2000, n, dtype=np.int32)
    x[: min(n, 4)] = [27, 1, 0, -3][: min(n, 4)]  # a long trip, no trip, both negatives
    d_x = dev.to_device(x)
    d_out = dev.empty(n, np.int32)

    block = block_size(args, dev)
    res = dev.launch(kernel, grid=-(-n // block), block=block, args=(d_x, d_out, n))
    if args.stats:
        print(res.report())
    ok, detail = compare_exact(d_out.to_host(), classify_reference(x))
    detail += f"; {res.divergence_events} divergent branches"
    return verdict(f"classify n={n}", ok, detail)


if __name__ == "__main__":
    sys.exit(main())
