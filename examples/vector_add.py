"""c = a + b on the GPU, checked bit for bit against NumPy (one f32 add per element).

    python examples/vector_add.py --size 1000 [--backend iss] [--config small]
"""

from __future__ import annotations

import sys

import numpy as np
from example_common import ASM, block_size, compare_exact, open_device, parser, verdict


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__.splitlines()[0], size=1000).parse_args(argv)
    dev = open_device(args)
    kernel = dev.load_module(ASM / "vector_add.s").kernel("vector_add")

    rng = np.random.default_rng(args.seed)
    n = args.size
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    d_a, d_b = dev.to_device(a), dev.to_device(b)
    d_c = dev.empty(n, np.float32)

    block = block_size(args, dev)
    res = dev.launch(kernel, grid=-(-n // block), block=block, args=(d_a, d_b, d_c, n))
    if args.stats:
        print(res.report())
    ok, detail = compare_exact(d_c.to_host(), a + b)
    return verdict(f"vector_add n={n}", ok, detail)


if __name__ == "__main__":
    sys.exit(main())
