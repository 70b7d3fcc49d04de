"""y = a * x + y with one fused multiply-add per element, checked against NumPy.

The reference is computed in float64, where a * x is exact, so it differs from the
correctly rounded f32 result by at most half an ulp plus a double rounding: the check
uses a relative tolerance of one f32 ulp.

    python examples/saxpy.py --size 1000 --alpha 2.5
"""

from __future__ import annotations

import sys

import numpy as np
from example_common import ASM, block_size, compare_close, open_device, parser, verdict


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0], size=1000)
    p.add_argument("--alpha", type=float, default=2.5, help="the scalar a")
    args = p.parse_args(argv)
    dev = open_device(args)
    kernel = dev.load_module(ASM / "saxpy.s").kernel("saxpy")

    rng = np.random.default_rng(args.seed)
    n = args.size
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    alpha = np.float32(args.alpha)
    d_x, d_y = dev.to_device(x), dev.to_device(y)

    block = block_size(args, dev)
    res = dev.launch(kernel, grid=-(-n // block), block=block, args=(d_x, d_y, alpha, n))
    if args.stats:
        print(res.report())
    want = (np.float64(alpha) * x.astype(np.float64) + y).astype(np.float32)
    ok, detail = compare_close(d_y.to_host(), want, rtol=2.0 ** -23, atol=1e-37)
    return verdict(f"saxpy n={n} a={alpha}", ok, detail)


if __name__ == "__main__":
    sys.exit(main())
